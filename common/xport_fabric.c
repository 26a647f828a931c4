/* A fabric for one role (see xport_domain.h for the layers): opening it
 * assembles the libfabric resources (xport_domain.c), the engine and the
 * role's path (the client's or the server's ops) and connection management;
 * closing it ends every connection and lets the provider flush before
 * anything is freed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "xport_engine.h"

int xp_fabric_open(const struct xp_params *p, enum xp_role role,
		   const struct auth_key *key, struct xp_fabric **out)
{
	struct xp_fabric *fab;
	char why[128];
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
	fab->spin_ns = (int64_t)p->spin_us * 1000;
	fab->key = *key;
	fab->role = role;
	fab->ops = role == XP_CLIENT ? &xp_client_ops : &xp_server_ops;
	fab->hs_ops = &xp_hs_ops;
	fab->epfd = fab->cq_fd = fab->eq_fd = fab->post_fd = -1;
	pthread_mutex_init(&fab->lock, NULL);
	pthread_cond_init(&fab->cond, NULL);
	pthread_mutex_init(&fab->post_lock, NULL);
	ret = xp_domain_open(fab);
	if (!ret && role == XP_CLIENT && p->progress_thread)
		ret = xp_thread_start(fab);
	if (ret) {
		xp_fabric_close(fab);
		return ret;
	}
	*out = fab;
	return 0;
}

static bool all_gone(struct xp_fabric *fab)
{
	for (uint32_t i = 0; i < fab->nconns; i++)
		if (fab->conns[i])
			return false;
	return true;
}

static void free_list(struct xp_cb *cb)
{
	while (cb) {
		struct xp_cb *next = cb->next;

		if (cb->owned)
			free(cb);
		cb = next;
	}
}

void xp_fabric_close(struct xp_fabric *fab)
{
	if (!fab)
		return;
	xp_thread_stop(fab);
	xp_lock_quiet(fab);
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
	for (int i = 0; i < 500 && fab->cq && !all_gone(fab); i++) {
		xp_engine_round(fab, 0);
		xp_unlock(fab);
		xp_engine_run_deferred(fab);
		if (i > 10)
			usleep(1000);
		xp_lock_quiet(fab);
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

		if (c) {
			while (xp_conn_take_backlog(c))
				;
			xp_conn_free(c);
		}
	}
	free(fab->conns);
	xp_domain_close(fab);
	auth_replay_destroy(fab->replay);
	memset(&fab->key, 0, sizeof(fab->key));
	free_list(fab->deferred);
	free_list(fab->posts);
	xp_unlock(fab);
	pthread_mutex_destroy(&fab->lock);
	pthread_mutex_destroy(&fab->post_lock);
	pthread_cond_destroy(&fab->cond);
	free(fab);
}

void xp_fabric_stats(struct xp_fabric *fab, struct xp_stats *st)
{
	xp_lock(fab);
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
	xp_unlock(fab);
}
