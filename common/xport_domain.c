/* The transport's bottom layer (see xport_domain.h): provider choice,
 * fabric, domain, completion and event queues, wait fds, the provider's
 * limits, memory registration, the registration cache (client) or buffer
 * pool (server), and the queue of work deferred to the engine.
 *
 * Registration follows the provider's mr_mode so the same code is right on
 * tcp (mr_mode 0: offsets, caller keys) and verbs (FI_MR_LOCAL |
 * FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY): local descriptors are
 * always passed, keys always read back with fi_mr_key, remote addresses
 * computed by mraddr.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "mraddr.h"
#include "xport_domain.h"

#define XP_FI_VERSION FI_VERSION(1, 11)

/* Debian's libfabric links libinfinipath and libpsm2, whose constructors
 * install handlers for SIGSEGV, SIGABRT and friends that write a ".btr" file
 * into the current directory and exit(1): a crash or a failed assert then
 * looks like a normal exit to the parent (Check, mpiexec, a supervisor).
 * Our constructor runs after theirs (they are our dependencies) and puts
 * back the default action for any handler that lives in one of them. */
__attribute__((constructor)) static void xp_restore_crash_signals(void)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction sa;
		Dl_info info;
		void *h;

		if (sigaction(sigs[i], NULL, &sa))
			continue;
		h = (sa.sa_flags & SA_SIGINFO) ? (void *)sa.sa_sigaction
					       : (void *)sa.sa_handler;
		if (h == (void *)SIG_DFL || h == (void *)SIG_IGN || !dladdr(h, &info) ||
		    !info.dli_fname)
			continue;
		if (strstr(info.dli_fname, "infinipath") ||
		    strstr(info.dli_fname, "psm")) {
			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = SIG_DFL;
			sigaction(sigs[i], &sa, NULL);
		}
	}
}

int64_t xp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* libfabric returns -FI_Exxx, which equal -Exxx for the errno range. */
int xp_errno(int fi_ret)
{
	if (fi_ret >= 0)
		return 0;
	if (-fi_ret < FI_ERRNO_OFFSET)
		return fi_ret;
	return -EIO;
}

static struct fi_info *xp_hints(const char *prov)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->caps = FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	h->ep_attr->type = FI_EP_MSG;
	/* The modes we can live with: verbs wants FI_RX_CQ_DATA (receives stay
	 * posted) and some providers FI_CONTEXT (every op has fi_context2). */
	h->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
	h->domain_attr->mr_mode =
		FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_SAW;
	h->fabric_attr->prov_name = strdup(prov);
	return h;
}

/* fi_getinfo for one provider; node/service/flags as for fi_getinfo. */
int xp_getinfo(struct xp_fabric *fab, const char *node, const char *service,
	       uint64_t flags, struct fi_info **out)
{
	struct fi_info *h = xp_hints(fab->info ? fab->info->fabric_attr->prov_name
					       : fab->params.provider);
	int ret;

	if (!h)
		return -ENOMEM;
	ret = fi_getinfo(XP_FI_VERSION, node, service, flags, h, out);
	fi_freeinfo(h);
	return xp_errno(ret);
}

/* rpfs keeps its own registration cache (regcache.c), kept right by hooks on
 * free/munmap/mremap/madvise (memhooks.c). libfabric's verbs provider has an
 * MR cache of its own, and with it on, rpfs on verbs read wrong bytes: every
 * inline and fast read failed on rxe ("unexpected reply", "malformed fast
 * message"), because that cache handed back registrations of memory that
 * had been unmapped and mapped again at the same address (its monitor does
 * not see unmaps that go through our hooks) and its default monitor patches
 * those libc functions in place, bypassing our hooks as well. rpfs never
 * uses libfabric's cache, so it is always turned off (a monitor of
 * "disabled" turns the cache off), also over a value the user set: a
 * faster MR cache for another library is not worth wrong data for ours.
 * libfabric reads this when it initialises, at the first fi_getinfo of the
 * process; if something initialised it earlier, rcache_hooks_active()
 * notices that our hooks are bypassed, and a stale registration on the
 * message path still shows as a malformed message (the connection closes),
 * not as data.
 *
 * The environment is changed once, when the program or library is loaded
 * (the constructor below), before any thread of ours exists. setenv is not
 * safe beside getenv in another thread: adding a variable moves the
 * environ array and frees the old one, and a getenv walking it reads freed
 * memory. rpfsd did that when it opened its client fabric (to reach its
 * peers) on a thread while its main thread was in libfabric's first
 * fi_getinfo, which reads dozens of variables: a rare SIGSEGV in getenv at
 * start-up. */
