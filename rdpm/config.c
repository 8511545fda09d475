// SPDX-License-Identifier: GPL-2.0
/*
 * The configuration file: "key = value" lines, '#' comments, sections
 * "[global]" and "[nic NAME]". Unknown keys and sections are errors, so a
 * typo cannot silently open access.
 */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "config.h"
#include "proto.h"

static int fail(char *err, size_t errlen, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "line %d: ", line);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

static bool parse_u64(const char *s, uint64_t max, uint64_t *out, bool suffixes)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return false;
	if (suffixes && *end) {
		unsigned int shift = 0;

		switch (*end) {
		case 'K': case 'k': shift = 10; break;
		case 'M': case 'm': shift = 20; break;
		case 'G': case 'g': shift = 30; break;
		case 'T': case 't': shift = 40; break;
		default: return false;
		}
		end++;
		if (v > (UINT64_MAX >> shift))
			return false;
		v <<= shift;
	}
	if (*end || v > max)
		return false;
	*out = v;
	return true;
}

/* "root, 1000, alice" or "*". */
static bool parse_ids(char *v, struct rdpm_idlist *l, bool groups)
{
	char *save = NULL, *tok;

	memset(l, 0, sizeof(*l));
	for (tok = strtok_r(v, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		uint64_t id;

		if (!strcmp(tok, "*")) {
			l->any = true;
			continue;
		}
		if (l->n == RDPM_CONF_MAX_IDS)
			return false;
		if (parse_u64(tok, UINT32_MAX - 1, &id, false)) {
			l->id[l->n++] = id;
		} else if (groups) {
			struct group *g = getgrnam(tok);

			if (!g)
				return false;
			l->id[l->n++] = g->gr_gid;
		} else {
			struct passwd *p = getpwnam(tok);

			if (!p)
				return false;
			l->id[l->n++] = p->pw_uid;
		}
	}
	return true;
}

/* "udmabuf, system". */
static bool parse_names(char *v, struct rdpm_namelist *l)
{
	char *save = NULL, *tok;

	memset(l, 0, sizeof(*l));
	for (tok = strtok_r(v, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		if (l->n == RDPM_CONF_MAX_IDS || strlen(tok) >= RDPM_CONF_NAME)
			return false;
		snprintf(l->name[l->n++], RDPM_CONF_NAME, "%s", tok);
	}
	return true;
}

bool rdpm_namelist_has(const struct rdpm_namelist *l, const char *name)
{
	for (unsigned int i = 0; i < l->n; i++)
		if (!strcmp(l->name[i], name))
			return true;
	return false;
}

bool rdpm_idlist_has(const struct rdpm_idlist *l, uint32_t id)
{
	if (l->any)
		return true;
	for (unsigned int i = 0; i < l->n; i++)
		if (l->id[i] == id)
			return true;
	return false;
}

const struct rdpm_nic_conf *rdpm_conf_nic(const struct rdpm_conf *c, const char *name)
{
	for (unsigned int i = 0; i < c->nnics; i++)
		if (!strcmp(c->nics[i].name, name))
			return &c->nics[i];
	return NULL;
}

static void defaults(struct rdpm_conf *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->socket, sizeof(c->socket), "%s", RDPM_DEFAULT_SOCKET);
	snprintf(c->state_dir, sizeof(c->state_dir), "/run/rdpm");
	c->max_clients = 64;
	c->max_clients_per_user = 16;
	c->hello_timeout_ms = 5000;
	c->max_preauth = 16;
	c->max_preauth_per_user = 2;
	c->max_bindings = 256;
	c->max_proven_flows = 256;
	c->max_joins_per_client = 4;
	c->max_joins_per_user = 16;
	/* udmabuf, the system dma-heap, CUDA memory (libdevmem's providers). */
	char deflt[] = "udmabuf, system, nv_dmabuf";

	parse_names(deflt, &c->dmabuf_exporters);
}

static void nic_defaults(struct rdpm_nic_conf *n)
{
	n->reserve = 2;
	n->max_rules = 64;
	n->max_bytes = 1ull << 30;
	n->shared_bytes = 256ull << 20;
}

int rdpm_conf_parse(const char *text, struct rdpm_conf *c, char *err, size_t errlen)
{
	struct rdpm_nic_conf *nic = NULL;
	bool global = false, per_user_set = false, preauth_set = false, preauth_user_set = false;
	const char *p = text;
	char line[512];
	int lineno = 0;

	defaults(c);
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char *s, *eq, *key, *val;
		uint64_t u;

		lineno++;
		if (n >= sizeof(line))
			return fail(err, errlen, lineno, "longer than %zu characters", sizeof(line) - 1);
		memcpy(line, p, n);
		line[n] = 0;
		p += n + (nl ? 1 : 0);
		if ((s = strchr(line, '#')))
			*s = 0;
		s = trim(line);
		if (!*s)
			continue;
		if (*s == '[') {
			char *e = strchr(s, ']');

			if (!e || e[1])
				return fail(err, errlen, lineno, "a section is [global] or [nic NAME]");
			*e = 0;
			s = trim(s + 1);
			if (!strcmp(s, "global")) {
				global = true;
				nic = NULL;
				continue;
			}
			if (strncmp(s, "nic", 3) || !isspace((unsigned char)s[3]))
				return fail(err, errlen, lineno, "unknown section [%s]", s);
			s = trim(s + 4);
			char name[16] = { 0 };

			if (strlen(s) < sizeof(name))
				memcpy(name, s, strlen(s));
			if (strlen(s) >= sizeof(name) || !rdpm_ifname_ok(name, sizeof(name)))
				return fail(err, errlen, lineno, "bad interface name \"%s\"", s);
			if (rdpm_conf_nic(c, s))
				return fail(err, errlen, lineno, "[nic %s] appears twice", s);
			if (c->nnics == RDPM_CONF_MAX_NICS)
				return fail(err, errlen, lineno, "more than %d NICs", RDPM_CONF_MAX_NICS);
			nic = &c->nics[c->nnics++];
			nic_defaults(nic);
			memset(nic->name, 0, sizeof(nic->name));
			memcpy(nic->name, s, strlen(s));
			global = false;
			continue;
		}
		eq = strchr(s, '=');
		if (!eq)
			return fail(err, errlen, lineno, "expected key = value");
		*eq = 0;
		key = trim(s);
		val = trim(eq + 1);
		if (!nic && !global)
			return fail(err, errlen, lineno, "\"%s\" outside a section", key);
		if (global) {
			if (!strcmp(key, "socket")) {
				if (val[0] != '/' || strlen(val) >= sizeof(c->socket))
					return fail(err, errlen, lineno, "socket: an absolute path of "
						    "at most %zu characters", sizeof(c->socket) - 1);
				snprintf(c->socket, sizeof(c->socket), "%s", val);
			} else if (!strcmp(key, "state_dir")) {
				if (val[0] != '/' || strlen(val) >= sizeof(c->state_dir))
					return fail(err, errlen, lineno, "state_dir: an absolute path "
						    "of at most %zu characters",
						    sizeof(c->state_dir) - 1);
				snprintf(c->state_dir, sizeof(c->state_dir), "%s", val);
			} else if (!strcmp(key, "max_clients")) {
				if (!parse_u64(val, 4096, &u, false) || !u)
					return fail(err, errlen, lineno, "max_clients: 1 to 4096");
				c->max_clients = u;
			} else if (!strcmp(key, "max_clients_per_user")) {
				if (!parse_u64(val, 4096, &u, false) || !u)
					return fail(err, errlen, lineno, "max_clients_per_user: 1 to "
						    "4096");
				c->max_clients_per_user = u;
				per_user_set = true;
			} else if (!strcmp(key, "max_preauth")) {
				if (!parse_u64(val, 4096, &u, false) || !u)
					return fail(err, errlen, lineno, "max_preauth: 1 to 4096");
				c->max_preauth = u;
				preauth_set = true;
			} else if (!strcmp(key, "max_preauth_per_user")) {
				if (!parse_u64(val, 4096, &u, false) || !u)
					return fail(err, errlen, lineno, "max_preauth_per_user: 1 to "
						    "4096");
				c->max_preauth_per_user = u;
				preauth_user_set = true;
			} else if (!strcmp(key, "max_bindings")) {
				if (!parse_u64(val, 65536, &u, false) || !u)
					return fail(err, errlen, lineno, "max_bindings: 1 to 65536");
				c->max_bindings = u;
			} else if (!strcmp(key, "max_proven_flows")) {
				if (!parse_u64(val, 4096, &u, false) || !u)
					return fail(err, errlen, lineno, "max_proven_flows: 1 to 4096");
				c->max_proven_flows = u;
			} else if (!strcmp(key, "max_joins_per_client") ||
				   !strcmp(key, "max_joins_per_user")) {
				if (!parse_u64(val, 4096, &u, false) || !u)
					return fail(err, errlen, lineno, "%s: 1 to 4096", key);
				if (!strcmp(key, "max_joins_per_client"))
					c->max_joins_per_client = u;
				else
					c->max_joins_per_user = u;
			} else if (!strcmp(key, "dmabuf_exporters")) {
				if (!parse_names(val, &c->dmabuf_exporters))
					return fail(err, errlen, lineno, "dmabuf_exporters: at most %d "
						    "names of at most %d characters", RDPM_CONF_MAX_IDS,
						    RDPM_CONF_NAME - 1);
			} else if (!strcmp(key, "hello_timeout_ms")) {
				if (!parse_u64(val, 600000, &u, false) || u < 10)
					return fail(err, errlen, lineno, "hello_timeout_ms: 10 to "
						    "600000 milliseconds");
				c->hello_timeout_ms = u;
			} else if (!strcmp(key, "admin_users")) {
				if (!parse_ids(val, &c->admin_users, false))
					return fail(err, errlen, lineno, "admin_users: unknown user or "
						    "too many");
			} else {
				return fail(err, errlen, lineno, "unknown key \"%s\" in [global]", key);
			}
			continue;
		}
		if (!strcmp(key, "reserve")) {
			if (!parse_u64(val, RDPM_MAX_QUEUES, &u, false) || !u)
				return fail(err, errlen, lineno, "reserve: 1 to %d queues",
					    RDPM_MAX_QUEUES);
			nic->reserve = u;
		} else if (!strcmp(key, "queues_per_binding")) {
			if (!parse_u64(val, RDPM_MAX_QUEUES, &u, false))
				return fail(err, errlen, lineno, "queues_per_binding: 0 (all) to %d",
					    RDPM_MAX_QUEUES);
			nic->queues_per_binding = u;
		} else if (!strcmp(key, "max_rules")) {
			if (!parse_u64(val, 65536, &u, false))
				return fail(err, errlen, lineno, "max_rules: 0 to 65536");
			nic->max_rules = u;
		} else if (!strcmp(key, "max_bytes")) {
			if (!parse_u64(val, UINT64_MAX, &u, true))
				return fail(err, errlen, lineno, "max_bytes: a size such as 512M or 4G");
			nic->max_bytes = u;
		} else if (!strcmp(key, "shared_bytes")) {
			if (!parse_u64(val, UINT64_MAX, &u, true))
				return fail(err, errlen, lineno, "shared_bytes: a size such as 256M, "
					    "or 0 for no shared buffer");
			nic->shared_bytes = u;
		} else if (!strcmp(key, "users") || !strcmp(key, "low_port_users")) {
			if (!parse_ids(val, key[0] == 'u' ? &nic->users : &nic->low_port_users, false))
				return fail(err, errlen, lineno, "%s: unknown user or too many", key);
		} else if (!strcmp(key, "groups")) {
			if (!parse_ids(val, &nic->groups, true))
				return fail(err, errlen, lineno, "groups: unknown group or too many");
		} else {
			return fail(err, errlen, lineno, "unknown key \"%s\" in [nic %s]", key,
				    nic->name);
		}
	}
	if (!per_user_set && c->max_clients_per_user > c->max_clients)
		c->max_clients_per_user = c->max_clients;
	if (!preauth_set && c->max_preauth > c->max_clients)
		c->max_preauth = c->max_clients;
	if (c->max_preauth > c->max_clients)
		return fail(err, errlen, lineno, "max_preauth %u exceeds max_clients %u",
			    c->max_preauth, c->max_clients);
	if (!preauth_user_set && c->max_preauth_per_user > c->max_preauth)
		c->max_preauth_per_user = c->max_preauth;
	if (c->max_preauth_per_user > c->max_preauth)
		return fail(err, errlen, lineno, "max_preauth_per_user %u exceeds max_preauth %u",
			    c->max_preauth_per_user, c->max_preauth);
	if (c->max_clients_per_user > c->max_clients)
		return fail(err, errlen, lineno, "max_clients_per_user %u exceeds max_clients %u",
			    c->max_clients_per_user, c->max_clients);
	for (unsigned int i = 0; i < c->nnics; i++)
		if (c->nics[i].queues_per_binding > c->nics[i].reserve)
			return fail(err, errlen, lineno, "[nic %s]: queues_per_binding %u exceeds "
				    "reserve %u", c->nics[i].name, c->nics[i].queues_per_binding,
				    c->nics[i].reserve);
	return 0;
}

