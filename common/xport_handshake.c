/* Connection management, both sides (see xport_domain.h for the layers).
 *
 * Setup, in order (auth.h has the cryptography):
 *   1. fi_connect carries the client's proof of the cluster key (nonce,
 *      time, MAC). The server checks it, the protocol version, the replay
 *      guard and its connection limit before it creates an endpoint or
 *      allocates anything; a refusal goes back as reject data naming why.
 *   2. fi_accept carries the server's nonce and its proof of the key over
 *      both nonces; the client checks it before sending anything.
 *   3. HELLO / HELLO_REP, each with a MAC over both nonces and its content,
 *      carry each side's receive geometry, credits and Fast RDMA buffer
 *      descriptor, and the application's data (who the client is; the
 *      server's answer, which may refuse it).
 * Receives are posted before fi_connect / fi_accept, so the client's first
 * message always finds one (its implicit first credit). A server drops a
 * connection that has not finished its handshake within handshake_ms (the
 * engine asks hs_expired); the application hears of connections coming up
 * and going down through the engine, after the lock is let go. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "mraddr.h"
#include "xport_engine.h"

_Static_assert(XP_HELLO_MAX == PROTO_APP_MAX, "hello data bound");

/* Connection-manager data must fit what the provider carries (56 bytes on
 * InfiniBand less libfabric's own header; tcp allows more). Providers that
 * do not answer the option are taken at their word at connect time. */
static int cm_data_fits(struct fid_ep *ep, size_t need, size_t *have)
{
	size_t size = 0, len = sizeof(size);

	if (fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &size, &len))
		return 1;
	*have = size;
	return need <= size;
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
		int ret = xp_post_recv(c, &c->rbufs[i]);

		if (ret)
			return ret;
	}
	return 0;
}

/* ---- client ----------------------------------------------------------- */

static void fill_fastbuf(struct xp_conn *c, struct proto_fastbuf *f)
{
	f->addr = xp_remote_addr(c->fab->virt_addr, c->mem, c->fast);
	f->key = c->mr->key;
	f->slot_size = (uint32_t)c->slot_size;
	f->slot_count = c->nfast;
}

/* ---- client ----------------------------------------------------------- */

/* MAC of a HELLO or HELLO_REP: both nonces (client's first for HELLO,
 * server's first for the reply, so one cannot stand for the other), the
 * fixed part with its MAC field zeroed, and the application data. */
static void hello_mac(const struct xp_conn *c, const char *label, bool server_first,
		      uint8_t *fixed, size_t fixed_len, size_t mac_off, const void *app,
		      size_t app_len, uint8_t mac[PROTO_MAC_SIZE])
{
	uint8_t nonces[2 * PROTO_NONCE_SIZE], saved[PROTO_MAC_SIZE], out[PROTO_MAC_SIZE];

	memcpy(nonces, server_first ? c->snonce : c->cnonce, PROTO_NONCE_SIZE);
	memcpy(nonces + PROTO_NONCE_SIZE, server_first ? c->cnonce : c->snonce,
	       PROTO_NONCE_SIZE);
	memcpy(saved, fixed + mac_off, PROTO_MAC_SIZE);
	memset(fixed + mac_off, 0, PROTO_MAC_SIZE);
	auth_mac(&c->fab->key, label, nonces, sizeof(nonces), fixed, fixed_len, app,
		 app_len, out);
	/* mac may be the MAC field itself: write it after the restore */
	memcpy(fixed + mac_off, saved, PROTO_MAC_SIZE);
	memcpy(mac, out, PROTO_MAC_SIZE);
}

#define HELLO_MAC_OFF	  40 /* where proto_hello_encode puts the MAC */
#define HELLO_REP_MAC_OFF 48

