/* Erasure-coded files through librpfs (issue 29, step 2 of
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
 * - the parity member's server stopped: reads go on (they touch data
 *   cells only); a write fails naming it once the metadata server's
 *   heartbeat finds it unreachable (its data server's forward waiting on
 *   it ends then), well before the client's own timeout would blame the
 *   data server; later writes fail at once; never a silent success. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "config.h"
#include "ec_code.h"
#include "rpfs.h"
#include "testkit.h"

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

START_TEST(test_a_stopped_parity_server_fails_writes_naming_it_not_reads)
{
	struct cl_opts o = {
		.nservers = NSRV, .nmeta = 1, .stripe_unit = SU, .timeout_ms = 10000};
	struct cluster *cl;
	rpfs_client_t *c;
	rpfs_file_t *f;
	unsigned char buf[3 * SU], back[3 * SU], other[3000];
	struct rpfs_stat st;
	char name[32];
	double t0;
	ssize_t n;

	setenv("RPFS_EC_PREVIEW", "1", 1);
	setenv("RPFS_HEARTBEAT_MS", "200", 1);
	setenv("RPFS_HEARTBEAT_TIMEOUT_MS", "1000", 1);
	cl = cl_start(&o);
	ck_assert(cl);
	c = client(cl);
	f = ec_create(c, "/p");
	fill(buf, sizeof(buf), 5);
	write_all(f, buf, sizeof(buf), 0);
	rpfs_file_attr(f, &st);
	/* slot 2, the parity, is on I/O server first + 2: not server 0 */
	ck_assert_uint_eq(st.first_server, 0);
	ck_assert_int_eq(cl_signal(cl, 2, SIGSTOP), 0);
	read_all(f, back, sizeof(back), 0);
	ck_assert(!memcmp(buf, back, sizeof(buf)));
	/* at once after the stop: when the heartbeat finds it (1 s) */
	snprintf(name, sizeof(name), "io server 2");
	t0 = now_ms();
	n = rpfs_pwrite(f, buf, 1000, 10);
	ck_assert_int_lt(n, 0);
	ck_assert_msg(strstr(rpfs_errmsg(), name), "%s", rpfs_errmsg());
	ck_assert_msg(now_ms() - t0 < 8000, "%.0f ms", now_ms() - t0);
	/* and again, other bytes further on: at once */
	fill(other, sizeof(other), 9);
	t0 = now_ms();
	n = rpfs_pwrite(f, other, sizeof(other), 2 * SU + 100);
	ck_assert_int_lt(n, 0);
	ck_assert_msg(strstr(rpfs_errmsg(), name), "%s", rpfs_errmsg());
	ck_assert_msg(now_ms() - t0 < 1000, "%.0f ms", now_ms() - t0);
	/* a failed write's bytes are the old or the new ones (its data cell
	 * may have taken them: the parity member is marked stale for that
	 * in design step 3); every other byte is as it was */
	read_all(f, back, sizeof(back), 0);
	ck_assert(!memcmp(buf, back, 10));
	ck_assert(!memcmp(buf + 1010, back + 1010, 2 * SU + 100 - 1010));
	ck_assert(!memcmp(buf + 10, back + 10, 1000) || !memcmp(buf, back + 10, 1000));
	ck_assert(!memcmp(buf + 2 * SU + 100, back + 2 * SU + 100, sizeof(other)) ||
		  !memcmp(other, back + 2 * SU + 100, sizeof(other)));
	ck_assert_int_eq(cl_signal(cl, 2, SIGCONT), 0);
	/* the second write's data cell took its bytes without a delta sent
	 * (the member was known down): the parity is behind it, and
	 * rpfs_verify finds that, naming the parity member and the offset
	 * (the first write's delta may have reached server 2 before it
	 * stopped, or after it went on: then only the second shows) */
	if (!memcmp(other, back + 2 * SU + 100, sizeof(other))) {
		uint64_t checked = 0, where = 0;
		int v = 0;

		for (int i = 0; i < 100; i++) {
			v = rpfs_verify(f, &checked, &where);
			if (v == -EILSEQ || !v)
				break;
			usleep(100 * 1000); /* server 2 answering again */
		}
		ck_assert_msg(v == -EILSEQ, "%d: %s", v, rpfs_errmsg());
		ck_assert_msg(strstr(rpfs_errmsg(), "parity 0 of group 0") &&
				      strstr(rpfs_errmsg(), name),
			      "%s", rpfs_errmsg());
		ck_assert_msg(where == 10 || where == 2 * SU + 100, "at %llu",
			      (unsigned long long)where);
	}
	rpfs_close(f);
	rpfs_finalize(c);
	cl_destroy(cl);
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
	tcase_add_test(tc, test_a_stopped_parity_server_fails_writes_naming_it_not_reads);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return cl_run_suite(argc, argv, make_suite);
}
