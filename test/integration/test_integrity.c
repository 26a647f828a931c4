/* Storage integrity: lost or damaged storage is an error that names the
 * server, the file and the offset, never zeros or garbage; the metadata
 * store's loss or damage stops its server with a message; rpfsd --check
 * finds every kind of damage. rpfsd servers on loopback (cluster.h): 4
 * servers, server 0 metadata + I/O, stripe unit 64 KiB. What is specified:
 *   - a flipped bit in a datafile fails the reads of its block with "io
 *     server N (host:port): /path: damaged data at offset X" (X the file's
 *     offset); other blocks read fine; a write of part of the block is
 *     refused, a write of all of it heals it;
 *   - a deleted datafile, an emptied data directory, a datafile cut short:
 *     errors naming server and file, for reads, writes and sizes;
 *   - holes never written read as zeros;
 *   - a create with an I/O server of its layout down fails naming the
 *     cause and leaves nothing behind; a handle that already has a
 *     datafile anywhere is skipped, never shared;
 *   - a metadata server whose store is lost refuses to start (naming the
 *     I/O servers that hold its handles' datafiles, or the one it could
 *     not ask) unless --accept-empty-metadata, and then never hands out
 *     an old handle;
 *   - a truncated or corrupt store: a message and exit status 1, never a
 *     signal, in the foreground and with --daemon (the parent prints it);
 *   - rpfsd --check reports each kind of damage on its own line, exits 1,
 *     and --repair fixes orphans and indexes but not data (that takes
 *     --accept-damaged);
 *   - concurrent writers of overlapping, unaligned ranges of the same
 *     blocks from several clients, with a reader alongside, keep every
 *     block's checksum right; a server killed mid-write reads back whole.
 * Worker processes are forked before they open a client. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "meta_attr.h"
#include "meta_record.h"
#include "rpfs.h"
#include "testkit.h"
#include "wire.h"

#define KiB  1024ull
#define MiB  (1024ull * 1024)
#define SU   (64 * KiB)
#define NSRV 4
#define BLK  4096ull

/* ---- helpers ----------------------------------------------------------- */

static struct cluster *start(int timeout_ms)
{
	struct cl_opts o = {.nservers = NSRV,
			    .nmeta = 1,
			    .stripe_unit = SU,
			    .timeout_ms = timeout_ms};
	struct cluster *cl = cl_start(&o);

	ck_assert_msg(cl, "couldn't start %d servers (see stderr)", NSRV);
	return cl;
}

/* Write len bytes of pattern seed at 0 and sync; the file's attributes. */
static struct rpfs_stat put_file(rpfs_client_t *c, const char *path, size_t len,
				 uint64_t seed, const struct rpfs_create_opts *o)
{
	rpfs_file_t *f = create_opts(c, path, o);
	char *buf = malloc(len);
	struct rpfs_stat st;

	ck_assert(buf);
	fill(buf, len, seed);
	write_all(f, buf, len, 0);
	ck_assert_msg(rpfs_sync(f) == 0, "sync %s: %s", path, rpfs_errmsg());
	rpfs_file_attr(f, &st);
	rpfs_close(f);
	free(buf);
	return st;
}

/* The whole file reads back as written. */
static void expect_intact(rpfs_client_t *c, const char *path, size_t len, uint64_t seed)
{
	rpfs_file_t *f = open_file(c, path);
	char *a = malloc(len), *b = malloc(len);

	ck_assert(a && b);
	read_all(f, a, len, 0);
	fill(b, len, seed);
	ck_assert_msg(!memcmp(a, b, len), "%s: data differs", path);
	free(a);
	free(b);
	rpfs_close(f);
}

/* Which I/O server holds logical offset off, and where in its datafile. */
static void locate(const struct rpfs_stat *st, uint64_t off, int *io, uint64_t *local)
{
	uint64_t stripe = off / st->stripe_unit;

	*io = (int)((st->first_server + stripe % st->stripe_count) % NSRV);
	*local = stripe / st->stripe_count * st->stripe_unit + off % st->stripe_unit;
}

static void datafile(struct cluster *cl, int io, uint64_t handle, const char *suffix,
		     char *buf, size_t len)
{
	snprintf(buf, len, "%s/data/%016llx%s", cl_dir(cl, io),
		 (unsigned long long)handle, suffix);
}

static void flip_bit(const char *path, uint64_t off)
{
	int fd = open(path, O_RDWR);
	unsigned char b;

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert(pread(fd, &b, 1, (off_t)off) == 1);
	b ^= 0x10;
	ck_assert(pwrite(fd, &b, 1, (off_t)off) == 1);
	close(fd);
}

static bool has(const char *hay, const char *needle)
{
	return strstr(hay, needle) != NULL;
}

/* The access fails, and its message holds every one of needles (NULL
 * ends the list). */
static void expect_error(ssize_t n, const char *what, const char *needles[])
{
	const char *msg = rpfs_errmsg();

	ck_assert_msg(n < 0, "%s: succeeded (%zd), expected an error", what, n);
	for (int i = 0; needles[i]; i++)
		ck_assert_msg(has(msg, needles[i]), "%s: message lacks \"%s\": \"%s\"",
			      what, needles[i], msg);
	fprintf(stderr, "%s: %s\n", what, msg);
}

static void server_name(struct cluster *cl, int io, char *name, size_t nlen, char *port,
			size_t plen)
{
	snprintf(name, nlen, "io server %d", io);
	snprintf(port, plen, ":%d", cl_port(cl, io));
}

static const char *rpfsd_path(void)
{
	const char *p = getenv("RPFSD");

	return p && *p ? p : "./rpfsd";
}

/* Run rpfsd as server i with up to three more arguments; wait up to ms for
 * it to exit, its output (stdout and stderr) in out. Returns its wait
 * status, or -1 if it was still running then (it is stopped). */
static int run_rpfsd(struct cluster *cl, int i, const char *a1, const char *a2,
		     const char *a3, char *out, size_t outlen, int ms)
{
	char name[16];
	int pfd[2], status = -1;
	size_t got = 0;
	pid_t pid;

	snprintf(name, sizeof(name), "%d", i);
	ck_assert(pipe(pfd) == 0);
	fflush(NULL);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		signal(SIGTERM, SIG_DFL);
		execl(rpfsd_path(), "rpfsd", "--config", cl_config(cl), "--name", name,
		      a1, a2, a3, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	for (double t0 = now_ms();;) {
		ssize_t n;

		while (got < outlen - 1 &&
		       (n = read(pfd[0], out + got, outlen - 1 - got)) > 0)
			got += (size_t)n;
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		if (now_ms() - t0 >= ms) {
			kill(pid, SIGTERM);
			waitpid(pid, NULL, 0);
			status = -1;
			break;
		}
		usleep(10000);
	}
	usleep(50000);
	for (ssize_t n;
	     got < outlen - 1 && (n = read(pfd[0], out + got, outlen - 1 - got)) > 0;)
		got += (size_t)n;
	out[got] = 0;
	close(pfd[0]);
	return status;
}

/* rpfsd failed to start the way it should: exit status 1, no signal. */
static void expect_exit1(int status, const char *out, const char *what)
{
	ck_assert_msg(status != -1, "%s: rpfsd started; output:\n%s", what, out);
	ck_assert_msg(!WIFSIGNALED(status), "%s: rpfsd died of %s; output:\n%s", what,
		      strsignal(WTERMSIG(status)), out);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1,
		      "%s: exit status %d, expected 1; output:\n%s", what,
		      WEXITSTATUS(status), out);
	fprintf(stderr, "%s: exit 1: %s", what, out);
}

static int rm_tree_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char p[1024];

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		n += unlink(p) == 0;
	}
	closedir(d);
	return n;
}

/* ---- damaged and lost data --------------------------------------------- */

#define FL_LEN (1 * MiB)