static int client_send_hello(struct xp_conn *c)
{
	struct proto_hello m = {0};
	struct proto_hdr h = {0};
	struct xp_sbuf *sb = xp_sbuf_get(c);
	const struct xp_hello *app = c->hello;
	size_t app_len = app && app->data ? app->len : 0;
	uint8_t *body = (uint8_t *)sb->buf + PROTO_HDR_SIZE;

	m.conn_id = c->id;
	m.recv_count = c->nrecv;
	m.recv_size = (uint32_t)c->recv_size;
	m.max_requests = c->max_req;
	m.app_len = (uint32_t)app_len;
	fill_fastbuf(c, &m.fast);
	proto_hello_encode(body, &m);
	if (app_len)
		memcpy(body + PROTO_HELLO_SIZE, app->data, app_len);
	hello_mac(c, "hello", false, body, PROTO_HELLO_SIZE, HELLO_MAC_OFF,
		  body + PROTO_HELLO_SIZE, app_len, body + HELLO_MAC_OFF);
	h.type = PROTO_HELLO;
	h.body_len = (uint32_t)(PROTO_HELLO_SIZE + app_len);
	h.data_off = (uint16_t)(PROTO_HDR_SIZE + h.body_len);
	proto_hdr_encode(sb->buf, &h);
	c->state = XP_CONN_HELLO;
	return xp_post_send(c, sb, PROTO_HDR_SIZE + h.body_len);
}

static void client_hello_rep(struct xp_conn *c, struct xp_rbuf *rb, size_t len)
{
	struct proto_hello_rep m;
	struct proto_hdr h;
	uint8_t mac[PROTO_MAC_SIZE];
	uint8_t *body = (uint8_t *)rb->buf + PROTO_HDR_SIZE;

	if (proto_hdr_decode(rb->buf, len, &h) || h.type != PROTO_HELLO_REP ||
	    proto_hello_rep_decode(body, h.body_len, &m)) {
		xp_conn_fail(c, -EPROTO, "bad handshake reply");
		return;
	}
	hello_mac(c, "hello_rep", true, body, PROTO_HELLO_REP_SIZE, HELLO_REP_MAC_OFF,
		  body + PROTO_HELLO_REP_SIZE, m.app_len, mac);
	if (!auth_mac_equal(mac, m.mac)) {
		xp_conn_fail(c, -EKEYREJECTED,
			     "the handshake reply is not authenticated");
		return;
	}
	if (c->hello && c->hello->rep) {
		size_t n = m.app_len < c->hello->rep_max ? m.app_len : c->hello->rep_max;

		memcpy(c->hello->rep, body + PROTO_HELLO_REP_SIZE, n);
		c->hello->rep_len = n;
	}
	if (m.status) {
		xp_conn_fail(c, m.status, "the server refused the connection");
		return;
	}
	c->peer_id = m.conn_id;
	c->peer_fast = m.fast;
	c->peer_recv_size = m.recv_size;
	c->credits = m.credits;
	/* The server sized its reply buffers for this many of our requests. */
	if (m.max_requests < c->max_req)
		c->max_req = m.max_requests;
	c->peer_slots = calloc(m.fast.slot_count, sizeof(uint32_t));
	if (!c->peer_slots) {
		xp_conn_fail(c, -ENOMEM, "no memory for fast slots");
		return;
	}
	for (uint32_t i = 0; i < m.fast.slot_count; i++)
		c->peer_slots[i] = m.fast.slot_count - 1 - i;
	c->npeer_slots = m.fast.slot_count;
	c->state = XP_CONN_UP;
	xp_conn_mark(&c->last_active_ns);
	xp_post_recv(c, rb);
}

/* The server's accept: its proof of the key over both nonces. */
static void client_connected(struct xp_conn *c, const void *data, size_t len)
{
	struct proto_cm_acc m;
	uint8_t mac[PROTO_MAC_SIZE];

	if (proto_cm_acc_decode(data, len, &m) || m.version != PROTO_VERSION) {
		xp_conn_fail(c, -EPROTO, "the server speaks another protocol");
		return;
	}
	memcpy(c->snonce, m.nonce, PROTO_NONCE_SIZE);
	auth_mac(&c->fab->key, "accept", c->cnonce, PROTO_NONCE_SIZE, c->snonce,
		 PROTO_NONCE_SIZE, NULL, 0, mac);
	if (!auth_mac_equal(mac, m.mac)) {
		xp_conn_fail(
			c, -EKEYREJECTED,
			"the server could not prove it holds the cluster key (not a server of this cluster)");
		return;
	}
	client_send_hello(c);
}

