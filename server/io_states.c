/* What a metadata server knows of each I/O server: whether it answers.
 *
 * New files must not be placed on an I/O server that is gone (a create
 * would fail, or wait timeout_ms, on every file whose layout touches it),
 * so each metadata server keeps a state per I/O server, as BeeGFS's
 * management service keeps target states:
 *
 *   unknown      not heard from since this server started (placed on, as
 *                every server was before states existed: a cluster whose
 *                servers start together must not shrink its first files'
 *                layouts to the servers that happened to answer first)
 *   online       its last heartbeat was answered
 *   unreachable  a heartbeat or a call to it (a create's datafiles) failed
 *                for want of a connection, or a heartbeat has gone
 *                unanswered for heartbeat_timeout_ms (a stopped server's
 *                kernel still accepts connections; a cut-off one is
 *                silent)
 *   offline      unreachable for io_offline_s
 *
 * placement.h skips unreachable and offline servers (io_states_down). One
 * thread per I/O server pings it every heartbeat_ms (IO_HEARTBEAT, which
 * also tells it the servers found down, so that its forwards to them stop
 * waiting: io_downs.c) through the peer
 * connections: a ping to a server that is cut off blocks until the
 * transport gives up, and must not hold back the others' heartbeats. A
 * ping still waiting after heartbeat_timeout_ms makes its server
 * unreachable without waiting for it to end. `rpfs df` and `rpfs stats`
 * show the states (stats.c: ioserver.<i>.state, ioserver.<i>.since_s). */
#include <errno.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io_downs.h"
#include "io_states.h"
#include "log.h"
#include "server.h"

/* How long a stop waits for heartbeats in flight. */
#define IO_STATES_STOP_S 2

struct io_watch {
	struct io_states *all;
	uint32_t io;	     /* index among the I/O servers */
	uint32_t server;     /* index in cfg.servers */
	atomic_int state;    /* enum io_state, as last decided */
	atomic_llong since;  /* ms (CLOCK_MONOTONIC) of the last change */
	atomic_llong asking; /* ms a ping in flight started, 0 if none */
	pthread_t thr;
	bool started;
};

struct io_states {
	struct srv *s;
	uint32_t n;
	struct io_watch *w;
	pthread_mutex_t lock; /* stop and the threads' sleep */
	pthread_cond_t wake;
	bool stop;
	uint32_t running; /* heartbeat threads not yet ended */
	int64_t period_ms, timeout_ms, offline_ms;
};

static const char *const names[] = {"unknown", "online", "unreachable", "offline"};

