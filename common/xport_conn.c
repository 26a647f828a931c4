/* Connections: one reliable FI_EP_MSG connection per client-server pair.
 *
 * Setup, in order: connection manager exchange (fi_connect carries magic and
 * version; fi_accept answers with a nonce for authentication), then the
 * HELLO / HELLO_REP messages carrying each side's receive geometry, credits
 * and Fast RDMA buffer descriptor. Receives are posted before fi_connect /
 * fi_accept, so the client's first message always finds one (its implicit
 * first credit).
 *
 * Teardown: a connection that fails is shut down; its posted operations
 * complete with errors and are counted down; once its owner let it go and
 * no request uses it, progress closes the endpoint at top level, drains the
 * completion queue and frees the memory (xp_reap_conns). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "log.h"
#include "mraddr.h"
#include "xport_priv.h"

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
	struct xp_conn *c = calloc(1, sizeof(*c));
	uint32_t id;

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
	*out = c;
	return 0;
}

static void *alloc_pages(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
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
		c->rbufs[i].op.done = xp_recv_done;
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

int xp_conn_post_recv(struct xp_conn *c, struct xp_rbuf *rb)
{
	int ret;

	if (!c->ep || c->state == XP_CONN_BROKEN)
		return -ENOTCONN;
	do {
		ret = (int)fi_recv(c->ep, rb->buf, c->recv_size, c->mr->desc, 0,
				   &rb->op.fictx);
		if (ret == -FI_EAGAIN)
			xp_progress_locked(c->fab, 0);
	} while (ret == -FI_EAGAIN);
	if (ret) {
		xp_conn_fail(c, xp_errno(ret), "couldn't post a receive");
		return xp_errno(ret);
	}
	c->posted++;
	return 0;
}

static int conn_bind(struct xp_conn *c)
{
	struct xp_fabric *fab = c->fab;
	int ret;

	ret = fi_ep_bind(c->ep, &fab->eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(c->ep, &fab->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(c->ep);
	return xp_errno(ret);
}

static int post_all_recvs(struct xp_conn *c)
{
	for (uint32_t i = 0; i < c->nrecv; i++) {
		int ret = xp_conn_post_recv(c, &c->rbufs[i]);

		if (ret)
			return ret;
	}
	return 0;
}

void xp_conn_fail(struct xp_conn *c, int err, const char *why)
{
	struct xp_fabric *fab = c->fab;

	if (c->state == XP_CONN_BROKEN)
		return;
	if (err == -EPROTO)
		fab->stats.proto_errors++;
	/* A client leaving is routine for a server; anything else is news. */
	if (fab->role == XP_SERVER && err == -ECONNRESET)
		log_info("client connection %u closed", c->id);
	else if (!c->closing || err != -ECONNABORTED)
		log_warn("connection to %s: %s (%s)", c->peer[0] ? c->peer : "client",
			 why, strerror(-err));
	c->state = XP_CONN_BROKEN;
	c->error = err;
	if (c->ep)
		fi_shutdown(c->ep, 0);
	if (fab->role == XP_CLIENT)
		xp_fail_calls(c, err);
	else
		xp_req_abort_all(c);
	if (fab->role == XP_SERVER) {
		c->closing = true;
		/* Not while the fabric closes: its owner is tearing down. */
		if (fab->conn_fn && c->hello_done && !fab->closing)
			fab->conn_fn(c, 0, fab->conn_arg);
	}
	xp_conn_maybe_free(c);
}

/* Ready to free: broken, let go by its owner, no call or request uses it. */
void xp_conn_maybe_free(struct xp_conn *c)
{
	if (c->state != XP_CONN_BROKEN || !c->closing || c->reqs || c->inflight ||
	    c->waitq)
		return;
	c->reap = true;
	c->fab->need_reap = true;
}

