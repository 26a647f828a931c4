/* Role meta: which copies of a mirrored file are stale, and its mirror
 * epoch (docs/design/redundancy.md, "Degraded writes").
 *
 * A primary that could not forward a write to a copy asks the file's
 * metadata server to mark that copy stale (MIRROR_STALE) before it answers
 * the write. The mark is kept in the store ("sys", key "mstale" and the
 * handle: a record of epoch u64, count u32, count x slot u32), committed
 * before the reply, so that a write acknowledged with a copy missing is
 * known to be missing from it after any crash. Each mark raises the file's
 * epoch; the primary and the copies still written take it, and refuse
 * writes and forwards of an older one: a client or a primary that has not
 * learnt of the mark (a stale copy back from the dead, acting as primary
 * for a client that opened the file before) is refused and reloads its
 * view, instead of writing around the mark.
 *
 * Open replies of mirrored files (CREATE, LOOKUP, GETATTR) carry the view
 * (epoch and stale slots) after the down list: clients never read a stale
 * copy nor make it a primary. A mark goes when a resync made the copy
 * whole (MIRROR_FRESH, driven by meta_resync.c), or with the file (REMOVE).
 * A record stays when its last mark goes: its epoch must never go back. */
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "meta_priv.h"
#include "meta_record.h"
#include "placement.h"
#include "wire.h"

#define STALE_TAG     META_STALE_TAG
#define STALE_TAG_LEN META_STALE_TAG_LEN

static MDB_val stale_key(uint8_t k[STALE_TAG_LEN + 8], uint64_t handle)
{
	memcpy(k, STALE_TAG, STALE_TAG_LEN);
	meta_put_be64(k + STALE_TAG_LEN, handle);
	return (MDB_val){STALE_TAG_LEN + 8, k};
}

int meta_stale_get(struct meta *m, MDB_txn *txn, uint64_t handle, uint64_t *epoch,
		   uint32_t *slots, uint32_t *n)
{
	uint8_t kb[STALE_TAG_LEN + 8];
	MDB_val k = stale_key(kb, handle), v;
	const uint8_t *p;
	int rc = rec_get(txn, m->sys, REC_SYS, &k, &v);

	*epoch = 0;
	*n = 0;
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc == REC_DAMAGED) {
		char what[64];

		snprintf(what, sizeof(what), "stale copies of handle %016" PRIx64,
			 handle);
		return meta_damaged(m, what);
	}
	if (rc)
		return meta_lmdb_err(rc, "stale copies lookup");
	p = v.mv_data;
	if (v.mv_size < 12 || get32(p + 8) > RPC_STALE_MAX ||
	    v.mv_size != 12 + 4 * (size_t)get32(p + 8))
		return -EIO;
	*epoch = get64(p);
	*n = get32(p + 8);
	for (uint32_t i = 0; i < *n; i++)
		slots[i] = get32(p + 12 + 4 * (size_t)i);
	return 0;
}

static int stale_put(struct meta *m, MDB_txn *txn, uint64_t handle, uint64_t epoch,
		     const uint32_t *slots, uint32_t n)
{
	uint8_t kb[STALE_TAG_LEN + 8], pb[12 + 4 * RPC_STALE_MAX];
	MDB_val k = stale_key(kb, handle), v = {12 + 4 * (size_t)n, pb};

	put64(pb, epoch);
	put32(pb + 8, n);
	for (uint32_t i = 0; i < n; i++)
		put32(pb + 12 + 4 * (size_t)i, slots[i]);
	return meta_lmdb_err(rec_put(txn, m->sys, REC_SYS, &k, &v, 0), "mark stale");
}

int meta_stale_del(struct meta *m, MDB_txn *txn, uint64_t handle)
{
	uint8_t kb[STALE_TAG_LEN + 8];
	MDB_val k = stale_key(kb, handle);
	int ret = meta_lmdb_err(mdb_del(txn, m->sys, &k, NULL), "delete stale copies");

	return ret == -ENOENT ? 0 : ret;
}

