/* Erasure-coded files through librpfs (issue 29, steps 2 to 4 of
 * docs/design/erasure-coding.md): a file made ec:2+1 (the servers'
 * ec_preview setting lets new files be ec until the degraded service
 * exists) is written and truncated through the ordinary calls, and its
 * parity datafile is compared byte for byte with the parity ec_code
 * computes from its data datafiles, read from the servers' storage:
 *
 * - the layout: 2 data slots and 1 parity slot on 3 distinct servers,
 *   reported as ec:2+1; counts and codes that don't fit are refused
 *   saying why, and without ec_preview ec is refused naming the setting;
 * - four threads writing disjoint interleaved 47008-byte records (as
 *   MPI ranks do), several times over, each call crossing cells of the
 *   same stripes: the file reads back as written, parity agrees;
 * - overlapping random writes from four threads: parity agrees;
 * - truncate down into the middle of a cell, then up again: the bytes
 *   are the model's (zeros past the cut) and parity agrees (the cut
 *   bytes left the parity before they left the data cells);
 * - the parity member's server stopped or killed (step 3): reads and
 *   writes go on, the member marked stale (rpfs_verify says so, naming
 *   it); back, it is re-encoded from the data members while four writers
 *   go on; then verify passes, the bytes are the writers' and the parity
 *   on disk is the code of the data;
 * - a data member's server killed under four writers: restarted, its
 *   crash list has the parity marked stale and re-encoded;
 * - a data member's server killed or stopped (step 4): its cells are
 *   decoded, under holds, exactly, while a writer rewrites the other
 *   data member's cells. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <isa-l/crc.h>

#include "cluster.h"
#include "config.h"
#include "ec_code.h"
#include "rpfs.h"
#include "rpfs_admin.h"
#include "testkit.h"
#include "wire.h"

#define NSRV	      4
#define K	      2
#define P	      1
#define SU	      (64 * 1024)
#define RECORD	      47008
#define RANKS	      4
#define ROUNDS	      3
#define RECS	      24		/* records a rank writes a round: 4.5 MB in all */
#define SPAN	      (2 * 1024 * 1024) /* logical bytes the random writers touch */
#define RANDOM_WRITES 120

static struct cluster *start(bool preview)
{
	struct cl_opts o = {.nservers = NSRV, .nmeta = 1, .stripe_unit = SU};
	struct cluster *cl;

	if (preview)
		setenv("RPFS_EC_PREVIEW", "1", 1);
	else
		unsetenv("RPFS_EC_PREVIEW");
	cl = cl_start(&o);
	ck_assert_msg(cl, "couldn't start %d servers (see stderr)", NSRV);
	return cl;
}

/* A cluster with ec_preview whose metadata server finds a server down
 * within a second (heartbeats every 200 ms), and a transport timeout of
 * 10 s: writes and reads wait for the heartbeat, not the timeout. */
static struct cluster *start_watched(void)
{
	struct cl_opts o = {
		.nservers = NSRV, .nmeta = 1, .stripe_unit = SU, .timeout_ms = 10000};
	struct cluster *cl;

	setenv("RPFS_EC_PREVIEW", "1", 1);
	setenv("RPFS_HEARTBEAT_MS", "200", 1);
	setenv("RPFS_HEARTBEAT_TIMEOUT_MS", "1000", 1);
	cl = cl_start(&o);
	ck_assert_msg(cl, "couldn't start %d servers (see stderr)", NSRV);
	return cl;
}

/* An ec:2+1 file over 2 data slots from I/O server 0. */
static rpfs_file_t *ec_create(rpfs_client_t *c, const char *path)
{
	struct rpfs_create_opts o = {
		.stripe_unit = SU, .stripe_count = K, .first_server = 0};
	char red[32];
	rpfs_file_t *f;
	int ret = rpfs_create_redundancy(c, path, 0644, RPFS_O_EXCL | RPFS_O_RDWR, &o,
					 "ec:2+1", &f);

	ck_assert_msg(!ret, "create %s: %s", path, rpfs_errmsg());
	ck_assert_int_eq(rpfs_file_redundancy(f, red, sizeof(red)), 0);
	ck_assert_str_eq(red, "ec:2+1");
	return f;
}

/* Slot s's datafile, zero-extended to len (a missing one is all zeros);
 * its real length into *real when real is not NULL. */
static void datafile(struct cluster *cl, const struct rpfs_config *cfg,
		     const struct rpfs_stat *st, uint32_t slot, unsigned char *buf,
		     size_t len, off_t *real)
{
	uint32_t io = (st->first_server + slot) % cfg->nio;
	char path[1200];
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "%s/data/%016" PRIx64, cl_dir(cl, (int)cfg->io[io]),
		 st->handle);
	memset(buf, 0, len);
	if (real)
		*real = 0;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	got = pread(fd, buf, len, 0);
	ck_assert(got >= 0);
	if (real)
		*real = lseek(fd, 0, SEEK_END);
	close(fd);
}

/* The parity datafile is the code of the two data datafiles, byte for
 * byte over len local bytes; no parity byte lies past len. */
static void assert_parity_agrees(struct cluster *cl, rpfs_file_t *f, size_t len)
{
	unsigned char *data[K], *want[P], *have = malloc(len);
	struct rpfs_config cfg;
	struct rpfs_stat st;
	struct ec_code code;
	char why[512] = "";
	off_t real;

	ck_assert_msg(
		!rpfs_config_load_opts(cl_config(cl), NULL, 0, &cfg, why, sizeof(why)),
		"config: %s", why);
	rpfs_file_attr(f, &st);
	ck_assert(have && !ec_code_init(&code, K, P));
	for (uint32_t i = 0; i < K; i++) {
		data[i] = malloc(len);
		ck_assert(data[i]);
		datafile(cl, &cfg, &st, i, data[i], len, NULL);
	}
	for (uint32_t j = 0; j < P; j++) {
		long long at;

		want[j] = malloc(len);
		ck_assert(want[j]);
		ec_encode(&code, len, data, want);
		datafile(cl, &cfg, &st, K + j, have, len, &real);
		at = first_diff(want[j], have, len);
		ck_assert_msg(at < 0,
			      "parity cell %u disagrees with the data at local byte %lld",
			      j, at);
		ck_assert_msg((size_t)real <= len,
			      "parity datafile %u: %lld bytes, past %zu", j,
			      (long long)real, len);
		free(want[j]);
	}
	for (uint32_t i = 0; i < K; i++)
		free(data[i]);
	free(have);
	ec_code_fini(&code);
	rpfs_config_free(&cfg);
}

