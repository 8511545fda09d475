// SPDX-License-Identifier: GPL-2.0
/*
 * Wire fault injection: what a device puts on the wire may be dropped,
 * corrupted (dropped, as the receiver's checksum check would drop it),
 * duplicated, reordered, delayed or rate limited, each
 * decided by a seeded PRNG so that a run can be replayed. Settings come from
 * rtnetlink (IFLA_DEVTCP_FAULT) and apply to one direction of the pair.
 *
 * Frames that must wait are kept in a per TX queue line, in release order, and
 * go on the wire from xmit or from the queue's hrtimer. They keep their TX
 * ring slot (txq->inflight) until the peer has read them, as other frames.
 */
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/random.h>
#include <net/netlink.h>

#include <linux/devtcp.h>

#include "devtcp.h"

/* A frame held back for reordering goes after this long at the latest. */
#define DEVTCP_FAULT_REORDER_TIMEOUT_NS	(5 * NSEC_PER_MSEC)
/* The peer's wire ring was full: try again after this long. */
#define DEVTCP_FAULT_RETRY_NS		(50 * NSEC_PER_USEC)
/*
 * What a device's lines may hold (the frames' truesize) before it drops what
 * comes next, as netem's limit does in frames: a delayed frame waits as a
 * clone, outside its socket's send buffer and memory cgroup.
 */
#define DEVTCP_FAULT_LINE_MAX		SZ_16M

const char devtcp_fault_stat_names[DEVTCP_FAULT_NSTATS][ETH_GSTRING_LEN] = {
	[DEVTCP_FAULT_STAT_DROP]	= "fault_drop",
	[DEVTCP_FAULT_STAT_REORDER]	= "fault_reorder",
	[DEVTCP_FAULT_STAT_DUP]		= "fault_dup",
	[DEVTCP_FAULT_STAT_DELAY]	= "fault_delay",
	[DEVTCP_FAULT_STAT_RATE]	= "fault_rate_limited",
	[DEVTCP_FAULT_STAT_CORRUPT]	= "fault_corrupt",
	[DEVTCP_FAULT_STAT_DMA]		= "fault_dma_unreachable",
	[DEVTCP_FAULT_STAT_OVERLIMIT]	= "fault_overlimit",
};

static const struct nla_policy devtcp_fault_policy[IFLA_DEVTCP_FAULT_MAX + 1] = {
	[IFLA_DEVTCP_FAULT_DROP]		= { .type = NLA_U32 },
	[IFLA_DEVTCP_FAULT_REORDER]		= { .type = NLA_U32 },
	[IFLA_DEVTCP_FAULT_REORDER_DEPTH]	= { .type = NLA_U32 },
	[IFLA_DEVTCP_FAULT_DUP]			= { .type = NLA_U32 },
	[IFLA_DEVTCP_FAULT_CORRUPT]		= { .type = NLA_U32 },
	[IFLA_DEVTCP_FAULT_DELAY]		= { .type = NLA_U32 },
	[IFLA_DEVTCP_FAULT_JITTER]		= { .type = NLA_U32 },
	[IFLA_DEVTCP_FAULT_RATE]		= { .type = NLA_U64 },
	[IFLA_DEVTCP_FAULT_SEED]		= { .type = NLA_U64 },
	[IFLA_DEVTCP_FAULT_DMA_UNREACHABLE]	= NLA_POLICY_MAX(NLA_U8, 1),
};

static void devtcp_fault_count(struct devtcp_fault *f, int stat)
{
	atomic64_inc(&f->stats[stat]);
}

/*
 * A DMA transfer to or from provider memory is about to start: refused (and
 * counted) while the dma-unreachable fault is on.
 */
bool devtcp_fault_dma_refused(struct devtcp_priv *priv)
{
	if (likely(!READ_ONCE(priv->fault.dma_unreachable)))
		return false;
	devtcp_fault_count(&priv->fault, DEVTCP_FAULT_STAT_DMA);
	return true;
}

/* One decision with probability @ppm; draws only when the knob is on. */
static bool devtcp_fault_hit(struct devtcp_fault *f, u32 ppm)
{
	if (!ppm)
		return false;
	return ((u64)prandom_u32_state(&f->rnd) * DEVTCP_FAULT_PPM_MAX >> 32) < ppm;
}

