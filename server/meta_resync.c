/* Role meta: stale copies of mirrored files made whole again, in the
 * background (docs/design/redundancy.md, "Resync").
 *
 * A thread looks through the stale marks this server keeps (meta_mirror.c)
 * every RESYNC_PERIOD_MS. For a stale copy whose I/O server is online
 * again, it asks the server of a fresh copy of the same slot, the first
 * one as clients pick their primary, to resync it (IO_RESYNC, run there by
 * io_forward.c, paced), with the epoch the copies take at the end; that
 * server says how it went (MIRROR_FRESH), and a success clears the mark if
 * the file was not marked again meanwhile. Only the files written while a
 * copy was away are marked, and the source sends only the 64 KiB units
 * that differ from the copy's (io_forward.c), so a returning server gets
 * what it missed. A stale parity member of an ec file is asked of its own
 * server (IO_RESYNC with RPC_RESYNC_EC, ec_resync.c), which re-encodes it
 * from its group's data members once they and it are online.
 *
 * At most RESYNC_INFLIGHT resyncs are asked for at once (each source paces
 * its own); one asked for and never answered (its source died) is asked
 * again after RESYNC_LOST_MS. `rpfs stats` shows the stale copies left
 * (mirror.stale_copies) and the resyncs done. */
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io_states.h"
#include "log.h"
#include "meta_priv.h"
#include "meta_record.h"
#include "placement.h"
#include "wire.h"

#define RESYNC_PERIOD_MS 1000
#define RESYNC_INFLIGHT	 4
#define RESYNC_LOST_MS	 (10 * 60 * 1000)
#define RESYNC_SCAN_MAX	 256 /* marked files looked at per round */

struct inflight {
	uint64_t handle;
	int64_t since_ms;
	bool used;
};

struct meta_resync {
	struct srv *s;
	pthread_t thr;
	pthread_mutex_t lock; /* all that follows */
	pthread_cond_t wake;
	bool stop, running;
	bool kicked; /* meta_resync_kick since the round began */
	struct inflight fl[RESYNC_INFLIGHT];
	uint64_t stale_copies; /* at the last round */
	/* at the last round, by I/O index: stale copies on it, and whether
	 * its rebuild walk is still running (rpfs df) */
	uint32_t *stale_on;
	bool *rebuilding;
	uint64_t asked, done, failed;
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct marked {
	uint64_t handle, epoch;
	uint32_t n, slots[RPC_STALE_MAX];
};

/* The marked files (up to max), how many stale copies in all, and on each
 * I/O server (stale_on[nio]). */
static int scan(struct meta *m, struct marked *out, uint32_t max, uint32_t *n,
		uint64_t *copies, uint32_t *stale_on, uint32_t nio)
{
	uint8_t kb[META_STALE_TAG_LEN + 8] = META_STALE_TAG;
	MDB_val k = {META_STALE_TAG_LEN, kb}, v;
	MDB_cursor *cur = NULL;
	MDB_txn *txn;
	int rc, ret = meta_txn_begin(m, true, &txn);

	*n = 0;
	*copies = 0;
	if (ret)
		return ret;
	rc = mdb_cursor_open(txn, m->sys, &cur);
	for (rc = rc ? rc : mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct marked x;

		if (k.mv_size != META_STALE_TAG_LEN + 8 ||
		    memcmp(k.mv_data, META_STALE_TAG, META_STALE_TAG_LEN))
			break;
		x.handle = meta_get_be64((const uint8_t *)k.mv_data + META_STALE_TAG_LEN);
		if (meta_stale_get(m, txn, x.handle, &x.epoch, x.slots, &x.n) || !x.n)
			continue;
		*copies += x.n;
		{
			char path[RPC_PATH_MAX + 1];
			struct rpc_attr a;

			for (uint32_t i = 0;
			     !meta_entry_of_handle(m, txn, x.handle, path, &a) && i < x.n;
			     i++) {
				uint32_t io =
					x.slots[i] < layout_slots(&a.layout)
						? layout_server(&a.layout, x.slots[i])
						: UINT32_MAX;

				if (io < nio)
					stale_on[io]++;
			}
		}
		if (*n < max)
			out[(*n)++] = x;
	}
	if (rc && rc != MDB_NOTFOUND)
		ret = meta_lmdb_err(rc, "stale marks scan");
	if (cur)
		mdb_cursor_close(
			cur); /* a read-only transaction's are not freed with it */
	mdb_txn_abort(txn);
	return ret;
}

static bool stale_in(const struct marked *x, uint32_t slot)
{
	for (uint32_t i = 0; i < x->n; i++)
		if (x->slots[i] == slot)
			return true;
	return false;
}

/* Under lock: a free in-flight entry for handle, NULL if it has one or
 * none is free. */
static struct inflight *slot_for(struct meta_resync *r, uint64_t handle, int64_t now)
{
	struct inflight *free_one = NULL;

