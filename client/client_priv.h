/* librpfs internals shared by the files of client/.
 *
 *   client.c     the client object: config, transport fabric, one lazily made
 *                connection per server ("links"), and the call helpers every
 *                other file goes through
 *   attr.c       attributes: reply -> struct rpfs_stat, layouts checked
 *   namespace.c  path operations on the metadata servers
 *   file.c       open files and stat: capabilities, size, truncate, sync,
 *                locks
 *   listio.c     list I/O: any memory list x any file list -> one request
 *                per I/O server (split over several calls only when long)
 *   request.c    the nonblocking rpfs_i* requests on top of listio.c
 *   lifecycle.c  rpfs_init, rpfs_close and rpfs_finalize: the background
 *                started, and what is in flight landed before things go
 *   keepalive.c  connections of a client with open files kept from the
 *                servers' idle timeout, so a post never reconnects
 *   errmsg.c     the per-thread last error message and errno texts
 *
 * Servers are named three ways: by config index (order in the config file,
 * what rpfs_ping takes), and by role index ("io server N", the index layouts
 * use; "meta server N", the index path hashes and handles use). Connections
 * are per config index, so a server with both roles has one connection. */
#ifndef RPFS_CLIENT_PRIV_H
#define RPFS_CLIENT_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rpfs.h"
#include "config.h"
#include "layout.h"
#include "list.h"
#include "rpc.h"
#include "xport.h"

/* Largest I/O request body we build. The transport gives every receive
 * buffer and Fast RDMA slot 4 KiB beyond the largest payload for header,
 * body and descriptors; staying well inside that keeps a body with its
 * data (inline, fast) or its descriptors (bulk) within one message. */
#define RPFSC_IO_BODY_CAP 3584
/* Largest data of one I/O call: big transfers to one server still go as a
 * few calls in flight at once rather than one registration of gigabytes. */
#define RPFSC_IO_CALL_MAX (64u << 20)
/* Metadata request bodies: a path plus fixed fields. */
#define RPFSC_META_BODY_CAP (RPC_PATH_MAX + 1 + 256)

enum rpfsc_role { RPFSC_ANY = 0, RPFSC_META = 1, RPFSC_IO = 2 };

/* A connection with a reference count: a broken one is replaced in the
 * table at once but closed only when its last user lets go, so a thread
 * never sees its connection freed under a call it is making. */
struct rpfsc_link {
	struct xp_conn *conn;
	int refs;
};

struct rpfsc_server {
	pthread_mutex_t lock;	 /* link and connecting */
	struct rpfsc_link *link; /* NULL until first use */
	char desc[400];		 /* "io server 1 (127.0.0.1:7101)" */
	bool pinging;		 /* keepalive.c: a ping in flight (atomic) */
	/* Silent: its last connection or connect had no answer for
	 * timeout_ms (at quiet_ms, CLOCK_MONOTONIC; 0: not silent). Calls
	 * fail at once with quiet_msg until retry_unanswered_ms passed. */
	int64_t quiet_ms;
	char quiet_msg[600];
	/* When a metadata server last said it is down (an open reply's down
	 * list, rpc.h; CLOCK_MONOTONIC ms, 0: never): a mirrored read tries
	 * its copies last for retry_unanswered_ms. */
	_Atomic int64_t reported_down_ms;
};

struct rpfs_client {
	struct rpfs_config cfg;
	struct auth_key key; /* the cluster's (config key_file) */
	struct xp_fabric *fab;
	struct rpfsc_server *srv;  /* cfg.nservers, by config index */
	char **io_desc;		   /* cfg.nio: "io server N (host:port)" */
	char **meta_desc;	   /* cfg.nmeta */
	uint64_t lock_owner;	   /* this client's byte-range lock owner id */
	size_t io_hdr;		   /* IO_WRITE/IO_READ body bytes before the segments */
	uint32_t io_max_segs;	   /* segments per I/O body of RPFSC_IO_BODY_CAP */
	pthread_mutex_t live_lock; /* live, files, and each file's refs */
	struct list_node live;	   /* requests started, not yet finished (listio.c) */
	struct list_node files;	   /* every rpfs_file not yet freed */
	/* keepalive.c: the tick is set (atomic: calls read it); its calls in
	 * flight (bg_lock, a leaf: the progress thread takes it, so nobody
	 * holds it to wait) */
	bool keepalive;
	pthread_mutex_t bg_lock;
	int bg_calls;
	pthread_cond_t bg_done;
};