void xp_conn_free(struct xp_conn *c)
{
	struct xp_fabric *fab = c->fab;

	fab->conns[c->id] = NULL;
	xp_mr_dereg(c->mr);
	xp_mr_dereg(c->smr);
	free(c->mem);
	free(c->smem);
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

/* Free connections that are done. Closing an endpoint makes the provider
 * flush its posted operations, and those completions (which name this
 * connection's buffers) may arrive a little later: until they have, the
 * connection stays as a zombie with its memory intact. A provider that never
 * flushes would leave it forever; after XP_ZOMBIE_NS it is left alone (its
 * memory kept, never reused) rather than freed under the provider. */
#define XP_ZOMBIE_NS 10000000000LL

void xp_reap_conns(struct xp_fabric *fab)
{
	int64_t now = xp_now_ns();

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
			log_warn("connection %u: %d operations never completed; keeping "
				 "its memory",
				 c->id, c->posted);
			c->reap = false;
		} else {
			fab->need_reap = true;
		}
	}
}

static void fill_fastbuf(struct xp_conn *c, struct proto_fastbuf *f)
{
	f->addr = xp_remote_addr(c->fab->virt_addr, c->mem, c->fast);
	f->key = c->mr->key;
	f->slot_size = (uint32_t)c->slot_size;
	f->slot_count = c->nfast;
}

/* ---- client ----------------------------------------------------------- */

static int client_send_hello(struct xp_conn *c)
{
	struct proto_hello m = {0};
	struct proto_hdr h = {0};
	struct xp_sbuf *sb = xp_sbuf_get(c);

	m.conn_id = c->id;
	m.recv_count = c->nrecv;
	m.recv_size = (uint32_t)c->recv_size;
	m.max_requests = c->max_req;
	fill_fastbuf(c, &m.fast);
	h.type = PROTO_HELLO;
	h.body_len = PROTO_HELLO_SIZE;
	h.data_off = PROTO_HDR_SIZE + PROTO_HELLO_SIZE;
	proto_hdr_encode(sb->buf, &h);
	proto_hello_encode(sb->buf + PROTO_HDR_SIZE, &m);
	c->state = XP_CONN_HELLO;
	return xp_send_msg(c, sb, PROTO_HDR_SIZE + PROTO_HELLO_SIZE);
}

void xp_client_hello_rep(struct xp_conn *c, struct xp_rbuf *rb, size_t len)
{
	struct proto_hello_rep m;
	struct proto_hdr h;

	if (proto_hdr_decode(rb->buf, len, &h) || h.type != PROTO_HELLO_REP ||
	    proto_hello_rep_decode(rb->buf + PROTO_HDR_SIZE, h.body_len, &m)) {
		xp_conn_fail(c, -EPROTO, "bad handshake reply");
		return;
	}
	if (m.status) {
		xp_conn_fail(c, m.status, "server refused the connection");
		return;
	}
	c->peer_id = m.conn_id;
	c->peer_fast = m.fast;
	c->peer_recv_size = m.recv_size;
	c->credits = m.credits;
	c->peer_slots = calloc(m.fast.slot_count, sizeof(uint32_t));
	if (!c->peer_slots) {
		xp_conn_fail(c, -ENOMEM, "no memory for fast slots");
		return;
	}
	for (uint32_t i = 0; i < m.fast.slot_count; i++)
		c->peer_slots[i] = m.fast.slot_count - 1 - i;
	c->npeer_slots = m.fast.slot_count;
	c->state = XP_CONN_UP;
	xp_conn_post_recv(c, rb);
}

static int client_conn_init(struct xp_conn *c)
{
	const struct xp_params *p = &c->fab->params;
	int ret;

	c->max_req = p->credits;
	ret = xp_conn_setup_recv(c, c->max_req + XP_CTRL_RECVS);
	if (!ret)
		ret = xp_conn_setup_send(c, c->max_req);
	if (ret)
		return ret;
	c->calls = calloc(c->max_req, sizeof(*c->calls));
	c->gen = calloc(c->max_req, sizeof(*c->gen));
	c->my_slots = calloc(c->nfast, sizeof(*c->my_slots));
	if (!c->calls || !c->gen || !c->my_slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->nfast; i++)
		c->my_slots[i] = c->nfast - 1 - i;
	c->nmy_slots = c->nfast;
	return 0;
}

