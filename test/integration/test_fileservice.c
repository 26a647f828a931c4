/* File service acceptance tests: rpfsd servers on loopback, clients through
 * librpfs.
 *
 * Each test starts its own cluster (cluster.h): 4 servers, server 0
 * metadata + I/O and the others I/O only, stripe unit 64 KiB so that even
 * small accesses cross servers. What is specified:
 *   - data crosses stripe boundaries intact at every size around the
 *     transport thresholds, by the automatic path choice and with each path
 *     forced ([transport] force_path);
 *   - random list I/O (memory and file piece lists) in both directions
 *     matches a local file used as an oracle;
 *   - concurrent clients in separate processes (pvfs-test style) see each
 *     other's blocks; overlapping writers never mix bytes inside one write;
 *   - metadata and data survive a restart of every server; data synced
 *     before a kill -9 survives it;
 *   - a dead server gives an error naming it within the timeout, no hang;
 *   - remove deletes the datafiles; mkdir/readdir/rmdir/create errors;
 *   - two metadata servers share the namespace.
 * Worker processes are forked before they open a client and leave with
 * _exit, so no libfabric state crosses a fork. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "rpfs.h"
#include "testkit.h"

#define KiB  1024ull
#define MiB  (1024ull * 1024)
#define SU   (64 * KiB)
#define NSRV 4

/* ---- helpers ----------------------------------------------------------- */

static struct cluster *start(int nmeta, int timeout_ms, const char *force_path)
{
	struct cl_opts o = {.nservers = NSRV,
			    .nmeta = nmeta,
			    .stripe_unit = SU,
			    .timeout_ms = timeout_ms,
			    .force_path = force_path};
	struct cluster *cl = cl_start(&o);

	ck_assert_msg(cl, "couldn't start %d servers (see stderr)", NSRV);
	return cl;
}

/* A local file standing in for the truth. */
static int oracle_open(void)
{
	char tmpl[] = "/tmp/rpfs-oracle-XXXXXX";
	int fd = mkstemp(tmpl);

	ck_assert_msg(fd >= 0, "mkstemp: %s", strerror(errno));
	unlink(tmpl);
	return fd;
}

/* Oracle read: bytes past the end read as zeros, as in rpfs. */
static void oracle_read(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);

	ck_assert(n >= 0);
	memset((char *)buf + n, 0, len - (size_t)n);
}

static void oracle_write(int fd, const void *buf, size_t len, uint64_t off)
{
	ck_assert(pwrite(fd, buf, len, (off_t)off) == (ssize_t)len);
}

/* The whole file equals the oracle, size included. */
static void check_against_oracle(rpfs_file_t *f, int fd)
{
	struct stat st;
	uint64_t size = 0;
	int ret = rpfs_getsize(f, &size);

	ck_assert_msg(ret == 0, "getsize: %s", rpfs_errmsg());
	ck_assert(fstat(fd, &st) == 0);
	ck_assert_msg(size == (uint64_t)st.st_size, "size %llu, expected %lld",
		      (unsigned long long)size, (long long)st.st_size);

	size_t chunk = 8 * MiB;
	char *a = malloc(chunk), *b = malloc(chunk);

	ck_assert(a && b);
	for (uint64_t off = 0; off < size; off += chunk) {
		size_t n = size - off < chunk ? (size_t)(size - off) : chunk;
		long long d;

		read_all(f, a, n, off);
		oracle_read(fd, b, n, off);
		d = first_diff(a, b, n);
		ck_assert_msg(d < 0, "file differs from the oracle at %llu",
			      (unsigned long long)(off + (uint64_t)d));
	}
	free(a);
	free(b);
}

/* ---- data at every size, across stripes ------------------------------- */

static const size_t sizes[] = {1,	 4 * KiB - 1,  4 * KiB, 4 * KiB + 1, 64 * KiB - 1,
			       64 * KiB, 64 * KiB + 1, MiB - 1, MiB,	     MiB + 1,
			       8 * MiB};
/* Offsets at a stripe start, just before a boundary, and inside a stripe
 * on another server. */
static const uint64_t offsets[] = {0, SU - 1, 3 * SU + 17};

/* Write and read back every size up to max at every offset, each in its own
 * file, and compare the files with an oracle. */
static void sizes_roundtrip(rpfs_client_t *c, size_t max, const char *tag)
{
	char *buf = malloc(8 * MiB), *back = malloc(8 * MiB);
	int k = 0;

	ck_assert(buf && back);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (sizes[i] > max)
			continue;
		for (size_t j = 0; j < sizeof(offsets) / sizeof(offsets[0]); j++) {
			size_t n = sizes[i];
			uint64_t off = offsets[j];
			char path[64];
			rpfs_file_t *f;
			int fd = oracle_open();
			long long d;

			snprintf(path, sizeof(path), "/%s-%d", tag, k++);
			f = create(c, path);
			fill(buf, n, n * 31 + off);
			write_all(f, buf, n, off);
			oracle_write(fd, buf, n, off);
			memset(back, 0xEE, n);
			read_all(f, back, n, off);
			d = first_diff(buf, back, n);
			ck_assert_msg(d < 0,
				      "%s: %zu bytes at %llu: differs at byte %lld", tag,
				      n, (unsigned long long)off, d);
			check_against_oracle(f, fd);
			rpfs_close(f);
			close(fd);
		}
	}
	free(buf);
	free(back);
}