const char *io_state_name(int state)
{
	return state >= 0 && state < IO_STATES ? names[state] : "?";
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_state(struct io_watch *w, int state, const char *why)
{
	struct srv *s = w->all->s;
	const char *name = s->cfg.servers[w->server].name;
	int was = atomic_exchange(&w->state, state);

	if (was == state)
		return;
	atomic_store(&w->since, mono_ms());
	if (state == IO_ONLINE)
		log_info("rpfsd: I/O server %s is online%s", name,
			 was == IO_UNKNOWN ? "" : " again: new files may use it");
	else
		log_warn("rpfsd: I/O server %s is %s (%s): new files are placed on "
			 "the others",
			 name, io_state_name(state), why);
}

/* The state as of now: a ping unanswered for timeout_ms, or an
 * unreachable spell of offline_ms, counts (and is logged) by whoever looks
 * first, without waiting for the heartbeat thread, which may be blocked in
 * that very ping. */
static int current(struct io_watch *w, int64_t now)
{
	int st = atomic_load(&w->state);
	int64_t asking = atomic_load(&w->asking);

	if (asking && now - asking >= w->all->timeout_ms &&
	    (st == IO_ONLINE || st == IO_UNKNOWN)) {
		char why[64];

		snprintf(why, sizeof(why), "no answer to a ping for %lld ms",
			 (long long)(now - asking));
		set_state(w, IO_UNREACHABLE, why);
		st = IO_UNREACHABLE;
	}
	if (st == IO_UNREACHABLE && now - atomic_load(&w->since) >= w->all->offline_ms) {
		char why[64];

		snprintf(why, sizeof(why), "unreachable for %lld s",
			 (long long)(w->all->offline_ms / 1000));
		set_state(w, IO_OFFLINE, why);
		st = IO_OFFLINE;
	}
	return st;
}

/* Every server's state brought up to date (and logged) now. */
static void sweep(struct io_states *all)
{
	int64_t now = mono_ms();

	for (uint32_t i = 0; i < all->n; i++)
		current(&all->w[i], now);
}

/* This server's index among the metadata servers. */
static uint32_t my_meta_index(const struct srv *s)
{
	for (uint32_t k = 0; k < s->cfg.nmeta; k++)
		if ((int)s->cfg.meta[k] == s->self)
			return k;
	return 0;
}

/* The heartbeat: a ping that also tells the I/O server which others this
 * metadata server finds down (IO_HEARTBEAT: io_downs.c), so that its
 * forwards stop waiting for them. */
static int ping(struct srv *s, uint32_t server)
{
	uint32_t nio = s->cfg.nio, n = 0, *list = malloc((nio ? nio : 1) * sizeof(*list));
	bool *down = calloc(nio ? nio : 1, sizeof(*down));
	size_t cap = RPC_PREAMBLE + 8 + 4 * (size_t)nio;
	uint8_t *body = malloc(cap);
	struct xp_call call;
	int len, ret;

	if (!list || !down || !body) {
		free(list);
		free(down);
		free(body);
		return -ENOMEM;
	}
	io_states_down(s, down);
	for (uint32_t i = 0; i < nio && n < RPC_HEARTBEAT_DOWN_MAX; i++)
		if (down[i])
			list[n++] = i;
	len = rpc_enc_io_heartbeat(body, cap, my_meta_index(s), list, n);
	/* this server's own forwards, if it is an I/O server too */
	io_downs_take(s, my_meta_index(s), list, n);
	free(list);
	free(down);
	if (len < 0) {
		free(body);
		return len;
	}
	memset(&call, 0, sizeof(call));
	call.req = body;
	call.req_len = (size_t)len;
	ret = peer_call_quiet(s, server, &call);
	free(body);
	return ret;
}

static void *watch(void *arg)
{
	struct io_watch *w = arg;
	struct io_states *all = w->all;

	pthread_mutex_lock(&all->lock);
	while (!all->stop) {
		struct timespec until;
		int64_t start;
		int ret;

		pthread_mutex_unlock(&all->lock);
		start = mono_ms();
		atomic_store(&w->asking, start);
		ret = ping(all->s, w->server);
		atomic_store(&w->asking, 0);
		/* -EAGAIN: it answers, but is still starting. */
		if (!ret) {
			set_state(w, IO_ONLINE, NULL);
		} else if (atomic_load(&w->state) != IO_UNKNOWN) {
			int st = current(w, mono_ms());

			set_state(w, st == IO_OFFLINE ? IO_OFFLINE : IO_UNREACHABLE,
				  strerror(-ret));
		}
		sweep(all);
		pthread_mutex_lock(&all->lock);
		if (all->stop)
			break;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += all->period_ms / 1000;
		until.tv_nsec += (all->period_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&all->wake, &all->lock, &until);
	}
	all->running--;
	pthread_cond_broadcast(&all->wake);
	pthread_mutex_unlock(&all->lock);
	return NULL;
}

int io_states_start(struct srv *s)
{
	struct io_states *all = calloc(1, sizeof(*all));
	const struct xp_params *p = &s->cfg.xport;

	if (!all)
		return -ENOMEM;
	all->s = s;
	all->n = s->cfg.nio;
	all->period_ms = p->heartbeat_ms;
	all->timeout_ms = p->heartbeat_timeout_ms;
	all->offline_ms = (int64_t)p->io_offline_s * 1000;
	all->w = calloc(all->n ? all->n : 1, sizeof(*all->w));
	if (!all->w) {
		free(all);
		return -ENOMEM;
	}
	pthread_mutex_init(&all->lock, NULL);
	pthread_cond_init(&all->wake, NULL);
	s->io_states = all;
	for (uint32_t i = 0; i < all->n; i++) {
		struct io_watch *w = &all->w[i];
		int ret;

		w->all = all;
		w->io = i;
		w->server = s->cfg.io[i];
		atomic_init(&w->state, IO_UNKNOWN);
		atomic_init(&w->since, mono_ms());
		atomic_init(&w->asking, 0);
		/* A server that is also an I/O server answers itself. */
		if ((int)w->server == s->self) {
			atomic_store(&w->state, IO_ONLINE);
			continue;
		}
		pthread_mutex_lock(&all->lock);
		ret = pthread_create(&w->thr, NULL, watch, w);
		all->running += !ret;
		pthread_mutex_unlock(&all->lock);
		if (ret) {
			log_err("rpfsd: can't start the heartbeat of I/O server %s: %s",
				s->cfg.servers[w->server].name, strerror(ret));
			io_states_stop(s);
			return -ret;
		}
		w->started = true;
	}
	return 0;
}

bool io_states_stop(struct srv *s)
{
	struct io_states *all = s->io_states;
	struct timespec until;

	if (!all)
		return true;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += IO_STATES_STOP_S;
	pthread_mutex_lock(&all->lock);
	all->stop = true;
	pthread_cond_broadcast(&all->wake);
	/* A ping to a server that is cut off ends only when the transport
	 * gives up: an exit does not wait for that. */
	while (all->running && !pthread_cond_timedwait(&all->wake, &all->lock, &until))
		;
	if (all->running) {
		pthread_mutex_unlock(&all->lock);
		return false;
	}
	pthread_mutex_unlock(&all->lock);
	for (uint32_t i = 0; i < all->n; i++)
		if (all->w[i].started)
			pthread_join(all->w[i].thr, NULL);
	pthread_cond_destroy(&all->wake);
	pthread_mutex_destroy(&all->lock);
	free(all->w);
	free(all);
	s->io_states = NULL;
	return true;
}

void io_states_lost(struct srv *s, uint32_t io, int err)
{
	struct io_states *all = s->io_states;

	if (!all || io >= all->n)
		return;
	if (current(&all->w[io], mono_ms()) != IO_OFFLINE)
		set_state(&all->w[io], IO_UNREACHABLE, strerror(-err));
}

int io_states_get(struct srv *s, uint32_t io, int64_t *since_s)
{
	struct io_states *all = s->io_states;
	int64_t now = mono_ms();
	int st;

	if (!all || io >= all->n) {
		if (since_s)
			*since_s = 0;
		return IO_UNKNOWN;
	}
	st = current(&all->w[io], now);
	if (since_s)
		*since_s = (now - atomic_load(&all->w[io].since)) / 1000;
	return st;
}

bool io_states_down(struct srv *s, bool *down)
{
	bool any = false;

	for (uint32_t i = 0; i < s->cfg.nio; i++) {
		int st = io_states_get(s, i, NULL);

		down[i] = st == IO_UNREACHABLE || st == IO_OFFLINE;
		any |= down[i];
	}
	return any;
}
