// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The component: its MCA parameters, choosing the interface, the listening
 * sockets, the modex and progress.
 */
#include "btl_devtcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

static int devtcp_register(void);
static int devtcp_open(void);
static int devtcp_close(void);
static mca_btl_base_module_t **devtcp_init(int *num_btls, bool progress_threads,
					   bool mpi_threads);
static int devtcp_progress(void);

struct devtcp_component mca_btl_devtcp_component = {
	.super = {
		.btl_version = {
			MCA_BTL_DEFAULT_VERSION("devtcp"),
			.mca_open_component = devtcp_open,
			.mca_close_component = devtcp_close,
			.mca_register_component_params = devtcp_register,
		},
		.btl_data = {
			.param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT,
		},
		.btl_init = devtcp_init,
		.btl_progress = devtcp_progress,
	},
	.data_links = 1,
	.data_min = 4096,
	.connect_timeout = 2,
	.peer_timeout = 300,
};

/*
 * @len random bytes into @buf (the kernel's CSPRNG: secrets, nonces,
 * handles): 0, or -1 with errno set after saying what @what lacks.
 */
int devtcp_random(void *buf, size_t len, const char *what)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = getrandom((char *)buf + done, len - done, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? errno : EIO;

			opal_output(0, "btl:devtcp: no random bytes for %s: %s", what, strerror(err));
			errno = err;
			return -1;
		}
		done += n;
	}
	return 0;
}

static int reg_int(const char *name, const char *help, int *storage)
{
	return mca_base_component_var_register(&mca_btl_devtcp_component.super.btl_version,
					       name, help, MCA_BASE_VAR_TYPE_INT, NULL, 0, 0,
					       OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
					       storage);
}

