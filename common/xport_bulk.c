/* The bulk path ("PVFS over InfiniBand", sections 4.3 and 4.4): the client
 * registers its memory through the registration cache and sends one
 * descriptor per piece; the server moves the data itself, RDMA read for a
 * write request and RDMA write for a read request, in chunks taken from
 * the zoned buffer pool. With pipeline_depth chunks in flight (double
 * buffering by default), the network transfer of one chunk overlaps the
 * storage I/O of the previous (xp_req_pipeline).
 *
 * What finishes here (an RDMA stream, a chunk, a pipeline) is handed to the
 * engine, which runs the callbacks without the fabric lock; the pipeline's
 * own steps are such callbacks too and take the lock themselves. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mraddr.h"
#include "xport_path.h"

/* ---- client: registration and descriptors ---------------------------------- */

struct xp_mem_hold {
	int n;
	struct rcache_region *r[];
};

/* The cache has its own lock: registering here, before any call starts,
 * keeps it off the fabric lock the progress thread moves data under. */
int xp_mem_hold(struct xp_fabric *fab, const struct iovec *mem, int n,
		struct xp_mem_hold **out)
{
	struct xp_mem_hold *h;

	*out = NULL;
	if (!fab->rcache || n <= 0)
		return 0;
	h = malloc(sizeof(*h) + (size_t)n * sizeof(h->r[0]));
	if (!h)
		return -ENOMEM;
	h->n = 0;
	for (int i = 0; i < n; i++) {
		int ret;

		if (!mem[i].iov_len)
			continue;
		ret = rcache_get(fab->rcache, mem[i].iov_base, mem[i].iov_len,
				 &h->r[h->n]);
		if (ret) {
			xp_mem_release(fab, h);
			return ret;
		}
		h->n++;
	}
	*out = h;
	return 0;
}

void xp_mem_release(struct xp_fabric *fab, struct xp_mem_hold *h)
{
	if (!h)
		return;
	for (int i = 0; i < h->n; i++)
		rcache_put(fab->rcache, h->r[i]);
	free(h);
}

void xp_bulk_release(struct xp_call *call)
{
	struct xp_fabric *fab = call->priv.conn->fab;

	for (int i = 0; i < call->priv.nregions; i++)
		rcache_put(fab->rcache, call->priv.regions[i]);
	free(call->priv.regions);
	call->priv.regions = NULL;
	call->priv.nregions = 0;
}

int xp_bulk_register(struct xp_conn *c, struct xp_call *call, const struct iovec *iov,
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

uint32_t xp_bulk_encode(struct xp_conn *c, struct xp_call *call, const struct iovec *iov,
			int cnt, char *buf)
{
	uint32_t k = 0;

	for (int i = 0; i < cnt; i++) {
		struct rcache_region *r;
		struct xp_mr *mr;
		struct proto_desc d;

		if (!iov[i].iov_len)
			continue;
		r = call->priv.regions[k];
		mr = r->handle;
		d.addr = xp_remote_addr(c->fab->virt_addr, mr->base, iov[i].iov_base);
		d.len = iov[i].iov_len;
		d.key = mr->key;
		proto_desc_encode(buf + (size_t)k * PROTO_DESC_SIZE, &d);
		k++;
	}
	return k;
}

/* ---- server: descriptors and RDMA streams ------------------------------------ */

int xp_bulk_decode(struct xp_req *r, const char *msg)
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

/* The group's last operation: the caller's done runs in the engine. */
static void grp_end(struct xp_rma_grp *g)
{
	struct xp_req *r = g->req;
	struct xp_fabric *fab = r->conn->fab;

	if (g->status && r->conn->state != XP_CONN_BROKEN)
		xp_conn_fail(r->conn, g->status, "RDMA to client memory failed");
	if (xp_defer_new(fab, XP_CB_DONE, (union xp_cb_fn){.done = g->done}, r, g->ctx,
			 g->status))
		log_err("no memory to finish an RDMA stream");
	free(g);
}

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
	if (--g->remaining == 0)
		grp_end(g);
}

/* One RDMA per descriptor piece, or more where a piece is longer than the
 * provider's largest message (8 MiB on rxe). */
int xp_bulk_move(struct xp_req *r, bool to_client, uint64_t off, void *buf, size_t len,
		 void *desc, xp_done_fn done, void *ctx)
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
		op->op.kind = XP_OP_RMA;
		op->op.done = rma_done;
		op->op.conn = c;
		op->grp = g;
		ret = xp_post_rma(c, &op->op, to_client, local, n, desc, addr, d->key);
		if (ret) {
			free(op);
			break;
		}
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
	/* Drop the posting reference; ends now if nothing was posted. */
	if (--g->remaining == 0)
		grp_end(g);
	return 0;
}

