/* Connections: objects, buffers, posting, failure and teardown (see
 * xport_domain.h for the layers).
 *
 * Posting never waits and never drives progress: when the provider's queue
 * is full (-FI_EAGAIN), the operation goes on the connection's backlog and
 * the engine posts it once completions have made room. Sends, fast writes
 * and RDMA keep their order through one backlog (a reply must not overtake
 * the RDMA writes of its data); receives have their own. An operation that
 * waits a whole timeout fails the connection: a provider that takes nothing
 * for that long never will (seen on verbs when the device is unusable).
 *
 * Teardown: a connection that fails is shut down and its calls or requests
 * are ended by the engine; once its owner let it go and nothing uses it,
 * the engine closes the endpoint, waits for the flushed completions and
 * frees the memory (xp_reap_conns). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "log.h"
#include "xport_conn.h"

uint32_t xp_imm(uint32_t conn_id, uint32_t slot)
{
	return (conn_id << XP_IMM_SLOT_BITS) | slot;
}

struct xp_conn *xp_conn_by_id(struct xp_fabric *fab, uint32_t id)
{
	return id < fab->nconns ? fab->conns[id] : NULL;
}

int xp_conn_alloc(struct xp_fabric *fab, struct fid_ep *ep, struct xp_conn **out)
{
	struct xp_conn *c;
	uint32_t id;

	xp_assert_locked(fab);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (id = 0; id < fab->nconns && fab->conns[id]; id++)
		;
	if (id == fab->nconns) {
		uint32_t n = fab->nconns ? fab->nconns * 2 : 16;
		struct xp_conn **t;

		if (n > XP_MAX_CONNS || !(t = realloc(fab->conns, n * sizeof(*t)))) {
			free(c);
			return -ENOMEM;
		}
		memset(t + fab->nconns, 0, (n - fab->nconns) * sizeof(*t));
		fab->conns = t;
		fab->nconns = n;
	}
	fab->conns[id] = c;
	c->id = id;
	c->fab = fab;
	c->ep = ep;
	c->state = XP_CONN_CONNECTING;
	list_init(&c->reqs);
	if (fab->role == XP_SERVER) {
		fab->nlive++;
		fab->stats.conns_total++;
	}
	*out = c;
	return 0;
}

/* A connection's buffers come straight from the kernel: zeroed (nothing
 * of the heap's past reaches a peer), page-aligned, and touched only as
 * they are used; zeroing heap memory instead cost a new connection ~1 ms
 * of page faults per MiB up front (most of a first open). */
static void *alloc_pages(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);

	return p == MAP_FAILED ? NULL : p;
}

static void free_pages(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}

int xp_conn_setup_recv(struct xp_conn *c, uint32_t nrecv)
{
	const struct xp_params *p = &c->fab->params;
	int ret;

	c->recv_size = p->inline_max + XP_MSG_ROOM;
	c->slot_size = p->fast_max + XP_MSG_ROOM;
	c->nrecv = nrecv;
	c->nfast = p->fast_slots;
	c->mem_len = c->recv_size * nrecv + c->slot_size * c->nfast;
	c->mem = alloc_pages(c->mem_len);
	c->rbufs = calloc(nrecv, sizeof(*c->rbufs));
	c->fast_busy = calloc(c->nfast, 1);
	if (!c->mem || !c->rbufs || !c->fast_busy)
		return -ENOMEM;
	ret = xp_mr_reg_locked(c->fab, c->mem, c->mem_len, &c->mr);
	if (ret)
		return ret;
	c->fast = c->mem + c->recv_size * nrecv;
	for (uint32_t i = 0; i < nrecv; i++) {
		c->rbufs[i].buf = c->mem + c->recv_size * i;
		c->rbufs[i].index = i;
		c->rbufs[i].op.kind = XP_OP_RECV;
		c->rbufs[i].op.conn = c;
	}
	return 0;
}

