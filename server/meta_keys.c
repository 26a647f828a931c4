/* Role meta's records and keys: the key of a path's entry (its parent's
 * hash, then its name), an entry's get, put and delete through the
 * checksummed records (meta_record.c) in their stored form (meta_attr.c),
 * LMDB's results as errnos, and the transactions every op begins. What the
 * store holds is told at the top of meta.c. */
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <stdio.h>
#include <string.h>

#include "hash.h"
#include "log.h"
#include "meta_attr.h"
#include "meta_priv.h"
#include "meta_record.h"
#include "store.h"

void meta_put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

uint64_t meta_get_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

/* Length of the parent part of a normalized path ("/a/b" -> 2, "/a" -> 1). */
size_t meta_parent_len(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash == path ? 1 : (size_t)(slash - path);
}

size_t meta_ns_key(const char *path, uint8_t *k)
{
	size_t plen = meta_parent_len(path);
	const char *name = path + (plen == 1 ? 1 : plen + 1);
	size_t nlen = strlen(name);

	if (!nlen || nlen > RPC_NAME_MAX)
		return 0;
	meta_put_be64(k, rpfs_fnv1a64(path, plen));
	memcpy(k + 8, name, nlen);
	return 8 + nlen;
}

int meta_make_key(const char *path, struct nskey *k)
{
	k->v.mv_data = k->b;
	k->v.mv_size = meta_ns_key(path, k->b);
	return k->v.mv_size ? 0 : -ENAMETOOLONG;
}

/* The key range prefix of dir's children. */
void meta_dir_prefix(const char *dir, uint8_t out[8])
{
	meta_put_be64(out, rpfs_fnv1a64(dir, strlen(dir)));
}

int meta_lmdb_err(int rc, const char *what)
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
	size_t plen = strlen(path), slen;
	const char *stored;
	char why[200];

	if (meta_attr_dec(v->mv_data, v->mv_size, a, &stored, &slen, why, sizeof(why))) {
		log_err("rpfsd: corrupt metadata entry for %s: %s", path, why);
		return -EIO;
	}
	if (slen != plen || memcmp(stored, path, plen)) {
		log_err("rpfsd: hash collision between %s and %.*s: entry unusable", path,
			(int)slen, stored);
		return -EIO;
	}
	return 0;
}

/* A record that failed its checksum, read for what. */
int meta_damaged(const struct meta *m, const char *what)
{
	log_err("rpfsd: the metadata record of %s in %s is damaged (checksum mismatch): refused; rpfsd --check lists the damage",
		what, m->dir);
	return -EBADMSG;
}

/* A damaged record met listing the directory dir. */
int meta_damaged_in(const struct meta *m, const char *dir)
{
	char what[RPC_PATH_MAX + 32];

	snprintf(what, sizeof(what), "an entry of directory %s", dir);
	return meta_damaged(m, what);
}

int meta_get_entry(struct meta *m, MDB_txn *txn, const char *path, struct rpc_attr *a)
{
	struct nskey k;
	MDB_val v;
	int rc, ret = meta_make_key(path, &k);

	if (ret)
		return ret;
	rc = rec_get(txn, m->ns, REC_NS, &k.v, &v);
	if (rc == REC_DAMAGED)
		return meta_damaged(m, path);
	ret = meta_lmdb_err(rc, "lookup");
	return ret ? ret : val_decode(&v, path, a);
}

int meta_put_entry(struct meta *m, MDB_txn *txn, const char *path,
		   const struct rpc_attr *a, bool new_entry)
{
	size_t plen = strlen(path), vlen = meta_attr_size(plen);
	uint8_t hk[8];
	struct nskey k;
	MDB_val hv, pv;
	void *room;
	int ret = meta_make_key(path, &k);

	if (ret)
		return ret;
	ret = meta_lmdb_err(rec_reserve(txn, m->ns, &k.v, vlen, &room), "store");
	if (ret)
		return ret;
	meta_attr_enc(room, a, path, plen);
	rec_seal(REC_NS, &k.v, room, vlen);
	if (!new_entry)
		return 0;
	meta_put_be64(hk, a->handle);
	hv.mv_data = hk;
	hv.mv_size = 8;
	pv.mv_data = (void *)path;
	pv.mv_size = plen;
	return meta_lmdb_err(rec_put(txn, m->byh, REC_BYHANDLE, &hv, &pv, 0),
			     "store handle");
}

int meta_del_entry(struct meta *m, MDB_txn *txn, const char *path, uint64_t handle)
{
	uint8_t hk[8];
	struct nskey k;
	MDB_val hv;
	int ret = meta_make_key(path, &k);

	if (ret)
		return ret;
	ret = meta_lmdb_err(mdb_del(txn, m->ns, &k.v, NULL), "delete");
	if (ret)
		return ret;
	meta_put_be64(hk, handle);
	hv.mv_data = hk;
	hv.mv_size = 8;
	ret = meta_lmdb_err(mdb_del(txn, m->byh, &hv, NULL), "delete handle");
	if (ret == -ENOENT)
		ret = 0;
	return ret ? ret : meta_stale_del(m, txn, handle);
}

int meta_txn_begin(struct meta *m, bool rdonly, MDB_txn **txn)
{
	/* A write on a full disk must leave the reserve to removes. */
	int ret = rdonly ? 0 : store_reserve(m->env, m->dir, false);

	if (ret)
		return ret;
	return meta_lmdb_err(mdb_txn_begin(m->env, NULL, rdonly ? MDB_RDONLY : 0, txn),
			     "begin transaction");
}

/* A write transaction that frees space (REMOVE, RMDIR): it may use the
 * store's reserve, so a full disk can always be emptied (meta_reserve.c). */
int meta_txn_begin_freeing(struct meta *m, MDB_txn **txn)
{
	store_reserve(m->env, m->dir, true);
	return meta_lmdb_err(mdb_txn_begin(m->env, NULL, 0, txn), "begin transaction");
}

/* Is the entry stored in v a direct child of dir? Children of a directory
 * whose hash collides with dir's share the key range. */
bool meta_is_child(const MDB_val *v, const char *dir)
{
	size_t dlen = strlen(dir), base = dlen == 1 ? 1 : dlen + 1, plen;
	const char *p = meta_attr_path(v->mv_data, v->mv_size, &plen);

	if (!p)
		return false;
	return plen > base && !memcmp(p, dir, dlen) && p[base - 1] == '/' &&
	       !memchr(p + base, '/', plen - base);
}
