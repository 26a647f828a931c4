/* rpfsd --check, role meta: the metadata store (check.c tells what is
 * checked). Every record must pass its checksum (meta_record.h); the "ns"
 * and "byhandle" indexes must agree; the handle counter must be ahead of
 * every handle; --repair fixes indexes and the counter, upgrades an old
 * store, and leaves damaged records alone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_priv.h"
#include "meta_attr.h"
#include "meta_record.h"
#include "store.h"
#include "wire.h"

/* ---- the store ------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

int chk_ns_value(const MDB_val *v, struct rpc_attr *a, char *path)
{
	const char *stored;
	size_t plen;

	if (meta_attr_dec(v->mv_data, v->mv_size, a, &stored, &plen, NULL, 0))
		return -EBADMSG;
	memcpy(path, stored, plen);
	path[plen] = 0;
	return rpc_path_ok(path) && strcmp(path, "/") ? 0 : -EBADMSG;
}

int chk_unwrap(const struct chk *c, enum rec_db db, const MDB_val *k, MDB_val *v)
{
	return c->fmt == 1 ? 0 : rec_check(db, k, v);
}

/* An ns record that fails its checksum: named by its key's name and the
 * path its payload holds (which may be the damaged part). */
static void damaged_entry(struct chk *c, const MDB_val *k, const MDB_val *v)
{
	size_t nlen = k->mv_size > 8 ? k->mv_size - 8 : 0, plen = 0;
	const char *path = v->mv_size > REC_HDR
				   ? meta_attr_path((const uint8_t *)v->mv_data + REC_HDR,
						    v->mv_size - REC_HDR, &plen)
				   : NULL;

	chk_problem(
		c, false,
		"%s: the entry %.*s (named \"%.*s\") is damaged (checksum mismatch): its attributes and layout can't be trusted; restore it from a backup or remove and rewrite the file",
		c->metadir, (int)(path ? (plen < 1024 ? plen : 1024) : 1),
		path ? path : "?", (int)nlen, (const char *)k->mv_data + 8);
}

static int store_open(struct chk *c, MDB_txn **txn)
{
	unsigned ro = chk_repair(c) ? 0 : MDB_RDONLY;
	int rc = mdb_env_create(&c->env);

	if (!rc)
		rc = mdb_env_set_mapsize(c->env, CHK_MAP_SIZE);
	if (!rc)
		rc = mdb_env_set_maxdbs(c->env, 4);
	if (!rc)
		rc = mdb_env_open(c->env, c->metadir, MDB_NOTLS | ro, 0600);
	if (!rc)
		rc = mdb_txn_begin(c->env, NULL, ro, txn);
	if (!rc)
		rc = mdb_dbi_open(*txn, "ns", 0, &c->ns);
	if (!rc)
		rc = mdb_dbi_open(*txn, "byhandle", 0, &c->byh);
	if (!rc)
		rc = mdb_dbi_open(*txn, "sys", 0, &c->sys);
	return rc;
}

static void check_counter(struct chk *c, MDB_txn *txn, uint64_t max)
{
	static const char key[] = "next_handle";
	MDB_val k = {sizeof(key) - 1, (void *)key}, v;
	uint8_t buf[8];
	bool fixed = false;

	if (!mdb_get(txn, c->sys, &k, &v)) {
		if (chk_unwrap(c, REC_SYS, &k, &v))
			chk_problem(
				c, false,
				"%s: the handle counter's record is damaged (checksum mismatch)",
				c->metadir);
		else if (v.mv_size == 8)
			c->next = get64(v.mv_data);
	}
	if (max < c->next)
		return;
	if (chk_repair(c)) {
		put64(buf, max + 1);
		v.mv_data = buf;
		v.mv_size = 8;
		fixed = !rec_put(txn, c->sys, REC_SYS, &k, &v, 0);
	}
	chk_problem(c, fixed,
		    "%s: handle counter %#" PRIx64
		    " is not past the largest handle in use %#" PRIx64
		    " (new files would reuse handles)",
		    c->metadir, c->next, max);
	if (fixed)
		c->next = max + 1;
}

/* A handle an entry has (a datafile of it belongs to a file). */
static void add_handle(struct chk *c, uint64_t h)
{
	if (c->nhandles == c->caphandles) {
		size_t cap = c->caphandles ? 2 * c->caphandles : 256;
		uint64_t *nh = realloc(c->handles, cap * sizeof(*nh));

		if (!nh)
			return;
		c->handles = nh;
		c->caphandles = cap;
	}
	c->handles[c->nhandles++] = h;
}

