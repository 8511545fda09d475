// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * DEVCOLL_ADDR's rendezvous under attack: while two real ranks start, a
 * hostile process holds an idle connection to it, sends garbage, a forged
 * registration for rank 1 and half a registration. Both ranks must come
 * up (an allreduce checks them) and rank 0 must report the strangers. Then
 * a second process registering as an existing rank, a rank with the wrong
 * secret, and the secret's provisioning (none, too short, a file others can
 * read) are refused with messages that say so.
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include "common.h"
#include "greet.h"

#define SECRET "devcoll unit tests' secret"

struct rank_run {
	pid_t pid;
	char log[64];		/* its stderr */
};

/* Forks rank @r of @n on @addr with @secret (NULL: unset). */
static void start_rank(struct rank_run *rr, int r, int n, const char *addr, const char *secret,
		       int timeout_ms)
{
	int fd;

	snprintf(rr->log, sizeof(rr->log), "/tmp/t_boot.XXXXXX");
	fd = mkstemp(rr->log);
	fflush(stdout);
	fflush(stderr);
	rr->pid = fork();
	if (rr->pid) {
		close(fd);
		return;
	}
	struct devcoll_opts o = { .rank = r, .size = n, .addr = addr, .timeout_ms = timeout_ms };
	devcoll_comm *c;
	int64_t x = r + 1;

	dup2(fd, 2);
	alarm(30);
	if (secret)
		setenv("DEVCOLL_SECRET", secret, 1);
	else
		unsetenv("DEVCOLL_SECRET");
	if (devcoll_comm_init(&c, &o)) {
		fprintf(stderr, "init: %s\n", devcoll_last_error());
		_exit(1);
	}
	struct dc_greet_stats gs;

	dc_greet_stats(&gs);
	fprintf(stderr, "set-up: %u dropped, %u pushed out, %u retried\n", gs.dropped, gs.pushed,
		gs.retried);
	if (devcoll_allreduce(c, &x, &x, 1, DEVCOLL_INT64, DEVCOLL_SUM) || x != n * (n + 1) / 2) {
		fprintf(stderr, "allreduce: %s (%lld)\n", devcoll_last_error(), (long long)x);
		_exit(2);
	}
	devcoll_comm_destroy(c);
	exit(0);
}

/* Its exit status; its stderr into @out. */
static int finish_rank(struct rank_run *rr, char *out, size_t len)
{
	int st, fd;
	ssize_t n;

	waitpid(rr->pid, &st, 0);
	fd = open(rr->log, O_RDONLY);
	n = fd >= 0 ? read(fd, out, len - 1) : 0;
	out[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
	unlink(rr->log);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 200 + WTERMSIG(st);
}

/* A connection to rank 0's rendezvous at @port, retried until it listens. */
static int reach(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	for (int i = 0; i < 500; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			return fd;
		close(fd);
		usleep(10000);
	}
	return -1;
}

static int strangers_then_ranks(void)
{
	int port = free_port(), fails = 0, hostile[4];
	char addr[64], out0[4096], out1[4096];
	struct rank_run r0, r1;
	uint8_t junk[192];

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	start_rank(&r0, 0, 2, addr, SECRET, 8000);
	hostile[0] = reach(port);			/* idle */
	hostile[1] = reach(port);			/* garbage */
	hostile[2] = reach(port);			/* a forged registration */
	hostile[3] = reach(port);			/* half of one, then silence */
	memset(junk, 0xa5, sizeof(junk));
	send(hostile[1], "GET / HTTP/1.0\r\n\r\n", 18, MSG_NOSIGNAL);
	/* the old layout and the new one's magic, claiming rank 1 of 2 */
	uint32_t forged[4] = { 0xdc011ec7u, 1, 2, 0 };

	memcpy(junk, forged, sizeof(forged));
	send(hostile[2], junk, sizeof(junk), MSG_NOSIGNAL);
	forged[0] = 0xdc0a7431u;
	memcpy(junk, forged, sizeof(forged));
	send(hostile[2], junk, sizeof(junk), MSG_NOSIGNAL);
	send(hostile[3], junk, 50, MSG_NOSIGNAL);
	usleep(200000);		/* the strangers are in first */
	start_rank(&r1, 1, 2, addr, SECRET, 8000);
	int s0 = finish_rank(&r0, out0, sizeof(out0)), s1 = finish_rank(&r1, out1, sizeof(out1));

	for (int i = 0; i < 4; i++)
		close(hostile[i]);
	if (s0 || s1) {
		printf("FAIL: strangers at the rendezvous: rank 0 exit %d, rank 1 exit %d\n%s%s", s0,
		       s1, out0, out1);
		fails++;
	} else {
		printf("ok: 2 ranks came up past an idle, a garbage, a forged and a stalled "
		       "connection\n");
	}
	if (!strstr(out0, "dropped 4 stranger")) {
		printf("FAIL: rank 0 did not report the strangers: \"%s\"\n", out0);
		fails++;
	} else {
		printf("ok: rank 0 reports them: %s", out0);
	}
	return fails;
}

/* A stranger's flood: connections opened as fast as they go for @ms, up
 * to 300 held open at once (the oldest closed for each new one), none
 * answering. */
static pid_t flood(int port, int ms)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid)
		return pid;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int held[300], n = 0;
	struct timespec t0, t;

	for (int i = 0; i < 300; i++)
		held[i] = -1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			close(fd);
			fd = -1;
		}
		if (held[n % 300] >= 0)
			close(held[n % 300]);
		held[n++ % 300] = fd;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	_exit(0);
}

