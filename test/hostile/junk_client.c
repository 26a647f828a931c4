/* junk_client: a hostile member of an rpfs cluster, over real connections.
 *
 * It holds the cluster key, so it passes authentication the way rpfs's own
 * client does (common/xport_conn.c): a connection request with a fresh
 * nonce, the time and a MAC; the accept's MAC checked; a HELLO with its MAC
 * over both nonces and the file service's hello (common/hello.h) as
 * application data. Then it behaves like a compromised or broken client:
 * it sends messages of every shape the server must survive, on libfabric
 * directly (the same endpoint type, caps and memory registration as rpfs),
 * a few connections at a time to every server of the config:
 *
 *   benign, answered     PING; random and mutated RPC bodies (every op, list
 *                        I/O with random segment lists); inline, fast and
 *                        bulk requests with data
 *   junk, connection     corrupted headers; messages shorter than a header;
 *   closes               lengths, data or descriptors past the end; absurd
 *                        descriptor counts, descriptors that do not add up,
 *                        wrap, or name memory with a wrong key; fast-write
 *                        immediates naming other connections or slots out
 *                        of range; more requests than credits; acks never
 *                        sent; replies, HELLOs and credit messages where a
 *                        request belongs; messages longer than the server's
 *                        receive buffers; RMA writes outside the server's
 *                        fast buffer
 *   junk handshakes      connection requests with a wrong MAC, a replayed
 *                        nonce, a stale time, garbage; HELLOs with a wrong
 *                        MAC, impossible geometry, junk application data,
 *                        or a request in place of the HELLO
 *
 * It runs in bursts; after each burst it runs a check command (-C: a
 * normal client that must still be served correctly) and stops with exit 1
 * when the check fails. It ends with counts of what it sent and what came
 * back.
 *
 * With -X it runs one probe instead: connection A fast-writes a request
 * into a slot of the server and gets its reply, then connection B sends an
 * RDMA write whose immediate names A's connection and that slot. A server
 * that tells the writer's connection apart ignores or refuses it; one that
 * trusts the immediate serves A's old request again, and A gets a second
 * reply (on tcp, where the completion does not say which connection wrote).
 *
 * Usage: junk_client -c CONFIG [-t SECONDS] [-b BURST_MS] [-S SEED]
 *                    [-C CHECK_COMMAND] [-n CONNS] [-v] [-X]
 *   -t  run time (default 20 s)       -b  burst length (default 2000 ms)
 *   -n  connections at a time (4)     -v  name surprises (-vv: closes too)
 * Exit: 0 every check passed (-X: no second reply), 1 a check failed (-X:
 * A was served twice), 2 setup error. */
#define _GNU_SOURCE
#include <errno.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "config.h"
#include "hello.h"
#include "mraddr.h"
#include "params.h"
#include "proto.h"
#include "rpc.h"

/* Our side of a connection: small, so a few fit in little memory. The
 * geometry we announce bounds what the server sends us. */
#define NRECV	      12
#define MAXREQ	      8
#define RECV_SIZE     8192
#define NFAST	      4
#define FAST_SLOT     8192
#define NSEND	      4
#define SEND_SIZE     (80 * 1024)
#define BULK_SIZE     (64 * 1024)
#define MAX_CONNS     8
#define IMM_SLOT_BITS 12

enum shape {
	/* answered */
	SH_PING,
	SH_RPC_RANDOM,
	SH_RPC_IO,
	SH_FAST_WRITE,
	SH_FAST_READ,
	SH_BULK,
	/* junk on a connection */
	SH_BAD_HEADER,
	SH_SHORT,
	SH_PAST_END,
	SH_ABSURD_DESC,
	SH_BAD_DESC,
	SH_IMM_OTHER_CONN,
	SH_IMM_BAD_SLOT,
	SH_CREDIT_OVERFLOW,
	SH_BAD_ACKS,
	SH_WRONG_TYPE,
	SH_OVERSIZE,
	SH_RMA_OUTSIDE,
	/* junk handshakes */
	SH_CM_BAD_MAC,
	SH_CM_REPLAY,
	SH_CM_STALE,
	SH_CM_GARBAGE,
	SH_HELLO_BAD_MAC,
	SH_HELLO_BAD_GEOMETRY,
	SH_HELLO_JUNK_APP,
	SH_HELLO_NOT_HELLO,
	SH_COUNT
};

#define FIRST_JUNK  SH_BAD_HEADER
#define FIRST_CM    SH_CM_BAD_MAC
#define FIRST_HELLO SH_HELLO_BAD_MAC

static const char *const shape_names[SH_COUNT] = {
	"ping",		  "rpc-random",	     "rpc-io",
	"fast-write",	  "fast-read",	     "bulk",
	"bad-header",	  "short",	     "past-end",
	"absurd-desc",	  "bad-desc",	     "imm-other-conn",
	"imm-bad-slot",	  "credit-overflow", "bad-acks",
	"wrong-type",	  "oversize",	     "rma-outside",
	"cm-bad-mac",	  "cm-replay",	     "cm-stale",
	"cm-garbage",	  "hello-bad-mac",   "hello-bad-geometry",
	"hello-junk-app", "hello-not-hello",
};

enum op_kind { OP_RECV, OP_SEND };

struct jconn;

struct jop {
	struct fi_context2 ctx; /* first: libfabric's context */
	enum op_kind kind;
	struct jconn *c;
	uint32_t gen; /* the connection's generation when posted */
	int idx;
};

enum jstate { J_IDLE, J_CONNECTING, J_HELLO, J_UP, J_CLOSED };

struct jconn {
	int id; /* index in the pool: the conn_id we announce */
	uint32_t gen;
	enum jstate state;
	struct fid_ep *ep;
	int srv; /* config index of the server */
	uint8_t cnonce[PROTO_NONCE_SIZE], snonce[PROTO_NONCE_SIZE];
	/* one registered region: receives | fast slots | send buffers | bulk */
	char *mem;
	size_t mem_len;
	struct fid_mr *mr;
	void *desc;
	uint64_t key;
	char *rbuf[NRECV], *fast, *sbuf[NSEND], *bulk;
	struct jop rop[NRECV], sop[NSEND];
	bool sbusy[NSEND];
	/* the server's side, from its HELLO_REP */
	uint32_t peer_id, credits, acks, peer_recv_size, max_req;
	struct proto_fastbuf peer_fast;
	uint8_t *peer_slot_busy;
	uint32_t tag;
	int outstanding;
	bool junk_sent; /* a junk message went: the server should close */
	bool shut;	/* the server closed (shutdown or flushed receives) */
	int hello_status;
	bool hello_rep;
};

struct stats {
	unsigned long sent[SH_COUNT], closed[SH_COUNT], junk_tries[SH_COUNT];
	unsigned long messages, replies, rep_ok, rep_eproto, rep_other;
	unsigned long credit_msgs, conns, accepted, rejected, refused_hello;
	unsigned long closed_after_junk, open_after_junk, bursts, checks;
	unsigned long unexpected;
};

static struct {
	struct rpfs_config cfg;
	struct auth_key key;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	bool virt_addr;
	struct jconn conns[MAX_CONNS];
	uint8_t replay[PROTO_CM_REQ_SIZE]; /* a request a server accepted */
	int replay_srv;			   /* which: the replay guard is per server */
	bool have_replay;
	struct stats st;
	int verbose;
	uint64_t rng;
} J;

/* ---- small helpers -------------------------------------------------------- */

/* Something a correct server would not do; counted, and named with -v. */
static void surprise(const char *what)
{
	J.st.unexpected++;
	if (J.verbose)
		fprintf(stderr, "junk_client: surprise: %s\n", what);
}

static uint64_t rnd64(void)
{
	/* xorshift64* */
	J.rng ^= J.rng >> 12;
	J.rng ^= J.rng << 25;
	J.rng ^= J.rng >> 27;
	return J.rng * 0x2545F4914F6CDD1DULL;
}

static uint32_t rnd(uint32_t n)
{
	return n ? (uint32_t)(rnd64() >> 32) % n : 0;
}