static int devtcp_register(void)
{
	struct devtcp_component *c = &mca_btl_devtcp_component;
	mca_btl_base_module_t *b = &devtcp_module_template.super;

	c->if_include = NULL;
	mca_base_component_var_register(&c->super.btl_version, "if_include",
		"The network interfaces this BTL uses, comma-separated, each by name or by a "
		"subnet one of its addresses is in (e.g. eth1, or eth1,eth2, or "
		"10.1.0.0/16,10.2.0.0/16; at most 8): one BTL module each, and the PML spreads "
		"messages over them. Default: the first interface that is up with an address "
		"(btl_devtcp_family) and not loopback, else loopback",
		MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_1,
		MCA_BASE_VAR_SCOPE_READONLY, &c->if_include);
	c->family = 0;
	reg_int("family",
		"The address family: 4 (IPv4), 6 (IPv6, not link-local) or 0 (IPv4 where the "
		"interface has an IPv4 address, else IPv6)", &c->family);
	reg_int("data_links",
		"Data connections per peer and direction (1-8); payloads of a message go on "
		"one of them, round robin", &c->data_links);
	reg_int("data_min",
		"Payloads of at least this many bytes travel on a data connection (into the "
		"receiver's dma-buf where it has devmem); smaller ones go with their header",
		&c->data_min);
	reg_int("ctrl_port", "TCP port of the control listener (0: any free port)",
		&c->ctrl_port);
	reg_int("data_port",
		"TCP port of the data listener (0: any free port). A devmem receiver steers "
		"this port to its dma-buf queue", &c->data_port);
	reg_int("verbose", "Verbosity of btl/devtcp's messages (0-100; 1 names each connection "
		"refused, e.g. one that fails authentication)", &c->verbose);
	reg_int("connect_timeout",
		"Seconds an accepted connection has to authenticate (its hello, which follows the "
		"connect at once), after which it is closed; twice that for a message's data "
		"connection to arrive, after which the peer is failed; five times that for a "
		"connection's TCP handshake (at least 1)", &c->connect_timeout);
	reg_int("peer_timeout",
		"Seconds after which a connection whose peer stopped answering (host down, network "
		"cut, no reset) fails the job: TCP keepalive probes and TCP_USER_TIMEOUT on every "
		"connection (0: off, the kernel's defaults; a peer that reads nothing for this long "
		"while we send to it may count as gone on some kernels)", &c->peer_timeout);
	c->devmem_mode = "auto";
	mca_base_component_var_register(&c->super.btl_version, "devmem",
		"Receive payloads into a dma-buf with devmem TCP: auto (through rdpmd when one "
		"listens, else directly where `devmem nic setup` reserved queues of the interface; "
		"otherwise plain), on (the same, and MPI_Init fails when it cannot), off",
		MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_1,
		MCA_BASE_VAR_SCOPE_READONLY, &c->devmem_mode);
	c->devmem_mem = "udmabuf";
	mca_base_component_var_register(&c->super.btl_version, "devmem_mem",
		"What the dma-buf is: udmabuf (host memory, default; the PML reads payloads in "
		"place or puts copy them once) or cuda (GPU memory of btl_devtcp_devmem_cuda_device, "
		"a dma-buf of the rank's own: payloads are gathered on the GPU by libdevmem's unpack "
		"kernels and copied once into the host buffers the PML gives, as this Open MPI is "
		"built without CUDA support)",
		MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4,
		MCA_BASE_VAR_SCOPE_READONLY, &c->devmem_mem);
	c->devmem_cuda_device = 0;
	reg_int("devmem_cuda_device",
		"The CUDA device whose memory the dma-buf is, with btl_devtcp_devmem_mem cuda",
		&c->devmem_cuda_device);
	c->devmem_size = 64 << 20;
	mca_base_component_var_register(&c->super.btl_version, "devmem_size",
		"Bytes of the dma-buf each rank receives into",
		MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_4,
		MCA_BASE_VAR_SCOPE_READONLY, &c->devmem_size);
	c->devmem_queue = -1;
	reg_int("devmem_queue",
		"The RX queue to bind on the direct path (-1: the last one `devmem nic setup` "
		"reserved); rdpmd picks its own", &c->devmem_queue);
	c->devmem_inplace = 0;
	reg_int("devmem_inplace",
		"With devmem, 1 caps the fragment sizes this rank sends so that a payload lands in "
		"at most 15 pieces of the receiver's dma-buf, which ob1 reads in place (no copy, "
		"but many more fragments: at MTU 1500 each is 20272 bytes at most; see "
		"btl_devtcp_devmem_page_size); 0 (default) "
		"keeps btl_max_send_size, and a payload in more pieces is copied once out of the "
		"dma-buf", &c->devmem_inplace);
	c->devmem_page_size = 0;
	reg_int("devmem_page_size",
		"Bytes of each receive buffer of the dma-buf's binding (netdev rx-page-size, "
		"Linux 7.3 and a NIC that takes it; a power of two; 0: the system page size), "
		"directly or through rdpmd. Larger than a page, the dma-buf comes from the "
		"system dma-heap. With btl_devtcp_devmem_inplace, 16384 at MTU 9000 lets "
		"fragments grow to 125272 bytes", &c->devmem_page_size);
	c->rdpm_socket = getenv("RDPM_SOCKET");
	mca_base_component_var_register(&c->super.btl_version, "rdpm_socket",
		"rdpmd's socket (default: $RDPM_SOCKET, else /run/rdpm/rdpm.sock)",
		MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4,
		MCA_BASE_VAR_SCOPE_READONLY, &c->rdpm_socket);
	c->rdpm_shared = true;
	mca_base_component_var_register(&c->super.btl_version, "rdpm_shared",
		"Through rdpmd, receive into a share of btl_devtcp_devmem_size bytes of the "
		"host's shared dma-buf for this user, which rdpmd binds once per NIC for all of "
		"the user's ranks (true, default; a rank's own dma-buf when the daemon offers no "
		"shared buffers), or into a dma-buf of the rank's own, bound to a reserved queue "
		"of its own (false)",
		MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4,
		MCA_BASE_VAR_SCOPE_READONLY, &c->rdpm_shared);

	b->btl_exclusivity = MCA_BTL_EXCLUSIVITY_LOW + 100;
	b->btl_eager_limit = 64 * 1024;
	b->btl_rndv_eager_limit = 64 * 1024;
	b->btl_max_send_size = 256 * 1024;
	/* Contiguous large messages go by put (ob1's RDMA protocol), straight
	 * into the receive buffer; the rest in btl_max_send_size fragments
	 * (ob1's pipeline protocol). */
	b->btl_rdma_pipeline_send_length = 128 * 1024;
	b->btl_rdma_pipeline_frag_size = DEVTCP_PUT_LIMIT;
	b->btl_min_rdma_pipeline_size = 0;
	b->btl_put_limit = DEVTCP_PUT_LIMIT;
	b->btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_SEND_INPLACE | MCA_BTL_FLAGS_PUT;
	b->btl_bandwidth = 10000;
	b->btl_latency = 100;
	return mca_btl_base_param_register(&c->super.btl_version, b);
}

