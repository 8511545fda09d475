// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * devcoll-perf: nccl-tests-style benchmark of libdevcoll.
 *
 *   devcoll-perf [--np N] [--compare | --gpu] [--plot FILE.png] [--netns NS0,NS1,...]
 *                [--addr IP,...] [--mpi-if IFACES|SUBNET] [--pmix-if IFACE]
 *                [BENCH OPTIONS: -b -e -f -o -d -w -n -c]
 *
 * Started by mpirun/srun (PMIx) or with DEVCOLL_RANK set, it is one rank.
 * Otherwise it launches N ranks itself on this host (loopback, or one per
 * network namespace with --netns, rank 0 reachable at --addr); --compare
 * then runs the same sweep with Open MPI (mpirun, TCP BTL) and Gloo on the
 * same ranks and prints busbw side by side with the ratios. --gpu puts
 * libdevcoll's buffers in CUDA device memory (device 0).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bench.h"
#include "devcoll.h"
#include "gpu.h"

static devcoll_comm *comm;

/* --gpu: the bench's host buffers have device twins; the collectives run
 * on those, the checked run's data copied across around them. */
static struct {
	char *hsend, *hrecv, *dsend, *drecv;
	size_t len;
} gpu;

static void *on_gpu(const void *p)
{
	const char *h = p;

	if (!gpu.dsend || !p)
		return (void *)p;
	if (h >= gpu.hsend && h < gpu.hsend + gpu.len)
		return gpu.dsend + (h - gpu.hsend);
	return gpu.drecv + (h - gpu.hrecv);
}

static int gpu_buffers(char *send, char *recv, size_t len)
{
	gpu.hsend = send;
	gpu.hrecv = recv;
	gpu.len = len;
	gpu.dsend = gpu_alloc(len);
	gpu.drecv = gpu_alloc(len);
	if (!gpu.dsend || !gpu.drecv)
		return -1;
	return gpu_copy(gpu.dsend, send, len, GPU_TO_DEVICE) ?:
	       gpu_copy(gpu.drecv, recv, len, GPU_TO_DEVICE);
}

static int gpu_to_device(void)
{
	return gpu_copy(gpu.dsend, gpu.hsend, gpu.len, GPU_TO_DEVICE) ?:
	       gpu_copy(gpu.drecv, gpu.hrecv, gpu.len, GPU_TO_DEVICE);
}

/* both: an in-place result is in the send buffer */
static int gpu_to_host(void)
{
	return gpu_copy(gpu.hsend, gpu.dsend, gpu.len, GPU_TO_HOST) ?:
	       gpu_copy(gpu.hrecv, gpu.drecv, gpu.len, GPU_TO_HOST);
}

static const enum devcoll_dtype dt[BT_NTYPES] = {
	DEVCOLL_FP32, DEVCOLL_FP64, DEVCOLL_INT32, DEVCOLL_FP16, DEVCOLL_BF16,
};

static int coll(enum bcoll c, const void *s, void *r, size_t n, enum btype t, int root)
{
	s = on_gpu(s);
	r = on_gpu(r);
	switch (c) {
	case B_ALLREDUCE: return devcoll_allreduce(comm, s, r, n, dt[t], DEVCOLL_SUM);
	case B_REDUCE: return devcoll_reduce(comm, s, r, n, dt[t], DEVCOLL_SUM, root);
	case B_ALLGATHER: return devcoll_allgather(comm, s, r, n, dt[t]);
	case B_REDUCE_SCATTER: return devcoll_reduce_scatter(comm, s, r, n, dt[t], DEVCOLL_SUM);
	case B_ALLTOALL: return devcoll_alltoall(comm, s, r, n, dt[t]);
	case B_BROADCAST:
		if (s != r && devcoll_comm_rank(comm) == root) {
			if (!gpu.dsend)
				memcpy(r, s, n * devcoll_dtype_size(dt[t]));
			else if (gpu_copy(r, s, n * devcoll_dtype_size(dt[t]), GPU_ON_DEVICE))
				return -EIO;
		}
		return devcoll_broadcast(comm, r, n, dt[t], root);
	case B_GATHER: return devcoll_gather(comm, s, r, n, dt[t], root);
	case B_SCATTER: return devcoll_scatter(comm, s, r, n, dt[t], root);
	case B_SENDRECV: {
		int me = devcoll_comm_rank(comm), np = devcoll_comm_size(comm), ret;
		devcoll_req *q;

		ret = devcoll_irecv(comm, r, n, dt[t], (me + np - 1) % np, 0, &q);
		if (ret)
			return ret;
		ret = devcoll_send(comm, s, n, dt[t], (me + 1) % np, 0);
		return devcoll_wait(q) ?: ret;
	}
	default: return -ENOTSUP;
	}
}

