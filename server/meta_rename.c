/* Role meta's RENAME, served by the owner of the source in one LMDB
 * transaction when the target and every entry it moves are its own. The
 * children of a directory are keyed by their parent's path, so a
 * directory's whole subtree is rewritten with it. */
#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "meta_attr.h"
#include "meta_priv.h"
#include "meta_record.h"

/* The entries a rename moves: the renamed one, then (a directory) every
 * entry below it, each with its old path. */
struct mv_list {
	struct mv_ent {
		char *path;
		struct rpc_attr a;
	} * e;
	size_t n, cap;
};

static int mv_add(struct mv_list *l, const char *path, size_t len,
		  const struct rpc_attr *a)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct mv_ent *e = realloc(l->e, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		l->e = e;
		l->cap = cap;
	}
	l->e[l->n].path = strndup(path, len);
	if (!l->e[l->n].path)
		return -ENOMEM;
	l->e[l->n++].a = *a;
	return 0;
}

static void mv_free(struct mv_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].path);
	free(l->e);
}

/* Append the local children of l->e[i], a directory. */
static int mv_children(struct meta *m, MDB_txn *txn, struct mv_list *l, size_t i)
{
	uint8_t prefix[8];
	MDB_cursor *cur;
	MDB_val k, v;
	int rc, ret;

	meta_dir_prefix(l->e[i].path, prefix);
	ret = meta_lmdb_err(mdb_cursor_open(txn, m->ns, &cur), "cursor");
	if (ret)
		return ret;
	k.mv_data = prefix;
	k.mv_size = 8;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc && !ret;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct rpc_attr a;
		const char *ep;
		size_t elen;
		char why[200];

		if (k.mv_size < 8 || memcmp(k.mv_data, prefix, 8))
			break;
		if (rec_check(REC_NS, &k, &v)) {
			ret = meta_damaged(m, l->e[i].path);
			break;
		}
		if (!meta_is_child(&v, l->e[i].path))
			continue;
		if (meta_attr_dec(v.mv_data, v.mv_size, &a, &ep, &elen, why,
				  sizeof(why))) {
			log_err("rpfsd: corrupt metadata entry under %s: %s",
				l->e[i].path, why);
			ret = -EIO;
		} else {
			ret = mv_add(l, ep, elen, &a);
		}
	}
	mdb_cursor_close(cur);
	return ret;
}

/* Store every entry of l under to instead of from: all old keys go
 * first, so a new key never meets an old one of the same subtree. */
static int mv_apply(struct meta *m, MDB_txn *txn, struct mv_list *l, const char *from,
		    const char *to)
{
	size_t flen = strlen(from), tlen = strlen(to);
	char path[RPC_PATH_MAX + 1];
	struct nskey k;
	MDB_val v;
	int ret;

	for (size_t i = 0; i < l->n; i++) {
		if (tlen + strlen(l->e[i].path) - flen > RPC_PATH_MAX)
			return -ENAMETOOLONG;
		ret = meta_make_key(l->e[i].path, &k);
		if (!ret)
			ret = meta_lmdb_err(mdb_del(txn, m->ns, &k.v, NULL), "rename");
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < l->n; i++) {
		snprintf(path, sizeof(path), "%s%s", to, l->e[i].path + flen);
		ret = meta_make_key(path, &k);
		if (ret)
			return ret;
		/* Only a hash collision with an unrelated entry can be here. */
		if (!mdb_get(txn, m->ns, &k.v, &v)) {
			log_err("rpfsd: rename to %s: its key is taken by another entry",
				path);
			return -EEXIST;
		}
		ret = meta_put_entry(m, txn, path, &l->e[i].a, true);
		if (ret)
			return ret;
	}
	return 0;
}

/* May from (attributes a) become to (attributes *t, or NULL if there is
 * none)? Checked before the write transaction, since asking the parents'
 * owners must not hold LMDB's single writer; the transaction checks the
 * entries themselves again. */
