/* The transport's bottom layer: libfabric resources and the fabric object.
 *
 * The transport's files, bottom to top; each calls only files below it
 * (the engine reaches the roles above it through the ops tables they give
 * it, and an operation's done callback is set by the file that posted it):
 *
 *   xport_domain.c     provider, fabric, domain, completion and event queues,
 *                      wait fds, the provider's limits, memory registration,
 *                      the queue of work deferred to the engine
 *   xport_conn.c       connection objects and buffers, posting operations
 *                      (a backlog instead of retrying in place), failure,
 *                      teardown
 *   xport_inline.c     data inside messages (gather, scatter)
 *   xport_fast.c       Fast RDMA Write: slots, writes with immediate data
 *   xport_bulk.c       registration and descriptors of client memory, RDMA
 *                      streams and the pipelined bulk transfer (server)
 *   xport_progress.c   the engine: dispatches completions and events, posts
 *                      backlogs, ends broken connections' work, timeouts,
 *                      waits, runs deferred callbacks without the lock
 *   xport_thread.c     the client's progress thread, a driver of the engine
 *   xport_handshake.c  connecting, listening, accepting, HELLO (both sides)
 *   xport_client.c     the client's call path: paths, credits, replies
 *   xport_server.c     the server's request path: arrival, replies, credits
 *   xport_fabric.c     a fabric for a role: open, close, counters
 *
 * Locking: one mutex per fabric, never taken twice by a thread. Every API
 * function takes it around its work; code below the engine never waits for
 * completions (a full queue puts an operation on the connection's backlog)
 * and never calls the application: its callbacks (request handler,
 * connection events, done and chunk callbacks, call callbacks) are queued
 * and run by the engine after it lets go of the lock, so they may call the
 * API freely.
 *
 * The lock is taken only through xp_lock or xp_lock_quiet, let go only
 * through xp_unlock, and fab->cond waited on only through xp_cond_wait:
 * they keep track of the holder, so a function that needs the lock says so
 * with xp_assert_locked at its top, and one that must not hold it (it
 * calls the application, or takes the lock itself) with
 * xp_assert_unlocked. Both are asserts: a thread that breaks the rule
 * stops there instead of racing or deadlocking somewhere later (they
 * compile out with NDEBUG). */
#ifndef RPFS_XPORT_DOMAIN_H
#define RPFS_XPORT_DOMAIN_H

#include <assert.h>
#include <pthread.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdbool.h>

#include "auth.h"
#include "bufpool.h"
#include "proto.h"
#include "regcache.h"
#include "xport.h"

/* Receives a client keeps posted beyond one per request, for CREDIT
 * control messages; also the most such messages a server has unacked. */
#define XP_CTRL_RECVS 4
/* Room for header, body and descriptors in a message, beyond inline data:
 * a receive holds inline_max + XP_MSG_ROOM bytes, a fast slot fast_max +
 * XP_MSG_ROOM (both must fit the provider's largest message). */
#define XP_MSG_ROOM 4096

/* What a completion is for: the engine dispatches on it. */
enum xp_op_kind {
	XP_OP_RECV = 1, /* a posted receive (a message, or verbs' FI_RX_CQ_DATA) */
	XP_OP_SEND,	/* a message or a fast write we sent */
	XP_OP_RMA,	/* a server's RDMA read or write of client memory */
};

struct xp_op;
struct xp_role_ops;
struct xp_hs_ops;
typedef void (*xp_op_done)(struct xp_op *op, int status,
			   const struct fi_cq_data_entry *e);

