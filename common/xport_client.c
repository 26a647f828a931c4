/* The client's call path (see xport_domain.h for the layers): choosing a
 * data path, credit-based flow control, sending requests, matching replies,
 * completing calls.
 *
 * Flow control: a call leaves the waiting queue only when the connection
 * has a send credit (a receive the server posted for us), a free tag (one
 * per send buffer) and, on the fast path, a free slot. Credits come back in
 * every reply and in CREDIT control messages; slots come back with the
 * reply of the request that used them. Calls wait in FIFO order.
 *
 * A call is over when its reply arrived and its send completed; a call with
 * a callback has it run by the engine after the lock is let go. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xport_engine.h"

#define TAG_INDEX(t) ((t)&0xffffu)

/* ---- completion of a call ------------------------------------------------------ */

static void call_finish(struct xp_call *call, int status)
{
	struct xp_conn *c = call->priv.conn;
	struct xp_fabric *fab = c->fab;

	if (call->priv.done)
		return;
	if (call->used_path == XP_PATH_BULK)
		fab->rma_busy--;
	xp_bulk_release(call);
	if (status && !call->status)
		call->status = status;
	c->inflight--;
	fab->calls_busy--;
	/* Done last: a waiting owner may free the call once it reads it. */
	if (call->cb && xp_defer_new(fab, XP_CB_CALL, (union xp_cb_fn){0}, call, NULL, 0))
		log_err("no memory to run a call's callback");
	__atomic_store_n(&call->priv.done, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&fab->cond);
	xp_conn_maybe_free(c);
}

static void dispatch_calls(struct xp_conn *c);

/* A call is over when its reply arrived and its send completed. */
static void call_try_complete(struct xp_conn *c, struct xp_call *call, uint32_t idx)
{
	if (!call->priv.replied || call->priv.pending_tx)
		return;
	c->calls[idx] = NULL;
	xp_sbuf_put(c, &c->sbufs[idx]);
	call_finish(call, 0);
	dispatch_calls(c);
}

static void client_conn_failed(struct xp_conn *c)
{
	int err = c->error ? c->error : -ENOTCONN;

	for (uint32_t i = 0; c->calls && i < c->max_req; i++) {
		struct xp_call *call = c->calls[i];

		if (!call)
			continue;
		c->calls[i] = NULL;
		/* The send buffer stays reserved until its flushed completion,
		 * which must not touch the call: its owner may free it now. */
		c->sbufs[i].call = NULL;
		call_finish(call, err);
	}
	while (c->waitq) {
		struct xp_call *call = c->waitq;

		c->waitq = call->priv.next;
		call->priv.next = NULL;
		call_finish(call, err);
	}
	c->waitq_tail = NULL;
}

static void client_send_done(struct xp_conn *c, struct xp_sbuf *sb, int status)
{
	struct xp_call *call = sb->call;

	if (status && status != -ECANCELED)
		xp_conn_fail(c, status, "send failed");
	if (!call) {
		/* HELLO, or a call already failed: free the buffer now. */
		xp_sbuf_put(c, sb);
		return;
	}
	call->priv.pending_tx--;
	if (c->calls[sb->index] == call)
		call_try_complete(c, call, sb->index);
	else if (!call->priv.pending_tx)
		xp_sbuf_put(c, sb);
}

/* ---- path choice ------------------------------------------------------------------- */

static int choose_path(struct xp_conn *c, struct xp_call *call, int dir, size_t n)
{
	const struct xp_params *p = &c->fab->params;
	int path = call->path ? call->path : p->force_path;
	size_t req = PROTO_HDR_SIZE + call->req_len;

	if (dir == PROTO_DIR_NONE)
		path = XP_PATH_INLINE;
	if (!path)
		path = n <= p->inline_max ? XP_PATH_INLINE
		       : n <= p->fast_max ? XP_PATH_FAST
					  : XP_PATH_BULK;
	switch (path) {
	case XP_PATH_INLINE:
		if (n > p->inline_max)
			return -EINVAL;
		if (dir == PROTO_DIR_WRITE ? req + n > c->peer_recv_size
					   : req > c->peer_recv_size)
			return -E2BIG;
		break;
	case XP_PATH_FAST:
		if (n > p->fast_max)
			return -EINVAL;
		if (dir == PROTO_DIR_WRITE ? req + n > c->peer_fast.slot_size
					   : req > c->peer_recv_size)
			return -E2BIG;
		break;
	case XP_PATH_BULK:
		break;
	default:
		return -EINVAL;
	}
	return path;
}