START_TEST(test_the_layout_and_its_refusals)
{
	struct cluster *cl = start(true);
	rpfs_client_t *c = client(cl);
	struct rpfs_create_opts o = {
		.stripe_unit = SU, .stripe_count = 3, .first_server = -1};
	rpfs_file_t *f = ec_create(c, "/f"), *g = NULL;
	struct rpfs_stat st;
	char red[32];

	rpfs_file_attr(f, &st);
	ck_assert_uint_eq(st.stripe_count, K);
	ck_assert_uint_eq(st.stripe_unit, SU);
	rpfs_close(f);
	ck_assert_int_eq(rpfs_stat_redundancy(c, "/f", red, sizeof(red)), 0);
	ck_assert_str_eq(red, "ec:2+1");
	/* 3 data slots are not groups of 2 */
	ck_assert_int_eq(rpfs_create_redundancy(c, "/g", 0644, RPFS_O_EXCL | RPFS_O_RDWR,
						&o, "ec:2+1", &g),
			 -EINVAL);
	ck_assert_msg(strstr(rpfs_errmsg(), "a multiple of 2"), "%s", rpfs_errmsg());
	/* 5 servers for ec:4+1 */
	ck_assert_int_eq(rpfs_create_redundancy(c, "/g", 0644, RPFS_O_EXCL | RPFS_O_RDWR,
						NULL, "ec:4+1", &g),
			 -EINVAL);
	ck_assert_msg(strstr(rpfs_errmsg(), "needs 5 I/O servers, the cluster has 4"),
		      "%s", rpfs_errmsg());
	/* the cluster's default count (every server) shrinks to whole groups */
	ck_assert_int_eq(rpfs_create_redundancy(c, "/h", 0644, RPFS_O_EXCL | RPFS_O_RDWR,
						NULL, "ec:2+2", &g),
			 0);
	rpfs_file_attr(g, &st);
	ck_assert_uint_eq(st.stripe_count, 2);
	rpfs_close(g);
	/* a directory's default, inherited */
	ck_assert_int_eq(rpfs_mkdir(c, "/d", 0755), 0);
	ck_assert_int_eq(rpfs_setstripe_redundancy(c, "/d", 0, 0, "ec:2+1"), 0);
	g = create(c, "/d/x");
	ck_assert_int_eq(rpfs_file_redundancy(g, red, sizeof(red)), 0);
	ck_assert_str_eq(red, "ec:2+1");
	rpfs_close(g);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_without_ec_preview_ec_is_refused_naming_the_setting)
{
	struct cluster *cl = start(false);
	rpfs_client_t *c = client(cl);
	rpfs_file_t *f = NULL;
	struct rpfs_stat st;

	ck_assert_int_eq(rpfs_create_redundancy(c, "/f", 0644, RPFS_O_EXCL | RPFS_O_RDWR,
						NULL, "ec:2+1", &f),
			 -EOPNOTSUPP);
	ck_assert_msg(strstr(rpfs_errmsg(), "ec_preview"), "%s", rpfs_errmsg());
	ck_assert_int_eq(rpfs_stat(c, "/f", &st), -ENOENT);
	ck_assert_int_eq(rpfs_mkdir(c, "/d", 0755), 0);
	ck_assert_int_eq(rpfs_setstripe_redundancy(c, "/d", 0, 0, "ec:2+1"), -EOPNOTSUPP);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

struct rank {
	rpfs_file_t *f;
	int id, round;
	uint64_t seed;
	int failed;
};

/* Rank id's records of a round: record r of rank id at (r * RANKS + id) *
 * RECORD, its bytes from (round, id, r). */
static void *rank_main(void *arg)
{
	struct rank *rk = arg;
	unsigned char *buf = malloc(RECORD);

	for (int r = 0; r < RECS && buf && !rk->failed; r++) {
		uint64_t off = ((uint64_t)r * RANKS + (uint64_t)rk->id) * RECORD;
		ssize_t n;

		fill(buf, RECORD,
		     (uint64_t)rk->round << 32 | (uint64_t)rk->id << 16 | (uint64_t)r);
		n = rpfs_pwrite(rk->f, buf, RECORD, off);
		if (n != RECORD)
			rk->failed = n < 0 ? (int)n : -EIO;
	}
	free(buf);
	return NULL;
}

START_TEST(test_interleaved_records_read_back_and_keep_parity)
{
	struct cluster *cl = start(true);
	rpfs_client_t *c = client(cl);
	rpfs_file_t *f = ec_create(c, "/rec");
	size_t total = (size_t)RECS * RANKS * RECORD;
	unsigned char *want = malloc(total), *got = malloc(total);

	ck_assert(want && got);
	for (int round = 0; round < ROUNDS; round++) {
		struct rank rk[RANKS];
		pthread_t t[RANKS];

		for (int k = 0; k < RANKS; k++) {
			rk[k] = (struct rank){f, k, round, 0, 0};
			ck_assert(!pthread_create(&t[k], NULL, rank_main, &rk[k]));
		}
		for (int k = 0; k < RANKS; k++) {
			pthread_join(t[k], NULL);
			ck_assert_msg(!rk[k].failed, "rank %d: %s", k, rpfs_errmsg());
		}
	}
	for (int r = 0; r < RECS; r++)
		for (int k = 0; k < RANKS; k++)
			fill(want + ((size_t)r * RANKS + (size_t)k) * RECORD, RECORD,
			     (uint64_t)(ROUNDS - 1) << 32 | (uint64_t)k << 16 |
				     (uint64_t)r);
	read_all(f, got, total, 0);
	ck_assert_msg(first_diff(want, got, total) < 0, "wrong byte at %lld",
		      first_diff(want, got, total));
	/* each data datafile holds half the file, rounded up to cells */
	assert_parity_agrees(cl, f, total / K + SU);
	/* and rpfs_verify, through the servers, says so */
	{
		uint64_t checked = 0, where = 0;

		ck_assert_msg(!rpfs_verify(f, &checked, &where), "%s", rpfs_errmsg());
		ck_assert_uint_ge(checked, total + total / K);
	}
	rpfs_close(f);
	free(want);
	free(got);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

struct writer {
	rpfs_file_t *f;
	uint64_t seed;
	int failed;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	unsigned char *buf = malloc(256 * 1024);

	for (int n = 0; n < RANDOM_WRITES && buf && !w->failed; n++) {
		uint64_t len = rnd_size(&w->seed, 256 * 1024);
		uint64_t off = rnd_range(&w->seed, 0, SPAN - len);
		ssize_t got;

		fill(buf, len, rnd_next(&w->seed));
		got = rpfs_pwrite(w->f, buf, len, off);
		if (got != (ssize_t)len)
			w->failed = got < 0 ? (int)got : -EIO;
	}
	free(buf);
	return NULL;
}

START_TEST(test_overlapping_writers_and_truncates_keep_parity)
{
	struct cluster *cl = start(true);
	rpfs_client_t *c = client(cl);
	rpfs_file_t *f = ec_create(c, "/rnd");
	struct writer w[4];
	pthread_t t[4];
	unsigned char *before = malloc(SPAN), *after = malloc(SPAN);
	uint64_t cut = 3 * SU + 12345; /* in the middle of data slot 1's 2nd cell */
	struct rpfs_stat st;

	ck_assert(before && after);
	for (int k = 0; k < 4; k++) {
		w[k] = (struct writer){f, 77 + (uint64_t)k, 0};
		ck_assert(!pthread_create(&t[k], NULL, writer_main, &w[k]));
	}
	for (int k = 0; k < 4; k++) {
		pthread_join(t[k], NULL);
		ck_assert_msg(!w[k].failed, "writer %d: %s", k, rpfs_errmsg());
	}
	assert_parity_agrees(cl, f, SPAN / K + SU);
	/* down into a cell: the cut bytes leave the parity too */
	read_all(f, before, SPAN, 0);
	ck_assert_int_eq(rpfs_truncate(f, cut), 0);
	ck_assert_int_eq(rpfs_stat(c, "/rnd", &st), 0);
	ck_assert_uint_eq(st.size, cut);
	assert_parity_agrees(cl, f, SPAN / K + SU);
	/* and up again: zeros past the cut */
	ck_assert_int_eq(rpfs_truncate(f, SPAN), 0);
	memset(before + cut, 0, SPAN - cut);
	read_all(f, after, SPAN, 0);
	ck_assert_msg(first_diff(before, after, SPAN) < 0, "wrong byte at %lld",
		      first_diff(before, after, SPAN));
	assert_parity_agrees(cl, f, SPAN / K + SU);
	/* to nothing */
	ck_assert_int_eq(rpfs_truncate(f, 0), 0);
	assert_parity_agrees(cl, f, SPAN / K + SU);
	rpfs_close(f);
	free(before);
	free(after);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* Writers of disjoint regions of a shared model, as MPI ranks: each
 * writes random pieces of its own quarter of SPAN until told to stop. */
struct region_writer {
	rpfs_file_t *f;
	unsigned char *model; /* SPAN bytes; this writer's quarter only */
	int k;
	uint64_t seed;
	atomic_int *stop;
	int failed;
	char msg[512]; /* rpfs_errmsg of the failure (per thread) */
	long writes;
};

static void *region_main(void *arg)
{
	struct region_writer *w = arg;
	uint64_t base = (uint64_t)w->k * (SPAN / 4);
	unsigned char *buf = malloc(64 * 1024);

	while (buf && !w->failed && !atomic_load(w->stop)) {
		uint64_t len = rnd_size(&w->seed, 64 * 1024);
		uint64_t off = base + rnd_range(&w->seed, 0, SPAN / 4 - len);
		ssize_t got;

		fill(buf, len, rnd_next(&w->seed));
		got = rpfs_pwrite(w->f, buf, len, off);
		if (got != (ssize_t)len) {
			w->failed = got < 0 ? (int)got : -EIO;
			snprintf(w->msg, sizeof(w->msg), "%s", rpfs_errmsg());
			break;
		}
		memcpy(w->model + off, buf, len);
		w->writes++;
	}
	free(buf);
	return NULL;
}

/* Counter name of server i (rpfs stats). */
static uint64_t stat_of(rpfs_client_t *c, int i, const char *name)
{
	struct rpfs_server_stat st[RPFS_STATS_MAX];
	int n = rpfs_admin_server_stats(c, i, st, RPFS_STATS_MAX);

	ck_assert_msg(n > 0, "stats of server %d: %s", i, rpfs_errmsg());
	return rpfs_admin_stat(st, n, name, UINT64_MAX);
}

/* Does server i's log say s? */
static bool log_says(struct cluster *cl, int i, const char *s)
{
	char line[1024];
	bool found = false;
	FILE *fp = fopen(cl_log(cl, i), "r");

	while (fp && !found && fgets(line, sizeof(line), fp))
		found = strstr(line, s) != NULL;
	if (fp)
		fclose(fp);
	return found;
}

/* The parity member's server (I/O server 2) lost, stopped (SIGSTOP) or
 * killed (-9): reads go on (they touch data cells only); writes go on
 * too, once the metadata server's heartbeat finds it unreachable (the
 * data server's forward waiting on it ends then), the member marked stale,
 * and rpfs_verify says so, naming it; later writes are as fast as before.
 * Back (SIGCONT, or restarted), it is re-encoded from the data members by
 * its own server while four writers go on writing their regions: then
 * rpfs_verify passes, the file reads back as the writers' model, and the
 * parity datafile on disk is the code of the data datafiles byte for
 * byte. */
#define RESYNCED "parity member in slot 2 (I/O server 2) resynced"
static void parity_member_lost(bool kill)
{
	unsigned char *model = malloc(SPAN), *back = malloc(SPAN);
	struct region_writer w[4];
	atomic_int stop = 0;
	uint64_t checked = 0, where = 0;
	struct cluster *cl;
	rpfs_client_t *c;
	rpfs_file_t *f;
	struct rpfs_stat st;
	pthread_t t[4];
	double t0;
	int v = -1;

	ck_assert(model && back);
	/* slow enough that the writers meet the re-encoding's holds */
	setenv("RPFS_RESYNC_MBPS", "2", 1);
	cl = start_watched();
	c = client(cl);
	f = ec_create(c, "/p");
	fill(model, SPAN, 5);
	write_all(f, model, SPAN, 0);
	rpfs_file_attr(f, &st);
	/* slot 2, the parity, is on I/O server first + 2: not server 0 */
	ck_assert_uint_eq(st.first_server, 0);
	if (kill)
		ck_assert_int_eq(cl_kill(cl, 2), 0);
	else
		ck_assert_int_eq(cl_signal(cl, 2, SIGSTOP), 0);
	read_all(f, back, SPAN, 0);
	ck_assert(!memcmp(model, back, SPAN));
	/* written: when the heartbeat finds the member down (1 s) */
	t0 = now_ms();
	fill(model + 10, 1000, 6);
	write_all(f, model + 10, 1000, 10);
	ck_assert_msg(now_ms() - t0 < 8000, "%.0f ms", now_ms() - t0);
	/* and again, other bytes further on: at once */
	t0 = now_ms();
	fill(model + 2 * SU + 100, 3000, 9);
	write_all(f, model + 2 * SU + 100, 3000, 2 * SU + 100);
	ck_assert_msg(now_ms() - t0 < 1000, "%.0f ms", now_ms() - t0);
	read_all(f, back, SPAN, 0);
	ck_assert_msg(first_diff(model, back, SPAN) < 0, "wrong byte at %lld",
		      first_diff(model, back, SPAN));
	/* the member missed deltas: stale, and verify says so */
	ck_assert_int_eq(rpfs_verify(f, &checked, &where), -ESTALE);
	ck_assert_msg(strstr(rpfs_errmsg(), "parity 0 of group 0") &&
			      strstr(rpfs_errmsg(), "io server 2") &&
			      strstr(rpfs_errmsg(), "stale"),
		      "%s", rpfs_errmsg());
	/* writers meanwhile, through its return and its re-encoding */
	for (int k = 0; k < 4; k++) {
		w[k] = (struct region_writer){.f = f,
					      .model = model,
					      .k = k,
					      .seed = 31 + (uint64_t)k,
					      .stop = &stop};
		ck_assert(!pthread_create(&t[k], NULL, region_main, &w[k]));
	}
	usleep(300 * 1000);
	if (kill)
		ck_assert_int_eq(cl_restart(cl, 2), 0);
	else
		ck_assert_int_eq(cl_signal(cl, 2, SIGCONT), 0);
	t0 = now_ms();
	while (!log_says(cl, 0, RESYNCED) && now_ms() - t0 < 60000)
		usleep(100 * 1000);
	atomic_store(&stop, 1);
	for (int k = 0; k < 4; k++) {
		pthread_join(t[k], NULL);
		ck_assert_msg(!w[k].failed, "writer %d: %s", k, w[k].msg);
		ck_assert_msg(w[k].writes > 0, "writer %d wrote nothing", k);
	}
	ck_assert_msg(log_says(cl, 0, RESYNCED),
		      "no word of the parity member's resync in %s", cl_log(cl, 0));
	/* the mark goes with the resync's report */
	for (int i = 0; i < 100; i++) {
		v = rpfs_verify(f, &checked, &where);
		if (v != -ESTALE)
			break;
		usleep(100 * 1000);
	}
	ck_assert_msg(!v, "%d: %s", v, rpfs_errmsg());
	/* the member re-encoded itself, under holds on both data members */
	ck_assert_uint_ge(stat_of(c, 2, "ec.parity_resynced"), 1);
	ck_assert_uint_ge(stat_of(c, 2, "ec.parity_resync_bytes"), SPAN / K);
	ck_assert_uint_ge(stat_of(c, 0, "ec.holds"), 1);
	ck_assert_uint_ge(stat_of(c, 1, "ec.holds"), 1);
	read_all(f, back, SPAN, 0);
	ck_assert_msg(first_diff(model, back, SPAN) < 0, "wrong byte at %lld",
		      first_diff(model, back, SPAN));
	assert_parity_agrees(cl, f, SPAN / K);
	rpfs_close(f);
	rpfs_finalize(c);
	cl_destroy(cl);
	unsetenv("RPFS_RESYNC_MBPS");
	free(model);
	free(back);
}

START_TEST(test_a_stopped_parity_member_is_marked_stale_and_re_encoded)
{
	parity_member_lost(false);
}
END_TEST

START_TEST(test_a_killed_parity_member_is_marked_stale_and_re_encoded)
{
	parity_member_lost(true);
}
END_TEST

/* A data member's server killed (-9) while four writers write: their
 * writes to it fail (a data member's loss is served in a later step),
 * naming it; restarted, its list of writes cut short (mirror_dirty.c)
 * has the group's parity marked stale, and re-encoded: rpfs_verify then
 * passes and the parity on disk is the code of the data, whatever bytes
 * the writes cut short left. */
START_TEST(test_a_data_member_killed_mid_write_leaves_parity_made_right)
{
	unsigned char *model = malloc(SPAN);
	struct region_writer w[4];
	atomic_int stop = 0;
	uint64_t checked = 0, where = 0;
	struct cluster *cl;
	rpfs_client_t *c;
	rpfs_file_t *f;
	pthread_t t[4];
	int v = -1, failed = 0;

	ck_assert(model);
	cl = start_watched();
	c = client(cl);
	f = ec_create(c, "/d");
	fill(model, SPAN, 8);
	write_all(f, model, SPAN, 0);
	for (int k = 0; k < 4; k++) {
		w[k] = (struct region_writer){.f = f,
					      .model = model,
					      .k = k,
					      .seed = 51 + (uint64_t)k,
					      .stop = &stop};
		ck_assert(!pthread_create(&t[k], NULL, region_main, &w[k]));
	}
	usleep(400 * 1000);
	/* data slot 1 is on I/O server 1 */
	ck_assert_int_eq(cl_kill(cl, 1), 0);
	usleep(300 * 1000);
	atomic_store(&stop, 1);
	for (int k = 0; k < 4; k++) {
		pthread_join(t[k], NULL);
		/* its writes to the killed member fail, naming it */
		if (w[k].failed) {
			failed++;
			ck_assert_msg(strstr(w[k].msg, "io server 1"),
				      "writer %d: %d: %s", k, w[k].failed, w[k].msg);
		}
	}
	ck_assert_int_eq(cl_restart(cl, 1), 0);
	for (int i = 0; i < 300; i++) {
		v = rpfs_verify(f, &checked, &where);
		if (!v)
			break;
		usleep(100 * 1000);
	}
	ck_assert_msg(!v, "%d: %s", v, rpfs_errmsg());
	assert_parity_agrees(cl, f, SPAN / K);
	rpfs_close(f);
	rpfs_finalize(c);
	cl_destroy(cl);
	free(model);
	(void)failed;
}
END_TEST

/* Writes random pieces of data slot 0's cells (logical [2c SU, 2c SU +
 * SU) of ec:2+1) until told to stop, keeping the model. */
struct cell0_writer {
	rpfs_file_t *f;
	unsigned char *model;
	uint64_t seed;
	atomic_int *stop;
	int failed;
	char msg[512];
	long writes;
};

static void *cell0_main(void *arg)
{
	struct cell0_writer *w = arg;
	unsigned char *buf = malloc(SU);

	while (buf && !w->failed && !atomic_load(w->stop)) {
		uint64_t cell = rnd_range(&w->seed, 0, SPAN / (2 * SU) - 1);
		uint64_t len = rnd_size(&w->seed, SU);
		uint64_t off = cell * 2 * SU + rnd_range(&w->seed, 0, SU - len);
		ssize_t got;

		fill(buf, len, rnd_next(&w->seed));
		got = rpfs_pwrite(w->f, buf, len, off);
		if (got != (ssize_t)len) {
			w->failed = got < 0 ? (int)got : -EIO;
			snprintf(w->msg, sizeof(w->msg), "%s", rpfs_errmsg());
			break;
		}
		memcpy(w->model + off, buf, len);
		w->writes++;
	}
	free(buf);
	return NULL;
}

/* A data member's server lost: reads of its cells are decoded from the
 * other data member and the parity (step 4 of the design), killed (-9)
 * or stopped (SIGSTOP: once the heartbeat finds it, a reopen learns it
 * down and reads go straight to decoding). Meanwhile a writer rewrites
 * the other data member's cells, whose deltas change the parity: each
 * decode holds the range still on that member, so every read of the
 * lost member's cells returns their bytes, never a mix (with the holds
 * made no-ops this fails, tried by hand). Back, reads are plain again. */
static void data_member_lost(bool kill)
{
	unsigned char *model = malloc(SPAN), *back = malloc(SPAN);
	struct cell0_writer w;
	atomic_int stop = 0;
	struct cluster *cl;
	rpfs_client_t *c;
	rpfs_file_t *f;
	pthread_t t;
	double t0;
	int v = -1;

	ck_assert(model && back);
	cl = start_watched();
	c = client(cl);
	f = ec_create(c, "/l");
	fill(model, SPAN, 12);
	write_all(f, model, SPAN, 0);
	/* data slot 1 is on I/O server 1 */
	if (kill) {
		ck_assert_int_eq(cl_kill(cl, 1), 0);
	} else {
		ck_assert_int_eq(cl_signal(cl, 1, SIGSTOP), 0);
		usleep(2500 * 1000); /* the heartbeat finds it */
		rpfs_close(f);
		ck_assert_int_eq(rpfs_open(c, "/l", RPFS_O_RDWR, &f), 0);
	}
	t0 = now_ms();
	read_all(f, back, SPAN, 0);
	ck_assert_msg(first_diff(model, back, SPAN) < 0, "wrong byte at %lld",
		      first_diff(model, back, SPAN));
	ck_assert_msg(now_ms() - t0 < 8000, "%.0f ms", now_ms() - t0);
	w = (struct cell0_writer){.f = f, .model = model, .seed = 99, .stop = &stop};
	ck_assert(!pthread_create(&t, NULL, cell0_main, &w));
	for (int round = 0; round < 30; round++) {
		read_all(f, back, SPAN, 0);
		/* the lost member's cells never change: decoded, they are
		 * exactly the model's */
		for (uint64_t cell = 0; cell < SPAN / (2 * SU); cell++) {
			uint64_t at = cell * 2 * SU + SU;

			ck_assert_msg(
				!memcmp(model + at, back + at, SU),
				"round %d: the lost cell at file offset %llu decoded "
				"wrong (byte %lld)",
				round, (unsigned long long)at,
				first_diff(model + at, back + at, SU));
		}
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	ck_assert_msg(!w.failed, "writer: %s", w.msg);
	ck_assert_msg(w.writes > 0, "the writer wrote nothing");
	read_all(f, back, SPAN, 0);
	ck_assert_msg(first_diff(model, back, SPAN) < 0, "wrong byte at %lld",
		      first_diff(model, back, SPAN));
	if (kill)
		ck_assert_int_eq(cl_restart(cl, 1), 0);
	else
		ck_assert_int_eq(cl_signal(cl, 1, SIGCONT), 0);
	rpfs_close(f);
	ck_assert_int_eq(rpfs_open(c, "/l", RPFS_O_RDWR, &f), 0);
	read_all(f, back, SPAN, 0);
	ck_assert_msg(first_diff(model, back, SPAN) < 0, "wrong byte at %lld",
		      first_diff(model, back, SPAN));
	/* (a restart reports the writes it may have cut short: the parity
	 * may be re-encoded first) */
	for (int i = 0; i < 300; i++) {
		uint64_t checked, where;

		v = rpfs_verify(f, &checked, &where);
		if (!v)
			break;
		usleep(100 * 1000);
	}
	ck_assert_msg(!v, "%d: %s", v, rpfs_errmsg());
	assert_parity_agrees(cl, f, SPAN / K);
	rpfs_close(f);
	rpfs_finalize(c);
	cl_destroy(cl);
	free(model);
	free(back);
}

START_TEST(test_a_killed_data_member_is_read_by_decoding)
{
	data_member_lost(true);
}
END_TEST

START_TEST(test_a_stopped_data_member_is_read_by_decoding)
{
	data_member_lost(false);
}
END_TEST

/* A block of a data member's datafile damaged on disk (a byte flipped
 * under its checksum): reads of it are decoded from the other data member
 * and the parity, the right bytes; with the parity damaged at the same
 * place too, the read fails naming the damage, never wrong bytes. */
START_TEST(test_a_damaged_data_block_is_read_by_decoding)
{
	struct cluster *cl = start(true);
	rpfs_client_t *c = client(cl);
	rpfs_file_t *f = ec_create(c, "/bad");
	unsigned char *model = malloc(SPAN), *back = malloc(SPAN);
	struct rpfs_config cfg;
	struct rpfs_stat st;
	char why[512] = "", path[1200];
	uint64_t local = SU + 5000; /* data slot 1's second cell */
	ssize_t n;

	ck_assert(model && back);
	ck_assert_msg(
		!rpfs_config_load_opts(cl_config(cl), NULL, 0, &cfg, why, sizeof(why)),
		"config: %s", why);
	fill(model, SPAN, 21);
	write_all(f, model, SPAN, 0);
	rpfs_file_attr(f, &st);
	for (int round = 0; round < 2; round++) {
		for (uint32_t slot = 1 + (uint32_t)round; slot >= 1 && slot <= 2;
		     slot--) {
			/* round 0: the data member's byte; round 1: the data
			 * member's again, then the parity's at the same place */
			uint32_t io = (st.first_server + slot) % cfg.nio;
			unsigned char b;
			int fd;

			snprintf(path, sizeof(path), "%s/data/%016" PRIx64,
				 cl_dir(cl, (int)cfg.io[io]), st.handle);
			fd = open(path, O_RDWR);
			ck_assert_msg(fd >= 0, "%s", path);
			ck_assert_int_eq(pread(fd, &b, 1, (off_t)local), 1);
			b ^= 0x40;
			ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)local), 1);
			close(fd);
		}
		if (round)
			break;
		/* the data member only: decoded, and the block mended there
		 * (the reader has write rights): its byte is back, verify
		 * finds nothing damaged, the server said so */
		read_all(f, back, SPAN, 0);
		ck_assert_msg(first_diff(model, back, SPAN) < 0, "wrong byte at %lld",
			      first_diff(model, back, SPAN));
		snprintf(path, sizeof(path), "%s/data/%016" PRIx64,
			 cl_dir(cl, (int)cfg.io[(st.first_server + 1) % cfg.nio]),
			 st.handle);
		{
			unsigned char b;
			int fd = open(path, O_RDONLY);

			ck_assert(fd >= 0 && pread(fd, &b, 1, (off_t)local) == 1);
			close(fd);
			/* slot 1's local byte SU + 5000 is file byte 3 SU + 5000 */
			ck_assert_msg(b == model[3 * SU + 5000],
				      "not mended: %02x, want %02x", b,
				      model[3 * SU + 5000]);
		}
		{
			uint64_t checked, where;

			ck_assert_msg(!rpfs_verify(f, &checked, &where), "%s",
				      rpfs_errmsg());
		}
		ck_assert(log_says(cl, (int)cfg.io[(st.first_server + 1) % cfg.nio],
				   "mended at offset"));
	}
	/* the parity too: nothing to decode from */
	n = rpfs_pread(f, back, SPAN, 0);
	ck_assert_int_lt(n, 0);
	ck_assert_msg(strstr(rpfs_errmsg(), "damaged") &&
			      strstr(rpfs_errmsg(), "io server 1") &&
			      strstr(rpfs_errmsg(), "io server 2"),
		      "%s", rpfs_errmsg());
	rpfs_config_free(&cfg);
	rpfs_close(f);
	rpfs_finalize(c);
	cl_destroy(cl);
	free(model);
	free(back);
}
END_TEST

/* A data member's storage lost (its server started again on an emptied
 * directory, as after a disk replaced): its datafile is gone, and reads of
 * its cells are decoded from the other data member and the parity. */
START_TEST(test_a_data_member_whose_storage_went_is_read_by_decoding)
{
	struct cluster *cl = start(true);
	rpfs_client_t *c = client(cl);
	rpfs_file_t *f = ec_create(c, "/wiped");
	unsigned char *model = malloc(SPAN), *back = malloc(SPAN);
	char cmd[1300];

	ck_assert(model && back);
	fill(model, SPAN, 33);
	write_all(f, model, SPAN, 0);
	/* data slot 1 is on I/O server 1 */
	ck_assert_int_eq(cl_stop(cl, 1), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/data'", cl_dir(cl, 1));
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(cl_restart(cl, 1), 0);
	read_all(f, back, SPAN, 0);
	ck_assert_msg(first_diff(model, back, SPAN) < 0, "wrong byte at %lld",
		      first_diff(model, back, SPAN));
	rpfs_close(f);
	rpfs_finalize(c);
	cl_destroy(cl);
	free(model);
	free(back);
}
END_TEST

/* A parity member's record of its data members' sizes that is well formed
 * but wrong (written behind the server's back with a valid checksum):
 * rpfs verify names the member and the slot the record is wrong for,
 * verify --repair has the member marked stale and its resync writes the
 * record again, right. */
static void ends_path(struct cluster *cl, const struct rpfs_config *cfg,
		      const struct rpfs_stat *st, uint32_t slot, char *path, size_t len)
{
	uint32_t io = (st->first_server + slot) % cfg->nio;

	snprintf(path, len, "%s/data/%016" PRIx64 ".ends", cl_dir(cl, (int)cfg->io[io]),
		 st->handle);
}

START_TEST(test_a_wrong_record_of_sizes_is_found_by_verify_and_repaired)
{
	struct cluster *cl = start(true);
	rpfs_client_t *c = client(cl);
	rpfs_file_t *f = ec_create(c, "/ends");
	unsigned char *buf = malloc(5 * SU), rec[40], back[40];
	struct rpfs_config cfg;
	struct rpfs_stat st;
	char path[1200], why[512] = "";
	uint64_t checked, where;
	uint32_t marked = 0, crc;
	int fd, v = -1, i;

	ck_assert(buf);
	ck_assert_msg(
		!rpfs_config_load_opts(cl_config(cl), NULL, 0, &cfg, why, sizeof(why)),
		"config: %s", why);
	fill(buf, 5 * SU, 41);
	write_all(f, buf, 5 * SU - 100, 0); /* slot 0: 3 cells less 100, slot 1: 2 */
	rpfs_file_attr(f, &st);
	ck_assert_int_eq(rpfs_verify(f, &checked, &where), 0);
	/* the parity slot (2) is on I/O server (first + 2) % 4 */
	ends_path(cl, &cfg, &st, K, path, sizeof(path));
	fd = open(path, O_RDONLY);
	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(pread(fd, rec, sizeof(rec), 0), 36);
	close(fd);
	ck_assert_mem_eq(rec, "RPFSEND1", 8);
	ck_assert_uint_eq(rec[8], K);
	ck_assert_uint_eq(get64(rec + 16), 3 * SU - 100);
	ck_assert_uint_eq(get64(rec + 24), 2 * SU);
	/* slot 1's size made wrong, the checksum made right */
	ck_assert_int_eq(cl_stop(cl, (int)cfg.io[(st.first_server + K) % cfg.nio]), 0);
	put64(rec + 24, 2 * SU + 4096);
	crc = crc32_iscsi(rec, 32, 0xffffffffu) ^ 0xffffffffu;
	put32(rec + 32, crc);
	fd = open(path, O_WRONLY);
	ck_assert(fd >= 0 && pwrite(fd, rec, 36, 0) == 36);
	close(fd);
	ck_assert_int_eq(cl_restart(cl, (int)cfg.io[(st.first_server + K) % cfg.nio]), 0);
	rpfs_close(f);
	ck_assert_int_eq(rpfs_open(c, "/ends", RPFS_O_RDWR, &f), 0);
	ck_assert_int_eq(rpfs_verify(f, &checked, &where), -EILSEQ);
	ck_assert_msg(strstr(rpfs_errmsg(),
			     "its record of its data members' sizes says 135168 "
			     "bytes for slot 1, which holds 131072"),
		      "%s", rpfs_errmsg());
	ck_assert_int_eq(rpfs_mirror_repair(f, &marked), 0);
	ck_assert_uint_eq(marked, 1);
	for (i = 0; i < 300 && (v = rpfs_verify(f, &checked, &where)); i++)
		usleep(100000);
	ck_assert_msg(!v, "not re-encoded in 30 s: %s", rpfs_errmsg());
	fd = open(path, O_RDONLY);
	ck_assert(fd >= 0 && pread(fd, back, sizeof(back), 0) == 36);
	close(fd);
	ck_assert_uint_eq(get64(back + 16), 3 * SU - 100);
	ck_assert_uint_eq(get64(back + 24), 2 * SU);
	rpfs_close(f);
	rpfs_finalize(c);
	rpfs_config_free(&cfg);
	cl_destroy(cl);
	free(buf);
}
END_TEST

/* Every server killed -9 at once while four threads write 47008-byte
 * records into one ec file (interleaved: each stripe has cells of several
 * writers): after the restart every acknowledged record reads back right,
 * the data servers' crash lists have the parity members re-encoded where a
 * write may have been cut short (rpfs verify passes within 30 s), and the
 * parity on disk is the code of the data byte for byte; the file's size
 * covers every acknowledged record. */
struct crash_rank {
	rpfs_file_t *f;
	int id;
	int acked; /* this rank's records 0 .. acked-1 were acknowledged */
};

#define CRASH_RECS 256 /* a rank's records at most: 48 MB in all */

static void *crash_rank_main(void *arg)
{
	struct crash_rank *w = arg;
	unsigned char *rec = malloc(RECORD);

	for (int r = 0; rec && r < CRASH_RECS; r++) {
		uint64_t off = ((uint64_t)r * RANKS + (uint64_t)w->id) * RECORD;

		fill(rec, RECORD, (uint64_t)w->id << 16 | (uint64_t)r | 1u << 31);
		if (rpfs_pwrite(w->f, rec, RECORD, off) != RECORD)
			break;
		__atomic_store_n(&w->acked, r + 1, __ATOMIC_RELEASE);
	}
	free(rec);
	return NULL;
}

START_TEST(test_every_server_killed_during_writes_leaves_parity_that_agrees)
{
	struct cluster *cl = start(true);
	rpfs_client_t *c = client(cl), *c2;
	rpfs_file_t *f = ec_create(c, "/crash");
	unsigned char *rec = malloc(RECORD), *back = malloc(RECORD);
	struct crash_rank w[RANKS];
	pthread_t t[RANKS];
	uint64_t checked, where, size = 0, need = 0;
	int i, v = -1;

	ck_assert(rec && back);
	for (int k = 0; k < RANKS; k++) {
		w[k] = (struct crash_rank){f, k, 0};
		ck_assert(!pthread_create(&t[k], NULL, crash_rank_main, &w[k]));
	}
	while (__atomic_load_n(&w[RANKS - 1].acked, __ATOMIC_ACQUIRE) < 20)
		usleep(1000);
	for (i = 0; i < NSRV; i++)
		ck_assert_int_eq(cl_kill(cl, i), 0);
	for (int k = 0; k < RANKS; k++)
		pthread_join(t[k], NULL);
	ck_assert_int_eq(cl_start_all(cl), 0);
	c2 = client(cl);
	ck_assert_int_eq(rpfs_open(c2, "/crash", RPFS_O_READ, &f), 0);
	for (int k = 0; k < RANKS; k++) {
		ck_assert_int_lt(w[k].acked, CRASH_RECS);
		for (int r = 0; r < w[k].acked; r++) {
			uint64_t off = ((uint64_t)r * RANKS + (uint64_t)k) * RECORD;

			fill(rec, RECORD, (uint64_t)k << 16 | (uint64_t)r | 1u << 31);
			read_all(f, back, RECORD, off);
			ck_assert_msg(
				first_diff(rec, back, RECORD) < 0,
				"rank %d: acknowledged record %d of %d lost (byte %lld)",
				k, r, w[k].acked, first_diff(rec, back, RECORD));
			if (off + RECORD > need)
				need = off + RECORD;
		}
	}
	ck_assert_int_eq(rpfs_getsize(f, &size), 0);
	ck_assert_msg(size >= need, "size %llu, acknowledged records reach %llu",
		      (unsigned long long)size, (unsigned long long)need);
	for (i = 0; i < 300 && (v = rpfs_verify(f, &checked, &where)); i++)
		usleep(100000);
	ck_assert_msg(!v, "parity still disagrees 30 s after the restart: %s",
		      rpfs_errmsg());
	assert_parity_agrees(cl, f, (size_t)(size / K + SU));
	rpfs_close(f);
	rpfs_finalize(c2);
	free(rec);
	free(back);
	(void)c; /* its connections died with the servers */
	cl_destroy(cl);
}
END_TEST

/* The size of an ec file with a data member lost comes from its parity
 * members' record of their data members' sizes (server/ec_ends.c), kept
 * by every delta, truncate and resync: files whose last byte is in the
 * lost member's cells (a write there, a hole grown by truncate into them,
 * a cut into them, records from four threads at once) and one never
 * written show their exact sizes, through rpfs_getsize and rpfs_stat, and
 * read back whole (decoded) with the member killed. */
struct shape {
	const char *path;
	uint64_t size;
};

START_TEST(test_sizes_with_a_data_member_lost_come_from_the_parity_record)
{
	size_t total = (size_t)RECS * RANKS * RECORD;
	struct cluster *cl = start_watched();
	rpfs_client_t *c = client(cl);
	unsigned char *buf = calloc(1, total + 8 * SU), *back = malloc(total + 8 * SU);
	struct shape sh[] = {
		/* written whole, its last byte in slot 1's row 3 */
		{"/seq", 7 * SU + 1000},
		/* one short write into slot 1's row 2: the rest holes */
		{"/sparse", 5 * SU + 110},
		/* 4 cells written, grown by truncate into slot 1's row 3 */
		{"/grown", 7 * SU + 5},
		/* 8 cells written, cut into slot 1's row 1 */
		{"/cut", 3 * SU + 77},
		/* never written */
		{"/empty", 0},
		/* records from four threads, once */
		{"/rec", total},
	};
	size_t n = sizeof(sh) / sizeof(sh[0]);
	rpfs_file_t *f;

	ck_assert(buf && back);
	for (size_t i = 0; i < n; i++) {
		f = ec_create(c, sh[i].path);
		if (!strcmp(sh[i].path, "/seq")) {
			fill(buf, sh[i].size, 31);
			write_all(f, buf, sh[i].size, 0);
		} else if (!strcmp(sh[i].path, "/sparse")) {
			write_all(f, (const unsigned char *)"0123456789", 10,
				  5 * SU + 100);
		} else if (!strcmp(sh[i].path, "/grown")) {
			fill(buf, 4 * SU, 32);
			write_all(f, buf, 4 * SU, 0);
			ck_assert_int_eq(rpfs_truncate(f, sh[i].size), 0);
		} else if (!strcmp(sh[i].path, "/cut")) {
			fill(buf, 8 * SU, 33);
			write_all(f, buf, 8 * SU, 0);
			ck_assert_int_eq(rpfs_truncate(f, sh[i].size), 0);
		} else if (!strcmp(sh[i].path, "/rec")) {
			struct rank rk[RANKS];
			pthread_t t[RANKS];

			for (int k = 0; k < RANKS; k++) {
				rk[k] = (struct rank){f, k, 0, 0, 0};
				ck_assert(
					!pthread_create(&t[k], NULL, rank_main, &rk[k]));
			}
			for (int k = 0; k < RANKS; k++) {
				pthread_join(t[k], NULL);
				ck_assert_msg(!rk[k].failed, "rank %d: %s", k,
					      rpfs_errmsg());
			}
		}
		rpfs_close(f);
	}
	/* data slot 1 is on I/O server 1 */
	ck_assert_int_eq(cl_kill(cl, 1), 0);
	for (size_t i = 0; i < n; i++) {
		struct rpfs_stat st;
		uint64_t size = 0;

		ck_assert_msg(!rpfs_open(c, sh[i].path, RPFS_O_READ, &f), "%s: %s",
			      sh[i].path, rpfs_errmsg());
		ck_assert_msg(!rpfs_getsize(f, &size), "%s: %s", sh[i].path,
			      rpfs_errmsg());
		ck_assert_msg(size == sh[i].size, "%s: size %llu, want %llu", sh[i].path,
			      (unsigned long long)size, (unsigned long long)sh[i].size);
		ck_assert_msg(!rpfs_stat(c, sh[i].path, &st), "%s: %s", sh[i].path,
			      rpfs_errmsg());
		ck_assert_uint_eq(st.size, sh[i].size);
		/* the bytes, decoded where they were on server 1 */
		memset(buf, 0, sh[i].size);
		if (!strcmp(sh[i].path, "/seq")) {
			fill(buf, sh[i].size, 31);
		} else if (!strcmp(sh[i].path, "/sparse")) {
			memcpy(buf + 5 * SU + 100, "0123456789", 10);
		} else if (!strcmp(sh[i].path, "/grown")) {
			fill(buf, 4 * SU, 32);
		} else if (!strcmp(sh[i].path, "/cut")) {
			fill(buf, 8 * SU, 33);
		} else if (!strcmp(sh[i].path, "/rec")) {
			for (int r = 0; r < RECS; r++)
				for (int k = 0; k < RANKS; k++)
					fill(buf + ((size_t)r * RANKS + (size_t)k) *
							     RECORD,
					     RECORD, (uint64_t)k << 16 | (uint64_t)r);
		}
		if (sh[i].size) {
			read_all(f, back, sh[i].size, 0);
			ck_assert_msg(first_diff(buf, back, sh[i].size) < 0,
				      "%s: wrong byte at %lld", sh[i].path,
				      first_diff(buf, back, sh[i].size));
		}
		rpfs_close(f);
	}
	rpfs_finalize(c);
	cl_destroy(cl);
	free(buf);
	free(back);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("ec_client");
	TCase *tc = tcase_create("ec");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_the_layout_and_its_refusals);
	tcase_add_test(tc, test_without_ec_preview_ec_is_refused_naming_the_setting);
	tcase_add_test(tc, test_interleaved_records_read_back_and_keep_parity);
	tcase_add_test(tc, test_overlapping_writers_and_truncates_keep_parity);
	tcase_add_test(tc, test_a_stopped_parity_member_is_marked_stale_and_re_encoded);
	tcase_add_test(tc, test_a_killed_parity_member_is_marked_stale_and_re_encoded);
	tcase_add_test(tc, test_a_data_member_killed_mid_write_leaves_parity_made_right);
	tcase_add_test(tc, test_a_killed_data_member_is_read_by_decoding);
	tcase_add_test(tc, test_a_stopped_data_member_is_read_by_decoding);
	tcase_add_test(tc, test_a_damaged_data_block_is_read_by_decoding);
	tcase_add_test(tc, test_a_data_member_whose_storage_went_is_read_by_decoding);
	tcase_add_test(tc,
		       test_sizes_with_a_data_member_lost_come_from_the_parity_record);
	tcase_add_test(tc,
		       test_every_server_killed_during_writes_leaves_parity_that_agrees);
	tcase_add_test(tc, test_a_wrong_record_of_sizes_is_found_by_verify_and_repaired);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return cl_run_suite(argc, argv, make_suite);
}
