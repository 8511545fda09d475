// SPDX-License-Identifier: GPL-2.0
/* The KEY VALUE words of devtcp fault injection and their attributes. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/devtcp.h>

#include "fault_keys.h"

struct key {
	const char *name;
	int type;
	int size;		/* of the attribute: 1, 4 or 8 bytes */
	int ppm;		/* a probability: N% is accepted too */
};

/* In the order `show` prints them. */
static const struct key keys[] = {
	{ "drop", IFLA_DEVTCP_FAULT_DROP, 4, 1 },
	{ "reorder", IFLA_DEVTCP_FAULT_REORDER, 4, 1 },
	{ "depth", IFLA_DEVTCP_FAULT_REORDER_DEPTH, 4, 0 },
	{ "dup", IFLA_DEVTCP_FAULT_DUP, 4, 1 },
	{ "corrupt", IFLA_DEVTCP_FAULT_CORRUPT, 4, 1 },
	{ "delay", IFLA_DEVTCP_FAULT_DELAY, 4, 0 },
	{ "jitter", IFLA_DEVTCP_FAULT_JITTER, 4, 0 },
	{ "rate", IFLA_DEVTCP_FAULT_RATE, 8, 0 },
	{ "seed", IFLA_DEVTCP_FAULT_SEED, 8, 0 },
	{ "dma-unreachable", IFLA_DEVTCP_FAULT_DMA_UNREACHABLE, 1, 0 },
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static void put(struct nlmsghdr *nlh, const struct key *k, uint64_t v)
{
	if (k->size == 8)
		mnl_attr_put_u64(nlh, k->type, v);
	else if (k->size == 4)
		mnl_attr_put_u32(nlh, k->type, v);
	else
		mnl_attr_put_u8(nlh, k->type, v);
}

/* Parses VALUE for KEY into *v; returns 0 or -1 when it is no number. */
static int parse_value(const struct key *k, const char *s, uint64_t *v)
{
	char *end;
	double d;

	errno = 0;
	if (k->ppm && strchr(s, '%')) {
		d = strtod(s, &end);
		if (errno || end == s || strcmp(end, "%") || d < 0 || d > 1e6)
			return -1;
		*v = (uint64_t)(d * 10000 + 0.5);
		return 0;
	}
	if (*s == '-')
		return -1;
	*v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	if (k->type == IFLA_DEVTCP_FAULT_RATE && *end && !end[1]) {
		switch (*end++) {
		case 'k': *v *= 1000; break;
		case 'M': *v *= 1000000; break;
		case 'G': *v *= 1000000000; break;
		default: return -1;
		}
	}
	if (*end)
		return -1;
	/* Values in range of the attribute go to the kernel, which says why it refuses. */
	return k->size == 8 || *v <= (k->size == 4 ? UINT32_MAX : UINT8_MAX) ? 0 : -1;
}

int fault_put_keys(struct nlmsghdr *nlh, const char *prog, int n, char **kv)
{
	struct nlattr *nest;
	unsigned int k;
	uint64_t v;
	int i;

	if (n % 2) {
		fprintf(stderr, "%s: %s needs a value\n", prog, kv[n - 1]);
		return -1;
	}
	nest = mnl_attr_nest_start(nlh, IFLA_DEVTCP_FAULT);
	for (i = 0; i < n; i += 2) {
		for (k = 0; k < NKEYS && strcmp(keys[k].name, kv[i]); k++)
			;
		if (k == NKEYS) {
			fprintf(stderr, "%s: unknown fault key %s\n", prog, kv[i]);
			return -1;
		}
		if (parse_value(&keys[k], kv[i + 1], &v)) {
			fprintf(stderr, "%s: bad value for %s: %s\n", prog, kv[i], kv[i + 1]);
			return -1;
		}
		put(nlh, &keys[k], v);
	}
	mnl_attr_nest_end(nlh, nest);
	return 0;
}

void fault_put_off(struct nlmsghdr *nlh)
{
	struct nlattr *nest = mnl_attr_nest_start(nlh, IFLA_DEVTCP_FAULT);
	unsigned int k;

	for (k = 0; k < NKEYS; k++)
		if (keys[k].type != IFLA_DEVTCP_FAULT_SEED)
			put(nlh, &keys[k], 0);
	mnl_attr_nest_end(nlh, nest);
}

void fault_print(const struct nlattr *fault)
{
	uint64_t val[NKEYS] = { 0 };
	struct nlattr *a;
	unsigned int k;

	mnl_attr_for_each_nested(a, fault) {
		for (k = 0; k < NKEYS; k++) {
			if (keys[k].type != mnl_attr_get_type(a))
				continue;
			val[k] = keys[k].size == 8 ? mnl_attr_get_u64(a) :
				 keys[k].size == 4 ? mnl_attr_get_u32(a) : mnl_attr_get_u8(a);
		}
	}
	for (k = 0; k < NKEYS; k++)
		printf("%s%s %" PRIu64, k ? " " : "", keys[k].name, val[k]);
	printf("\n");
}
