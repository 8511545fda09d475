// SPDX-License-Identifier: GPL-2.0
/*
 * Self-test of the VM harness: loading this module logs a kernel warning,
 * which the harness must report as a failed run. Loading then fails, so
 * nothing stays behind.
 */
#include <linux/bug.h>
#include <linux/module.h>

static int __init harness_warn_init(void)
{
	WARN(1, "devtcp harness self-test: deliberate warning\n");
	return -ECANCELED;
}

module_init(harness_warn_init);

MODULE_DESCRIPTION("devtcp VM harness self-test: emits a kernel warning");
MODULE_LICENSE("GPL");
