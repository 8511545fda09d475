// SPDX-License-Identifier: GPL-2.0
/*
 * Drives libdevmem's nic and binding calls for nic.sh: reads one command a
 * line on stdin and answers one line on stdout, "ok ..." or "err ERRNO
 * MESSAGE" with devmem_last_error(). The script checks the kernel's state
 * with the real tools between commands, while this process keeps the NIC
 * handles and their undo logs.
 *
 *   open SLOT IFNAME | close SLOT [restore] | restore SLOT | state SLOT
 *   rss_ioctl SLOT (RSS through SIOCETHTOOL from now on)
 *   split SLOT on|off | queues SLOT N | ntuple SLOT on|off
 *   spread SLOT FIRST COUNT | ctx_add SLOT FIRST COUNT | ctx_del SLOT CTX
 *   flow SLOT 4|6 SRC DST SPORT DPORT QUEUE CTX   ("-" for a wildcard address)
 *   flow_find SLOT 4|6 SRC DST SPORT DPORT
 *   flow_del SLOT RULE | qlist SLOT | qstats SLOT QUEUE (-1: device)
 *   mem SIZE | heap SIZE | bind_rx BSLOT SLOT Q[,Q...] [PAGE_SIZE]
 *   bind_tx BSLOT SLOT | unbind BSLOT
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "devmem.h"

/* libdevmem internal (internal.h): RSS through SIOCETHTOOL, as on kernels
 * without ethtool netlink RSS_SET, to test that path on this one. */
void devmem_nic_rss_use_ioctl(struct devmem_nic *nic);

#define SLOTS 4
static struct devmem_nic *nics[SLOTS];
static struct devmem_binding *bindings[SLOTS];
static struct devmem_mem *mem;

