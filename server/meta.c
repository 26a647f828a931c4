/* rpfsd role meta: the namespace and attributes in LMDB, byte-range locks
 * and fetch-and-add counters.
 *
 * Paths are spread over the metadata servers by a hash of the whole path
 * (rpfs_meta_for_path), so a directory's children may live on every
 * metadata server: each server answers READDIR with the children it holds
 * and the client merges; RMDIR asks the other metadata servers whether they
 * hold a child; CREATE and MKDIR ask the owner of the parent whether it is
 * a directory. "/" always exists and is nobody's entry.
 *
 * LMDB (DIR/meta), three databases:
 *   ns        key = fnv1a64(parent path) (8 bytes, big-endian) + name,
 *             value = magic, encoded rpc_attr, full path.
 *             The children of a directory are one contiguous key range,
 *             sorted by name, so READDIR and the emptiness check of RMDIR
 *             cost O(log n + children), and keys stay within LMDB's 511
 *             byte limit whatever the path length. The full path in the
 *             value is checked on every read: two directories whose hashes
 *             collide share a key range but never get each other's entries.
 *   byhandle  key = handle (8 bytes, big-endian), value = full path.
 *   sys       "next_handle": the handle counter, bumped in the same
 *             transaction that uses it.
 * Handles are (metadata server index << 48) | counter, so any server or
 * client knows a handle's owner. LMDB syncs each commit: a reply means the
 * change is on disk.
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
#include <sys/statvfs.h>

#include "log.h"
#include "server.h"

#define META_MAP_SIZE	 (1ull << 30)
#define META_MAGIC	 0x31415052u /* "RPA1" */
#define META_VAL_HDR	 (4 + RPC_ATTR_SIZE)
#define META_HASH	 1024
#define META_HANDLE_MASK ((1ull << 48) - 1)
#define META_DIRENTS_MAX 1024

struct lock {
	uint64_t off, end; /* [off, end) */
	uint64_t owner;
	struct xp_conn *conn;
	bool excl;
	struct lock *next;
};

/* In-memory state of one handle: shared file pointer and locks. */
struct hent {
	uint64_t handle;
	uint64_t counter;
	struct lock *locks;
	struct hent *next;
};

struct meta {
	MDB_env *env;
	MDB_dbi ns, byh, sys;
	uint32_t index; /* this server's metadata index */
	char dir[1100];
	pthread_mutex_t lock; /* hents: progress thread and REMOVE workers */
	struct hent *hash[META_HASH];
};

