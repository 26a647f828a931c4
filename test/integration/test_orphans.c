/* Orphaned datafiles: storage no file owns is found by rpfsd --check on
 * every server that holds it, reclaimed by --repair, and never confused
 * with a file's. 4 rpfsd servers on loopback (cluster.h), server 0
 * metadata + I/O, 1..3 I/O only. What is specified:
 *   - a datafile and its checksum file of a handle the metadata server
 *     handed out but no file has (what a create cut short by a crash
 *     leaves) on an I/O-only server: its --check, run while the metadata
 *     server runs, reports it (exit 1), --repair removes both files, the
 *     next check is clean, and every file still reads back;
 *   - with the metadata server down, the check names it and calls the
 *     datafiles of its handles unknown, not orphans, and --repair leaves
 *     them;
 *   - a datafile whose create is still in progress (an I/O server of its
 *     layout hung) is left alone by --repair, and the create, once it
 *     goes on, gives a file that reads back;
 *   - kill -9 of the metadata server while many creates are in flight:
 *     every datafile the store has no file for, on every server, is
 *     reported by that server's check and removed by --repair, nothing
 *     else is, and every file whose create was acknowledged reads back.
 * Worker processes are forked before the test process opens a client. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lmdb.h>
#include <signal.h>
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

#define NSRV	   4
#define SU	   (64 * 1024ull)
#define MAXH	   8192
#define SUM_HDR	   64
#define FILE_LEN   (4 * SU) /* a stripe on each server */
#define CHECK_OUT  (256 * 1024)
#define NWORKERS   4
#define KILL_AFTER 400 /* ms of creates before the kill */
#define ROUNDS	   12  /* of creates and kills, until one cut a create short */

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

static const struct rpfs_create_opts all4 = {0, NSRV, 0};

static const char *rpfsd_path(void)
{
	const char *p = getenv("RPFSD");

	return p && *p ? p : "./rpfsd";
}

/* rpfsd --check [--repair] on server i (stopped): its exit status; its
 * report (stdout and stderr) in out. */
static int check(struct cluster *cl, int i, bool fix, char *out, size_t len)
{
	char cmd[2048];
	size_t got = 0, n;
	FILE *p;
	int status;

	snprintf(cmd, sizeof(cmd),
		 "timeout 60 '%s' --config '%s' --name %d --check %s 2>&1", rpfsd_path(),
		 cl_config(cl), i, fix ? "--repair" : "");
	fflush(NULL);
	p = popen(cmd, "r");
	ck_assert(p);
	while (got < len - 1 && (n = fread(out + got, 1, len - 1 - got, p)) > 0)
		got += n;
	out[got] = 0;
	status = pclose(p);
	fprintf(stderr, "--- rpfsd --check%s on server %d: exit %d\n%s",
		fix ? " --repair" : "", i, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
		out);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) <= 1,
		      "--check on server %d did not finish as a check does: %s", i, out);
	return WEXITSTATUS(status);
}

static void datafile(struct cluster *cl, int i, uint64_t h, const char *suffix, char *buf,
		     size_t len)
{
	snprintf(buf, len, "%s/data/%016" PRIx64 "%s", cl_dir(cl, i), h, suffix);
}

static bool exists(struct cluster *cl, int i, uint64_t h, const char *suffix)
{
	char p[1200];

	datafile(cl, i, h, suffix, p, sizeof(p));
	return access(p, F_OK) == 0;
}

static void le(uint8_t *p, uint64_t v, int n)
{
	for (int k = 0; k < n; k++, v >>= 8)
		p[k] = (uint8_t)v;
}

/* What a create leaves on an I/O server once its IO_CREATE is done: the
 * checksum file's header (server/blocksum.h: magic, version 2, block size,
 * handle, the create's nonce, the stripe slot) and an empty datafile. */
