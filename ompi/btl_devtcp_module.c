// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The module: peers coming and going, and descriptors (alloc, prepare_src,
 * send, free) as ob1 uses them.
 */
#include "btl_devtcp.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opal/class/opal_bitmap.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"

#include "devmem.h"

static int devtcp_add_procs(mca_btl_base_module_t *btl, size_t nprocs, opal_proc_t **procs,
			    struct mca_btl_base_endpoint_t **eps, opal_bitmap_t *reachable)
{
	struct devtcp_module *m = (struct devtcp_module *)btl;
	opal_proc_t *self = opal_proc_local_get();
	size_t i;

	if (!__atomic_load_n(&m->job_size, __ATOMIC_RELAXED))	/* read by the receiving thread */
		__atomic_store_n(&m->job_size, devtcp_job_size(), __ATOMIC_RELAXED);
	for (i = 0; i < nprocs; i++) {
		struct mca_btl_base_endpoint_t *ep;

		if (procs[i] == self) /* btl/self's */
			continue;
		ep = devtcp_endpoint_get(m, procs[i]);
		if (!ep)
			return OPAL_ERR_OUT_OF_RESOURCE;
		if (!ep->have_addr)
			continue; /* it published no devtcp address */
		eps[i] = ep;
		if (reachable)
			opal_bitmap_set_bit(reachable, (int)i);
	}
	return OPAL_SUCCESS;
}

static int devtcp_del_procs(mca_btl_base_module_t *btl, size_t nprocs, opal_proc_t **procs,
			    struct mca_btl_base_endpoint_t **eps)
{
	(void)btl;
	(void)procs;
	/* Endpoints live until finalize: a peer may still be sending to us. */
	for (size_t i = 0; i < nprocs; i++)
		if (eps[i])
			devtcp_endpoint_bye(eps[i]);
	return OPAL_SUCCESS;
}

static int devtcp_finalize(mca_btl_base_module_t *btl)
{
	struct devtcp_component *c = &mca_btl_devtcp_component;
	struct devtcp_module *m = (struct devtcp_module *)btl;

	while (m->endpoints)
		devtcp_endpoint_free(m, m->endpoints);
	while (m->pending) {
		struct devtcp_pending *p = m->pending;

		m->pending = p->next;
		if (p->rx)
			devmem_rx_close(p->rx);
		close(p->fd);
		free(p);
	}
	while (m->regs) {	/* the PML's leftovers */
		struct devtcp_reg *r = m->regs;

		m->regs = r->next;
		free(r);
	}
	if (m->refused)
		opal_output(0, "btl:devtcp: %s: refused %llu connection(s) that did not authenticate "
			    "as a process of this job (%llu without a hello within "
			    "btl_devtcp_connect_timeout, %llu closed for newer ones, %llu from no "
			    "address of the job)", m->ifname, (unsigned long long)m->refused,
			    (unsigned long long)m->hello_timeouts, (unsigned long long)m->evicted,
			    (unsigned long long)m->strangers);
	devtcp_verbose(5, "%s: %llu messages (%llu bytes) sent, %llu (%llu bytes) received",
		       m->ifname, (unsigned long long)m->tx_msgs, (unsigned long long)m->tx_bytes,
		       (unsigned long long)m->rx_msgs, (unsigned long long)m->rx_bytes);
	devtcp_verbose(5, "%s: %llu puts (%llu bytes) received straight into receive buffers",
		       m->ifname, (unsigned long long)m->rx_puts,
		       (unsigned long long)m->rx_put_bytes);
	if (m->devmem)
		devtcp_verbose(1, "devmem: %llu payload bytes read in place in the dma-buf, %llu "
			       "copied out of it (more pieces than a descriptor holds), %llu "
			       "put from it into receive buffers, %llu arrived in host memory",
			       (unsigned long long)m->bytes_inplace,
			       (unsigned long long)m->bytes_bounced,
			       (unsigned long long)m->bytes_put,
			       (unsigned long long)m->bytes_linear);
	if (devtcp_devmem_on_gpu(m))
		devtcp_verbose(1, "devmem: %llu payload bytes gathered in GPU memory by the unpack "
			       "kernels and copied from there into host buffers",
			       (unsigned long long)m->bytes_gpu);
	devtcp_devmem_close(m);
	close(m->ctrl_listen);
	close(m->data_listen);
	free(m->pfd);
	free(m->pep);
	pthread_mutex_destroy(&m->ep_lock);
	pthread_mutex_destroy(&m->rx_lock);
	pthread_mutex_destroy(&m->reg_lock);
	pthread_cond_destroy(&m->reg_cond);
	for (int i = 0; i < c->num_modules; i++)
		if (c->modules[i] == m) {
			c->modules[i] = c->modules[--c->num_modules];
			break;
		}
	free(m);
	return OPAL_SUCCESS;
}

