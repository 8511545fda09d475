/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A connected loopback TCP pair, for tests that receive on a plain socket. */
#ifndef TCP_PAIR_H
#define TCP_PAIR_H

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

/* The connecting end in *@cli, the accepted one in *@srv; -1 on failure. */
static inline int tcp_pair(int *cli, int *srv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	*cli = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || *cli < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &al) ||
	    connect(*cli, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	*srv = accept(l, NULL, NULL);
	close(l);
	return *srv < 0 ? -1 : 0;
}

#endif
