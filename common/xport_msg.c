/* Client calls: path choice, credit-based flow control, the inline path,
 * and reply handling; the receive completion handler of both sides.
 *
 * Flow control: a call leaves the waiting queue only when the connection
 * has a send credit (a receive the server posted for us), a free tag (one
 * per send buffer) and, on the fast path, a free slot. Credits come back in
 * every reply and in CREDIT control messages; slots come back with the
 * reply of the request that used them. Calls wait in FIFO order. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mraddr.h"
#include "xport_priv.h"

#define TAG_INDEX(t) ((t)&0xffffu)
#define TAG_GEN(t)   ((t) >> 16)

size_t xp_iov_len(const struct iovec *iov, int cnt)
{
	size_t n = 0;

	for (int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

void xp_gather(char *dst, const struct iovec *iov, int cnt)
{
	for (int i = 0; i < cnt; i++) {
		memcpy(dst, iov[i].iov_base, iov[i].iov_len);
		dst += iov[i].iov_len;
	}
}

void xp_scatter(const struct iovec *iov, int cnt, const char *src, size_t len)
{
	for (int i = 0; i < cnt && len; i++) {
		size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;

		memcpy(iov[i].iov_base, src, n);
		src += n;
		len -= n;
	}
}

/* ---- completion of a call ---------------------------------------------- */

/* Drop the registration cache references a call holds. */
void xp_call_release(struct xp_call *call)
{
	struct xp_fabric *fab = call->priv.conn->fab;

	for (int i = 0; i < call->priv.nregions; i++)
		rcache_put(fab->rcache, call->priv.regions[i]);
	free(call->priv.regions);
	call->priv.regions = NULL;
	call->priv.nregions = 0;
}

void xp_call_finish(struct xp_call *call, int status)
{
	struct xp_conn *c = call->priv.conn;
	struct xp_fabric *fab = c->fab;

	if (call->priv.done)
		return;
	if (call->used_path == XP_PATH_BULK)
		fab->rma_busy--;
	xp_call_release(call);
	if (status && !call->status)
		call->status = status;
	call->priv.done = 1;
	c->inflight--;
	if (call->cb) {
		call->priv.next = fab->done_calls;
		fab->done_calls = call;
	}
	pthread_cond_broadcast(&fab->cond);
	xp_conn_maybe_free(c);
}

/* A call is over when its reply arrived and its send completed. */
static void call_try_complete(struct xp_conn *c, struct xp_call *call, uint32_t idx)
{
	if (!call->priv.replied || call->priv.pending_tx)
		return;
	c->calls[idx] = NULL;
	xp_sbuf_put(c, &c->sbufs[idx]);
	xp_call_finish(call, 0);
	xp_conn_dispatch(c);
}

void xp_fail_calls(struct xp_conn *c, int err)
{
	for (uint32_t i = 0; c->calls && i < c->max_req; i++) {
		struct xp_call *call = c->calls[i];

		if (!call)
			continue;
		c->calls[i] = NULL;
		/* The send buffer stays reserved until its flushed completion,
		 * which must not touch the call: its owner may free it now. */
		c->sbufs[i].call = NULL;
		xp_call_finish(call, err);
	}
	while (c->waitq) {
		struct xp_call *call = c->waitq;

		c->waitq = call->priv.next;
		call->priv.next = NULL;
		xp_call_finish(call, err);
	}
	c->waitq_tail = NULL;
}

/* ---- sending ----------------------------------------------------------- */

