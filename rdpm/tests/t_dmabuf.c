// SPDX-License-Identifier: GPL-2.0
/* What REGISTER takes for a dma-buf (dmabuf.c): the exporter named in the
 * fdinfo must be on dmabuf_exporters; an fd that is no dma-buf is refused
 * from its /proc link alone. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "devtcp/check.h"
#include "rdpmd.h"

struct rdpmd rdpmd;

int main(void)
{
	static struct rdpm_conf c;
	char err[256], why[160];
	int fd, r;

	CHECK(rdpm_conf_parse("", &c, err, sizeof(err)) == 0, "defaults: %s", err);
	r = rdpm_dmabuf_info_check("pos:\t0\nflags:\t02\nmnt_id:\t15\nino:\t1\nsize:\t4096\n"
				   "count:\t1\nexp_name:\tudmabuf\nname:\t\n", &c.dmabuf_exporters,
				   why, sizeof(why));
	CHECK(r == 0, "a udmabuf is taken (%d %s)", r, why);
	r = rdpm_dmabuf_info_check("size:\t4096\nexp_name:\tsystem\n", &c.dmabuf_exporters, why,
				   sizeof(why));
	CHECK(r == 0, "a system heap buffer is taken (%d %s)", r, why);
	r = rdpm_dmabuf_info_check("size:\t4096\nexp_name:\ti915\n", &c.dmabuf_exporters, why,
				   sizeof(why));
	CHECK(r == -EPERM && strstr(why, "\"i915\" are not taken (dmabuf_exporters"),
	      "another exporter is refused, named (%d %s)", r, why);
	r = rdpm_dmabuf_info_check("size:\t4096\nexp_name:\tudmabufX\n", &c.dmabuf_exporters, why,
				   sizeof(why));
	CHECK(r == -EPERM, "a name that only starts like an allowed one is refused");
	r = rdpm_dmabuf_info_check("size:\t4096\nexp_name:\t\n", &c.dmabuf_exporters, why,
				   sizeof(why));
	CHECK(r == -EPERM, "an empty exporter is refused");
	r = rdpm_dmabuf_info_check("size:\t4096\nexp_name:\tudmab", &c.dmabuf_exporters, why,
				   sizeof(why));
	CHECK(r == -EPERM, "a name cut off is refused");
	r = rdpm_dmabuf_info_check("pos:\t0\nflags:\t02\n", &c.dmabuf_exporters, why, sizeof(why));
	CHECK(r == -EBADF && strstr(why, "not a dma-buf"), "no exporter: no dma-buf (%d)", r);
	memset(&c.dmabuf_exporters, 0, sizeof(c.dmabuf_exporters));
	r = rdpm_dmabuf_info_check("exp_name:\tudmabuf\n", &c.dmabuf_exporters, why, sizeof(why));
	CHECK(r == -EBADF, "exp_name must start a line (%d)", r);

	rdpmd.conf = c;
	fd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
	CHECK(fd >= 0, "memfd_create");
	r = rdpm_dmabuf_check(fd, why, sizeof(why));
	CHECK(r == -EBADF && strstr(why, "not a dma-buf (it is a file)") &&
		      !strstr(why, "memfd"),
	      "a memfd is refused, its name not told (%d %s)", r, why);
	close(fd);
	r = rdpm_dmabuf_check(fd, why, sizeof(why));
	CHECK(r == -EBADF, "a closed fd is refused (%d %s)", r, why);
	return check_done("t_dmabuf");
}
