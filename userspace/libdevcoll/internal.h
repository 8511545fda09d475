/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef DEVCOLL_INTERNAL_H
#define DEVCOLL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include "devcoll.h"
#include "secret.h"
#include "wire.h"

#define DEVCOLL_EXPORT __attribute__((visibility("default")))

struct devmem_rx;
struct devmem_mem;
struct devmem_frag;

struct conn {
	int fd, peer;
	/* send side: one chunk in flight */
	bool sbusy;
	struct wire_hdr shdr;
	size_t shdr_done;
	const char *spay;
	size_t spay_len, spay_done;
	/* receive side */
	struct wire_hdr rhdr;
	size_t rhdr_got;
	bool rhdr_valid;	/* a parsed header waits (maybe for a later message) */
	bool rinpay;		/* receiving a payload */
	char *rdst;
	size_t rpay_len, rpay_got;
	int rstep;
	size_t rchunk;
	bool reof;
	/* small reads are served from here (dc_conn_recv) */
	char *stage;
	size_t stage_off, stage_len;
	/* devmem receive path */
	struct devmem_rx *drx;
};

struct endpoint {
	struct sockaddr_storage sa;
	socklen_t len;
};

struct op;

/* Broadcast, reduce, gather and scatter (DEVCOLL_ROOTED_ALGO=tree|chain|auto;
 * chain: linear for gather and scatter). */
enum rooted_algo { ROOTED_AUTO, ROOTED_TREE, ROOTED_CHAIN };

/* DEVCOLL_CUDA's effect on a communicator's buffers (cuda.c). */
enum dc_cuda_mode {
	DC_CUDA_NONE,	/* auto without libcuda: none can be on a GPU */
	DC_CUDA_STAGE,	/* device buffers are staged through host copies */
	DC_CUDA_REFUSE,	/* off: a buffer the CPU cannot reach fails, saying so */
};

struct devcoll_comm {
	int rank, size;
	unsigned int nconns;
	int timeout_ms;
	size_t chunk;
	unsigned int rxmode;
	enum devcoll_algo algo;
	enum rooted_algo rooted;
	size_t small_max;	/* bytes up to which the latency algorithms run */
	int spin_us;		/* poll this long without progress before sleeping */
	char tcp_cc[16];	/* congestion control of the connections ("": the system's) */
	bool tcp_cc_set;	/* by DEVCOLL_TCP_CONGESTION: refusal is an error */
	uint64_t id;		/* fresh per communicator: every hello names it */
	uint8_t key[DC_KEY_LEN];	/* the job's (secret.c, or PMIx's) */
	struct conn *conns;	/* size * nconns, peer-major; own rank's unused */
	int epfd;
	int wakefd;		/* eventfd in epfd: a send/recv was posted */
#define DC_EPOLL_RDPM (UINT32_MAX - 1)	/* epfd's tag of the rdpmd client socket */
	uint32_t seq;		/* collectives started */
	uint32_t *p2p_sseq, *p2p_rseq;
	int err;		/* sticky */
	char errmsg[512];
	struct endpoint *eps;
	struct sockaddr_storage advert;	/* own address as others reach it */
	bool pmix;
	enum dc_cuda_mode cuda;	/* device pointers staged or refused (cuda.c) */
	struct dc_cuda_pool *cuda_pool;	/* and the host copies kept for that */
	/* devmem receive path */
	void *dm;		/* struct dm_state */
	/* operations: the queue and its progress thread */
	pthread_mutex_t mtx;
	pthread_cond_t cv;
	struct devcoll_req *qhead, *qtail;
	bool busy, stop, thread_started;
	int waiting;		/* user threads in pthread_cond_wait(cv) */
	pthread_t thread;
	/* scratch */
	char *tmp;
	size_t tmp_len;
};

/* comm.c: settings from the environment */
long dc_env_long(const char *name, long dflt);
/* iface.c: the numeric address DEVCOLL_IF's @spec picks on this host */
int dc_if_addr(const char *spec, char *out, size_t len);

/* conn.c: reads @len bytes of @k into @buf, waiting until @end (ms) at
 * most: the bytes read, fewer at the deadline, an error or end of stream */
size_t dc_conn_read_for(devcoll_comm *c, struct conn *k, char *buf, size_t len, int64_t end);

/* bootstrap.c: "host:port", "[v6 address]:port", or with @need_port false
 * also a bare "host", "[v6 address]" or "v6 address" (port 0); @what names
 * the setting in errors */