int meta_stale_add(struct meta *m, MDB_txn *txn, uint64_t handle, const uint32_t *add,
		   uint32_t nadd, uint32_t *added, uint64_t *epoch, uint32_t *slots,
		   uint32_t *n)
{
	uint32_t before;
	int ret = meta_stale_get(m, txn, handle, epoch, slots, n);

	*added = 0;
	if (ret)
		return ret;
	before = *n;
	for (uint32_t i = 0; i < nadd; i++) {
		bool have = false;

		for (uint32_t j = 0; j < *n; j++)
			have |= slots[j] == add[i];
		if (!have && *n == RPC_STALE_MAX)
			return -ENOSPC;
		if (!have)
			slots[(*n)++] = add[i];
	}
	if (*n == before)
		return 0;
	*added = *n - before;
	return stale_put(m, txn, handle, ++*epoch, slots, *n);
}

int meta_entry_of_handle(struct meta *m, MDB_txn *txn, uint64_t handle, char *path,
			 struct rpc_attr *a)
{
	uint8_t hk[8];
	MDB_val k = {8, hk}, v;
	int ret;

	meta_put_be64(hk, handle);
	ret = rec_get(txn, m->byh, REC_BYHANDLE, &k, &v);
	if (ret == REC_DAMAGED) {
		char what[64];

		snprintf(what, sizeof(what), "handle %016" PRIx64, handle);
		return meta_damaged(m, what);
	}
	ret = meta_lmdb_err(ret, "handle lookup");
	if (!ret && (v.mv_size == 0 || v.mv_size > RPC_PATH_MAX))
		ret = -EIO;
	if (ret)
		return ret;
	memcpy(path, v.mv_data, v.mv_size);
	path[v.mv_size] = 0;
	return meta_get_entry(m, txn, path, a);
}

/* Are the slots of a MIRROR_STALE copies of the primary's data slot (of
 * an ec file: parity members of the data cell's group)? */
static bool marks_fit(const struct rpc_attr *a, const struct rpc_req *q)
{
	const struct rpfs_layout *l = &a->layout;
	uint32_t slots = layout_slots(l);

	if (a->type == RPC_TYPE_FILE && l->kind == RPFS_LAYOUT_EC) {
		if (q->slot >= l->stripe_count)
			return false;
		for (uint32_t i = 0; i < q->ncopies; i++) {
			uint32_t cs = q->copies[i].slot;

			if (cs < l->stripe_count || cs >= slots ||
			    layout_ec_group(l, cs) != layout_ec_group(l, q->slot))
				return false;
		}
		return true;
	}
	if (a->type != RPC_TYPE_FILE || layout_copies(l) < 2 || q->slot >= slots)
		return false;
	for (uint32_t i = 0; i < q->ncopies; i++) {
		uint32_t cs = q->copies[i].slot;

		if (cs >= slots || cs == q->slot ||
		    cs % l->stripe_count != q->slot % l->stripe_count)
			return false;
	}
	return true;
}

/* MIRROR_STALE with RPC_STALE_DAMAGED: the sender's copy in q->slot failed
 * its checksums on a read. Marked stale (the resync rewrites it whole from
 * another copy) unless it is its data slot's last fresh copy: then there
 * is nothing to rewrite it from, and the reads of the damaged blocks keep
 * failing, naming it (-EBUSY). */
