// SPDX-License-Identifier: GPL-2.0
/*
 * The closer: closes the file descriptors clients passed to rdpmd and the
 * clients' sockets. The last close() of a client's file runs that file's
 * release, which the client controls: a TCP socket with SO_LINGER whose
 * peer advertises a zero window waits out the linger time, a FUSE file's
 * flush waits for its server; only a fatal signal ends such a wait.
 *
 * So rdpmd never runs it. A helper process, forked at start, receives the
 * fds over a socketpair (SCM_RIGHTS), closes them and acknowledges each
 * message. A file in flight is held by the message, and the helper closes
 * a message's fds only when the next message comes, which rdpmd sends
 * after closing its own copies: rdpmd's close is never the last one.
 * Should the helper die, its exit drops what it held. When the helper has
 * had fds for CLOSER_STALL_MS without closing any, rdpmd kills it (SIGKILL
 * ends linger waits and FUSE's killable waits) and forks another, at most
 * CLOSER_RESTARTS a minute; only when none can be forked does a thread of
 * rdpmd close them, the last resort.
 *
 * Fds not yet sent wait in a ring, counted per uid: a uid over its share
 * of the ring is not read until its fds went (rdpm_closer_may_read), while
 * everyone else is; admins may use a reserve nobody else can.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdpmd.h"

#define CLOSER_STALL_MS		1000	/* fds held this long, none closed: killed */
#define CLOSER_RESTARTS		10	/* helpers forked per minute at most */
#define CLOSER_FORK_TRIES	3	/* failed forks in a row before the thread */
#define CLOSER_RETRY_MS		100	/* no helper: the next try */
/* One message's fds and the socket they came on. */
#define MSG_ROOM		(RDPM_MSG_MAX_FDS + 1)
#define SHARE			(RDPM_CLOSER_SLOTS / 4)
#define ADMIN_RESERVE		MSG_ROOM

struct queued {
	int fd;
	uid_t uid;
};

static struct queued ring[RDPM_CLOSER_SLOTS];
static unsigned int head, count;	/* next to send; queued */
static struct {
	uid_t uid;
	unsigned int n;
} users[RDPM_CLOSER_SLOTS];		/* queued fds per uid, n > 0 */
static unsigned int nusers;

static enum rdpm_closer_mode mode;
static int sock = -1;			/* rdpmd's end; -1: no helper */
static pid_t helper = -1;		/* -1: the fallback thread (or none) */
static unsigned int inflight;		/* sent, not yet acknowledged */
static bool go_owed;			/* fds sent and no message after them yet */
static uint64_t progress_at;		/* the last ack, or the first fd sent */
static uint64_t window_at, retry_at;	/* the restarts' minute; the next fork */
static unsigned int restarts, fork_fails;
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

/*
 * The helper (or the fallback thread): receives fds and closes them, says
 * how many, until rdpmd's end closes. The fds of a message are closed only
 * when the next message comes: rdpmd sends that one after closing its own
 * copies, so that its close is never the last (the helper's may block, and
 * rdpmd kills it then).
 */
static void closer_loop(int s)
{
	int held[RDPM_MSG_MAX_FDS];
	unsigned int nheld = 0;

	for (;;) {
		union {
			char buf[CMSG_SPACE(RDPM_MSG_MAX_FDS * sizeof(int))];
			struct cmsghdr align;
		} ctl;
		char byte;
		struct iovec iov = { &byte, 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
				     .msg_controllen = sizeof(ctl.buf) };
		uint32_t done = nheld;
		ssize_t n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);

		if (n < 0 && errno == EINTR)
			continue;
		for (unsigned int i = 0; i < nheld; i++)
			close(held[i]);
		nheld = 0;
		if (n <= 0)
			return;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (nheld < RDPM_MSG_MAX_FDS)
					held[nheld++] = fd;
				else
					close(fd);	/* rdpmd never sends more */
			}
		}
		if (done && send(s, &done, sizeof(done), MSG_NOSIGNAL) < 0)
			return;
	}
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

static void *thread_main(void *arg)
{
	closer_loop((int)(intptr_t)arg);
	return NULL;
}