static int devtcp_register_error(mca_btl_base_module_t *btl, mca_btl_base_module_error_cb_fn_t cb)
{
	((struct devtcp_module *)btl)->error_cb = cb;
	return OPAL_SUCCESS;
}

static struct devtcp_frag *frag_new(struct mca_btl_base_endpoint_t *ep, size_t cap,
				    uint8_t order, uint32_t flags)
{
	struct devtcp_frag *f = malloc(sizeof(*f) + cap);

	if (!f)
		return NULL;
	memset(f, 0, sizeof(*f));
	OBJ_CONSTRUCT(&f->base, mca_btl_base_descriptor_t);
	f->base.des_segments = f->segs;
	f->base.des_segment_count = 1;
	f->base.des_flags = flags;
	f->base.order = order;
	f->ep = ep;
	f->cap = cap;
	f->segs[0].seg_addr.pval = f->buf;
	return f;
}

static mca_btl_base_descriptor_t *devtcp_alloc(mca_btl_base_module_t *btl,
					       struct mca_btl_base_endpoint_t *ep,
					       uint8_t order, size_t size, uint32_t flags)
{
	struct devtcp_frag *f;

	if (size > btl->btl_max_send_size)
		return NULL;
	f = frag_new(ep, size, order, flags);
	if (!f)
		return NULL;
	f->segs[0].seg_len = size;
	return &f->base;
}

static int devtcp_free(mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
	(void)btl;
	OBJ_DESTRUCT(des);
	free(des);
	return OPAL_SUCCESS;
}

/* reserve bytes for the PML's header, then up to *size bytes of payload:
 * in place when the data is contiguous, else packed behind the header. */
static mca_btl_base_descriptor_t *devtcp_prepare_src(mca_btl_base_module_t *btl,
						     struct mca_btl_base_endpoint_t *ep,
						     struct opal_convertor_t *conv, uint8_t order,
						     size_t reserve, size_t *size, uint32_t flags)
{
	struct iovec iov;
	uint32_t count = 1;
	size_t max = *size;
	struct devtcp_frag *f;
	bool inplace = !opal_convertor_need_buffers(conv);

	if (reserve >= btl->btl_max_send_size)
		return NULL;
	if (max > btl->btl_max_send_size - reserve)
		max = btl->btl_max_send_size - reserve;
	f = frag_new(ep, inplace ? reserve : reserve + max, order, flags);
	if (!f)
		return NULL;
	iov.iov_len = max;
	iov.iov_base = inplace ? NULL : f->buf + reserve;
	if (opal_convertor_pack(conv, &iov, &count, &max) < 0) {
		devtcp_free(btl, &f->base);
		return NULL;
	}
	f->reserve = reserve;
	if (inplace) {
		f->segs[0].seg_len = reserve;
		f->segs[1].seg_addr.pval = iov.iov_base;
		f->segs[1].seg_len = max;
		f->base.des_segment_count = 2;
	} else {
		f->segs[0].seg_len = reserve + max;
	}
	*size = max;
	return &f->base;
}

