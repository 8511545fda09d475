// SPDX-License-Identifier: GPL-2.0
/*
 * devmem: set up a NIC for devmem TCP and move data through it.
 *
 *   devmem nic setup IFACE [--queues N] [--reserve K]
 *   devmem nic teardown IFACE
 *   devmem nic show IFACE [--json]
 *   devmem rx --iface IFACE --queue Q --port PORT [options]
 *   devmem tx --iface IFACE --addr ADDR --port PORT [options]
 *
 * See devmem(1). Exit status: 0 done, 1 failed (with a message saying what
 * to do), 2 usage, 3 payload did not match the pattern.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devmem.h"
#include "devtcp/pattern.h"

#define EXIT_USAGE	2
#define EXIT_MISMATCH	3

static const char *prog = "devmem";

__attribute__((format(printf, 1, 2), noreturn))
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

/*
 * Exits with the library's description of the failed call (which names the
 * interface and queue), after @what when that adds to it.
 */
static void check(int ret, const char *what)
{
	if (ret >= 0)
		return;
	if (what)
		die("%s: %s", what, devmem_last_error());
	die("%s", devmem_last_error());
}

__attribute__((noreturn)) static void usage(void)
{
	fprintf(stderr,
		"usage: devmem nic setup IFACE [--queues N] [--reserve K]\n"
		"       devmem nic teardown IFACE\n"
		"       devmem nic show IFACE [--json]\n"
		"       devmem rx --iface IFACE --queue Q --port PORT [--bytes N] [--mem KIND]\n"
		"                 [--size SIZE] [--pattern SEED] [--steer] [--output FILE] [-6]\n"
		"                 [--zcrx] [--page-size SIZE]\n"
		"       devmem tx --iface IFACE --addr ADDR --port PORT [--bytes N] [--mem KIND]\n"
		"                 [--size SIZE] [--chunk SIZE] [--pattern SEED]\n"
		"KIND is udmabuf (default), heap, cuda[:GPU], or user (--zcrx only);\n"
		"sizes take K, M, G suffixes.\n");
	exit(EXIT_USAGE);
}

/* "64M" and friends; exits on anything else. */
static uint64_t parse_size(const char *s, const char *what)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (errno || *end || end == s || *s == '-') {
		fprintf(stderr, "%s: %s: '%s' is not a size (like 4096, 64K, 16M, 1G)\n", prog,
			what, s);
		exit(EXIT_USAGE);
	}
	return v;
}

static unsigned int parse_uint(const char *s, const char *what, unsigned int max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end || end == s || *s == '-' || v > max) {
		fprintf(stderr, "%s: %s: '%s' is not a number from 0 to %u\n", prog, what, s, max);
		exit(EXIT_USAGE);
	}
	return v;
}

/* ----------------------------------------------------------------- memory */

struct mem_choice {
	enum devmem_mem_kind kind;
	int gpu;
	bool user;		/* plain user memory (io_uring areas only) */
};

static struct mem_choice parse_mem(const char *s)
{
	if (!strcmp(s, "udmabuf"))
		return (struct mem_choice){ DEVMEM_MEM_UDMABUF, 0, false };
	if (!strcmp(s, "user"))
		return (struct mem_choice){ DEVMEM_MEM_UDMABUF, 0, true };
	if (!strcmp(s, "heap"))
		return (struct mem_choice){ DEVMEM_MEM_HEAP, 0, false };
	if (!strcmp(s, "cuda"))
		return (struct mem_choice){ DEVMEM_MEM_CUDA, 0, false };
	if (!strncmp(s, "cuda:", 5))
		return (struct mem_choice){ DEVMEM_MEM_CUDA,
					    parse_uint(s + 5, "--mem cuda:GPU", 1024), false };
	fprintf(stderr, "%s: --mem: '%s' is not udmabuf, heap, cuda[:GPU] or user\n", prog, s);
	exit(EXIT_USAGE);
}

static const char *mem_name(struct mem_choice c)
{
	if (c.user)
		return "user memory";
	switch (c.kind) {
	case DEVMEM_MEM_HEAP: return "dma-heap memory";
	case DEVMEM_MEM_CUDA: return "CUDA memory";
	default: return "udmabuf memory";
	}
}

