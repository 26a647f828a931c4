/* rpfsd --check, role io: every datafile with its checksum file, every
 * block against its checksum (damaged ranges, one line each), extents and
 * stripe slots, writes cut short by a crash, and datafiles no file owns
 * (asking the metadata servers through check_orphans.c) (check.c tells
 * what is checked). */
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

#include "check_orphans.h"
#include "check_priv.h"
#include "datafile.h"
#include "ec_ends.h"
#include "meta_record.h"
#include "wire.h"

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
		chk_problem(c, r->fixed, "%s: damaged block at offset %" PRIu64 ": %s%s",
			    dpath, r->first * CSUM_BLOCK, r->why,
			    r->fixed ? " (data accepted as it is)" : "");
	else
		chk_problem(c, r->fixed,
			    "%s: damaged blocks at offsets %" PRIu64 "..%" PRIu64
			    " (%" PRIu64 " blocks of %u bytes): %s%s",
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
	bool accept = chk_repair(c) && (c->flags & CHECK_ACCEPT_DAMAGED), fixed;

	if (size <= covered)
		return true;
	fixed = accept && !datafile_set_extent(f, size);
	chk_problem(
		c, fixed,
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
				/* A write cut short by a crash, its block whole in
				 * one version: what a kill mid-write leaves, read
				 * right by rpfsd (either version matches), so a note,
				 * not a problem; --repair keeps the version the data
				 * has. */
				if (m == 2)
					e[i].cur = e[i].pend;
				e[i].pend = (struct csum_ver){0, 0};
				dirty |= chk_repair(c);
				run_flush(c, &run, dpath);
				chk_note(
					c,
					"%s: block at offset %" PRIu64
					": a write was cut short; the %s version is whole%s",
					dpath, k * CSUM_BLOCK, m == 2 ? "new" : "old",
					chk_repair(c) ? " [tidied]" : "");
				continue;
			}
			if (chk_repair(c) && (c->flags & CHECK_ACCEPT_DAMAGED)) {
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

/* An ec parity member's record of its data members' sizes (ec_ends.h):
 * one without its datafile is left over, one that fails its check is
 * refused by the server (the file's size with a data member lost is then
 * an error, never a wrong size). */
static void check_ends(struct chk *c, int dirfd, uint64_t h, bool data)
{
	uint8_t buf[16 + 8 * EC_ENDS_MAX + 4 + 1];
	char name[40];
	ssize_t got;
	int fd;

	ec_ends_name(h, name, sizeof(name));
	if (!data) {
		bool fixed = chk_repair(c) && !unlinkat(dirfd, name, 0);

		chk_problem(c, fixed, "%s/%s: a record of sizes without a datafile%s",
			    c->datadir, name, chk_repair(c) ? " (removing it)" : "");
		return;
	}
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	got = fd >= 0 ? pread(fd, buf, sizeof(buf), 0) : -1;
	if (got < 0 || ec_ends_check(buf, (size_t)got))
		chk_problem(
			c, false,
			"%s/%s: the ec parity member's record of its data members' sizes "
			"is damaged%s%s (the file's size with a data member lost is "
			"refused until its parity is re-encoded: rpfs verify --repair)",
			c->datadir, name, got < 0 ? ": " : "",
			got < 0 ? strerror(errno) : "");
	if (fd >= 0)
		close(fd);
}

static void check_pair(struct chk *c, int dirfd, uint64_t h, bool data, bool sum)
{
	char dpath[1200], spath[1200];
	struct datafile f;
	bool accept = chk_repair(c) && (c->flags & CHECK_ACCEPT_DAMAGED);
	int ret;

	sum_path(c, h, dpath, sizeof(dpath), false);
	sum_path(c, h, spath, sizeof(spath), true);
	if (!data && !sum)
		return; /* a record of sizes alone: check_ends */
	if (!data) {
		bool fixed =
			chk_repair(c) && !unlinkat(dirfd, strrchr(spath, '/') + 1, 0);

		chk_problem(c, fixed, "%s: checksums without a datafile%s", spath,
			    chk_repair(c) ? " (removing them)" : "");
		return;
	}
	ret = datafile_open(&f, dirfd, h);
	if (ret) {
		chk_problem(c, false, "%s: can't open: %s", dpath, strerror(-ret));
		return;
	}
	if (!sum || f.bad_hdr) {
		bool fixed = accept && !rechecksum(&f);

		chk_problem(c, fixed, "%s: %s%s", dpath,
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
	bool data, sum, ends;
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
	if (chk_repair(c)) {
		char name[40];

		csum_data_name(h, name, sizeof(name));
		fixed = !unlinkat(dirfd, name, 0);
		csum_sum_name(h, name, sizeof(name));
		unlinkat(dirfd, name, 0);
		ec_ends_remove(dirfd, h);
	}
	chk_problem(
		c, fixed,
		"%s: datafile of handle %#" PRIx64
		"%s, a file that no longer exists or never came to be (a remove or a create cut short)%s",
		dpath, h, whose, chk_repair(c) ? " (removing it)" : "");
}

/* The datafile of a handle its store never handed out. */
static void never_handed_out(struct chk *c, uint64_t h, const char *whose)
{
	char dpath[1200];

	sum_path(c, h, dpath, sizeof(dpath), false);
	chk_problem(
		c, false,
		"%s: datafile of handle %#" PRIx64
		", which the store%s never handed out (the store is older than the data: restored from a backup?)",
		dpath, h, whose);
}

/* A datafile of a handle of this server's store that the store does not
 * know. */
static void check_orphan(struct chk *c, int dirfd, uint64_t h)
{
	if (!c->meta_ok || !own_handle(c, h) || chk_store_has(c, h))
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
		chk_note(
			c,
			"%s: datafile of handle %#" PRIx64
			": a create%s that may have it is in progress (unknown, not an orphan: left alone; check again later)",
			dpath, h, whose);
		break;
	case RPC_HS_DAMAGED:
		chk_note(
			c,
			"%s: datafile of handle %#" PRIx64
			": its record%s is damaged (unknown, not an orphan: left alone; rpfsd --check on that server)",
			dpath, h, whose);
		break;
	case RPC_HS_NOT_MINE:
		chk_note(
			c,
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
		chk_problem(c, false,
			    "%s: out of memory: datafiles not checked for orphans",
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
		chk_problem(
			c, false,
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
			chk_note(
				c,
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
			chk_problem(c, false, "%s/%s: not an rpfs file (left alone)",
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
		v[n].ends = kind == 2;
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
			v[m - 1].ends |= v[i].ends;
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
		chk_problem(
			c, false,
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

		if (chk_unwrap(c, REC_NS, &k, &val) || chk_ns_value(&val, &a, path) ||
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
		chk_problem(c, false,
			    "%s/%016" PRIx64
			    ": missing datafile of %s (its data on this server is lost)",
			    c->datadir, a.handle, path);
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
}

void check_io(struct chk *c)
{
	struct found *v;
	size_t n;
	int dirfd = open(c->datadir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dirfd < 0) {
		chk_problem(c, false, "%s: no data directory (%s)", c->datadir,
			    strerror(errno));
		check_missing(c, -1, NULL, 0);
		return;
	}
	v = scan(c, dirfd, &n);
	for (size_t i = 0; i < n; i++) {
		check_pair(c, dirfd, v[i].h, v[i].data, v[i].sum);
		if (v[i].ends)
			check_ends(c, dirfd, v[i].h, v[i].data);
		if (v[i].data)
			check_orphan(c, dirfd, v[i].h);
	}
	check_remote_orphans(c, dirfd, v, n);
	check_missing(c, dirfd, v, n);
	if (c->flags & CHECK_COPIES) {
		uint64_t *h = calloc(n ? n : 1, sizeof(*h));
		size_t k = 0;

		for (size_t i = 0; h && i < n; i++)
			if (v[i].data && v[i].sum)
				h[k++] = v[i].h;
		if (h)
			check_copies(c, dirfd, h, k);
		else
			chk_problem(c, false, "%s: out of memory: copies not compared",
				    c->datadir);
		free(h);
	}
	if (chk_repair(c) && c->repaired)
		fsync(dirfd);
	free(v);
	close(dirfd);
}