/* Every ns entry: decodable, under its own key, with a handle of ours and
 * a byhandle record. Returns the largest handle counter seen. */
static uint64_t check_ns(struct chk *c, MDB_txn *txn)
{
	static char path[RPC_PATH_MAX + 1];
	uint32_t me = (uint32_t)c->s->me->meta_index;
	uint8_t key[8 + RPC_NAME_MAX + 1], hk[8];
	uint64_t max = 0;
	MDB_cursor *cur;
	MDB_val k, v;
	int rc;

	if (mdb_cursor_open(txn, c->ns, &cur))
		return 0;
	while (!mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		MDB_val hkv = {8, hk}, hv, pv;
		struct rpc_attr a;
		size_t klen;

		if (chk_unwrap(c, REC_NS, &k, &v)) {
			damaged_entry(c, &k, &v);
			/* Its handle, if it still reads: its datafiles are no
			 * orphans to remove. */
			v.mv_data = (uint8_t *)v.mv_data + REC_HDR;
			v.mv_size = v.mv_size > REC_HDR ? v.mv_size - REC_HDR : 0;
			if (!chk_ns_value(&v, &a, path))
				add_handle(c, a.handle);
			continue;
		}
		if (chk_ns_value(&v, &a, path)) {
			chk_problem(c, false,
				    "%s: an entry (key of %zu bytes) does not decode",
				    c->metadir, k.mv_size);
			continue;
		}
		klen = meta_ns_key(path, key);
		if (k.mv_size != klen || memcmp(k.mv_data, key, klen))
			chk_problem(c, false,
				    "%s: %s (handle %#" PRIx64
				    ") is stored under another path's key: unreachable",
				    c->metadir, path, a.handle);
		if (place_meta_of_handle(a.handle) != me)
			chk_problem(c, false,
				    "%s: %s has handle %#" PRIx64
				    " of metadata server %u",
				    c->metadir, path, a.handle,
				    place_meta_of_handle(a.handle));
		else if (place_serial(a.handle) > max)
			max = place_serial(a.handle);
		add_handle(c, a.handle);
		be64(hk, a.handle);
		rc = mdb_get(txn, c->byh, &hkv, &hv);
		if (!rc && chk_unwrap(c, REC_BYHANDLE, &hkv, &hv)) {
			/* check_byhandle reports it. */
		} else if (rc) {
			bool fixed = false;

			if (chk_repair(c)) {
				pv.mv_data = path;
				pv.mv_size = strlen(path);
				fixed = !rec_put(txn, c->byh, REC_BYHANDLE, &hkv, &pv, 0);
			}
			chk_problem(c, fixed,
				    "%s: %s (handle %#" PRIx64 ") has no byhandle record",
				    c->metadir, path, a.handle);
		} else if (hv.mv_size != strlen(path) ||
			   memcmp(hv.mv_data, path, hv.mv_size)) {
			chk_problem(c, false, "%s: %s and %.*s share handle %#" PRIx64,
				    c->metadir, path, (int)hv.mv_size,
				    (const char *)hv.mv_data, a.handle);
		}
	}
	mdb_cursor_close(cur);
	return max;
}

