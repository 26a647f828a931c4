/* Ranges of ec data cells held still (IO_HOLD), docs/design/erasure-coding.md
 * ("Degraded: the stripe range held still").
 *
 * Whoever reads a stripe across the members of an ec group (a stale parity
 * member re-encoding itself from the data members, ec_resync.c) must not
 * see a data cell that is already new while its delta has not reached the
 * parity cells: encoded or decoded from the two, the result is wrong
 * bytes. So it first holds the range on every data member: this server
 * admits no new ec write of a held range, and answers the hold only once no
 * ec write of the range is between its store and its last applied delta
 * (counted from admission to the op's end, which follows run_parity's
 * last delta). Held on every data member, the range then changes nowhere
 * in the group until the holds go. A truncate of the datafile counts as a
 * write of everything from its cut on: a parity resync holding to the end
 * never reads sizes a truncate changes before it cuts the parity.
 *
 * Everything here runs on the progress thread but the session queries of
 * the forward threads: writes that meet a hold are parked before any
 * worker takes them (a worker waiting on a hold could be the one the
 * holder's reads need), and resumed when the hold is released or lapses
 * (its lease, checked by the progress loop every 100 ms at most: a holder
 * that died frees the range). A hold answered late (parked until its range
 * drained) is answered from the op that drained it.
 *
 * A session (a hold naming a parity slot) means that member is being
 * re-encoded: every ec write here sends it its deltas, stale or not, until
 * the resync ends it (RPC_HOLD_END), which says whether one could not be
 * sent (the resync then fails and runs again). A session lapses at
 * SESSION_LEASES times the hold's lease; one that lapsed answers its end as
 * disturbed. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ec_hold.h"
#include "log.h"
#include "server.h"
#include "wire.h"

#define SESSION_LEASES 4

enum { EC_NONE, EC_PARKED, EC_INFLIGHT };

struct hold {
	uint64_t id, handle, lo, hi;
	int64_t until_us;
	struct hold *next;
};

struct session {
	uint64_t handle;
	uint32_t slot;
	bool disturbed;
	int64_t until_us;
	struct session *next;
};

struct ec_holds {
	pthread_mutex_t lock; /* all that follows (the forward threads ask) */
	struct hold *holds;
	struct session *sessions;
	struct srv_op *writes;		   /* in flight, by ec_next */
	struct srv_op *parked;		   /* writes behind a hold */
	struct srv_op *waits;		   /* IO_HOLDs waiting for their range to drain */
	atomic_int_fast64_t next_until_us; /* earliest lease end; 0: none */
	atomic_uint_fast64_t n_taken, n_parked, n_lapsed; /* rpfs stats */
};

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static bool overlaps(uint64_t lo, uint64_t hi, uint64_t a, uint64_t b)
{
	return lo < b && a < hi;
}

/* Under lock: the earliest lease end, for the progress loop's check. */
static void note_next(struct ec_holds *h)
{
	int64_t next = 0;

	for (struct hold *x = h->holds; x; x = x->next)
		if (!next || x->until_us < next)
			next = x->until_us;
	for (struct session *x = h->sessions; x; x = x->next)
		if (!next || x->until_us < next)
			next = x->until_us;
	atomic_store(&h->next_until_us, next);
}

/* Under lock: is [lo, hi) of handle held by a hold that has not lapsed? */
static bool held(struct ec_holds *h, uint64_t handle, uint64_t lo, uint64_t hi,
		 int64_t now)
{
	for (struct hold *x = h->holds; x; x = x->next)
		if (x->handle == handle && x->until_us > now &&
		    overlaps(lo, hi, x->lo, x->hi))
			return true;
	return false;
}

/* Under lock: is an ec write of [lo, hi) of handle in flight? */
static bool busy(struct ec_holds *h, uint64_t handle, uint64_t lo, uint64_t hi)
{
	for (struct srv_op *w = h->writes; w; w = w->ec_next)
		if (w->q.handle == handle && overlaps(lo, hi, w->ec_lo, w->ec_hi))
			return true;
	return false;
}