/* The server refused the connection request: its reject data says why. */
static const char *refusal_reason(int status)
{
	switch (status) {
	case -EKEYREJECTED:
		return "the server did not accept our cluster key (is key_file the cluster's?)";
	case -ETIME:
		return "our clock and the server's differ by more than auth_window_s";
	case -EALREADY:
		return "the server saw this connection request before (a replay)";
	case -EPROTONOSUPPORT:
		return "the server speaks another protocol version";
	case -EUSERS:
		return "the server has as many connections as it allows (max_conns)";
	default:
		return "the server refused the connection";
	}
}

/* verbs: the connection manager's own reason for a refusal without rpfs's
 * reject data (the InfiniBand CM's reject reasons, which rdma_cm passes on
 * for RoCE too). Names the ones that tell an operator something. */
static const char *cm_reason(int prov_errno)
{
	switch (-prov_errno) {
	case 8:
		return "nothing listens at that address and port";
	case 10:
		return "the peer still holds an earlier connection with these ids (stale)";
	case 3:
		return "the peer's connection manager has no resources";
	case 28:
		return "refused by the peer's program";
	default:
		return "the connection manager refused it";
	}
}

static void conn_rejected(struct xp_conn *c, int prov_errno, const void *data, size_t len)
{
	struct proto_cm_rej m;
	char why[160];

	if (!proto_cm_rej_decode(data, len, &m)) {
		xp_conn_fail(c, m.status, refusal_reason(m.status));
		return;
	}
	/* No reason given: a peer that is not an rpfs server, or one that
	 * does not listen. verbs says which, in its reject reason. */
	if (prov_errno && !c->fab->sw_rma) {
		snprintf(why, sizeof(why),
			 "connection refused or unreachable (%s: reject reason %d)",
			 cm_reason(prov_errno), -prov_errno);
		xp_conn_fail(c, -ECONNREFUSED, why);
		return;
	}
	xp_conn_fail(c, -ECONNREFUSED, "connection refused or unreachable");
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

/* Nothing of the owner's is in flight on c any more (or it broke). */
static bool conn_quiet(void *arg)
{
	const struct xp_conn *c = arg;

	return (!c->inflight && !c->waitq) || c->state == XP_CONN_BROKEN;
}

static bool connect_settled(void *arg)
{
	const struct xp_conn *c = arg;

	return c->state == XP_CONN_UP || c->state == XP_CONN_BROKEN;
}

int xp_connect(struct xp_fabric *fab, const char *host, const char *port,
	       struct xp_hello *hello, struct xp_conn **out, char *why, size_t whylen)
{
	uint8_t cm[PROTO_CM_REQ_SIZE];
	struct proto_cm_req m = {.magic = PROTO_MAGIC, .version = PROTO_VERSION};
	struct fi_info *info = NULL;
	struct fid_ep *ep = NULL;
	struct xp_conn *c = NULL;
	char msg[320] = "";
	size_t have = 0;
	int ret;

	if (hello && hello->len > XP_HELLO_MAX)
		return -E2BIG;
	if (hello)
		hello->rep_len = 0;
	xp_lock_quiet(fab);
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
	c->hello = hello;
	c->in_connect = true;
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
	/* Our proof of the key, checked before the server allocates anything. */
	auth_random(c->cnonce, sizeof(c->cnonce));
	memcpy(m.nonce, c->cnonce, sizeof(m.nonce));
	m.time_s = (uint64_t)time(NULL);
	proto_cm_req_encode(cm, &m);
	auth_mac(&fab->key, "connreq", cm, PROTO_CM_REQ_MAC_OFF, NULL, 0, NULL, 0, m.mac);
	proto_cm_req_encode(cm, &m);
	if (!cm_data_fits(ep, sizeof(cm), &have)) {
		ret = -EMSGSIZE;
		snprintf(
			msg, sizeof(msg),
			"provider %s carries %zu bytes of connection data, rpfs needs %zu",
			fab->params.provider, have, sizeof(cm));
		goto fail;
	}
	ret = xp_errno(fi_connect(ep, info->dest_addr, cm, sizeof(cm)));
	if (ret) {
		snprintf(msg, sizeof(msg), "couldn't connect to %s: %s", c->peer,
			 fi_strerror(-ret));
		goto fail;
	}
	xp_unlock(fab);
	if (xp_engine_wait(fab, connect_settled, c,
			   (int64_t)fab->params.timeout_ms * 1000)) {
		xp_lock_quiet(fab);
		xp_conn_fail(c, -ETIMEDOUT, "no answer to the connection request");
	} else {
		xp_lock_quiet(fab);
	}
	if (c->state != XP_CONN_UP) {
		ret = c->error ? c->error : -ECONNREFUSED;
		snprintf(msg, sizeof(msg), "couldn't connect to server %s: %s (%s)",
			 c->peer, c->fail_why[0] ? c->fail_why : "refused",
			 strerror(-ret));
		goto fail;
	}
	c->hello = NULL;
	c->in_connect = false;
	fi_freeinfo(info);
	*out = c;
	xp_unlock(fab);
	return 0;
fail:
	c->hello = NULL;
	/* Also when the engine ended it while we waited: each refused
	 * connect kept its buffers (a heartbeat to a dead server connects
	 * every heartbeat_ms). */
	xp_conn_let_go(c, ret, "connection setup failed");
	c->in_connect = false;
out:
	if (info)
		fi_freeinfo(info);
	if (why && whylen)
		snprintf(why, whylen, "%s", msg);
	if (msg[0])
		log_dbg("%s", msg);
	xp_unlock(fab);
	if (c)
		xp_progress(fab, 0); /* let the engine end and free it */
	return ret;
}

void xp_conn_close(struct xp_conn *c)
{
	struct xp_fabric *fab;

	if (!c)
		return;
	fab = c->fab;
	/* Let calls in flight finish; they are bounded by the timeout. */
	xp_engine_wait(fab, conn_quiet, c, -1);
	xp_lock_quiet(fab);
	xp_conn_let_go(c, -ECONNABORTED, "closed");
	xp_unlock(fab);
	xp_progress(fab, 0);
}

void xp_conn_abort(struct xp_conn *c, int err, const char *why)
{
	struct xp_fabric *fab;
	uint64_t one = 1;

	if (!c)
		return;
	fab = c->fab;
	xp_lock_quiet(fab);
	xp_conn_fail(c, err, why);
	xp_unlock(fab);
	/* the engine ends its calls: wake whoever sleeps in it */
	if (write(fab->post_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("couldn't wake progress: %s", strerror(errno));
}

int xp_conn_error(struct xp_conn *c)
{
	return c->state == XP_CONN_BROKEN ? (c->error ? c->error : -ENOTCONN) : 0;
}

int64_t xp_conn_idle_ms(struct xp_conn *c)
{
	/* Without the lock: a post asks this, and the progress thread holds
	 * the lock for as long as the node keeps it from a CPU mid-round. */
	int64_t active = __atomic_load_n(&c->last_active_ns, __ATOMIC_RELAXED);
	int64_t reply = __atomic_load_n(&c->last_reply_ns, __ATOMIC_RELAXED);

	return (xp_now_ns() - (active > reply ? active : reply)) / 1000000;
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

	xp_lock_quiet(fab);
	fab->handler = handler;
	fab->handler_arg = arg;
	if (!fab->replay) {
		/* Nonces of a window's worth of connection requests; a burst of a
		 * few per client and server of a large job fits. */
		ret = auth_replay_create(1u << 20, fab->params.auth_window_s,
					 &fab->replay);
		if (ret)
			goto out;
	}
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
	xp_unlock(fab);
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

void xp_set_hello_handler(struct xp_fabric *fab, xp_hello_fn fn, void *arg)
{
	fab->hello_fn = fn;
	fab->hello_arg = arg;
}

void xp_conn_set_ctx(struct xp_conn *c, void *ctx, void (*free_ctx)(void *ctx))
{
	c->ctx = ctx;
	c->free_ctx = free_ctx;
}

void *xp_conn_ctx(const struct xp_conn *c)
{
	return c->ctx;
}

/* "host:port" of the peer that sent a connection request (the provider
 * puts its address in dest_addr), for the log: an operator must be able to
 * tell which client was refused. */
static void connreq_peer(const struct fi_info *info, char *buf, size_t len)
{
	const struct sockaddr *sa = info ? info->dest_addr : NULL;
	char host[INET6_ADDRSTRLEN] = "";
	int port = -1;

	if (sa && sa->sa_family == AF_INET &&
	    info->dest_addrlen >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (sa && sa->sa_family == AF_INET6 &&
		   info->dest_addrlen >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
	}
	if (host[0])
		snprintf(buf, len, "%s:%d", host, port);
	else
		snprintf(buf, len, "an unknown address");
}

/* Refuse a connection request, telling the client why (reject data). */
static void server_reject(struct xp_fabric *fab, struct fi_info *info, int status,
			  const char *why)
{
	uint8_t buf[PROTO_CM_REJ_SIZE];
	struct proto_cm_rej m = {PROTO_MAGIC, PROTO_VERSION, status};
	char peer[INET6_ADDRSTRLEN + 8];

	fab->stats.conn_refused++;
	connreq_peer(info, peer, sizeof(peer));
	log_warn("refused a connection request from %s: %s", peer, why);
	proto_cm_rej_encode(buf, &m);
	fi_reject(fab->pep, info->handle, buf, sizeof(buf));
}

/* Everything about a request that can be checked before anything is
 * allocated for it: who sent it (the key), when (the window), whether it was
 * seen before, and whether there is room. Returns 0 or the status to reject
 * with, and a reason for the log. */
static int check_connreq(struct xp_fabric *fab, const struct fi_eq_cm_entry *e,
			 size_t len, struct proto_cm_req *m, const char **why)
{
	uint8_t mac[PROTO_MAC_SIZE];
	int ret;

	if (len < sizeof(*e) || proto_cm_req_decode(e->data, len - sizeof(*e), m)) {
		*why = "not an rpfs client";
		return -EPROTO;
	}
	if (m->version != PROTO_VERSION) {
		*why = "the client speaks another protocol version";
		return -EPROTONOSUPPORT;
	}
	auth_mac(&fab->key, "connreq", e->data, PROTO_CM_REQ_MAC_OFF, NULL, 0, NULL, 0,
		 mac);
	if (!auth_mac_equal(mac, m->mac)) {
		*why = "the client does not hold the cluster key";
		return -EKEYREJECTED;
	}
	if (fab->nlive >= fab->params.max_conns) {
		*why = "as many connections as max_conns";
		return -EUSERS;
	}
	ret = auth_replay_check(fab->replay, m->nonce, (int64_t)m->time_s,
				(int64_t)time(NULL));
	if (ret == -ETIME)
		*why = "the client's clock is outside auth_window_s of ours";
	else if (ret == -EALREADY)
		*why = "a replayed connection request";
	else if (ret)
		*why = "too many recent connection requests";
	return ret == -ENOSPC ? -EUSERS : ret;
}

static void server_connreq(struct xp_fabric *fab, struct fi_eq_cm_entry *e, size_t len)
{
	uint8_t cm[PROTO_CM_ACC_SIZE];
	struct proto_cm_req req;
	struct proto_cm_acc acc = {.magic = PROTO_MAGIC, .version = PROTO_VERSION};
	struct xp_conn *c = NULL;
	struct fid_ep *ep = NULL;
	const char *why = "";
	size_t have = 0;
	int ret;

	ret = check_connreq(fab, e, len, &req, &why);
	if (ret) {
		server_reject(fab, e->info, ret, why);
		return;
	}
	ret = xp_errno(fi_endpoint(fab->domain, e->info, &ep, NULL));
	if (ret) {
		server_reject(fab, e->info, ret, "couldn't create an endpoint");
		return;
	}
	ret = xp_conn_alloc(fab, ep, &c);
	if (ret) {
		fi_close(&ep->fid);
		server_reject(fab, e->info, -EUSERS, "too many connections");
		return;
	}
	ep->fid.context = c;
	connreq_peer(e->info, c->peer, sizeof(c->peer)); /* for later failures */
	memcpy(c->cnonce, req.nonce, PROTO_NONCE_SIZE);
	c->connect_deadline = xp_now_ns() + (int64_t)fab->params.handshake_ms * 1000000;
	ret = conn_bind(c);
	if (!ret)
		ret = xp_conn_setup_recv(c, fab->params.credits);
	if (!ret)
		ret = post_all_recvs(c);
	if (!ret) {
		auth_random(c->snonce, sizeof(c->snonce));
		memcpy(acc.nonce, c->snonce, PROTO_NONCE_SIZE);
		auth_mac(&fab->key, "accept", c->cnonce, PROTO_NONCE_SIZE, c->snonce,
			 PROTO_NONCE_SIZE, NULL, 0, acc.mac);
		proto_cm_acc_encode(cm, &acc);
		ret = cm_data_fits(ep, sizeof(cm), &have)
			      ? xp_errno(fi_accept(ep, cm, sizeof(cm)))
			      : -EMSGSIZE;
	}
	if (ret) {
		c->closing = true;
		xp_conn_fail(c, ret, "couldn't accept the connection");
	}
}

/* Send the HELLO_REP: our geometry (on success), the application's answer
 * and the MAC over all of it. */
static int server_send_hello_rep(struct xp_conn *c, int status, const void *app,
				 size_t app_len)
{
	struct proto_hello_rep rep = {0};
	struct proto_hdr h = {0};
	struct xp_sbuf *sb = xp_sbuf_get(c);
	uint8_t *body;

	if (!sb)
		return -ENOBUFS;
	body = (uint8_t *)sb->buf + PROTO_HDR_SIZE;
	rep.status = status;
	rep.conn_id = c->id;
	rep.credits = c->nrecv;
	rep.recv_size = (uint32_t)c->recv_size;
	rep.max_requests = c->max_req;
	rep.app_len = (uint32_t)app_len;
	fill_fastbuf(c, &rep.fast);
	proto_hello_rep_encode(body, &rep);
	if (app_len)
		memcpy(body + PROTO_HELLO_REP_SIZE, app, app_len);
	hello_mac(c, "hello_rep", true, body, PROTO_HELLO_REP_SIZE, HELLO_REP_MAC_OFF,
		  body + PROTO_HELLO_REP_SIZE, app_len, body + HELLO_REP_MAC_OFF);
	h.type = PROTO_HELLO_REP;
	h.body_len = (uint32_t)(PROTO_HELLO_REP_SIZE + app_len);
	h.data_off = (uint16_t)(PROTO_HDR_SIZE + h.body_len);
	proto_hdr_encode(sb->buf, &h);
	return xp_post_send(c, sb, PROTO_HDR_SIZE + h.body_len);
}

static void server_hello(struct xp_conn *c, struct xp_rbuf *rb, size_t len)
{
	uint8_t app_rep[XP_HELLO_MAX];
	struct xp_fabric *fab = c->fab;
	struct proto_hello m;
	struct proto_hdr h;
	uint8_t mac[PROTO_MAC_SIZE];
	uint8_t *body = (uint8_t *)rb->buf + PROTO_HDR_SIZE;
	size_t app_rep_len = 0;
	int ret, status = 0;

	if (proto_hdr_decode(rb->buf, len, &h) || h.type != PROTO_HELLO ||
	    proto_hello_decode(body, h.body_len, &m) || m.conn_id >= XP_MAX_CONNS) {
		xp_conn_fail(c, -EPROTO, "bad handshake");
		return;
	}
	hello_mac(c, "hello", false, body, PROTO_HELLO_SIZE, HELLO_MAC_OFF,
		  body + PROTO_HELLO_SIZE, m.app_len, mac);
	if (!auth_mac_equal(mac, m.mac)) {
		xp_conn_fail(c, -EKEYREJECTED, "the client's hello is not authenticated");
		return;
	}
	c->peer_id = m.conn_id;
	c->peer_fast = m.fast;
	c->peer_recv_size = m.recv_size;
	/* Reply buffers for as many requests as we allow, not as the client
	 * claims: what a peer costs is ours to bound. */
	c->max_req = m.max_requests < fab->params.credits ? m.max_requests
							  : fab->params.credits;
	ret = xp_conn_setup_send(c, c->max_req + XP_CTRL_RECVS);
	if (ret) {
		xp_conn_fail(c, ret, "no memory for send buffers");
		return;
	}
	if (fab->hello_fn)
		status = fab->hello_fn(c, body + PROTO_HELLO_SIZE, m.app_len, app_rep,
				       sizeof(app_rep), &app_rep_len, fab->hello_arg);
	if (status > 0 || app_rep_len > sizeof(app_rep))
		status = -EINVAL, app_rep_len = 0;
	if (xp_post_recv(c, rb))
		return;
	if (status) {
		/* Answer, then close once the answer is out (xp_send_done). */
		c->refused = true;
		c->connect_deadline =
			xp_now_ns() + (int64_t)fab->params.handshake_ms * 1000000;
		if (server_send_hello_rep(c, status, app_rep, app_rep_len))
			xp_conn_fail(c, status, "refused the client's hello");
		return;
	}
	c->hello_done = true;
	c->state = XP_CONN_UP;
	c->granted = c->nrecv;
	c->peer_credits = c->nrecv;
	xp_conn_mark(&c->last_active_ns);
	if (server_send_hello_rep(c, 0, app_rep, app_rep_len))
		return;
	/* The application hears of it from the engine, without the lock. */
	c->ev_up.kind = XP_CB_CONN;
	c->ev_up.a = c;
	c->ev_up.st = 1;
	c->events_pending++;
	xp_defer(fab, &c->ev_up);
}

/* ---- connection events (both sides) ------------------------------------ */

static void hs_event(struct xp_fabric *fab, uint32_t event, struct fi_eq_cm_entry *e,
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
			client_connected(c, len > sizeof(*e) ? e->data : NULL,
					 len > sizeof(*e) ? len - sizeof(*e) : 0);
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

static void hs_error(struct xp_conn *c, int err, int prov_errno, const void *data,
		     size_t len)
{
	/* A refusal may say why in its reject data. */
	if (c->state == XP_CONN_CONNECTING && (err == -ECONNREFUSED || len))
		conn_rejected(c, prov_errno, data, len);
	else
		xp_conn_fail(c, err, "connection error");
}

/* A message before the handshake is done: the HELLO (server) or its
 * answer (client); anything else there is a protocol error. */
static void hs_recv(struct xp_conn *c, struct xp_rbuf *rb, size_t len)
{
	if (c->fab->role == XP_SERVER && !c->hello_done && !c->refused)
		server_hello(c, rb, len);
	else if (c->fab->role == XP_CLIENT && c->state == XP_CONN_HELLO)
		client_hello_rep(c, rb, len);
	else
		xp_conn_fail(c, -EPROTO, "a message before the handshake is done");
}

static bool hs_expired(struct xp_conn *c, int64_t now)
{
	return c->fab->role == XP_SERVER && c->connect_deadline &&
	       now > c->connect_deadline;
}

const struct xp_hs_ops xp_hs_ops = {
	.event = hs_event,
	.error = hs_error,
	.recv = hs_recv,
	.expired = hs_expired,
};
