/* libfabric backend: provider choice, fabric, domain, completion and event
 * queues, wait objects, memory registration, the registration cache and the
 * server buffer pool.
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
#include <errno.h>
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
#include "xport_priv.h"

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
 * not as data. */
static void turn_off_libfabric_mr_cache(void)
{
	const char *v = getenv("FI_MR_CACHE_MONITOR");

	if (v && strcmp(v, "disabled"))
		log_info("FI_MR_CACHE_MONITOR=%s replaced by 'disabled': rpfs keeps its "
			 "own registration cache",
			 v);
	setenv("FI_MR_CACHE_MONITOR", "disabled", 1);
}

static int pick_provider(struct xp_fabric *fab)
{
	const char *env = getenv("RPFS_PROVIDER");
	struct fi_info *info = NULL;

	if (!fab->params.provider[0] && env && *env)
		snprintf(fab->params.provider, sizeof(fab->params.provider), "%s", env);
	if (!fab->params.provider[0]) {
		/* verbs where a device exists, else tcp (no RDMA NIC). */
		strcpy(fab->params.provider, "verbs");
		if (!xp_getinfo(fab, NULL, NULL, 0, &info)) {
			fab->info = info;
			return 0;
		}
		strcpy(fab->params.provider, "tcp");
	}
	if (xp_getinfo(fab, NULL, NULL, 0, &info)) {
		log_err("libfabric provider '%s' is not available for reliable "
			"connections with RMA (check RPFS_PROVIDER, fi_info -p %s)",
			fab->params.provider, fab->params.provider);
		return -ENODEV;
	}
	fab->info = info;
	return 0;
}

/* Settings the provider cannot honour: messages (a Fast RDMA slot holds the
 * largest) must fit max_msg_size, and an endpoint must be able to keep a
 * connection's receives posted. Credits are clamped (the connection just
 * carries fewer requests at once); a slot that cannot be sent is an error. */
