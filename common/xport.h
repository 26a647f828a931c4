/* rpfs transport: request/reply over one reliable RDMA connection per
 * client-server pair, with three data paths ("PVFS over InfiniBand",
 * Wu/Wyckoff/Panda):
 *
 *   inline  (<= inline_max)  data rides in the request (write) or reply (read)
 *                            send/recv message: one copy, no registration.
 *   fast    (<= fast_max)    the sender RDMA-writes header and data into a slot
 *                            of the peer's pre-registered Fast RDMA buffer with
 *                            immediate data naming the slot: no extra message.
 *   bulk    (>  fast_max)    the client registers its memory (registration
 *                            cache) and sends descriptors; the server moves the
 *                            data itself in pipelined chunks from its zoned
 *                            buffer pool (RDMA read for writes, write for reads).
 *
 * Credits: a client never sends more messages than the server has receive
 * buffers posted for it; credits come back piggybacked on replies, or in a
 * CREDIT control message when the server frees receives early.
 *
 * The API is asynchronous. A client fills a struct xp_call and starts it;
 * completion is observed with xp_call_test/xp_call_wait or a callback run
 * from progress. A server gets each request as a struct xp_req in a handler
 * called from its progress loop, moves data with xp_req_pull/xp_req_push
 * (or xp_req_pipeline), and finishes with xp_req_reply.
 *
 * Threads: a client fabric may be used from many threads (one lock; whoever
 * waits drives progress). A server fabric is driven by one progress thread;
 * other threads hand work back to it with xp_fabric_post. Callbacks (the
 * request handler, connection events, done and chunk callbacks, call
 * callbacks) run from progress after it let go of the fabric's lock, so
 * they may call any of these functions. */
#ifndef RPFS_XPORT_H
#define RPFS_XPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "auth.h"
#include "params.h"

struct xp_fabric;
struct xp_conn;
struct xp_req;
struct xp_call;

enum xp_role { XP_CLIENT = 1, XP_SERVER = 2 };

/* ---- fabric: provider, domain, completion queue, registration ---------- */

/* Open the provider named by p->provider (or RPFS_PROVIDER, or verbs if a
 * device exists, else tcp) for a cluster whose members hold key: every
 * connection proves it both ways before anything is allocated for the peer
 * (auth.h). Returns 0 or a negative errno (the cause is logged). */
int xp_fabric_open(const struct xp_params *p, enum xp_role role,
		   const struct auth_key *key, struct xp_fabric **out);
void xp_fabric_close(struct xp_fabric *fab);
const char *xp_fabric_provider(const struct xp_fabric *fab);
/* The provider an empty provider setting (and no RPFS_PROVIDER) opens on
 * this host: "verbs" where an RDMA device and libfabric's verbs provider
 * are there, else "tcp". For `rpfs settings`; costs a fi_getinfo. */
const char *xp_provider_default(void);
/* "libfabric MAJOR.MINOR, embedded" (linked into librpfs-common, hidden:
 * configure --with-embedded-libfabric) or "..., the system's". */
const char *xp_libfabric_desc(char *buf, size_t len);

/* Drive completions and connection events for up to timeout_ms (0: poll
 * once, no wait), as rpfsd's progress thread does: poll, within a budget
 * (at most spin_us) learnt from the gaps between events, unless bulk data
 * moves, then sleep in the wait fds.
 * Returns the number of events handled or a negative errno. */
int xp_progress(struct xp_fabric *fab, int timeout_ms);

/* Run fn(arg) on the progress thread soon (thread-safe, wakes a waiting
 * progress call). Used by server workers to hand completions back. */
int xp_fabric_post(struct xp_fabric *fab, void (*fn)(void *arg), void *arg);

/* Client: run fn(arg) on the progress thread every period_ms, without
 * the fabric's lock (as a deferred callback runs), for housekeeping that
 * must not wait for the program to call in. fn NULL stops it; it returns
 * once a tick under way has returned (never call it from fn). -ENOTSUP
 * without a progress thread. */
int xp_fabric_set_tick(struct xp_fabric *fab, void (*fn)(void *arg), void *arg,
		       int period_ms);

