/* The damage campaign: rpfs's rule "never wrong bytes with success", tried
 * against hundreds of random damages to a populated cluster's storage.
 *
 * A cluster of 4 servers (server 0 metadata + I/O, stripe unit 64 KiB)
 * holds files of many sizes and layouts, written with reproducible
 * patterns and synced; then every server's storage is saved. Each round
 * takes one server down, puts its saved storage back, applies ONE damage
 * (a flipped bit, a cut, an extension or a swap, in the metadata store,
 * a metadata record, a datafile or a checksum file), asks rpfsd --check
 * about it, starts the server again and reads every file whole through
 * librpfs. Each read counts as
 *   right:  success and the bytes and size that were written,
 *   error:  any error (the server refusing to start included),
 *   wrong:  success with other bytes or another size.
 * The test passes when no round gave a wrong read. The counts, and how
 * many damages --check found, are printed, with the seed that replays the
 * campaign (RPFS_DAMAGE_SEED, RPFS_DAMAGE_ROUNDS; RPFS_DAMAGE_KIND="data swap"
 * keeps the rounds of one kind).
 *
 * The saved storage is put back after every round, so each damage is
 * judged alone. Metadata records are damaged through LMDB's own API (a
 * bit of a value flipped, or the values of two records exchanged), which
 * is what rot inside a value looks like to the server; raw bytes of the
 * store file are flipped too. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster.h"
#include "rpfs.h"
#include "testkit.h"

#define KiB  1024ull
#define MiB  (1024ull * 1024)
#define SU   (64 * KiB)
#define NSRV 4

/* Each round restarts a server twice (about a second on a quiet machine):
 * fewer rounds under the sanitizers, which slow everything down. */
#if defined(__SANITIZE_ADDRESS__)
#define DEFAULT_ROUNDS 40
#else
#define DEFAULT_ROUNDS 200
#endif

/* ---- the population ------------------------------------------------------ */

struct pfile {
	char path[64];
	uint64_t size, seed;
	int count; /* stripe count, 0: the default */
};

static const struct {
	uint64_t size;
	int count;
} shapes[] = {
	{1, 1},		{100, 0},	  {4096, 2},	      {4097, 0},
	{SU - 1, 3},	{SU + 1, 0},	  {3 * SU + 17, 2},   {5 * SU, 4},
	{300 * KiB, 1}, {1 * MiB + 3, 0}, {2 * MiB, 3},	      {777 * KiB + 5, 2},
	{12 * KiB, 4},	{0, 0},		  {9 * SU + 4095, 0}, {40 * KiB, 1},
};
#define NFILES (sizeof(shapes) / sizeof(shapes[0]))

static struct pfile files[NFILES];

static void populate(struct cluster *cl)
{
	rpfs_client_t *c = client(cl);

	ck_assert_msg(rpfs_mkdir(c, "/d", 0755) == 0, "mkdir /d: %s", rpfs_errmsg());
	ck_assert_msg(rpfs_mkdir(c, "/d/e", 0755) == 0, "mkdir /d/e: %s", rpfs_errmsg());
	for (size_t i = 0; i < NFILES; i++) {
		struct pfile *p = &files[i];
		struct rpfs_create_opts o = {.stripe_count = (uint32_t)shapes[i].count,
					     .first_server = -1};
		rpfs_file_t *f;
		char *buf;

		snprintf(p->path, sizeof(p->path), "%s/f%02zu",
			 i % 3 == 0   ? ""
			 : i % 3 == 1 ? "/d"
				      : "/d/e",
			 i);
		p->size = shapes[i].size;
		p->seed = 0x5eed0000u + i;
		p->count = shapes[i].count;
		f = create_opts(c, p->path, &o);
		buf = malloc(p->size ? p->size : 1);
		ck_assert(buf);
		fill(buf, p->size, p->seed);
		if (p->size)
			write_all(f, buf, p->size, 0);
		ck_assert_msg(rpfs_sync(f) == 0, "sync %s: %s", p->path, rpfs_errmsg());
		rpfs_close(f);
		free(buf);
	}
	rpfs_finalize(c);
}

/* ---- reading ------------------------------------------------------------- */

enum verdict { RIGHT, ERROR, WRONG };

