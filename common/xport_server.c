/* The server's request path (see xport_domain.h for the layers): a request
 * arrives (a message, or a fast write in our slot), is checked against what
 * the client may send, copied out so its receive can be posted again, and
 * handed to the application's handler by the engine; the application moves
 * the data (xp_req_pull / xp_req_push, or the pipeline of xport_bulk.c)
 * and answers with xp_req_reply.
 *
 * Credits: a request whose message has been copied out (bulk, fast, read)
 * gives its receive back at once; the credit rides on the next reply, or on
 * a CREDIT message when the client is about to run dry (long bulk requests
 * would otherwise hold every credit). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mraddr.h"
#include "xport_engine.h"

/* ---- credits ------------------------------------------------------------ */

static void return_credit(struct xp_conn *c)
{
	struct proto_hdr h = {0};
	struct xp_sbuf *sb;
	uint32_t quarter = c->granted / 4;

	if (!c->ret_credits || c->ctrl_unacked >= XP_CTRL_RECVS || c->state != XP_CONN_UP)
		return;
	if (!(c->peer_credits == 0 ||
	      (c->peer_credits <= quarter && c->ret_credits >= quarter)))
		return;
	sb = xp_sbuf_get(c);
	if (!sb)
		return;
	h.type = PROTO_CREDIT;
	h.credits = c->ret_credits;
	h.data_off = PROTO_HDR_SIZE;
	proto_hdr_encode(sb->buf, &h);
	c->peer_credits += c->ret_credits;
	c->ret_credits = 0;
	c->ctrl_unacked++;
	c->fab->stats.credit_msgs++;
	xp_post_send(c, sb, PROTO_HDR_SIZE);
}

static void repost_early(struct xp_conn *c, struct xp_rbuf *rb)
{
	if (xp_post_recv(c, rb))
		return;
	c->ret_credits++;
	return_credit(c);
}

/* ---- arrival ------------------------------------------------------------- */

static int check_request(struct xp_conn *c, const struct proto_hdr *h, size_t len,
			 bool via_fast)
{
	const struct xp_params *p = &c->fab->params;

	if (h->type != PROTO_REQ || h->acks > c->ctrl_unacked || !c->peer_credits)
		return -EPROTO;
	if (h->dir == PROTO_DIR_NONE)
		return h->data_len || h->ndesc ? -EPROTO : 0;
	switch (h->path) {
	case XP_PATH_INLINE:
		if (h->data_len > p->inline_max || h->ndesc || via_fast)
			return -EPROTO;
		if (h->dir == PROTO_DIR_WRITE)
			return proto_data_fits(h, len) ? 0 : -EPROTO;
		return PROTO_HDR_SIZE + XP_REPLY_BODY_MAX + h->data_len <=
				       c->peer_recv_size
			       ? 0
			       : -EPROTO;
	case XP_PATH_FAST:
		if (h->data_len > p->fast_max || h->ndesc)
			return -EPROTO;
		if (h->dir == PROTO_DIR_WRITE)
			return via_fast && proto_data_fits(h, len) ? 0 : -EPROTO;
		return !via_fast && h->slot < c->peer_fast.slot_count &&
				       PROTO_HDR_SIZE + XP_REPLY_BODY_MAX + h->data_len <=
					       c->peer_fast.slot_size
			       ? 0
			       : -EPROTO;
	case XP_PATH_BULK:
		return !via_fast && h->ndesc >= 1 && h->data_len ? 0 : -EPROTO;
	default:
		return -EPROTO;
	}
}