/* Counters for tests and benchmarks. */
struct xp_stats {
	uint64_t calls[4];	 /* by path (index enum xp_path) */
	uint64_t credit_waits;	 /* calls that waited for a credit */
	uint64_t slot_waits;	 /* calls that waited for a fast slot */
	uint64_t credit_msgs;	 /* CREDIT control messages sent */
	uint64_t fast_zero_copy; /* fast writes sent straight from user memory */
	uint64_t bulk_chunks;	 /* bulk RMA chunks moved (server) */
	uint64_t rcache_hits, rcache_misses;
	uint64_t proto_errors; /* connections closed for a bad message */
	uint64_t timeouts;     /* operations failed for lack of progress */
	uint64_t idle_waits;   /* progress calls that blocked */
	uint64_t conn_refused; /* server: requests refused before any allocation */
	uint64_t conns_live;   /* server: connections allocated and not yet freed */
	uint64_t conn_bytes;   /* server: memory those connections hold */
	uint64_t bytes[4];     /* server: request data by path (written or asked for) */
	uint64_t pool_waits;   /* server: bulk chunks that waited for a pool buffer */
	uint64_t conns_total;  /* server: connections accepted since start */
};
void xp_fabric_stats(struct xp_fabric *fab, struct xp_stats *st);

/* ---- memory registration (for callers that keep buffers registered) ---- */

/* Client: register a request's buffers as the application gave them,
 * before they are cut into per-server pieces, and hold them until
 * xp_mem_release. The bulk calls' pieces then find their region in the
 * registration cache, and so does the next request on the same buffers.
 * Registered piece by piece instead (1 MiB stripes: 256 regions for a
 * 256 MiB buffer), a large buffer needed more regions than the cache keeps
 * unused, so every request registered them all again: 150-300 us of CPU in
 * each 256 MiB post. *out is NULL where there is no cache (a server). */
struct xp_mem_hold;
int xp_mem_hold(struct xp_fabric *fab, const struct iovec *mem, int n,
		struct xp_mem_hold **out);
void xp_mem_release(struct xp_fabric *fab, struct xp_mem_hold *h);

struct xp_mr;
int xp_mr_reg(struct xp_fabric *fab, void *addr, size_t len, struct xp_mr **out);
void xp_mr_dereg(struct xp_mr *mr);
void *xp_mr_desc(struct xp_mr *mr);

/* Register through the fabric's registration cache (client side). */
int xp_cache_reg(struct xp_fabric *fab, const void *addr, size_t len, void **region);
void xp_cache_unreg(struct xp_fabric *fab, void *region);

/* ---- connections ------------------------------------------------------- */

/* Application data of the handshake, opaque to the transport: the client's
 * HELLO carries data (who it is, which server it expects), the server's
 * answer comes back in rep, also when it refuses. Both are covered by the
 * handshake's MACs, so neither can be forged or altered without the key. */
#define XP_HELLO_MAX 1024
struct xp_hello {
	const void *data; /* in: at most XP_HELLO_MAX bytes */
	size_t len;
	void *rep; /* out: the server's answer (at most rep_max bytes kept) */
	size_t rep_max;
	size_t rep_len;
};

/* Client: connect to host:port and do the handshake; blocks up to the
 * timeout. hello may be NULL. On failure *why (if not NULL, whylen bytes)
 * names the server and the cause. Errors: -EKEYREJECTED (the server did
 * not accept our key, or could not prove it holds it), -ETIME (our clock
 * and the server's differ by more than auth_window_s), -EPROTONOSUPPORT
 * (another protocol version), -EUSERS (the server has too many
 * connections), the server's own refusal of the hello, or a transport
 * error. */
int xp_connect(struct xp_fabric *fab, const char *host, const char *port,
	       struct xp_hello *hello, struct xp_conn **out, char *why, size_t whylen);
/* Client: close after outstanding calls finish (they fail if the peer is gone). */
void xp_conn_close(struct xp_conn *c);
/* Break c now (its owner still closes it): its calls in flight end with
 * err, as if the peer had gone, without waiting for timeout_ms. For a peer
 * known to be down (a server's forwards to a stopped one). */
