/* The engine (see xport_engine.h and, for the layers, xport_domain.h).
 *
 * One round: read the completion queue and dispatch each completion (a
 * receive, a send or fast write, an RDMA of the bulk path, a fast message
 * landing in our slot), read the event queue (connection management), post
 * what waits on backlogs, end the calls or requests of connections that
 * broke, sweep timeouts every 50 ms, free connections that are done. The
 * roles' handlers run here under the lock; whatever they finish for the
 * application is queued and run by xp_engine_run_deferred after the lock is
 * let go, so application code never runs inside the engine and may call the
 * API again.
 *
 * Waiting: a round that found nothing blocks in epoll on the provider's
 * wait fds (after fi_trywait says it is safe) and on an eventfd that
 * xp_fabric_post writes; an idle side uses no CPU. A caller waiting for
 * its own call, and rpfsd's progress thread, poll first, for a budget of
 * at most spin_us after the last event that spin_learn sets from the gaps
 * between events (the next message usually comes within a round trip:
 * librpfs's 4 KiB pwrite/pread took 36-52 us with both sides polling,
 * 75-124 us where the budget had fallen to zero, which it once could not
 * grow back from), but never while bulk data moves: on tcp that polling
 * was most of a server's CPU (0.5-0.9 s per GiB written against 0.3) and
 * cost bandwidth on a node whose cores the servers share. The client's
 * progress thread never polls: it shares the cores with the program it
 * runs beside. On tcp
 * an RMA moves only while its target polls (FACTS.md), and the provider's
 * wait fd does not always wake a sleeper when it could move more, so while
 * a software provider moves RMA for us a sleep lasts at most
 * XP_RMA_WAIT_MS. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "xport_engine.h"

#define XP_CQ_BATCH 32
#define XP_SWEEP_NS 50000000 /* look for expired connections every 50 ms */
/* The longest sleep while tcp moves RMA data for us. Polling instead
 * (rpfsd did, and callers) cost a 1 GiB write 0.9 s of server CPU where
 * this costs 0.3 s, and ran it at 1.3 GB/s where this runs it at 2.2 (4
 * servers and the client on 2 cores); without any bound a posted 256 MiB
 * write stood still for 100-170 ms of compute. */
#define XP_RMA_WAIT_MS 1

/* ---- dispatch ------------------------------------------------------------------- */

static void recv_done(struct xp_rbuf *rb, int status, size_t len)
{
	struct xp_conn *c = rb->op.conn;
	struct xp_fabric *fab = c->fab;

	if (status) {
		if (c->state != XP_CONN_BROKEN && status != -ECANCELED)
			xp_conn_fail(c, status, "receive failed");
		return;
	}
	if (c->state == XP_CONN_BROKEN)
		return;
	if (c->state != XP_CONN_UP)
		fab->hs_ops->recv(c, rb, len);
	else
		fab->ops->recv(c, rb, len);
}

/* An operation completed with status (0 or a negative errno). */
static void dispatch(struct xp_fabric *fab, struct xp_op *op, int status,
		     const struct fi_cq_data_entry *e)
{
	switch (op->kind) {
	case XP_OP_RECV:
		recv_done((struct xp_rbuf *)op, status, e ? e->len : 0);
		break;
	case XP_OP_SEND:
		fab->ops->send_done(op->conn, (struct xp_sbuf *)op, status);
		break;
	case XP_OP_RMA:
		op->done(op, status, e);
		break;
	}
}

/* A write with immediate data landed in one of our slots. On verbs it
 * consumed a posted receive (op), on tcp nothing (op is NULL). */
static void fast_landed(struct xp_fabric *fab, uint64_t imm, struct xp_op *op)
{
	struct xp_rbuf *rb = op && op->kind == XP_OP_RECV ? (struct xp_rbuf *)op : NULL;
	struct proto_hdr h;
	const char *msg;
	uint32_t slot;
	struct xp_conn *c = xp_fast_arrival(fab, imm, rb, &h, &msg, &slot);

	if (c)
		fab->ops->fast(c, &h, msg, c->slot_size, slot);
}

static void cq_entry(struct xp_fabric *fab, const struct fi_cq_data_entry *e)
{
	struct xp_op *op = e->op_context;

	if (op && op->conn)
		op->conn->posted--;
	if (e->flags & FI_REMOTE_CQ_DATA)
		fast_landed(fab, e->data, op);
	else if (op)
		dispatch(fab, op, 0, e);
}

