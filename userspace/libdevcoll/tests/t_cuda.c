// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Collectives on CUDA device memory (cuda.c): every collective, blocking and
 * not, with buffers on the GPU (out of place, in place, one host and one
 * device buffer), results read back from the GPU and checked, bytes that a
 * v-collective leaves alone left alone; the pinned staging buffers reused
 * and freed with their communicator. 2 and 3 ranks. DEVCOLL_CUDA's errors;
 * with it off, device buffers fail with EFAULT, saying what to set.
 * Against a stand-in libcuda (fake_cuda.so: its device memory is mapped
 * PROT_NONE, so the library touching it other than through CUDA's copies
 * crashes the test) unless DEVMEM_LIBCUDA names the real one, as
 * userspace/libdevcoll/tests/gpu_test.sh does on a GPU host.
 */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include "common.h"
#include "gpu.h"

/* The stand-in's counters (NULL with the real libcuda). */
static int (*fake_pushed)(void);	/* context pushes not popped */
static int (*fake_host_allocs)(void);	/* pinned buffers alive */
static const char *lib;

static int fails;

#define FAIL(...) do { fprintf(stderr, "  rank %d: ", r); fprintf(stderr, __VA_ARGS__);	\
		       fprintf(stderr, "\n"); fails++; } while (0)

/* Device memory of @len bytes holding @init (NULL: left as it comes). */
static void *dev(size_t len, const void *init)
{
	void *p = gpu_alloc(len ? len : 1);

	if (!p || (init && len && gpu_copy(p, init, len, GPU_TO_DEVICE)))
		exit(3);
	return p;
}

static void down(void *h, const void *d, size_t len)
{
	if (gpu_copy(h, d, len, GPU_TO_HOST))
		exit(3);
}

/* A host copy of @len bytes of device memory @d (freed by the caller). */
static void *host(const void *d, size_t len)
{
	void *h = malloc(len ? len : 1);

	if (!h)
		exit(3);
	down(h, d, len);
	return h;
}

#define dev_free gpu_free

static void reductions(devcoll_comm *c, int r, int W)
{
	size_t n = 100003;	/* prime: no split is even */
	float *a = malloc(n * 4);
	int32_t m[1000];
	int64_t e[777];

	fill(DEVCOLL_FP32, a, n, r, DEVCOLL_SUM, 0);
	float *da = dev(n * 4, a), *db = dev(n * 4, NULL);

	if (devcoll_allreduce(c, da, db, n, DEVCOLL_FP32, DEVCOLL_SUM))
		FAIL("allreduce: %s", devcoll_last_error());
	float *got = host(db, n * 4);

	for (size_t i = 0; i < n; i++)
		if (check_one(DEVCOLL_FP32, DEVCOLL_SUM, W, got, i, i)) {
			FAIL("allreduce fp32 sum wrong at %zu: %g", i, got[i]);
			break;
		}
	free(got);
	/* in place, int32 max */
	fill(DEVCOLL_INT32, m, 1000, r, DEVCOLL_MAX, 0);
	int32_t *dm = dev(sizeof(m), m);

	if (devcoll_allreduce(c, dm, dm, 1000, DEVCOLL_INT32, DEVCOLL_MAX))
		FAIL("in-place allreduce: %s", devcoll_last_error());
	int32_t *gm = host(dm, sizeof(m));

	for (size_t i = 0; i < 1000; i++)
		if (check_one(DEVCOLL_INT32, DEVCOLL_MAX, W, gm, i, i)) {
			FAIL("in-place allreduce int32 max wrong at %zu", i);
			break;
		}
	free(gm);
	/* host send buffer, device receive buffer */
	if (devcoll_allreduce(c, a, db, n, DEVCOLL_FP32, DEVCOLL_SUM))
		FAIL("host-to-device allreduce: %s", devcoll_last_error());
	got = host(db, n * 4);
	for (size_t i = 0; i < n; i++)
		if (check_one(DEVCOLL_FP32, DEVCOLL_SUM, W, got, i, i)) {
			FAIL("host-to-device allreduce wrong at %zu", i);
			break;
		}
	free(got);
	/* reduce to the last rank, int64 sum; the others' receive buffer untouched */
	fill(DEVCOLL_INT64, e, 777, r, DEVCOLL_SUM, 0);
	int64_t *de = dev(sizeof(e), e), *dr = dev(sizeof(e), e);

	if (devcoll_reduce(c, de, dr, 777, DEVCOLL_INT64, DEVCOLL_SUM, W - 1))
		FAIL("reduce: %s", devcoll_last_error());
	int64_t *ge = host(dr, sizeof(e));

	for (size_t i = 0; i < 777; i++)
		if (r == W - 1 ? check_one(DEVCOLL_INT64, DEVCOLL_SUM, W, ge, i, i) :
				 ge[i] != e[i]) {
			FAIL("reduce wrong at %zu", i);
			break;
		}
	free(ge);
	/* reduce-scatter, fp64 sum: block r of size * 5 */
	double rs_in[3 * 5], rs_out[5];

	fill(DEVCOLL_FP64, rs_in, 5 * (size_t)W, r, DEVCOLL_SUM, 0);
	double *drs = dev(sizeof(rs_in), rs_in), *dro = dev(sizeof(rs_out), NULL);

	if (devcoll_reduce_scatter(c, drs, dro, 5, DEVCOLL_FP64, DEVCOLL_SUM))
		FAIL("reduce_scatter: %s", devcoll_last_error());
	down(rs_out, dro, sizeof(rs_out));
	for (size_t i = 0; i < 5; i++)
		if (check_one(DEVCOLL_FP64, DEVCOLL_SUM, W, rs_out, i, (size_t)r * 5 + i)) {
			FAIL("reduce_scatter wrong at %zu", i);
			break;
		}
	dev_free(da);
	dev_free(db);
	dev_free(dm);
	dev_free(de);
	dev_free(dr);
	dev_free(drs);
	dev_free(dro);
	free(a);
}