static const char *replaced_monitor; /* the user's value, logged at first use */

static void prepare_libfabric_env(void)
{
	const char *v = getenv("FI_MR_CACHE_MONITOR");

	if (v && strcmp(v, "disabled"))
		replaced_monitor = v; /* the string stays: setenv never frees it */
	setenv("FI_MR_CACHE_MONITOR", "disabled", 1);
	/* libfabric's tcp provider gives each entry of its transfer pool a
	 * 16 KiB buffer for messages that arrive before a receive is posted,
	 * and grows the pool 1024 entries at a time, zeroing them: 17 MB
	 * touched, 6 ms of the first connection. rpfs keeps a receive posted
	 * for every message a peer may send (credits), so nothing of size
	 * arrives unexpected; a larger one still gets its own buffer. A value
	 * the user set is kept. */
	setenv("FI_TCP_MAX_RX_SIZE", "512", 0);
}

static pthread_once_t env_once = PTHREAD_ONCE_INIT;

__attribute__((constructor)) static void xp_prepare_env_at_load(void)
{
	pthread_once(&env_once, prepare_libfabric_env);
}

static void log_replaced_env(void)
{
	if (replaced_monitor)
		log_info(
			"FI_MR_CACHE_MONITOR=%s replaced by 'disabled': rpfs keeps its own registration cache",
			replaced_monitor);
}

static pthread_once_t env_log_once = PTHREAD_ONCE_INIT;

/* At a fabric's opening: normally a no-op (the constructor ran). */
static void prepare_libfabric_env_once(void)
{
	pthread_once(&env_once, prepare_libfabric_env);
	pthread_once(&env_log_once, log_replaced_env);
}

/* Does /sys/class/infiniband list a device (rdma-core's devices, rxe too)? */
static int rdma_device_present(void)
{
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *e;
	int found = 0;

	if (!d)
		return 0;
	while (!found && (e = readdir(d)))
		found = e->d_name[0] != '.';
	closedir(d);
	return found;
}

/* libfabric's verbs provider, where the kernel lists an RDMA device:
 * asking it costs 40-100 ms even without a device (it scans
 * /proc/kallsyms first), so it is asked only then. */
static int verbs_info(struct fi_info **out)
{
	struct fi_info *h;
	int ret;

	if (!rdma_device_present())
		return -ENODEV;
	h = xp_hints("verbs");
	if (!h)
		return -ENOMEM;
	ret = fi_getinfo(XP_FI_VERSION, NULL, NULL, 0, h, out);
	fi_freeinfo(h);
	return xp_errno(ret);
}

static int pick_provider(struct xp_fabric *fab)
{
	const char *env = getenv("RPFS_PROVIDER");
	struct fi_info *info = NULL;

	if (!fab->params.provider[0] && env && *env)
		snprintf(fab->params.provider, sizeof(fab->params.provider), "%s", env);
	if (!fab->params.provider[0]) {
		/* verbs where a device exists, else tcp (no RDMA NIC). */
		if (!verbs_info(&info)) {
			strcpy(fab->params.provider, "verbs");
			fab->info = info;
			return 0;
		}
		strcpy(fab->params.provider, "tcp");
	}
	if (xp_getinfo(fab, NULL, NULL, 0, &info)) {
		log_err("libfabric provider '%s' is not available for reliable connections with RMA (check RPFS_PROVIDER, fi_info -p %s)",
			fab->params.provider, fab->params.provider);
		return -ENODEV;
	}
	fab->info = info;
	return 0;
}

