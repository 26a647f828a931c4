/* Keeping what a client with open files needs fresh in the background,
 * so that a post never waits for it: its connections and its files'
 * capabilities.
 *
 * Connections. Servers drop a connection idle for idle_timeout_s (10
 * minutes by default), and a client renews one idle for half of that
 * before using it (rpfsc_link_get), so that no request goes out on a
 * connection about to be dropped. Both are right for a client that went
 * quiet; but an MPI program that checkpoints every 10 or 30 minutes is not
 * quiet, it is computing, and its next MPI_File_iwrite would connect again
 * to every server inside the post: a handshake per server where the post
 * should cost microseconds. So while the client has a file open, the
 * progress thread pings each connection that has been idle for a quarter
 * of the timeout, and no connection in use ever reaches half of it.
 * Without open files the connections are left to the timeout, as before.
 * A ping that fails leaves the connection broken: the next call
 * reconnects and reports what it finds.
 *
 * Capabilities. A file's capability is renewed once half its lifetime
 * (cap_lifetime_s, an hour by default) has passed, with a GETATTR to the
 * metadata server; done by the call that finds it due, that was a round
 * trip inside the post of a program that computed for half an hour. The
 * progress thread renews it instead; the call renews it itself only when
 * that failed (refused after a chmod, or no answer: the call then reports
 * it, as before) or fell behind (three quarters passed).
 *
 * The tick runs every eighth of the shorter of the two, on the progress
 * thread. A renewal is an ordinary call there (the thread drives the
 * engine while it waits, xp_engine_wait); the pings are started and
 * landed without waiting. The tick never blocks on live_lock, which
 * rpfs_close holds while its requests land, and the pings only try the
 * server's lock, which a thread connecting holds: what is busy waits for
 * the next tick. Without a progress thread there is no tick, and calls
 * renew and reconnect themselves, as they start in the caller anyway. */
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

static void bg_call_begin(struct rpfs_client *c)
{
	pthread_mutex_lock(&c->bg_lock);
	c->bg_calls++;
	pthread_mutex_unlock(&c->bg_lock);
}

static void bg_call_end(struct rpfs_client *c)
{
	pthread_mutex_lock(&c->bg_lock);
	if (--c->bg_calls == 0)
		pthread_cond_broadcast(&c->bg_done);
	pthread_mutex_unlock(&c->bg_lock);
}

/* On the progress thread, without the fabric's lock. It takes no server
 * lock: a thread connecting holds that lock while its handshake moves,
 * and would then move it alone. */
static void ping_done(struct xp_call *call)
{
	struct ping *p = call->arg;
	struct rpfs_client *c = p->c;
	struct rpfsc_server *s = &c->srv[p->srv];

	if (call->status)
		log_info("keeping %s connected: %s", s->desc, strerror(-call->status));
	__atomic_store_n(&s->pinging, false, __ATOMIC_RELEASE);
	free(p);
	bg_call_end(c);
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
	bg_call_begin(c);
	__atomic_store_n(&s->pinging, true, __ATOMIC_RELAXED);
	/* Started here, not posted: this is the progress thread. */
	if (xp_call_start(l->conn, &p->call)) {
		__atomic_store_n(&s->pinging, false, __ATOMIC_RELAXED);
		free(p);
		bg_call_end(c);
	}
}

/* Ping the connections idle for a quarter of the servers' timeout. */
static void keep_links(struct rpfs_client *c)
{
	int64_t after_ms = (int64_t)c->cfg.xport.idle_timeout_s * 250;

	for (uint32_t i = 0; i < c->cfg.nservers; i++) {
		struct rpfsc_server *s = &c->srv[i];
		struct rpfsc_link *l;

		/* Busy (a thread connecting): next tick. */
		if (__atomic_load_n(&s->pinging, __ATOMIC_ACQUIRE) ||
		    pthread_mutex_trylock(&s->lock))
			continue;
		l = s->link;
		if (l && !xp_conn_error(l->conn) && xp_conn_idle_ms(l->conn) >= after_ms)
			ping_locked(c, (int)i, l);
		pthread_mutex_unlock(&s->lock);
	}
}

/* ---- capabilities ------------------------------------------------------- */

#define RENEW_MAX 32 /* renewals per tick; the rest wait for the next */

/* Due renewals, one call each, here on the progress thread: it drives the
 * engine itself while it waits (xp_engine_wait), so transfers in flight go
 * on, and it may connect to a metadata server this client never talked
 * to (files opened from attributes another rank broadcast). */
static void renew_caps(struct rpfs_client *c, struct rpfs_file **due, int n)
{
	for (int i = 0; i < n; i++) {
		int ret = rpfsc_file_cap_renew(due[i]);

		/* Failed: the next call renews it itself, and reports. */
		if (ret)
			log_info("renewing a capability in the background: %s",
				 rpfs_errmsg());
		rpfsc_file_renew_end(due[i], ret);
	}
}

/* ---- the tick ----------------------------------------------------------- */

static void tick(void *arg)
{
	struct rpfs_client *c = arg;
	struct rpfs_file *due[RENEW_MAX];
	struct list_node *n;
	int ndue = 0;
	bool open;

	/* Only tried: rpfs_close holds it while it waits for this very
	 * thread to land the file's requests. Busy: next tick. */
	if (pthread_mutex_trylock(&c->live_lock))
		return;
	open = !list_empty(&c->files);
	list_foreach(&c->files, n) {
		struct rpfs_file *f = list_entry(n, struct rpfs_file, node);

		if (ndue < RENEW_MAX && rpfsc_file_renew_begin(f))
			due[ndue++] = f;
	}
	pthread_mutex_unlock(&c->live_lock);
	renew_caps(c, due, ndue);
	if (open && c->cfg.xport.idle_timeout_s)
		keep_links(c);
}

void rpfsc_keepalive_start(struct rpfs_client *c)
{
	uint64_t idle = c->cfg.xport.idle_timeout_s, life = c->cfg.xport.cap_lifetime_s;
	uint64_t ms = UINT64_MAX;
	int ret;

	/* An eighth of the shorter of the two, in ms (at most 7 days / 8:
	 * fits an int). */
	if (idle)
		ms = idle * 125;
	if (life && life * 125 < ms)
		ms = life * 125;
	if (ms == UINT64_MAX)
		return;
	ret = xp_fabric_set_tick(c->fab, tick, c, (int)ms);
	if (ret && ret != -ENOTSUP)
		log_warn("can't keep connections and capabilities fresh in the "
			 "background (%s): posts may connect or renew",
			 strerror(-ret));
	__atomic_store_n(&c->keepalive, !ret, __ATOMIC_RELAXED);
}

void rpfsc_keepalive_stop(struct rpfs_client *c)
{
	if (!c->keepalive)
		return;
	xp_fabric_set_tick(c->fab, NULL, NULL, 0);
	__atomic_store_n(&c->keepalive, false, __ATOMIC_RELAXED);
	/* Let what the tick started land before what it uses goes. */
	pthread_mutex_lock(&c->bg_lock);
	while (c->bg_calls)
		pthread_cond_wait(&c->bg_done, &c->bg_lock);
	pthread_mutex_unlock(&c->bg_lock);
}