static int barrier(void)
{
	return devcoll_barrier(comm);
}

static double dmax(double v)
{
	devcoll_allreduce(comm, &v, &v, 1, DEVCOLL_FP64, DEVCOLL_MAX);
	return v;
}

static long lsum(long v)
{
	int64_t x = v;

	devcoll_allreduce(comm, &x, &x, 1, DEVCOLL_INT64, DEVCOLL_SUM);
	return (long)x;
}

static int worker(int argc, char **argv)
{
	struct backend be = { .name = "devcoll", .coll = coll, .barrier = barrier, .max = dmax, .sum = lsum };
	int ret;

	/* before the communicator, which then recognises device pointers */
	if (getenv("DEVCOLL_PERF_GPU")) {
		if (gpu_open())
			return 1;
		be.name = "devcoll (GPU buffers)";
		be.buffers = gpu_buffers;
		be.to_device = gpu_to_device;
		be.to_host = gpu_to_host;
	}
	ret = devcoll_comm_init(&comm, NULL);
	if (ret) {
		fprintf(stderr, "devcoll-perf: %s\n", devcoll_last_error());
		return 1;
	}
	be.rank = devcoll_comm_rank(comm);
	be.size = devcoll_comm_size(comm);
	ret = bench_main(&be, argc, argv);
	devcoll_comm_destroy(comm);
	gpu_free(gpu.dsend);
	gpu_free(gpu.drecv);
	return ret;
}

/* ------------------------------------------------------------ launcher */

static char self_dir[4096];
static bool gpu_mode;	/* --gpu */
static char *netns_list[64];
static int nnetns;
static char *pmix_ifname;

static void enter_netns(int rank)
{
	char path[512];
	int fd;

	if (!nnetns)
		return;
	snprintf(path, sizeof(path), "/var/run/netns/%s", netns_list[rank % nnetns]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		perror(path);
		_exit(1);
	}
	close(fd);
}

/* Runs @np ranks of @prog (env per rank from @envfn), stdout into @out. */
static int spawn(int np, const char *prog, char **args, int outfd,
		 void (*envfn)(int rank, int np, void *), void *arg)
{
	pid_t pids[64];
	int bad = 0;

	fflush(stdout);
	for (int r = 0; r < np; r++) {
		pids[r] = fork();
		if (!pids[r]) {
			enter_netns(r);
			envfn(r, np, arg);
			if (outfd >= 0 && r == 0)
				dup2(outfd, 1);
			else if (r)
				freopen("/dev/null", "w", stdout);
			execv(prog, args);
			perror(prog);
			_exit(127);
		}
	}
	for (int r = 0; r < np; r++) {
		int st;

		waitpid(pids[r], &st, 0);
		bad += !WIFEXITED(st) || WEXITSTATUS(st);
	}
	return bad;
}

/* The ranks this launches share a secret of their own (DEVCOLL_ADDR's
 * rendezvous takes none else), unless the caller gave one. */
static void job_secret(void)
{
	unsigned char raw[24];
	char hex[2 * sizeof(raw) + 1];

	if (getenv("DEVCOLL_SECRET") || getenv("DEVCOLL_SECRET_FILE"))
		return;
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		fprintf(stderr, "devcoll-perf: no random bytes for the job's secret: %s\n",
			strerror(errno));
		exit(1);
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	explicit_bzero(raw, sizeof(raw));
	setenv("DEVCOLL_SECRET", hex, 1);
}

