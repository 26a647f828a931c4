/* Erasure-coded writes on the servers (issue 29, step 1 of
 * docs/design/erasure-coding.md): a write of an ec data cell
 * (IO_WRITE with RPC_IO_PARITY) is stored with old ^ new kept, and each
 * parity member XORs in c(j, i) * delta before the write is answered.
 *
 * The client side of ec files is the next step, so these tests speak the
 * protocol themselves: a file striped over K + P I/O servers (layout
 * stripe), its first K slots taken as one group's data cells and the last
 * P as its parity cells, written by raw IO_WRITEs through the transport
 * (the capability from the file's create). The parity datafiles are then
 * compared byte for byte with the parity ec_code computes from the data
 * datafiles, read from the servers' storage directories:
 *
 * - one write: parity is c(j, i) * data;
 * - many threads writing overlapping random ranges of both data cells at
 *   once, many times: parity agrees with the data at the end (deltas
 *   commute; two writes of the same bytes add up to first-to-last);
 * - holds: a write of a held range waits until the release, or until
 *   the hold lapses; the release says whether it was still held;
 * - a parity member killed, where it can't be marked stale (these raw
 *   requests write a file the metadata server knows as striped, so it
 *   refuses the mark; an ec file's member is marked and the write goes
 *   on: test_ec_client): the write fails with -EREMOTEIO naming its I/O
 *   server, never a silent success. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster.h"
#include "config.h"
#include "ec_code.h"
#include "hello.h"
#include "rpc.h"
#include "rpfs.h"
#include "testkit.h"
#include "xport.h"

#define NSRV	4
#define K	2
#define P	1
#define SU	(64 * 1024)
#define SPAN	(1024 * 1024) /* local bytes the concurrent writers touch */
#define WRITERS 4
#define ROUNDS	150

/* A raw client: the cluster's config and key, one connection a server. */
struct raw {
	struct rpfs_config cfg;
	struct auth_key key;
	struct xp_fabric *fab;
	struct xp_conn *conn[NSRV];
	pthread_mutex_t lock;
};

/* The file: its handle, capability and the I/O index of each slot. */
struct ecfile {
	uint64_t handle;
	struct rpc_cap cap;
	uint32_t io[K + P];
};

static void raw_open(struct raw *r, const char *config)
{
	char why[512] = "";

	memset(r, 0, sizeof(*r));
	ck_assert_msg(!rpfs_config_load_opts(config, NULL, 0, &r->cfg, why, sizeof(why)),
		      "config: %s", why);
	ck_assert_msg(!rpfs_config_key(&r->cfg, &r->key, why, sizeof(why)), "key: %s",
		      why);
	ck_assert(!xp_fabric_open(&r->cfg.xport, XP_CLIENT, &r->key, &r->fab));
	pthread_mutex_init(&r->lock, NULL);
}

static void raw_close(struct raw *r)
{
	for (int i = 0; i < NSRV; i++)
		if (r->conn[i])
			xp_conn_close(r->conn[i]);
	xp_fabric_close(r->fab);
	rpfs_config_free(&r->cfg);
	pthread_mutex_destroy(&r->lock);
}

/* The connection to the server of I/O index io, made on first use. */
static struct xp_conn *raw_conn(struct raw *r, uint32_t io)
{
	uint32_t srv = r->cfg.io[io];
	const struct rpfs_server_cfg *sc = &r->cfg.servers[srv];
	uint8_t data[XP_HELLO_MAX], rep[XP_HELLO_MAX];
	struct xp_hello h = {data, 0, rep, sizeof(rep), 0};
	struct hello_req req;
	char why[512] = "";
	int n;

	pthread_mutex_lock(&r->lock);
	if (!r->conn[srv]) {
		hello_req_fill(&req, &r->cfg, srv, HELLO_CLIENT);
		n = hello_req_encode(data, sizeof(data), &req);
		ck_assert_int_gt(n, 0);
		h.len = (size_t)n;
		ck_assert_msg(!xp_connect(r->fab, sc->address, sc->port, &h,
					  &r->conn[srv], why, sizeof(why)),
			      "connect to server %u: %s", srv, why);
	}
	pthread_mutex_unlock(&r->lock);
	return r->conn[srv];
}

/* Write len bytes of buf at local offset off of data cell i (< K); the
 * reply's status, and its detail (the failed member's I/O server) into
 * *detail when there is one. */