START_TEST(test_flipped_bit_is_named_with_server_file_and_offset)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	struct rpfs_stat st = put_file(c, "/flip", FL_LEN, 11, NULL);
	uint64_t bad = 5 * SU + 3 * BLK + 1000, local, blk = bad & ~(BLK - 1);
	char path[1024], name[32], port[16], want[64], *buf = malloc(FL_LEN);
	rpfs_file_t *f;
	int io;

	ck_assert(buf);
	locate(&st, bad, &io, &local);
	datafile(cl, io, st.handle, "", path, sizeof(path));
	flip_bit(path, local);
	server_name(cl, io, name, sizeof(name), port, sizeof(port));

	f = open_file(c, "/flip");
	snprintf(want, sizeof(want), "damaged data at offset %llu",
		 (unsigned long long)blk);
	expect_error(rpfs_pread(f, buf, FL_LEN, 0), "read of the whole file",
		     (const char *[]){name, port, "/flip", want, NULL});
	/* Part of the damaged block, after the flipped byte: still refused,
	 * the offset is where the read starts. */
	snprintf(want, sizeof(want), "damaged data at offset %llu",
		 (unsigned long long)(bad + 100));
	expect_error(rpfs_pread(f, buf, 200, bad + 100), "read of part of the block",
		     (const char *[]){name, port, "/flip", want, NULL});

	/* Everything else reads fine: the next block, the rest of the stripe,
	 * other servers. */
	char *want_data = malloc(FL_LEN);

	ck_assert(want_data);
	fill(want_data, FL_LEN, 11);
	read_all(f, buf, BLK, blk + BLK);
	ck_assert(!memcmp(buf, want_data + blk + BLK, BLK));
	read_all(f, buf, 5 * SU, 0);
	ck_assert(!memcmp(buf, want_data, 5 * SU));
	read_all(f, buf, FL_LEN - 6 * SU, 6 * SU);
	ck_assert(!memcmp(buf, want_data + 6 * SU, FL_LEN - 6 * SU));

	/* A write of part of the block would bless the damage: refused. A
	 * write of the whole block replaces it. */
	snprintf(want, sizeof(want), "damaged data at offset");
	expect_error(rpfs_pwrite(f, want_data, 10, blk + 5), "write of part of the block",
		     (const char *[]){name, "/flip", want, NULL});
	write_all(f, want_data + blk, BLK, blk);
	read_all(f, buf, FL_LEN, 0);
	ck_assert(!memcmp(buf, want_data, FL_LEN));
	free(want_data);
	free(buf);
	rpfs_close(f);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_deleted_datafile_is_an_error_not_zeros)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	struct rpfs_stat st = put_file(c, "/del", 8 * SU, 12, NULL);
	char path[1024], name[32], port[16], buf[4096];
	uint64_t local, size;
	rpfs_file_t *f;
	int io;

	locate(&st, 2 * SU, &io, &local);
	datafile(cl, io, st.handle, "", path, sizeof(path));
	ck_assert(unlink(path) == 0);
	server_name(cl, io, name, sizeof(name), port, sizeof(port));
	f = open_file(c, "/del");
	expect_error(rpfs_pread(f, buf, sizeof(buf), 2 * SU), "read",
		     (const char *[]){name, port, "/del", "datafile missing", NULL});
	expect_error(rpfs_pwrite(f, buf, sizeof(buf), 2 * SU), "write",
		     (const char *[]){name, "/del", "datafile missing", NULL});
	expect_error(rpfs_getsize(f, &size), "size",
		     (const char *[]){name, "/del", "datafile missing", NULL});
	/* The other servers' stripes still read. */
	read_all(f, buf, sizeof(buf), 3 * SU);
	rpfs_close(f);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_emptied_io_directory_gives_errors)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	char dir[1024], name[32], port[16], *all = malloc(8 * SU);
	rpfs_file_t *f;

	ck_assert(all);
	put_file(c, "/e1", 8 * SU, 21, NULL);
	put_file(c, "/e2", 8 * SU, 22, NULL);
	server_name(cl, 2, name, sizeof(name), port, sizeof(port));
	snprintf(dir, sizeof(dir), "%s/data", cl_dir(cl, 2));

	/* While it runs: open descriptors must not serve deleted files. */
	ck_assert(rm_tree_files(dir) >= 4);
	for (int k = 0; k < 2; k++) {
		const char *p = k ? "/e2" : "/e1";

		/* All 8 stripes: two of them are on server 2. */
		f = open_file(c, p);
		expect_error(rpfs_pread(f, all, 8 * SU, 0), p,
			     (const char *[]){name, port, p, "datafile missing", NULL});
		rpfs_close(f);
	}
	/* After a restart on the empty directory: the same. */
	rpfs_finalize(c);
	ck_assert(cl_restart(cl, 2) == 0);
	c = client(cl);
	f = open_file(c, "/e1");
	expect_error(rpfs_pread(f, all, 8 * SU, 0), "after restart",
		     (const char *[]){name, "/e1", "datafile missing", NULL});
	rpfs_close(f);
	/* New files still work there. */
	put_file(c, "/e3", 8 * SU, 23, NULL);
	expect_intact(c, "/e3", 8 * SU, 23);
	free(all);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_truncated_datafile_is_damage)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	/* 10 stripes: servers first .. first+1 hold 3, the last is stripe 9. */
	struct rpfs_stat st = put_file(c, "/cut", 10 * SU, 31, NULL);
	char path[1024], name[32], port[16], want[64], *buf = malloc(10 * SU);
	uint64_t local, size;
	rpfs_file_t *f;
	int io;

	ck_assert(buf);
	/* Cut the datafile holding the last stripe to the middle of it. */
	locate(&st, 9 * SU, &io, &local);
	datafile(cl, io, st.handle, "", path, sizeof(path));
	ck_assert(truncate(path, (off_t)(local + SU / 2)) == 0);
	server_name(cl, io, name, sizeof(name), port, sizeof(port));
	f = open_file(c, "/cut");
	/* The size would silently shrink: it is an error. */
	expect_error(rpfs_getsize(f, &size), "size of a cut file",
		     (const char *[]){name, port, "/cut", "damaged data", NULL});
	snprintf(want, sizeof(want), "damaged data at offset %llu",
		 (unsigned long long)(9 * SU + SU / 2));
	expect_error(rpfs_pread(f, buf, SU, 9 * SU), "read of the lost half",
		     (const char *[]){name, "/cut", want, NULL});
	read_all(f, buf, SU / 2, 9 * SU);
	/* Cut another one to nothing. */
	locate(&st, 4 * SU, &io, &local);
	datafile(cl, io, st.handle, "", path, sizeof(path));
	ck_assert(truncate(path, 0) == 0);
	server_name(cl, io, name, sizeof(name), port, sizeof(port));
	snprintf(want, sizeof(want), "damaged data at offset %llu",
		 (unsigned long long)(4 * SU));
	expect_error(rpfs_pread(f, buf, SU, 4 * SU), "read of an emptied datafile",
		     (const char *[]){name, "/cut", want, NULL});
	free(buf);
	rpfs_close(f);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_holes_read_as_zeros)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	rpfs_file_t *f = create(c, "/holes");
	size_t len = 3 * MiB + 10;
	char *buf = malloc(len), *zero = calloc(1, len);
	uint64_t size;

	ck_assert(buf && zero);
	write_all(f, "0123456789", 10, 3 * MiB);
	read_all(f, buf, len, 0);
	ck_assert(!memcmp(buf, zero, 3 * MiB));
	ck_assert(!memcmp(buf + 3 * MiB, "0123456789", 10));
	/* A partial write into a block of a hole, then the rest of it. */
	write_all(f, "abc", 3, 5 * BLK + 7);
	read_all(f, buf, 2 * BLK, 5 * BLK - BLK / 2);
	ck_assert(!memcmp(buf, zero, BLK / 2 + 7));
	ck_assert(!memcmp(buf + BLK / 2 + 7, "abc", 3));
	ck_assert(!memcmp(buf + BLK / 2 + 10, zero, 2 * BLK - BLK / 2 - 10));
	/* Growing by truncate: zeros; shrinking into a block and growing
	 * again: zeros past the cut. */
	ck_assert(rpfs_truncate(f, 4 * MiB) == 0);
	read_all(f, buf, MiB, 3 * MiB);
	ck_assert(!memcmp(buf, "0123456789", 10));
	ck_assert(!memcmp(buf + 10, zero, MiB - 10));
	ck_assert(rpfs_truncate(f, 3 * MiB + 4) == 0);
	ck_assert(rpfs_getsize(f, &size) == 0 && size == 3 * MiB + 4);
	ck_assert(rpfs_truncate(f, 3 * MiB + 100) == 0);
	read_all(f, buf, 100, 3 * MiB);
	ck_assert(!memcmp(buf, "0123", 4));
	ck_assert(!memcmp(buf + 4, zero, 96));
	free(buf);
	free(zero);
	rpfs_close(f);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* ---- creation ------------------------------------------------------------ */

