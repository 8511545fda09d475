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

/* The number of processes in this process's job, 0 when unknown. */
static inline uint32_t devtcp_job_size(void)
{
#if OPAL_MAJOR_VERSION >= 5
	return opal_process_info.num_procs;
#else
	opal_process_name_t job = { .jobid = OPAL_PROC_MY_NAME.jobid, .vpid = OPAL_VPID_WILDCARD };
	uint32_t size = 0, *p = &size;
	int rc;

	OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OPAL_PMIX_JOB_SIZE, &job, &p, OPAL_UINT32);
	return rc == OPAL_SUCCESS ? size : 0;
#endif
}

/* A process's modex blob of component @c, only if this process has it
 * already: no wait for the runtime to fetch it (*d NULL then). */
static inline int devtcp_modex_recv_now(const mca_base_component_t *c,
					const opal_process_name_t *name, void **d, size_t *sz)
{
	int rc;

	*d = NULL;
	*sz = 0;
#if OPAL_MAJOR_VERSION >= 5
	uint8_t *bytes = NULL;	/* what Open MPI 5's macro stores */

	OPAL_MODEX_RECV_IMMEDIATE(rc, c, name, &bytes, sz);
	*d = bytes;
#else
	char *key = mca_base_component_to_string(c);
	opal_byte_object_t *bo = NULL;

	if (!key)
		return OPAL_ERR_OUT_OF_RESOURCE;
	OPAL_MODEX_RECV_VALUE_IMMEDIATE(rc, key, name, &bo, OPAL_BYTE_OBJECT);
	free(key);
	if (rc == OPAL_SUCCESS && bo) {
		*d = bo->bytes;
		*sz = bo->size;
	}
	free(bo);
#endif
	return rc;
}

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
