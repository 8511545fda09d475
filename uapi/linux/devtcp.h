/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * devtcp link attributes (IFLA_INFO_DATA of link kind "devtcp").
 *
 * IFLA_DEVTCP_PEER carries a struct ifinfomsg followed by IFLA_* attributes
 * for the other end of the pair (name, netns, queue counts), as veth's
 * VETH_INFO_PEER does. Without it the peer is named "devtcp%d" in the same
 * namespace with the same queue counts.
 *
 * IFLA_DEVTCP_FAULT (nested IFLA_DEVTCP_FAULT_*) injects faults into what
 * the device puts on the wire, i.e. into one direction of the pair. It is
 * accepted at newlink and changelink (attributes left out keep their value)
 * and reported by getlink. Probabilities are in parts per million.
 *
 * IFLA_DEVTCP_FAULT_DMA_UNREACHABLE makes the device's DMA engine unable to
 * reach memory providers' buffers (dma-bufs, io_uring areas), as a NIC that
 * cannot reach a GPU's BAR peer to peer: queues refuse to start on such
 * memory (bind-rx fails with EOPNOTSUPP), frames for queues already bound are
 * dropped (rx<N>_dma_faults) and devmem TX frames are dropped at xmit.
 */
#ifndef _UAPI_LINUX_DEVTCP_H
#define _UAPI_LINUX_DEVTCP_H

enum {
	IFLA_DEVTCP_UNSPEC,
	IFLA_DEVTCP_PEER,
	IFLA_DEVTCP_FAULT,
	__IFLA_DEVTCP_MAX
};

#define IFLA_DEVTCP_MAX (__IFLA_DEVTCP_MAX - 1)

enum {
	IFLA_DEVTCP_FAULT_UNSPEC,
	IFLA_DEVTCP_FAULT_PAD,
	IFLA_DEVTCP_FAULT_DROP,		/* u32 ppm: frame lost */
	IFLA_DEVTCP_FAULT_REORDER,	/* u32 ppm: frame held back ... */
	IFLA_DEVTCP_FAULT_REORDER_DEPTH,	/* u32: ... behind this many later frames */
	IFLA_DEVTCP_FAULT_DUP,		/* u32 ppm: frame delivered twice */
	IFLA_DEVTCP_FAULT_CORRUPT,	/* u32 ppm: frame corrupted (dropped, counted) */
	IFLA_DEVTCP_FAULT_DELAY,	/* u32 us added to every frame */
	IFLA_DEVTCP_FAULT_JITTER,	/* u32 us: delay varies by up to +-this */
	IFLA_DEVTCP_FAULT_RATE,		/* u64 bit/s: wire rate limit, 0 none */
	IFLA_DEVTCP_FAULT_SEED,		/* u64: reseeds the decisions' PRNG */
	IFLA_DEVTCP_FAULT_DMA_UNREACHABLE,	/* u8 0/1: see below */
	__IFLA_DEVTCP_FAULT_MAX
};

#define IFLA_DEVTCP_FAULT_MAX (__IFLA_DEVTCP_FAULT_MAX - 1)

#define DEVTCP_FAULT_PPM_MAX		1000000
#define DEVTCP_FAULT_DEPTH_MAX		256
#define DEVTCP_FAULT_DELAY_MAX_US	10000000	/* 10 s */
#define DEVTCP_FAULT_RATE_MIN		64000	/* bit/s */

#endif /* _UAPI_LINUX_DEVTCP_H */
