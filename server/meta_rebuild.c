/* Role meta: the copies an I/O server lost with its storage, rebuilt from
 * their other copies (docs/design/redundancy.md, "Rebuild").
 *
 * An I/O server that starts on a storage directory holding no datafile (a
 * disk replaced, a directory wiped, or a new cluster: nothing tells them
 * apart, and a scan of nothing costs nothing) asks every metadata server
 * to rebuild what it held (MIRROR_REBUILD, io_rebuild.c). Each keeps the
 * request in its store ("sys", key "mrebuild" and the I/O index: a record
 * of the next handle to look at u64, the first handle not handed out when
 * the request came u64, and the copies marked so far u64), answers, and its
 * resync thread then walks the handles it made before the request in
 * order, a batch per transaction, marking stale every copy of a mirrored
 * file that lies on that server (files made since have their datafiles
 * there: a new cluster's walk is empty) (meta_stale_add: the file's epoch rises, as for
 * a copy that missed a write). The resync (meta_resync.c) then copies
 * each file from a fresh copy, which also makes the lost datafile again.
 * The record goes when the walk ends; a restart resumes it where it was.
 *
 * Until its mark, a lost copy answers -ESTALE (no datafile): reads go to
 * another copy, a write through it as primary goes to the next one, which
 * marks it stale; while a resync fills it, it serves no read
 * (RPC_FWD_RESYNC). So a client never reads a half-made copy. A file with
 * no redundancy (`none`) on that server is lost with it: reads name the
 * server and -ESTALE. */
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "meta_priv.h"
#include "meta_record.h"
#include "placement.h"
#include "wire.h"

#define REBUILD_BATCH	 256 /* handles looked at per transaction */
#define REBUILD_ROUND_MS 200 /* time a round spends at most */

static MDB_val rebuild_key(uint8_t k[META_REBUILD_TAG_LEN + 4], uint32_t io)
{
	memcpy(k, META_REBUILD_TAG, META_REBUILD_TAG_LEN);
	put32(k + META_REBUILD_TAG_LEN, io);
	return (MDB_val){META_REBUILD_TAG_LEN + 4, k};
}

#define RECORD_LEN 24

static int record_put(struct meta *m, MDB_txn *txn, uint32_t io, uint64_t next,
		      uint64_t end, uint64_t marked)
{
	uint8_t kb[META_REBUILD_TAG_LEN + 4], pb[RECORD_LEN];
	MDB_val k = rebuild_key(kb, io), v = {sizeof(pb), pb};

	put64(pb, next);
	put64(pb + 8, end);
	put64(pb + 16, marked);
	return meta_lmdb_err(rec_put(txn, m->sys, REC_SYS, &k, &v, 0), "rebuild record");
}

int serve_mirror_rebuild(struct srv_op *op)
{
	struct srv *s = op->s;
	struct meta *m = s->meta;
	uint32_t io = op->q.meta;
	uint64_t serial;
	MDB_txn *txn;
	int ret;

	if (io >= s->cfg.nio)
		return -EINVAL;
	/* Not before the store's start-up check: it holds the store while it
	 * asks the I/O servers, maybe this one on this connection (the asker
	 * tries again). */
	if (atomic_load(&m->store_state) <= 0)
		return -EAGAIN;
	ret = meta_txn_begin(m, false, &txn);
	if (ret)
		return ret;
	/* the handles handed out so far: those made since are not lost */
	pthread_mutex_lock(&m->hlock);
	serial = m->h_limit ? m->h_next : 0;
	pthread_mutex_unlock(&m->hlock);
	if (!serial)
		ret = meta_stored_next(m, txn, &serial);
	/* asked again (wiped again meanwhile): the walk starts over */
	if (!ret)
		ret = record_put(m, txn, io, 0, place_handle(m->index, serial), 0);
	if (ret)
		mdb_txn_abort(txn);
	else
		ret = meta_lmdb_err(mdb_txn_commit(txn), "commit");
	if (ret) {
		log_warn("rpfsd: couldn't note the rebuild of I/O server %u: %s", io,
			 strerror(-ret));
		return ret;
	}
	log_info("rpfsd: I/O server %u (%s) started on empty storage: the copies of "
		 "mirrored files it held are marked stale, to be rebuilt from their "
		 "other copies",
		 io, s->cfg.servers[s->cfg.io[io]].name);
	atomic_fetch_add(&m->rebuild_pending, 1); /* until the next round counts */
	meta_resync_kick(s);
	return 0;
}

/* The slots of a's layout on I/O server io, if a is a mirrored file. */
static uint32_t slots_on(const struct rpc_attr *a, uint32_t io, uint32_t *out)
{
	const struct rpfs_layout *l = &a->layout;
	uint32_t n = 0;

	if (a->type != RPC_TYPE_FILE || layout_copies(l) < 2)
		return 0;
	for (uint32_t s = 0; s < layout_slots(l) && n < RPC_COPIES_MAX + 1; s++)
		if (layout_server(l, s) == io)
			out[n++] = s;
	return n;
}

/* One batch of io's walk from *next: its handles' copies on io marked.
 * *done when the walk reached the end (the record is gone then). */
