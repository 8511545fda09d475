// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The job's secret, which every set-up handshake proves knowledge of
 * (wire.c). Under a PMIx launcher rank 0 draws it and PMIx hands it to the
 * job's processes only (pmix.c). With DEVCOLL_ADDR's rendezvous whoever
 * starts the ranks provides it: DEVCOLL_SECRET, or DEVCOLL_SECRET_FILE, a
 * file only its owner may read. Without either the rendezvous does not
 * start, unless DEVCOLL_INSECURE=1 says that anyone who can reach it may
 * join (a key everyone knows).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "internal.h"

#define SECRET_MIN 16		/* bytes: a shorter one falls to a dictionary */
/* bytes a secret file may hold: read whole onto the stack, it is many
 * times any key's (a hex key of 256 bits is 64), and a file longer than a
 * page is a wrong path, refused rather than hashed */
#define SECRET_MAX 4096

void dc_key_of(const void *s, size_t len, uint8_t key[DC_KEY_LEN])
{
	struct devtcp_sha256 h;

	devtcp_sha256_init(&h);
	devtcp_sha256_update(&h, "devcoll job secret", sizeof("devcoll job secret"));
	devtcp_sha256_update(&h, s, len);
	devtcp_sha256_final(&h, key);
}

int dc_random(void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom((char *)buf + got, n - got, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return dc_fail(-errno, "getrandom: %s", strerror(errno));
		got += (size_t)r;
	}
	return 0;
}

int dc_random_hex(char *hex, size_t n)
{
	uint8_t raw[32];

	for (size_t at = 0; at < n; at += sizeof(raw)) {
		size_t k = n - at < sizeof(raw) ? n - at : sizeof(raw);

		if (dc_random(raw, k))
			return -EIO;
		for (size_t i = 0; i < k; i++)
			snprintf(hex + 2 * (at + i), 3, "%02x", raw[i]);
	}
	hex[2 * n] = 0;
	explicit_bzero(raw, sizeof(raw));
	return 0;
}

/* DEVCOLL_SECRET_FILE's contents (a final newline dropped) into @buf;
 * opened without blocking (a FIFO is refused, not waited on), read to EOF. */
static int read_secret_file(const char *path, char *buf, size_t cap, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK), ret = 0;
	size_t n = 0;
	struct stat st;

	if (fd < 0)
		return dc_fail(-errno, "DEVCOLL_SECRET_FILE=%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		ret = dc_fail(-EINVAL, "DEVCOLL_SECRET_FILE=%s: not a regular file", path);
	else if (st.st_uid != geteuid() || (st.st_mode & 0077))
		ret = dc_fail(-EPERM, "DEVCOLL_SECRET_FILE=%s: must be owned by this user and "
			      "readable by no one else (chmod 600)", path);
	while (!ret && n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			ret = dc_fail(-errno, "DEVCOLL_SECRET_FILE=%s: %s", path, strerror(errno));
		else if (!r)
			break;
		else
			n += (size_t)r;
	}
	close(fd);
	if (!ret && n == cap)
		ret = dc_fail(-EINVAL, "DEVCOLL_SECRET_FILE=%s: longer than %d bytes", path,
			      SECRET_MAX);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	*len = n;
	return ret;
}

/* The key of the DEVCOLL_SECRET taken out of the environment by an earlier
 * call, for the process's later communicators. */
static struct {
	pthread_mutex_t lock;
	bool set;
	uint8_t key[DC_KEY_LEN];
} env_key = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The key from @s (@len bytes), if long enough. */
static int key_from(const char *s, size_t len, uint8_t key[DC_KEY_LEN])
{
	if (len < SECRET_MIN)
		return dc_fail(-EINVAL, "the job's secret is %zu bytes: use %d or more random "
			       "ones (head -c 32 /dev/urandom | base64)", len, SECRET_MIN);
	dc_key_of(s, len, key);
	return 0;
}

int dc_secret_env(uint8_t key[DC_KEY_LEN])
{
	const char *s = getenv("DEVCOLL_SECRET"), *path = getenv("DEVCOLL_SECRET_FILE");
	const char *insecure = getenv("DEVCOLL_INSECURE");
	char buf[SECRET_MAX + 1];
	size_t len = 0;
	int ret;

	if (s && *s && path && *path)
		return dc_fail(-EINVAL, "DEVCOLL_SECRET and DEVCOLL_SECRET_FILE are both set: "
			       "set one");
	if (path && *path) {
		ret = read_secret_file(path, buf, sizeof(buf), &len);
		if (!ret)
			ret = key_from(buf, len, key);
		explicit_bzero(buf, sizeof(buf));
		return ret;
	}
	pthread_mutex_lock(&env_key.lock);
	if (s && *s) {
		/* taken out of the environment: child processes do not inherit it */
		len = strlen(s);
		ret = key_from(s, len, env_key.key);
		env_key.set = !ret;
		explicit_bzero((char *)s, len);
		unsetenv("DEVCOLL_SECRET");
	} else {
		ret = env_key.set ? 0 : -ENOENT;
	}
	if (!ret)
		memcpy(key, env_key.key, DC_KEY_LEN);
	pthread_mutex_unlock(&env_key.lock);
	if (ret != -ENOENT)
		return ret;
	if (insecure && !strcmp(insecure, "1")) {
		fprintf(stderr, "devcoll: DEVCOLL_INSECURE=1: no secret; anyone who can reach "
			"the ranks' ports can join this job or pose as a rank\n");
		dc_key_of("", 0, key);
		return 0;
	}
	return dc_fail(-EACCES, "DEVCOLL_ADDR's rendezvous needs the job's secret: set "
		       "DEVCOLL_SECRET (or DEVCOLL_SECRET_FILE) to the same random string "
		       "of %d bytes or more on every rank (head -c 32 /dev/urandom | base64), "
		       "or DEVCOLL_INSECURE=1 to let anyone who reaches the ports join",
		       SECRET_MIN);
}
