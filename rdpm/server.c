// SPDX-License-Identifier: GPL-2.0
/*
 * rdpmd: the receive data path manager. Owns the devmem set-up of the NICs
 * in its configuration (reserved queues, flow rules, dma-buf bindings) and
 * serves unprivileged clients over a Unix SOCK_SEQPACKET socket with the
 * protocol of userspace/common/rdpm_proto.h (Documentation/rdpm.rst).
 *
 *   rdpmd [-c CONFIG] [-s SOCKET]
 *
 * Single-threaded: one epoll loop over the listening socket, the clients,
 * a signalfd and an rtnetlink socket for link events. Everything a client
 * holds is released the moment its socket closes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "proto.h"
#include "rdpmd.h"

struct rdpmd rdpmd = { .conf_path = RDPM_DEFAULT_CONF, .ops = &rdpm_devmem_ops };

/* Health: a managed NIC going down, away or coming (back) (rtnetlink). */
static int link_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
	const char *name = NULL;
	const struct nlattr *a;

	(void)data;
	if (nlh->nlmsg_type != RTM_NEWLINK && nlh->nlmsg_type != RTM_DELLINK)
		return MNL_CB_OK;
	mnl_attr_for_each(a, nlh, sizeof(*ifi))
		if (mnl_attr_get_type(a) == IFLA_IFNAME && !mnl_attr_validate(a, MNL_TYPE_STRING))
			name = mnl_attr_get_str(a);
	for (unsigned int i = 0; i < rdpmd.nnics; i++) {
		struct rdpm_nic *n = &rdpmd.nics[i];
		unsigned int count;

		if (n->nic && n->ifindex == ifi->ifi_index) {
			if (nlh->nlmsg_type == RTM_DELLINK) {
				count = rdpmd_drop(NULL, n, RDPM_EV_REMOVED);
				rdpm_log(LOG_WARNING, "%s: removed; %u binding(s) dropped",
					 n->conf.name, count);
				rdpm_nic_teardown(n, false);
				n->up = false;
			} else if (n->up && !(ifi->ifi_flags & IFF_UP)) {
				n->up = false;
				count = rdpmd_drop(NULL, n, RDPM_EV_LINK_DOWN);
				rdpm_log(LOG_WARNING, "%s: link down; %u binding(s) dropped",
					 n->conf.name, count);
			} else if (!n->up && (ifi->ifi_flags & IFF_UP)) {
				n->up = true;
				rdpm_log(LOG_NOTICE, "%s: link up", n->conf.name);
			}
		} else if (!n->nic && name && !strcmp(name, n->conf.name) &&
			   nlh->nlmsg_type == RTM_NEWLINK) {
			rdpm_log(LOG_NOTICE, "%s: appeared; setting it up", n->conf.name);
			rdpm_nic_setup(n, rdpmd.conf.state_dir);
			if (n->nic)
				n->up = ifi->ifi_flags & IFF_UP;
		}
	}
	return MNL_CB_OK;
}

static void link_read(struct mnl_socket *nl)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	ssize_t n;

	while ((n = mnl_socket_recvfrom(nl, buf, sizeof(buf))) > 0)
		mnl_cb_run(buf, n, 0, 0, link_cb, NULL);
	if (n < 0 && errno == ENOBUFS)
		rdpm_log(LOG_WARNING, "link events lost (ENOBUFS)");
}


/*
 * Whether directory @path (@what: which one) and every directory above it
 * are safe for rdpmd's socket or state: owned by root or rdpmd's uid, and
 * not writable by group or others unless sticky (then they cannot remove
 * or rename what is not theirs). The state directory itself may not be
 * writable by others at all (@strict): its files are trusted at start.
 * Otherwise another user could replace the socket clients connect to, or
 * the state files rdpmd replays as root. Logs why and returns false.
 */
