/* Mirrored files through librpfs (issue 29):
 *   - rpfs_verify finds copies that agree after writes, and copies that
 *     disagree after a write that failed because a copy's server was
 *     killed (the primary kept its bytes: a failed write's bytes are
 *     unspecified), naming the slot and the offset; the range written
 *     again once the server is back, they agree again;
 *   - a handle opened from bare attributes (no redundancy) would write and
 *     truncate the primaries only: the I/O servers refuse both (the
 *     capability says the file is mirrored);
 *   - a file without copies has nothing to compare. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "rpfs.h"
#include "testkit.h"

#define NSRV 4
#define MiB  (1u << 20)

static struct cluster *start(void)
{
	struct cl_opts o = {.nservers = NSRV, .stripe_unit = MiB};
	struct cluster *cl = cl_start(&o);

	ck_assert_msg(cl, "couldn't start %d servers (see stderr)", NSRV);
	return cl;
}

static rpfs_file_t *create_mirror(rpfs_client_t *c, const char *path)
{
	struct rpfs_create_opts o = {.stripe_count = 2, .first_server = -1};
	rpfs_file_t *f;

	ck_assert_msg(rpfs_create_redundancy(c, path, 0644, RPFS_O_RDWR, &o, "mirror:2",
					     &f) == 0,
		      "create %s: %s", path, rpfs_errmsg());
	return f;
}

START_TEST(test_verify_finds_agreeing_and_disagreeing_copies)
{
	struct cluster *cl = start();
	rpfs_client_t *c = client(cl);
	size_t len = 3 * MiB + 4321;
	char *buf = malloc(len), *back = malloc(len);
	rpfs_file_t *f = create_mirror(c, "/m"), *g;
	struct rpfs_stat st;
	uint64_t checked, where;
	char red[32];

	fill(buf, len, 7);
	write_all(f, buf, len, 0);
	ck_assert_int_eq(rpfs_file_redundancy(f, red, sizeof(red)), 0);
	ck_assert_str_eq(red, "mirror:2");
	ck_assert_msg(rpfs_verify(f, &checked, &where) == 0, "verify: %s", rpfs_errmsg());
	ck_assert_uint_eq(checked, 2 * (uint64_t)len);
	read_all(f, back, len, 0);
	ck_assert_int_eq(first_diff(buf, back, len), -1);

	/* the attributes without the redundancy: a striped view of the
	 * primaries, whose writes and truncates would reach no copy */
	rpfs_file_attr(f, &st);
	ck_assert_int_eq(rpfs_open_attr_path(c, &st, "/m", &g), 0);
	ck_assert_int_eq(rpfs_pwrite(g, "different", 9, MiB + 5), -EINVAL);
	ck_assert_int_eq(rpfs_truncate(g, MiB), -EINVAL);
	rpfs_close(g);
	ck_assert_msg(rpfs_verify(f, &checked, &where) == 0, "verify: %s", rpfs_errmsg());

	/* a write and a truncate with a copy's server killed: done on the
	 * primary, the copy marked stale (read from no more, rpfs_verify says
	 * so); the server back, the copy is resynced by itself */
	{
		uint32_t copy1[2];
		uint32_t s, victim;
		uint64_t off, size;
		int i;

		ck_assert_int_eq(rpfs_copy_servers(c, &st, "mirror:2", 1, copy1), 0);
		s = copy1[1] ? 1 : 0; /* server 0 holds the metadata */
		victim = copy1[s];
		off = (uint64_t)s * MiB + 5; /* in data slot s, row 0 */
		ck_assert_int_eq(cl_kill(cl, (int)victim), 0);
		write_all(f, "different", 9, off);
		memcpy(buf + off, "different", 9);
		read_all(f, back, len, 0);
		ck_assert_int_eq(first_diff(buf, back, len), -1);
		/* another opener learns the mark at open */
		ck_assert_int_eq(rpfs_open(c, "/m", RPFS_O_READ | RPFS_O_WRITE, &g), 0);
		read_all(g, back, len, 0);
		ck_assert_int_eq(first_diff(buf, back, len), -1);
		/* a truncate through the primaries, the lost copy's skipped */
		len -= 4000;
		ck_assert_msg(rpfs_truncate(g, len) == 0, "truncate: %s", rpfs_errmsg());
		ck_assert_int_eq(rpfs_getsize(f, &size), 0);
		ck_assert_uint_eq(size, len);
		rpfs_close(g);
		ck_assert_int_eq(rpfs_verify(f, &checked, &where), -ESTALE);
		ck_assert_msg(strstr(rpfs_errmsg(), "stale"), "message: %s",
			      rpfs_errmsg());
		ck_assert_int_eq(cl_restart(cl, (int)victim), 0);
		/* back: stale until resynced, then every copy agrees */
		for (i = 0; i < 300 && rpfs_verify(f, &checked, &where); i++) {
			read_all(f, back, len, 0);
			ck_assert_int_eq(first_diff(buf, back, len), -1);
			usleep(100000);
		}
		ck_assert_msg(i < 300, "not resynced in 30 s: %s", rpfs_errmsg());
		ck_assert_uint_eq(checked, 2 * (uint64_t)len);
	}
	rpfs_close(f);

	/* a file without copies: nothing to compare */
	f = create(c, "/plain");
	write_all(f, buf, MiB, 0);
	ck_assert_int_eq(rpfs_verify(f, &checked, &where), 0);
	ck_assert_uint_eq(checked, 0);
	rpfs_close(f);
	free(buf);
	free(back);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* ---- every server killed during writes -------------------------------------------- */

