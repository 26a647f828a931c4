/* Role meta's internals, shared by its files (server.h has what the rest of
 * rpfsd calls):
 *
 *   meta.c            the role: what its store holds (the top comment), its
 *                     life cycle, and meta_run, which every op goes through
 *   meta_keys.c       records and keys: an entry's key, its get, put and
 *                     delete through meta_record.c and meta_attr.c, LMDB's
 *                     errors as errnos, transactions
 *   meta_handles.c    handles: the stored counter, its reserve, the creates
 *                     in progress, META_HANDLES
 *   meta_ns.c         namespace ops on entries in place: LOOKUP, GETATTR,
 *                     SETATTR, READDIR, STATFS; an entry's attributes
 *                     wherever it lives; the replies that open a file
 *   meta_create.c     CREATE and MKDIR
 *   meta_remove.c     REMOVE and RMDIR, and whether a directory has children
 *   meta_rename.c     RENAME
 *   meta_datafiles.c  a file's datafiles on its I/O servers: made before its
 *                     entry, removed after it
 *   meta_locks.c      byte-range locks and fetch-and-add counters, in memory
 *                     (progress thread)
 *   meta_start.c      the start-up check of an empty store: no handle that an
 *                     I/O server holds is handed out again
 *   meta_record.c, meta_attr.c, meta_reserve.c  the store's records, the
 *                     stored form of attributes, the reserve of disk space */
#ifndef RPFS_META_PRIV_H
#define RPFS_META_PRIV_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hashtab.h"
#include "rpc.h"
#include "server.h"

struct lock {
	uint64_t off, end; /* [off, end) */
	uint64_t owner;
	struct xp_conn *conn;
	bool excl;
	struct lock *next;
};

/* In-memory state of one handle: shared file pointer and locks. */
struct hent {
	struct hnode hn; /* in meta.hents; key: the handle */
	uint64_t counter;
	struct lock *locks;
};

struct meta {
	MDB_env *env;
	MDB_dbi ns, byh, sys;
	uint32_t index; /* this server's metadata index */
	char dir[1100];
	pthread_mutex_t lock; /* hents: progress thread and REMOVE workers */
	struct hashtab hents; /* handles with a counter or locks */
	/* Handles reserved in the store and not handed out yet: [h_next,
	 * h_limit), under hlock; none until the start-up check says the
	 * store may hand out handles (store_state 1; -1: it may not). */
	pthread_mutex_t hlock;
	uint64_t h_next, h_limit;
	atomic_int store_state;
	struct creating *creating; /* creates in progress, under hlock */
	/* meta_rebuild.c: I/O servers being rebuilt, copies marked for them */
	atomic_uint_fast64_t rebuild_pending, rebuild_marked;
};

/* ---- meta_keys.c: records and keys ---- */

/* ns key of a path: hash of the parent, then the name. */
struct nskey {
	uint8_t b[8 + RPC_NAME_MAX + 1];
	MDB_val v;
};

void meta_put_be64(uint8_t *p, uint64_t v);
/* The big-endian u64 at p (handles in keys: "byhandle", stale marks). */
uint64_t meta_get_be64(const uint8_t *p);
/* Length of the parent part of a normalized path ("/a/b" -> 2, "/a" -> 1). */
size_t meta_parent_len(const char *path);
/* The key of path into *k, -ENAMETOOLONG if it has no valid last name. */
int meta_make_key(const char *path, struct nskey *k);
/* The key range prefix of dir's children. */
void meta_dir_prefix(const char *dir, uint8_t out[8]);
/* An LMDB result as 0 or a negative errno; what names the step in logs. */
int meta_lmdb_err(int rc, const char *what);
/* A record that failed its checksum, read for what: logged, -EBADMSG. */
int meta_damaged(const struct meta *m, const char *what);
/* A damaged record met listing the directory dir. */
int meta_damaged_in(const struct meta *m, const char *dir);
int meta_get_entry(struct meta *m, MDB_txn *txn, const char *path, struct rpc_attr *a);
/* Store path's entry; a new entry is also indexed by its handle. */
int meta_put_entry(struct meta *m, MDB_txn *txn, const char *path,
		   const struct rpc_attr *a, bool new_entry);
int meta_del_entry(struct meta *m, MDB_txn *txn, const char *path, uint64_t handle);

/* ---- meta_mirror.c: stale copies of mirrored files ---- */

/* The mirror epoch of handle and the slots of its stale copies (room for
 * RPC_STALE_MAX); none marked: epoch 0, *n 0. */
int meta_stale_get(struct meta *m, MDB_txn *txn, uint64_t handle, uint64_t *epoch,
		   uint32_t *slots, uint32_t *n);
/* Mark slots add[0..nadd) of handle stale (those not yet), raising its
 * epoch if any was added (*added of them); the view after: *epoch and
 * slots[0..*n) (room for RPC_STALE_MAX). */