static struct devmem_mem *mem_alloc(struct mem_choice c, size_t size)
{
	struct devmem_mem *mem;

	switch (c.kind) {
	case DEVMEM_MEM_UDMABUF:
		check(devmem_mem_udmabuf(&mem, size, 0), NULL);
		break;
	case DEVMEM_MEM_HEAP:
		check(devmem_mem_heap(&mem, NULL, size), NULL);
		break;
	case DEVMEM_MEM_CUDA:
		check(devmem_mem_cuda(&mem, c.gpu, size), NULL);
		break;
	default:	/* the tool never imports */
		abort();
	}
	return mem;
}

/* --------------------------------------------------------------- progress */

struct progress {
	const char *verb;
	uint64_t total;		/* 0: unknown */
	double t0, last;
	bool tty;
};

static void progress_start(struct progress *p, const char *verb, uint64_t total)
{
	*p = (struct progress){ .verb = verb, .total = total, .t0 = now(),
				.tty = isatty(STDERR_FILENO) };
	p->last = p->t0;
}

/* A live line on a terminal, at most twice a second. */
static void progress_update(struct progress *p, uint64_t done)
{
	double t = now();

	if (!p->tty || t - p->last < 0.5)
		return;
	p->last = t;
	if (p->total)
		fprintf(stderr, "\r%s %" PRIu64 " of %" PRIu64 " MB (%.0f%%), %.1f MB/s   ",
			p->verb, done / 1000000, p->total / 1000000, 100.0 * done / p->total,
			done / (t - p->t0) / 1e6);
	else
		fprintf(stderr, "\r%s %" PRIu64 " MB, %.1f MB/s   ", p->verb, done / 1000000,
			done / (t - p->t0) / 1e6);
}

static double progress_end(struct progress *p)
{
	if (p->tty && p->last != p->t0)
		fprintf(stderr, "\r\033[K");
	return now() - p->t0;
}

/* -------------------------------------------------------------------- nic */

static void state_path(char *buf, size_t len, const char *ifname)
{
	snprintf(buf, len, DEVMEM_STATE_DIR "/%s.state", ifname);
}

static int cmd_nic_setup(const char *ifname, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "queues", required_argument, NULL, 'q' },
		{ "reserve", required_argument, NULL, 'r' },
		{ 0 }
	};
	unsigned int queues = 0, reserve = 1;
	struct devmem_reservation r;
	struct devmem_nic *nic;
	char path[256];
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'q': queues = parse_uint(optarg, "--queues", 1024); break;
		case 'r': reserve = parse_uint(optarg, "--reserve", 1024); break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	state_path(path, sizeof(path), ifname);
	if (!devmem_nic_reservation(path, &r))
		die("%s is already set up (%s): run 'devmem nic teardown %s' first", ifname, path,
		    ifname);
	check(devmem_nic_open(&nic, ifname), NULL);
	check(devmem_nic_reserve(nic, queues, reserve, path, &r), NULL);
	/* The changes stay: teardown undoes them from the state file. */
	devmem_nic_close(nic, false);
	printf("%s: header split on (hds-thresh 0), ntuple on, RSS over queues 0-%u, "
	       "queues %u-%u reserved for devmem (RSS context %u)\n", ifname, r.first - 1,
	       r.first, r.queues - 1, r.rss_ctx);
	return 0;
}

static int cmd_nic_teardown(const char *ifname, int argc, char **argv)
{
	struct devmem_nic_state st;
	struct devmem_reservation r;
	struct devmem_nic *nic;
	char path[256];
	int err;

	(void)argv;
	if (argc > 1)
		usage();
	state_path(path, sizeof(path), ifname);
	err = devmem_nic_reservation(path, &r);
	if (err == -ENOENT)
		die("%s was not set up by 'devmem nic setup' (no %s)", ifname, path);
	check(err, NULL);
	check(devmem_nic_open(&nic, ifname), NULL);
	check(devmem_nic_release(nic, path), NULL);
	check(devmem_nic_state(nic, &st), NULL);
	devmem_nic_close(nic, false);
	printf("%s: restored (%u queues, header split %s, ntuple %s)\n", ifname, st.rx_queues,
	       st.header_split ? "on" : "off", st.ntuple ? "on" : "off");
	return 0;
}