/* Under lock: drop lapsed holds and sessions. */
static void expire(struct ec_holds *h, int64_t now)
{
	for (struct hold **p = &h->holds; *p;) {
		struct hold *x = *p;

		if (x->until_us > now) {
			p = &x->next;
			continue;
		}
		atomic_fetch_add(&h->n_lapsed, 1);
		log_info("rpfsd: a hold of handle %016" PRIx64 " [%" PRIu64 ", %" PRIu64
			 ") lapsed (its holder did not "
			 "let go in time): writes go on",
			 x->handle, x->lo, x->hi);
		*p = x->next;
		free(x);
	}
	for (struct session **p = &h->sessions; *p;) {
		struct session *x = *p;

		if (x->until_us > now) {
			p = &x->next;
			continue;
		}
		*p = x->next;
		free(x);
	}
}

/* Under lock: up to max parked writes no hold stops any more, taken off
 * the parked list into go[] and counted in flight (a hold taken from now
 * on waits for them). */
static size_t unpark(struct ec_holds *h, int64_t now, struct srv_op **go, size_t max)
{
	size_t n = 0;

	for (struct srv_op **p = &h->parked; *p && n < max;) {
		struct srv_op *w = *p;

		if (held(h, w->q.handle, w->ec_lo, w->ec_hi, now)) {
			p = &w->ec_next;
			continue;
		}
		*p = w->ec_next;
		w->ec_state = EC_INFLIGHT;
		w->ec_next = h->writes;
		h->writes = w;
		go[n++] = w;
	}
	return n;
}

/* Let go of hold id of handle: was it still there (not lapsed, not lost
 * with a restart of this server)? */
static bool drop_hold(struct ec_holds *h, uint64_t handle, uint64_t id)
{
	bool found = false;

	pthread_mutex_lock(&h->lock);
	for (struct hold **p = &h->holds; *p; p = &(*p)->next) {
		struct hold *x = *p;

		if (x->id == id && x->handle == handle) {
			*p = x->next;
			free(x);
			found = true;
			break;
		}
	}
	note_next(h);
	pthread_mutex_unlock(&h->lock);
	return found;
}

static void unpark_and_resume(struct ec_holds *h, int64_t now);

/* The reply to a hold: the datafile's size. A hold that can't be answered
 * (no datafile) is let go at once. */
static int answer_hold(struct srv_op *op)
{
	uint64_t size = 0;
	int ret = io_size_local(op->s, op->q.handle, &size);

	if (ret) {
		drop_hold(op->s->ec_holds, op->q.handle, op->q.hold_id);
		unpark_and_resume(op->s->ec_holds, mono_us());
		return ret;
	}
	rpc_enc_u64(op->rep, size);
	op->rep_len = 8;
	return 0;
}

/* Under lock: the waiting holds whose range drained, off the list. */
static struct srv_op *drained(struct ec_holds *h)
{
	struct srv_op *done = NULL;

	for (struct srv_op **p = &h->waits; *p;) {
		struct srv_op *o = *p;

		if (busy(h, o->q.handle, o->ec_lo, o->ec_hi)) {
			p = &o->ec_next;
			continue;
		}
		*p = o->ec_next;
		o->ec_state = EC_NONE;
		o->ec_next = done;
		done = o;
	}
	return done;
}

static void answer_all(struct srv_op *done)
{
	while (done) {
		struct srv_op *o = done;

		done = o->ec_next;
		o->ec_next = NULL;
		o->status = answer_hold(o);
		srv_op_finish(o);
	}
}

/* The parked writes no hold stops any more go on (io.c), outside the
 * lock: their dispatch may finish them at once. */
static void unpark_and_resume(struct ec_holds *h, int64_t now)
{
	struct srv_op *go[64];
	size_t n;

	do {
		pthread_mutex_lock(&h->lock);
		n = unpark(h, now, go, 64);
		pthread_mutex_unlock(&h->lock);
		for (size_t i = 0; i < n; i++)
			if (go[i]->desc->runs == RPC_RUNS_ON_WORKER)
				sched_submit(go[i]); /* a truncate (dispatch.c) */
			else
				io_dispatch_go(go[i]);
	} while (n == 64);
}