/*
 * A new helper process; with @thread instead a thread of rdpmd (the last
 * resort: nothing can stop a close that blocks there). 0 or -errno.
 */
static int helper_start(bool thread)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ring };
	pid_t parent = getpid(), pid;
	sigset_t all, old;
	pthread_t t;
	int sv[2], err;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	if (thread) {
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		err = pthread_create(&t, NULL, thread_main, (void *)(intptr_t)sv[1]);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (err) {
			close(sv[0]);
			close(sv[1]);
			return -err;
		}
		pthread_detach(t);
		pid = -1;
	} else {
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
	}
	if (rdpmd.epfd > 0 && epoll_ctl(rdpmd.epfd, EPOLL_CTL_ADD, sv[0], &ev)) {
		err = errno;
		close(sv[0]);
		if (pid > 0)
			kill(pid, SIGKILL);
		return -err;
	}
	sock = sv[0];
	helper = pid;
	inflight = 0;
	go_owed = false;
	return 0;
}

/* The helper is gone (killed, or died): what it held went with it. */
static void helper_lost(void)
{
	close(sock);
	sock = -1;
	helper = -1;
	inflight = 0;
	go_owed = false;
}

static void helper_kill(const char *why)
{
	static uint64_t log_at;
	static unsigned int unlogged;
	uint64_t now = rdpm_now_ms();

	kills++;
	if (log_at && now < log_at + 1000) {
		unlogged++;
	} else {
		rdpm_log(LOG_WARNING, "closer helper pid %d %s (%u fd(s) held): killed; its exit "
			 "drops them (%llu killed so far, %u not logged)", helper, why, inflight,
			 (unsigned long long)kills, unlogged);
		log_at = now;
		unlogged = 0;
	}
	kill(helper, SIGKILL);
	helper_lost();
}