static void devcoll_env(int r, int np, void *arg)
{
	char b[32];

	snprintf(b, sizeof(b), "%d", r);
	setenv("DEVCOLL_RANK", b, 1);
	snprintf(b, sizeof(b), "%d", np);
	setenv("DEVCOLL_SIZE", b, 1);
	setenv("DEVCOLL_ADDR", arg, 1);
	unsetenv("PMIX_RANK");
	if (gpu_mode)
		setenv("DEVCOLL_PERF_GPU", "1", 1);
}

static void gloo_env(int r, int np, void *arg)
{
	char b[32];
	const char **a = arg;

	snprintf(b, sizeof(b), "%d", r);
	setenv("GLOO_RANK", b, 1);
	snprintf(b, sizeof(b), "%d", np);
	setenv("GLOO_SIZE", b, 1);
	setenv("GLOO_STORE", a[0], 1);
	if (nnetns && a[1 + r])
		setenv("GLOO_HOST", a[1 + r], 1);
}

struct row {
	char coll[32];
	size_t size, count;
	double us, alg, bus;
	long wrong;
};

static int parse(const char *path, struct row *rows, int max)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		struct row *w = &rows[n];

		if (sscanf(line, "R %31s %zu %zu %lf %lf %lf %ld", w->coll, &w->size, &w->count, &w->us,
			   &w->alg, &w->bus, &w->wrong) == 7)
			n++;
	}
	fclose(f);
	return n;
}

static const struct row *find(const struct row *rows, int n, const struct row *key)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(rows[i].coll, key->coll) && rows[i].size == key->size)
			return &rows[i];
	return NULL;
}

/* What --compare runs every backend with. */
struct compare {
	int np, nb;
	char **bargs;		/* the sweep's options, [0] set per backend */
	const char *addr;	/* rank 0's address:port for libdevcoll */
	char **addrs;		/* each rank's address (Gloo) */
	int naddrs;
	char *mpi_if;
	const char *dir;	/* scratch */
};

static int run_devcoll(const struct compare *x, const char *out)
{
	char prog[4200];
	int fd, ret;

	snprintf(prog, sizeof(prog), "%s/devcoll-perf", self_dir);
	x->bargs[0] = prog;
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	job_secret();
	ret = spawn(x->np, prog, x->bargs, fd, devcoll_env, (void *)x->addr);
	close(fd);
	return ret;
}

