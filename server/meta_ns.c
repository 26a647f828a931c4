/* Role meta's namespace ops that read or change one entry in place:
 * LOOKUP, GETATTR (by handle: a capability's renewal), SETATTR, READDIR
 * (the children this server holds: the client merges every server's) and
 * STATFS; and the helpers the other namespace ops share: whether a path is
 * ours, an entry's attributes here or on the metadata server that owns it,
 * the reply that opens a file (with a capability), and the search
 * permission on the ancestors held here (search.c asks it). */
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_states.h"
#include "layout.h"
#include "log.h"
#include "meta_attr.h"
#include "meta_priv.h"
#include "meta_record.h"
#include "placement.h"

#define META_DIRENTS_MAX     1024
#define META_STRIPE_UNIT_MAX (1ull << 32) /* a directory's default */

bool meta_owns(struct srv *s, const char *path)
{
	return place_meta_of_path(&s->cfg, path) == s->meta->index;
}

static void root_attr(struct srv *s, struct rpc_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->handle = place_handle(place_meta_of_path(&s->cfg, "/"), 0);
	a->type = RPC_TYPE_DIR;
	/* Like /tmp: anyone may create, only owners remove (access.c). */
	a->mode = 01777;
}

static int reply_attr(struct srv_op *op, const struct rpc_attr *a)
{
	rpc_enc_attr(op->rep, a);
	op->rep_len = RPC_ATTR_SIZE;
	return 0;
}

/* The rights a request's RPC_WANT_* flags ask for, as capability rights and
 * as mode bits. */
static uint32_t wanted_rights(uint16_t flags)
{
	return ((flags & RPC_WANT_READ) ? RPC_CAP_READ : 0) |
	       ((flags & RPC_WANT_WRITE) ? RPC_CAP_WRITE : 0);
}

static unsigned wanted_bits(uint16_t flags)
{
	return ((flags & RPC_WANT_READ) ? ACCESS_R : 0) |
	       ((flags & RPC_WANT_WRITE) ? ACCESS_W : 0);
}

/* Answer an open (CREATE, LOOKUP, GETATTR) of a: a file's reply carries a
 * capability for the rights asked, after checking them against its mode
 * for the caller unless checked says the caller may (it just made it). */
/* A mirrored file's servers known down, after the capability (rpc.h). */
/* A mirrored file's open reply ends with its servers known to be down
 * (io_states) and its mirror view (meta_mirror.c). */
static int add_down(struct srv_op *op, const struct rpc_attr *a)
{
	struct srv *s = op->s;
	uint32_t list[RPC_DOWN_MAX], n = 0;
	bool *down = NULL;
	int len;

	if (!layout_redundant(&a->layout))
		return 0;
	if (s->io_states && s->cfg.nio && (down = calloc(s->cfg.nio, sizeof(*down))) &&
	    io_states_down(s, down))
		for (uint32_t slot = 0;
		     slot < layout_slots(&a->layout) && n < RPC_DOWN_MAX; slot++) {
			uint32_t io = layout_server(&a->layout, slot);

			if (io < s->cfg.nio && down[io])
				list[n++] = io;
		}
	free(down);
	len = rpc_enc_down(op->rep + op->rep_len, SRV_REPLY_CAP - op->rep_len, list, n);
	if (len < 0)
		return len;
	op->rep_len += (size_t)len;
	return meta_add_view(op, a->handle);
}

int meta_reply_open(struct srv_op *op, struct rpc_attr *a, bool checked)
{
	if (a->type != RPC_TYPE_FILE)
		return reply_attr(op, a);
	if (!checked && !access_may(ident_of(op->conn), a, wanted_bits(op->q.flags)))
		return -EACCES;
	access_grant(op->s, a->handle,
		     wanted_rights(op->q.flags) |
			     (layout_copies(&a->layout) > 1 ? RPC_CAP_MIRRORED : 0),
		     &a->cap);
	rpc_enc_attr_cap(op->rep, a);
	op->rep_len = RPC_ATTR_CAP_SIZE;
	return add_down(op, a);
}

