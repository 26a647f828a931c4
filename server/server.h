/* rpfsd internals: the state shared by the server's files.
 *
 *   main.c       command line, config, storage directory, signals, shutdown
 *   dispatch.c   the server fabric and its progress thread; decodes each
 *                request, checks its capability (access.c) and runs its
 *                handler where the table of operations says (rpc_ops.h:
 *                PING at once, lock, counter, SEARCH and META_HANDLES
 *                ops on the progress thread, everything else on workers,
 *                sched.c, or as a bulk transfer, io.c)
 *   op.c         an op's end: its reply, the hand-back from workers
 *   sched.c      the request manager: worker threads for blocking work,
 *                per-connection FIFO queues served round-robin, a cap on
 *                the bulk pipelines each connection may have running, and
 *                those pipelines run, each chunk straight to a worker
 *   meta.c       role meta: namespace and attributes in LMDB, byte-range
 *                locks, fetch-and-add counters; its life cycle and
 *                meta_run, its concerns in meta_*.c (meta_priv.h says
 *                which file does what)
 *   io.c         role io: one datafile per handle, pread/pwrite, pipelined
 *                bulk transfers
 *   datafile.c   the datafile store: every byte io.c moves to or from a
 *                datafile, checked against its checksums on every read
 *   blocksum.c   the checksum math: a CRC32C per datafile block, bound to
 *                its place; the checksum file's format
 *   meta_record.c  a checksum in every metadata record, bound to its key;
 *                the upgrade of an old store
 *   meta_attr.c  the stored form of a namespace entry (versioned, apart
 *                from the wire form)
 *   peer.c       this server as a client of the others (parent lookups,
 *                datafile removal)
 *   identity.c   the cluster identity of the storage directory, and who
 *                each connected client is (its hello and credentials)
 *   access.c     who may do what: modes, owners, capabilities
 *   search.c     search permission on every ancestor of a path, asked of
 *                the metadata servers that hold them (SEARCH)
 *   store.c      the metadata store (LMDB) checked before it is mapped, and
 *                the storage directory's lock (not the datafiles: those are
 *                datafile.c's)
 *   check.c      rpfsd --check: the storage checked (and repaired) offline
 *   check_orphans.c  --check asks the metadata servers which of this
 *                server's datafiles belong to no file (META_HANDLES)
 *   thread_binding.c  the progress thread and workers bound with hwloc
 *
 * Threads: the progress thread owns the transport (every xp_req_* call but
 * xp_chunk_done happens there); workers do pread/pwrite, LMDB and fsync and
 * hand results back with xp_fabric_post. An op (struct srv_op) is one
 * request from decoding to reply. */
#ifndef RPFS_SERVER_H
#define RPFS_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "rpc.h"
#include "xport.h"

/* Largest reply body the server produces (READDIR fills up to this). A
 * client's receive buffers hold inline_max + 4096 bytes, header included,
 * so this fits whatever inline_max is. */
#define SRV_REPLY_CAP 4000

struct sched;
struct sched_conn;
struct meta;

/* What this server did, for RPC_STATS (stats.c): relaxed atomics, bumped
 * from any thread on hot paths without a lock. The transport's own
 * counters (paths, credits, slots, pool, connections) are in xp_stats. */
#define SRV_STAT_OPS 64
struct srv_stats {
	atomic_uint_fast64_t req[SRV_STAT_OPS]; /* requests decoded, by op code */
	atomic_uint_fast64_t errors;		/* replies with an error status */
	atomic_uint_fast64_t bulk_waits;	/* bulk transfers queued behind their
						 * connection's cap (sched.c) */
};
#define SRV_COUNT(s, field)                                                              \
	atomic_fetch_add_explicit(&(s)->stats.field, 1, memory_order_relaxed)
struct iosrv;
struct io_forward;
struct peers;
struct place;

struct srv {
	struct rpfs_config cfg;
	struct auth_key key; /* the cluster's (config key_file) */
	int self;	     /* index in cfg.servers */
	const struct rpfs_server_cfg *me;
	int nworkers;

	struct xp_fabric *fab; /* server side */
	int port;
	pthread_t progress_thr;
	bool progress_running;
	atomic_int stop_progress;
	atomic_int draining;  /* shutting down: refuse new requests */
	atomic_long live_ops; /* requests not yet replied to */
	/* Start-up done (a metadata server's store check passed): until then
	 * PING answers -EAGAIN, so a launcher's wait ends when the server is
	 * ready, not when it listens (it listens first: the servers it asks
	 * may be waiting for it). */
	atomic_bool ready;