#define CRASH_REC  47008u
#define CRASH_RECS 1024u

struct crash_writer {
	rpfs_file_t *f;
	int acked; /* records 0 .. acked-1 were acknowledged */
};

static void *crash_write(void *arg)
{
	struct crash_writer *w = arg;
	char *rec = malloc(CRASH_REC);

	for (unsigned i = 0; rec && i < CRASH_RECS; i++) {
		fill(rec, CRASH_REC, i + 1);
		if (rpfs_pwrite(w->f, rec, CRASH_REC, (uint64_t)i * CRASH_REC) !=
		    CRASH_REC)
			break;
		__atomic_store_n(&w->acked, (int)i + 1, __ATOMIC_RELEASE);
	}
	free(rec);
	return NULL;
}

/* A writer at work when every server is killed -9 at once: after the
 * restart, every acknowledged record reads back right and the copies agree
 * again (the primaries' lists of datafiles being written, mirror_dirty.c,
 * have the copies marked stale and resynced). */
START_TEST(test_crash_of_every_server_leaves_copies_that_agree)
{
	struct cluster *cl = start();
	rpfs_client_t *c = client(cl), *c2;
	struct crash_writer w = {.f = create_mirror(c, "/crash"), .acked = 0};
	char *rec = malloc(CRASH_REC), *back = malloc(CRASH_REC);
	uint64_t checked, where;
	pthread_t thr;
	int acked, i;

	ck_assert_int_eq(pthread_create(&thr, NULL, crash_write, &w), 0);
	while (__atomic_load_n(&w.acked, __ATOMIC_ACQUIRE) < 40)
		usleep(1000);
	for (i = 0; i < NSRV; i++)
		ck_assert_int_eq(cl_kill(cl, i), 0);
	pthread_join(thr, NULL);
	acked = w.acked;
	ck_assert_int_lt(acked, (int)CRASH_RECS);
	ck_assert_int_eq(cl_start_all(cl), 0);
	c2 = client(cl);
	ck_assert_int_eq(rpfs_open(c2, "/crash", RPFS_O_READ, &w.f), 0);
	for (i = 0; i < acked; i++) {
		fill(rec, CRASH_REC, (uint64_t)i + 1);
		read_all(w.f, back, CRASH_REC, (uint64_t)i * CRASH_REC);
		ck_assert_msg(first_diff(rec, back, CRASH_REC) == -1,
			      "acknowledged record %d of %d lost", i, acked);
	}
	for (i = 0; i < 300 && rpfs_verify(w.f, &checked, &where); i++)
		usleep(100000);
	ck_assert_msg(i < 300, "copies still differ 30 s after the restart: %s",
		      rpfs_errmsg());
	rpfs_close(w.f);
	rpfs_finalize(c2);
	free(rec);
	free(back);
	(void)c; /* its connections died with the servers */
	cl_destroy(cl);
}
END_TEST