int meta_local_lookup(struct srv *s, const char *path, struct rpc_attr *a)
{
	MDB_txn *txn;
	int ret;

	if (!strcmp(path, "/")) {
		root_attr(s, a);
		return 0;
	}
	ret = meta_txn_begin(s->meta, true, &txn);
	if (ret)
		return ret;
	ret = meta_get_entry(s->meta, txn, path, a);
	mdb_txn_abort(txn);
	return ret;
}

int meta_search_local(struct srv *s, const struct srv_client *who, const char *path,
		      unsigned want, struct rpc_search_rep *r)
{
	char pre[RPC_PATH_MAX + 1];
	size_t len = strlen(path);
	uint32_t depth = 0;
	MDB_txn *txn = NULL;
	int ret = 0;

	r->depth = 0;
	r->status = 0;
	memcpy(pre, path, len + 1);
	/* "/" (depth 0) is 01777: anyone searches and lists it. */
	for (size_t i = 1; i <= len && len > 1; i++) {
		struct rpc_attr a;
		bool last = i == len;
		int st = 0;

		if (!last && path[i] != '/')
			continue;
		depth++;
		if (last && !want)
			break;
		pre[i] = 0; /* pre is this component's path for a moment */
		if (meta_owns(s, pre)) {
			if (!txn && (ret = meta_txn_begin(s->meta, true, &txn)))
				return ret;
			st = meta_get_entry(s->meta, txn, pre, &a);
			st = search_entry(who, st, &a, last ? want : ACCESS_X);
		}
		pre[i] = path[i];
		if (st) {
			r->depth = depth;
			r->status = st;
			break;
		}
	}
	if (txn)
		mdb_txn_abort(txn);
	return 0;
}

/* The attributes of path, wherever it lives: here, or a LOOKUP to the
 * metadata server that owns it. */
int meta_path_attr(struct srv *s, const char *path, struct rpc_attr *a)
{
	uint8_t body[RPC_PATH_MAX + 64], rep[SRV_REPLY_CAP];
	struct xp_call call = {0};
	uint32_t owner = place_meta_of_path(&s->cfg, path);
	int ret;

	if (!strcmp(path, "/") || owner == s->meta->index) {
		ret = meta_local_lookup(s, path, a);
	} else {
		if (owner >= s->cfg.nmeta)
			return -EIO;
		ret = rpc_enc_path_op(body, sizeof(body), RPC_LOOKUP, 0, path);
		if (ret < 0)
			return ret;
		call.req = body;
		call.req_len = (size_t)ret;
		call.rep = rep;
		call.rep_max = sizeof(rep);
		ret = peer_call(s, s->cfg.meta[owner], &call);
		if (!ret && rpc_dec_attr(rep, call.rep_len, a))
			ret = -EPROTO;
		if (ret && ret != -ENOENT)
			log_warn("rpfsd: couldn't look up %s on metadata server %u: %s",
				 path, owner, strerror(-ret));
	}
	return ret;
}

/* The parent of path must exist and be a directory, wherever it lives;
 * *pa gets its attributes. */
int meta_parent_attr(struct srv *s, const char *path, struct rpc_attr *pa)
{
	char parent[RPC_PATH_MAX + 1];
	size_t plen = meta_parent_len(path);
	int ret;

	memcpy(parent, path, plen);
	parent[plen] = 0;
	ret = meta_path_attr(s, parent, pa);
	if (ret)
		return ret;
	return pa->type == RPC_TYPE_DIR ? 0 : -ENOTDIR;
}

int serve_lookup(struct srv_op *op)
{
	struct rpc_attr a;
	int ret = meta_local_lookup(op->s, op->q.path, &a);

	return ret ? ret : meta_reply_open(op, &a, false);
}

