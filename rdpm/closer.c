// SPDX-License-Identifier: GPL-2.0
/*
 * The closer: every file a client passed goes through a helper process,
 * never through rdpmd's own close. Closing a file runs code the client
 * controls: each close() of a FUSE file waits, uninterruptibly, for the
 * FUSE server's answer to its FLUSH (which the client may be); the last
 * close of a TCP socket with SO_LINGER whose peer advertises a zero window
 * waits out the linger time.
 *
 * So a helper, forked at start, does two things over a socketpair:
 * - reads the client messages that carry fds (rdpmd peeks and hands it the
 *   client's socket, OP_READ): it passes on only dma-bufs and sockets,
 *   which have no flush, and closes the others itself (rdpmd_client_read_done
 *   gets the message and what each fd was);
 * - closes the fds and client sockets rdpmd is done with (OP_CLOSE). Those
 *   of one message are closed when the next message comes, which rdpmd
 *   sends after closing its own copies: rdpmd's close is never the last.
 * When the helper has had work for CLOSER_STALL_MS without answering,
 * rdpmd kills it and forks another, at most CLOSER_RESTARTS a minute; the
 * uid whose files it was closing gets a strike, and a uid with
 * CLOSER_STRIKES in a minute has its messages with fds left unread until
 * the minute ends. When no helper can be forked, rdpmd tries again after
 * 100 ms, doubling up to 10 s: meanwhile fds wait in the ring and messages
 * with fds stay unread. Never in a thread of its own, as its closes would
 * block rdpmd's exit and stay blocked.
 *
 * Fds not yet sent wait in a ring, counted per uid: a uid over its share
 * of the ring is not read until its fds went (rdpm_closer_may_read), while
 * everyone else is; admins may use a reserve nobody else can.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdpmd.h"

#define CLOSER_STALL_MS		1000	/* work this long, no answer: killed */
#define CLOSER_RESTARTS		10	/* helpers forked per minute at most */
#define CLOSER_RETRY_MS		100	/* no helper: the next try, doubling */
#define CLOSER_RETRY_MAX_MS	10000
#define CLOSER_READS		16	/* messages the helper is reading at most */
#define CLOSER_STRIKES		2	/* helpers stalled by one uid in a minute */
#define CLOSER_BUSY_MS		1000	/* helper time one uid may take a minute */
#define CLOSER_STRUCK		16	/* uids with strikes remembered */
#define CLOSER_STUCK_PER_UID	2	/* one uid's stuck processes, before it is held back */
#define CLOSER_CHILD_MS		1000	/* a closing child older than this is stuck */
/* Children of the helper closing fds (close_by_exit) at most at once, in
 * all and of one uid. */
#define CLOSER_CHILDREN		32
#define CLOSER_CHILDREN_PER_UID	4
/* Stuck processes of earlier helpers past which no new helper starts: the
 * current helper's children, and the helper itself if it is killed, find a
 * slot in stuck[] (with a margin for exits whose event is not taken yet). */
#define CLOSER_STUCK_OLD	(RDPM_CLOSER_STUCK - CLOSER_CHILDREN - 8)
#define HELD			RDPM_CLOSER_HELD	/* struck uids' fds held back */
#define HELD_SHARE		(HELD / 4)		/* of those, one uid's */
/* One message's fds and the socket they came on. */
#define MSG_ROOM		(RDPM_MSG_MAX_FDS + 1)
#define SHARE			(RDPM_CLOSER_SLOTS / 4)
#define ADMIN_RESERVE		MSG_ROOM
/* Queued fds, and the sent ones until acknowledged (whose uid a stall blames). */
#define RING			(RDPM_CLOSER_SLOTS + RDPM_CLOSER_INFLIGHT)

/* rdpmd to the helper: a request, with the fds to close or the socket to read. */
enum { OP_CLOSE = 1, OP_READ };
struct request {
	uint32_t op;
	uint32_t uid;		/* OP_CLOSE: whose fds (a message holds one uid's) */
	uint64_t token;		/* OP_READ: the answer's */
};

/*
 * The helper to rdpmd. ANS_READ is followed by kind[nfds] (enum
 * rdpm_fd_class of each fd the message carried; the dma-bufs and sockets
 * attached, in order) and the message's n bytes. ANS_CHILD carries the
 * pidfd of a child the helper forked to close fds of uid.
 */
enum { ANS_DONE = 1, ANS_READ, ANS_CHILD };
struct answer {
	uint32_t op;
	uint32_t closed;	/* OP_CLOSE fds closed since the last answer */
	uint32_t dropped;	/* ANS_DONE: fds of the last read closed by the helper */
	int32_t n;		/* ANS_READ: recvmsg's result, or -errno */
	uint64_t token;
	uint32_t flags;		/* ANS_READ: its msg_flags */
	uint32_t nfds;		/* ANS_READ: fds it carried */
	int32_t pid;		/* ANS_CHILD: the child (for the log) */
	uint32_t uid;		/* ANS_CHILD: whose fds it closes */
};
#define ANSWER_MAX	(sizeof(struct answer) + RDPM_MSG_MAX_FDS + RDPM_MAX_MSG)

struct queued {
	int fd;
	uid_t uid;
};