	struct sched *sched;
	struct meta *meta;	/* NULL unless role meta */
	struct iosrv *io;	/* NULL unless role io */
	struct io_forward *fwd; /* role io: mirrored writes' forwarding (io_forward.c) */
	struct ec_holds *ec_holds;   /* role io: ranges of ec data cells held still */
	struct ec_resync *ec_resync; /* role io: resyncs of stale ec parity members */
	struct mirror_dirty
		*dirty; /* role io: datafiles whose copies may lag (mirror_dirty.c) */
	struct io_rebuild *rebuild; /* role io: lost copies to rebuild (io_rebuild.c) */
	struct io_downs *downs;	    /* role io: I/O servers the heartbeats say are down */
	struct io_scrub *scrub;	    /* role io: the background scrub (io_scrub.c) */
	struct peers *peers;
	struct io_states *io_states; /* role meta: its I/O servers' states */
	struct meta_resync *resync;  /* role meta: stale copies' resync (meta_resync.c) */
	struct place *place;
	struct srv_stats stats;
};

struct srv_op;
struct xp_chunk;
/* Worker: one chunk of a bulk request's data stream, stored or loaded;
 * returns 0 or a negative errno. */
typedef int (*sched_chunk_fn)(struct srv_op *op, struct xp_chunk *ch);

/* A job for a worker thread. */
struct sched_job {
	struct sched_job *next;
	void (*run)(struct sched_job *job);
};

/* One request, from its decoding to its reply. */
struct srv_op {
	struct sched_job job; /* the blocking part, run by a worker */
	struct srv *s;
	struct xp_req *r;
	struct xp_conn *conn;
	struct sched_conn *sc;
	struct srv_op *bulk_next;  /* sched.c: waiting for a bulk slot */
	sched_chunk_fn bulk_chunk; /* sched.c: what a worker does with a chunk */

	atomic_uint_least64_t bad_plus1; /* io.c: damaged datafile offset + 1 */
	int status;			 /* reply status */
	bool rep_on_error; /* a failed op still sends rep (the error's detail) */
	bool mirror_dirty; /* holds its handle in mirror_dirty.c's list */
	size_t rep_len;	   /* reply body bytes in rep */
	size_t rd_len;	   /* read data bytes */

	/* IO_READ / IO_WRITE: segments and the end of each in the data stream */
	struct rpc_seg *segs;
	uint64_t *seg_end;
	uint64_t total;
	struct io_write *io_wr; /* io.c: IO_WRITE's chunks (io_write_free) */
	bool forwarded;		/* io_forward.c: handed to the copies already */
	/* ec_hold.c: an ec write's span, and whether it is parked behind a
	 * hold or in flight (store to last delta); an IO_HOLD parked until
	 * the writes of its range are done */
	uint8_t ec_state;
	uint64_t ec_lo, ec_hi;
	struct srv_op *ec_next;

	struct rpc_req q;		   /* decoded body (q.path points into q) */
	const struct rpc_op_desc *desc;	   /* q.op's line of the table (rpc_ops.h) */
	int (*handler)(struct srv_op *op); /* and its handler */
	uint8_t rep[SRV_REPLY_CAP];
};

/* The handler of every op, from the table of operations (rpc_ops.h): each
 * fills op->rep and op->rep_len and returns the reply status, on the thread
 * the table says. Each is defined by the file of its role and concern
 * (meta_*.c, io.c, search.c, stats.c, op.c). */
#define SRV_HANDLER_DECL(NAME, code, nm, route, body, flags, access, runs, handler)      \
	int handler(struct srv_op *op);
RPC_OPS(SRV_HANDLER_DECL)
#undef SRV_HANDLER_DECL

/* dispatch.c */
int srv_progress_start(struct srv *s);
void srv_progress_stop(struct srv *s);
/* op.c */
/* Worker: an op of route RPC_TO_ANY, its handler and its reply. */
void srv_op_run(struct sched_job *job);
/* Reply and free the op: on the progress thread only. */
void srv_op_finish(struct srv_op *op);
/* From a worker: hand the op back to the progress thread to be finished. */
void srv_op_complete(struct srv_op *op);