static int devtcp_send(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
		       mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag)
{
	struct devtcp_frag *f = (struct devtcp_frag *)des;

	f->frame.tag = tag;
	f->ep = ep;
	return devtcp_endpoint_send((struct devtcp_module *)btl, ep, f);
}

/* A put's bytes are out: the PML's completion, with its local address. */
static void put_sent(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
		     mca_btl_base_descriptor_t *des, int status)
{
	struct devtcp_frag *f = (struct devtcp_frag *)des;

	f->put_done(btl, ep, f->segs[0].seg_addr.pval, NULL, f->put_context, f->put_cbdata, status);
}

/*
 * An emulated RDMA write, as btl/tcp has: the bytes travel on a data link
 * behind a frame that says where they go, and the receiver reads them
 * straight into that memory (out of its dma-buf with devmem: the one copy
 * the PML would make of a message). It is complete once the sockets took
 * the bytes; ob1's FIN then follows on the control connection, which the
 * receiver reads only after the bytes are in place.
 */
static int devtcp_put(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep, void *local,
		      uint64_t remote, mca_btl_base_registration_handle_t *local_handle,
		      mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
		      int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
		      void *cbdata)
{
	struct devtcp_frag *f;
	int rc;

	(void)local_handle;
	(void)flags;
	if (size > btl->btl_put_limit || !remote_handle)
		return OPAL_ERR_BAD_PARAM;
	f = frag_new(ep, 0, (uint8_t)order,
		     MCA_BTL_DES_FLAGS_BTL_OWNERSHIP | MCA_BTL_DES_SEND_ALWAYS_CALLBACK);
	if (!f)
		return OPAL_ERR_OUT_OF_RESOURCE;
	f->base.des_cbfunc = put_sent;
	f->segs[0] = (mca_btl_base_segment_t){ .seg_addr.pval = local, .seg_len = size };
	f->put = (struct devtcp_put){ .handle = remote_handle->id, .to = remote };
	f->put_done = cbfunc;
	f->put_context = cbcontext;
	f->put_cbdata = cbdata;
	/* 1: sent at once, and completed */
	rc = devtcp_endpoint_send((struct devtcp_module *)btl, ep, f);
	if (rc < 0) {
		devtcp_free(btl, &f->base);
		return rc;
	}
	return OPAL_SUCCESS;
}

/* A region a peer may put into (the PML's receive buffer), or one of ours
 * that a put reads (no remote access): the handle names it in put frames.
 * Handles are random, never 0 and never two alike: one cannot be guessed
 * from another. */
static mca_btl_base_registration_handle_t *devtcp_register_mem(mca_btl_base_module_t *btl,
							       struct mca_btl_base_endpoint_t *ep,
							       void *base, size_t size,
							       uint32_t flags)
{
	struct devtcp_module *m = (struct devtcp_module *)btl;
	struct devtcp_reg *r = calloc(1, sizeof(*r)), *o;
	uint64_t id;

	if (!r)
		return NULL;
	r->ep = ep;
	r->region = (struct devtcp_region){
		.base = (uintptr_t)base, .len = size,
		.remote_write = flags & MCA_BTL_REG_FLAG_REMOTE_WRITE,
	};
	pthread_mutex_lock(&m->reg_lock);
	do {
		if (devtcp_random(&id, sizeof(id), "a registration's handle") < 0) {
			pthread_mutex_unlock(&m->reg_lock);
			free(r);
			return NULL;
		}
		for (o = m->regs; o && o->handle.id != id; o = o->next)
			;
	} while (!id || o);
	r->handle.id = id;
	r->next = m->regs;
	m->regs = r;
	pthread_mutex_unlock(&m->reg_lock);
	return &r->handle;
}

/* The region goes; a put still writing into it finishes its current batch
 * first, and the rest of its bytes are read and dropped (put_recv). */