const char *xp_provider_default(void)
{
	struct fi_info *info = NULL;

	prepare_libfabric_env_once();
	if (verbs_info(&info))
		return "tcp";
	fi_freeinfo(info);
	return "verbs";
}

/* Settings the provider cannot honour: messages (a Fast RDMA slot holds the
 * largest) must fit max_msg_size, and an endpoint must be able to keep a
 * connection's receives posted. Credits are clamped (the connection just
 * carries fewer requests at once); a slot that cannot be sent is an error. */
static int fit_provider_limits(struct xp_fabric *fab)
{
	struct xp_params *p = &fab->params;

	if (p->fast_max + XP_MSG_ROOM > fab->max_msg) {
		log_err("fast_max %zu is too large for provider %s: its largest message is %zu bytes (%u of them are headers)",
			p->fast_max, fab->info->fabric_attr->prov_name, fab->max_msg,
			XP_MSG_ROOM);
		return -EINVAL;
	}
	if (fab->rx_depth && p->credits + XP_CTRL_RECVS > fab->rx_depth) {
		uint32_t c = (uint32_t)(fab->rx_depth - XP_CTRL_RECVS);

		log_warn(
			"credits %u: provider %s posts at most %zu receives per endpoint; using %u",
			p->credits, fab->info->fabric_attr->prov_name, fab->rx_depth, c);
		p->credits = c;
	}
	return 0;
}

static int open_waitfd(struct fid *fid, int *fd)
{
	return fi_control(fid, FI_GETWAIT, fd);
}