static void server_request(struct xp_conn *c, const struct proto_hdr *h, const char *msg,
			   size_t len, struct xp_rbuf *rb, int fast_slot)
{
	struct xp_fabric *fab = c->fab;
	struct xp_req *r;
	int ret = check_request(c, h, len, fast_slot >= 0);

	if (ret) {
		xp_conn_fail(c, ret, "invalid request");
		return;
	}
	c->peer_credits--;
	c->ctrl_unacked -= h->acks;
	if (h->path <= XP_PATH_BULK)
		fab->stats.bytes[h->path] += h->data_len;
	xp_conn_mark(&c->last_active_ns);
	r = calloc(1, sizeof(*r));
	if (!r)
		goto nomem;
	r->conn = c;
	r->hdr = *h;
	r->fast_slot = -1;
	r->start_ns = xp_now_ns();
	r->body_len = h->body_len;
	r->body = malloc(h->body_len ? h->body_len : 1);
	if (!r->body)
		goto nomem;
	memcpy(r->body, msg + PROTO_HDR_SIZE, h->body_len);
	if (h->path == XP_PATH_BULK) {
		ret = xp_bulk_decode(r, msg);
		if (ret) {
			free(r->desc);
			free(r->body);
			free(r);
			xp_conn_fail(c, ret, "invalid bulk descriptors");
			return;
		}
	}
	if (h->dir == PROTO_DIR_READ && h->path != XP_PATH_BULK) {
		r->sbuf = xp_sbuf_get(c);
		if (!r->sbuf) {
			free(r->body);
			free(r);
			xp_conn_fail(c, -EPROTO, "client exceeded its request limit");
			return;
		}
		r->sbuf->req = r;
	}
	if (h->dir == PROTO_DIR_WRITE && h->path == XP_PATH_INLINE) {
		/* Inline data stays in the receive buffer until the reply. */
		r->held = rb;
		r->wr_data = msg + h->data_off;
	} else if (fast_slot >= 0) {
		r->fast_slot = fast_slot;
		c->fast_busy[fast_slot] = 1;
		r->wr_data = msg + h->data_off;
	} else if (rb) {
		repost_early(c, rb);
	}
	list_push_front(&c->reqs, &r->link);
	/* The application gets it from the engine, without the lock. */
	r->deliver.kind = XP_CB_REQ;
	r->deliver.a = r;
	xp_defer(fab, &r->deliver);
	return;
nomem:
	if (r)
		free(r);
	xp_conn_fail(c, -ENOMEM, "no memory for a request");
}

static void server_conn_failed(struct xp_conn *c)
{
	struct xp_fabric *fab = c->fab;
	struct list_node *l;

	/* Requests in flight finish without replies (xp_req_reply frees them). */
	list_foreach(&c->reqs, l)
		list_entry(l, struct xp_req, link)->dead = true;
	/* Not while the fabric closes: its owner is tearing down. */
	if (c->hello_done && !fab->closing) {
		c->ev_down.kind = XP_CB_CONN;
		c->ev_down.a = c;
		c->ev_down.st = 0;
		c->events_pending++;
		xp_defer(fab, &c->ev_down);
	}
}

/* ---- accessors ------------------------------------------------------------ */

const void *xp_req_body(const struct xp_req *r, size_t *len)
{
	*len = r->body_len;
	return r->body;
}

int xp_req_dir(const struct xp_req *r)
{
	return r->hdr.dir;
}

size_t xp_req_data_len(const struct xp_req *r)
{
	return (size_t)r->hdr.data_len;
}

struct xp_conn *xp_req_conn(const struct xp_req *r)
{
	return r->conn;
}

const void *xp_req_wr_data(const struct xp_req *r)
{
	return r->hdr.dir == PROTO_DIR_WRITE ? r->wr_data : NULL;
}

void *xp_req_rd_buf(struct xp_req *r)
{
	return r->sbuf ? r->sbuf->buf + xp_reply_data_off() : NULL;
}

/* ---- data to and from the client ----------------------------------------------- */

static int check_range(struct xp_req *r, int dir, uint64_t off, size_t len)
{
	if (r->hdr.dir != dir || !xp_range_ok(off, len, r->hdr.data_len))
		return -EINVAL;
	if (r->dead || r->conn->state != XP_CONN_UP)
		return -ENOTCONN;
	return 0;
}

