/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Devmem TCP socket API for C libraries and kernel headers that predate it
 * (Linux 6.12 added it; Debian bookworm ships 6.1 headers).
 *
 * Every definition is skipped when the system already provides it:
 *  - MSG_SOCK_DEVMEM is kernel-internal (include/linux/socket.h), so user
 *    space always defines it; #ifndef keeps a future libc definition.
 *  - The SO_ and SCM_ values come from <asm/socket.h> when it knows them,
 *    else from the per-architecture table below (7.3 arch uapi headers).
 *  - struct dmabuf_cmsg and struct dmabuf_token live in <linux/uio.h>,
 *    which cannot be included next to glibc's <sys/uio.h> (both define
 *    struct iovec). They are defined here unless <linux/uio.h> was included
 *    before this header *and* comes with an <asm/socket.h> that defines
 *    SO_DEVMEM_DONTNEED (the two are shipped together, so that uio.h has
 *    them). Include <linux/uio.h>, if at all, before this header.
 */
#ifndef _UAPI_LINUX_DEVMEM_COMPAT_H
#define _UAPI_LINUX_DEVMEM_COMPAT_H

#include <linux/types.h>
#include <asm/socket.h>

#ifndef MSG_SOCK_DEVMEM
#define MSG_SOCK_DEVMEM		0x2000000	/* receive devmem skbs as cmsgs */
#endif

#if (defined(__LINUX_UIO_H) || defined(_UAPI__LINUX_UIO_H)) && \
	defined(SO_DEVMEM_DONTNEED)
#define DEVMEM_COMPAT_HAVE_UIO_STRUCTS
#endif

#ifndef SO_DEVMEM_DONTNEED
#if defined(__hppa__)
#define SO_DEVMEM_LINEAR	0x404E
#define SO_DEVMEM_DMABUF	0x404F
#define SO_DEVMEM_DONTNEED	0x4050
#elif defined(__sparc__)
#define SO_DEVMEM_LINEAR	0x0057
#define SO_DEVMEM_DMABUF	0x0058
#define SO_DEVMEM_DONTNEED	0x0059
#else	/* asm-generic, alpha, mips, powerpc */
#define SO_DEVMEM_LINEAR	78
#define SO_DEVMEM_DMABUF	79
#define SO_DEVMEM_DONTNEED	80
#endif
#endif /* SO_DEVMEM_DONTNEED */

#ifndef SCM_DEVMEM_LINEAR
#define SCM_DEVMEM_LINEAR	SO_DEVMEM_LINEAR
#endif
#ifndef SCM_DEVMEM_DMABUF
#define SCM_DEVMEM_DMABUF	SO_DEVMEM_DMABUF
#endif

#ifndef DEVMEM_COMPAT_HAVE_UIO_STRUCTS
/* Payload of SCM_DEVMEM_DMABUF and SCM_DEVMEM_LINEAR (frag_size only). */
struct dmabuf_cmsg {
	__u64 frag_offset;	/* offset into the dmabuf where the frag starts */
	__u32 frag_size;	/* size of the frag */
	__u32 frag_token;	/* token representing this frag for DONTNEED */
	__u32 dmabuf_id;	/* dmabuf id this frag belongs to */
	__u32 flags;		/* currently unused */
};

/* SO_DEVMEM_DONTNEED takes an array of these. */
struct dmabuf_token {
	__u32 token_start;
	__u32 token_count;
};
#endif /* DEVMEM_COMPAT_HAVE_UIO_STRUCTS */

#endif /* _UAPI_LINUX_DEVMEM_COMPAT_H */