static int may_rename(struct srv_op *op, const struct rpc_attr *a,
		      const struct rpc_attr *t)
{
	const struct srv_client *who = ident_of(op->conn);
	struct rpc_attr pa;
	int ret;

	ret = meta_parent_attr(op->s, op->q.to, &pa);
	if (!ret && !access_is_super(who))
		ret = access_dir_change(who, &pa, t);
	if (!ret && !access_is_super(who)) {
		ret = meta_parent_attr(op->s, op->q.path, &pa);
		if (!ret)
			ret = access_dir_change(who, &pa, a);
	}
	if (ret || !t)
		return ret;
	if (a->type == RPC_TYPE_FILE && t->type == RPC_TYPE_DIR)
		return -EISDIR;
	if (a->type == RPC_TYPE_DIR && t->type != RPC_TYPE_DIR)
		return -ENOTDIR;
	if (t->type == RPC_TYPE_DIR && op->s->cfg.nmeta > 1) {
		ret = meta_remote_has_child(op->s, op->q.to);
		if (ret > 0)
			ret = -ENOTEMPTY;
	}
	return ret;
}

/* Within the write transaction: the target again, removed if it may be
 * replaced (*t then holds it, *had tells whether there was one). */
static int rename_target(struct meta *m, MDB_txn *txn, const struct rpc_attr *a,
			 const char *to, struct rpc_attr *t, bool *had)
{
	int ret = meta_get_entry(m, txn, to, t);

	*had = !ret;
	if (ret)
		return ret == -ENOENT ? 0 : ret;
	if (a->type == RPC_TYPE_FILE && t->type == RPC_TYPE_DIR)
		return -EISDIR;
	if (a->type == RPC_TYPE_DIR && t->type != RPC_TYPE_DIR)
		return -ENOTDIR;
	if (t->type == RPC_TYPE_DIR) {
		ret = meta_local_has_child(m, txn, to);
		if (ret)
			return ret > 0 ? -ENOTEMPTY : ret;
	}
	return meta_del_entry(m, txn, to, t->handle);
}

/* RENAME, on the owner of the source. Atomic in one LMDB transaction when
 * everything it changes is here: the target path too (else -EXDEV), and,
 * for a directory, every entry below it. Children are keyed by their
 * parent's path, so a directory's whole subtree moves with it; on a
 * cluster of several metadata servers a subtree is spread over all of
 * them and its new paths hash elsewhere, so only an empty directory can be
 * renamed there (-EXDEV otherwise: `rpfs mv` then copies and removes). */
int serve_rename(struct srv_op *op)
{
	struct srv *s = op->s;
	struct meta *m = s->meta;
	const char *from = op->q.path, *to = op->q.to;
	size_t flen = strlen(from);
	struct mv_list l = {0};
	struct rpc_attr a, t;
	bool had = false, multi = s->cfg.nmeta > 1;
	MDB_txn *txn;
	int ret;

	if (!strcmp(from, "/") || !strcmp(to, "/"))
		return -EBUSY;
	ret = meta_local_lookup(s, from, &a);
	if (ret || !strcmp(from, to))
		return ret;
	/* Into itself; a file's path as a directory fails at its parent. */
	if (a.type == RPC_TYPE_DIR && !strncmp(to, from, flen) && to[flen] == '/')
		return -EINVAL;
	ret = meta_path_attr(s, to, &t);
	if (ret && ret != -ENOENT)
		return ret;
	/* Permissions first: a refusal does not depend on where paths live. */
	ret = may_rename(op, &a, ret ? NULL : &t);
	if (!ret && !meta_owns(s, to))
		ret = -EXDEV;
	if (!ret && a.type == RPC_TYPE_DIR && multi) {
		ret = meta_remote_has_child(s, from);
		if (ret > 0)
			ret = -EXDEV;
	}
	if (ret)
		return ret;
	ret = meta_txn_begin(m, false, &txn);
	if (ret)
		return ret;
	ret = meta_get_entry(m, txn, from, &a);
	if (!ret)
		ret = rename_target(m, txn, &a, to, &t, &had);
	if (!ret) {
		a.ctime = srv_now_ns();
		ret = mv_add(&l, from, flen, &a);
	}
	for (size_t i = 0; !ret && i < l.n; i++)
		if (l.e[i].a.type == RPC_TYPE_DIR)
			ret = mv_children(m, txn, &l, i);
	if (!ret && multi && l.n > 1)
		ret = -EXDEV;
	if (!ret)
		ret = mv_apply(m, txn, &l, from, to);
	mv_free(&l);
	if (ret) {
		mdb_txn_abort(txn);
		return ret;
	}
	ret = meta_lmdb_err(mdb_txn_commit(txn), "commit");
	if (ret || !had || t.type != RPC_TYPE_FILE)
		return ret;
	/* The replaced file: gone from the namespace, its data goes too. */
	meta_drop_hent(m, t.handle);
	meta_remove_datafiles(s, &t, NULL);
	return 0;
}
