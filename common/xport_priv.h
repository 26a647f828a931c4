/* Private state of the libfabric transport, shared by its files:
 *
 *   xport_ofi.c       provider selection, fabric/domain/CQ/EQ, memory regions
 *   xport_conn.c      connection setup, handshake, teardown, the conn table
 *   xport_progress.c  completion and event dispatch, blocking waits, timeouts
 *   xport_msg.c       client calls: path choice, credits, inline path, replies
 *   xport_fast.c      the Fast RDMA Write path (slots, immediate data)
 *   xport_bulk.c      server requests: pull/push, the pipelined bulk path
 *
 * Every libfabric operation carries a struct xp_op as its context; the
 * completion handler calls op->done. */
#ifndef RPFS_XPORT_PRIV_H
#define RPFS_XPORT_PRIV_H

#include <pthread.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdbool.h>

#include "bufpool.h"
#include "proto.h"
#include "regcache.h"
#include "xport.h"

/* Receives a client keeps posted beyond one per request, for CREDIT
 * control messages; also the most such messages a server has unacked. */
#define XP_CTRL_RECVS 4
/* Room for the reply body before data in an inline/fast reply. */
#define XP_REPLY_BODY_MAX 512
/* Room for header, body and descriptors in a message, beyond inline data. */
#define XP_MSG_ROOM 4096
/* Immediate data: connection id in the high bits, slot in the low 12. The
 * verbs provider carries only 32 bits of remote CQ data. */
#define XP_IMM_SLOT_BITS 12
#define XP_MAX_CONNS	 (1u << (32 - XP_IMM_SLOT_BITS))

struct xp_op;
typedef void (*xp_op_done)(struct xp_op *op, int status,
			   const struct fi_cq_data_entry *e);

struct xp_op {
	struct fi_context2 fictx; /* provider scratch space, must come first */
	xp_op_done done;
	struct xp_conn *conn;
};

struct xp_mr {
	struct fid_mr *mr;
	void *desc;
	uint64_t key;
	char *base;
	size_t len;
	struct xp_fabric *fab;
};

/* A receive buffer of a connection. */
struct xp_rbuf {
	struct xp_op op;
	char *buf;
	uint32_t index;
	bool held; /* an inline request still uses its data */
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
	bool closing;	    /* owner let go: free once nothing is posted */
	uint32_t id;	    /* our id, index in fab->conns, named in immediates */
	uint32_t peer_id;   /* the peer's id for this connection */
	char peer[80];	    /* "host:port" for messages */
	int posted;	    /* operations posted and not yet completed */

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
	int64_t last_reply_ns;	/* client: when the peer last answered */
	int64_t last_active_ns; /* a call started or a request arrived */

	/* Server: requests being served (for timeouts and teardown). */
	struct xp_req *reqs;
	bool hello_done;
	bool refused; /* server: HELLO refused, close once the answer is sent */
	int64_t connect_deadline;
	/* Handshake: the client's and the server's nonce (auth.h). */
	uint8_t cnonce[PROTO_NONCE_SIZE];
	uint8_t snonce[PROTO_NONCE_SIZE];
	struct xp_hello *hello; /* client: during xp_connect only */
	bool in_connect;	/* client: xp_connect waits for it */
	void *ctx;		/* server: the application's */
};

/* Server-side request. */
struct xp_req {
	struct xp_conn *conn;
	struct xp_req *prev, *next;
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

struct xp_post {
	void (*fn)(void *arg);
	void *arg;
	struct xp_post *next;
};

struct xp_fabric {
	struct xp_params params;
	enum xp_role role;
	pthread_mutex_t lock; /* recursive: handlers call back into the API */
	pthread_cond_t cond;
	bool waiter; /* a thread is blocked in the wait fds */

	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_pep *pep;
	int epfd; /* epoll over the CQ, EQ and post fds */
	int cq_fd, eq_fd;
	int post_fd;   /* eventfd: xp_fabric_post wakes progress */
	bool can_wait; /* provider gave wait fds */
	bool virt_addr, prov_key, mr_local;
	/* Limits the provider reports (fi_getinfo), never assumed: verbs on
	 * rxe allows 8 MiB per message or RMA, 4 local iovs, 384 posted
	 * receives and sends per endpoint; tcp allows far more. */
	size_t iov_limit;
	size_t max_msg;	 /* ep_attr->max_msg_size: largest message or RMA */
	size_t rx_depth; /* rx_attr->size: receives one endpoint may post */
	uint64_t next_key;

	struct rcache *rcache; /* client: user buffers */
	struct bpool *pool;    /* server: bulk chunks */
	struct xp_pipe *pool_waiters, *pool_waiters_tail;

	struct xp_conn **conns; /* by id */
	uint32_t nconns;