static int devtcp_open(void)
{
	struct devtcp_component *c = &mca_btl_devtcp_component;

	c->output = opal_output_open(NULL);
	opal_output_set_verbosity(c->output, c->verbose);
	return OPAL_SUCCESS;
}

static int devtcp_close(void)
{
	opal_output_close(mca_btl_devtcp_component.output);
	return OPAL_SUCCESS;
}

static int listen_on(struct devtcp_module *m, int port, uint16_t *bound, const char *param)
{
	struct sockaddr_storage ss;
	socklen_t len = devtcp_sockaddr(&m->addr, htons(port), &ss);
	char ip[DEVTCP_ADDRSTRLEN];
	int fd, one = 1;

	fd = socket(m->addr.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		opal_output(0, "btl:devtcp: cannot listen on %s port %d: %s (MCA parameter %s)",
			    devtcp_ntop(&m->addr, ip), port, strerror(errno), param);
		close(fd);
		return -1;
	}
	/* The port sits at the same place in both families' addresses. */
	*bound = ((struct sockaddr_in *)&ss)->sin_port;
	return fd;
}

static void module_free(struct devtcp_module *m)
{
	devtcp_devmem_close(m);
	if (m->ctrl_listen >= 0)
		close(m->ctrl_listen);
	if (m->data_listen >= 0)
		close(m->data_listen);
	pthread_mutex_destroy(&m->ep_lock);
	pthread_mutex_destroy(&m->rx_lock);
	pthread_mutex_destroy(&m->reg_lock);
	pthread_cond_destroy(&m->reg_cond);
	free(m);
}

/* A module on interface @ifname (NULL: the default one): its listeners and,
 * per btl_devtcp_devmem, its dma-buf. */
static struct devtcp_module *module_open(const char *ifname)
{
	struct devtcp_component *c = &mca_btl_devtcp_component;
	struct devtcp_module *m = malloc(sizeof(*m));
	char ip[DEVTCP_ADDRSTRLEN];

	if (!m)
		return NULL;
	/* the template's other fields are zero: no peers, no dma-buf yet */
	*m = devtcp_module_template;
	m->ctrl_listen = m->data_listen = -1;
	pthread_mutex_init(&m->ep_lock, NULL);
	pthread_mutex_init(&m->reg_lock, NULL);
	pthread_cond_init(&m->reg_cond, NULL);
	pthread_mutex_init(&m->rx_lock, NULL);
	if (devtcp_pick_interface(m, ifname, c->family) != OPAL_SUCCESS)
		goto fail;
	m->ctrl_listen = listen_on(m, c->ctrl_port, &m->addr.ctrl_port, "btl_devtcp_ctrl_port");
	m->data_listen = listen_on(m, c->data_port, &m->addr.data_port, "btl_devtcp_data_port");
	if (m->ctrl_listen < 0 || m->data_listen < 0)
		goto fail;
	if (devtcp_devmem_open(m) != OPAL_SUCCESS)
		goto fail;
	devtcp_verbose(5, "%s %s/%u: control port %u, data port %u, %d data link(s)", m->ifname,
		       devtcp_ntop(&m->addr, ip), m->addr.prefix, ntohs(m->addr.ctrl_port),
		       ntohs(m->addr.data_port), c->data_links);
	return m;
fail:
	module_free(m);
	return NULL;
}

/* One module per interface of btl_devtcp_if_include (a comma-separated
 * list), or one on the default interface. */
static int open_modules(void)
{
	struct devtcp_component *c = &mca_btl_devtcp_component;
	char *list, *name, *save = NULL;
	int rc = OPAL_SUCCESS;

	if (!c->if_include || !*c->if_include) {
		c->modules[0] = module_open(NULL);
		c->num_modules = c->modules[0] ? 1 : 0;
		return c->num_modules ? OPAL_SUCCESS : OPAL_ERROR;
	}
	list = strdup(c->if_include);
	if (!list)
		return OPAL_ERR_OUT_OF_RESOURCE;
	for (name = strtok_r(list, ",", &save); name && rc == OPAL_SUCCESS;
	     name = strtok_r(NULL, ",", &save)) {
		struct devtcp_module *m;

		if (c->num_modules == DEVTCP_MAX_IFS) {
			opal_output(0, "btl:devtcp: btl_devtcp_if_include names more than %d "
				    "interfaces", DEVTCP_MAX_IFS);
			rc = OPAL_ERR_BAD_PARAM;
			break;
		}
		m = module_open(name);
		if (!m) {
			rc = OPAL_ERROR;
			break;
		}
		for (int i = 0; i < c->num_modules && rc == OPAL_SUCCESS; i++)
			if (!strcmp(c->modules[i]->ifname, m->ifname)) {
				opal_output(0, "btl:devtcp: btl_devtcp_if_include: %s is interface %s "
					    "again", name, m->ifname);
				rc = OPAL_ERR_BAD_PARAM;
			}
		if (rc == OPAL_SUCCESS)
			c->modules[c->num_modules++] = m;
		else
			module_free(m);
	}
	free(list);
	if (rc == OPAL_SUCCESS && !c->num_modules) {
		opal_output(0, "btl:devtcp: btl_devtcp_if_include '%s' names no interface",
			    c->if_include);
		rc = OPAL_ERR_BAD_PARAM;
	}
	return rc;
}

