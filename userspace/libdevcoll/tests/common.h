/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Test helpers: forking N ranks on loopback, typed values, references. */
#ifndef DEVCOLL_TEST_COMMON_H
#define DEVCOLL_TEST_COMMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "devcoll.h"
#include "devtcp/check.h"

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A free loopback port (racy but fine for tests). */
static inline int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	getsockname(fd, (struct sockaddr *)&sa, &l);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

/* The job's secret of every world a test starts (DEVCOLL_ADDR's rendezvous
 * needs one), unless the test sets its own. */
__attribute__((constructor)) static void test_secret(void)
{
	setenv("DEVCOLL_SECRET", "devcoll unit tests' secret", 0);
}

typedef int (*rank_fn)(devcoll_comm *c, void *arg);

/*
 * Runs @fn in @n forked ranks (rank 0's rendezvous on @addr), each with its
 * communicator; returns the exit statuses in @status (fn's return value,
 * 100+ for set-up failures, 200+signal). A rank killed by the test itself
 * shows as 200+SIGKILL. A rank ends with exit(), so that LeakSanitizer
 * checks it for leaks (and fails it with status 23).
 */
static inline int run_world_at(const char *addr, int n, const struct devcoll_opts *base, rank_fn fn,
			       void *arg, int *status, double limit_s)
{
	pid_t pids[64];
	int bad = 0;

	fflush(stdout);
	fflush(stderr);
	for (int r = 0; r < n; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			struct devcoll_opts o = base ? *base : (struct devcoll_opts){ 0 };
			devcoll_comm *c;
			int ret;

			o.rank = r;
			o.size = n;
			o.addr = addr;
			alarm((unsigned int)limit_s + 5);
			ret = devcoll_comm_init(&c, &o);
			if (ret) {
				fprintf(stderr, "rank %d/%d: init: %s\n", r, n, devcoll_last_error());
				_exit(100);
			}
			ret = fn(c, arg);
			devcoll_comm_destroy(c);
			fflush(stdout);
			exit(ret > 99 ? 99 : ret);
		}
	}
	for (int r = 0; r < n; r++) {
		int st;

		waitpid(pids[r], &st, 0);
		status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 200 + WTERMSIG(st);
		bad += status[r] != 0;
	}
	return bad;
}

/* The same with rank 0's rendezvous on a free IPv4 loopback port. */
static inline int run_world(int n, const struct devcoll_opts *base, rank_fn fn, void *arg,
			    int *status, double limit_s)
{
	char addr[64];

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
	return run_world_at(addr, n, base, fn, arg, status, limit_s);
}

/* Typed access through double / int64. */
static inline bool is_float(enum devcoll_dtype t)
{
	return t >= DEVCOLL_FP16;
}

static inline double getf(enum devcoll_dtype t, const void *b, size_t i)
{
	switch (t) {
	case DEVCOLL_FP16: return (double)((const _Float16 *)b)[i];
	case DEVCOLL_BF16: {
		uint32_t u = (uint32_t)((const uint16_t *)b)[i] << 16;
		float f;

		memcpy(&f, &u, 4);
		return f;
	}
	case DEVCOLL_FP32: return ((const float *)b)[i];
	case DEVCOLL_FP64: return ((const double *)b)[i];
	default: return 0;
	}
}

static inline void putf(enum devcoll_dtype t, void *b, size_t i, double v)
{
	switch (t) {
	case DEVCOLL_FP16: ((_Float16 *)b)[i] = (_Float16)v; break;
	case DEVCOLL_BF16: {	/* test inputs are exact in bf16 */
		float f = (float)v;
		uint32_t u;

		memcpy(&u, &f, 4);
		((uint16_t *)b)[i] = (uint16_t)(u >> 16);
		break;
	}
	case DEVCOLL_FP32: ((float *)b)[i] = (float)v; break;
	case DEVCOLL_FP64: ((double *)b)[i] = v; break;
	default: break;
	}
}

static inline int64_t geti(enum devcoll_dtype t, const void *b, size_t i)
{
	switch (t) {
	case DEVCOLL_INT8: return ((const int8_t *)b)[i];
	case DEVCOLL_INT16: return ((const int16_t *)b)[i];
	case DEVCOLL_INT32: return ((const int32_t *)b)[i];
	case DEVCOLL_INT64: return ((const int64_t *)b)[i];
	case DEVCOLL_UINT8: return ((const uint8_t *)b)[i];
	case DEVCOLL_UINT16: return ((const uint16_t *)b)[i];
	case DEVCOLL_UINT32: return ((const uint32_t *)b)[i];
	case DEVCOLL_UINT64: return (int64_t)((const uint64_t *)b)[i];
	default: return 0;
	}
}

/* Stores @v truncated to the type (two's complement wrap). */
static inline void puti(enum devcoll_dtype t, void *b, size_t i, int64_t v)
{
	switch (t) {
	case DEVCOLL_INT8: case DEVCOLL_UINT8: ((uint8_t *)b)[i] = (uint8_t)v; break;
	case DEVCOLL_INT16: case DEVCOLL_UINT16: ((uint16_t *)b)[i] = (uint16_t)v; break;
	case DEVCOLL_INT32: case DEVCOLL_UINT32: ((uint32_t *)b)[i] = (uint32_t)v; break;
	case DEVCOLL_INT64: case DEVCOLL_UINT64: ((uint64_t *)b)[i] = (uint64_t)v; break;
	default: break;
	}
}