static int mark_damaged(struct srv_op *op)
{
	struct meta *m = op->s->meta;
	const struct rpc_req *q = &op->q;
	char path[RPC_PATH_MAX + 1];
	uint32_t slots[RPC_STALE_MAX], n, fresh = 0, added = 0;
	struct rpc_attr a;
	uint64_t epoch;
	MDB_txn *txn;
	int ret, len;

	ret = meta_txn_begin(m, false, &txn);
	if (ret)
		return ret;
	ret = meta_entry_of_handle(m, txn, q->handle, path, &a);
	if (!ret && (a.type != RPC_TYPE_FILE || layout_copies(&a.layout) < 2 ||
		     q->slot >= layout_slots(&a.layout)))
		ret = -EINVAL; /* no other copy to take it from */
	/* the view as it is, then as it becomes (the reply) */
	if (!ret)
		ret = meta_stale_get(m, txn, q->handle, &epoch, slots, &n);
	for (uint32_t k = 0; !ret && k < layout_copies(&a.layout); k++) {
		uint32_t cs = layout_copy_slot(&a.layout, q->slot, k);
		bool stale = false;

		for (uint32_t j = 0; j < n; j++)
			stale |= slots[j] == cs;
		fresh += cs != q->slot && !stale;
	}
	if (!ret && !fresh)
		ret = -EBUSY;
	if (!ret)
		ret = meta_stale_add(m, txn, q->handle, &q->slot, 1, &added, &epoch,
				     slots, &n);
	if (!ret && added)
		ret = meta_lmdb_err(mdb_txn_commit(txn), "commit");
	else
		mdb_txn_abort(txn);
	if (ret == -EBUSY)
		log_warn("rpfsd: %s: the copy in slot %u (I/O server %u) has a damaged "
			 "block, and no other copy of it is whole: reads of the block "
			 "fail; restore the file",
			 path, q->slot, layout_server(&a.layout, q->slot));
	if (ret)
		return ret;
	if (added)
		log_warn("rpfsd: %s: the copy in slot %u (I/O server %u) has a damaged "
			 "block: marked stale, to be rewritten from another copy",
			 path, q->slot, layout_server(&a.layout, q->slot));
	len = rpc_enc_view(op->rep, SRV_REPLY_CAP, epoch, slots, n);
	if (len < 0)
		return len;
	op->rep_len = (size_t)len;
	return 0;
}

int serve_mirror_stale(struct srv_op *op)
{
	struct srv *s = op->s;
	struct meta *m = s->meta;
	const struct rpc_req *q = &op->q;
	char path[RPC_PATH_MAX + 1];
	uint32_t slots[RPC_STALE_MAX], n;
	struct rpc_attr a;
	uint64_t epoch;
	MDB_txn *txn;
	int ret, len;

	if (place_meta_of_handle(q->handle) != m->index)
		return -EREMOTE;
	/* Not before the store's start-up check (meta_rebuild.c says why) */
	if (atomic_load(&m->store_state) <= 0)
		return -EAGAIN;
	if (q->flags & RPC_STALE_DAMAGED)
		return mark_damaged(op);
	ret = meta_txn_begin(m, false, &txn);
	if (ret)
		return ret;
	ret = meta_entry_of_handle(m, txn, q->handle, path, &a);
	if (!ret && !marks_fit(&a, q))
		ret = -EINVAL;
	if (!ret)
		ret = meta_stale_get(m, txn, q->handle, &epoch, slots, &n);
	for (uint32_t i = 0; !ret && i < n; i++)
		if (slots[i] == q->slot)
			ret = -RPC_EBEHIND; /* the primary itself missed writes */
	for (uint32_t i = 0; !ret && i < q->ncopies; i++) {
		bool have = false;

		for (uint32_t j = 0; j < n; j++)
			have |= slots[j] == q->copies[i].slot;
		if (!have && n == RPC_STALE_MAX)
			ret = -ENOSPC;
		else if (!have)
			slots[n++] = q->copies[i].slot;
	}
	if (!ret) {
		epoch = (epoch > q->epoch ? epoch : q->epoch) + 1;
		ret = stale_put(m, txn, q->handle, epoch, slots, n);
	}
	if (ret) {
		mdb_txn_abort(txn);
	} else {
		ret = meta_lmdb_err(mdb_txn_commit(txn), "commit");
	}
	if (ret == -RPC_EBEHIND) {
		log_warn(
			"rpfsd: %s: the primary of slot %u asking to mark copies stale is "
			"stale itself: refused",
			path, q->slot);
		return ret;
	}
	if (ret) {
		log_warn("rpfsd: couldn't mark copies of handle %016" PRIx64 " stale: %s",
			 q->handle, strerror(-ret));
		return ret;
	}
	for (uint32_t i = 0; i < q->ncopies; i++)
		log_warn("rpfsd: %s: %s in slot %u (I/O server %u) missed a write: "
			 "marked stale (mirror epoch %" PRIu64 ")",
			 path, a.layout.kind == RPFS_LAYOUT_EC ? "parity member" : "copy",
			 q->copies[i].slot, layout_server(&a.layout, q->copies[i].slot),
			 epoch);
	len = rpc_enc_view(op->rep, SRV_REPLY_CAP, epoch, slots, n);
	if (len < 0)
		return len;
	op->rep_len = (size_t)len;
	return 0;
}

