/* Mirrored files through librpfs (issue 29):
 *   - rpfs_verify finds copies that agree after writes, and copies that
 *     disagree after a write that failed because a copy's server was
 *     killed (the primary kept its bytes: a failed write's bytes are
 *     unspecified), naming the slot and the offset; the range written
 *     again once the server is back, they agree again;
 *   - a handle opened from bare attributes (no redundancy) would write and
 *     truncate the primaries only: the I/O servers refuse both (the
 *     capability says the file is mirrored);
 *   - a file without copies has nothing to compare;
 *   - three writers rewriting records of their files when every server is
 *     killed -9 at once: after the restart each acknowledged record reads
 *     back, a failed one's bytes are its own or the record's before (a
 *     killed server stores a write's bulk chunks up to where it died), the
 *     copies agree once resynced and rpfsd --check finds no problem (a
 *     block of a write cut short is a note); then the copies' servers killed during
 *     writes (one copy of each slot left: no write fails) and restarted:
 *     the copies agree again, the bytes are right. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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
	 * meanwhile rpfs_verify says -ESTALE, or, while the restarted server
	 * finishes its start-up check, that it is starting) and a little
	 * after */
	ck_assert_int_eq(pthread_create(&thr, NULL, rs_write, &w), 0);
	for (i = 0; i < 300 && rpfs_verify(w.f, &checked, &where) != 0; i++)
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

/* ---- every server killed during rewrites of several files ------------------------ */

#define EV_FILES 3
#define EV_REC	 (47008u * 3) /* records straddle the 1 MiB stripe units */
#define EV_NREC	 24u	      /* record n is written at slot n % EV_NREC */
#define EV_SIZE	 ((uint64_t)EV_REC * EV_NREC)
#define EV_WAIT	 60000.0 /* ms: a bound for what takes a second or two */

struct ev_writer {
	int id;
	rpfs_file_t *f;
	int next;		/* the next record to write */
	int acked[EV_NREC];	/* each slot's newest acknowledged record, -1: none */
	int failed_at[EV_NREC]; /* a record whose write failed there, -1: none */
	int done;		/* atomic: records acknowledged this round */
	int stop, failed;	/* atomic */
	ssize_t err;		/* the failed write's result and message */
	char msg[256];
};

/* Record n of file id (each record its own bytes); n < 0: never written. */
static void ev_record(void *buf, int id, int n)
{
	if (n < 0)
		memset(buf, 0, EV_REC);
	else
		fill(buf, EV_REC, ((uint64_t)id + 1) << 32 | ((uint64_t)n + 1));
}

/* Writes records one after the other until told to stop or a write fails
 * (the record in flight then is in failed_at, not acked). */
static void *ev_write(void *arg)
{
	struct ev_writer *w = arg;
	char *rec = malloc(EV_REC);

	while (rec && !__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		int n = w->next, k = n % (int)EV_NREC;
		ssize_t r;

		ev_record(rec, w->id, n);
		r = rpfs_pwrite(w->f, rec, EV_REC, (uint64_t)k * EV_REC);
		if (r != EV_REC) {
			w->failed_at[k] = n;
			w->err = r;
			snprintf(w->msg, sizeof(w->msg), "%s", rpfs_errmsg());
			__atomic_store_n(&w->failed, 1, __ATOMIC_RELEASE);
			break;
		}
		w->acked[k] = n;
		w->failed_at[k] = -1;
		w->next = n + 1;
		__atomic_add_fetch(&w->done, 1, __ATOMIC_RELEASE);
	}
	free(rec);
	return NULL;
}

static void ev_start(struct ev_writer *w, pthread_t *thr)
{
	for (int i = 0; i < EV_FILES; i++) {
		w[i].done = w[i].stop = w[i].failed = 0;
		ck_assert_int_eq(pthread_create(&thr[i], NULL, ev_write, &w[i]), 0);
	}
}

/* Until every writer acknowledged at least min[i] records this round or
 * failed (a failure before `may_fail` is an error), and at least ms
 * milliseconds have passed. */