/* The input of rank @r at element @i: exact in every type. */
static inline double in_f(int r, size_t i, enum devcoll_op op)
{
	if (op == DEVCOLL_PROD)
		return 0.5 * (double)((r + i) % 3 + 1);
	return 0.25 * (double)((int64_t)((r * 131 + i * 17) % 200) - 100);
}

static inline int64_t in_i(enum devcoll_dtype t, int r, size_t i, enum devcoll_op op)
{
	bool sgn = t <= DEVCOLL_INT64;

	if (op == DEVCOLL_PROD)
		return (int64_t)((r + i) % 3 + 1);
	return (int64_t)((r * 131 + i * 17) % 200) - (sgn ? 100 : 0);
}

static inline void fill(enum devcoll_dtype t, void *b, size_t n, int r, enum devcoll_op op,
			size_t base)
{
	for (size_t i = 0; i < n; i++) {
		if (is_float(t))
			putf(t, b, i, in_f(r, base + i, op));
		else
			puti(t, b, i, in_i(t, r, base + i, op));
	}
}

/* The reference of element @i over ranks 0..n-1 into @out[i]. */
static inline void ref_one(enum devcoll_dtype t, enum devcoll_op op, int n, size_t i, void *out,
			   double *scale)
{
	if (is_float(t)) {
		double acc = in_f(0, i, op), sc = fabs(acc);

		for (int r = 1; r < n; r++) {
			double v = in_f(r, i, op);

			sc += fabs(v);
			switch (op) {
			case DEVCOLL_SUM: case DEVCOLL_AVG: acc += v; break;
			case DEVCOLL_PROD: acc *= v; break;
			case DEVCOLL_MIN: acc = v < acc ? v : acc; break;
			case DEVCOLL_MAX: acc = v > acc ? v : acc; break;
			default: break;
			}
		}
		if (op == DEVCOLL_AVG)
			acc /= n, sc /= n;
		if (op == DEVCOLL_PROD)
			sc = fabs(acc);
		*scale = sc < 1 ? 1 : sc;
		((double *)out)[0] = acc;
		return;
	}
	/* integers: in the type, wrapping like the library */
	uint64_t mask = devcoll_dtype_size(t) == 8 ? ~0ull : (1ull << (8 * devcoll_dtype_size(t))) - 1;
	bool sgn = t <= DEVCOLL_INT64;
	uint64_t acc = (uint64_t)in_i(t, 0, i, op) & mask;
	int64_t sacc;
	char tmp[8];

	for (int r = 1; r < n; r++) {
		uint64_t v = (uint64_t)in_i(t, r, i, op) & mask;

		puti(t, tmp, 0, (int64_t)acc);
		int64_t a = geti(t, tmp, 0);

		puti(t, tmp, 0, (int64_t)v);
		int64_t b = geti(t, tmp, 0);

		switch (op) {
		case DEVCOLL_SUM: case DEVCOLL_AVG: acc = (acc + v) & mask; break;
		case DEVCOLL_PROD: acc = (acc * v) & mask; break;
		case DEVCOLL_MIN: acc = (uint64_t)(sgn ? (b < a ? b : a)
					 : (int64_t)((uint64_t)b < (uint64_t)a ? (uint64_t)b : (uint64_t)a)) & mask; break;
		case DEVCOLL_MAX: acc = (uint64_t)(sgn ? (b > a ? b : a)
					 : (int64_t)((uint64_t)b > (uint64_t)a ? (uint64_t)b : (uint64_t)a)) & mask; break;
		default: break;
		}
	}
	puti(t, tmp, 0, (int64_t)acc);
	sacc = geti(t, tmp, 0);
	if (op == DEVCOLL_AVG) {
		if (sgn)
			sacc = sacc / n;
		else
			sacc = (int64_t)((uint64_t)sacc / (uint64_t)n);
	}
	*scale = 0;
	((int64_t *)out)[0] = sacc;
}

/* 0 when @got[i] (element @i of the result) matches the reference. */
static inline int check_one(enum devcoll_dtype t, enum devcoll_op op, int n, const void *got,
			    size_t gi, size_t i)
{
	union { double d; int64_t l; } ref;
	double scale;

	ref_one(t, op, n, i, &ref, &scale);
	if (is_float(t)) {
		double g = getf(t, got, gi);
		double tol = t == DEVCOLL_FP16 ? 4e-3 : t == DEVCOLL_BF16 ? 3e-2 :
			     t == DEVCOLL_FP32 ? 1e-6 : 1e-13;

		return fabs(g - ref.d) > tol * scale * (n > 1 ? n : 1);
	}
	char tmp[8];

	puti(t, tmp, 0, ref.l);
	return geti(t, got, gi) != geti(t, tmp, 0);
}

#endif