static void movers(devcoll_comm *c, int r, int W)
{
	uint8_t b[4099];
	int32_t v[1000], *g;
	int16_t t[3 * 3], tt[3 * 3];

	/* broadcast from rank 1 % W */
	for (int i = 0; i < 4099; i++)
		b[i] = r == 1 % W ? (uint8_t)(i * 7) : 0xee;
	uint8_t *db = dev(sizeof(b), b);

	if (devcoll_broadcast(c, db, 4099, DEVCOLL_UINT8, 1 % W))
		FAIL("broadcast: %s", devcoll_last_error());
	down(b, db, sizeof(b));
	for (int i = 0; i < 4099; i++)
		if (b[i] != (uint8_t)(i * 7)) {
			FAIL("broadcast wrong at %d", i);
			break;
		}
	/* allgather */
	for (int i = 0; i < 1000; i++)
		v[i] = r * 1000 + i;
	int32_t *dv = dev(sizeof(v), v), *dg = dev(sizeof(v) * (size_t)W, NULL);

	if (devcoll_allgather(c, dv, dg, 1000, DEVCOLL_INT32))
		FAIL("allgather: %s", devcoll_last_error());
	g = host(dg, sizeof(v) * (size_t)W);
	for (int i = 0; i < 1000 * W; i++)
		if (g[i] != i) {
			FAIL("allgather wrong at %d", i);
			break;
		}
	free(g);
	/* alltoall, int16: rank r sends r * 10 + k to rank k */
	for (int k = 0; k < W * 3; k++)
		t[k] = (int16_t)(r * 10 + k / 3);
	int16_t *dt = dev(sizeof(t), t), *dtt = dev(sizeof(t), NULL);

	if (devcoll_alltoall(c, dt, dtt, 3, DEVCOLL_INT16))
		FAIL("alltoall: %s", devcoll_last_error());
	down(tt, dtt, sizeof(int16_t) * 3 * (size_t)W);
	for (int k = 0; k < W * 3; k++)
		if (tt[k] != (k / 3) * 10 + r) {
			FAIL("alltoall wrong at %d", k);
			break;
		}
	/* gather to rank 0, scatter from the last */
	int32_t g3[3] = { r, r + 1, r + 2 }, gat[9], sca[3], scin[9];

	for (int i = 0; i < 9; i++)
		scin[i] = i * 7;
	int32_t *dg3 = dev(sizeof(g3), g3), *dgat = dev(sizeof(gat), NULL);
	int32_t *dscin = dev(sizeof(scin), scin), *dsca = dev(sizeof(sca), NULL);

	if (devcoll_gather(c, dg3, dgat, 3, DEVCOLL_INT32, 0) ||
	    devcoll_scatter(c, dscin, dsca, 3, DEVCOLL_INT32, W - 1))
		FAIL("gather/scatter: %s", devcoll_last_error());
	down(gat, dgat, sizeof(int32_t) * 3 * (size_t)W);
	down(sca, dsca, sizeof(sca));
	for (int k = 0; r == 0 && k < 3 * W; k++)
		if (gat[k] != k / 3 + k % 3) {
			FAIL("gather wrong at %d", k);
			break;
		}
	for (int i = 0; i < 3; i++)
		if (sca[i] != (r * 3 + i) * 7) {
			FAIL("scatter wrong at %d", i);
			break;
		}
	dev_free(db);
	dev_free(dv);
	dev_free(dg);
	dev_free(dt);
	dev_free(dtt);
	dev_free(dg3);
	dev_free(dgat);
	dev_free(dscin);
	dev_free(dsca);
}