static int ec_write(struct raw *r, const struct ecfile *e, uint32_t i, const void *buf,
		    uint64_t len, uint64_t off, int64_t *detail)
{
	struct rpc_seg seg = {off, len};
	struct rpc_copy parity[P];
	uint8_t body[512], rep[16];
	struct iovec iov = {(void *)buf, (size_t)len};
	struct xp_call call;
	int n;

	for (uint32_t j = 0; j < P; j++)
		parity[j] =
			(struct rpc_copy){.io = e->io[K + j], .slot = K + j, .flags = 0};
	n = rpc_enc_io_parity(body, sizeof(body), e->handle, &e->cap, &seg, 1, i, parity,
			      P, 0, K, i);
	ck_assert_int_gt(n, 0);
	memset(&call, 0, sizeof(call));
	call.req = body;
	call.req_len = (size_t)n;
	call.wr_iov = &iov;
	call.wr_cnt = 1;
	call.rep = rep;
	call.rep_max = sizeof(rep);
	call.path = XP_PATH_AUTO;
	if (detail)
		*detail = -1;
	n = xp_call_start(raw_conn(r, e->io[i]), &call);
	if (!n)
		n = xp_call_wait(&call);
	if (n && detail && call.rep_len == 8)
		*detail = (int64_t)(rep[0] | (uint64_t)rep[1] << 8 |
				    (uint64_t)rep[2] << 16 | (uint64_t)rep[3] << 24);
	return n;
}

/* A file striped over the K + P servers from the first, one stripe unit
 * a slot, and what a raw client needs of it. */
static void ec_file(rpfs_client_t *c, const char *path, struct ecfile *e)
{
	struct rpfs_create_opts o = {
		.stripe_unit = SU, .stripe_count = K + P, .first_server = 0};
	rpfs_file_t *f = create_opts(c, path, &o);
	struct rpfs_stat st;

	rpfs_file_attr(f, &st);
	e->handle = st.handle;
	rpc_dec_cap(st.cap, &e->cap);
	for (uint32_t s = 0; s < K + P; s++)
		e->io[s] = (st.first_server + s) % NSRV;
	rpfs_close(f);
}

/* A datafile's bytes, zero-extended to len (a missing one is all zeros). */
static void datafile(struct cluster *cl, const struct raw *r, const struct ecfile *e,
		     uint32_t slot, unsigned char *buf, size_t len)
{
	char path[1200];
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "%s/data/%016" PRIx64,
		 cl_dir(cl, (int)r->cfg.io[e->io[slot]]), e->handle);
	memset(buf, 0, len);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	got = pread(fd, buf, len, 0);
	ck_assert(got >= 0);
	close(fd);
}

/* The parity datafiles are the code of the data datafiles, byte for byte
 * over len bytes (bytes past a datafile's end are zeros). */
static void assert_parity_agrees(struct cluster *cl, const struct raw *r,
				 const struct ecfile *e, size_t len)
{
	unsigned char *data[K], *want[P], *have = malloc(len);
	struct ec_code code;

	ck_assert(have && !ec_code_init(&code, K, P));
	for (uint32_t i = 0; i < K; i++) {
		data[i] = malloc(len);
		ck_assert(data[i]);
		datafile(cl, r, e, i, data[i], len);
	}
	for (uint32_t j = 0; j < P; j++) {
		want[j] = malloc(len);
		ck_assert(want[j]);
	}
	ec_encode(&code, len, data, want);
	for (uint32_t j = 0; j < P; j++) {
		long long at;

		datafile(cl, r, e, K + j, have, len);
		at = first_diff(want[j], have, len);
		ck_assert_msg(at < 0,
			      "parity cell %u disagrees with the data at byte %lld", j,
			      at);
		free(want[j]);
	}
	for (uint32_t i = 0; i < K; i++)
		free(data[i]);
	free(have);
	ec_code_fini(&code);
}

static struct cluster *start(void)
{
	struct cl_opts o = {.nservers = NSRV, .nmeta = 1, .stripe_unit = SU};
	struct cluster *cl = cl_start(&o);

	ck_assert_msg(cl, "couldn't start %d servers (see stderr)", NSRV);
	return cl;
}

