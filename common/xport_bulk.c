/* Server side of a request: validation, data movement, the pipelined bulk
 * path ("PVFS over InfiniBand", section 4.4), replies and credit returns.
 *
 * Bulk: the request carries descriptors of the client's registered memory;
 * the server moves the data itself, RDMA read for a write request and RDMA
 * write for a read request, in chunks taken from the zoned buffer pool. With
 * pipeline_depth chunks in flight (double buffering by default), the
 * network transfer of one chunk overlaps the storage I/O of the previous.
 *
 * Credits: a request whose message has been copied out (bulk, fast, read)
 * gives its receive back at once; the credit rides on the next reply, or on
 * a CREDIT message when the client is about to run dry (long bulk requests
 * would otherwise hold every credit). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mraddr.h"
#include "xport_priv.h"

struct xp_rma_grp {
	struct xp_req *req;
	int remaining;
	int status;
	xp_done_fn done;
	void *ctx;
};

struct xp_rma {
	struct xp_op op;
	struct xp_rma_grp *grp;
};

struct xp_pchunk {
	struct xp_chunk ch;
	struct bpool_buf buf;
	struct xp_pipe *pipe;
	int status;
	bool pooled;
};

struct xp_pipe {
	struct xp_req *req;
	xp_chunk_fn io;
	xp_done_fn finish;
	void *ctx;
	uint64_t total, next;
	size_t chunk;
	uint32_t inflight, depth;
	int status;
	bool waiting;
	struct xp_pipe *wait_next;
	struct xp_pchunk chunks[];
};

/* ---- credits ------------------------------------------------------------ */

void xp_server_return_credit(struct xp_conn *c)
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
	xp_send_msg(c, sb, PROTO_HDR_SIZE);
}

static void repost_early(struct xp_conn *c, struct xp_rbuf *rb)
{
	if (xp_conn_post_recv(c, rb))
		return;
	c->ret_credits++;
	xp_server_return_credit(c);
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

static int decode_descs(struct xp_req *r, const char *msg)
{
	uint64_t sum = 0;

	r->ndesc = r->hdr.ndesc;
	r->desc = calloc(r->ndesc, sizeof(*r->desc));
	if (!r->desc)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->ndesc; i++) {
		struct proto_desc *d = &r->desc[i];

		proto_desc_decode(msg + proto_desc_off(&r->hdr) + i * PROTO_DESC_SIZE, d);
		if (!d->len || sum + d->len < sum || d->addr + d->len < d->addr)
			return -EPROTO;
		sum += d->len;
	}
	return sum == r->hdr.data_len ? 0 : -EPROTO;
}

void xp_server_request(struct xp_conn *c, const struct proto_hdr *h, const char *msg,
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
	c->last_active_ns = xp_now_ns();
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
		ret = decode_descs(r, msg);
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
	r->next = c->reqs;
	if (c->reqs)
		c->reqs->prev = r;
	c->reqs = r;
	fab->handler(r, fab->handler_arg);
	return;
nomem:
	if (r)
		free(r);
	xp_conn_fail(c, -ENOMEM, "no memory for a request");
}

