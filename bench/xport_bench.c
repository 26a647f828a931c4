/* rpfs-xport-bench: the transport's data paths against raw libfabric.
 *
 * One run, one table: for each size, write (PUT) and read (GET) calls to a
 * memsrv test service forced onto each data path that can carry them
 * (inline, fast, bulk) and left to the automatic choice, next to plain
 * fi_write, fi_read and fi_send/fi_recv of the same sizes between two
 * processes on the same provider (raw_ofi.c). Bandwidth keeps WINDOW
 * operations in flight; latency is the median of one operation at a time;
 * each row also gives this (client) process's CPU seconds per GiB over its
 * bandwidth runs. Then the registration cache's hit and miss costs and the
 * CPU time of the idle server, and a summary that checks the design's
 * targets: auto within 80% of raw RMA for large transfers, auto never well
 * below the best forced path, the client's CPU per GiB at most 1.2x raw's,
 * 4 KiB latency within twice a raw round trip, an idle server asleep.
 *
 * The figures are ratios within one run on a shared machine, so the
 * bandwidth runs of the raw and rpfs rows of one size take turns, each row's
 * bandwidth is the median of its BW_REPS runs, and the raw server spins only
 * during its own runs. A benchmark that moves wrong bytes is worse than
 * none: every row checks its data (single calls read back and compared, and
 * the windowed runs' buffers afterwards), and any failed call or wrong byte
 * ends the run with an error.
 *
 * Servers run in forked processes because tcp completes RMA only while the
 * target polls; both are forked before this process touches libfabric.
 *
 * Why one file of ~1,200 lines: one benchmark program, its experiments in
 * the order its one table prints them; nothing in it is used elsewhere. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memsrv.h"
#include "params.h"
#include "raw_ofi.h"
#include "xport.h"

#define WINDOW	     8 /* operations in flight for bandwidth */
#define BW_REPS	     5 /* bandwidth is the median of this many runs */
#define VERIFY_CALLS 3 /* single checked calls per row */
#define MAX_SIZE     ((size_t)64 << 20)
#define MOVE_BW	     ((size_t)64 << 20) /* bytes one bandwidth run aims to move */
#define MOVE_LAT     ((size_t)16 << 20)
#define IDLE_SECONDS 2
#define IDLE_CPU_MAX 2.0 /* percent of one core that still counts as asleep */
#define CPU_TARGET   1.2 /* client CPU per GiB: auto at most this many times raw's */
#define LARGE_SIZE   ((size_t)1 << 20)
#define RAW_TARGET   80.0 /* auto as % of raw RMA at LARGE_SIZE and up */
#define PATH_SLACK   10.0 /* auto may trail the best forced path by this % */
#define LAT_SIZE     4096
#define LAT_FACTOR   2.0 /* 4 KiB latency vs one raw round trip */

enum op { OP_WRITE, OP_READ, OP_SEND };
#define PATH_RAW 4 /* beside enum xp_path in a row */

static const char *const op_names[] = {"write", "read", "send"};

struct row {
	int op;
	int path;
	size_t size;
	double mbps;
	double usec;
	int via;	/* auto rows: the path the transport chose, -1 if it varied */
	double cpu_gib; /* this (client) process's CPU seconds per GiB moved */
};

struct slot {
	struct xp_call call;
	unsigned char req[MEMSRV_REQ_SIZE];
	unsigned char rep[256];
	struct iovec iov;
	int busy;
};

struct cache_cost {
	size_t len;
	int nhit, nmiss;
	double hit_us, miss_us;
	struct xp_stats hit_st, miss_st; /* counter deltas of each phase */
};

struct bench {
	struct xp_params p;
	int csv, quick, pipeline;
	const char *addr;    /* both servers listen here */
	struct auth_key key; /* shared with memsrv through fork */
	size_t min, max;
	size_t sizes[64];
	int nsizes;
	pid_t raw_pid, srv_pid;
	struct raw_client *raw;
	struct xp_fabric *fab;
	struct xp_conn *conn;
	char *buf[WINDOW]; /* call sources and destinations, max bytes each */
	char *check;	   /* read-back room */
	struct slot slots[WINDOW];
	struct row *rows;
	int nrows, maxrows;
	struct cache_cost cache[2];
	double idle_cpu;
	struct xp_stats st; /* transport counters after the measurements */
};

static struct bench *the_bench; /* for die(): children to stop */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void stop_child(pid_t *pid, int sig)
{
	int64_t deadline;
	int st;

	if (*pid <= 0)
		return;
	kill(*pid, sig);
	kill(*pid, SIGCONT); /* a stopped child acts on nothing else */
	deadline = now_ns() + 3000000000ll;
	while (waitpid(*pid, &st, WNOHANG) == 0) {
		if (now_ns() > deadline) {
			kill(*pid, SIGKILL);
			waitpid(*pid, &st, 0);
			break;
		}
		usleep(10000);
	}
	*pid = 0;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "rpfs-xport-bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	if (the_bench) {
		stop_child(&the_bench->raw_pid, SIGTERM);
		stop_child(&the_bench->srv_pid, SIGTERM);
	}
	exit(1);
}

static const char *fmt_size(size_t size, char *buf, size_t len)
{
	if (size >= (1 << 20) && size % (1 << 20) == 0)
		snprintf(buf, len, "%zu MiB", size >> 20);
	else if (size >= 1024 && size % 1024 == 0)
		snprintf(buf, len, "%zu KiB", size >> 10);
	else
		snprintf(buf, len, "%zu B", size);
	return buf;
}