/* Datafiles and checksum files in server i's data directory. */
static int count_files(struct cluster *cl, int i)
{
	char dir[1024];
	DIR *d;
	struct dirent *e;
	int n = 0;

	snprintf(dir, sizeof(dir), "%s/data", cl_dir(cl, i));
	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

START_TEST(test_create_fails_cleanly_when_an_io_server_is_down)
{
	struct cluster *cl = start(2000);
	rpfs_client_t *c = client(cl);
	struct rpfs_create_opts on01 = {0, 2, 0}, all4 = {0, 4, -1};
	int before[NSRV], ret;
	struct rpfs_stat st;
	rpfs_file_t *f = NULL;

	put_file(c, "/before", 4 * SU, 70, NULL);
	ck_assert(cl_stop(cl, 3) == 0);
	for (int i = 0; i < 3; i++)
		before[i] = count_files(cl, i);
	/* Asked to be striped over all four: refused, named, and nothing
	 * left behind. */
	ret = rpfs_create(c, "/down", 0644, 0, &all4, &f);
	expect_error(ret, "create on 4 servers with io server 3 down",
		     (const char *[]){"meta server 0", "/down", "io server 3",
				      "unreachable", NULL});
	ck_assert_int_eq(rpfs_stat(c, "/down", &st), -ENOENT);
	for (int i = 0; i < 3; i++)
		ck_assert_msg(count_files(cl, i) == before[i],
			      "server %d kept files of the failed create", i);
	/* The cluster's default layout: the three that are up. */
	st = put_file(c, "/default", 3 * SU, 73, NULL);
	ck_assert_uint_eq(st.stripe_count, 3);
	ck_assert_uint_eq(st.first_server, 0);
	expect_intact(c, "/default", 3 * SU, 73);
	/* A layout without it is fine. */
	put_file(c, "/up", 2 * SU, 71, &on01);
	expect_intact(c, "/up", 2 * SU, 71);
	/* Back up: the name is free. */
	ck_assert(cl_restart(cl, 3) == 0);
	put_file(c, "/down", 4 * SU, 72, &all4);
	expect_intact(c, "/down", 4 * SU, 72);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_handles_with_datafiles_are_skipped_never_shared)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	struct rpfs_stat last = put_file(c, "/h1", SU, 80, NULL), st;
	char path[1024], *buf = malloc(4 * SU), *zero = calloc(1, 4 * SU);
	rpfs_file_t *f;

	ck_assert(buf && zero);
	/* Leftovers of the next five handles on server 2, as a lost store
	 * or an older one would leave them. */
	for (uint64_t h = last.handle + 1; h <= last.handle + 5; h++) {
		int fd;

		datafile(cl, 2, h, "", path, sizeof(path));
		fd = open(path, O_CREAT | O_WRONLY, 0600);
		ck_assert(fd >= 0 && write(fd, "old data", 8) == 8);
		close(fd);
		datafile(cl, 2, h, ".sum", path, sizeof(path));
		ck_assert(close(open(path, O_CREAT | O_WRONLY, 0600)) == 0);
	}
	f = create(c, "/h2");
	rpfs_file_attr(f, &st);
	ck_assert_msg(st.handle > last.handle + 5,
		      "new handle %#llx, leftovers up to %#llx",
		      (unsigned long long)st.handle, (unsigned long long)last.handle + 5);
	read_all(f, buf, 4 * SU, 0);
	ck_assert(!memcmp(buf, zero, 4 * SU));
	rpfs_close(f);
	put_file(c, "/h3", 4 * SU, 81, NULL);
	expect_intact(c, "/h3", 4 * SU, 81);
	/* The leftovers are untouched. */
	datafile(cl, 2, last.handle + 3, "", path, sizeof(path));
	{
		struct stat sb;

		ck_assert(stat(path, &sb) == 0 && sb.st_size == 8);
	}
	free(buf);
	free(zero);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* ---- the metadata store -------------------------------------------------- */

static void wipe_store(struct cluster *cl)
{
	char dir[1024];

	snprintf(dir, sizeof(dir), "%s/meta", cl_dir(cl, 0));
	ck_assert(rm_tree_files(dir) >= 1);
}

START_TEST(test_lost_metadata_store_refuses_to_start)
{
	struct cluster *cl = start(2000);
	rpfs_client_t *c = client(cl);
	char out[8192], *buf = malloc(4 * SU), *zero = calloc(1, 4 * SU);
	struct rpfs_stat old[8], st;
	rpfs_file_t *f;
	int status;

	ck_assert(buf && zero);
	for (int i = 0; i < 8; i++) {
		char p[32];

		snprintf(p, sizeof(p), "/old%d", i);
		old[i] = put_file(c, p, 4 * SU, 40 + (uint64_t)i, NULL);
	}
	rpfs_finalize(c);
	ck_assert(cl_stop(cl, 0) == 0);
	wipe_store(cl);

	status = run_rpfsd(cl, 0, "--foreground", NULL, NULL, out, sizeof(out), 15000);
	expect_exit1(status, out, "lost store");
	ck_assert_msg(has(out, "is empty") && has(out, "io server 1") &&
			      has(out, "datafiles") &&
			      has(out, "--accept-empty-metadata"),
		      "message: %s", out);
	/* The same with --daemon: the parent says it on stderr. */
	status = run_rpfsd(cl, 0, "--daemon", NULL, NULL, out, sizeof(out), 15000);
	expect_exit1(status, out, "lost store, --daemon");
	ck_assert_msg(has(out, "is empty") && has(out, "--accept-empty-metadata"),
		      "message: %s", out);

	/* An I/O server that can't be asked: refused too, and named. */
	ck_assert(cl_stop(cl, 3) == 0);
	status = run_rpfsd(cl, 0, "--foreground", NULL, NULL, out, sizeof(out), 15000);
	expect_exit1(status, out, "lost store, an I/O server down");
	ck_assert_msg(has(out, "io server 3") && has(out, "did not answer"),
		      "message: %s", out);
	ck_assert(cl_restart(cl, 3) == 0);

	/* Accepted: new files never get an old handle, never old data. */
	ck_assert(cl_restart_with(cl, 0, "--accept-empty-metadata") == 0);
	c = client(cl);
	for (int i = 0; i < 8; i++) {
		char p[32];

		snprintf(p, sizeof(p), "/new%d", i);
		f = create(c, p);
		rpfs_file_attr(f, &st);
		for (int k = 0; k < 8; k++)
			ck_assert_msg(st.handle != old[k].handle, "handle %#llx reused",
				      (unsigned long long)st.handle);
		read_all(f, buf, 4 * SU, 0);
		ck_assert_msg(!memcmp(buf, zero, 4 * SU), "a new file shows old data");
		rpfs_close(f);
	}
	rpfs_finalize(c);
	/* The store is not empty any more: a plain restart works. */
	ck_assert(cl_restart(cl, 0) == 0);
	free(buf);
	free(zero);
	cl_destroy(cl);
}
END_TEST

/* Enough entries that the store spans many pages. */
static void fill_store(struct cluster *cl, int n)
{
	rpfs_client_t *c = client(cl);

	for (int i = 0; i < n; i++) {
		char p[64];

		snprintf(p, sizeof(p), "/d%d", i);
		ck_assert_msg(rpfs_mkdir(c, p, 0755) == 0, "mkdir: %s", rpfs_errmsg());
	}
	put_file(c, "/f", SU, 5, NULL);
	rpfs_finalize(c);
}

static off_t store_size(struct cluster *cl, char *path, size_t len)
{
	struct stat st;

	snprintf(path, len, "%s/meta/data.mdb", cl_dir(cl, 0));
	ck_assert(stat(path, &st) == 0);
	return st.st_size;
}

/* The bytes of the store up to LMDB's last page (the file is longer: the
 * server keeps a reserve allocated past it, server/meta_reserve.c). */
static off_t store_used(struct cluster *cl)
{
	char dir[1024];
	MDB_envinfo info;
	MDB_env *env;
	MDB_stat st;

	snprintf(dir, sizeof(dir), "%s/meta", cl_dir(cl, 0));
	ck_assert(mdb_env_create(&env) == 0);
	ck_assert(mdb_env_set_maxdbs(env, 4) == 0);
	ck_assert(mdb_env_open(env, dir, MDB_RDONLY | MDB_NOLOCK, 0600) == 0);
	ck_assert(mdb_env_info(env, &info) == 0);
	ck_assert(mdb_env_stat(env, &st) == 0);
	mdb_env_close(env);
	return (off_t)(info.me_last_pgno + 1) * st.ms_psize;
}

START_TEST(test_truncated_metadata_store_is_a_message_not_sigbus)
{
	struct cluster *cl = start(0);
	char path[1024], out[8192];
	off_t size;
	int status;

	fill_store(cl, 400);
	ck_assert(cl_stop(cl, 0) == 0);
	store_size(cl, path, sizeof(path));
	size = store_used(cl);
	ck_assert_msg(size >= 8 * 4096, "store only %lld bytes", (long long)size);
	ck_assert(truncate(path, size / 2) == 0);

	status = run_rpfsd(cl, 0, "--foreground", NULL, NULL, out, sizeof(out), 15000);
	expect_exit1(status, out, "truncated store");
	ck_assert_msg(has(out, "truncated") && has(out, "data.mdb"), "message: %s", out);
	status = run_rpfsd(cl, 0, "--daemon", NULL, NULL, out, sizeof(out), 15000);
	expect_exit1(status, out, "truncated store, --daemon");
	ck_assert_msg(has(out, "truncated") && has(out, "data.mdb"), "message: %s", out);
	status = run_rpfsd(cl, 0, "--check", NULL, NULL, out, sizeof(out), 15000);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1 &&
			      has(out, "truncated"),
		      "--check: status %d: %s", status, out);

	ck_assert(truncate(path, 0) == 0);
	status = run_rpfsd(cl, 0, "--foreground", NULL, NULL, out, sizeof(out), 15000);
	expect_exit1(status, out, "store cut to nothing");
	ck_assert_msg(has(out, "empty (0 bytes)"), "message: %s", out);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_corrupt_metadata_store_is_a_message_not_sigbus)
{
	struct cluster *cl = start(0);
	char path[1024], out[8192];
	off_t size;
	int fd, status;

	fill_store(cl, 400);
	ck_assert(cl_stop(cl, 0) == 0);
	size = store_size(cl, path, sizeof(path));
	/* Garbage over every page but the two meta pages. */
	fd = open(path, O_RDWR);
	ck_assert(fd >= 0);
	for (off_t off = 2 * 4096; off < size; off += 4096) {
		char junk[4096];

		fill(junk, sizeof(junk), (uint64_t)off);
		ck_assert(pwrite(fd, junk, sizeof(junk), off) == (ssize_t)sizeof(junk));
	}
	close(fd);
	status = run_rpfsd(cl, 0, "--foreground", NULL, NULL, out, sizeof(out), 15000);
	expect_exit1(status, out, "garbled pages");
	ck_assert_msg(has(out, "damaged") && has(out, "data.mdb"), "message: %s", out);
	status = run_rpfsd(cl, 0, "--daemon", NULL, NULL, out, sizeof(out), 15000);
	expect_exit1(status, out, "garbled pages, --daemon");
	ck_assert_msg(has(out, "damaged"), "message: %s", out);

	/* Garbage over the meta pages too. */
	fd = open(path, O_RDWR);
	ck_assert(fd >= 0);
	for (off_t off = 0; off < 2 * 4096; off += 4096) {
		char junk[4096];

		fill(junk, sizeof(junk), (uint64_t)off + 1);
		ck_assert(pwrite(fd, junk, sizeof(junk), off) == (ssize_t)sizeof(junk));
	}
	close(fd);
	status = run_rpfsd(cl, 0, "--foreground", NULL, NULL, out, sizeof(out), 15000);
	expect_exit1(status, out, "garbled meta pages");
	ck_assert_msg(has(out, "damaged") && has(out, "data.mdb"), "message: %s", out);
	cl_destroy(cl);
}
END_TEST

