/* SPDX-License-Identifier: GPL-2.0 */
/*
 * devtcp: a pair of connected multi-queue Ethernet devices. A frame sent on
 * one end is classified by the other end's "hardware" (RSS) onto one of its
 * RX queues and copied by the device model into that queue's page pool
 * buffers, with TCP headers split from payload when header split is on.
 */
#ifndef _DEVTCP_H
#define _DEVTCP_H

#include <linux/ethtool.h>
#include <linux/hrtimer.h>
#include <linux/netdevice.h>
#include <linux/prandom.h>
#include <linux/ptr_ring.h>
#include <linux/sizes.h>
#include <linux/smp.h>
#include <linux/u64_stats_sync.h>

#include "compat.h"

#define DEVTCP_DEFAULT_QUEUES	8
#define DEVTCP_MAX_QUEUES	64
#define DEVTCP_MAX_MTU		9000
/* The largest payload buffer a memory provider may ask for (rx-page-size). */
#define DEVTCP_MAX_RX_PAGE_SIZE	SZ_64K

#define DEVTCP_RING_DEFAULT	1024
#define DEVTCP_RING_MIN		64
#define DEVTCP_RING_MAX		4096

/* TX completions one NAPI poll handles before it asks to run again. */
#define DEVTCP_TX_CLEAN_MAX	256

/* Header buffers: 2 KiB page pool fragments holding an skb head. */
#define DEVTCP_HDR_BUF_SIZE	2048
#define DEVTCP_HDR_HEADROOM	(NET_SKB_PAD + NET_IP_ALIGN)
#define DEVTCP_HDR_ROOM		(DEVTCP_HDR_BUF_SIZE - DEVTCP_HDR_HEADROOM - \
				 SKB_DATA_ALIGN(sizeof(struct skb_shared_info)))
#define DEVTCP_HDS_THRESH_MAX	1024
/* What header split writes to the head first, to parse (common headers). */
#define DEVTCP_HDR_PEEK		256

#define DEVTCP_RSS_KEY_SIZE	40
#define DEVTCP_RSS_INDIR_SIZE	128
/* RSS context ids are 1 .. DEVTCP_RSS_MAX_CTX - 1; 0 is the main table. */
#define DEVTCP_RSS_MAX_CTX	16
#define DEVTCP_MAX_NTUPLE	256

/* devtcp_rx_classify() verdicts besides a queue index */
#define DEVTCP_RX_DROP		U32_MAX
#define DEVTCP_RX_RSS		(U32_MAX - 1)

struct devtcp_priv;
struct devtcp_ntuple;
struct devtcp_binding_windows;
struct flow_keys;

struct devtcp_rxq_stats {
	u64 packets;
	u64 bytes;
	u64 split_packets;	/* frames whose payload went to payload buffers */
	u64 alloc_fail;		/* frames dropped: no buffer */
	u64 dma_faults;		/* frames dropped: memory the device cannot reach */
	u64 window_misses;	/* of those: provider memory without page or window */
	u64 malformed;		/* frames dropped: a length points past the frame */
	u64 csum_unnecessary;	/* delivered with the L4 checksum verified */
	u64 csum_none;		/* not verified: for the stack to verify */
	u64 csum_bad;		/* L4 checksum wrong: for the stack to drop */
	u64 csum_drops;		/* ... wrong in provider memory: dropped */
	u64 gro_packets;	/* TSO frames received whole, as hardware GRO */
	u64 gro_wire_packets;	/* ... the segments they stand for */
	u64 misqueued;		/* provider frames not steered here: to host */
	struct u64_stats_sync syncp;
};

/*
 * Memory of an RX queue and the buffer layout it was made for, replaced as a
 * whole when the queue restarts: NAPI never sees a half-changed setting.
 */
struct devtcp_rx_mem {
	struct page_pool *hdr_pool;	/* host memory, skb heads */
	struct page_pool *data_pool;	/* payload; may be unreadable (devmem) */
	u32 buf_size;			/* of a payload buffer: PAGE_SIZE or rx-page-size */
	bool unreadable;		/* data_pool is provider memory */
	bool hds;			/* header split on */
	u32 hds_thresh;
	struct devtcp_binding_windows *windows;	/* CPU mappings of provider memory */
};