static int epoll_add(int epfd, int fd, uint32_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static int fab_reg(void *ctx, void *addr, size_t len, void **handle)
{
	struct xp_fabric *fab = ctx;
	struct xp_mr *mr;
	int ret = xp_mr_reg_locked(fab, addr, len, &mr);

	if (!ret)
		*handle = mr;
	return ret;
}

static void fab_dereg(void *ctx, void *handle)
{
	xp_mr_dereg(handle);
}

/* Provider, fabric, domain, event and completion queues, wait fds, and the
 * client's registration cache or the server's buffer pool. */
int xp_domain_open(struct xp_fabric *fab)
{
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_DATA, .size = 16384, .wait_obj = FI_WAIT_FD};
	struct fi_eq_attr eq_attr = {.size = 256, .wait_obj = FI_WAIT_FD};
	struct rpfs_regops ops = {fab_reg, fab_dereg, fab};
	const struct xp_params *p = &fab->params;
	uint64_t mode;
	int ret;

	prepare_libfabric_env_once();
	ret = pick_provider(fab);
	if (ret)
		return ret;
	mode = fab->info->domain_attr->mr_mode;
	fab->virt_addr = mode & FI_MR_VIRT_ADDR;
	fab->prov_key = mode & FI_MR_PROV_KEY;
	fab->mr_local = mode & FI_MR_LOCAL;
	fab->iov_limit = fab->info->tx_attr->iov_limit;
	fab->max_msg = fab->info->ep_attr->max_msg_size;
	fab->rx_depth = fab->info->rx_attr->size;
	ret = fit_provider_limits(fab);
	if (ret)
		return ret;
	/* verbs moves RDMA in the NIC; the software providers (tcp, net, ...)
	 * move it only while the target process polls (FACTS.md). */
	fab->sw_rma = strcmp(fab->info->fabric_attr->prov_name, "verbs") != 0;
	if (fab->info->domain_attr->cq_data_size < 4) {
		log_err("provider %s carries no remote CQ data: Fast RDMA Write needs it",
			fab->info->fabric_attr->prov_name);
		return -ENOTSUP;
	}

	ret = xp_errno(fi_fabric(fab->info->fabric_attr, &fab->fabric, NULL));
	if (ret) {
		log_err("couldn't open fabric %s: %s", fab->info->fabric_attr->name,
			fi_strerror(-ret));
		return ret;
	}
	ret = xp_errno(fi_domain(fab->fabric, fab->info, &fab->domain, NULL));
	if (ret) {
		log_err("couldn't open domain: %s", fi_strerror(-ret));
		return ret;
	}
	ret = xp_errno(fi_eq_open(fab->fabric, &eq_attr, &fab->eq, NULL));
	if (ret) {
		log_err("couldn't open event queue: %s", fi_strerror(-ret));
		return ret;
	}
	ret = xp_errno(fi_cq_open(fab->domain, &cq_attr, &fab->cq, NULL));
	if (ret) {
		log_err("couldn't open completion queue: %s", fi_strerror(-ret));
		return ret;
	}

	/* Blocking waits: epoll over the CQ's and EQ's fds plus an eventfd for
	 * posted work. Without wait fds the engine falls back to short sleeps. */
	fab->post_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	fab->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (fab->post_fd < 0 || fab->epfd < 0)
		return -errno;
	epoll_add(fab->epfd, fab->post_fd, 0);
	if (!open_waitfd(&fab->cq->fid, &fab->cq_fd) &&
	    !open_waitfd(&fab->eq->fid, &fab->eq_fd) &&
	    !epoll_add(fab->epfd, fab->cq_fd, 1) && !epoll_add(fab->epfd, fab->eq_fd, 2))
		fab->can_wait = true;
	else
		log_info("provider gives no wait fds: idle waits sleep in short steps");

	if (fab->role == XP_CLIENT) {
		struct rcache_params rp;

		rcache_params_default(&rp);
		rp.max_entries = p->rcache_max_entries;
		rp.max_bytes = p->rcache_max_bytes;
		rp.batch = p->rcache_batch;
		/* Providers that pin pages need registrations dropped when memory goes.
		 */
		rp.pins_pages = fab->mr_local || (mode & FI_MR_ALLOCATED);
		ret = rcache_create(&rp, &ops, &fab->rcache);
		if (ret)
			return ret;
	} else {
		struct bpool_params bp;

		bpool_params_default(&bp);
		bp.zone_bytes = p->pool_zone_bytes;
		if (bp.max_buf < p->chunk_size)
			bp.max_buf = p->chunk_size;
		ret = bpool_create(&bp, &ops, &fab->pool);
		if (ret) {
			log_err("couldn't create the buffer pool: %s", strerror(-ret));
			return ret;
		}
	}
	log_info(
		"transport: provider %s, mr_mode %s%s%s, max_msg %zu, iov_limit %zu, rx_depth %zu",
		fab->info->fabric_attr->prov_name,
		fab->virt_addr ? "virt_addr " : "offset ",
		fab->prov_key ? "prov_key " : "", fab->mr_local ? "local" : "",
		fab->max_msg, fab->iov_limit, fab->rx_depth);
	return 0;
}

/* Endpoints must be closed before (they are bound to the CQ). */
void xp_domain_close(struct xp_fabric *fab)
{
	if (fab->pep)
		fi_close(&fab->pep->fid);
	if (fab->rcache)
		rcache_destroy(fab->rcache);
	if (fab->pool)
		bpool_destroy(fab->pool);
	if (fab->cq)
		fi_close(&fab->cq->fid);
	if (fab->eq)
		fi_close(&fab->eq->fid);
	if (fab->domain)
		fi_close(&fab->domain->fid);
	if (fab->fabric)
		fi_close(&fab->fabric->fid);
	if (fab->info)
		fi_freeinfo(fab->info);
	if (fab->epfd >= 0)
		close(fab->epfd);
	if (fab->post_fd >= 0)
		close(fab->post_fd);
	fab->pep = NULL;
	fab->rcache = NULL;
	fab->pool = NULL;
	fab->cq = NULL;
	fab->eq = NULL;
	fab->domain = NULL;
	fab->fabric = NULL;
	fab->info = NULL;
	fab->epfd = fab->post_fd = -1;
}

const char *xp_fabric_provider(const struct xp_fabric *fab)
{
	return fab->info->fabric_attr->prov_name;
}

