// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What the running kernel offers for device-memory TCP, found by asking it
 * (its netlink families' operations, io_uring's registration opcodes), not
 * from its version: distribution kernels backport.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include <devtcp/nl_numbers.h>

static const char *const feature_names[] = {
	"bind-rx", "bind-tx", "io_uring-zcrx", "ethtool-rss-netlink",
};

const char *devmem_kernel_feature_name(unsigned int feature)
{
	unsigned int i;

	for (i = 0; i < sizeof(feature_names) / sizeof(feature_names[0]); i++)
		if (feature == 1u << i)
			return feature_names[i];
	return NULL;
}

/*
 * IORING_REGISTER_ZCRX_IFQ with an argument that faults: a kernel without
 * zcrx does not know the opcode (EINVAL); one with it gets as far as reading
 * the argument (EFAULT), or refuses a caller without CAP_NET_ADMIN (EPERM).
 */
static bool kernel_has_zcrx(void)
{
	struct io_uring ring;
	void *bad;
	int ret;

	if (io_uring_queue_init(4, &ring, IORING_SETUP_SINGLE_ISSUER |
				IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQE32))
		return false;
	bad = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ret = -EINVAL;
	if (bad != MAP_FAILED) {
		ret = io_uring_register(ring.ring_fd, IORING_REGISTER_ZCRX_IFQ, bad, 1);
		munmap(bad, sysconf(_SC_PAGESIZE));
	}
	io_uring_queue_exit(&ring);
	return ret == -EFAULT || ret == -EPERM;
}

int devmem_kernel_features(unsigned int *features)
{
	uint64_t netdev_ops = 0, ethtool_ops = 0;
	struct devmem_nl *nl;
	uint16_t id;
	int err;

	*features = 0;
	err = devmem_nl_open(&nl, "kernel features");
	if (err)
		return err;
	err = devmem_nl_family(nl, DM_NETDEV_FAMILY_NAME, &id, &netdev_ops, "kernel features");
	if (!err)
		err = devmem_nl_family(nl, DM_ETHTOOL_FAMILY_NAME, &id, &ethtool_ops,
				       "kernel features");
	devmem_nl_close(nl);
	if (err)
		return err;
	if (netdev_ops & (1ull << DM_NETDEV_CMD_BIND_RX))
		*features |= DEVMEM_KF_BIND_RX;
	if (netdev_ops & (1ull << DM_NETDEV_CMD_BIND_TX))
		*features |= DEVMEM_KF_BIND_TX;
	if (ethtool_ops & (1ull << DM_ETHTOOL_MSG_RSS_CREATE_ACT))
		*features |= DEVMEM_KF_RSS_NETLINK;
	if (kernel_has_zcrx())
		*features |= DEVMEM_KF_ZCRX;
	return 0;
}