/* Reaps dead helpers (rdpmd has no other children). */
static void reap(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* Forks a helper when there is none, within the restart budget. */
static void helper_ensure(uint64_t now)
{
	int err;

	if (sock >= 0 || now < retry_at)
		return;
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
	err = helper_start(false);
	if (!err) {
		restarts++;
		fork_fails = 0;
		return;
	}
	retry_at = now + CLOSER_RETRY_MS;
	if (++fork_fails < CLOSER_FORK_TRIES) {
		rdpm_log(LOG_WARNING, "cannot start a closer helper: %s", strerror(-err));
		return;
	}
	rdpm_log(LOG_ERR, "cannot start a closer helper %u times (%s): closing passed fds in a "
		 "thread of rdpmd instead, the last resort: a client's file whose close blocks "
		 "stops it for good", fork_fails, strerror(-err));
	err = helper_start(true);
	if (err)
		rdpm_log(LOG_ERR, "cannot start the closer thread either: %s", strerror(-err));
}

/*
 * Sends queued fds to the helper, as many as it may hold, closing rdpmd's
 * copies: the message holds the files until the helper has them. Then a
 * message without fds, which lets the helper close the last ones.
 */
static void pump(void)
{
	char byte = 0;

	while (count && sock >= 0 && inflight < RDPM_CLOSER_INFLIGHT) {
		union {
			char buf[CMSG_SPACE(RDPM_MSG_MAX_FDS * sizeof(int))];
			struct cmsghdr align;
		} ctl;
		unsigned int n = count;
		struct iovec iov = { &byte, 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf };
		struct cmsghdr *cm;

		if (n > RDPM_MSG_MAX_FDS)
			n = RDPM_MSG_MAX_FDS;
		if (n > RDPM_CLOSER_INFLIGHT - inflight)
			n = RDPM_CLOSER_INFLIGHT - inflight;
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_controllen = CMSG_SPACE(n * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(n * sizeof(int));
		for (unsigned int i = 0; i < n; i++)
			memcpy(CMSG_DATA(cm) + i * sizeof(int),
			       &ring[(head + i) % RDPM_CLOSER_SLOTS].fd, sizeof(int));
		if (sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
			if (errno == EAGAIN || errno == ENOBUFS || errno == ETOOMANYREFS ||
			    errno == EINTR)
				return;		/* an ack or the watchdog comes */
			rdpm_log(LOG_WARNING, "closer helper pid %d: %m; starting another",
				 helper);
			if (helper > 0)
				kill(helper, SIGKILL);
			helper_lost();
			helper_ensure(rdpm_now_ms());
			continue;
		}
		if (!inflight)
			progress_at = rdpm_now_ms();
		inflight += n;
		for (unsigned int i = 0; i < n; i++) {
			struct queued *q = &ring[(head + i) % RDPM_CLOSER_SLOTS];

			close(q->fd);	/* the message holds the file */
			user_sub(q->uid);
		}
		head = (head + n) % RDPM_CLOSER_SLOTS;
		count -= n;
		go_owed = true;
	}
	if (go_owed && sock >= 0 && send(sock, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1)
		go_owed = false;	/* else after the next ack, or the watchdog */
}

int rdpm_closer_start(enum rdpm_closer_mode m)
{
	mode = m;
	if (mode == RDPM_CLOSER_DIRECT)
		return 0;
	window_at = rdpm_now_ms();
	restarts = 1;
	return helper_start(false);
}

bool rdpm_closer_push(const int *fds, unsigned int n, uid_t uid)
{
	int mine;

	if (mode == RDPM_CLOSER_DIRECT) {
		for (unsigned int i = 0; i < n; i++)
			close(fds[i]);
		return true;
	}
	if (n > RDPM_CLOSER_SLOTS - count)
		return false;
	if (!n)
		return true;
	mine = user_find(uid, true);
	for (unsigned int i = 0; i < n; i++)
		ring[(head + count++) % RDPM_CLOSER_SLOTS] = (struct queued){ fds[i], uid };
	users[mine].n += n;
	pump();
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
	return RDPM_CLOSER_SLOTS - count;
}

unsigned int rdpm_closer_pending(void)
{
	return count + inflight;
}

unsigned int rdpm_closer_inflight(void)
{
	return inflight;
}

uint64_t rdpm_closer_kills(void)
{
	return kills;
}

bool rdpm_closer_owns(const void *tag)
{
	return tag == ring;
}

void rdpm_closer_event(uint32_t events)
{
	uint32_t done;
	ssize_t n;

	while (sock >= 0 && (n = recv(sock, &done, sizeof(done), MSG_DONTWAIT)) == sizeof(done)) {
		inflight -= done < inflight ? done : inflight;
		progress_at = rdpm_now_ms();
	}
	if (sock >= 0 && (events & (EPOLLHUP | EPOLLERR) || (n >= 0 && n != sizeof(done)) ||
			  (n < 0 && errno != EAGAIN && errno != EINTR))) {
		rdpm_log(LOG_WARNING, "closer helper pid %d died; starting another", helper);
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
	else if (inflight && helper > 0)
		at = progress_at + CLOSER_STALL_MS;
	else
		return -1;
	if (at == UINT64_MAX)
		return -1;
	return at <= now ? 0 : (int)(at - now);
}

void rdpm_closer_tick(void)
{
	uint64_t now = rdpm_now_ms();

	if (mode == RDPM_CLOSER_DIRECT)
		return;
	reap();
	if (sock >= 0 && helper > 0 && inflight && now >= progress_at + CLOSER_STALL_MS)
		helper_kill("closed nothing for a second");
	if (sock < 0 && count)
		helper_ensure(now);
	pump();
}

void rdpm_closer_stop(void)
{
	uint64_t end = rdpm_now_ms() + 3000;

	if (mode == RDPM_CLOSER_DIRECT)
		return;
	/* Everything to a helper that closes it, within bounds. */
	while ((count || inflight) && rdpm_now_ms() < end) {
		rdpm_closer_event(0);
		usleep(10000);
		rdpm_closer_tick();
	}
	if (sock >= 0)
		close(sock);	/* the helper sees the end and exits */
	sock = -1;
	if (helper > 0 && (count || inflight))
		kill(helper, SIGKILL);
	for (int i = 0; i < 100 && helper > 0 && waitpid(helper, NULL, WNOHANG) == 0; i++)
		usleep(10000);
	reap();
	helper = -1;
}
