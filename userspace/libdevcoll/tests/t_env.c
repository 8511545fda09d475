// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Settings from the environment: a bad value fails devcoll_comm_init() on
 * every rank with a message naming the variable; a good one is accepted
 * (DEVCOLL_TCP_CONGESTION=reno, allowed to every process, and =system, and
 * the collectives run).
 */
#include "common.h"

/* Initialises a world of @n ranks with @var=@val; each rank exits 0 when
 * init failed with @want in the message (@want NULL: init and an allreduce
 * succeeded). */
static int try_env(int n, const char *var, const char *val, const char *want)
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
	printf("%s: %s=%s %s\n", bad ? "FAIL" : "ok", var, val, want ? "refused" : "used");
	return bad != 0;
}

int main(void)
{
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
	fails += try_env(2, "DEVCOLL_TCP_CONGESTION", "reno", NULL);
	fails += try_env(2, "DEVCOLL_TCP_CONGESTION", "system", NULL);
	printf("%s\n", fails ? "FAIL" : "all passed");
	return fails ? 1 : 0;
}