int dc_parse_addr(const char *s, bool need_port, const char *what, struct sockaddr_storage *sa,
		  socklen_t *len);
socklen_t dc_sa_len(const struct sockaddr_storage *sa);
void dc_sa_set_port(struct sockaddr_storage *sa, uint16_t port);
/* @sa's IP address into @ip (v4-mapped v6 as v4): its length, 0 if neither */
size_t dc_sa_ip(const struct sockaddr_storage *sa, uint8_t ip[16]);
/* whether @sa is the wildcard address (0.0.0.0 or ::) */
bool dc_sa_is_any(const struct sockaddr_storage *sa);
/* a listener on @local's address (port 0); its reachable address in @ep */
int dc_listen_like(const struct sockaddr_storage *local, struct endpoint *ep, int *lfd);
/* rank 0 collects every rank's endpoint on @addr and hands out the table;
 * @if_addr: DEVCOLL_IF's pick, for the ranks but 0 (which listens where
 * DEVCOLL_ADDR says: the others reach it there) */
int dc_boot_env(devcoll_comm *c, const char *addr, const char *bind_addr, const char *if_addr,
		int *lfd);
/* pmix.c: the world communicator of a PMIx launcher's job */
int dc_boot_pmix(devcoll_comm **out, const devcoll_comm *like, const char *bind_addr, int *lfd);
void dc_pmix_finalize(void);

/* error.c */
int dc_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* strerror(@e) of a socket call, saying what EFAULT means for a buffer */
const char *dc_io_error(int e);
/* Breaks the communicator: tells the peers why and shuts every connection
 * down, so that they fail at once instead of at their timeout. */