/* The page pools: where each queue's buffers are, and how many are out. */
static void show_page_pools(struct devmem_nic *nic, int json)
{
	struct devmem_page_pool_info pp[512];
	int n = devmem_nic_page_pools(nic, pp, sizeof(pp) / sizeof(pp[0]));

	check(n, NULL);
	if (n > (int)(sizeof(pp) / sizeof(pp[0])))
		n = sizeof(pp) / sizeof(pp[0]);
	if (json)
		printf(", \"page_pools\": [");
	else
		printf("%-8s %-8s %-10s %-10s %-12s %s\n", "pool", "napi", "memory", "inflight",
		       "inflight B", "state");
	for (int i = 0; i < n; i++) {
		char mem[32] = "host";

		if (pp[i].dmabuf_id)
			snprintf(mem, sizeof(mem), "dmabuf %u", pp[i].dmabuf_id);
		else if (pp[i].io_uring)
			snprintf(mem, sizeof(mem), "io_uring");
		if (json)
			printf("%s{\"id\": %" PRIu64 ", \"napi_id\": %u, \"dmabuf_id\": %u, "
			       "\"io_uring\": %s, \"inflight\": %" PRIu64 ", \"inflight_mem\": %"
			       PRIu64 ", \"detached\": %s}", i ? ", " : "", pp[i].id, pp[i].napi_id,
			       pp[i].dmabuf_id, pp[i].io_uring ? "true" : "false", pp[i].inflight,
			       pp[i].inflight_mem, pp[i].detached ? "true" : "false");
		else
			printf("%-8" PRIu64 " %-8u %-10s %-10" PRIu64 " %-12" PRIu64 " %s\n",
			       pp[i].id, pp[i].napi_id, mem, pp[i].inflight, pp[i].inflight_mem,
			       pp[i].detached ? "detached" : "active");
	}
	if (json)
		printf("]");
}

/* The kernel's devmem features, offered and lacking (devmem_kernel_features(3)). */
static void print_features(unsigned int kf, bool json)
{
	const char *name;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		bool want = pass == 0, first = true;

		printf(json ? ", \"kernel_%s\": [" : "kernel %s:", want ? "offers" : "lacks");
		for (unsigned int bit = 1; (name = devmem_kernel_feature_name(bit)); bit <<= 1) {
			if (!!(kf & bit) != want)
				continue;
			printf(json ? "%s\"%s\"" : "%s %s", json && !first ? ", " : "", name);
			first = false;
		}
		if (json)
			printf("]");
		else
			printf(first ? " nothing%s" : "%s", want ? "; " : "\n");
	}
}