void xp_req_abort_all(struct xp_conn *c)
{
	for (struct xp_req *r = c->reqs; r; r = r->next)
		r->dead = true;
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

int xp_req_path(const struct xp_req *r)
{
	return r->hdr.path;
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
	return r->sbuf ? r->sbuf->buf + PROTO_HDR_SIZE + XP_REPLY_BODY_MAX : NULL;
}

/* ---- RDMA to and from client memory --------------------------------------- */

static void rma_done(struct xp_op *op, int status, const struct fi_cq_data_entry *e)
{
	struct xp_rma *rma = (struct xp_rma *)op;
	struct xp_rma_grp *g = rma->grp;
	struct xp_req *r = g->req;

	free(rma);
	r->rma_pending--;
	r->conn->fab->rma_busy--;
	if (status && !g->status)
		g->status = status;
	if (--g->remaining)
		return;
	status = g->status;
	if (status && r->conn->state != XP_CONN_BROKEN)
		xp_conn_fail(r->conn, status, "RDMA to client memory failed");
	g->done(r, status, g->ctx);
	free(g);
}

/* Move [off, off + len) of the request's data stream between local memory
 * and the client's described memory: one RMA per descriptor piece, or more
 * where a piece is longer than the provider's largest message (8 MiB on
 * rxe). */
static int rma_stream(struct xp_req *r, bool to_client, uint64_t off, void *buf,
		      size_t len, void *desc, xp_done_fn done, void *ctx)
{
	struct xp_conn *c = r->conn;
	struct xp_rma_grp *g;
	uint64_t pos = 0;
	char *local = buf;
	int ret = 0;

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->req = r;
	g->done = done;
	g->ctx = ctx;
	g->remaining = 1; /* held while posting */
	for (uint32_t i = 0; i < r->ndesc && len;) {
		const struct proto_desc *d = &r->desc[i];
		uint64_t skip, n, addr;
		struct xp_rma *op;
		int64_t since = 0;

		if (off >= pos + d->len) {
			pos += d->len;
			i++;
			continue;
		}
		skip = off - pos;
		n = d->len - skip < len ? d->len - skip : len;
		if (n > c->fab->max_msg)
			n = c->fab->max_msg;
		if (xp_remote_target(d->addr, skip, &addr)) {
			ret = -EINVAL;
			break;
		}
		op = calloc(1, sizeof(*op));
		if (!op) {
			ret = -ENOMEM;
			break;
		}
		op->op.done = rma_done;
		op->op.conn = c;
		op->grp = g;
		do {
			if (to_client)
				ret = (int)fi_write(c->ep, local, n, desc, 0, addr,
						    d->key, &op->op.fictx);
			else
				ret = (int)fi_read(c->ep, local, n, desc, 0, addr, d->key,
						   &op->op.fictx);
		} while (ret == -FI_EAGAIN && xp_retry_post(c, &since) &&
			 c->state == XP_CONN_UP);
		if (ret) {
			free(op);
			ret = xp_errno(ret);
			xp_conn_fail(c, ret, "couldn't post an RDMA operation");
			break;
		}
		c->posted++;
		r->rma_pending++;
		c->fab->rma_busy++;
		g->remaining++;
		/* A piece longer than max_msg takes several ops: stay on it. */
		local += n;
		off += n;
		len -= n;
	}
	if (ret)
		g->status = ret;
	/* Drop the posting reference; completes now if nothing was posted. */
	if (--g->remaining == 0) {
		int st = g->status;

		free(g);
		done(r, st, ctx);
	}
	return 0;
}

static int check_range(struct xp_req *r, int dir, uint64_t off, size_t len)
{
	if (r->hdr.dir != dir || !xp_range_ok(off, len, r->hdr.data_len))
		return -EINVAL;
	if (r->dead || r->conn->state != XP_CONN_UP)
		return -ENOTCONN;
	return 0;
}

int xp_req_pull(struct xp_req *r, uint64_t off, void *buf, size_t len, void *mr_desc,
		xp_done_fn done, void *ctx)
{
	struct xp_fabric *fab = r->conn->fab;
	int ret;

	pthread_mutex_lock(&fab->lock);
	ret = check_range(r, PROTO_DIR_WRITE, off, len);
	if (!ret && r->wr_data) {
		memcpy(buf, r->wr_data + off, len);
		done(r, 0, ctx);
	} else if (!ret) {
		ret = rma_stream(r, false, off, buf, len, mr_desc, done, ctx);
	}
	pthread_mutex_unlock(&fab->lock);
	return ret;
}

int xp_req_push(struct xp_req *r, uint64_t off, const void *buf, size_t len,
		void *mr_desc, xp_done_fn done, void *ctx)
{
	struct xp_fabric *fab = r->conn->fab;
	int ret;

	pthread_mutex_lock(&fab->lock);
	ret = check_range(r, PROTO_DIR_READ, off, len);
	if (!ret && r->sbuf) {
		char *dst = xp_req_rd_buf(r) + off;

		if (dst != buf)
			memmove(dst, buf, len);
		done(r, 0, ctx);
	} else if (!ret) {
		ret = rma_stream(r, true, off, (void *)buf, len, mr_desc, done, ctx);
	}
	pthread_mutex_unlock(&fab->lock);
	return ret;
}

/* ---- pipelined bulk -------------------------------------------------------- */

static void pipe_launch(struct xp_pipe *p);

static void pipe_end_chunk(struct xp_pchunk *pc, int status)
{
	struct xp_pipe *p = pc->pipe;
	struct xp_fabric *fab = p->req->conn->fab;

	if (pc->pooled) {
		bpool_put(fab->pool, &pc->buf);
		pc->pooled = false;
	}
	pc->ch.buf = NULL;
	p->inflight--;
	fab->stats.bulk_chunks++;
	if (status && !p->status)
		p->status = status;
	xp_pool_kick(fab);
	if ((p->next == p->total || p->status) && !p->inflight) {
		struct xp_req *r = p->req;

		r->pipe = NULL;
		p->finish(r, p->status, p->ctx);
		free(p);
		return;
	}
	pipe_launch(p);
}

static void pipe_moved(struct xp_req *r, int status, void *ctx)
{
	pipe_end_chunk(ctx, status);
}

static void pipe_pulled(struct xp_req *r, int status, void *ctx)
{
	struct xp_pchunk *pc = ctx;

	if (status) {
		pipe_end_chunk(pc, status);
		return;
	}
	pc->pipe->io(&pc->ch, pc->pipe->ctx);
}

/* Storage finished a chunk: on the progress thread now. */
static void pipe_stored(void *arg)
{
	struct xp_pchunk *pc = arg;
	struct xp_pipe *p = pc->pipe;
	struct xp_req *r = p->req;
	int ret;

	if (pc->status || r->hdr.dir == PROTO_DIR_WRITE) {
		pipe_end_chunk(pc, pc->status);
		return;
	}
	ret = xp_req_push(r, pc->ch.off, pc->ch.buf, pc->ch.len,
			  pc->pooled ? ((struct xp_mr *)pc->buf.handle)->desc : NULL,
			  pipe_moved, pc);
	if (ret)
		pipe_end_chunk(pc, ret);
}

void xp_chunk_done(struct xp_chunk *ch, int status)
{
	struct xp_pchunk *pc = (struct xp_pchunk *)ch;

	pc->status = status;
	/* Any thread: the transport's state belongs to the progress thread. */
	if (xp_fabric_post(pc->pipe->req->conn->fab, pipe_stored, pc))
		log_err("couldn't hand a finished chunk back to progress");
}

static struct xp_pchunk *free_chunk(struct xp_pipe *p)
{
	for (uint32_t i = 0; i < p->depth; i++)
		if (!p->chunks[i].ch.buf)
			return &p->chunks[i];
	return NULL;
}

static void pipe_launch(struct xp_pipe *p)
{
	struct xp_req *r = p->req;
	struct xp_fabric *fab = r->conn->fab;

	while (p->inflight < p->depth && p->next < p->total && !p->status) {
		struct xp_pchunk *pc = free_chunk(p);
		uint64_t want = p->total - p->next;
		size_t got = 0;
		int ret;

		if (r->dead || r->conn->state != XP_CONN_UP) {
			p->status = -ENOTCONN;
			break;
		}
		if (want > p->chunk)
			want = p->chunk;
		pc->pipe = p;
		pc->status = 0;
		if (r->hdr.path != XP_PATH_BULK) {
			/* Inline and fast data is already local: one chunk, in place. */
			pc->ch.buf = r->hdr.dir == PROTO_DIR_WRITE ? (void *)r->wr_data
								   : xp_req_rd_buf(r);
			pc->pooled = false;
		} else {
			ret = bpool_get(fab->pool, want, &pc->buf, 1, &got);
			if (ret == -EAGAIN) {
				if (!p->waiting) {
					p->waiting = true;
					p->wait_next = NULL;
					if (fab->pool_waiters_tail)
						fab->pool_waiters_tail->wait_next = p;
					else
						fab->pool_waiters = p;
					fab->pool_waiters_tail = p;
				}
				return;
			}
			if (ret < 0) {
				p->status = ret;
				break;
			}
			if (got < want)
				want = got;
			pc->ch.buf = pc->buf.addr;
			pc->pooled = true;
		}
		pc->ch.req = r;
		pc->ch.off = p->next;
		pc->ch.len = (size_t)want;
		p->next += want;
		p->inflight++;
		if (r->hdr.dir == PROTO_DIR_WRITE) {
			if (pc->pooled)
				ret = xp_req_pull(r, pc->ch.off, pc->ch.buf, pc->ch.len,
						  ((struct xp_mr *)pc->buf.handle)->desc,
						  pipe_pulled, pc);
			else
				ret = 0, p->io(&pc->ch, p->ctx);
		} else {
			ret = 0;
			p->io(&pc->ch, p->ctx);
		}
		if (ret) {
			pipe_end_chunk(pc, ret);
			return;
		}
	}
	if (!p->inflight && (p->status || p->next == p->total)) {
		r->pipe = NULL;
		p->finish(r, p->status, p->ctx);
		free(p);
	}
}

void xp_pool_kick(struct xp_fabric *fab)
{
	/* Each waiter takes what it can; one that still finds nothing requeues. */
	struct xp_pipe *list = fab->pool_waiters;

	fab->pool_waiters = fab->pool_waiters_tail = NULL;
	while (list) {
		struct xp_pipe *p = list;

		list = p->wait_next;
		p->waiting = false;
		pipe_launch(p);
	}
}

static size_t pick_chunk(const struct xp_params *prm, uint64_t total)
{
	size_t chunk = prm->chunk_size;

	/* At most half the transfer, so two chunks can overlap. */
	while (chunk > 65536 && chunk > total / 2)
		chunk /= 2;
	return chunk;
}

int xp_req_pipeline(struct xp_req *r, xp_chunk_fn io, xp_done_fn finish, void *ctx)
{
	struct xp_fabric *fab = r->conn->fab;
	uint32_t depth = fab->params.pipeline_depth;
	struct xp_pipe *p;

	if (r->hdr.dir == PROTO_DIR_NONE || r->pipe)
		return -EINVAL;
	if (r->hdr.path != XP_PATH_BULK)
		depth = 1;
	p = calloc(1, sizeof(*p) + depth * sizeof(struct xp_pchunk));
	if (!p)
		return -ENOMEM;
	p->req = r;
	p->io = io;
	p->finish = finish;
	p->ctx = ctx;
	p->total = r->hdr.data_len;
	p->depth = depth;
	p->chunk = r->hdr.path == XP_PATH_BULK ? pick_chunk(&fab->params, p->total)
					       : (size_t)p->total;
	pthread_mutex_lock(&fab->lock);
	r->pipe = p;
	pipe_launch(p);
	pthread_mutex_unlock(&fab->lock);
	return 0;
}

/* ---- reply ------------------------------------------------------------------ */

/* Unlink and free a finished request; the connection may go with it. */
void xp_req_free(struct xp_req *r)
{
	struct xp_conn *c = r->conn;

	if (r->prev)
		r->prev->next = r->next;
	else
		c->reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
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

	pthread_mutex_lock(&fab->lock);
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
		if (!r->dead && !xp_conn_post_recv(c, rb))
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
		xp_req_free(r);
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
		ret = xp_fast_reply(r, msg_len);
	else
		ret = xp_send_msg(c, sb, msg_len);
	if (ret) {
		/* Not posted: no completion will free them. */
		xp_sbuf_put(c, sb);
		xp_req_free(r);
	}
out:
	pthread_mutex_unlock(&fab->lock);
	return ret;
}