/* The v-collectives into buffers with gaps: the gaps keep their bytes. */
static void v_colls(devcoll_comm *c, int r, int W)
{
	size_t cnt[3], dsp[3], sc[3], sd[3], rc[3], rd[3], o = 0;
	int32_t sv[8], gv[40], av[12], bv[40];

	for (int k = 0; k < W; k++) {
		cnt[k] = (size_t)k + 2;
		dsp[k] = o;
		o += cnt[k] + 1;	/* one element of gap after each block */
		sc[k] = (size_t)(r + k) % 3 + 1;
		rc[k] = (size_t)(k + r) % 3 + 1;
		sd[k] = (size_t)k * 4;
		rd[k] = (size_t)k * 5;
	}
	for (int i = 0; i < 8; i++)
		sv[i] = r * 100 + i;
	for (int i = 0; i < 12; i++)
		av[i] = r * 1000 + i;
	for (int i = 0; i < 40; i++)
		gv[i] = bv[i] = -7;
	int32_t *dsv = dev(sizeof(sv), sv), *dgv = dev(sizeof(gv), gv);
	int32_t *dav = dev(sizeof(av), av), *dbv = dev(sizeof(bv), bv);

	if (devcoll_allgatherv(c, dsv, cnt[r], dgv, cnt, dsp, DEVCOLL_INT32) ||
	    devcoll_alltoallv(c, dav, sc, sd, dbv, rc, rd, DEVCOLL_INT32))
		FAIL("v-collectives: %s", devcoll_last_error());
	down(gv, dgv, sizeof(gv));
	down(bv, dbv, sizeof(bv));
	for (int k = 0, i = 0; k < W; k++)
		for (size_t j = 0; j <= cnt[k]; j++, i++)
			if (gv[i] != (j < cnt[k] ? k * 100 + (int)j : -7)) {
				FAIL("allgatherv wrong at %d: %d", i, gv[i]);
				k = W;
				break;
			}
	for (int k = 0; k < W; k++)
		for (size_t j = 0; j < 5; j++)
			if (bv[rd[k] + j] != (j < rc[k] ? k * 1000 + r * 4 + (int)j : -7)) {
				FAIL("alltoallv wrong at %zu: %d", rd[k] + j, bv[rd[k] + j]);
				k = W;
				break;
			}
	dev_free(dsv);
	dev_free(dgv);
	dev_free(dav);
	dev_free(dbv);
}