int xp_call_max_desc(struct xp_conn *c, size_t body_len)
{
	size_t room = c->peer_recv_size - PROTO_HDR_SIZE;

	if (body_len >= room)
		return 0;
	return (int)((room - body_len) / PROTO_DESC_SIZE);
}

/* ---- sending ----------------------------------------------------------------------- */

/* Build and post one request. Resources are reserved by the caller. */
static int send_request(struct xp_conn *c, struct xp_call *call, struct xp_sbuf *sb)
{
	int dir = call->priv.wr_len   ? PROTO_DIR_WRITE
		  : call->priv.rd_cap ? PROTO_DIR_READ
				      : PROTO_DIR_NONE;
	struct proto_hdr h = {0};
	size_t off = PROTO_HDR_SIZE + call->req_len;

	h.type = PROTO_REQ;
	h.path = (uint8_t)call->used_path;
	h.dir = (uint8_t)dir;
	h.tag = call->priv.tag;
	h.acks = c->acks;
	c->acks = 0;
	h.body_len = (uint32_t)call->req_len;
	h.data_len = dir == PROTO_DIR_WRITE ? call->priv.wr_len : call->priv.rd_cap;
	h.slot = call->priv.slot;
	h.data_off = (uint16_t)off;
	memcpy(sb->buf + PROTO_HDR_SIZE, call->req, call->req_len);
	call->priv.pending_tx = 1;

	if (call->used_path == XP_PATH_FAST && dir == PROTO_DIR_WRITE) {
		proto_hdr_encode(sb->buf, &h);
		return xp_fast_send_call(c, call, sb, off);
	}
	if (call->used_path == XP_PATH_INLINE && dir == PROTO_DIR_WRITE) {
		xp_gather(sb->buf + off, call->wr_iov, call->wr_cnt);
		off += call->priv.wr_len;
	} else if (call->used_path == XP_PATH_BULK) {
		const struct iovec *iov =
			dir == PROTO_DIR_WRITE ? call->wr_iov : call->rd_iov;
		int cnt = dir == PROTO_DIR_WRITE ? call->wr_cnt : call->rd_cnt;

		h.ndesc = xp_bulk_encode(c, call, iov, cnt, sb->buf + off);
		off += (size_t)h.ndesc * PROTO_DESC_SIZE;
		h.data_off = (uint16_t)off;
	}
	proto_hdr_encode(sb->buf, &h);
	return xp_post_send(c, sb, off);
}

static void dispatch_calls(struct xp_conn *c)
{
	struct xp_fabric *fab = c->fab;

	while (c->waitq && c->state == XP_CONN_UP) {
		struct xp_call *call = c->waitq;
		bool fast = call->used_path == XP_PATH_FAST;
		bool fast_wr = fast && call->priv.wr_len;
		bool fast_rd = fast && call->priv.rd_cap;
		struct xp_sbuf *sb;
		uint32_t idx;

		if (!c->credits || !c->nsfree) {
			if (!call->priv.queued_credit)
				fab->stats.credit_waits++;
			call->priv.queued_credit = true;
			return;
		}
		if ((fast_wr && !c->npeer_slots) || (fast_rd && !c->nmy_slots)) {
			if (!call->priv.queued_slot)
				fab->stats.slot_waits++;
			call->priv.queued_slot = true;
			return;
		}
		c->waitq = call->priv.next;
		if (!c->waitq)
			c->waitq_tail = NULL;
		call->priv.next = NULL;

		sb = xp_sbuf_get(c);
		idx = sb->index;
		c->gen[idx] = (c->gen[idx] + 1) & 0xffff;
		call->priv.tag = (c->gen[idx] << 16) | idx;
		c->calls[idx] = call;
		sb->call = call;
		if (fast_wr)
			call->priv.slot = c->peer_slots[--c->npeer_slots];
		else if (fast_rd)
			call->priv.slot = c->my_slots[--c->nmy_slots];
		c->credits--;
		/* A failed post fails the connection, which ends this call. */
		if (send_request(c, call, sb))
			return;
	}
}

/* Before the call is visible to any other thread. */
static void call_init(struct xp_conn *c, struct xp_call *call)
{
	memset(&call->priv, 0, sizeof(call->priv));
	call->priv.conn = c;
	call->status = 0;
	call->rep_len = 0;
	call->rd_len = 0;
}