/* A local copy is done at once; its done runs in the engine all the same. */
static int done_now(struct xp_fabric *fab, struct xp_req *r, xp_done_fn done, void *ctx)
{
	return xp_defer_new(fab, XP_CB_DONE, (union xp_cb_fn){.done = done}, r, ctx, 0);
}

int xp_req_pull(struct xp_req *r, uint64_t off, void *buf, size_t len, void *mr_desc,
		xp_done_fn done, void *ctx)
{
	struct xp_fabric *fab = r->conn->fab;
	int ret;

	xp_lock(fab);
	ret = check_range(r, PROTO_DIR_WRITE, off, len);
	if (!ret && r->wr_data) {
		memcpy(buf, r->wr_data + off, len);
		ret = done_now(fab, r, done, ctx);
	} else if (!ret) {
		ret = xp_bulk_move(r, false, off, buf, len, mr_desc, done, ctx);
	}
	xp_unlock(fab);
	return ret;
}

int xp_req_push(struct xp_req *r, uint64_t off, const void *buf, size_t len,
		void *mr_desc, xp_done_fn done, void *ctx)
{
	struct xp_fabric *fab = r->conn->fab;
	int ret;

	xp_lock(fab);
	ret = check_range(r, PROTO_DIR_READ, off, len);
	if (!ret && r->sbuf) {
		char *dst = xp_req_rd_buf(r) + off;

		if (dst != buf)
			memmove(dst, buf, len);
		ret = done_now(fab, r, done, ctx);
	} else if (!ret) {
		ret = xp_bulk_move(r, true, off, (void *)buf, len, mr_desc, done, ctx);
	}
	xp_unlock(fab);
	return ret;
}

/* ---- reply ------------------------------------------------------------------ */

/* Unlink and free a finished request; the connection may go with it. */
static void req_free(struct xp_req *r)
{
	struct xp_conn *c = r->conn;

	list_remove(&r->link);
	free(r->body);
	free(r->desc);
	free(r);
	xp_conn_maybe_free(c);
}

int xp_req_reply(struct xp_req *r, int status, const void *body, size_t len,
		 size_t rd_len)
{
	struct xp_conn *c = r->conn;
	struct xp_fabric *fab = c->fab;
	struct proto_hdr h = {0};
	bool has_data = r->hdr.dir == PROTO_DIR_READ && r->hdr.path != XP_PATH_BULK;
	size_t max_body =
		has_data ? XP_REPLY_BODY_MAX : c->peer_recv_size - PROTO_HDR_SIZE;
	struct xp_sbuf *sb;
	size_t msg_len;
	int ret = 0;

	xp_lock(fab);
	if (r->replied || r->rma_pending || r->pipe) {
		ret = -EBUSY;
		goto out;
	}
	if (len > max_body ||
	    rd_len > (r->hdr.dir == PROTO_DIR_READ ? r->hdr.data_len : 0)) {
		status = -EOVERFLOW;
		len = 0;
		rd_len = 0;
	}
	r->replied = true;
	if (r->held) {
		struct xp_rbuf *rb = r->held;

		r->held = NULL;
		if (!r->dead && !xp_post_recv(c, rb))
			c->ret_credits++;
	}
	if (r->fast_slot >= 0)
		c->fast_busy[r->fast_slot] = 0;
	sb = r->sbuf ? r->sbuf : xp_sbuf_get(c);
	if (r->dead || !sb) {
		/* Connection gone (or a broken bound): nothing to answer. */
		if (!r->dead)
			xp_conn_fail(c, -EPROTO, "no send buffer for a reply");
		if (sb)
			xp_sbuf_put(c, sb);
		req_free(r);
		goto out;
	}
	sb->req = r;
	h.type = PROTO_REP;
	h.path = r->hdr.path;
	h.dir = r->hdr.dir;
	h.tag = r->hdr.tag;
	h.slot = r->hdr.slot;
	h.status = status;
	h.credits = c->ret_credits;
	c->peer_credits += c->ret_credits;
	c->ret_credits = 0;
	h.body_len = (uint32_t)len;
	h.data_len = r->hdr.dir == PROTO_DIR_READ ? rd_len : 0;
	h.data_off = (uint16_t)(has_data ? PROTO_HDR_SIZE + XP_REPLY_BODY_MAX
					 : PROTO_HDR_SIZE + len);
	proto_hdr_encode(sb->buf, &h);
	if (len)
		memcpy(sb->buf + PROTO_HDR_SIZE, body, len);
	msg_len = has_data ? PROTO_HDR_SIZE + XP_REPLY_BODY_MAX + rd_len
			   : PROTO_HDR_SIZE + len;
	if (r->hdr.path == XP_PATH_FAST && r->hdr.dir == PROTO_DIR_READ)
		ret = xp_fast_send_reply(r, msg_len);
	else
		ret = xp_post_send(c, sb, msg_len);
	if (ret) {
		/* Not posted: no completion will free them. */
		xp_sbuf_put(c, sb);
		req_free(r);
	}
out:
	xp_unlock(fab);
	return ret;
}