/* Open MPI: mpirun, TCP BTL (in the namespaces through ip netns exec). */
static int run_mpi(const struct compare *x, const char *out)
{
	char prog[4200];

	snprintf(prog, sizeof(prog), "%s/devcoll-perf-mpi", self_dir);
	if (access(prog, X_OK)) {
		fprintf(stderr, "devcoll-perf: no %s (built when mpicc is there)\n", prog);
		return 1;
	}
	char *margs[200], npb[16], rankfile[4400];
	int m = 0;

	snprintf(npb, sizeof(npb), "%d", x->np);
	if (nnetns) {
		/* mpirun in rank 0's namespace, its PMIx server reachable
		 * from the others over the network (PMIx uses TCP) */
		static char pmix_if[300];

		snprintf(pmix_if, sizeof(pmix_if), "PMIX_MCA_ptl_tcp_if_include=%s",
			 pmix_ifname ? pmix_ifname : "lo");
		margs[m++] = "ip";
		margs[m++] = "netns";
		margs[m++] = "exec";
		margs[m++] = netns_list[0];
		margs[m++] = "env";
		margs[m++] = "PMIX_MCA_ptl_tcp_remote_connections=1";
		margs[m++] = pmix_if;
	}
	margs[m++] = "mpirun";
	if (!geteuid())
		margs[m++] = "--allow-run-as-root";
	margs[m++] = "--oversubscribe";
	margs[m++] = "--bind-to";
	margs[m++] = "none";
	margs[m++] = "-np";
	margs[m++] = npb;
	margs[m++] = "--mca";
	margs[m++] = "btl";
	margs[m++] = "tcp,self";
	margs[m++] = "--mca";
	margs[m++] = "btl_tcp_if_include";
	margs[m++] = x->mpi_if ? x->mpi_if : "lo";
	if (nnetns && pmix_ifname) {
		margs[m++] = "--mca";
		margs[m++] = "oob_tcp_if_include";
		margs[m++] = pmix_ifname;
	}
	if (nnetns) {
		/* each rank enters its namespace: line (rank % N) + 1 of ns.list */
		static char cmd[9000];
		FILE *f;

		snprintf(rankfile, sizeof(rankfile), "%s/ns.list", x->dir);
		f = fopen(rankfile, "w");
		for (int i = 0; f && i < nnetns; i++)
			fprintf(f, "%s\n", netns_list[i]);
		if (f)
			fclose(f);
		snprintf(cmd, sizeof(cmd), "exec ip netns exec \"$(sed -n \"$((OMPI_COMM_WORLD_RANK "
			 "%% %d + 1))p\" %s)\" \"$@\"", nnetns, rankfile);
		margs[m++] = "sh";
		margs[m++] = "-c";
		margs[m++] = cmd;
		margs[m++] = "sh";
	}
	margs[m++] = prog;
	for (int i = 1; i < x->nb; i++)
		margs[m++] = x->bargs[i];
	margs[m] = NULL;
	pid_t p = fork();

	if (!p) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fd, 1);
		execvp(margs[0], margs);
		perror(margs[0]);
		_exit(127);
	}
	int st;

	waitpid(p, &st, 0);
	return !WIFEXITED(st) || WEXITSTATUS(st);
}

static int run_gloo(const struct compare *x, const char *out, int rep)
{
	char prog[4200], store[4300];
	const char *garg[66] = { store };
	int fd, ret;

	snprintf(prog, sizeof(prog), "%s/devcoll-perf-gloo", self_dir);
	if (access(prog, X_OK)) {
		fprintf(stderr, "devcoll-perf: no %s (built when libgloo-dev is there)\n", prog);
		return 1;
	}
	snprintf(store, sizeof(store), "%s/gloo-store.%d", x->dir, rep);
	mkdir(store, 0700);
	for (int i = 0; i < x->np && i < 64; i++)
		garg[1 + i] = i < x->naddrs ? x->addrs[i] : NULL;
	x->bargs[0] = prog;
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ret = spawn(x->np, prog, x->bargs, fd, gloo_env, garg);
	close(fd);
	return ret;
}

/* Keeps each size's fastest run; wrong results count from every run. */
static void merge_best(struct row *best, int *nbest, const struct row *rows, int n)
{
	for (int i = 0; i < n; i++) {
		struct row *b = (struct row *)find(best, *nbest, &rows[i]);

		if (!b) {
			if (*nbest < 256)
				best[(*nbest)++] = rows[i];
			continue;
		}
		long wrong = b->wrong + rows[i].wrong;

		if (rows[i].us < b->us)
			*b = rows[i];
		b->wrong = wrong;
	}
}