/* A mirrored file's view (its open reply's, server/meta_mirror.c): which
 * copies are stale, at which mirror epoch. */
struct rpfsc_view {
	bool known; /* false: opened from bare attributes, not fetched yet */
	uint64_t epoch;
	uint32_t n;
	uint32_t stale[RPC_STALE_MAX]; /* slots */
};

struct rpfs_file {
	struct rpfs_client *c;
	/* As opened; layout.nservers = cluster I/O servers. attr.cap changes
	 * when renewed: read it through rpfsc_file_cap. */
	struct rpc_attr attr;
	char *path;		  /* for messages; NULL when opened from attributes */
	pthread_mutex_t cap_lock; /* attr.cap and what follows; never held
				     across a call */
	int64_t cap_renew_ms;	  /* CLOCK_MONOTONIC ms: renew from then on */
	int64_t cap_late_ms;	  /* ... and in the caller, the background's late */
	bool renewing;		  /* keepalive.c: a renewal in flight */
	bool closed;		  /* rpfs_close: no more renewals */
	pthread_cond_t renewed;
	struct rpfsc_view view; /* under cap_lock: mirrored files */
	int refs; /* the opener's (until rpfs_close) and one per live request */
	struct list_node node; /* on c->files */
};

/* ---- client.c ----------------------------------------------------------- */

/* The client of rpfs_init_opts, without its background (lifecycle.c
 * starts that). */
int rpfsc_client_new(const char *config, const struct rpfs_opt *opts, int nopts,
		     struct rpfs_client **out);
/* Free everything of c (rpfs_finalize, after its requests landed and the
 * background stopped, or a failed rpfs_init). */
void rpfsc_client_free(struct rpfs_client *c);
/* Config index of I/O server / metadata server idx. */
int rpfsc_io_srv(struct rpfs_client *c, uint32_t idx);
int rpfsc_meta_srv(struct rpfs_client *c, uint32_t idx);
/* Description of server srv (config index) in role (for messages). */
const char *rpfsc_desc(struct rpfs_client *c, int srv, enum rpfsc_role role);

/* Connection to server srv, connecting or reconnecting if needed. On
 * failure sets the error message (naming the server) and returns -errno. */
/* Is srv known not to answer now (silent within retry_unanswered_ms, or its
 * connection broken)? A mirrored read tries such a copy last. */
bool rpfsc_server_suspect(struct rpfs_client *c, int srv);
/* Does ret say a call failed for want of its server (gone, stopped, cut
 * off), rather than with the server's answer? */
bool rpfsc_lost_errno(int ret);
/* rpfs_create with a redundancy (the packed u32 of CREATE, rpc.h; 0: none
 * asked, the directory's or the cluster's). */
/* One request per slot of a's layout, all at once (file.c): IO_SIZE into
 * sizes[layout_slots], IO_TRUNCATE to each slot's share of size, or
 * IO_SYNC. every_copy: every slot must answer; else a mirrored file needs
 * one copy of each data slot (the others' sizes read as 0). */
int rpfsc_per_slot(struct rpfs_client *c, const struct rpc_attr *a,
		   const struct rpfsc_view *view, const char *what, uint16_t op,
		   uint64_t size, struct rpc_io_size *sizes, bool every_copy);
/* One IO_READ of nseg segments of slot's datafile of f into iov, straight
 * from that slot's server (no other copy taken for it); *got: the bytes
 * the server produced. 0 or the error, its message set (listio.c). */
int rpfsc_read_slot(struct rpfs_file *f, uint32_t slot, const struct rpc_seg *segs,
		    uint32_t nseg, const struct iovec *iov, int niov, uint64_t *got);