static struct queued ring[RING];
static unsigned int tail, head, count;	/* oldest sent; next to send; queued */
static struct {
	uid_t uid;
	unsigned int n;
} users[RING + HELD];			/* queued or held fds per uid, n > 0 */
static unsigned int nusers;
static struct {
	uint64_t token;
	uid_t uid;
} reads[CLOSER_READS];			/* OP_READs sent, not answered */
static unsigned int rhead, rcount;
static struct {
	uid_t uid;
	unsigned int n;			/* stalls this minute */
	uint64_t busy_ms;		/* helper time taken this minute */
	uint64_t since;
} struck[CLOSER_STRUCK];
/* Processes that may be stuck in a uid's files, followed until they exit
 * (their pidfd, in rdpmd's epoll set, becomes readable): killed helpers
 * (stuck from the kill), the helper's closing children (from
 * CLOSER_CHILD_MS after their fork). Free: pidfd -1. */
static struct {
	int pidfd;
	pid_t pid;
	uid_t uid;
	uint64_t stuck_at;
	bool logged;
} stuck[RDPM_CLOSER_STUCK];
/* A struck uid's fds: kept here, not sent, until its minute ends. */
static struct queued held[HELD];
static unsigned int nheld;

static enum rdpm_closer_mode mode;
static int sock = -1;			/* rdpmd's end; -1: no helper */
static pid_t helper = -1;		/* -1: none */
static int helper_pidfd = -1;
static unsigned int inflight;		/* sent, not yet acknowledged */
static unsigned int dropping;		/* a read's fds the helper is closing */
static uid_t dropping_uid;
static bool go_owed;			/* fds sent and no message after them yet */
static bool dying;			/* helper_lost: nothing is sent */
static bool send_full;			/* the helper's socket was full: wait for an answer */
static uint64_t progress_at;		/* the last answer, or the first work sent */
static uint64_t window_at, retry_at;	/* the restarts' minute; the next fork */
static unsigned int restarts, fork_fails;
static uint64_t retry_ms = CLOSER_RETRY_MS;
static uint64_t kills;

/* The index of @uid in users, added (with @add) if missing; -1: none. */
static int user_find(uid_t uid, bool add)
{
	for (unsigned int i = 0; i < nusers; i++)
		if (users[i].uid == uid)
			return (int)i;
	if (!add)
		return -1;
	users[nusers].uid = uid;
	users[nusers].n = 0;
	return (int)nusers++;
}

static void user_sub(uid_t uid)
{
	int i = user_find(uid, false);

	if (i >= 0 && !--users[i].n)
		users[i] = users[--nusers];
}

static bool busy(void)
{
	return inflight || rcount || dropping;
}

/* @uid's entry of struck, its minute started anew when over; NULL: none. */
static unsigned int blame_slot(uid_t uid)
{
	uint64_t now = rdpm_now_ms();
	unsigned int i, old = 0;

	for (i = 0; i < CLOSER_STRUCK && struck[i].uid != uid; i++)
		if (struck[i].since < struck[old].since)
			old = i;
	if (i == CLOSER_STRUCK || now >= struck[i].since + 60000) {
		i = i == CLOSER_STRUCK ? old : i;
		struck[i].uid = uid;
		struck[i].n = 0;
		struck[i].busy_ms = 0;
		struck[i].since = now;
	}
	return i;
}

/* The helper stalled on files of @uid (or they took it CLOSER_BUSY_MS this
 * minute): one strike more. */
static void strike(uid_t uid)
{
	unsigned int i;

	if (uid == (uid_t)-1)
		return;
	i = blame_slot(uid);
	if (++struck[i].n == CLOSER_STRIKES)
		rdpm_log(LOG_WARNING, "uid %u: its files held up the closer helper %u times "
			 "within a minute: its fds are held back and its messages with fds "
			 "not read for the rest of that minute", uid, struck[i].n);
}

/* The helper spent @ms on files of @uid. */
static void charge(uid_t uid, uint64_t ms)
{
	unsigned int i;

	if (uid == (uid_t)-1 || !ms)
		return;
	i = blame_slot(uid);
	struck[i].busy_ms += ms;
	if (struck[i].busy_ms >= CLOSER_BUSY_MS) {
		struck[i].busy_ms = 0;
		strike(uid);
	}
}

/* Whether @uid's fds may be held back: it has not its share of held yet. */
static bool may_hold(uid_t uid)
{
	unsigned int mine = 0;

	for (unsigned int i = 0; i < nheld; i++)
		mine += held[i].uid == uid;
	return nheld < HELD && mine < HELD_SHARE;
}

/* Processes stuck in @uid's files now (a FUSE file keeps a process,
 * killed or exiting, until its server answers). */
static unsigned int stuck_count(uid_t uid)
{
	uint64_t now = rdpm_now_ms();
	unsigned int n = 0;

	for (unsigned int i = 0; i < RDPM_CLOSER_STUCK; i++)
		n += stuck[i].pidfd >= 0 && stuck[i].uid == uid && now >= stuck[i].stuck_at;
	return n;
}

static unsigned int stuck_followed(void)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < RDPM_CLOSER_STUCK; i++)
		n += stuck[i].pidfd >= 0;
	return n;
}

/*
 * Follows process @pid (@pidfd, taken over), which may be stuck in files
 * of @uid from @stuck_at on, until it exits; a closing @child is logged
 * when it becomes stuck. There is always a slot: no helper starts while
 * CLOSER_STUCK_OLD slots are taken (helper_ensure), and a helper has at
 * most CLOSER_CHILDREN children; exits whose event is not taken yet are
 * swept. Without one (epoll failed) the process goes unfollowed, the log
 * says so (false).
 */
