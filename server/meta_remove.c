/* Role meta's REMOVE and RMDIR. REMOVE deletes the entry first and the
 * datafiles after (meta_datafiles.c). A directory's children may live on
 * every metadata server (paths are placed by a hash of the whole path), so
 * RMDIR asks the others whether they hold one before it looks here. */
#include <errno.h>
#include <lmdb.h>
#include <string.h>

#include "log.h"
#include "meta_priv.h"
#include "meta_record.h"

/* May the caller remove the entry at path (attributes a) from its parent? */
static int may_remove(struct srv_op *op, const struct rpc_attr *a)
{
	const struct srv_client *who = ident_of(op->conn);
	struct rpc_attr pa;
	int ret;

	if (access_is_super(who))
		return 0;
	ret = meta_parent_attr(op->s, op->q.path, &pa);
	return ret ? ret : access_dir_change(who, &pa, a);
}

int serve_remove(struct srv_op *op)
{
	struct meta *m = op->s->meta;
	struct rpc_attr a;
	MDB_txn *txn;
	int ret;

	if (!strcmp(op->q.path, "/"))
		return -EISDIR;
	/* Checked before the write transaction: asking the parent's owner
	 * must not hold LMDB's single writer. A rename of the parent in
	 * between would at worst check the parent the entry just left. */
	ret = meta_local_lookup(op->s, op->q.path, &a);
	if (!ret)
		ret = may_remove(op, &a);
	if (ret)
		return ret;
	ret = meta_txn_begin_freeing(m, &txn);
	if (ret)
		return ret;
	ret = meta_get_entry(m, txn, op->q.path, &a);
	if (!ret && a.type == RPC_TYPE_DIR)
		ret = -EISDIR;
	if (!ret)
		ret = meta_del_entry(m, txn, op->q.path, a.handle);
	if (ret) {
		mdb_txn_abort(txn);
		return ret;
	}
	ret = meta_lmdb_err(mdb_txn_commit(txn), "commit");
	if (ret)
		return ret;
	meta_drop_hent(m, a.handle);
	meta_remove_datafiles(op->s, &a, NULL);
	return 0;
}

/* Does any local entry have dir as its parent? */
int meta_local_has_child(struct meta *m, MDB_txn *txn, const char *dir)
{
	uint8_t prefix[8];
	MDB_cursor *cur;
	MDB_val k, v;
	int rc, ret;

	meta_dir_prefix(dir, prefix);
	ret = meta_lmdb_err(mdb_cursor_open(txn, m->ns, &cur), "cursor");
	if (ret)
		return ret;
	k.mv_data = prefix;
	k.mv_size = 8;
	ret = 0;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size < 8 || memcmp(k.mv_data, prefix, 8))
			break;
		if (rec_check(REC_NS, &k, &v)) {
			ret = meta_damaged_in(m, dir);
			break;
		}
		/* A colliding directory's child is not ours. */
		if (meta_is_child(&v, dir)) {
			ret = 1;
			break;
		}
	}
	mdb_cursor_close(cur);
	return ret;
}

/* Do the other metadata servers hold a child of dir? */
int meta_remote_has_child(struct srv *s, const char *dir)
{
	uint8_t body[RPC_PATH_MAX + 64], rep[SRV_REPLY_CAP];
	struct rpc_dirent e;
	uint32_t n, more;
	int len = rpc_enc_readdir(body, sizeof(body), dir, "", 1);

	if (len < 0)
		return len;
	for (uint32_t i = 0; i < s->cfg.nmeta; i++) {
		struct xp_call call = {0};
		int ret;

		if (i == s->meta->index)
			continue;
		call.req = body;
		call.req_len = (size_t)len;
		call.rep = rep;
		call.rep_max = sizeof(rep);
		ret = peer_call(s, s->cfg.meta[i], &call);
		if (!ret)
			ret = rpc_dec_dirents(rep, call.rep_len, &e, 1, &n, &more);
		if (ret) {
			log_warn(
				"rpfsd: rmdir %s: couldn't ask metadata server %u for children: %s",
				dir, i, strerror(-ret));
			return ret;
		}
		if (n || more)
			return 1;
	}
	return 0;
}

int serve_rmdir(struct srv_op *op)
{
	struct srv *s = op->s;
	struct meta *m = s->meta;
	struct rpc_attr a;
	MDB_txn *txn;
	int ret;

	if (!strcmp(op->q.path, "/"))
		return -EBUSY;
	ret = meta_local_lookup(s, op->q.path, &a);
	if (ret)
		return ret;
	if (a.type != RPC_TYPE_DIR)
		return -ENOTDIR;
	ret = may_remove(op, &a);
	if (ret)
		return ret;
	ret = meta_remote_has_child(s, op->q.path);
	if (ret)
		return ret > 0 ? -ENOTEMPTY : ret;
	ret = meta_txn_begin_freeing(m, &txn);
	if (ret)
		return ret;
	ret = meta_get_entry(m, txn, op->q.path, &a);
	if (!ret && a.type != RPC_TYPE_DIR)
		ret = -ENOTDIR;
	if (!ret) {
		ret = meta_local_has_child(m, txn, op->q.path);
		if (ret > 0)
			ret = -ENOTEMPTY;
	}
	if (!ret)
		ret = meta_del_entry(m, txn, op->q.path, a.handle);
	if (ret) {
		mdb_txn_abort(txn);
		return ret;
	}
	return meta_lmdb_err(mdb_txn_commit(txn), "commit");
}
