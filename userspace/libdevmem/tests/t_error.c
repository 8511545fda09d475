// SPDX-License-Identifier: LGPL-2.1-or-later
/* devmem_last_error(): per thread, formatted, with the errno text. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "devtcp/check.h"

static void *other_thread(void *arg)
{
	(void)arg;
	return (void *)devmem_last_error();
}

int main(void)
{
	pthread_t t;
	void *seen;

	CHECK(!strcmp(devmem_last_error(), "no error"), "got '%s'", devmem_last_error());
	CHECK(devmem_fail(-EINVAL, "%s: queue %u does not exist", "dtb", 9) == -EINVAL,
	      "devmem_fail returns its error");
	CHECK(!strcmp(devmem_last_error(), "dtb: queue 9 does not exist"), "got '%s'",
	      devmem_last_error());
	CHECK(devmem_fail_errno(-ENODEV, "open %s", "/dev/udmabuf") == -ENODEV, "returns err");
	CHECK(!strcmp(devmem_last_error(), "open /dev/udmabuf: No such device"), "got '%s'",
	      devmem_last_error());
	pthread_create(&t, NULL, other_thread, NULL);
	pthread_join(t, &seen);
	CHECK(!strcmp(seen, "no error"), "another thread saw '%s'", (char *)seen);
	return check_done("t_error");
}