/* When a frame of @len bytes sent at @now may reach the peer. f->lock held. */
static u64 devtcp_fault_release(struct devtcp_fault *f, u64 now, unsigned int len)
{
	const struct devtcp_fault_cfg *cfg = &f->cfg;
	u64 t = now;
	s64 d;

	if (cfg->rate) {
		u64 start = max(now, f->rate_next);

		if (start > now)
			devtcp_fault_count(f, DEVTCP_FAULT_STAT_RATE);
		f->rate_next = start + div64_u64((u64)len * 8 * NSEC_PER_SEC, cfg->rate);
		t = f->rate_next;
	}
	if (cfg->delay_us) {
		d = cfg->delay_us;
		if (cfg->jitter_us)
			d += (s64)(prandom_u32_state(&f->rnd) % (2 * cfg->jitter_us + 1)) -
			     cfg->jitter_us;
		if (d > 0) {
			t += d * NSEC_PER_USEC;
			devtcp_fault_count(f, DEVTCP_FAULT_STAT_DELAY);
		}
	}
	return t;
}

/* Appends @skb to the line, never before frames already there. */
static void devtcp_fault_enqueue(struct devtcp_fault_q *fq, struct sk_buff *skb)
{
	struct devtcp_skb_cb *cb = DEVTCP_SKB_CB(skb);

	cb->release = max(cb->release, fq->last_release);
	fq->last_release = cb->release;
	__skb_queue_tail(&fq->line, skb);
}

/* A frame of @bytes may wait in the lines: they hold less than their bound. */
static bool devtcp_fault_line(struct devtcp_fault *f, unsigned int bytes)
{
	if (atomic_long_add_return(bytes, &f->line_bytes) <= DEVTCP_FAULT_LINE_MAX)
		return true;
	atomic_long_sub(bytes, &f->line_bytes);
	return false;
}

/* A frame has left the lines: on the wire, or freed. */
static void devtcp_fault_unline(struct devtcp_fault *f, unsigned int bytes)
{
	atomic_long_sub(bytes, &f->line_bytes);
}

static void devtcp_fault_release_held(struct devtcp_fault_q *fq)
{
	devtcp_fault_enqueue(fq, fq->held);
	fq->held = NULL;
}

/*
 * Puts the frames that are due on the wire; returns when to run again (ns),
 * 0 when nothing waits. Called with fq->lock held and BH off.
 */
static u64 devtcp_fault_run(struct devtcp_fault_q *fq, u64 now)
{
	struct sk_buff *skb;
	unsigned int bytes;
	u64 next = 0;

	if (fq->held && now >= fq->held_deadline)
		devtcp_fault_release_held(fq);
	while ((skb = skb_peek(&fq->line))) {
		if (DEVTCP_SKB_CB(skb)->release > now) {
			next = DEVTCP_SKB_CB(skb)->release;
			break;
		}
		__skb_unlink(skb, &fq->line);
		bytes = skb->truesize;
		if (devtcp_wire_put(fq->priv, fq->qid, skb)) {
			/* Wire ring full: the frame keeps its place. */
			__skb_queue_head(&fq->line, skb);
			next = now + DEVTCP_FAULT_RETRY_NS;
			break;
		}
		devtcp_fault_unline(&fq->priv->fault, bytes);
	}
	if (fq->held && (!next || fq->held_deadline < next))
		next = fq->held_deadline;
	return next;
}

static void devtcp_fault_arm(struct devtcp_fault_q *fq, u64 next)
{
	if (next)
		hrtimer_start(&fq->timer, ns_to_ktime(next), HRTIMER_MODE_ABS_SOFT);
}

static enum hrtimer_restart devtcp_fault_timer(struct hrtimer *timer)
{
	struct devtcp_fault_q *fq = container_of(timer, struct devtcp_fault_q, timer);

	rcu_read_lock_bh();
	spin_lock(&fq->lock);
	devtcp_fault_arm(fq, devtcp_fault_run(fq, ktime_get_ns()));
	spin_unlock(&fq->lock);
	rcu_read_unlock_bh();
	return HRTIMER_NORESTART;
}