START_TEST(test_one_write_makes_its_parity)
{
	struct cluster *cl = start();
	rpfs_client_t *c = client(cl);
	struct ecfile e;
	struct raw r;
	unsigned char buf[10000];

	ec_file(c, "/one", &e);
	raw_open(&r, cl_config(cl));
	fill(buf, sizeof(buf), 7);
	ck_assert_int_eq(ec_write(&r, &e, 1, buf, sizeof(buf), 5000, NULL), 0);
	assert_parity_agrees(cl, &r, &e, 20000);
	/* the same bytes again: the delta is zero, parity unchanged */
	ck_assert_int_eq(ec_write(&r, &e, 1, buf, sizeof(buf), 5000, NULL), 0);
	assert_parity_agrees(cl, &r, &e, 20000);
	/* the other cell over the same local range */
	fill(buf, sizeof(buf), 8);
	ck_assert_int_eq(ec_write(&r, &e, 0, buf, sizeof(buf), 100, NULL), 0);
	assert_parity_agrees(cl, &r, &e, 20000);
	raw_close(&r);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

struct writer {
	struct raw *r;
	const struct ecfile *e;
	uint64_t seed;
	int failed;
};

/* Overlapping random writes to both data cells, of 1 byte to 192 KiB (the
 * larger ones go through the bulk pipeline in chunks). */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	unsigned char *buf = malloc(192 * 1024);

	for (int n = 0; n < ROUNDS && buf && !w->failed; n++) {
		uint32_t i = (uint32_t)rnd_range(&w->seed, 0, K - 1);
		uint64_t len = rnd_size(&w->seed, 192 * 1024);
		uint64_t off = rnd_range(&w->seed, 0, SPAN - len);

		fill(buf, len, rnd_next(&w->seed));
		w->failed = ec_write(w->r, w->e, i, buf, len, off, NULL);
	}
	free(buf);
	return NULL;
}

START_TEST(test_concurrent_writers_leave_parity_that_agrees)
{
	struct cluster *cl = start();
	rpfs_client_t *c = client(cl);
	struct writer w[WRITERS];
	pthread_t t[WRITERS];
	struct ecfile e;
	struct raw r;

	ec_file(c, "/many", &e);
	raw_open(&r, cl_config(cl));
	for (int k = 0; k < WRITERS; k++) {
		w[k] = (struct writer){&r, &e, 1000 + (uint64_t)k, 0};
		ck_assert(!pthread_create(&t[k], NULL, writer_main, &w[k]));
	}
	for (int k = 0; k < WRITERS; k++) {
		pthread_join(t[k], NULL);
		ck_assert_msg(!w[k].failed, "writer %d: %s", k, strerror(-w[k].failed));
	}
	assert_parity_agrees(cl, &r, &e, SPAN);
	raw_close(&r);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_a_lost_parity_member_not_marked_fails_the_write_naming_it)
{
	struct cluster *cl = start();
	rpfs_client_t *c = client(cl);
	unsigned char buf[4096];
	struct ecfile e;
	struct raw r;
	int64_t who;
	int ret;

	ec_file(c, "/lost", &e);
	raw_open(&r, cl_config(cl));
	fill(buf, sizeof(buf), 3);
	ck_assert_int_eq(ec_write(&r, &e, 0, buf, sizeof(buf), 0, NULL), 0);
	ck_assert_int_ne((int)r.cfg.io[e.io[K]], 0); /* not the metadata server */
	ck_assert_int_eq(cl_kill(cl, (int)r.cfg.io[e.io[K]]), 0);
	ret = ec_write(&r, &e, 0, buf, sizeof(buf), 4096, &who);
	ck_assert_int_eq(ret, -EREMOTEIO);
	ck_assert_int_eq(who, e.io[K]);
	raw_close(&r);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* One IO_HOLD to data cell i's server (flags 0: take, lease_ms;
 * RPC_HOLD_RELEASE); the reply's first u32 (a take's size is a u64: its
 * low half) into *word. */
static int raw_hold(struct raw *r, const struct ecfile *e, uint32_t i, uint16_t flags,
		    uint64_t off, uint64_t len, uint64_t id, uint32_t lease_ms,
		    uint32_t session, uint32_t *word)
{
	uint8_t body[256], rep[16] = {0};
	struct xp_call call;
	int n = rpc_enc_io_hold(body, sizeof(body), flags, e->handle, &e->cap, i, off,
				len, id, lease_ms, session);

	ck_assert_int_gt(n, 0);
	memset(&call, 0, sizeof(call));
	call.req = body;
	call.req_len = (size_t)n;
	call.rep = rep;
	call.rep_max = sizeof(rep);
	n = xp_call_start(raw_conn(r, e->io[i]), &call);
	if (!n)
		n = xp_call_wait(&call);
	if (word)
		*word = (uint32_t)(rep[0] | rep[1] << 8 | rep[2] << 16 |
				   (uint32_t)rep[3] << 24);
	return n;
}