struct devtcp_rxq {
	struct devtcp_priv *priv;
	struct napi_struct napi;
	int napi_cpu;			/* where the NAPI runs: the "IRQ affinity" */
	call_single_data_t kick_csd;	/* schedules it there from elsewhere */
	struct ptr_ring wire;		/* frames from the peer, not yet received */
	struct devtcp_rx_mem mem;
	bool sender_stopped;		/* a peer TX queue waits for wire space */
	struct devtcp_rxq_stats stats;
	u32 idx;
	u32 restarts;		/* by the core (queue management), under the lock */
};

struct devtcp_txq_stats {
	u64 packets;
	u64 bytes;
	u64 dropped;		/* peer down or frame unusable */
	u64 stopped;		/* times a full peer RX ring stopped the queue */
	struct u64_stats_sync syncp;
};

/*
 * Fault injection, per TX queue: frames waiting to go on the wire (delay,
 * rate limit, a failed put on a full wire ring) in release order, and the
 * frame that reordering holds back. Each counts in txq->inflight.
 */
struct devtcp_fault_q {
	spinlock_t lock;		/* the line and the held frame */
	struct sk_buff_head line;
	struct hrtimer timer;
	struct sk_buff *held;		/* reordered: goes after held_left frames */
	u32 held_left;
	u64 held_deadline;		/* ... or at this time (ns) */
	u64 last_release;		/* keeps the line in order */
	struct devtcp_priv *priv;
	u16 qid;
};

/*
 * A TX queue. It shares the NAPI of RX queue idx (combined channels): the
 * channel's NAPI completes frames the peer has read, then receives.
 */
struct devtcp_txq {
	struct ptr_ring done;		/* frames the peer has read: to complete */
	atomic_t inflight;		/* sent and not yet completed: the TX ring */
	bool wire_stopped;		/* stopped until the peer's wire ring drains */
	struct devtcp_txq_stats stats;	/* written under the TX queue lock */
	atomic64_t late_drops;		/* dropped by the fault timer: no lock */
	struct devtcp_fault_q fault;
};

/*
 * What the receiving device's parser read of a frame (parse.c). Every
 * offset and length in it lies within the frame, which is at most 64 KiB
 * (a TSO frame).
 */
struct devtcp_parse {
	u16 hdr_len;		/* L2-L4 headers: where header split cuts */
	u16 l4_off;		/* the TCP or UDP header, when proto is set */
	u16 l4_len;		/* ... and the segment's length, by the IP header */
	u8 proto;		/* IPPROTO_TCP or _UDP with a whole header; else 0 */
	bool ipv6;		/* the L4 header follows IPv6, not IPv4 */
	bool malformed;		/* a length out of bounds, a wrong version: drop */
	bool unparsed;		/* headers past the bytes the parser had */
	bool verifiable;	/* the device can check the L4 checksum */
	bool options;		/* IPv4 options or IPv6 extension headers */
	__wsum pseudo;		/* the L4 checksum's pseudo-header sum */
};

/* skb->cb of a frame on the wire. */
struct devtcp_skb_cb {
	u64 release;		/* fault injection: when it may go on the wire */
	u32 gen;		/* the sender's queue generation when it was sent */
};

/* Fault injection settings (IFLA_DEVTCP_FAULT); all zero: off. */
struct devtcp_fault_cfg {
	u32 drop;		/* ppm */
	u32 reorder;		/* ppm */
	u32 depth;
	u32 dup;		/* ppm */
	u32 corrupt;		/* ppm */
	u32 delay_us;
	u32 jitter_us;
	u64 rate;		/* bit/s */
	u64 seed;
	bool dma_unreachable;	/* provider memory out of the DMA engine's reach */
};

enum {
	DEVTCP_FAULT_STAT_DROP,
	DEVTCP_FAULT_STAT_REORDER,
	DEVTCP_FAULT_STAT_DUP,
	DEVTCP_FAULT_STAT_DELAY,
	DEVTCP_FAULT_STAT_RATE,
	DEVTCP_FAULT_STAT_CORRUPT,
	DEVTCP_FAULT_STAT_DMA,
	DEVTCP_FAULT_STAT_OVERLIMIT,
	DEVTCP_FAULT_NSTATS
};

