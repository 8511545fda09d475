// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * DEVCOLL_RX=devmem with DEVCOLL_DEVMEM_RDPM (the choice between rdpmd and
 * the direct path), on 2 and 3 ranks over loopback: "on" with no daemon at
 * $RDPM_SOCKET fails on every rank, at once, saying so; a bad value fails
 * with -EINVAL. (Success needs a devtcp NIC: selftests/coll/devmem.sh.)
 */
#include "common.h"

struct rcase {
	const char *mode, *want;
	int err, err2;		/* accepted errors */
};

/* Each rank writes its init's error and message to @fd, one line. */
static int one(const char *addr, int r, int n, int fd)
{
	struct devcoll_opts o = { .rank = r, .size = n, .addr = addr, .rx = DEVCOLL_RX_DEVMEM,
				  .timeout_ms = 5000 };
	devcoll_comm *c;
	int ret = devcoll_comm_init(&c, &o);

	dprintf(fd, "%d %d %s\n", r, ret, ret ? devcoll_last_error() : "");
	if (!ret)
		devcoll_comm_destroy(c);
	return ret != 0;
}

static int run(const struct rcase *k, int n)
{
	char addr[64], line[1024];
	int p[2], fails = 0, got = 0;
	double t0 = now_s();
	FILE *f;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
	setenv("DEVCOLL_DEVMEM_RDPM", k->mode, 1);
	if (pipe(p))
		return 1;
	fflush(stdout);
	fflush(stderr);
	for (int r = 0; r < n; r++) {
		if (fork() == 0) {
			close(p[0]);
			alarm(20);
			_exit(one(addr, r, n, p[1]));
		}
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	while (fgets(line, sizeof(line), f)) {
		int r, ret;
		char *msg;

		got++;
		if (sscanf(line, "%d %d", &r, &ret) != 2 || !(msg = strchr(strchr(line, ' ') + 1, ' '))) {
			fails++;
			continue;
		}
		if ((ret != k->err && ret != k->err2) || !strstr(msg, k->want)) {
			fprintf(stderr, "  %s, %d ranks: rank %d: %d%s", k->mode, n, r, ret, msg);
			fails++;
		}
	}
	fclose(f);
	while (wait(NULL) > 0)
		;
	if (got != n) {
		fprintf(stderr, "  %s, %d ranks: %d of %d ranks reported\n", k->mode, n, got, n);
		fails++;
	}
	if (now_s() - t0 > 4) {
		fprintf(stderr, "  %s, %d ranks: took %.1f s\n", k->mode, n, now_s() - t0);
		fails++;
	}
	printf("%s: DEVCOLL_DEVMEM_RDPM=%s, %d ranks: every rank fails with \"%s\"\n",
	       fails ? "FAIL" : "ok", k->mode, n, k->want);
	return fails;
}

int main(void)
{
	static const struct rcase cases[] = {
		{ "on", "DEVCOLL_DEVMEM_RDPM=on, but no rdpmd listens at /nonexistent/rdpm.sock",
		  -ENOENT, -ECONNREFUSED },
		{ "maybe", "DEVCOLL_DEVMEM_RDPM=maybe: want auto, on or off", -EINVAL, -EINVAL },
	};
	int fails = 0;

	setenv("RDPM_SOCKET", "/nonexistent/rdpm.sock", 1);
	setenv("DEVCOLL_DEVMEM_IFACE", "lo", 1);
	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (int n = 2; n <= 3; n++)
			fails += run(&cases[i], n);
	return fails != 0;
}