/* ---- rpfsd --check --------------------------------------------------------- */

#define MF_LEN		  (16 * MiB)
#define ATTR_SIZE	  META_ATTR_SIZE /* a stored entry before its path */
#define ATTR_FIRST_SERVER 76		 /* its layout's first server (meta_attr.h) */

/* Does ns value v hold path's entry (its attributes, then the path, end
 * the value whatever header comes before)? */
static bool value_is_of(const MDB_val *v, const char *path)
{
	size_t plen = strlen(path);

	/* The attributes end in zeros: no longer path ends with this one. */
	return v->mv_size >= ATTR_SIZE + plen &&
	       !memcmp((char *)v->mv_data + v->mv_size - plen, path, plen) &&
	       ((char *)v->mv_data)[v->mv_size - plen - 1] == 0;
}

/* Delete from server 0's store what a crash or a bug could leave out:
 * the byhandle record of path (index), or its entry and record both. */
static void store_forget(struct cluster *cl, const char *path, bool entry)
{
	char dir[1024];
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi ns, byh;
	MDB_cursor *cur;
	MDB_val k, v;
	size_t plen = strlen(path);
	int found = 0;

	snprintf(dir, sizeof(dir), "%s/meta", cl_dir(cl, 0));
	ck_assert(mdb_env_create(&env) == 0);
	ck_assert(mdb_env_set_maxdbs(env, 4) == 0);
	ck_assert(mdb_env_set_mapsize(env, 1ull << 30) == 0);
	ck_assert(mdb_env_open(env, dir, 0, 0600) == 0);
	ck_assert(mdb_txn_begin(env, NULL, 0, &txn) == 0);
	ck_assert(mdb_dbi_open(txn, "ns", 0, &ns) == 0);
	ck_assert(mdb_dbi_open(txn, "byhandle", 0, &byh) == 0);
	ck_assert(mdb_cursor_open(txn, byh, &cur) == 0);
	while (!mdb_cursor_get(cur, &k, &v, MDB_NEXT))
		/* The path, after its record's header (meta_record.h). */
		if (v.mv_size == 8 + plen && !memcmp((char *)v.mv_data + 8, path, plen))
			found += mdb_cursor_del(cur, 0) == 0;
	mdb_cursor_close(cur);
	if (entry) {
		ck_assert(mdb_cursor_open(txn, ns, &cur) == 0);
		while (!mdb_cursor_get(cur, &k, &v, MDB_NEXT))
			if (value_is_of(&v, path))
				found += mdb_cursor_del(cur, 0) == 0;
		mdb_cursor_close(cur);
	}
	ck_assert_int_eq(found, entry ? 2 : 1);
	ck_assert(mdb_txn_commit(txn) == 0);
	mdb_env_close(env);
}

/* rpfsd --check (plus flags) on server i: its exit status, its report. */
static int check(struct cluster *cl, int i, const char *f1, const char *f2, char *out,
		 size_t len)
{
	int status = run_rpfsd(cl, i, "--check", f1, f2, out, len, 30000);

	ck_assert_msg(status != -1 && WIFEXITED(status), "--check did not finish: %s",
		      out);
	fprintf(stderr, "--- rpfsd --check %s %s on server %d: exit %d\n%s", f1 ? f1 : "",
		f2 ? f2 : "", i, WEXITSTATUS(status), out);
	return WEXITSTATUS(status);
}

START_TEST(test_check_finds_each_kind_of_damage_and_repairs_orphans)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	struct rpfs_create_opts on0 = {0, 1, 0}, on3 = {0, 1, 3};
	struct rpfs_stat flip = put_file(c, "/c-flip", 8 * SU, 51, NULL);
	struct rpfs_stat gone = put_file(c, "/c-gone", SU, 52, &on0);
	struct rpfs_stat nosum = put_file(c, "/c-nosum", SU, 53, &on3);
	char path[1024], want[1200], out[16384];
	uint64_t local;
	int io;

	put_file(c, "/c-index", SU, 54, NULL);
	rpfs_finalize(c);
	ck_assert(cl_stop_all(cl) == 0);
	/* I/O: a flipped bit, checksums without data, data without checksums. */
	/* On server 1 or 2: 0 and 3 get other damage. */
	for (uint64_t k = 0; k < 8; k++) {
		locate(&flip, k * SU + 5000, &io, &local);
		if (io == 1 || io == 2)
			break;
	}
	datafile(cl, io, flip.handle, "", path, sizeof(path));
	flip_bit(path, local);
	datafile(cl, 2, 0xabcdef, ".sum", path, sizeof(path));
	ck_assert(close(open(path, O_CREAT | O_WRONLY, 0600)) == 0);
	datafile(cl, 3, nosum.handle, ".sum", path, sizeof(path));
	ck_assert(unlink(path) == 0);
	/* Metadata: a lost index record; an entry gone with its datafile left
	 * behind (a remove cut short). */
	store_forget(cl, "/c-index", false);
	store_forget(cl, "/c-gone", true);

	/* Each is found, one line each, exit 1. */
	ck_assert_int_eq(check(cl, io, NULL, NULL, out, sizeof(out)), 1);
	datafile(cl, io, flip.handle, "", path, sizeof(path));
	snprintf(want, sizeof(want), "%s: damaged block at offset %llu", path,
		 (unsigned long long)(local & ~(BLK - 1)));
	ck_assert_msg(has(out, want), "no \"%s\" in:\n%s", want, out);
	ck_assert_int_eq(check(cl, 2, NULL, NULL, out, sizeof(out)), 1);
	ck_assert(has(out, "0000000000abcdef.sum: checksums without a datafile"));
	ck_assert_int_eq(check(cl, 3, NULL, NULL, out, sizeof(out)), 1);
	ck_assert(has(out, "no checksum file"));
	ck_assert_int_eq(check(cl, 0, NULL, NULL, out, sizeof(out)), 1);
	ck_assert_msg(has(out, "/c-index") && has(out, "no byhandle record"), "%s", out);
	snprintf(want, sizeof(want), "%016llx: datafile of handle",
		 (unsigned long long)gone.handle);
	ck_assert_msg(has(out, want) && has(out, "no longer exists"), "%s", out);

	/* --repair: orphans and the index, not the data. */
	ck_assert_int_eq(check(cl, 2, "--repair", NULL, out, sizeof(out)), 1);
	ck_assert_int_eq(check(cl, 2, NULL, NULL, out, sizeof(out)), 0);
	ck_assert_int_eq(check(cl, 0, "--repair", NULL, out, sizeof(out)), 1);
	ck_assert_int_eq(check(cl, 0, NULL, NULL, out, sizeof(out)), 0);
	datafile(cl, 0, gone.handle, "", path, sizeof(path));
	ck_assert_msg(access(path, F_OK) != 0, "orphan datafile %s still there", path);
	ck_assert_int_eq(check(cl, io, "--repair", NULL, out, sizeof(out)), 1);
	ck_assert_int_eq(check(cl, io, NULL, NULL, out, sizeof(out)), 1);
	ck_assert(has(out, "damaged block"));
	ck_assert_int_eq(check(cl, 3, "--repair", NULL, out, sizeof(out)), 1);
	ck_assert_int_eq(check(cl, 3, NULL, NULL, out, sizeof(out)), 1);
	/* --accept-damaged takes the data as it is. */
	ck_assert_int_eq(check(cl, io, "--repair", "--accept-damaged", out, sizeof(out)),
			 1);
	ck_assert_int_eq(check(cl, io, NULL, NULL, out, sizeof(out)), 0);
	ck_assert_int_eq(check(cl, 3, "--repair", "--accept-damaged", out, sizeof(out)),
			 1);
	ck_assert_int_eq(check(cl, 3, NULL, NULL, out, sizeof(out)), 0);
	for (int i = 0; i < NSRV; i++)
		ck_assert_int_eq(check(cl, i, NULL, NULL, out, sizeof(out)), 0);

	/* Bad usage: 2. A running server's directory: 2. */
	ck_assert_int_eq(WEXITSTATUS(run_rpfsd(cl, 1, "--repair", NULL, NULL, out,
					       sizeof(out), 10000)),
			 2);
	ck_assert(cl_start_all(cl) == 0);
	ck_assert_int_eq(check(cl, 1, NULL, NULL, out, sizeof(out)), 2);
	ck_assert(has(out, "in use"));
	c = client(cl);
	expect_intact(c, "/c-index", SU, 54);
	expect_intact(c, "/c-nosum", SU, 53);
	/* A file of the store whose datafile on this server is gone. */
	gone = put_file(c, "/c-lost", SU, 55, &on0);
	rpfs_finalize(c);
	ck_assert(cl_stop_all(cl) == 0);
	datafile(cl, 0, gone.handle, "", path, sizeof(path));
	ck_assert(unlink(path) == 0);
	ck_assert_int_eq(check(cl, 0, NULL, NULL, out, sizeof(out)), 1);
	ck_assert_msg(has(out, "missing datafile of /c-lost"), "%s", out);
	cl_destroy(cl);
}
END_TEST