/* With the fabric lock held, after call_init. */
static int call_launch_locked(struct xp_conn *c, struct xp_call *call)
{
	struct xp_fabric *fab = c->fab;
	size_t wr, rd;
	int dir, path, ret = 0;

	xp_assert_locked(fab);
	wr = xp_iov_len(call->wr_iov, call->wr_cnt);
	rd = xp_iov_len(call->rd_iov, call->rd_cnt);
	if ((wr && rd) || call->req_len > 32768)
		return wr && rd ? -EINVAL : -E2BIG;
	dir = wr ? PROTO_DIR_WRITE : rd ? PROTO_DIR_READ : PROTO_DIR_NONE;

	if (xp_conn_error(c)) {
		/* xp_conn_error() tells why. */
		ret = -ENOTCONN;
		goto out;
	}
	path = choose_path(c, call, dir, wr + rd);
	if (path < 0) {
		ret = path;
		goto out;
	}
	if (path == XP_PATH_BULK) {
		const struct iovec *iov = wr ? call->wr_iov : call->rd_iov;
		int cnt = wr ? call->wr_cnt : call->rd_cnt;
		int n = 0;

		for (int i = 0; i < cnt; i++)
			n += iov[i].iov_len != 0;
		if (n > xp_call_max_desc(c, call->req_len)) {
			ret = -E2BIG;
			goto out;
		}
		ret = xp_bulk_register(c, call, iov, cnt);
		if (ret) {
			xp_bulk_release(call);
			goto out;
		}
	}
	call->used_path = path;
	call->priv.wr_len = wr;
	call->priv.rd_cap = rd;
	fab->stats.calls[path]++;
	if (path == XP_PATH_BULK)
		fab->rma_busy++;
	if (!c->inflight)
		xp_conn_mark(&c->last_reply_ns);
	xp_conn_mark(&c->last_active_ns);
	c->inflight++;
	fab->calls_busy++;
	if (c->waitq_tail)
		c->waitq_tail->priv.next = call;
	else
		c->waitq = call;
	c->waitq_tail = call;
	dispatch_calls(c);
out:
	return ret;
}

static int call_start_locked(struct xp_conn *c, struct xp_call *call)
{
	call_init(c, call);
	return call_launch_locked(c, call);
}

int xp_call_start(struct xp_conn *c, struct xp_call *call)
{
	struct xp_fabric *fab = c->fab;
	int ret;

	xp_lock(fab);
	ret = call_start_locked(c, call);
	xp_unlock(fab);
	return ret;
}

/* One acquisition of the lock for all: between two separate starts the
 * progress thread may take the lock and, on tcp, spend milliseconds
 * inside fi_cq_read receiving the first call's data (a 4-server read
 * posted in 11-25 ms of wall time for 0.5 ms of its own CPU). */
int xp_calls_start(struct xp_conn *const *conns, struct xp_call *const *calls, int n,
		   int *started)
{
	struct xp_fabric *fab;
	int ret = 0, i;

	*started = 0;
	if (n <= 0)
		return 0;
	fab = conns[0]->fab;
	xp_lock(fab);
	for (i = 0; i < n && !ret; i++) {
		if (conns[i]->fab != fab) {
			ret = -EINVAL;
			break;
		}
		ret = call_start_locked(conns[i], calls[i]);
		if (!ret)
			(*started)++;
	}
	xp_unlock(fab);
	return ret;
}

/* Calls handed to the engine by xp_calls_post(_held). */
struct posted_calls {
	int n;
	struct xp_conn **conns;
	struct xp_call **calls;
	/* memory to hold registered first, where the hold and its error go */
	int nmem;
	struct iovec *mem;
	struct xp_mem_hold **hold;
	int *hold_err;
};

/* A call that could not start ends with its error, as a call ends when its
 * connection breaks (under the lock). */
static void call_fail_unstarted(struct xp_fabric *fab, struct xp_call *call, int err)
{
	call->status = err;
	if (call->cb && xp_defer_new(fab, XP_CB_CALL, (union xp_cb_fn){0}, call, NULL, 0))
		log_err("no memory to run a call's callback");
	__atomic_store_n(&call->priv.done, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&fab->cond);
}

int xp_calls_start_each(struct xp_conn *const *conns, struct xp_call *const *calls, int n)
{
	struct xp_fabric *fab;
	int failed = 0;

	if (n <= 0)
		return 0;
	fab = conns[0]->fab;
	xp_lock(fab);
	for (int i = 0; i < n; i++) {
		int ret;

		if (conns[i]->fab != fab) {
			call_init(conns[i], calls[i]);
			ret = -EINVAL;
		} else {
			ret = call_start_locked(conns[i], calls[i]);
		}
		if (ret) {
			call_fail_unstarted(fab, calls[i], ret);
			failed++;
		}
	}
	xp_unlock(fab);
	return failed;
}