/* ---- what the engine hands us ---------------------------------------------------- */

static void server_recv(struct xp_conn *c, struct xp_rbuf *rb, size_t len)
{
	struct proto_hdr h;

	if (proto_hdr_decode(rb->buf, len, &h)) {
		xp_conn_fail(c, -EPROTO, "malformed message");
		return;
	}
	if (h.type != PROTO_REQ) {
		xp_conn_fail(c, -EPROTO, "unexpected message type");
		return;
	}
	server_request(c, &h, rb->buf, len, rb, -1);
}

static void server_fast(struct xp_conn *c, const struct proto_hdr *h, const char *msg,
			size_t len, uint32_t slot)
{
	if (h->type != PROTO_REQ || h->dir != PROTO_DIR_WRITE || c->fast_busy[slot]) {
		xp_conn_fail(c, -EPROTO, "unexpected fast request");
		return;
	}
	/* The client spent a credit on this write whether or not the provider
	 * consumed a receive for it (verbs does, tcp does not): give it back
	 * the same way on both. */
	c->ret_credits++;
	server_request(c, h, msg, len, NULL, (int)slot);
}

/* Replies and control messages (and the HELLO_REP). */
static void server_send_done(struct xp_conn *c, struct xp_sbuf *sb, int status)
{
	struct xp_req *r = sb->req;

	if (status && status != -ECANCELED)
		xp_conn_fail(c, status, "send failed");
	else if (c->refused)
		xp_conn_fail(c, -ECONNREFUSED, "refused the client's hello");
	xp_sbuf_put(c, sb);
	if (r)
		req_free(r);
	else
		xp_conn_maybe_free(c);
}

static bool server_expired(struct xp_conn *c, int64_t now, char *why, size_t whylen)
{
	const struct xp_params *p = &c->fab->params;
	int64_t limit = (int64_t)p->timeout_ms * 1000000;
	struct list_node *l;

	/* A client that stopped answering RMA stalls our buffers. */
	list_foreach(&c->reqs, l) {
		struct xp_req *r = list_entry(l, struct xp_req, link);

		if (r->rma_pending && now - r->start_ns > limit) {
			snprintf(why, whylen, "no progress within %d ms", p->timeout_ms);
			return true;
		}
	}
	if (p->idle_timeout_s && list_empty(&c->reqs) &&
	    now - c->last_active_ns > (int64_t)p->idle_timeout_s * 1000000000) {
		snprintf(why, whylen, "idle for %u s", p->idle_timeout_s);
		return true;
	}
	return false;
}

const struct xp_role_ops xp_server_ops = {
	.recv = server_recv,
	.fast = server_fast,
	.send_done = server_send_done,
	.conn_failed = server_conn_failed,
	.expired = server_expired,
};