/* file.c: have the file's metadata server mark member (a copy of data slot
 * slot, or a parity member of its group) stale, to be rewritten or
 * re-encoded by its resync (MIRROR_REPAIR; a's capability with write
 * rights). */
int rpfsc_mark_member_stale(struct rpfs_client *c, const struct rpc_attr *a,
			    uint32_t slot, uint32_t member, const char *what);
/* One I/O call to server srv (body of len bytes, data out of wr, into rd),
 * waited for; 0 or the error with its message set (-RPC_EBEHIND bare). */
int rpfsc_call_io(struct rpfs_file *f, int srv, const void *body, int len,
		  const struct iovec *wr, int nwr, const struct iovec *rd, int nrd,
		  uint8_t rep[16], size_t *rep_len, uint64_t *rd_len);
/* ec_degraded.c: mend the damaged block at datafile offset local of ec
 * data slot slot (a read found it failing its checksum and decoded it):
 * held still there, decoded again from the rest of the group, written
 * back (RPC_IO_REPAIR), as ZFS mends a bad sector it read around. Only
 * with write rights; a failure is logged, the read already succeeded. */
void rpfsc_ec_mend(struct rpfs_file *f, const struct rpfsc_view *v, uint32_t slot,
		   uint64_t local);
/* The same segments of several slots' datafiles (a degraded read's K
 * members) into iov[i] each, all calls started before any is waited for;
 * got[i] and st[i] each one's bytes and result (its message set). */
void rpfsc_read_slots(struct rpfs_file *f, const uint32_t *slots, uint32_t n,
		      const struct rpc_seg *segs, uint32_t nseg, const struct iovec *iov,
		      uint64_t *got, int *st);
/* ec_degraded.c: segs of ec data slot slot (its server lost) decoded from
 * K other members of its group, under holds on its live data members,
 * into iov; v the file's view (stale parity members are not read). 0, or
 * -errno with the message set (more members down than P: naming them). */
int rpfsc_ec_read_decoded(struct rpfs_file *f, const struct rpfsc_view *v, uint32_t slot,
			  const struct rpc_seg *segs, uint32_t nseg,
			  const struct iovec *iov, int niov);
/* ec_degraded.c: IO_SIZE of an ec file's data slots (ops[0..stripe_count),
 * made by rpfsc_per_slot): a member whose server is lost or known down, or
 * whose datafile went or is damaged, answers from its group's parity
 * members' record of its size (ops[s] as if it had answered); with no
 * record to be had, its own error (its message set). */
struct rpfsc_op;
int rpfsc_ec_sizes(struct rpfs_client *c, const struct rpc_attr *a,
		   const struct rpfsc_view *view, const char *what, struct rpfsc_op *ops);
int rpfsc_create(rpfs_client_t *c, const char *path, uint32_t mode, unsigned flags,
		 const struct rpfs_create_opts *opts, uint32_t redundancy,
		 rpfs_file_t **out);
/* An open reply (attributes, capability, then maybe the down list of a
 * mirrored file: rpc.h): note the servers it says are down. */
void rpfsc_note_down(struct rpfs_client *c, const uint8_t *rep, size_t len);
/* The mirror view an open reply carries (v->known false if none). */
void rpfsc_reply_view(const uint8_t *rep, size_t len, struct rpfsc_view *v);
/* Is copy slot of f's layout stale in f's view? f's mirror epoch. */
bool rpfsc_copy_stale(struct rpfs_file *f, uint32_t slot);
uint64_t rpfsc_file_epoch(struct rpfs_file *f);
/* A mirrored file opened from bare attributes fetches its view before its
 * first I/O (GETATTR); reload fetches it again (a write answered with a
 * newer epoch, a refusal as behind, a sync). */
int rpfsc_file_view_ensure(struct rpfs_file *f);
int rpfsc_file_view_reload(struct rpfs_file *f, uint64_t seen);
/* The client index of the metadata server that made f's handle (*srv) and
 * f's capability (*cap), for a call about the handle to it; errors said. */