static void plant(struct cluster *cl, int i, uint64_t h, uint32_t slot)
{
	uint8_t hdr[SUM_HDR] = "RPFSSUM1";
	char p[1200];
	int fd;

	le(hdr + 8, 2, 4);
	le(hdr + 12, 4096, 4);
	le(hdr + 16, h, 8);
	le(hdr + 24, 0x5eed0000 + h, 8);
	le(hdr + 32, slot, 4);
	datafile(cl, i, h, ".sum", p, sizeof(p));
	fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0600);
	ck_assert_msg(fd >= 0, "%s: %s", p, strerror(errno));
	ck_assert(write(fd, hdr, sizeof(hdr)) == (ssize_t)sizeof(hdr));
	close(fd);
	datafile(cl, i, h, "", p, sizeof(p));
	fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0600);
	ck_assert_msg(fd >= 0, "%s: %s", p, strerror(errno));
	close(fd);
}

/* The handles of server i's datafiles (not their checksum files). */
static size_t datafiles(struct cluster *cl, int i, uint64_t *h, size_t max)
{
	char dir[1100];
	struct dirent *e;
	size_t n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/data", cl_dir(cl, i));
	d = opendir(dir);
	ck_assert_msg(d, "%s: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		char *end;
		uint64_t v = strtoull(e->d_name, &end, 16);

		if (strlen(e->d_name) != 16 || *end)
			continue;
		ck_assert(n < max);
		h[n++] = v;
	}
	closedir(d);
	return n;
}

static bool in(const uint64_t *set, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == h)
			return true;
	return false;
}

/* The handles of the files server 0's store has (its byhandle index:
 * 8-byte big-endian keys), read beside the running server. */
static size_t store_handles(struct cluster *cl, uint64_t *h, size_t max)
{
	char dir[1100];
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi byh;
	MDB_cursor *cur;
	MDB_val k, v;
	size_t n = 0;

	snprintf(dir, sizeof(dir), "%s/meta", cl_dir(cl, 0));
	ck_assert(mdb_env_create(&env) == 0);
	ck_assert(mdb_env_set_maxdbs(env, 4) == 0);
	ck_assert(mdb_env_set_mapsize(env, 1ull << 30) == 0);
	ck_assert(mdb_env_open(env, dir, MDB_RDONLY, 0600) == 0);
	ck_assert(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) == 0);
	ck_assert(mdb_dbi_open(txn, "byhandle", 0, &byh) == 0);
	ck_assert(mdb_cursor_open(txn, byh, &cur) == 0);
	while (!mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		uint64_t x = 0;

		ck_assert_uint_eq(k.mv_size, 8);
		for (int b = 0; b < 8; b++)
			x = x << 8 | ((const uint8_t *)k.mv_data)[b];
		ck_assert(n < max);
		h[n++] = x;
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return n;
}

static struct rpfs_stat put_file(rpfs_client_t *c, const char *path, uint64_t seed)
{
	rpfs_file_t *f = create_opts(c, path, &all4);
	char *buf = malloc(FILE_LEN);
	struct rpfs_stat st;

	ck_assert(buf);
	fill(buf, FILE_LEN, seed);
	write_all(f, buf, FILE_LEN, 0);
	ck_assert_msg(rpfs_sync(f) == 0, "sync %s: %s", path, rpfs_errmsg());
	rpfs_file_attr(f, &st);
	rpfs_close(f);
	free(buf);
	return st;
}

static void expect_intact(rpfs_client_t *c, const char *path, uint64_t seed)
{
	rpfs_file_t *f = open_file(c, path);
	char *a = malloc(FILE_LEN), *b = malloc(FILE_LEN);

	ck_assert(a && b);
	read_all(f, a, FILE_LEN, 0);
	fill(b, FILE_LEN, seed);
	ck_assert_msg(!memcmp(a, b, FILE_LEN), "%s: data differs", path);
	free(a);
	free(b);
	rpfs_close(f);
}

static bool has(const char *hay, const char *needle)
{
	return strstr(hay, needle) != NULL;
}

/* The line --check gives an orphan datafile of handle h on server i. */
static void orphan_line(struct cluster *cl, int i, uint64_t h, char *buf, size_t len)
{
	char p[1200];

	datafile(cl, i, h, "", p, sizeof(p));
	snprintf(buf, len, "%s: datafile of handle %#" PRIx64, p, h);
}

/* ---- made directly --------------------------------------------------------- */

