/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The KEY VALUE words of devtcp fault injection (IFLA_DEVTCP_FAULT), shared
 * by devtcp-fault (changelink) and devtcp-pair (newlink).
 */
#ifndef DEVTCP_TOOLS_FAULT_KEYS_H
#define DEVTCP_TOOLS_FAULT_KEYS_H

#include <libmnl/libmnl.h>

#define FAULT_KEYS_HELP \
	"keys: drop reorder dup corrupt (ppm or N%), depth, delay jitter (us),\n" \
	"      rate (bit/s, k/M/G), seed, dma-unreachable (0 or 1)\n"

/*
 * Puts an IFLA_DEVTCP_FAULT nest holding the @n words of @kv (KEY VALUE
 * pairs). Returns 0, or -1 after printing what is wrong with the words.
 */
int fault_put_keys(struct nlmsghdr *nlh, const char *prog, int n, char **kv);

/* Puts an IFLA_DEVTCP_FAULT nest turning every fault off (the seed stays). */
void fault_put_off(struct nlmsghdr *nlh);

/* Prints the settings in an IFLA_DEVTCP_FAULT nest as one KEY VALUE line. */
void fault_print(const struct nlattr *fault);

#endif