/* The context of every libfabric operation. */
struct xp_op {
	struct fi_context2 fictx; /* provider scratch space, must come first */
	enum xp_op_kind kind;
	xp_op_done done; /* XP_OP_RMA: set by the file that posted it */
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

/* Work for the engine to run without the fabric lock: an application
 * callback, or a function handed over by another thread. Embedded in the
 * object it is about where there is one, so queueing allocates nothing. */
enum xp_cb_kind {
	XP_CB_FN,    /* fn(a) */
	XP_CB_REQ,   /* the request handler: handler(a = req, handler_arg) */
	XP_CB_CONN,  /* the connection handler: conn_fn(a = conn, st = up, conn_arg) */
	XP_CB_DONE,  /* done(a = req, st, b = ctx) */
	XP_CB_CHUNK, /* chunk(a = chunk, b = ctx) */
	XP_CB_CALL,  /* call->cb(a = call) */
};

struct xp_cb {
	struct xp_cb *next;
	enum xp_cb_kind kind;
	bool owned; /* allocated by xp_defer_new: the engine frees it */
	void *a, *b;
	int st;
	union xp_cb_fn {
		void (*fn)(void *a);
		xp_done_fn done;
		xp_chunk_fn chunk;
	} f; /* by kind; none for XP_CB_REQ, XP_CB_CONN, XP_CB_CALL */
};

struct xp_fabric {
	struct xp_params params;
	enum xp_role role;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* something completed (waiters without the fds) */
	bool waiter;	     /* a thread is blocked in the wait fds */
	/* The client's progress thread (xport_thread.c), when running, is the
	 * only one that sleeps in the wait fds; other waiters use cond. */
	bool has_thread, thread_stop;
	pthread_t thread;
	/* Its tick (xp_fabric_set_tick): fn every period, run without the lock;
	 * tick_running while it is. */
	void (*tick_fn)(void *arg);
	void *tick_arg;
	int64_t tick_period_ns, tick_next_ns;
	bool tick_running;
	/* Callers blocked on lock (xp_lock): the thread that drives progress
	 * lets go of it between rounds while this is nonzero. */
	int lock_wanted;
	/* Who holds lock (xp_lock, xp_unlock): for the held-lock checks. */
	bool lock_held;
	pthread_t lock_owner;

	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_pep *pep;
	int epfd; /* epoll over the CQ, EQ and post fds */
	int cq_fd, eq_fd;
	int post_fd;   /* eventfd: work handed over wakes the engine */
	bool can_wait; /* provider gave wait fds */
	bool virt_addr, prov_key, mr_local;
	/* Limits the provider reports (fi_getinfo), never assumed: verbs on
	 * rxe allows 8 MiB per message or RMA, 4 local iovs, 384 posted
	 * receives and sends per endpoint; tcp allows far more. */
	size_t iov_limit;
	size_t max_msg;	 /* ep_attr->max_msg_size: largest message or RMA */
	size_t rx_depth; /* rx_attr->size: receives one endpoint may post */
	uint64_t next_key;
	bool sw_rma; /* RMA moves only while both sides poll (tcp) */

	struct auth_key key;	    /* the cluster's */
	struct auth_replay *replay; /* server: connection requests seen */

	struct rcache *rcache; /* client: user buffers */
	struct bpool *pool;    /* server: bulk chunks */
	struct xp_pipe *pool_waiters, *pool_waiters_tail;

	struct xp_conn **conns; /* by id */
	uint32_t nconns;
	uint32_t nlive; /* server: connections not yet freed */

	xp_req_fn handler;
	void *handler_arg;
	xp_conn_fn conn_fn;
	void *conn_arg;
	xp_hello_fn hello_fn;
	void *hello_arg;
	int listen_port;
	const struct xp_role_ops *ops;	/* the client's or the server's path */
	const struct xp_hs_ops *hs_ops; /* connection management */

	/* Work for the engine: queued under the lock (deferred), or by any
	 * thread under post_lock (xp_fabric_post). */
	struct xp_cb *deferred, *deferred_tail;
	pthread_mutex_t post_lock;
	struct xp_cb *posts, *posts_tail;