	xp_req_fn handler;
	void *handler_arg;
	xp_conn_fn conn_fn;
	void *conn_arg;
	xp_hello_fn hello_fn;
	void *hello_arg;
	struct auth_key key;	    /* the cluster's */
	struct auth_replay *replay; /* server: connection requests seen */
	uint32_t nlive;		    /* server: connections not yet freed */
	int listen_port;

	pthread_mutex_t post_lock;
	struct xp_post *posts, *posts_tail;

	struct xp_call *done_calls; /* callbacks to run outside dispatch */
	int depth;		    /* nesting of progress calls (reap at depth 0) */
	bool need_reap;
	bool closing; /* xp_fabric_close under way */
	int64_t next_sweep_ns;
	int64_t last_event_ns; /* progress last found something (for spinning) */
	bool sw_rma;	       /* RMA moves only while both sides poll (tcp) */
	uint32_t rma_busy;     /* bulk calls (client) or RMA ops (server) in flight */
	struct xp_stats stats;
};

/* xport_ofi.c */
int64_t xp_now_ns(void);
int xp_mr_reg_locked(struct xp_fabric *fab, void *addr, size_t len, struct xp_mr **out);
int xp_errno(int fi_ret);

/* xport_conn.c */
int xp_conn_alloc(struct xp_fabric *fab, struct fid_ep *ep, struct xp_conn **out);
int xp_conn_setup_recv(struct xp_conn *c, uint32_t nrecv);
int xp_conn_setup_send(struct xp_conn *c, uint32_t nsend);
int xp_getinfo(struct xp_fabric *fab, const char *node, const char *service,
	       uint64_t flags, struct fi_info **out);
void xp_reap_conns(struct xp_fabric *fab);
int xp_conn_post_recv(struct xp_conn *c, struct xp_rbuf *rb);
void xp_conn_fail(struct xp_conn *c, int err, const char *why);
void xp_conn_maybe_free(struct xp_conn *c);
void xp_conn_free(struct xp_conn *c);
void xp_handle_eq_event(struct xp_fabric *fab, uint32_t event, struct fi_eq_cm_entry *e,
			size_t len);
void xp_server_hello(struct xp_conn *c, struct xp_rbuf *rb, size_t len);
void xp_conn_rejected(struct xp_conn *c, const void *data, size_t len);
void xp_client_hello_rep(struct xp_conn *c, struct xp_rbuf *rb, size_t len);
struct xp_conn *xp_conn_by_id(struct xp_fabric *fab, uint32_t id);
struct xp_sbuf *xp_sbuf_get(struct xp_conn *c);
void xp_sbuf_put(struct xp_conn *c, struct xp_sbuf *sb);
uint32_t xp_imm(uint32_t conn_id, uint32_t slot);

/* xport_progress.c */
int xp_progress_locked(struct xp_fabric *fab, int timeout_ms);
/* A post the provider refused with -FI_EAGAIN (its queue is full): drive
 * progress once and say whether to post again. *since starts at 0. */
bool xp_retry_post(struct xp_conn *c, int64_t *since);
void xp_sweep_timeouts(struct xp_fabric *fab);
void xp_run_done_calls(struct xp_fabric *fab);

/* xport_msg.c */
void xp_recv_done(struct xp_op *op, int status, const struct fi_cq_data_entry *e);
void xp_call_finish(struct xp_call *call, int status);
void xp_call_release(struct xp_call *call);
void xp_conn_dispatch(struct xp_conn *c);
void xp_client_reply(struct xp_conn *c, const struct proto_hdr *h, const char *msg,
		     size_t len);
void xp_scatter(const struct iovec *iov, int cnt, const char *src, size_t len);
void xp_gather(char *dst, const struct iovec *iov, int cnt);
size_t xp_iov_len(const struct iovec *iov, int cnt);
int xp_send_msg(struct xp_conn *c, struct xp_sbuf *sb, size_t len);
void xp_send_done(struct xp_op *op, int status, const struct fi_cq_data_entry *e);
void xp_fail_calls(struct xp_conn *c, int err);

/* xport_fast.c */
void xp_fast_arrival(struct xp_fabric *fab, uint64_t imm, struct xp_rbuf *rb);
int xp_fast_write_call(struct xp_conn *c, struct xp_call *call, struct xp_sbuf *sb,
		       size_t hdr_len);
int xp_fast_reply(struct xp_req *r, size_t msg_len);

/* xport_bulk.c */
void xp_server_request(struct xp_conn *c, const struct proto_hdr *h, const char *msg,
		       size_t len, struct xp_rbuf *rb, int fast_slot);
void xp_req_abort_all(struct xp_conn *c);
void xp_req_free(struct xp_req *r);
void xp_pool_kick(struct xp_fabric *fab);
void xp_server_return_credit(struct xp_conn *c);

#endif