int rpfsc_handle_meta_cap(struct rpfs_file *f, int *srv, struct rpc_cap *cap);
/* rpfs_truncate of a mirrored file (listio.c): through each slot's primary. */
int rpfsc_truncate_mirror(struct rpfs_file *f, uint64_t size);
int rpfsc_link_get(struct rpfs_client *c, int srv, enum rpfsc_role role,
		   struct rpfsc_link **out);
void rpfsc_link_put(struct rpfs_client *c, int srv, struct rpfsc_link *l);

/* ---- keepalive.c -------------------------------------------------------- */

/* Ping idle connections from the progress thread while files are open;
 * stop: no more pings, and those in flight have landed. */
void rpfsc_keepalive_start(struct rpfs_client *c);
void rpfsc_keepalive_stop(struct rpfs_client *c);

/* One call of a batch sent to several servers at once. */
struct rpfsc_op {
	int srv;	      /* config index */
	enum rpfsc_role role; /* for messages */
	const char *what;     /* path or other subject for messages, or NULL */
	const void *body;
	size_t body_len;
	void *rep;
	size_t rep_max;
	/* out */
	struct xp_call call; /* call.status, call.rep_len */
	struct rpfsc_link *link;
	bool started;
};

/* Start every op, wait for all, and return 0 or the first error (with its
 * message set). Each op's own result stays in op->call.status. rpfsc_run
 * starts no more ops once one could not be started; rpfsc_run_every
 * starts each whatever the others did (a caller that can do without some
 * servers' answers). */
int rpfsc_run(struct rpfs_client *c, struct rpfsc_op *ops, int n);
int rpfsc_run_every(struct rpfs_client *c, struct rpfsc_op *ops, int n);
/* One call to one server: rpfsc_run of one op. *rep_len may be NULL. */
int rpfsc_call1(struct rpfs_client *c, int srv, enum rpfsc_role role, const char *what,
		const void *body, size_t body_len, void *rep, size_t rep_max,
		size_t *rep_len);

/* Record the failure of a finished call (transport or server) as the
 * thread's message; returns err. */
int rpfsc_call_error(struct rpfs_client *c, int srv, enum rpfsc_role role,
		     struct rpfsc_link *l, const char *what, int err);

/* Normalize an absolute path into out (RPC_PATH_MAX + 1 bytes): no "//",
 * ".", "..", or trailing "/". -EINVAL if relative, -ENAMETOOLONG. */
int rpfsc_path_norm(const char *path, char *out);

/* ---- namespace.c -------------------------------------------------------- */

/* LOOKUP path (normalized into norm) on its metadata server; flags
 * RPC_WANT_* ask for a capability with those rights (a->cap). */
int rpfsc_lookup(struct rpfs_client *c, const char *path, uint16_t flags, char *norm,
		 struct rpc_attr *a);
/* The same, with a mirrored file's view (NULL: not wanted). */
int rpfsc_lookup_view(struct rpfs_client *c, const char *path, uint16_t flags, char *norm,
		      struct rpc_attr *a, struct rpfsc_view *view);

/* ---- attr.c --------------------------------------------------------------- */

void rpfsc_attr_to_stat(const struct rpc_attr *a, struct rpfs_stat *st);
/* Fold the latest datafile mtime and ctime (IO_SIZE) of a file whose
 * attributes are a into st: the later times win, except a data mtime from
 * before the times were last set (a->times_set). */
void rpfsc_attr_fold_data(const struct rpc_attr *a, int64_t mtime, int64_t ctime,
			  struct rpfs_stat *st);

/* Layout of an attribute with nservers filled in and checked. */
int rpfsc_attr_layout(struct rpfs_client *c, struct rpc_attr *a);

/* ---- file.c --------------------------------------------------------------- */
/* Logical size of a file from its I/O servers (IO_SIZE in parallel, with
 * the capability in a->cap). */
int rpfsc_file_size(struct rpfs_client *c, const struct rpc_attr *a,
		    const struct rpfsc_view *view, const char *what, uint64_t *size);
/* The same, with the latest mtime and ctime of its datafiles (0: an older
 * server that does not say). */