bool ec_hold_admit(struct srv_op *op)
{
	struct ec_holds *h = op->s->ec_holds;
	uint64_t lo = UINT64_MAX, hi = 0;
	bool park;

	if (!h)
		return true;
	if (op->q.op == RPC_IO_TRUNCATE) {
		/* the bytes whose code changes: from the cut on (a datafile
		 * grown reads as zeros past its old end, as before) */
		lo = op->q.size;
		hi = UINT64_MAX;
	} else if (op->q.op != RPC_IO_WRITE || !(op->q.flags & RPC_IO_PARITY)) {
		return true;
	}
	for (uint32_t i = 0; op->q.op == RPC_IO_WRITE && i < op->q.nseg; i++) {
		if (op->segs[i].off < lo)
			lo = op->segs[i].off;
		if (op->segs[i].off + op->segs[i].len > hi)
			hi = op->segs[i].off + op->segs[i].len;
	}
	op->ec_lo = lo;
	op->ec_hi = hi;
	pthread_mutex_lock(&h->lock);
	park = held(h, op->q.handle, lo, hi, mono_us());
	op->ec_state = park ? EC_PARKED : EC_INFLIGHT;
	if (park) {
		struct srv_op **tail = &h->parked;

		/* in arrival order: they go on in it */
		while (*tail)
			tail = &(*tail)->ec_next;
		atomic_fetch_add(&h->n_parked, 1);
		op->ec_next = NULL;
		*tail = op;
	} else {
		op->ec_next = h->writes;
		h->writes = op;
	}
	pthread_mutex_unlock(&h->lock);
	return !park;
}

bool ec_hold_covers(struct srv *s, uint64_t handle, uint64_t id, uint64_t lo, uint64_t hi)
{
	struct ec_holds *h = s->ec_holds;
	int64_t now = mono_us();
	bool yes = false;

	if (!h)
		return false;
	pthread_mutex_lock(&h->lock);
	for (struct hold *x = h->holds; x && !yes; x = x->next)
		yes = x->id == id && x->handle == handle && x->until_us > now &&
		      x->lo <= lo && hi <= x->hi;
	pthread_mutex_unlock(&h->lock);
	return yes;
}

void ec_hold_write_done(struct srv_op *op)
{
	struct ec_holds *h = op->s->ec_holds;
	struct srv_op *done = NULL;

	if (!h || op->ec_state != EC_INFLIGHT)
		return;
	pthread_mutex_lock(&h->lock);
	for (struct srv_op **p = &h->writes; *p; p = &(*p)->ec_next)
		if (*p == op) {
			*p = op->ec_next;
			break;
		}
	op->ec_state = EC_NONE;
	op->ec_next = NULL;
	if (h->waits)
		done = drained(h);
	pthread_mutex_unlock(&h->lock);
	answer_all(done);
}

/* Called by the progress loop: holds and sessions past their lease go,
 * and the writes they stopped go on. */
void ec_hold_tick(struct srv *s)
{
	struct ec_holds *h = s->ec_holds;
	int64_t next, now;

	if (!h)
		return;
	next = atomic_load(&h->next_until_us);
	now = mono_us();
	if (!next || next > now)
		return;
	pthread_mutex_lock(&h->lock);
	expire(h, now);
	note_next(h);
	pthread_mutex_unlock(&h->lock);
	unpark_and_resume(h, now);
}

static struct session *session_of(struct ec_holds *h, uint64_t handle, uint32_t slot)
{
	for (struct session *x = h->sessions; x; x = x->next)
		if (x->handle == handle && x->slot == slot)
			return x;
	return NULL;
}

bool ec_session_on(struct srv *s, uint64_t handle, uint32_t slot)
{
	struct ec_holds *h = s->ec_holds;
	bool on;

	if (!h)
		return false;
	pthread_mutex_lock(&h->lock);
	on = session_of(h, handle, slot) != NULL;
	pthread_mutex_unlock(&h->lock);
	return on;
}

void ec_session_disturb(struct srv *s, uint64_t handle, uint32_t slot)
{
	struct ec_holds *h = s->ec_holds;
	struct session *x;

	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	x = session_of(h, handle, slot);
	if (x)
		x->disturbed = true;
	pthread_mutex_unlock(&h->lock);
}

/* RPC_HOLD_RELEASE: let go of hold id of handle. The reply (u32) is 1 if
 * it was still held: the holder's fence. A hold that lapsed, or went with
 * a restart of this server, is 0: writes may have gone by meanwhile, and
 * what the holder read under it is not to be trusted. */