struct counts {
	unsigned long right, error, wrong;
	unsigned long rounds, found_by_check, bad_rounds;
};

/* One file read whole, and its size, judged. */
static __attribute__((noinline)) enum verdict
judge(rpfs_client_t *c, const struct pfile *p, char *why, size_t wl)
{
	rpfs_file_t *f = NULL;
	struct rpfs_stat st;
	uint64_t want = p->size, cap = p->size ? p->size : 1, size = 0;
	char *got = malloc(cap), *exp = malloc(p->size ? p->size : 1);
	enum verdict v = RIGHT;
	ssize_t n = 1;
	uint64_t total = 0;

	ck_assert(got && exp);
	fill(exp, p->size, p->seed);
	if (rpfs_stat(c, p->path, &st) != 0) {
		v = ERROR;
		goto out;
	}
	if (rpfs_open(c, p->path, RPFS_O_READ, &f) != 0) {
		v = ERROR;
		goto out;
	}
	if (rpfs_getsize(f, &size) != 0) {
		v = ERROR;
		goto out;
	}
	/* Reads past the end give zeros: read what was written. */
	while (total < want && (n = rpfs_pread(f, got + total, want - total, total)) > 0)
		total += (uint64_t)n;
	if (n < 0) {
		v = ERROR;
		goto out;
	}
	if (st.size != want || size != want) {
		snprintf(
			why, wl,
			"%s: stat says %llu bytes, the open file %llu, %llu were written",
			p->path, (unsigned long long)st.size, (unsigned long long)size,
			(unsigned long long)want);
		v = WRONG;
	} else if (total != want) {
		snprintf(why, wl, "%s: read %llu bytes, %llu were written", p->path,
			 (unsigned long long)total, (unsigned long long)want);
		v = WRONG;
	} else if (want && memcmp(got, exp, want)) {
		long long at = first_diff(got, exp, want);
		uint64_t stripe = (uint64_t)at / st.stripe_unit;

		snprintf(
			why, wl,
			"%s (handle %#llx, stripe unit %llu, count %u, first server %u): bytes "
			"differ from offset %lld (stripe %llu on io server %llu): got %02x%02x%02x%02x, "
			"want %02x%02x%02x%02x",
			p->path, (unsigned long long)st.handle,
			(unsigned long long)st.stripe_unit, st.stripe_count,
			st.first_server, at, (unsigned long long)stripe,
			(unsigned long long)((st.first_server +
					      stripe % st.stripe_count) %
					     NSRV),
			(unsigned char)got[at], (unsigned char)got[at + 1],
			(unsigned char)got[at + 2], (unsigned char)got[at + 3],
			(unsigned char)exp[at], (unsigned char)exp[at + 1],
			(unsigned char)exp[at + 2], (unsigned char)exp[at + 3]);
		v = WRONG;
	}
out:
	if (f)
		rpfs_close(f);
	free(got);
	free(exp);
	return v;
}

/* Every file, with a client of its own; the wrong ones are described. */
static unsigned read_all_files(struct cluster *cl, struct counts *k, const char *damage)
{
	rpfs_client_t *c = NULL;
	unsigned wrong = 0;
	char why[2048];

	if (rpfs_init(cl_config(cl), &c) != 0) {
		k->error += NFILES;
		return 0;
	}
	for (size_t i = 0; i < NFILES; i++) {
		switch (judge(c, &files[i], why, sizeof(why))) {
		case RIGHT:
			k->right++;
			break;
		case ERROR:
			k->error++;
			break;
		case WRONG:
			k->wrong++;
			wrong++;
			fprintf(stderr, "WRONG BYTES WITH SUCCESS after %s: %s\n", damage,
				why);
			break;
		}
	}
	rpfs_finalize(c);
	return wrong;
}

/* ---- storage: saving, putting back, listing ------------------------------ */

static char snapdir[256];

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	ck_assert_msg(rc == 0, "'%s' failed (%d)", cmd, rc);
}

static void save_all(struct cluster *cl)
{
	for (int i = 0; i < NSRV; i++)
		sh("mkdir -p '%s/%d' && cp -a '%s/.' '%s/%d/'", snapdir, i, cl_dir(cl, i),
		   snapdir, i);
}