static int cmd_nic_show(const char *ifname, int argc, char **argv)
{
	static const struct option opts[] = { { "json", no_argument, NULL, 'j' }, { 0 } };
	struct devmem_queue_info qi[256];
	struct devmem_nic_state st;
	struct devmem_qstats qs;
	struct devmem_nic *nic;
	struct devmem_reservation r;
	int opt, n, json = 0, setup;
	unsigned int kf;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt != 'j')
			usage();
		json = 1;
	}
	if (optind != argc)
		usage();
	check(devmem_nic_open(&nic, ifname), NULL);
	check(devmem_nic_state(nic, &st), NULL);
	n = devmem_nic_queues(nic, qi, sizeof(qi) / sizeof(qi[0]));
	check(n, ifname);
	if (n > (int)(sizeof(qi) / sizeof(qi[0])))
		n = sizeof(qi) / sizeof(qi[0]);
	setup = !devmem_nic_reserved(nic, &r);
	check(devmem_kernel_features(&kf), NULL);

	if (json) {
		printf("{\"ifname\": \"%s\", \"ifindex\": %d, \"queues\": %u, \"max_queues\": %u, "
		       "\"header_split\": %s, \"hds_thresh\": %u, \"ntuple\": %s, "
		       "\"devmem_setup\": %s", ifname, devmem_nic_ifindex(nic), st.rx_queues,
		       st.max_queues, st.header_split ? "true" : "false", st.hds_thresh,
		       st.ntuple ? "true" : "false", setup ? "true" : "false");
		if (setup)
			printf(", \"reserved\": [%u, %u], \"rss_ctx\": %u", r.first,
			       r.first + r.count - 1, r.rss_ctx);
		print_features(kf, true);
		printf(", \"rx_queues\": [");
	} else {
		printf("%s (ifindex %d): %u of %u queues, header split %s, hds-thresh %u, "
		       "ntuple %s\n", ifname, devmem_nic_ifindex(nic), st.rx_queues,
		       st.max_queues, st.header_split ? "on" : "off", st.hds_thresh,
		       st.ntuple ? "on" : "off");
		if (setup)
			printf("devmem: queues %u-%u reserved (RSS context %u)\n", r.first,
			       r.first + r.count - 1, r.rss_ctx);
		print_features(kf, false);
		if (!st.hds_thresh_max)
			printf("hds-thresh: none (the kernel, before 6.14, or the driver has none)\n");
		printf("%-6s %-8s %-10s %-14s %-14s %s\n", "queue", "napi", "memory", "rx packets",
		       "rx bytes", "alloc fail");
	}
	for (int i = 0, first = 1; i < n; i++) {
		char mem[32] = "host";

		if (!qi[i].rx)
			continue;
		memset(&qs, 0, sizeof(qs));
		check(devmem_nic_qstats(nic, qi[i].id, &qs), NULL);
		if (qi[i].dmabuf_id)
			snprintf(mem, sizeof(mem), "dmabuf %u", qi[i].dmabuf_id);
		else if (qi[i].io_uring)
			snprintf(mem, sizeof(mem), "io_uring");
		if (json)
			printf("%s{\"id\": %u, \"napi_id\": %u, \"dmabuf_id\": %u, \"io_uring\": %s, "
			       "\"rx_packets\": %" PRIu64 ", \"rx_bytes\": %" PRIu64
			       ", \"rx_alloc_fail\": %" PRIu64 "}", first ? "" : ", ", qi[i].id,
			       qi[i].napi_id, qi[i].dmabuf_id, qi[i].io_uring ? "true" : "false",
			       qs.rx_packets, qs.rx_bytes, qs.rx_alloc_fail);
		else
			printf("%-6u %-8u %-10s %-14" PRIu64 " %-14" PRIu64 " %" PRIu64 "\n",
			       qi[i].id, qi[i].napi_id, mem, qs.rx_packets, qs.rx_bytes,
			       qs.rx_alloc_fail);
		first = 0;
	}
	if (json)
		printf("]");
	show_page_pools(nic, json);
	if (json)
		printf("}\n");
	devmem_nic_close(nic, false);
	return 0;
}

static int cmd_nic(int argc, char **argv)
{
	const char *sub, *ifname;

	if (argc < 3)
		usage();
	sub = argv[1];
	ifname = argv[2];
	/* getopt_long sees "IFACE --opt ...": start after IFACE. */
	argc -= 2;
	argv += 2;
	optind = 1;
	if (!strcmp(sub, "setup"))
		return cmd_nic_setup(ifname, argc, argv);
	if (!strcmp(sub, "teardown"))
		return cmd_nic_teardown(ifname, argc, argv);
	if (!strcmp(sub, "show"))
		return cmd_nic_show(ifname, argc, argv);
	usage();
}

/* --------------------------------------------------------------- rx / tx */

struct xfer_opts {
	const char *ifname, *addr, *output;
	unsigned int queue;
	int port, v6, steer, have_pattern, zcrx;
	uint64_t bytes, seed;
	size_t size, chunk, page_size;
	struct mem_choice mem;
};