/* ---- encoding helpers ------------------------------------------------------ */

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t fnv1a64(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (uint8_t)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Length of the parent part of a normalized path ("/a/b" -> 2, "/a" -> 1). */
static size_t parent_len(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash == path ? 1 : (size_t)(slash - path);
}

/* ns key of a path: hash of the parent, then the name. */
struct nskey {
	uint8_t b[8 + RPC_NAME_MAX + 1];
	MDB_val v;
};

static int make_key(const char *path, struct nskey *k)
{
	size_t plen = parent_len(path);
	const char *name = path + (plen == 1 ? 1 : plen + 1);
	size_t nlen = strlen(name);

	if (!nlen || nlen > RPC_NAME_MAX)
		return -ENAMETOOLONG;
	put_be64(k->b, fnv1a64(path, plen));
	memcpy(k->b + 8, name, nlen);
	k->v.mv_data = k->b;
	k->v.mv_size = 8 + nlen;
	return 0;
}

/* The key range prefix of dir's children. */
static void dir_prefix(const char *dir, uint8_t out[8])
{
	put_be64(out, fnv1a64(dir, strlen(dir)));
}

static int lmdb_err(int rc, const char *what)
{
	switch (rc) {
	case 0:
		return 0;
	case MDB_NOTFOUND:
		return -ENOENT;
	case MDB_MAP_FULL:
		log_warn("rpfsd: metadata database full during %s", what);
		return -ENOSPC;
	default:
		if (rc > 0)
			return -rc;
		log_err("rpfsd: LMDB failed during %s: %s", what, mdb_strerror(rc));
		return -EIO;
	}
}

/* Decode an ns value; the stored path must be the one asked for. */
static int val_decode(const MDB_val *v, const char *path, struct rpc_attr *a)
{
	const uint8_t *p = v->mv_data;
	size_t plen = strlen(path);

	if (v->mv_size < META_VAL_HDR || get_le(p, 4) != META_MAGIC ||
	    rpc_dec_attr(p + 4, RPC_ATTR_SIZE, a)) {
		log_err("rpfsd: corrupt metadata entry for %s", path);
		return -EIO;
	}
	if (v->mv_size - META_VAL_HDR != plen || memcmp(p + META_VAL_HDR, path, plen)) {
		log_err("rpfsd: hash collision between %s and %.*s: entry unusable", path,
			(int)(v->mv_size - META_VAL_HDR), (const char *)p + META_VAL_HDR);
		return -EIO;
	}
	return 0;
}

static int get_entry(struct meta *m, MDB_txn *txn, const char *path, struct rpc_attr *a)
{
	struct nskey k;
	MDB_val v;
	int ret = make_key(path, &k);

	if (ret)
		return ret;
	ret = lmdb_err(mdb_get(txn, m->ns, &k.v, &v), "lookup");
	return ret ? ret : val_decode(&v, path, a);
}

static int put_entry(struct meta *m, MDB_txn *txn, const char *path,
		     const struct rpc_attr *a, bool new_entry)
{
	size_t plen = strlen(path);
	uint8_t hk[8];
	struct nskey k;
	MDB_val v, hv, pv;
	int ret = make_key(path, &k);

	if (ret)
		return ret;
	v.mv_size = META_VAL_HDR + plen;
	ret = lmdb_err(mdb_put(txn, m->ns, &k.v, &v, MDB_RESERVE), "store");
	if (ret)
		return ret;
	put_le(v.mv_data, META_MAGIC, 4);
	rpc_enc_attr((uint8_t *)v.mv_data + 4, a);
	memcpy((uint8_t *)v.mv_data + META_VAL_HDR, path, plen);
	if (!new_entry)
		return 0;
	put_be64(hk, a->handle);
	hv.mv_data = hk;
	hv.mv_size = 8;
	pv.mv_data = (void *)path;
	pv.mv_size = plen;
	return lmdb_err(mdb_put(txn, m->byh, &hv, &pv, 0), "store handle");
}

static int del_entry(struct meta *m, MDB_txn *txn, const char *path, uint64_t handle)
{
	uint8_t hk[8];
	struct nskey k;
	MDB_val hv;
	int ret = make_key(path, &k);

	if (ret)
		return ret;
	ret = lmdb_err(mdb_del(txn, m->ns, &k.v, NULL), "delete");
	if (ret)
		return ret;
	put_be64(hk, handle);
	hv.mv_data = hk;
	hv.mv_size = 8;
	ret = lmdb_err(mdb_del(txn, m->byh, &hv, NULL), "delete handle");
	return ret == -ENOENT ? 0 : ret;
}

static int next_handle(struct meta *m, MDB_txn *txn, uint64_t *out)
{
	static const char key[] = "next_handle";
	MDB_val k = {sizeof(key) - 1, (void *)key}, v;
	uint8_t buf[8];
	uint64_t n = 1;
	int ret;

	ret = lmdb_err(mdb_get(txn, m->sys, &k, &v), "handle counter");
	if (!ret && v.mv_size == 8)
		n = get_le(v.mv_data, 8);
	else if (ret && ret != -ENOENT)
		return ret;
	if (n == 0 || n > META_HANDLE_MASK)
		return -ENOSPC;
	put_le(buf, n + 1, 8);
	v.mv_data = buf;
	v.mv_size = 8;
	ret = lmdb_err(mdb_put(txn, m->sys, &k, &v, 0), "handle counter");
	if (!ret)
		*out = ((uint64_t)m->index << 48) | n;
	return ret;
}

/* ---- namespace helpers ------------------------------------------------------- */

static bool owns(struct srv *s, const char *path)
{
	return rpfs_meta_for_path(&s->cfg, path) == s->meta->index;
}

static void root_attr(struct srv *s, struct rpc_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->handle = (uint64_t)rpfs_meta_for_path(&s->cfg, "/") << 48;
	a->type = RPC_TYPE_DIR;
	a->mode = 0777;
}

static int reply_attr(struct srv_op *op, const struct rpc_attr *a)
{
	rpc_enc_attr(op->rep, a);
	op->rep_len = RPC_ATTR_SIZE;
	return 0;
}

static int txn_begin(struct meta *m, bool rdonly, MDB_txn **txn)
{
	return lmdb_err(mdb_txn_begin(m->env, NULL, rdonly ? MDB_RDONLY : 0, txn),
			"begin transaction");
}

static int local_lookup(struct srv *s, const char *path, struct rpc_attr *a)
{
	MDB_txn *txn;
	int ret;

	if (!strcmp(path, "/")) {
		root_attr(s, a);
		return 0;
	}
	ret = txn_begin(s->meta, true, &txn);
	if (ret)
		return ret;
	ret = get_entry(s->meta, txn, path, a);
	mdb_txn_abort(txn);
	return ret;
}

/* The parent of path must exist and be a directory, wherever it lives. */
static int check_parent(struct srv *s, const char *path)
{
	char parent[RPC_PATH_MAX + 1];
	size_t plen = parent_len(path);
	uint8_t body[RPC_PATH_MAX + 64], rep[SRV_REPLY_CAP];
	struct xp_call call = {0};
	struct rpc_attr a;
	uint32_t owner;
	int ret;

	memcpy(parent, path, plen);
	parent[plen] = 0;
	owner = rpfs_meta_for_path(&s->cfg, parent);
	if (!strcmp(parent, "/") || owner == s->meta->index) {
		ret = local_lookup(s, parent, &a);
	} else {
		if (owner >= s->cfg.nmeta)
			return -EIO;
		ret = rpc_enc_path_op(body, sizeof(body), RPC_LOOKUP, 0, parent);
		if (ret < 0)
			return ret;
		call.req = body;
		call.req_len = (size_t)ret;
		call.rep = rep;
		call.rep_max = sizeof(rep);
		ret = peer_call(s, s->cfg.meta[owner], &call);
		if (!ret && rpc_dec_attr(rep, call.rep_len, &a))
			ret = -EPROTO;
		if (ret && ret != -ENOENT)
			log_warn("rpfsd: couldn't look up parent %s on metadata server "
				 "%u: "
				 "%s",
				 parent, owner, strerror(-ret));
	}
	if (ret)
		return ret;
	return a.type == RPC_TYPE_DIR ? 0 : -ENOTDIR;
}

/* ---- operations (workers) ----------------------------------------------------- */

static int do_mkdir_create(struct srv_op *op, bool dir)
{
	struct srv *s = op->s;
	struct meta *m = s->meta;
	const struct rpc_req *q = &op->q;
	struct rpc_attr a;
	MDB_txn *txn;
	uint64_t handle;
	int ret;

	if (!strcmp(q->path, "/"))
		return dir ? -EEXIST : -EISDIR;
	ret = check_parent(s, q->path);
	if (ret)
		return ret;
	ret = txn_begin(m, false, &txn);
	if (ret)
		return ret;
	ret = get_entry(m, txn, q->path, &a);
	if (!ret) {
		if (dir || (q->flags & RPC_CREATE_EXCL))
			ret = -EEXIST;
		else if (a.type != RPC_TYPE_FILE)
			ret = -EISDIR;
		else
			reply_attr(op, &a);
		goto abort;
	}
	if (ret != -ENOENT)
		goto abort;
	ret = next_handle(m, txn, &handle);
	if (ret)
		goto abort;
	memset(&a, 0, sizeof(a));
	a.handle = handle;
	a.type = dir ? RPC_TYPE_DIR : RPC_TYPE_FILE;
	a.mode = q->mode & 07777;
	a.uid = q->uid;
	a.gid = q->gid;
	a.atime = a.mtime = a.ctime = srv_now_ns();
	if (!dir) {
		struct rpfs_layout *l = &a.layout;
		uint32_t nio = s->cfg.nio;

		if (!nio) {
			ret = -ENOSPC;
			log_warn("rpfsd: can't create %s: the cluster has no I/O servers",
				 q->path);
			goto abort;
		}
		l->stripe_unit = q->stripe_unit ? q->stripe_unit : s->cfg.stripe_unit;
		l->stripe_count = q->stripe_count ? q->stripe_count : s->cfg.stripe_count;
		if (!l->stripe_count || l->stripe_count > nio)
			l->stripe_count = nio;
		if (q->first_server >= 0) {
			if ((uint32_t)q->first_server >= nio) {
				ret = -EINVAL;
				goto abort;
			}
			l->first_server = (uint32_t)q->first_server;
		} else {
			/* Consecutive files start on consecutive servers. */
			l->first_server = (uint32_t)((handle & META_HANDLE_MASK) % nio);
		}
		l->nservers = nio;
		ret = layout_check(l);
		if (ret)
			goto abort;
	}
	ret = put_entry(m, txn, q->path, &a, true);
	if (ret)
		goto abort;
	ret = lmdb_err(mdb_txn_commit(txn), "commit");
	if (!ret)
		reply_attr(op, &a);
	return ret;

abort:
	mdb_txn_abort(txn);
	return ret;
}

static int do_lookup(struct srv_op *op)
{
	struct rpc_attr a;
	int ret = local_lookup(op->s, op->q.path, &a);

	return ret ? ret : reply_attr(op, &a);
}

static int do_getattr(struct srv_op *op)
{
	struct srv *s = op->s;
	struct meta *m = s->meta;
	char path[RPC_PATH_MAX + 1];
	struct rpc_attr a;
	uint8_t hk[8];
	MDB_val k = {8, hk}, v;
	MDB_txn *txn;
	int ret;

	if (RPC_HANDLE_META(op->q.handle) != m->index)
		return -EREMOTE;
	if (!(op->q.handle & META_HANDLE_MASK)) {
		root_attr(s, &a);
		return a.handle == op->q.handle ? reply_attr(op, &a) : -ENOENT;
	}
	put_be64(hk, op->q.handle);
	ret = txn_begin(m, true, &txn);
	if (ret)
		return ret;
	ret = lmdb_err(mdb_get(txn, m->byh, &k, &v), "handle lookup");
	if (!ret && (v.mv_size == 0 || v.mv_size > RPC_PATH_MAX))
		ret = -EIO;
	if (!ret) {
		memcpy(path, v.mv_data, v.mv_size);
		path[v.mv_size] = 0;
		ret = get_entry(m, txn, path, &a);
	}
	mdb_txn_abort(txn);
	return ret ? ret : reply_attr(op, &a);
}

static int do_setattr(struct srv_op *op)
{
	struct meta *m = op->s->meta;
	const struct rpc_req *q = &op->q;
	struct rpc_attr a;
	MDB_txn *txn;
	int ret;

	if (!strcmp(q->path, "/"))
		return -EPERM;
	ret = txn_begin(m, false, &txn);
	if (ret)
		return ret;
	ret = get_entry(m, txn, q->path, &a);
	if (ret)
		goto abort;
	if (q->mask & RPC_SET_MODE)
		a.mode = q->mode & 07777;
	if (q->mask & RPC_SET_OWNER) {
		a.uid = q->uid;
		a.gid = q->gid;
	}
	if (q->mask & RPC_SET_TIMES) {
		a.atime = q->atime;
		a.mtime = q->mtime;
	}
	a.ctime = srv_now_ns();
	ret = put_entry(m, txn, q->path, &a, false);
	if (ret)
		goto abort;
	ret = lmdb_err(mdb_txn_commit(txn), "commit");
	return ret ? ret : reply_attr(op, &a);

abort:
	mdb_txn_abort(txn);
	return ret;
}

static void drop_hent(struct meta *m, uint64_t handle);

/* Remove the datafiles of a removed file. An I/O server that is down
 * keeps an orphan datafile: logged, not fatal (the entry is gone). */
static void remove_datafiles(struct srv *s, const struct rpc_attr *a)
{
	const struct rpfs_layout *l = &a->layout;
	uint8_t body[64];
	int len = rpc_enc_handle_op(body, sizeof(body), RPC_IO_REMOVE, a->handle);

	for (uint32_t slot = 0; slot < l->stripe_count && len > 0; slot++) {
		uint32_t io = layout_server(l, slot);
		struct xp_call call = {0};
		uint32_t server;
		int ret;

		if (io >= s->cfg.nio) {
			log_warn("rpfsd: file %016llx names I/O server %u, the cluster "
				 "has "
				 "%u",
				 (unsigned long long)a->handle, io, s->cfg.nio);
			continue;
		}
		server = s->cfg.io[io];
		if ((int)server == s->self && s->io) {
			ret = io_remove_handle(s, a->handle);
		} else {
			call.req = body;
			call.req_len = (size_t)len;
			ret = peer_call(s, server, &call);
		}
		if (ret)
			log_warn("rpfsd: couldn't remove datafile %016llx on I/O server "
				 "%s: "
				 "%s (left behind)",
				 (unsigned long long)a->handle,
				 s->cfg.servers[server].name, strerror(-ret));
	}
}

static int do_remove(struct srv_op *op)
{
	struct meta *m = op->s->meta;
	struct rpc_attr a;
	MDB_txn *txn;
	int ret;

	if (!strcmp(op->q.path, "/"))
		return -EISDIR;
	ret = txn_begin(m, false, &txn);
	if (ret)
		return ret;
	ret = get_entry(m, txn, op->q.path, &a);
	if (!ret && a.type == RPC_TYPE_DIR)
		ret = -EISDIR;
	if (!ret)
		ret = del_entry(m, txn, op->q.path, a.handle);
	if (ret) {
		mdb_txn_abort(txn);
		return ret;
	}
	ret = lmdb_err(mdb_txn_commit(txn), "commit");
	if (ret)
		return ret;
	drop_hent(m, a.handle);
	remove_datafiles(op->s, &a);
	return 0;
}

/* Is the entry stored in v a direct child of dir? Children of a directory
 * whose hash collides with dir's share the key range. */
static bool is_child(const MDB_val *v, const char *dir)
{
	const char *p = (const char *)v->mv_data + META_VAL_HDR;
	size_t dlen = strlen(dir), base = dlen == 1 ? 1 : dlen + 1, plen;

	if (v->mv_size < META_VAL_HDR)
		return false;
	plen = v->mv_size - META_VAL_HDR;
	return plen > base && !memcmp(p, dir, dlen) && p[base - 1] == '/' &&
	       !memchr(p + base, '/', plen - base);
}

/* Does any local entry have dir as its parent? */
static int local_has_child(struct meta *m, MDB_txn *txn, const char *dir)
{
	uint8_t prefix[8];
	MDB_cursor *cur;
	MDB_val k, v;
	int rc, ret;

	dir_prefix(dir, prefix);
	ret = lmdb_err(mdb_cursor_open(txn, m->ns, &cur), "cursor");
	if (ret)
		return ret;
	k.mv_data = prefix;
	k.mv_size = 8;
	ret = 0;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size < 8 || memcmp(k.mv_data, prefix, 8))
			break;
		/* A colliding directory's child is not ours. */
		if (is_child(&v, dir)) {
			ret = 1;
			break;
		}
	}
	mdb_cursor_close(cur);
	return ret;
}