static void ev_wait_writes(struct ev_writer *w, const int *min, double ms, bool may_fail,
			   const char *when)
{
	double t0 = now_ms();

	for (int i = 0; i < EV_FILES; i++)
		for (;;) {
			if (__atomic_load_n(&w[i].failed, __ATOMIC_ACQUIRE)) {
				ck_assert_msg(
					may_fail,
					"%s: write of record %d to /ev%d failed: %zd: %s",
					when, w[i].next, i, w[i].err, w[i].msg);
				break;
			}
			if (__atomic_load_n(&w[i].done, __ATOMIC_ACQUIRE) >= min[i])
				break;
			ck_assert_msg(now_ms() - t0 < EV_WAIT,
				      "%s: /ev%d: %d records written in %.0f ms", when, i,
				      w[i].done, EV_WAIT);
			usleep(2000);
		}
	while (now_ms() - t0 < ms)
		usleep(2000);
}

/* kill -9 of the servers in mask at once (the signals first, then reaping). */
static void ev_kill(struct cluster *cl, unsigned mask)
{
	for (int i = 0; i < NSRV; i++)
		if (mask & 1u << i)
			ck_assert_int_eq(cl_signal(cl, i, SIGKILL), 0);
	for (int i = 0; i < NSRV; i++)
		if (mask & 1u << i)
			ck_assert_int_eq(cl_kill(cl, i), 0);
}

/* The failed record's bytes at off as runs of its own bytes (n) and the
 * record's before (o), e.g. "n[0,131072) o[131072,141024)", in buf; false
 * if a byte is neither. A byte equal in both goes with the run it is in. */
static bool ev_runs(const char *got, const char *old, const char *new, uint64_t off,
		    char *buf, size_t len)
{
	size_t used = 0, start = 0;
	char cur = 0;
	bool ok = true;

	buf[0] = 0;
	for (size_t i = 0; i <= EV_REC; i++) {
		char k = 0;

		if (i < EV_REC) {
			bool o = got[i] == old[i], n = got[i] == new[i];

			k = n && o ? cur : n ? 'n' : o ? 'o' : 'x';
			ok &= k != 'x';
			if (!cur)
				cur = k ? k : 'n';
			if (!k || k == cur)
				continue;
		}
		if (used < len)
			used += (size_t)snprintf(buf + used, len - used,
						 "%s%c[%llu,%llu)", used ? " " : "", cur,
						 (unsigned long long)(off + start),
						 (unsigned long long)(off + i));
		start = i;
		cur = k;
	}
	return ok;
}

/* Each writer's file read through c: every slot holds its newest
 * acknowledged record; where a write failed, each byte is the failed
 * record's or the one before's (a failed write's bytes are unspecified,
 * but nothing else: a server killed mid-write leaves the bulk chunks it
 * stored, so whole stripe units are not enough). */
static void ev_check(rpfs_client_t *c, const struct ev_writer *w, const char *when)
{
	char *back = malloc(EV_SIZE), *old = malloc(EV_REC), *new = malloc(EV_REC);

	for (int i = 0; i < EV_FILES; i++) {
		char path[16];
		struct rpfs_stat st;
		rpfs_file_t *f;
		uint64_t size;
		char runs[512];
		bool ok;

		snprintf(path, sizeof(path), "/ev%d", i);
		ck_assert_msg(rpfs_open(c, path, RPFS_O_READ, &f) == 0, "%s: open %s: %s",
			      when, path, rpfs_errmsg());
		rpfs_file_attr(f, &st);
		ck_assert_msg(rpfs_getsize(f, &size) == 0, "%s: size of %s: %s", when,
			      path, rpfs_errmsg());
		ck_assert_msg(size == EV_SIZE, "%s: %s (handle %016llx) is %llu bytes",
			      when, path, (unsigned long long)st.handle,
			      (unsigned long long)size);
		read_all(f, back, EV_SIZE, 0);
		for (unsigned k = 0; k < EV_NREC; k++) {
			uint64_t off = (uint64_t)k * EV_REC;
			const char *got = back + off;

			ev_record(old, i, w[i].acked[k]);
			if (w[i].failed_at[k] < 0) {
				ck_assert_msg(
					!memcmp(old, got, EV_REC),
					"%s: %s (handle %016llx): acknowledged record "
					"%d at %llu lost: byte %lld of it differs",
					when, path, (unsigned long long)st.handle,
					w[i].acked[k], (unsigned long long)off,
					first_diff(old, got, EV_REC));
				continue;
			}
			ev_record(new, i, w[i].failed_at[k]);
			ok = ev_runs(got, old, new, off, runs, sizeof(runs));
			fprintf(stderr,
				"%s: %s: the failed record %d (the one before: %d): %s\n",
				when, path, w[i].failed_at[k], w[i].acked[k], runs);
			ck_assert_msg(
				ok,
				"%s: %s (handle %016llx): bytes of neither the failed "
				"record %d nor record %d at %llu: %s",
				when, path, (unsigned long long)st.handle,
				w[i].failed_at[k], w[i].acked[k], (unsigned long long)off,
				runs);
		}
		rpfs_close(f);
	}
	free(back);
	free(old);
	free(new);
}