static bool dir_safe(const char *path, const char *what, bool strict)
{
	char real[PATH_MAX], *slash;
	struct stat st;
	bool leaf = true;

	if (!realpath(path, real)) {
		rdpm_log(LOG_ERR, "%s %s: %m", what, path);
		return false;
	}
	for (;;) {
		if (lstat(real[0] ? real : "/", &st)) {
			rdpm_log(LOG_ERR, "%s %s: %s: %m", what, path, real[0] ? real : "/");
			return false;
		}
		if (!S_ISDIR(st.st_mode)) {
			rdpm_log(LOG_ERR, "%s %s: %s is not a directory", what, path, real);
			return false;
		}
		if (st.st_uid != 0 && st.st_uid != geteuid()) {
			rdpm_log(LOG_ERR, "%s %s: %s is owned by uid %u, not root or rdpmd's uid %u: "
				 "another user could replace what rdpmd keeps there; refusing to "
				 "start", what, path, real[0] ? real : "/", st.st_uid, geteuid());
			return false;
		}
		if ((st.st_mode & (S_IWGRP | S_IWOTH)) &&
		    (!(st.st_mode & S_ISVTX) || (leaf && strict))) {
			rdpm_log(LOG_ERR, "%s %s: %s is writable by %s (mode %04o)%s: another user "
				 "could replace what rdpmd keeps there; refusing to start", what,
				 path, real[0] ? real : "/",
				 st.st_mode & S_IWOTH ? "others" : "its group", st.st_mode & 07777,
				 leaf && strict ? "" : " without the sticky bit");
			return false;
		}
		if (!real[0] || !strcmp(real, "/"))
			return true;
		slash = strrchr(real, '/');
		*slash = 0;		/* "/a" becomes "": the root, last */
		leaf = false;
	}
}

/* The socket's directory: made if missing (0755), and safe (dir_safe). */
static bool socket_dir_ok(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)], *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return dir_safe(".", "socket directory", false);
	if (slash == dir)
		return dir_safe("/", "socket directory", false);
	*slash = 0;
	mkdir(dir, 0755);
	return dir_safe(dir, "socket directory", false);
}

static int listen_on(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, probe;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	/* A live daemon answers; a stale socket file is replaced. */
	probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe >= 0 && !connect(probe, (struct sockaddr *)&sa, sizeof(sa))) {
		close(probe);
		rdpm_log(LOG_ERR, "%s: another rdpmd is running", path);
		return -EADDRINUSE;
	}
	if (probe >= 0)
		close(probe);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(path, 0666) ||
	    listen(fd, 64)) {
		rdpm_log(LOG_ERR, "%s: cannot listen: %m", path);
		return -errno;
	}
	return fd;
}

static void usage(void)
{
	fprintf(stderr, "usage: rdpmd [-c CONFIG] [-s SOCKET]\n");
	exit(2);
}