static int devtcp_deregister_mem(mca_btl_base_module_t *btl,
				 mca_btl_base_registration_handle_t *handle)
{
	struct devtcp_module *m = (struct devtcp_module *)btl;
	struct devtcp_reg *r = (struct devtcp_reg *)((char *)handle -
						     offsetof(struct devtcp_reg, handle));
	struct devtcp_reg **p;
	bool pinned;

	pthread_mutex_lock(&m->reg_lock);
	for (p = &m->regs; *p && *p != r; p = &(*p)->next)
		;
	if (*p)
		*p = r->next;
	r->gone = true;
	while (r->writing)
		pthread_cond_wait(&m->reg_cond, &m->reg_lock);
	pinned = r->pins;
	pthread_mutex_unlock(&m->reg_lock);
	if (!pinned)
		free(r);
	return OPAL_SUCCESS;
}

/* The region registered as @handle for puts from @ep, into *r, pinned
 * (devtcp_region_unpin) for the put that names it; NULL when there is none. */
struct devtcp_reg *devtcp_region_pin(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep,
				     uint64_t handle, struct devtcp_region *r)
{
	struct devtcp_reg *reg;

	pthread_mutex_lock(&m->reg_lock);
	for (reg = m->regs; reg && reg->handle.id != handle; reg = reg->next)
		;
	if (reg && reg->ep && reg->ep != ep)
		reg = NULL;
	if (reg) {
		*r = reg->region;
		reg->pins++;
	}
	pthread_mutex_unlock(&m->reg_lock);
	return reg;
}

void devtcp_region_unpin(struct devtcp_module *m, struct devtcp_reg *reg)
{
	bool free_it;

	pthread_mutex_lock(&m->reg_lock);
	free_it = !--reg->pins && reg->gone;
	pthread_mutex_unlock(&m->reg_lock);
	if (free_it)
		free(reg);
}

/* A put's bytes may be written into its region now (true, until
 * devtcp_region_write_end), or the region went (false): they are dropped. */
bool devtcp_region_write_begin(struct devtcp_module *m, struct devtcp_reg *reg)
{
	bool ok;

	pthread_mutex_lock(&m->reg_lock);
	ok = !reg->gone;
	reg->writing += ok;
	pthread_mutex_unlock(&m->reg_lock);
	return ok;
}

void devtcp_region_write_end(struct devtcp_module *m, struct devtcp_reg *reg)
{
	pthread_mutex_lock(&m->reg_lock);
	if (!--reg->writing)
		pthread_cond_broadcast(&m->reg_cond);
	pthread_mutex_unlock(&m->reg_lock);
}

static void devtcp_dump(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
			int verbose)
{
	(void)btl;
	(void)verbose;
	if (ep)
		opal_output(0, "btl:devtcp: peer %u.%u: ctrl fd %d, rx ctrl fd %d, state %d%s",
			    ep->name.jobid, ep->name.vpid, ep->ctrl_fd, ep->rx_ctrl_fd, ep->rx_state,
			    ep->failed ? ", failed" : "");
}

struct devtcp_module devtcp_module_template = {
	.super = {
		.btl_component = &mca_btl_devtcp_component.super,
		.btl_add_procs = devtcp_add_procs,
		.btl_del_procs = devtcp_del_procs,
		.btl_finalize = devtcp_finalize,
		.btl_alloc = devtcp_alloc,
		.btl_free = devtcp_free,
		.btl_prepare_src = devtcp_prepare_src,
		.btl_send = devtcp_send,
		.btl_put = devtcp_put,
		.btl_register_mem = devtcp_register_mem,
		.btl_deregister_mem = devtcp_deregister_mem,
		.btl_registration_handle_size = sizeof(mca_btl_base_registration_handle_t),
		.btl_dump = devtcp_dump,
		.btl_register_error = devtcp_register_error,
	},
};
