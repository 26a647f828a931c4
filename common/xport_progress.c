/* Progress: completion and connection events, blocking waits, timeouts.
 *
 * On tcp an RMA only completes while its target polls (FACTS.md), so both
 * sides must keep calling progress while anything is in flight. To not burn
 * a core while idle, a progress call that found nothing blocks in epoll on
 * the provider's wait fds (after fi_trywait says it is safe) and on an
 * eventfd that xp_fabric_post writes. Callers poll for short waits and pass
 * a timeout for long ones. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "log.h"
#include "xport_priv.h"

#define XP_CQ_BATCH 32
#define XP_SWEEP_NS 50000000 /* look for expired operations every 50 ms */

static void run_posts(struct xp_fabric *fab, int *n)
{
	struct xp_post *list;
	uint64_t v;

	pthread_mutex_lock(&fab->post_lock);
	list = fab->posts;
	fab->posts = fab->posts_tail = NULL;
	pthread_mutex_unlock(&fab->post_lock);
	if (!list)
		return;
	if (read(fab->post_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_dbg("eventfd read: %s", strerror(errno));
	while (list) {
		struct xp_post *p = list;

		list = p->next;
		p->fn(p->arg);
		free(p);
		(*n)++;
	}
}

static void cq_entry(struct xp_fabric *fab, const struct fi_cq_data_entry *e)
{
	struct xp_op *op = e->op_context;

	if (op && op->conn)
		op->conn->posted--;
	if (e->flags & FI_REMOTE_CQ_DATA) {
		/* Fast RDMA Write arrival. On verbs it consumed a posted
		 * receive (op), on tcp it consumed nothing (op is NULL). */
		xp_fast_arrival(fab, e->data, (struct xp_rbuf *)op);
		return;
	}
	if (op)
		op->done(op, 0, e);
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
	op->done(op, err.err ? -err.err : -EIO, NULL);
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
			    err.fid->context &&
			    (!fab->pep || err.fid != &fab->pep->fid)) {
				struct xp_conn *c = err.fid->context;
				int code = err.err ? -err.err : -ECONNREFUSED;

				/* A refusal may say why in its reject data. */
				if (c->state == XP_CONN_CONNECTING &&
				    (code == -ECONNREFUSED || err.err_data_size))
					xp_conn_rejected(c, err.err_data,
							 err.err_data_size);
				else
					xp_conn_fail(c, code, "connection error");
			}
			n++;
			continue;
		}
		if (len <= 0)
			break;
		xp_handle_eq_event(fab, event, &buf.e, (size_t)len);
		n++;
	}
	return n;
}

void xp_sweep_timeouts(struct xp_fabric *fab)
{
	int64_t now = xp_now_ns();
	int64_t limit = (int64_t)fab->params.timeout_ms * 1000000;

	if (now < fab->next_sweep_ns)
		return;
	fab->next_sweep_ns = now + XP_SWEEP_NS;
	for (uint32_t i = 0; i < fab->nconns; i++) {
		struct xp_conn *c = fab->conns[i];
		bool expired = false;

		if (!c || c->state == XP_CONN_BROKEN)
			continue;
		if (c->state != XP_CONN_UP) {
			/* Half-open or refused: the handshake has a bound. */
			expired = fab->role == XP_SERVER && c->connect_deadline &&
				  now > c->connect_deadline;
		} else if (fab->role == XP_SERVER && fab->params.idle_timeout_s &&
			   !c->reqs &&
			   now - c->last_active_ns >
				   (int64_t)fab->params.idle_timeout_s * 1000000000) {
			xp_conn_fail(c, -ETIMEDOUT, "idle");
			continue;
		} else if (fab->role == XP_CLIENT) {
			/* "No progress" means no answer at all for a whole timeout
			 * while calls wait: a server that works through a long queue
			 * of large requests keeps answering, a dead or hung one
			 * does not. (Per-call deadlines would fail the tail of a
			 * long queue on a healthy server.) */
			expired = c->inflight && now - c->last_reply_ns > limit;
		} else {
			/* A client that stopped answering RMA stalls our buffers. */
			for (struct xp_req *r = c->reqs; r && !expired; r = r->next)
				expired = r->rma_pending && now - r->start_ns > limit;
		}
		if (expired) {
			char why[96];

			fab->stats.timeouts++;
			if (c->state != XP_CONN_UP)
				snprintf(why, sizeof(why),
					 "no handshake within handshake_ms (%u ms)",
					 fab->params.handshake_ms);
			else
				snprintf(why, sizeof(why), "no progress within %d ms",
					 fab->params.timeout_ms);
			xp_conn_fail(c, -ETIMEDOUT, why);
		}
	}
}