static int fit_provider_limits(struct xp_fabric *fab)
{
	struct xp_params *p = &fab->params;

	if (p->fast_max + XP_MSG_ROOM > fab->max_msg) {
		log_err("fast_max %zu is too large for provider %s: its largest message "
			"is %zu bytes (%u of them are headers)",
			p->fast_max, fab->info->fabric_attr->prov_name, fab->max_msg,
			XP_MSG_ROOM);
		return -EINVAL;
	}
	if (fab->rx_depth && p->credits + XP_CTRL_RECVS > fab->rx_depth) {
		uint32_t c = (uint32_t)(fab->rx_depth - XP_CTRL_RECVS);

		log_warn("credits %u: provider %s posts at most %zu receives per "
			 "endpoint; using %u",
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

int xp_fabric_open(const struct xp_params *p, enum xp_role role,
		   const struct auth_key *key, struct xp_fabric **out)
{
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_DATA, .size = 16384, .wait_obj = FI_WAIT_FD};
	struct fi_eq_attr eq_attr = {.size = 256, .wait_obj = FI_WAIT_FD};
	struct rpfs_regops ops = {fab_reg, fab_dereg, NULL};
	pthread_mutexattr_t ma;
	struct xp_fabric *fab;
	char why[128];
	uint64_t mode;
	int ret;

	if (xp_params_check(p, why, sizeof(why))) {
		log_err("transport settings: %s", why);
		return -EINVAL;
	}
	if (!key) {
		log_err("no cluster key: every connection must prove it");
		return -ENOKEY;
	}
	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -ENOMEM;
	fab->params = *p;
	fab->key = *key;
	fab->role = role;
	fab->epfd = fab->cq_fd = fab->eq_fd = fab->post_fd = -1;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&fab->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_cond_init(&fab->cond, NULL);
	pthread_mutex_init(&fab->post_lock, NULL);
	ops.ctx = fab;

	turn_off_libfabric_mr_cache();
	ret = pick_provider(fab);
	if (ret)
		goto err;
	mode = fab->info->domain_attr->mr_mode;
	fab->virt_addr = mode & FI_MR_VIRT_ADDR;
	fab->prov_key = mode & FI_MR_PROV_KEY;
	fab->mr_local = mode & FI_MR_LOCAL;
	fab->iov_limit = fab->info->tx_attr->iov_limit;
	fab->max_msg = fab->info->ep_attr->max_msg_size;
	fab->rx_depth = fab->info->rx_attr->size;
	/* verbs moves RDMA in the NIC; the software providers (tcp, net, ...)
	 * move it only while the target process polls (FACTS.md). */
	fab->sw_rma = strcmp(fab->info->fabric_attr->prov_name, "verbs") != 0;
	ret = fit_provider_limits(fab);
	if (ret)
		goto err;
	if (fab->info->domain_attr->cq_data_size < 4) {
		log_err("provider %s carries no remote CQ data: Fast RDMA Write needs it",
			fab->info->fabric_attr->prov_name);
		ret = -ENOTSUP;
		goto err;
	}

	ret = xp_errno(fi_fabric(fab->info->fabric_attr, &fab->fabric, NULL));
	if (ret) {
		log_err("couldn't open fabric %s: %s", fab->info->fabric_attr->name,
			fi_strerror(-ret));
		goto err;
	}
	ret = xp_errno(fi_domain(fab->fabric, fab->info, &fab->domain, NULL));
	if (ret) {
		log_err("couldn't open domain: %s", fi_strerror(-ret));
		goto err;
	}
	ret = xp_errno(fi_eq_open(fab->fabric, &eq_attr, &fab->eq, NULL));
	if (ret) {
		log_err("couldn't open event queue: %s", fi_strerror(-ret));
		goto err;
	}
	ret = xp_errno(fi_cq_open(fab->domain, &cq_attr, &fab->cq, NULL));
	if (ret) {
		log_err("couldn't open completion queue: %s", fi_strerror(-ret));
		goto err;
	}

	/* Blocking waits: epoll over the CQ's and EQ's fds plus an eventfd for
	 * posted work. Without wait fds progress falls back to short sleeps. */
	fab->post_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	fab->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (fab->post_fd < 0 || fab->epfd < 0) {
		ret = -errno;
		goto err;
	}
	epoll_add(fab->epfd, fab->post_fd, 0);
	if (!open_waitfd(&fab->cq->fid, &fab->cq_fd) &&
	    !open_waitfd(&fab->eq->fid, &fab->eq_fd) &&
	    !epoll_add(fab->epfd, fab->cq_fd, 1) && !epoll_add(fab->epfd, fab->eq_fd, 2))
		fab->can_wait = true;
	else
		log_info("provider gives no wait fds: idle waits sleep in short steps");

	if (role == XP_CLIENT) {
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
			goto err;
	} else {
		struct bpool_params bp;

		bpool_params_default(&bp);
		bp.zone_bytes = p->pool_zone_bytes;
		if (bp.max_buf < p->chunk_size)
			bp.max_buf = p->chunk_size;
		ret = bpool_create(&bp, &ops, &fab->pool);
		if (ret) {
			log_err("couldn't create the buffer pool: %s", strerror(-ret));
			goto err;
		}
	}
	log_info("transport: provider %s, mr_mode %s%s%s, max_msg %zu, iov_limit %zu, "
		 "rx_depth %zu",
		 fab->info->fabric_attr->prov_name,
		 fab->virt_addr ? "virt_addr " : "offset ",
		 fab->prov_key ? "prov_key " : "", fab->mr_local ? "local" : "",
		 fab->max_msg, fab->iov_limit, fab->rx_depth);
	*out = fab;
	return 0;
err:
	xp_fabric_close(fab);
	return ret;
}

void xp_fabric_close(struct xp_fabric *fab)
{
	if (!fab)
		return;
	pthread_mutex_lock(&fab->lock);
	fab->closing = true;
	for (uint32_t i = 0; i < fab->nconns; i++) {
		struct xp_conn *c = fab->conns[i];

		if (!c)
			continue;
		c->closing = true;
		xp_conn_fail(c, -ECONNABORTED, "transport shut down");
	}
	/* Let flushed operations complete, so no context is freed under the
	 * provider; then close whatever is left. */
	for (int i = 0; i < 500; i++) {
		bool left = false;

		for (uint32_t j = 0; j < fab->nconns; j++)
			left |= fab->conns[j] != NULL;
		if (!left || !fab->cq)
			break;
		xp_progress_locked(fab, 0);
		if (i > 10)
			usleep(1000);
	}
	/* Whatever is left can no longer complete once its endpoint and the CQ
	 * are closed (endpoints first: they are bound to the CQ). */
	for (uint32_t i = 0; i < fab->nconns; i++) {
		struct xp_conn *c = fab->conns[i];

		if (c && c->ep) {
			fi_close(&c->ep->fid);
			c->ep = NULL;
		}
	}
	if (fab->cq) {
		fi_close(&fab->cq->fid);
		fab->cq = NULL;
	}
	for (uint32_t i = 0; i < fab->nconns; i++) {
		struct xp_conn *c = fab->conns[i];

		if (!c)
			continue;
		xp_conn_free(c);
	}
	free(fab->conns);
	if (fab->pep)
		fi_close(&fab->pep->fid);
	if (fab->rcache)
		rcache_destroy(fab->rcache);
	auth_replay_destroy(fab->replay);
	memset(&fab->key, 0, sizeof(fab->key));
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
	while (fab->posts) {
		struct xp_post *p = fab->posts;

		fab->posts = p->next;
		free(p);
	}
	pthread_mutex_unlock(&fab->lock);
	pthread_mutex_destroy(&fab->lock);
	pthread_mutex_destroy(&fab->post_lock);
	pthread_cond_destroy(&fab->cond);
	free(fab);
}

const char *xp_fabric_provider(const struct xp_fabric *fab)
{
	return fab->info->fabric_attr->prov_name;
}

const struct xp_params *xp_fabric_params(const struct xp_fabric *fab)
{
	return &fab->params;
}

void xp_fabric_stats(struct xp_fabric *fab, struct xp_stats *st)
{
	pthread_mutex_lock(&fab->lock);
	*st = fab->stats;
	st->conns_live = fab->nlive;
	st->conn_bytes = 0;
	for (uint32_t i = 0; i < fab->nconns; i++)
		if (fab->conns[i])
			st->conn_bytes +=
				fab->conns[i]->mem_len + fab->conns[i]->smem_len;
	if (fab->rcache) {
		struct rcache_stats rs;

		rcache_get_stats(fab->rcache, &rs);
		st->rcache_hits = rs.hits;
		st->rcache_misses = rs.misses;
	}
	pthread_mutex_unlock(&fab->lock);
}

int xp_fabric_post(struct xp_fabric *fab, void (*fn)(void *arg), void *arg)
{
	struct xp_post *p = malloc(sizeof(*p));
	uint64_t one = 1;

	if (!p)
		return -ENOMEM;
	p->fn = fn;
	p->arg = arg;
	p->next = NULL;
	pthread_mutex_lock(&fab->post_lock);
	if (fab->posts_tail)
		fab->posts_tail->next = p;
	else
		fab->posts = p;
	fab->posts_tail = p;
	pthread_mutex_unlock(&fab->post_lock);
	/* Queued either way: a failed wake-up only delays it to the next
	 * progress call (EAGAIN means a wake-up is already pending). */
	if (write(fab->post_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("couldn't wake progress: %s", strerror(errno));
	return 0;
}

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

	pthread_mutex_lock(&fab->lock);
	ret = xp_mr_reg_locked(fab, addr, len, out);
	pthread_mutex_unlock(&fab->lock);
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