static void put_back(struct cluster *cl, int i)
{
	sh("rm -rf '%s' && mkdir -p '%s' && cp -a '%s/%d/.' '%s/'", cl_dir(cl, i),
	   cl_dir(cl, i), snapdir, i, cl_dir(cl, i));
}

struct flist {
	char (*v)[600];
	size_t n;
};

/* The regular files under server i's data directory whose names end (or
 * not) in suffix. */
static void list_data(struct cluster *cl, int i, const char *suffix, bool want,
		      struct flist *out)
{
	char dir[300];
	DIR *d;
	struct dirent *e;
	size_t sl = strlen(suffix);

	snprintf(dir, sizeof(dir), "%s/data", cl_dir(cl, i));
	out->n = 0;
	out->v = NULL;
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		bool has = l > sl && !strcmp(e->d_name + l - sl, suffix);

		if (e->d_name[0] == '.' || has != want)
			continue;
		out->v = realloc(out->v, (out->n + 1) * sizeof(*out->v));
		ck_assert(out->v);
		snprintf(out->v[out->n++], sizeof(*out->v), "%s/%s", dir, e->d_name);
	}
	closedir(d);
	/* readdir's order is the file system's: sort for a campaign that replays. */
	qsort(out->v, out->n, sizeof(*out->v),
	      (int (*)(const void *, const void *))strcmp);
}

static off_t file_size(const char *p)
{
	struct stat st;

	return stat(p, &st) ? -1 : st.st_size;
}

/* ---- damages ------------------------------------------------------------- */

static void flip_bit(const char *p, uint64_t *s, char *what, size_t wl)
{
	off_t sz = file_size(p);
	int fd = open(p, O_RDWR);
	unsigned char b;
	uint64_t off;
	int bit;

	ck_assert_msg(fd >= 0 && sz > 0, "open %s", p);
	off = rnd_range(s, 0, (uint64_t)sz - 1);
	bit = (int)rnd_range(s, 0, 7);
	ck_assert(pread(fd, &b, 1, (off_t)off) == 1);
	b ^= (unsigned char)(1u << bit);
	ck_assert(pwrite(fd, &b, 1, (off_t)off) == 1);
	close(fd);
	snprintf(what, wl, "bit %d of byte %llu of %s flipped", bit,
		 (unsigned long long)off, p);
}

static void cut(const char *p, uint64_t *s, char *what, size_t wl)
{
	off_t sz = file_size(p);
	uint64_t to = sz > 0 ? rnd_range(s, 0, (uint64_t)sz - 1) : 0;

	ck_assert(truncate(p, (off_t)to) == 0);
	snprintf(what, wl, "%s cut from %lld to %llu bytes", p, (long long)sz,
		 (unsigned long long)to);
}

static void extend(const char *p, uint64_t *s, char *what, size_t wl)
{
	off_t sz = file_size(p);
	uint64_t by =
		rnd_range(s, 1, 2) == 1 ? rnd_range(s, 1, 4096) : rnd_range(s, 1, MiB);

	ck_assert(sz >= 0 && truncate(p, sz + (off_t)by) == 0);
	snprintf(what, wl, "%s extended by %llu zero bytes", p, (unsigned long long)by);
}

static void swap_files(const char *a, const char *b, char *what, size_t wl)
{
	char tmp[700];

	snprintf(tmp, sizeof(tmp), "%s.swap", a);
	ck_assert(rename(a, tmp) == 0 && rename(b, a) == 0 && rename(tmp, b) == 0);
	snprintf(what, wl, "%s and %s exchanged", a, b);
}

/* Datafile a and b exchanged with their checksum files. */
static void swap_datafiles(const char *a, const char *b, char *what, size_t wl)
{
	char as[700], bs[700];

	swap_files(a, b, what, wl);
	snprintf(as, sizeof(as), "%s.sum", a);
	snprintf(bs, sizeof(bs), "%s.sum", b);
	if (file_size(as) >= 0 && file_size(bs) >= 0) {
		char w2[1300];

		swap_files(as, bs, w2, sizeof(w2));
		snprintf(what + strlen(what), wl - strlen(what),
			 " (with their checksums)");
	}
}

