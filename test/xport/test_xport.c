/* Transport specification (xport.h), client side, against a memsrv running
 * in a forked child process.
 *
 * The server must be another process: on the tcp provider an RDMA
 * operation completes only while its target polls, and a separate process
 * is also what lets a test kill -9 or SIGSTOP the server under live calls.
 * Each test gets a fresh server (forked before the client opens its
 * fabric, so the child inherits no libfabric state) and a fresh client
 * connection. The provider comes from RPFS_PROVIDER (default tcp).
 *
 * What is specified: every data path moves exactly the bytes asked for,
 * contiguous or scattered, at every size around the thresholds; the path
 * choice; flow control under many calls in flight; the registration cache
 * (hits, and fresh registrations when memory is unmapped and mapped again);
 * failures: a killed or stopped server, no listener, a body too large, a
 * server-side error status; and clean shutdown. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* MAP_FIXED_NOREPLACE, prctl */
#endif

#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memsrv.h"
#include "proto.h"
#include "rawcm.h"
#include "params.h"
#include "memhooks.h"
#include "regcache.h"
#include "testenv.h"
#include "xport.h"
/* white box: a test holds the engine's lock as a round would */
#include "xport_domain.h"

/* Room for a 64 MiB transfer at an odd offset, and for 200 calls of up to
 * 256 KiB each in their own places. */
#define AREA_SIZE ((size_t)80 << 20)
#define BIG	  ((size_t)64 << 20)
#define ODD_OFF	  12345
#define GUARD	  64
#define MAX_IOV	  8

static pid_t srv_pid = -1;
static char srv_port[16];
static struct xp_fabric *fab;
static struct xp_conn *conn;
static struct xp_params cparams; /* the client's settings */

/* ---- helpers: time, data ------------------------------------------------- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Deterministic bytes, different for every seed, so a stale copy of an
 * earlier transfer never passes for the current one. */
static void fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 0x1234567;
	unsigned char *p = buf;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
	for (; i < len; i++)
		p[i] = (unsigned char)(x >> (8 * (i % 8)));
}

/* Offset of the first differing byte, or -1. */
static long first_diff(const void *a, const void *b, size_t len)
{
	const unsigned char *x = a, *y = b;

	if (!memcmp(a, b, len))
		return -1;
	for (size_t i = 0; i < len; i++)
		if (x[i] != y[i])
			return (long)i;
	return -1;
}

static int guard_intact(const void *buf, size_t len)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i] != 0xee)
			return 0;
	return 1;
}

static void *xalloc(size_t len)
{
	void *p = malloc(len);

	ck_assert_msg(p != NULL, "out of memory for %zu bytes", len);
	return p;
}

/* ---- helpers: server child ------------------------------------------------ */

static void test_params(struct xp_params *p)
{
	const char *prov = getenv("RPFS_PROVIDER");

	xp_params_default(p);
	snprintf(p->provider, sizeof(p->provider), "%s", prov && *prov ? prov : "tcp");
}

/* What a server process needs to know, passed through a pipe to a fresh
 * image of this program (see server_spawn). */
struct srv_args {
	struct xp_params p;
	unsigned int delay_us;
	int worker, direct, refuse_hello;
};

/* main() of a server started by server_spawn: read the settings from fd
 * "in", serve until SIGTERM, tell the port on fd "out". */
static int memsrv_main(int in, int out)
{
	struct srv_args a;
	struct memsrv_opts o = {0};

	if (read(in, &a, sizeof(a)) != (ssize_t)sizeof(a))
		return 3;
	close(in);
	o.delay_us = a.delay_us;
	o.worker = a.worker;
	o.direct = a.direct;
	o.refuse_hello = a.refuse_hello;
	return memsrv_run_forever_opts(&a.p, AREA_SIZE, &o, out) ? 2 : 0;
}

/* Start a memsrv; returns when it listens. The server is this program run
 * afresh (fork + exec), never a bare fork: a child of a process that has
 * used verbs cannot use the device the parent opened (the kernel refuses
 * writes from another process's credentials, seen on rxe), and the client
 * side of a test may already have. */
static void server_spawn(const struct xp_params *p, const struct memsrv_opts *o)
{
	struct srv_args a = {.p = *p};
	pid_t parent = getpid();
	char line[64], infd[16], outfd[16];
	size_t got = 0;
	int fds[2], args[2];

	if (o) {
		a.delay_us = o->delay_us;
		a.worker = o->worker;
		a.direct = o->direct;
		a.refuse_hello = o->refuse_hello;
	}
	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(pipe(args), 0);
	ck_assert_int_eq(write(args[1], &a, sizeof(a)), (ssize_t)sizeof(a));
	close(args[1]);
	srv_pid = fork();
	ck_assert_int_ge(srv_pid, 0);
	if (srv_pid == 0) {
		close(fds[0]);
		/* Check kills a test that times out or fails with no teardown:
		 * take the server down with it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(3);
		snprintf(infd, sizeof(infd), "%d", args[0]);
		snprintf(outfd, sizeof(outfd), "%d", fds[1]);
		execl("/proc/self/exe", "test_xport", "--memsrv", infd, outfd,
		      (char *)NULL);
		_exit(4);
	}
	close(args[0]);
	close(fds[1]);
	while (got < sizeof(line) - 1 && (!got || line[got - 1] != '\n')) {
		struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
		ssize_t n;

		ck_assert_msg(poll(&pfd, 1, 30000) == 1, "memsrv did not start in 30 s");
		n = read(fds[0], line + got, sizeof(line) - 1 - got);
		if (n <= 0) {
			int st = 0;

			waitpid(srv_pid, &st, 0);
			srv_pid = -1;
			ck_abort_msg("memsrv exited before listening (status %#x)", st);
		}
		got += (size_t)n;
	}
	close(fds[0]);
	line[got] = 0;
	ck_assert_msg(sscanf(line, "port %15[0-9]", srv_port) == 1, "memsrv said '%s'",
		      line);
}

/* SIGTERM, wait up to wait_ms; returns the wait status, or -1 if it had to
 * be killed. */
static int server_stop(int wait_ms)
{
	int st = 0, ret = -1;
	int64_t end = now_ms() + wait_ms;

	if (srv_pid <= 0)
		return 0;
	kill(srv_pid, SIGCONT);
	kill(srv_pid, SIGTERM);
	while (now_ms() < end) {
		if (waitpid(srv_pid, &st, WNOHANG) == srv_pid) {
			ret = st;
			break;
		}
		usleep(10000);
	}
	if (ret < 0) {
		kill(srv_pid, SIGKILL);
		waitpid(srv_pid, &st, 0);
	}
	srv_pid = -1;
	return ret;
}

/* SIGSTOP the server and wait until it really is stopped: kill() returns
 * before the child stops, and a request that slips in meanwhile would be
 * served. */
static void server_pause(void)
{
	char path[64], buf[512], *rp;
	int64_t end = now_ms() + 5000;

	ck_assert_int_eq(kill(srv_pid, SIGSTOP), 0);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)srv_pid);
	while (now_ms() < end) {
		FILE *f = fopen(path, "r");
		size_t n = 0;

		if (f) {
			n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
		}
		buf[n] = 0;
		/* "pid (comm) S ...": the state follows the last ')'. */
		rp = strrchr(buf, ')');
		if (rp && (rp[2] == 'T' || rp[2] == 't'))
			return;
		usleep(1000);
	}
	ck_abort_msg("memsrv did not stop within 5 s of SIGSTOP");
}

static void client_open(const struct xp_params *p)
{
	char why[256] = "";
	int ret;

	cparams = *p;
	ret = xp_fabric_open(p, XP_CLIENT, test_key(), &fab);
	ck_assert_msg(ret == 0, "client fabric (%s): %s", p->provider, strerror(-ret));
	ret = xp_connect(fab, test_addr(), srv_port, NULL, &conn, why, sizeof(why));
	ck_assert_msg(ret == 0, "connect to %s:%s: %s (%s)", test_addr(), srv_port, why,
		      strerror(-ret));
}

/* Server and client with the same settings. */
static void teardown_all(void);

/* Replace whatever the fixture started. Never fork a server while this
 * process holds an open fabric: with verbs, the child would share pages
 * of our registered memory. */
static void start_with(const struct xp_params *p, const struct memsrv_opts *o)
{
	teardown_all();
	server_spawn(p, o);
	client_open(p);
}

static void setup_default(void)
{
	struct xp_params p;

	test_params(&p);
	start_with(&p, NULL);
}

static void teardown_all(void)
{
	if (conn)
		xp_conn_close(conn);
	conn = NULL;
	if (fab)
		xp_fabric_close(fab);
	fab = NULL;
	server_stop(5000);
}

/* ---- helpers: calls -------------------------------------------------------- */

/* A call with its request body and memory pieces; never copied (the call
 * points into it). */
struct op {
	struct xp_call call;
	uint8_t req[MEMSRV_REQ_SIZE];
	struct iovec iov[MAX_IOV];
};

static void op_init(struct op *o, uint32_t opcode, uint64_t off, uint64_t len, int path)
{
	struct memsrv_req q = {.op = opcode, .off = off, .len = len};

	memset(o, 0, sizeof(*o));
	memsrv_req_encode(o->req, &q);
	o->call.req = o->req;
	o->call.req_len = MEMSRV_REQ_SIZE;
	o->call.path = path;
}