void xp_conn_abort(struct xp_conn *c, int err, const char *why);
/* 0 while usable; else the negative errno that broke it. */
int xp_conn_error(struct xp_conn *c);
/* Milliseconds since a call started or an answer came on it (client). */
int64_t xp_conn_idle_ms(struct xp_conn *c);
const char *xp_conn_peer(const struct xp_conn *c);

/* ---- client calls ------------------------------------------------------ */

typedef void (*xp_call_cb)(struct xp_call *call);

struct xp_call {
	/* in */
	const void *req; /* request body (opaque to the transport) */
	size_t req_len;
	const struct iovec *wr_iov; /* data for the server (a write) */
	int wr_cnt;
	const struct iovec *rd_iov; /* room for data from the server (a read) */
	int rd_cnt;
	void *rep; /* room for the reply body */
	size_t rep_max;
	int path;      /* enum xp_path: AUTO unless forced */
	xp_call_cb cb; /* optional, called from progress on completion */
	void *arg;
	/* out */
	int status;	/* 0 or negative errno (transport or server) */
	size_t rep_len; /* reply body bytes */
	size_t rd_len;	/* data bytes read */
	int used_path;	/* enum xp_path that carried the data */
	/* private to the transport */
	struct {
		struct xp_conn *conn;
		int done;
		uint32_t tag;
		uint32_t slot;
		void **regions; /* registration cache regions in use */
		int nregions;
		bool queued_credit, queued_slot, replied;
		struct xp_call *next;
		size_t wr_len, rd_cap;
		int pending_tx;
	} priv;
};

/* Start a call (a write and a read in one call are not allowed). Returns 0
 * (started or queued for a credit) or a negative errno: -E2BIG when the
 * request body and descriptors do not fit one message (split the access),
 * -ENOTCONN when the connection is broken. */
int xp_call_start(struct xp_conn *c, struct xp_call *call);
/* Start calls[i] on conns[i] (one fabric) for i < n, in order, under one
 * acquisition of the fabric's lock, so no completion work runs between
 * them. Stops at the first failure: *started tells how many started
 * (those must be waited for); returns 0 or that call's error. */
int xp_calls_start(struct xp_conn *const *conns, struct xp_call *const *calls, int n,
		   int *started);
/* The same, but every call is started or ends: one that can't start ends
 * with its error at once, as a posted call does, so every call is waited
 * for and tells its own outcome (a mirrored request sends a failed call to
 * another copy). Returns how many could not start. */
int xp_calls_start_each(struct xp_conn *const *conns, struct xp_call *const *calls,
			int n);
/* Hand calls[i] (on conns[i], one fabric) to the engine without taking the
 * fabric's lock: the progress thread starts them in order, woken through
 * the post eventfd (or, without a progress thread, they start here). For
 * nonblocking requests: under the lock a post could wait for the progress
 * thread, which on tcp may be inside the provider's progress moving
 * megabytes (the same 256 MiB post took 67 us to 2 ms of wall time for
 * 65-107 us of its own CPU). Returns 0 or -ENOMEM/-EINVAL before any is
 * handed over; after 0 every call completes, a call that could not start
 * with its error (-E2BIG, -ENOTCONN...), and must be tested or waited for. */
int xp_calls_post(struct xp_conn *const *conns, struct xp_call *const *calls, int n);
/* The same, holding mem[0..nmem) registered (xp_mem_hold, into *hold)
 * before the calls start, on the progress thread too: registering a cold
 * buffer pins its pages (verbs), a cost that grows with the buffer and
 * does not belong in a post. If registering fails, every call ends with
 * that error, also left in *hold_err (0 otherwise), and *hold stays NULL.
 * Both are set before any call completes; *hold is the caller's to release
 * once every call completed. */
int xp_calls_post_held(struct xp_conn *const *conns, struct xp_call *const *calls, int n,
		       const struct iovec *mem, int nmem, struct xp_mem_hold **hold,
		       int *hold_err);
/* 1 when done (call->status is the result), 0 while in progress. */
int xp_call_test(struct xp_call *call);
/* Drive progress until done; returns call->status. */
int xp_call_wait(struct xp_call *call);
/* Wait at most timeout_us (asleep once the learnt polling budget is
 * spent): 1 when done, 0 when the time ran out first. */