/* The records of the metadata store, as (database, key) pairs. */
struct rec {
	char db[32];
	MDB_val key;
	char kbuf[512];
};

static int open_store(struct cluster *cl, MDB_env **env)
{
	char p[512];
	int rc;

	snprintf(p, sizeof(p), "%s/meta", cl_dir(cl, 0));
	if ((rc = mdb_env_create(env)))
		return rc;
	mdb_env_set_maxdbs(*env, 16);
	mdb_env_set_mapsize(*env, 1ull << 30);
	if ((rc = mdb_env_open(*env, p, 0, 0600))) {
		mdb_env_close(*env);
		return rc;
	}
	return 0;
}

static size_t list_records(MDB_txn *txn, struct rec **out)
{
	MDB_dbi main_db, sub;
	MDB_cursor *mc, *sc;
	MDB_val k, v;
	size_t n = 0;

	*out = NULL;
	ck_assert(mdb_dbi_open(txn, NULL, 0, &main_db) == 0);
	ck_assert(mdb_cursor_open(txn, main_db, &mc) == 0);
	while (mdb_cursor_get(mc, &k, &v, MDB_NEXT) == 0) {
		char name[32];

		if (k.mv_size >= sizeof(name))
			continue;
		memcpy(name, k.mv_data, k.mv_size);
		name[k.mv_size] = 0;
		if (mdb_dbi_open(txn, name, 0, &sub))
			continue;
		ck_assert(mdb_cursor_open(txn, sub, &sc) == 0);
		while (mdb_cursor_get(sc, &k, &v, MDB_NEXT) == 0) {
			struct rec *r;

			if (k.mv_size > sizeof(r->kbuf) || !v.mv_size)
				continue;
			*out = realloc(*out, (n + 1) * sizeof(**out));
			ck_assert(*out);
			r = &(*out)[n++];
			snprintf(r->db, sizeof(r->db), "%s", name);
			memcpy(r->kbuf, k.mv_data, k.mv_size);
			r->key.mv_size = k.mv_size; /* mv_data: set below */
		}
		mdb_cursor_close(sc);
	}
	mdb_cursor_close(mc);
	/* Only now: realloc may have moved the records (and their kbuf). */
	for (size_t i = 0; i < n; i++)
		(*out)[i].key.mv_data = (*out)[i].kbuf;
	return n;
}

/* A bit of one record's value flipped, or two records' values of one
 * database exchanged, through LMDB. */
static void damage_record(struct cluster *cl, uint64_t *s, bool swap, char *what,
			  size_t wl)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val v, v2;
	struct rec *r;
	size_t n, a, b;

	ck_assert(open_store(cl, &env) == 0);
	ck_assert(mdb_txn_begin(env, NULL, 0, &txn) == 0);
	n = list_records(txn, &r);
	ck_assert_msg(n > 0, "no records in the metadata store");
	a = rnd_range(s, 0, n - 1);
	ck_assert(mdb_dbi_open(txn, r[a].db, 0, &dbi) == 0);
	ck_assert(mdb_get(txn, dbi, &r[a].key, &v) == 0);
	if (!swap) {
		unsigned char *copy = malloc(v.mv_size);
		uint64_t off = rnd_range(s, 0, v.mv_size - 1);
		int bit = (int)rnd_range(s, 0, 7);

		memcpy(copy, v.mv_data, v.mv_size);
		copy[off] ^= (unsigned char)(1u << bit);
		v.mv_data = copy;
		ck_assert(mdb_put(txn, dbi, &r[a].key, &v, 0) == 0);
		free(copy);
		snprintf(what, wl,
			 "bit %d of byte %llu of a %zu-byte record in '%s' flipped", bit,
			 (unsigned long long)off, v.mv_size, r[a].db);
	} else {
		void *ca, *cb;

		/* another record of the same database */
		b = a;
		for (size_t t = 0; t < 4 * n && (b == a || strcmp(r[b].db, r[a].db)); t++)
			b = rnd_range(s, 0, n - 1);
		if (b == a || strcmp(r[b].db, r[a].db)) {
			mdb_txn_abort(txn);
			mdb_env_close(env);
			free(r);
			damage_record(cl, s, false, what, wl);
			return;
		}
		ck_assert(mdb_get(txn, dbi, &r[b].key, &v2) == 0);
		ca = malloc(v.mv_size);
		cb = malloc(v2.mv_size);
		memcpy(ca, v.mv_data, v.mv_size);
		memcpy(cb, v2.mv_data, v2.mv_size);
		v.mv_data = ca;
		v2.mv_data = cb;
		ck_assert(mdb_put(txn, dbi, &r[a].key, &v2, 0) == 0);
		ck_assert(mdb_put(txn, dbi, &r[b].key, &v, 0) == 0);
		free(ca);
		free(cb);
		snprintf(what, wl, "the values of two records in '%s' exchanged",
			 r[a].db);
	}
	ck_assert(mdb_txn_commit(txn) == 0);
	mdb_env_close(env);
	free(r);
}

