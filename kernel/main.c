// SPDX-License-Identifier: GPL-2.0
/*
 * devtcp: a software multi-queue NIC pair whose payload path feeds the
 * kernel's devmem memory provider.
 */
#include <linux/module.h>

static int __init devtcp_init(void)
{
	return 0;
}

static void __exit devtcp_exit(void)
{
}

module_init(devtcp_init);
module_exit(devtcp_exit);

MODULE_DESCRIPTION("devtcp: software NIC for device-memory TCP");
MODULE_LICENSE("GPL");