static void reply(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(int err, const char *fmt, ...)
{
	va_list ap;

	if (err < 0) {
		printf("err %d %s\n", -err, devmem_last_error());
	} else {
		printf("ok");
		if (fmt) {
			putchar(' ');
			va_start(ap, fmt);
			vprintf(fmt, ap);
			va_end(ap);
		}
		putchar('\n');
	}
	fflush(stdout);
}

static int slot(const char *s)
{
	int i = s ? atoi(s) : -1;

	return i >= 0 && i < SLOTS ? i : 0;
}

static void addr(int family, const char *s, uint8_t *out)
{
	memset(out, 0, 16);
	if (strcmp(s, "-"))
		inet_pton(family, s, out);
}

static void command(char *line)
{
	char *argv[12] = { 0 };
	int argc = 0, s, err;
	char *tok, *save;

	for (tok = strtok_r(line, " \t\n", &save); tok && argc < 12;
	     tok = strtok_r(NULL, " \t\n", &save))
		argv[argc++] = tok;
	if (!argc)
		return;
	s = slot(argv[1]);
	if (!strcmp(argv[0], "open")) {
		reply(devmem_nic_open(&nics[s], argv[2]), NULL);
	} else if (!strcmp(argv[0], "close")) {
		devmem_nic_close(nics[s], argc > 2 && !strcmp(argv[2], "restore"));
		nics[s] = NULL;
		reply(0, NULL);
	} else if (!strcmp(argv[0], "rss_ioctl")) {
		devmem_nic_rss_use_ioctl(nics[s]);
		reply(0, NULL);
	} else if (!strcmp(argv[0], "restore")) {
		reply(devmem_nic_restore(nics[s]), NULL);
	} else if (!strcmp(argv[0], "state")) {
		struct devmem_nic_state st;

		err = devmem_nic_state(nics[s], &st);
		reply(err, "queues %u max %u split %d thresh %u thresh_max %u ntuple %d indir %u",
		      st.rx_queues, st.max_queues, st.header_split, st.hds_thresh,
		      st.hds_thresh_max, st.ntuple, st.rss_indir_size);
	} else if (!strcmp(argv[0], "split") && argc == 3) {
		reply(devmem_nic_set_header_split(nics[s], !strcmp(argv[2], "on")), NULL);
	} else if (!strcmp(argv[0], "queues") && argc == 3) {
		reply(devmem_nic_set_queues(nics[s], strtoul(argv[2], NULL, 0)), NULL);
	} else if (!strcmp(argv[0], "ntuple") && argc == 3) {
		reply(devmem_nic_set_ntuple(nics[s], !strcmp(argv[2], "on")), NULL);
	} else if (!strcmp(argv[0], "spread") && argc == 4) {
		reply(devmem_nic_rss_spread(nics[s], strtoul(argv[2], NULL, 0),
					    strtoul(argv[3], NULL, 0)), NULL);
	} else if (!strcmp(argv[0], "ctx_add") && argc == 4) {
		uint32_t ctx = 0;

		err = devmem_nic_rss_ctx_add(nics[s], strtoul(argv[2], NULL, 0),
					     strtoul(argv[3], NULL, 0), &ctx);
		reply(err, "ctx %u", ctx);
	} else if (!strcmp(argv[0], "ctx_del") && argc == 3) {
		reply(devmem_nic_rss_ctx_del(nics[s], strtoul(argv[2], NULL, 0)), NULL);
	} else if ((!strcmp(argv[0], "flow") && argc == 9) ||
		   (!strcmp(argv[0], "flow_find") && argc == 7)) {
		struct devmem_flow f = { .family = !strcmp(argv[2], "6") ? AF_INET6 : AF_INET };
		struct devmem_flow_target t;
		uint32_t rule = 0;

		addr(f.family, argv[3], f.src);
		addr(f.family, argv[4], f.dst);
		f.sport = atoi(argv[5]);
		f.dport = atoi(argv[6]);
		if (argc == 9) {
			t.queue = strtoul(argv[7], NULL, 0);
			t.rss_ctx = strtoul(argv[8], NULL, 0);
			err = devmem_nic_flow_add(nics[s], &f, &t, &rule);
		} else {
			err = devmem_nic_flow_find(nics[s], &f, &rule);
		}
		reply(err, "rule %u", rule);
	} else if (!strcmp(argv[0], "flow_del") && argc == 3) {
		reply(devmem_nic_flow_del(nics[s], strtoul(argv[2], NULL, 0)), NULL);
	} else if (!strcmp(argv[0], "qlist")) {
		struct devmem_queue_info q[64];
		char buf[2048] = "";
		int n, i, len = 0;

		n = devmem_nic_queues(nics[s], q, 64);
		for (i = 0; i < n && i < 64; i++)
			len += snprintf(buf + len, sizeof(buf) - len, " %s%u:napi=%s:dmabuf=%u:uring=%d",
					q[i].rx ? "rx" : "tx", q[i].id, q[i].napi_id ? "y" : "n",
					q[i].dmabuf_id, q[i].io_uring);
		reply(n, "%d%s", n, buf);
	} else if (!strcmp(argv[0], "qstats") && argc == 3) {
		struct devmem_qstats st = { 0 };

		err = devmem_nic_qstats(nics[s], atoi(argv[2]), &st);
		reply(err, "rx_packets %llu rx_bytes %llu rx_alloc_fail %llu tx_packets %llu "
		      "tx_bytes %llu", (unsigned long long)st.rx_packets,
		      (unsigned long long)st.rx_bytes, (unsigned long long)st.rx_alloc_fail,
		      (unsigned long long)st.tx_packets, (unsigned long long)st.tx_bytes);
	} else if (!strcmp(argv[0], "mem") && argc == 2) {
		err = devmem_mem_udmabuf(&mem, strtoul(argv[1], NULL, 0), 0);
		reply(err, "fd %d", err ? -1 : devmem_mem_fd(mem));
	} else if (!strcmp(argv[0], "heap") && argc == 2) {
		err = devmem_mem_heap(&mem, NULL, strtoul(argv[1], NULL, 0));
		reply(err, "fd %d", err ? -1 : devmem_mem_fd(mem));
	} else if (!strcmp(argv[0], "bind_rx") && (argc == 4 || argc == 5)) {
		unsigned int q[16], n = 0;
		char *p = argv[3];

		while (n < 16 && *p) {
			q[n++] = strtoul(p, &p, 0);
			if (*p == ',')
				p++;
		}
		if (argc == 5)
			err = devmem_bind_rx_page_size(&bindings[s], nics[slot(argv[2])], mem, q, n,
						       strtoul(argv[4], NULL, 0));
		else
			err = devmem_bind_rx(&bindings[s], nics[slot(argv[2])], mem, q, n);
		reply(err, "id %u page %u", err ? 0 : devmem_binding_id(bindings[s]),
		      err ? 0 : devmem_binding_page_size(bindings[s]));
		if (!err && devmem_binding_mem(bindings[s]) != mem)
			printf("# devmem_binding_mem is not the memory bound\n");
	} else if (!strcmp(argv[0], "bind_tx") && argc == 3) {
		err = devmem_bind_tx(&bindings[s], nics[slot(argv[2])], mem);
		reply(err, "id %u", err ? 0 : devmem_binding_id(bindings[s]));
	} else if (!strcmp(argv[0], "unbind")) {
		devmem_unbind(bindings[s]);
		bindings[s] = NULL;
		reply(0, NULL);
	} else {
		printf("err %d unknown command or arguments: %s\n", EINVAL, argv[0]);
		fflush(stdout);
	}
}

int main(void)
{
	char line[512];
	int i;

	while (fgets(line, sizeof(line), stdin))
		command(line);
	for (i = 0; i < SLOTS; i++) {
		devmem_unbind(bindings[i]);
		devmem_nic_close(nics[i], true);
	}
	return 0;
}