static const char *path_name(int path)
{
	return path == PATH_RAW ? "raw" : xp_path_name(path);
}

static const char *const usage_lines[] = {
	"usage: rpfs-xport-bench [--csv] [--quick] [--sizes MIN:MAX] [--provider NAME]",
	"                        [--addr IPV4]",
	"",
	"Measures rpfs's transport (write and read calls on each data path and on",
	"the automatic choice) against raw libfabric RMA and send/recv of the same",
	"sizes on the same provider, between two processes; then the",
	"registration cache's hit and miss costs and the idle server's CPU time.",
	"",
	"  --csv            print only CSV: op,path,size,MBps,usec,cpu_s_per_GiB",
	"  --quick          an eighth of the iterations",
	"  --pipeline       the server moves bulk data through its pipeline (pool",
	"                   buffers + a storage copy) instead of straight into",
	"                   its registered memory",
	"  --sizes MIN:MAX  size range, K/M suffixes (default 64:16M, at most 64M)",
	"  --provider NAME  libfabric provider (default: RPFS_PROVIDER, else",
	"                   verbs if an RDMA device exists, else tcp)",
	"  --addr IPV4      where the servers listen (default 127.0.0.1; verbs needs",
	"                   the device's address: rdmacm cannot route over loopback)",
	"  --help           this text",
	"",
	"Transport settings come from RPFS_<KEY> variables (RPFS_INLINE_MAX,",
	"RPFS_FAST_MAX, RPFS_CHUNK_SIZE, ...). Exits non-zero if a call fails or",
	"moves wrong data.",
};

static void usage(FILE *f)
{
	for (size_t i = 0; i < sizeof(usage_lines) / sizeof(usage_lines[0]); i++)
		fprintf(f, "%s\n", usage_lines[i]);
}

/* ---- setup ------------------------------------------------------------- */

static void add_size(struct bench *b, size_t s)
{
	int i;

	if (s < b->min || s > b->max)
		return;
	for (i = 0; i < b->nsizes; i++)
		if (b->sizes[i] == s)
			return;
	if (b->nsizes == (int)(sizeof(b->sizes) / sizeof(b->sizes[0])))
		return;
	for (i = b->nsizes; i > 0 && b->sizes[i - 1] > s; i--)
		b->sizes[i] = b->sizes[i - 1];
	b->sizes[i] = s;
	b->nsizes++;
}