START_TEST(test_orphan_on_an_io_only_server_is_found_and_reclaimed)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	struct rpfs_stat st = put_file(c, "/keep", 1);
	char *out = malloc(CHECK_OUT), want[1400];
	uint64_t h;

	ck_assert(out);
	rpfs_finalize(c);
	/* The metadata server dies with handles reserved after /keep's: the
	 * next one is what a create it was running had taken. */
	ck_assert(cl_kill(cl, 0) == 0);
	ck_assert(cl_restart(cl, 0) == 0);
	h = st.handle + 1;
	ck_assert(cl_stop(cl, 2) == 0);
	plant(cl, 2, h, 2);

	ck_assert_int_eq(check(cl, 2, false, out, CHECK_OUT), 1);
	orphan_line(cl, 2, h, want, sizeof(want));
	ck_assert_msg(has(out, want) && has(out, "of metadata server 0") &&
			      has(out, "never came to be"),
		      "no \"%s\" in:\n%s", want, out);
	ck_assert(exists(cl, 2, h, "") && exists(cl, 2, h, ".sum"));

	ck_assert_int_eq(check(cl, 2, true, out, CHECK_OUT), 1);
	ck_assert_msg(has(out, want) && has(out, "[repaired]"), "%s", out);
	ck_assert(!exists(cl, 2, h, "") && !exists(cl, 2, h, ".sum"));
	ck_assert_int_eq(check(cl, 2, false, out, CHECK_OUT), 0);
	ck_assert(has(out, "clean"));
	/* The file's own datafile there was never in question. */
	ck_assert(exists(cl, 2, st.handle, ""));
	ck_assert(cl_restart(cl, 2) == 0);
	c = client(cl);
	expect_intact(c, "/keep", 1);
	rpfs_finalize(c);
	free(out);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_metadata_server_down_makes_datafiles_unknown_not_orphans)
{
	struct cluster *cl = start(0);
	rpfs_client_t *c = client(cl);
	struct rpfs_stat st = put_file(c, "/keep", 2);
	char *out = malloc(CHECK_OUT), want[256];
	uint64_t h = st.handle + 1;

	ck_assert(out);
	rpfs_finalize(c);
	ck_assert(cl_stop_all(cl) == 0);
	plant(cl, 3, h, 3);

	/* Nothing wrong that it can see: exit 0, but it says what it can't
	 * know, and whom it could not ask. */
	ck_assert_int_eq(check(cl, 3, true, out, CHECK_OUT), 0);
	snprintf(want, sizeof(want),
		 "metadata server 0 (127.0.0.1:%d) could not be asked", cl_port(cl, 0));
	ck_assert_msg(has(out, want), "no \"%s\" in:\n%s", want, out);
	/* Two datafiles: /keep's and the planted one. */
	ck_assert_msg(
		has(out, "the 2 datafiles of its handles here are unknown, not orphans"),
		"%s", out);
	ck_assert_msg(!has(out, "never came to be"), "%s", out);
	ck_assert(exists(cl, 3, h, "") && exists(cl, 3, h, ".sum"));
	ck_assert(exists(cl, 3, st.handle, ""));

	/* With it running, the same check finds the orphan. */
	ck_assert(cl_restart(cl, 0) == 0);
	ck_assert_int_eq(check(cl, 3, false, out, CHECK_OUT), 1);
	ck_assert(has(out, "never came to be"));
	free(out);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_a_server_with_both_roles_asks_the_other_metadata_server)
{
	struct cl_opts o = {.nservers = NSRV, .nmeta = 2, .stripe_unit = SU};
	struct cluster *cl = cl_start(&o);
	uint64_t last[2] = {0, 0}, h0, h1;
	char *out = malloc(CHECK_OUT), want[1400];
	rpfs_client_t *c;

	ck_assert(cl && out);
	c = client(cl);
	/* Files of both metadata servers (paths are spread by hash). */
	for (int i = 0; i < 40 && (!last[0] || !last[1]); i++) {
		char path[32];

		snprintf(path, sizeof(path), "/f%d", i);
		struct rpfs_stat st = put_file(c, path, 10 + (uint64_t)i);

		last[st.handle >> 48] = st.handle;
	}
	ck_assert_msg(last[0] && last[1], "no file of each metadata server");
	rpfs_finalize(c);
	/* Metadata server 0 restarts after a crash; server 1 (metadata and
	 * I/O) is checked: a datafile of each one's next handle there. */
	ck_assert(cl_kill(cl, 0) == 0);
	ck_assert(cl_restart(cl, 0) == 0);
	ck_assert(cl_stop(cl, 1) == 0);
	h0 = last[0] + 1;
	h1 = last[1] + 1;
	plant(cl, 1, h0, 1);
	plant(cl, 1, h1, 1);

	ck_assert_int_eq(check(cl, 1, true, out, CHECK_OUT), 1);
	/* Its own handle from its own store, the other's from server 0. */
	orphan_line(cl, 1, h1, want, sizeof(want));
	ck_assert_msg(has(out, want), "no \"%s\" in:\n%s", want, out);
	orphan_line(cl, 1, h0, want, sizeof(want));
	strncat(want, " of metadata server 0", sizeof(want) - strlen(want) - 1);
	ck_assert_msg(has(out, want), "no \"%s\" in:\n%s", want, out);
	ck_assert(!exists(cl, 1, h0, "") && !exists(cl, 1, h1, ""));
	ck_assert_int_eq(check(cl, 1, false, out, CHECK_OUT), 0);
	free(out);
	cl_destroy(cl);
}
END_TEST