int xp_connect(struct xp_fabric *fab, const char *host, const char *port,
	       struct xp_conn **out, char *why, size_t whylen)
{
	uint8_t cm[PROTO_CM_SIZE];
	struct proto_cm m = {PROTO_MAGIC, PROTO_VERSION, {0}};
	struct fi_info *info = NULL;
	struct fid_ep *ep = NULL;
	struct xp_conn *c = NULL;
	char msg[160] = "";
	int64_t deadline;
	int ret;

	pthread_mutex_lock(&fab->lock);
	ret = xp_getinfo(fab, host, port, 0, &info);
	if (ret) {
		snprintf(msg, sizeof(msg), "can't resolve %s:%s with provider %s: %s",
			 host, port, fab->params.provider, fi_strerror(-ret));
		goto out;
	}
	ret = xp_errno(fi_endpoint(fab->domain, info, &ep, NULL));
	if (ret) {
		snprintf(msg, sizeof(msg), "couldn't create an endpoint for %s:%s: %s",
			 host, port, fi_strerror(-ret));
		goto out;
	}
	ret = xp_conn_alloc(fab, ep, &c);
	if (ret) {
		fi_close(&ep->fid);
		goto out;
	}
	ep->fid.context = c;
	snprintf(c->peer, sizeof(c->peer), "%s:%s", host, port);
	ret = conn_bind(c);
	if (!ret)
		ret = client_conn_init(c);
	if (!ret)
		ret = post_all_recvs(c);
	if (ret) {
		snprintf(msg, sizeof(msg), "couldn't set up a connection to %s: %s",
			 c->peer, strerror(-ret));
		goto fail;
	}
	proto_cm_encode(cm, &m);
	ret = xp_errno(fi_connect(ep, info->dest_addr, cm, sizeof(cm)));
	if (ret) {
		snprintf(msg, sizeof(msg), "couldn't connect to %s: %s", c->peer,
			 fi_strerror(-ret));
		goto fail;
	}
	deadline = xp_now_ns() + (int64_t)fab->params.timeout_ms * 1000000;
	while (c->state != XP_CONN_UP && c->state != XP_CONN_BROKEN) {
		if (xp_now_ns() > deadline) {
			xp_conn_fail(c, -ETIMEDOUT,
				     "no answer to the connection request");
			break;
		}
		xp_progress_locked(fab, 50);
	}
	if (c->state != XP_CONN_UP) {
		ret = c->error ? c->error : -ECONNREFUSED;
		snprintf(msg, sizeof(msg), "couldn't connect to server %s: %s", c->peer,
			 strerror(-ret));
		goto fail;
	}
	fi_freeinfo(info);
	*out = c;
	pthread_mutex_unlock(&fab->lock);
	return 0;
fail:
	c->closing = true;
	xp_conn_fail(c, ret, "connection setup failed");
	xp_progress_locked(fab, 0);
out:
	if (info)
		fi_freeinfo(info);
	if (why && whylen)
		snprintf(why, whylen, "%s", msg);
	if (msg[0])
		log_dbg("%s", msg);
	pthread_mutex_unlock(&fab->lock);
	return ret;
}

void xp_conn_close(struct xp_conn *c)
{
	struct xp_fabric *fab;

	if (!c)
		return;
	fab = c->fab;
	pthread_mutex_lock(&fab->lock);
	/* Let calls in flight finish; they are bounded by the timeout. */
	while ((c->inflight || c->waitq) && c->state != XP_CONN_BROKEN)
		xp_progress_locked(fab, 10);
	c->closing = true;
	if (c->state != XP_CONN_BROKEN)
		xp_conn_fail(c, -ECONNABORTED, "closed");
	xp_conn_maybe_free(c);
	xp_progress_locked(fab, 0);
	pthread_mutex_unlock(&fab->lock);
}