const char *xp_libfabric_desc(char *buf, size_t len)
{
	uint32_t v = fi_version();

#ifdef RPFS_EMBEDDED_LIBFABRIC
	snprintf(buf, len, "libfabric %u.%u, embedded", FI_MAJOR(v), FI_MINOR(v));
#else
	snprintf(buf, len, "libfabric %u.%u, the system's", FI_MAJOR(v), FI_MINOR(v));
#endif
	return buf;
}

/* ---- memory registration -------------------------------------------------- */

int xp_mr_reg_locked(struct xp_fabric *fab, void *addr, size_t len, struct xp_mr **out)
{
	uint64_t access =
		FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	struct xp_mr *mr = calloc(1, sizeof(*mr));
	int ret;

	if (!mr)
		return -ENOMEM;
	ret = xp_errno(fi_mr_reg(fab->domain, addr, len, access, 0,
				 xp_requested_key(fab->prov_key, &fab->next_key), 0,
				 &mr->mr, NULL));
	if (ret) {
		log_err("couldn't register %zu bytes at %p: %s", len, addr,
			fi_strerror(-ret));
		free(mr);
		return ret;
	}
	mr->desc = fi_mr_desc(mr->mr);
	mr->key = fi_mr_key(mr->mr);
	mr->base = addr;
	mr->len = len;
	mr->fab = fab;
	*out = mr;
	return 0;
}

int xp_mr_reg(struct xp_fabric *fab, void *addr, size_t len, struct xp_mr **out)
{
	int ret;

	xp_lock_quiet(fab);
	ret = xp_mr_reg_locked(fab, addr, len, out);
	xp_unlock(fab);
	return ret;
}

void xp_mr_dereg(struct xp_mr *mr)
{
	if (!mr)
		return;
	fi_close(&mr->mr->fid);
	free(mr);
}

void *xp_mr_desc(struct xp_mr *mr)
{
	return mr->desc;
}

int xp_cache_reg(struct xp_fabric *fab, const void *addr, size_t len, void **region)
{
	struct rcache_region *r;
	int ret;

	if (!fab->rcache)
		return -EINVAL;
	ret = rcache_get(fab->rcache, addr, len, &r);
	if (!ret)
		*region = r;
	return ret;
}

void xp_cache_unreg(struct xp_fabric *fab, void *region)
{
	rcache_put(fab->rcache, region);
}

/* ---- work for the engine ---------------------------------------------------- */

void xp_defer(struct xp_fabric *fab, struct xp_cb *cb)
{
	xp_assert_locked(fab);
	cb->next = NULL;
	if (fab->deferred_tail)
		fab->deferred_tail->next = cb;
	else
		fab->deferred = cb;
	fab->deferred_tail = cb;
}

int xp_defer_new(struct xp_fabric *fab, enum xp_cb_kind kind, union xp_cb_fn f, void *a,
		 void *b, int st)
{
	struct xp_cb *cb = calloc(1, sizeof(*cb));

	if (!cb)
		return -ENOMEM;
	cb->kind = kind;
	cb->owned = true;
	cb->f = f;
	cb->a = a;
	cb->b = b;
	cb->st = st;
	xp_defer(fab, cb);
	return 0;
}

int xp_fabric_post(struct xp_fabric *fab, void (*fn)(void *arg), void *arg)
{
	struct xp_cb *cb = calloc(1, sizeof(*cb));
	uint64_t one = 1;

	if (!cb)
		return -ENOMEM;
	cb->kind = XP_CB_FN;
	cb->owned = true;
	cb->f.fn = fn;
	cb->a = arg;
	pthread_mutex_lock(&fab->post_lock);
	if (fab->posts_tail)
		fab->posts_tail->next = cb;
	else
		fab->posts = cb;
	fab->posts_tail = cb;
	pthread_mutex_unlock(&fab->post_lock);
	/* Queued either way: a failed wake-up only delays it to the next
	 * progress call (EAGAIN means a wake-up is already pending). */
	if (write(fab->post_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("couldn't wake progress: %s", strerror(errno));
	return 0;
}
