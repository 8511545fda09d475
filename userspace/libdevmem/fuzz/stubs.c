// SPDX-License-Identifier: LGPL-2.1-or-later
/* What rx.c calls outside the parser, unused by the fuzz target. */
#include "internal.h"

void dm_rx_pending_close(struct devmem_rx *rx)
{
	(void)rx;
}