/* ---- a create in flight ------------------------------------------------------- */

/* A datafile of server i that is not in before[0..n), waiting up to ms. */
static uint64_t new_datafile(struct cluster *cl, int i, const uint64_t *before, size_t n,
			     int ms)
{
	static uint64_t now[MAXH];

	for (double t0 = now_ms(); now_ms() - t0 < ms; usleep(20 * 1000)) {
		size_t m = datafiles(cl, i, now, MAXH);

		for (size_t k = 0; k < m; k++)
			if (!in(before, n, now[k]))
				return now[k];
	}
	return 0;
}

START_TEST(test_repair_leaves_the_datafile_of_a_create_in_progress)
{
	/* Long enough for the check, the stop and the restart while the create
	 * waits on a hung server, on a slow and loaded machine too (the wait
	 * ends at SIGCONT, so this costs nothing when all goes well). */
	struct cluster *cl = start(90000);
	static uint64_t before[MAXH];
	char *out = malloc(CHECK_OUT), want[1400];
	size_t nb = datafiles(cl, 2, before, MAXH);
	rpfs_client_t *c;
	uint64_t h;
	pid_t pid;
	int status;

	ck_assert(out);
	/* The create's IO_CREATE on server 3 hangs: it stays in progress,
	 * its datafile already made on server 2. */
	ck_assert(cl_signal(cl, 3, SIGSTOP) == 0);
	fflush(NULL);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		rpfs_client_t *wc;
		rpfs_file_t *f;
		char *buf = malloc(FILE_LEN);

		if (!buf || rpfs_init(cl_config(cl), &wc) ||
		    rpfs_create(wc, "/slow", 0644, 0, &all4, &f))
			_exit(1);
		fill(buf, FILE_LEN, 3);
		if (rpfs_pwrite(f, buf, FILE_LEN, 0) != (ssize_t)FILE_LEN || rpfs_sync(f))
			_exit(2);
		rpfs_close(f);
		rpfs_finalize(wc);
		_exit(0);
	}
	h = new_datafile(cl, 2, before, nb, 10000);
	ck_assert_msg(h, "the create made no datafile on server 2");
	ck_assert(cl_stop(cl, 2) == 0);

	ck_assert_int_eq(check(cl, 2, true, out, CHECK_OUT), 0);
	orphan_line(cl, 2, h, want, sizeof(want));
	ck_assert_msg(has(out, want) && has(out, "in progress") &&
			      !has(out, "[repaired]"),
		      "no \"%s ... in progress\" in:\n%s", want, out);
	ck_assert(exists(cl, 2, h, "") && exists(cl, 2, h, ".sum"));

	/* The create goes on and its file is whole. */
	ck_assert(cl_restart(cl, 2) == 0);
	ck_assert(cl_signal(cl, 3, SIGCONT) == 0);
	ck_assert(waitpid(pid, &status, 0) == pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the create or its writes failed (%d)", status);
	c = client(cl);
	expect_intact(c, "/slow", 3);
	rpfs_finalize(c);
	free(out);
	cl_destroy(cl);
}
END_TEST