static void parse_xfer(int argc, char **argv, struct xfer_opts *o, bool rx)
{
	static const struct option opts[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "queue", required_argument, NULL, 'q' },
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "bytes", required_argument, NULL, 'n' },
		{ "mem", required_argument, NULL, 'm' },
		{ "size", required_argument, NULL, 'S' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "pattern", required_argument, NULL, 's' },
		{ "steer", no_argument, NULL, 'T' },
		{ "output", required_argument, NULL, 'o' },
		{ "zcrx", no_argument, NULL, 'Z' },
		{ "page-size", required_argument, NULL, 'P' },
		{ 0 }
	};
	int opt;

	*o = (struct xfer_opts){ .queue = ~0u, .size = 64 << 20, .chunk = 1 << 20 };
	optind = 1;
	while ((opt = getopt_long(argc, argv, "i:q:a:p:n:m:S:c:s:To:6ZP:", opts, NULL)) != -1) {
		switch (opt) {
		case 'i': o->ifname = optarg; break;
		case 'q': o->queue = parse_uint(optarg, "--queue", 4095); break;
		case 'a': o->addr = optarg; break;
		case 'p': o->port = parse_uint(optarg, "--port", 65535); break;
		case 'n': o->bytes = parse_size(optarg, "--bytes"); break;
		case 'm': o->mem = parse_mem(optarg); break;
		case 'S': o->size = parse_size(optarg, "--size"); break;
		case 'c': o->chunk = parse_size(optarg, "--chunk"); break;
		case 's': o->seed = strtoull(optarg, NULL, 0); o->have_pattern = 1; break;
		case 'T': o->steer = 1; break;
		case 'o': o->output = optarg; break;
		case '6': o->v6 = 1; break;
		case 'Z': o->zcrx = 1; break;
		case 'P': o->page_size = parse_size(optarg, "--page-size"); break;
		default: usage();
		}
	}
	if (optind != argc || !o->ifname || !o->port)
		usage();
	if (rx && o->queue == ~0u) {
		fprintf(stderr, "%s rx: --queue is required: the RX queue to bind the memory to\n",
			prog);
		exit(EXIT_USAGE);
	}
	if (!rx && !o->addr) {
		fprintf(stderr, "%s tx: --addr is required\n", prog);
		exit(EXIT_USAGE);
	}
	if (!o->size || !o->chunk || o->chunk > o->size) {
		fprintf(stderr, "%s: --chunk must be between 1 and --size (%zu)\n", prog, o->size);
		exit(EXIT_USAGE);
	}
}

static int listen_accept(int port, int v6)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, ls, s;

	ls = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
	if (ls < 0)
		die("socket: %s", strerror(errno));
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (v6 ? bind(ls, (struct sockaddr *)&a6, sizeof(a6))
	       : bind(ls, (struct sockaddr *)&a4, sizeof(a4)))
		die("bind to port %d: %s", port, strerror(errno));
	if (listen(ls, 1))
		die("listen: %s", strerror(errno));
	fprintf(stderr, "listening on port %d\n", port);
	s = accept(ls, NULL, NULL);
	if (s < 0)
		die("accept: %s", strerror(errno));
	close(ls);
	return s;
}

/* Installs a rule steering TCP to local port @port onto @queue (3-tuple). */
static uint32_t steer_port(struct devmem_nic *nic, int v6, int port, unsigned int queue)
{
	struct devmem_flow flow = { .family = v6 ? AF_INET6 : AF_INET, .dport = port };
	struct devmem_flow_target target = { .queue = queue };
	uint32_t rule;

	check(devmem_nic_flow_add(nic, &flow, &target, &rule), "--steer");
	return rule;
}

struct rx_totals {
	uint64_t bytes, dmabuf_bytes, linear_bytes, frags, bad, first_bad;
	uint32_t largest;	/* fragment */
};

static void write_all(int fd, const void *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("writing the output: %s", strerror(errno));
		buf = (const char *)buf + n;
		len -= n;
	}
}

/* Where received bytes go: the pattern check and the output file. */
struct sink {
	const struct xfer_opts *o;
	struct devmem_mem *mem;
	uint32_t dmabuf_id;		/* the binding fragments must be of */
	struct rx_totals t;
	int out;
};

/*
 * Handles @len received bytes: at @data in host memory, or (@data NULL) at
 * @off of device memory, copied out in pieces.
 */