/* ---- checksummed metadata records --------------------------------------------- */

static MDB_env *store_env(struct cluster *cl, unsigned flags)
{
	char dir[1024];
	MDB_env *env;

	snprintf(dir, sizeof(dir), "%s/meta", cl_dir(cl, 0));
	ck_assert(mdb_env_create(&env) == 0);
	ck_assert(mdb_env_set_maxdbs(env, 4) == 0);
	ck_assert(mdb_env_set_mapsize(env, 1ull << 30) == 0);
	ck_assert(mdb_env_open(env, dir, flags, 0600) == 0);
	return env;
}

/* Flip bit 0 of the first-server field of path's layout in server 0's
 * data.mdb, on a stopped server: its record found through LMDB, then its
 * bytes (they hold the handle, the times and the path) in the file, in
 * every copy LMDB's copy-on-write left there (the live one among them).
 * Returns the field's value before. */
static uint32_t flip_first_server(struct cluster *cl, const char *path)
{
	MDB_env *env = store_env(cl, MDB_RDONLY);
	char store[1024], *val = NULL, *file;
	size_t vlen = 0, flen;
	MDB_txn *txn;
	MDB_dbi ns;
	MDB_cursor *cur;
	MDB_val k, v;
	struct stat sb;
	int fd, copies = 0;
	uint32_t was = 0;

	ck_assert(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) == 0);
	ck_assert(mdb_dbi_open(txn, "ns", 0, &ns) == 0);
	ck_assert(mdb_cursor_open(txn, ns, &cur) == 0);
	while (!val && !mdb_cursor_get(cur, &k, &v, MDB_NEXT))
		if (value_is_of(&v, path)) {
			vlen = v.mv_size;
			val = malloc(vlen);
			ck_assert(val);
			memcpy(val, v.mv_data, vlen);
		}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	ck_assert_msg(val, "no record of %s in the store", path);
	snprintf(store, sizeof(store), "%s/meta/data.mdb", cl_dir(cl, 0));
	fd = open(store, O_RDWR);
	ck_assert(fd >= 0 && fstat(fd, &sb) == 0);
	flen = (size_t)sb.st_size;
	file = malloc(flen);
	ck_assert(file && pread(fd, file, flen, 0) == (ssize_t)flen);
	for (size_t i = 0; i + vlen <= flen; i++) {
		size_t at = i + vlen - strlen(path) - ATTR_SIZE + ATTR_FIRST_SERVER;
		unsigned char b;

		if (memcmp(file + i, val, vlen))
			continue;
		was = (unsigned char)file[at];
		b = (unsigned char)(file[at] ^ 1);
		ck_assert(pwrite(fd, &b, 1, (off_t)at) == 1);
		copies++;
	}
	close(fd);
	free(file);
	free(val);
	ck_assert_msg(copies, "the record of %s is not in %s", path, store);
	return was;
}

START_TEST(test_flipped_bit_in_a_layout_record_is_an_error_not_rotated_stripes)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	struct rpfs_create_opts on3 = {0, 0, 3};
	struct rpfs_stat st = put_file(c, "/mflip", MF_LEN, 91, &on3);
	char out[8192], *buf = malloc(MF_LEN);
	rpfs_file_t *f = NULL;

	ck_assert(buf);
	ck_assert_int_eq(st.first_server, 3);
	put_file(c, "/mfine", 4 * SU, 92, NULL);
	rpfs_finalize(c);
	ck_assert(cl_stop(cl, 0) == 0);
	/* Bit 0 of the first-server field: 3 becomes 2. */
	ck_assert_int_eq(flip_first_server(cl, "/mflip"), 3);

	/* rpfsd --check names the damaged entry. */
	ck_assert_int_eq(check(cl, 0, NULL, NULL, out, sizeof(out)), 1);
	ck_assert_msg(has(out, "/mflip") && has(out, "damaged"), "%s", out);
	ck_assert_msg(!has(out, "/mfine"), "an intact entry reported: %s", out);

	/* Served: every access is refused, naming server and path; never the
	 * stripes rotated. */
	ck_assert(cl_restart(cl, 0) == 0);
	c = client(cl);
	expect_error(rpfs_stat(c, "/mflip", &st), "stat of a damaged entry",
		     (const char *[]){"meta server 0", "/mflip", "damaged", NULL});
	ck_assert_int_eq(rpfs_stat(c, "/mflip", &st), -EBADMSG);
	expect_error(rpfs_open(c, "/mflip", RPFS_O_READ, &f), "open of a damaged entry",
		     (const char *[]){"meta server 0", "/mflip", "damaged", NULL});
	/* Its neighbours are fine. */
	expect_intact(c, "/mfine", 4 * SU, 92);
	free(buf);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* ns payload v (an entry of today's version, meta_attr.h) rewritten in
 * place of version 1, as rpfsd wrote entries before layouts had a kind:
 * "RPA1", handle .. ctime, the layout's four fields, 4 zero bytes,
 * times_set, then the path. Into out (v->mv_size bytes at most). */
static MDB_val entry_v1(const MDB_val *v, uint8_t *out)
{
	struct rpc_attr a;
	const char *path;
	size_t plen;

	ck_assert(!meta_attr_dec(v->mv_data, v->mv_size, &a, &path, &plen, NULL, 0));
	ck_assert(a.layout.kind == RPFS_LAYOUT_STRIPE);
	memset(out, 0, META_ATTR_V1_SIZE);
	put32(out, META_ATTR_V1);
	put64(out + 4, a.handle);
	put32(out + 12, a.type);
	put32(out + 16, a.mode);
	put32(out + 20, a.uid);
	put32(out + 24, a.gid);
	put64(out + 28, (uint64_t)a.atime);
	put64(out + 36, (uint64_t)a.mtime);
	put64(out + 44, (uint64_t)a.ctime);
	put64(out + 52, a.layout.stripe_unit);
	put32(out + 60, a.layout.stripe_count);
	put32(out + 64, a.layout.first_server);
	put32(out + 68, a.layout.nservers);
	put64(out + 76, (uint64_t)a.times_set);
	memmove(out + META_ATTR_V1_SIZE, path, plen);
	return (MDB_val){META_ATTR_V1_SIZE + plen, out};
}

/* Turn server 0's store into one of the old format (values without record
 * headers, no format record, entries of attribute version 1), as an rpfsd
 * before checksummed records left it. */
static void make_old_store(struct cluster *cl)
{
	static const char *names[3] = {"ns", "byhandle", "sys"};
	MDB_env *env = store_env(cl, 0);
	MDB_txn *txn;
	int n = 0;

	ck_assert(mdb_txn_begin(env, NULL, 0, &txn) == 0);
	for (int i = 0; i < 3; i++) {
		MDB_val keys[64], vals[64];
		MDB_dbi dbi;
		MDB_cursor *cur;
		MDB_val k, v;
		int m = 0;

		ck_assert(mdb_dbi_open(txn, names[i], 0, &dbi) == 0);
		ck_assert(mdb_cursor_open(txn, dbi, &cur) == 0);
		/* Copied out first: a put moves what a cursor walks. */
		while (!mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			ck_assert_msg(v.mv_size > 8 && !memcmp(v.mv_data, "RPR2", 4),
				      "a %s record without a header", names[i]);
			ck_assert(m < 64);
			keys[m].mv_size = k.mv_size;
			keys[m].mv_data = malloc(k.mv_size);
			vals[m].mv_size = v.mv_size - 8;
			vals[m].mv_data = malloc(v.mv_size - 8);
			ck_assert(keys[m].mv_data && vals[m].mv_data);
			memcpy(keys[m].mv_data, k.mv_data, k.mv_size);
			memcpy(vals[m].mv_data, (char *)v.mv_data + 8, v.mv_size - 8);
			if (i == 0)
				vals[m] = entry_v1(&vals[m], vals[m].mv_data);
			m++;
		}
		mdb_cursor_close(cur);
		for (int j = 0; j < m; j++) {
			if (keys[j].mv_size == 6 && !memcmp(keys[j].mv_data, "format", 6))
				ck_assert(mdb_del(txn, dbi, &keys[j], NULL) == 0);
			else
				ck_assert(mdb_put(txn, dbi, &keys[j], &vals[j], 0) == 0);
			n++;
			free(keys[j].mv_data);
			free(vals[j].mv_data);
		}
	}
	ck_assert(mdb_txn_commit(txn) == 0);
	mdb_env_close(env);
	ck_assert(n >= 3);
}

START_TEST(test_old_store_is_upgraded_once_at_start)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	char out[8192], *log = malloc(1 << 20);
	struct rpfs_stat st;
	FILE *fp;
	size_t n;

	put_file(c, "/old1", 4 * SU, 93, NULL);
	ck_assert(rpfs_mkdir(c, "/olddir", 0755) == 0);
	put_file(c, "/olddir/old2", SU, 94, NULL);
	rpfs_finalize(c);
	ck_assert(cl_stop(cl, 0) == 0);
	make_old_store(cl);
	/* --check says what it is, without --repair leaves it. */
	ck_assert_int_eq(check(cl, 0, NULL, NULL, out, sizeof(out)), 1);
	ck_assert_msg(has(out, "old format"), "%s", out);
	ck_assert_int_eq(check(cl, 0, NULL, NULL, out, sizeof(out)), 1);

	/* A start upgrades it, says so, and everything is there. */
	ck_assert(cl_restart(cl, 0) == 0);
	c = client(cl);
	expect_intact(c, "/old1", 4 * SU, 93);
	expect_intact(c, "/olddir/old2", SU, 94);
	put_file(c, "/new", SU, 95, NULL);
	ck_assert(rpfs_stat(c, "/new", &st) == 0);
	rpfs_finalize(c);
	fp = fopen(cl_log(cl, 0), "r");
	ck_assert(fp);
	ck_assert(log);
	n = fread(log, 1, (1 << 20) - 1, fp);
	log[n] = 0;
	fclose(fp);
	ck_assert_msg(has(log, "was of the old format: upgraded"),
		      "no word of the upgrade in %s", cl_log(cl, 0));
	free(log);
	ck_assert(cl_stop(cl, 0) == 0);
	ck_assert_int_eq(check(cl, 0, NULL, NULL, out, sizeof(out)), 0);

	/* --check --repair upgrades one too. */
	make_old_store(cl);
	ck_assert_int_eq(check(cl, 0, "--repair", NULL, out, sizeof(out)), 1);
	ck_assert_int_eq(check(cl, 0, NULL, NULL, out, sizeof(out)), 0);
	cl_destroy(cl);
}
END_TEST