static void cq_error(struct xp_fabric *fab)
{
	struct fi_cq_err_entry err = {0};
	struct xp_op *op;

	if (fi_cq_readerr(fab->cq, &err, 0) != 1)
		return;
	op = err.op_context;
	if (!op) {
		log_warn("completion error without context: %s", fi_strerror(err.err));
		return;
	}
	if (op->conn)
		op->conn->posted--;
	dispatch(fab, op, err.err ? -err.err : -EIO, NULL);
}

static int poll_cq(struct xp_fabric *fab)
{
	struct fi_cq_data_entry e[XP_CQ_BATCH];
	int n = 0;

	for (int round = 0; round < 8; round++) {
		ssize_t got = fi_cq_read(fab->cq, e, XP_CQ_BATCH);

		if (got == -FI_EAVAIL) {
			cq_error(fab);
			n++;
			continue;
		}
		if (got <= 0)
			break;
		for (ssize_t i = 0; i < got; i++)
			cq_entry(fab, &e[i]);
		n += (int)got;
		if (got < XP_CQ_BATCH)
			break;
	}
	return n;
}

static int poll_eq(struct xp_fabric *fab)
{
	struct {
		struct fi_eq_cm_entry e;
		uint8_t data[256];
	} buf;
	uint32_t event;
	int n = 0;

	for (;;) {
		ssize_t len = fi_eq_read(fab->eq, &event, &buf, sizeof(buf), 0);

		if (len == -FI_EAVAIL) {
			struct fi_eq_err_entry err = {0};

			if (fi_eq_readerr(fab->eq, &err, 0) > 0 && err.fid &&
			    err.fid->context && (!fab->pep || err.fid != &fab->pep->fid))
				fab->hs_ops->error(err.fid->context,
						   err.err ? -err.err : -ECONNREFUSED,
						   err.prov_errno, err.err_data,
						   err.err_data_size);
			n++;
			continue;
		}
		if (len <= 0)
			break;
		fab->hs_ops->event(fab, event, &buf.e, (size_t)len);
		n++;
	}
	return n;
}

/* ---- connections: backlogs, failures, timeouts ---------------------------------- */

static void post_backlogs(struct xp_fabric *fab)
{
	fab->need_backlog = false;
	for (uint32_t i = 0; i < fab->nconns; i++) {
		struct xp_conn *c = fab->conns[i];

		if (c && (c->tx_backlog || c->rx_backlog) && c->state != XP_CONN_BROKEN)
			xp_conn_post_backlog(c);
	}
}

/* Broken connections: what waits on their backlogs completes with their
 * error, then their side ends its calls or requests. */
static void end_failed(struct xp_fabric *fab)
{
	fab->need_fail = false;
	for (uint32_t i = 0; i < fab->nconns; i++) {
		struct xp_conn *c = fab->conns[i];
		struct xp_op *op;

		if (!c || c->state != XP_CONN_BROKEN || c->fail_handled)
			continue;
		while ((op = xp_conn_take_backlog(c)))
			dispatch(fab, op, -ECANCELED, NULL);
		c->fail_handled = true;
		fab->ops->conn_failed(c);
		xp_conn_maybe_free(c);
	}
}

static void sweep_timeouts(struct xp_fabric *fab)
{
	int64_t now = xp_now_ns();

	if (now < fab->next_sweep_ns)
		return;
	fab->next_sweep_ns = now + XP_SWEEP_NS;
	for (uint32_t i = 0; i < fab->nconns; i++) {
		struct xp_conn *c = fab->conns[i];
		char why[96];

		if (!c || c->state == XP_CONN_BROKEN)
			continue;
		if (c->state != XP_CONN_UP) {
			if (!fab->hs_ops->expired(c, now))
				continue;
			snprintf(why, sizeof(why),
				 "no handshake within handshake_ms (%u ms)",
				 fab->params.handshake_ms);
		} else if (!fab->ops->expired(c, now, why, sizeof(why))) {
			continue;
		}
		fab->stats.timeouts++;
		xp_conn_fail(c, -ETIMEDOUT, why);
	}
}

/* ---- a round ----------------------------------------------------------------------- */

static int poll_all(struct xp_fabric *fab)
{
	int n = poll_cq(fab) + poll_eq(fab);

	if (fab->need_backlog)
		post_backlogs(fab);
	if (fab->need_fail)
		end_failed(fab);
	/* Work for the deferred phase counts: the caller must come back out. */
	if (fab->deferred || __atomic_load_n(&fab->posts, __ATOMIC_ACQUIRE))
		n++;
	return n;
}