void xp_send_done(struct xp_op *op, int status, const struct fi_cq_data_entry *e)
{
	struct xp_sbuf *sb = (struct xp_sbuf *)op;
	struct xp_conn *c = op->conn;
	struct xp_call *call = sb->call;

	if (c->fab->role == XP_SERVER) {
		/* Server replies and control messages. */
		struct xp_req *r = sb->req;

		if (status)
			xp_conn_fail(c, status, "send failed");
		else if (c->refused)
			xp_conn_fail(c, -ECONNREFUSED, "refused the client's hello");
		xp_sbuf_put(c, sb);
		if (r)
			xp_req_free(r);
		else
			xp_conn_maybe_free(c);
		return;
	}
	if (status)
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

int xp_send_msg(struct xp_conn *c, struct xp_sbuf *sb, size_t len)
{
	int64_t since = 0;
	int ret;

	sb->op.done = xp_send_done;
	do {
		ret = (int)fi_send(c->ep, sb->buf, len, c->smr->desc, 0, &sb->op.fictx);
	} while (ret == -FI_EAGAIN && xp_retry_post(c, &since));
	if (ret) {
		xp_conn_fail(c, xp_errno(ret), "couldn't send");
		return xp_errno(ret);
	}
	c->posted++;
	return 0;
}

/* ---- path choice ------------------------------------------------------- */

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

static int register_bulk(struct xp_conn *c, struct xp_call *call, const struct iovec *iov,
			 int cnt)
{
	struct xp_fabric *fab = c->fab;
	int ret;

	call->priv.regions = calloc((size_t)cnt, sizeof(void *));
	if (!call->priv.regions)
		return -ENOMEM;
	for (int i = 0; i < cnt; i++) {
		struct rcache_region *r;

		if (!iov[i].iov_len)
			continue;
		ret = rcache_get(fab->rcache, iov[i].iov_base, iov[i].iov_len, &r);
		if (ret)
			return ret;
		call->priv.regions[call->priv.nregions++] = r;
	}
	return 0;
}

int xp_call_max_desc(struct xp_conn *c, size_t body_len)
{
	size_t room = c->peer_recv_size - PROTO_HDR_SIZE;

	if (body_len >= room)
		return 0;
	return (int)((room - body_len) / PROTO_DESC_SIZE);
}

int xp_call_start(struct xp_conn *c, struct xp_call *call)
{
	struct xp_fabric *fab = c->fab;
	size_t wr, rd;
	int dir, path, ret = 0;

	memset(&call->priv, 0, sizeof(call->priv));
	call->priv.conn = c;
	call->status = 0;
	call->rep_len = 0;
	call->rd_len = 0;
	wr = xp_iov_len(call->wr_iov, call->wr_cnt);
	rd = xp_iov_len(call->rd_iov, call->rd_cnt);
	if ((wr && rd) || call->req_len > 32768)
		return wr && rd ? -EINVAL : -E2BIG;
	dir = wr ? PROTO_DIR_WRITE : rd ? PROTO_DIR_READ : PROTO_DIR_NONE;

	pthread_mutex_lock(&fab->lock);
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
		ret = register_bulk(c, call, iov, cnt);
		if (ret) {
			xp_call_release(call);
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
		c->last_reply_ns = xp_now_ns();
	c->last_active_ns = xp_now_ns();
	c->inflight++;
	if (c->waitq_tail)
		c->waitq_tail->priv.next = call;
	else
		c->waitq = call;
	c->waitq_tail = call;
	xp_conn_dispatch(c);
out:
	pthread_mutex_unlock(&fab->lock);
	return ret;
}

/* Build and post one request. Resources are reserved by the caller. */
static int send_request(struct xp_conn *c, struct xp_call *call, struct xp_sbuf *sb)
{
	struct xp_fabric *fab = c->fab;
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
		return xp_fast_write_call(c, call, sb, off);
	}
	if (call->used_path == XP_PATH_INLINE && dir == PROTO_DIR_WRITE) {
		xp_gather(sb->buf + off, call->wr_iov, call->wr_cnt);
		off += call->priv.wr_len;
	} else if (call->used_path == XP_PATH_BULK) {
		const struct iovec *iov =
			dir == PROTO_DIR_WRITE ? call->wr_iov : call->rd_iov;
		int cnt = dir == PROTO_DIR_WRITE ? call->wr_cnt : call->rd_cnt;
		int k = 0;

		for (int i = 0; i < cnt; i++) {
			struct rcache_region *r;
			struct xp_mr *mr;
			struct proto_desc d;

			if (!iov[i].iov_len)
				continue;
			r = call->priv.regions[k++];
			mr = r->handle;
			d.addr =
				xp_remote_addr(fab->virt_addr, mr->base, iov[i].iov_base);
			d.len = iov[i].iov_len;
			d.key = mr->key;
			proto_desc_encode(sb->buf + off, &d);
			off += PROTO_DESC_SIZE;
		}
		h.ndesc = (uint32_t)k;
		h.data_off = (uint16_t)off;
	}
	proto_hdr_encode(sb->buf, &h);
	return xp_send_msg(c, sb, off);
}

void xp_conn_dispatch(struct xp_conn *c)
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
		/* A failed post fails the connection, which fails this call. */
		if (send_request(c, call, sb))
			return;
	}
}