	for (int i = 0; i < RESYNC_INFLIGHT; i++) {
		struct inflight *f = &r->fl[i];

		if (f->used && now - f->since_ms > RESYNC_LOST_MS)
			f->used = false; /* never answered: asked again */
		if (f->used && f->handle == handle)
			return NULL;
		if (!f->used && !free_one)
			free_one = f;
	}
	return free_one;
}

/* Send an IO_RESYNC (body, len bytes or an encoder's -errno) for handle
 * to server, counted in flight until its report (MIRROR_FRESH) or
 * RESYNC_LOST_MS; nothing when handle has one in flight or none is free.
 * 0 when it was taken. */
static int ask_resync(struct meta_resync *r, uint64_t handle, uint32_t server,
		      const void *body, int len)
{
	struct inflight *f;
	struct xp_call call;
	uint8_t rep[64];
	int ret;

	pthread_mutex_lock(&r->lock);
	f = slot_for(r, handle, mono_ms());
	if (f)
		*f = (struct inflight){handle, mono_ms(), true};
	pthread_mutex_unlock(&r->lock);
	if (!f)
		return -EBUSY;
	memset(&call, 0, sizeof(call));
	call.req = body;
	call.req_len = len > 0 ? (size_t)len : 0;
	call.rep = rep;
	call.rep_max = sizeof(rep);
	ret = len < 0 ? len : peer_call(r->s, server, &call);
	pthread_mutex_lock(&r->lock);
	if (ret)
		f->used = false; /* busy, or gone: the next round */
	else
		r->asked++;
	pthread_mutex_unlock(&r->lock);
	return ret;
}

/* An ec file's stale parity member in slot t: its own server re-encodes it
 * from its group's data members (ec_resync.c), if it and they are online.
 * A stale data member waits (its resync decodes: a later step). */
static bool resync_parity(struct meta_resync *r, const struct marked *x,
			  const struct rpfs_layout *l, const char *path, uint32_t t)
{
	struct srv *s = r->s;
	uint32_t k = l->data_cells, g, io = layout_server(l, t);
	struct rpc_copy members[RPC_EC_MEMBERS_MAX];
	uint8_t body[RPC_PREAMBLE + 40 + 8 * RPC_EC_MEMBERS_MAX];
	int len;

	if (t < l->stripe_count || t >= layout_slots(l) || io >= s->cfg.nio ||
	    io_states_get(s, io, NULL) != IO_ONLINE || k > RPC_EC_MEMBERS_MAX)
		return false;
	g = layout_ec_group(l, t);
	for (uint32_t i = 0; i < k; i++) {
		uint32_t ds = layout_ec_member(l, g, i);

		members[i] = (struct rpc_copy){layout_server(l, ds), ds, 0};
		if (stale_in(x, ds) || members[i].io >= s->cfg.nio ||
		    io_states_get(s, members[i].io, NULL) != IO_ONLINE)
			return false;
	}
	len = rpc_enc_io_resync_ec(body, sizeof(body), x->handle, t, members, k,
				   l->parity_cells, layout_ec_index(l, t) - k,
				   x->epoch + 1);
	if (!ask_resync(r, x->handle, s->cfg.io[io], body, len))
		log_info("rpfsd: %s: re-encoding parity slot %u (I/O server %u) from "
			 "its group's data members",
			 path, t, io);
	return true;
}

/* Ask for one stale copy of x to be resynced, if its server is back and a
 * fresh copy's server is up. */
static void resync_one(struct meta_resync *r, const struct marked *x)
{
	struct srv *s = r->s;
	struct meta *m = s->meta;
	char path[RPC_PATH_MAX + 1];
	struct rpc_attr a;
	MDB_txn *txn;
	int ret;

	ret = meta_txn_begin(m, true, &txn);
	if (ret)
		return;
	ret = meta_entry_of_handle(m, txn, x->handle, path, &a);
	mdb_txn_abort(txn);
	if (!ret && a.layout.kind == RPFS_LAYOUT_EC) {
		/* one at a time per file: the epoch moves */
		for (uint32_t i = 0; i < x->n; i++)
			if (resync_parity(r, x, &a.layout, path, x->slots[i]))
				return;
		return;
	}
	if (ret || layout_copies(&a.layout) < 2)
		return;
	for (uint32_t i = 0; i < x->n; i++) {
		const struct rpfs_layout *l = &a.layout;
		uint32_t t = x->slots[i], src = UINT32_MAX;
		struct rpc_copy target = {layout_server(l, t), t, 0};
		uint8_t body[RPC_PREAMBLE + 40];
		int len;

		if (t >= layout_slots(l) || target.io >= s->cfg.nio ||
		    io_states_get(s, target.io, NULL) != IO_ONLINE)
			continue;
		for (uint32_t k = 0; k < layout_copies(l) && src == UINT32_MAX; k++) {
			uint32_t cs = layout_copy_slot(l, t, k);
			uint32_t io = layout_server(l, cs);

			if (cs != t && !stale_in(x, cs) && io < s->cfg.nio &&
			    io_states_get(s, io, NULL) == IO_ONLINE)
				src = cs;
		}
		if (src == UINT32_MAX)
			continue;
		len = rpc_enc_io_resync(body, sizeof(body), x->handle, src, &target,
					x->epoch + 1);
		if (!ask_resync(r, x->handle, s->cfg.io[layout_server(l, src)], body,
				len))
			log_info(
				"rpfsd: %s: resyncing the copy in slot %u (I/O server %u) "
				"from slot %u",
				path, t, target.io, src);
		return; /* one at a time per file: the epoch moves */
	}
}

static void *driver(void *arg)
{
	struct meta_resync *r = arg;
	struct marked *xs = calloc(RESYNC_SCAN_MAX, sizeof(*xs));
	uint32_t nio = r->s->cfg.nio ? r->s->cfg.nio : 1;
	uint32_t *on = calloc(nio, sizeof(*on));
	bool *rb = calloc(nio, sizeof(*rb));

	pthread_mutex_lock(&r->lock);
	while (!r->stop && xs && on && rb) {
		struct timespec until;
		uint64_t copies;
		uint32_t n;
		bool more;

		pthread_mutex_unlock(&r->lock);
		/* copies lost with an I/O server's storage: marked first */
		memset(rb, 0, nio * sizeof(*rb));
		more = meta_rebuild_step(r->s, rb);
		memset(on, 0, nio * sizeof(*on));
		if (!scan(r->s->meta, xs, RESYNC_SCAN_MAX, &n, &copies, on, nio)) {
			pthread_mutex_lock(&r->lock);
			r->stale_copies = copies;
			memcpy(r->stale_on, on, nio * sizeof(*on));
			memcpy(r->rebuilding, rb, nio * sizeof(*rb));
			pthread_mutex_unlock(&r->lock);
			for (uint32_t i = 0; i < n; i++)
				resync_one(r, &xs[i]);
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += RESYNC_PERIOD_MS / 1000;
		pthread_mutex_lock(&r->lock);
		if (!r->stop && !more && !r->kicked)
			pthread_cond_timedwait(&r->wake, &r->lock, &until);
		r->kicked = false;
	}
	r->running = false;
	pthread_cond_broadcast(&r->wake);
	pthread_mutex_unlock(&r->lock);
	free(xs);
	free(on);
	free(rb);
	return NULL;
}

void meta_resync_done(struct srv *s, uint64_t handle, bool ok)
{
	struct meta_resync *r = s->resync;

	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < RESYNC_INFLIGHT; i++)
		if (r->fl[i].used && r->fl[i].handle == handle)
			r->fl[i].used = false;
	if (ok)
		r->done++;
	else
		r->failed++;
	pthread_cond_signal(&r->wake); /* the next one now */
	pthread_mutex_unlock(&r->lock);
}

void meta_resync_kick(struct srv *s)
{
	struct meta_resync *r = s->resync;

	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->kicked = true;
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
}

int meta_resync_start(struct srv *s)
{
	struct meta_resync *r = calloc(1, sizeof(*r));
	int ret;

	if (!r)
		return -ENOMEM;
	r->s = s;
	r->stale_on = calloc(s->cfg.nio ? s->cfg.nio : 1, sizeof(*r->stale_on));
	r->rebuilding = calloc(s->cfg.nio ? s->cfg.nio : 1, sizeof(*r->rebuilding));
	if (!r->stale_on || !r->rebuilding) {
		free(r->stale_on);
		free(r->rebuilding);
		free(r);
		return -ENOMEM;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->wake, NULL);
	r->running = true;
	ret = pthread_create(&r->thr, NULL, driver, r);
	if (ret) {
		pthread_cond_destroy(&r->wake);
		pthread_mutex_destroy(&r->lock);
		free(r->stale_on);
		free(r->rebuilding);
		free(r);
		return -ret;
	}
	s->resync = r;
	return 0;
}

bool meta_resync_stop(struct srv *s)
{
	struct meta_resync *r = s->resync;
	struct timespec until;
	bool done;

	if (!r)
		return true;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_broadcast(&r->wake);
	/* an IO_RESYNC to a server cut off ends when the transport gives up */
	while (r->running && !pthread_cond_timedwait(&r->wake, &r->lock, &until))
		;
	done = !r->running;
	pthread_mutex_unlock(&r->lock);
	if (!done) {
		pthread_detach(r->thr);
		return false; /* left to the exit, with the peers it uses */
	}
	pthread_join(r->thr, NULL);
	pthread_cond_destroy(&r->wake);
	pthread_mutex_destroy(&r->lock);
	free(r->stale_on);
	free(r->rebuilding);
	free(r);
	s->resync = NULL;
	return true;
}

void meta_resync_of_io(struct srv *s, uint32_t io, uint32_t *stale, bool *rebuilding)
{
	struct meta_resync *r = s->resync;

	*stale = 0;
	*rebuilding = false;
	if (!r || io >= s->cfg.nio)
		return;
	pthread_mutex_lock(&r->lock);
	*stale = r->stale_on[io];
	*rebuilding = r->rebuilding[io];
	pthread_mutex_unlock(&r->lock);
}

void meta_resync_counts(struct srv *s, uint64_t *stale_copies, uint64_t *asked,
			uint64_t *done, uint64_t *failed)
{
	struct meta_resync *r = s->resync;

	*stale_copies = *asked = *done = *failed = 0;
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	*stale_copies = r->stale_copies;
	*asked = r->asked;
	*done = r->done;
	*failed = r->failed;
	pthread_mutex_unlock(&r->lock);
}