unsigned long rdpm_conf_fds(const struct rdpm_conf *c)
{
	unsigned long n = 32 + c->max_clients + RDPM_ADMIN_SLOTS + RDPM_CLOSER_SLOTS +
			  RDPM_CLOSER_HELD + RDPM_CLOSER_INFLIGHT + RDPM_CLOSER_STUCK;

	for (unsigned int i = 0; i < c->nnics; i++)
		n += 8 + 2ul * c->nics[i].reserve;
	return n;
}

/*
 * The file descriptors the configuration may need must fit RLIMIT_NOFILE
 * (LimitNOFILE= of rdpmd.service); the soft limit is raised to the hard
 * one if need be.
 */
int rdpm_conf_fd_budget(const struct rdpm_conf *c, char *err, size_t errlen)
{
	unsigned long need = rdpm_conf_fds(c);
	struct rlimit lim;

	if (getrlimit(RLIMIT_NOFILE, &lim))
		return 0;
	if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < need &&
	    (lim.rlim_max == RLIM_INFINITY || lim.rlim_max > lim.rlim_cur)) {
		lim.rlim_cur = lim.rlim_max == RLIM_INFINITY || lim.rlim_max > need ? need :
			       lim.rlim_max;
		setrlimit(RLIMIT_NOFILE, &lim);
		getrlimit(RLIMIT_NOFILE, &lim);
	}
	if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < need) {
		snprintf(err, errlen, "max_clients %u and the NICs' reserved queues may need %lu "
			 "file descriptors, RLIMIT_NOFILE is %llu (hard %llu): raise LimitNOFILE "
			 "(rdpmd.service) or lower max_clients", c->max_clients, need,
			 (unsigned long long)lim.rlim_cur, (unsigned long long)lim.rlim_max);
		return -EMFILE;
	}
	return 0;
}

int rdpm_conf_load(const char *path, struct rdpm_conf *c, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char *text;
	size_t n;
	int ret;

	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	text = calloc(1, 1 << 20);
	n = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
	if (!text || !feof(f)) {
		fclose(f);
		free(text);
		snprintf(err, errlen, "%s: unreadable or larger than 1 MiB", path);
		return -EFBIG;
	}
	fclose(f);
	text[n] = 0;
	if (strlen(text) != n) {
		free(text);
		snprintf(err, errlen, "%s: contains a NUL byte", path);
		return -EINVAL;
	}
	ret = rdpm_conf_parse(text, c, err, errlen);
	free(text);
	if (ret) {
		/* Prefix the path to "line N: ...". */
		char tmp[256];

		snprintf(tmp, sizeof(tmp), "%s", err);
		snprintf(err, errlen, "%s: %s", path, tmp);
	}
	return ret;
}