static mca_btl_base_module_t **devtcp_init(int *num_btls, bool progress_threads,
					   bool mpi_threads)
{
	struct devtcp_component *c = &mca_btl_devtcp_component;
	unsigned char blob[DEVTCP_KEY_LEN + DEVTCP_MAX_IFS * sizeof(struct devtcp_addr)];
	mca_btl_base_module_t **btls = NULL;
	int rc, i;

	(void)progress_threads;
	*num_btls = 0;
	if (c->data_links < 1 || c->data_links > DEVTCP_MAX_LINKS) {
		opal_output(0, "btl:devtcp: btl_devtcp_data_links is %d; it must be 1-%d",
			    c->data_links, DEVTCP_MAX_LINKS);
		return NULL;
	}
	if (c->data_min < 1) {
		opal_output(0, "btl:devtcp: btl_devtcp_data_min is %d; it must be at least 1",
			    c->data_min);
		return NULL;
	}
	if (c->connect_timeout < 1 || c->peer_timeout < 0) {
		opal_output(0, "btl:devtcp: btl_devtcp_connect_timeout is %d and btl_devtcp_peer_timeout "
			    "%d: want at least 1 and at least 0", c->connect_timeout, c->peer_timeout);
		return NULL;
	}
	if (devtcp_random(c->secret, sizeof(c->secret), "the job secret") < 0)
		return NULL;
	if (c->family != 0 && c->family != 4 && c->family != 6) {
		opal_output(0, "btl:devtcp: btl_devtcp_family is %d: want 0 (IPv4 where the "
			    "interface has it, else IPv6), 4 or 6", c->family);
		return NULL;
	}
	/* a peer refuses a larger put as a malformed message */
	if (devtcp_module_template.super.btl_put_limit > DEVTCP_PUT_LIMIT ||
	    devtcp_module_template.super.btl_rdma_pipeline_frag_size > DEVTCP_PUT_LIMIT) {
		opal_output(0, "btl:devtcp: btl_devtcp_put_limit (%zu) and "
			    "btl_devtcp_rdma_pipeline_frag_size (%zu) must be at most %lu (1 GiB)",
			    devtcp_module_template.super.btl_put_limit,
			    devtcp_module_template.super.btl_rdma_pipeline_frag_size,
			    DEVTCP_PUT_LIMIT);
		return NULL;
	}
	if (open_modules() != OPAL_SUCCESS)
		goto fail;
	btls = malloc(c->num_modules * sizeof(*btls));
	if (!btls)
		goto fail;
	memcpy(blob, c->secret, DEVTCP_KEY_LEN);
	for (i = 0; i < c->num_modules; i++) {
		memcpy(blob + DEVTCP_KEY_LEN + i * sizeof(struct devtcp_addr), &c->modules[i]->addr,
		       sizeof(struct devtcp_addr));
		btls[i] = &c->modules[i]->super;
	}
	OPAL_MODEX_SEND(rc, DEVTCP_MODEX_SCOPE, &c->super.btl_version, blob,
			DEVTCP_KEY_LEN + c->num_modules * sizeof(struct devtcp_addr));
	if (rc != OPAL_SUCCESS)
		goto fail;
	devtcp_verbose(5, "%d interface(s); threads: %s", c->num_modules,
		       mpi_threads ? "MPI_THREAD_MULTIPLE" : "one at a time");
	*num_btls = c->num_modules;
	return btls;
fail:
	while (c->num_modules)
		module_free(c->modules[--c->num_modules]);
	free(btls);
	return NULL;
}

static int devtcp_progress(void)
{
	struct devtcp_component *c = &mca_btl_devtcp_component;
	int events = 0;

	for (int i = 0; i < c->num_modules; i++)
		events += devtcp_progress_module(c->modules[i]);
	return events;
}
