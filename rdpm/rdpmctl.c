// SPDX-License-Identifier: GPL-2.0
/*
 * rdpmctl: talks to rdpmd through libdevmem's RDPM client.
 *
 *   rdpmctl [-s SOCKET] status [--json]   NICs, reserved queues, bindings (with their
 *                                         buffer size), flows, clients
 *   rdpmctl [-s SOCKET] drain IFNAME      remove every binding and flow on IFNAME
 *   rdpmctl [-s SOCKET] reload            re-read the configuration file
 *
 * Exit status: 0 done, 1 rdpmd refused or is unreachable, 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "devmem_rdpm.h"

static void usage(void)
{
	fprintf(stderr, "usage: rdpmctl [-s SOCKET] status [--json]\n"
			"       rdpmctl [-s SOCKET] drain IFNAME\n"
			"       rdpmctl [-s SOCKET] reload\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *path = NULL, *cmd;
	struct rdpm_client *c;
	char *out = NULL;
	int i = 1, err;

	if (i + 1 < argc && !strcmp(argv[i], "-s")) {
		path = argv[i + 1];
		i += 2;
	}
	if (i >= argc)
		usage();
	cmd = argv[i];
	if (!((!strcmp(cmd, "status") && (argc == i + 1 ||
	       (argc == i + 2 && !strcmp(argv[i + 1], "--json")))) ||
	      (!strcmp(cmd, "drain") && argc == i + 2) ||
	      (!strcmp(cmd, "reload") && argc == i + 1)))
		usage();
	err = rdpm_connect(&c, path);
	if (err)
		goto out;
	if (!strcmp(cmd, "status"))
		err = rdpm_status(c, argc == i + 2, &out);
	else if (!strcmp(cmd, "drain"))
		err = rdpm_drain(c, argv[i + 1]);
	else
		err = rdpm_reload(c);
	rdpm_close(c);
out:
	if (err) {
		fprintf(stderr, "rdpmctl: %s\n", devmem_last_error());
		return 1;
	}
	if (out)
		fputs(out, stdout);
	else if (!strcmp(cmd, "drain"))
		printf("%s drained\n", argv[i + 1]);
	else
		printf("configuration reloaded\n");
	free(out);
	return 0;
}