int main(int argc, char **argv)
{
	int np = 2, compare = 0, repeat = 1, ret, nb = 0;
	const char *plot = NULL, *addr_ip = "127.0.0.1";
	char *bargs[128], addr[128], *mpi_if = NULL;
	char *nsarg = NULL;

	if ((getenv("PMIX_RANK") || getenv("DEVCOLL_RANK")) && !getenv("DEVCOLL_PERF_LAUNCH"))
		return worker(argc, argv);
	{
		ssize_t l = readlink("/proc/self/exe", self_dir, sizeof(self_dir) - 1);
		char *slash;

		self_dir[l > 0 ? l : 0] = 0;
		slash = strrchr(self_dir, '/');
		if (slash)
			*slash = 0;
	}
	bargs[nb++] = NULL;	/* program name, set per backend */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--np") && i + 1 < argc)
			np = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--compare"))
			compare = 1;
		else if (!strcmp(argv[i], "--gpu"))
			gpu_mode = true;
		else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
			repeat = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--plot") && i + 1 < argc)
			plot = argv[++i];
		else if (!strcmp(argv[i], "--netns") && i + 1 < argc)
			nsarg = argv[++i];
		else if (!strcmp(argv[i], "--addr") && i + 1 < argc)
			addr_ip = argv[++i];
		else if (!strcmp(argv[i], "--mpi-if") && i + 1 < argc)
			mpi_if = argv[++i];
		else if (!strcmp(argv[i], "--pmix-if") && i + 1 < argc)
			pmix_ifname = argv[++i];
		else if (nb < 120)
			bargs[nb++] = argv[i];
	}
	if (gpu_mode && compare) {
		fprintf(stderr, "devcoll-perf: --gpu runs libdevcoll alone: Open MPI and Gloo take "
			"host memory here\n");
		return 2;
	}
	if (np < 1 || np > 64) {
		fprintf(stderr, "devcoll-perf: --np 1..64\n");
		return 2;
	}
	if (repeat < 1 || repeat > 100) {
		fprintf(stderr, "devcoll-perf: --repeat 1..100\n");
		return 2;
	}
	/* --netns a,b: rank i in namespace i; --addr: rank 0's address there;
	 * GLOO needs each rank's own: --addr a0,a1,... */
	char *addrs[65] = { 0 };
	int naddrs = 0;
	char *addrcopy = strdup(addr_ip);

	for (char *tok = strtok(addrcopy, ","); tok && naddrs < 64; tok = strtok(NULL, ","))
		addrs[naddrs++] = tok;
	if (nsarg)
		for (char *tok = strtok(nsarg, ","); tok && nnetns < 64; tok = strtok(NULL, ","))
			netns_list[nnetns++] = tok;
	snprintf(addr, sizeof(addr), "%s:%d", addrs[0], 29500 + getpid() % 1000);
	if (!compare) {
		char prog[4200];

		snprintf(prog, sizeof(prog), "%s/devcoll-perf", self_dir);
		bargs[0] = prog;
		bargs[nb] = NULL;
		job_secret();
		return spawn(np, prog, bargs, -1, devcoll_env, addr) ? 1 : 0;
	}
	/* --compare: the backends one after the other, --repeat times over,
	 * each size's fastest run kept (the machine's noise only slows) */
	char dir[] = "/tmp/devcoll-perf.XXXXXX", out[4300];
	struct row *rows[3], got[256];
	int nrows[3] = { 0, 0, 0 };
	static const char *const names[3] = { "devcoll", "ompi", "gloo" };
	static const char *const failed[3] = { "libdevcoll", "Open MPI", "Gloo" };
	bool absent[3] = { false, false, false };
	bool wrong_any = false;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	bargs[nb++] = "-m";
	bargs[nb] = NULL;
	struct compare x = { .np = np, .nb = nb, .bargs = bargs, .addr = addr, .addrs = addrs,
			     .naddrs = naddrs, .mpi_if = mpi_if, .dir = dir };

	for (int b = 0; b < 3; b++)
		rows[b] = calloc(256, sizeof(struct row));
	for (int rep = 0; rep < repeat; rep++) {
		for (int b = 0; b < 3; b++) {
			if (absent[b])
				continue;
			snprintf(out, sizeof(out), "%s/%s.%d.out", dir, names[b], rep);
			ret = b == 0 ? run_devcoll(&x, out) : b == 1 ? run_mpi(&x, out) : run_gloo(&x, out, rep);
			if (ret)
				fprintf(stderr, "devcoll-perf: the %s run failed\n", failed[b]);
			int n = parse(out, got, 256);

			/* a baseline that computes wrong results is no baseline */
			for (int i = 0; i < n; i++) {
				if (got[i].wrong) {
					fprintf(stderr, "devcoll-perf: %s: %ld wrong elements in %s of %zu "
						"bytes\n", failed[b], got[i].wrong, got[i].coll, got[i].size);
					wrong_any = true;
				}
			}
			absent[b] = !n && b;	/* a missing backend is not retried */
			merge_best(rows[b], &nrows[b], got, n);
		}
	}
	/* the table */
	printf("# devcoll-perf --compare: %d ranks%s%s; busbw in GB/s, time in us\n", np,
	       nnetns ? ", one per network namespace" : " on this host", nnetns ? "" : " (loopback)");
	printf("#%-14s %11s %9s %8s %6s %9s %8s %9s %8s %8s %8s\n", "collective", "size(B)", "devcoll",
	       "busbw", "#wrong", "ompi", "busbw", "gloo", "busbw", "x ompi", "x gloo");
	for (int i = 0; i < nrows[0]; i++) {
		const struct row *d = &rows[0][i], *o = find(rows[1], nrows[1], d), *g = find(rows[2], nrows[2], d);

		printf(" %-14s %11zu %9.1f %8.3f %6ld", d->coll, d->size, d->us, d->bus, d->wrong);
		if (o)
			printf(" %9.1f %8.3f", o->us, o->bus);
		else
			printf(" %9s %8s", "-", "-");
		if (g)
			printf(" %9.1f %8.3f", g->us, g->bus);
		else
			printf(" %9s %8s", "-", "-");
		/* busbw ratio = time ratio at the same size (busbw is rounded in
		 * the backends' output, times are not) */
		char r1[16] = "-", r2[16] = "-";

		if (o && d->us > 0)
			snprintf(r1, sizeof(r1), "%.2f", o->us / d->us);
		if (g && d->us > 0)
			snprintf(r2, sizeof(r2), "%.2f", g->us / d->us);
		printf(" %8s %8s\n", r1, r2);
	}
	if (plot) {
		char gp[4400], cmd[9000];
		FILE *f;

		for (int b = 0; b < 3; b++) {
			char dat[4400];

			snprintf(dat, sizeof(dat), "%s/%s.dat", dir, names[b]);
			f = fopen(dat, "w");
			for (int i = 0; f && i < nrows[b]; i++)
				if (!strcmp(rows[b][i].coll, rows[0][0].coll))
					fprintf(f, "%zu %f\n", rows[b][i].size, rows[b][i].bus);
			if (f)
				fclose(f);
		}
		snprintf(gp, sizeof(gp), "%s/plot.gp", dir);
		f = fopen(gp, "w");
		fprintf(f, "set terminal pngcairo size 900,600 noenhanced\nset output '%s'\n"
			"set logscale x 2\nset format x '%%.0b%%B'\nset xlabel 'size (bytes)'\nset ylabel 'busbw (GB/s)'\n"
			"set title '%s, %d ranks'\nset key left top\nset grid\n"
			"plot '%s/devcoll.dat' w lp t 'devcoll', '%s/ompi.dat' w lp t 'Open MPI', "
			"'%s/gloo.dat' w lp t 'Gloo'\n", plot, nrows[0] ? rows[0][0].coll : "?", np, dir, dir, dir);
		fclose(f);
		snprintf(cmd, sizeof(cmd), "gnuplot %s 2>&1 | grep -v '^$' >&2 || true", gp);
		if (system(cmd) != 0 || access(plot, F_OK)) {
			/* pngcairo may be missing from gnuplot-nox: fall back to png */
			snprintf(cmd, sizeof(cmd), "sed -i 's/pngcairo/png/' %s && gnuplot %s", gp, gp);
			if (system(cmd))
				fprintf(stderr, "devcoll-perf: gnuplot failed\n");
		}
		if (!access(plot, F_OK))
			printf("# plot: %s\n", plot);
	}
	{
		char cmd[200];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			fprintf(stderr, "devcoll-perf: could not remove %s\n", dir);
	}
	return nrows[0] && !wrong_any ? 0 : 1;
}
