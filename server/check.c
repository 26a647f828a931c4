/* rpfsd --check [--repair [--accept-damaged]]: fsck of a stopped server's
 * storage directory (config and --name as for starting it).
 *
 * Role meta: the store must open (store.c's checks), and its two indexes
 * must agree: every entry of "ns" decodes, lives under the key its path
 * makes, has a handle of this server below the handle counter and a
 * "byhandle" record naming its path; every "byhandle" record names an
 * entry with that handle. Role io: every datafile has its checksum file
 * and every block of it matches its checksum; no checksum file is without
 * its datafile; a write cut short by a crash has left a block matching its
 * new or its old version. Both roles on one server: every file of the
 * store that has a stripe here has its datafile, holding that stripe slot
 * (its checksum file says which), and every datafile of a handle of this
 * store belongs to a file (or to a handle the store never handed out: then
 * the store is behind, and nothing is removed). Every other datafile's
 * handle is asked of the metadata server it names, running
 * (check_orphans.c): one that belongs to no file and to no create in
 * progress is an orphan; one whose owner can't tell is a note ("unknown,
 * not an orphan"), never removed. Notes say what the check could not
 * know; they are not problems and leave the exit status alone.
 *
 * One line per problem on stdout: the file or entry, the offset where it
 * matters, what is wrong, and what --repair did about it. --repair fixes
 * what loses nothing: orphans (checksums without data, datafiles of
 * removed files), index records, the handle counter, cut-short writes; a
 * block whose data does not match its checksum is left alone (the data
 * may be all that remains of it) unless --accept-damaged says to take the
 * data as it is and checksum it anew.
 *
 * Every record of the store must pass its checksum (meta_record.h); one
 * that fails is reported by the path (or handle) it holds and left alone.
 * A store of the old format (no checksums) is reported, and --repair
 * upgrades it as a start of rpfsd would. Inside a record, an ns value is
 * meta.c's: magic u32 (0x31415052), the encoded attributes (rpc.h), the
 * full path; its keys are the FNV-1a hash of the parent path (8 bytes,
 * big-endian) and the name. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lmdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_orphans.h"
#include "datafile.h"
#include "meta_attr.h"
#include "meta_record.h"
#include "server.h"
#include "store.h"
#include "wire.h"

#define CHK_MAP_SIZE (1ull << 30)
#define CHK_BATCH    256

struct chk {
	struct srv *s;
	unsigned flags;
	int problems, repaired;
	int notes; /* what the check could not know (not problems) */
	char datadir[1100], metadir[1100];
	/* the store, when this server has role meta and it opened */
	MDB_env *env;
	MDB_dbi ns, byh, sys;
	int fmt; /* the store's format (rec_store_format) */
	bool meta_ok;
	uint64_t next;	   /* handle counter (0: none) */
	uint64_t *handles; /* of the entries, sorted (what a datafile belongs to) */
	size_t nhandles, caphandles;
};