int xp_conn_setup_send(struct xp_conn *c, uint32_t nsend)
{
	int ret;

	c->send_size = c->slot_size;
	c->nsend = nsend;
	c->smem_len = c->send_size * nsend;
	c->smem = alloc_pages(c->smem_len);
	c->sbufs = calloc(nsend, sizeof(*c->sbufs));
	c->sfree = calloc(nsend, sizeof(*c->sfree));
	if (!c->smem || !c->sbufs || !c->sfree)
		return -ENOMEM;
	ret = xp_mr_reg_locked(c->fab, c->smem, c->smem_len, &c->smr);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < nsend; i++) {
		c->sbufs[i].buf = c->smem + c->send_size * i;
		c->sbufs[i].index = i;
		c->sbufs[i].op.kind = XP_OP_SEND;
		c->sbufs[i].op.conn = c;
		c->sfree[i] = nsend - 1 - i;
	}
	c->nsfree = nsend;
	return 0;
}

struct xp_sbuf *xp_sbuf_get(struct xp_conn *c)
{
	if (!c->nsfree)
		return NULL;
	return &c->sbufs[c->sfree[--c->nsfree]];
}

void xp_sbuf_put(struct xp_conn *c, struct xp_sbuf *sb)
{
	sb->req = NULL;
	sb->call = NULL;
	c->sfree[c->nsfree++] = sb->index;
}

/* ---- posting ---------------------------------------------------------------- */

/* Hand one operation to the provider: 0, -FI_EAGAIN (queue full), or an
 * error. */
static int post_now(struct xp_conn *c, const struct xp_pending *p)
{
	struct fi_msg_rma msg;

	switch (p->kind) {
	case XP_PEND_RECV:
		return (int)fi_recv(c->ep, p->buf, p->len, p->desc, 0, &p->op->fictx);
	case XP_PEND_SEND:
		return (int)fi_send(c->ep, p->buf, p->len, p->desc, 0, &p->op->fictx);
	case XP_PEND_READ:
		return (int)fi_read(c->ep, p->buf, p->len, p->desc, 0, p->addr, p->key,
				    &p->op->fictx);
	case XP_PEND_WRITE:
		return (int)fi_write(c->ep, p->buf, p->len, p->desc, 0, p->addr, p->key,
				     &p->op->fictx);
	case XP_PEND_FAST:
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = p->iov;
		msg.desc = (void **)p->descs;
		msg.iov_count = p->iov_count;
		msg.rma_iov = &p->rma;
		msg.rma_iov_count = 1;
		msg.context = &p->op->fictx;
		msg.data = p->imm;
		return (int)fi_writemsg(c->ep, &msg, FI_REMOTE_CQ_DATA | FI_COMPLETION);
	}
	return -FI_EINVAL;
}

static bool is_rx(const struct xp_pending *p)
{
	return p->kind == XP_PEND_RECV;
}

static void backlog_push(struct xp_conn *c, struct xp_pending *p)
{
	struct xp_pending **head = is_rx(p) ? &c->rx_backlog : &c->tx_backlog;
	struct xp_pending **tail = is_rx(p) ? &c->rx_backlog_tail : &c->tx_backlog_tail;

	p->next = NULL;
	if (*tail)
		(*tail)->next = p;
	else
		*head = p;
	*tail = p;
	if (!c->backlog_since)
		c->backlog_since = xp_now_ns();
	c->fab->need_backlog = true;
}

static const char *what(const struct xp_pending *p)
{
	switch (p->kind) {
	case XP_PEND_RECV:
		return "couldn't post a receive";
	case XP_PEND_SEND:
		return "couldn't send";
	case XP_PEND_FAST:
		return "couldn't RDMA-write a fast message";
	default:
		return "couldn't post an RDMA operation";
	}
}

/* Post p now, or queue it behind what already waits. */
static int post(struct xp_conn *c, const struct xp_pending *tmpl)
{
	struct xp_pending *p;
	int ret;

	xp_assert_locked(c->fab);
	if (!c->ep || c->state == XP_CONN_BROKEN)
		return c->error ? c->error : -ENOTCONN;
	if (!(is_rx(tmpl) ? c->rx_backlog : c->tx_backlog)) {
		ret = post_now(c, tmpl);
		if (!ret) {
			c->posted++;
			return 0;
		}
		if (ret != -FI_EAGAIN) {
			ret = xp_errno(ret);
			xp_conn_fail(c, ret, what(tmpl));
			return ret;
		}
	}
	p = malloc(sizeof(*p));
	if (!p) {
		xp_conn_fail(c, -ENOMEM, "no memory to queue an operation");
		return -ENOMEM;
	}
	*p = *tmpl;
	backlog_push(c, p);
	return 0;
}

