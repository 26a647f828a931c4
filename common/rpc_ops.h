/* The table of operations: every request of the file-service protocol, once.
 *
 * Everything that depends on which op a request is comes from this list:
 * enum rpc_op and its numbers (rpc.h), the names in counters and logs
 * (rpc_op_name), which role serves it and so where rpfsd routes it
 * (rpc_is_io_op, server/dispatch.c), the shape of the body the decoder
 * reads and the flags it accepts (rpc_decode_req, and the generic encoders
 * rpc_enc_path_op and rpc_enc_handle_op), what a client's capability must
 * grant (server/access.c), which thread runs it, and the server function
 * that does it (server.h declares every handler from this list; dispatch.c
 * calls them through it).
 *
 * A NEW OPERATION touches this table, its handler and its test, nothing
 * else, as long as its body has one of the shapes below (a new shape adds
 * its decoder to rpc.c's table of shapes, and its encoder). Its line here:
 *
 *   X(NAME, code, "name", route, body, flags, access, runs, handler)
 *
 *   NAME     the op is RPC_NAME in enum rpc_op
 *   code     its number on the wire: never changed, never reused (47 stays
 *            unused: tests rely on it being unknown); at most 63 to be
 *            counted by op (server.h SRV_STAT_OPS)
 *   "name"   [a-z0-9_], at most 40 bytes: its counter in `rpfs stats` is
 *            req.<name> (server/stats.c)
 *   route    RPC_TO_*: which server serves it. A server without the role
 *            replies -EOPNOTSUPP; a metadata op that names a path the
 *            server does not own is -EREMOTE before its handler runs
 *   body     RPC_BODY_*: the fields after the preamble (rpc.c lists them)
 *   flags    the preamble flags the op accepts, others are -EPROTO;
 *            RPC_FLAGS_UNCHECKED for the ops whose flags were never checked
 *   access   RPC_ACCESS_*: what a client's capability must grant
 *   runs     RPC_RUNS_*: which thread runs the handler
 *   handler  int handler(struct srv_op *op) in rpfsd: fills op->rep and
 *            op->rep_len and returns the reply status (0 or -errno). A
 *            metadata handler on a worker runs after the path owner and the
 *            search permission of its paths were checked (meta_run)
 *
 * Keep the list ordered by code. */
#ifndef RPFS_RPC_OPS_H
#define RPFS_RPC_OPS_H

/* Who serves an op. */
enum rpc_route {
	RPC_TO_ANY,	    /* any server, whatever its roles */
	RPC_TO_PATH_META,   /* the metadata server owning the path (RENAME: the source) */
	RPC_TO_EVERY_META,  /* every metadata server, for the entries it holds */
	RPC_TO_HANDLE_META, /* the metadata server that made the handle */
	RPC_TO_ANY_META,    /* whichever metadata server is asked */
	RPC_TO_IO,	    /* an I/O server (the one holding the datafile asked for) */
};

/* The body after the 8-byte preamble: rpc.c has each shape's fields. */
enum rpc_body {
	RPC_BODY_NONE,	    /* nothing (trailing bytes ignored) */
	RPC_BODY_PATH,	    /* a path */
	RPC_BODY_MKDIR,	    /* path, mode, owner */
	RPC_BODY_CREATE,    /* path, mode, owner, the layout asked for */
	RPC_BODY_SETATTR,   /* path, mask and what it sets */
	RPC_BODY_READDIR,   /* path, cookie, max */
	RPC_BODY_RENAME,    /* path, to */
	RPC_BODY_HANDLE,    /* handle, capability */
	RPC_BODY_FETCH_ADD, /* handle, capability, delta */
	RPC_BODY_LOCK,	    /* handle, capability, range, owner */
	RPC_BODY_TRUNCATE,  /* handle, capability, size */
	RPC_BODY_IO,	    /* handle, capability, slot, segments */
	RPC_BODY_IO_CREATE, /* handle, nonce, slot */
	RPC_BODY_PROBE,	    /* a server index (metadata, or I/O for MIRROR_REBUILD) */
	RPC_BODY_SEARCH,    /* path, want, an identity */
	RPC_BODY_HANDLES,   /* a count of handles, the handles */
	RPC_BODY_STALE,	    /* handle, epoch, slot, the copies' slots */
	RPC_BODY_RESYNC,    /* handle, source slot, target copy, epoch */
	RPC_BODY_REPAIR,    /* handle, capability, data slot, a copy's slot */
	RPC_BODY_DOWN,	    /* a metadata server's index, the I/O servers it finds down */
	RPC_BODY_DIGEST,    /* handle, slot, a range of the datafile */
	RPC_BODY_HOLD,	    /* handle, capability, slot, range, hold id, lease, session */
};