/* Turn server 0's store into one as an rpfsd before layouts had a kind
 * left it: records (format 2) whose entries are of attribute version 1. */
static void make_rpa1_store(struct cluster *cl)
{
	MDB_env *env = store_env(cl, 0);
	MDB_val fk = {sizeof(REC_FORMAT_KEY) - 1, REC_FORMAT_KEY}, fv;
	MDB_val keys[64], vals[64], k, v;
	uint8_t fmt[4];
	MDB_cursor *cur;
	MDB_dbi ns, sys;
	MDB_txn *txn;
	int m = 0;

	ck_assert(mdb_txn_begin(env, NULL, 0, &txn) == 0);
	ck_assert(mdb_dbi_open(txn, "ns", 0, &ns) == 0);
	ck_assert(mdb_dbi_open(txn, "sys", 0, &sys) == 0);
	ck_assert(mdb_cursor_open(txn, ns, &cur) == 0);
	/* Copied out first: a put moves what a cursor walks. */
	while (!mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		ck_assert(m < 64 && rec_check(REC_NS, &k, &v) == 0);
		keys[m].mv_size = k.mv_size;
		keys[m].mv_data = malloc(k.mv_size);
		vals[m].mv_data = malloc(v.mv_size);
		ck_assert(keys[m].mv_data && vals[m].mv_data);
		memcpy(keys[m].mv_data, k.mv_data, k.mv_size);
		memcpy(vals[m].mv_data, v.mv_data, v.mv_size);
		vals[m].mv_size = v.mv_size;
		vals[m] = entry_v1(&vals[m], vals[m].mv_data);
		m++;
	}
	mdb_cursor_close(cur);
	for (int j = 0; j < m; j++) {
		ck_assert(rec_put(txn, ns, REC_NS, &keys[j], &vals[j], 0) == 0);
		free(keys[j].mv_data);
		free(vals[j].mv_data);
	}
	put32(fmt, REC_FORMAT_RPA1);
	fv = (MDB_val){sizeof(fmt), fmt};
	ck_assert(rec_put(txn, sys, REC_SYS, &fk, &fv, 0) == 0);
	ck_assert(mdb_txn_commit(txn) == 0);
	mdb_env_close(env);
	ck_assert(m >= 3);
}

/* The log of server i holds needle. */
static bool log_has(struct cluster *cl, int i, const char *needle)
{
	char *log = malloc(1 << 20);
	FILE *fp = fopen(cl_log(cl, i), "r");
	bool found;
	size_t n;

	ck_assert(fp && log);
	n = fread(log, 1, (1 << 20) - 1, fp);
	log[n] = 0;
	fclose(fp);
	found = has(log, needle);
	free(log);
	return found;
}

static int count_entry(const char *name, uint32_t type, void *arg)
{
	(void)name;
	(void)type;
	++*(int *)arg;
	return 0;
}

START_TEST(test_store_written_before_layout_kinds_opens_unchanged)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	struct rpfs_create_opts on2 = {SU, 2, 2};
	char out[8192];
	struct rpfs_stat st;
	int n = 0;

	put_file(c, "/k1", 4 * SU, 111, &on2);
	ck_assert(rpfs_mkdir(c, "/kdir", 0755) == 0);
	ck_assert(rpfs_setstripe(c, "/kdir", 2 * SU, 3) == 0);
	put_file(c, "/kdir/k2", 3 * SU, 112, NULL);
	rpfs_finalize(c);
	ck_assert(cl_stop(cl, 0) == 0);
	make_rpa1_store(cl);
	/* Nothing wrong with it. */
	ck_assert_int_eq(check(cl, 0, NULL, NULL, out, sizeof(out)), 0);

	/* Served as it was: data, layouts, a directory's default, listing,
	 * rename; new entries beside the old ones. */
	ck_assert(cl_restart(cl, 0) == 0);
	ck_assert_msg(log_has(cl, 0, "now of format 3"), "no word in %s", cl_log(cl, 0));
	c = client(cl);
	expect_intact(c, "/k1", 4 * SU, 111);
	expect_intact(c, "/kdir/k2", 3 * SU, 112);
	ck_assert(rpfs_stat(c, "/k1", &st) == 0);
	ck_assert(st.stripe_unit == SU && st.stripe_count == 2 && st.first_server == 2);
	ck_assert(rpfs_stat(c, "/kdir/k2", &st) == 0);
	ck_assert(st.stripe_unit == 2 * SU && st.stripe_count == 3);
	put_file(c, "/kdir/new", SU, 113, NULL);
	ck_assert(rpfs_stat(c, "/kdir/new", &st) == 0);
	ck_assert(st.stripe_unit == 2 * SU && st.stripe_count == 3);
	ck_assert(rpfs_rename(c, "/kdir", "/kmoved") == 0);
	expect_intact(c, "/kmoved/k2", 3 * SU, 112);
	expect_intact(c, "/kmoved/new", SU, 113);
	ck_assert_int_eq(rpfs_readdir(c, "/kmoved", count_entry, &n), 0);
	ck_assert_int_eq(n, 2);
	rpfs_finalize(c);
	ck_assert(cl_stop(cl, 0) == 0);
	ck_assert_int_eq(check(cl, 0, NULL, NULL, out, sizeof(out)), 0);
	cl_destroy(cl);
}
END_TEST

/* ---- data blocks bound to their place ------------------------------------------ */

#define SUM_HDR 64 /* a checksum file's header, then 16 bytes per block (blocksum.h) */
#define SUM_ENT 16

/* The file's offset of datafile offset local of I/O server io. */
static uint64_t logical(const struct rpfs_stat *st, int io, uint64_t local)
{
	uint64_t slot = (uint64_t)((io - (int)st->first_server + NSRV) % NSRV);

	return local / st->stripe_unit * st->stripe_unit * st->stripe_count +
	       slot * st->stripe_unit + local % st->stripe_unit;
}

static void swap_range(const char *path, off_t a, off_t b, size_t len)
{
	char x[BLK], y[BLK];
	int fd = open(path, O_RDWR);

	ck_assert_msg(fd >= 0 && len <= BLK, "open %s: %s", path, strerror(errno));
	ck_assert(pread(fd, x, len, a) == (ssize_t)len);
	ck_assert(pread(fd, y, len, b) == (ssize_t)len);
	ck_assert(pwrite(fd, y, len, a) == (ssize_t)len);
	ck_assert(pwrite(fd, x, len, b) == (ssize_t)len);
	close(fd);
}

static void swap_files(const char *a, const char *b)
{
	char tmp[1100];

	snprintf(tmp, sizeof(tmp), "%s.swap", a);
	ck_assert(rename(a, tmp) == 0 && rename(b, a) == 0 && rename(tmp, b) == 0);
}

/* Lines of out that hold needle. */
static int lines_with(const char *out, const char *needle)
{
	int n = 0;

	for (const char *l = out; l && *l;
	     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *e = strchr(l, '\n'), *hit = strstr(l, needle);

		n += hit && (!e || hit < e);
	}
	return n;
}