static void parse_args(struct bench *b, int argc, char **argv)
{
	static const struct option opts[] = {
		{"csv", no_argument, NULL, 'c'},
		{"quick", no_argument, NULL, 'q'},
		{"pipeline", no_argument, NULL, 'P'},
		{"sizes", required_argument, NULL, 's'},
		{"provider", required_argument, NULL, 'p'},
		{"addr", required_argument, NULL, 'a'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *provider = NULL;
	char why[128], *colon;
	int c;

	b->min = 64;
	b->max = (size_t)16 << 20;
	b->addr = "127.0.0.1";
	auth_random(b->key.k, sizeof(b->key.k));
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			b->csv = 1;
			break;
		case 'q':
			b->quick = 1;
			break;
		case 'P':
			b->pipeline = 1;
			break;
		case 's':
			colon = strchr(optarg, ':');
			if (!colon)
				die("--sizes wants MIN:MAX, got '%s'", optarg);
			*colon = 0;
			if (xp_parse_size(optarg, &b->min) ||
			    xp_parse_size(colon + 1, &b->max))
				die("--sizes: bad size in '%s:%s'", optarg, colon + 1);
			if (b->min < 1 || b->min > b->max || b->max > MAX_SIZE)
				die("--sizes: need 1 <= MIN <= MAX <= 64M");
			break;
		case 'p':
			provider = optarg;
			break;
		case 'a':
			b->addr = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		usage(stderr);
		exit(2);
	}

	xp_params_default(&b->p);
	if (xp_params_from_env(&b->p))
		die("bad RPFS_* transport setting in the environment (see above)");
	if (provider && xp_params_set(&b->p, "provider", provider))
		die("--provider: bad name '%s'", provider);
	/* raw and rpfs must run on one provider, so name it for both. */
	if (!b->p.provider[0])
		snprintf(b->p.provider, sizeof(b->p.provider), "%s",
			 raw_default_provider());
	if (b->p.force_path != XP_PATH_AUTO) {
		/* The auto rows need auto; forced rows force per call. */
		fprintf(stderr, "rpfs-xport-bench: ignoring RPFS_FORCE_PATH=%s\n",
			xp_path_name(b->p.force_path));
		b->p.force_path = XP_PATH_AUTO;
	}
	if (xp_params_check(&b->p, why, sizeof(why)))
		die("transport settings: %s", why);

	/* Powers of 4 from 64 B, the path thresholds, and the range's ends. */
	for (size_t s = 64; s <= MAX_SIZE; s *= 4)
		add_size(b, s);
	add_size(b, 4096);
	add_size(b, 65536);
	add_size(b, b->p.inline_max);
	add_size(b, b->p.fast_max);
	add_size(b, b->min);
	add_size(b, b->max);
}

static int run_memsrv(struct bench *b, int fd)
{
	struct memsrv_opts o = {.direct = !b->pipeline};

	o.addr = b->addr;
	o.key = &b->key;
	return memsrv_run_forever_opts(&b->p, (size_t)WINDOW * b->max, &o, fd);
}

static int run_raw(struct bench *b, int fd)
{
	return raw_server_run(b->p.provider, b->addr, b->max, WINDOW, fd);
}

/* Fork a server; it tells its port on a pipe when it listens. */
static pid_t spawn(struct bench *b, const char *what, int (*run)(struct bench *, int),
		   int *port)
{
	pid_t parent = getpid(), pid;
	char line[64];
	size_t got = 0;
	int fd[2], st;

	if (pipe(fd))
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		/* Never outlive the benchmark, however it ends. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		close(fd[0]);
		_exit(run(b, fd[1]) ? 1 : 0);
	}
	close(fd[1]);
	while (got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
		struct pollfd pfd = {.fd = fd[0], .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, 30000) <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			die("the %s server did not start listening within 30 s", what);
		}
		n = read(fd[0], line + got, sizeof(line) - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			waitpid(pid, &st, 0);
			die("the %s server exited before listening (%s %d)", what,
			    WIFSIGNALED(st) ? "signal" : "status",
			    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		}
		got += (size_t)n;
		line[got] = 0;
	}
	close(fd[0]);
	if (sscanf(line, "port %d", port) != 1 || *port <= 0 || *port > 65535) {
		stop_child(&pid, SIGKILL);
		die("the %s server announced '%.40s', not a port", what, line);
	}
	return pid;
}

static char *map_buf(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);

	if (p == MAP_FAILED)
		die("mmap of %zu bytes: %s", len, strerror(errno));
	/* Fault in now, not during the first timed call. */
	memset(p, 0, len);
	return p;
}

static void connect_all(struct bench *b, int raw_port, int srv_port)
{
	char why[256], port[16];
	int ret;

	ret = raw_client_open(b->p.provider, b->addr, raw_port, b->max, WINDOW, &b->raw,
			      why, sizeof(why));
	if (ret)
		die("raw libfabric client (%s): %s", b->p.provider, why);
	ret = xp_fabric_open(&b->p, XP_CLIENT, &b->key, &b->fab);
	if (ret)
		die("xp_fabric_open (%s): %s", b->p.provider, strerror(-ret));
	if (strcmp(xp_fabric_provider(b->fab), b->p.provider))
		fprintf(stderr, "rpfs-xport-bench: warning: rpfs on %s, raw on %s\n",
			xp_fabric_provider(b->fab), b->p.provider);
	snprintf(port, sizeof(port), "%d", srv_port);
	why[0] = 0;
	ret = xp_connect(b->fab, b->addr, port, NULL, &b->conn, why, sizeof(why));
	if (ret)
		die("xp_connect to memsrv at %s:%s: %s", b->addr, port,
		    why[0] ? why : strerror(-ret));
	for (int j = 0; j < WINDOW; j++)
		b->buf[j] = map_buf(b->max);
	b->check = map_buf(b->max);
}

/* ---- measurement helpers ----------------------------------------------- */

static int clamp_iters(const struct bench *b, size_t move, size_t size, int lo, int hi)
{
	size_t n = move / size;
	int it = n < (size_t)lo ? lo : n > (size_t)hi ? hi : (int)n;

	if (b->quick)
		it = it / 8 < 6 ? 6 : it / 8;
	return it;
}

static int bw_iters(const struct bench *b, size_t size)
{
	/* Runs of tens of milliseconds at least: shorter ones measure the
	 * scheduler of a shared two-core machine more than the transport. */
	int it = clamp_iters(b, MOVE_BW, size, 16, 1000);

	/* At least a full window, or the window is not what gets measured. */
	return it < WINDOW ? WINDOW : it;
}

static int lat_iters(const struct bench *b, size_t size)
{
	return clamp_iters(b, MOVE_LAT, size, 50, 2000);
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, c = *(const double *)y;

	return a < c ? -1 : a > c;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void add_row(struct bench *b, int op, int path, size_t size, double mbps,
		    double usec, int via, double cpu_gib)
{
	if (b->nrows == b->maxrows) {
		b->maxrows = b->maxrows ? b->maxrows * 2 : 128;
		b->rows = realloc(b->rows, sizeof(*b->rows) * (size_t)b->maxrows);
		if (!b->rows)
			die("out of memory");
	}
	b->rows[b->nrows++] = (struct row){op, path, size, mbps, usec, via, cpu_gib};
}

/* Seeds differ by row, so bytes left over from another row never pass. */
static uint64_t seed_of(size_t size, int op, int path, int k)
{
	return ((uint64_t)size << 16) ^ ((uint64_t)op << 12) ^ ((uint64_t)path << 8) ^
	       (uint64_t)k;
}

static void expect_pattern(const void *buf, size_t size, uint64_t seed, const char *what)
{
	long long bad = raw_pattern_check(buf, size, seed);
	char sz[32];

	if (bad >= 0)
		die("%s of %s: wrong data at byte %lld", what,
		    fmt_size(size, sz, sizeof(sz)), bad);
}

/* ---- rpfs calls -------------------------------------------------------- */

static void call_prep(struct slot *s, int op, int path, size_t size, uint64_t off,
		      void *buf)
{
	struct memsrv_req r = {
		.op = op == OP_WRITE ? MEMSRV_PUT : MEMSRV_GET,
		.off = off,
		.len = size,
	};

	memset(&s->call, 0, sizeof(s->call));
	memsrv_req_encode(s->req, &r);
	s->iov.iov_base = buf;
	s->iov.iov_len = size;
	s->call.req = s->req;
	s->call.req_len = MEMSRV_REQ_SIZE;
	if (op == OP_WRITE) {
		s->call.wr_iov = &s->iov;
		s->call.wr_cnt = 1;
	} else {
		s->call.rd_iov = &s->iov;
		s->call.rd_cnt = 1;
	}
	s->call.rep = s->rep;
	s->call.rep_max = sizeof(s->rep);
	s->call.path = path;
}

/* A finished call must have succeeded, on the path asked for, with all its
 * bytes; returns the path that carried it. */
static int call_check(const struct xp_call *call, int op, int path, size_t size)
{
	char sz[32];

	fmt_size(size, sz, sizeof(sz));
	if (call->status)
		die("%s of %s on path %s failed: %s (%d)", op_names[op], sz,
		    xp_path_name(path), strerror(-call->status), call->status);
	if (op == OP_READ && call->rd_len != size)
		die("read of %s on path %s returned %zu bytes", sz, xp_path_name(path),
		    call->rd_len);
	if (path != XP_PATH_AUTO && call->used_path != path)
		die("%s of %s forced onto path %s was carried by path %s", op_names[op],
		    sz, xp_path_name(path), xp_path_name(call->used_path));
	return call->used_path;
}

/* One call at a time, start to completion. */
static int call_sync(struct bench *b, int op, int path, size_t size, uint64_t off,
		     void *buf)
{
	struct slot *s = &b->slots[0];
	int ret;

	call_prep(s, op, path, size, off, buf);
	ret = xp_call(b->conn, &s->call);
	if (ret != s->call.status)
		die("xp_call returned %d but the call's status is %d", ret,
		    s->call.status);
	return call_check(&s->call, op, path, size);
}

static void note_via(int *via, int used)
{
	if (*via == -2)
		*via = used;
	else if (*via != used)
		*via = -1;
}

/* Each single checked call writes one pattern and reads it back, so a write
 * row needs its path right and a read row needs its path right. */
static void x_verify(struct bench *b, int op, int path, size_t size, int *via)
{
	for (int k = 0; k < VERIFY_CALLS; k++) {
		uint64_t seed = seed_of(size, op, path, 16 + k);
		uint64_t off = (uint64_t)((k + 1) % WINDOW) * size;

		raw_pattern_fill(b->buf[0], size, seed);
		memset(b->check, 0, size);
		if (op == OP_WRITE) {
			note_via(via, call_sync(b, OP_WRITE, path, size, off, b->buf[0]));
			call_sync(b, OP_READ, XP_PATH_AUTO, size, off, b->check);
			expect_pattern(b->check, size, seed, "write (read back)");
		} else {
			call_sync(b, OP_WRITE, XP_PATH_AUTO, size, off, b->buf[0]);
			note_via(via, call_sync(b, OP_READ, path, size, off, b->check));
			expect_pattern(b->check, size, seed, "read");
		}
	}
}

/* Call j of the window always uses buffer j and remote slot j, so after the
 * run slot j holds buffer j's pattern (write) or buffer j the slot's (read). */
static double x_bw_run(struct bench *b, int op, int path, size_t size, int iters,
		       int *via)
{
	int64_t stall = ((int64_t)b->p.timeout_ms + 10000) * 1000000;
	int64_t t0, t1, last;
	int posted = 0, done = 0, ret, j;

	t0 = last = now_ns();
	while (done < iters) {
		for (j = 0; j < WINDOW && posted < iters; j++) {
			struct slot *s = &b->slots[j];

			if (s->busy)
				continue;
			call_prep(s, op, path, size, (uint64_t)j * size, b->buf[j]);
			ret = xp_call_start(b->conn, &s->call);
			if (ret)
				die("xp_call_start (%s, %zu bytes, path %s): %s",
				    op_names[op], size, xp_path_name(path),
				    strerror(-ret));
			s->busy = 1;
			posted++;
		}
		ret = xp_progress(b->fab, 0);
		if (ret < 0)
			die("xp_progress: %s", strerror(-ret));
		for (j = 0; j < WINDOW; j++) {
			struct slot *s = &b->slots[j];

			if (!s->busy || !xp_call_test(&s->call))
				continue;
			s->busy = 0;
			done++;
			last = now_ns();
			note_via(via, call_check(&s->call, op, path, size));
		}
		if (now_ns() - last > stall)
			die("%s of %zu bytes on path %s: no call finished in %lld s",
			    op_names[op], size, xp_path_name(path),
			    (long long)(stall / 1000000000));
	}
	t1 = now_ns();
	return (double)size * iters / 1e6 / ((double)(t1 - t0) / 1e9);
}

/* One bandwidth run. Only the checked run needs known bytes: its buffers
 * (write) or remote slots (read) get patterns first and are compared after. */
static double x_bw(struct bench *b, int op, int path, size_t size, int check, int *via)
{
	int iters = bw_iters(b, size), used = iters < WINDOW ? iters : WINDOW;
	double mbps;
	int j;

	for (j = 0; check && j < used; j++) {
		uint64_t seed = seed_of(size, op, path, 32 + j);

		raw_pattern_fill(b->buf[j], size, seed);
		if (op == OP_READ) {
			call_sync(b, OP_WRITE, XP_PATH_AUTO, size, (uint64_t)j * size,
				  b->buf[j]);
			memset(b->buf[j], 0, size);
		}
	}
	mbps = x_bw_run(b, op, path, size, iters, via);
	for (j = 0; check && j<used; j += used> 1 ? used - 1 : 1) {
		uint64_t seed = seed_of(size, op, path, 32 + j);

		if (op == OP_WRITE) {
			memset(b->check, 0, size);
			call_sync(b, OP_READ, XP_PATH_AUTO, size, (uint64_t)j * size,
				  b->check);
			expect_pattern(b->check, size, seed,
				       "windowed write (read back)");
		} else {
			expect_pattern(b->buf[j], size, seed, "windowed read");
		}
	}
	return mbps;
}

static double x_lat(struct bench *b, int op, int path, size_t size, int *via)
{
	int iters = lat_iters(b, size);
	uint64_t seed = seed_of(size, op, path, 48);
	double *v = malloc(sizeof(*v) * (size_t)iters), m;

	if (!v)
		die("out of memory");
	raw_pattern_fill(b->buf[0], size, seed);
	if (op == OP_READ) {
		call_sync(b, OP_WRITE, XP_PATH_AUTO, size, 0, b->buf[0]);
		memset(b->buf[0], 0, size);
	}
	for (int i = 0; i < iters; i++) {
		int64_t t0 = now_ns();

		note_via(via, call_sync(b, op, path, size, 0, b->buf[0]));
		v[i] = (double)(now_ns() - t0) / 1e3;
	}
	if (op == OP_WRITE) {
		memset(b->check, 0, size);
		call_sync(b, OP_READ, XP_PATH_AUTO, size, 0, b->check);
		expect_pattern(b->check, size, seed, "write (read back)");
	} else {
		expect_pattern(b->buf[0], size, seed, "read");
	}
	m = median(v, iters);
	free(v);
	return m;
}

/* ---- one size: raw and rpfs side by side ------------------------------ */

static void raw_check(struct bench *b, int ret, const char *what, int op, size_t size)
{
	char sz[32];

	if (ret)
		die("raw %s %s of %s: %s", op_names[op], what,
		    fmt_size(size, sz, sizeof(sz)), raw_client_error(b->raw));
}

/* The baseline must not depend on the system under test: an rpfs server
 * that spins while idle (the idle check reports that) would steal a core
 * from the raw runs on two cores, so it is stopped while they run. Nothing
 * of rpfs is in flight then. */
static void hold_memsrv(struct bench *b, int hold)
{
	char path[64], buf[512], *p;
	int64_t deadline = now_ns() + 1000000000;

	kill(b->srv_pid, hold ? SIGSTOP : SIGCONT);
	if (!hold)
		return;
	/* Stopped means state T in /proc; the signal alone is asynchronous. */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)b->srv_pid);
	while (now_ns() < deadline) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = 0;
		p = strrchr(buf, ')');
		if (!p || p[1] != ' ' || p[2] == 'T' || p[2] == 't')
			return;
		usleep(100);
	}
}