static int release(struct srv_op *op)
{
	struct ec_holds *h = op->s->ec_holds;
	const struct rpc_req *q = &op->q;
	bool found = drop_hold(h, q->handle, q->hold_id);

	unpark_and_resume(h, mono_us());
	put32(op->rep, found);
	op->rep_len = 4;
	return 0;
}

/* RPC_HOLD_END: the session of parity slot copies[0] ends; was a delta
 * for it lost meanwhile (or did it lapse)? */
static int end_session(struct srv_op *op)
{
	struct ec_holds *h = op->s->ec_holds;
	const struct rpc_req *q = &op->q;
	bool disturbed = true;

	pthread_mutex_lock(&h->lock);
	for (struct session **p = &h->sessions; *p; p = &(*p)->next) {
		struct session *x = *p;

		if (x->handle == q->handle && x->slot == q->copies[0].slot) {
			disturbed = x->disturbed;
			*p = x->next;
			free(x);
			break;
		}
	}
	note_next(h);
	pthread_mutex_unlock(&h->lock);
	put32(op->rep, disturbed);
	op->rep_len = 4;
	return 0;
}

int serve_io_hold(struct srv_op *op)
{
	struct ec_holds *h = op->s->ec_holds;
	const struct rpc_req *q = &op->q;
	int64_t now = mono_us();
	struct session *ss;
	struct hold *x;
	bool wait;

	if (!h)
		return -EOPNOTSUPP;
	/* a session (a parity resync) is the servers' own */
	if (q->ncopies && !ident_of(op->conn)->peer) {
		log_warn(
			"rpfsd: a hold with a resync's session from %s, a client: refused",
			xp_conn_peer(op->conn));
		return -EPERM;
	}
	if (q->flags & RPC_HOLD_RELEASE)
		return release(op);
	if (q->flags & RPC_HOLD_END)
		return end_session(op);
	x = calloc(1, sizeof(*x));
	ss = q->ncopies ? calloc(1, sizeof(*ss)) : NULL;
	if (!x || (q->ncopies && !ss)) {
		free(x);
		free(ss);
		return -ENOMEM;
	}
	*x = (struct hold){q->hold_id,
			   q->handle,
			   q->off,
			   q->len ? q->off + q->len : UINT64_MAX,
			   now + (int64_t)q->lease_ms * 1000,
			   NULL};
	atomic_fetch_add(&h->n_taken, 1);
	pthread_mutex_lock(&h->lock);
	x->next = h->holds;
	h->holds = x;
	if (ss) {
		struct session *have = session_of(h, q->handle, q->copies[0].slot);

		if (have) {
			free(ss);
			ss = have;
		} else {
			ss->handle = q->handle;
			ss->slot = q->copies[0].slot;
			ss->next = h->sessions;
			h->sessions = ss;
		}
		ss->until_us = now + (int64_t)q->lease_ms * 1000 * SESSION_LEASES;
	}
	note_next(h);
	op->ec_lo = x->lo;
	op->ec_hi = x->hi;
	wait = busy(h, q->handle, x->lo, x->hi);
	if (wait) {
		op->ec_state = EC_PARKED;
		op->ec_next = h->waits;
		h->waits = op;
	}
	pthread_mutex_unlock(&h->lock);
	return wait ? SRV_PENDING : answer_hold(op);
}

int ec_holds_open(struct srv *s)
{
	struct ec_holds *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	s->ec_holds = h;
	return 0;
}

void ec_holds_close(struct srv *s)
{
	struct ec_holds *h = s->ec_holds;

	if (!h)
		return;
	/* the progress thread has stopped: an op still parked (a hold taken
	 * as the server stopped) is never answered, and goes with the
	 * process; its client sees the connection close */
	while (h->holds) {
		struct hold *x = h->holds;

		h->holds = x->next;
		free(x);
	}
	while (h->sessions) {
		struct session *x = h->sessions;

		h->sessions = x->next;
		free(x);
	}
	pthread_mutex_destroy(&h->lock);
	free(h);
	s->ec_holds = NULL;
}

void ec_hold_counts(struct srv *s, uint64_t *taken, uint64_t *parked, uint64_t *lapsed)
{
	struct ec_holds *h = s->ec_holds;

	*taken = h ? atomic_load(&h->n_taken) : 0;
	*parked = h ? atomic_load(&h->n_parked) : 0;
	*lapsed = h ? atomic_load(&h->n_lapsed) : 0;
}