int serve_getattr(struct srv_op *op)
{
	struct srv *s = op->s;
	struct meta *m = s->meta;
	char path[RPC_PATH_MAX + 1];
	struct rpc_attr a;
	uint8_t hk[8];
	MDB_val k = {8, hk}, v;
	MDB_txn *txn;
	int ret;

	if (place_meta_of_handle(op->q.handle) != m->index)
		return -EREMOTE;
	if (!place_serial(op->q.handle)) {
		root_attr(s, &a);
		return a.handle == op->q.handle ? reply_attr(op, &a) : -ENOENT;
	}
	meta_put_be64(hk, op->q.handle);
	ret = meta_txn_begin(m, true, &txn);
	if (ret)
		return ret;
	ret = rec_get(txn, m->byh, REC_BYHANDLE, &k, &v);
	if (ret == REC_DAMAGED) {
		char what[64];

		snprintf(what, sizeof(what), "handle %016" PRIx64, op->q.handle);
		ret = meta_damaged(m, what);
	} else {
		ret = meta_lmdb_err(ret, "handle lookup");
	}
	if (!ret && (v.mv_size == 0 || v.mv_size > RPC_PATH_MAX))
		ret = -EIO;
	if (!ret) {
		memcpy(path, v.mv_data, v.mv_size);
		path[v.mv_size] = 0;
		ret = meta_get_entry(m, txn, path, &a);
	}
	mdb_txn_abort(txn);
	if (ret)
		return ret;
	/* A renewal asks for no more than the capability it renews had (the
	 * progress thread checked that one); the mode is checked again, so a
	 * chmod takes effect at the latest when the holder renews. */
	if (!access_is_super(ident_of(op->conn)) &&
	    (wanted_rights(op->q.flags) & ~op->q.cap.rights))
		return -EACCES;
	return meta_reply_open(op, &a, false);
}

/* chmod: the owner or root. chown: root; the owner may only change the
 * group, to one of its own. Times: the owner, root, or a writer. */
static int may_setattr(const struct srv_client *who, const struct rpc_req *q,
		       const struct rpc_attr *a)
{
	bool owner = access_is_super(who) || who->uid == a->uid;

	if ((q->mask & RPC_SET_MODE) && !owner)
		return -EPERM;
	if ((q->mask & RPC_SET_OWNER) && !access_is_super(who) &&
	    (!owner || q->uid != a->uid || !access_in_group(who, q->gid)))
		return -EPERM;
	if ((q->mask & RPC_SET_TIMES) && !owner && !access_may(who, a, ACCESS_W))
		return -EACCES;
	if ((q->mask & RPC_SET_LAYOUT) && !owner)
		return -EPERM;
	return 0;
}

/* A directory's default layout for new files: a file's own is fixed at
 * create (its datafiles are laid out by it). 0 keeps the cluster's. Its
 * redundancy (redundancy.h) is kept when the request says none, cleared
 * by "default"; ec:K+P is refused unless ec_preview is 1 (its degraded
 * service is not built yet), and so is a mirror whose copies or an ec
 * whose groups (of the count asked, if one is) don't fit the cluster. */
static int set_dir_layout(struct srv *s, const struct rpc_req *q, struct rpc_attr *a)
{
	struct red_spec r;
	char text[RED_TEXT_MAX];

	if (a->type != RPC_TYPE_DIR)
		return -ENOTDIR;
	if (q->stripe_count > s->cfg.nio || q->stripe_unit > META_STRIPE_UNIT_MAX)
		return -EINVAL;
	if (q->redundancy) {
		if (red_unpack(q->redundancy, &r))
			return -EINVAL;
		red_format(&r, text, sizeof(text));
		if (r.kind == RPFS_LAYOUT_EC && !s->cfg.xport.ec_preview) {
			log_warn("rpfsd: setstripe %s: %s: ec:K+P is not supported yet "
				 "(ec_preview is 0)",
				 q->path, text);
			return -EOPNOTSUPP;
		}
		if (r.kind == RPFS_LAYOUT_EC &&
		    !red_fits(&r, q->stripe_count, s->cfg.nio)) {
			log_warn("rpfsd: setstripe %s: %s over %u data slots (a multiple "
				 "of %u) does not fit %u I/O servers",
				 q->path, text, q->stripe_count, r.data_cells,
				 s->cfg.nio);
			return -EINVAL;
		}
		if (!red_fits(&r, q->stripe_count, s->cfg.nio)) {
			log_warn("rpfsd: setstripe %s: %s over %u slots needs %llu I/O "
				 "servers, the cluster has %u",
				 q->path, text, q->stripe_count ? q->stripe_count : 1,
				 (unsigned long long)(q->stripe_count ? q->stripe_count
								      : 1) *
					 red_copies(&r),
				 s->cfg.nio);
			return -EINVAL;
		}
		red_to_dir_layout(&r, &a->layout);
	}
	a->layout.stripe_unit = q->stripe_unit;
	a->layout.stripe_count = q->stripe_count;
	return 0;
}

