// SPDX-License-Identifier: GPL-2.0
/*
 * Devmem TCP sender: binds a dma-buf (udmabuf, or with -H one from the
 * system dma-heap) for TX with netdev bind-tx, connects, and sends tcp_stream's
 * pattern straight from the dma-buf with sendmsg(MSG_ZEROCOPY) and an
 * SCM_DEVMEM_DMABUF cmsg (the iov holds offsets into the dma-buf).
 *
 *   devmem_tx -i IFNAME -a ADDR -p PORT -n BYTES [-s SEED] [-b BUFSIZE] [-c CHUNK] [-H]
 *   devmem_tx -i IFNAME -a ADDR -p PORT -x CASE
 *
 * The dma-buf is a ring of CHUNK-sized slots (default 1 MiB of a 16 MiB
 * buffer). A slot is refilled with the next part of the stream only once the
 * kernel has reported every send from it complete on the error queue: until
 * then the device may still read it.
 *
 * -x sends once the wrong way and expects the kernel's error:
 *   unknown-id    a dmabuf id that is not bound          EINVAL
 *   beyond-end    an offset past the end of the dma-buf  EFAULT
 *   no-zerocopy   the cmsg without MSG_ZEROCOPY          EINVAL
 *
 * Exit status: 0 when all BYTES were sent and completed (or the -x case got
 * its error), 1 otherwise, 2 on usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/dma-buf.h>
#include <time.h>
#include <linux/errqueue.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/devmem_compat.h>

#include "devmem_util.h"
#include "devtcp/pattern.h"

#ifndef SO_EE_ORIGIN_ZEROCOPY
#define SO_EE_ORIGIN_ZEROCOPY		5
#endif
#ifndef SO_EE_CODE_ZEROCOPY_COPIED
#define SO_EE_CODE_ZEROCOPY_COPIED	1
#endif

/* Zero-copy sends that may be outstanding; ids are tracked modulo this. */
#define ZC_WINDOW	65536

struct options {
	const char *ifname;
	const char *addr;
	int port;
	uint64_t total;
	uint64_t seed;
	size_t bufsize;
	size_t chunk;
	int heap;
	const char *bad_case;
};

/*
 * Zero-copy completion tracking. Every sendmsg(MSG_ZEROCOPY) that sends
 * something gets the next id; the kernel reports finished ids as ranges,
 * possibly out of order.
 */
struct zc_state {
	uint32_t next_id;		/* id of the next send */
	uint32_t done_below;		/* every id below this has completed */
	uint8_t done[ZC_WINDOW];	/* completed ids >= done_below */
	uint64_t copied;		/* completions the kernel had to copy */
};

static void usage(void)
{
	fprintf(stderr, "usage: devmem_tx -i IFNAME -a ADDR -p PORT -n BYTES [-s SEED] "
			"[-b BUFSIZE] [-c CHUNK] [-H]\n"
			"       devmem_tx -i IFNAME -a ADDR -p PORT -x "
			"unknown-id|beyond-end|no-zerocopy\n");
	exit(2);
}

