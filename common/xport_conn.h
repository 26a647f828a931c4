/* Connections: objects, buffers, posting, failure, teardown (xport_conn.c),
 * and the per-request state both sides keep (calls are public: xport.h;
 * server requests are struct xp_req below). See xport_domain.h for the
 * layers. */
#ifndef RPFS_XPORT_CONN_H
#define RPFS_XPORT_CONN_H

#include "list.h"
#include "xport_domain.h"

/* Room for the reply body before data in an inline/fast reply. */
#define XP_REPLY_BODY_MAX 512
/* Immediate data: connection id in the high bits, slot in the low 12. The
 * verbs provider carries only 32 bits of remote CQ data. */
#define XP_IMM_SLOT_BITS 12
#define XP_MAX_CONNS	 (1u << (32 - XP_IMM_SLOT_BITS))
/* Local iovs of one fast write at most (header + pieces). */
#define XP_FAST_IOV_MAX 8

/* A receive buffer of a connection. */
struct xp_rbuf {
	struct xp_op op;
	char *buf;
	uint32_t index;
};

/* A send buffer: client, one per request tag; server, one per reply plus
 * control messages. slot_size bytes, so a fast message can be staged in it. */
struct xp_sbuf {
	struct xp_op op;
	char *buf;
	uint32_t index;
	struct xp_req *req;   /* server: reply being sent */
	struct xp_call *call; /* client: request being sent */
};

/* An operation the provider could not take yet (its queue was full): it
 * waits on the connection's backlog and the engine posts it later, in
 * order, so a send never overtakes the RDMA writes before it. */
enum xp_pending_kind {
	XP_PEND_RECV,
	XP_PEND_SEND,
	XP_PEND_FAST,
	XP_PEND_READ,
	XP_PEND_WRITE
};

struct xp_pending {
	struct xp_pending *next;
	enum xp_pending_kind kind;
	struct xp_op *op;
	void *buf; /* RECV, SEND, READ, WRITE: local memory */
	size_t len;
	void *desc;
	uint64_t addr, key; /* READ, WRITE: remote memory */
	/* FAST: one write with immediate data from several local pieces */
	struct iovec iov[XP_FAST_IOV_MAX];
	void *descs[XP_FAST_IOV_MAX];
	size_t iov_count;
	struct fi_rma_iov rma;
	uint64_t imm;
};

enum xp_conn_state {
	XP_CONN_CONNECTING, /* fi_connect / fi_accept issued */
	XP_CONN_HELLO,	    /* connected, handshake messages under way */
	XP_CONN_UP,
	XP_CONN_BROKEN, /* error seen; operations flush */
};

struct xp_conn {
	struct xp_fabric *fab;
	struct fid_ep *ep;
	enum xp_conn_state state;
	int error;
	char fail_why[128]; /* what broke it, for messages */
	bool fail_handled;  /* its calls or requests were ended (engine) */
	bool closing;	    /* owner let go: free once nothing is posted */
	uint32_t id;	    /* our id, index in fab->conns, named in immediates */
	uint32_t peer_id;   /* the peer's id for this connection */
	char peer[80];	    /* "host:port" for messages */
	int posted;	    /* operations posted and not yet completed */

	/* Operations waiting for room in the provider's queues. */
	struct xp_pending *tx_backlog, *tx_backlog_tail;
	struct xp_pending *rx_backlog, *rx_backlog_tail;
	int64_t backlog_since; /* when the oldest one started waiting */

	/* Registered memory: receive buffers and our fast slots in one region,
	 * send buffers in another (a server sizes them after the handshake). */
	char *mem;
	size_t mem_len;
	struct xp_mr *mr;
	char *smem;
	size_t smem_len;
	struct xp_mr *smr;
	bool reap;	      /* close the endpoint and free at top level */
	int64_t zombie_since; /* endpoint closed, flushed completions pending */
	struct xp_rbuf *rbufs;
	uint32_t nrecv;
	size_t recv_size;
	struct xp_sbuf *sbufs;
	uint32_t nsend;
	size_t send_size;
	uint32_t *sfree; /* stack of free send buffer indexes */
	uint32_t nsfree;
	char *fast;	    /* our Fast RDMA buffer */
	uint8_t *fast_busy; /* server: slot holds a request being served */
	uint32_t nfast;
	size_t slot_size;

	/* The peer's side, from the handshake. */
	struct proto_fastbuf peer_fast;
	uint32_t peer_recv_size;

	/* Flow control. Client: credits = sends we may still make; acks =
	 * control messages consumed, reported in the next request. Server:
	 * ret_credits = receives reposted and not yet reported; peer_credits =
	 * what the client believes it has; ctrl_unacked = CREDIT messages the
	 * client has not yet reported consuming. */
	uint32_t credits;
	uint32_t acks;
	uint32_t ret_credits;
	uint32_t peer_credits;
	uint32_t granted; /* server: receives posted for this client */
	uint32_t ctrl_unacked;