static size_t iov_total(const struct iovec *iov, int cnt)
{
	size_t n = 0;

	for (int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

static void op_putv(struct op *o, uint64_t off, const struct iovec *iov, int cnt,
		    int path)
{
	op_init(o, MEMSRV_PUT, off, iov_total(iov, cnt), path);
	memcpy(o->iov, iov, sizeof(*iov) * (size_t)cnt);
	o->call.wr_iov = o->iov;
	o->call.wr_cnt = cnt;
}

static void op_getv(struct op *o, uint64_t off, uint64_t len, const struct iovec *iov,
		    int cnt, int path)
{
	op_init(o, MEMSRV_GET, off, len, path);
	memcpy(o->iov, iov, sizeof(*iov) * (size_t)cnt);
	o->call.rd_iov = o->iov;
	o->call.rd_cnt = cnt;
}

static void op_put(struct op *o, uint64_t off, const void *buf, size_t len, int path)
{
	struct iovec v = {(void *)buf, len};

	op_putv(o, off, &v, 1, path);
}

static void op_get(struct op *o, uint64_t off, void *buf, size_t len, int path)
{
	struct iovec v = {buf, len};

	op_getv(o, off, len, &v, 1, path);
}

static int put_sync(uint64_t off, const void *buf, size_t len, int path, int *used)
{
	struct op o;
	int ret;

	op_put(&o, off, buf, len, path);
	ret = xp_call(conn, &o.call);
	if (used)
		*used = o.call.used_path;
	return ret;
}

static int get_sync(uint64_t off, void *buf, size_t len, int path, int *used,
		    size_t *rd_len)
{
	struct op o;
	int ret;

	op_get(&o, off, buf, len, path);
	ret = xp_call(conn, &o.call);
	if (used)
		*used = o.call.used_path;
	if (rd_len)
		*rd_len = o.call.rd_len;
	return ret;
}

static int server_stats(struct memsrv_stats *st)
{
	uint8_t body[MEMSRV_STATS_SIZE];
	struct op o;
	int ret;

	op_init(&o, MEMSRV_STATS, 0, 0, XP_PATH_AUTO);
	o.call.rep = body;
	o.call.rep_max = sizeof(body);
	ret = xp_call(conn, &o.call);
	if (ret)
		return ret;
	return memsrv_stats_decode(body, o.call.rep_len, st);
}

/* PUT len fresh bytes at off on path, GET them back into another buffer,
 * compare; the bytes after the read room must stay untouched. */
static void round_trip(int path, size_t len, uint64_t off, char *src, char *dst,
		       uint64_t seed)
{
	const char *name = xp_path_name(path);
	size_t rd_len = 0;
	int ret, used = -1;
	long diff;

	fill(src, len, seed);
	memset(dst, 0xee, len + GUARD);
	ret = put_sync(off, src, len, path, &used);
	ck_assert_msg(ret == 0, "%s PUT of %zu bytes: %s", name, len, strerror(-ret));
	if (path != XP_PATH_AUTO)
		ck_assert_msg(used == path, "%s PUT of %zu bytes went %s", name, len,
			      xp_path_name(used));
	ret = get_sync(off, dst, len, path, &used, &rd_len);
	ck_assert_msg(ret == 0, "%s GET of %zu bytes: %s", name, len, strerror(-ret));
	if (path != XP_PATH_AUTO)
		ck_assert_msg(used == path, "%s GET of %zu bytes went %s", name, len,
			      xp_path_name(used));
	ck_assert_msg(rd_len == len, "%s GET of %zu bytes: rd_len %zu", name, len,
		      rd_len);
	diff = first_diff(src, dst, len);
	ck_assert_msg(diff < 0, "%s round trip of %zu bytes differs at byte %ld", name,
		      len, diff);
	ck_assert_msg(guard_intact(dst + len, GUARD),
		      "%s GET of %zu bytes wrote past the read room", name, len);
}

/* Sizes around every threshold, odd sizes, and one large transfer. */
/* clang-format off */
static const size_t sizes[] = {
	1, 2, 3, 7, 63, 64, 65, 511, 1000,
	4095, 4096, 4097, 8191, 12345,
	65535, 65536, 65537, 100003,
	(1 << 20) - 1, 1 << 20, (1 << 20) + 1, (3 << 20) + 17,
	BIG
};
/* clang-format on */

static void path_moves_data(int path)
{
	size_t limit = path == XP_PATH_INLINE ? cparams.inline_max
		       : path == XP_PATH_FAST ? cparams.fast_max
					      : BIG;
	char *src = xalloc(BIG + GUARD), *dst = xalloc(BIG + GUARD);
	int n = 0;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (sizes[i] > limit)
			continue;
		round_trip(path, sizes[i], ODD_OFF, src, dst, (uint64_t)path << 32 | i);
		n++;
	}
	/* The threshold itself, whatever the settings. */
	if (path == XP_PATH_INLINE || path == XP_PATH_FAST)
		round_trip(path, limit, ODD_OFF, src, dst, 999);
	ck_assert_int_gt(n, 0);
	free(src);
	free(dst);
}

/* ---- (a) every path moves exactly the bytes asked for ---------------------- */

START_TEST(inline_path_moves_data_of_every_size_up_to_inline_max)
{
	path_moves_data(XP_PATH_INLINE);
}
END_TEST

START_TEST(fast_path_moves_data_of_every_size_up_to_fast_max)
{
	path_moves_data(XP_PATH_FAST);
}
END_TEST

START_TEST(bulk_path_moves_data_of_every_size)
{
	path_moves_data(XP_PATH_BULK);
}
END_TEST

START_TEST(auto_path_moves_data_of_every_size)
{
	path_moves_data(XP_PATH_AUTO);
}
END_TEST

/* Inline up to inline_max, fast up to fast_max, bulk beyond: exactly at
 * the thresholds, for writes and reads. */
START_TEST(auto_path_picks_by_size_at_the_thresholds)
{
	const size_t im = cparams.inline_max, fm = cparams.fast_max;
	const struct {
		size_t len;
		int path;
	} cases[] = {
		{1, XP_PATH_INLINE},	{im - 1, XP_PATH_INLINE}, {im, XP_PATH_INLINE},
		{im + 1, XP_PATH_FAST}, {fm - 1, XP_PATH_FAST},	  {fm, XP_PATH_FAST},
		{fm + 1, XP_PATH_BULK}, {1 << 20, XP_PATH_BULK},
	};
	char *src = xalloc((1 << 20) + GUARD), *dst = xalloc((1 << 20) + GUARD);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = cases[i].len, rd_len;
		int used = -1, ret;

		fill(src, len, i);
		ret = put_sync(0, src, len, XP_PATH_AUTO, &used);
		ck_assert_msg(ret == 0, "PUT %zu: %s", len, strerror(-ret));
		ck_assert_msg(used == cases[i].path, "PUT of %zu bytes went %s, not %s",
			      len, xp_path_name(used), xp_path_name(cases[i].path));
		ret = get_sync(0, dst, len, XP_PATH_AUTO, &used, &rd_len);
		ck_assert_msg(ret == 0, "GET %zu: %s", len, strerror(-ret));
		ck_assert_msg(used == cases[i].path, "GET of %zu bytes went %s, not %s",
			      len, xp_path_name(used), xp_path_name(cases[i].path));
		ck_assert_int_eq(memcmp(src, dst, len), 0);
	}
	free(src);
	free(dst);
}
END_TEST

/* params.force_path overrides the size rule for calls that leave path AUTO. */
START_TEST(force_path_setting_applies_to_auto_calls)
{
	struct xp_params p;
	char src[100], dst[100];
	int used = -1;

	test_params(&p);
	p.force_path = XP_PATH_BULK;
	start_with(&p, NULL);
	fill(src, sizeof(src), 5);
	ck_assert_int_eq(put_sync(0, src, sizeof(src), XP_PATH_AUTO, &used), 0);
	ck_assert_msg(used == XP_PATH_BULK, "went %s", xp_path_name(used));
	ck_assert_int_eq(get_sync(0, dst, sizeof(dst), XP_PATH_AUTO, &used, NULL), 0);
	ck_assert_msg(used == XP_PATH_BULK, "went %s", xp_path_name(used));
	ck_assert_int_eq(memcmp(src, dst, sizeof(src)), 0);
}
END_TEST

START_TEST(stats_count_calls_by_path)
{
	struct xp_stats a, b;
	char *buf = xalloc(1 << 20);

	fill(buf, 1 << 20, 1);
	xp_fabric_stats(fab, &a);
	ck_assert_int_eq(put_sync(0, buf, 100, XP_PATH_AUTO, NULL), 0);
	ck_assert_int_eq(put_sync(0, buf, 10000, XP_PATH_AUTO, NULL), 0);
	ck_assert_int_eq(put_sync(0, buf, 10000, XP_PATH_AUTO, NULL), 0);
	ck_assert_int_eq(get_sync(0, buf, 1 << 20, XP_PATH_AUTO, NULL, NULL), 0);
	xp_fabric_stats(fab, &b);
	ck_assert_uint_eq(b.calls[XP_PATH_INLINE] - a.calls[XP_PATH_INLINE], 1);
	ck_assert_uint_eq(b.calls[XP_PATH_FAST] - a.calls[XP_PATH_FAST], 2);
	ck_assert_uint_eq(b.calls[XP_PATH_BULK] - a.calls[XP_PATH_BULK], 1);
	free(buf);
}
END_TEST

START_TEST(zero_length_put_and_get_succeed)
{
	struct op o;
	char c = 'x';

	op_init(&o, MEMSRV_PUT, 100, 0, XP_PATH_AUTO);
	ck_assert_int_eq(xp_call(conn, &o.call), 0);
	op_get(&o, 100, &c, 0, XP_PATH_AUTO);
	ck_assert_int_eq(xp_call(conn, &o.call), 0);
	ck_assert_uint_eq(o.call.rd_len, 0);
	ck_assert_int_eq(c, 'x');
}
END_TEST

/* The reply's rd_len is what the server produced, not the room offered. */
START_TEST(read_reports_bytes_produced_when_less_than_room)
{
	static const struct {
		int path;
		size_t len, room;
	} cases[] = {
		{XP_PATH_INLINE, 1000, 4096},
		{XP_PATH_FAST, 5000, 65536},
		{XP_PATH_BULK, 100003, 300000},
	};
	char *src = xalloc(300000), *dst = xalloc(300000);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct iovec v = {dst, cases[i].room};
		struct op o;

		fill(src, cases[i].len, 40 + i);
		ck_assert_int_eq(put_sync(0, src, cases[i].len, cases[i].path, NULL), 0);
		memset(dst, 0xee, cases[i].room);
		op_getv(&o, 0, cases[i].len, &v, 1, cases[i].path);
		ck_assert_int_eq(xp_call(conn, &o.call), 0);
		ck_assert_msg(o.call.rd_len == cases[i].len,
			      "%s: rd_len %zu, expected %zu", xp_path_name(cases[i].path),
			      o.call.rd_len, cases[i].len);
		ck_assert_int_eq(memcmp(src, dst, cases[i].len), 0);
	}
	free(src);
	free(dst);
}
END_TEST

START_TEST(reply_body_reaches_the_caller)
{
	struct memsrv_stats st;
	char buf[10];

	fill(buf, sizeof(buf), 3);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(put_sync(0, buf, sizeof(buf), XP_PATH_AUTO, NULL), 0);
	ck_assert_int_eq(server_stats(&st), 0);
	ck_assert_uint_eq(st.puts, 3);
	ck_assert_uint_eq(st.bytes_in, 3 * sizeof(buf));
	ck_assert_uint_eq(st.errors, 0);
}
END_TEST

START_TEST(nop_round_trips)
{
	struct op o;

	for (int i = 0; i < 100; i++) {
		op_init(&o, MEMSRV_NOP, 0, 0, XP_PATH_AUTO);
		ck_assert_int_eq(xp_call(conn, &o.call), 0);
		ck_assert_int_eq(o.call.status, 0);
		ck_assert_uint_eq(o.call.rep_len, 0);
	}
}
END_TEST

/* A server may move bulk data with one RDMA straight into registered memory
 * of its own (xp_req_pull/xp_req_push without the pipeline). */
START_TEST(bulk_moves_straight_into_registered_server_memory)
{
	struct memsrv_opts o = {.direct = 1};
	struct xp_params p;
	size_t lens[] = {65537, 1 << 20, (8 << 20) + 3};

	test_params(&p);
	start_with(&p, &o);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		char *src = xalloc(lens[i]), *dst = xalloc(lens[i]);
		size_t rd = 0;
		int used = 0;

		fill(src, lens[i], 900 + i);
		memset(dst, 0xee, lens[i]);
		ck_assert_int_eq(
			put_sync(4096 * i + 7, src, lens[i], XP_PATH_BULK, &used), 0);
		ck_assert_int_eq(used, XP_PATH_BULK);
		ck_assert_int_eq(
			get_sync(4096 * i + 7, dst, lens[i], XP_PATH_BULK, &used, &rd),
			0);
		ck_assert_uint_eq(rd, lens[i]);
		ck_assert_msg(!memcmp(src, dst, lens[i]), "%zu bytes differ", lens[i]);
		free(src);
		free(dst);
	}
}
END_TEST

/* ---- (b) noncontiguous memory ------------------------------------------------ */

/* Scatter-gather: write from pieces of one layout, read into another. */
static void pieces_move_data(int path, const size_t *wr, int nwr, const size_t *rd,
			     int nrd)
{
	struct iovec wv[MAX_IOV], rv[MAX_IOV];
	size_t total = 0, rtotal = 0, at;
	char *expect, *got;
	struct op o;
	long diff;
	int ret;

	for (int i = 0; i < nwr; i++) {
		/* Separate allocations, each with its own odd length. */
		wv[i].iov_base = xalloc(wr[i]);
		wv[i].iov_len = wr[i];
		fill(wv[i].iov_base, wr[i], (uint64_t)path * 100 + (uint64_t)i);
		total += wr[i];
	}
	for (int i = 0; i < nrd; i++) {
		rv[i].iov_base = xalloc(rd[i] + GUARD);
		rv[i].iov_len = rd[i];
		memset(rv[i].iov_base, 0xee, rd[i] + GUARD);
		rtotal += rd[i];
	}
	ck_assert_uint_eq(total, rtotal);
	expect = xalloc(total);
	got = xalloc(total);
	for (int i = 0, n = 0; i < nwr; n += (int)wr[i], i++)
		memcpy(expect + n, wv[i].iov_base, wr[i]);

	op_putv(&o, ODD_OFF, wv, nwr, path);
	ret = xp_call(conn, &o.call);
	ck_assert_msg(ret == 0, "%s PUT of %d pieces: %s", xp_path_name(path), nwr,
		      strerror(-ret));
	if (path != XP_PATH_AUTO)
		ck_assert_int_eq(o.call.used_path, path);
	op_getv(&o, ODD_OFF, total, rv, nrd, path);
	ret = xp_call(conn, &o.call);
	ck_assert_msg(ret == 0, "%s GET into %d pieces: %s", xp_path_name(path), nrd,
		      strerror(-ret));
	if (path != XP_PATH_AUTO)
		ck_assert_int_eq(o.call.used_path, path);
	ck_assert_uint_eq(o.call.rd_len, total);
	at = 0;
	for (int i = 0; i < nrd; i++) {
		memcpy(got + at, rv[i].iov_base, rd[i]);
		ck_assert_msg(guard_intact((char *)rv[i].iov_base + rd[i], GUARD),
			      "%s GET wrote past piece %d", xp_path_name(path), i);
		at += rd[i];
	}
	diff = first_diff(expect, got, total);
	ck_assert_msg(diff < 0, "%s scatter-gather of %zu bytes differs at byte %ld",
		      xp_path_name(path), total, diff);
	for (int i = 0; i < nwr; i++)
		free(wv[i].iov_base);
	for (int i = 0; i < nrd; i++)
		free(rv[i].iov_base);
	free(expect);
	free(got);
}

