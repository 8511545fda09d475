// SPDX-License-Identifier: GPL-2.0
/*
 * A TCP stream with a verifiable payload: the sender writes a seeded
 * pseudo-random pattern, the receiver checks every byte against its offset
 * in the stream and reports mismatches, bytes and throughput.
 *
 *   tcp_stream recv [-6] -p PORT -n BYTES [-s SEED] [-V] [-R]
 *   tcp_stream send [-6] -a ADDR -p PORT -n BYTES [-s SEED] [-R]
 *
 *   -V  (recv) count the bytes but do not check them, for benchmarks
 *   -R  the connection is reset when the process exits or is killed
 *       (SO_LINGER 0), so that no orphaned socket outlives it
 *
 * Exit status: 0 when all BYTES arrived (intact, unless -V), 1 otherwise,
 * 2 on usage. The receiver's last line, "stats ...", gives the receive's CPU
 * time (getrusage) and read() calls, for benchmarks.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "devtcp/pattern.h"

#define BUF_SIZE (256 * 1024)

static void usage(void)
{
	fprintf(stderr, "usage: tcp_stream recv [-6] -p PORT -n BYTES [-s SEED] [-V] [-R]\n"
			"       tcp_stream send [-6] -a ADDR -p PORT -n BYTES [-s SEED] [-R]\n");
	exit(2);
}

static int make_addr(int v6, const char *addr, int port, struct sockaddr_storage *ss,
		     socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		*len = sizeof(*s6);
		return addr ? inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1 : 1;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	s4->sin_family = AF_INET;
	s4->sin_port = htons(port);
	*len = sizeof(*s4);
	return addr ? inet_pton(AF_INET, addr, &s4->sin_addr) == 1 : 1;
}

/* -R: closing @s, at exit too, resets the connection at once. */
static int reset_on_close;

static void set_reset_on_close(int s)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	if (reset_on_close && setsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof(l)))
		perror("tcp_stream: SO_LINGER");
}

static double tv_secs(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

static int do_recv(int v6, int port, uint64_t total, uint64_t seed, int validate)
{
	struct sockaddr_storage ss;
	struct rusage ru0, ru1;
	socklen_t len;
	uint64_t got = 0, bad = 0, first_bad = 0, calls = 0;
	static uint8_t buf[BUF_SIZE], want[BUF_SIZE];
	int one = 1, ls, s;
	double t0;

	make_addr(v6, NULL, port, &ss, &len);
	ls = socket(ss.ss_family, SOCK_STREAM, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&ss, len) || listen(ls, 1)) {
		perror("tcp_stream: listen");
		return 1;
	}
	/* Tell a waiting script that we listen. */
	printf("listening on port %d\n", port);
	fflush(stdout);
	s = accept(ls, NULL, NULL);
	if (s < 0) {
		perror("tcp_stream: accept");
		return 1;
	}
	set_reset_on_close(s);
	getrusage(RUSAGE_SELF, &ru0);
	t0 = now();
	while (got < total) {
		ssize_t n = read(s, buf, sizeof(buf));

		calls++;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "tcp_stream: %s after %llu of %llu bytes\n",
				n ? strerror(errno) : "connection closed",
				(unsigned long long)got, (unsigned long long)total);
			break;
		}
		if (!validate) {
			got += n;
			continue;
		}
		pattern_fill(want, n, seed, got);
		if (memcmp(buf, want, n)) {
			for (ssize_t i = 0; i < n; i++) {
				if (buf[i] != want[i] && !bad++)
					first_bad = got + i;
			}
		}
		got += n;
	}
	double secs = now() - t0;

	getrusage(RUSAGE_SELF, &ru1);
	printf("received %llu bytes, %llu mismatched", (unsigned long long)got,
	       (unsigned long long)bad);
	if (bad)
		printf(" (first at offset %llu)", (unsigned long long)first_bad);
	printf(", %.1f MB/s%s\n", secs > 0 ? got / secs / 1e6 : 0.0,
	       validate ? "" : " (not validated)");
	/* Every byte went through read(): all of them were copied. */
	printf("stats bytes %llu secs %.3f utime %.3f stime %.3f recv_calls %llu "
	       "dontneed_calls 0 copied %llu\n", (unsigned long long)got, secs,
	       tv_secs(ru1.ru_utime) - tv_secs(ru0.ru_utime),
	       tv_secs(ru1.ru_stime) - tv_secs(ru0.ru_stime),
	       (unsigned long long)calls, (unsigned long long)got);
	close(s);
	close(ls);
	return got == total && !bad ? 0 : 1;
}

static int do_send(int v6, const char *addr, int port, uint64_t total, uint64_t seed)
{
	struct sockaddr_storage ss;
	static uint8_t buf[BUF_SIZE];
	uint64_t sent = 0;
	socklen_t len;
	int s, tries;

	if (!addr || !make_addr(v6, addr, port, &ss, &len)) {
		fprintf(stderr, "tcp_stream: bad address %s\n", addr ? addr : "(none)");
		return 2;
	}
	s = socket(ss.ss_family, SOCK_STREAM, 0);
	set_reset_on_close(s);
	/* The receiver may still be starting: retry for up to 10 s. */
	for (tries = 0; connect(s, (struct sockaddr *)&ss, len); tries++) {
		if (tries == 100 || (errno != ECONNREFUSED && errno != ENETUNREACH)) {
			perror("tcp_stream: connect");
			return 1;
		}
		usleep(100000);
	}
	double t0 = now();

	while (sent < total) {
		size_t chunk = total - sent < BUF_SIZE ? total - sent : BUF_SIZE;
		ssize_t n;

		pattern_fill(buf, chunk, seed, sent);
		n = write(s, buf, chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			perror("tcp_stream: write");
			return 1;
		}
		sent += n;
	}
	shutdown(s, SHUT_WR);
	/* Wait for the receiver to close: every byte was taken. */
	while (read(s, buf, sizeof(buf)) > 0)
		;
	double secs = now() - t0;

	printf("sent %llu bytes, %.1f MB/s\n", (unsigned long long)sent,
	       secs > 0 ? sent / secs / 1e6 : 0.0);
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	const char *addr = NULL;
	uint64_t total = 0, seed = 1;
	int v6 = 0, port = 0, validate = 1, opt;

	if (argc < 2)
		usage();
	optind = 2;
	while ((opt = getopt(argc, argv, "6a:p:n:s:VR")) != -1) {
		switch (opt) {
		case '6': v6 = 1; break;
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'n': total = strtoull(optarg, NULL, 0); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'V': validate = 0; break;
		case 'R': reset_on_close = 1; break;
		default: usage();
		}
	}
	if (port <= 0 || port > 65535 || !total)
		usage();
	if (!strcmp(argv[1], "recv"))
		return do_recv(v6, port, total, seed, validate);
	if (!strcmp(argv[1], "send"))
		return do_send(v6, addr, port, total, seed);
	usage();
	return 2;
}