/* The options and the configuration file; exits on errors. */
static void configure(int argc, char **argv)
{
	const char *sock_override = NULL;
	char err[512];
	int opt;

	while ((opt = getopt(argc, argv, "c:s:h")) != -1) {
		switch (opt) {
		case 'c': rdpmd.conf_path = optarg; break;
		case 's': sock_override = optarg; break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	if (rdpm_conf_load(rdpmd.conf_path, &rdpmd.conf, err, sizeof(err))) {
		rdpm_log(LOG_ERR, "%s", err);
		exit(1);
	}
	if (sock_override) {
		if (strlen(sock_override) >= sizeof(rdpmd.conf.socket)) {
			rdpm_log(LOG_ERR, "-s: socket path too long");
			exit(2);
		}
		snprintf(rdpmd.conf.socket, sizeof(rdpmd.conf.socket), "%s", sock_override);
	}
	if (rdpm_conf_fd_budget(&rdpmd.conf, err, sizeof(err))) {
		rdpm_log(LOG_ERR, "%s: refusing to start", err);
		exit(1);
	}
	if (mkdir(rdpmd.conf.state_dir, 0755) && errno != EEXIST) {
		rdpm_log(LOG_ERR, "state_dir %s: %m", rdpmd.conf.state_dir);
		exit(1);
	}
	if (!dir_safe(rdpmd.conf.state_dir, "state_dir", true) ||
	    !socket_dir_ok(rdpmd.conf.socket))
		exit(1);
}

/* The signals as a file descriptor: TERM and INT end, HUP reloads. */
static int signals_fd(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* Sets up each configured NIC; how many are ready. */
static unsigned int setup_nics(void)
{
	unsigned int ready = 0;

	for (unsigned int i = 0; i < rdpmd.conf.nnics; i++) {
		rdpmd.nics[i].conf = rdpmd.conf.nics[i];
		if (!rdpm_nic_setup(&rdpmd.nics[i], rdpmd.conf.state_dir))
			ready++;
	}
	rdpmd.nnics = rdpmd.conf.nnics;
	return ready;
}

static void watch(int fd, void *ptr)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ptr };

	epoll_ctl(rdpmd.epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* Reads the pending signals; false once one says to exit. */
static bool read_signals(int sfd)
{
	struct signalfd_siginfo si;
	bool running = true;

	while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			rdpmd_reload();
		} else {
			rdpm_log(LOG_NOTICE, "signal %u: exiting", si.ssi_signo);
			running = false;
		}
	}
	return running;
}

/* What clients can and cannot ask of this kernel (6.12 LTS: devmem RX only). */
static void log_kernel_features(void)
{
	char offers[128] = "", lacks[128] = "";
	unsigned int kf, bit;
	const char *name;

	if (devmem_kernel_features(&kf)) {
		rdpm_log(LOG_WARNING, "%s", devmem_last_error());
		return;
	}
	for (bit = 1; (name = devmem_kernel_feature_name(bit)); bit <<= 1) {
		char *list = kf & bit ? offers : lacks;

		snprintf(list + strlen(list), sizeof(offers) - strlen(list), " %s", name);
	}
	rdpm_log(LOG_INFO, "kernel offers:%s; lacks:%s", offers[0] ? offers : " nothing",
		 lacks[0] ? lacks : " nothing");
}

int main(int argc, char **argv)
{
	struct mnl_socket *nl;
	bool running = true;
	unsigned int ready;
	int lfd, sfd, err;

	rdpm_log_init();
	configure(argc, argv);
	sfd = signals_fd();
	lfd = listen_on(rdpmd.conf.socket);
	if (lfd < 0 || sfd < 0)
		return 1;
	rdpmd.lfd = lfd;
	if (rdpmd_clients_init()) {
		rdpm_log(LOG_ERR, "/dev/null: %m");
		return 1;
	}
	nl = mnl_socket_open(NETLINK_ROUTE);
	if (!nl || mnl_socket_bind(nl, RTMGRP_LINK, MNL_SOCKET_AUTOPID)) {
		rdpm_log(LOG_ERR, "rtnetlink: %m");
		return 1;
	}
	fcntl(mnl_socket_get_fd(nl), F_SETFL, O_NONBLOCK);
	log_kernel_features();
	ready = setup_nics();
	rdpmd.epfd = epoll_create1(EPOLL_CLOEXEC);
	/* Forked before the loop: the helper drops every fd but its socket. */
	err = rdpm_closer_start(RDPM_CLOSER_HELPER);
	if (err) {
		rdpm_log(LOG_ERR, "cannot start the closer helper: %s", strerror(-err));
		return 1;
	}
	watch(lfd, &rdpmd.lfd);
	watch(sfd, &sfd);
	watch(mnl_socket_get_fd(nl), nl);
	rdpm_log(LOG_INFO, "ready: %u of %u NIC(s) set up, listening on %s", ready, rdpmd.nnics,
		 rdpmd.conf.socket);
	while (running) {
		struct epoll_event evs[32];
		int t = rdpmd_clients_timeout(), tc = rdpm_closer_timeout();
		int n = epoll_wait(rdpmd.epfd, evs, 32, t < 0 || (tc >= 0 && tc < t) ? tc : t);

		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;

			if (p == &rdpmd.lfd)
				rdpmd_client_accept();
			else if (p == &sfd)
				running &= read_signals(sfd);
			else if (p == nl)
				link_read(nl);
			else if (rdpm_closer_owns(p))
				rdpm_closer_event(p, evs[i].events);
			else
				rdpmd_client_event(p, evs[i].events);
		}
		/* The closer's watchdog, HELLO deadlines, a paused listener. */
		rdpm_closer_tick();
		rdpmd_clients_tick();
		/* Closed here, after the batch: a pointer in evs stays valid. */
		rdpmd_clients_reap();
	}
	rdpmd_clients_close_all();
	/* Before the closer's last child, which holds what rdpmd still has:
	 * no binding stays pinned while a client's file keeps that child. */
	for (unsigned int i = 0; i < rdpmd.nnics; i++)
		rdpm_nic_teardown(&rdpmd.nics[i], true);
	rdpm_closer_stop();
	unlink(rdpmd.conf.socket);
	mnl_socket_close(nl);
	rdpm_log(LOG_INFO, "exited cleanly");
	return 0;
}