/* ---- replies ------------------------------------------------------------ */

void xp_client_reply(struct xp_conn *c, const struct proto_hdr *h, const char *msg,
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
	c->last_reply_ns = xp_now_ns();
	if (fast && call->priv.wr_len)
		c->peer_slots[c->npeer_slots++] = call->priv.slot;
	else if (fast && call->priv.rd_cap)
		c->my_slots[c->nmy_slots++] = call->priv.slot;
	call->priv.replied = true;
	call_try_complete(c, call, idx);
	xp_conn_dispatch(c);
}

/* A receive completed: a request (server), a reply or control (client), or a
 * handshake message. */
void xp_recv_done(struct xp_op *op, int status, const struct fi_cq_data_entry *e)
{
	struct xp_rbuf *rb = (struct xp_rbuf *)op;
	struct xp_conn *c = op->conn;
	struct proto_hdr h;
	size_t len;

	if (status) {
		if (c->state != XP_CONN_BROKEN && status != -ECANCELED)
			xp_conn_fail(c, status, "receive failed");
		xp_conn_maybe_free(c);
		return;
	}
	if (c->state == XP_CONN_BROKEN)
		return;
	len = e->len;
	if (c->fab->role == XP_SERVER && !c->hello_done) {
		xp_server_hello(c, rb, len);
		return;
	}
	if (c->fab->role == XP_CLIENT && c->state == XP_CONN_HELLO) {
		xp_client_hello_rep(c, rb, len);
		return;
	}
	if (proto_hdr_decode(rb->buf, len, &h)) {
		xp_conn_fail(c, -EPROTO, "malformed message");
		return;
	}
	if (c->fab->role == XP_SERVER) {
		if (h.type != PROTO_REQ) {
			xp_conn_fail(c, -EPROTO, "unexpected message type");
			return;
		}
		xp_server_request(c, &h, rb->buf, len, rb, -1);
		return;
	}
	if (h.type == PROTO_CREDIT) {
		if (c->credits + (uint64_t)h.credits > 4096) {
			xp_conn_fail(c, -EPROTO, "credit overflow");
			return;
		}
		c->credits += h.credits;
		c->acks++;
		c->last_reply_ns = xp_now_ns();
		if (!xp_conn_post_recv(c, rb))
			xp_conn_dispatch(c);
		return;
	}
	xp_client_reply(c, &h, rb->buf, len);
	if (c->state != XP_CONN_BROKEN)
		xp_conn_post_recv(c, rb);
}

/* ---- waiting ------------------------------------------------------------ */

int xp_call_test(struct xp_call *call)
{
	struct xp_fabric *fab = call->priv.conn->fab;
	int done;

	pthread_mutex_lock(&fab->lock);
	if (!call->priv.done)
		xp_progress_locked(fab, 0);
	done = call->priv.done;
	pthread_mutex_unlock(&fab->lock);
	return done;
}

int xp_call_wait(struct xp_call *call)
{
	struct xp_fabric *fab = call->priv.conn->fab;
	int spins = 0;

	pthread_mutex_lock(&fab->lock);
	while (!call->priv.done) {
		/* Poll first: short operations finish in microseconds (progress
		 * itself keeps polling for spin_us before it sleeps). Then
		 * block, one thread in the wait fds, the others on the cond. */
		if (xp_progress_locked(fab, 0) || ++spins < 16)
			continue;
		if (!fab->waiter) {
			xp_progress_locked(fab, 100);
		} else {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 10000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&fab->cond, &fab->lock, &ts);
		}
	}
	pthread_mutex_unlock(&fab->lock);
	return call->status;
}

int xp_call(struct xp_conn *c, struct xp_call *call)
{
	int ret = xp_call_start(c, call);

	return ret ? ret : xp_call_wait(call);
}