/* Do the other metadata servers hold a child of dir? */
static int remote_has_child(struct srv *s, const char *dir)
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
			log_warn("rpfsd: rmdir %s: couldn't ask metadata server %u for "
				 "children: %s",
				 dir, i, strerror(-ret));
			return ret;
		}
		if (n || more)
			return 1;
	}
	return 0;
}

static int do_rmdir(struct srv_op *op)
{
	struct srv *s = op->s;
	struct meta *m = s->meta;
	struct rpc_attr a;
	MDB_txn *txn;
	int ret;

	if (!strcmp(op->q.path, "/"))
		return -EBUSY;
	ret = local_lookup(s, op->q.path, &a);
	if (ret)
		return ret;
	if (a.type != RPC_TYPE_DIR)
		return -ENOTDIR;
	ret = remote_has_child(s, op->q.path);
	if (ret)
		return ret > 0 ? -ENOTEMPTY : ret;
	ret = txn_begin(m, false, &txn);
	if (ret)
		return ret;
	ret = get_entry(m, txn, op->q.path, &a);
	if (!ret && a.type != RPC_TYPE_DIR)
		ret = -ENOTDIR;
	if (!ret) {
		ret = local_has_child(m, txn, op->q.path);
		if (ret > 0)
			ret = -ENOTEMPTY;
	}
	if (!ret)
		ret = del_entry(m, txn, op->q.path, a.handle);
	if (ret) {
		mdb_txn_abort(txn);
		return ret;
	}
	return lmdb_err(mdb_txn_commit(txn), "commit");
}