/* A rank's set-up counts from its stderr (start_rank prints them). */
static bool setup_counts(const char *out, unsigned int *pushed, unsigned int *retried)
{
	const char *at = strstr(out, "set-up: ");
	unsigned int dropped;

	return at && sscanf(at, "set-up: %u dropped, %u pushed out, %u retried", &dropped, pushed,
			    retried) == 3;
}

/* Strangers flood the rendezvous while rank 1 stalls mid-handshake: rank
 * 0 is stopped until rank 1 has connected, rank 1 then stopped for a second
 * while the flood goes on. Rank 0 must have pushed connections out and rank
 * 1 must have started its handshake over (its connection was among them),
 * and both must come up (the flood fills rank 0's mesh listener too). */
static int flooded(void)
{
	int port = free_port(), st, fd;
	char addr[64], out0[4096], out1[4096];
	struct rank_run r0, r1;
	pid_t f[4];

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	start_rank(&r0, 0, 2, addr, SECRET, 10000);
	fd = reach(port);
	kill(r0.pid, SIGSTOP);
	close(fd);
	start_rank(&r1, 1, 2, addr, SECRET, 10000);
	usleep(300000);		/* rank 1 connected; no challenge yet */
	kill(r1.pid, SIGSTOP);
	for (int i = 0; i < 4; i++)
		f[i] = flood(port, 4000);
	usleep(200000);
	kill(r0.pid, SIGCONT);
	usleep(1000000);
	kill(r1.pid, SIGCONT);
	int s0 = finish_rank(&r0, out0, sizeof(out0)), s1 = finish_rank(&r1, out1, sizeof(out1));

	for (int i = 0; i < 4; i++) {
		kill(f[i], SIGKILL);
		waitpid(f[i], &st, 0);
	}
	if (s0 || s1) {
		printf("FAIL: a flood of strangers at the rendezvous: rank 0 exit %d, rank 1 exit "
		       "%d\n%s%s", s0, s1, out0, out1);
		return 1;
	}
	unsigned int pushed0 = 0, retried0, pushed1, retried1 = 0;

	if (!setup_counts(out0, &pushed0, &retried0) || !setup_counts(out1, &pushed1, &retried1) ||
	    !pushed0 || !retried1) {
		printf("FAIL: the flood pushed out no rank: rank 0 pushed out %u, rank 1 retried "
		       "%u\n%s%s", pushed0, retried1, out0, out1);
		return 1;
	}
	printf("ok: 2 ranks came up during a flood of stranger connections (rank 0 pushed out "
	       "%u, rank 1 retried %u): %s", pushed0, retried1, out0);
	return 0;
}

/* Two processes claim rank 1 while rank 0 waits for rank 2: the first
 * joins, the second is refused at once (before rank 2 starts), and rank 0
 * says so. */
static int duplicate_rank(void)
{
	char addr[64], o0[4096], oa[4096], ob[4096], o2[4096];
	struct rank_run r0, a, b, r2;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
	start_rank(&r0, 0, 3, addr, SECRET, 8000);
	start_rank(&a, 1, 3, addr, SECRET, 8000);
	usleep(300000);
	start_rank(&b, 1, 3, addr, SECRET, 8000);
	int sb = finish_rank(&b, ob, sizeof(ob));	/* refused while rank 0 still waits */

	start_rank(&r2, 2, 3, addr, SECRET, 8000);
	int s0 = finish_rank(&r0, o0, sizeof(o0)), sa = finish_rank(&a, oa, sizeof(oa));
	int s2 = finish_rank(&r2, o2, sizeof(o2));

	if (s0 || sa || s2 || !sb || !strstr(ob, "refused the registration") ||
	    !strstr(o0, "a second registration as rank 1")) {
		printf("FAIL: two rank 1s: exits %d, %d, %d, %d\n%s%s%s%s", s0, sa, sb, s2, o0, oa,
		       ob, o2);
		return 1;
	}
	printf("ok: a second process registering as rank 1 is refused: %s  rank 0: %s", ob, o0);
	return 0;
}

/* Rank 1 without the job's secret: refused, rank 0 says why. */
static int wrong_secret(void)
{
	char addr[64], o0[4096], o1[4096];
	struct rank_run r0, r1;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
	start_rank(&r0, 0, 2, addr, SECRET, 2000);
	start_rank(&r1, 1, 2, addr, "another job's secret, as long", 2000);
	int s0 = finish_rank(&r0, o0, sizeof(o0)), s1 = finish_rank(&r1, o1, sizeof(o1));

	if (!s0 || !s1 || !strstr(o0, "without the job's secret") ||
	    !strstr(o1, "refused the registration")) {
		printf("FAIL: a wrong secret: exits %d, %d\n%s%s", s0, s1, o0, o1);
		return 1;
	}
	printf("ok: a rank with another secret is refused: %s", o1);
	return 0;
}