/* devtcp_start_xmit() while faults are on; BH off, under RCU. */
netdev_tx_t devtcp_fault_xmit(struct devtcp_priv *priv, struct sk_buff *skb, u16 qid)
{
	struct devtcp_fault *f = &priv->fault;
	struct devtcp_txq *txq = &priv->txq[qid];
	struct devtcp_fault_q *fq = &txq->fault;
	bool drop, corrupt, dup, reorder, delayed;
	unsigned int len = skb->len;
	struct sk_buff *copy = NULL;
	u64 now = ktime_get_ns();
	u64 release = now;
	u32 depth;

	/* Our queues are stopping: the lines are being flushed. */
	if (unlikely(!READ_ONCE(priv->up))) {
		devtcp_tx_count(txq, len, false);
		dev_kfree_skb_any(skb);
		return NETDEV_TX_OK;
	}

	/* The lines are full: the device's own queue overflows. */
	if (!devtcp_fault_line(f, skb->truesize)) {
		devtcp_fault_count(f, DEVTCP_FAULT_STAT_OVERLIMIT);
		devtcp_tx_count(txq, len, false);
		dev_kfree_skb_any(skb);
		return NETDEV_TX_OK;
	}

	spin_lock(&f->lock);
	drop = devtcp_fault_hit(f, f->cfg.drop);
	corrupt = devtcp_fault_hit(f, f->cfg.corrupt);
	dup = devtcp_fault_hit(f, f->cfg.dup);
	reorder = devtcp_fault_hit(f, f->cfg.reorder);
	depth = f->cfg.depth;
	delayed = f->cfg.delay_us;
	if (!drop && !corrupt)
		release = devtcp_fault_release(f, now, len);
	spin_unlock(&f->lock);

	/* Lost or corrupted frames did cross the wire as far as we know. */
	devtcp_tx_count(txq, len, true);
	if (drop || corrupt) {
		devtcp_fault_count(f, drop ? DEVTCP_FAULT_STAT_DROP : DEVTCP_FAULT_STAT_CORRUPT);
		devtcp_fault_unline(f, skb->truesize);
		dev_kfree_skb_any(skb);
		return NETDEV_TX_OK;
	}

	skb_tx_timestamp(skb);
	DEVTCP_SKB_CB(skb)->gen = priv->gen;
	DEVTCP_SKB_CB(skb)->release = release;
	/*
	 * Propagation delay does not hold the sender's buffer on a real wire:
	 * a clone waits (keeping the TX ring slot and, by sharing the data, a
	 * zero-copy completion) and the sender's skb goes now, or TCP Small
	 * Queues would throttle the socket to a few frames per delay.
	 */
	if (delayed) {
		struct sk_buff *clone = skb_clone(skb, GFP_ATOMIC);

		if (clone) {
			dev_consume_skb_any(skb);
			skb = clone;
		}
	}
	/*
	 * The peer only reads frames, so a clone (sharing the frags, also the
	 * unreadable ones of devmem TX) is a duplicate. It takes a TX ring slot
	 * of its own; the completion ring has room for the ring's size only.
	 */
	if (dup && atomic_read(&txq->inflight) + 2 <= priv->tx_ring_size &&
	    devtcp_fault_line(f, skb->truesize)) {
		copy = skb_clone(skb, GFP_ATOMIC);
		if (copy)
			devtcp_fault_count(f, DEVTCP_FAULT_STAT_DUP);
		else
			devtcp_fault_unline(f, skb->truesize);
	}

	spin_lock(&fq->lock);
	atomic_inc(&txq->inflight);
	if (reorder && !fq->held) {
		fq->held = skb;
		fq->held_left = depth;
		fq->held_deadline = now + DEVTCP_FAULT_REORDER_TIMEOUT_NS;
		devtcp_fault_count(f, DEVTCP_FAULT_STAT_REORDER);
	} else {
		devtcp_fault_enqueue(fq, skb);
		if (fq->held && !--fq->held_left)
			devtcp_fault_release_held(fq);
	}
	if (copy) {
		atomic_inc(&txq->inflight);
		devtcp_fault_enqueue(fq, copy);
	}
	devtcp_fault_arm(fq, devtcp_fault_run(fq, now));
	spin_unlock(&fq->lock);

	if (atomic_read(&txq->inflight) >= priv->tx_ring_size)
		devtcp_tx_ring_full(priv, txq, netdev_get_tx_queue(priv->dev, qid));
	return NETDEV_TX_OK;
}

/*
 * The queues stop: frames still waiting are freed. xmit no longer adds any
 * (priv->up is clear and seen) and the timers are cancelled first.
 */