/* The direct children this server holds, sorted by name, after the cookie.
 * A non-owner answers too (children of one directory live everywhere); the
 * owner also checks that the directory exists. */
static int do_readdir(struct srv_op *op)
{
	struct srv *s = op->s;
	struct meta *m = s->meta;
	const char *dir = op->q.path;
	size_t clen = strlen(op->q.cookie);
	uint32_t want =
		op->q.max && op->q.max < META_DIRENTS_MAX ? op->q.max : META_DIRENTS_MAX;
	struct rpc_dirent *ents;
	uint8_t kbuf[8 + RPC_NAME_MAX + 1];
	size_t used = 8;
	uint32_t n = 0, more = 0;
	MDB_cursor *cur = NULL;
	MDB_txn *txn;
	MDB_val k, v;
	int rc, ret;

	if (clen > RPC_NAME_MAX)
		return -EINVAL;
	if (owns(s, dir)) {
		struct rpc_attr a;

		ret = local_lookup(s, dir, &a);
		if (ret)
			return ret;
		if (a.type != RPC_TYPE_DIR)
			return -ENOTDIR;
	}
	ents = calloc(want, sizeof(*ents));
	if (!ents)
		return -ENOMEM;
	ret = txn_begin(m, true, &txn);
	if (ret)
		goto out;
	ret = lmdb_err(mdb_cursor_open(txn, m->ns, &cur), "cursor");
	if (ret)
		goto abort;
	dir_prefix(dir, kbuf);
	memcpy(kbuf + 8, op->q.cookie, clen);
	k.mv_data = kbuf;
	k.mv_size = 8 + clen;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		size_t nlen = k.mv_size - 8;
		struct rpc_attr a;

		if (k.mv_size < 9 || memcmp(k.mv_data, kbuf, 8))
			break;
		if (nlen == clen &&
		    !memcmp((const char *)k.mv_data + 8, op->q.cookie, clen))
			continue;
		if (!is_child(&v, dir))
			continue;
		if (n == want || used + 6 + nlen > SRV_REPLY_CAP) {
			more = 1;
			break;
		}
		if (rpc_dec_attr((const uint8_t *)v.mv_data + 4, RPC_ATTR_SIZE, &a)) {
			ret = -EIO;
			break;
		}
		ents[n].type = a.type;
		memcpy(ents[n].name, (const char *)k.mv_data + 8, nlen);
		ents[n].name[nlen] = 0;
		used += 6 + nlen;
		n++;
	}
	if (!ret) {
		ret = rpc_enc_dirents(op->rep, sizeof(op->rep), ents, n, more);
		if (ret >= 0) {
			op->rep_len = (size_t)ret;
			ret = 0;
		}
	}
	mdb_cursor_close(cur);