struct devtcp_fault {
	bool on;			/* read locklessly by xmit */
	bool dma_unreachable;		/* read locklessly by the DMA paths */
	spinlock_t lock;		/* cfg changes, decisions, PRNG, rate */
	struct devtcp_fault_cfg cfg;
	struct rnd_state rnd;
	u64 rate_next;			/* ns: when the wire is free again */
	atomic_long_t line_bytes;	/* truesize of the frames the lines hold */
	atomic64_t stats[DEVTCP_FAULT_NSTATS];
};

#define DEVTCP_SKB_CB(skb) ((struct devtcp_skb_cb *)(skb)->cb)

struct devtcp_rss {
	u8 key[DEVTCP_RSS_KEY_SIZE];
	u32 indir[DEVTCP_RSS_INDIR_SIZE];
};

/* An additional RSS context: replaced as a whole, freed after a grace period. */
struct devtcp_rss_ctx {
	struct rcu_head rcu;
	struct devtcp_rss rss;
};

struct devtcp_priv {
	struct net_device *dev;
	struct net_device __rcu *peer;
	struct devtcp_rxq *rxq;		/* dev->num_rx_queues entries */
	struct devtcp_txq *txq;		/* dev->num_tx_queues entries */
	u32 rx_ring_size;
	u32 tx_ring_size;
	bool hds;			/* header split on */
	u32 hds_thresh;
	struct devtcp_rss rss;
	/* Read by the peer's xmit under RCU, changed under rtnl. */
	struct devtcp_ntuple __rcu *ntuple;	/* NULL while there are no rules */
	struct devtcp_rss_ctx __rcu *rss_ctx[DEVTCP_RSS_MAX_CTX];
	atomic64_t ntuple_drops;	/* frames discarded by a drop rule */
	struct devtcp_fault fault;
	bool up;			/* queues are running */
	bool queues_open;		/* rings, NAPI and memory exist (rtnl) */
	u32 gen;			/* bumped at every queue stop: frames sent
					 * before it are not completed to the new
					 * TX rings
					 */
};

/* main.c */
struct device *devtcp_dma_dev(void);
void devtcp_note_provider(void);

/* window.c */
int devtcp_windows_get(struct devtcp_rxq *rxq, struct devtcp_rx_mem *mem);
void devtcp_windows_put(struct devtcp_rx_mem *mem);
void *devtcp_window_va(dma_addr_t dma, unsigned int len);
bool devtcp_windows_exist(void);

/* dma.c */
struct iommu_domain *devtcp_dma_paging_domain(void);
int devtcp_wire_read(const struct sk_buff *skb, unsigned int off, void *to, unsigned int len);
/* Sums what the device writes of bytes [start, end) of a frame (rx.c). */
struct devtcp_csum_acc {
	unsigned int start;
	unsigned int end;
	__wsum sum;
};

int devtcp_dma_write_at(dma_addr_t dma, const struct sk_buff *src, unsigned int soff,
			unsigned int len, struct devtcp_csum_acc *acc);
int devtcp_dma_write_frame(struct devtcp_priv *priv, netmem_ref netmem, unsigned int off,
			   const struct sk_buff *src, unsigned int soff, unsigned int len,
			   struct devtcp_csum_acc *acc);
void devtcp_csum_acc_add(struct devtcp_csum_acc *acc, const void *buf, unsigned int soff,
			 unsigned int len);

/* parse.c */
void devtcp_parse(const struct sk_buff *skb, unsigned int len, struct devtcp_parse *p);

/* link.c */
int devtcp_link_init(void);
void devtcp_link_exit(void);
int devtcp_queues_restart(struct devtcp_priv *priv, u32 channels);
int devtcp_rx_queue_restart(struct net_device *dev, unsigned int idx);
int devtcp_provider_queue(struct net_device *dev, u32 from);

/* rx.c */
int devtcp_rx_mem_alloc(struct devtcp_rxq *rxq, struct devtcp_rx_mem *mem, u32 buf_size);
void devtcp_rx_mem_attach(struct devtcp_rxq *rxq);
void devtcp_rx_mem_free(struct devtcp_rx_mem *mem);
int devtcp_rxq_open(struct devtcp_rxq *rxq);
void devtcp_rxq_close(struct devtcp_rxq *rxq);
int devtcp_rx_poll(struct napi_struct *napi, int budget);
void devtcp_napi_kick(struct devtcp_rxq *rxq);

