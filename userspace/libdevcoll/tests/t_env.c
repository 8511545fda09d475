// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Settings from the environment: a bad value fails devcoll_comm_init() on
 * every rank with a message naming the variable; a good one is accepted and
 * the collectives run. The connections' congestion control is checked on
 * the sockets themselves: reno by default, the one asked for, the system's
 * for "system".
 */
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include "common.h"

/* The connected TCP sockets of this process whose congestion control is
 * not @cc, or -1 when there are none at all. */
static int conns_not_using(const char *cc)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int seen = 0, other = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		int fd = atoi(e->d_name), type;
		char name[32] = "";
		socklen_t tl = sizeof(type), nl = sizeof(name);

		if (e->d_name[0] == '.' || fd == dirfd(d) ||
		    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) || type != SOCK_STREAM ||
		    getpeername(fd, (struct sockaddr *)&sa, &len) ||
		    getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &nl))
			continue;
		seen++;
		if (strcmp(name, cc)) {
			fprintf(stderr, "  fd %d uses %s, not %s\n", fd, name, cc);
			other++;
		}
	}
	closedir(d);
	return seen ? other : -1;
}

/* Initialises a world of @n ranks with @var=@val; each rank exits 0 when
 * init failed with @want in the message (@want NULL: init and an allreduce
 * succeeded, and the connections use congestion control @cc if given). */
static int try_env_cc(int n, const char *var, const char *val, const char *want, const char *cc)
{
	char addr[64];
	pid_t pids[8];
	int bad = 0;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
	fflush(stdout);
	fflush(stderr);
	for (int r = 0; r < n; r++) {
		pids[r] = fork();
		if (pids[r])
			continue;
		struct devcoll_opts o = { .rank = r, .size = n, .addr = addr, .timeout_ms = 10000 };
		devcoll_comm *c;
		int64_t x = 1;

		alarm(30);
		setenv(var, val, 1);
		int ret = devcoll_comm_init(&c, &o);

		if (!want) {
			if (ret || devcoll_allreduce(c, &x, &x, 1, DEVCOLL_INT64, DEVCOLL_SUM) || x != n) {
				fprintf(stderr, "  rank %d: %s=%s: %s\n", r, var, val, devcoll_last_error());
				_exit(1);
			}
			if (cc && n > 1 && conns_not_using(cc)) {
				fprintf(stderr, "  rank %d: %s=%s: connections not all on %s\n", r, var,
					val, cc);
				_exit(1);
			}
			devcoll_comm_destroy(c);
			_exit(0);
		}
		if (!ret) {
			fprintf(stderr, "  rank %d: %s=%s accepted\n", r, var, val);
			_exit(1);
		}
		if (!strstr(devcoll_last_error(), want)) {
			fprintf(stderr, "  rank %d: %s=%s: \"%s\" does not say \"%s\"\n", r, var, val,
				devcoll_last_error(), want);
			_exit(1);
		}
		_exit(0);
	}
	for (int r = 0; r < n; r++) {
		int st;

		waitpid(pids[r], &st, 0);
		bad += !WIFEXITED(st) || WEXITSTATUS(st);
	}
	printf("%s: %s=%s %s%s%s\n", bad ? "FAIL" : "ok", var, val, want ? "refused" : "used",
	       cc ? ", connections on " : "", cc ? cc : "");
	return bad != 0;
}

static int try_env(int n, const char *var, const char *val, const char *want)
{
	return try_env_cc(n, var, val, want, NULL);
}

/* net.ipv4.tcp_congestion_control, for "system" */
static const char *system_cc(char *buf, size_t len)
{
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_congestion_control", "r");

	if (!f || !fgets(buf, (int)len, f))
		snprintf(buf, len, "?");
	if (f)
		fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

int main(void)
{
	char sys[32];
	int fails = 0;

	fails += try_env(1, "DEVCOLL_ALGO", "bogus", "DEVCOLL_ALGO=bogus: want ring, rd, hd, tree or auto");
	fails += try_env(1, "DEVCOLL_ROOTED_ALGO", "ring", "DEVCOLL_ROOTED_ALGO=ring");
	fails += try_env(1, "DEVCOLL_NCONNS", "65", "DEVCOLL_NCONNS");
	fails += try_env(1, "DEVCOLL_CHUNK", "1K", "DEVCOLL_CHUNK");
	fails += try_env(1, "DEVCOLL_SPIN_US", "fast", "DEVCOLL_SPIN_US=fast: not a number");
	fails += try_env(1, "DEVCOLL_CHUNK", "64KB", "DEVCOLL_CHUNK=64KB: not a number");
	fails += try_env(2, "DEVCOLL_CHUNK", "64k", NULL);
	fails += try_env(2, "DEVCOLL_TCP_CONGESTION", "nope", "DEVCOLL_TCP_CONGESTION=nope");
	fails += try_env(2, "DEVCOLL_TCP_CONGESTION", "much-too-long-a-name", "no such algorithm");
	fails += try_env_cc(2, "DEVCOLL_TCP_CONGESTION", "", NULL, "reno");
	fails += try_env_cc(2, "DEVCOLL_TCP_CONGESTION", "reno", NULL, "reno");
	fails += try_env_cc(2, "DEVCOLL_TCP_CONGESTION", "cubic", NULL, "cubic");
	fails += try_env_cc(2, "DEVCOLL_TCP_CONGESTION", "system", NULL, system_cc(sys, sizeof(sys)));
	printf("%s\n", fails ? "FAIL" : "all passed");
	return fails ? 1 : 0;
}