	bool need_reap;	   /* a connection is ready to be freed */
	bool need_fail;	   /* a connection broke: its calls or requests to end */
	bool need_backlog; /* a connection has operations waiting to be posted */
	bool closing;	   /* xp_fabric_close under way */
	int64_t next_sweep_ns;
	int64_t last_event_ns; /* the engine last found something (for spinning) */
	int64_t spin_ns;       /* the current polling budget, up to spin_us */
	uint32_t rma_busy;     /* bulk calls (client) or RMA ops (server) in flight */
	uint32_t calls_busy;   /* client: calls started and not yet finished */
	struct xp_stats stats;
};

/* Does this thread hold fab->lock? Only the holder writes the owner, so
 * the answer is exact for the asking thread either way. */
static inline bool xp_holds_lock(const struct xp_fabric *fab)
{
	pthread_t owner;

	if (!__atomic_load_n(&fab->lock_held, __ATOMIC_ACQUIRE))
		return false;
	__atomic_load(&fab->lock_owner, &owner, __ATOMIC_RELAXED);
	return pthread_equal(owner, pthread_self());
}

#define xp_assert_locked(fab)	assert(xp_holds_lock(fab))
#define xp_assert_unlocked(fab) assert(!xp_holds_lock(fab))

/* The lock was just taken by this thread (also after a cond wait). */
static inline void xp_lock_taken(struct xp_fabric *fab)
{
	pthread_t self = pthread_self();

	__atomic_store(&fab->lock_owner, &self, __ATOMIC_RELAXED);
	__atomic_store_n(&fab->lock_held, true, __ATOMIC_RELEASE);
}

/* Take fab->lock without asking for it: wait until whoever drives
 * progress lets go. For the driver itself, taking it back between its own
 * phases (it would otherwise ask itself to let go), and for the set-up
 * and tear-down paths (open, close, connect, listen, registration). */
static inline void xp_lock_quiet(struct xp_fabric *fab)
{
	xp_assert_unlocked(fab); /* never twice: that would deadlock */
	pthread_mutex_lock(&fab->lock);
	xp_lock_taken(fab);
}

/* Take fab->lock from a caller's thread (a post, a test, a wait, a
 * server worker's reply). Whoever drives progress holds the lock across
 * its rounds, and on tcp one round receives for as long as data flows
 * (milliseconds: a test or a post waited for the whole transfer); it lets
 * a caller in between rounds (xp_engine_let_in, xport_engine.h). */
static inline void xp_lock(struct xp_fabric *fab)
{
	xp_assert_unlocked(fab);
	__atomic_add_fetch(&fab->lock_wanted, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_lock(&fab->lock);
	__atomic_sub_fetch(&fab->lock_wanted, 1, __ATOMIC_ACQ_REL);
	xp_lock_taken(fab);
}

static inline void xp_unlock(struct xp_fabric *fab)
{
	xp_assert_locked(fab);
	__atomic_store_n(&fab->lock_held, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&fab->lock);
}

/* Wait on fab->cond (lock held; let go meanwhile) until signalled or, if
 * until is not NULL, that CLOCK_REALTIME time. Returns 0 or ETIMEDOUT. */
static inline int xp_cond_wait(struct xp_fabric *fab, const struct timespec *until)
{
	int ret;

	xp_assert_locked(fab);
	__atomic_store_n(&fab->lock_held, false, __ATOMIC_RELEASE);
	if (until)
		ret = pthread_cond_timedwait(&fab->cond, &fab->lock, until);
	else
		ret = pthread_cond_wait(&fab->cond, &fab->lock);
	xp_lock_taken(fab);
	return ret;
}

/* xport_domain.c */
int64_t xp_now_ns(void);
/* libfabric returns -FI_Exxx, which equal -Exxx for the errno range. */
int xp_errno(int fi_ret);
/* fi_getinfo for the fabric's provider; node/service/flags as there. */
int xp_getinfo(struct xp_fabric *fab, const char *node, const char *service,
	       uint64_t flags, struct fi_info **out);
/* Provider, fabric, domain, queues and wait fds of fab (params set). */
int xp_domain_open(struct xp_fabric *fab);
/* Closes what xp_domain_open opened (connections must be gone). */
void xp_domain_close(struct xp_fabric *fab);
int xp_mr_reg_locked(struct xp_fabric *fab, void *addr, size_t len, struct xp_mr **out);
/* Queue work for the engine to run after it lets go of the lock (lock
 * held). xp_defer_new allocates the entry, for f (the member kind names,
 * e.g. (union xp_cb_fn){.done = fn}) on a, b and st: -ENOMEM if it
 * cannot. */
void xp_defer(struct xp_fabric *fab, struct xp_cb *cb);
int xp_defer_new(struct xp_fabric *fab, enum xp_cb_kind kind, union xp_cb_fn f, void *a,
		 void *b, int st);

#endif