enum kind {
	K_RECORD_BIT,
	K_RECORD_SWAP,
	K_STORE_BIT,
	K_DATA_BIT,
	K_DATA_CUT,
	K_DATA_EXTEND,
	K_DATA_SWAP,
	K_SUM_BIT,
	K_SUM_CUT,
	K_SUM_EXTEND,
	K_NKINDS
};

/* Stop one server, put its saved storage back and apply one damage of
 * kind k to it; *srv is the server. False when the kind had nothing to
 * damage there (the storage is as saved). */
static bool damage(struct cluster *cl, enum kind k, uint64_t *s, char *what, size_t wl,
		   int *srvp)
{
	int srv = k <= K_STORE_BIT ? 0 : (int)rnd_range(s, 0, NSRV - 1);
	struct flist fl;
	char store[512];

	*srvp = srv;
	cl_stop(cl, srv);
	put_back(cl, srv);
	switch (k) {
	case K_RECORD_BIT:
	case K_RECORD_SWAP:
		damage_record(cl, s, k == K_RECORD_SWAP, what, wl);
		return true;
	case K_STORE_BIT:
		snprintf(store, sizeof(store), "%s/meta/data.mdb", cl_dir(cl, 0));
		flip_bit(store, s, what, wl);
		return true;
	default:
		break;
	}
	list_data(cl, srv, ".sum", k >= K_SUM_BIT, &fl);
	if (fl.n < (k == K_DATA_SWAP ? 2u : 1u)) {
		free(fl.v);
		return false;
	}
	{
		const char *p = fl.v[rnd_range(s, 0, fl.n - 1)];

		switch (k) {
		case K_DATA_BIT:
		case K_SUM_BIT:
			if (file_size(p) > 0)
				flip_bit(p, s, what, wl);
			else
				extend(p, s, what, wl);
			break;
		case K_DATA_CUT:
		case K_SUM_CUT:
			if (file_size(p) > 0)
				cut(p, s, what, wl);
			else
				extend(p, s, what, wl);
			break;
		case K_DATA_EXTEND:
		case K_SUM_EXTEND:
			extend(p, s, what, wl);
			break;
		case K_DATA_SWAP: {
			const char *q = p;

			while (q == p)
				q = fl.v[rnd_range(s, 0, fl.n - 1)];
			swap_datafiles(p, q, what, wl);
			break;
		}
		default:
			break;
		}
	}
	free(fl.v);
	return true;
}

/* rpfsd --check on the damaged, stopped server: 1 when it reported damage. */
static int check_finds(struct cluster *cl, int srv)
{
	const char *rpfsd = getenv("RPFSD");
	char cmd[1200];
	int rc;

	snprintf(cmd, sizeof(cmd),
		 "timeout 60 '%s' --config '%s' --name %d --check >/dev/null 2>&1",
		 rpfsd && *rpfsd ? rpfsd : "./rpfsd", cl_config(cl), srv);
	rc = system(cmd);
	return WIFEXITED(rc) && WEXITSTATUS(rc) == 1;
}

/* ---- the campaign -------------------------------------------------------- */

static unsigned long env_ul(const char *name, unsigned long dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtoul(v, NULL, 0) : dflt;
}