START_TEST(inline_path_gathers_and_scatters_pieces)
{
	static const size_t wr[] = {1, 100, 1023, 7, 2000}; /* 3131 */
	static const size_t rd[] = {2000, 3, 1128};

	pieces_move_data(XP_PATH_INLINE, wr, 5, rd, 3);
}
END_TEST

START_TEST(fast_path_gathers_and_scatters_pieces)
{
	static const size_t wr[] = {3, 4097, 30000, 17, 12345, 1}; /* 46463 */
	static const size_t rd[] = {12345, 1, 30000, 4117};

	pieces_move_data(XP_PATH_FAST, wr, 6, rd, 4);
}
END_TEST

START_TEST(bulk_path_gathers_and_scatters_pieces)
{
	static const size_t wr[] = {1, 65537, 1000003, 4095, 300001, 7}; /* 1369644 */
	static const size_t rd[] = {300001, 7, 1000003, 1, 4095, 65537};

	pieces_move_data(XP_PATH_BULK, wr, 6, rd, 6);
}
END_TEST

/* Pieces smaller than a chunk and larger than one, crossing chunk edges. */
START_TEST(bulk_path_moves_pieces_larger_than_a_chunk)
{
	static const size_t wr[] = {(3 << 20) + 5, 17, (1 << 20) - 3};
	static const size_t rd[] = {1 << 20, (2 << 20) + 1, (1 << 20) + 18};

	pieces_move_data(XP_PATH_BULK, wr, 3, rd, 3);
}
END_TEST

START_TEST(auto_path_gathers_and_scatters_pieces)
{
	static const size_t small[] = {10, 20, 30};
	static const size_t mid[] = {5000, 6000, 7000};
	static const size_t big[] = {70000, 1, 80000};

	pieces_move_data(XP_PATH_AUTO, small, 3, small, 3);
	pieces_move_data(XP_PATH_AUTO, mid, 3, mid, 3);
	pieces_move_data(XP_PATH_AUTO, big, 3, big, 3);
}
END_TEST

START_TEST(call_with_both_write_and_read_data_is_refused)
{
	char a[16], b[16];
	struct iovec wv = {a, sizeof(a)}, rv = {b, sizeof(b)};
	struct op o;

	op_putv(&o, 0, &wv, 1, XP_PATH_AUTO);
	o.call.rd_iov = &rv;
	o.call.rd_cnt = 1;
	ck_assert_int_eq(xp_call_start(conn, &o.call), -EINVAL);
	/* and the connection is still fine */
	ck_assert_int_eq(put_sync(0, a, sizeof(a), XP_PATH_AUTO, NULL), 0);
}
END_TEST

/* ---- (c) many calls in flight ---------------------------------------------- */

#define NFLIGHT	      200
#define FLIGHT_STRIDE (256 << 10)
#define FAST_RUN      40

struct flight {
	struct op o;
	char *src, *dst;
	size_t len;
	int path;
	int cb_runs;
};

static void flight_cb(struct xp_call *call)
{
	struct flight *f = call->arg;

	f->cb_runs++;
}

static struct flight *flights_make(uint64_t seed)
{
	struct flight *fl = calloc(NFLIGHT, sizeof(*fl));
	uint64_t x = seed;

	ck_assert_ptr_nonnull(fl);
	for (int i = 0; i < NFLIGHT; i++) {
		struct flight *f = &fl[i];

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		/* A run of fast calls first: more than the fast slots while
		 * credits are still left, so slots (not credits) run out. */
		switch (i < FAST_RUN ? 1 : i % 4) {
		case 0:
			f->path = XP_PATH_INLINE;
			f->len = 1 + (x >> 33) % cparams.inline_max;
			break;
		case 1:
			f->path = XP_PATH_FAST;
			f->len = cparams.inline_max + 1 +
				 (x >> 33) % (cparams.fast_max - cparams.inline_max);
			break;
		case 2:
			f->path = XP_PATH_BULK;
			f->len = cparams.fast_max + 1 +
				 (x >> 33) % (FLIGHT_STRIDE - cparams.fast_max);
			break;
		default:
			f->path = XP_PATH_AUTO;
			f->len = 1 + (x >> 33) % FLIGHT_STRIDE;
			break;
		}
		f->src = xalloc(f->len);
		f->dst = xalloc(f->len);
		fill(f->src, f->len, seed + (uint64_t)i);
		memset(f->dst, 0xee, f->len);
	}
	return fl;
}

static void flights_free(struct flight *fl)
{
	for (int i = 0; i < NFLIGHT; i++) {
		free(fl[i].src);
		free(fl[i].dst);
	}
	free(fl);
}

/* Start every call before waiting for any. */
static void flights_run(struct flight *fl, int put)
{
	for (int i = 0; i < NFLIGHT; i++) {
		struct flight *f = &fl[i];
		uint64_t off = (uint64_t)i * FLIGHT_STRIDE;
		int ret;

		if (put)
			op_put(&f->o, off, f->src, f->len, f->path);
		else
			op_get(&f->o, off, f->dst, f->len, f->path);
		f->o.call.cb = flight_cb;
		f->o.call.arg = f;
		f->cb_runs = 0;
		ret = xp_call_start(conn, &f->o.call);
		ck_assert_msg(ret == 0, "start of call %d (%s, %zu bytes): %s", i,
			      xp_path_name(f->path), f->len, strerror(-ret));
	}
	for (int i = 0; i < NFLIGHT; i++) {
		struct flight *f = &fl[i];
		int ret = xp_call_wait(&f->o.call);

		ck_assert_msg(ret == 0, "%s call %d (%s, %zu bytes): %s",
			      put ? "PUT" : "GET", i, xp_path_name(f->path), f->len,
			      strerror(-ret));
		ck_assert_int_eq(xp_call_test(&f->o.call), 1);
		if (f->path != XP_PATH_AUTO)
			ck_assert_int_eq(f->o.call.used_path, f->path);
	}
}

START_TEST(many_calls_in_flight_queue_for_credits_and_slots_and_all_complete)
{
	struct flight *fl = flights_make(77);
	struct xp_stats st;

	flights_run(fl, 1);
	flights_run(fl, 0);
	for (int i = 0; i < NFLIGHT; i++) {
		long diff = first_diff(fl[i].src, fl[i].dst, fl[i].len);

		ck_assert_msg(diff < 0, "call %d (%s, %zu bytes) differs at byte %ld", i,
			      xp_path_name(fl[i].path), fl[i].len, diff);
		ck_assert_uint_eq(fl[i].o.call.rd_len, fl[i].len);
	}
	xp_fabric_stats(fab, &st);
	/* 200 calls against 32 credits and 16 fast slots must have waited. */
	ck_assert_msg(st.credit_waits > 0, "no call waited for a credit");
	ck_assert_msg(st.slot_waits > 0, "no call waited for a fast slot");
	ck_assert_int_eq(xp_conn_error(conn), 0);
	flights_free(fl);
}
END_TEST

START_TEST(completion_callback_runs_exactly_once_per_call)
{
	struct flight *fl = flights_make(78);

	flights_run(fl, 1);
	/* More progress must not run a callback again. */
	for (int i = 0; i < 5; i++)
		xp_progress(fab, 10);
	for (int i = 0; i < NFLIGHT; i++)
		ck_assert_msg(fl[i].cb_runs == 1, "callback of call %d ran %d times", i,
			      fl[i].cb_runs);
	flights_free(fl);
}
END_TEST

/* A client fabric may be used from many threads at once. */
#define NTHREADS      4
#define THREAD_ROUNDS 40

struct worker {
	pthread_t thr;
	int id;
	int failures;
	char msg[160];
};

static void *thread_round_trips(void *arg)
{
	static const size_t tsizes[] = {10, 4096, 5000, 65536, 70000, 1 << 20};
	struct worker *w = arg;
	size_t max = 1 << 20;
	char *src = malloc(max), *dst = malloc(max);
	uint64_t base = (uint64_t)w->id * (8 << 20);

	if (!src || !dst) {
		w->failures++;
		goto out;
	}
	for (int r = 0; r < THREAD_ROUNDS && !w->failures; r++) {
		size_t len = tsizes[(size_t)(r + w->id) % 6];
		size_t rd_len = 0;
		int ret;

		fill(src, len, (uint64_t)w->id << 20 | (uint64_t)r);
		ret = put_sync(base, src, len, XP_PATH_AUTO, NULL);
		if (!ret)
			ret = get_sync(base, dst, len, XP_PATH_AUTO, NULL, &rd_len);
		if (ret || rd_len != len || memcmp(src, dst, len)) {
			snprintf(w->msg, sizeof(w->msg),
				 "thread %d round %d (%zu bytes): %s, rd_len %zu", w->id,
				 r, len, ret ? strerror(-ret) : "data differs", rd_len);
			w->failures++;
		}
	}
out:
	free(src);
	free(dst);
	return NULL;
}