/* tx.c */
netdev_tx_t devtcp_start_xmit(struct sk_buff *skb, struct net_device *dev);
int devtcp_wire_put(struct devtcp_priv *priv, u16 qid, struct sk_buff *skb);
void devtcp_tx_count(struct devtcp_txq *txq, unsigned int len, bool ok);
void devtcp_tx_uncount(struct devtcp_priv *priv, u16 qid);
void devtcp_tx_wake_waiting(struct devtcp_priv *tx);
void devtcp_tx_timeout(struct net_device *dev, unsigned int qid);
void devtcp_tx_ring_full(struct devtcp_priv *priv, struct devtcp_txq *txq,
			 struct netdev_queue *nq);
void devtcp_tx_complete(struct devtcp_rxq *rxq, struct sk_buff *skb, int budget);
int devtcp_tx_clean(struct devtcp_rxq *rxq, int budget);

/* rss.c */
void devtcp_rss_init(struct devtcp_priv *priv);
void devtcp_rss_reset_indir(struct devtcp_priv *priv, u32 channels);
u32 devtcp_toeplitz(const u8 *key, const u8 *data, unsigned int len);
u32 devtcp_rx_classify(struct devtcp_priv *rx, const struct sk_buff *skb, const void *data,
		       unsigned int hlen, u32 *hash);

/* queues.c */
extern const struct netdev_queue_mgmt_ops devtcp_queue_mgmt_ops;
extern const struct attribute_group devtcp_sysfs_group;

/* stats.c */
void devtcp_rxq_stats_read(const struct devtcp_rxq *rxq, struct devtcp_rxq_stats *out);
void devtcp_txq_stats_read(const struct devtcp_txq *txq, struct devtcp_txq_stats *out);
void devtcp_get_stats64(struct net_device *dev, struct rtnl_link_stats64 *s);
extern const struct netdev_stat_ops devtcp_stat_ops;

/* ntuple.c */
u32 devtcp_ntuple_lookup(struct devtcp_priv *rx, const struct flow_keys *keys,
			 const struct devtcp_rss **rss);
int devtcp_get_rxnfc(struct net_device *dev, struct ethtool_rxnfc *cmd, u32 *locs);
int devtcp_set_rxnfc(struct net_device *dev, struct ethtool_rxnfc *cmd);
int devtcp_create_rxfh_context(struct net_device *dev, struct ethtool_rxfh_context *ctx,
			       const struct ethtool_rxfh_param *rxfh,
			       struct netlink_ext_ack *extack);
int devtcp_modify_rxfh_context(struct net_device *dev, struct ethtool_rxfh_context *ctx,
			       const struct ethtool_rxfh_param *rxfh,
			       struct netlink_ext_ack *extack);
int devtcp_remove_rxfh_context(struct net_device *dev, struct ethtool_rxfh_context *ctx,
			       u32 rss_context, struct netlink_ext_ack *extack);
void devtcp_ntuple_flush(struct devtcp_priv *priv);
void devtcp_ntuple_free(struct devtcp_priv *priv);

/* fault.c */
void devtcp_fault_setup(struct devtcp_priv *priv);
void devtcp_fault_init_queues(struct devtcp_priv *priv);
int devtcp_fault_parse(struct devtcp_priv *priv, const struct nlattr *nla,
		       struct devtcp_fault_cfg *cfg, bool *reseed,
		       struct netlink_ext_ack *extack);
void devtcp_fault_set(struct devtcp_priv *priv, const struct devtcp_fault_cfg *cfg, bool reseed);
size_t devtcp_fault_get_size(void);
int devtcp_fault_fill(struct sk_buff *skb, struct devtcp_priv *priv);
netdev_tx_t devtcp_fault_xmit(struct devtcp_priv *priv, struct sk_buff *skb, u16 qid);
void devtcp_fault_flush(struct devtcp_priv *priv);
bool devtcp_fault_dma_refused(struct devtcp_priv *priv);
extern const char devtcp_fault_stat_names[DEVTCP_FAULT_NSTATS][ETH_GSTRING_LEN];

/* ethtool.c */
extern const struct ethtool_ops devtcp_ethtool_ops;

#endif /* _DEVTCP_H */