START_TEST(test_datafile_extended_with_zeros_is_an_error_not_size)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	struct rpfs_stat st = put_file(c, "/ext", MF_LEN, 101, NULL), st2;
	char path[1024], name[32], port[16], want[96], out[8192], buf[BLK];
	uint64_t local = MF_LEN / NSRV, at;
	rpfs_file_t *f;

	/* truncate -s +1M on I/O server 1's datafile of a 16 MiB file. */
	datafile(cl, 1, st.handle, "", path, sizeof(path));
	ck_assert(truncate(path, (off_t)(local + MiB)) == 0);
	server_name(cl, 1, name, sizeof(name), port, sizeof(port));
	/* No size from bytes no checksum covers. */
	expect_error(rpfs_stat(c, "/ext", &st2), "stat",
		     (const char *[]){name, port, "/ext", "damaged data", NULL});
	f = open_file(c, "/ext");
	at = logical(&st, 1, local);
	snprintf(want, sizeof(want), "damaged data at offset %llu",
		 (unsigned long long)at);
	expect_error(rpfs_pread(f, buf, sizeof(buf), at), "read of the zeros",
		     (const char *[]){name, "/ext", want, NULL});
	/* The file's own bytes still read. */
	rpfs_close(f);
	expect_intact(c, "/ext", MF_LEN, 101);
	rpfs_finalize(c);
	ck_assert(cl_stop_all(cl) == 0);
	ck_assert_int_eq(check(cl, 1, NULL, NULL, out, sizeof(out)), 1);
	snprintf(want, sizeof(want),
		 "bytes %llu..%llu (%llu bytes) are covered by no checksum",
		 (unsigned long long)local, (unsigned long long)(local + MiB - 1),
		 (unsigned long long)MiB);
	ck_assert_msg(has(out, path) && has(out, want), "no \"%s\" in:\n%s", want, out);
	ck_assert_int_eq(lines_with(out, path), 1);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_block_moved_with_its_checksum_is_an_error)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	struct rpfs_stat st = put_file(c, "/moved", 8 * SU, 102, NULL);
	char path[1024], name[32], port[16], want[1200], out[8192], *buf = malloc(8 * SU);
	rpfs_file_t *f;

	ck_assert(buf);
	/* Blocks 2 and 3 of server 2's datafile trade places, each with its
	 * own (correct) checksum entry. */
	datafile(cl, 2, st.handle, "", path, sizeof(path));
	swap_range(path, 2 * BLK, 3 * BLK, BLK);
	datafile(cl, 2, st.handle, ".sum", path, sizeof(path));
	swap_range(path, SUM_HDR + 2 * SUM_ENT, SUM_HDR + 3 * SUM_ENT, SUM_ENT);
	server_name(cl, 2, name, sizeof(name), port, sizeof(port));
	f = open_file(c, "/moved");
	snprintf(want, sizeof(want), "damaged data at offset %llu",
		 (unsigned long long)logical(&st, 2, 2 * BLK));
	expect_error(rpfs_pread(f, buf, 8 * SU, 0), "read of the whole file",
		     (const char *[]){name, port, "/moved", want, NULL});
	snprintf(want, sizeof(want), "damaged data at offset %llu",
		 (unsigned long long)logical(&st, 2, 3 * BLK));
	expect_error(rpfs_pread(f, buf, BLK, logical(&st, 2, 3 * BLK)),
		     "read of the other", (const char *[]){name, "/moved", want, NULL});
	rpfs_close(f);
	rpfs_finalize(c);
	ck_assert(cl_stop_all(cl) == 0);
	/* One range, both blocks. */
	ck_assert_int_eq(check(cl, 2, NULL, NULL, out, sizeof(out)), 1);
	datafile(cl, 2, st.handle, "", path, sizeof(path));
	snprintf(want, sizeof(want), "%s: damaged blocks at offsets %llu..%llu (2 blocks",
		 path, (unsigned long long)(2 * BLK), (unsigned long long)(3 * BLK));
	ck_assert_msg(has(out, want), "no \"%s\" in:\n%s", want, out);
	free(buf);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_swapped_datafiles_are_an_error)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	struct rpfs_create_opts on0 = {0, 0, 0};
	struct rpfs_stat a = put_file(c, "/swa", 4 * SU, 103, &on0);
	struct rpfs_stat b = put_file(c, "/swb", 4 * SU, 104, &on0);
	char pa[1024], pb[1024], name[32], port[16], out[8192], *buf = malloc(SU);
	rpfs_file_t *f;

	ck_assert(buf);
	server_name(cl, 1, name, sizeof(name), port, sizeof(port));
	/* Server 1 holds stripe 1 of both: exchange the datafiles alone ...
	 * (stopped: a running server keeps the files it has open) */
	ck_assert(cl_stop(cl, 1) == 0);
	datafile(cl, 1, a.handle, "", pa, sizeof(pa));
	datafile(cl, 1, b.handle, "", pb, sizeof(pb));
	swap_files(pa, pb);
	ck_assert(cl_restart(cl, 1) == 0);
	for (int k = 0; k < 2; k++) {
		const char *p = k ? "/swb" : "/swa";

		f = open_file(c, p);
		expect_error(rpfs_pread(f, buf, SU, SU), p,
			     (const char *[]){name, port, p, "damaged data", NULL});
		rpfs_close(f);
	}
	/* ... and with their checksum files. */
	ck_assert(cl_stop(cl, 1) == 0);
	datafile(cl, 1, a.handle, ".sum", pa, sizeof(pa));
	datafile(cl, 1, b.handle, ".sum", pb, sizeof(pb));
	swap_files(pa, pb);
	ck_assert(cl_restart(cl, 1) == 0);
	for (int k = 0; k < 2; k++) {
		const char *p = k ? "/swb" : "/swa";

		f = open_file(c, p);
		expect_error(rpfs_pread(f, buf, SU, SU), p,
			     (const char *[]){name, p, "damaged data", NULL});
		/* The other servers' stripes are theirs. */
		read_all(f, buf, SU, 0);
		rpfs_close(f);
	}
	rpfs_finalize(c);
	ck_assert(cl_stop_all(cl) == 0);
	ck_assert_int_eq(check(cl, 1, NULL, NULL, out, sizeof(out)), 1);
	ck_assert_int_eq(lines_with(out, "not this datafile's"), 2);
	free(buf);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_layout_that_disagrees_with_the_datafiles_is_an_error)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	struct rpfs_create_opts on0 = {0, 0, 0};
	struct rpfs_stat st = put_file(c, "/slots", 4 * SU, 105, &on0);
	char p0[1024], p1[1024], name[32], port[16], want[1200], out[8192];
	char *buf = malloc(4 * SU);
	rpfs_file_t *f;

	ck_assert(buf);
	/* Stripes 0 and 1 (servers 0 and 1) trade places, each datafile with
	 * its checksum file: every pair is whole, in the wrong place. */
	rpfs_finalize(c);
	ck_assert(cl_stop(cl, 0) == 0 && cl_stop(cl, 1) == 0);
	for (int k = 0; k < 2; k++) {
		char tmp[1100];

		datafile(cl, 0, st.handle, k ? ".sum" : "", p0, sizeof(p0));
		datafile(cl, 1, st.handle, k ? ".sum" : "", p1, sizeof(p1));
		snprintf(tmp, sizeof(tmp), "%s/%s", cl_dir(cl, 2), "swap.tmp");
		ck_assert(rename(p0, tmp) == 0 && rename(p1, p0) == 0 &&
			  rename(tmp, p1) == 0);
	}
	/* Server 0 holds the layout too: --check sees the disagreement. */
	ck_assert_int_eq(check(cl, 0, NULL, NULL, out, sizeof(out)), 1);
	snprintf(want, sizeof(want),
		 "%016llx: holds stripe slot 1 of /slots, whose layout puts slot 0 here",
		 (unsigned long long)st.handle);
	ck_assert_msg(has(out, want), "no \"%s\" in:\n%s", want, out);
	ck_assert(cl_restart(cl, 0) == 0 && cl_restart(cl, 1) == 0);
	c = client(cl);
	f = open_file(c, "/slots");
	for (int io = 0; io < 2; io++) {
		server_name(cl, io, name, sizeof(name), port, sizeof(port));
		expect_error(
			rpfs_pread(f, buf, SU, (uint64_t)io * SU), "read of a stripe",
			(const char *[]){name, port, "/slots", "damaged data", NULL});
		expect_error(rpfs_pwrite(f, buf, SU, (uint64_t)io * SU),
			     "write of a stripe",
			     (const char *[]){name, "/slots", "damaged data", NULL});
	}
	read_all(f, buf, 2 * SU, 2 * SU);
	rpfs_close(f);
	free(buf);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_check_reports_a_cut_as_one_range)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	struct rpfs_create_opts on2 = {0, 1, 2};
	struct rpfs_stat st = put_file(c, "/range", 6 * MiB, 106, &on2);
	char path[1024], want[1400], out[8192];

	(void)st;
	rpfs_finalize(c);
	ck_assert(cl_stop_all(cl) == 0);
	/* Cut the 6 MiB datafile to nothing: 1,536 blocks lost. */
	datafile(cl, 2, st.handle, "", path, sizeof(path));
	ck_assert(truncate(path, 0) == 0);
	ck_assert_int_eq(check(cl, 2, NULL, NULL, out, sizeof(out)), 1);
	snprintf(want, sizeof(want), "%s: damaged blocks at offsets 0..%llu (1536 blocks",
		 path, (unsigned long long)(6 * MiB - BLK));
	ck_assert_msg(has(out, want), "no \"%s\" in:\n%s", want, out);
	ck_assert_int_eq(lines_with(out, path), 1);
	cl_destroy(cl);
}
END_TEST