START_TEST(calls_from_several_threads_on_one_connection_all_complete)
{
	struct worker w[NTHREADS];

	for (int i = 0; i < NTHREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].id = i;
		ck_assert_int_eq(
			pthread_create(&w[i].thr, NULL, thread_round_trips, &w[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(w[i].thr, NULL);
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_msg(w[i].failures == 0, "%s", w[i].msg);
}
END_TEST

/* ---- bulk pipeline with slow storage ------------------------------------------- */

/* While one chunk is in (slow) storage the next is already moving. */
START_TEST(bulk_write_overlaps_chunks_with_slow_storage)
{
	struct memsrv_opts o = {.delay_us = 20000};
	struct memsrv_stats st;
	struct xp_params p;
	size_t len = (size_t)8 << 20;
	char *src, *dst;

	test_params(&p);
	start_with(&p, &o);
	src = xalloc(len);
	dst = xalloc(len);
	fill(src, len, 11);
	ck_assert_int_eq(put_sync(0, src, len, XP_PATH_BULK, NULL), 0);
	ck_assert_int_eq(server_stats(&st), 0);
	ck_assert_uint_ge(st.chunks, 2);
	ck_assert_msg(st.max_busy_chunks >= 2,
		      "chunks never overlapped (pipeline_depth %u, %llu chunks)",
		      (unsigned)p.pipeline_depth, (unsigned long long)st.chunks);
	ck_assert_int_eq(get_sync(0, dst, len, XP_PATH_BULK, NULL, NULL), 0);
	ck_assert_int_eq(memcmp(src, dst, len), 0);
	free(src);
	free(dst);
}
END_TEST

/* Chunks completed from the server's worker thread (xp_chunk_done from
 * another thread), and inline/fast replies handed back with xp_fabric_post. */
START_TEST(every_path_works_with_storage_in_a_worker_thread)
{
	struct memsrv_opts o = {.worker = 1};
	struct xp_params p;
	static const size_t wsizes[] = {100,   4096,	       30000,	  65536,
					65537, (3 << 20) + 17, (16 << 20)};
	char *src = xalloc((16 << 20) + GUARD), *dst = xalloc((16 << 20) + GUARD);

	test_params(&p);
	start_with(&p, &o);
	for (size_t i = 0; i < sizeof(wsizes) / sizeof(wsizes[0]); i++)
		round_trip(XP_PATH_AUTO, wsizes[i], ODD_OFF, src, dst, 500 + i);
	free(src);
	free(dst);
}
END_TEST

/* ---- (d, e) registration cache ------------------------------------------------- */

START_TEST(bulk_from_the_same_buffer_hits_the_registration_cache)
{
	size_t len = 1 << 20;
	char *buf = xalloc(len);
	struct xp_stats a, b, c;

	fill(buf, len, 21);
	xp_fabric_stats(fab, &a);
	ck_assert_int_eq(put_sync(0, buf, len, XP_PATH_BULK, NULL), 0);
	xp_fabric_stats(fab, &b);
	ck_assert_int_eq(put_sync(0, buf, len, XP_PATH_BULK, NULL), 0);
	xp_fabric_stats(fab, &c);
	ck_assert_msg(b.rcache_misses > a.rcache_misses, "first use was not a miss");
	ck_assert_msg(c.rcache_hits > b.rcache_hits, "second use was not a hit");
	ck_assert_uint_eq(c.rcache_misses, b.rcache_misses);
	free(buf);
}
END_TEST

/* Memory unmapped and mapped again at the same address is new memory: the
 * cache must not serve the old registration (on verbs it would pin the old
 * pages and send stale data). */
START_TEST(bulk_after_unmap_and_remap_at_same_address_sends_new_contents)
{
	size_t len = 4 << 20;
	char *first, *again, *dst = xalloc(len);
	struct xp_stats a, b;
	int same;

	first = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		     0);
	ck_assert_ptr_ne(first, MAP_FAILED);
	fill(first, len, 31);
	ck_assert_int_eq(put_sync(0, first, len, XP_PATH_BULK, NULL), 0);
	ck_assert_int_eq(munmap(first, len), 0);

	again = mmap(first, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (again == MAP_FAILED)
		again = mmap(NULL, len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(again, MAP_FAILED);
	same = again == first;
	fill(again, len, 32);

	xp_fabric_stats(fab, &a);
	ck_assert_int_eq(put_sync(0, again, len, XP_PATH_BULK, NULL), 0);
	xp_fabric_stats(fab, &b);
	if (same && rcache_hooks_active())
		ck_assert_msg(b.rcache_misses > a.rcache_misses,
			      "remapped buffer reused the old registration");

	memset(dst, 0xee, len);
	ck_assert_int_eq(get_sync(0, dst, len, XP_PATH_BULK, NULL, NULL), 0);
	ck_assert_msg(first_diff(again, dst, len) < 0,
		      "server holds the old contents (same address: %d)", same);
	munmap(again, len);
	free(dst);
}
END_TEST

/* The same for a buffer freed and allocated again through malloc. */
START_TEST(bulk_after_free_and_malloc_sends_new_contents)
{
	size_t len = (8 << 20) + 4096; /* large enough for malloc to use mmap */
	char *a = xalloc(len), *b, *dst = xalloc(len);

	fill(a, len, 41);
	ck_assert_int_eq(put_sync(0, a, len, XP_PATH_BULK, NULL), 0);
	free(a);
	b = xalloc(len);
	fill(b, len, 42);
	ck_assert_int_eq(put_sync(0, b, len, XP_PATH_BULK, NULL), 0);
	ck_assert_int_eq(get_sync(0, dst, len, XP_PATH_BULK, NULL, NULL), 0);
	ck_assert_msg(first_diff(b, dst, len) < 0, "server holds the old contents");
	free(b);
	free(dst);
}
END_TEST

/* ---- (f, g) failing servers ----------------------------------------------------- */

#define FAIL_TIMEOUT_MS 2000
#define SLACK_MS	3000

static void drive(int ms)
{
	int64_t end = now_ms() + ms;

	while (now_ms() < end)
		xp_progress(fab, 20);
}

/* Every pending call completes with an error, in bounded time; later calls
 * fail at once; nothing hangs. Storage takes 400 ms a step, so at the kill
 * (200 ms in) no call can have finished on its own. */
START_TEST(killed_server_fails_every_pending_call_and_later_calls)
{
	struct memsrv_opts o = {.delay_us = 400000};
	struct xp_params p;
	enum { NCALLS = 8 };
	struct op ops[NCALLS];
	size_t lens[NCALLS] = {32 << 20, 8 << 20, 30000, 40000, 50000, 100, 200, 300};
	int paths[NCALLS] = {XP_PATH_BULK,   XP_PATH_BULK,  XP_PATH_FAST,
			     XP_PATH_FAST,   XP_PATH_FAST,  XP_PATH_INLINE,
			     XP_PATH_INLINE, XP_PATH_INLINE};
	char *bufs[NCALLS];
	int64_t t0;
	int st = 0, ret;

	test_params(&p);
	p.timeout_ms = FAIL_TIMEOUT_MS;
	start_with(&p, &o);
	for (int i = 0; i < NCALLS; i++) {
		bufs[i] = xalloc(lens[i]);
		fill(bufs[i], lens[i], 60 + (uint64_t)i);
		if (i == 1)
			op_get(&ops[i], 40 << 20, bufs[i], lens[i], paths[i]);
		else
			op_put(&ops[i], (uint64_t)i << 20, bufs[i], lens[i], paths[i]);
		ret = xp_call_start(conn, &ops[i].call);
		ck_assert_msg(ret == 0, "start %d: %s", i, strerror(-ret));
	}
	/* Let the requests reach the server and the transfers get under way. */
	drive(200);
	for (int i = 0; i < NCALLS; i++)
		ck_assert_msg(!xp_call_test(&ops[i].call),
			      "call %d (%s) finished too soon", i,
			      xp_path_name(paths[i]));

	ck_assert_int_eq(kill(srv_pid, SIGKILL), 0);
	waitpid(srv_pid, &st, 0);
	srv_pid = -1;
	t0 = now_ms();
	for (int i = 0; i < NCALLS; i++) {
		ret = xp_call_wait(&ops[i].call);
		ck_assert_msg(ret < 0, "call %d (%s) succeeded after the server died", i,
			      xp_path_name(paths[i]));
		ck_assert_int_eq(ops[i].call.status, ret);
	}
	ck_assert_msg(now_ms() - t0 <= FAIL_TIMEOUT_MS + SLACK_MS,
		      "pending calls took %lld ms to fail", (long long)(now_ms() - t0));
	ck_assert_msg(xp_conn_error(conn) < 0, "connection still looks usable");

	/* Later calls fail at start, or complete with an error, without a hang. */
	t0 = now_ms();
	for (int i = 0; i < 3; i++) {
		struct op later;

		op_put(&later, 0, bufs[5], lens[5], XP_PATH_AUTO);
		ret = xp_call_start(conn, &later.call);
		if (ret == 0)
			ret = xp_call_wait(&later.call);
		ck_assert_msg(ret < 0, "a call on a dead connection succeeded");
	}
	ck_assert_int_le(now_ms() - t0, FAIL_TIMEOUT_MS + SLACK_MS);
	/* Closing with failed calls must release their registrations cleanly. */
	xp_conn_close(conn);
	conn = NULL;
	xp_fabric_close(fab);
	fab = NULL;
	for (int i = 0; i < NCALLS; i++)
		free(bufs[i]);
}
END_TEST

START_TEST(call_on_broken_connection_is_refused_with_enotconn)
{
	struct xp_params p;
	struct op o;
	char buf[10] = "x";
	int st, ret;

	test_params(&p);
	p.timeout_ms = FAIL_TIMEOUT_MS;
	start_with(&p, NULL);
	ck_assert_int_eq(put_sync(0, buf, sizeof(buf), XP_PATH_AUTO, NULL), 0);
	kill(srv_pid, SIGKILL);
	waitpid(srv_pid, &st, 0);
	srv_pid = -1;
	/* Drive progress until the transport has noticed. */
	for (int64_t end = now_ms() + FAIL_TIMEOUT_MS + SLACK_MS;
	     !xp_conn_error(conn) && now_ms() < end;)
		xp_progress(fab, 20);
	ck_assert_msg(xp_conn_error(conn) < 0, "server death went unnoticed");
	op_put(&o, 0, buf, sizeof(buf), XP_PATH_AUTO);
	ret = xp_call_start(conn, &o.call);
	ck_assert_msg(ret == -ENOTCONN, "start on a broken connection: %d (%s)", ret,
		      strerror(-ret));
}
END_TEST

/* A server that stops answering without closing (SIGSTOP: the kernel still
 * accepts its TCP traffic) is caught by the timeout. */
START_TEST(stopped_server_times_out_a_call)
{
	struct xp_params p;
	struct xp_stats st;
	char buf[100];
	struct op o;
	int64_t t0, took;
	int ret;

	test_params(&p);
	p.timeout_ms = FAIL_TIMEOUT_MS;
	start_with(&p, NULL);
	fill(buf, sizeof(buf), 71);
	ck_assert_int_eq(put_sync(0, buf, sizeof(buf), XP_PATH_AUTO, NULL), 0);
	server_pause();

	op_put(&o, 0, buf, sizeof(buf), XP_PATH_AUTO);
	t0 = now_ms();
	ret = xp_call(conn, &o.call);
	took = now_ms() - t0;
	ck_assert_msg(ret == -ETIMEDOUT, "call to a stopped server: %d (%s)", ret,
		      strerror(-ret));
	ck_assert_msg(took >= FAIL_TIMEOUT_MS * 3 / 4,
		      "timed out after %lld ms, before %d", (long long)took,
		      FAIL_TIMEOUT_MS);
	ck_assert_msg(took <= FAIL_TIMEOUT_MS + SLACK_MS, "timed out after %lld ms",
		      (long long)took);
	xp_fabric_stats(fab, &st);
	ck_assert_uint_ge(st.timeouts, 1);
	kill(srv_pid, SIGCONT);
}
END_TEST

START_TEST(stopped_server_times_out_a_bulk_call)
{
	struct xp_params p;
	size_t len = 4 << 20;
	char *buf = xalloc(len);
	int64_t t0, took;
	int ret;

	test_params(&p);
	p.timeout_ms = FAIL_TIMEOUT_MS;
	start_with(&p, NULL);
	fill(buf, len, 72);
	server_pause();
	t0 = now_ms();
	ret = get_sync(0, buf, len, XP_PATH_BULK, NULL, NULL);
	took = now_ms() - t0;
	ck_assert_msg(ret == -ETIMEDOUT, "bulk call to a stopped server: %d (%s)", ret,
		      strerror(-ret));
	ck_assert_msg(took <= FAIL_TIMEOUT_MS + SLACK_MS, "timed out after %lld ms",
		      (long long)took);
	kill(srv_pid, SIGCONT);
	free(buf);
}
END_TEST

/* After a call has failed the caller owns its buffer again: a server that
 * wakes up late must not write into it (the transport has to break the
 * connection or otherwise fence the peer's access to that memory). */
START_TEST(late_data_after_a_timeout_never_lands_in_the_caller_buffer)
{
	struct xp_params p;
	size_t blen = 4 << 20, flen = 30000;
	char *bbuf = xalloc(blen), *fbuf = xalloc(flen), *src = xalloc(blen);
	struct op b, f;

	test_params(&p);
	p.timeout_ms = FAIL_TIMEOUT_MS;
	start_with(&p, NULL);
	fill(src, blen, 73);
	ck_assert_int_eq(put_sync(0, src, blen, XP_PATH_BULK, NULL), 0);
	server_pause();
	op_get(&b, 0, bbuf, blen, XP_PATH_BULK);
	op_get(&f, 0, fbuf, flen, XP_PATH_FAST);
	ck_assert_int_eq(xp_call_start(conn, &b.call), 0);
	ck_assert_int_eq(xp_call_start(conn, &f.call), 0);
	ck_assert_int_eq(xp_call_wait(&b.call), -ETIMEDOUT);
	ck_assert_int_eq(xp_call_wait(&f.call), -ETIMEDOUT);

	memset(bbuf, 0xab, blen);
	memset(fbuf, 0xab, flen);
	ck_assert_int_eq(kill(srv_pid, SIGCONT), 0);
	drive(1000);
	for (size_t i = 0; i < blen; i++)
		ck_assert_msg((unsigned char)bbuf[i] == 0xab,
			      "bulk read landed after its timeout (byte %zu)", i);
	for (size_t i = 0; i < flen; i++)
		ck_assert_msg((unsigned char)fbuf[i] == 0xab,
			      "fast read landed after its timeout (byte %zu)", i);
	free(bbuf);
	free(fbuf);
	free(src);
}
END_TEST

/* SIGTERM with a client connected: memsrv stops cleanly (no crash in
 * teardown of live connections), and the client sees an error, not a hang. */
START_TEST(server_stops_cleanly_with_a_client_connected)
{
	struct xp_params p;
	char buf[5000];
	int st, ret;

	test_params(&p);
	p.timeout_ms = FAIL_TIMEOUT_MS;
	start_with(&p, NULL);
	fill(buf, sizeof(buf), 81);
	ck_assert_int_eq(put_sync(0, buf, sizeof(buf), XP_PATH_AUTO, NULL), 0);
	st = server_stop(10000);
	ck_assert_msg(st >= 0, "memsrv did not stop within 10 s of SIGTERM");
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "memsrv ended with status %#x", st);
	ret = put_sync(0, buf, sizeof(buf), XP_PATH_AUTO, NULL);
	ck_assert_msg(ret < 0, "a call to a stopped server succeeded");
}
END_TEST

/* ---- (h) connecting --------------------------------------------------------- */

/* A port on the test address that nobody listens on (bound, then released). */
static int unused_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(inet_pton(AF_INET, test_addr(), &a.sin_addr), 1);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

START_TEST(connect_without_listener_fails_quickly_naming_the_address)
{
	struct xp_params p;
	char port[16], why[256] = "";
	struct xp_conn *c = NULL;
	int64_t t0;
	int ret;

	test_params(&p);
	ck_assert_int_eq(xp_fabric_open(&p, XP_CLIENT, test_key(), &fab), 0);
	snprintf(port, sizeof(port), "%d", unused_port());
	t0 = now_ms();
	ret = xp_connect(fab, test_addr(), port, NULL, &c, why, sizeof(why));
	ck_assert_msg(ret < 0, "connect to a closed port succeeded");
	ck_assert_msg(now_ms() - t0 < 5000, "refusal took %lld ms",
		      (long long)(now_ms() - t0));
	ck_assert_msg(strstr(why, test_addr()) && strstr(why, port),
		      "reason does not name %s:%s: '%s'", test_addr(), port, why);
	/* verbs says why in rdma_cm's reject reason: nobody listens there
	 * (not a stale connection, not a full server). */
	if (!strcmp(xp_fabric_provider(fab), "verbs"))
		ck_assert_msg(strstr(why, "nothing listens at that address and port"),
			      "a refusal without its reason: '%s'", why);
}
END_TEST

/* A failed connect lets go of its connection: a metadata server pings a
 * dead I/O server every heartbeat_ms, and each refused connect used to keep
 * its buffers when another thread drove the engine through the failure
 * (1.7 MB each on Soft-RoCE: the metadata server ran out of memory within
 * two minutes). With calls going on another connection of the same fabric,
 * as the other heartbeats' are, the memory the fabric's connections hold
 * must come back to what the live one holds. */
struct nop_loop {
	atomic_bool stop;
	atomic_int calls;
};

static void *nops_until_stopped(void *arg)
{
	struct nop_loop *l = arg;

	while (!atomic_load(&l->stop)) {
		struct op o;

		op_init(&o, MEMSRV_NOP, 0, 0, XP_PATH_AUTO);
		if (xp_call(conn, &o.call) || o.call.status)
			break;
		atomic_fetch_add(&l->calls, 1);
	}
	return NULL;
}

START_TEST(refused_connects_keep_no_memory)
{
	struct nop_loop l;
	struct xp_stats before, st;
	char port[16];
	struct xp_params p;
	pthread_t thr;
	int64_t t0;

	test_params(&p);
	start_with(&p, NULL);
	xp_fabric_stats(fab, &before);
	snprintf(port, sizeof(port), "%d", unused_port());
	atomic_init(&l.stop, false);
	atomic_init(&l.calls, 0);
	ck_assert_int_eq(pthread_create(&thr, NULL, nops_until_stopped, &l), 0);
	/* The refused connects must happen while the other thread calls. */
	t0 = now_ms();
	while (!atomic_load(&l.calls) && now_ms() - t0 < 5000)
		sched_yield();
	ck_assert_int_gt(atomic_load(&l.calls), 0);
	for (int i = 0; i < 20; i++) {
		uint8_t hello[8] = "peer";
		struct xp_hello h = {hello, sizeof(hello), NULL, 0, 0};
		struct xp_conn *c = NULL;
		char why[256];

		ck_assert_int_lt(
			xp_connect(fab, test_addr(), port, &h, &c, why, sizeof(why)), 0);
		ck_assert_ptr_null(c);
	}
	atomic_store(&l.stop, true);
	pthread_join(thr, NULL);
	/* Flushed receives may complete a little after the close. */
	t0 = now_ms();
	do {
		xp_progress(fab, 10);
		xp_fabric_stats(fab, &st);
	} while (st.conn_bytes != before.conn_bytes && now_ms() - t0 < 5000);
	ck_assert_msg(st.conn_bytes == before.conn_bytes,
		      "after 20 refused connects the fabric's connections hold %llu "
		      "bytes, the live one %llu",
		      (unsigned long long)st.conn_bytes,
		      (unsigned long long)before.conn_bytes);
}
END_TEST

/* Work handed to the progress thread by another thread while it polls:
 * whenever the progress thread takes the queue between a post's append and
 * its wake-up, an idle progress call afterwards must still sleep its
 * timeout, not return at once on the stale wake-up (a server spinning at
 * 100% CPU with no client, found in a leftover rpfsd). Each round posts one
 * callback while this thread spins, then times an idle call. */
struct post_burst {
	int rounds;
	int posted;
	int done;
};

static void post_count(void *arg)
{
	__atomic_add_fetch(&((struct post_burst *)arg)->done, 1, __ATOMIC_RELEASE);
}

static void *post_rounds(void *arg)
{
	struct post_burst *b = arg;

	for (int i = 0; i < b->rounds; i++) {
		/* Wait for the spinning phase of round i. */
		while (__atomic_load_n(&b->posted, __ATOMIC_ACQUIRE) != i + 1)
			sched_yield();
		ck_assert_int_eq(xp_fabric_post(fab, post_count, b), 0);
	}
	return NULL;
}

START_TEST(idle_progress_sleeps_after_posts_from_another_thread)
{
	struct post_burst b = {.rounds = 300};
	struct xp_params p;
	int early = 0;
	pthread_t t;

	test_params(&p);
	p.spin_us = 0;
	ck_assert_int_eq(xp_fabric_open(&p, XP_CLIENT, test_key(), &fab), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, post_rounds, &b), 0);
	for (int i = 0; i < b.rounds; i++) {
		int64_t t0 = now_ms();

		__atomic_store_n(&b.posted, i + 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&b.done, __ATOMIC_ACQUIRE) < i + 1) {
			ck_assert_msg(now_ms() - t0 < 10000, "post %d never ran", i);
			xp_progress(fab, 0);
		}
		/* The round's wake-up may still be pending (the post's eventfd
		 * write can land after the engine took its list) and end one
		 * wait early; that wait drains it, so the next one has nothing
		 * to do and must sleep. Without the drain every later wait
		 * returned at once: a thread spinning on an idle server. */
		xp_progress(fab, 5);
		t0 = now_ms();
		xp_progress(fab, 5);
		if (now_ms() - t0 < 3)
			early++;
	}
	pthread_join(t, NULL);
	ck_assert_msg(early == 0, "%d of %d idle progress calls returned at once", early,
		      b.rounds);
}
END_TEST

START_TEST(connect_to_unknown_host_fails_naming_it)
{
	struct xp_params p;
	char why[256] = "";
	struct xp_conn *c = NULL;
	int ret;

	test_params(&p);
	ck_assert_int_eq(xp_fabric_open(&p, XP_CLIENT, test_key(), &fab), 0);
	ret = xp_connect(fab, "no-such-host.invalid", "7000", NULL, &c, why, sizeof(why));
	ck_assert_msg(ret < 0, "connect to an unknown host succeeded");
	ck_assert_msg(strstr(why, "no-such-host.invalid"),
		      "reason does not name the host: '%s'", why);
}
END_TEST

START_TEST(connection_names_its_peer_and_provider)
{
	const char *peer = xp_conn_peer(conn);

	ck_assert_ptr_nonnull(peer);
	ck_assert_msg(strstr(peer, test_addr()) && strstr(peer, srv_port), "peer '%s'",
		      peer);
	ck_assert_ptr_nonnull(xp_fabric_provider(fab));
	ck_assert_msg(strstr(xp_fabric_provider(fab), cparams.provider), "provider '%s'",
		      xp_fabric_provider(fab));
	ck_assert_int_eq(xp_conn_error(conn), 0);
}
END_TEST

/* ---- (i) limits ------------------------------------------------------------- */

START_TEST(request_body_too_large_for_a_message_is_refused_with_e2big)
{
	size_t len = (size_t)32 << 20;
	uint8_t *body = calloc(1, len);
	struct memsrv_req q = {.op = MEMSRV_NOP};
	struct op o;

	ck_assert_ptr_nonnull(body);
	memsrv_req_encode(body, &q);
	op_init(&o, MEMSRV_NOP, 0, 0, XP_PATH_AUTO);
	o.call.req = body;
	o.call.req_len = len;
	ck_assert_int_eq(xp_call_start(conn, &o.call), -E2BIG);
	/* Refused before anything was sent: the connection goes on. */
	op_init(&o, MEMSRV_NOP, 0, 0, XP_PATH_AUTO);
	ck_assert_int_eq(xp_call(conn, &o.call), 0);
	free(body);
}
END_TEST

/* Calls handed to the engine (xp_calls_post, the nonblocking API's start)
 * move the same bytes as calls started in place, by every path, and one
 * that cannot start (a body too large for a message) ends with its error
 * at the wait, while the calls around it complete. */
static void posted_calls_check(void)
{
	static const size_t lens[] = {100, 4096, 60000, (3 << 20) + 17};
	enum { N = 4 };
	struct op put[N + 1], get[N];
	struct xp_conn *conns[N + 1];
	struct xp_call *calls[N + 1];
	char *src[N], *dst[N];
	uint8_t *big = calloc(1, (size_t)64 << 10);
	struct memsrv_req q = {.op = MEMSRV_NOP};

	ck_assert_ptr_nonnull(big);
	memsrv_req_encode(big, &q);
	for (int i = 0; i < N + 1; i++)
		conns[i] = conn;
	for (int i = 0; i < N; i++) {
		src[i] = xalloc(lens[i]);
		dst[i] = xalloc(lens[i]);
		fill(src[i], lens[i], 600 + (uint64_t)i);
		op_put(&put[i], (uint64_t)i << 22, src[i], lens[i], XP_PATH_AUTO);
		calls[i] = &put[i].call;
	}
	/* in the middle: a request body no message can carry */
	op_init(&put[N], MEMSRV_NOP, 0, 0, XP_PATH_AUTO);
	put[N].call.req = big;
	put[N].call.req_len = (size_t)64 << 10;
	calls[N] = calls[2];
	calls[2] = &put[N].call;
	ck_assert_int_eq(xp_calls_post(conns, calls, N + 1), 0);
	for (int i = 0; i < N + 1; i++)
		ck_assert_int_eq(xp_call_wait(calls[i]),
				 calls[i] == &put[N].call ? -E2BIG : 0);
	for (int i = 0; i < N; i++) {
		op_get(&get[i], (uint64_t)i << 22, dst[i], lens[i], XP_PATH_AUTO);
		calls[i] = &get[i].call;
	}
	ck_assert_int_eq(xp_calls_post(conns, calls, N), 0);
	for (int i = 0; i < N; i++) {
		long diff;

		ck_assert_int_eq(xp_call_wait(calls[i]), 0);
		ck_assert_uint_eq(get[i].call.rd_len, lens[i]);
		diff = first_diff(src[i], dst[i], lens[i]);
		ck_assert_msg(diff < 0, "posted call %d (%zu bytes) differs at byte %ld",
			      i, lens[i], diff);
		free(src[i]);
		free(dst[i]);
	}
	ck_assert_int_eq(xp_conn_error(conn), 0);
	free(big);
}

START_TEST(posted_calls_complete_and_an_unstartable_one_reports_its_error)
{
	posted_calls_check();
}
END_TEST

/* xp_calls_post_held registers the memory on the progress thread before
 * the calls start (a cold registration pins pages on verbs: no cost for a
 * post): one registration, the whole buffer's, which the call then finds.
 * Memory that cannot be registered ends every call with that error before
 * any starts, and leaves the connection as it was. */
static void posted_held_check(void)
{
	const size_t len = (size_t)4 << 20;
	char *src = xalloc(len), *dst = xalloc(len);
	struct iovec mem = {src, len};
	struct xp_call *calls[1];
	struct xp_conn *conns[1] = {conn};
	struct xp_mem_hold *hold = (struct xp_mem_hold *)&mem;
	struct xp_stats a, b;
	struct op put;
	int err = 1;

	fill(src, len, 80);
	xp_fabric_stats(fab, &a);
	op_put(&put, 0, src, len, XP_PATH_BULK);
	calls[0] = &put.call;
	ck_assert_int_eq(xp_calls_post_held(conns, calls, 1, &mem, 1, &hold, &err), 0);
	ck_assert_int_eq(xp_call_wait(&put.call), 0);
	xp_fabric_stats(fab, &b);
	ck_assert_int_eq(err, 0);
	ck_assert_ptr_nonnull(hold);
	ck_assert_uint_eq(b.rcache_misses, a.rcache_misses + 1);
	ck_assert_uint_gt(b.rcache_hits, a.rcache_hits);
	xp_mem_release(fab, hold);
	ck_assert_int_eq(get_sync(0, dst, len, XP_PATH_BULK, NULL, NULL), 0);
	ck_assert_int_lt(first_diff(src, dst, len), 0);

	/* a length past the end of the address space: the cache refuses it */
	mem.iov_len = SIZE_MAX - 4096;
	op_put(&put, 0, src, len, XP_PATH_BULK);
	ck_assert_int_eq(xp_calls_post_held(conns, calls, 1, &mem, 1, &hold, &err), 0);
	ck_assert_int_eq(xp_call_wait(&put.call), -EINVAL);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_ptr_null(hold);
	ck_assert_int_eq(xp_conn_error(conn), 0);
	ck_assert_int_eq(put_sync(0, src, len, XP_PATH_BULK, NULL), 0);
	free(src);
	free(dst);
}

START_TEST(posted_calls_hold_their_memory_first_or_all_fail_with_its_error)
{
	posted_held_check();
}
END_TEST

/* Without a progress thread nobody would start posted calls before their
 * owner waits: xp_calls_post starts them in place, with the same results. */
/* The test's connection, from a client without a progress thread. */
static void start_without_progress_thread(void)
{
	struct xp_params p;

	test_params(&p);
	p.progress_thread = 0;
	start_with(&p, NULL);
}

START_TEST(posted_calls_without_a_progress_thread_start_in_place)
{
	start_without_progress_thread();
	posted_calls_check();
	posted_held_check();
}
END_TEST

/* A bounded wait (what librpfs's rpfs_timedwait and the ROMIO driver's
 * poll loop use) returns at its deadline while the call is held up (the
 * server stopped), asleep rather than polling, and returns as soon as the
 * call completes once the server goes on; with or without a progress
 * thread. */
static int64_t thread_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void timedwait_check(void)
{
	const size_t len = (size_t)3 << 20;
	char *src = xalloc(len), *dst = xalloc(len);
	struct xp_call *calls[1];
	struct xp_conn *conns[1] = {conn};
	struct op put, get;
	int64_t t0, took, cpu;

	fill(src, len, 77);
	ck_assert_int_eq(put_sync(0, src, 100, XP_PATH_AUTO, NULL), 0);
	server_pause();
	op_put(&put, 0, src, len, XP_PATH_BULK);
	calls[0] = &put.call;
	ck_assert_int_eq(xp_calls_post(conns, calls, 1), 0);
	t0 = now_ms();
	cpu = thread_cpu_us();
	ck_assert_int_eq(xp_call_timedwait(&put.call, 50000), 0);
	took = now_ms() - t0;
	cpu = thread_cpu_us() - cpu;
	ck_assert_msg(took >= 45 && took <= 50 + SLACK_MS,
		      "a 50 ms wait on a stopped server returned after %lld ms",
		      (long long)took);
	ck_assert_msg(cpu < 25000, "a 50 ms wait used %lld us of CPU: it polled",
		      (long long)cpu);
	ck_assert_int_eq(xp_call_timedwait(&put.call, 0), 0);
	kill(srv_pid, SIGCONT);
	t0 = now_ms();
	ck_assert_int_eq(xp_call_timedwait(&put.call, 20 * 1000000), 1);
	took = now_ms() - t0;
	ck_assert_msg(took < 10000, "the call completed %lld ms after the server went on",
		      (long long)took);
	ck_assert_int_eq(put.call.status, 0);
	op_get(&get, 0, dst, len, XP_PATH_BULK);
	ck_assert_int_eq(xp_call(conn, &get.call), 0);
	ck_assert_int_lt(first_diff(src, dst, len), 0);
	free(src);
	free(dst);
}

START_TEST(timed_wait_sleeps_until_its_deadline_or_the_call_completes)
{
	timedwait_check();
}
END_TEST

START_TEST(timed_wait_without_a_progress_thread_drives_the_call_itself)
{
	start_without_progress_thread();
	timedwait_check();
}
END_TEST

/* progress_cpus: where the client's progress thread runs. The client is
 * opened while the test's thread is bound to one CPU, as a launcher's
 * bind-to-core leaves a rank; the thread (named rpfs-progress) must then
 * be where the setting says, and transfers must work from there. */

/* This process's progress thread (named rpfs-progress). */
static pid_t progress_thread_tid(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char path[300], comm[32];
	pid_t tid = 0;

	ck_assert_ptr_nonnull(d);
	while (!tid && (e = readdir(d))) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strcmp(comm, "rpfs-progress\n"))
			tid = atoi(e->d_name);
		fclose(f);
	}
	closedir(d);
	ck_assert_msg(tid > 0, "no thread named rpfs-progress in this process");
	return tid;
}