	/* Client: outstanding calls by tag index, waiting queue, slot stacks. */
	uint32_t max_req;
	struct xp_call **calls;
	uint32_t *gen; /* tag generation per index */
	struct xp_call *waitq, *waitq_tail;
	uint32_t *peer_slots; /* free slots of the server's fast buffer */
	uint32_t npeer_slots;
	uint32_t *my_slots; /* free slots of our fast buffer */
	uint32_t nmy_slots;
	uint32_t inflight;
	/* Written under the lock (xp_conn_mark); read without it by
	 * xp_conn_idle_ms, since a post must never wait for a round. */
	int64_t last_reply_ns;	/* client: when the peer last answered */
	int64_t last_active_ns; /* a call started or a request arrived */

	/* Server: requests being served (for timeouts and teardown). */
	struct list_node reqs;
	bool hello_done;
	bool refused; /* server: HELLO refused, close once the answer is sent */
	int64_t connect_deadline;
	/* Handshake: the client's and the server's nonce (auth.h). */
	uint8_t cnonce[PROTO_NONCE_SIZE];
	uint8_t snonce[PROTO_NONCE_SIZE];
	struct xp_hello *hello; /* client: during xp_connect only */
	bool in_connect;	/* client: xp_connect waits for it */
	void *ctx;		/* server: the application's */
	void (*free_ctx)(void *ctx);
	/* Server: the application's up and down events, queued for the engine;
	 * the connection is not freed while one waits to run. */
	struct xp_cb ev_up, ev_down;
	int events_pending;
};

/* Server-side request. */
struct xp_req {
	struct xp_conn *conn;
	struct list_node link; /* in conn->reqs */
	struct xp_cb deliver;  /* to the application's handler */
	struct proto_hdr hdr;
	char *body; /* copy of the body (the receive is reposted early) */
	size_t body_len;
	struct proto_desc *desc; /* bulk: client memory */
	uint32_t ndesc;
	const char *wr_data;  /* inline/fast write data */
	struct xp_rbuf *held; /* inline: receive buffer holding the data */
	int fast_slot;	      /* fast write: our slot holding the data; -1 */
	struct xp_sbuf *sbuf; /* reply staging (inline/fast reads: data goes here) */
	int64_t start_ns;
	int rma_pending; /* RMA operations of this request in flight */
	bool replied;
	bool dead; /* connection broke: finish without replying */
	struct xp_pipe *pipe;
};

/* xport_conn.c */
uint32_t xp_imm(uint32_t conn_id, uint32_t slot);
struct xp_conn *xp_conn_by_id(struct xp_fabric *fab, uint32_t id);
int xp_conn_alloc(struct xp_fabric *fab, struct fid_ep *ep, struct xp_conn **out);
/* Receive buffers and our fast slots; send buffers (one region each). */
int xp_conn_setup_recv(struct xp_conn *c, uint32_t nrecv);
int xp_conn_setup_send(struct xp_conn *c, uint32_t nsend);
struct xp_sbuf *xp_sbuf_get(struct xp_conn *c);
void xp_sbuf_put(struct xp_conn *c, struct xp_sbuf *sb);

/* Posting: 0 when posted or queued on the backlog (the provider's queue is
 * full: the engine posts it later, in order), or a negative errno after
 * failing the connection. */
int xp_post_recv(struct xp_conn *c, struct xp_rbuf *rb);
int xp_post_send(struct xp_conn *c, struct xp_sbuf *sb, size_t len);
/* One RDMA write with immediate data of iov[0..cnt) into the peer's memory
 * at addr (a fast message). */
int xp_post_fast(struct xp_conn *c, struct xp_op *op, const struct iovec *iov,
		 void *const *desc, size_t cnt, uint64_t addr, uint64_t key,
		 uint64_t imm);
int xp_post_rma(struct xp_conn *c, struct xp_op *op, bool write, void *buf, size_t len,
		void *desc, uint64_t addr, uint64_t key);
/* Engine: post what the backlog holds while the provider takes it; a
 * connection whose operations waited a whole timeout fails. Returns the
 * number posted. */
int xp_conn_post_backlog(struct xp_conn *c);
/* Engine: the operations of a broken connection's backlog, one at a time,
 * for the engine to complete them with an error. */
struct xp_op *xp_conn_take_backlog(struct xp_conn *c);

/* Mark the connection broken (first cause wins) and shut it down. Its calls
 * or requests are ended by the engine (need_fail). */
void xp_conn_fail(struct xp_conn *c, int err, const char *why);
/* Ready to free: broken, let go by its owner, nothing uses it. */
void xp_conn_maybe_free(struct xp_conn *c);
/* The owner lets go (a client's close, a connect that failed): broken with
 * err and why unless it already is, then freed once nothing uses it. The
 * engine may have ended it before its owner let go, and then looks at it
 * no more: this asks for the free itself. */
void xp_conn_let_go(struct xp_conn *c, int err, const char *why);
void xp_conn_free(struct xp_conn *c);
/* Engine: free connections that are done (see xport_conn.c). */
void xp_reap_conns(struct xp_fabric *fab);

/* Stamp last_reply_ns or last_active_ns now (lock held). */
static inline void xp_conn_mark(int64_t *when)
{
	__atomic_store_n(when, xp_now_ns(), __ATOMIC_RELAXED);
}

#endif