/* Until rpfs_verify passes on every file (the copies are resynced and
 * agree byte for byte); the ms it took. */
static double ev_wait_verified(rpfs_client_t *c, const char *when)
{
	double t0 = now_ms();

	for (int i = 0; i < EV_FILES; i++) {
		char path[16];
		rpfs_file_t *f;
		uint64_t checked = 0, where = 0;
		int ret;

		snprintf(path, sizeof(path), "/ev%d", i);
		ck_assert_msg(rpfs_open(c, path, RPFS_O_READ, &f) == 0, "%s: open %s: %s",
			      when, path, rpfs_errmsg());
		while ((ret = rpfs_verify(f, &checked, &where))) {
			ck_assert_msg(
				now_ms() - t0 < EV_WAIT,
				"%s: %s: copies still not verified after %.0f ms: %d: %s",
				when, path, EV_WAIT, ret, rpfs_errmsg());
			usleep(100000);
		}
		ck_assert_uint_eq(checked, 2 * EV_SIZE);
		rpfs_close(f);
	}
	return now_ms() - t0;
}

/* rpfsd --check on every (stopped) server: clean (a write a kill cut
 * short, its block whole in its old or new version, is a note, not a
 * problem: docs/design/integrity.md). */
static void ev_check_storage(struct cluster *cl, const char *when)
{
	const char *rpfsd = getenv("RPFSD");

	for (int i = 0; i < NSRV; i++) {
		char cmd[2048], out[16384];
		size_t got = 0, n;
		int status;
		FILE *p;

		snprintf(cmd, sizeof(cmd),
			 "timeout 120 '%s' --config '%s' --name %d --check 2>&1",
			 rpfsd && *rpfsd ? rpfsd : "./rpfsd", cl_config(cl), i);
		fflush(NULL);
		p = popen(cmd, "r");
		ck_assert(p);
		while (got < sizeof(out) - 1 &&
		       (n = fread(out + got, 1, sizeof(out) - 1 - got, p)) > 0)
			got += n;
		out[got] = 0;
		status = pclose(p);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "%s: rpfsd --check on server %d: status %d: %s", when, i,
			      status, out);
	}
}

/* Three writers rewrite records of their mirrored files over and over
 * when every server, the metadata server too, is killed -9 at once; each
 * stops at its first failed write. Restarted on the same storage: every
 * acknowledged record reads back (a failed one's bytes are its own or the
 * record's before), the copies agree once resynced (rpfs_verify), and once
 * the servers are stopped rpfsd --check finds no problem on any server
 * (writes cut short are notes). Then again with only I/O servers holding copies
 * killed, one copy of each slot left (the writers go on through the
 * primaries, or fail over from a killed primary), and restarted. */
