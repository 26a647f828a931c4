/* Keeping the connections of a client with open files alive.
 *
 * Servers drop a connection idle for idle_timeout_s (10 minutes by
 * default), and a client renews one idle for half of that before using it
 * (rpfsc_link_get), so that no request goes out on a connection about to
 * be dropped. Both are right for a client that went quiet; but an MPI
 * program that checkpoints every 10 or 30 minutes is not quiet, it is
 * computing, and its next MPI_File_iwrite would connect again to every
 * server inside the post: a handshake per server where the post should
 * cost microseconds. So while the client has a file open, the progress
 * thread pings each connection that has been idle for a quarter of the
 * timeout (checked every eighth), and no connection in use ever reaches
 * half of it. Without open files the connections are left to the timeout,
 * as before. A ping that fails leaves the connection broken: the next
 * call reconnects and reports what it finds.
 *
 * Only with a progress thread (the tick runs on it): without one, nothing
 * is posted anyway (calls start inside the caller). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_priv.h"
#include "log.h"

struct ping {
	struct xp_call call;
	struct rpfs_client *c;
	int srv;
	uint8_t body[16];
};

/* On the progress thread, without the fabric's lock. It takes no server
 * lock: a thread connecting holds that lock while it waits for this very
 * thread to move the handshake. */
static void ping_done(struct xp_call *call)
{
	struct ping *p = call->arg;
	struct rpfs_client *c = p->c;
	struct rpfsc_server *s = &c->srv[p->srv];

	if (call->status)
		log_info("keeping %s connected: %s", s->desc, strerror(-call->status));
	__atomic_store_n(&s->pinging, false, __ATOMIC_RELEASE);
	free(p);
	pthread_mutex_lock(&c->live_lock);
	if (--c->pings == 0)
		pthread_cond_broadcast(&c->pings_done);
	pthread_mutex_unlock(&c->live_lock);
}

/* s->lock held, so the table's reference keeps l open until the call is
 * in flight; from then on closing the connection waits for the call (or
 * fails it), so the ping needs no reference of its own. */
static void ping_locked(struct rpfs_client *c, int srv, struct rpfsc_link *l)
{
	struct rpfsc_server *s = &c->srv[srv];
	struct ping *p = calloc(1, sizeof(*p));
	int len;

	if (!p)
		return;
	len = rpc_enc_path_op(p->body, sizeof(p->body), RPC_PING, 0, NULL);
	if (len < 0) {
		free(p);
		return;
	}
	p->c = c;
	p->srv = srv;
	p->call.req = p->body;
	p->call.req_len = (size_t)len;
	p->call.cb = ping_done;
	p->call.arg = p;
	pthread_mutex_lock(&c->live_lock);
	c->pings++;
	pthread_mutex_unlock(&c->live_lock);
	__atomic_store_n(&s->pinging, true, __ATOMIC_RELAXED);
	/* Started here, not posted: this is the progress thread. */
	if (xp_call_start(l->conn, &p->call)) {
		__atomic_store_n(&s->pinging, false, __ATOMIC_RELAXED);
		free(p);
		pthread_mutex_lock(&c->live_lock);
		if (--c->pings == 0)
			pthread_cond_broadcast(&c->pings_done);
		pthread_mutex_unlock(&c->live_lock);
	}
}

/* The tick, on the progress thread. */
static void keep_links(void *arg)
{
	struct rpfs_client *c = arg;
	int64_t after_ms = (int64_t)c->cfg.xport.idle_timeout_s * 250;
	bool open;

	pthread_mutex_lock(&c->live_lock);
	open = !list_empty(&c->files);
	pthread_mutex_unlock(&c->live_lock);
	if (!open)
		return;
	for (uint32_t i = 0; i < c->cfg.nservers; i++) {
		struct rpfsc_server *s = &c->srv[i];
		struct rpfsc_link *l;

		/* Busy (a thread connecting, which needs this thread to move
		 * its handshake): next tick. */
		if (__atomic_load_n(&s->pinging, __ATOMIC_ACQUIRE) ||
		    pthread_mutex_trylock(&s->lock))
			continue;
		l = s->link;
		if (l && !xp_conn_error(l->conn) && xp_conn_idle_ms(l->conn) >= after_ms)
			ping_locked(c, (int)i, l);
		pthread_mutex_unlock(&s->lock);
	}
}

void rpfsc_keepalive_start(struct rpfs_client *c)
{
	uint32_t t = c->cfg.xport.idle_timeout_s;
	int ret;

	if (!t)
		return; /* servers never drop idle connections */
	/* An eighth of the timeout, in ms (at most 7 days / 8: fits an int). */
	ret = xp_fabric_set_tick(c->fab, keep_links, c, (int)((uint64_t)t * 125));
	if (ret && ret != -ENOTSUP)
		log_warn("can't keep connections alive (%s): a post after %u s idle "
			 "connects again",
			 strerror(-ret), t / 2);
	c->keepalive = !ret;
}

void rpfsc_keepalive_stop(struct rpfs_client *c)
{
	if (!c->keepalive)
		return;
	xp_fabric_set_tick(c->fab, NULL, NULL, 0);
	c->keepalive = false;
	/* Pings hold links: let them land before the links go. */
	pthread_mutex_lock(&c->live_lock);
	while (c->pings)
		pthread_cond_wait(&c->pings_done, &c->live_lock);
	pthread_mutex_unlock(&c->live_lock);
}