abort:
	mdb_txn_abort(txn);
out:
	free(ents);
	return ret;
}

static int do_statfs(struct srv_op *op)
{
	struct meta *m = op->s->meta;
	struct rpc_statfs sf;
	struct statvfs sv;
	MDB_stat st;
	MDB_txn *txn;
	int ret;

	if (statvfs(m->dir, &sv))
		return -errno;
	ret = txn_begin(m, true, &txn);
	if (ret)
		return ret;
	ret = lmdb_err(mdb_stat(txn, m->ns, &st), "stat");
	mdb_txn_abort(txn);
	if (ret)
		return ret;
	sf.total = (uint64_t)sv.f_blocks * sv.f_frsize;
	sf.avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	sf.objects = st.ms_entries;
	rpc_enc_statfs(op->rep, &sf);
	op->rep_len = RPC_STATFS_SIZE;
	return 0;
}

void meta_run(struct sched_job *job)
{
	struct srv_op *op = (struct srv_op *)job;
	uint16_t code = op->q.op;
	int ret;

	/* Path ops must reach the path's owner; READDIR goes to everyone. */
	if (code != RPC_READDIR && code != RPC_GETATTR && code != RPC_STATFS_META &&
	    (!op->q.path || !rpc_path_ok(op->q.path) || !owns(op->s, op->q.path))) {
		op->status = op->q.path && rpc_path_ok(op->q.path) ? -EREMOTE : -EINVAL;
		srv_op_complete(op);
		return;
	}
	if (code == RPC_READDIR && (!op->q.path || !rpc_path_ok(op->q.path))) {
		op->status = -EINVAL;
		srv_op_complete(op);
		return;
	}
	switch (code) {
	case RPC_MKDIR:
		ret = do_mkdir_create(op, true);
		break;
	case RPC_CREATE:
		ret = do_mkdir_create(op, false);
		break;
	case RPC_RMDIR:
		ret = do_rmdir(op);
		break;
	case RPC_LOOKUP:
		ret = do_lookup(op);
		break;
	case RPC_GETATTR:
		ret = do_getattr(op);
		break;
	case RPC_SETATTR:
		ret = do_setattr(op);
		break;
	case RPC_REMOVE:
		ret = do_remove(op);
		break;
	case RPC_READDIR:
		ret = do_readdir(op);
		break;
	case RPC_STATFS_META:
		ret = do_statfs(op);
		break;
	default:
		ret = -EOPNOTSUPP;
		break;
	}
	op->status = ret;
	srv_op_complete(op);
}