/* The affinity of this process's progress thread. */
static void progress_thread_cpus(cpu_set_t *set)
{
	ck_assert_int_eq(sched_getaffinity(progress_thread_tid(), sizeof(*set), set), 0);
}

/* Open the client with progress_cpus = want while this thread runs on its
 * first CPU only; *mine is the thread's own CPUs before. */
static void open_bound(const char *want, cpu_set_t *mine, int *first)
{
	struct xp_params p;
	cpu_set_t one;

	test_params(&p);
	teardown_all();
	server_spawn(&p, NULL);
	ck_assert_int_eq(xp_params_set(&p, "progress_cpus", want), 0);
	ck_assert_int_eq(sched_getaffinity(0, sizeof(*mine), mine), 0);
	for (*first = 0; !CPU_ISSET(*first, mine); (*first)++)
		;
	CPU_ZERO(&one);
	CPU_SET(*first, &one);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	client_open(&p);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(*mine), mine), 0);
}

static void transfer_works(void)
{
	const size_t len = (size_t)2 << 20;
	char *src = xalloc(len + GUARD), *dst = xalloc(len + GUARD);

	round_trip(XP_PATH_BULK, len, 0, src, dst, 91);
	round_trip(XP_PATH_AUTO, 3000, 7, src, dst, 92);
	free(src);
	free(dst);
}