int xp_conn_error(struct xp_conn *c)
{
	return c->state == XP_CONN_BROKEN ? (c->error ? c->error : -ENOTCONN) : 0;
}

const char *xp_conn_peer(const struct xp_conn *c)
{
	return c->peer;
}

/* ---- server ----------------------------------------------------------- */

int xp_listen(struct xp_fabric *fab, const char *host, const char *port,
	      xp_req_fn handler, void *arg)
{
	struct sockaddr_storage ss;
	size_t sslen = sizeof(ss);
	struct fi_info *info = NULL;
	int ret;

	pthread_mutex_lock(&fab->lock);
	fab->handler = handler;
	fab->handler_arg = arg;
	ret = xp_getinfo(fab, host, port, FI_SOURCE, &info);
	if (ret) {
		log_err("can't resolve listen address %s:%s: %s", host, port,
			fi_strerror(-ret));
		goto out;
	}
	ret = xp_errno(fi_passive_ep(fab->fabric, info, &fab->pep, NULL));
	if (!ret)
		ret = xp_errno(fi_pep_bind(fab->pep, &fab->eq->fid, 0));
	if (!ret)
		ret = xp_errno(fi_listen(fab->pep));
	if (ret) {
		log_err("couldn't listen on %s:%s: %s", host, port, fi_strerror(-ret));
		goto out;
	}
	if (!fi_getname(&fab->pep->fid, &ss, &sslen)) {
		if (ss.ss_family == AF_INET)
			fab->listen_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		else if (ss.ss_family == AF_INET6)
			fab->listen_port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	log_info("listening on %s:%d (%s)", host, fab->listen_port,
		 xp_fabric_provider(fab));
out:
	if (info)
		fi_freeinfo(info);
	pthread_mutex_unlock(&fab->lock);
	return ret;
}

int xp_listen_port(struct xp_fabric *fab)
{
	return fab->listen_port;
}

void xp_set_conn_handler(struct xp_fabric *fab, xp_conn_fn fn, void *arg)
{
	fab->conn_fn = fn;
	fab->conn_arg = arg;
}

static void server_reject(struct xp_fabric *fab, struct fi_info *info, const char *why)
{
	log_warn("rejected a connection request: %s", why);
	fi_reject(fab->pep, info->handle, NULL, 0);
}

static void server_connreq(struct xp_fabric *fab, struct fi_eq_cm_entry *e, size_t len)
{
	uint8_t cm[PROTO_CM_SIZE];
	struct proto_cm m;
	struct xp_conn *c = NULL;
	struct fid_ep *ep = NULL;
	int ret;

	if (proto_cm_decode(e->data, len - sizeof(*e), &m)) {
		server_reject(fab, e->info, "not an rpfs client");
		return;
	}
	if (m.version != PROTO_VERSION) {
		char why[80];

		snprintf(why, sizeof(why), "client speaks protocol %u, server %u",
			 m.version, PROTO_VERSION);
		server_reject(fab, e->info, why);
		return;
	}
	ret = xp_errno(fi_endpoint(fab->domain, e->info, &ep, NULL));
	if (ret) {
		server_reject(fab, e->info, "couldn't create an endpoint");
		return;
	}
	ret = xp_conn_alloc(fab, ep, &c);
	if (ret) {
		fi_close(&ep->fid);
		server_reject(fab, e->info, "too many connections");
		return;
	}
	ep->fid.context = c;
	c->connect_deadline = xp_now_ns() + (int64_t)fab->params.timeout_ms * 1000000;
	ret = conn_bind(c);
	if (!ret)
		ret = xp_conn_setup_recv(c, fab->params.credits);
	if (!ret)
		ret = post_all_recvs(c);
	if (!ret && getrandom(c->nonce, sizeof(c->nonce), 0) != sizeof(c->nonce))
		ret = -EIO;
	if (!ret) {
		memcpy(m.nonce, c->nonce, sizeof(m.nonce));
		m.version = PROTO_VERSION;
		proto_cm_encode(cm, &m);
		ret = xp_errno(fi_accept(ep, cm, sizeof(cm)));
	}
	if (ret) {
		c->closing = true;
		xp_conn_fail(c, ret, "couldn't accept the connection");
	}
}

void xp_server_hello(struct xp_conn *c, struct xp_rbuf *rb, size_t len)
{
	struct proto_hello_rep rep = {0};
	struct proto_hello m;
	struct proto_hdr h;
	struct xp_sbuf *sb;
	int ret;

	if (proto_hdr_decode(rb->buf, len, &h) || h.type != PROTO_HELLO ||
	    proto_hello_decode(rb->buf + PROTO_HDR_SIZE, h.body_len, &m) ||
	    m.conn_id >= XP_MAX_CONNS) {
		xp_conn_fail(c, -EPROTO, "bad handshake");
		return;
	}
	/* TODO(auth): verify m.auth = HMAC(cluster key, c->nonce) here. */
	c->peer_id = m.conn_id;
	c->peer_fast = m.fast;
	c->peer_recv_size = m.recv_size;
	c->max_req = m.max_requests > 1024 ? 1024 : m.max_requests;
	ret = xp_conn_setup_send(c, c->max_req + XP_CTRL_RECVS);
	if (ret) {
		xp_conn_fail(c, ret, "no memory for send buffers");
		return;
	}
	c->hello_done = true;
	c->state = XP_CONN_UP;
	c->granted = c->nrecv;
	c->peer_credits = c->nrecv;
	if (xp_conn_post_recv(c, rb))
		return;
	rep.conn_id = c->id;
	rep.credits = c->nrecv;
	rep.recv_size = (uint32_t)c->recv_size;
	fill_fastbuf(c, &rep.fast);
	memset(&h, 0, sizeof(h));
	h.type = PROTO_HELLO_REP;
	h.body_len = PROTO_HELLO_REP_SIZE;
	h.data_off = PROTO_HDR_SIZE + PROTO_HELLO_REP_SIZE;
	sb = xp_sbuf_get(c);
	proto_hdr_encode(sb->buf, &h);
	proto_hello_rep_encode(sb->buf + PROTO_HDR_SIZE, &rep);
	if (xp_send_msg(c, sb, PROTO_HDR_SIZE + PROTO_HELLO_REP_SIZE))
		return;
	if (c->fab->conn_fn)
		c->fab->conn_fn(c, 1, c->fab->conn_arg);
}

/* ---- connection events (both sides) ------------------------------------ */

void xp_handle_eq_event(struct xp_fabric *fab, uint32_t event, struct fi_eq_cm_entry *e,
			size_t len)
{
	struct xp_conn *c = (event == FI_CONNREQ || !e->fid) ? NULL : e->fid->context;

	switch (event) {
	case FI_CONNREQ:
		server_connreq(fab, e, len);
		fi_freeinfo(e->info);
		break;
	case FI_CONNECTED:
		if (!c)
			break;
		if (fab->role == XP_CLIENT && c->state == XP_CONN_CONNECTING) {
			struct proto_cm m;

			if (proto_cm_decode(e->data, len - sizeof(*e), &m) ||
			    m.version != PROTO_VERSION) {
				xp_conn_fail(c, -EPROTO,
					     "server speaks another protocol");
				break;
			}
			memcpy(c->nonce, m.nonce, sizeof(c->nonce));
			client_send_hello(c);
		} else if (c->state == XP_CONN_CONNECTING) {
			c->state = XP_CONN_HELLO;
		}
		break;
	case FI_SHUTDOWN:
		if (c)
			xp_conn_fail(c, -ECONNRESET, "peer closed the connection");
		break;
	default:
		break;
	}
}
