// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The job's secret, which every set-up handshake proves knowledge of
 * (wire.c). Under a PMIx launcher rank 0 draws it and PMIx hands it to the
 * job's processes only (pmix.c). With DEVCOLL_ADDR's rendezvous whoever
 * starts the ranks provides it: DEVCOLL_SECRET, or DEVCOLL_SECRET_FILE, a
 * file only its owner may read. Without either the rendezvous does not
 * start, unless DEVCOLL_INSECURE=1 says that anyone who can reach it may
 * join (a key everyone knows).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "internal.h"

#define SECRET_MIN 16		/* bytes: a shorter one falls to a dictionary */
#define SECRET_MAX 4096

void dc_key_of(const void *s, size_t len, uint8_t key[DC_KEY_LEN])
{
	struct dc_sha256 h;

	dc_sha256_init(&h);
	dc_sha256_update(&h, "devcoll job secret", sizeof("devcoll job secret"));
	dc_sha256_update(&h, s, len);
	dc_sha256_final(&h, key);
}

int dc_random(void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom((char *)buf + got, n - got, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return dc_fail(-errno, "getrandom: %s", strerror(errno));
		got += (size_t)r;
	}
	return 0;
}

/* DEVCOLL_SECRET_FILE's contents (a final newline dropped) into @buf. */
static int read_secret_file(const char *path, char *buf, size_t cap, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), e;
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return dc_fail(-errno, "DEVCOLL_SECRET_FILE=%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return dc_fail(-EINVAL, "DEVCOLL_SECRET_FILE=%s: not a regular file", path);
	}
	if (st.st_uid != geteuid() || (st.st_mode & 0077)) {
		close(fd);
		return dc_fail(-EPERM, "DEVCOLL_SECRET_FILE=%s: must be owned by this user and "
			       "readable by no one else (chmod 600)", path);
	}
	n = read(fd, buf, cap);
	e = errno;
	close(fd);
	if (n < 0)
		return dc_fail(-e, "DEVCOLL_SECRET_FILE=%s: %s", path, strerror(e));
	if ((size_t)n == cap)
		return dc_fail(-EINVAL, "DEVCOLL_SECRET_FILE=%s: longer than %d bytes", path,
			       SECRET_MAX);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	*len = (size_t)n;
	return 0;
}

int dc_secret_env(uint8_t key[DC_KEY_LEN])
{
	const char *s = getenv("DEVCOLL_SECRET"), *path = getenv("DEVCOLL_SECRET_FILE");
	const char *insecure = getenv("DEVCOLL_INSECURE");
	char buf[SECRET_MAX + 1];
	size_t len = 0;
	int ret;

	if (s && *s && path && *path)
		return dc_fail(-EINVAL, "DEVCOLL_SECRET and DEVCOLL_SECRET_FILE are both set: "
			       "set one");
	if (path && *path) {
		ret = read_secret_file(path, buf, sizeof(buf), &len);
		if (ret)
			return ret;
		s = buf;
	} else if (s && *s) {
		len = strlen(s);
	} else if (insecure && !strcmp(insecure, "1")) {
		dc_key_of("", 0, key);
		return 0;
	} else {
		return dc_fail(-EACCES, "DEVCOLL_ADDR's rendezvous needs the job's secret: set "
			       "DEVCOLL_SECRET (or DEVCOLL_SECRET_FILE) to the same random string "
			       "of %d bytes or more on every rank, or DEVCOLL_INSECURE=1 to let "
			       "anyone who reaches the ports join", SECRET_MIN);
	}
	if (len < SECRET_MIN) {
		explicit_bzero(buf, sizeof(buf));
		return dc_fail(-EINVAL, "the job's secret is %zu bytes: use %d or more (head -c 32 "
			       "/dev/urandom | base64)", len, SECRET_MIN);
	}
	dc_key_of(s, len, key);
	explicit_bzero(buf, sizeof(buf));
	return 0;
}
