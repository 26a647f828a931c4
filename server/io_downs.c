/* Role io: which other I/O servers the metadata servers find down, from
 * their heartbeats (IO_HEARTBEAT, sent by io_states.c every heartbeat_ms
 * in place of a ping), so that a primary stops forwarding mirrored writes
 * to a copy whose server is stopped or cut off (io_forward.c) instead of
 * waiting timeout_ms (30 s by default) for each, as BeeGFS's servers learn
 * target states from the management service.
 *
 * Each metadata server's list is kept with the time it came; a server is
 * down while a list heard within DOWNS_TRUST heartbeats says so, so the
 * view of a metadata server that stopped sending ages out. When a list
 * first says a server is down, this server's connection to it is broken
 * at once (peer_abort): forwards waiting on it fail now and mark their
 * copies stale. A list that is wrong (a server the metadata server can't
 * reach but this one could) costs a resync, never bytes: a copy marked
 * stale is made whole again from a fresh one. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "io_downs.h"
#include "log.h"
#include "server.h"

/* A list is trusted for this many heartbeat periods, plus the timeout. */
#define DOWNS_TRUST 3

struct io_downs {
	uint32_t nmeta, nio;
	int64_t trust_ms;
	pthread_mutex_t lock; /* updates (a reader takes the atomics) */
	atomic_llong *heard;  /* by metadata index: ms of its last list, 0 none */
	atomic_uchar *said;   /* [meta * nio + io]: down in that list */
	bool *was;	      /* under lock: each server's state before a list */
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int io_downs_open(struct srv *s)
{
	struct io_downs *d = calloc(1, sizeof(*d));
	const struct xp_params *p = &s->cfg.xport;

	if (!d)
		return -ENOMEM;
	d->nmeta = s->cfg.nmeta;
	d->nio = s->cfg.nio;
	d->trust_ms = (int64_t)p->heartbeat_ms * DOWNS_TRUST + p->heartbeat_timeout_ms;
	d->heard = calloc(d->nmeta ? d->nmeta : 1, sizeof(*d->heard));
	d->said = calloc((size_t)(d->nmeta ? d->nmeta : 1) * (d->nio ? d->nio : 1),
			 sizeof(*d->said));
	d->was = calloc(d->nio ? d->nio : 1, sizeof(*d->was));
	if (!d->heard || !d->said || !d->was) {
		free(d->heard);
		free((void *)d->said);
		free(d->was);
		free(d);
		return -ENOMEM;
	}
	pthread_mutex_init(&d->lock, NULL);
	s->downs = d;
	return 0;
}

void io_downs_close(struct srv *s)
{
	struct io_downs *d = s->downs;

	if (!d)
		return;
	pthread_mutex_destroy(&d->lock);
	free(d->heard);
	free((void *)d->said);
	free(d->was);
	free(d);
	s->downs = NULL;
}

static bool down_at(const struct io_downs *d, uint32_t io, int64_t now)
{
	for (uint32_t m = 0; m < d->nmeta; m++) {
		int64_t heard = atomic_load(&d->heard[m]);

		if (heard && now - heard < d->trust_ms &&
		    atomic_load(&d->said[(size_t)m * d->nio + io]))
			return true;
	}
	return false;
}

bool io_downs_down(struct srv *s, uint32_t io)
{
	struct io_downs *d = s->downs;

	return d && io < d->nio && down_at(d, io, mono_ms());
}

/* Metadata server meta's list of down I/O servers (indexes, checked by
 * the caller), taken as it comes. */
static void take(struct srv *s, uint32_t meta, const uint32_t *down, uint32_t ndown)
{
	struct io_downs *d = s->downs;
	int64_t now = mono_ms();

	pthread_mutex_lock(&d->lock);
	for (uint32_t io = 0; io < d->nio; io++) {
		d->was[io] = down_at(d, io, now);
		atomic_store(&d->said[(size_t)meta * d->nio + io], 0);
	}
	for (uint32_t i = 0; i < ndown; i++)
		atomic_store(&d->said[(size_t)meta * d->nio + down[i]], 1);
	atomic_store(&d->heard[meta], now);
	/* newly down: the forwards waiting on it end now (peer_abort never
	 * waits, so it may run under the lock) */
	for (uint32_t io = 0; io < d->nio; io++) {
		uint32_t server = s->cfg.io[io];

		if (d->was[io] || !down_at(d, io, now) || (int)server == s->self)
			continue;
		log_info("rpfsd: metadata server %s finds I/O server %s down: writes "
			 "stop waiting for it",
			 s->cfg.servers[s->cfg.meta[meta]].name,
			 s->cfg.servers[server].name);
		peer_abort(s, server,
			   "its server is down (the metadata server's heartbeat)");
	}
	pthread_mutex_unlock(&d->lock);
}

void io_downs_take(struct srv *s, uint32_t meta, const uint32_t *down, uint32_t ndown)
{
	struct io_downs *d = s->downs;

	if (!d || meta >= d->nmeta || ndown > d->nio)
		return;
	for (uint32_t i = 0; i < ndown; i++)
		if (down[i] >= d->nio)
			return;
	take(s, meta, down, ndown);
}

int serve_io_heartbeat(struct srv_op *op)
{
	struct srv *s = op->s;
	struct io_downs *d = s->downs;
	const struct rpc_req *q = &op->q;
	uint32_t *down;

	if (!d)
		return -EOPNOTSUPP;
	if (q->meta >= d->nmeta || q->ndown > d->nio)
		return -EINVAL;
	down = malloc((q->ndown ? q->ndown : 1) * sizeof(*down));
	if (!down)
		return -ENOMEM;
	for (uint32_t i = 0; i < q->ndown; i++) {
		down[i] = rpc_req_down(q, i);
		if (down[i] >= d->nio) {
			free(down);
			return -EINVAL;
		}
	}
	take(s, q->meta, down, q->ndown);
	free(down);
	/* as a ping: not before the start-up is done */
	return atomic_load(&s->ready) ? 0 : -EAGAIN;
}
