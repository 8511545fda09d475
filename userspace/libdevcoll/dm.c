// SPDX-License-Identifier: LGPL-2.1-or-later
/* The devmem receive path: placeholder until it lands. */
#include <errno.h>
#include "internal.h"

int dc_dm_setup(devcoll_comm *c)
{
	(void)c;
	return dc_fail(-EOPNOTSUPP, "DEVCOLL_RX=devmem: not built in");
}

void dc_dm_free(devcoll_comm *c)
{
	(void)c;
}

ssize_t dc_dm_recv(devcoll_comm *c, struct conn *k, void *dst, size_t len, reduce_fn red,
		   size_t esize)
{
	(void)c; (void)k; (void)dst; (void)len; (void)red; (void)esize;
	return -EOPNOTSUPP;
}