/* sched.c */
int sched_start(struct srv *s);
void sched_stop(struct srv *s);
/* Progress thread: queue op->job on its connection's FIFO. */
void sched_submit(struct srv_op *op);
/* Any thread: run job for op's connection, ahead of its waiting requests
 * (bulk chunks belong to requests already started). */
void sched_submit_urgent(struct srv_op *op, struct sched_job *job);
/* Progress thread: run op as a bulk pipeline (xp_req_pipeline) now, or
 * once the connection has fewer than its cap of running pipelines. The
 * pipeline's chunks go straight from the transport to a worker that runs
 * chunk on each and tells the transport it is done; the pipeline's end
 * finishes op (srv_op_finish). */
void sched_bulk(struct srv_op *op, sched_chunk_fn chunk);
/* Progress thread: the connection record (created on first use), and its
 * release when an op ends or the connection goes down. */
struct sched_conn *sched_conn_get(struct srv *s, struct xp_conn *c);
void sched_conn_put(struct srv *s, struct sched_conn *sc);
void sched_conn_down(struct srv *s, struct xp_conn *c);

/* meta.c */
/* The metadata store's namespace records (LMDB database "ns"), also read
 * by rpfsd --check (check.c): a value is an entry's attributes, then its
 * full path, in the stored form of meta_attr.h. */
/* The key of path's record into k (8 + RPC_NAME_MAX bytes): the parent's
 * hash, big-endian, then the name. Returns its length, 0 for a path with
 * no valid last name. */
size_t meta_ns_key(const char *path, uint8_t *k);
int meta_open(struct srv *s);
void meta_close(struct srv *s);
/* Worker: a metadata op, once its path was found to be this server's (the
 * route RPC_TO_PATH_META) and the client may search its ancestors. */
void meta_run(struct sched_job *job);
void meta_conn_down(struct srv *s, struct xp_conn *c);
struct srv_client;
/* The first component of path (depth 1 = the first name below "/") that
 * this server holds and that refuses who a search: each ancestor must be a
 * directory granting search (x), and path itself, when want is not 0, a
 * directory granting want. *r gets its depth and -EACCES, -ENOENT,
 * -ENOTDIR or -EIO (depth 0, status 0: none refuses). Returns 0, or the
 * error of the store itself. Any thread (one LMDB read transaction). */
int meta_search_local(struct srv *s, const struct srv_client *who, const char *path,
		      unsigned want, struct rpc_search_rep *r);
/* At start, once listening: a store that never handed out a handle asks
 * every I/O server (waiting up to timeout_ms for those not up yet) for
 * datafiles of its handles, and refuses (-ESTALE, the reason in why) if
 * any has some or can't be asked, unless accept_empty. No handle is handed
 * out before this has passed. */
int meta_check_store(struct srv *s, bool accept_empty, char *why, size_t whylen);

/* io.c */
int io_open(struct srv *s);
void io_close(struct srv *s);
/* Progress thread: start an IO_WRITE or IO_READ (RPC_RUNS_STREAMED): a
 * worker job for data that came inline, else a bulk pipeline. */
void io_dispatch(struct srv_op *op);
/* io_dispatch's rest, for an ec write that waited behind a hold. */
void io_dispatch_go(struct srv_op *op);
/* Worker: an I/O op, and the detail of damaged data in its reply. */
void io_run(struct sched_job *job);
/* Worker: remove the datafile of handle (for a local REMOVE). */
int io_remove_handle(struct srv *s, uint64_t handle);
/* Worker: make the datafile of a new file (IO_CREATE, or a local CREATE):
 * 0, -EEXIST if the handle already has one this create did not make. */
int io_create_handle(struct srv *s, uint64_t handle, uint64_t nonce, uint32_t slot,
		     bool incomplete);
/* Worker: the datafiles of metadata server meta's handles (IO_PROBE). */
int io_probe(struct srv *s, uint32_t meta, struct rpc_probe *p);
/* Free what io.c keeps for a write request (op.c, with the op). */
void io_write_free(struct srv_op *op);
/* An ec data cell's write (RPC_IO_PARITY), once stored: old ^ new of each
 * byte of its data stream (op->total bytes); NULL for other ops. */
const unsigned char *io_write_delta(const struct srv_op *op);
/* io.c: len bytes of handle's datafile at off, checked (io_forward.c's
 * read-back). */