START_TEST(progress_thread_inherits_the_binding_by_default)
{
	cpu_set_t mine, got;
	int first;

	open_bound("", &mine, &first);
	progress_thread_cpus(&got);
	ck_assert_int_eq(CPU_COUNT(&got), 1);
	ck_assert(CPU_ISSET(first, &got));
	transfer_works();
}
END_TEST

/* The progress thread's policy within 2 s reaching want. */
static int progress_thread_policy_becomes(int want)
{
	int64_t end = now_ms() + 2000;
	int got;

	while ((got = sched_getscheduler(progress_thread_tid())) != want &&
	       now_ms() < end)
		usleep(1000);
	return got;
}

/* Idle, its wake-ups must not preempt the program's threads (a post wakes
 * it): SCHED_BATCH, as long as the program runs under the ordinary policy.
 * With a call in flight (the server stopped holds it there) it is an
 * ordinary thread, whose wake-ups get a CPU in time; idle again once the
 * call completes. */
START_TEST(progress_thread_is_batch_when_idle_and_ordinary_while_calls_fly)
{
	const size_t len = (size_t)1 << 20;
	char *src = xalloc(len);
	struct xp_call *calls[1];
	struct xp_conn *conns[1] = {conn};
	struct op put;

	ck_assert_int_eq(sched_getscheduler(0), SCHED_OTHER);
	ck_assert_int_eq(progress_thread_policy_becomes(SCHED_BATCH), SCHED_BATCH);
	fill(src, len, 78);
	server_pause();
	op_put(&put, 0, src, len, XP_PATH_BULK);
	calls[0] = &put.call;
	ck_assert_int_eq(xp_calls_post(conns, calls, 1), 0);
	ck_assert_int_eq(progress_thread_policy_becomes(SCHED_OTHER), SCHED_OTHER);
	ck_assert_int_eq(xp_call_test(&put.call), 0);
	kill(srv_pid, SIGCONT);
	ck_assert_int_eq(xp_call_wait(&put.call), 0);
	ck_assert_int_eq(progress_thread_policy_becomes(SCHED_BATCH), SCHED_BATCH);
	ck_assert_int_eq(sched_getscheduler(0), SCHED_OTHER);
	free(src);
}
END_TEST

/* What a nonblocking post asks of the transport must not wait for the
 * engine: the progress thread holds the fabric's lock through each round,
 * and a round lasts as long as the node keeps that thread from a CPU
 * (xp_conn_idle_ms took it, and a post asks it). The test holds the lock
 * itself, as a round would, while another thread does what a post does:
 * look at the connection, hold the buffer, hand the call over. */
struct poster {
	struct op *put;
	char *buf;
	size_t len;
	struct xp_mem_hold *hold;
	int hold_ret, post_ret, done;
};

static void *poster_main(void *arg)
{
	struct poster *p = arg;
	struct iovec iov = {p->buf, p->len};
	struct xp_call *calls[1] = {&p->put->call};
	struct xp_conn *conns[1] = {conn};

	(void)xp_conn_error(conn);
	(void)xp_conn_idle_ms(conn);
	(void)xp_call_max_desc(conn, 64);
	p->hold_ret = xp_mem_hold(fab, &iov, 1, &p->hold);
	p->post_ret = xp_calls_post(conns, calls, 1);
	__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

START_TEST(a_post_never_waits_for_the_engines_lock)
{
	const size_t len = (size_t)4 << 20;
	struct op put;
	struct poster p = {.put = &put, .buf = xalloc(len), .len = len};
	int64_t end;
	pthread_t t;
	int done;

	fill(p.buf, len, 79);
	op_put(&put, 0, p.buf, len, XP_PATH_BULK);
	xp_lock_quiet(fab);
	ck_assert_int_eq(pthread_create(&t, NULL, poster_main, &p), 0);
	end = now_ms() + 2000;
	while (!(done = __atomic_load_n(&p.done, __ATOMIC_ACQUIRE)) && now_ms() < end)
		usleep(1000);
	xp_unlock(fab);
	pthread_join(t, NULL);
	ck_assert_msg(done, "the post waited for the engine's lock (held 2 s)");
	ck_assert_int_eq(p.hold_ret, 0);
	ck_assert_int_eq(p.post_ret, 0);
	ck_assert_int_eq(xp_call_wait(&put.call), 0);
	xp_mem_release(fab, p.hold);
	free(p.buf);
}
END_TEST

#ifndef NDEBUG
/* The lock's rules are checked where they apply (xport_domain.h): work
 * queued for the engine without the lock, or the lock taken a second time
 * by its holder, stops the program there instead of racing or hanging. */
START_TEST(queueing_work_for_the_engine_without_the_lock_aborts)
{
	struct xp_cb cb = {.kind = XP_CB_FN};

	ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
	xp_defer(fab, &cb);
	ck_abort_msg("xp_defer without the lock went on");
}
END_TEST

START_TEST(taking_the_lock_twice_aborts)
{
	xp_lock(fab);
	ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
	xp_lock(fab);
	ck_abort_msg("xp_lock by its holder went on");
}
END_TEST
#endif

/* The tick runs on the progress thread, about every period, and stopping
 * it waits for a tick under way (its owner may free what it uses). */
struct ticker {
	int count;
	pid_t tid;
	int sleep_ms;
	int in_long, long_done;
};

static void tick_fn(void *arg)
{
	struct ticker *t = arg;
	int ms = __atomic_load_n(&t->sleep_ms, __ATOMIC_ACQUIRE);

	t->tid = (pid_t)syscall(SYS_gettid);
	if (ms) {
		__atomic_store_n(&t->in_long, 1, __ATOMIC_RELEASE);
		usleep((useconds_t)ms * 1000);
		__atomic_store_n(&t->long_done, 1, __ATOMIC_RELEASE);
	}
	__atomic_add_fetch(&t->count, 1, __ATOMIC_ACQ_REL);
}

START_TEST(tick_runs_on_the_progress_thread_and_stopping_waits_for_it)
{
	struct ticker t = {0};
	int n;

	ck_assert_int_eq(xp_fabric_set_tick(fab, tick_fn, &t, 0), -EINVAL);
	ck_assert_int_eq(xp_fabric_set_tick(fab, tick_fn, &t, 50), 0);
	usleep(600 * 1000);
	n = __atomic_load_n(&t.count, __ATOMIC_ACQUIRE);
	/* 12 periods; the thread looks at least every 100 ms */
	ck_assert_msg(n >= 3 && n <= 13, "%d ticks in 600 ms at 50 ms", n);
	ck_assert_int_eq(t.tid, progress_thread_tid());
	/* a long tick: stopping returns only after it */
	__atomic_store_n(&t.sleep_ms, 300, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&t.in_long, __ATOMIC_ACQUIRE))
		usleep(1000);
	ck_assert_int_eq(xp_fabric_set_tick(fab, NULL, NULL, 0), 0);
	ck_assert_int_eq(__atomic_load_n(&t.long_done, __ATOMIC_ACQUIRE), 1);
	n = __atomic_load_n(&t.count, __ATOMIC_ACQUIRE);
	usleep(200 * 1000);
	ck_assert_int_eq(__atomic_load_n(&t.count, __ATOMIC_ACQUIRE), n);
	transfer_works();
}
END_TEST

