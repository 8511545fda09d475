// SPDX-License-Identifier: GPL-2.0
/*
 * One rank of a job that runs until something stops it (coll/devmem.sh's
 * drain case): fp32 sum allreduces of 1 MiB on the world communicator and,
 * on a second thread, of 256 KiB on a dup'ed one (with devmem: sharing the
 * binding), every result checked. Prints "looping" once both have done 5;
 * each stops at its first error, printing "NAME: allreduce #N failed (ERR):
 * MESSAGE" on stderr, or after DEVCOLL_LOOP_S seconds (default 120; only a
 * guard: the ranks do not stop together then). Exit 1 on any error or wrong
 * result, 0 when the time ran out.
 */
#include <pthread.h>
#include "common.h"

struct loop {
	devcoll_comm *c;
	const char *name;
	size_t n;
	int rounds;		/* done, atomic */
	int err;
	struct loop *other;	/* set: say "looping" once both did 5 */
};

static double end_s;

static void *loop(void *arg)
{
	struct loop *l = arg;
	int r = devcoll_comm_rank(l->c), W = devcoll_comm_size(l->c);
	float *a = malloc(l->n * 4), *b = malloc(l->n * 4);

	while (a && b && now_s() < end_s) {
		int i = __atomic_load_n(&l->rounds, __ATOMIC_RELAXED);
		size_t base = (size_t)i % 7, bad = 0;

		fill(DEVCOLL_FP32, a, l->n, r, DEVCOLL_SUM, base);
		l->err = devcoll_allreduce(l->c, a, b, l->n, DEVCOLL_FP32, DEVCOLL_SUM);
		if (l->err) {
			fprintf(stderr, "%s: allreduce #%d failed (%d): %s\n", l->name, i, l->err,
				devcoll_last_error());
			break;
		}
		for (size_t j = 0; j < l->n; j++)
			bad += check_one(DEVCOLL_FP32, DEVCOLL_SUM, W, b, j, base + j) != 0;
		if (bad) {
			fprintf(stderr, "%s: allreduce #%d: %zu wrong\n", l->name, i, bad);
			l->err = -1;
			break;
		}
		__atomic_store_n(&l->rounds, i + 1, __ATOMIC_RELAXED);
		if (l->other && i + 1 >= 5 &&
		    __atomic_load_n(&l->other->rounds, __ATOMIC_RELAXED) >= 5) {
			printf("looping\n");
			fflush(stdout);
			l->other = NULL;
		}
	}
	free(a);
	free(b);
	return NULL;
}

int main(void)
{
	struct loop d = { .name = "dup", .n = 1u << 16 };
	struct loop w = { .name = "world", .n = 1u << 18, .other = &d };
	const char *s = getenv("DEVCOLL_LOOP_S");
	pthread_t t;
	int ret;

	end_s = now_s() + (s ? atof(s) : 120);
	ret = devcoll_comm_init(&w.c, NULL);
	if (!ret)
		ret = devcoll_comm_dup(w.c, &d.c);
	if (ret) {
		fprintf(stderr, "set-up: %s\n", devcoll_last_error());
		return 1;
	}
	if (pthread_create(&t, NULL, loop, &d)) {
		perror("pthread_create");
		return 1;
	}
	loop(&w);
	pthread_join(t, NULL);
	devcoll_comm_destroy(d.c);
	devcoll_comm_destroy(w.c);
	return w.err || d.err;
}