int rpfsc_file_size_times(struct rpfs_client *c, const struct rpc_attr *a,
			  const struct rpfsc_view *view, const char *what, uint64_t *size,
			  int64_t *mtime, int64_t *ctime);
/* The file's capability for a request, renewed first (GETATTR with the old
 * one) once half its lifetime has passed, or three quarters while the
 * background renews (c->keepalive). 0 or -errno (message set). */
int rpfsc_file_cap(struct rpfs_file *f, struct rpc_cap *cap);
/* Renew it now (GETATTR with the old one). For the background
 * (keepalive.c): claiming a due renewal (false: not due, closed, or one
 * in flight) and ending it with its result (failed: the next call renews
 * it itself); rpfs_close's wait for one in flight, after which none
 * starts. */
int rpfsc_file_cap_renew(struct rpfs_file *f);
bool rpfsc_file_renew_begin(struct rpfs_file *f);
void rpfsc_file_renew_end(struct rpfs_file *f, int ret);
void rpfsc_file_closing(struct rpfs_file *f);
/* Drop a reference (with c->live_lock held); the last frees f. */
void rpfsc_file_put_locked(struct rpfs_file *f);
/* Free the files the program left open (rpfs_finalize, once no request
 * holds one). */
void rpfsc_files_free_all(struct rpfs_client *c);

/* ---- listio.c ----------------------------------------------------------- */

/* A started list I/O is the request the nonblocking API hands out
 * (rpfs_request_t); the blocking calls start one and finish it at once.
 * Each holds a reference to its file and is on its client's list of live
 * requests until finished. */
struct rpfs_request;
/* Build and start the calls of one list I/O; 0 with *out, or -errno (then
 * nothing is in flight). A zero-length access gives an io with no calls.
 * async (the nonblocking API): the calls are handed to the progress thread
 * to start, and a call that cannot start reports its error when the
 * request is tested or waited for. */
int rpfsc_io_start(struct rpfs_file *f, bool write, const struct iovec *mem, int nmem,
		   const struct rpfs_seg *file, int nfile, bool async,
		   struct rpfs_request **out);
/* 1 when every call is done, else 0 (drives progress, never blocks). */
int rpfsc_io_test(struct rpfs_request *io);
/* The same, waiting at most timeout_us for the calls to finish. */
int rpfsc_io_timedwait(struct rpfs_request *io, int64_t timeout_us);
/* Wait for every call, free io, and return the bytes moved or the first
 * error (message set for the calling thread). */
ssize_t rpfsc_io_finish(struct rpfs_request *io);
/* Wait until no call of a live request of f (of any file if f is NULL) is
 * in flight; the requests stay live, to be tested or waited for. */
void rpfsc_io_drain(struct rpfs_client *c, struct rpfs_file *f);
/* Free the requests nobody waited for (rpfs_finalize, after a drain). */
void rpfsc_io_abandon_all(struct rpfs_client *c);

/* ---- errmsg.c ----------------------------------------------------------- */

void rpfsc_err_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "what: cause" after the server description; what may be NULL. */
int rpfsc_err_server(const char *desc, const char *what, int err, int timeout_ms,
		     bool transport);
/* "desc: what: damaged data at offset off": an I/O server found a block
 * that fails its checksum; off is the logical file offset. Returns err. */
int rpfsc_err_damaged(const char *desc, const char *what, uint64_t off, int err);
/* "meta desc: path: io server N (server.NAME, host:port) couldn't create
 * the file's datafile: cause" (or "is unreachable ..." for -EHOSTDOWN): a
 * CREATE that metadata server meta_srv (config index) failed because I/O
 * server io could not make its datafile (rpc.h). Returns err. */
int rpfsc_err_create_io(struct rpfs_client *c, int meta_srv, const char *path,
			uint32_t io, int err);
/* Text for a negative errno; transport failures read differently (a
 * timeout is "no progress within N ms", not a server's ETIMEDOUT). */
const char *rpfsc_strerror(int err, int timeout_ms, bool transport, char *buf,
			   size_t len);

#endif