int io_read_local(struct srv *s, uint64_t handle, void *buf, uint64_t len, uint64_t off);
/* meta_resync.c: the thread that has stale copies of mirrored files
 * resynced (role meta, started with the heartbeats). Stopping returns false
 * when it is still in a call after a short while (then the peers it uses
 * are left to exit). Its counters for rpfs stats. */
int meta_resync_start(struct srv *s);
bool meta_resync_stop(struct srv *s);
void meta_resync_counts(struct srv *s, uint64_t *stale_copies, uint64_t *asked,
			uint64_t *done, uint64_t *failed);
/* At the resync thread's last round: the stale copies on I/O server io,
 * and whether its rebuild walk is still running (rpfs df). */
void meta_resync_of_io(struct srv *s, uint32_t io, uint32_t *stale, bool *rebuilding);
/* meta_rebuild.c: I/O servers whose lost copies are still being looked
 * for, and the copies marked stale for them so far (rpfs stats). */
void meta_rebuild_counts(struct srv *s, uint64_t *pending, uint64_t *marked);
/* The size of handle's datafile (io_forward.c's resync). */
int io_size_local(struct srv *s, uint64_t handle, uint64_t *size);
/* Write [off, off + len) of handle's datafile from buf, then (size not
 * UINT64_MAX) cut or grow it to size (an ec parity member's resync). */
/* An ec parity member's record of its data members' sizes becomes
 * ends[0..n) (ec_ends.h; its resync's end). */
int io_ends_local(struct srv *s, uint64_t handle, const uint64_t *ends, uint32_t n);
int io_write_local(struct srv *s, uint64_t handle, const void *buf, uint64_t len,
		   uint64_t off, uint64_t size);
/* The mirror epoch of handle's datafile now. */
int io_epoch_local(struct srv *s, uint64_t handle, uint64_t *epoch);
/* The mirror epoch of handle's datafile becomes epoch (if below: kept). */
int io_raise_epoch(struct srv *s, uint64_t handle, uint64_t epoch);

/* stats.c: RPC_STATS (serve_stats) runs on a worker (statvfs and the
 * stores' counts). */
/* The file system holding dir: sizes and its fsid (a hash of this host's
 * boot id and the device: equal for every server whose storage is on that
 * file system, on any host); objects 0. */
int srv_storage(const char *dir, struct rpc_statfs *sf);
/* The entries of this server's metadata store (meta.c), datafiles (io.c). */
int meta_files(struct srv *s, uint64_t *n);
/* io.c, for the scrub: the handles of the datafiles now (*n; NULL when
 * none); up to len bytes of
 * handle's datafile at off into buf (*got of them, 0 past its end),
 * against their checksums: -EBADMSG for damage (logged unless sc logged
 * it lately, and a mirrored copy reported to be mended). */
uint64_t *io_datafile_handles(struct srv *s, size_t *n);
int io_scrub_read(struct srv *s, uint64_t handle, void *buf, uint64_t len, uint64_t off,
		  uint64_t *got, struct io_scrub *sc);
/* io.c: datafiles, and the descriptor cache's hits and misses. */
void io_counts(struct srv *s, uint64_t *files, uint64_t *fd_hits, uint64_t *fd_misses);

/* peer.c: blocking calls to other servers, from workers. */
int peer_init(struct srv *s);
void peer_fini(struct srv *s);
int peer_call(struct srv *s, uint32_t server, struct xp_call *call);
/* The same, but a server that can't be reached is logged at info: the
 * caller (io_states.c's heartbeat) says what it means. */
int peer_call_quiet(struct srv *s, uint32_t server, struct xp_call *call);
/* While waiting is true, a peer that can't be reached is logged at info,
 * not warn: at start-up the others may be starting too, and the caller
 * says what it finally could not do. */
void peer_waiting(struct srv *s, bool waiting);
/* Break the kept connection to server (if no connect to it is under way):
 * calls waiting on it end now with -EHOSTDOWN (io_downs.c, when a
 * heartbeat says it is down). */
void peer_abort(struct srv *s, uint32_t server, const char *why);
/* Memory held by this server's connections to the others. */
uint64_t peer_conn_bytes(struct srv *s);
/* calls[i] to servers[i], all in flight at once, meanwhile(arg) (if not
 * NULL) run while they are; each one's result in calls[i].status,
 * transport[i] true if it failed for want of a working connection.
 * Returns 0 or the first failure. */
