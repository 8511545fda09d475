# SPDX-License-Identifier: LGPL-2.1-or-later
# The rules the user-space libraries share: lib$(LIB).a, the shared library
# (soname from VERSION's major number, symbols versioned by lib$(LIB).map,
# all others hidden), the lib$(LIB).so link, lib$(LIB).pc from
# lib$(LIB).pc.in, install and clean. Included by userspace/<lib>/Makefile
# after CFLAGS and LDLIBS, which sets:
#
#   LIB        the name: devmem for libdevmem
#   VERSION    x.y.z
#   HDRS       what every object depends on besides its source
#   AR_EXTRA   archives whose members go into lib$(LIB).a too (optional)
#   SO_DEPS    more prerequisites of the shared library (optional)
#   SO_LIBS    linked into it before LDLIBS (optional)
#   EXTRA_OBJS objects that are not built from a .c here (optional)
#
# and may add prerequisites to install for more files.
PREFIX ?= /usr/local
SONAME := lib$(LIB).so.$(word 1,$(subst ., ,$(VERSION)))
SRCS := $(sort $(wildcard *.c))
OBJS := $(SRCS:.c=.o) $(EXTRA_OBJS)

all: lib$(LIB).a $(SONAME) lib$(LIB).so lib$(LIB).pc

%.o: %.c $(HDRS)
	$(CC) $(CFLAGS) $(CPPFLAGS) -c $< -o $@

# AR_EXTRA's members unpacked beside, so users link just -l$(LIB)
lib$(LIB).a: $(OBJS)
	rm -rf $@ .ar-extra
ifneq ($(AR_EXTRA),)
	mkdir .ar-extra && cd .ar-extra && $(AR) x $(AR_EXTRA)
endif
	$(AR) rcs $@ $^ $(if $(AR_EXTRA),.ar-extra/*)
	rm -rf .ar-extra

$(SONAME): $(OBJS) lib$(LIB).map $(SO_DEPS)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(SONAME) \
		-Wl,--version-script=lib$(LIB).map -Wl,--no-undefined $(OBJS) $(SO_LIBS) $(LDLIBS) -o $@

lib$(LIB).so: $(SONAME)
	ln -sf $(SONAME) $@

lib$(LIB).pc: lib$(LIB).pc.in Makefile
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@VERSION@|$(VERSION)|' $< > $@

install: all
	install -D -m 644 $(LIB).h $(DESTDIR)$(PREFIX)/include/$(LIB).h
	install -D -m 644 lib$(LIB).a $(DESTDIR)$(PREFIX)/lib/lib$(LIB).a
	install -D -m 755 $(SONAME) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/lib$(LIB).so
	install -D -m 644 lib$(LIB).pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/lib$(LIB).pc
	for m in man/*.3; do install -D -m 644 $$m $(DESTDIR)$(PREFIX)/share/man/man3/$${m#man/}; done

clean:
	rm -rf *.o $(EXTRA_CLEAN) .ar-extra lib$(LIB).a $(SONAME) lib$(LIB).so lib$(LIB).pc

.PHONY: all install clean