int xp_post_recv(struct xp_conn *c, struct xp_rbuf *rb)
{
	struct xp_pending p = {.kind = XP_PEND_RECV,
			       .op = &rb->op,
			       .buf = rb->buf,
			       .len = c->recv_size,
			       .desc = c->mr->desc};

	return post(c, &p);
}

int xp_post_send(struct xp_conn *c, struct xp_sbuf *sb, size_t len)
{
	struct xp_pending p = {.kind = XP_PEND_SEND,
			       .op = &sb->op,
			       .buf = sb->buf,
			       .len = len,
			       .desc = c->smr->desc};

	return post(c, &p);
}

int xp_post_fast(struct xp_conn *c, struct xp_op *op, const struct iovec *iov,
		 void *const *desc, size_t cnt, uint64_t addr, uint64_t key, uint64_t imm)
{
	struct xp_pending p = {
		.kind = XP_PEND_FAST, .op = op, .iov_count = cnt, .imm = imm};
	size_t total = 0;

	if (cnt > XP_FAST_IOV_MAX)
		return -EINVAL;
	for (size_t i = 0; i < cnt; i++) {
		p.iov[i] = iov[i];
		p.descs[i] = desc[i];
		total += iov[i].iov_len;
	}
	p.rma.addr = addr;
	p.rma.len = total;
	p.rma.key = key;
	return post(c, &p);
}

int xp_post_rma(struct xp_conn *c, struct xp_op *op, bool write, void *buf, size_t len,
		void *desc, uint64_t addr, uint64_t key)
{
	struct xp_pending p = {.kind = write ? XP_PEND_WRITE : XP_PEND_READ,
			       .op = op,
			       .buf = buf,
			       .len = len,
			       .desc = desc,
			       .addr = addr,
			       .key = key};

	return post(c, &p);
}

/* Post the head of one backlog while the provider takes it. */
static int drain(struct xp_conn *c, struct xp_pending **head, struct xp_pending **tail)
{
	int n = 0;

	while (*head && c->state != XP_CONN_BROKEN) {
		struct xp_pending *p = *head;
		int ret = post_now(c, p);

		if (ret == -FI_EAGAIN)
			break;
		if (ret) {
			/* Left on the backlog: the engine completes it with the
			 * connection's error. */
			xp_conn_fail(c, xp_errno(ret), what(p));
			break;
		}
		*head = p->next;
		if (!*head)
			*tail = NULL;
		free(p);
		c->posted++;
		n++;
	}
	return n;
}

int xp_conn_post_backlog(struct xp_conn *c)
{
	int n;

	xp_assert_locked(c->fab);
	n = drain(c, &c->rx_backlog, &c->rx_backlog_tail) +
	    drain(c, &c->tx_backlog, &c->tx_backlog_tail);

	if (!c->rx_backlog && !c->tx_backlog) {
		c->backlog_since = 0;
		return n;
	}
	if (n)
		c->backlog_since = xp_now_ns();
	else if (c->state != XP_CONN_BROKEN &&
		 xp_now_ns() - c->backlog_since >
			 (int64_t)c->fab->params.timeout_ms * 1000000)
		xp_conn_fail(c, -ETIMEDOUT,
			     "the provider took no operation for a whole timeout");
	if (c->state != XP_CONN_BROKEN)
		c->fab->need_backlog = true;
	return n;
}

struct xp_op *xp_conn_take_backlog(struct xp_conn *c)
{
	struct xp_pending **head = c->tx_backlog ? &c->tx_backlog : &c->rx_backlog;
	struct xp_pending **tail =
		c->tx_backlog ? &c->tx_backlog_tail : &c->rx_backlog_tail;
	struct xp_pending *p = *head;
	struct xp_op *op;