/* Non-blocking: received bytes on the GPU once test() or wait() says done. */
static void nonblocking(devcoll_comm *c, int r, int W)
{
	size_t n = 1 << 20;
	float *a = malloc(n * 4);
	uint32_t msg[513], in[513];
	devcoll_req *q, *s, *rq;
	int st = -1;

	fill(DEVCOLL_FP32, a, n, r, DEVCOLL_SUM, 0);
	float *da = dev(n * 4, a), *db = dev(n * 4, NULL);

	if (devcoll_iallreduce(c, da, db, n, DEVCOLL_FP32, DEVCOLL_SUM, &q)) {
		FAIL("iallreduce: %s", devcoll_last_error());
		return;
	}
	while (!devcoll_test(q, &st))
		;
	float *got = host(db, n * 4);

	if (st)
		FAIL("iallreduce: %d", st);
	for (size_t i = 0; i < n; i++)
		if (check_one(DEVCOLL_FP32, DEVCOLL_SUM, W, got, i, i)) {
			FAIL("iallreduce wrong at %zu once test() said done", i);
			break;
		}
	free(got);
	if (devcoll_wait(q))
		FAIL("wait after test: %s", devcoll_last_error());
	/* a ring of isend/irecv between device buffers */
	for (int i = 0; i < 513; i++)
		msg[i] = (uint32_t)(r * 7919 + i);
	uint32_t *dmsg = dev(sizeof(msg), msg), *din = dev(sizeof(in), NULL);

	if (devcoll_irecv(c, din, 513, DEVCOLL_UINT32, (r + W - 1) % W, 5, &rq) ||
	    devcoll_isend(c, dmsg, 513, DEVCOLL_UINT32, (r + 1) % W, 5, &s) ||
	    devcoll_wait(s) || devcoll_wait(rq))
		FAIL("isend/irecv: %s", devcoll_last_error());
	down(in, din, sizeof(in));
	for (int i = 0; i < 513; i++)
		if (in[i] != (uint32_t)(((r + W - 1) % W) * 7919 + i)) {
			FAIL("irecv wrong at %d", i);
			break;
		}
	dev_free(da);
	dev_free(db);
	dev_free(dmsg);
	dev_free(din);
	free(a);
}

/* A dup'ed communicator stages through pinned buffers of its own, reuses
 * them call after call and frees them when destroyed. */
static void pool(devcoll_comm *c, int r, int W)
{
	int before = fake_host_allocs ? fake_host_allocs() : 0, during = 0;
	double x[4096], *dx = dev(sizeof(x), NULL);
	devcoll_comm *d;

	fill(DEVCOLL_FP64, x, 4096, r, DEVCOLL_SUM, 0);
	if (devcoll_comm_dup(c, &d)) {
		FAIL("dup: %s", devcoll_last_error());
		return;
	}
	for (int i = 0; i < 20; i++) {
		if (gpu_copy(dx, x, sizeof(x), GPU_TO_DEVICE))
			exit(3);
		if (devcoll_allreduce(d, dx, dx, 4096, DEVCOLL_FP64, DEVCOLL_SUM))
			FAIL("allreduce %d on the dup: %s", i, devcoll_last_error());
		if (i == 0 && fake_host_allocs)
			during = fake_host_allocs();
	}
	double *got = host(dx, sizeof(x));

	for (size_t i = 0; i < 4096; i++)
		if (check_one(DEVCOLL_FP64, DEVCOLL_SUM, W, got, i, i)) {
			FAIL("allreduce on the dup wrong at %zu", i);
			break;
		}
	free(got);
	if (fake_host_allocs && fake_host_allocs() != during)
		FAIL("20 allreduces: pinned buffers %d after the first, %d after all", during,
		     fake_host_allocs());
	devcoll_comm_destroy(d);
	if (fake_host_allocs && (during <= before || fake_host_allocs() != before))
		FAIL("pinned buffers: %d before the dup, %d while used, %d after it", before, during,
		     fake_host_allocs());
	dev_free(dx);
}

static int gpu_rank(devcoll_comm *c, void *arg)
{
	int r = devcoll_comm_rank(c), W = devcoll_comm_size(c);

	(void)arg;
	if (gpu_open())
		return 3;
	reductions(c, r, W);
	movers(c, r, W);
	v_colls(c, r, W);
	nonblocking(c, r, W);
	pool(c, r, W);
	if (fake_pushed && fake_pushed())
		FAIL("%d context pushes not popped", fake_pushed());
	return fails ? 1 : 0;
}

/* DEVCOLL_CUDA=off: a device buffer is one the CPU cannot reach. A large
 * send from one and receive into one (straight to and from the socket), a
 * small one (copied by the CPU) and an allreduce (reduced by the CPU) fail
 * with EFAULT saying what to do, on both ranks, where reading the buffer
 * would crash (the stand-in's device memory is PROT_NONE). */