static void sink_bytes(struct sink *k, const uint8_t *data, uint64_t off, uint32_t len,
		       bool dmabuf)
{
	static uint8_t copy[64 * 1024];

	if (k->o->have_pattern || k->out >= 0) {
		for (uint32_t done = 0; done < len; ) {
			uint32_t c = len - done;
			const uint8_t *p = data + done;

			if (!data) {
				c = c < sizeof(copy) ? c : sizeof(copy);
				check(devmem_mem_read(k->mem, off + done, copy, c),
				      "reading device memory");
				p = copy;
			}
			if (k->o->have_pattern)
				pattern_check(p, c, k->o->seed, k->t.bytes + done, &k->t.bad,
					      &k->t.first_bad);
			if (k->out >= 0)
				write_all(k->out, p, c);
			done += c;
		}
	}
	k->t.bytes += len;
	k->t.frags++;
	if (len > k->t.largest)
		k->t.largest = len;
	if (dmabuf)
		k->t.dmabuf_bytes += len;
	else
		k->t.linear_bytes += len;
}

/* Wants the CPU mapping of host memory for each batch of received bytes. */
static bool sink_maps(const struct sink *k)
{
	return k->mem && devmem_mem_kind(k->mem) != DEVMEM_MEM_CUDA &&
	       (k->o->have_pattern || k->out >= 0);
}

static void receive_devmem(struct sink *k, int s, struct progress *p)
{
	struct devmem_frag f;
	struct devmem_rx *rx;

	/* The one connection may fill the whole binding. */
	check(devmem_rx_limit_window(s, devmem_mem_size(k->mem)), "receive");
	check(devmem_rx_open(&rx, s, 0), "receive");
	/* fragments are read at their offsets: only the binding's, within it */
	check(devmem_rx_set_buffer(rx, k->dmabuf_id, devmem_mem_size(k->mem)), "receive");
	while (!k->o->bytes || k->t.bytes < k->o->bytes) {
		ssize_t n = devmem_rx_recv(rx, 0);
		uint8_t *map = NULL;
		int ret;

		check(n, "receive");
		if (!n)
			break;
		if (sink_maps(k))
			map = devmem_cpu_begin(k->mem, DEVMEM_CPU_READ);
		while ((ret = devmem_rx_next(rx, &f)) == 1) {
			if (f.dmabuf_id)
				sink_bytes(k, map ? map + f.offset : NULL, f.offset, f.len, true);
			else
				sink_bytes(k, f.linear, 0, f.len, false);
			check(devmem_rx_release(rx, &f), "token return");
		}
		check(ret, "receive");
		if (map)
			devmem_cpu_end(k->mem, DEVMEM_CPU_READ);
		check(devmem_rx_flush(rx), "token return");
		progress_update(p, k->t.bytes);
	}
	devmem_rx_close(rx);
}

static void receive_zcrx(struct sink *k, struct devmem_zcrx *z, int s, struct progress *p)
{
	struct devmem_zcrx_chunk c[256];
	bool eof = false;

	check(devmem_zcrx_recv(z, s), "io_uring receive");
	while (!eof && (!k->o->bytes || k->t.bytes < k->o->bytes)) {
		int n = devmem_zcrx_wait(z, c, sizeof(c) / sizeof(c[0]), 1000);
		uint8_t *map = NULL;

		check(n, "io_uring receive");
		if (sink_maps(k))
			map = devmem_cpu_begin(k->mem, DEVMEM_CPU_READ);
		for (int i = 0; i < n; i++) {
			if (!c[i].len) {
				eof = true;
				continue;
			}
			sink_bytes(k, c[i].data ? c[i].data : map ? map + c[i].offset : NULL,
				   c[i].offset, c[i].len, true);
			check(devmem_zcrx_release(z, &c[i]), "io_uring refill");
		}
		if (map)
			devmem_cpu_end(k->mem, DEVMEM_CPU_READ);
		progress_update(p, k->t.bytes);
	}
}