/* Launch initialised calls in order, each failing alone (lock held). */
static void launch_all_locked(struct xp_fabric *fab, struct xp_conn *const *conns,
			      struct xp_call *const *calls, int n)
{
	xp_assert_locked(fab);
	for (int i = 0; i < n; i++) {
		int ret = call_launch_locked(conns[i], calls[i]);

		if (ret)
			call_fail_unstarted(fab, calls[i], ret);
	}
}

/* Hold the memory (without the lock: registering takes long), then launch
 * the calls, or end them all with the registration's error. */
static void hold_and_launch(struct xp_fabric *fab, struct xp_conn *const *conns,
			    struct xp_call *const *calls, int n, const struct iovec *mem,
			    int nmem, struct xp_mem_hold **hold, int *hold_err)
{
	int ret = nmem ? xp_mem_hold(fab, mem, nmem, hold) : 0;

	if (hold_err)
		*hold_err = ret;
	xp_lock(fab);
	if (ret)
		for (int i = 0; i < n; i++)
			call_fail_unstarted(fab, calls[i], ret);
	else
		launch_all_locked(fab, conns, calls, n);
	xp_unlock(fab);
}

/* Run by the engine's handed-over work (the progress thread, or a caller
 * waiting for these calls), without the lock. */
static void start_posted(void *arg)
{
	struct posted_calls *pc = arg;

	hold_and_launch(pc->conns[0]->fab, pc->conns, pc->calls, pc->n, pc->mem, pc->nmem,
			pc->hold, pc->hold_err);
	free(pc);
}

int xp_calls_post_held(struct xp_conn *const *conns, struct xp_call *const *calls, int n,
		       const struct iovec *mem, int nmem, struct xp_mem_hold **hold,
		       int *hold_err)
{
	struct xp_fabric *fab;
	struct posted_calls *pc;
	size_t size;
	int ret;

	if (n <= 0)
		return 0;
	if (nmem < 0 || (nmem && !hold))
		return -EINVAL;
	fab = conns[0]->fab;
	for (int i = 1; i < n; i++)
		if (conns[i]->fab != fab)
			return -EINVAL;
	if (hold)
		*hold = NULL;
	if (hold_err)
		*hold_err = 0;
	/* Without a progress thread nobody would start them before the
	 * owner waits: start them now. */
	if (!__atomic_load_n(&fab->has_thread, __ATOMIC_ACQUIRE)) {
		for (int i = 0; i < n; i++)
			call_init(conns[i], calls[i]);
		hold_and_launch(fab, conns, calls, n, mem, nmem, hold, hold_err);
		return 0;
	}
	size = sizeof(*pc) + (size_t)n * (sizeof(*pc->conns) + sizeof(*pc->calls)) +
	       (size_t)nmem * sizeof(*pc->mem);
	pc = malloc(size);
	if (!pc)
		return -ENOMEM;
	pc->n = n;
	pc->conns = (struct xp_conn **)(pc + 1);
	pc->calls = (struct xp_call **)(pc->conns + n);
	/* The caller's list may be gone by the time the thread runs. */
	pc->mem = (struct iovec *)(pc->calls + n);
	pc->nmem = nmem;
	pc->hold = hold;
	pc->hold_err = hold_err;
	if (nmem)
		memcpy(pc->mem, mem, (size_t)nmem * sizeof(*mem));
	for (int i = 0; i < n; i++) {
		pc->conns[i] = conns[i];
		pc->calls[i] = calls[i];
		call_init(conns[i], calls[i]);
	}
	ret = xp_fabric_post(fab, start_posted, pc);
	if (ret)
		free(pc);
	return ret;
}

int xp_calls_post(struct xp_conn *const *conns, struct xp_call *const *calls, int n)
{
	return xp_calls_post_held(conns, calls, n, NULL, 0, NULL, NULL);
}

/* ---- replies --------------------------------------------------------------------------
 */