/* MIRROR_REPAIR, from a client with write rights (rpfs verify --repair):
 * the copy in q->copies[0].slot differs from its data slot's primary
 * (q->slot) and neither is stale: bytes of a write that failed midway, or
 * a block rpfsd --check --accept-damaged took as it is. The copy is marked
 * stale, so the resync rewrites it from the primary, the one ordering
 * point of the slot's writes (as lfs mirror resync copies from the mirror
 * it keeps). Refused while the primary is stale itself (-EBUSY: its
 * resync runs; verify again after it). */
int serve_mirror_repair(struct srv_op *op)
{
	struct meta *m = op->s->meta;
	const struct rpc_req *q = &op->q;
	uint32_t cs = q->copies[0].slot;
	char path[RPC_PATH_MAX + 1];
	uint32_t slots[RPC_STALE_MAX], n, added = 0;
	struct rpc_attr a;
	uint64_t epoch;
	MDB_txn *txn;
	int ret, len;

	if (place_meta_of_handle(q->handle) != m->index)
		return -EREMOTE;
	if (atomic_load(&m->store_state) <= 0)
		return -EAGAIN;
	ret = meta_txn_begin(m, false, &txn);
	if (ret)
		return ret;
	ret = meta_entry_of_handle(m, txn, q->handle, path, &a);
	if (!ret && a.type == RPC_TYPE_FILE && a.layout.kind == RPFS_LAYOUT_EC) {
		/* an ec file's parity member of that data slot's group,
		 * re-encoded from the data by its resync */
		if (q->slot >= a.layout.stripe_count || cs < a.layout.stripe_count ||
		    cs >= layout_slots(&a.layout) ||
		    layout_ec_group(&a.layout, cs) != layout_ec_group(&a.layout, q->slot))
			ret = -EINVAL;
	} else if (!ret &&
		   (a.type != RPC_TYPE_FILE || layout_copies(&a.layout) < 2 ||
		    q->slot >= a.layout.stripe_count || cs >= layout_slots(&a.layout) ||
		    cs % a.layout.stripe_count != q->slot)) {
		ret = -EINVAL; /* not a copy of that data slot's */
	}
	if (!ret)
		ret = meta_stale_get(m, txn, q->handle, &epoch, slots, &n);
	for (uint32_t j = 0; !ret && j < n; j++)
		if (slots[j] == q->slot)
			ret = -EBUSY;
	if (!ret)
		ret = meta_stale_add(m, txn, q->handle, &cs, 1, &added, &epoch, slots,
				     &n);
	if (!ret && added)
		ret = meta_lmdb_err(mdb_txn_commit(txn), "commit");
	else
		mdb_txn_abort(txn);
	if (ret)
		return ret;
	if (added && a.layout.kind == RPFS_LAYOUT_EC) {
		log_warn("rpfsd: %s: the parity member in slot %u (I/O server %u) "
			 "disagrees with its data (rpfs verify --repair): marked stale, "
			 "to be re-encoded from it",
			 path, cs, layout_server(&a.layout, cs));
		meta_resync_kick(op->s);
	} else if (added) {
		log_warn(
			"rpfsd: %s: the copy in slot %u (I/O server %u) differs from its "
			"primary (rpfs verify --repair): marked stale, to be rewritten "
			"from it",
			path, cs, layout_server(&a.layout, cs));
		meta_resync_kick(op->s);
	}
	len = rpc_enc_view(op->rep, SRV_REPLY_CAP, epoch, slots, n);
	if (len < 0)
		return len;
	op->rep_len = (size_t)len;
	return 0;
}