/* ---- writes during a resync ------------------------------------------------------ */

#define RS_SIZE (48u * MiB)
#define RS_REC	65536u

struct rs_writer {
	rpfs_file_t *f;
	char *model; /* what the file should hold */
	int stop;    /* atomic */
	int errors, writes;
};

static void *rs_write(void *arg)
{
	struct rs_writer *w = arg;
	uint64_t x = 12345;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		uint64_t off;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		off = (x >> 20) % (RS_SIZE - RS_REC);
		fill(w->model + off, RS_REC, x);
		if (rpfs_pwrite(w->f, w->model + off, RS_REC, off) != RS_REC)
			w->errors++;
		w->writes++;
	}
	return NULL;
}

/* A copy's server killed, the file rewritten without it (its copy marked
 * stale), the server back: writes all over the file while the resync
 * copies it leave the copies equal and the bytes the last written. */
START_TEST(test_writes_during_a_resync)
{
	struct cluster *cl = start();
	rpfs_client_t *c = client(cl);
	struct rs_writer w = {.f = create_mirror(c, "/rs"), .model = malloc(RS_SIZE)};
	char *back = malloc(RS_SIZE);
	struct rpfs_stat st;
	uint32_t copy1[2], victim;
	uint64_t checked, where;
	pthread_t thr;
	int i;

	fill(w.model, RS_SIZE, 99);
	write_all(w.f, w.model, RS_SIZE, 0);
	rpfs_file_attr(w.f, &st);
	ck_assert_int_eq(rpfs_copy_servers(c, &st, "mirror:2", 1, copy1), 0);
	victim = copy1[1] ? copy1[1] : copy1[0]; /* not server 0 */
	ck_assert_int_ne(victim, 0);
	ck_assert_int_eq(cl_kill(cl, (int)victim), 0);
	fill(w.model, RS_SIZE, 7);
	write_all(w.f, w.model, RS_SIZE, 0);
	ck_assert_int_eq(cl_restart(cl, (int)victim), 0);
	/* writing all the while: until the mark is gone (the resync ended;
	 * meanwhile rpfs_verify says -ESTALE) and a little after */
	ck_assert_int_eq(pthread_create(&thr, NULL, rs_write, &w), 0);
	for (i = 0; i < 300 && rpfs_verify(w.f, &checked, &where) == -ESTALE; i++)
		usleep(100000);
	usleep(300000);
	__atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
	pthread_join(thr, NULL);
	ck_assert_msg(i < 300, "not resynced in 30 s: %s", rpfs_errmsg());
	ck_assert_int_eq(w.errors, 0);
	ck_assert_int_gt(w.writes, 10);
	ck_assert_msg(rpfs_verify(w.f, &checked, &where) == 0, "verify: %s",
		      rpfs_errmsg());
	read_all(w.f, back, RS_SIZE, 0);
	ck_assert_int_eq(first_diff(w.model, back, RS_SIZE), -1);
	rpfs_close(w.f);
	free(w.model);
	free(back);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("mirror");
	TCase *tc = tcase_create("verify");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_verify_finds_agreeing_and_disagreeing_copies);
	tcase_add_test(tc, test_crash_of_every_server_leaves_copies_that_agree);
	tcase_add_test(tc, test_writes_during_a_resync);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return cl_run_suite(argc, argv, make_suite);
}