START_TEST(progress_cpus_all_frees_the_thread_from_the_binding)
{
	cpu_set_t mine, got, both;
	int first;

	open_bound("all", &mine, &first);
	progress_thread_cpus(&got);
	/* Every CPU this process could use before, and maybe more (the
	 * cgroup's, if the test itself runs bound). */
	CPU_AND(&both, &got, &mine);
	ck_assert_msg(CPU_EQUAL(&both, &mine),
		      "progress_cpus=all: the thread may use %d CPUs, the process %d",
		      CPU_COUNT(&got), CPU_COUNT(&mine));
	transfer_works();
}
END_TEST

START_TEST(progress_cpus_list_places_the_thread_there)
{
	cpu_set_t mine, got;
	char want[16];
	int first, last = -1;

	ck_assert_int_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &mine))
			last = c;
	snprintf(want, sizeof(want), "%d", last);
	open_bound(want, &mine, &first);
	progress_thread_cpus(&got);
	ck_assert_int_eq(CPU_COUNT(&got), 1);
	ck_assert_msg(CPU_ISSET(last, &got), "progress_cpus=%s: not on CPU %d", want,
		      last);
	transfer_works();
}
END_TEST

/* A CPU the machine does not have: the kernel refuses it, the client says
 * so and keeps the thread where it was, and works. */
START_TEST(progress_cpus_the_kernel_refuses_leaves_the_thread_where_it_was)
{
	cpu_set_t mine, got;
	int first;

	open_bound("1000-1023", &mine, &first);
	progress_thread_cpus(&got);
	ck_assert_int_eq(CPU_COUNT(&got), 1);
	ck_assert(CPU_ISSET(first, &got));
	transfer_works();
}
END_TEST

/* xp_call_max_desc tells the truth: at the largest body that leaves room
 * for n descriptors, n pieces go through and n + 1 are refused. */
START_TEST(max_desc_matches_what_start_accepts)
{
	size_t lo = MEMSRV_REQ_SIZE, hi = (size_t)16 << 20, piece = 100000;
	struct iovec v[MAX_IOV];
	uint8_t *body;
	struct memsrv_req q;
	struct op o;
	int n;

	ck_assert_int_ge(xp_call_max_desc(conn, MEMSRV_REQ_SIZE), 1);
	ck_assert_int_lt(xp_call_max_desc(conn, hi), 1);
	/* Largest body with room for at least one descriptor. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (xp_call_max_desc(conn, mid) >= 1)
			lo = mid;
		else
			hi = mid;
	}
	n = xp_call_max_desc(conn, lo);
	ck_assert_int_ge(n, 1);
	ck_assert_int_lt(n, MAX_IOV);
	body = calloc(1, lo);
	ck_assert_ptr_nonnull(body);
	for (int i = 0; i <= n; i++) {
		v[i].iov_base = xalloc(piece);
		v[i].iov_len = piece;
	}
	q = (struct memsrv_req){.op = MEMSRV_PUT, .off = 0, .len = (uint64_t)n * piece};
	memsrv_req_encode(body, &q);
	op_putv(&o, 0, v, n, XP_PATH_BULK);
	o.call.req = body;
	o.call.req_len = lo;
	ck_assert_int_eq(xp_call(conn, &o.call), 0);

	q.len = (uint64_t)(n + 1) * piece;
	memsrv_req_encode(body, &q);
	op_putv(&o, 0, v, n + 1, XP_PATH_BULK);
	o.call.req = body;
	o.call.req_len = lo;
	ck_assert_int_eq(xp_call_start(conn, &o.call), -E2BIG);
	for (int i = 0; i <= n; i++)
		free(v[i].iov_base);
	free(body);
}
END_TEST

/* ---- (j) server errors --------------------------------------------------------- */

/* The server refuses a range outside its area; the status reaches the
 * caller on every path and the connection stays usable. */
START_TEST(server_error_status_reaches_caller_and_connection_stays_usable)
{
	static const int paths[] = {XP_PATH_INLINE, XP_PATH_FAST, XP_PATH_BULK};
	static const size_t lens[] = {100, 20000, 1 << 20};
	char *src = xalloc((1 << 20) + GUARD), *dst = xalloc((1 << 20) + GUARD);

	for (int i = 0; i < 3; i++) {
		size_t len = lens[i];
		uint64_t bad[] = {AREA_SIZE - len + 1, AREA_SIZE, UINT64_MAX - 10};

		fill(src, len, 90 + (uint64_t)i);
		for (int j = 0; j < 3; j++) {
			int ret = put_sync(bad[j], src, len, paths[i], NULL);

			ck_assert_msg(ret == -EINVAL, "%s PUT at %llu: %d (%s)",
				      xp_path_name(paths[i]), (unsigned long long)bad[j],
				      ret, strerror(-ret));
			ret = get_sync(bad[j], dst, len, paths[i], NULL, NULL);
			ck_assert_msg(ret == -EINVAL, "%s GET at %llu: %d (%s)",
				      xp_path_name(paths[i]), (unsigned long long)bad[j],
				      ret, strerror(-ret));
		}
		ck_assert_int_eq(xp_conn_error(conn), 0);
		round_trip(paths[i], len, AREA_SIZE - len, src, dst, 95 + (uint64_t)i);
	}
	free(src);
	free(dst);
}
END_TEST

START_TEST(unknown_operation_status_reaches_caller)
{
	struct op o;

	op_init(&o, 99, 0, 0, XP_PATH_AUTO);
	ck_assert_int_eq(xp_call(conn, &o.call), -EOPNOTSUPP);
	ck_assert_int_eq(o.call.status, -EOPNOTSUPP);
	op_init(&o, MEMSRV_NOP, 0, 0, XP_PATH_AUTO);
	ck_assert_int_eq(xp_call(conn, &o.call), 0);
}
END_TEST

/* ---- suite ------------------------------------------------------------------- */

static TCase *tcase_default(const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup_default, teardown_all);
	tcase_set_timeout(tc, 120);
	return tc;
}

static TCase *tcase_own_setup(const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, NULL, teardown_all);
	tcase_set_timeout(tc, 120);
	return tc;
}

/* ---- (j) the handshake: keys, replays, clocks, limits --------------------------- */

/* A connection request as a client of the cluster (key) would make. */
static size_t connreq(uint8_t *buf, const struct auth_key *key, uint64_t time_s,
		      uint16_t version)
{
	struct proto_cm_req m = {
		.magic = PROTO_MAGIC, .version = version, .time_s = time_s};

	auth_random(m.nonce, sizeof(m.nonce));
	proto_cm_req_encode(buf, &m);
	auth_mac(key, "connreq", buf, PROTO_CM_REQ_MAC_OFF, NULL, 0, NULL, 0, m.mac);
	proto_cm_req_encode(buf, &m);
	return PROTO_CM_REQ_SIZE;
}

/* Connect with raw bytes; the reject's status (0 if accepted). */
static int raw_try(struct rawcm *r, const uint8_t *req, size_t len)
{
	uint8_t ans[128];
	size_t anslen = sizeof(ans);
	struct proto_cm_rej rej;
	int ret = rawcm_connect(r, test_addr(), srv_port, req, len, 10000, ans, &anslen);

	ck_assert_msg(ret >= 0, "connection request got no answer: %s", strerror(-ret));
	if (ret == 1)
		return 0;
	ck_assert_msg(proto_cm_rej_decode(ans, anslen, &rej) == 0,
		      "a refusal without a reason (%zu bytes)", anslen);
	return rej.status;
}

static struct memsrv_stats stats_now(void)
{
	struct memsrv_stats st;

	ck_assert_int_eq(server_stats(&st), 0);
	return st;
}

START_TEST(client_with_another_key_is_refused_before_anything_is_allocated)
{
	struct auth_key other;
	struct xp_params p;
	struct xp_fabric *f2;
	struct xp_conn *c = NULL;
	char why[256] = "";
	struct memsrv_stats st;

	test_params(&p);
	start_with(&p, NULL);
	auth_random(other.k, sizeof(other.k));
	ck_assert_int_eq(xp_fabric_open(&p, XP_CLIENT, &other, &f2), 0);
	ck_assert_int_eq(
		xp_connect(f2, test_addr(), srv_port, NULL, &c, why, sizeof(why)),
		-EKEYREJECTED);
	ck_assert_msg(strstr(why, "cluster key"), "reason: '%s'", why);
	xp_fabric_close(f2);
	st = stats_now();
	ck_assert_uint_ge(st.conn_refused, 1);
	ck_assert_uint_eq(st.conns_live, 1); /* ours, asking for the stats */
}
END_TEST

struct impostor {
	struct rawcm *r;
	int accepted;
};

static void *impostor_serve(void *arg)
{
	struct impostor *im = arg;
	struct proto_cm_acc acc = {.magic = PROTO_MAGIC, .version = PROTO_VERSION};
	uint8_t buf[PROTO_CM_ACC_SIZE];

	/* The right shape, but a MAC it cannot make without the key. */
	auth_random(acc.nonce, sizeof(acc.nonce));
	auth_random(acc.mac, sizeof(acc.mac));
	proto_cm_acc_encode(buf, &acc);
	im->accepted = rawcm_serve(im->r, buf, sizeof(buf), 5000);
	return NULL;
}

START_TEST(server_without_the_key_is_found_out_before_any_request)
{
	struct impostor im = {0};
	struct xp_params p;
	struct xp_conn *c = NULL;
	char port[16], why[256] = "";
	pthread_t t;
	int lport;

	test_params(&p);
	ck_assert_int_eq(rawcm_open(p.provider, &im.r), 0);
	ck_assert_int_eq(rawcm_listen(im.r, test_addr(), &lport), 0);
	snprintf(port, sizeof(port), "%d", lport);
	ck_assert_int_eq(pthread_create(&t, NULL, impostor_serve, &im), 0);
	ck_assert_int_eq(xp_fabric_open(&p, XP_CLIENT, test_key(), &fab), 0);
	ck_assert_int_eq(xp_connect(fab, test_addr(), port, NULL, &c, why, sizeof(why)),
			 -EKEYREJECTED);
	ck_assert_msg(strstr(why, "could not prove"), "reason: '%s'", why);
	pthread_join(t, NULL);
	ck_assert_int_eq(im.accepted, 1);
	rawcm_close(im.r);
}
END_TEST

