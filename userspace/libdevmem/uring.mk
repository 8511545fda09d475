# SPDX-License-Identifier: LGPL-2.1-or-later
# liburing >= 2.10 for zero-copy receive: the system's when it is new enough,
# else $(LIBURING), by default Debian forky's that the top-level make
# unpacks into build/liburing (selftests/host-deps liburing DIR). It is linked
# in statically and its symbols stay local (libdevmem.map).
URING_MK_DIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
ifeq ($(shell pkg-config --atleast-version=2.10 liburing && echo y),y)
URING_CFLAGS := $(shell pkg-config --cflags liburing)
URING_LIBS := $(shell pkg-config --variable=libdir liburing)/liburing.a
else
LIBURING ?= $(URING_MK_DIR)/../../build/liburing/usr
URING_CFLAGS := -I$(LIBURING)/include
URING_LIBS := $(LIBURING)/lib/$(shell $(CC) -print-multiarch)/liburing.a
endif
# forky's liburing headers include <linux/blkdev.h>, newer than bookworm's.
URING_CFLAGS += -idirafter $(URING_MK_DIR)/../include/compat

