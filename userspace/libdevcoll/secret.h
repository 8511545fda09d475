/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The job's secret and fresh random bytes (secret.c). */
#ifndef DEVCOLL_SECRET_H
#define DEVCOLL_SECRET_H

#include <stddef.h>
#include <stdint.h>
#include "wire.h"

/* The job's key. From DEVCOLL_SECRET or DEVCOLL_SECRET_FILE; none
 * is an error unless DEVCOLL_INSECURE=1 (then a key everyone knows). */
int dc_secret_env(uint8_t key[DC_KEY_LEN]);
/* The key of secret bytes @s (@len of them). */
void dc_key_of(const void *s, size_t len, uint8_t key[DC_KEY_LEN]);
/* @n random bytes (getrandom). */
int dc_random(void *buf, size_t n);
/* A fresh secret in DEVCOLL_SECRET's form: @n random bytes as 2 @n hex
 * digits and a NUL in @hex (the raw bytes wiped). */
int dc_random_hex(char *hex, size_t n);

#endif