START_TEST(test_every_server_killed_during_writes)
{
	struct cluster *cl = start();
	rpfs_client_t *c = client(cl);
	struct ev_writer w[EV_FILES];
	pthread_t thr[EV_FILES];
	int min[EV_FILES];
	unsigned victims = 0;
	uint32_t copies[EV_FILES][2][2]; /* file, copy, slot: its server */
	double t0, t_stop, t;

	for (int i = 0; i < EV_FILES; i++) {
		char path[16];

		memset(&w[i], 0, sizeof(w[i]));
		w[i].id = i;
		for (unsigned k = 0; k < EV_NREC; k++)
			w[i].acked[k] = w[i].failed_at[k] = -1;
		snprintf(path, sizeof(path), "/ev%d", i);
		w[i].f = create_mirror(c, path);
		min[i] = 2 * (int)EV_NREC; /* every slot written twice */
	}

	/* round 1: every server killed at once while the writes go on */
	ev_start(w, thr);
	ev_wait_writes(w, min, 500, false, "before the kill");
	ev_kill(cl, (1u << NSRV) - 1);
	t0 = now_ms();
	for (int i = 0; i < EV_FILES; i++) {
		pthread_join(thr[i], NULL);
		ck_assert_msg(w[i].failed, "/ev%d: no write failed", i);
		fprintf(stderr,
			"every server killed: /ev%d: %d records acknowledged, record %d "
			"failed: %zd: %s\n",
			i, w[i].done, w[i].next, w[i].err, w[i].msg);
		rpfs_close(w[i].f);
	}
	t_stop = now_ms() - t0;
	rpfs_finalize(c); /* its connections died with the servers */
	ck_assert_int_eq(cl_start_all(cl), 0);
	c = client(cl);
	ev_check(c, w, "after the restart");
	t = ev_wait_verified(c, "after the restart");
	fprintf(stderr,
		"every server killed: writers stopped in %.0f ms, copies agree %.0f ms after "
		"the restart\n",
		t_stop, t);
	ev_check(c, w, "once the copies agree");
	rpfs_finalize(c);
	ck_assert_int_eq(cl_stop_all(cl), 0);
	ev_check_storage(cl, "every server killed");

	/* round 2: only the I/O servers holding copies, while writing */
	ck_assert_int_eq(cl_start_all(cl), 0);
	c = client(cl);
	for (int i = 0; i < EV_FILES; i++) {
		char path[16];
		struct rpfs_stat st;

		snprintf(path, sizeof(path), "/ev%d", i);
		w[i].f = open_file(c, path);
		rpfs_file_attr(w[i].f, &st);
		ck_assert_int_eq(rpfs_copy_servers(c, &st, "mirror:2", 0, copies[i][0]),
				 0);
		ck_assert_int_eq(rpfs_copy_servers(c, &st, "mirror:2", 1, copies[i][1]),
				 0);
		min[i] = (int)EV_NREC;
		fprintf(stderr,
			"/ev%d (handle %016llx): slot 0 on servers %u and %u, slot 1 on %u and %u\n",
			i, (unsigned long long)st.handle, copies[i][0][0],
			copies[i][1][0], copies[i][0][1], copies[i][1][1]);
	}
	/* the copies' servers but server 0 (it holds the metadata), as long as
	 * every slot of every file keeps one copy */
	for (int i = 0; i < EV_FILES; i++)
		for (int s = 0; s < 2; s++) {
			unsigned v = victims | 1u << copies[i][1][s];
			bool keeps = copies[i][1][s] != 0;

			for (int j = 0; j < EV_FILES; j++)
				for (int t2 = 0; t2 < 2; t2++)
					keeps &= !(v & 1u << copies[j][0][t2]) ||
						 !(v & 1u << copies[j][1][t2]);
			if (keeps)
				victims = v;
		}
	ck_assert_uint_ne(victims, 0);
	ev_start(w, thr); /* the failed records first, written again */
	ev_wait_writes(w, min, 300, false, "before the copies' servers were killed");
	ev_kill(cl, victims);
	/* every slot has a copy left: no write fails (a killed primary's
	 * writes go to the other copy) */
	for (int i = 0; i < EV_FILES; i++)
		min[i] = w[i].done + (int)EV_NREC;
	ev_wait_writes(w, min, 300, false, "with the copies' servers killed");
	for (int i = 0; i < NSRV; i++)
		if (victims & 1u << i)
			ck_assert_int_eq(cl_restart(cl, i), 0);
	/* and on during the resync */
	for (int i = 0; i < EV_FILES; i++)
		min[i] = w[i].done + (int)EV_NREC;
	ev_wait_writes(w, min, 300, false, "with the copies' servers back");
	for (int i = 0; i < EV_FILES; i++) {
		__atomic_store_n(&w[i].stop, 1, __ATOMIC_RELEASE);
		pthread_join(thr[i], NULL);
		ck_assert_msg(!w[i].failed, "/ev%d: write of record %d failed: %zd: %s",
			      i, w[i].next, w[i].err, w[i].msg);
		fprintf(stderr, "servers 0x%x killed: /ev%d: %d records acknowledged\n",
			victims, i, w[i].done);
		rpfs_close(w[i].f);
	}
	ev_check(c, w, "with the copies' servers back");
	t = ev_wait_verified(c, "with the copies' servers back");
	fprintf(stderr, "servers 0x%x killed: copies agree %.0f ms after the writes\n",
		victims, t);
	ev_check(c, w, "once the copies agree again");
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* ---- a copy's server stopped --------------------------------------------------------
 */

/* A copy's server stopped (SIGSTOP) while a process has the file open: once
 * the metadata server finds it unreachable, its heartbeat tells the
 * primaries, which mark the copy stale at once (server/io_downs.c) instead
 * of waiting timeout_ms for it: the write and the sync take far less than
 * timeout_ms. Continued (SIGCONT): resynced, the copies agree. Stopped
 * again with a write at once: the forward waiting on it ends when the
 * heartbeat comes, not after timeout_ms. */
START_TEST(test_a_write_does_not_wait_for_a_stopped_copy)
{
	struct cl_opts o = {.nservers = NSRV, .stripe_unit = MiB, .timeout_ms = 20000};
	size_t len = 2 * MiB + 1000;
	char *buf = malloc(len), *back = malloc(len);
	uint64_t checked, where, off;
	uint32_t copy1[2], s, victim;
	struct rpfs_stat st;
	struct cluster *cl;
	rpfs_client_t *c;
	rpfs_file_t *f;
	double t0, write_ms, sync_ms;
	int i;

	/* the servers' heartbeats: unreachable after 500 ms */
	setenv("RPFS_HEARTBEAT_MS", "100", 1);
	setenv("RPFS_HEARTBEAT_TIMEOUT_MS", "500", 1);
	cl = cl_start(&o);
	ck_assert_msg(cl, "couldn't start %d servers (see stderr)", NSRV);
	c = client(cl);
	f = create_mirror(c, "/stopped");
	fill(buf, len, 11);
	write_all(f, buf, len, 0);
	rpfs_file_attr(f, &st);
	ck_assert_int_eq(rpfs_copy_servers(c, &st, "mirror:2", 1, copy1), 0);
	s = copy1[1] ? 1 : 0; /* server 0 holds the metadata */
	victim = copy1[s];
	off = (uint64_t)s * MiB + 10; /* in data slot s, row 0 */
	ck_assert_int_eq(cl_signal(cl, (int)victim, SIGSTOP), 0);
	/* its heartbeat goes unanswered, then the next one to the primary
	 * says so */
	usleep(1500000);
	t0 = now_ms();
	write_all(f, "stopped!", 8, off);
	write_ms = now_ms() - t0;
	memcpy(buf + off, "stopped!", 8);
	t0 = now_ms();
	ck_assert_msg(rpfs_sync(f) == 0, "sync: %s", rpfs_errmsg());
	sync_ms = now_ms() - t0;
	ck_assert_msg(
		write_ms < 8000 && sync_ms < 8000,
		"with the copy's server stopped a write took %.0f ms and a sync %.0f "
		"ms (timeout_ms 20000: waited for it)",
		write_ms, sync_ms);
	read_all(f, back, len, 0);
	ck_assert_int_eq(first_diff(buf, back, len), -1);
	ck_assert_int_eq(cl_signal(cl, (int)victim, SIGCONT), 0);
	for (i = 0; i < 300 && rpfs_verify(f, &checked, &where); i++)
		usleep(100000);
	ck_assert_msg(i < 300, "not resynced in 30 s: %s", rpfs_errmsg());
	read_all(f, back, len, 0);
	ck_assert_int_eq(first_diff(buf, back, len), -1);
	/* stopped again, and written at once: the forward already waits on
	 * it when the heartbeat says it is down, and ends then */
	ck_assert_int_eq(cl_signal(cl, (int)victim, SIGSTOP), 0);
	t0 = now_ms();
	write_all(f, "again!!!", 8, off);
	write_ms = now_ms() - t0;
	memcpy(buf + off, "again!!!", 8);
	ck_assert_msg(write_ms < 8000,
		      "a write in flight when the copy's server stopped took %.0f ms "
		      "(timeout_ms 20000: waited for it)",
		      write_ms);
	ck_assert_int_eq(cl_signal(cl, (int)victim, SIGCONT), 0);
	for (i = 0; i < 300 && rpfs_verify(f, &checked, &where); i++)
		usleep(100000);
	ck_assert_msg(i < 300, "not resynced in 30 s: %s", rpfs_errmsg());
	read_all(f, back, len, 0);
	ck_assert_int_eq(first_diff(buf, back, len), -1);
	rpfs_close(f);
	rpfs_finalize(c);
	cl_destroy(cl);
	unsetenv("RPFS_HEARTBEAT_MS");
	unsetenv("RPFS_HEARTBEAT_TIMEOUT_MS");
	free(buf);
	free(back);
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
	tc = tcase_create("stopped_copy");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_a_write_does_not_wait_for_a_stopped_copy);
	suite_add_tcase(s, tc);
	tc = tcase_create("every_server_killed");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_every_server_killed_during_writes);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return cl_run_suite(argc, argv, make_suite);
}