static void client_reply(struct xp_conn *c, const struct proto_hdr *h, const char *msg,
			 size_t len)
{
	uint32_t idx = TAG_INDEX(h->tag);
	struct xp_call *call;
	bool fast;

	if (h->type != PROTO_REP || idx >= c->max_req || !(call = c->calls[idx]) ||
	    call->priv.tag != h->tag || call->priv.replied ||
	    h->path != call->used_path || c->credits + (uint64_t)h->credits > 4096) {
		xp_conn_fail(c, -EPROTO, "unexpected reply");
		return;
	}
	fast = call->used_path == XP_PATH_FAST;
	if (call->priv.rd_cap) {
		if (h->data_len > call->priv.rd_cap ||
		    (call->used_path != XP_PATH_BULK && !proto_data_fits(h, len))) {
			xp_conn_fail(c, -EPROTO, "reply data does not fit");
			return;
		}
		if (call->used_path != XP_PATH_BULK)
			xp_scatter(call->rd_iov, call->rd_cnt, msg + h->data_off,
				   (size_t)h->data_len);
		call->rd_len = (size_t)h->data_len;
	}
	call->rep_len = h->body_len;
	if (call->rep && call->rep_max)
		memcpy(call->rep, msg + PROTO_HDR_SIZE,
		       h->body_len < call->rep_max ? h->body_len : call->rep_max);
	call->status = h->status;
	c->credits += h->credits;
	xp_conn_mark(&c->last_reply_ns);
	if (fast && call->priv.wr_len)
		c->peer_slots[c->npeer_slots++] = call->priv.slot;
	else if (fast && call->priv.rd_cap)
		c->my_slots[c->nmy_slots++] = call->priv.slot;
	call->priv.replied = true;
	call_try_complete(c, call, idx);
	dispatch_calls(c);
}

/* A reply or a CREDIT control message in a receive buffer. */
static void client_recv(struct xp_conn *c, struct xp_rbuf *rb, size_t len)
{
	struct proto_hdr h;

	if (proto_hdr_decode(rb->buf, len, &h)) {
		xp_conn_fail(c, -EPROTO, "malformed message");
		return;
	}
	if (h.type == PROTO_CREDIT) {
		if (c->credits + (uint64_t)h.credits > 4096) {
			xp_conn_fail(c, -EPROTO, "credit overflow");
			return;
		}
		c->credits += h.credits;
		c->acks++;
		xp_conn_mark(&c->last_reply_ns);
		if (!xp_post_recv(c, rb))
			dispatch_calls(c);
		return;
	}
	client_reply(c, &h, rb->buf, len);
	if (c->state != XP_CONN_BROKEN)
		xp_post_recv(c, rb);
}

static void client_fast(struct xp_conn *c, const struct proto_hdr *h, const char *msg,
			size_t len, uint32_t slot)
{
	client_reply(c, h, msg, len);
}

static bool client_expired(struct xp_conn *c, int64_t now, char *why, size_t whylen)
{
	/* "No progress" means no answer at all for a whole timeout while calls
	 * wait: a server that works through a long queue of large requests
	 * keeps answering, a dead or hung one does not. (Per-call deadlines
	 * would fail the tail of a long queue on a healthy server.) */
	if (!c->inflight ||
	    now - c->last_reply_ns <= (int64_t)c->fab->params.timeout_ms * 1000000)
		return false;
	snprintf(why, whylen, "no progress within %d ms", c->fab->params.timeout_ms);
	return true;
}

const struct xp_role_ops xp_client_ops = {
	.recv = client_recv,
	.fast = client_fast,
	.send_done = client_send_done,
	.conn_failed = client_conn_failed,
	.expired = client_expired,
};

/* ---- waiting --------------------------------------------------------------------------
 */

static bool call_done(void *arg)
{
	return ((struct xp_call *)arg)->priv.done;
}

int xp_call_test(struct xp_call *call)
{
	struct xp_fabric *fab;
	int done;

	if (__atomic_load_n(&call->priv.done, __ATOMIC_ACQUIRE))
		return 1;
	/* With a progress thread the call moves without us: a test only
	 * looks, it does not queue behind the thread for the lock. */
	fab = call->priv.conn->fab;
	if (__atomic_load_n(&fab->has_thread, __ATOMIC_ACQUIRE) && !call->cb)
		return 0;
	xp_lock(fab);
	if (!call->priv.done)
		xp_engine_round(fab, 0);
	done = call->priv.done;
	xp_unlock(fab);
	xp_engine_run_deferred(fab);
	return done;
}

int xp_call_wait(struct xp_call *call)
{
	xp_engine_wait(call->priv.conn->fab, call_done, call, -1);
	return call->status;
}

int xp_call_timedwait(struct xp_call *call, int64_t timeout_us)
{
	if (__atomic_load_n(&call->priv.done, __ATOMIC_ACQUIRE))
		return 1;
	return xp_engine_wait(call->priv.conn->fab, call_done, call, timeout_us) == 0;
}

int xp_call(struct xp_conn *c, struct xp_call *call)
{
	int ret = xp_call_start(c, call);

	return ret ? ret : xp_call_wait(call);
}
