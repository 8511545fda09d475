// SPDX-License-Identifier: GPL-2.0
/*
 * The closer thread: closes the file descriptors clients passed to rdpmd.
 * The last close() of a client's file runs that file's release, which the
 * client controls: a TCP socket with SO_LINGER whose peer advertises a zero
 * window waits out the linger time, a FUSE file's flush waits for its
 * server. The event loop hands such fds here and goes on serving. The
 * queue is a fixed ring: when it is full the caller must not read more
 * fds (clients.c then leaves the client unread), never wait.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "rdpmd.h"

static int ring[RDPM_CLOSER_SLOTS];
static unsigned int head, count;	/* next to close; queued */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;

static void *closer_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		int fd;

		while (!count)
			pthread_cond_wait(&wake, &lock);
		fd = ring[head];
		pthread_mutex_unlock(&lock);
		close(fd);		/* may block: only this thread waits */
		pthread_mutex_lock(&lock);
		head = (head + 1) % RDPM_CLOSER_SLOTS;
		count--;
	}
	return NULL;
}

int rdpm_closer_start(void)
{
	sigset_t all, old;
	pthread_t t;
	int err;

	/* Signals stay with the event loop's signalfd. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&t, NULL, closer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	pthread_detach(t);
	return 0;
}

bool rdpm_closer_push(const int *fds, unsigned int n)
{
	bool ok;

	pthread_mutex_lock(&lock);
	ok = n <= RDPM_CLOSER_SLOTS - count;
	for (unsigned int i = 0; ok && i < n; i++)
		ring[(head + count++) % RDPM_CLOSER_SLOTS] = fds[i];
	if (ok && n)
		pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
	return ok;
}

unsigned int rdpm_closer_pending(void)
{
	unsigned int n;

	pthread_mutex_lock(&lock);
	n = count;
	pthread_mutex_unlock(&lock);
	return n;
}

unsigned int rdpm_closer_room(void)
{
	return RDPM_CLOSER_SLOTS - rdpm_closer_pending();
}