int peer_call_all(struct srv *s, const uint32_t *servers, struct xp_call *calls,
		  bool *transport, int n, void (*meanwhile)(void *arg), void *arg);

/* identity.c */
/* Who a connected client is: from its hello, for permission checks. */
struct srv_client {
	bool peer; /* another server of the cluster */
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[64];
};
/* The transport's hello handler (xp_hello_fn): refuses a client whose
 * config disagrees with ours, remembers an accepted one. */
int ident_hello(struct xp_conn *c, const void *data, size_t len, void *rep,
		size_t rep_max, size_t *rep_len, void *arg);
const struct srv_client *ident_of(const struct xp_conn *c);
/* access.c: permission checks and capabilities (the trust model is
 * described there). Wanted access bits as in a mode's rwx. */
#define ACCESS_R 4u
#define ACCESS_W 2u
#define ACCESS_X 1u
/* uid 0 or another server of the cluster. */
bool access_is_super(const struct srv_client *who);
/* Is gid who's group or one of its supplementary groups? */
bool access_in_group(const struct srv_client *who, uint32_t gid);
/* Does the mode of a (owner, group, others) give who every bit of want? */
bool access_may(const struct srv_client *who, const struct rpc_attr *a, unsigned want);
/* May who add or remove an entry of directory parent (victim: the entry
 * removed or replaced, NULL when adding)? 0, -EACCES, or -EPERM (sticky). */
int access_dir_change(const struct srv_client *who, const struct rpc_attr *parent,
		      const struct rpc_attr *victim);
/* A capability for rights (RPC_CAP_*) on handle, lasting cap_lifetime_s. */
void access_grant(struct srv *s, uint64_t handle, uint32_t rights, struct rpc_cap *c);
/* 0 if c is this cluster's grant for handle with every right of need and
 * not expired (unless allow_expired); -EACCES or -EKEYEXPIRED. */
int access_check_cap(struct srv *s, uint64_t handle, const struct rpc_cap *c,
		     uint32_t need, bool allow_expired);
/* A decoded request: does its connection have an identity, and its
 * capability cover the op? 0, or the status to reply (-EACCES; ops
 * between servers from a client: -EPERM). After it, ident_of(op->conn)
 * is never NULL. */
int access_check_request(struct srv_op *op);

/* search.c: search permission on every ancestor of a path, wherever its
 * components live (the cost and the consistency are described there). */
/* What resolving a component gives who: st (its lookup's status) if not
 * 0, -ENOTDIR if a is no directory, -EACCES if a's mode refuses want. */
int search_entry(const struct srv_client *who, int st, const struct rpc_attr *a,
		 unsigned want);
/* May who search every ancestor of paths[i] (and, want[i] != 0, use
 * paths[i] itself, a directory, for want[i]), for n (1 or 2) paths? 0, or
 * the first refusal in path order of the first path refused (-EACCES,
 * -ENOENT, -ENOTDIR), or -EHOSTDOWN / the error when a metadata server
 * holding an earlier component could not answer (logged). Worker. */
int search_paths(struct srv *s, const struct srv_client *who, const char *const *paths,
		 const unsigned *want, int n);
/* Worker: the check of a client's path request (its ancestors; READDIR
 * also reads the directory; RENAME both paths); 0 for root, the servers
 * and requests naming no path. */
int search_request(struct srv_op *op);
/* serve_search, on the progress thread: another metadata server's SEARCH. */

/* At start: the storage directory is this server's of this cluster (or
 * new, then it becomes so). 0, or -ESTALE with the reason on stderr. */
int ident_check_storage(struct srv *s);

/* check.c: rpfsd --check, on a stopped server's storage. Returns the exit
 * status: 0 clean, 1 problems found (repaired or not), 2 can't check. */
#define CHECK_REPAIR	     1u /* fix what is safe: orphans, indexes */
#define CHECK_ACCEPT_DAMAGED 2u /* also take damaged blocks' data as it is */
#define CHECK_COPIES	     4u /* compare mirrored datafiles with their copies */
int check_storage(struct srv *s, unsigned flags);

/* thread_binding.c */
void binding_init(struct srv *s);
void binding_progress_thread(struct srv *s);
void binding_worker(struct srv *s, int i);
void binding_fini(struct srv *s);

/* Nanoseconds since the epoch (file times). */
int64_t srv_now_ns(void);

#endif