START_TEST(no_wrong_bytes_with_success_after_random_damage)
{
	struct cl_opts o = {
		.nservers = NSRV, .nmeta = 1, .stripe_unit = SU, .timeout_ms = 4000};
	unsigned long rounds = env_ul("RPFS_DAMAGE_ROUNDS", DEFAULT_ROUNDS);
	uint64_t seed = env_ul("RPFS_DAMAGE_SEED", 0xda4a6e), s = seed;
	struct counts k = {0};
	unsigned long per_kind[K_NKINDS] = {0}, found_kind[K_NKINDS] = {0};
	static const char *const kind_name[K_NKINDS] = {
		"record bit",  "record swap", "store bit", "data bit", "data cut",
		"data extend", "data swap",   "sum bit",   "sum cut",  "sum extend"};
	/* RPFS_DAMAGE_KIND="data swap": only rounds of that kind (a replay) */
	const char *only = getenv("RPFS_DAMAGE_KIND");
	struct cluster *cl = cl_start(&o);
	char what[1400];

	ck_assert_msg(cl, "couldn't start %d servers", NSRV);
	snprintf(snapdir, sizeof(snapdir), "%s/../damage-saved", cl_dir(cl, 0));
	populate(cl);
	/* What was written reads back before any damage. */
	ck_assert_msg(read_all_files(cl, &k, "nothing") == 0 && k.error == 0,
		      "the undamaged cluster does not read back");
	k.right = 0;
	ck_assert(cl_stop_all(cl) == 0);
	save_all(cl);
	ck_assert(cl_start_all(cl) == 0);
	fprintf(stderr, "damage campaign: %lu rounds, seed 0x%llx, %zu files\n", rounds,
		(unsigned long long)seed, NFILES);
	for (unsigned long r = 0; r < rounds; r++) {
		enum kind kd = (enum kind)rnd_range(&s, 0, K_NKINDS - 1);

		if (only && strcmp(only, kind_name[kd]))
			continue;
		int srv, found;
		double t0, t1, t2, t3;
		int rs;

		if (!damage(cl, kd, &s, what, sizeof(what), &srv)) {
			ck_assert_msg(cl_restart(cl, srv) == 0, "server %d: no restart",
				      srv);
			continue;
		}
		t0 = now_ms();
		found = check_finds(cl, srv);
		t1 = now_ms();
		rs = cl_restart(cl, srv); /* may refuse: then reads are errors */
		t2 = now_ms();
		per_kind[kd]++;
		found_kind[kd] += (unsigned long)found;
		k.found_by_check += (unsigned long)found;
		k.rounds++;
		if (read_all_files(cl, &k, what))
			k.bad_rounds++;
		t3 = now_ms();
		cl_stop(cl, srv);
		put_back(cl, srv);
		ck_assert_msg(cl_restart(cl, srv) == 0,
			      "server %d: no restart after round %lu", srv, r);
		if (getenv("RPFS_DAMAGE_VERBOSE"))
			fprintf(stderr,
				"round %lu: %s; check %.0f ms, start %.0f ms (%d), reads %.0f ms, back %.0f ms\n",
				r, what, t1 - t0, t2 - t1, rs, t3 - t2, now_ms() - t3);
	}
	fprintf(stderr,
		"damage campaign: %lu damages; reads: %lu right, %lu errors, "
		"%lu wrong bytes with success (%lu damages gave wrong bytes); "
		"rpfsd --check found %lu of the damages\n",
		k.rounds, k.right, k.error, k.wrong, k.bad_rounds, k.found_by_check);
	for (int i = 0; i < K_NKINDS; i++)
		fprintf(stderr, "  %-12s %4lu damages, --check found %lu\n", kind_name[i],
			per_kind[i], found_kind[i]);
	ck_assert_msg(k.wrong == 0, "%lu reads gave wrong bytes with success (above)",
		      k.wrong);
	if (k.wrong && getenv("RPFS_DAMAGE_KEEP")) {
		fprintf(stderr, "kept for a look: %s and %s\n", cl_dir(cl, 0), snapdir);
		pause();
	}
	sh("rm -rf '%s'", snapdir);
	cl_destroy(cl);
}
END_TEST

static Suite *damage_suite(void)
{
	Suite *s = suite_create("damage campaign");
	TCase *tc = tcase_create("campaign");

	tcase_set_timeout(tc, 1200);
	tcase_add_test(tc, no_wrong_bytes_with_success_after_random_damage);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return cl_run_suite(argc, argv, damage_suite);
}