static enum raw_op raw_op_of(int op)
{
	return op == OP_WRITE ? RAW_WRITE : op == OP_READ ? RAW_READ : RAW_SEND;
}

static double raw_bw(struct bench *b, int op, size_t size)
{
	double mbps;
	int ret;

	hold_memsrv(b, 1);
	ret = raw_bench_bw(b->raw, raw_op_of(op), size, bw_iters(b, size), &mbps);
	hold_memsrv(b, 0);
	raw_check(b, ret, "bandwidth", op, size);
	return mbps;
}

static double raw_lat(struct bench *b, int op, size_t size)
{
	double usec;
	int ret;

	hold_memsrv(b, 1);
	ret = raw_bench_lat(b->raw, raw_op_of(op), size, lat_iters(b, size), &usec);
	hold_memsrv(b, 0);
	raw_check(b, ret, "latency", op, size);
	return usec;
}

/* CPU time of a process, all threads, in seconds. */
static double proc_cpu(pid_t pid)
{
	unsigned long utime, stime;
	char path[64], buf[1024], *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		die("%s: %s (did the server die?)", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* The command name may hold spaces: fields count from its ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			 &utime, &stime) != 2)
		die("%s: unexpected format", path);
	return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* CPU time of this process, all threads, in seconds (ns resolution; the
 * ticks of /proc/PID/stat are too coarse for one size's runs). */
static double self_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The bandwidth runs of all rows of one op and size take turns, so a burst
 * of load from elsewhere lands on raw and rpfs rows alike and the median of
 * each row drops it. */
static void measure_size(struct bench *b, int op, size_t size)
{
	int paths[5], via[5], n = 0, i, r;
	double v[5][BW_REPS], cpu[5] = {0}, moved[5] = {0};

	paths[n++] = PATH_RAW;
	if (op != OP_SEND) {
		if (size <= b->p.inline_max)
			paths[n++] = XP_PATH_INLINE;
		if (size <= b->p.fast_max)
			paths[n++] = XP_PATH_FAST;
		paths[n++] = XP_PATH_BULK;
		paths[n++] = XP_PATH_AUTO;
	}
	for (i = 0; i < n; i++) {
		via[i] = -2;
		if (paths[i] != PATH_RAW) {
			x_verify(b, op, paths[i], size, &via[i]);
			continue;
		}
		for (int k = 0; k < VERIFY_CALLS; k++)
			raw_check(b, raw_verify(b->raw, raw_op_of(op), size, (unsigned)k),
				  "check", op, size);
	}
	/* CPU of this process (the client side, all its threads) over the
	 * runs that are not checked, against the bytes they moved. */
	for (r = 0; r < BW_REPS; r++)
		for (i = 0; i < n; i++) {
			int check = r == BW_REPS - 1;
			double c0 = check ? 0 : self_cpu();

			v[i][r] = paths[i] == PATH_RAW
					  ? raw_bw(b, op, size)
					  : x_bw(b, op, paths[i], size, check, &via[i]);
			if (!check) {
				cpu[i] += self_cpu() - c0;
				moved[i] += (double)size * bw_iters(b, size);
			}
		}
	for (i = 0; i < n; i++) {
		double usec = paths[i] == PATH_RAW
				      ? raw_lat(b, op, size)
				      : x_lat(b, op, paths[i], size, &via[i]);

		add_row(b, op, paths[i], size, median(v[i], BW_REPS), usec, via[i],
			moved[i] > 0 ? cpu[i] / (moved[i] / (1024.0 * 1024 * 1024)) : -1);
	}
}

/* ---- registration cache ------------------------------------------------ */

static void stats_delta(struct xp_stats *d, const struct xp_stats *a,
			const struct xp_stats *c)
{
	d->rcache_hits = c->rcache_hits - a->rcache_hits;
	d->rcache_misses = c->rcache_misses - a->rcache_misses;
}

static void cache_reg_unreg(struct bench *b, void *addr, size_t len)
{
	void *region;
	int ret = xp_cache_reg(b->fab, addr, len, &region);

	if (ret)
		die("xp_cache_reg of %zu bytes: %s", len, strerror(-ret));
	xp_cache_unreg(b->fab, region);
}

/* A hit: the same buffer again and again. A miss: a buffer never seen,
 * from an area mapped and touched beforehand, so the time is registration
 * (and the lazy deregistrations it triggers), not page faults. */
static void measure_cache(struct bench *b, struct cache_cost *c, size_t len, int nhit,
			  int nmiss)
{
	size_t stride = len + 4096; /* a gap, so no region can cover a neighbour */
	struct xp_stats s0, s1;
	char *area, *one = map_buf(len);
	int64_t t0;

	c->len = len;
	c->nhit = b->quick ? nhit / 8 : nhit;
	c->nmiss = b->quick ? nmiss / 8 : nmiss;
	area = mmap(NULL, stride * (size_t)c->nmiss, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	memset(area, 1, stride * (size_t)c->nmiss);

	cache_reg_unreg(b, one, len);
	xp_fabric_stats(b->fab, &s0);
	t0 = now_ns();
	for (int i = 0; i < c->nhit; i++)
		cache_reg_unreg(b, one, len);
	c->hit_us = (double)(now_ns() - t0) / 1e3 / c->nhit;
	xp_fabric_stats(b->fab, &s1);
	stats_delta(&c->hit_st, &s0, &s1);

	t0 = now_ns();
	for (int i = 0; i < c->nmiss; i++)
		cache_reg_unreg(b, area + (size_t)i * stride, len);
	c->miss_us = (double)(now_ns() - t0) / 1e3 / c->nmiss;
	xp_fabric_stats(b->fab, &s0);
	stats_delta(&c->miss_st, &s1, &s0);
	munmap(area, stride * (size_t)c->nmiss);
	munmap(one, len);
}

/* ---- idle server ------------------------------------------------------- */

static void measure_idle(struct bench *b)
{
	struct timespec ts = {.tv_sec = IDLE_SECONDS};
	double c0, c1;
	int64_t t0;

	c0 = proc_cpu(b->srv_pid);
	t0 = now_ns();
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	c1 = proc_cpu(b->srv_pid);
	b->idle_cpu = (c1 - c0) / ((double)(now_ns() - t0) / 1e9) * 100;
}

/* ---- output ------------------------------------------------------------ */

static const struct row *find_row(const struct bench *b, int op, int path, size_t size)
{
	for (int i = 0; i < b->nrows; i++)
		if (b->rows[i].op == op && b->rows[i].path == path &&
		    b->rows[i].size == size)
			return &b->rows[i];
	return NULL;
}

/* Rows in print order: by op, then size, then raw, the forced paths, auto. */
static int cmp_rows(const void *x, const void *y)
{
	static const int rank[] = {
		[XP_PATH_AUTO] = 4, [XP_PATH_INLINE] = 1, [XP_PATH_FAST] = 2,
		[XP_PATH_BULK] = 3, [PATH_RAW] = 0,
	};
	const struct row *a = x, *c = y;

	if (a->op != c->op)
		return a->op - c->op;
	if (a->size != c->size)
		return a->size < c->size ? -1 : 1;
	return rank[a->path] - rank[c->path];
}

static void print_csv(const struct bench *b)
{
	printf("op,path,size,MBps,usec,cpu_s_per_GiB\n");
	for (int i = 0; i < b->nrows; i++) {
		const struct row *r = &b->rows[i];

		if (r->op != OP_SEND)
			printf("%s,%s,%zu,%.1f,%.2f,%.3f\n", op_names[r->op],
			       path_name(r->path), r->size, r->mbps, r->usec, r->cpu_gib);
	}
}

static void print_row(const struct bench *b, const struct row *r)
{
	static const char *const raw_calls[] = {"fi_write", "fi_read", "fi_send/fi_recv"};
	const struct row *raw = find_row(b, r->op, PATH_RAW, r->size);
	char sz[32];

	printf("%-6s %-7s %9s %10.1f %10.2f %9.3f", op_names[r->op], path_name(r->path),
	       fmt_size(r->size, sz, sizeof(sz)), r->mbps, r->usec, r->cpu_gib);
	if (r->path == XP_PATH_AUTO && raw && raw->mbps > 0)
		printf("  %11.0f%%  via %s", 100 * r->mbps / raw->mbps,
		       r->via < 0 ? "mixed" : xp_path_name(r->via));
	else if (r->path == PATH_RAW)
		printf("  %12s  %s", "", raw_calls[r->op]);
	printf("\n");
}

static void print_table(const struct bench *b)
{
	char sz[32];

	printf("rpfs-xport-bench: provider %s, two processes on %s\n", b->p.provider,
	       b->addr);
	printf("  inline_max %zu, fast_max %zu, chunk_size %zu x %u, credits %u, fast_slots %u\n",
	       b->p.inline_max, b->p.fast_max, b->p.chunk_size, b->p.pipeline_depth,
	       b->p.credits, b->p.fast_slots);
	printf("  server: %s\n",
	       b->pipeline
		       ? "bulk through the pipeline (pool buffers, then a copy to memory)"
		       : "bulk RDMA straight into/out of its registered memory, like raw");
	printf("  MB/s: 1e6 bytes/s, %d in flight, median of %d runs\n", WINDOW, BW_REPS);
	printf("  usec: median of one at a time; raw RMA to its completion, raw send/recv half a round trip\n");
	printf("  cpu s/GiB: this (client) process's CPU, all threads, over the bandwidth runs\n\n");
	printf("%-6s %-7s %9s %10s %10s %9s  %s\n", "op", "path", "size", "MB/s", "usec",
	       "cpu s/GiB", "% of raw RMA");
	for (int i = 0; i < b->nrows; i++) {
		if (i && b->rows[i].op != b->rows[i - 1].op)
			printf("\n");
		print_row(b, &b->rows[i]);
	}
	printf("\n");

	printf("registration cache (xp_cache_reg + xp_cache_unreg):\n");
	for (int i = 0; i < 2; i++) {
		const struct cache_cost *c = &b->cache[i];

		printf("  %-7s hit %8.2f usec/op (%llu hits, %llu misses in %d)  miss %8.2f usec/op (%llu hits, %llu misses in %d)\n",
		       fmt_size(c->len, sz, sizeof(sz)), c->hit_us,
		       (unsigned long long)c->hit_st.rcache_hits,
		       (unsigned long long)c->hit_st.rcache_misses, c->nhit, c->miss_us,
		       (unsigned long long)c->miss_st.rcache_hits,
		       (unsigned long long)c->miss_st.rcache_misses, c->nmiss);
	}
	printf("transport counters: calls inline %llu fast %llu bulk %llu; credit waits %llu, slot waits %llu, credit msgs %llu, fast zero-copy %llu, timeouts %llu\n\n",
	       (unsigned long long)b->st.calls[XP_PATH_INLINE],
	       (unsigned long long)b->st.calls[XP_PATH_FAST],
	       (unsigned long long)b->st.calls[XP_PATH_BULK],
	       (unsigned long long)b->st.credit_waits,
	       (unsigned long long)b->st.slot_waits,
	       (unsigned long long)b->st.credit_msgs,
	       (unsigned long long)b->st.fast_zero_copy,
	       (unsigned long long)b->st.timeouts);
}

static const char *verdict(int met)
{
	return met ? "MET" : "NOT MET";
}

static void print_summary(const struct bench *b)
{
	char sz[32];

	printf("summary:\n");
	for (int op = OP_WRITE; op <= OP_READ; op++) {
		const char *raw_name = op == OP_WRITE ? "fi_write" : "fi_read";
		double worst = 1e9, worst_gap = 0, cpu_worst = 0;
		size_t worst_size = 0, gap_size = 0, cpu_size = 0;
		int gap_path = 0, n = 0;

		for (int i = 0; i < b->nsizes; i++) {
			size_t s = b->sizes[i];
			const struct row *a = find_row(b, op, XP_PATH_AUTO, s);
			const struct row *raw = find_row(b, op, PATH_RAW, s);
			const struct row *best = NULL;

			if (!a || !raw)
				continue;
			if (s >= LARGE_SIZE && raw->mbps > 0) {
				double pct = 100 * a->mbps / raw->mbps;

				n++;
				if (pct < worst) {
					worst = pct;
					worst_size = s;
				}
			}
			if (s >= LARGE_SIZE && raw->cpu_gib > 0 && a->cpu_gib >= 0 &&
			    a->cpu_gib / raw->cpu_gib > cpu_worst) {
				cpu_worst = a->cpu_gib / raw->cpu_gib;
				cpu_size = s;
			}
			for (int path = XP_PATH_INLINE; path <= XP_PATH_BULK; path++) {
				const struct row *f = find_row(b, op, path, s);

				if (f && (!best || f->mbps > best->mbps))
					best = f;
			}
			if (best && best->mbps > 0) {
				double gap = 100 * (1 - a->mbps / best->mbps);

				if (gap > PATH_SLACK && gap > worst_gap) {
					worst_gap = gap;
					gap_size = s;
					gap_path = best->path;
				}
			}
		}
		if (n)
			printf("  %-5s auto vs raw %s at >= 1 MiB: worst %.0f%% at %s (target >= %.0f%%) %s\n",
			       op_names[op], raw_name, worst,
			       fmt_size(worst_size, sz, sizeof(sz)), RAW_TARGET,
			       verdict(worst >= RAW_TARGET));
		else
			printf("  %-5s auto vs raw %s at >= 1 MiB: not measured (sizes below 1 MiB) %s\n",
			       op_names[op], raw_name, verdict(0));
		if (cpu_size) {
			const struct row *a = find_row(b, op, XP_PATH_AUTO, cpu_size);
			const struct row *raw = find_row(b, op, PATH_RAW, cpu_size);

			printf("  %-5s client CPU per GiB, auto vs raw %s at >= 1 MiB: worst %.2fx at %s (%.3f vs %.3f s/GiB; target <= %.1fx) %s\n",
			       op_names[op], raw_name, cpu_worst,
			       fmt_size(cpu_size, sz, sizeof(sz)), a->cpu_gib,
			       raw->cpu_gib, CPU_TARGET,
			       verdict(cpu_worst <= CPU_TARGET));
		}
		if (gap_size)
			printf("  %-5s auto below the best forced path by > %.0f%%: worst at %s, %.0f%% below %s (target: none) %s\n",
			       op_names[op], PATH_SLACK,
			       fmt_size(gap_size, sz, sizeof(sz)), worst_gap,
			       xp_path_name(gap_path), verdict(0));
		else
			printf("  %-5s auto below the best forced path by > %.0f%%: none (target: none) %s\n",
			       op_names[op], PATH_SLACK, verdict(1));
	}

	{
		const struct row *w = find_row(b, OP_WRITE, XP_PATH_AUTO, LAT_SIZE);
		const struct row *r = find_row(b, OP_READ, XP_PATH_AUTO, LAT_SIZE);
		const struct row *s = find_row(b, OP_SEND, PATH_RAW, LAT_SIZE);

		if (w && r && s) {
			double rtt = 2 * s->usec,
			       f = (w->usec > r->usec ? w->usec : r->usec) / rtt;

			printf("  4 KiB latency: write %.1f usec, read %.1f usec vs raw send/recv round trip %.1f usec: %.2fx (target <= %.0fx) %s\n",
			       w->usec, r->usec, rtt, f, LAT_FACTOR,
			       verdict(f <= LAT_FACTOR));
		}
	}
	printf("  idle server CPU: %.2f%% of one core over %d s (target < %.0f%%) %s\n",
	       b->idle_cpu, IDLE_SECONDS, IDLE_CPU_MAX,
	       verdict(b->idle_cpu < IDLE_CPU_MAX));
}

/* ---- main -------------------------------------------------------------- */

int main(int argc, char **argv)
{
	struct bench bench = {0}, *b = &bench;
	int raw_port, srv_port, st;

	the_bench = b;
	parse_args(b, argc, argv);

	/* Both servers first: a child forked after libfabric started in this
	 * process would inherit its state. */
	b->raw_pid = spawn(b, "raw libfabric", run_raw, &raw_port);
	b->srv_pid = spawn(b, "memsrv", run_memsrv, &srv_port);
	connect_all(b, raw_port, srv_port);

	/* Raw and rpfs rows of one size back to back: drift on a shared
	 * machine then hits both sides of each ratio alike. */
	for (int i = 0; i < b->nsizes; i++) {
		size_t s = b->sizes[i];

		for (int op = OP_WRITE; op <= OP_SEND; op++)
			measure_size(b, op, s);
	}
	xp_fabric_stats(b->fab, &b->st);

	if (raw_client_close(b->raw))
		die("raw libfabric client: %s", raw_client_error(b->raw));
	b->raw = NULL;
	if (waitpid(b->raw_pid, &st, 0) != b->raw_pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st))
		die("the raw libfabric server failed (see its message above)");
	b->raw_pid = 0;

	measure_cache(b, &b->cache[0], 64 << 10, 20000, 512);
	measure_cache(b, &b->cache[1], 1 << 20, 20000, 128);

	/* The connection stays up: an idle server with a client must sleep too. */
	measure_idle(b);

	xp_conn_close(b->conn);
	xp_fabric_close(b->fab);
	kill(b->srv_pid, SIGTERM);
	{
		int64_t deadline = now_ns() + 10000000000ll;
		pid_t w;

		while ((w = waitpid(b->srv_pid, &st, WNOHANG)) == 0 &&
		       now_ns() < deadline)
			usleep(10000);
		if (w == 0)
			die("memsrv did not stop within 10 s of SIGTERM");
		b->srv_pid = 0;
		if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) &&
		    !(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM))
			die("memsrv ended badly on SIGTERM (%s %d)",
			    WIFSIGNALED(st) ? "signal" : "status",
			    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	}

	qsort(b->rows, (size_t)b->nrows, sizeof(*b->rows), cmp_rows);
	if (b->csv) {
		print_csv(b);
	} else {
		print_table(b);
		print_summary(b);
	}
	for (int j = 0; j < WINDOW; j++)
		munmap(b->buf[j], b->max);
	munmap(b->check, b->max);
	free(b->rows);
	return 0;
}