int meta_add_view(struct srv_op *op, uint64_t handle)
{
	struct meta *m = op->s->meta;
	uint32_t slots[RPC_STALE_MAX], n;
	uint64_t epoch;
	MDB_txn *txn;
	int ret, len;

	ret = meta_txn_begin(m, true, &txn);
	if (ret)
		return ret;
	ret = meta_stale_get(m, txn, handle, &epoch, slots, &n);
	mdb_txn_abort(txn);
	if (ret)
		return ret;
	len = rpc_enc_view(op->rep + op->rep_len, SRV_REPLY_CAP - op->rep_len, epoch,
			   slots, n);
	if (len < 0)
		return len;
	op->rep_len += (size_t)len;
	return 0;
}

int serve_mirror_fresh(struct srv_op *op)
{
	struct srv *s = op->s;
	struct meta *m = s->meta;
	const struct rpc_req *q = &op->q;
	char path[RPC_PATH_MAX + 1];
	uint32_t slots[RPC_STALE_MAX], n, kept = 0;
	uint32_t target = q->copies[0].slot;
	bool ok = !(q->flags & RPC_FRESH_FAILED), had = false;
	struct rpc_attr a;
	uint64_t epoch;
	MDB_txn *txn;
	int ret;

	if (place_meta_of_handle(q->handle) != m->index)
		return -EREMOTE;
	/* Not before the store's start-up check (meta_rebuild.c says why) */
	if (atomic_load(&m->store_state) <= 0)
		return -EAGAIN;
	if (!ok) {
		meta_resync_done(s, q->handle, false);
		return 0;
	}
	ret = meta_txn_begin(m, false, &txn);
	if (ret) {
		meta_resync_done(s, q->handle, false);
		return ret;
	}
	ret = meta_entry_of_handle(m, txn, q->handle, path, &a);
	if (!ret)
		ret = meta_stale_get(m, txn, q->handle, &epoch, slots, &n);
	for (uint32_t i = 0; !ret && i < n; i++) {
		if (slots[i] == target)
			had = true;
		else
			slots[kept++] = slots[i];
	}
	/* Marked again meanwhile (the epoch moved): it stays stale, and is
	 * resynced again. */
	if (!ret && had && epoch + 1 == q->epoch)
		ret = stale_put(m, txn, q->handle, q->epoch, slots, kept);
	else if (!ret)
		had = false;
	if (ret || !had) {
		mdb_txn_abort(txn);
	} else {
		ret = meta_lmdb_err(mdb_txn_commit(txn), "commit");
	}
	/* the resync thread looks again only now that the mark is gone: it
	 * would ask for the same resync once more before */
	meta_resync_done(s, q->handle, !ret);
	if (ret) {
		log_warn("rpfsd: couldn't clear the stale mark of handle %016" PRIx64
			 " slot %u: %s",
			 q->handle, target, strerror(-ret));
		return ret;
	}
	if (had)
		log_warn("rpfsd: %s: %s in slot %u (I/O server %u) resynced: whole "
			 "again (mirror epoch %" PRIu64 ")",
			 path, a.layout.kind == RPFS_LAYOUT_EC ? "parity member" : "copy",
			 target, layout_server(&a.layout, target), q->epoch);
	return 0;
}