/* ---- counters and locks (progress thread) --------------------------------------- */

bool meta_is_fast(uint16_t op)
{
	return op == RPC_FETCH_ADD || op == RPC_LOCK || op == RPC_UNLOCK;
}

static unsigned hent_hash(uint64_t h)
{
	return (unsigned)((h ^ (h >> 20) ^ (h >> 48)) % META_HASH);
}

/* Under m->lock. */
static struct hent *hent_find(struct meta *m, uint64_t handle, bool create)
{
	unsigned b = hent_hash(handle);
	struct hent *e;

	for (e = m->hash[b]; e; e = e->next)
		if (e->handle == handle)
			return e;
	if (!create)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->handle = handle;
	e->next = m->hash[b];
	m->hash[b] = e;
	return e;
}

/* Under m->lock: free an entry that holds nothing. */
static void hent_maybe_free(struct meta *m, struct hent *e)
{
	struct hent **pp = &m->hash[hent_hash(e->handle)];

	if (e->counter || e->locks)
		return;
	while (*pp && *pp != e)
		pp = &(*pp)->next;
	if (*pp)
		*pp = e->next;
	free(e);
}

static void drop_hent(struct meta *m, uint64_t handle)
{
	struct hent *e;

	pthread_mutex_lock(&m->lock);
	e = hent_find(m, handle, false);
	if (e) {
		while (e->locks) {
			struct lock *l = e->locks;

			e->locks = l->next;
			free(l);
		}
		e->counter = 0;
		hent_maybe_free(m, e);
	}
	pthread_mutex_unlock(&m->lock);
}