/* What a client's request must carry to be served (server/access.c);
 * another server of the cluster is never asked. */
enum rpc_access {
	RPC_ACCESS_FREE,   /* names no handle: the handler checks modes itself */
	RPC_ACCESS_PEERS,  /* between servers only: a client gets -EPERM */
	RPC_ACCESS_HANDLE, /* a valid capability for the handle, any rights */
	RPC_ACCESS_RENEW,  /* GETATTR: as HANDLE, expired too (renewal checks the mode) */
	RPC_ACCESS_READ,   /* a capability with read rights */
	RPC_ACCESS_WRITE,  /* a capability with write rights */
};

/* Which thread runs an op's handler. */
enum rpc_runs {
	/* On arrival, before identity and capability are checked: PING. */
	RPC_RUNS_AT_ONCE,
	/* Inline on the progress thread, right after the checks: in-memory
	 * state or a few LMDB reads, never blocking, never behind workers
	 * (a SEARCH must not wait for workers waiting on the server asking). */
	RPC_RUNS_ON_PROGRESS,
	/* On a worker, in its connection's FIFO (server/sched.c). */
	RPC_RUNS_ON_WORKER,
	/* Data: a worker for data that came inline, else the pipelined bulk
	 * transfer whose chunks go to workers (server/io.c io_dispatch). */
	RPC_RUNS_STREAMED,
};

/* The flags column: what each op accepts (the flags are in rpc.h). */
#define RPC_FLAGS_UNCHECKED 0xffffu
#define RPC_FLAGS_CREATE    (RPC_CREATE_EXCL | RPC_WANT_RIGHTS)
#define RPC_FLAGS_WANT	    RPC_WANT_RIGHTS
#define RPC_FLAGS_LOCK	    (RPC_LOCK_EXCL | RPC_LOCK_WAIT)