	if (!p)
		return NULL;
	*head = p->next;
	if (!*head)
		*tail = NULL;
	op = p->op;
	free(p);
	return op;
}

/* ---- failure and teardown ---------------------------------------------------- */

void xp_conn_fail(struct xp_conn *c, int err, const char *why)
{
	struct xp_fabric *fab = c->fab;

	xp_assert_locked(fab);
	if (c->state == XP_CONN_BROKEN)
		return;
	if (err == -EPROTO)
		fab->stats.proto_errors++;
	/* A client leaving is routine for a server; a connection that fails
	 * while xp_connect waits is reported by its caller; anything else is
	 * news. */
	if (fab->role == XP_SERVER && err == -ECONNRESET)
		log_info("client connection %u closed", c->id);
	else if (c->in_connect)
		log_info("connection to %s: %s (%s)", c->peer, why, strerror(-err));
	else if (!c->closing || err != -ECONNABORTED)
		log_warn("connection to %s: %s (%s)", c->peer[0] ? c->peer : "client",
			 why, strerror(-err));
	c->state = XP_CONN_BROKEN;
	c->error = err;
	snprintf(c->fail_why, sizeof(c->fail_why), "%s", why);
	if (c->ep)
		fi_shutdown(c->ep, 0);
	/* A server lets go of a broken connection itself; a client's owner
	 * does (xp_conn_close). Its calls or requests end in the engine. */
	if (fab->role == XP_SERVER)
		c->closing = true;
	fab->need_fail = true;
}

void xp_conn_maybe_free(struct xp_conn *c)
{
	xp_assert_locked(c->fab);
	if (c->state != XP_CONN_BROKEN || !c->closing || !c->fail_handled ||
	    !list_empty(&c->reqs) || c->inflight || c->waitq || c->events_pending ||
	    c->tx_backlog || c->rx_backlog)
		return;
	c->reap = true;
	c->fab->need_reap = true;
}

void xp_conn_let_go(struct xp_conn *c, int err, const char *why)
{
	xp_assert_locked(c->fab);
	c->closing = true;
	xp_conn_fail(c, err, why); /* nothing if already broken */
	xp_conn_maybe_free(c);
}

void xp_conn_free(struct xp_conn *c)
{
	struct xp_fabric *fab = c->fab;

	xp_assert_locked(fab);
	fab->conns[c->id] = NULL;
	if (fab->role == XP_SERVER)
		fab->nlive--;
	if (c->free_ctx)
		c->free_ctx(c->ctx);
	xp_mr_dereg(c->mr);
	xp_mr_dereg(c->smr);
	free_pages(c->mem, c->mem_len);
	free_pages(c->smem, c->smem_len);
	free(c->rbufs);
	free(c->fast_busy);
	free(c->sbufs);
	free(c->sfree);
	free(c->calls);
	free(c->gen);
	free(c->peer_slots);
	free(c->my_slots);
	free(c);
}

/* Closing an endpoint makes the provider flush its posted operations, and
 * those completions (which name this connection's buffers) may arrive a
 * little later: until they have, the connection stays as a zombie with its
 * memory intact. A provider that never flushes (verbs discards the work of a
 * destroyed queue pair) would leave it forever; after XP_ZOMBIE_NS it is left
 * alone (its memory kept, never reused) rather than freed under the
 * provider. */
#define XP_ZOMBIE_NS 10000000000LL

void xp_reap_conns(struct xp_fabric *fab)
{
	int64_t now = xp_now_ns();

	xp_assert_locked(fab);
	fab->need_reap = false;
	for (uint32_t i = 0; i < fab->nconns; i++) {
		struct xp_conn *c = fab->conns[i];

		if (!c || !c->reap)
			continue;
		if (c->ep) {
			fi_close(&c->ep->fid);
			c->ep = NULL;
			c->zombie_since = now;
		}
		if (!c->posted) {
			xp_conn_free(c);
		} else if (now - c->zombie_since > XP_ZOMBIE_NS) {
			log_info(
				"connection %u: %d operations never completed; keeping its memory",
				c->id, c->posted);
			c->reap = false;
		} else {
			fab->need_reap = true;
		}
	}
}