START_TEST(test_sizes_cross_stripes_auto_path)
{
	struct cluster *cl = start(1, 0, NULL);
	rpfs_client_t *c = client(cl);

	sizes_roundtrip(c, 8 * MiB, "auto");
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* Each forced path with the sizes it can carry per server request. */
START_TEST(test_sizes_forced_path)
{
	static const char *paths[] = {"inline", "fast", "bulk"};
	static const size_t max[] = {4 * KiB, 64 * KiB, 8 * MiB};
	struct cluster *cl = start(1, 0, paths[_i]);
	rpfs_client_t *c = client(cl);

	sizes_roundtrip(c, max[_i], paths[_i]);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* ---- random list I/O against the oracle ------------------------------- */

struct plist {
	struct iovec *mem;
	int nmem;
	struct rpfs_seg *file;
	int nfile;
	uint64_t total;
};

static void plist_free(struct plist *p)
{
	free(p->mem);
	free(p->file);
}

/* File pieces: sorted and disjoint (sorted_disjoint) or anywhere; total at
 * most cap. Memory pieces: a random split of the same total placed in
 * shuffled order, with gaps, in a buffer of *memlen bytes. */
static void plist_make(uint64_t *s, int sorted_disjoint, uint64_t cap, struct plist *p,
		       size_t *memlen)
{
	int maxp = (int)rnd_range(s, 1, 48);
	uint64_t off = rnd_range(s, 0, 3 * SU);

	p->file = calloc((size_t)maxp, sizeof(*p->file));
	p->nfile = 0;
	p->total = 0;
	while (p->nfile < maxp && p->total < cap) {
		uint64_t len = rnd_size(s, 8 * MiB);

		if (len > cap - p->total)
			len = cap - p->total;
		if (sorted_disjoint) {
			off += rnd_range(s, 0, 1) ? rnd_size(s, 2 * MiB) : 0;
			p->file[p->nfile].off = off;
			off += len;
		} else {
			p->file[p->nfile].off = rnd_range(s, 0, 40 * MiB);
		}
		p->file[p->nfile++].len = len;
		p->total += len;
	}

	int nmem = (int)rnd_range(s, 1, 48);
	uint64_t *lens = calloc((size_t)nmem, sizeof(*lens));
	int *order = calloc((size_t)nmem, sizeof(*order));
	uint64_t left = p->total, pos = 0;

	ck_assert(p->file && lens && order);
	for (int i = 0; i < nmem; i++) {
		lens[i] = i == nmem - 1 ? left : rnd_range(s, 0, left);
		if (i < nmem - 1 && lens[i] > 1 && rnd_range(s, 0, 1))
			lens[i] = rnd_size(s, lens[i]);
		left -= lens[i];
		order[i] = i;
	}
	for (int i = nmem - 1; i > 0; i--) {
		int j = (int)rnd_range(s, 0, (uint64_t)i), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	/* Memory position of piece i: the pieces lie in shuffled order. */
	uint64_t *at = calloc((size_t)nmem, sizeof(*at));

	ck_assert(at);
	for (int k = 0; k < nmem; k++) {
		pos += rnd_range(s, 0, 64);
		at[order[k]] = pos;
		pos += lens[order[k]];
	}
	*memlen = (size_t)pos + 1;
	p->mem = calloc((size_t)nmem, sizeof(*p->mem));
	ck_assert(p->mem);
	p->nmem = nmem;
	for (int i = 0; i < nmem; i++) {
		p->mem[i].iov_base = (void *)(uintptr_t)at[i]; /* offset until based */
		p->mem[i].iov_len = (size_t)lens[i];
	}
	free(lens);
	free(order);
	free(at);
}

static void plist_base(struct plist *p, char *base)
{
	for (int i = 0; i < p->nmem; i++)
		p->mem[i].iov_base = base + (uintptr_t)p->mem[i].iov_base;
}

/* Gather memory pieces into a stream, or scatter a stream into them. */
static void stream_copy(struct plist *p, char *stream, int to_stream)
{
	uint64_t pos = 0;

	for (int i = 0; i < p->nmem; i++) {
		if (to_stream)
			memcpy(stream + pos, p->mem[i].iov_base, p->mem[i].iov_len);
		else
			memcpy(p->mem[i].iov_base, stream + pos, p->mem[i].iov_len);
		pos += p->mem[i].iov_len;
	}
}

static ssize_t do_list(rpfs_file_t *f, struct plist *p, int write, int async)
{
	rpfs_request_t *req = NULL;
	int ret;

	if (!async)
		return write ? rpfs_writev(f, p->mem, p->nmem, p->file, p->nfile)
			     : rpfs_readv(f, p->mem, p->nmem, p->file, p->nfile);
	ret = write ? rpfs_iwritev(f, p->mem, p->nmem, p->file, p->nfile, &req)
		    : rpfs_ireadv(f, p->mem, p->nmem, p->file, p->nfile, &req);
	if (ret)
		return ret;
	return rpfs_wait(req);
}

static void listio_seed(rpfs_client_t *c, uint64_t seed)
{
	uint64_t s = seed * 7919 + 1;
	char path[64];
	rpfs_file_t *f;
	int fd = oracle_open();

	snprintf(path, sizeof(path), "/list-%llu", (unsigned long long)seed);
	f = create(c, path);
	for (int round = 0; round < 2; round++) {
		struct plist w, r;
		size_t wlen, rlen;
		char *wbuf, *stream, *rbuf, *expect;
		uint64_t pos = 0;
		ssize_t n;

		/* Write: random memory pieces to sorted disjoint file pieces. */
		plist_make(&s, 1, 10 * MiB, &w, &wlen);
		wbuf = malloc(wlen);
		stream = malloc(w.total + 1);
		ck_assert(wbuf && stream);
		fill(wbuf, wlen, rnd_next(&s));
		plist_base(&w, wbuf);
		n = do_list(f, &w, 1, (int)(seed & 1));
		ck_assert_msg(
			n == (ssize_t)w.total,
			"seed %llu: writev %d mem / %d file pieces, %llu bytes: %zd: %s",
			(unsigned long long)seed, w.nmem, w.nfile,
			(unsigned long long)w.total, n, rpfs_errmsg());
		stream_copy(&w, stream, 1);
		for (int i = 0; i < w.nfile; i++) {
			oracle_write(fd, stream + pos, w.file[i].len, w.file[i].off);
			pos += w.file[i].len;
		}
		free(stream);
		free(wbuf);
		plist_free(&w);

		/* Read: unsorted, possibly overlapping file pieces (also past the
		 * end) into random memory pieces. */
		plist_make(&s, 0, 6 * MiB, &r, &rlen);
		rbuf = malloc(rlen);
		expect = malloc(rlen);
		stream = malloc(r.total + 1);
		ck_assert(rbuf && expect && stream);
		memset(rbuf, 0x5A, rlen);
		memset(expect, 0x5A, rlen);
		plist_base(&r, rbuf);
		n = do_list(f, &r, 0, (int)(seed & 1));
		ck_assert_msg(
			n == (ssize_t)r.total,
			"seed %llu: readv %d mem / %d file pieces, %llu bytes: %zd: %s",
			(unsigned long long)seed, r.nmem, r.nfile,
			(unsigned long long)r.total, n, rpfs_errmsg());
		pos = 0;
		for (int i = 0; i < r.nfile; i++) {
			oracle_read(fd, stream + pos, r.file[i].len, r.file[i].off);
			pos += r.file[i].len;
		}
		for (int i = 0; i < r.nmem; i++)
			r.mem[i].iov_base = expect + ((char *)r.mem[i].iov_base - rbuf);
		stream_copy(&r, stream, 0);
		long long d = first_diff(rbuf, expect, rlen);

		ck_assert_msg(d < 0,
			      "seed %llu round %d: readv differs at memory byte %lld",
			      (unsigned long long)seed, round, d);
		free(stream);
		free(rbuf);
		free(expect);
		plist_free(&r);
	}
	check_against_oracle(f, fd);
	rpfs_close(f);
	ck_assert_msg(rpfs_remove(c, path) == 0, "remove %s: %s", path, rpfs_errmsg());
	close(fd);
}

START_TEST(test_random_list_io_matches_oracle)
{
	struct cluster *cl = start(1, 0, NULL);
	rpfs_client_t *c = client(cl);
	const char *env = getenv("RPFS_TEST_SEEDS");
	int seeds = env ? atoi(env) : 30;
	double t0 = now_ms();

	for (int seed = 0; seed < seeds; seed++)
		listio_seed(c, (uint64_t)seed);
	fprintf(stderr, "random list I/O: %d seeds in %.1f s\n", seeds,
		(now_ms() - t0) / 1e3);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* ---- processes sharing a file ----------------------------------------- */

#define TEAM_MAX 8

/* Forked workers with barriers through pipes: each worker writes 'B' to
 * the parent at a barrier and waits for a byte on its own pipe; 'F' (or a
 * worker that dies) makes the parent release nobody and close the pipes,
 * so every worker fails out instead of hanging. */
struct team {
	int n, w;
	int up[2];
	int down[TEAM_MAX][2];
};

static int team_barrier(struct team *t)
{
	char b = 'B';

	if (write(t->up[1], &b, 1) != 1 || read(t->down[t->w][0], &b, 1) != 1)
		return -1;
	return 0;
}

typedef int (*team_fn)(rpfs_client_t *c, struct team *t, void *arg);

/* Returns the number of workers that failed. */
static int team_run(struct cluster *cl, int n, team_fn fn, void *arg)
{
	struct team t = {.n = n};
	pid_t pids[TEAM_MAX];
	int failed = 0, arrived = 0;
	char b;

	ck_assert(n <= TEAM_MAX && pipe(t.up) == 0);
	for (int w = 0; w < n; w++)
		ck_assert(pipe(t.down[w]) == 0);
	fflush(NULL);
	for (int w = 0; w < n; w++) {
		pids[w] = fork();
		ck_assert(pids[w] >= 0);
		if (pids[w] == 0) {
			rpfs_client_t *c;
			int ret;

			t.w = w;
			close(t.up[0]);
			ret = rpfs_init(cl_config(cl), &c);
			if (ret) {
				fprintf(stderr, "worker %d: rpfs_init: %s\n", w,
					rpfs_errmsg());
			} else {
				ret = fn(c, &t, arg);
				rpfs_finalize(c);
			}
			if (ret) {
				b = 'F';
				if (write(t.up[1], &b, 1) < 0)
					_exit(2);
			}
			_exit(ret ? 1 : 0);
		}
	}
	close(t.up[1]);
	while (read(t.up[0], &b, 1) == 1) {
		if (b == 'F')
			break;
		if (++arrived == n) {
			arrived = 0;
			for (int w = 0; w < n; w++)
				if (write(t.down[w][1], &b, 1) != 1)
					break;
		}
	}
	for (int w = 0; w < n; w++) {
		close(t.down[w][0]);
		close(t.down[w][1]);
	}
	close(t.up[0]);
	for (int w = 0; w < n; w++) {
		int status;

		waitpid(pids[w], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			failed++;
	}
	return failed;
}

#define PT_BLOCK   (MiB + 4097) /* odd: blocks straddle stripes and servers */
#define PT_NBLOCKS 6
#define PT_PATH	   "/shared"

static uint64_t pt_off(int n, int w, int j)
{
	return ((uint64_t)j * (uint64_t)n + (uint64_t)w) * PT_BLOCK;
}

/* pvfs-test: each writes interleaved blocks, then checks everyone else's. */
static int pt_worker(rpfs_client_t *c, struct team *t, void *arg)
{
	char *buf = malloc(PT_BLOCK), *want = malloc(PT_BLOCK);
	rpfs_file_t *f = NULL;
	int ret = 0;

	(void)arg;
	if (!buf || !want)
		return -ENOMEM;
	if (t->w == 0 && (ret = rpfs_create(c, PT_PATH, 0644, RPFS_O_EXCL, NULL, &f))) {
		fprintf(stderr, "worker 0: create: %s\n", rpfs_errmsg());
		goto out;
	}
	if (team_barrier(t))
		goto fail;
	if (t->w && (ret = rpfs_open(c, PT_PATH, RPFS_O_RDWR, &f))) {
		fprintf(stderr, "worker %d: open: %s\n", t->w, rpfs_errmsg());
		goto out;
	}
	for (int j = 0; j < PT_NBLOCKS; j++) {
		fill(buf, PT_BLOCK, (uint64_t)(t->w * 1000 + j));
		if (rpfs_pwrite(f, buf, PT_BLOCK, pt_off(t->n, t->w, j)) != PT_BLOCK) {
			fprintf(stderr, "worker %d: pwrite: %s\n", t->w, rpfs_errmsg());
			goto fail;
		}
	}
	if (team_barrier(t))
		goto fail;
	for (int w = 0; w < t->n; w++) {
		if (w == t->w)
			continue;
		for (int j = 0; j < PT_NBLOCKS; j++) {
			long long d;

			if (rpfs_pread(f, buf, PT_BLOCK, pt_off(t->n, w, j)) !=
			    PT_BLOCK) {
				fprintf(stderr, "worker %d: pread: %s\n", t->w,
					rpfs_errmsg());
				goto fail;
			}
			fill(want, PT_BLOCK, (uint64_t)(w * 1000 + j));
			d = first_diff(buf, want, PT_BLOCK);
			if (d >= 0) {
				fprintf(stderr,
					"worker %d: block %d of worker %d differs at %lld\n",
					t->w, j, w, d);
				goto fail;
			}
		}
	}
	goto out;
fail:
	ret = -EIO;
out:
	if (f)
		rpfs_close(f);
	free(buf);
	free(want);
	return ret;
}

START_TEST(test_concurrent_clients_see_each_others_blocks)
{
	struct cluster *cl = start(1, 0, NULL);
	int failed = team_run(cl, 4, pt_worker, NULL);

	ck_assert_msg(failed == 0, "%d of 4 workers failed (see stderr)", failed);
	cl_destroy(cl);
}
END_TEST

#define OW_BLOCKS 64
#define OW_PATH	  "/overlap"

/* Every worker writes the whole range, 64 KiB block by block in its own
 * random order, with its own fill byte, three times over. */
static int ow_worker(rpfs_client_t *c, struct team *t, void *arg)
{
	char *buf = malloc(SU);
	rpfs_file_t *f = NULL;
	uint64_t s = (uint64_t)t->w + 99;
	int order[OW_BLOCKS];
	int ret = 0;

	(void)arg;
	if (!buf)
		return -ENOMEM;
	memset(buf, 'A' + t->w, SU);
	if (t->w == 0 && (ret = rpfs_create(c, OW_PATH, 0644, RPFS_O_EXCL, NULL, &f))) {
		fprintf(stderr, "worker 0: create: %s\n", rpfs_errmsg());
		goto out;
	}
	if (team_barrier(t))
		goto fail;
	if (t->w && (ret = rpfs_open(c, OW_PATH, RPFS_O_RDWR, &f))) {
		fprintf(stderr, "worker %d: open: %s\n", t->w, rpfs_errmsg());
		goto out;
	}
	for (int pass = 0; pass < 3; pass++) {
		for (int i = 0; i < OW_BLOCKS; i++)
			order[i] = i;
		for (int i = OW_BLOCKS - 1; i > 0; i--) {
			int j = (int)rnd_range(&s, 0, (uint64_t)i), x = order[i];

			order[i] = order[j];
			order[j] = x;
		}
		for (int i = 0; i < OW_BLOCKS; i++) {
			if (rpfs_pwrite(f, buf, SU, (uint64_t)order[i] * SU) !=
			    (ssize_t)SU) {
				fprintf(stderr, "worker %d: pwrite: %s\n", t->w,
					rpfs_errmsg());
				goto fail;
			}
		}
	}
	goto out;
fail:
	ret = -EIO;
out:
	if (f)
		rpfs_close(f);
	free(buf);
	return ret;
}

START_TEST(test_overlapping_writers_never_mix_within_a_write)
{
	struct cluster *cl = start(1, 0, NULL);
	int failed = team_run(cl, 4, ow_worker, NULL);
	rpfs_client_t *c;
	rpfs_file_t *f;
	char *buf = malloc(OW_BLOCKS * SU);
	int seen[4] = {0};

	ck_assert_msg(failed == 0, "%d of 4 workers failed (see stderr)", failed);
	ck_assert(buf);
	c = client(cl);
	f = open_file(c, OW_PATH);
	read_all(f, buf, OW_BLOCKS * SU, 0);
	for (int b = 0; b < OW_BLOCKS; b++) {
		const char *p = buf + (size_t)b * SU;

		ck_assert_msg(p[0] >= 'A' && p[0] <= 'D', "block %d starts with byte %d",
			      b, p[0]);
		for (size_t i = 1; i < SU; i++)
			ck_assert_msg(p[i] == p[0],
				      "block %d mixes writers %c and %c at %zu", b, p[0],
				      p[i], i);
		seen[p[0] - 'A']++;
	}
	fprintf(stderr,
		"overlapping writers: last writer per block A=%d B=%d C=%d D=%d\n",
		seen[0], seen[1], seen[2], seen[3]);
	free(buf);
	rpfs_close(f);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

struct names {
	char list[4096];
	int n;
};

static int collect(const char *name, uint32_t type, void *arg)
{
	struct names *nm = arg;
	size_t used = strlen(nm->list);

	snprintf(nm->list + used, sizeof(nm->list) - used, "%s%c ", name,
		 type == RPFS_TYPE_DIR	  ? '/'
		 : type == RPFS_TYPE_FILE ? '.'
					  : '?');
	nm->n++;
	return 0;
}

static struct names list_dir(rpfs_client_t *c, const char *path)
{
	struct names nm = {.n = 0};
	int ret = rpfs_readdir(c, path, collect, &nm);

	ck_assert_msg(ret == 0, "readdir %s: %s: %s", path, strerror(-ret),
		      rpfs_errmsg());
	return nm;
}

/* ---- restarts and failures --------------------------------------------- */

#define RS_LEN (4 * MiB + 12345)

START_TEST(test_restart_all_servers_keeps_metadata_and_data)
{
	struct cluster *cl = start(1, 0, NULL);
	rpfs_client_t *c = client(cl);
	char *buf = malloc(RS_LEN), *back = malloc(RS_LEN);
	struct rpfs_stat st1, st2;
	struct names nm;
	rpfs_file_t *f;
	int ret;

	ck_assert(buf && back);
	ck_assert_msg(rpfs_mkdir(c, "/keep", 0755) == 0, "mkdir: %s", rpfs_errmsg());
	f = create(c, "/keep/data");
	fill(buf, RS_LEN, 42);
	write_all(f, buf, RS_LEN, 0);
	ck_assert_msg(rpfs_sync(f) == 0, "sync: %s", rpfs_errmsg());
	rpfs_close(f);
	ck_assert(rpfs_stat(c, "/keep/data", &st1) == 0);
	rpfs_finalize(c);

	ck_assert_msg(cl_stop_all(cl) == 0, "a server did not exit cleanly on SIGTERM");
	ck_assert_msg(cl_start_all(cl) == 0, "servers did not come back");

	c = client(cl);
	ret = rpfs_stat(c, "/keep", &st2);
	ck_assert_msg(ret == 0 && st2.type == RPFS_TYPE_DIR, "stat /keep: %s",
		      rpfs_errmsg());
	ret = rpfs_stat(c, "/keep/data", &st2);
	ck_assert_msg(ret == 0, "stat /keep/data: %s", rpfs_errmsg());
	ck_assert_uint_eq(st2.type, RPFS_TYPE_FILE);
	ck_assert_uint_eq(st2.handle, st1.handle);
	ck_assert_uint_eq(st2.size, RS_LEN);
	ck_assert_uint_eq(st2.stripe_unit, st1.stripe_unit);
	ck_assert_uint_eq(st2.stripe_count, st1.stripe_count);
	ck_assert_uint_eq(st2.first_server, st1.first_server);
	f = open_file(c, "/keep/data");
	read_all(f, back, RS_LEN, 0);
	ck_assert_msg(first_diff(buf, back, RS_LEN) < 0,
		      "data changed across the restart");
	rpfs_close(f);
	nm = list_dir(c, "/keep");
	ck_assert_msg(nm.n == 1 && strstr(nm.list, "data. "), "readdir /keep: %s",
		      nm.list);
	free(buf);
	free(back);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

#define KL_LEN (3 * MiB + 777)

START_TEST(test_synced_data_survives_kill9_of_io_server)
{
	struct cluster *cl = start(1, 0, NULL);
	rpfs_client_t *c = client(cl);
	char *buf = malloc(KL_LEN), *back = malloc(KL_LEN);
	rpfs_file_t *f;
	uint64_t size = 0;

	ck_assert(buf && back);
	f = create(c, "/durable");
	fill(buf, KL_LEN, 7);
	write_all(f, buf, KL_LEN, 0);
	ck_assert_msg(rpfs_sync(f) == 0, "sync: %s", rpfs_errmsg());
	rpfs_close(f);
	rpfs_finalize(c);

	/* Every server holds stripes of a 3 MiB file with 64 KiB units. */
	cl_kill(cl, 1);
	cl_kill(cl, 3);
	ck_assert_msg(cl_restart(cl, 1) == 0 && cl_restart(cl, 3) == 0,
		      "killed servers did not come back");

	c = client(cl);
	f = open_file(c, "/durable");
	ck_assert_msg(rpfs_getsize(f, &size) == 0, "getsize: %s", rpfs_errmsg());
	ck_assert_uint_eq(size, KL_LEN);
	read_all(f, back, KL_LEN, 0);
	long long d = first_diff(buf, back, KL_LEN);

	ck_assert_msg(d < 0, "synced data lost after kill -9: differs at %lld", d);
	rpfs_close(f);
	rpfs_finalize(c);
	free(buf);
	free(back);
	cl_destroy(cl);
}
END_TEST

/* The error names the failed server (e.g. "io server 2" and its port) and
 * comes within a bounded time. */
static void expect_named_failure(rpfs_file_t *f, char *buf, size_t len, uint64_t off,
				 int server, int port, const char *who)
{
	char portstr[16], name[32];
	double t0 = now_ms();
	ssize_t n = rpfs_pread(f, buf, len, off);
	double ms = now_ms() - t0;
	const char *msg = rpfs_errmsg();

	snprintf(portstr, sizeof(portstr), ":%d", port);
	snprintf(name, sizeof(name), "io server %d", server);
	ck_assert_msg(n < 0, "%s: read through a failed server returned %zd", who, n);
	ck_assert_msg(strstr(msg, name) && strstr(msg, portstr),
		      "%s: message does not name %s (port %d): \"%s\"", who, name, port,
		      msg);
	ck_assert_msg(ms < 10000, "%s: failed only after %.0f ms (timeout 3000)", who,
		      ms);
	fprintf(stderr, "%s: %.0f ms: %s\n", who, ms, msg);
}

START_TEST(test_dead_server_error_names_it_without_hanging)
{
	struct cluster *cl = start(1, 3000, NULL);
	rpfs_client_t *c = client(cl), *c2;
	size_t len = 8 * SU;
	char *buf = malloc(len);
	rpfs_file_t *f, *f2;
	struct rpfs_stat st;

	ck_assert(buf);
	f = create(c, "/victim");
	fill(buf, len, 3);
	write_all(f, buf, len, 0); /* connects to every server */
	cl_kill(cl, 2);
	expect_named_failure(f, buf, len, 0, 2, cl_port(cl, 2), "connected client");

	c2 = client(cl);
	f2 = open_file(c2, "/victim");
	expect_named_failure(f2, buf, len, 0, 2, cl_port(cl, 2), "new client");

	/* The other servers still serve their stripes (io server 0's here). */
	rpfs_file_attr(f2, &st);
	read_all(f2, buf, SU, ((NSRV - st.first_server) % NSRV) * SU);

	/* A hung server (stopped, its socket open) is caught by the timeout. */
	ck_assert(cl_signal(cl, 3, SIGSTOP) == 0);
	expect_named_failure(f2, buf, SU, ((3 + NSRV - st.first_server) % NSRV) * SU, 3,
			     cl_port(cl, 3), "hung server");
	ck_assert(cl_signal(cl, 3, SIGCONT) == 0);
	rpfs_close(f2);
	rpfs_finalize(c2);
	rpfs_close(f);
	rpfs_finalize(c);
	free(buf);
	cl_destroy(cl);
}
END_TEST

/* ---- namespace ---------------------------------------------------------- */

/* Regular files under a server directory (recursively), as "relpath" lines
 * in one string; LMDB's own files are not datafiles. */
static void list_files(const char *dir, const char *rel, char *out, size_t outlen)
{
	char path[2048];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char sub[1024];
		struct stat st;
		size_t nl = strlen(e->d_name);

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", e->d_name);
		snprintf(path, sizeof(path), "%s/%s", dir, sub);
		if (lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			list_files(dir, sub, out, outlen);
		} else if (S_ISREG(st.st_mode) &&
			   !(nl > 4 && !strcmp(e->d_name + nl - 4, ".mdb")) &&
			   !strstr(e->d_name, "lock")) {
			size_t used = strlen(out);

			snprintf(out + used, outlen - used, "%s\n", sub);
		}
	}
	closedir(d);
}

/* Lines of b that are not in a. */
static int count_new(const char *a, const char *b)
{
	int n = 0;
	const char *p = b;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = (size_t)(nl - p);
		const char *q = a;
		int found = 0;

		while (*q && !found) {
			const char *qn = strchr(q, '\n');

			found = (size_t)(qn - q) == len && !strncmp(q, p, len);
			q = qn + 1;
		}
		n += !found;
		p = nl + 1;
	}
	return n;
}

START_TEST(test_remove_deletes_datafiles)
{
	struct cluster *cl = start(1, 0, NULL);
	rpfs_client_t *c = client(cl);
	static char before[NSRV][8192], during[NSRV][8192], after[NSRV][8192];
	size_t len = 4 * SU * NSRV;
	char *buf = malloc(len);
	rpfs_file_t *f;
	struct rpfs_stat st;

	ck_assert(buf);
	for (int i = 0; i < NSRV; i++)
		list_files(cl_dir(cl, i), "", before[i], sizeof(before[i]));
	f = create(c, "/doomed");
	fill(buf, len, 5);
	write_all(f, buf, len, 0);
	ck_assert(rpfs_sync(f) == 0);
	rpfs_close(f);
	for (int i = 0; i < NSRV; i++) {
		list_files(cl_dir(cl, i), "", during[i], sizeof(during[i]));
		ck_assert_msg(count_new(before[i], during[i]) >= 1,
			      "no datafile appeared in %s after a write", cl_dir(cl, i));
	}
	ck_assert_msg(rpfs_remove(c, "/doomed") == 0, "remove: %s", rpfs_errmsg());
	ck_assert_int_eq(rpfs_stat(c, "/doomed", &st), -ENOENT);
	for (int i = 0; i < NSRV; i++) {
		list_files(cl_dir(cl, i), "", after[i], sizeof(after[i]));
		ck_assert_msg(count_new(before[i], after[i]) == 0,
			      "datafiles left in %s after remove:\n%s", cl_dir(cl, i),
			      after[i]);
	}
	free(buf);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_mkdir_readdir_rmdir_semantics)
{
	struct cluster *cl = start(1, 0, NULL);
	rpfs_client_t *c = client(cl);
	rpfs_file_t *f = NULL;
	struct rpfs_stat st;
	struct names nm;

	ck_assert_int_eq(rpfs_mkdir(c, "/d", 0755), 0);
	ck_assert_int_eq(rpfs_mkdir(c, "/d", 0755), -EEXIST);
	ck_assert_int_eq(rpfs_mkdir(c, "/nope/sub", 0755), -ENOENT);
	ck_assert_int_eq(rpfs_mkdir(c, "/d/sub", 0755), 0);
	f = create(c, "/d/f");
	rpfs_close(f);
	ck_assert_int_eq(rpfs_create(c, "/d/f", 0644, RPFS_O_EXCL, NULL, &f), -EEXIST);
	ck_assert_int_eq(rpfs_create(c, "/nope/f", 0644, 0, NULL, &f), -ENOENT);

	nm = list_dir(c, "/d");
	ck_assert_msg(nm.n == 2 && strstr(nm.list, "f. ") && strstr(nm.list, "sub/ "),
		      "readdir /d: %s", nm.list);
	nm = list_dir(c, "/");
	ck_assert_msg(strstr(nm.list, "d/ ") != NULL, "readdir /: %s", nm.list);
	nm = list_dir(c, "/d/sub");
	ck_assert_int_eq(nm.n, 0);

	ck_assert_int_eq(rpfs_rmdir(c, "/d"), -ENOTEMPTY);
	ck_assert_int_eq(rpfs_rmdir(c, "/nope"), -ENOENT);
	ck_assert_int_eq(rpfs_remove(c, "/nope"), -ENOENT);
	ck_assert_int_eq(rpfs_open(c, "/nope", RPFS_O_RDWR, &f), -ENOENT);
	ck_assert_int_eq(rpfs_stat(c, "/nope", &st), -ENOENT);
	ck_assert_int_eq(rpfs_readdir(c, "/nope", collect, &nm), -ENOENT);

	ck_assert_int_eq(rpfs_rmdir(c, "/d/sub"), 0);
	ck_assert_int_eq(rpfs_remove(c, "/d/f"), 0);
	ck_assert_int_eq(rpfs_stat(c, "/d/f", &st), -ENOENT);
	ck_assert_int_eq(rpfs_rmdir(c, "/d"), 0);
	ck_assert_int_eq(rpfs_stat(c, "/d", &st), -ENOENT);
	nm = list_dir(c, "/");
	ck_assert_msg(!strstr(nm.list, "d/ "), "readdir / after rmdir: %s", nm.list);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* rpfs_utimes sets both times to the nanosecond, and they stay; a write
 * after it, even at once, makes mtime and ctime the write's (the I/O
 * servers say when they last changed a datafile); a write before it no
 * longer counts (cp -p). */
START_TEST(test_utimes_sets_times_and_later_writes_move_mtime)
{
	struct cluster *cl = start(1, 0, NULL);
	rpfs_client_t *c = client(cl);
	rpfs_file_t *f = create(c, "/t");
	struct rpfs_stat st;
	struct timespec t0;
	int64_t before;

	ck_assert_int_eq(rpfs_pwrite(f, "x", 1, 0), 1);
	ck_assert_int_eq(rpfs_utimes(c, "/t", 1000000000123LL, 2000000000456LL), 0);
	ck_assert_int_eq(rpfs_stat(c, "/t", &st), 0);
	ck_assert_int_eq(st.atime, 1000000000123LL);
	ck_assert_int_eq(st.mtime, 2000000000456LL);
	clock_gettime(CLOCK_REALTIME, &t0);
	before = (int64_t)t0.tv_sec * 1000000000 + t0.tv_nsec;
	ck_assert_int_eq(rpfs_pwrite(f, "y", 1, 1), 1);
	ck_assert_int_eq(rpfs_stat(c, "/t", &st), 0);
	ck_assert_int_eq(st.atime, 1000000000123LL);
	ck_assert_int_ge(st.mtime, before);
	ck_assert_int_eq(st.ctime, st.mtime);
	ck_assert_int_eq(rpfs_truncate(f, 1), 0);
	before = st.mtime;
	ck_assert_int_eq(rpfs_stat(c, "/t", &st), 0);
	ck_assert_int_gt(st.mtime, before);
	ck_assert_int_eq(rpfs_utimes(c, "/nope", 0, 0), -ENOENT);
	rpfs_close(f);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* Paths hash over two metadata servers; the namespace must still look like
 * one tree. */
START_TEST(test_two_metadata_servers_share_the_namespace)
{
	struct cluster *cl = start(2, 0, NULL);
	rpfs_client_t *c = client(cl);
	char path[64], buf[4096], back[4096];
	struct rpfs_stat st;
	struct names nm;

	ck_assert_int_eq(rpfs_num_meta_servers(c), 2);
	ck_assert_int_eq(rpfs_num_io_servers(c), NSRV);
	for (int d = 0; d < 4; d++) {
		snprintf(path, sizeof(path), "/dir%d", d);
		ck_assert_msg(rpfs_mkdir(c, path, 0755) == 0, "mkdir %s: %s", path,
			      rpfs_errmsg());
		for (int i = 0; i < 8; i++) {
			rpfs_file_t *f;

			snprintf(path, sizeof(path), "/dir%d/file%d", d, i);
			f = create(c, path);
			fill(buf, sizeof(buf), (uint64_t)(d * 100 + i));
			write_all(f, buf, sizeof(buf), SU - 100);
			rpfs_close(f);
		}
	}
	for (int d = 0; d < 4; d++) {
		snprintf(path, sizeof(path), "/dir%d", d);
		nm = list_dir(c, path);
		ck_assert_msg(nm.n == 8, "readdir %s: %d entries: %s", path, nm.n,
			      nm.list);
		ck_assert_int_eq(rpfs_rmdir(c, path), -ENOTEMPTY);
		for (int i = 0; i < 8; i++) {
			rpfs_file_t *f;

			snprintf(path, sizeof(path), "/dir%d/file%d", d, i);
			ck_assert_msg(rpfs_stat(c, path, &st) == 0, "stat %s: %s", path,
				      rpfs_errmsg());
			ck_assert_uint_eq(st.size, SU - 100 + sizeof(buf));
			f = open_file(c, path);
			read_all(f, back, sizeof(back), SU - 100);
			fill(buf, sizeof(buf), (uint64_t)(d * 100 + i));
			ck_assert(memcmp(buf, back, sizeof(buf)) == 0);
			rpfs_close(f);
			ck_assert_int_eq(rpfs_remove(c, path), 0);
		}
		snprintf(path, sizeof(path), "/dir%d", d);
		ck_assert_int_eq(rpfs_rmdir(c, path), 0);
	}
	nm = list_dir(c, "/");
	ck_assert_msg(nm.n == 0, "root not empty: %s", nm.list);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* Nonblocking requests: the data moves while the caller computes without
 * calling librpfs (the progress thread), closing a file with requests in
 * flight loses nothing and the requests can still be waited for, and a
 * program that ends without waiting loses nothing either. */
#define NB_LEN (24 * MiB)

static void busy_ms(double ms)
{
	double end = now_ms() + ms;
	volatile double x = 1;

	while (now_ms() < end)
		x = x * 1.0000001 + 1e-9;
}

START_TEST(test_requests_move_data_without_calls_and_survive_close)
{
	struct cluster *cl = start(1, 0, NULL);
	rpfs_client_t *c = client(cl);
	char *a = malloc(NB_LEN), *b = malloc(NB_LEN);
	rpfs_request_t *w, *r;
	rpfs_file_t *f;
	double t0, tblock, twait;

	ck_assert(a && b);
	fill(a, NB_LEN, 42);
	f = create(c, "/nb");
	t0 = now_ms();
	write_all(f, a, NB_LEN, 0);
	tblock = now_ms() - t0;

	/* Posted, then nothing but computing: the wait finds the work done. */
	ck_assert_int_eq(rpfs_ipwrite(f, a, NB_LEN, NB_LEN, &w), 0);
	busy_ms(3 * tblock + 100);
	t0 = now_ms();
	ck_assert_int_eq(rpfs_wait(w), (ssize_t)NB_LEN);
	twait = now_ms() - t0;
	ck_assert_msg(
		twait < tblock / 2 + 5,
		"the wait after computing took %.1f ms of the blocking write's %.1f ms: the data did not move meanwhile",
		twait, tblock);

	/* Waited for in bounded steps, as the ROMIO driver's MPI_Wait loop
	 * does: a step that times out leaves the request to the next, the
	 * last one returns the result and frees it. */
	{
		int done = 0, steps = 0;
		ssize_t got = -1;

		memset(b, 0, NB_LEN);
		ck_assert_int_eq(rpfs_ipread(f, b, NB_LEN, NB_LEN, &r), 0);
		ck_assert_int_eq(rpfs_timedwait(r, 0, &done, &got), 0);
		while (!done && steps++ < 60000)
			ck_assert_int_eq(rpfs_timedwait(r, 1000, &done, &got), 0);
		ck_assert_msg(done, "not done after %d bounded waits of 1 ms", steps);
		ck_assert_int_eq(got, (ssize_t)NB_LEN);
		ck_assert_msg(first_diff(a, b, NB_LEN) < 0,
			      "read by bounded waits: wrong data");
	}

	/* Closed with a write and a read in flight: both complete, and their
	 * requests are still there to be waited for. */
	ck_assert_int_eq(rpfs_ipwrite(f, a, NB_LEN, 2 * (uint64_t)NB_LEN, &w), 0);
	memset(b, 0, NB_LEN);
	ck_assert_int_eq(rpfs_ipread(f, b, NB_LEN, NB_LEN, &r), 0);
	rpfs_close(f);
	ck_assert_int_eq(rpfs_wait(w), (ssize_t)NB_LEN);
	ck_assert_int_eq(rpfs_wait(r), (ssize_t)NB_LEN);
	ck_assert_msg(first_diff(a, b, NB_LEN) < 0,
		      "read in flight at close: wrong data");

	/* Finalized with a write nobody waits for: it lands first. */
	f = open_file(c, "/nb");
	ck_assert_int_eq(rpfs_ipwrite(f, a, NB_LEN, 3 * (uint64_t)NB_LEN, &w), 0);
	rpfs_finalize(c);

	c = client(cl);
	f = open_file(c, "/nb");
	for (int k = 0; k < 4; k++) {
		memset(b, 0, NB_LEN);
		read_all(f, b, NB_LEN, (uint64_t)k * NB_LEN);
		ck_assert_msg(first_diff(a, b, NB_LEN) < 0, "block %d differs", k);
	}
	rpfs_close(f);
	rpfs_finalize(c);
	free(a);
	free(b);
	cl_destroy(cl);
}
END_TEST

static Suite *fileservice_suite(void)
{
	Suite *s = suite_create("fileservice");
	TCase *tc;

	tc = tcase_create("data");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_sizes_cross_stripes_auto_path);
	tcase_add_loop_test(tc, test_sizes_forced_path, 0, 3);
	tcase_add_test(tc, test_random_list_io_matches_oracle);
	tcase_add_test(tc, test_requests_move_data_without_calls_and_survive_close);
	suite_add_tcase(s, tc);

	tc = tcase_create("concurrency");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_concurrent_clients_see_each_others_blocks);
	tcase_add_test(tc, test_overlapping_writers_never_mix_within_a_write);
	suite_add_tcase(s, tc);

	tc = tcase_create("failures");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_restart_all_servers_keeps_metadata_and_data);
	tcase_add_test(tc, test_synced_data_survives_kill9_of_io_server);
	tcase_add_test(tc, test_dead_server_error_names_it_without_hanging);
	suite_add_tcase(s, tc);

	/* Decided above the transport: the verbs VM leaves it out
	 * (CK_EXCLUDE_TAGS=above-transport, test/verbs/run-verbs-suites.sh). */
	tc = tcase_create("namespace");
	tcase_set_tags(tc, "above-transport");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_remove_deletes_datafiles);
	tcase_add_test(tc, test_mkdir_readdir_rmdir_semantics);
	tcase_add_test(tc, test_two_metadata_servers_share_the_namespace);
	tcase_add_test(tc, test_utimes_sets_times_and_later_writes_move_mtime);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return cl_run_suite(argc, argv, fileservice_suite);
}