void devtcp_fault_flush(struct devtcp_priv *priv)
{
	struct devtcp_fault_q *fq;
	int i;

	for (i = 0; i < priv->dev->num_tx_queues; i++) {
		fq = &priv->txq[i].fault;
		hrtimer_cancel(&fq->timer);
		spin_lock_bh(&fq->lock);
		__skb_queue_purge(&fq->line);
		if (fq->held)
			kfree_skb(fq->held);
		fq->held = NULL;
		fq->last_release = 0;
		spin_unlock_bh(&fq->lock);
	}
	atomic_long_set(&priv->fault.line_bytes, 0);
}

void devtcp_fault_setup(struct devtcp_priv *priv)
{
	struct devtcp_fault *f = &priv->fault;

	spin_lock_init(&f->lock);
	/* Off, with a seed that `show` reports so that a run can be replayed. */
	f->cfg.seed = get_random_u64();
	prandom_seed_state(&f->rnd, f->cfg.seed);
}

void devtcp_fault_init_queues(struct devtcp_priv *priv)
{
	struct devtcp_fault_q *fq;
	int i;

	for (i = 0; i < priv->dev->num_tx_queues; i++) {
		fq = &priv->txq[i].fault;
		spin_lock_init(&fq->lock);
		skb_queue_head_init(&fq->line);
		hrtimer_setup(&fq->timer, devtcp_fault_timer, CLOCK_MONOTONIC,
			      HRTIMER_MODE_ABS_SOFT);
		fq->priv = priv;
		fq->qid = i;
	}
}

static int devtcp_fault_ppm(struct nlattr **tb, int type, u32 *val,
			    struct netlink_ext_ack *extack)
{
	if (!tb[type])
		return 0;
	if (nla_get_u32(tb[type]) > DEVTCP_FAULT_PPM_MAX) {
		NL_SET_ERR_MSG_ATTR(extack, tb[type],
				    "devtcp fault probabilities are in ppm: at most 1000000");
		return -EINVAL;
	}
	*val = nla_get_u32(tb[type]);
	return 0;
}

/*
 * Reads IFLA_DEVTCP_FAULT into @cfg, starting from the current settings:
 * attributes left out keep their value. Nothing is applied here, so a
 * refused request changes nothing. *reseed: a seed was given.
 */
int devtcp_fault_parse(struct devtcp_priv *priv, const struct nlattr *nla,
		       struct devtcp_fault_cfg *cfg, bool *reseed,
		       struct netlink_ext_ack *extack)
{
	struct nlattr *tb[IFLA_DEVTCP_FAULT_MAX + 1];
	int err;

	spin_lock_bh(&priv->fault.lock);
	*cfg = priv->fault.cfg;
	spin_unlock_bh(&priv->fault.lock);
	*reseed = false;

	err = nla_parse_nested(tb, IFLA_DEVTCP_FAULT_MAX, nla, devtcp_fault_policy, extack);
	if (err)
		return err;
	err = devtcp_fault_ppm(tb, IFLA_DEVTCP_FAULT_DROP, &cfg->drop, extack) ?:
	      devtcp_fault_ppm(tb, IFLA_DEVTCP_FAULT_REORDER, &cfg->reorder, extack) ?:
	      devtcp_fault_ppm(tb, IFLA_DEVTCP_FAULT_DUP, &cfg->dup, extack) ?:
	      devtcp_fault_ppm(tb, IFLA_DEVTCP_FAULT_CORRUPT, &cfg->corrupt, extack);
	if (err)
		return err;
	if (tb[IFLA_DEVTCP_FAULT_REORDER_DEPTH]) {
		cfg->depth = nla_get_u32(tb[IFLA_DEVTCP_FAULT_REORDER_DEPTH]);
		if (cfg->depth > DEVTCP_FAULT_DEPTH_MAX) {
			NL_SET_ERR_MSG_ATTR_FMT(extack, tb[IFLA_DEVTCP_FAULT_REORDER_DEPTH],
						"devtcp reorder depth is at most %d frames",
						DEVTCP_FAULT_DEPTH_MAX);
			return -EINVAL;
		}
	}
	if (cfg->reorder && !cfg->depth) {
		NL_SET_ERR_MSG(extack,
			       "devtcp reorder needs a depth of at least 1 (frames that overtake the held one)");
		return -EINVAL;
	}
	if (tb[IFLA_DEVTCP_FAULT_DELAY])
		cfg->delay_us = nla_get_u32(tb[IFLA_DEVTCP_FAULT_DELAY]);
	if (tb[IFLA_DEVTCP_FAULT_JITTER])
		cfg->jitter_us = nla_get_u32(tb[IFLA_DEVTCP_FAULT_JITTER]);
	if (cfg->delay_us > DEVTCP_FAULT_DELAY_MAX_US) {
		NL_SET_ERR_MSG_ATTR(extack, tb[IFLA_DEVTCP_FAULT_DELAY],
				    "devtcp fault delay is at most 10 s (10000000 us)");
		return -EINVAL;
	}
	if (cfg->jitter_us > cfg->delay_us) {
		NL_SET_ERR_MSG_ATTR(extack, tb[IFLA_DEVTCP_FAULT_JITTER],
				    "devtcp fault jitter must not exceed the delay");
		return -EINVAL;
	}
	if (tb[IFLA_DEVTCP_FAULT_RATE]) {
		cfg->rate = nla_get_u64(tb[IFLA_DEVTCP_FAULT_RATE]);
		if (cfg->rate && cfg->rate < DEVTCP_FAULT_RATE_MIN) {
			NL_SET_ERR_MSG_ATTR_FMT(extack, tb[IFLA_DEVTCP_FAULT_RATE],
						"devtcp rate limit is 0 (off) or at least %d bit/s",
						DEVTCP_FAULT_RATE_MIN);
			return -EINVAL;
		}
	}
	if (tb[IFLA_DEVTCP_FAULT_SEED]) {
		cfg->seed = nla_get_u64(tb[IFLA_DEVTCP_FAULT_SEED]);
		*reseed = true;
	}
	if (tb[IFLA_DEVTCP_FAULT_DMA_UNREACHABLE])
		cfg->dma_unreachable = nla_get_u8(tb[IFLA_DEVTCP_FAULT_DMA_UNREACHABLE]);
	return 0;
}