int meta_stale_add(struct meta *m, MDB_txn *txn, uint64_t handle, const uint32_t *add,
		   uint32_t nadd, uint32_t *added, uint64_t *epoch, uint32_t *slots,
		   uint32_t *n);
/* Forget handle's marks (its entry goes). */
int meta_stale_del(struct meta *m, MDB_txn *txn, uint64_t handle);
/* Append handle's mirror view (rpc_enc_view) to op's reply. */
int meta_add_view(struct srv_op *op, uint64_t handle);
/* The path and entry of handle (a file this server made) in txn. */
int meta_entry_of_handle(struct meta *m, MDB_txn *txn, uint64_t handle, char *path,
			 struct rpc_attr *a);
/* The key prefix of the stale-copy records in "sys" (meta_resync.c scans
 * them). */
#define META_STALE_TAG	   "mstale"
#define META_STALE_TAG_LEN 6

/* ---- meta_resync.c: making stale copies whole again ---- */

/* A resync of handle that this server asked for ended (MIRROR_FRESH). */
void meta_resync_done(struct srv *s, uint64_t handle, bool ok);
/* Something to do now (a rebuild asked for): the next round at once. */
void meta_resync_kick(struct srv *s);

/* ---- meta_rebuild.c: the copies an I/O server lost with its storage ---- */

/* The key prefix of the rebuild records in "sys". */
#define META_REBUILD_TAG     "mrebuild"
#define META_REBUILD_TAG_LEN 8
/* Mark a share of the copies on I/O servers being rebuilt stale (the
 * resync thread, each round): true while some are left, and
 * rebuilding[io] (nio of them) for each I/O server whose walk is. */
bool meta_rebuild_step(struct srv *s, bool *rebuilding);
/* Is the entry stored in v a direct child of dir? */
bool meta_is_child(const MDB_val *v, const char *dir);
int meta_txn_begin(struct meta *m, bool rdonly, MDB_txn **txn);
/* A write transaction that frees space: it may use the store's reserve. */
int meta_txn_begin_freeing(struct meta *m, MDB_txn **txn);

/* ---- meta_handles.c: handles and creates in progress ---- */

/* The stored counter: the first handle never handed out (0 if none). */
int meta_stored_next(struct meta *m, MDB_txn *txn, uint64_t *n);
/* A new handle, once the start-up check allows (-EAGAIN before it ends,
 * -ESHUTDOWN if it refused). */
int meta_alloc_handle(struct srv *s, uint64_t *out);
/* Hand out nothing at or below past again. */
int meta_skip_handles(struct meta *m, uint64_t past);
/* A create in progress (serve_create), known to META_HANDLES: every handle
 * it takes is at or above floor (the counter when it began; 0 if nothing was
 * reserved yet, which covers all). */
struct creating {
	uint64_t floor;
	struct creating *next;
};
void meta_create_begin(struct meta *m, struct creating *c);
void meta_create_end(struct meta *m, struct creating *c);

/* ---- meta_ns.c: namespace helpers ---- */

/* Is path's entry this server's? */
bool meta_owns(struct srv *s, const char *path);
/* Answer an open of a (a file's reply carries a capability); checked: the
 * caller may have the rights asked whatever the mode. */
int meta_reply_open(struct srv_op *op, struct rpc_attr *a, bool checked);
/* The attributes of a path held here ("/" included). */
int meta_local_lookup(struct srv *s, const char *path, struct rpc_attr *a);
/* The attributes of path, here or on the metadata server that owns it. */
int meta_path_attr(struct srv *s, const char *path, struct rpc_attr *a);
/* The parent of path, a directory wherever it lives, into *pa. */
int meta_parent_attr(struct srv *s, const char *path, struct rpc_attr *pa);

/* ---- meta_remove.c: children of a directory ---- */

/* Does any local entry have dir as its parent? 1, 0 or an error. */
int meta_local_has_child(struct meta *m, MDB_txn *txn, const char *dir);
/* Do the other metadata servers hold a child of dir? 1, 0 or an error. */
int meta_remote_has_child(struct srv *s, const char *dir);

/* ---- meta_datafiles.c: a file's datafiles on its I/O servers ---- */

/* Make the datafiles of a new file (see there for *skip, *past, *bad_io). */
int meta_create_datafiles(struct srv *s, const struct rpc_attr *a, bool *skip,
			  uint64_t *past, int *bad_io);
/* Remove the datafiles of a file (the slots where skip[slot] is 0, if
 * given); one left behind is logged. */
void meta_remove_datafiles(struct srv *s, const struct rpc_attr *a, const int *skip);

/* ---- meta_locks.c: locks and counters ---- */

/* Forget the locks and the counter of a handle whose file is gone. */
void meta_drop_hent(struct meta *m, uint64_t handle);
/* Free every lock and counter (meta_close). */
void meta_locks_free(struct meta *m);

#endif