/* ---- concurrency ------------------------------------------------------------- */

#define CW_RANGE (96 * KiB) /* spans two stripes, so two servers */
#define CW_OPS	 300
#define CW_N	 4
#define CW_PATH	 "/overlap"

/* A writer: random unaligned ranges, one fill byte of its own. */
static int cw_writer(const char *config, int w)
{
	rpfs_client_t *c;
	rpfs_file_t *f;
	uint64_t s = 1234 + (uint64_t)w;
	char buf[12 * 1024];
	int ret = 0;

	if (rpfs_init(config, &c) || rpfs_open(c, CW_PATH, RPFS_O_RDWR, &f)) {
		fprintf(stderr, "writer %d: %s\n", w, rpfs_errmsg());
		return 1;
	}
	memset(buf, 'A' + w, sizeof(buf));
	for (int i = 0; i < CW_OPS && !ret; i++) {
		uint64_t len = 1 + rnd_next(&s) % sizeof(buf);
		uint64_t off = rnd_next(&s) % (CW_RANGE - len);

		if (rpfs_pwrite(f, buf, len, off) != (ssize_t)len) {
			fprintf(stderr, "writer %d: %s\n", w, rpfs_errmsg());
			ret = 1;
		}
	}
	rpfs_close(f);
	rpfs_finalize(c);
	return ret;
}

static volatile sig_atomic_t cw_stop;

static void on_usr1(int sig)
{
	(void)sig;
	cw_stop = 1;
}

/* A reader alongside, until SIGUSR1: every read must verify. */
static int cw_reader(const char *config)
{
	rpfs_client_t *c;
	rpfs_file_t *f;
	char *buf = malloc(CW_RANGE);
	int ret = 0, n = 0;

	if (!buf || rpfs_init(config, &c) || rpfs_open(c, CW_PATH, RPFS_O_RDWR, &f)) {
		fprintf(stderr, "reader: %s\n", rpfs_errmsg());
		return 1;
	}
	while (!ret && !cw_stop) {
		if (rpfs_pread(f, buf, CW_RANGE, 0) != (ssize_t)CW_RANGE) {
			fprintf(stderr, "reader: %s\n", rpfs_errmsg());
			ret = 1;
		}
		n++;
	}
	fprintf(stderr, "reader: %d reads of %llu KiB during the writes\n", n,
		(unsigned long long)(CW_RANGE / KiB));
	rpfs_close(f);
	rpfs_finalize(c);
	free(buf);
	return ret;
}

START_TEST(test_concurrent_unaligned_writers_keep_checksums_consistent)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	rpfs_file_t *f = create(c, CW_PATH);
	char *buf = malloc(CW_RANGE);
	pid_t pids[CW_N], reader;
	int failed = 0, status, counts[CW_N + 1] = {0};

	ck_assert(buf);
	rpfs_close(f);
	rpfs_finalize(c);
	fflush(NULL);
	signal(SIGUSR1, on_usr1);
	reader = fork();
	ck_assert(reader >= 0);
	if (reader == 0)
		_exit(cw_reader(cl_config(cl)));
	signal(SIGUSR1, SIG_DFL);
	for (int w = 0; w < CW_N; w++) {
		pids[w] = fork();
		ck_assert(pids[w] >= 0);
		if (pids[w] == 0)
			_exit(cw_writer(cl_config(cl), w));
	}
	for (int w = 0; w < CW_N; w++) {
		waitpid(pids[w], &status, 0);
		failed += !WIFEXITED(status) || WEXITSTATUS(status);
	}
	kill(reader, SIGUSR1);
	waitpid(reader, &status, 0);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "the reader saw an error while the writers wrote (see stderr)");
	ck_assert_msg(!failed, "%d writers failed (see stderr)", failed);

	c = client(cl);
	f = open_file(c, CW_PATH);
	read_all(f, buf, CW_RANGE, 0);
	for (size_t i = 0; i < CW_RANGE; i++) {
		ck_assert_msg(!buf[i] || (buf[i] >= 'A' && buf[i] < 'A' + CW_N),
			      "byte %zu is %d", i, buf[i]);
		counts[buf[i] ? buf[i] - 'A' + 1 : 0]++;
	}
	fprintf(stderr, "overlapping unaligned writers: zeros %d A %d B %d C %d D %d\n",
		counts[0], counts[1], counts[2], counts[3], counts[4]);
	rpfs_close(f);
	rpfs_finalize(c);
	free(buf);
	/* Offline, every block of every server checks out. */
	ck_assert(cl_stop_all(cl) == 0);
	for (int i = 0; i < NSRV; i++) {
		char out[8192];

		ck_assert_int_eq(check(cl, i, NULL, NULL, out, sizeof(out)), 0);
	}
	cl_destroy(cl);
}
END_TEST

#define KW_LEN (8 * MiB)

START_TEST(test_kill9_mid_write_reads_back_whole)
{
	struct cluster *cl = start(3000);
	rpfs_client_t *c = client(cl);
	char *buf = malloc(KW_LEN);
	pid_t writer;
	int status;

	ck_assert(buf);
	put_file(c, "/kw", KW_LEN, 60, NULL);
	rpfs_finalize(c);
	fflush(NULL);
	writer = fork();
	ck_assert(writer >= 0);
	if (writer == 0) {
		rpfs_client_t *wc;
		rpfs_file_t *f;
		char *wb = malloc(KW_LEN);

		if (!wb || rpfs_init(cl_config(cl), &wc) ||
		    rpfs_open(wc, "/kw", RPFS_O_RDWR, &f))
			_exit(1);
		/* Overwrite until the server dies under us. */
		for (int i = 0; i < 1000; i++) {
			fill(wb, KW_LEN, 61 + (uint64_t)i);
			if (rpfs_pwrite(f, wb, KW_LEN, 0) < 0)
				break;
		}
		_exit(0);
	}
	usleep(300 * 1000);
	cl_kill(cl, 1);
	waitpid(writer, &status, 0);
	ck_assert(cl_restart(cl, 1) == 0);
	c = client(cl);
	{
		rpfs_file_t *f = open_file(c, "/kw");

		/* Old or new, block by block: never damaged. */
		read_all(f, buf, KW_LEN, 0);
		rpfs_close(f);
	}
	rpfs_finalize(c);
	free(buf);
	cl_destroy(cl);
}
END_TEST

static Suite *integrity_suite(void)
{
	Suite *s = suite_create("integrity");
	TCase *tc;

	tc = tcase_create("data");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_flipped_bit_is_named_with_server_file_and_offset);
	tcase_add_test(tc, test_deleted_datafile_is_an_error_not_zeros);
	tcase_add_test(tc, test_emptied_io_directory_gives_errors);
	tcase_add_test(tc, test_truncated_datafile_is_damage);
	tcase_add_test(tc, test_holes_read_as_zeros);
	suite_add_tcase(s, tc);

	tc = tcase_create("create");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_create_fails_cleanly_when_an_io_server_is_down);
	tcase_add_test(tc, test_handles_with_datafiles_are_skipped_never_shared);
	suite_add_tcase(s, tc);

	tc = tcase_create("metadata");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_lost_metadata_store_refuses_to_start);
	tcase_add_test(tc, test_truncated_metadata_store_is_a_message_not_sigbus);
	tcase_add_test(tc, test_corrupt_metadata_store_is_a_message_not_sigbus);
	suite_add_tcase(s, tc);

	tc = tcase_create("records");
	tcase_set_timeout(tc, 180);
	tcase_add_test(
		tc, test_flipped_bit_in_a_layout_record_is_an_error_not_rotated_stripes);
	tcase_add_test(tc, test_old_store_is_upgraded_once_at_start);
	tcase_add_test(tc, test_store_written_before_layout_kinds_opens_unchanged);
	suite_add_tcase(s, tc);

	tc = tcase_create("placement");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_datafile_extended_with_zeros_is_an_error_not_size);
	tcase_add_test(tc, test_block_moved_with_its_checksum_is_an_error);
	tcase_add_test(tc, test_swapped_datafiles_are_an_error);
	tcase_add_test(tc, test_layout_that_disagrees_with_the_datafiles_is_an_error);
	tcase_add_test(tc, test_check_reports_a_cut_as_one_range);
	suite_add_tcase(s, tc);

	tc = tcase_create("check");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_check_finds_each_kind_of_damage_and_repairs_orphans);
	suite_add_tcase(s, tc);

	tc = tcase_create("concurrency");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_concurrent_unaligned_writers_keep_checksums_consistent);
	tcase_add_test(tc, test_kill9_mid_write_reads_back_whole);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return cl_run_suite(argc, argv, integrity_suite);
}