static int batch(struct srv *s, uint32_t io, bool *done)
{
	struct meta *m = s->meta;
	uint8_t kb[META_REBUILD_TAG_LEN + 4], hk[8];
	MDB_val rk = rebuild_key(kb, io), rv, k, v;
	MDB_cursor *cur = NULL;
	uint64_t next, end, marked, files = 0, copies = 0;
	MDB_txn *txn;
	int rc, ret, seen = 0;

	*done = false;
	ret = meta_txn_begin(m, false, &txn);
	if (ret)
		return ret;
	rc = rec_get(txn, m->sys, REC_SYS, &rk, &rv);
	if (rc == MDB_NOTFOUND || (!rc && rv.mv_size != RECORD_LEN)) {
		*done = true; /* gone meanwhile, or not ours to read */
		mdb_txn_abort(txn);
		return rc ? 0 : -EIO;
	}
	if (rc) {
		mdb_txn_abort(txn);
		return meta_lmdb_err(rc, "rebuild record");
	}
	next = get64(rv.mv_data);
	end = get64((const uint8_t *)rv.mv_data + 8);
	marked = get64((const uint8_t *)rv.mv_data + 16);
	meta_put_be64(hk, next);
	k = (MDB_val){8, hk};
	rc = mdb_cursor_open(txn, m->byh, &cur);
	for (rc = rc ? rc : mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	     !rc && seen < REBUILD_BATCH; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		char path[RPC_PATH_MAX + 1];
		uint32_t slots[RPC_COPIES_MAX + 1], n, added, view[RPC_STALE_MAX], nview;
		uint64_t epoch;
		struct rpc_attr a;
		uint64_t h;

		if (k.mv_size != 8)
			continue;
		h = meta_get_be64(k.mv_data);
		if (h >= end) {
			rc = MDB_NOTFOUND; /* made since the request */
			break;
		}
		seen++;
		next = h + 1;
		/* a handle another server made: its marks are kept there */
		if (place_meta_of_handle(h) != m->index ||
		    meta_entry_of_handle(m, txn, h, path, &a))
			continue;
		n = slots_on(&a, io, slots);
		if (!n)
			continue;
		ret = meta_stale_add(m, txn, h, slots, n, &added, &epoch, view, &nview);
		if (ret == -ENOSPC) {
			log_warn(
				"rpfsd: %s: too many stale copies to mark its copy on I/O "
				"server %u stale: left to be found by a write",
				path, io);
			ret = 0;
			continue;
		}
		if (ret)
			break;
		files += added ? 1 : 0;
		copies += added;
	}
	if (cur)
		mdb_cursor_close(cur);
	if (!ret && rc == MDB_NOTFOUND)
		*done = true;
	else if (!ret && rc && seen < REBUILD_BATCH)
		ret = meta_lmdb_err(rc, "rebuild walk");
	marked += copies;
	if (!ret && *done) {
		ret = meta_lmdb_err(mdb_del(txn, m->sys, &rk, NULL), "rebuild record");
	} else if (!ret) {
		ret = record_put(m, txn, io, next, end, marked);
	}
	if (ret) {
		mdb_txn_abort(txn);
		return ret;
	}
	ret = meta_lmdb_err(mdb_txn_commit(txn), "commit");
	if (ret)
		return ret;
	atomic_fetch_add(&m->rebuild_marked, copies);
	if (copies)
		log_info("rpfsd: rebuild of I/O server %u: %" PRIu64 " copies of %" PRIu64
			 " files marked stale",
			 io, copies, files);
	if (*done && marked)
		log_warn("rpfsd: rebuild of I/O server %u: all %" PRIu64
			 " copies it held of mirrored files made here are marked stale; "
			 "they are resynced from their other copies",
			 io, marked);
	else if (*done)
		log_info("rpfsd: rebuild of I/O server %u: it held no copy of a mirrored "
			 "file made here",
			 io);
	return 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The I/O servers with a rebuild record (up to max). */
static uint32_t pending(struct meta *m, uint32_t *ios, uint32_t max)
{
	uint8_t kb[META_REBUILD_TAG_LEN] = META_REBUILD_TAG;
	MDB_val k = {META_REBUILD_TAG_LEN, kb}, v;
	MDB_cursor *cur = NULL;
	MDB_txn *txn;
	uint32_t n = 0;
	int rc;

	if (meta_txn_begin(m, true, &txn))
		return 0;
	rc = mdb_cursor_open(txn, m->sys, &cur);
	for (rc = rc ? rc : mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc && n < max;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size != META_REBUILD_TAG_LEN + 4 ||
		    memcmp(k.mv_data, META_REBUILD_TAG, META_REBUILD_TAG_LEN))
			break;
		ios[n++] = get32((const uint8_t *)k.mv_data + META_REBUILD_TAG_LEN);
	}
	if (cur)
		mdb_cursor_close(
			cur); /* a read-only transaction's are not freed with it */
	mdb_txn_abort(txn);
	return n;
}

bool meta_rebuild_step(struct srv *s, bool *rebuilding)
{
	struct meta *m = s->meta;
	uint32_t ios[64], n = pending(m, ios, 64), left = 0;
	int64_t until = mono_ms() + REBUILD_ROUND_MS;

	for (uint32_t i = 0; i < n; i++) {
		bool done = false;

		while (!done && mono_ms() < until) {
			int ret = batch(s, ios[i], &done);

			if (ret) {
				log_warn(
					"rpfsd: rebuild of I/O server %u: %s (tried again)",
					ios[i], strerror(-ret));
				break;
			}
		}
		left += !done;
		if (!done && ios[i] < s->cfg.nio)
			rebuilding[ios[i]] = true;
	}
	atomic_store(&m->rebuild_pending, left);
	return left > 0;
}

void meta_rebuild_counts(struct srv *s, uint64_t *pending_ios, uint64_t *marked)
{
	*pending_ios = atomic_load(&s->meta->rebuild_pending);
	*marked = atomic_load(&s->meta->rebuild_marked);
}