/* The handle must be a file this server knows: counters and locks are not
 * handed out for made-up handles. */
static int handle_known(struct meta *m, uint64_t handle)
{
	uint8_t hk[8];
	MDB_val k = {8, hk}, v;
	MDB_txn *txn;
	int ret;

	if (RPC_HANDLE_META(handle) != m->index)
		return -EREMOTE;
	put_be64(hk, handle);
	ret = txn_begin(m, true, &txn);
	if (ret)
		return ret;
	ret = lmdb_err(mdb_get(txn, m->byh, &k, &v), "handle lookup");
	mdb_txn_abort(txn);
	return ret;
}

static int do_fetch_add(struct srv_op *op, struct hent *e)
{
	uint64_t old = e->counter;
	int64_t d = op->q.delta;

	/* A file pointer is never negative and never wraps. */
	if ((d < 0 && (uint64_t)(-(d + 1)) + 1 > old) ||
	    (d > 0 && (uint64_t)d > UINT64_MAX - old))
		return -EINVAL;
	e->counter = old + (uint64_t)d;
	rpc_enc_u64(op->rep, old);
	op->rep_len = 8;
	return 0;
}

static int do_lock(struct srv_op *op, struct hent *e)
{
	const struct rpc_req *q = &op->q;
	uint64_t end = q->len ? q->off + q->len : UINT64_MAX;
	bool excl = q->flags & RPC_LOCK_EXCL;
	struct lock *l;

	if (q->len && end < q->off)
		return -EINVAL;
	for (l = e->locks; l; l = l->next) {
		bool mine = l->owner == q->owner && l->conn == op->conn;

		if (l->off < end && q->off < l->end && (excl || l->excl) && !mine)
			return -EAGAIN;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->off = q->off;
	l->end = end;
	l->owner = q->owner;
	l->conn = op->conn;
	l->excl = excl;
	l->next = e->locks;
	e->locks = l;
	return 0;
}

static int do_unlock(struct srv_op *op, struct hent *e)
{
	const struct rpc_req *q = &op->q;
	uint64_t end = q->len ? q->off + q->len : UINT64_MAX;

	for (struct lock **pp = &e->locks; *pp; pp = &(*pp)->next) {
		struct lock *l = *pp;

		if (l->off == q->off && l->end == end && l->owner == q->owner &&
		    l->conn == op->conn) {
			*pp = l->next;
			free(l);
			return 0;
		}
	}
	return -EINVAL;
}

void meta_fast(struct srv_op *op)
{
	struct meta *m = op->s->meta;
	struct hent *e;
	int ret;

	ret = handle_known(m, op->q.handle);
	if (ret) {
		op->status = ret;
		return;
	}
	pthread_mutex_lock(&m->lock);
	e = hent_find(m, op->q.handle, op->q.op != RPC_UNLOCK);
	if (!e) {
		ret = op->q.op == RPC_UNLOCK ? -EINVAL : -ENOMEM;
	} else {
		switch (op->q.op) {
		case RPC_FETCH_ADD:
			ret = do_fetch_add(op, e);
			break;
		case RPC_LOCK:
			ret = do_lock(op, e);
			break;
		default:
			ret = do_unlock(op, e);
			break;
		}
		hent_maybe_free(m, e);
	}
	pthread_mutex_unlock(&m->lock);
	op->status = ret;
}

void meta_conn_down(struct srv *s, struct xp_conn *c)
{
	struct meta *m = s->meta;
	unsigned freed = 0;

	pthread_mutex_lock(&m->lock);
	for (unsigned b = 0; b < META_HASH; b++) {
		struct hent *e = m->hash[b];

		while (e) {
			struct hent *next = e->next;

			for (struct lock **pp = &e->locks; *pp;) {
				struct lock *l = *pp;

				if (l->conn == c) {
					*pp = l->next;
					free(l);
					freed++;
				} else {
					pp = &l->next;
				}
			}
			hent_maybe_free(m, e);
			e = next;
		}
	}
	pthread_mutex_unlock(&m->lock);
	if (freed)
		log_info("rpfsd: released %u locks of a closed connection", freed);
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
	for (unsigned b = 0; b < META_HASH; b++) {
		while (m->hash[b]) {
			struct hent *e = m->hash[b];

			m->hash[b] = e->next;
			while (e->locks) {
				struct lock *l = e->locks;

				e->locks = l->next;
				free(l);
			}
			free(e);
		}
	}
	pthread_mutex_destroy(&m->lock);
	free(m);
	s->meta = NULL;
}