int serve_setattr(struct srv_op *op)
{
	struct meta *m = op->s->meta;
	const struct rpc_req *q = &op->q;
	struct rpc_attr a;
	MDB_txn *txn;
	int ret;

	if (!strcmp(q->path, "/"))
		return -EPERM;
	ret = meta_txn_begin(m, false, &txn);
	if (ret)
		return ret;
	ret = meta_get_entry(m, txn, q->path, &a);
	if (!ret)
		ret = may_setattr(ident_of(op->conn), q, &a);
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
	if ((q->mask & RPC_SET_LAYOUT) && (ret = set_dir_layout(op->s, q, &a)))
		goto abort;
	a.ctime = srv_now_ns();
	/* Data written before no longer counts for mtime (client/attr.c). */
	if (q->mask & RPC_SET_TIMES)
		a.times_set = a.ctime;
	ret = meta_put_entry(m, txn, q->path, &a, false);
	if (ret)
		goto abort;
	ret = meta_lmdb_err(mdb_txn_commit(txn), "commit");
	return ret ? ret : reply_attr(op, &a);

abort:
	mdb_txn_abort(txn);
	return ret;
}

/* The direct children this server holds, sorted by name, after the cookie.
 * A non-owner answers too (children of one directory live everywhere); the
 * owner also checks that the directory exists. */
int serve_readdir(struct srv_op *op)
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
	/* Every server has checked (meta_run, search.c) that a client other
	 * than root may search the ancestors and read the directory, which
	 * must then exist (asking the servers that hold them, once per page:
	 * listing is rare next to I/O); for root, the owner checks that it
	 * exists. */
	if (meta_owns(s, dir) && access_is_super(ident_of(op->conn))) {
		struct rpc_attr a;

		ret = meta_path_attr(s, dir, &a);
		if (ret)
			return ret;
		if (a.type != RPC_TYPE_DIR)
			return -ENOTDIR;
	}
	ents = calloc(want, sizeof(*ents));
	if (!ents)
		return -ENOMEM;
	ret = meta_txn_begin(m, true, &txn);
	if (ret)
		goto out;
	ret = meta_lmdb_err(mdb_cursor_open(txn, m->ns, &cur), "cursor");
	if (ret)
		goto abort;
	meta_dir_prefix(dir, kbuf);
	memcpy(kbuf + 8, op->q.cookie, clen);
	k.mv_data = kbuf;
	k.mv_size = 8 + clen;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		size_t nlen = k.mv_size - 8, elen;
		struct rpc_attr a;
		const char *ep;
		char why[200];

		if (k.mv_size < 9 || memcmp(k.mv_data, kbuf, 8))
			break;
		if (rec_check(REC_NS, &k, &v)) {
			ret = meta_damaged_in(m, dir);
			break;
		}
		if (nlen == clen &&
		    !memcmp((const char *)k.mv_data + 8, op->q.cookie, clen))
			continue;
		if (!meta_is_child(&v, dir))
			continue;
		if (n == want || used + 6 + nlen > SRV_REPLY_CAP) {
			more = 1;
			break;
		}
		if (meta_attr_dec(v.mv_data, v.mv_size, &a, &ep, &elen, why,
				  sizeof(why))) {
			log_err("rpfsd: corrupt metadata entry in %s: %s", dir, why);
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

int serve_statfs_meta(struct srv_op *op)
{
	struct meta *m = op->s->meta;
	struct rpc_statfs sf;
	MDB_stat st;
	MDB_txn *txn;
	int ret;

	ret = srv_storage(m->dir, &sf);
	if (ret)
		return ret;
	ret = meta_txn_begin(m, true, &txn);
	if (ret)
		return ret;
	ret = meta_lmdb_err(mdb_stat(txn, m->ns, &st), "stat");
	mdb_txn_abort(txn);
	if (ret)
		return ret;
	sf.objects = st.ms_entries;
	rpc_enc_statfs(op->rep, &sf);
	op->rep_len = RPC_STATFS_SIZE;
	return 0;
}