/* clang-format off */
#define RPC_OPS(X)                                                                       \
	X(PING,        1,  "ping",        RPC_TO_ANY,         RPC_BODY_NONE,                \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_FREE,   RPC_RUNS_AT_ONCE,     serve_ping)         \
	/* its storage and counters (rpc_stat list) */                                   \
	X(STATS,       2,  "stats",       RPC_TO_ANY,         RPC_BODY_NONE,                \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_FREE,   RPC_RUNS_ON_WORKER,   serve_stats)        \
	X(MKDIR,       10, "mkdir",       RPC_TO_PATH_META,   RPC_BODY_MKDIR,               \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_FREE,   RPC_RUNS_ON_WORKER,   serve_mkdir)        \
	X(RMDIR,       11, "rmdir",       RPC_TO_PATH_META,   RPC_BODY_PATH,                \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_FREE,   RPC_RUNS_ON_WORKER,   serve_rmdir)        \
	X(CREATE,      12, "create",      RPC_TO_PATH_META,   RPC_BODY_CREATE,              \
	  RPC_FLAGS_CREATE,    RPC_ACCESS_FREE,   RPC_RUNS_ON_WORKER,   serve_create)       \
	X(LOOKUP,      13, "lookup",      RPC_TO_PATH_META,   RPC_BODY_PATH,                \
	  RPC_FLAGS_WANT,      RPC_ACCESS_FREE,   RPC_RUNS_ON_WORKER,   serve_lookup)       \
	/* by handle; with a capability, its renewal */                                  \
	X(GETATTR,     14, "getattr",     RPC_TO_HANDLE_META, RPC_BODY_HANDLE,              \
	  RPC_FLAGS_WANT,      RPC_ACCESS_RENEW,  RPC_RUNS_ON_WORKER,   serve_getattr)      \
	X(SETATTR,     15, "setattr",     RPC_TO_PATH_META,   RPC_BODY_SETATTR,             \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_FREE,   RPC_RUNS_ON_WORKER,   serve_setattr)      \
	/* the metadata server removes the datafiles itself */                           \
	X(REMOVE,      16, "remove",      RPC_TO_PATH_META,   RPC_BODY_PATH,                \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_FREE,   RPC_RUNS_ON_WORKER,   serve_remove)       \
	X(READDIR,     17, "readdir",     RPC_TO_EVERY_META,  RPC_BODY_READDIR,             \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_FREE,   RPC_RUNS_ON_WORKER,   serve_readdir)      \
	/* shared file pointer: atomic fetch-and-add */                                  \
	X(FETCH_ADD,   18, "fetch_add",   RPC_TO_HANDLE_META, RPC_BODY_FETCH_ADD,           \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_HANDLE, RPC_RUNS_ON_PROGRESS, serve_fetch_add)    \
	/* byte-range lock (atomic mode) */                                              \
	X(LOCK,        19, "lock",        RPC_TO_HANDLE_META, RPC_BODY_LOCK,                \
	  RPC_FLAGS_LOCK,      RPC_ACCESS_HANDLE, RPC_RUNS_ON_PROGRESS, serve_lock)         \
	X(UNLOCK,      20, "unlock",      RPC_TO_HANDLE_META, RPC_BODY_LOCK,                \
	  RPC_FLAGS_LOCK,      RPC_ACCESS_HANDLE, RPC_RUNS_ON_PROGRESS, serve_unlock)       \
	X(STATFS_META, 21, "statfs_meta", RPC_TO_ANY_META,    RPC_BODY_NONE,                \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_FREE,   RPC_RUNS_ON_WORKER,   serve_statfs_meta)  \
	/* path -> to, on the metadata server owning both */                             \
	X(RENAME,      22, "rename",      RPC_TO_PATH_META,   RPC_BODY_RENAME,              \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_FREE,   RPC_RUNS_ON_WORKER,   serve_rename)       \
	/* between metadata servers: may an identity search a path */                   \
	X(SEARCH,      23, "search",      RPC_TO_ANY_META,    RPC_BODY_SEARCH,              \
	  0,                   RPC_ACCESS_PEERS,  RPC_RUNS_ON_PROGRESS, serve_search)       \
	/* between servers (rpfsd --check): what the owner knows of handles */              \
	X(META_HANDLES, 24, "meta_handles", RPC_TO_ANY_META,  RPC_BODY_HANDLES,             \
	  0,                   RPC_ACCESS_PEERS,  RPC_RUNS_ON_PROGRESS, serve_meta_handles) \
	/* from a mirror's primary: copies that missed a write (io_forward.c) */           \
	X(MIRROR_STALE, 25, "mirror_stale", RPC_TO_HANDLE_META, RPC_BODY_STALE,             \
	  RPC_STALE_DAMAGED,   RPC_ACCESS_PEERS,  RPC_RUNS_ON_WORKER,   serve_mirror_stale) \
	/* from a resync's source: the stale copy has the primary's bytes (or not) */       \
	X(MIRROR_FRESH, 26, "mirror_fresh", RPC_TO_HANDLE_META, RPC_BODY_STALE,             \
	  RPC_FRESH_FAILED,    RPC_ACCESS_PEERS,  RPC_RUNS_ON_WORKER,   serve_mirror_fresh) \
	/* from an I/O server on empty storage: its copies to be rebuilt */               \
	X(MIRROR_REBUILD, 27, "mirror_rebuild", RPC_TO_ANY_META, RPC_BODY_PROBE,           \
	  0,                   RPC_ACCESS_PEERS,  RPC_RUNS_ON_WORKER,   serve_mirror_rebuild) \
	/* from a client (rpfs verify --repair): a copy that differs from its primary */  \
	X(MIRROR_REPAIR, 28, "mirror_repair", RPC_TO_HANDLE_META, RPC_BODY_REPAIR,         \
	  0,                   RPC_ACCESS_WRITE,  RPC_RUNS_ON_WORKER,   serve_mirror_repair) \
	/* I/O server: a list of datafile segments; data in the call */                  \
	X(IO_WRITE,    40, "io_write",    RPC_TO_IO,          RPC_BODY_IO,                  \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_WRITE,  RPC_RUNS_STREAMED,    serve_io_write)     \
	X(IO_READ,     41, "io_read",     RPC_TO_IO,          RPC_BODY_IO,                  \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_READ,   RPC_RUNS_STREAMED,    serve_io_read)      \
	X(IO_SIZE,     42, "io_size",     RPC_TO_IO,          RPC_BODY_HANDLE,              \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_HANDLE, RPC_RUNS_ON_WORKER,   serve_io_size)      \
	X(IO_TRUNCATE, 43, "io_truncate", RPC_TO_IO,          RPC_BODY_TRUNCATE,            \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_WRITE,  RPC_RUNS_ON_WORKER,   serve_io_truncate)  \
	X(IO_SYNC,     44, "io_sync",     RPC_TO_IO,          RPC_BODY_HANDLE,              \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_HANDLE, RPC_RUNS_ON_WORKER,   serve_io_sync)      \
	X(IO_REMOVE,   45, "io_remove",   RPC_TO_IO,          RPC_BODY_HANDLE,              \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_PEERS,  RPC_RUNS_ON_WORKER,   serve_io_remove)    \
	X(IO_STATFS,   46, "io_statfs",   RPC_TO_IO,          RPC_BODY_NONE,                \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_FREE,   RPC_RUNS_ON_WORKER,   serve_io_statfs)    \
	/* the datafile of a new file, exclusively */                                    \
	X(IO_CREATE,   48, "io_create",   RPC_TO_IO,          RPC_BODY_IO_CREATE,           \
	  RPC_IO_CREATE_INCOMPLETE, RPC_ACCESS_PEERS,  RPC_RUNS_ON_WORKER,   serve_io_create)    \
	/* which handles of a metadata server have datafiles */                         \
	X(IO_PROBE,    49, "io_probe",    RPC_TO_IO,          RPC_BODY_PROBE,               \
	  RPC_FLAGS_UNCHECKED, RPC_ACCESS_PEERS,  RPC_RUNS_ON_WORKER,   serve_io_probe)     \
	/* from a metadata server: copy a datafile to its stale copy (io_forward.c) */      \
	X(IO_RESYNC,   50, "io_resync",   RPC_TO_IO,          RPC_BODY_RESYNC,              \
	  RPC_RESYNC_EC,       RPC_ACCESS_PEERS,  RPC_RUNS_ON_WORKER,   serve_io_resync)    \
	/* from a metadata server, its heartbeat: the I/O servers it finds down */      \
	X(IO_HEARTBEAT, 51, "io_heartbeat", RPC_TO_IO,        RPC_BODY_DOWN,                \
	  0,                   RPC_ACCESS_PEERS,  RPC_RUNS_ON_PROGRESS, serve_io_heartbeat) \
	/* from a resync's source: digests of a range of the stale copy (io_forward.c) */ \
	X(IO_DIGEST,   52, "io_digest",   RPC_TO_IO,          RPC_BODY_DIGEST,              \
	  0,                   RPC_ACCESS_PEERS,  RPC_RUNS_ON_WORKER,   serve_io_digest)    \
	/* a range of an ec data cell held still (ec_hold.c): a degraded read, a parity resync */ \
	X(IO_HOLD,     53, "io_hold",     RPC_TO_IO,          RPC_BODY_HOLD,                \
	  RPC_HOLD_RELEASE | RPC_HOLD_END, RPC_ACCESS_READ, RPC_RUNS_ON_PROGRESS, serve_io_hold)
/* clang-format on */

#endif