/* Every byhandle record names an entry with that handle. */
static void check_byhandle(struct chk *c, MDB_txn *txn)
{
	static char path[RPC_PATH_MAX + 1], stored[RPC_PATH_MAX + 1];
	uint8_t key[8 + RPC_NAME_MAX + 1];
	MDB_cursor *cur;
	MDB_val k, v;

	if (mdb_cursor_open(txn, c->byh, &cur))
		return;
	while (!mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		uint64_t h = 0;
		MDB_val nk, nv;
		struct rpc_attr a;
		bool fixed = false, ok = false;

		for (size_t i = 0; i < 8 && k.mv_size == 8; i++)
			h = h << 8 | ((const uint8_t *)k.mv_data)[i];
		if (chk_unwrap(c, REC_BYHANDLE, &k, &v)) {
			size_t len = v.mv_size > REC_HDR ? v.mv_size - REC_HDR : 0;

			chk_problem(c, false,
				    "%s: byhandle record %#" PRIx64
				    " is damaged (checksum mismatch; it reads \"%.*s\")",
				    c->metadir, h, (int)(len < 200 ? len : 200),
				    len ? (const char *)v.mv_data + REC_HDR : "");
			continue;
		}
		if (k.mv_size == 8 && v.mv_size && v.mv_size <= RPC_PATH_MAX) {
			memcpy(path, v.mv_data, v.mv_size);
			path[v.mv_size] = 0;
			if (rpc_path_ok(path) && strcmp(path, "/")) {
				nk.mv_data = key;
				nk.mv_size = meta_ns_key(path, key);
				int rc = mdb_get(txn, c->ns, &nk, &nv);

				/* A damaged entry is reported as such. */
				if (!rc && chk_unwrap(c, REC_NS, &nk, &nv))
					continue;
				ok = !rc && !chk_ns_value(&nv, &a, stored) &&
				     !strcmp(stored, path) && a.handle == h;
			}
		}
		if (ok)
			continue;
		if (chk_repair(c))
			fixed = !mdb_cursor_del(cur, 0);
		chk_problem(c, fixed,
			    "%s: byhandle record %#" PRIx64
			    " -> %.*s names no entry with that handle",
			    c->metadir, h, (int)(v.mv_size < 200 ? v.mv_size : 200),
			    (const char *)v.mv_data);
	}
	mdb_cursor_close(cur);
}

/* The store's format, from a read-only look (before store_open). */
static int store_format(struct chk *c)
{
	unsigned flags = c->flags;
	MDB_txn *txn = NULL;
	int fmt = -EIO;

	c->flags &= ~CHECK_REPAIR;
	if (!store_open(c, &txn))
		fmt = rec_store_format(txn, c->sys);
	if (txn)
		mdb_txn_abort(txn);
	if (c->env)
		mdb_env_close(c->env);
	c->env = NULL;
	c->flags = flags;
	return fmt;
}

void check_meta(struct chk *c)
{
	char why[1024], path[1200];
	MDB_txn *txn = NULL;
	struct stat st;
	uint64_t max;
	int rc;

	snprintf(path, sizeof(path), "%s/data.mdb", c->metadir);
	if (stat(path, &st)) {
		chk_problem(
			c, false,
			"%s: no metadata store (a server never started, or a lost store)",
			c->metadir);
		return;
	}
	if (store_validate(c->metadir, why, sizeof(why))) {
		chk_problem(c, false, "%s", why);
		return;
	}
	if (chk_repair(c)) {
		/* An old store becomes one of records, as a start would make it. */
		rc = store_format(c);
		if (rc == 1) {
			bool fixed = !rec_upgrade(c->metadir, why, sizeof(why));

			chk_problem(
				c, fixed,
				"%s: the store is of the old format (records without checksums)%s%s",
				c->metadir, fixed ? " (upgraded)" : ": ",
				fixed ? "" : why);
		}
	}
	rc = store_open(c, &txn);
	if (rc) {
		chk_problem(c, false, "%s: can't open the metadata store: %s", c->metadir,
			    mdb_strerror(rc));
		if (txn)
			mdb_txn_abort(txn);
		return;
	}
	c->fmt = rec_store_format(txn, c->sys);
	if (c->fmt == 1 && !chk_repair(c))
		chk_problem(
			c, false,
			"%s: the store is of the old format (records without checksums): rpfsd upgrades it when it starts, rpfsd --check --repair now",
			c->metadir);
	if (c->fmt < 0) {
		chk_problem(c, false, "%s: the store's format record is %s", c->metadir,
			    c->fmt == -EBADMSG ? "damaged (checksum mismatch)"
					       : "of a newer rpfsd");
		c->fmt = REC_FORMAT;
	}
	max = check_ns(c, txn);
	qsort(c->handles, c->nhandles, sizeof(*c->handles), cmp_u64);
	check_byhandle(c, txn);
	check_counter(c, txn, max);
	/* Committed even when read-only: an aborted transaction would take
	 * the database handles it opened with it. */
	rc = mdb_txn_commit(txn);
	if (rc)
		chk_problem(c, false, "%s: couldn't store the repairs: %s", c->metadir,
			    mdb_strerror(rc));
	c->meta_ok = true;
}

/* Does an entry of the store have this handle? */
bool chk_store_has(struct chk *c, uint64_t handle)
{
	return bsearch(&handle, c->handles, c->nhandles, sizeof(handle), cmp_u64) != NULL;
}