/* One rank's init with the environment as set: 0, or its error's text. */
static int init_env(const char *want, const char *what)
{
	struct rank_run r;
	char out[4096], addr[64];

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
	fflush(stdout);
	r.pid = fork();
	if (!r.pid) {
		struct devcoll_opts o = { .rank = 1, .size = 2, .addr = addr, .timeout_ms = 500 };
		devcoll_comm *c;

		alarm(10);
		if (!devcoll_comm_init(&c, &o))
			_exit(3);
		printf("  %s\n", devcoll_last_error());
		_exit(strstr(devcoll_last_error(), want) ? 0 : 1);
	}
	int st;

	waitpid(r.pid, &st, 0);
	(void)out;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("FAIL: %s: not refused with \"%s\"\n", what, want);
		return 1;
	}
	printf("ok: %s\n", what);
	return 0;
}

/* DEVCOLL_SECRET is taken out of the environment at init (a child process
 * does not inherit it) and still serves the process's next init;
 * DEVCOLL_INSECURE=1 in effect says so on stderr. */
static int secret_hygiene(void)
{
	char addr[64], log[] = "/tmp/t_boot_err.XXXXXX", err[4096] = "";
	int fd = mkstemp(log), st, fails = 0;
	ssize_t n;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
	fflush(stdout);
	if (!fork()) {
		struct devcoll_opts o = { .rank = 1, .size = 2, .addr = addr, .timeout_ms = 300 };
		devcoll_comm *c;

		alarm(10);
		setenv("DEVCOLL_SECRET", SECRET, 1);
		if (!devcoll_comm_init(&c, &o) || !strstr(devcoll_last_error(), "cannot reach rank 0"))
			_exit(1);
		if (getenv("DEVCOLL_SECRET"))
			_exit(2);
		if (!devcoll_comm_init(&c, &o) || !strstr(devcoll_last_error(), "cannot reach rank 0"))
			_exit(3);
		_exit(0);
	}
	wait(&st);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("FAIL: DEVCOLL_SECRET at init: step %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		fails++;
	} else {
		printf("ok: DEVCOLL_SECRET is out of the environment after init, and serves the next\n");
	}
	if (!fork()) {
		struct devcoll_opts o = { .rank = 1, .size = 2, .addr = addr, .timeout_ms = 300 };
		devcoll_comm *c;

		alarm(10);
		dup2(fd, 2);
		unsetenv("DEVCOLL_SECRET");
		setenv("DEVCOLL_INSECURE", "1", 1);
		_exit(!devcoll_comm_init(&c, &o));
	}
	wait(&st);
	n = pread(fd, err, sizeof(err) - 1, 0);
	err[n > 0 ? n : 0] = 0;
	close(fd);
	unlink(log);
	if (!strstr(err, "DEVCOLL_INSECURE=1: no secret")) {
		printf("FAIL: DEVCOLL_INSECURE=1 went unannounced: \"%s\"\n", err);
		fails++;
	} else {
		printf("ok: DEVCOLL_INSECURE=1 is announced: %s", err);
	}
	return fails;
}

static int provisioning(void)
{
	char path[] = "/tmp/t_boot_secret.XXXXXX";
	int fails = 0, fd = mkstemp(path);

	unsetenv("DEVCOLL_SECRET");
	fails += init_env("needs the job's secret", "no secret is refused");
	setenv("DEVCOLL_INSECURE", "1", 1);
	fails += init_env("cannot reach rank 0", "DEVCOLL_INSECURE=1 is let through (to the connect)");
	unsetenv("DEVCOLL_INSECURE");
	setenv("DEVCOLL_SECRET", "short", 1);
	fails += init_env("use 16 or more", "a 5-byte secret is refused");
	unsetenv("DEVCOLL_SECRET");
	if (write(fd, SECRET "\n", sizeof(SECRET)) != sizeof(SECRET))
		fails++;
	close(fd);
	setenv("DEVCOLL_SECRET_FILE", path, 1);
	chmod(path, 0644);
	fails += init_env("readable by no one else", "a secret file others can read is refused");
	chmod(path, 0600);
	fails += init_env("cannot reach rank 0", "a secret file of mode 600 is let through (to the connect)");
	unlink(path);
	if (mkfifo(path, 0600)) {
		printf("FAIL: mkfifo\n");
		fails++;
	}
	fails += init_env("not a regular file", "a FIFO as the secret file is refused, not waited on");
	unlink(path);
	unsetenv("DEVCOLL_SECRET_FILE");
	setenv("DEVCOLL_SECRET", SECRET, 1);
	return fails;
}

int main(void)
{
	int fails = 0;

	signal(SIGPIPE, SIG_IGN);
	fails += strangers_then_ranks();
	fails += flooded();
	fails += duplicate_rank();
	fails += wrong_secret();
	fails += provisioning();
	fails += secret_hygiene();
	printf("%s\n", fails ? "FAIL" : "all passed");
	return fails ? 1 : 0;
}