/* ---- server: the pipelined bulk transfer -------------------------------------- */

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

static void pipe_launch(struct xp_pipe *p);

static void pipe_defer_io(struct xp_fabric *fab, struct xp_pchunk *pc)
{
	if (xp_defer_new(fab, XP_CB_CHUNK, (union xp_cb_fn){.chunk = pc->pipe->io},
			 &pc->ch, pc->pipe->ctx, 0))
		pc->status = -ENOMEM; /* ends with the pipeline below */
}

/* The pipeline is over: its finish runs in the engine. */
static void pipe_finish(struct xp_pipe *p)
{
	struct xp_req *r = p->req;
	struct xp_fabric *fab = r->conn->fab;

	r->pipe = NULL;
	if (xp_defer_new(fab, XP_CB_DONE, (union xp_cb_fn){.done = p->finish}, r, p->ctx,
			 p->status))
		log_err("no memory to finish a pipeline");
	free(p);
}

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
		pipe_finish(p);
		return;
	}
	pipe_launch(p);
}

/* A chunk's RDMA to the client ended (engine, no lock held). */
static void pipe_moved(struct xp_req *r, int status, void *ctx)
{
	struct xp_fabric *fab = r->conn->fab;

	xp_lock(fab);
	pipe_end_chunk(ctx, status);
	xp_unlock(fab);
}

/* A chunk came from the client (engine, no lock held): store it. */
static void pipe_pulled(struct xp_req *r, int status, void *ctx)
{
	struct xp_pchunk *pc = ctx;

	if (status) {
		pipe_moved(r, status, ctx);
		return;
	}
	pc->pipe->io(&pc->ch, pc->pipe->ctx);
}

/* Storage finished a chunk (engine, no lock held). */
static void pipe_stored(void *arg)
{
	struct xp_pchunk *pc = arg;
	struct xp_pipe *p = pc->pipe;
	struct xp_req *r = p->req;
	struct xp_fabric *fab = r->conn->fab;
	int ret = 0;

	xp_lock(fab);
	if (!pc->status && r->hdr.dir == PROTO_DIR_READ && pc->pooled) {
		if (r->dead || r->conn->state != XP_CONN_UP)
			ret = -ENOTCONN;
		else
			ret = xp_bulk_move(r, true, pc->ch.off, pc->ch.buf, pc->ch.len,
					   ((struct xp_mr *)pc->buf.handle)->desc,
					   pipe_moved, pc);
		if (!ret) {
			xp_unlock(fab);
			return;
		}
	}
	/* A write's chunk is stored; a read's inline or fast data is in
	 * place in the reply. */
	pipe_end_chunk(pc, pc->status ? pc->status : ret);
	xp_unlock(fab);
}

void xp_chunk_done(struct xp_chunk *ch, int status)
{
	struct xp_pchunk *pc = (struct xp_pchunk *)ch;

	pc->status = status;
	/* Any thread: the engine takes it from here. */
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

/* Room in the pool will come: wait for xp_pool_kick. */
static void pipe_wait_pool(struct xp_fabric *fab, struct xp_pipe *p)
{
	if (p->waiting)
		return;
	p->waiting = true;
	fab->stats.pool_waits++;
	p->wait_next = NULL;
	if (fab->pool_waiters_tail)
		fab->pool_waiters_tail->wait_next = p;
	else
		fab->pool_waiters = p;
	fab->pool_waiters_tail = p;
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
			pc->ch.buf = r->hdr.dir == PROTO_DIR_WRITE
					     ? (void *)r->wr_data
					     : r->sbuf->buf + xp_reply_data_off();
			pc->pooled = false;
		} else {
			ret = bpool_get(fab->pool, want, &pc->buf, 1, &got);
			if (ret == -EAGAIN) {
				pipe_wait_pool(fab, p);
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
		ret = 0;
		if (r->hdr.dir == PROTO_DIR_WRITE && pc->pooled)
			ret = xp_bulk_move(r, false, pc->ch.off, pc->ch.buf, pc->ch.len,
					   ((struct xp_mr *)pc->buf.handle)->desc,
					   pipe_pulled, pc);
		else
			pipe_defer_io(fab, pc);
		if (ret || pc->status) {
			pipe_end_chunk(pc, ret ? ret : pc->status);
			return;
		}
	}
	if (!p->inflight && (p->status || p->next == p->total))
		pipe_finish(p);
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

static size_t pick_chunk(const struct xp_fabric *fab, uint64_t total)
{
	size_t chunk = fab->params.chunk_size;

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
	p->chunk = r->hdr.path == XP_PATH_BULK ? pick_chunk(fab, p->total)
					       : (size_t)p->total;
	xp_lock(fab);
	r->pipe = p;
	pipe_launch(p);
	xp_unlock(fab);
	return 0;
}