/* Sends @len bytes at dma-buf offset @off; returns sendmsg()'s result. */
static ssize_t send_dmabuf(int s, uint32_t id, uint64_t off, size_t len, int flags)
{
	char ctrl[CMSG_SPACE(sizeof(uint32_t))] __attribute__((aligned(8))) = { 0 };
	struct iovec iov = { .iov_base = (void *)(uintptr_t)off, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctrl,
		.msg_controllen = sizeof(ctrl),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_DEVMEM_DMABUF;
	cm->cmsg_len = CMSG_LEN(sizeof(uint32_t));
	memcpy(CMSG_DATA(cm), &id, sizeof(id));
	return sendmsg(s, &msg, flags);
}

/* Reads the completions queued on the error queue; blocks if @wait. */
static void zc_reap(struct zc_state *zc, int s, int wait)
{
	for (;;) {
		char ctrl[CMSG_SPACE(sizeof(struct sock_extended_err))]
			__attribute__((aligned(8)));
		struct msghdr msg = { .msg_control = ctrl, .msg_controllen = sizeof(ctrl) };
		const struct sock_extended_err *ee;
		struct cmsghdr *cm;

		if (recvmsg(s, &msg, MSG_ERRQUEUE) < 0) {
			struct pollfd pfd = { .fd = s, .events = 0 };

			if (errno != EAGAIN && errno != EWOULDBLOCK)
				die("recvmsg MSG_ERRQUEUE");
			if (!wait)
				return;
			/* POLLERR is always reported; nothing to ask for. */
			if (poll(&pfd, 1, 10000) <= 0) {
				fprintf(stderr, "devmem_tx: no zero-copy completion in 10 s "
						"(%u sent, all below %u done)\n",
					zc->next_id, zc->done_below);
				exit(1);
			}
			wait = 0;	/* one batch is what the caller waits for */
			continue;
		}
		wait = 0;	/* got some: what is left is only read if already queued */
		cm = CMSG_FIRSTHDR(&msg);
		if (!cm) {
			fprintf(stderr, "devmem_tx: error queue message without cmsg\n");
			exit(1);
		}
		ee = (const struct sock_extended_err *)CMSG_DATA(cm);
		if (ee->ee_origin != SO_EE_ORIGIN_ZEROCOPY || ee->ee_errno) {
			fprintf(stderr, "devmem_tx: error queue: origin %u errno %u\n",
				ee->ee_origin, ee->ee_errno);
			exit(1);
		}
		if (ee->ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
			zc->copied++;
		/* ee_info..ee_data, inclusive, may wrap around 2^32. */
		for (uint32_t id = ee->ee_info; ; id++) {
			if (id - zc->done_below >= ZC_WINDOW) {
				fprintf(stderr, "devmem_tx: completion for unknown id %u\n", id);
				exit(1);
			}
			zc->done[id % ZC_WINDOW] = 1;
			if (id == ee->ee_data)
				break;
		}
		while (zc->done_below != zc->next_id && zc->done[zc->done_below % ZC_WINDOW])
			zc->done[zc->done_below++ % ZC_WINDOW] = 0;
	}
}

/* Waits until every send up to (not including) id @upto has completed. */
static void zc_wait(struct zc_state *zc, int s, uint32_t upto)
{
	zc_reap(zc, s, 0);
	while ((int32_t)(upto - zc->done_below) > 0)
		zc_reap(zc, s, 1);
}

/* Sends the stream through the slots of the dma-buf; returns bytes sent. */
static uint64_t send_stream(int s, const struct dmabuf *db, const struct options *o,
			    struct zc_state *zc)
{
	size_t nslots = db->size / o->chunk;
	uint32_t *slot_last = calloc(nslots, sizeof(*slot_last));	/* id after its sends */
	uint64_t sent = 0;
	size_t slot = 0;

	if (!slot_last)
		die("calloc");
	while (sent < o->total) {
		uint64_t off = slot * o->chunk;
		size_t len = o->total - sent < o->chunk ? o->total - sent : o->chunk;
		size_t done = 0;

		zc_wait(zc, s, slot_last[slot]);
		dmabuf_sync(db, DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE);
		pattern_fill(db->map + off, len, o->seed, sent);
		dmabuf_sync(db, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE);
		while (done < len) {
			ssize_t n = send_dmabuf(s, db->id, off + done, len - done, MSG_ZEROCOPY);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				fprintf(stderr, "devmem_tx: sendmsg at stream offset %llu: %s\n",
					(unsigned long long)(sent + done), strerror(errno));
				exit(1);
			}
			done += n;
			zc->next_id++;
			/* Keep the window: reap what has completed meanwhile. */
			if (zc->next_id - zc->done_below >= ZC_WINDOW - 1)
				zc_wait(zc, s, zc->next_id - ZC_WINDOW / 2);
		}
		slot_last[slot] = zc->next_id;
		sent += len;
		slot = (slot + 1) % nslots;
	}
	zc_wait(zc, s, zc->next_id);
	free(slot_last);
	return sent;
}

/* One send the wrong way; returns 0 if the kernel refused it as expected. */
static int send_bad(int s, const struct dmabuf *db, const char *what)
{
	int want, flags = MSG_ZEROCOPY;
	uint32_t id = db->id;
	uint64_t off = 0;
	ssize_t n;

	if (!strcmp(what, "unknown-id")) {
		id = db->id + 1000;
		want = EINVAL;
	} else if (!strcmp(what, "beyond-end")) {
		off = db->size;
		want = EFAULT;
	} else if (!strcmp(what, "no-zerocopy")) {
		flags = 0;
		want = EINVAL;
	} else {
		usage();
	}
	n = send_dmabuf(s, id, off, 4096, flags);
	if (n >= 0) {
		printf("%s: sendmsg sent %zd bytes instead of failing with %s\n", what, n,
		       strerror(want));
		return 1;
	}
	printf("%s: sendmsg: %s%s\n", what, strerror(errno),
	       errno == want ? ", as expected" : "");
	return errno != want;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	long page = sysconf(_SC_PAGESIZE);
	int opt;

	*o = (struct options){ .seed = 1, .bufsize = 16 << 20, .chunk = 1 << 20 };
	while ((opt = getopt(argc, argv, "i:a:p:n:s:b:c:Hx:")) != -1) {
		switch (opt) {
		case 'i': o->ifname = optarg; break;
		case 'a': o->addr = optarg; break;
		case 'p': o->port = atoi(optarg); break;
		case 'n': o->total = strtoull(optarg, NULL, 0); break;
		case 's': o->seed = strtoull(optarg, NULL, 0); break;
		case 'b': o->bufsize = strtoull(optarg, NULL, 0); break;
		case 'c': o->chunk = strtoull(optarg, NULL, 0); break;
		case 'H': o->heap = 1; break;
		case 'x': o->bad_case = optarg; break;
		default: usage();
		}
	}
	if (optind != argc || !o->ifname || !o->addr || o->port <= 0 || o->port > 65535 ||
	    (!o->total && !o->bad_case) || !o->bufsize || o->bufsize % page || !o->chunk ||
	    o->chunk > o->bufsize)
		usage();
}

int main(int argc, char **argv)
{
	static struct zc_state zc;
	struct devmem_nl *nl;
	struct options o;
	struct dmabuf db;
	int ifindex, s, one = 1;
	uint64_t sent;
	double t0, secs;

	parse_options(argc, argv, &o);
	ifindex = ifindex_of(o.ifname);
	dmabuf_create(&db, o.bufsize, o.heap);
	nl = netdev_nl_open();
	netdev_bind_tx(nl, ifindex, &db);

	s = tcp_connect(o.addr, o.port);
	if (setsockopt(s, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)))
		die("SO_ZEROCOPY");
	if (o.bad_case)
		return send_bad(s, &db, o.bad_case);

	t0 = now();
	sent = send_stream(s, &db, &o, &zc);
	secs = now() - t0;
	printf("sent %llu bytes from dmabuf id %u in %u zero-copy sends, all completed "
	       "(%llu copied by the kernel), %.1f MB/s\n", (unsigned long long)sent, db.id,
	       zc.next_id, (unsigned long long)zc.copied, secs > 0 ? sent / secs / 1e6 : 0.0);
	close(s);
	netdev_nl_close(nl);
	return sent == o.total && !zc.copied ? 0 : 1;
}