static void rnd_bytes(void *p, size_t n)
{
	uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(rnd64() >> 56);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct fi_info *hints(const char *prov)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->caps = FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	h->ep_attr->type = FI_EP_MSG;
	h->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
	h->domain_attr->mr_mode =
		FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_SAW;
	if (prov && *prov)
		h->fabric_attr->prov_name = strdup(prov);
	return h;
}

/* ---- completions and events ----------------------------------------------- */

static void conn_shut(struct jconn *c)
{
	if (!c->shut && c->state != J_IDLE)
		if (J.verbose > 1)
			fprintf(stderr, "conn %d: closed by the server\n", c->id);
	c->shut = true;
}

static void repost(struct jconn *c, int i);

/* A message from the server arrived in buf (len bytes). */
static void on_message(struct jconn *c, const char *buf, size_t len)
{
	struct proto_hdr h;

	if (c->state == J_HELLO) {
		struct proto_hello_rep m;
		uint8_t nonces[2 * PROTO_NONCE_SIZE], fixed[PROTO_HELLO_REP_SIZE];
		uint8_t mac[PROTO_MAC_SIZE];

		if (proto_hdr_decode(buf, len, &h) || h.type != PROTO_HELLO_REP ||
		    proto_hello_rep_decode(buf + PROTO_HDR_SIZE, h.body_len, &m)) {
			surprise("a HELLO_REP that does not decode");
			c->hello_status = -EPROTO;
			c->hello_rep = true;
			return;
		}
		memcpy(nonces, c->snonce, PROTO_NONCE_SIZE);
		memcpy(nonces + PROTO_NONCE_SIZE, c->cnonce, PROTO_NONCE_SIZE);
		memcpy(fixed, buf + PROTO_HDR_SIZE, sizeof(fixed));
		memset(fixed + 48, 0, PROTO_MAC_SIZE);
		auth_mac(&J.key, "hello_rep", nonces, sizeof(nonces), fixed,
			 sizeof(fixed), buf + PROTO_HDR_SIZE + PROTO_HELLO_REP_SIZE,
			 m.app_len, mac);
		if (!auth_mac_equal(mac, m.mac))
			surprise("a HELLO_REP with a wrong MAC");
		c->hello_status = m.status;
		c->hello_rep = true;
		if (m.status)
			return;
		c->peer_id = m.conn_id;
		c->credits = m.credits;
		c->peer_recv_size = m.recv_size;
		c->max_req = m.max_requests < MAXREQ ? m.max_requests : MAXREQ;
		c->peer_fast = m.fast;
		free(c->peer_slot_busy);
		c->peer_slot_busy = calloc(m.fast.slot_count, 1);
		return;
	}
	if (proto_hdr_decode(buf, len, &h)) {
		surprise("a message that does not decode");
		return;
	}
	if (h.type == PROTO_CREDIT) {
		c->credits += h.credits;
		c->acks++;
		J.st.credit_msgs++;
		return;
	}
	if (h.type != PROTO_REP) {
		surprise("a message that is neither reply nor credit");
		return;
	}
	J.st.replies++;
	if (!h.status)
		J.st.rep_ok++;
	else if (h.status == -EPROTO)
		J.st.rep_eproto++;
	else
		J.st.rep_other++;
	c->credits += h.credits;
	if (c->outstanding)
		c->outstanding--;
	if (h.path == XP_PATH_FAST && h.dir == PROTO_DIR_WRITE && c->peer_slot_busy &&
	    h.slot < c->peer_fast.slot_count)
		c->peer_slot_busy[h.slot] = 0;
}

static void on_completion(const struct fi_cq_data_entry *e)
{
	struct jop *op = e->op_context;

	if (e->flags & FI_REMOTE_CQ_DATA) {
		/* A fast reply landed in one of our slots (tcp: consumes no
		 * receive, verbs: one of ours). */
		uint32_t id = (uint32_t)(e->data >> IMM_SLOT_BITS);
		uint32_t slot = (uint32_t)(e->data & ((1u << IMM_SLOT_BITS) - 1));
		struct jconn *c = id < MAX_CONNS ? &J.conns[id] : NULL;

		if (c && c->state == J_UP && slot < NFAST)
			on_message(c, c->fast + (size_t)slot * FAST_SLOT, FAST_SLOT);
		else
			surprise("a fast reply for no open connection of ours");
		if (op && op->kind == OP_RECV && op->gen == op->c->gen)
			repost(op->c, op->idx);
		return;
	}
	if (!op || op->gen != op->c->gen)
		return; /* an earlier connection of this slot */
	if (op->kind == OP_SEND) {
		op->c->sbusy[op->idx] = false;
		return;
	}
	on_message(op->c, op->c->rbuf[op->idx], e->len);
	repost(op->c, op->idx);
}

static void on_cq_error(void)
{
	struct fi_cq_err_entry err = {0};
	struct jop *op;

	if (fi_cq_readerr(J.cq, &err, 0) != 1)
		return;
	op = err.op_context;
	if (!op || op->gen != op->c->gen)
		return;
	if (op->kind == OP_SEND)
		op->c->sbusy[op->idx] = false;
	/* A receive flushed or a send refused: the connection is gone. */
	conn_shut(op->c);
}

static struct jconn *conn_of_fid(fid_t fid)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (J.conns[i].ep && fid == &J.conns[i].ep->fid)
			return &J.conns[i];
	return NULL;
}

static void on_connected(struct jconn *c, const void *data, size_t len)
{
	struct proto_cm_acc acc;
	uint8_t mac[PROTO_MAC_SIZE];

	if (proto_cm_acc_decode(data, len, &acc)) {
		surprise("an accept that does not decode");
		c->state = J_CLOSED;
		return;
	}
	memcpy(c->snonce, acc.nonce, PROTO_NONCE_SIZE);
	auth_mac(&J.key, "accept", c->cnonce, PROTO_NONCE_SIZE, c->snonce,
		 PROTO_NONCE_SIZE, NULL, 0, mac);
	if (!auth_mac_equal(mac, acc.mac))
		surprise("an accept with a wrong MAC");
	c->state = J_HELLO;
}

static void poll_eq(void)
{
	struct {
		struct fi_eq_cm_entry e;
		uint8_t data[256];
	} buf;
	uint32_t event;
	ssize_t n;

	while ((n = fi_eq_read(J.eq, &event, &buf, sizeof(buf), 0)) != -FI_EAGAIN) {
		struct jconn *c;

		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry err = {0};

			if (fi_eq_readerr(J.eq, &err, 0) > 0 &&
			    (c = conn_of_fid(err.fid))) {
				if (c->state == J_CONNECTING)
					c->state = J_CLOSED; /* rejected */
				conn_shut(c);
			}
			continue;
		}
		if (n < 0)
			return;
		c = conn_of_fid(buf.e.fid);
		if (!c)
			continue;
		if (event == FI_CONNECTED && c->state == J_CONNECTING)
			on_connected(c, buf.data, (size_t)n - sizeof(buf.e));
		else if (event == FI_SHUTDOWN)
			conn_shut(c);
	}
}

