/* rpfsd role meta: the namespace and attributes in LMDB, byte-range locks
 * and fetch-and-add counters. This file is the role's life cycle and
 * meta_run, the way of every metadata op; each concern has its own file,
 * listed in meta_priv.h.
 *
 * Paths are spread over the metadata servers by a hash of the whole path
 * (place_meta_of_path), so a directory's children may live on every
 * metadata server: each server answers READDIR with the children it holds
 * and the client merges; RMDIR asks the other metadata servers whether they
 * hold a child; CREATE and MKDIR ask the owner of the parent whether it is
 * a directory. A client other than root must also be allowed to search
 * every ancestor of each path it names: meta_run asks search.c before an
 * op runs, and meta_search_local answers for the ancestors held here.
 * "/" always exists and is nobody's entry.
 * RENAME is served by the owner of the source, in one transaction, when
 * the target and every entry it moves are its own (serve_rename).
 *
 * LMDB (DIR/meta), three databases:
 *   ns        key = rpfs_fnv1a64(parent path) (8 bytes, big-endian) + name,
 *             value = magic, encoded rpc_attr, full path.
 *             The children of a directory are one contiguous key range,
 *             sorted by name, so READDIR and the emptiness check of RMDIR
 *             cost O(log n + children), and keys stay within LMDB's 511
 *             byte limit whatever the path length. The full path in the
 *             value is checked on every read: two directories whose hashes
 *             collide share a key range but never get each other's entries.
 *   byhandle  key = handle (8 bytes, big-endian), value = full path.
 *   sys       "next_handle": the first handle not yet handed out; handles
 *             are reserved from it 64 at a time, so it only ever grows;
 *             "format": the store's format (meta_record.h).
 * Every value is a record (meta_record.c): a header with a checksum over
 * its key and payload, checked on every read; a damaged record is
 * -EBADMSG, logged with the path it was read for.
 * Handles are (metadata server index << 48) | counter (placement.h), so any server or
 * client knows a handle's owner, and they are never reused: a file's
 * datafiles are made (IO_CREATE, exclusively, on every I/O server of its
 * layout at once) before its entry is stored, and an I/O server that
 * already holds a datafile of the handle refuses, so a handle met again
 * (a lost or restored store) is skipped, never shared. A metadata server
 * whose store is empty asks every I/O server for datafiles of its handles
 * before it hands out any (meta_check_store) and refuses to start if
 * there are some. REMOVE deletes the entry first and the datafiles after:
 * a crash or an unreachable I/O server leaves orphan datafiles (logged,
 * reported by rpfsd --check), never an entry without them. So does a
 * create cut short by a crash; the check of an I/O server asks which of
 * its handles no entry and no create in progress has (META_HANDLES,
 * serve_meta_handles). LMDB syncs each commit: a reply means the change is on
 * disk.
 *
 * Locks and counters live in memory (a restart loses them with the
 * connections that held them) and are served on the progress thread
 * without waiting: a conflicting LOCK gets -EAGAIN and the client retries
 * with backoff; all locks of a connection go when it goes down. */
#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hashtab.h"
#include "log.h"
#include "meta_priv.h"

#define META_MAP_SIZE (1ull << 30)
#define META_HASH     1024

void meta_run(struct sched_job *job)
{
	struct srv_op *op = (struct srv_op *)job;
	enum rpc_route route = op->desc->route;
	bool path_ok = op->q.path && rpc_path_ok(op->q.path);
	int ret = 0;

	/* Path ops must reach the path's owner; READDIR goes to everyone. */
	if (route == RPC_TO_PATH_META && (!path_ok || !meta_owns(op->s, op->q.path)))
		ret = path_ok ? -EREMOTE : -EINVAL;
	else if (route == RPC_TO_EVERY_META && !path_ok)
		ret = -EINVAL;
	/* Search permission on every ancestor, before anything else says
	 * whether a name exists (search.c). */
	if (!ret)
		ret = search_request(op);
	if (!ret)
		ret = op->handler(op);
	op->status = ret;
	srv_op_complete(op);
}

/* ---- life cycle ---------------------------------------------------------------- */

int meta_open(struct srv *s)
{
	struct meta *m = calloc(1, sizeof(*m));
	MDB_txn *txn = NULL;
	int rc = 0, ret;

	if (!m)
		return -ENOMEM;
	m->index = (uint32_t)s->me->meta_index;
	pthread_mutex_init(&m->lock, NULL);
	pthread_mutex_init(&m->hlock, NULL);
	ret = hashtab_init(&m->hents, META_HASH);
	if (ret)
		goto err_free;
	snprintf(m->dir, sizeof(m->dir), "%s/meta", s->me->dir);
	if (mkdir(m->dir, 0700) && errno != EEXIST) {
		ret = -errno;
		log_err("rpfsd: couldn't create %s: %s", m->dir, strerror(-ret));
		goto err_free;
	}
	rc = mdb_env_create(&m->env);
	if (!rc)
		rc = mdb_env_set_mapsize(m->env, META_MAP_SIZE);
	if (!rc)
		rc = mdb_env_set_maxdbs(m->env, 4);
	/* Read transactions also run on the progress thread and move between
	 * none of them, but NOTLS keeps reader slots off thread-local state. */
	if (!rc)
		rc = mdb_env_open(m->env, m->dir, MDB_NOTLS, 0600);
	if (!rc)
		rc = mdb_txn_begin(m->env, NULL, 0, &txn);
	if (!rc)
		rc = mdb_dbi_open(txn, "ns", MDB_CREATE, &m->ns);
	if (!rc)
		rc = mdb_dbi_open(txn, "byhandle", MDB_CREATE, &m->byh);
	if (!rc)
		rc = mdb_dbi_open(txn, "sys", MDB_CREATE, &m->sys);
	if (!rc) {
		rc = mdb_txn_commit(txn);
		txn = NULL;
	}
	if (rc) {
		log_err("rpfsd: couldn't open the metadata database in %s: %s", m->dir,
			mdb_strerror(rc));
		ret = rc > 0 ? -rc : -EIO;
		goto err_env;
	}
	s->meta = m;
	return 0;

err_env:
	if (txn)
		mdb_txn_abort(txn);
	if (m->env)
		mdb_env_close(m->env);
err_free:
	hashtab_fini(&m->hents);
	pthread_mutex_destroy(&m->lock);
	free(m);
	return ret;
}

void meta_close(struct srv *s)
{
	struct meta *m = s->meta;

	if (!m)
		return;
	mdb_env_close(m->env);
	meta_locks_free(m);
	hashtab_fini(&m->hents);
	pthread_mutex_destroy(&m->lock);
	free(m);
	s->meta = NULL;
}

int meta_files(struct srv *s, uint64_t *n)
{
	MDB_stat st;
	MDB_txn *txn;
	int ret = meta_txn_begin(s->meta, true, &txn);

	if (ret)
		return ret;
	ret = meta_lmdb_err(mdb_stat(txn, s->meta->ns, &st), "stat");
	mdb_txn_abort(txn);
	*n = ret ? 0 : st.ms_entries;
	return ret;
}
