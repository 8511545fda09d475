// SPDX-License-Identifier: GPL-2.0
/* rdpm_conf_parse(): defaults, every key, and errors naming their line. */
#include <errno.h>
#include <string.h>

#include "devtcp/check.h"
#include "config.h"

int main(void)
{
	static struct rdpm_conf c;
	const struct rdpm_nic_conf *n;
	char err[256];
	int r;

	r = rdpm_conf_parse("", &c, err, sizeof(err));
	CHECK(r == 0 && c.nnics == 0 && !strcmp(c.socket, "/run/rdpm/rdpm.sock"), "empty");
	r = rdpm_conf_parse("# comment\n[global]\nsocket = /tmp/x.sock\nadmin_users = 0, 7\n"
			    "max_clients = 5\n\n[nic eth1]\nreserve = 4\nqueues_per_binding = 2\n"
			    "users = root, 1000\ngroups = 0\nmax_rules = 3\nmax_bytes = 2G\n"
			    "shared_bytes = 0\nlow_port_users = *\n[nic eth2]\n", &c, err, sizeof(err));
	CHECK(r == 0, "full: %s", err);
	CHECK(!strcmp(c.socket, "/tmp/x.sock") && c.max_clients == 5, "global");
	CHECK(rdpm_idlist_has(&c.admin_users, 7) && !rdpm_idlist_has(&c.admin_users, 8), "admins");
	n = rdpm_conf_nic(&c, "eth1");
	CHECK(n && n->reserve == 4 && n->queues_per_binding == 2 && n->max_rules == 3 &&
	      n->max_bytes == 2ull << 30 && n->shared_bytes == 0, "nic keys");
	CHECK(n && rdpm_idlist_has(&n->users, 0) && rdpm_idlist_has(&n->users, 1000) &&
	      !rdpm_idlist_has(&n->users, 1001), "users");
	CHECK(n && rdpm_idlist_has(&n->low_port_users, 12345), "*");
	CHECK(c.max_clients_per_user == 5 && c.hello_timeout_ms == 5000,
	      "max_clients_per_user follows a smaller max_clients; hello_timeout_ms default");
	r = rdpm_conf_parse("[global]\nmax_clients = 100\nmax_clients_per_user = 7\n"
			    "hello_timeout_ms = 250\n[nic a]\nreserve = 3\n", &c, err, sizeof(err));
	CHECK(r == 0 && c.max_clients_per_user == 7 && c.hello_timeout_ms == 250, "limits: %s", err);
	CHECK(rdpm_conf_fds(&c) == 32 + 100 + RDPM_ADMIN_SLOTS + 1024 + RDPM_CLOSER_HELD +
	      RDPM_CLOSER_INFLIGHT + RDPM_CLOSER_STUCK + 8 + 2 * 3, "fds: %lu", rdpm_conf_fds(&c));
	r = rdpm_conf_parse("[global]\nmax_clients = 64\n", &c, err, sizeof(err));
	CHECK(r == 0 && c.max_clients_per_user == 16, "max_clients_per_user default");
	r = rdpm_conf_parse("[nic eth2]\n", &c, err, sizeof(err));
	n = rdpm_conf_nic(&c, "eth2");
	CHECK(n && n->reserve == 2 && n->max_rules == 64 && n->max_bytes == 1ull << 30 &&
	      n->shared_bytes == 256ull << 20 && !n->users.n && !n->users.any, "nic defaults");

	/* The global caps and the dma-buf exporters. */
	r = rdpm_conf_parse("", &c, err, sizeof(err));
	CHECK(r == 0 && c.max_preauth == 16 && c.max_preauth_per_user == 2 &&
	      c.max_proven_flows == 256 && c.max_bindings == 256 &&
	      c.max_joins_per_client == 4 && c.max_joins_per_user == 16, "cap defaults");
	CHECK(rdpm_namelist_has(&c.dmabuf_exporters, "udmabuf") &&
	      rdpm_namelist_has(&c.dmabuf_exporters, "system") &&
	      rdpm_namelist_has(&c.dmabuf_exporters, "nv_dmabuf") &&
	      !rdpm_namelist_has(&c.dmabuf_exporters, "i915") && c.dmabuf_exporters.n == 3,
	      "dmabuf_exporters default: udmabuf, system, nv_dmabuf");
	r = rdpm_conf_parse("[global]\nmax_clients = 10\n", &c, err, sizeof(err));
	CHECK(r == 0 && c.max_preauth == 10, "max_preauth follows a smaller max_clients");
	r = rdpm_conf_parse("[global]\nmax_preauth = 1\n", &c, err, sizeof(err));
	CHECK(r == 0 && c.max_preauth_per_user == 1,
	      "max_preauth_per_user follows a smaller max_preauth: %s", err);
	r = rdpm_conf_parse("[global]\nmax_preauth_per_user = 5\nmax_proven_flows = 4096\n", &c,
			    err, sizeof(err));
	CHECK(r == 0 && c.max_preauth_per_user == 5 && c.max_proven_flows == 4096,
	      "max_preauth_per_user, max_proven_flows: %s", err);
	r = rdpm_conf_parse("[global]\nmax_preauth = 3\nmax_bindings = 9\n"
			    "max_joins_per_client = 2\nmax_joins_per_user = 5\n"
			    "dmabuf_exporters = udmabuf\n", &c, err, sizeof(err));
	CHECK(r == 0 && c.max_preauth == 3 && c.max_bindings == 9 &&
	      c.max_joins_per_client == 2 && c.max_joins_per_user == 5, "caps: %s", err);
	CHECK(rdpm_namelist_has(&c.dmabuf_exporters, "udmabuf") &&
	      !rdpm_namelist_has(&c.dmabuf_exporters, "system"), "dmabuf_exporters = udmabuf");

	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "[global]\nmax_preauth = 0\n", "line 2: max_preauth: 1 to 4096" },
		{ "[global]\nmax_clients = 4\nmax_preauth = 5\n", "max_preauth 5 exceeds" },
		{ "[global]\nmax_bindings = 0\n", "line 2: max_bindings" },
		{ "[global]\nmax_preauth = 3\nmax_preauth_per_user = 4\n",
		  "max_preauth_per_user 4 exceeds max_preauth 3" },
		{ "[global]\nmax_preauth_per_user = 0\n", "line 2: max_preauth_per_user: 1 to" },
		{ "[global]\nmax_proven_flows = 4097\n", "line 2: max_proven_flows: 1 to 4096" },
		{ "[global]\nmax_joins_per_client = 0\n", "line 2: max_joins_per_client" },
		{ "[global]\nmax_joins_per_user = x\n", "line 2: max_joins_per_user" },
		{ "[global]\ndmabuf_exporters = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
		  "line 2: dmabuf_exporters" },
		{ "key = 1\n", "line 1: \"key\" outside a section" },
		{ "[global]\nbogus = 1\n", "line 2: unknown key" },
		{ "[nic eth1]\nreserve = 0\n", "line 2: reserve" },
		{ "[nic eth1]\nreserve = x\n", "line 2: reserve" },
		{ "[nic eth1]\nmax_bytes = 5Q\n", "line 2: max_bytes" },
		{ "[nic eth1]\nmax_bytes = 99999999999999999999\n", "line 2: max_bytes" },
		{ "[nic eth1]\nshared_bytes = 1X\n", "line 2: shared_bytes" },
		{ "[nic eth1]\nusers = no-such-user-here\n", "line 2: users" },
		{ "[nic eth1]\n[nic eth1]\n", "line 2: [nic eth1] appears twice" },
		{ "[nic a/b]\n", "line 1: bad interface name" },
		{ "[nic averyveryverylongname]\n", "line 1: bad interface name" },
		{ "[nics eth1]\n", "line 1: unknown section" },
		{ "[global\n", "line 1: a section is" },
		{ "[global]\nsocket = relative\n", "line 2: socket" },
		{ "[nic e]\nreserve = 2\nqueues_per_binding = 3\n", "queues_per_binding 3 exceeds" },
		{ "[global]\nnovalue\n", "line 2: expected key = value" },
		{ "[global]\nmax_clients_per_user = 0\n", "line 2: max_clients_per_user" },
		{ "[global]\nmax_clients = 4\nmax_clients_per_user = 5\n",
		  "max_clients_per_user 5 exceeds max_clients 4" },
		{ "[global]\nhello_timeout_ms = 5\n", "line 2: hello_timeout_ms: 10 to" },
		{ "[global]\nhello_timeout_ms = 600001\n", "line 2: hello_timeout_ms" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		r = rdpm_conf_parse(bad[i].text, &c, err, sizeof(err));
		CHECK(r == -EINVAL && strstr(err, bad[i].msg), "%zu: %d \"%s\"", i, r, err);
	}
	return check_done("t_config");
}