START_TEST(replayed_or_stale_connection_requests_are_refused)
{
	uint8_t req[PROTO_CM_REQ_SIZE], stale[PROTO_CM_REQ_SIZE], old[PROTO_CM_REQ_SIZE];
	struct xp_params p;
	struct rawcm *r;

	test_params(&p);
	start_with(&p, NULL);
	ck_assert_int_eq(rawcm_open(p.provider, &r), 0);
	connreq(req, test_key(), (uint64_t)time(NULL), PROTO_VERSION);
	ck_assert_int_eq(raw_try(r, req, sizeof(req)), 0);
	ck_assert_int_eq(raw_try(r, req, sizeof(req)), -EALREADY);
	connreq(stale, test_key(), (uint64_t)time(NULL) - 3600, PROTO_VERSION);
	ck_assert_int_eq(raw_try(r, stale, sizeof(stale)), -ETIME);
	connreq(old, test_key(), (uint64_t)time(NULL), 1);
	ck_assert_int_eq(raw_try(r, old, sizeof(old)), -EPROTONOSUPPORT);
	ck_assert_int_eq(raw_try(r, req, 10), -EPROTO); /* too short */
	rawcm_close(r);
	/* and the server still serves */
	ck_assert_int_eq(stats_now().conn_refused, 4);
}
END_TEST

START_TEST(half_open_connection_is_dropped_after_handshake_ms)
{
	uint8_t req[PROTO_CM_REQ_SIZE];
	struct xp_params p;
	struct rawcm *r;
	int64_t t0;

	test_params(&p);
	p.handshake_ms = 500;
	start_with(&p, NULL);
	ck_assert_int_eq(rawcm_open(p.provider, &r), 0);
	connreq(req, test_key(), (uint64_t)time(NULL), PROTO_VERSION);
	ck_assert_int_eq(raw_try(r, req, sizeof(req)), 0);
	t0 = now_ms();
	/* accepted, but no HELLO ever comes */
	ck_assert_msg(rawcm_wait_shutdown(r, 5000) == 0,
		      "a connection without a handshake is kept");
	ck_assert_msg(now_ms() - t0 < 4000, "dropped after %lld ms",
		      (long long)(now_ms() - t0));
	rawcm_close(r);
	ck_assert_uint_eq(stats_now().conns_live, 1); /* only ours */
}
END_TEST

START_TEST(idle_connection_is_dropped_after_idle_timeout)
{
	struct xp_params p;
	int64_t end;

	test_params(&p);
	p.idle_timeout_s = 1;
	start_with(&p, NULL);
	end = now_ms() + 6000;
	while (!xp_conn_error(conn) && now_ms() < end)
		xp_progress(fab, 50);
	ck_assert_msg(xp_conn_error(conn) != 0, "an idle connection was kept for 6 s");
}
END_TEST

START_TEST(server_refuses_more_than_max_conns)
{
	struct xp_params p;
	struct xp_conn *c2 = NULL, *c3 = NULL;
	char why[256] = "";

	test_params(&p);
	p.max_conns = 2;
	start_with(&p, NULL);
	ck_assert_int_eq(
		xp_connect(fab, test_addr(), srv_port, NULL, &c2, why, sizeof(why)), 0);
	ck_assert_int_eq(
		xp_connect(fab, test_addr(), srv_port, NULL, &c3, why, sizeof(why)),
		-EUSERS);
	ck_assert_msg(strstr(why, "max_conns"), "reason: '%s'", why);
	xp_conn_close(c2);
}
END_TEST

START_TEST(a_client_claiming_many_requests_costs_what_the_server_allows)
{
	struct xp_params p, greedy;
	struct xp_fabric *f2;
	struct xp_conn *c2 = NULL;
	struct memsrv_stats one, two;
	char why[256] = "";

	test_params(&p);
	start_with(&p, NULL);
	one = stats_now();
	greedy = p;
	greedy.credits = 1024; /* asks the server for 1024 requests in flight */
	ck_assert_int_eq(xp_fabric_open(&greedy, XP_CLIENT, test_key(), &f2), 0);
	ck_assert_int_eq(
		xp_connect(f2, test_addr(), srv_port, NULL, &c2, why, sizeof(why)), 0);
	two = stats_now();
	ck_assert_uint_eq(two.conns_live, 2);
	ck_assert_msg(two.conn_bytes - one.conn_bytes <= one.conn_bytes,
		      "the greedy connection costs %llu bytes, a normal one %llu",
		      (unsigned long long)(two.conn_bytes - one.conn_bytes),
		      (unsigned long long)one.conn_bytes);
	xp_conn_close(c2);
	xp_fabric_close(f2);
}
END_TEST

START_TEST(hello_refused_by_the_server_fails_connect_with_its_answer)
{
	struct memsrv_opts o = {.refuse_hello = -EACCES};
	char rep[64] = "", why[256] = "";
	struct xp_hello h = {"me", 2, rep, sizeof(rep), 0};
	struct xp_params p;
	struct xp_conn *c = NULL;

	test_params(&p);
	server_spawn(&p, &o);
	ck_assert_int_eq(xp_fabric_open(&p, XP_CLIENT, test_key(), &fab), 0);
	ck_assert_int_eq(xp_connect(fab, test_addr(), srv_port, &h, &c, why, sizeof(why)),
			 -EACCES);
	ck_assert_uint_eq(h.rep_len, sizeof("memsrv refuses"));
	ck_assert_str_eq(rep, "memsrv refuses");
}
END_TEST

static Suite *xport_suite(void)
{
	Suite *s = suite_create("xport");
	TCase *tc;

	tc = tcase_default("paths");
	tcase_add_test(tc, inline_path_moves_data_of_every_size_up_to_inline_max);
	tcase_add_test(tc, fast_path_moves_data_of_every_size_up_to_fast_max);
	tcase_add_test(tc, bulk_path_moves_data_of_every_size);
	tcase_add_test(tc, auto_path_moves_data_of_every_size);
	tcase_add_test(tc, auto_path_picks_by_size_at_the_thresholds);
	tcase_add_test(tc, stats_count_calls_by_path);
	tcase_add_test(tc, zero_length_put_and_get_succeed);
	tcase_add_test(tc, read_reports_bytes_produced_when_less_than_room);
	tcase_add_test(tc, reply_body_reaches_the_caller);
	tcase_add_test(tc,
		       posted_calls_complete_and_an_unstartable_one_reports_its_error);
	tcase_add_test(tc,
		       posted_calls_hold_their_memory_first_or_all_fail_with_its_error);
	tcase_add_test(tc, posted_calls_without_a_progress_thread_start_in_place);
	tcase_add_test(tc, timed_wait_sleeps_until_its_deadline_or_the_call_completes);
	tcase_add_test(tc, timed_wait_without_a_progress_thread_drives_the_call_itself);
	tcase_add_test(tc, nop_round_trips);
	tcase_add_test(tc, progress_thread_inherits_the_binding_by_default);
	tcase_add_test(tc,
		       progress_thread_is_batch_when_idle_and_ordinary_while_calls_fly);
	tcase_add_test(tc, a_post_never_waits_for_the_engines_lock);
#ifndef NDEBUG
	/* They abort: only when each test has its own process. */
	if (!getenv("CK_FORK") || strcmp(getenv("CK_FORK"), "no")) {
		tcase_add_test_raise_signal(
			tc, queueing_work_for_the_engine_without_the_lock_aborts,
			SIGABRT);
		tcase_add_test_raise_signal(tc, taking_the_lock_twice_aborts, SIGABRT);
	}
#endif
	tcase_add_test(tc, tick_runs_on_the_progress_thread_and_stopping_waits_for_it);
	tcase_add_test(tc, progress_cpus_all_frees_the_thread_from_the_binding);
	tcase_add_test(tc, progress_cpus_list_places_the_thread_there);
	tcase_add_test(tc,
		       progress_cpus_the_kernel_refuses_leaves_the_thread_where_it_was);
	suite_add_tcase(s, tc);

	tc = tcase_default("pieces");
	tcase_add_test(tc, inline_path_gathers_and_scatters_pieces);
	tcase_add_test(tc, fast_path_gathers_and_scatters_pieces);
	tcase_add_test(tc, bulk_path_gathers_and_scatters_pieces);
	tcase_add_test(tc, bulk_path_moves_pieces_larger_than_a_chunk);
	tcase_add_test(tc, bulk_moves_straight_into_registered_server_memory);
	tcase_add_test(tc, auto_path_gathers_and_scatters_pieces);
	tcase_add_test(tc, call_with_both_write_and_read_data_is_refused);
	suite_add_tcase(s, tc);

	tc = tcase_default("concurrency");
	tcase_add_test(tc,
		       many_calls_in_flight_queue_for_credits_and_slots_and_all_complete);
	tcase_add_test(tc, completion_callback_runs_exactly_once_per_call);
	tcase_add_test(tc, calls_from_several_threads_on_one_connection_all_complete);
	suite_add_tcase(s, tc);

	tc = tcase_own_setup("pipeline");
	tcase_add_test(tc, force_path_setting_applies_to_auto_calls);
	tcase_add_test(tc, bulk_write_overlaps_chunks_with_slow_storage);
	tcase_add_test(tc, every_path_works_with_storage_in_a_worker_thread);
	suite_add_tcase(s, tc);

	tc = tcase_default("rcache");
	tcase_add_test(tc, bulk_from_the_same_buffer_hits_the_registration_cache);
	tcase_add_test(tc, bulk_after_unmap_and_remap_at_same_address_sends_new_contents);
	tcase_add_test(tc, bulk_after_free_and_malloc_sends_new_contents);
	suite_add_tcase(s, tc);

	tc = tcase_own_setup("failures");
	tcase_add_test(tc, killed_server_fails_every_pending_call_and_later_calls);
	tcase_add_test(tc, call_on_broken_connection_is_refused_with_enotconn);
	tcase_add_test(tc, stopped_server_times_out_a_call);
	tcase_add_test(tc, stopped_server_times_out_a_bulk_call);
	tcase_add_test(tc, late_data_after_a_timeout_never_lands_in_the_caller_buffer);
	tcase_add_test(tc, server_stops_cleanly_with_a_client_connected);
	tcase_add_test(tc, connect_without_listener_fails_quickly_naming_the_address);
	tcase_add_test(tc, refused_connects_keep_no_memory);
	tcase_add_test(tc, connect_to_unknown_host_fails_naming_it);
	tcase_add_test(tc, idle_progress_sleeps_after_posts_from_another_thread);
	suite_add_tcase(s, tc);

	tc = tcase_own_setup("handshake");
	tcase_add_test(tc,
		       client_with_another_key_is_refused_before_anything_is_allocated);
	tcase_add_test(tc, server_without_the_key_is_found_out_before_any_request);
	tcase_add_test(tc, replayed_or_stale_connection_requests_are_refused);
	tcase_add_test(tc, half_open_connection_is_dropped_after_handshake_ms);
	tcase_add_test(tc, idle_connection_is_dropped_after_idle_timeout);
	tcase_add_test(tc, server_refuses_more_than_max_conns);
	tcase_add_test(tc, a_client_claiming_many_requests_costs_what_the_server_allows);
	tcase_add_test(tc, hello_refused_by_the_server_fails_connect_with_its_answer);
	suite_add_tcase(s, tc);

	tc = tcase_default("limits");
	tcase_add_test(tc, connection_names_its_peer_and_provider);
	tcase_add_test(tc, request_body_too_large_for_a_message_is_refused_with_e2big);
	tcase_add_test(tc, max_desc_matches_what_start_accepts);
	tcase_add_test(tc,
		       server_error_status_reaches_caller_and_connection_stays_usable);
	tcase_add_test(tc, unknown_operation_status_reaches_caller);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	if (argc == 4 && !strcmp(argv[1], "--memsrv"))
		return memsrv_main(atoi(argv[2]), atoi(argv[3]));
	sr = srunner_create(xport_suite());
	/* Each test forks its own server and leaves global state behind when
	 * it fails: Check must fork each test, unless CK_FORK=no asks for a
	 * debugger-friendly run. */
	if (!getenv("CK_FORK"))
		srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