static void stuck_exited(unsigned int i);
static bool follow(int pidfd, pid_t pid, uid_t uid, uint64_t stuck_at, bool child)
{
	static struct rdpm_bucket rl;
	int err = ENOSPC;

	for (int pass = 0; pass < 2; pass++) {
		for (unsigned int i = 0; i < RDPM_CLOSER_STUCK; i++) {
			struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &stuck[i] };
			struct pollfd p = { .fd = stuck[i].pidfd, .events = POLLIN };

			if (stuck[i].pidfd >= 0 && (!pass || poll(&p, 1, 0) != 1))
				continue;
			stuck_exited(i);	/* pass 1: an exit not taken yet */
			if (epoll_ctl(rdpmd.epfd, EPOLL_CTL_ADD, pidfd, &ev)) {
				err = errno;
				break;
			}
			stuck[i].pidfd = pidfd;
			stuck[i].pid = pid;
			stuck[i].uid = uid;
			stuck[i].stuck_at = stuck_at;
			stuck[i].logged = !child;
			return true;
		}
	}
	rdpm_log_limited(&rl, LOG_ERR, "cannot follow pid %d, which may stay in a file of uid "
			 "%d: %s", pid, (int)uid, strerror(err));
	close(pidfd);
	return false;
}

/* A followed process exited: its slot is free. */
static void stuck_exited(unsigned int i)
{
	if (stuck[i].pidfd < 0)
		return;
	/* explicitly: a helper being forked may hold a copy for a moment,
	 * and the epoll entry lives as long as any copy does */
	epoll_ctl(rdpmd.epfd, EPOLL_CTL_DEL, stuck[i].pidfd, NULL);
	close(stuck[i].pidfd);
	stuck[i].pidfd = -1;
}

bool rdpm_closer_struck(uid_t uid)
{
	if (uid == (uid_t)-1)
		return false;
	if (stuck_count(uid) >= CLOSER_STUCK_PER_UID)
		return true;
	for (unsigned int i = 0; i < CLOSER_STRUCK; i++)
		if (struck[i].uid == uid && struck[i].n >= CLOSER_STRIKES &&
		    rdpm_now_ms() < struck[i].since + 60000)
			return true;
	return false;
}

/*
 * The helper's OP_READ: one message from client socket @c, its dma-bufs
 * and sockets passed on to rdpmd with the bytes (@closed rides along), the
 * other files closed here, after the answer went. false: rdpmd is gone.
 */
static bool read_one(int s, int c, uint64_t token, uint32_t closed)
{
	struct answer a = { .op = ANS_READ, .closed = closed, .token = token };
	uint8_t kind[RDPM_MSG_MAX_FDS];
	char buf[RDPM_MAX_MSG];
	int fds[RDPM_MSG_MAX_FDS], pass[1], drop[RDPM_MSG_MAX_FDS];
	unsigned int nfds, npass = 0, ndrop = 0;
	struct iovec in = { buf, sizeof(buf) }, out[3];
	int flags;
	ssize_t n = rdpm_recv_fds(c, &in, 1, fds, RDPM_MSG_MAX_FDS, &nfds, &flags, MSG_DONTWAIT);

	a.n = n < 0 ? -errno : (int32_t)n;
	a.flags = (uint32_t)flags;
	a.nfds = nfds;
	/* No request takes more than one fd: rdpmd gets at most that one. */
	for (unsigned int i = 0; i < nfds; i++) {
		kind[i] = (uint8_t)rdpm_fd_class(fds[i]);
		if (nfds == 1 && (kind[i] == RDPM_FD_DMABUF || kind[i] == RDPM_FD_SOCKET))
			pass[npass++] = fds[i];
		else
			drop[ndrop++] = fds[i];
	}
	out[0] = (struct iovec){ &a, sizeof(a) };
	out[1] = (struct iovec){ kind, nfds };
	out[2] = (struct iovec){ buf, n > 0 ? (size_t)n : 0 };
	n = rdpm_send_fds(s, out, 3, pass, npass, 0);
	/* Neither a dma-buf nor a socket has a flush: these closes end at once. */
	for (unsigned int i = 0; i < npass; i++)
		close(pass[i]);
	close(c);
	if (n < 0)
		return false;
	if (!ndrop)
		return true;
	for (unsigned int i = 0; i < ndrop; i++)
		close(drop[i]);
	a = (struct answer){ .op = ANS_DONE, .dropped = ndrop };
	return send(s, &a, sizeof(a), MSG_NOSIGNAL) == sizeof(a);
}