int xp_call_timedwait(struct xp_call *call, int64_t timeout_us);
/* Convenience: start + wait. */
int xp_call(struct xp_conn *c, struct xp_call *call);

/* Largest number of memory pieces a bulk call can describe with a body of
 * body_len bytes. */
int xp_call_max_desc(struct xp_conn *c, size_t body_len);

/* ---- server ------------------------------------------------------------ */

typedef void (*xp_req_fn)(struct xp_req *req, void *arg);
typedef void (*xp_conn_fn)(struct xp_conn *c, int up, void *arg);

/* Listen on host:port ("0" picks a free port; xp_listen_port tells it).
 * Each request reaches handler from the progress loop. */
int xp_listen(struct xp_fabric *fab, const char *host, const char *port,
	      xp_req_fn handler, void *arg);
int xp_listen_port(struct xp_fabric *fab);
/* Optional: told when a connection comes up or goes down (not for the
 * connections xp_fabric_close tears down). */
void xp_set_conn_handler(struct xp_fabric *fab, xp_conn_fn fn, void *arg);
/* Optional: decides on each authenticated HELLO, from the progress loop:
 * returns 0 to accept or a negative errno to refuse (the client's
 * xp_connect fails with it); may write an answer of up to rep_max bytes to
 * rep (sent either way) and attach state with xp_conn_set_ctx. Without a
 * handler every authenticated client is accepted. */
typedef int (*xp_hello_fn)(struct xp_conn *c, const void *data, size_t len, void *rep,
			   size_t rep_max, size_t *rep_len, void *arg);
void xp_set_hello_handler(struct xp_fabric *fab, xp_hello_fn fn, void *arg);
/* Per-connection state of the application (server side): free_ctx (may be
 * NULL) runs when the transport frees the connection, however it ends. */
void xp_conn_set_ctx(struct xp_conn *c, void *ctx, void (*free_ctx)(void *ctx));
void *xp_conn_ctx(const struct xp_conn *c);

const void *xp_req_body(const struct xp_req *r, size_t *len);
int xp_req_dir(const struct xp_req *r);		/* enum proto_dir */
size_t xp_req_data_len(const struct xp_req *r); /* bytes written, or read room */
struct xp_conn *xp_req_conn(const struct xp_req *r);

/* Inline and fast writes: the data is already here (NULL on the bulk path). */
const void *xp_req_wr_data(const struct xp_req *r);
/* Inline and fast reads: where the reply data goes, so storage can read
 * straight into it (NULL on the bulk path). */
void *xp_req_rd_buf(struct xp_req *r);

typedef void (*xp_done_fn)(struct xp_req *r, int status, void *ctx);
/* Bulk: move [off, off + len) of the client's data into/out of local memory
 * registered as mr (from the buffer pool or xp_mr_reg). done runs from
 * progress. On the inline and fast paths these copy and complete at once. */
int xp_req_pull(struct xp_req *r, uint64_t off, void *buf, size_t len, void *mr_desc,
		xp_done_fn done, void *ctx);
int xp_req_push(struct xp_req *r, uint64_t off, const void *buf, size_t len,
		void *mr_desc, xp_done_fn done, void *ctx);

/* Pipelined bulk transfer with double buffering. For a write request each
 * chunk is pulled into a pool buffer, then handed to store(); for a read
 * request load() fills a pool buffer, then it is pushed. The callback
 * starts the storage I/O and later calls xp_chunk_done() (from any thread),
 * so up to pipeline_depth chunks overlap network and storage. finish runs
 * once, after the last chunk or the first error. */
struct xp_chunk {
	struct xp_req *req;
	void *buf;
	uint64_t off; /* offset in the request's data stream */
	size_t len;
	void *priv;
};
typedef void (*xp_chunk_fn)(struct xp_chunk *ch, void *ctx);
int xp_req_pipeline(struct xp_req *r, xp_chunk_fn io, xp_done_fn finish, void *ctx);
void xp_chunk_done(struct xp_chunk *ch, int status);

/* Finish the request: status (0 or negative errno), reply body, and for
 * reads how many data bytes were produced. Frees r. */
int xp_req_reply(struct xp_req *r, int status, const void *body, size_t len,
		 size_t rd_len);

#endif