/* ---- for real: kill -9 during creates ----------------------------------------- */

struct ack {
	uint32_t worker, i;
	uint64_t handle;
};

/* Create, write and close files until the metadata server is gone; tell
 * each one done (acknowledged) through fd. */
static void creator(struct cluster *cl, uint32_t w, int fd)
{
	char *buf = malloc(FILE_LEN), path[64];
	rpfs_client_t *wc;

	if (!buf || rpfs_init(cl_config(cl), &wc))
		_exit(1);
	for (uint32_t i = 0; i < 100000; i++) {
		struct rpfs_stat st;
		struct ack a = {w, i, 0};
		rpfs_file_t *f;

		snprintf(path, sizeof(path), "/k%u-%u", w, i);
		if (rpfs_create(wc, path, 0644, 0, &all4, &f))
			break;
		fill(buf, FILE_LEN, 1000 * (uint64_t)w + i);
		if (rpfs_pwrite(f, buf, FILE_LEN, 0) != (ssize_t)FILE_LEN || rpfs_sync(f))
			break;
		rpfs_file_attr(f, &st);
		rpfs_close(f);
		a.handle = st.handle;
		if (write(fd, &a, sizeof(a)) != (ssize_t)sizeof(a))
			break;
	}
	_exit(0);
}

/* NWORKERS creators (numbered from w0) until kill -9 of the metadata
 * server; it restarts. The creates acknowledged are added to acks. */
static void creates_then_kill(struct cluster *cl, uint32_t w0, struct ack *acks,
			      size_t *nacks)
{
	pid_t pids[NWORKERS];
	int pfd[2];

	ck_assert(pipe(pfd) == 0);
	fflush(NULL);
	for (uint32_t w = 0; w < NWORKERS; w++) {
		pids[w] = fork();
		ck_assert(pids[w] >= 0);
		if (pids[w] == 0) {
			close(pfd[0]);
			creator(cl, w0 + w, pfd[1]);
		}
	}
	close(pfd[1]);
	/* Creates under way (the first one acknowledged), then kill -9. */
	ck_assert(read(pfd[0], &acks[*nacks], sizeof(acks[0])) == sizeof(acks[0]));
	(*nacks)++;
	usleep(KILL_AFTER * 1000);
	ck_assert(cl_kill(cl, 0) == 0);
	for (ssize_t n; *nacks < MAXH && (n = read(pfd[0], &acks[*nacks],
						   sizeof(acks[0]))) == sizeof(acks[0]);)
		(*nacks)++;
	close(pfd[0]);
	for (int w = 0; w < NWORKERS; w++)
		waitpid(pids[w], NULL, 0);
	ck_assert(cl_restart(cl, 0) == 0);
}

/* Datafiles of server i whose handle no file of the store has. */
static size_t unowned(struct cluster *cl, int i, const uint64_t *files, size_t nfiles)
{
	static uint64_t dfs[MAXH];
	size_t n = datafiles(cl, i, dfs, MAXH), count = 0;

	for (size_t k = 0; k < n; k++)
		count += !in(files, nfiles, dfs[k]);
	return count;
}

/* Datafiles on the I/O-only servers that no file of the store has. */
static size_t cut_short(struct cluster *cl, const uint64_t *files, size_t nfiles)
{
	size_t n = 0;

	for (int i = 1; i < NSRV; i++)
		n += unowned(cl, i, files, nfiles);
	return n;
}