static int cmd_rx(int argc, char **argv)
{
	struct devmem_binding *binding = NULL;
	struct devmem_zcrx *z = NULL;
	struct devmem_nic *nic;
	struct progress p;
	struct xfer_opts o;
	struct sink k;
	uint32_t rule = 0;
	double secs;
	int s;

	parse_xfer(argc, argv, &o, true);
	k = (struct sink){ .o = &o, .out = -1 };
	if (o.output)
		k.out = strcmp(o.output, "-") ? open(o.output, O_WRONLY | O_CREAT | O_TRUNC, 0644)
					      : STDOUT_FILENO;
	if (o.output && k.out < 0)
		die("%s: %s", o.output, strerror(errno));
	if (o.mem.user && !o.zcrx)
		die("--mem user is for --zcrx: devmem bindings need a dma-buf");
	check(devmem_nic_open(&nic, o.ifname), NULL);
	if (o.steer)
		rule = steer_port(nic, o.v6, o.port, o.queue);
	if (!o.mem.user)
		k.mem = mem_alloc(o.mem, o.size);
	if (o.page_size > UINT32_MAX)
		die("--page-size %zu: at most 4G", o.page_size);
	if (o.zcrx) {
		check(devmem_zcrx_open_page_size(&z, nic, o.queue, k.mem, o.size,
						 (uint32_t)o.page_size), "io_uring zcrx");
		fprintf(stderr, "%s queue %u: io_uring zero-copy receive into %zu bytes of %s, "
			"%u-byte buffers\n", o.ifname, o.queue,
			k.mem ? devmem_mem_size(k.mem) : o.size, mem_name(o.mem),
			devmem_zcrx_page_size(z));
	} else {
		check(devmem_bind_rx_page_size(&binding, nic, k.mem, &o.queue, 1,
					       (uint32_t)o.page_size), "bind-rx");
		fprintf(stderr, "%s queue %u: %zu bytes of %s bound as dmabuf %u, %u-byte buffers\n",
			o.ifname, o.queue, devmem_mem_size(k.mem), mem_name(o.mem),
			devmem_binding_id(binding), devmem_binding_page_size(binding));
		k.dmabuf_id = devmem_binding_id(binding);
	}

	s = listen_accept(o.port, o.v6);
	progress_start(&p, "received", o.bytes);
	if (z)
		receive_zcrx(&k, z, s, &p);
	else
		receive_devmem(&k, s, &p);
	secs = progress_end(&p);
	close(s);
	devmem_zcrx_close(z);
	if (binding)
		devmem_unbind(binding);
	if (k.mem)
		devmem_mem_free(k.mem);
	if (o.steer)
		devmem_nic_flow_del(nic, rule);
	devmem_nic_close(nic, false);

	printf("received %" PRIu64 " bytes (%" PRIu64 " %s, %" PRIu64 " linear) in %" PRIu64
	       " fragments (largest %u), %.1f MB/s", k.t.bytes, k.t.dmabuf_bytes,
	       z ? "zero-copy" : "via dma-buf", k.t.linear_bytes, k.t.frags, k.t.largest,
	       secs > 0 ? k.t.bytes / secs / 1e6 : 0.0);
	if (o.have_pattern)
		printf(", %" PRIu64 " mismatched", k.t.bad);
	printf("\n");
	if (o.bytes && k.t.bytes != o.bytes)
		die("the stream ended after %" PRIu64 " of %" PRIu64 " bytes", k.t.bytes, o.bytes);
	if (k.t.bad) {
		fprintf(stderr, "%s: payload differs from pattern %" PRIu64 " first at offset %"
			PRIu64 "\n", prog, o.seed, k.t.first_bad);
		return EXIT_MISMATCH;
	}
	if (!z && !k.t.dmabuf_bytes && k.t.bytes)
		die("no byte arrived through the dma-buf: steer the flow to queue %u "
		    "(--steer, or a rule of your own)", o.queue);
	return 0;
}

static int connect_to(const char *addr, int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST };
	struct addrinfo *ai;
	char service[16];
	int s, err;

	snprintf(service, sizeof(service), "%d", port);
	err = getaddrinfo(addr, service, &hints, &ai);
	if (err)
		die("--addr %s: %s", addr, gai_strerror(err));
	s = socket(ai->ai_family, SOCK_STREAM, 0);
	if (s < 0)
		die("socket: %s", strerror(errno));
	if (connect(s, ai->ai_addr, ai->ai_addrlen))
		die("connect to %s port %d: %s", addr, port, strerror(errno));
	freeaddrinfo(ai);
	return s;
}