int dc_comm_fail(devcoll_comm *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A peer's K_ABORT (in k->rhdr): reads its message, fails the same way. */
int dc_recv_abort(devcoll_comm *c, struct conn *k);

/* reduce.c */
/* dst = a OP b for @n elements; @a may be @dst */
typedef void (*reduce_fn)(void *dst, const void *a, const void *b, size_t n);
reduce_fn dc_reduce_fn(enum devcoll_dtype t, enum devcoll_op op);
/* the portable loops, which dc_reduce_fn() may replace with vector ones */
reduce_fn dc_reduce_fn_scalar(enum devcoll_dtype t, enum devcoll_op op);
void dc_avg_finish(void *buf, size_t n, enum devcoll_dtype t, int size);

/* net.c: bootstrap and the transfer engine */
int dc_listen(struct sockaddr_storage *bind_sa, socklen_t len, int *fd);
/* blocking set-up I/O until @deadline (dc_now_ms) */
int dc_io_all(int fd, void *buf, size_t len, bool wr, int64_t deadline);
int dc_mesh(devcoll_comm *c, int lfd, const struct endpoint *eps);
int dc_comm_alloc(devcoll_comm **out, int rank, int size, const devcoll_comm *like);
void dc_comm_free(devcoll_comm *c);

struct step {
	const char *sptr;	/* message to send (NULL: none) */
	size_t slen;
	char *rptr;		/* message to receive (NULL: none) */
	size_t rlen;
	char *tmp;		/* non-NULL: reduce (received into a per-connection
				 * slot, then reduced into rptr) */
	bool dep;		/* send chunk j after chunk j of the previous step's receive */
	const char *init;	/* reduce out of place: rptr = init OP received */
};

struct xfer {
	int speer, rpeer;	/* -1: none */
	struct step *st;
	int nst;
	struct wire_hdr tmpl;	/* seq, kind, op, dtype, count, tag; step: of st[0] */
	reduce_fn red;
	size_t esize;
	char *slots;		/* dc_run's: a chunk per receiving connection */
	size_t chunk;		/* bytes per chunk (0: DEVCOLL_CHUNK) */
};
int dc_run(devcoll_comm *c, struct xfer *x);
/* one message each way (either may be absent) */
int dc_sendrecv(devcoll_comm *c, const struct wire_hdr *tmpl, int speer, const void *sbuf,
		size_t slen, int rpeer, void *rbuf, size_t rlen);
/* connection-level pieces, shared with the send/recv engine (p2p.c) */
int dc_conn_send(devcoll_comm *c, struct conn *k, int *err);
ssize_t dc_conn_recv(devcoll_comm *c, struct conn *k, void *dst, size_t len);
int dc_conn_hdr(devcoll_comm *c, struct conn *k, int *progress);
int dc_seq_cmp(uint32_t a, uint32_t b);
const char *dc_kname(unsigned int k);
size_t dc_nchunks(size_t len, size_t chunk);
size_t dc_msg_chunk(const devcoll_comm *c);
size_t dc_chunk_len(size_t len, size_t chunk, size_t j);
int64_t dc_now_ms(void);
/* poll the sockets, then sleep (*@spin_until: 0 after progress) */
struct epoll_event;
int dc_wait_events(devcoll_comm *c, struct epoll_event *evs, int max, int64_t *spin_until,
		   int timeout_ms);

/* devmem path (dm.c) */
int dc_dm_setup(devcoll_comm *c, const devcoll_comm *parent);
void dc_dm_free(devcoll_comm *c);
/* rdpmd's events, read now (a syscall: not for the hot path): once one
 * dropped the binding, its error with what happened in @why, else 0. */
int dc_dm_dead(devcoll_comm *c, char *why, size_t len);
/* The same, failing the communicator: 0 or its error. */
int dc_dm_check(devcoll_comm *c);
/* Receives a header or payload of a devmem connection: like recv(). With @red
 * it writes dst = @a OP the bytes instead of copying them (@a may be @dst). */
ssize_t dc_dm_recv(devcoll_comm *c, struct conn *k, void *dst, const void *a, size_t len,
		   reduce_fn red, size_t esize);
/* Whether every connection from @peer lands in a GPU dma-buf: a receive
 * from it can go straight into a device buffer (no staging). */
bool dc_dm_gpu_direct(const devcoll_comm *c, int peer);

/* an operation, as queued */
struct op {
	int kind;
	const void *send;
	void *recv;
	size_t count, count2;
	enum devcoll_dtype type;
	enum devcoll_op rop;
	int root;		/* also the peer of send/recv */
	uint32_t tag;
	size_t *v;		/* v-variants: counts and displacements (owned) */
	const size_t *counts, *displs, *scounts, *sdispls;
	struct dc_stage *stage;	/* host copies of GPU buffers (cuda.c) */
};

/* coll.c: runs @o now (the communicator is free) */
int dc_exec_op(devcoll_comm *c, struct op *o);
/* request.c: validates @o; runs it (blocking) or queues it (post, a request
 * in *@out for test/wait) */
int dc_op_check(devcoll_comm *c, const struct op *o);
int dc_blocking(devcoll_comm *c, struct op *o);
int dc_post(devcoll_comm *c, const struct op *o, devcoll_req **out);

/* cuda.c: a GPU buffer's host copy; out_len bytes at out_off go back */
struct dc_stage_buf {
	const char *dev;
	char *host;
	size_t len, out_off, out_len;
	struct CUctx_st *ctx;
	bool pooled;		/* host is one of the communicator's pinned ones */
};

struct dc_stage {
	devcoll_comm *comm;
	struct dc_stage_buf buf[2];	/* send (or both, in place), receive */
};

/* DEVCOLL_CUDA: whether communicators made like @c look for device
 * pointers (c->cuda). */
int dc_cuda_init(devcoll_comm *c);
/* @c treats them as @mode says (its pool of pinned buffers made). */
int dc_cuda_like(devcoll_comm *c, enum dc_cuda_mode mode);
/* Frees @c's pinned staging buffers. */
void dc_cuda_free(devcoll_comm *c);
/* Points @o at host copies of its buffers in GPU memory (o->stage), the
 * bytes it sends copied in; nothing when none is. DC_CUDA_REFUSE: fails
 * the communicator with -EFAULT if a buffer is not the CPU's. Undone, the received
 * bytes copied back when @status is 0, by dc_cuda_unstage(), which returns
 * @status or the copy's error. */
int dc_cuda_stage(devcoll_comm *c, struct op *o);
int dc_cuda_unstage(struct op *o, int status);
/* Whether @p is device memory the CPU cannot reach (false without CUDA). */
bool dc_cuda_on_device(const void *p);

struct devcoll_req {
	struct devcoll_req *next;
	devcoll_comm *comm;
	struct op *op;
	bool done;
	int status;
};

/* split: an allgather of @bytes raw bytes over @c */
int dc_allgather_raw(devcoll_comm *c, const void *send, void *recv, size_t bytes, int kind);

/* p2p.c: runs the send/recv operations at the head of the queue together,
 * taking later ones in as they are posted; called and returns with c->mtx
 * held. */
void dc_p2p_batch(devcoll_comm *c);

#endif