struct held_write {
	struct raw *r;
	const struct ecfile *e;
	uint64_t off;
	atomic_int done;
	int ret;
};

static void *held_write_main(void *arg)
{
	struct held_write *h = arg;
	unsigned char buf[100];

	fill(buf, sizeof(buf), 4);
	h->ret = ec_write(h->r, h->e, 0, buf, sizeof(buf), h->off, NULL);
	atomic_store(&h->done, 1);
	return NULL;
}

/* Holds (IO_HOLD, server/ec_hold.c), as a degraded reader or a parity
 * resync takes them: an ec write of a held range waits (parked, no worker
 * taken) until the hold is released, and the release says it was still
 * held; a write of another range goes at once; a hold whose holder never
 * lets go lapses after its lease, the write goes on, and a late release
 * says it was no longer held (the holder's fence); a client can't open a
 * resync's session. */
START_TEST(test_holds_keep_writes_out_until_released_or_lapsed)
{
	struct cluster *cl = start();
	rpfs_client_t *c = client(cl);
	struct held_write hw = {0};
	unsigned char buf[100];
	struct ecfile e;
	struct raw r;
	uint32_t word = 7;
	pthread_t t;
	double t0;

	ec_file(c, "/held", &e);
	raw_open(&r, cl_config(cl));
	fill(buf, sizeof(buf), 2);
	ck_assert_int_eq(ec_write(&r, &e, 0, buf, sizeof(buf), 0, NULL), 0);
	/* held: a write of the range waits, another range's does not */
	ck_assert_int_eq(raw_hold(&r, &e, 0, 0, 0, 4096, 11, 5000, RPC_SLOT_ANY, &word),
			 0);
	ck_assert_uint_eq(word, 100); /* the datafile's size */
	hw = (struct held_write){.r = &r, .e = &e, .off = 50};
	ck_assert(!pthread_create(&t, NULL, held_write_main, &hw));
	t0 = now_ms();
	ck_assert_int_eq(ec_write(&r, &e, 0, buf, sizeof(buf), 8192, NULL), 0);
	ck_assert_msg(now_ms() - t0 < 1000, "%.0f ms", now_ms() - t0);
	usleep(500 * 1000);
	ck_assert_msg(!atomic_load(&hw.done), "a write of a held range went by");
	ck_assert_int_eq(raw_hold(&r, &e, 0, RPC_HOLD_RELEASE, 0, 4096, 11, 0,
				  RPC_SLOT_ANY, &word),
			 0);
	ck_assert_uint_eq(word, 1); /* still held */
	pthread_join(t, NULL);
	ck_assert_int_eq(hw.ret, 0);
	/* a holder that never lets go: the hold lapses */
	ck_assert_int_eq(raw_hold(&r, &e, 0, 0, 0, 0, 12, 600, RPC_SLOT_ANY, NULL), 0);
	hw = (struct held_write){.r = &r, .e = &e, .off = 50};
	t0 = now_ms();
	ck_assert(!pthread_create(&t, NULL, held_write_main, &hw));
	pthread_join(t, NULL);
	ck_assert_int_eq(hw.ret, 0);
	ck_assert_msg(now_ms() - t0 > 400 && now_ms() - t0 < 3000, "%.0f ms",
		      now_ms() - t0);
	ck_assert_int_eq(
		raw_hold(&r, &e, 0, RPC_HOLD_RELEASE, 0, 0, 12, 0, RPC_SLOT_ANY, &word),
		0);
	ck_assert_uint_eq(word, 0); /* lapsed: what was read is not trusted */
	/* a resync's session is the servers' own */
	ck_assert_int_eq(raw_hold(&r, &e, 0, 0, 0, 4096, 13, 1000, K, NULL), -EPERM);
	raw_close(&r);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("ec_write");
	TCase *tc = tcase_create("parity");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_one_write_makes_its_parity);
	tcase_add_test(tc, test_concurrent_writers_leave_parity_that_agrees);
	tcase_add_test(tc, test_holds_keep_writes_out_until_released_or_lapsed);
	tcase_add_test(tc,
		       test_a_lost_parity_member_not_marked_fails_the_write_naming_it);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return cl_run_suite(argc, argv, make_suite);
}