static void idle_wait(struct xp_fabric *fab, int timeout_ms)
{
	struct fid *fids[2] = {&fab->cq->fid, &fab->eq->fid};
	struct epoll_event ev[4];
	uint64_t v;
	int n;

	fab->stats.idle_waits++;
	if (!fab->can_wait) {
		xp_unlock(fab);
		usleep(timeout_ms > 1 ? 1000 : (useconds_t)timeout_ms * 1000);
		xp_lock_quiet(fab);
		return;
	}
	if (fi_trywait(fab->fabric, fids, 2) != FI_SUCCESS)
		return;
	/* Let other threads in while this one sleeps. */
	fab->waiter = true;
	xp_unlock(fab);
	n = epoll_wait(fab->epfd, ev, 4, timeout_ms);
	/* Drain the hand-over eventfd here, before poll_all looks at the
	 * list: a post whose write lands after the deferred phase took the
	 * list would otherwise leave it readable with nothing queued, and
	 * every later wait would return at once (a thread spinning at 100%
	 * on an idle server). A post appended after this read writes again. */
	for (int i = 0; i < n; i++)
		if (ev[i].data.u32 == 0 && read(fab->post_fd, &v, sizeof(v)) < 0 &&
		    errno != EAGAIN)
			log_dbg("eventfd read: %s", strerror(errno));
	xp_lock_quiet(fab);
	fab->waiter = false;
}

/* The polling budget learns from the gaps between events, whether the
 * thread polled or slept through them: a gap polling for spin_us would
 * have caught sets it to twice that gap (so it also grows back from zero
 * once the traffic turns into a request-reply stream again), a longer one
 * halves it. A request-reply stream keeps it; a server whose events come
 * milliseconds apart (a pipeline waiting on its storage copies) stops
 * polling within a few rounds. */
static void spin_learn(struct xp_fabric *fab, int64_t now)
{
	int64_t max_ns = (int64_t)fab->params.spin_us * 1000;
	int64_t gap = now - fab->last_event_ns;

	if (gap > max_ns)
		fab->spin_ns /= 2;
	else if (fab->spin_ns < 2 * gap + 1000)
		fab->spin_ns = 2 * gap + 1000 < max_ns ? 2 * gap + 1000 : max_ns;
}

/* Still within the budget since the last event? */
static bool spin_left(const struct xp_fabric *fab)
{
	return xp_now_ns() < fab->last_event_ns + fab->spin_ns;
}

/* A software provider moves bulk data for us: nobody polls then. */
static bool bulk_moving(const struct xp_fabric *fab)
{
	return fab->sw_rma && fab->rma_busy;
}

/* Between two polls (lock held): let the peer's thread, or anyone the
 * lock keeps out, run. */
static void spin_yield(struct xp_fabric *fab)
{
	xp_unlock(fab);
	sched_yield();
	xp_lock_quiet(fab);
}

/* Poll until an event or the end of the budget. Yield between polls: on a
 * machine with few cores a spinning thread must not hold a core the peer
 * needs to make the very progress it waits for. */
static int spin_round(struct xp_fabric *fab)
{
	int n = 0;

	while (!n && spin_left(fab)) {
		spin_yield(fab);
		n = poll_all(fab);
	}
	return n;
}

/* spin: keep polling for spin_us after the last activity before sleeping,
 * unless bulk data moves (see the top of this file). */
static int engine_round(struct xp_fabric *fab, int timeout_ms, bool spin)
{
	int n;

	xp_assert_locked(fab);
	n = poll_all(fab);
	sweep_timeouts(fab);
	if (!n && timeout_ms > 0) {
		bool moving = bulk_moving(fab);

		if (moving && timeout_ms > XP_RMA_WAIT_MS)
			timeout_ms = XP_RMA_WAIT_MS;
		if (spin && !moving)
			n = spin_round(fab);
		if (!n) {
			idle_wait(fab, timeout_ms);
			n = poll_all(fab);
		}
	}
	if (n) {
		int64_t now = xp_now_ns();

		spin_learn(fab, now);
		fab->last_event_ns = now;
	}
	if (fab->need_reap)
		xp_reap_conns(fab);
	if (n)
		pthread_cond_broadcast(&fab->cond);
	return n;
}

int xp_engine_round(struct xp_fabric *fab, int timeout_ms)
{
	return engine_round(fab, timeout_ms, true);
}

int xp_engine_sleep_round(struct xp_fabric *fab, int timeout_ms)
{
	return engine_round(fab, timeout_ms, false);
}

/* ---- deferred work ---------------------------------------------------------------- */