static void problem(struct chk *c, bool fixed, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void problem(struct chk *c, bool fixed, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("%s\n", fixed ? " [repaired]" : "");
	c->problems++;
	c->repaired += fixed;
}

/* What the check could not know, and why: not a problem of this storage. */
static void note(struct chk *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void note(struct chk *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	c->notes++;
}

static bool repair(const struct chk *c)
{
	return c->flags & CHECK_REPAIR;
}

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

/* Decode an ns value: attributes and path (NUL-terminated into path). */
static int ns_value(const MDB_val *v, struct rpc_attr *a, char *path)
{
	const char *stored;
	size_t plen;

	if (meta_attr_dec(v->mv_data, v->mv_size, a, &stored, &plen, NULL, 0))
		return -EBADMSG;
	memcpy(path, stored, plen);
	path[plen] = 0;
	return rpc_path_ok(path) && strcmp(path, "/") ? 0 : -EBADMSG;
}

/* A record of the store as its payload: 0, or REC_DAMAGED. An old
 * store's values are their payloads. */
static int unwrap(const struct chk *c, enum rec_db db, const MDB_val *k, MDB_val *v)
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

	problem(c, false,
		"%s: the entry %.*s (named \"%.*s\") is damaged (checksum mismatch): its attributes and layout can't be trusted; restore it from a backup or remove and rewrite the file",
		c->metadir, (int)(path ? (plen < 1024 ? plen : 1024) : 1),
		path ? path : "?", (int)nlen, (const char *)k->mv_data + 8);
}

static int store_open(struct chk *c, MDB_txn **txn)
{
	unsigned ro = repair(c) ? 0 : MDB_RDONLY;
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
		if (unwrap(c, REC_SYS, &k, &v))
			problem(c, false,
				"%s: the handle counter's record is damaged (checksum mismatch)",
				c->metadir);
		else if (v.mv_size == 8)
			c->next = get64(v.mv_data);
	}
	if (max < c->next)
		return;
	if (repair(c)) {
		put64(buf, max + 1);
		v.mv_data = buf;
		v.mv_size = 8;
		fixed = !rec_put(txn, c->sys, REC_SYS, &k, &v, 0);
	}
	problem(c, fixed,
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

		if (unwrap(c, REC_NS, &k, &v)) {
			damaged_entry(c, &k, &v);
			/* Its handle, if it still reads: its datafiles are no
			 * orphans to remove. */
			v.mv_data = (uint8_t *)v.mv_data + REC_HDR;
			v.mv_size = v.mv_size > REC_HDR ? v.mv_size - REC_HDR : 0;
			if (!ns_value(&v, &a, path))
				add_handle(c, a.handle);
			continue;
		}
		if (ns_value(&v, &a, path)) {
			problem(c, false,
				"%s: an entry (key of %zu bytes) does not decode",
				c->metadir, k.mv_size);
			continue;
		}
		klen = meta_ns_key(path, key);
		if (k.mv_size != klen || memcmp(k.mv_data, key, klen))
			problem(c, false,
				"%s: %s (handle %#" PRIx64
				") is stored under another path's key: unreachable",
				c->metadir, path, a.handle);
		if (place_meta_of_handle(a.handle) != me)
			problem(c, false,
				"%s: %s has handle %#" PRIx64 " of metadata server %u",
				c->metadir, path, a.handle,
				place_meta_of_handle(a.handle));
		else if (place_serial(a.handle) > max)
			max = place_serial(a.handle);
		add_handle(c, a.handle);
		be64(hk, a.handle);
		rc = mdb_get(txn, c->byh, &hkv, &hv);
		if (!rc && unwrap(c, REC_BYHANDLE, &hkv, &hv)) {
			/* check_byhandle reports it. */
		} else if (rc) {
			bool fixed = false;

			if (repair(c)) {
				pv.mv_data = path;
				pv.mv_size = strlen(path);
				fixed = !rec_put(txn, c->byh, REC_BYHANDLE, &hkv, &pv, 0);
			}
			problem(c, fixed,
				"%s: %s (handle %#" PRIx64 ") has no byhandle record",
				c->metadir, path, a.handle);
		} else if (hv.mv_size != strlen(path) ||
			   memcmp(hv.mv_data, path, hv.mv_size)) {
			problem(c, false, "%s: %s and %.*s share handle %#" PRIx64,
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
		if (unwrap(c, REC_BYHANDLE, &k, &v)) {
			size_t len = v.mv_size > REC_HDR ? v.mv_size - REC_HDR : 0;

			problem(c, false,
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
				if (!rc && unwrap(c, REC_NS, &nk, &nv))
					continue;
				ok = !rc && !ns_value(&nv, &a, stored) &&
				     !strcmp(stored, path) && a.handle == h;
			}
		}
		if (ok)
			continue;
		if (repair(c))
			fixed = !mdb_cursor_del(cur, 0);
		problem(c, fixed,
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

static void check_meta(struct chk *c)
{
	char why[1024], path[1200];
	MDB_txn *txn = NULL;
	struct stat st;
	uint64_t max;
	int rc;

	snprintf(path, sizeof(path), "%s/data.mdb", c->metadir);
	if (stat(path, &st)) {
		problem(c, false,
			"%s: no metadata store (a server never started, or a lost store)",
			c->metadir);
		return;
	}
	if (store_validate(c->metadir, why, sizeof(why))) {
		problem(c, false, "%s", why);
		return;
	}
	if (repair(c)) {
		/* An old store becomes one of records, as a start would make it. */
		rc = store_format(c);
		if (rc == 1) {
			bool fixed = !rec_upgrade(c->metadir, why, sizeof(why));

			problem(c, fixed,
				"%s: the store is of the old format (records without checksums)%s%s",
				c->metadir, fixed ? " (upgraded)" : ": ",
				fixed ? "" : why);
		}
	}
	rc = store_open(c, &txn);
	if (rc) {
		problem(c, false, "%s: can't open the metadata store: %s", c->metadir,
			mdb_strerror(rc));
		if (txn)
			mdb_txn_abort(txn);
		return;
	}
	c->fmt = rec_store_format(txn, c->sys);
	if (c->fmt == 1 && !repair(c))
		problem(c, false,
			"%s: the store is of the old format (records without checksums): rpfsd upgrades it when it starts, rpfsd --check --repair now",
			c->metadir);
	if (c->fmt < 0) {
		problem(c, false, "%s: the store's format record is %s", c->metadir,
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
		problem(c, false, "%s: couldn't store the repairs: %s", c->metadir,
			mdb_strerror(rc));
	c->meta_ok = true;
}

/* Does an entry of the store have this handle? */
static bool store_has(struct chk *c, uint64_t handle)
{
	return bsearch(&handle, c->handles, c->nhandles, sizeof(handle), cmp_u64) != NULL;
}

/* ---- datafiles -------------------------------------------------------------- */

static void sum_path(const struct chk *c, uint64_t h, char *buf, size_t len, bool sum)
{
	char name[40];

	if (sum)
		csum_sum_name(h, name, sizeof(name));
	else
		csum_data_name(h, name, sizeof(name));
	snprintf(buf, len, "%s/%s", c->datadir, name);
}

/* What is wrong with block k (m == 0): the words of the report. */
static const char *why_bad(const struct csum_ent *e, uint32_t avail)
{
	if (!e->cur.end && !e->pend.end)
		return "data without a checksum";
	if (e->cur.end && avail < e->cur.end)
		return "the datafile ends before this block's data (truncated)";
	return "checksum mismatch";
}

/* A run of damaged blocks with the same cause, reported as one line. */
struct run {
	uint64_t first, last; /* blocks */
	const char *why;
	bool fixed, open;
};

static void run_flush(struct chk *c, struct run *r, const char *dpath)
{
	if (!r->open)
		return;
	if (r->first == r->last)
		problem(c, r->fixed, "%s: damaged block at offset %" PRIu64 ": %s%s",
			dpath, r->first * CSUM_BLOCK, r->why,
			r->fixed ? " (data accepted as it is)" : "");
	else
		problem(c, r->fixed,
			"%s: damaged blocks at offsets %" PRIu64 "..%" PRIu64 " (%" PRIu64
			" blocks of %u bytes): %s%s",
			dpath, r->first * CSUM_BLOCK, r->last * CSUM_BLOCK,
			r->last - r->first + 1, CSUM_BLOCK, r->why,
			r->fixed ? " (data accepted as it is)" : "");
	r->open = false;
}

/* Block k is damaged for why: extend the run or start another. */
static void run_add(struct chk *c, struct run *r, const char *dpath, uint64_t k,
		    const char *why, bool fixed)
{
	if (r->open && r->last + 1 == k && r->why == why && r->fixed == fixed) {
		r->last = k;
		return;
	}
	run_flush(c, r, dpath);
	*r = (struct run){k, k, why, fixed, true};
}

/* Bytes past what the checksums cover (blocksum.h): one line, and with
 * --accept-damaged the extent grows over them (their blocks get
 * checksums in check_blocks). Returns whether the blocks there are to be
 * checked. */
static bool check_extent(struct chk *c, struct datafile *f, const char *dpath,
			 uint64_t size, uint64_t covered)
{
	bool accept = repair(c) && (c->flags & CHECK_ACCEPT_DAMAGED), fixed;

	if (size <= covered)
		return true;
	fixed = accept && !datafile_set_extent(f, size);
	problem(c, fixed,
		"%s: bytes %" PRIu64 "..%" PRIu64 " (%" PRIu64
		" bytes) are covered by no checksum: the datafile is longer than its checksums (extended behind rpfsd's back?)%s",
		dpath, covered, size - 1, size - covered,
		fixed ? " (data accepted as it is)" : "");
	return fixed;
}

/* Check (and perhaps repair) every block of one datafile. */
static void check_blocks(struct chk *c, struct datafile *f, const char *dpath)
{
	struct csum_ent e[CHK_BATCH];
	char blk[CSUM_BLOCK];
	struct stat st, sst;
	struct run run = {0};
	uint64_t nb, ne = 0, covered;
	bool beyond;

	if (fstat(f->fd, &st) || datafile_covered(f, &covered))
		return;
	beyond = check_extent(c, f, dpath, (uint64_t)st.st_size, covered);
	if (f->cfd >= 0 && !fstat(f->cfd, &sst) && (uint64_t)sst.st_size > CSUM_HDR)
		ne = ((uint64_t)sst.st_size - CSUM_HDR + CSUM_ENT - 1) / CSUM_ENT;
	nb = ((uint64_t)st.st_size + CSUM_BLOCK - 1) / CSUM_BLOCK;
	if (ne > nb)
		nb = ne;
	for (uint64_t b0 = 0; b0 < nb; b0 += CHK_BATCH) {
		uint64_t n = nb - b0 < CHK_BATCH ? nb - b0 : CHK_BATCH;
		bool dirty = false;

		if (datafile_read_ents(f, b0, n, e))
			break;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t k = b0 + i;
			uint32_t avail;
			bool fixed = false;
			int m;

			if (datafile_read_block(f, k, blk, &avail))
				goto out;
			if (!avail && csum_ent_empty(&e[i]))
				continue;
			/* Reported by check_extent, not block by block. */
			if (!beyond && csum_ent_empty(&e[i]) && k * CSUM_BLOCK >= covered)
				continue;
			m = csum_match(&e[i], blk, avail, datafile_bind(f, k));
			if (m == 1 && !e[i].pend.end)
				continue;
			if (m) {
				/* A write cut short: keep the version the data has. */
				if (m == 2)
					e[i].cur = e[i].pend;
				e[i].pend = (struct csum_ver){0, 0};
				fixed = dirty = repair(c);
				run_flush(c, &run, dpath);
				problem(c, fixed,
					"%s: block at offset %" PRIu64
					": a write was cut short; the %s version is whole",
					dpath, k * CSUM_BLOCK, m == 2 ? "new" : "old");
				continue;
			}
			if (repair(c) && (c->flags & CHECK_ACCEPT_DAMAGED)) {
				e[i].cur.crc =
					csum_crc(blk, CSUM_BLOCK) ^ datafile_bind(f, k);
				e[i].cur.end = avail;
				if (!avail)
					e[i].cur.crc = 0;
				e[i].pend = (struct csum_ver){0, 0};
				fixed = dirty = true;
			}
			run_add(c, &run, dpath, k, why_bad(&e[i], avail), fixed);
		}
		if (dirty && (f->cfd >= 0 || !datafile_ensure_sumfile(f)) &&
		    datafile_write_ents(f, b0, n, e))
			printf("%s: couldn't write the repaired checksums\n", dpath);
	}
out:
	run_flush(c, &run, dpath);
}

/* Redo the checksum file of a datafile from its data (--accept-damaged). */
static int rechecksum(struct datafile *f)
{
	char name[40];
	uint8_t hdr[CSUM_HDR];
	int fd;

	csum_sum_name(f->handle, name, sizeof(name));
	fd = openat(f->dirfd, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	csum_hdr_enc(hdr, f->handle, 0, CSUM_SLOT_ANY);
	if (pwrite(fd, hdr, CSUM_HDR, 0) != CSUM_HDR) {
		close(fd);
		return -EIO;
	}
	if (f->cfd >= 0)
		close(f->cfd);
	f->cfd = fd;
	f->bad_hdr = false;
	f->version = CSUM_VERSION;
	f->slot = CSUM_SLOT_ANY;
	f->extent = 0;
	return 0;
}

static void check_pair(struct chk *c, int dirfd, uint64_t h, bool data, bool sum)
{
	char dpath[1200], spath[1200];
	struct datafile f;
	bool accept = repair(c) && (c->flags & CHECK_ACCEPT_DAMAGED);
	int ret;

	sum_path(c, h, dpath, sizeof(dpath), false);
	sum_path(c, h, spath, sizeof(spath), true);
	if (!data) {
		bool fixed = repair(c) && !unlinkat(dirfd, strrchr(spath, '/') + 1, 0);

		problem(c, fixed, "%s: checksums without a datafile%s", spath,
			repair(c) ? " (removing them)" : "");
		return;
	}
	ret = datafile_open(&f, dirfd, h);
	if (ret) {
		problem(c, false, "%s: can't open: %s", dpath, strerror(-ret));
		return;
	}
	if (!sum || f.bad_hdr) {
		bool fixed = accept && !rechecksum(&f);

		problem(c, fixed, "%s: %s%s", dpath,
			sum ? "its checksum file is not this datafile's (bad header)"
			    : "no checksum file",
			fixed ? " (made anew from the data as it is)" : "");
		if (!fixed) {
			datafile_close(&f);
			return;
		}
		/* Every block now has no checksum: accept them one by one. */
	}
	check_blocks(c, &f, dpath);
	datafile_close(&f);
}

/* A handle's files in the data directory (scan). */
struct found {
	uint64_t h;
	bool data, sum;
};

/* Is handle h this server's own (its store, opened by this check, says
 * whether a datafile of it is an orphan)? */
static bool own_handle(const struct chk *c, uint64_t h)
{
	return (c->s->me->roles & RPFS_ROLE_META) &&
	       place_meta_of_handle(h) == (uint32_t)c->s->me->meta_index;
}

/* The datafile of h belongs to no file, and no create can make it one:
 * report it, and with --repair remove it and its checksums. whose: ""
 * for this server's store, else " of metadata server NAME". */
static void orphan(struct chk *c, int dirfd, uint64_t h, const char *whose)
{
	char dpath[1200];
	bool fixed = false;

	sum_path(c, h, dpath, sizeof(dpath), false);
	if (repair(c)) {
		char name[40];

		csum_data_name(h, name, sizeof(name));
		fixed = !unlinkat(dirfd, name, 0);
		csum_sum_name(h, name, sizeof(name));
		unlinkat(dirfd, name, 0);
	}
	problem(c, fixed,
		"%s: datafile of handle %#" PRIx64
		"%s, a file that no longer exists or never came to be (a remove or a create cut short)%s",
		dpath, h, whose, repair(c) ? " (removing it)" : "");
}

/* The datafile of a handle its store never handed out. */
static void never_handed_out(struct chk *c, uint64_t h, const char *whose)
{
	char dpath[1200];

	sum_path(c, h, dpath, sizeof(dpath), false);
	problem(c, false,
		"%s: datafile of handle %#" PRIx64
		", which the store%s never handed out (the store is older than the data: restored from a backup?)",
		dpath, h, whose);
}

/* A datafile of a handle of this server's store that the store does not
 * know. */
static void check_orphan(struct chk *c, int dirfd, uint64_t h)
{
	if (!c->meta_ok || !own_handle(c, h) || store_has(c, h))
		return;
	if (place_serial(h) >= c->next)
		never_handed_out(c, h, "");
	else
		orphan(c, dirfd, h, "");
}

/* What owner m said of handle h (state: enum rpc_handle_state, 0 for
 * none: m could not be asked, counted by the caller). */
static void remote_state(struct chk *c, int dirfd, uint64_t h, uint8_t state)
{
	uint32_t m = place_meta_of_handle(h);
	char whose[128], dpath[1200];

	snprintf(whose, sizeof(whose), " of metadata server %s",
		 c->s->cfg.servers[c->s->cfg.meta[m]].name);
	sum_path(c, h, dpath, sizeof(dpath), false);
	switch (state) {
	case RPC_HS_FILE:
		break;
	case RPC_HS_GONE:
		orphan(c, dirfd, h, whose);
		break;
	case RPC_HS_NEVER:
		never_handed_out(c, h, whose);
		break;
	case RPC_HS_CREATING:
		note(c,
		     "%s: datafile of handle %#" PRIx64
		     ": a create%s that may have it is in progress (unknown, not an orphan: left alone; check again later)",
		     dpath, h, whose);
		break;
	case RPC_HS_DAMAGED:
		note(c,
		     "%s: datafile of handle %#" PRIx64
		     ": its record%s is damaged (unknown, not an orphan: left alone; rpfsd --check on that server)",
		     dpath, h, whose);
		break;
	case RPC_HS_NOT_MINE:
		note(c,
		     "%s: datafile of handle %#" PRIx64
		     ": metadata server %s says it is not its handle (does its config differ from this one?): unknown, left alone",
		     dpath, h, c->s->cfg.servers[c->s->cfg.meta[m]].name);
		break;
	default:
		break;
	}
}

/* The datafiles of handles of other metadata servers (all of them, on an
 * I/O-only server): each owner, running, says which belong to no file
 * (check_orphans.c). */
static void check_remote_orphans(struct chk *c, int dirfd, const struct found *v,
				 size_t n)
{
	uint32_t nmeta = c->s->cfg.nmeta;
	uint64_t *h = calloc(n ? n : 1, sizeof(*h));
	uint8_t *state = calloc(n ? n : 1, 1);
	char **why = calloc(nmeta ? nmeta : 1, sizeof(*why));
	size_t *unknown = calloc(nmeta ? nmeta : 1, sizeof(*unknown));
	size_t k = 0;

	if (!h || !state || !why || !unknown) {
		problem(c, false, "%s: out of memory: datafiles not checked for orphans",
			c->datadir);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char dpath[1200];

		if (!v[i].data || own_handle(c, v[i].h))
			continue;
		if (place_meta_of_handle(v[i].h) < nmeta) {
			h[k++] = v[i].h;
			continue;
		}
		sum_path(c, v[i].h, dpath, sizeof(dpath), false);
		problem(c, false,
			"%s: datafile of handle %#" PRIx64
			" of metadata server index %u, which this cluster's config does not have (another cluster's? left alone)",
			dpath, v[i].h, place_meta_of_handle(v[i].h));
	}
	orphans_ask(c->s, h, k, state, why);
	for (size_t i = 0; i < k; i++) {
		if (state[i])
			remote_state(c, dirfd, h[i], state[i]);
		else
			unknown[place_meta_of_handle(h[i])]++;
	}
	for (uint32_t m = 0; m < nmeta; m++)
		if (unknown[m])
			note(c,
			     "%s: %s: the %zu datafile%s of its handles here %s unknown, not orphans (left alone; check again while it runs)",
			     c->datadir,
			     why[m] ? why[m] : "a metadata server could not be asked",
			     unknown[m], unknown[m] == 1 ? "" : "s",
			     unknown[m] == 1 ? "is" : "are");
out:
	for (uint32_t m = 0; why && m < nmeta; m++)
		free(why[m]);
	free(h);
	free(state);
	free(why);
	free(unknown);
}

static int cmp_found(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	return x->h < y->h ? -1 : x->h > y->h;
}

/* The datafiles and checksum files of the data directory, by handle. */
static struct found *scan(struct chk *c, int dirfd, size_t *count)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct found *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		*count = 0;
		return NULL;
	}
	while ((de = readdir(d))) {
		uint64_t h;
		int kind = csum_parse_name(de->d_name, &h);

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (kind < 0) {
			problem(c, false, "%s/%s: not an rpfs file (left alone)",
				c->datadir, de->d_name);
			continue;
		}
		if (n == cap) {
			struct found *nv =
				realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		v[n].h = h;
		v[n].data = kind == 0;
		v[n].sum = kind == 1;
		n++;
	}
	closedir(d);
	qsort(v, n, sizeof(*v), cmp_found);
	/* Merge the pairs. */
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		if (m && v[m - 1].h == v[i].h) {
			v[m - 1].data |= v[i].data;
			v[m - 1].sum |= v[i].sum;
		} else {
			v[m++] = v[i];
		}
	}
	*count = m;
	return v;
}

/* Files of the store with a stripe on this server must have a datafile. */
/* Does the datafile of handle h (of path) hold the stripe slot its layout
 * puts on this server? */
static void check_slot(struct chk *c, int dirfd, uint64_t h, uint32_t slot,
		       const char *path)
{
	struct datafile f;

	if (datafile_open(&f, dirfd, h))
		return; /* check_pair reports it */
	if (!f.bad_hdr && f.slot != CSUM_SLOT_ANY && f.slot != slot)
		problem(c, false,
			"%s/%016" PRIx64
			": holds stripe slot %u of %s, whose layout puts slot %u here (the layout disagrees with the datafiles: reads fail)",
			c->datadir, h, f.slot, path, slot);
	datafile_close(&f);
}

static void check_missing(struct chk *c, int dirfd, const struct found *v, size_t n)
{
	static char path[RPC_PATH_MAX + 1];
	int32_t me = c->s->me->io_index;
	MDB_cursor *cur;
	MDB_txn *txn;
	MDB_val k, val;

	if (!c->meta_ok || me < 0 || mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn))
		return;
	if (mdb_cursor_open(txn, c->ns, &cur)) {
		mdb_txn_abort(txn);
		return;
	}
	while (!mdb_cursor_get(cur, &k, &val, MDB_NEXT)) {
		struct rpc_attr a;
		struct found key, *at;
		bool here = false;
		uint32_t mine = 0;

		if (unwrap(c, REC_NS, &k, &val) || ns_value(&val, &a, path) ||
		    a.type != RPC_TYPE_FILE)
			continue;
		a.layout.nservers = c->s->cfg.nio;
		for (uint32_t slot = 0; slot < layout_slots(&a.layout) && !here; slot++) {
			here = layout_server(&a.layout, slot) == (uint32_t)me;
			mine = slot;
		}
		key.h = a.handle;
		at = here ? bsearch(&key, v, n, sizeof(*v), cmp_found) : NULL;
		if (at && at->data && at->sum)
			check_slot(c, dirfd, a.handle, mine, path);
		if (!here || (at && at->data))
			continue;
		problem(c, false,
			"%s/%016" PRIx64
			": missing datafile of %s (its data on this server is lost)",
			c->datadir, a.handle, path);
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
}

static void check_io(struct chk *c)
{
	struct found *v;
	size_t n;
	int dirfd = open(c->datadir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dirfd < 0) {
		problem(c, false, "%s: no data directory (%s)", c->datadir,
			strerror(errno));
		check_missing(c, -1, NULL, 0);
		return;
	}
	v = scan(c, dirfd, &n);
	for (size_t i = 0; i < n; i++) {
		check_pair(c, dirfd, v[i].h, v[i].data, v[i].sum);
		if (v[i].data)
			check_orphan(c, dirfd, v[i].h);
	}
	check_remote_orphans(c, dirfd, v, n);
	check_missing(c, dirfd, v, n);
	if (repair(c) && c->repaired)
		fsync(dirfd);
	free(v);
	close(dirfd);
}

int check_storage(struct srv *s, unsigned flags)
{
	struct chk c = {.s = s, .flags = flags};
	char why[512];
	struct stat st;

	if (stat(s->me->dir, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "rpfsd --check: no storage directory %s\n", s->me->dir);
		return 2;
	}
	if (store_lock(s->me->dir, why, sizeof(why))) {
		fprintf(stderr, "rpfsd --check: %s\n", why);
		return 2;
	}
	snprintf(c.datadir, sizeof(c.datadir), "%s/data", s->me->dir);
	snprintf(c.metadir, sizeof(c.metadir), "%s/meta", s->me->dir);
	if (s->me->roles & RPFS_ROLE_META)
		check_meta(&c);
	if (s->me->roles & RPFS_ROLE_IO)
		check_io(&c);
	if (c.env)
		mdb_env_close(c.env);
	free(c.handles);
	if (c.problems)
		printf("rpfsd --check %s: %d problem%s, %d repaired", s->me->name,
		       c.problems, c.problems == 1 ? "" : "s", c.repaired);
	else
		printf("rpfsd --check %s: clean", s->me->name);
	if (c.notes)
		printf(" (%d note%s above: what it could not know)", c.notes,
		       c.notes == 1 ? "" : "s");
	printf("\n");
	return c.problems ? 1 : 0;
}
