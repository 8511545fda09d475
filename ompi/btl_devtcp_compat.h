/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The two Open MPI series Debian ships differ in a few BTL interfaces:
 * 4.1 (bookworm, BTL 3.1.0) and 5.0 (trixie, BTL 3.3.0). Everything that
 * differs is here, keyed on the series.
 */
#ifndef BTL_DEVTCP_COMPAT_H
#define BTL_DEVTCP_COMPAT_H

#if OPAL_MAJOR_VERSION >= 5
#include "opal/mca/pmix/pmix-internal.h"
#define DEVTCP_MODEX_SCOPE PMIX_GLOBAL
#else
#include "opal/mca/pmix/pmix.h"
#define DEVTCP_MODEX_SCOPE OPAL_PMIX_GLOBAL
#endif

/* Hands a received message to whoever registered its tag (the PML). */
static inline void devtcp_deliver(mca_btl_base_module_t *btl,
				  struct mca_btl_base_endpoint_t *ep, uint8_t tag,
				  mca_btl_base_segment_t *segs, size_t count)
{
	mca_btl_active_message_callback_t *reg = mca_btl_base_active_message_trigger + tag;

	if (!reg->cbfunc)	/* refused before: devtcp_frame_check */
		return;
#if OPAL_MAJOR_VERSION >= 5
	mca_btl_base_receive_descriptor_t desc = {
		.endpoint = ep, .des_segments = segs, .des_segment_count = count,
		.tag = tag, .cbdata = reg->cbdata,
	};

	reg->cbfunc(btl, &desc);
#else
	mca_btl_base_descriptor_t desc = {
		.des_segments = segs, .des_segment_count = count,
	};

	(void)ep;
	reg->cbfunc(btl, tag, &desc, reg->cbdata);
#endif
}

#endif