START_TEST(test_kill9_during_creates_leaves_only_what_check_finds)
{
	struct cluster *cl = start(3000);
	static uint64_t files[MAXH], dfs[MAXH];
	static struct ack acks[MAXH];
	char *out = malloc(CHECK_OUT), want[1400];
	size_t nacks = 0, nfiles = 0, left = 0;
	rpfs_client_t *c;
	int round;

	ck_assert(out);
	/* Until a create was cut short (it nearly always is at once). */
	for (round = 0; round < ROUNDS && (!round || !cut_short(cl, files, nfiles));
	     round++) {
		creates_then_kill(cl, (uint32_t)round * NWORKERS, acks, &nacks);
		nfiles = store_handles(cl, files, MAXH);
	}
	fprintf(stderr, "%zu creates acknowledged, %d kills\n", nacks, round);
	ck_assert_msg(cut_short(cl, files, nfiles),
		      "no create was cut short by %d kills: nothing to find", round);
	for (size_t k = 0; k < nacks; k++)
		ck_assert_msg(in(files, nfiles, acks[k].handle),
			      "acknowledged /k%u-%u is not in the store", acks[k].worker,
			      acks[k].i);

	/* Each I/O-only server, stopped, checked while the metadata server
	 * runs: every datafile the store has no file for is reported, then
	 * removed; nothing else is. */
	for (int i = 1; i < NSRV; i++) {
		size_t n, orphans = 0;

		ck_assert(cl_stop(cl, i) == 0);
		n = datafiles(cl, i, dfs, MAXH);
		for (size_t k = 0; k < n; k++)
			orphans += !in(files, nfiles, dfs[k]);
		ck_assert_int_eq(check(cl, i, false, out, CHECK_OUT), orphans ? 1 : 0);
		for (size_t k = 0; k < n; k++) {
			bool orphan = !in(files, nfiles, dfs[k]);

			orphan_line(cl, i, dfs[k], want, sizeof(want));
			ck_assert_msg(has(out, want) == orphan,
				      "server %d: %s %s reported:\n%s", i, want,
				      orphan ? "not" : "wrongly", out);
		}
		ck_assert_int_eq(check(cl, i, true, out, CHECK_OUT), orphans ? 1 : 0);
		for (size_t k = 0; k < n; k++)
			ck_assert_msg(exists(cl, i, dfs[k], "") ==
					      in(files, nfiles, dfs[k]),
				      "server %d: datafile %016" PRIx64 " %s", i, dfs[k],
				      in(files, nfiles, dfs[k]) ? "removed" : "left");
		ck_assert_int_eq(check(cl, i, false, out, CHECK_OUT), 0);
		left += orphans;
		fprintf(stderr, "server %d: %zu datafiles, %zu left by cut creates\n", i,
			n, orphans);
	}
	/* Server 0 (both roles) checks its own handles in its own store. */
	{
		size_t n;

		ck_assert(cl_stop(cl, 0) == 0);
		n = datafiles(cl, 0, dfs, MAXH);
		for (size_t k = 0; k < n; k++)
			left += !in(files, nfiles, dfs[k]);
		check(cl, 0, true, out, CHECK_OUT);
		for (size_t k = 0; k < n; k++)
			ck_assert_msg(exists(cl, 0, dfs[k], "") ==
					      in(files, nfiles, dfs[k]),
				      "server 0: datafile %016" PRIx64 " %s", dfs[k],
				      in(files, nfiles, dfs[k]) ? "removed" : "left");
		ck_assert_int_eq(check(cl, 0, false, out, CHECK_OUT), 0);
	}
	fprintf(stderr, "%zu datafiles left by creates cut short, all reclaimed\n", left);

	ck_assert(cl_start_all(cl) == 0);
	c = client(cl);
	for (size_t k = 0; k < nacks; k++) {
		char path[64];

		snprintf(path, sizeof(path), "/k%u-%u", acks[k].worker, acks[k].i);
		expect_intact(c, path, 1000 * (uint64_t)acks[k].worker + acks[k].i);
	}
	rpfs_finalize(c);
	free(out);
	cl_destroy(cl);
}
END_TEST

static Suite *orphans_suite(void)
{
	Suite *s = suite_create("orphans");
	TCase *tc;

	tc = tcase_create("check");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_orphan_on_an_io_only_server_is_found_and_reclaimed);
	tcase_add_test(tc, test_metadata_server_down_makes_datafiles_unknown_not_orphans);
	tcase_add_test(tc, test_a_server_with_both_roles_asks_the_other_metadata_server);
	tcase_add_test(tc, test_repair_leaves_the_datafile_of_a_create_in_progress);
	suite_add_tcase(s, tc);

	tc = tcase_create("crash");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_kill9_during_creates_leaves_only_what_check_finds);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return cl_run_suite(argc, argv, orphans_suite);
}