static int cuda_off(devcoll_comm *c, void *arg)
{
	const char *what = arg;
	int r = devcoll_comm_rank(c), ret;
	size_t n = !strcmp(what, "send") ? 1 << 20 : 64;
	void *buf;

	if (gpu_open())
		return 3;
	buf = dev(2 * n * sizeof(float), NULL);
	if (!strcmp(what, "allreduce"))
		ret = devcoll_allreduce(c, buf, (float *)buf + n, n, DEVCOLL_FP32, DEVCOLL_SUM);
	else if (!strcmp(what, "allgather"))
		ret = devcoll_allgather(c, buf, (float *)buf + n / 2, n / 2, DEVCOLL_FP32);
	else
		ret = r == 0 ? devcoll_send(c, buf, n, DEVCOLL_UINT8, 1, 9) :
			       devcoll_recv(c, buf, n, DEVCOLL_UINT8, 0, 9);
	printf("  %s, rank %d: %d %s\n", what, r, ret, devcoll_last_error());
	dev_free(buf);
	/* the peer may see the other's failure first; its own is EFAULT */
	return (ret == -EFAULT || ret == -ECONNRESET) &&
	       strstr(devcoll_last_error(), "DEVCOLL_CUDA") ? 0 : 1;
}

/* devcoll_comm_init of a 1-rank world: its error, or 0. */
static int init_alone(char *msg, size_t len)
{
	struct devcoll_opts o = { .rank = 0, .size = 1, .addr = "127.0.0.1:1" };
	devcoll_comm *c;
	int ret = devcoll_comm_init(&c, &o);

	snprintf(msg, len, "%s", ret ? devcoll_last_error() : "");
	if (!ret)
		devcoll_comm_destroy(c);
	return ret;
}

int main(int argc, char **argv)
{
	char path[PATH_MAX], exe[PATH_MAX], msg[512];
	const char *real = getenv("DEVMEM_LIBCUDA");
	int status[3], bad = 0, ret;
	void *handle;

	(void)argc;
	snprintf(exe, sizeof(exe), "%s", argv[0]);
	/* the library the caller named, else the stand-in beside this program */
	if (real && *real)
		snprintf(path, sizeof(path), "%s", real);
	else
		snprintf(path, sizeof(path), "%s/fake_cuda.so", dirname(exe));
	lib = path;
	/* the errors first: a library once loaded stays */
	setenv("DEVCOLL_CUDA", "sometimes", 1);
	ret = init_alone(msg, sizeof(msg));
	printf("DEVCOLL_CUDA=sometimes: %s\n", msg);
	bad += ret != -EINVAL || !strstr(msg, "DEVCOLL_CUDA=sometimes: not auto, on or off");
	setenv("DEVCOLL_CUDA", "on", 1);
	setenv("DEVMEM_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
	ret = init_alone(msg, sizeof(msg));
	printf("DEVCOLL_CUDA=on without the library: %s\n", msg);
	bad += ret != -ENODEV || !strstr(msg, "/nonexistent/libcuda.so.1 not found");

	setenv("DEVMEM_LIBCUDA", lib, 1);
	/* loaded here, initialised in the ranks: CUDA does not survive fork */
	handle = dlopen(lib, RTLD_NOW | RTLD_NODELETE);
	if (!handle) {
		return check_skip("cannot load %s: %s", lib, dlerror());
	}
	*(void **)&fake_pushed = dlsym(handle, "fake_cuda_pushed");
	*(void **)&fake_host_allocs = dlsym(handle, "fake_cuda_host_allocs");
	printf("device memory from %s\n", lib);
	/* a communicator made and destroyed in this process too: LSan, at
	 * its exit, finds what init left behind */
	ret = init_alone(msg, sizeof(msg));
	printf("a 1-rank world with DEVCOLL_CUDA=on: %s\n", ret ? msg : "made and destroyed");
	bad += ret != 0;
	setenv("DEVCOLL_CUDA", "off", 1);
	for (int i = 0; i < 4; i++) {
		const char *what = (const char *[]){ "send", "small send", "allreduce",
						     "allgather" }[i];

		ret = run_world(2, NULL, cuda_off, (void *)what, status, 60);
		printf("DEVCOLL_CUDA=off, device buffers, %s: %s\n", what,
		       ret ? "a rank did not fail with EFAULT naming DEVCOLL_CUDA" :
		       "both ranks fail, saying why");
		bad += ret;
	}
	setenv("DEVCOLL_CUDA", "on", 1);
	for (int w = 2; w <= 3; w++) {
		int b = run_world(w, NULL, gpu_rank, NULL, status, 120);

		printf("%d ranks: %s\n", w, b ? "FAILED" : "all right");
		for (int i = 0; i < w; i++)
			if (status[i])
				printf("  rank %d exited %d\n", i, status[i]);
		bad += b;
	}
	printf("t_cuda: %s\n", bad ? "FAILED" : "all passed");
	return bad ? 1 : 0;
}