void xp_run_done_calls(struct xp_fabric *fab)
{
	while (fab->done_calls) {
		struct xp_call *call = fab->done_calls;

		fab->done_calls = call->priv.next;
		call->priv.next = NULL;
		call->cb(call);
	}
}

static void idle_wait(struct xp_fabric *fab, int timeout_ms)
{
	struct fid *fids[2] = {&fab->cq->fid, &fab->eq->fid};
	struct epoll_event ev[4];

	fab->stats.idle_waits++;
	if (!fab->can_wait) {
		usleep(timeout_ms > 1 ? 1000 : (useconds_t)timeout_ms * 1000);
		return;
	}
	if (fi_trywait(fab->fabric, fids, 2) != FI_SUCCESS)
		return;
	/* Let other threads in while this one sleeps. */
	fab->waiter = true;
	pthread_mutex_unlock(&fab->lock);
	epoll_wait(fab->epfd, ev, 4, timeout_ms);
	pthread_mutex_lock(&fab->lock);
	fab->waiter = false;
}

static int poll_all(struct xp_fabric *fab)
{
	int n = 0;

	run_posts(fab, &n);
	n += poll_cq(fab);
	n += poll_eq(fab);
	return n;
}

int xp_progress_locked(struct xp_fabric *fab, int timeout_ms)
{
	int n;

	fab->depth++;
	n = poll_all(fab);
	xp_sweep_timeouts(fab);
	if (!n && timeout_ms > 0 && fab->depth == 1) {
		/* Back off in two steps: keep polling for spin_us after the last
		 * activity (the next request or reply usually comes within a
		 * round trip, and waking a sleeping thread, on a VM especially,
		 * costs more than that), then sleep in the wait fds. */
		int64_t now = xp_now_ns();
		int64_t spin_end =
			fab->last_event_ns + (int64_t)fab->params.spin_us * 1000;
		bool moving = fab->sw_rma && fab->rma_busy;

		/* While a software provider moves bulk data for us, our own
		 * polling is what moves it: never sleep then, but come back
		 * every millisecond so callers see timeouts. */
		if (moving && spin_end < now + 1000000)
			spin_end = now + 1000000;
		/* Yield between polls: on a machine with few cores a spinning
		 * thread must not hold a core the server's storage workers (or
		 * the peer process) need to make the very progress it waits for. */
		while (!n && xp_now_ns() < spin_end) {
			sched_yield();
			n = poll_all(fab);
		}
		if (!n && !moving) {
			idle_wait(fab, timeout_ms);
			n = poll_all(fab);
		}
	}
	if (n)
		fab->last_event_ns = xp_now_ns();
	fab->depth--;
	if (!fab->depth) {
		if (fab->need_reap)
			xp_reap_conns(fab);
		xp_run_done_calls(fab);
		if (n)
			pthread_cond_broadcast(&fab->cond);
	}
	return n;
}

/* Completions free queue entries within a round trip. A provider that
 * refuses posts for a whole timeout never will (seen on verbs when the
 * device cannot be used): fail the connection rather than spin. */
bool xp_retry_post(struct xp_conn *c, int64_t *since)
{
	int64_t now = xp_now_ns();

	if (!*since)
		*since = now;
	if (now - *since > (int64_t)c->fab->params.timeout_ms * 1000000) {
		xp_conn_fail(c, -ETIMEDOUT,
			     "the provider took no operation for a whole timeout");
		return false;
	}
	xp_progress_locked(c->fab, 0);
	return c->state != XP_CONN_BROKEN;
}

int xp_progress(struct xp_fabric *fab, int timeout_ms)
{
	int n;

	pthread_mutex_lock(&fab->lock);
	n = xp_progress_locked(fab, timeout_ms);
	pthread_mutex_unlock(&fab->lock);
	return n;
}
