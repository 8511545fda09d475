# SPDX-License-Identifier: GPL-2.0
# rdpmd's sources, relative to rdpm/: the one list for the daemon's build,
# the unit tests, the fuzzers and the shell tests (make daemon-srcs).
# RDPM_CORE is everything but main, which the tests and fuzzers replace
# with the fake NIC layer of fuzz/; the framing of messages with fds is
# userspace/common's.
RDPM_CORE := clients.c closer.c config.c dmabuf.c log.c nicstate.c proto.c owner.c nlquery.c \
	     ../userspace/common/rdpm_wire.c
RDPM_DAEMON := server.c $(RDPM_CORE)