static void run_one(struct xp_fabric *fab, struct xp_cb *cb)
{
	struct xp_conn *c;

	switch (cb->kind) {
	case XP_CB_FN:
		cb->f.fn(cb->a);
		break;
	case XP_CB_REQ:
		fab->handler(cb->a, fab->handler_arg);
		break;
	case XP_CB_CONN:
		c = cb->a;
		if (fab->conn_fn && !fab->closing)
			fab->conn_fn(c, cb->st, fab->conn_arg);
		xp_lock_quiet(fab);
		c->events_pending--;
		xp_conn_maybe_free(c);
		xp_unlock(fab);
		break;
	case XP_CB_DONE:
		cb->f.done(cb->a, cb->st, cb->b);
		break;
	case XP_CB_CHUNK:
		cb->f.chunk(cb->a, cb->b);
		break;
	case XP_CB_CALL: {
		struct xp_call *call = cb->a;

		call->cb(call);
		break;
	}
	}
}

void xp_engine_run_deferred(struct xp_fabric *fab)
{
	xp_assert_unlocked(fab); /* callbacks may take it */
	for (;;) {
		struct xp_cb *list, *posts, *cb;
		uint64_t v;

		xp_lock_quiet(fab);
		list = fab->deferred;
		fab->deferred = fab->deferred_tail = NULL;
		xp_unlock(fab);
		pthread_mutex_lock(&fab->post_lock);
		posts = fab->posts;
		fab->posts = fab->posts_tail = NULL;
		pthread_mutex_unlock(&fab->post_lock);
		if (posts && read(fab->post_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			log_dbg("eventfd read: %s", strerror(errno));
		if (!list && !posts)
			return;
		/* Handed-over work first: it was queued before this round's. */
		while (posts) {
			cb = posts;
			posts = cb->next;
			run_one(fab, cb);
			if (cb->owned)
				free(cb);
		}
		while (list) {
			cb = list;
			list = cb->next;
			/* The entry may belong to what the callback frees. */
			if (cb->owned) {
				run_one(fab, cb);
				free(cb);
			} else {
				run_one(fab, cb);
			}
		}
	}
}

void xp_engine_let_in(struct xp_fabric *fab)
{
	xp_assert_locked(fab);
	/* A mutex is not fair: unlocking and locking again at once would
	 * mostly win against the woken caller. Wait (bounded) until the
	 * caller holds the lock; it keeps it only to post or look. */
	if (!__atomic_load_n(&fab->lock_wanted, __ATOMIC_ACQUIRE))
		return;
	xp_unlock(fab);
	for (int i = 0; i < 1000 && __atomic_load_n(&fab->lock_wanted, __ATOMIC_ACQUIRE);
	     i++)
		sched_yield();
	xp_lock_quiet(fab);
}

int xp_progress(struct xp_fabric *fab, int timeout_ms)
{
	int n;

	xp_lock_quiet(fab);
	n = xp_engine_round(fab, timeout_ms);
	xp_engine_let_in(fab);
	xp_unlock(fab);
	xp_engine_run_deferred(fab);
	return n;
}

/* Lock held. The progress thread itself waiting (a call its tick makes:
 * client/keepalive.c) sleeps in the wait fds as it does in its own loop;
 * nobody else would wake it from the cond. */
static bool on_progress_thread(const struct xp_fabric *fab)
{
	return fab->has_thread && pthread_equal(pthread_self(), fab->thread);
}

int xp_engine_wait(struct xp_fabric *fab, bool (*ready)(void *arg), void *arg,
		   int64_t timeout_us)
{
	int64_t end = timeout_us < 0 ? INT64_MAX : xp_now_ns() + timeout_us * 1000;
	xp_lock(fab);
	while (!ready(arg)) {
		int64_t left = end - xp_now_ns();

		if (left <= 0) {
			xp_unlock(fab);
			xp_engine_run_deferred(fab);
			return -ETIMEDOUT;
		}
		/* Poll first, within the budget (a reply usually comes within
		 * a round trip), yielding between polls as spin_round does,
		 * and not at all while bulk data moves (as engine_round); then
		 * block, one thread in the wait fds, the others on the cond. */
		if (xp_engine_round(fab, 0)) {
			;
		} else if (!bulk_moving(fab) && spin_left(fab)) {
			spin_yield(fab);
		} else if (!fab->waiter &&
			   (!fab->has_thread || on_progress_thread(fab))) {
			xp_engine_round(
				fab, left > 100000000 ? 100 : (int)(left / 1000000) + 1);
		} else {
			struct timespec ts;

			/* 10 ms at most, so a missed signal costs little;
			 * never past the caller's deadline. */
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += left < 10000000 ? left : 10000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			xp_cond_wait(fab, &ts);
		}
		if (fab->deferred || __atomic_load_n(&fab->posts, __ATOMIC_ACQUIRE)) {
			xp_unlock(fab);
			xp_engine_run_deferred(fab);
			xp_lock_quiet(fab);
		}
	}
	xp_unlock(fab);
	xp_engine_run_deferred(fab);
	return 0;
}