static void progress(void)
{
	struct fi_cq_data_entry e[16];
	ssize_t n;

	while ((n = fi_cq_read(J.cq, e, 16)) != -FI_EAGAIN) {
		if (n == -FI_EAVAIL) {
			on_cq_error();
			continue;
		}
		if (n < 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			on_completion(&e[i]);
	}
	poll_eq();
}

/* Progress until done(c) or ms pass; returns done(c). */
static bool wait_for(struct jconn *c, bool (*done)(struct jconn *), int ms)
{
	int64_t end = now_ms() + ms;

	while (!done(c) && now_ms() < end) {
		progress();
		if (!done(c))
			usleep(200);
	}
	return done(c);
}

static bool is_not_connecting(struct jconn *c)
{
	return c->state != J_CONNECTING;
}

static bool has_hello_rep(struct jconn *c)
{
	return c->hello_rep || c->shut;
}

static bool is_shut(struct jconn *c)
{
	return c->shut;
}

static bool can_send(struct jconn *c)
{
	return c->shut ||
	       (c->credits > 0 && c->outstanding < (int)c->max_req && !c->sbusy[0]);
}

static bool idle(struct jconn *c)
{
	return c->shut || !c->outstanding;
}

/* ---- sending --------------------------------------------------------------- */

static void repost(struct jconn *c, int i)
{
	int ret;

	if (c->shut || !c->ep)
		return;
	c->rop[i] = (struct jop){.kind = OP_RECV, .c = c, .gen = c->gen, .idx = i};
	do {
		ret = (int)fi_recv(c->ep, c->rbuf[i], RECV_SIZE, c->desc, 0,
				   &c->rop[i].ctx);
		if (ret == -FI_EAGAIN)
			progress();
	} while (ret == -FI_EAGAIN && !c->shut);
}

/* Send buffer 0 carries every message: one at a time keeps the order the
 * junk is meant to arrive in. sh is counted (SH_COUNT: not, for the
 * handshake's own HELLO). Returns 0 or -1 (connection gone). */
static int post_send(struct jconn *c, size_t len, enum shape sh)
{
	int64_t end = now_ms() + 2000;
	int ret;

	while (c->sbusy[0] && !c->shut && now_ms() < end)
		progress();
	if (c->shut || c->sbusy[0])
		return -1;
	c->sop[0] = (struct jop){.kind = OP_SEND, .c = c, .gen = c->gen, .idx = 0};
	c->sbusy[0] = true;
	do {
		ret = (int)fi_send(c->ep, c->sbuf[0], len, c->desc, 0, &c->sop[0].ctx);
		if (ret == -FI_EAGAIN)
			progress();
	} while (ret == -FI_EAGAIN && !c->shut && now_ms() < end);
	if (ret) {
		c->sbusy[0] = false;
		return -1;
	}
	if (sh < SH_COUNT) {
		J.st.sent[sh]++;
		J.st.messages++;
	}
	return 0;
}

/* An RMA write of len bytes from send buffer 0 to the server's fast buffer
 * at offset off, with immediate data imm (or none). */
static int post_write(struct jconn *c, size_t len, uint64_t off, uint64_t key,
		      bool with_imm, uint32_t imm, enum shape sh)
{
	int64_t end = now_ms() + 2000;
	uint64_t addr;
	int ret;

	while (c->sbusy[0] && !c->shut && now_ms() < end)
		progress();
	if (c->shut || c->sbusy[0])
		return -1;
	if (xp_remote_target(c->peer_fast.addr, off, &addr))
		addr = c->peer_fast.addr;
	c->sop[0] = (struct jop){.kind = OP_SEND, .c = c, .gen = c->gen, .idx = 0};
	c->sbusy[0] = true;
	do {
		if (with_imm)
			ret = (int)fi_writedata(c->ep, c->sbuf[0], len, c->desc, imm, 0,
						addr, key, &c->sop[0].ctx);
		else
			ret = (int)fi_write(c->ep, c->sbuf[0], len, c->desc, 0, addr, key,
					    &c->sop[0].ctx);
		if (ret == -FI_EAGAIN)
			progress();
	} while (ret == -FI_EAGAIN && !c->shut && now_ms() < end);
	if (ret) {
		c->sbusy[0] = false;
		return -1;
	}
	J.st.sent[sh]++;
	J.st.messages++;
	return 0;
}

/* A request header for c into buf; the caller fills body, descriptors and
 * data at the offsets the header names. */
static void req_hdr(struct jconn *c, uint8_t *buf, int path, int dir, size_t body_len,
		    uint32_t ndesc, uint64_t data_len, uint32_t slot)
{
	struct proto_hdr h = {0};

	h.type = PROTO_REQ;
	h.path = (uint8_t)path;
	h.dir = (uint8_t)dir;
	h.tag = ++c->tag;
	h.acks = c->acks;
	c->acks = 0;
	h.body_len = (uint32_t)body_len;
	h.ndesc = ndesc;
	h.slot = slot;
	h.data_len = data_len;
	h.data_off =
		(uint16_t)(PROTO_HDR_SIZE + body_len + (size_t)ndesc * PROTO_DESC_SIZE);
	proto_hdr_encode(buf, &h);
}

/* ---- RPC bodies ------------------------------------------------------------ */

/* A handle nobody uses: random, with the owner bits of a metadata server
 * that is unlikely to exist, so junk never lands in a real file. */
static uint64_t junk_handle(void)
{
	return rnd64() | 0x4000000000000000ULL;
}

/* The capability sent with a handle: half the time one a metadata server
 * would grant (a key holder can make it: the key is the line of trust), so
 * junk reaches the I/O and lock code behind the check; else none, random
 * bytes, or a real one with a bit flipped, which must all be refused. */
static const struct rpc_cap *junk_cap(uint64_t handle)
{
	static struct rpc_cap c;

	c.rights = RPC_CAP_READ | RPC_CAP_WRITE;
	c.lifetime_s = 3600;
	c.expiry = (now_ms() + 3600 * 1000) * 1000000;
	auth_cap_mac(&J.key, handle, c.rights, c.lifetime_s, c.expiry, c.mac);
	switch (rnd(8)) {
	case 0:
		return NULL;
	case 1:
		rnd_bytes(&c, sizeof(c));
		break;
	case 2:
		c.mac[rnd(sizeof(c.mac))] ^= (uint8_t)(1u << rnd(8));
		break;
	case 3:
		c.expiry = now_ms() * 1000000 - 1; /* expired */
		auth_cap_mac(&J.key, handle, c.rights, c.lifetime_s, c.expiry, c.mac);
		break;
	default:
		break;
	}
	return &c;
}

static void junk_path(char *p, size_t len)
{
	static const char *const names[] = {"a", "junk", "..", ".", "", "x/y", "zz"};
	int n = snprintf(p, len, "/junk-%u", rnd(1000));

	for (uint32_t k = rnd(4); k && (size_t)n < len - 16; k--)
		n += snprintf(p + n, len - (size_t)n, "/%s", names[rnd(7)]);
}

static uint32_t junk_segs(struct rpc_seg *s, uint32_t max)
{
	uint32_t n = rnd(4) ? rnd(8) : rnd(max + 1);

	for (uint32_t i = 0; i < n; i++) {
		s[i].off = rnd(4) ? rnd(1u << 20) : rnd64();
		s[i].len = rnd(4) ? 1 + rnd(8192) : rnd64();
	}
	return n;
}

/* A body of any op: an encoder's output, then (often) a few bytes changed,
 * truncated or extended. Returns its length. */
static size_t rpc_body(uint8_t *b, size_t cap)
{
	static const uint16_t ops[] = {RPC_PING,
				       RPC_MKDIR,
				       RPC_RMDIR,
				       RPC_CREATE,
				       RPC_LOOKUP,
				       RPC_GETATTR,
				       RPC_SETATTR,
				       RPC_REMOVE,
				       RPC_READDIR,
				       RPC_FETCH_ADD,
				       RPC_LOCK,
				       RPC_UNLOCK,
				       RPC_STATFS_META,
				       RPC_IO_WRITE,
				       RPC_IO_READ,
				       RPC_IO_SIZE,
				       RPC_IO_TRUNCATE,
				       RPC_IO_SYNC,
				       RPC_IO_REMOVE,
				       RPC_IO_STATFS,
				       RPC_IO_CREATE,
				       RPC_IO_PROBE,
				       RPC_SEARCH,
				       RPC_META_HANDLES,
				       RPC_MIRROR_STALE,
				       RPC_MIRROR_FRESH,
				       RPC_MIRROR_REBUILD,
				       RPC_MIRROR_REPAIR,
				       RPC_IO_HEARTBEAT,
				       RPC_IO_RESYNC,
				       RPC_IO_DIGEST,
				       47,
				       0,
				       0xffff};
	static struct rpc_seg segs[512];
	char path[300];
	uint64_t h;
	uint16_t op = ops[rnd(sizeof(ops) / sizeof(ops[0]))];
	int n = -1;

	junk_path(path, sizeof(path));
	switch (op) {
	case RPC_MKDIR:
		n = rpc_enc_mkdir(b, cap, "/junk-d", rnd(01000), rnd(3), rnd(3));
		break;
	case RPC_CREATE:
		n = rpc_enc_create(b, cap, "/junk-f", 0644, 0, 0, 0, rnd64(), rnd(8),
				   (int32_t)rnd(4) - 1);
		break;
	case RPC_RMDIR:
	case RPC_LOOKUP:
	case RPC_REMOVE:
		n = rpc_enc_path_op(b, cap, op, 0, "/junk-r");
		break;
	case RPC_SETATTR:
		n = rpc_enc_setattr(b, cap, "/junk-s", rnd(8), rnd(07777), 0, 0, 1, 2);
		break;
	case RPC_READDIR:
		n = rpc_enc_readdir(b, cap, "/", rnd(2) ? "a" : NULL, rnd(1u << 20));
		break;
	case RPC_FETCH_ADD:
		h = junk_handle();
		n = rpc_enc_fetch_add(b, cap, h, junk_cap(h), (int64_t)rnd64());
		break;
	case RPC_LOCK:
	case RPC_UNLOCK:
		h = junk_handle();
		n = rpc_enc_lock(b, cap, op, (uint16_t)rnd(4), h, junk_cap(h), rnd(100),
				 1 + rnd(100), rnd64());
		break;
	case RPC_IO_WRITE:
	case RPC_IO_READ: {
		uint32_t ns = junk_segs(
			segs, rpc_io_max_segs(cap) < 512 ? rpc_io_max_segs(cap) : 512);

		h = junk_handle();
		n = rpc_enc_io(b, cap, op, h, junk_cap(h), segs, ns);
		if (n < 0) {
			/* invalid segments: write them raw */
			n = rpc_enc_io(b, cap, op, h, junk_cap(h), NULL, 0);
			for (uint32_t i = 0;
			     n > 0 && i < ns && (size_t)n + RPC_SEG_SIZE <= cap; i++) {
				memcpy(b + n, &segs[i], RPC_SEG_SIZE);
				n += RPC_SEG_SIZE;
			}
		}
		break;
	}
	case RPC_GETATTR:
	case RPC_IO_SIZE:
	case RPC_IO_SYNC:
	case RPC_IO_REMOVE:
		h = junk_handle();
		n = rpc_enc_handle_op(b, cap, op, h, junk_cap(h));
		break;
	case RPC_IO_TRUNCATE:
		h = junk_handle();
		/* a forward is the servers' own: a client gets EPERM */
		n = rnd(2) ? rpc_enc_truncate(b, cap, h, junk_cap(h), rnd64())
			   : rpc_enc_truncate_forward(b, cap, h, rnd64(), rnd(8), rnd64(),
						      0);
		break;
	case RPC_MIRROR_STALE: { /* servers only: a client gets EPERM */
		uint32_t sl[1] = {rnd(8)};

		n = rpc_enc_mirror_stale(b, cap, junk_handle(), rnd64(), rnd(8) + 8, sl,
					 1);
		break;
	}
	case RPC_MIRROR_FRESH:
		n = rpc_enc_mirror_fresh(b, cap, 0, junk_handle(), rnd64(), rnd(8),
					 rnd(8) + 8);
		break;
	case RPC_IO_RESYNC: {
		struct rpc_copy t = {rnd(8), rnd(8) + 8, 0};

		n = rpc_enc_io_resync(b, cap, junk_handle(), rnd(8), &t, rnd64() | 1);
		break;
	}
	case RPC_IO_CREATE:
		n = rpc_enc_io_create(b, cap, junk_handle(), rnd64() | 1,
				      (uint32_t)rnd64(), (uint16_t)rnd(2));
		break;
	case RPC_MIRROR_REBUILD:
		n = rpc_enc_mirror_rebuild(b, cap, rnd(70000));
		break;
	case RPC_IO_DIGEST: /* servers only: a client gets EPERM */
		n = rpc_enc_io_digest(b, cap, junk_handle(), rnd(8),
				      rnd(64) * (uint64_t)RPC_DIGEST_UNIT,
				      1 + rnd64() % RPC_DIGEST_SPAN);
		break;
	case RPC_IO_HEARTBEAT: { /* servers only: a client gets EPERM */
		uint32_t down[4] = {rnd(8), rnd(70000), rnd(8), (uint32_t)rnd64()};

		n = rpc_enc_io_heartbeat(b, cap, rnd(8), down, rnd(5));
		break;
	}
	case RPC_MIRROR_REPAIR: { /* any handle, junk capability and slots */
		uint32_t sl = rnd(8);

		h = junk_handle();
		n = rpc_enc_mirror_repair(b, cap, h, junk_cap(h), sl, sl + 1 + rnd(8));
		break;
	}
	case RPC_IO_PROBE:
		n = rpc_enc_io_probe(b, cap, rnd(70000));
		break;
	case RPC_SEARCH: { /* servers only: a client gets EPERM */
		uint32_t groups[RPC_GROUPS_MAX] = {0};

		n = rpc_enc_search(b, cap, path, rnd(8), rnd(3), rnd(3), groups,
				   rnd(RPC_GROUPS_MAX + 1));
		break;
	}
	case RPC_META_HANDLES: { /* servers only: a client gets EPERM */
		uint64_t hs[RPC_HANDLES_MAX];
		uint32_t nh = 1 + rnd(RPC_HANDLES_MAX);

		for (uint32_t k = 0; k < nh; k++)
			hs[k] = junk_handle();
		n = rpc_enc_meta_handles(b, cap, hs, nh);
		break;
	}
	default:
		break;
	}
	if (n < RPC_PREAMBLE) {
		/* an unknown op, or a body that did not fit: raw */
		n = RPC_PREAMBLE + (int)rnd(64);
		rnd_bytes(b, (size_t)n);
		b[0] = (uint8_t)op;
		b[1] = (uint8_t)(op >> 8);
	}
	switch (rnd(4)) {
	case 0: /* a few bytes changed */
		for (uint32_t k = 1 + rnd(4); k; k--)
			b[rnd((uint32_t)n)] = (uint8_t)rnd64();
		break;
	case 1: /* truncated or extended */
		if (rnd(2) && n > 1)
			n = (int)rnd((uint32_t)n);
		else if ((size_t)n + 16 <= cap)
			n += (int)rnd(16);
		break;
	default:
		break;
	}
	return (size_t)n;
}

/* ---- shapes on an open connection ------------------------------------------ */

/* Request on the inline path: dir none, a write with data or a read. */
static int send_inline(struct jconn *c, enum shape sh, bool io)
{
	uint8_t *buf = (uint8_t *)c->sbuf[0];
	size_t room = c->peer_recv_size - PROTO_HDR_SIZE;
	size_t blen, dlen = 0;
	int dir = io ? (int)(1 + rnd(2)) : PROTO_DIR_NONE;

	if (sh == SH_PING) {
		blen = (size_t)rpc_enc_path_op(buf + PROTO_HDR_SIZE, room, RPC_PING, 0,
					       NULL);
		dir = PROTO_DIR_NONE;
	} else {
		blen = rpc_body(buf + PROTO_HDR_SIZE, room > 4096 ? 2048 : room / 2);
	}
	if (dir == PROTO_DIR_WRITE) {
		dlen = rnd(4096);
		if (PROTO_HDR_SIZE + blen + dlen > c->peer_recv_size)
			dlen = 0, dir = PROTO_DIR_NONE;
		rnd_bytes(buf + PROTO_HDR_SIZE + blen, dlen);
		req_hdr(c, buf, XP_PATH_INLINE, dir, blen, 0, dlen, 0);
	} else {
		uint64_t want =
			dir == PROTO_DIR_READ ? rnd(RECV_SIZE - PROTO_HDR_SIZE - 512) : 0;

		req_hdr(c, buf, XP_PATH_INLINE, dir, blen, 0, want, 0);
	}
	if (post_send(c, PROTO_HDR_SIZE + blen + dlen, sh))
		return -1;
	c->credits--;
	c->outstanding++;
	return 0;
}

static int free_peer_slot(struct jconn *c)
{
	for (uint32_t i = 0; i < c->peer_fast.slot_count && c->peer_slot_busy; i++)
		if (!c->peer_slot_busy[i])
			return (int)i;
	return -1;
}

/* A well-formed fast write: header, list I/O body and data RDMA-written
 * into a free slot of the server's fast buffer with the immediate naming
 * our connection and that slot. */
static int send_fast_write(struct jconn *c)
{
	uint8_t *buf = (uint8_t *)c->sbuf[0];
	int slot = free_peer_slot(c);
	size_t blen, dlen, max;

	if (slot < 0)
		return 0;
	blen = rpc_body(buf + PROTO_HDR_SIZE, 1024);
	max = c->peer_fast.slot_size - PROTO_HDR_SIZE - blen;
	dlen = 1 + rnd(max < 65536 ? (uint32_t)max : 65536);
	rnd_bytes(buf + PROTO_HDR_SIZE + blen, dlen);
	req_hdr(c, buf, XP_PATH_FAST, PROTO_DIR_WRITE, blen, 0, dlen, (uint32_t)slot);
	if (post_write(c, PROTO_HDR_SIZE + blen + dlen,
		       (uint64_t)slot * c->peer_fast.slot_size, c->peer_fast.key, true,
		       (c->peer_id << IMM_SLOT_BITS) | (uint32_t)slot, SH_FAST_WRITE))
		return -1;
	c->peer_slot_busy[slot] = 1;
	c->credits--;
	c->outstanding++;
	return 0;
}

/* A fast read: the server answers by RDMA-writing into our slot. */
static int send_fast_read(struct jconn *c)
{
	uint8_t *buf = (uint8_t *)c->sbuf[0];
	size_t blen = rpc_body(buf + PROTO_HDR_SIZE, 1024);

	req_hdr(c, buf, XP_PATH_FAST, PROTO_DIR_READ, blen, 0,
		1 + rnd(FAST_SLOT - PROTO_HDR_SIZE - 512), rnd(NFAST));
	if (post_send(c, PROTO_HDR_SIZE + blen, SH_FAST_READ))
		return -1;
	c->credits--;
	c->outstanding++;
	return 0;
}

/* A bulk request whose descriptors name our bulk region with our key. */
static int send_bulk(struct jconn *c)
{
	uint8_t *buf = (uint8_t *)c->sbuf[0];
	size_t blen = rpc_body(buf + PROTO_HDR_SIZE, 1024);
	uint32_t nd = 1 + rnd(8);
	uint64_t total = 0;
	uint8_t *dp = buf + PROTO_HDR_SIZE + blen;

	for (uint32_t i = 0; i < nd; i++) {
		struct proto_desc d;
		uint64_t off = rnd(BULK_SIZE / 2);

		d.len = 1 + rnd(BULK_SIZE / 2 - 1);
		d.addr = xp_remote_addr(J.virt_addr, c->mem, c->bulk + off);
		d.key = c->key;
		total += d.len;
		proto_desc_encode(dp + (size_t)i * PROTO_DESC_SIZE, &d);
	}
	req_hdr(c, buf, XP_PATH_BULK, (int)(1 + rnd(2)), blen, nd, total, 0);
	if (post_send(c, PROTO_HDR_SIZE + blen + (size_t)nd * PROTO_DESC_SIZE, SH_BULK))
		return -1;
	c->credits--;
	c->outstanding++;
	return 0;
}

/* A valid ping's header, then changed by sh. Returns the length to send. */
static size_t junk_message(struct jconn *c, enum shape sh)
{
	uint8_t *buf = (uint8_t *)c->sbuf[0];
	size_t blen =
		(size_t)rpc_enc_path_op(buf + PROTO_HDR_SIZE, 64, RPC_PING, 0, NULL);
	size_t len = PROTO_HDR_SIZE + blen;
	struct proto_hdr h;

	req_hdr(c, buf, XP_PATH_INLINE, PROTO_DIR_NONE, blen, 0, 0, 0);
	proto_hdr_decode(buf, len, &h);
	switch (sh) {
	case SH_BAD_HEADER:
		switch (rnd(6)) {
		case 0:
			buf[rnd(4)] ^= (uint8_t)(1 + rnd(255)); /* magic */
			break;
		case 1:
			buf[4 + rnd(2)] ^= (uint8_t)(1 + rnd(255)); /* version */
			break;
		case 2:
			buf[6] = (uint8_t)(rnd(2) ? 0 : 6 + rnd(250)); /* type */
			break;
		case 3:
			buf[7] = (uint8_t)(4 + rnd(252)); /* path */
			break;
		case 4:
			buf[8] = (uint8_t)(3 + rnd(253)); /* dir */
			break;
		default:
			rnd_bytes(buf, PROTO_HDR_SIZE);
			break;
		}
		return len;
	case SH_SHORT:
		return rnd(PROTO_HDR_SIZE);
	case SH_PAST_END:
		switch (rnd(3)) {
		case 0:
			h.body_len =
				(uint32_t)blen + 1 + rnd(rnd(2) ? 64 : UINT32_MAX - 64);
			break;
		case 1:
			h.ndesc = 1 + rnd(rnd(2) ? 4 : UINT32_MAX - 1);
			break;
		default: /* inline write data past the end */
			h.dir = PROTO_DIR_WRITE;
			h.data_len = 1 + rnd(rnd(2) ? 4096 : UINT32_MAX);
			h.data_off = (uint16_t)(len - rnd(8));
			break;
		}
		proto_hdr_encode(buf, &h);
		return len;
	case SH_WRONG_TYPE:
		h.type = (uint8_t)(rnd(4) == 0 ? PROTO_HELLO
				   : rnd(2)    ? PROTO_REP
				   : rnd(2)    ? PROTO_CREDIT
					       : PROTO_HELLO_REP);
		h.credits = rnd(2) ? UINT32_MAX : rnd(5000);
		if (h.type == PROTO_HELLO || h.type == PROTO_HELLO_REP) {
			/* a whole second handshake message */
			rnd_bytes(buf + PROTO_HDR_SIZE, PROTO_HELLO_SIZE);
			h.body_len = PROTO_HELLO_SIZE;
			len = PROTO_HDR_SIZE + PROTO_HELLO_SIZE;
		}
		proto_hdr_encode(buf, &h);
		return len;
	case SH_BAD_ACKS:
		h.acks = 1 + rnd(rnd(2) ? 8 : UINT32_MAX - 1);
		proto_hdr_encode(buf, &h);
		return len;
	case SH_OVERSIZE:
		len = c->peer_recv_size + 1 + rnd(4096);
		rnd_bytes(buf + PROTO_HDR_SIZE + blen, len - PROTO_HDR_SIZE - blen);
		return len;
	default:
		return len;
	}
}

/* Descriptors that must not be served: too many, not adding up, wrapping,
 * empty, or naming our memory with a wrong key. */
static size_t junk_descs(struct jconn *c, enum shape sh)
{
	uint8_t *buf = (uint8_t *)c->sbuf[0];
	uint64_t handle = junk_handle();
	size_t blen = (size_t)rpc_enc_io(buf + PROTO_HDR_SIZE, 96, RPC_IO_READ, handle,
					 junk_cap(handle), &(struct rpc_seg){0, 4096}, 1);
	uint32_t nd = 1 + rnd(32);
	uint64_t total = 0;
	uint8_t *dp = buf + PROTO_HDR_SIZE + blen;
	struct proto_hdr h;

	for (uint32_t i = 0; i < nd; i++) {
		struct proto_desc d = {
			.addr = xp_remote_addr(J.virt_addr, c->mem, c->bulk),
			.len = 1 + rnd(4096),
			.key = c->key};

		if (sh == SH_BAD_DESC) {
			switch (rnd(4)) {
			case 0:
				d.len = 0;
				break;
			case 1:
				d.addr = UINT64_MAX - rnd(100);
				break;
			case 2:
				d.key = rnd64();
				break;
			default:
				d.len = UINT64_MAX - rnd(100);
				break;
			}
		}
		total += d.len;
		proto_desc_encode(dp + (size_t)i * PROTO_DESC_SIZE, &d);
	}
	req_hdr(c, buf, XP_PATH_BULK, (int)(1 + rnd(2)), blen, nd, total, 0);
	proto_hdr_decode(buf, PROTO_HDR_SIZE + blen + nd * PROTO_DESC_SIZE, &h);
	if (sh == SH_ABSURD_DESC) {
		if (rnd(2))
			h.ndesc = rnd(2) ? UINT32_MAX - rnd(16) : nd + 1 + rnd(1000);
		else
			h.data_len = total + 1 + rnd(1000); /* does not add up */
		proto_hdr_encode(buf, &h);
	}
	return PROTO_HDR_SIZE + blen + (size_t)nd * PROTO_DESC_SIZE;
}

/* Immediates the server must not take: another connection's id, or a slot
 * beyond its fast buffer. The message itself is a good fast write. */
static int send_bad_imm(struct jconn *c, enum shape sh)
{
	uint8_t *buf = (uint8_t *)c->sbuf[0];
	size_t blen =
		(size_t)rpc_enc_path_op(buf + PROTO_HDR_SIZE, 64, RPC_PING, 0, NULL);
	uint32_t id = c->peer_id, slot = 0;

	if (sh == SH_IMM_OTHER_CONN) {
		/* another of our connections to that server, another client's
		 * (ids are small), a gap, or none */
		for (int i = 0; i < MAX_CONNS && rnd(2); i++) {
			const struct jconn *o = &J.conns[i];

			if (o != c && o->state == J_UP && !o->shut && o->srv == c->srv)
				id = o->peer_id;
		}
		if (id == c->peer_id)
			id = rnd(2) ? rnd(64) : rnd(1u << (32 - IMM_SLOT_BITS));
		if (id == c->peer_id)
			id++;
	} else {
		slot = c->peer_fast.slot_count +
		       rnd((1u << IMM_SLOT_BITS) - c->peer_fast.slot_count);
	}
	req_hdr(c, buf, XP_PATH_FAST, PROTO_DIR_WRITE, blen, 0, 1, slot);
	buf[PROTO_HDR_SIZE + blen] = 0x5a;
	return post_write(c, PROTO_HDR_SIZE + blen + 1, 0, c->peer_fast.key, true,
			  (id << IMM_SLOT_BITS) | slot, sh);
}

/* RMA writes outside the server's fast buffer, or with a wrong key. */
static int send_rma_outside(struct jconn *c)
{
	uint64_t size = (uint64_t)c->peer_fast.slot_size * c->peer_fast.slot_count;
	uint64_t off = rnd(2) ? size + rnd(1u << 20) : size - 16;
	uint64_t key = rnd(2) ? c->peer_fast.key : rnd64();

	rnd_bytes(c->sbuf[0], 64);
	return post_write(c, 64, off, key, rnd(2), rnd(2) ? 0 : rnd64() & 0xffffffff,
			  SH_RMA_OUTSIDE);
}

/* More requests than credits, back to back. */
static int send_credit_overflow(struct jconn *c)
{
	uint32_t n = c->credits + 1 + rnd(8);

	for (uint32_t i = 0; i < n && !c->shut; i++) {
		uint8_t *buf = (uint8_t *)c->sbuf[0];
		size_t blen = (size_t)rpc_enc_path_op(buf + PROTO_HDR_SIZE, 64, RPC_PING,
						      0, NULL);

		req_hdr(c, buf, XP_PATH_INLINE, PROTO_DIR_NONE, blen, 0, 0, 0);
		if (post_send(c, PROTO_HDR_SIZE + blen, SH_CREDIT_OVERFLOW))
			return -1;
	}
	return 0;
}

/* ---- connections ------------------------------------------------------------ */

static int conn_mem(struct jconn *c)
{
	static uint64_t next_key = 1000;
	char *p;
	int ret;

	c->mem_len = (size_t)RECV_SIZE * NRECV + (size_t)FAST_SLOT * NFAST +
		     (size_t)SEND_SIZE * NSEND + BULK_SIZE;
	if (posix_memalign((void **)&c->mem, 4096, c->mem_len))
		return -ENOMEM;
	memset(c->mem, 0, c->mem_len);
	ret = fi_mr_reg(J.domain, c->mem, c->mem_len,
			FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
				FI_REMOTE_WRITE,
			0,
			xp_requested_key(J.info->domain_attr->mr_mode & FI_MR_PROV_KEY,
					 &next_key),
			0, &c->mr, NULL);
	if (ret)
		return ret;
	c->desc = fi_mr_desc(c->mr);
	c->key = fi_mr_key(c->mr);
	p = c->mem;
	for (int i = 0; i < NRECV; i++, p += RECV_SIZE)
		c->rbuf[i] = p;
	c->fast = p;
	p += (size_t)FAST_SLOT * NFAST;
	for (int i = 0; i < NSEND; i++, p += SEND_SIZE)
		c->sbuf[i] = p;
	c->bulk = p;
	return 0;
}

static void conn_close(struct jconn *c)
{
	if (c->ep) {
		fi_shutdown(c->ep, 0);
		fi_close(&c->ep->fid);
		c->ep = NULL;
	}
	c->gen++; /* completions still queued for it are ignored */
	c->state = J_IDLE;
	c->shut = false;
	c->junk_sent = false;
	c->outstanding = 0;
	c->credits = 0;
	c->acks = 0;
	c->hello_rep = false;
	c->hello_status = 0;
	memset(c->sbusy, 0, sizeof(c->sbusy));
	progress();
}

/* A connection request as xport_conn.c makes it, changed by sh. */
static void cm_request(struct jconn *c, uint8_t *cm, size_t *len, enum shape sh)
{
	struct proto_cm_req m = {.magic = PROTO_MAGIC, .version = PROTO_VERSION};

	auth_random(c->cnonce, sizeof(c->cnonce));
	memcpy(m.nonce, c->cnonce, sizeof(m.nonce));
	m.time_s = (uint64_t)time(NULL);
	if (sh == SH_CM_STALE)
		m.time_s += rnd(2) ? 86400 : -86400;
	proto_cm_req_encode(cm, &m);
	auth_mac(&J.key, "connreq", cm, PROTO_CM_REQ_MAC_OFF, NULL, 0, NULL, 0, m.mac);
	if (sh == SH_CM_BAD_MAC)
		m.mac[rnd(PROTO_MAC_SIZE)] ^= (uint8_t)(1 + rnd(255));
	proto_cm_req_encode(cm, &m);
	*len = PROTO_CM_REQ_SIZE;
	if (sh == SH_CM_REPLAY && (!J.have_replay || J.replay_srv != c->srv))
		sh = SH_CM_GARBAGE;
	if (sh == SH_CM_REPLAY) {
		memcpy(cm, J.replay, PROTO_CM_REQ_SIZE);
		memcpy(c->cnonce, cm + 8, PROTO_NONCE_SIZE);
	} else if (sh == SH_CM_GARBAGE) {
		*len = rnd(2) ? rnd(PROTO_CM_REQ_SIZE) : PROTO_CM_REQ_SIZE + rnd(16);
		rnd_bytes(cm, *len);
		if (rnd(2) && *len >= 4)
			memcpy(cm, "RPFS", 4);
	} else if (sh == SH_CM_BAD_MAC || sh == SH_CM_STALE) {
		/* not worth keeping */
	} else {
		memcpy(J.replay, cm, PROTO_CM_REQ_SIZE);
		J.replay_srv = c->srv;
		J.have_replay = true;
	}
}

/* The HELLO, changed by sh (or good when sh is SH_PING). */
static size_t hello_message(struct jconn *c, enum shape sh)
{
	uint8_t *buf = (uint8_t *)c->sbuf[0], *body = buf + PROTO_HDR_SIZE;
	uint8_t nonces[2 * PROTO_NONCE_SIZE];
	struct proto_hello m = {0};
	struct proto_hdr h = {0};
	struct hello_req req;
	int app;

	hello_req_fill(&req, &J.cfg, (uint32_t)c->srv, HELLO_CLIENT);
	app = hello_req_encode(body + PROTO_HELLO_SIZE, PROTO_APP_MAX, &req);
	if (sh == SH_HELLO_JUNK_APP) {
		if (rnd(2)) {
			app = (int)rnd(PROTO_APP_MAX + 1);
			rnd_bytes(body + PROTO_HELLO_SIZE, (size_t)app);
		} else {
			/* well formed, but another cluster, server or role */
			body[PROTO_HELLO_SIZE + 6 + rnd(46)] ^= (uint8_t)(1 + rnd(255));
		}
	}
	m.conn_id = (uint32_t)c->id;
	m.recv_count = NRECV;
	m.recv_size = RECV_SIZE;
	m.max_requests = MAXREQ;
	m.fast.addr = xp_remote_addr(J.virt_addr, c->mem, c->fast);
	m.fast.key = c->key;
	m.fast.slot_size = FAST_SLOT;
	m.fast.slot_count = NFAST;
	m.app_len = (uint32_t)app;
	if (sh == SH_HELLO_BAD_GEOMETRY) {
		switch (rnd(6)) {
		case 0:
			m.recv_count = rnd(2) ? 0 : 100000;
			break;
		case 1:
			m.max_requests = rnd(2) ? 0 : m.recv_count;
			break;
		case 2:
			m.fast.slot_count = rnd(2) ? 0 : 4097 + rnd(100000);
			break;
		case 3:
			m.fast.slot_size = rnd(2) ? rnd(PROTO_HDR_SIZE) : UINT32_MAX;
			break;
		case 4:
			m.app_len = PROTO_APP_MAX + 1 + rnd(100000);
			break;
		default:
			m.conn_id = UINT32_MAX - rnd(1000);
			break;
		}
	}
	proto_hello_encode(body, &m);
	memcpy(nonces, c->cnonce, PROTO_NONCE_SIZE);
	memcpy(nonces + PROTO_NONCE_SIZE, c->snonce, PROTO_NONCE_SIZE);
	auth_mac(&J.key, "hello", nonces, sizeof(nonces), body, PROTO_HELLO_SIZE,
		 body + PROTO_HELLO_SIZE, (size_t)app, body + 40);
	if (sh == SH_HELLO_BAD_MAC)
		body[40 + rnd(PROTO_MAC_SIZE)] ^= (uint8_t)(1 + rnd(255));
	h.type = sh == SH_HELLO_NOT_HELLO ? PROTO_REQ : PROTO_HELLO;
	h.body_len = (uint32_t)(PROTO_HELLO_SIZE + (size_t)app);
	if (h.body_len > PROTO_HELLO_SIZE + PROTO_APP_MAX)
		h.body_len = PROTO_HELLO_SIZE;
	h.data_off = (uint16_t)(PROTO_HDR_SIZE + h.body_len);
	proto_hdr_encode(buf, &h);
	return PROTO_HDR_SIZE + h.body_len;
}

/* Connect c to server srv and do the handshake, changed by sh: a CM or
 * HELLO shape makes it junk (then the server must refuse or close). Returns
 * 1 up, 0 refused or closed as expected, -1 something else. */
static int conn_open(struct jconn *c, int srv, enum shape sh)
{
	const struct rpfs_server_cfg *sv = &J.cfg.servers[srv];
	struct fi_info *h = hints(J.info->fabric_attr->prov_name), *info = NULL;
	uint8_t cm[PROTO_CM_REQ_SIZE + 16];
	size_t cmlen;
	bool junk_cm = sh >= FIRST_CM && sh < FIRST_HELLO;
	bool junk_hello = sh >= FIRST_HELLO;
	int ret;

	c->srv = srv;
	J.st.conns++;
	ret = h ? fi_getinfo(FI_VERSION(1, 11), sv->address, sv->port, 0, h, &info)
		: -FI_ENOMEM;
	fi_freeinfo(h);
	if (ret)
		return -1;
	ret = fi_endpoint(J.domain, info, &c->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(c->ep, &J.eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(c->ep, &J.cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(c->ep);
	if (ret) {
		fi_freeinfo(info);
		conn_close(c);
		return -1;
	}
	for (int i = 0; i < NRECV; i++)
		repost(c, i);
	cm_request(c, cm, &cmlen, sh);
	c->state = J_CONNECTING;
	ret = fi_connect(c->ep, info->dest_addr, cm, cmlen);
	fi_freeinfo(info);
	if (junk_cm) {
		J.st.sent[sh]++;
		J.st.messages++;
	}
	if (!ret)
		wait_for(c, is_not_connecting, 5000);
	if (c->state != J_HELLO) {
		J.st.rejected++;
		return junk_cm ? 0 : -1;
	}
	J.st.accepted++;
	if (junk_cm)
		surprise("a junk connection request accepted");
	if (post_send(c, hello_message(c, junk_hello ? sh : SH_PING),
		      junk_hello ? sh : SH_COUNT))
		return junk_hello ? 0 : -1;
	if (!wait_for(c, has_hello_rep, 5000))
		return -1;
	if (c->shut || c->hello_status) {
		J.st.refused_hello++;
		return junk_hello ? 0 : -1;
	}
	if (junk_hello) {
		/* a junk HELLO accepted (junk app data that still decodes) */
		return 1;
	}
	c->state = J_UP;
	return 1;
}

/* ---- bursts ----------------------------------------------------------------- */

static enum shape pick_benign(void)
{
	static const enum shape b[] = {SH_PING,	  SH_RPC_RANDOM, SH_RPC_RANDOM, SH_RPC_IO,
				       SH_RPC_IO, SH_FAST_WRITE, SH_FAST_READ,	SH_BULK};

	return b[rnd(sizeof(b) / sizeof(b[0]))];
}

/* One benign message, waiting for a credit first. 0 sent, -1 gone. */
static int benign(struct jconn *c)
{
	enum shape sh = pick_benign();

	if (!wait_for(c, can_send, 3000) || c->shut)
		return -1;
	switch (sh) {
	case SH_PING:
		return send_inline(c, SH_PING, false);
	case SH_RPC_RANDOM:
		return send_inline(c, SH_RPC_RANDOM, false);
	case SH_RPC_IO:
		return send_inline(c, SH_RPC_IO, true);
	case SH_FAST_WRITE:
		return send_fast_write(c);
	case SH_FAST_READ:
		return send_fast_read(c);
	default:
		return send_bulk(c);
	}
}

/* One junk message on an open connection; the server should close it. */
static int junk(struct jconn *c, enum shape sh)
{
	wait_for(c, idle, 2000);
	c->junk_sent = true;
	switch (sh) {
	case SH_ABSURD_DESC:
	case SH_BAD_DESC:
		return post_send(c, junk_descs(c, sh), sh);
	case SH_IMM_OTHER_CONN:
	case SH_IMM_BAD_SLOT:
		return send_bad_imm(c, sh);
	case SH_CREDIT_OVERFLOW:
		return send_credit_overflow(c);
	case SH_RMA_OUTSIDE:
		return send_rma_outside(c);
	default:
		return post_send(c, junk_message(c, sh), sh);
	}
}

/* A session on one connection: benign messages, then often one junk
 * message and a wait for the server to close it. */
static void session(struct jconn *c)
{
	uint32_t n = rnd(40);
	enum shape sh;

	for (uint32_t i = 0; i < n && !c->shut; i++)
		if (benign(c))
			break;
	wait_for(c, idle, 3000);
	if (c->shut || rnd(6) == 0) {
		conn_close(c);
		return;
	}
	if (rnd(3) == 0)
		return; /* left open: other connections' junk may name it */
	sh = (enum shape)(FIRST_JUNK + rnd(FIRST_CM - FIRST_JUNK));
	junk(c, sh);
	J.st.junk_tries[sh]++;
	if (wait_for(c, is_shut, 1000)) {
		J.st.closed_after_junk++;
		J.st.closed[sh]++;
	} else {
		J.st.open_after_junk++;
	}
	conn_close(c);
}

static void burst(int ms, int nconns)
{
	int64_t end = now_ms() + ms;

	while (now_ms() < end) {
		struct jconn *c = &J.conns[rnd((uint32_t)nconns)];
		int srv = (int)rnd(J.cfg.nservers);

		if (c->state == J_UP && !c->shut) {
			session(c);
			continue;
		}
		if (c->state != J_IDLE)
			conn_close(c);
		if (rnd(4) == 0) {
			/* a junk handshake: refused at the CM or after the HELLO */
			enum shape sh = (enum shape)(FIRST_CM + rnd(SH_COUNT - FIRST_CM));

			if (conn_open(c, srv, sh) < 0)
				surprise(
					"a junk handshake that neither failed nor succeeded cleanly");
			conn_close(c);
			continue;
		}
		if (conn_open(c, srv, SH_PING) != 1) {
			surprise("a good connection that did not come up");
			conn_close(c);
		}
	}
	for (int i = 0; i < nconns; i++)
		conn_close(&J.conns[i]);
}

/* Cross-connection probe: A fast-writes a PING into slot 0 of its server
 * and gets the reply; then B, on its own connection to the same server,
 * RDMA-writes into its own slot 0 with the immediate naming A's connection
 * and slot 0. The server must not serve A's old request again. Returns the
 * replies A got beyond the one it asked for (0 is right), or -1 if the
 * probe could not run. */
static int cross_probe(int srv)
{
	struct jconn *a = &J.conns[0], *b = &J.conns[1];
	unsigned long before;
	uint8_t *buf;
	size_t blen;
	int extra;

	if (conn_open(a, srv, SH_PING) != 1 || conn_open(b, srv, SH_PING) != 1)
		return -1;
	buf = (uint8_t *)a->sbuf[0];
	blen = (size_t)rpc_enc_path_op(buf + PROTO_HDR_SIZE, 64, RPC_PING, 0, NULL);
	req_hdr(a, buf, XP_PATH_FAST, PROTO_DIR_WRITE, blen, 0, 1, 0);
	buf[PROTO_HDR_SIZE + blen] = 1;
	if (post_write(a, PROTO_HDR_SIZE + blen + 1, 0, a->peer_fast.key, true,
		       a->peer_id << IMM_SLOT_BITS, SH_FAST_WRITE))
		return -1;
	a->credits--;
	a->outstanding++;
	if (!wait_for(a, idle, 3000) || a->shut)
		return -1;
	before = J.st.replies;
	buf = (uint8_t *)b->sbuf[0];
	rnd_bytes(buf, 64);
	if (post_write(b, 64, 0, b->peer_fast.key, true, a->peer_id << IMM_SLOT_BITS,
		       SH_IMM_OTHER_CONN))
		return -1;
	wait_for(b, is_shut, 500);
	wait_for(a, is_shut, 500);
	extra = (int)(J.st.replies - before);
	printf("junk_client: cross-connection probe: A got %d more replies, A %s, B %s\n",
	       extra, a->shut ? "closed" : "open", b->shut ? "closed" : "open");
	conn_close(a);
	conn_close(b);
	return extra;
}

/* ---- setup and main ------------------------------------------------------------ */

static int setup(const char *config)
{
	struct fi_eq_attr eqa = {.size = 256, .wait_obj = FI_WAIT_NONE};
	struct fi_cq_attr cqa = {
		.size = 4096, .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE};
	const char *prov;
	struct fi_info *h;
	char why[512];
	int ret;

	ret = rpfs_config_load(config, &J.cfg, why, sizeof(why));
	if (!ret)
		ret = rpfs_config_key(&J.cfg, &J.key, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "junk_client: %s\n", why);
		return -1;
	}
	prov = J.cfg.xport.provider[0] ? J.cfg.xport.provider : getenv("RPFS_PROVIDER");
	h = hints(prov && *prov ? prov : "tcp");
	setenv("FI_MR_CACHE_MONITOR", "disabled", 1);
	ret = h ? fi_getinfo(FI_VERSION(1, 11), NULL, NULL, 0, h, &J.info) : -FI_ENOMEM;
	fi_freeinfo(h);
	if (!ret)
		ret = fi_fabric(J.info->fabric_attr, &J.fabric, NULL);
	if (!ret)
		ret = fi_domain(J.fabric, J.info, &J.domain, NULL);
	if (!ret)
		ret = fi_eq_open(J.fabric, &eqa, &J.eq, NULL);
	if (!ret)
		ret = fi_cq_open(J.domain, &cqa, &J.cq, NULL);
	if (ret) {
		fprintf(stderr, "junk_client: libfabric setup: %s\n", fi_strerror(-ret));
		return -1;
	}
	J.virt_addr = J.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR;
	for (int i = 0; i < MAX_CONNS; i++) {
		J.conns[i].id = i;
		if (conn_mem(&J.conns[i])) {
			fprintf(stderr, "junk_client: no memory for connections\n");
			return -1;
		}
	}
	return 0;
}

static void report(double secs)
{
	unsigned long junk = 0, hs = 0, ok = 0;

	for (int i = 0; i < SH_COUNT; i++) {
		if (i < FIRST_JUNK)
			ok += J.st.sent[i];
		else if (i < FIRST_CM)
			junk += J.st.sent[i];
		else
			hs += J.st.sent[i];
	}
	printf("junk_client: %lu messages in %.1f s: %lu answerable, %lu junk on open connections, %lu junk handshakes\n",
	       J.st.messages, secs, ok, junk, hs);
	printf("  by shape:");
	for (int i = 0; i < SH_COUNT; i++)
		printf("%s %s %lu", i ? "," : "", shape_names[i], J.st.sent[i]);
	printf("\n  replies %lu (status 0: %lu, -EPROTO: %lu, other errors: %lu), credit messages %lu\n",
	       J.st.replies, J.st.rep_ok, J.st.rep_eproto, J.st.rep_other,
	       J.st.credit_msgs);
	printf("  connections %lu: %lu accepted, %lu refused at the connection request, %lu refused after the HELLO; after junk %lu closed by the server, %lu still open after 1 s\n",
	       J.st.conns, J.st.accepted, J.st.rejected, J.st.refused_hello,
	       J.st.closed_after_junk, J.st.open_after_junk);
	printf("  closed by the server after:");
	for (int i = FIRST_JUNK; i < FIRST_CM; i++)
		printf("%s %s %lu/%lu", i > FIRST_JUNK ? "," : "", shape_names[i],
		       J.st.closed[i], J.st.junk_tries[i]);
	printf("\n  bursts %lu, checks passed %lu, surprises %lu\n", J.st.bursts,
	       J.st.checks, J.st.unexpected);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: junk_client -c CONFIG [-t SECONDS] [-b BURST_MS] [-S SEED]\n"
		"                   [-C CHECK_COMMAND] [-n CONNS] [-v] [-X]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *config = NULL, *check = NULL;
	int secs = 20, burst_ms = 2000, nconns = 4, opt, rc = 0, probe = 0;
	uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	int64_t start, end;

	while ((opt = getopt(argc, argv, "c:t:b:S:C:n:vX")) != -1) {
		switch (opt) {
		case 'c':
			config = optarg;
			break;
		case 't':
			secs = atoi(optarg);
			break;
		case 'b':
			burst_ms = atoi(optarg);
			break;
		case 'S':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'C':
			check = optarg;
			break;
		case 'n':
			nconns = atoi(optarg);
			break;
		case 'v':
			J.verbose++;
			break;
		case 'X':
			probe = 1;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || nconns < 1 || nconns > MAX_CONNS || burst_ms < 1)
		usage();
	J.rng = seed * 0x9E3779B97F4A7C15ULL + 1;
	if (!probe)
		printf("junk_client: seed %llu, %d s in bursts of %d ms, %d connections at a time\n",
		       (unsigned long long)seed, secs, burst_ms, nconns);
	fflush(stdout);
	if (setup(config))
		return 2;
	if (probe)
		return cross_probe(0) == 0 ? 0 : 1;
	start = now_ms();
	end = start + (int64_t)secs * 1000;
	while (now_ms() < end) {
		burst(burst_ms, nconns);
		J.st.bursts++;
		if (check) {
			fflush(stdout);
			if (system(check) != 0) {
				printf("junk_client: the check failed after burst %lu\n",
				       J.st.bursts);
				rc = 1;
				break;
			}
			J.st.checks++;
		}
	}
	report((double)(now_ms() - start) / 1000.0);
	return rc;
}
