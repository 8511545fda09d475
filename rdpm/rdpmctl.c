// SPDX-License-Identifier: GPL-2.0
/*
 * rdpmctl: talks to rdpmd.
 *
 *   rdpmctl [-s SOCKET] status [--json]   NICs, reserved queues, bindings, flows, clients
 *   rdpmctl [-s SOCKET] drain IFNAME      remove every binding and flow on IFNAME
 *   rdpmctl [-s SOCKET] reload            re-read the configuration file
 *
 * Exit status: 0 done, 1 rdpmd refused or is unreachable, 2 usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rdpm/rdpm_proto.h>

static int sock;

static void usage(void)
{
	fprintf(stderr, "usage: rdpmctl [-s SOCKET] status [--json]\n"
			"       rdpmctl [-s SOCKET] drain IFNAME\n"
			"       rdpmctl [-s SOCKET] reload\n");
	exit(2);
}

/* Sends request @type and waits for its reply, skipping events; returns
 * the reply body (malloc'ed) and its length, or exits with rdpmd's error. */
static char *request(uint16_t type, const void *body, size_t len, size_t *rlen)
{
	static uint32_t id;
	struct rdpm_hdr h = { RDPM_MAGIC, RDPM_VERSION, type, sizeof(h) + len, ++id };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)body, len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	char *buf = malloc(RDPM_MAX_STATUS);
	struct rdpm_hdr r;
	ssize_t n;

	if (!buf || sendmsg(sock, &mh, MSG_NOSIGNAL) < 0) {
		fprintf(stderr, "rdpmctl: send: %s\n", strerror(errno));
		exit(1);
	}
	for (;;) {
		n = recv(sock, buf, RDPM_MAX_STATUS, 0);
		if (n < (ssize_t)sizeof(r)) {
			fprintf(stderr, "rdpmctl: rdpmd closed the connection or sent garbage\n");
			exit(1);
		}
		memcpy(&r, buf, sizeof(r));
		if (r.magic != RDPM_MAGIC || r.length != (size_t)n) {
			fprintf(stderr, "rdpmctl: malformed reply\n");
			exit(1);
		}
		if (r.type == RDPM_EVENT)
			continue;
		if (r.id != h.id)
			continue;
		break;
	}
	if (r.type == RDPM_ERROR) {
		struct rdpm_error e;

		if ((size_t)n < sizeof(r) + sizeof(e) + 1) {
			fprintf(stderr, "rdpmctl: malformed error reply\n");
			exit(1);
		}
		memcpy(&e, buf + sizeof(r), sizeof(e));
		buf[n - 1] = 0;
		fprintf(stderr, "rdpmctl: %s (%s)\n", buf + sizeof(r) + sizeof(e), strerror(-e.err));
		exit(1);
	}
	if (r.type != (type | RDPM_REPLY)) {
		fprintf(stderr, "rdpmctl: unexpected reply type %u\n", r.type);
		exit(1);
	}
	*rlen = n - sizeof(r);
	memmove(buf, buf + sizeof(r), *rlen);
	return buf;
}

int main(int argc, char **argv)
{
	const char *path = RDPM_DEFAULT_SOCKET;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct rdpm_hello hello = { RDPM_VERSION, RDPM_VERSION, 0 };
	size_t len;
	char *out;
	int i = 1;

	if (i + 1 < argc && !strcmp(argv[i], "-s")) {
		path = argv[i + 1];
		i += 2;
	}
	if (i >= argc)
		usage();
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "rdpmctl: socket path too long\n");
		return 2;
	}
	strcpy(sa.sun_path, path);
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "rdpmctl: %s: %s (is rdpmd running?)\n", path, strerror(errno));
		return 1;
	}
	free(request(RDPM_HELLO, &hello, sizeof(hello), &len));
	if (!strcmp(argv[i], "status") && (argc == i + 1 ||
	    (argc == i + 2 && !strcmp(argv[i + 1], "--json")))) {
		struct rdpm_status st = { argc == i + 2 ? RDPM_STATUS_JSON : 0 };

		out = request(RDPM_STATUS, &st, sizeof(st), &len);
		if (!len || out[len - 1]) {
			fprintf(stderr, "rdpmctl: malformed status reply\n");
			return 1;
		}
		fputs(out, stdout);
		free(out);
	} else if (!strcmp(argv[i], "drain") && argc == i + 2) {
		struct rdpm_drain d = { { 0 } };

		if (strlen(argv[i + 1]) >= sizeof(d.ifname))
			usage();
		strcpy(d.ifname, argv[i + 1]);
		free(request(RDPM_DRAIN, &d, sizeof(d), &len));
		printf("%s drained\n", d.ifname);
	} else if (!strcmp(argv[i], "reload") && argc == i + 1) {
		free(request(RDPM_RELOAD, NULL, 0, &len));
		printf("configuration reloaded\n");
	} else {
		usage();
	}
	close(sock);
	return 0;
}