static int fd_order(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Closes every fd of this process but @keep[@n] (@n < RDPM_MSG_MAX_FDS + 2). */
static void close_all_but(const int *keep, unsigned int n)
{
	int sorted[RDPM_MSG_MAX_FDS + 2];
	unsigned int lo = 0;

	memcpy(sorted, keep, n * sizeof(int));
	qsort(sorted, n, sizeof(int), fd_order);
	for (unsigned int i = 0; i < n; i++) {
		if ((unsigned int)sorted[i] > lo)
			syscall(SYS_close_range, lo, (unsigned int)sorted[i] - 1, 0);
		lo = (unsigned int)sorted[i] + 1;
	}
	syscall(SYS_close_range, lo, ~0U, 0);
}

/*
 * A child holding a copy of @keep[@n] (all fds of this process: @keep
 * NULL) until *@go_w, the write end of a pipe, is closed; then it exits
 * with them. It holds nothing else: not another uid's files, nor the
 * helper's socket. Its pid, or -1 (no child, *@go_w not set).
 */
static pid_t fork_holder(int *go_w, const int *keep, unsigned int n)
{
	int go[2], mine[RDPM_MSG_MAX_FDS + 1];
	pid_t pid;
	char byte;

	if (pipe2(go, O_CLOEXEC))
		return -1;
	pid = fork();
	if (!pid) {
		if (keep) {
			memcpy(mine, keep, n * sizeof(int));
			mine[n] = go[0];
			close_all_but(mine, n + 1);
		} else {
			close(go[1]);
		}
		while (read(go[0], &byte, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(go[0]);
	if (pid < 0)
		close(go[1]);
	else
		*go_w = go[1];
	return pid;
}

/* The helper's closing children that have not been reaped, and whose fds. */
static struct {
	pid_t pid;
	uid_t uid;
} kids[CLOSER_CHILDREN];
static unsigned int nkids;

/* Whether another closing child of @uid may be forked, the exited ones reaped. */
static bool kids_room(uid_t uid)
{
	unsigned int mine = 0;
	pid_t pid;

	while (nkids && (pid = waitpid(-1, NULL, WNOHANG)) > 0)
		for (unsigned int i = 0; i < nkids; i++)
			if (kids[i].pid == pid)
				kids[i] = kids[--nkids];
	for (unsigned int i = 0; i < nkids; i++)
		mine += kids[i].uid == uid;
	return nkids < CLOSER_CHILDREN && mine < CLOSER_CHILDREN_PER_UID;
}

/* Whether the last close of @fd may wait: a TCP socket with SO_LINGER on,
 * or a unix socket (a client's connection, which may hold files). A
 * dma-buf's release, or a TCP socket's without linger, never waits. */
static bool close_may_wait(int fd)
{
	struct linger l = { 0 };
	socklen_t len = sizeof(int);
	int domain = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len))
		return false;
	if (domain != AF_INET && domain != AF_INET6)
		return true;
	len = sizeof(l);
	return getsockopt(fd, SOL_SOCKET, SO_LINGER, &l, &len) || l.l_onoff;
}

/*
 * Closes @all, fds of @uid, so that no close waits. A child holds those
 * that may wait while the helper closes its own copies, then exits with
 * the last references: a task that exits never waits out SO_LINGER on a
 * TCP socket's last close, and its release of a unix socket drops the
 * files queued there the same way. Only a release that waits even in an
 * exiting task (a FUSE file with cached writes its server never completes)
 * keeps the child: its pidfd goes to rdpmd over @s (ANS_CHILD), which
 * charges the child to @uid once it is a second old. Without a child (no
 * fork, no pidfd, or the uid's CLOSER_CHILDREN_PER_UID still there) they
 * are closed here, where rdpmd's watchdog covers a close that waits.
 * false: rdpmd is gone.
 */
static bool close_by_exit(int s, const int *all, unsigned int nall, uid_t uid)
{
	int go_w, pidfd = -1, fds[RDPM_MSG_MAX_FDS];
	unsigned int n = 0;
	pid_t pid = -1;
	bool ok = true;

	/* Most closes cannot wait: those go at once, without a fork. */
	for (unsigned int i = 0; i < nall; i++) {
		if (close_may_wait(all[i]))
			fds[n++] = all[i];
		else
			close(all[i]);
	}
	if (n && kids_room(uid))
		pid = fork_holder(&go_w, fds, n);
	if (pid > 0) {
		kids[nkids].pid = pid;
		kids[nkids++].uid = uid;
		/* Our child, not reaped yet: the pidfd is this very process. */
		pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (pidfd < 0) {
			/* It exits first: the last closes are ours. */
			close(go_w);
			waitpid(pid, NULL, 0);
			nkids--;
			pid = -1;
		}
	}
	for (unsigned int i = 0; i < n; i++)
		close(fds[i]);	/* with a child: its copies keep the files */
	if (pid > 0) {
		struct answer a = { .op = ANS_CHILD, .pid = pid, .uid = uid };
		struct iovec iov = { &a, sizeof(a) };

		ok = rdpm_send_fds(s, &iov, 1, &pidfd, 1, 0) == sizeof(a);
		close(pidfd);
		close(go_w);	/* the child exits, with the last references */
	}
	return ok;
}

/*
 * The helper, until rdpmd's end closes. The fds of an OP_CLOSE are closed
 * only when the next request comes: rdpmd sends that one after closing its
 * own copies, so that its close is never the last.
 */
static void closer_loop(int s)
{
	int kept[RDPM_MSG_MAX_FDS], fds[RDPM_MSG_MAX_FDS];
	unsigned int nkept = 0, nfds;
	uid_t kept_uid = (uid_t)-1;

	for (;;) {
		struct request r = { 0 };
		struct iovec iov = { &r, sizeof(r) };
		uint32_t closed = nkept;
		int flags;
		ssize_t n = rdpm_recv_fds(s, &iov, 1, fds, RDPM_MSG_MAX_FDS, &nfds, &flags, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (!close_by_exit(s, kept, nkept, kept_uid))
			n = 0;
		nkept = 0;
		if (n <= 0)
			break;
		if (r.op == OP_READ && nfds == 1) {
			if (!read_one(s, fds[0], r.token, closed))
				break;
			continue;
		}
		memcpy(kept, fds, nfds * sizeof(int));
		nkept = nfds;
		kept_uid = r.uid;
		if (closed) {
			struct answer a = { .op = ANS_DONE, .closed = closed };

			if (send(s, &a, sizeof(a), MSG_NOSIGNAL) != sizeof(a))
				break;
		}
	}
	close_by_exit(s, kept, nkept, kept_uid);
}

/* The forked helper: nothing of rdpmd's but its end of the socketpair. */
static __attribute__((noreturn)) void helper_main(int s, pid_t parent)
{
	sigset_t none;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	prctl(PR_SET_NAME, "rdpmd-closer");
	if (s != 3 && dup2(s, 3) != 3)
		_exit(1);
	/* nothing of rdpmd's (listener, clients, dma-bufs) may stay open here */
	if (syscall(SYS_close_range, 0, 2, 0) || syscall(SYS_close_range, 4, ~0U, 0))
		_exit(1);
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	/* a stop's SIGTERM to the unit's cgroup is rdpmd's to act on; the
	 * helper goes when rdpmd does (PR_SET_PDEATHSIG) */
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	closer_loop(3);
	_exit(0);
}

/* A new helper process; 0 or -errno. */
static int helper_start(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ring };
	pid_t parent = getpid(), pid;
	int sv[2], err;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	pid = fork();
	if (!pid)
		helper_main(sv[1], parent);
	err = errno;
	/* rdpmd never holds the helper's end: fds in flight die with the helper. */
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return -err;
	}
	if (rdpmd.epfd > 0 && epoll_ctl(rdpmd.epfd, EPOLL_CTL_ADD, sv[0], &ev)) {
		err = errno;
		close(sv[0]);
		kill(pid, SIGKILL);
		return -err;
	}
	sock = sv[0];
	helper = pid;
	/* rdpmd's child, not reaped yet: the pidfd is this very process */
	helper_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	inflight = 0;
	go_owed = false;
	return 0;
}

static bool take_answers(void);
static void pump(void);

/*
 * Queues @n fds of @uid whatever the limits: rdpmd must not close them
 * itself (a socket among them may linger). The ring's storage has room
 * beyond RDPM_CLOSER_SLOTS for what is in flight; past even that an fd
 * stays open in rdpmd, counted (never expected: each read passes at most
 * one fd). A held-back uid's are held while it has less than its share
 * of HELD, past that they go to the helper all the same: a bounded cost
 * (CLOSER_CHILDREN_PER_UID, the watchdog, CLOSER_STUCK_OLD), where fds
 * kept in rdpmd would not be.
 */
void rdpm_closer_keep(const int *fds, unsigned int n, uid_t uid)
{
	bool struck_uid = rdpm_closer_struck(uid);

	for (unsigned int i = 0; i < n; i++) {
		if (struck_uid && may_hold(uid)) {
			held[nheld++] = (struct queued){ fds[i], uid };
		} else if (count + inflight < RING) {
			ring[(head + count++) % RING] = (struct queued){ fds[i], uid };
		} else {
			rdpmd.counters.fds_kept++;
			continue;
		}
		users[user_find(uid, true)].n++;
	}
}

/* The helper is gone (killed, or died): what it held went with it, and
 * the messages it was reading: their clients are disconnected. */
static void helper_lost(void)
{
	/* Closing rdpmd's end would release the fds in answers not read yet,
	 * in rdpmd: they are taken first, and nothing new is sent. */
	dying = true;
	take_answers();
	dying = false;
	/* A killed helper may still finish a send: the next one closes this
	 * end, by its exit (close_by_exit), and what came with it. */
	if (rdpmd.epfd > 0)
		epoll_ctl(rdpmd.epfd, EPOLL_CTL_DEL, sock, NULL);
	rdpm_closer_keep(&sock, 1, (uid_t)-1);
	sock = -1;
	helper = -1;
	if (helper_pidfd >= 0)
		close(helper_pidfd);
	helper_pidfd = -1;
	tail = head;
	inflight = 0;
	dropping = 0;
	go_owed = false;
	/* The helper stalls only in closes, never in a read: a read not
	 * answered was not started, its message still waits in the client's
	 * socket. */
	while (rcount) {
		uint64_t token = reads[rhead].token;

		rhead = (rhead + 1) % CLOSER_READS;
		rcount--;
		rdpmd_client_read_again(token);
	}
	send_full = false;
}

/* A helper that stalled: the uid whose files it was closing gets a strike. */
static void helper_kill(const char *why)
{
	static uint64_t log_at;
	static unsigned int unlogged;
	uint64_t now = rdpm_now_ms();
	uid_t uid = dropping ? dropping_uid : inflight ? ring[tail].uid : (uid_t)-1;

	kills++;
	if (log_at && now < log_at + 1000) {
		unlogged++;
	} else {
		rdpm_log(LOG_WARNING, "closer helper pid %d %s (%u fd(s) held, files of uid %d): "
			 "killed; its exit drops them (%llu killed so far, %u not logged)", helper,
			 why, inflight + dropping, (int)uid, (unsigned long long)kills, unlogged);
		log_at = now;
		unlogged = 0;
	}
	strike(uid);
	kill(helper, SIGKILL);
	if (helper_pidfd < 0 || !follow(helper_pidfd, helper, uid, now, false))
		strike(uid);	/* unfollowed: as if it stayed */
	helper_pidfd = -1;
	helper_lost();
}

/* Reaps dead helpers (rdpmd has no other children; the killed ones it
 * follows by pidfd). */
static void reap(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* Logs, once, each closing child that became stuck. */
static void stuck_log(void)
{
	static struct rdpm_bucket rl;
	uint64_t now = rdpm_now_ms();

	for (unsigned int i = 0; i < RDPM_CLOSER_STUCK; i++) {
		if (stuck[i].pidfd < 0 || stuck[i].logged || now < stuck[i].stuck_at)
			continue;
		stuck[i].logged = true;
		rdpm_log_limited(&rl, LOG_WARNING, "uid %u: a file it passed keeps a closer child "
				 "(pid %d) waiting in its release: counted against the uid until it "
				 "exits", stuck[i].uid, stuck[i].pid);
	}
}

/* Forks a helper when there is none, within the restart budget. */
static void helper_ensure(uint64_t now)
{
	int err;

	if (sock >= 0 || now < retry_at)
		return;
	if (stuck_followed() > CLOSER_STUCK_OLD) {
		static struct rdpm_bucket rl;

		rdpm_log_limited(&rl, LOG_ERR, "%u processes are stuck in clients' files (FUSE "
				 "files whose server does not answer): no closer helper until some "
				 "exit; %u passed fd(s) wait", stuck_followed(), count);
		retry_at = now + 1000;
		return;
	}
	if (now >= window_at + 60000) {
		window_at = now;
		restarts = 0;
	}
	if (restarts >= CLOSER_RESTARTS) {
		rdpm_log(LOG_WARNING, "closer helper restarted %u times within a minute: "
			 "%u passed fd(s) wait until %llu ms from now", restarts, count,
			 (unsigned long long)(window_at + 60000 - now));
		retry_at = window_at + 60000;
		return;
	}
	err = helper_start();
	if (!err) {
		restarts++;
		fork_fails = 0;
		retry_ms = CLOSER_RETRY_MS;
		return;
	}
	if (!fork_fails++)
		rdpm_log(LOG_ERR, "cannot start a closer helper: %s; trying again, every %u ms at "
			 "most: meanwhile passed fds wait and messages with fds are not read",
			 strerror(-err), CLOSER_RETRY_MAX_MS);
	retry_at = now + retry_ms;
	retry_ms = retry_ms * 2 > CLOSER_RETRY_MAX_MS ? CLOSER_RETRY_MAX_MS : retry_ms * 2;
}

/* Work went to an idle helper: the watchdog's second starts now. */
static void work_sent(bool was_busy)
{
	if (!was_busy)
		progress_at = rdpm_now_ms();
}

/*
 * Sends queued fds to the helper, as many as it may hold, closing rdpmd's
 * copies: the message holds the files until the helper has them. A message
 * holds the fds of one uid, whom a stall in closing them blames. Then a
 * message without fds, which lets the helper close the last ones.
 */
static void pump(void)
{
	struct request r = { .op = OP_CLOSE, .uid = (uint32_t)-1 };
	struct iovec iov = { &r, sizeof(r) };

	if (dying)
		return;
	while (count && sock >= 0 && inflight < RDPM_CLOSER_INFLIGHT) {
		int fds[RDPM_MSG_MAX_FDS];
		unsigned int n = 0;
		bool was_busy = busy();

		while (n < count && n < RDPM_MSG_MAX_FDS && inflight + n < RDPM_CLOSER_INFLIGHT &&
		       ring[(head + n) % RING].uid == ring[head].uid) {
			fds[n] = ring[(head + n) % RING].fd;
			n++;
		}
		r.uid = ring[head].uid;
		if (rdpm_send_fds(sock, &iov, 1, fds, n, MSG_DONTWAIT) < 0) {
			if (errno == EAGAIN || errno == ENOBUFS || errno == ETOOMANYREFS ||
			    errno == EINTR) {
				send_full = true;
				return;		/* an answer or the watchdog comes */
			}
			rdpm_log(LOG_WARNING, "closer helper pid %d: %m; starting another",
				 helper);
			if (helper > 0)
				kill(helper, SIGKILL);
			helper_lost();
			helper_ensure(rdpm_now_ms());
			continue;
		}
		work_sent(was_busy);
		inflight += n;
		for (unsigned int i = 0; i < n; i++) {
			struct queued *q = &ring[(head + i) % RING];

			close(q->fd);	/* the message holds the file */
			q->fd = -1;
			user_sub(q->uid);
		}
		head = (head + n) % RING;
		count -= n;
		go_owed = true;
	}
	r.uid = (uint32_t)-1;
	if (go_owed && sock >= 0 && rdpm_send_fds(sock, &iov, 1, NULL, 0, MSG_DONTWAIT) >= 0)
		go_owed = false;	/* else after the next answer, or the watchdog */
}

int rdpm_closer_start(enum rdpm_closer_mode m)
{
	for (unsigned int i = 0; i < RDPM_CLOSER_STUCK; i++)
		stuck[i].pidfd = -1;
	mode = m;
	if (mode == RDPM_CLOSER_DIRECT)
		return 0;
	window_at = rdpm_now_ms();
	restarts = 1;
	return helper_start();
}

bool rdpm_closer_direct(void)
{
	return mode == RDPM_CLOSER_DIRECT;
}

bool rdpm_closer_push(const int *fds, unsigned int n, uid_t uid)
{
	int mine;

	if (mode == RDPM_CLOSER_DIRECT) {
		for (unsigned int i = 0; i < n; i++)
			close(fds[i]);
		return true;
	}
	if (!n)
		return true;
	if (rdpm_closer_struck(uid) && may_hold(uid)) {
		if (n > HELD - nheld)
			return false;
		rdpm_closer_keep(fds, n, uid);
		return true;
	}
	if (count + n > RDPM_CLOSER_SLOTS)
		return false;
	mine = user_find(uid, true);
	for (unsigned int i = 0; i < n; i++)
		ring[(head + count++) % RING] = (struct queued){ fds[i], uid };
	users[mine].n += n;
	pump();
	return true;
}

bool rdpm_closer_can_read(void)
{
	return sock >= 0 && rcount < CLOSER_READS && !send_full;
}

bool rdpm_closer_read(int fd, uint64_t token, uid_t uid)
{
	struct request r = { .op = OP_READ, .uid = uid, .token = token };
	struct iovec iov = { &r, sizeof(r) };
	bool was_busy = busy();

	if (sock < 0)
		helper_ensure(rdpm_now_ms());
	if (!rdpm_closer_can_read())
		return false;
	if (rdpm_send_fds(sock, &iov, 1, &fd, 1, MSG_DONTWAIT) < 0) {
		send_full = true;	/* an answer or the watchdog comes */
		return false;
	}
	reads[(rhead + rcount) % CLOSER_READS].token = token;
	reads[(rhead + rcount) % CLOSER_READS].uid = uid;
	rcount++;
	go_owed = false;		/* the helper closes what it held */
	work_sent(was_busy);
	return true;
}

bool rdpm_closer_may_read(uid_t uid, bool admin)
{
	int mine = user_find(uid, false);

	if (admin)
		return count + MSG_ROOM <= RDPM_CLOSER_SLOTS;
	return count + MSG_ROOM + ADMIN_RESERVE <= RDPM_CLOSER_SLOTS &&
	       (mine >= 0 ? users[mine].n : 0) + MSG_ROOM <= SHARE;
}

unsigned int rdpm_closer_room(void)
{
	/* rdpm_closer_keep may queue past the limit */
	return count >= RDPM_CLOSER_SLOTS ? 0 : RDPM_CLOSER_SLOTS - count;
}

unsigned int rdpm_closer_pending(void)
{
	return count + nheld + inflight + dropping;
}

unsigned int rdpm_closer_inflight(void)
{
	return inflight + dropping;
}

uint64_t rdpm_closer_kills(void)
{
	return kills;
}

bool rdpm_closer_owns(const void *tag)
{
	return tag == ring || ((const char *)tag >= (const char *)stuck &&
			       (const char *)tag < (const char *)(stuck + RDPM_CLOSER_STUCK));
}

/* @n sent fds acknowledged closed. */
static void acked(uint32_t n)
{
	if (n > inflight)
		n = inflight;
	inflight -= n;
	tail = (tail + n) % RING;
}

/* One ANS_READ of @len bytes in @buf with forwarded fds @fds: to its client. */
static bool answer_read(const struct answer *a, const char *buf, size_t len, int *fds,
			unsigned int nfds)
{
	const uint8_t *kind = (const uint8_t *)buf + sizeof(*a);
	int all[RDPM_MSG_MAX_FDS];
	unsigned int used = 0, ndrop = 0;
	size_t body = a->n > 0 ? (size_t)a->n : 0;

	if (!rcount || reads[rhead].token != a->token || a->nfds > RDPM_MSG_MAX_FDS ||
	    len != sizeof(*a) + a->nfds + body || body > RDPM_MAX_MSG)
		return false;
	for (unsigned int i = 0; i < a->nfds; i++) {
		if (a->nfds == 1 && (kind[i] == RDPM_FD_DMABUF || kind[i] == RDPM_FD_SOCKET)) {
			if (used == nfds)
				return false;
			all[i] = fds[used++];
		} else {
			all[i] = -1;
			ndrop++;
		}
	}
	if (used != nfds)
		return false;
	dropping_uid = reads[rhead].uid;
	dropping += ndrop;
	rhead = (rhead + 1) % CLOSER_READS;
	rcount--;
	rdpmd_client_read_done(a->token, dropping_uid, a->n, (int)a->flags,
			       (const char *)kind + a->nfds, all, kind, a->nfds);
	return true;
}

/*
 * Takes the answers waiting on the helper's socket; false: it hung up or
 * broke the protocol. Whatever fds came are rdpmd's to hand on: a socket
 * among them may linger on its last close, so none is closed here.
 */
static bool take_answers(void)
{
	static char buf[ANSWER_MAX];

	for (;;) {
		struct iovec iov = { buf, sizeof(buf) };
		int fds[RDPM_MSG_MAX_FDS], flags;
		unsigned int nfds;
		struct answer a;
		uint64_t now;
		ssize_t n = rdpm_recv_fds(sock, &iov, 1, fds, RDPM_MSG_MAX_FDS, &nfds, &flags,
					  MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n < (ssize_t)sizeof(a) || (flags & (MSG_TRUNC | MSG_CTRUNC))) {
			rdpm_closer_keep(fds, nfds, (uid_t)-1);
			return false;
		}
		memcpy(&a, buf, sizeof(a));
		now = rdpm_now_ms();
		if (a.op == ANS_CHILD && nfds == 1) {
			/* no progress yet: the batch's answer follows */
			follow(fds[0], a.pid, a.uid, now + CLOSER_CHILD_MS, true);
			continue;
		}
		/* The time since the last answer went to what this one reports. */
		if (a.op == ANS_DONE && a.dropped)
			charge(dropping_uid, now - progress_at);
		else if (a.closed && inflight)
			charge(ring[tail].uid, now - progress_at);
		progress_at = now;
		send_full = false;
		acked(a.closed);
		if (a.op == ANS_DONE && !nfds) {
			dropping -= a.dropped < dropping ? a.dropped : dropping;
		} else if (a.op != ANS_READ || !answer_read(&a, buf, (size_t)n, fds, nfds)) {
			rdpm_closer_keep(fds, nfds, (uid_t)-1);
			return false;
		}
	}
}

void rdpm_closer_event(const void *tag, uint32_t events)
{
	bool lost;

	if (tag != ring) {
		stuck_exited((unsigned int)((const char *)tag - (const char *)stuck) /
			     sizeof(stuck[0]));
		return;
	}
	lost = sock >= 0 && !take_answers();

	if (sock >= 0 && (lost || (events & (EPOLLHUP | EPOLLERR)))) {
		rdpm_log(LOG_WARNING, "closer helper pid %d died; starting another", helper);
		if (helper > 0)
			kill(helper, SIGKILL);
		helper_lost();
		reap();
		helper_ensure(rdpm_now_ms());
	}
	pump();
}

int rdpm_closer_timeout(void)
{
	uint64_t now = rdpm_now_ms(), at;

	if (mode == RDPM_CLOSER_DIRECT)
		return -1;
	if (sock < 0)
		at = count ? (retry_at > now ? retry_at : now) : UINT64_MAX;
	else if (busy() && helper > 0)
		at = progress_at + CLOSER_STALL_MS;
	else
		at = UINT64_MAX;
	/* a closing child becoming stuck: stuck_log says so */
	for (unsigned int i = 0; i < RDPM_CLOSER_STUCK; i++)
		if (stuck[i].pidfd >= 0 && !stuck[i].logged && stuck[i].stuck_at < at)
			at = stuck[i].stuck_at;
	if (at == UINT64_MAX)
		return -1;
	return at <= now ? 0 : (int)(at - now);
}

/* Held fds whose uid's minute ended go to the ring, in order, as room allows. */
static void unhold(void)
{
	unsigned int kept = 0;

	for (unsigned int i = 0; i < nheld; i++) {
		if (!rdpm_closer_struck(held[i].uid) && count + inflight < RING)
			ring[(head + count++) % RING] = held[i];
		else
			held[kept++] = held[i];
	}
	nheld = kept;
}

void rdpm_closer_tick(void)
{
	uint64_t now = rdpm_now_ms();

	if (mode == RDPM_CLOSER_DIRECT)
		return;
	reap();
	stuck_log();
	if (sock >= 0 && helper > 0 && busy() && now >= progress_at + CLOSER_STALL_MS)
		helper_kill("answered nothing for a second");
	unhold();
	if (sock < 0 && count)
		helper_ensure(now);
	pump();
}

/*
 * At exit, what is still queued or held (and a lost helper's end, and the
 * answers in it): a child takes it and exits, with the last references,
 * while rdpmd closes its copies. The release of a client's file can wait
 * even in an exiting task (a FUSE file with pages to write back): then
 * the child waits, not rdpmd's exit.
 */
static void leave_behind(void)
{
	int go_w;

	if (!count && !nheld && sock < 0)
		return;
	if (fork_holder(&go_w, NULL, 0) < 0)
		return;			/* rdpmd's exit takes them */
	for (unsigned int i = 0; i < count; i++)
		close(ring[(head + i) % RING].fd);
	for (unsigned int i = 0; i < nheld; i++)
		close(held[i].fd);
	if (sock >= 0)
		close(sock);
	count = nheld = 0;
	sock = -1;
	close(go_w);		/* the child exits */
}

void rdpm_closer_stop(void)
{
	uint64_t end = rdpm_now_ms() + 3000;

	if (mode == RDPM_CLOSER_DIRECT)
		return;
	/* Everything to a helper that closes it, within bounds. */
	while ((count || busy()) && rdpm_now_ms() < end) {
		rdpm_closer_event(ring, 0);
		usleep(10000);
		rdpm_closer_tick();
	}
	if (sock >= 0) {
		take_answers();
		/* The helper sees the end and exits. */
		shutdown(sock, SHUT_RDWR);
	}
	leave_behind();
	sock = -1;
	if (helper > 0 && (count || busy()))
		kill(helper, SIGKILL);
	for (int i = 0; i < 100 && helper > 0 && waitpid(helper, NULL, WNOHANG) == 0; i++)
		usleep(10000);
	reap();
	helper = -1;
}
