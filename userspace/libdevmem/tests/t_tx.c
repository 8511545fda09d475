// SPDX-License-Identifier: LGPL-2.1-or-later
/* Zero-copy send ids: completions in order, out of order, wrapping, bogus. */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "devtcp/check.h"

static struct devmem_zc zc;

static void in_order(void)
{
	memset(&zc, 0, sizeof(zc));
	zc.next = 10;
	CHECK(!devmem_zc_done(&zc, 0), "nothing completed yet");
	CHECK(devmem_zc_complete(&zc, 0, 3) == 4, "0..3 complete");
	CHECK(zc.done_below == 4 && zc.ahead == 0, "below %u ahead %u", zc.done_below, zc.ahead);
	CHECK(devmem_zc_done(&zc, 3) && devmem_zc_done_upto(&zc, 3), "3 done, and all before");
	CHECK(!devmem_zc_done(&zc, 4), "4 not");
	CHECK(!devmem_zc_done(&zc, 11), "an id never sent is not done");
}

static void out_of_order(void)
{
	memset(&zc, 0, sizeof(zc));
	zc.next = 10;
	CHECK(devmem_zc_complete(&zc, 5, 7) == 3, "5..7 first");
	CHECK(devmem_zc_done(&zc, 6) && !devmem_zc_done_upto(&zc, 6), "6 done, 0..4 not");
	CHECK(zc.done_below == 0 && zc.ahead == 3, "below %u ahead %u", zc.done_below, zc.ahead);
	CHECK(devmem_zc_complete(&zc, 0, 4) == 5, "then 0..4");
	CHECK(zc.done_below == 8 && zc.ahead == 0, "below %u ahead %u", zc.done_below, zc.ahead);
	CHECK(devmem_zc_complete(&zc, 9, 9) == 1 && zc.done_below == 8, "9 waits for 8");
	CHECK(devmem_zc_complete(&zc, 8, 9) == 1, "8 again with 9: only 8 is new");
	CHECK(zc.done_below == 10, "all done: below %u", zc.done_below);
}

static void wrapping(void)
{
	memset(&zc, 0, sizeof(zc));
	zc.next = zc.done_below = 0xfffffff0u;
	zc.next += 0x20;	/* 0xfffffff0 .. 0x0000000f outstanding */
	CHECK(devmem_zc_complete(&zc, 0xfffffff0u, 0x5) == 0x16, "a range across 2^32");
	CHECK(zc.done_below == 0x6, "below %#x", zc.done_below);
	CHECK(devmem_zc_done(&zc, 0xfffffffeu) && devmem_zc_done_upto(&zc, 0x5), "old ids done");
	CHECK(!devmem_zc_done(&zc, 0x6), "0x6 not yet");
}

static void bogus(void)
{
	memset(&zc, 0, sizeof(zc));
	zc.next = 4;
	CHECK(devmem_zc_complete(&zc, 2, 6) == -EPROTO, "ids never sent are refused");
	CHECK(strstr(devmem_last_error(), "not outstanding"), "says '%s'", devmem_last_error());
	CHECK(!devmem_zc_full(&zc), "not full");
	zc.next = DEVMEM_ZC_WINDOW;
	CHECK(devmem_zc_full(&zc), "a whole window outstanding is full");
}

int main(void)
{
	in_order();
	out_of_order();
	wrapping();
	bogus();
	return check_done("t_tx");
}