/* Fills @len bytes at @off of the dma-buf with the stream at @pos (pattern or stdin). */
static size_t fill(struct devmem_mem *mem, const struct xfer_opts *o, uint64_t off, size_t len,
		   uint64_t pos)
{
	static uint8_t buf[1 << 20];
	size_t done = 0;

	while (done < len) {
		size_t n = len - done < sizeof(buf) ? len - done : sizeof(buf);

		if (o->have_pattern) {
			pattern_fill(buf, n, o->seed, pos + done);
		} else {
			ssize_t r = read(STDIN_FILENO, buf, n);

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				die("reading stdin: %s", strerror(errno));
			if (!r)
				break;
			n = r;
		}
		check(devmem_mem_write(mem, off + done, buf, n), "filling the dma-buf");
		done += n;
	}
	return done;
}

static int cmd_tx(int argc, char **argv)
{
	struct devmem_binding *binding;
	struct devmem_mem *mem;
	struct devmem_nic *nic;
	struct devmem_tx *tx;
	struct xfer_opts o;
	struct progress p;
	uint32_t *slot_id, id;
	uint64_t sent = 0;
	size_t nslots, slot = 0;
	double secs;
	int s;

	parse_xfer(argc, argv, &o, false);
	if (o.mem.user || o.zcrx)
		die("tx sends from a dma-buf: --mem user and --zcrx are for rx");
	if (!o.have_pattern && isatty(STDIN_FILENO))
		die("nothing to send: give --pattern SEED or pipe data into stdin");
	nslots = o.size / o.chunk;
	slot_id = calloc(nslots, sizeof(*slot_id));
	if (!slot_id)
		die("out of memory");
	check(devmem_nic_open(&nic, o.ifname), NULL);
	mem = mem_alloc(o.mem, o.size);
	check(devmem_bind_tx(&binding, nic, mem), "bind-tx");
	id = devmem_binding_id(binding);
	s = connect_to(o.addr, o.port);
	check(devmem_tx_open(&tx, s, binding), "send");

	/*
	 * The dma-buf is a ring of chunk-sized slots. A slot is refilled only
	 * when every send from it has completed: until then the device may
	 * still read it.
	 */
	progress_start(&p, "sent", o.bytes);
	while (!o.bytes || sent < o.bytes) {
		uint64_t off = slot * o.chunk;
		size_t want = o.bytes && o.bytes - sent < o.chunk ? o.bytes - sent : o.chunk;
		size_t len, done = 0;

		if (sent >= (uint64_t)nslots * o.chunk)
			check(devmem_tx_wait(tx, slot_id[slot], 30000), "send");
		len = fill(mem, &o, off, want, sent);
		if (!len)
			break;
		while (done < len) {
			uint32_t zc_id;
			ssize_t n = devmem_tx_send(tx, off + done, len - done, 0, &zc_id);

			if (n == -ENOBUFS) {
				check(devmem_tx_reap(tx, 1000), "send");
				continue;
			}
			check(n, "send");
			done += n;
			slot_id[slot] = zc_id;
			devmem_tx_reap(tx, 0);
		}
		sent += len;
		slot = (slot + 1) % nslots;
		progress_update(&p, sent);
	}
	devmem_tx_close(tx, 30000);
	secs = progress_end(&p);
	close(s);
	devmem_unbind(binding);
	devmem_mem_free(mem);
	devmem_nic_close(nic, false);
	free(slot_id);
	printf("sent %" PRIu64 " bytes from dmabuf %u, all completed, %.1f MB/s\n", sent,
	       id, secs > 0 ? sent / secs / 1e6 : 0.0);
	if (o.bytes && sent != o.bytes)
		die("stdin ended after %" PRIu64 " of %" PRIu64 " bytes", sent, o.bytes);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "nic"))
		return cmd_nic(argc - 1, argv + 1);
	if (!strcmp(argv[1], "rx"))
		return cmd_rx(argc - 1, argv + 1);
	if (!strcmp(argv[1], "tx"))
		return cmd_tx(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		usage();
	fprintf(stderr, "%s: unknown command '%s'\n", prog, argv[1]);
	usage();
}