void devtcp_fault_set(struct devtcp_priv *priv, const struct devtcp_fault_cfg *cfg, bool reseed)
{
	struct devtcp_fault *f = &priv->fault;
	bool on;

	spin_lock_bh(&f->lock);
	f->cfg = *cfg;
	if (reseed) {
		prandom_seed_state(&f->rnd, cfg->seed);
		f->rate_next = 0;
	}
	/* Frames already waiting still go out, from the queue timers. */
	on = cfg->drop || cfg->reorder || cfg->dup || cfg->corrupt || cfg->delay_us || cfg->rate;
	WRITE_ONCE(f->on, on);
	WRITE_ONCE(f->dma_unreachable, cfg->dma_unreachable);
	spin_unlock_bh(&f->lock);
}

size_t devtcp_fault_get_size(void)
{
	return nla_total_size(0) +			/* IFLA_DEVTCP_FAULT */
	       7 * nla_total_size(sizeof(u32)) +
	       2 * nla_total_size_64bit(sizeof(u64)) +
	       nla_total_size(sizeof(u8));
}

int devtcp_fault_fill(struct sk_buff *skb, struct devtcp_priv *priv)
{
	struct devtcp_fault_cfg cfg;
	struct nlattr *nest;

	spin_lock_bh(&priv->fault.lock);
	cfg = priv->fault.cfg;
	spin_unlock_bh(&priv->fault.lock);

	nest = nla_nest_start(skb, IFLA_DEVTCP_FAULT);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, IFLA_DEVTCP_FAULT_DROP, cfg.drop) ||
	    nla_put_u32(skb, IFLA_DEVTCP_FAULT_REORDER, cfg.reorder) ||
	    nla_put_u32(skb, IFLA_DEVTCP_FAULT_REORDER_DEPTH, cfg.depth) ||
	    nla_put_u32(skb, IFLA_DEVTCP_FAULT_DUP, cfg.dup) ||
	    nla_put_u32(skb, IFLA_DEVTCP_FAULT_CORRUPT, cfg.corrupt) ||
	    nla_put_u32(skb, IFLA_DEVTCP_FAULT_DELAY, cfg.delay_us) ||
	    nla_put_u32(skb, IFLA_DEVTCP_FAULT_JITTER, cfg.jitter_us) ||
	    nla_put_u64_64bit(skb, IFLA_DEVTCP_FAULT_RATE, cfg.rate, IFLA_DEVTCP_FAULT_PAD) ||
	    nla_put_u64_64bit(skb, IFLA_DEVTCP_FAULT_SEED, cfg.seed, IFLA_DEVTCP_FAULT_PAD) ||
	    nla_put_u8(skb, IFLA_DEVTCP_FAULT_DMA_UNREACHABLE, cfg.dma_unreachable)) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}
