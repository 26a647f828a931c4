/* many_clients: servers under a growing number of client connections, for
 * bench/run (issue 31), after the PVFS-over-InfiniBand studies where a
 * design without credits collapsed as clients were added.
 *
 * Bandwidth mode, for each COUNT: COUNT clients, each its own rpfs_init (so
 * its own connection to every server), spread over up to --procs processes
 * holding several clients in threads (2 cores cannot run 512 processes
 * usefully). Each client connects (pings every server), then, all started
 * together, writes RECORDS records of --size bytes to its own region of one
 * shared file striped over --servers I/O servers, then reads them back
 * into a cleared buffer and checks every byte (a pattern of client id and
 * offset). Rows per phase: aggregate MB/s (every byte over first start to
 * last end), per-call latency p50 and p99 over all calls, and fairness:
 * the slowest client's MB/s over the fastest's.
 *
 * Idle mode (--idle PIDS): for each COUNT, the VmRSS of every listed
 * server process before COUNT clients connect and while they hold their
 * connections open, idle: KiB per connection.
 *
 * usage: many_clients [--file /PATH] [--servers S] [--first N] [--size B]
 *                     [--records MIN] [--bytes TOTAL] [--procs P]
 *                     [--idle "PID..."] [--deadline SECONDS] COUNT...
 * A client writes max(MIN, TOTAL / (COUNT * size)) records. RPFS_CONFIG
 * names the cluster. Any failed call or wrong byte prints it and exits 1.
 * --deadline bounds each count: client processes still running then are
 * killed and how far their clients got is printed (started, connected,
 * ending, done), so a stuck count says where rather than being a silent
 * timeout of the caller. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rpfs.h>

#define MAX_PIDS 64

struct opts {
	const char *file;
	uint32_t servers;
	int first;
	size_t size;
	long min_records;
	long long bytes;
	int procs;
	int npids;
	pid_t pids[MAX_PIDS];
	int deadline; /* seconds a count may take, 0: no bound */
};

/* How far the clients of a count got: how many passed each step. */
enum step { STEP_INIT, STEP_CONNECTED, STEP_ENDING, STEP_DONE, STEPS };

/* Shared by the parent and every client process of one count. */
struct shared {
	pthread_barrier_t bar;
	sem_t connected; /* idle mode: posted once every client is connected */
	sem_t release;	 /* idle mode: one post per client, to let it go */
	atomic_int failed;
	atomic_int steps[STEPS];
	int count;
	long records;
	/* per client and phase (0 write, 1 read): its first start, last end */
	double start[2][1024];
	double end[2][1024];
	float lat[]; /* [2][count * records], microseconds a call */
};

static struct opts o = {
	.file = "/b/many_clients",
	.servers = 4,
	.first = -1,
	.size = 65536,
	.min_records = 4,
	.bytes = 0,
	.procs = 8,
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void complain(struct shared *sh, int id, const char *what, long rc)
{
	fprintf(stderr, "many_clients: client %d: %s: %s (%s)\n", id, what,
		rc < 0 ? strerror((int)-rc) : "short", rpfs_errmsg());
	atomic_store(&sh->failed, 1);
}

/* The 8 bytes at file offset off (a multiple of 8) of client id. */
static uint64_t pattern(int id, uint64_t off)
{
	uint64_t z = ((uint64_t)id << 44) ^ off ^ 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill(unsigned char *b, size_t len, int id, uint64_t off)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = pattern(id, off + i);

		memcpy(b + i, &v, 8);
	}
}

/* Offset of the first wrong byte, or -1. */
static long check(const unsigned char *b, size_t len, int id, uint64_t off)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = pattern(id, off + i);

		if (memcmp(b + i, &v, 8))
			for (size_t j = i; j < i + 8; j++)
				if (b[j] != ((unsigned char *)&v)[j - i])
					return (long)j;
	}
	return -1;
}

/* Connect to every server of the config, so no connection set-up falls
 * inside a timed phase (the first index that is none ends it). */
static int connect_all(rpfs_client_t *c)
{
	double us;
	int i, rc;

	for (i = 0;; i++) {
		rc = rpfs_ping(c, i, &us);
		if (rc == -EINVAL && i > 0)
			return 0;
		if (rc)
			return rc;
	}
}

struct client {
	struct shared *sh;
	int id;
	int idle;
};

static void phase(struct client *cl, rpfs_file_t *f, unsigned char *buf, int ph)
{
	struct shared *sh = cl->sh;
	long r = sh->records;
	float *lat = sh->lat + (size_t)ph * sh->count * r + (size_t)cl->id * r;
	uint64_t base = (uint64_t)cl->id * r * o.size;

	pthread_barrier_wait(&sh->bar);
	sh->start[ph][cl->id] = now();
	for (long i = 0; i < r && f && !atomic_load(&sh->failed); i++) {
		uint64_t off = base + (uint64_t)i * o.size;
		ssize_t n;
		double t0;
		long bad;

		if (ph == 0)
			fill(buf, o.size, cl->id, off);
		else
			memset(buf, 0, o.size);
		t0 = now();
		n = ph == 0 ? rpfs_pwrite(f, buf, o.size, off)
			    : rpfs_pread(f, buf, o.size, off);
		lat[i] = (float)((now() - t0) * 1e6);
		if (n != (ssize_t)o.size) {
			complain(sh, cl->id, ph == 0 ? "pwrite" : "pread", (long)n);
			break;
		}
		if (ph == 1 && (bad = check(buf, o.size, cl->id, off)) >= 0) {
			fprintf(stderr,
				"many_clients: client %d: wrong byte at file offset %llu\n",
				cl->id,
				(unsigned long long)off + (unsigned long long)bad);
			atomic_store(&sh->failed, 1);
			break;
		}
	}
	sh->end[ph][cl->id] = now();
}

static void *client_main(void *arg)
{
	struct client *cl = arg;
	struct shared *sh = cl->sh;
	rpfs_client_t *c = NULL;
	rpfs_file_t *f = NULL;
	unsigned char *buf = NULL;
	int rc;

	rc = rpfs_init(NULL, &c);
	if (rc) {
		complain(sh, cl->id, "init", rc);
		c = NULL;
	}
	atomic_fetch_add(&sh->steps[STEP_INIT], 1);
	if (c && (rc = connect_all(c)))
		complain(sh, cl->id, "ping", rc);
	atomic_fetch_add(&sh->steps[STEP_CONNECTED], 1);
	if (cl->idle) {
		/* every client connected: the parent measures, then lets go */
		if (pthread_barrier_wait(&sh->bar) == PTHREAD_BARRIER_SERIAL_THREAD)
			sem_post(&sh->connected);
		while (sem_wait(&sh->release) && errno == EINTR)
			;
	} else {
		if (c && !atomic_load(&sh->failed)) {
			rc = rpfs_open(c, o.file, RPFS_O_RDWR, &f);
			if (rc) {
				complain(sh, cl->id, "open", rc);
				f = NULL;
			}
		}
		buf = aligned_alloc(4096, o.size);
		if (!buf) {
			complain(sh, cl->id, "buffer", -ENOMEM);
			f = NULL;
		}
		phase(cl, f, buf, 0);
		phase(cl, f, buf, 1);
		if (f)
			rpfs_close(f);
		free(buf);
	}
	atomic_fetch_add(&sh->steps[STEP_ENDING], 1);
	if (c)
		rpfs_finalize(c);
	atomic_fetch_add(&sh->steps[STEP_DONE], 1);
	return NULL;
}

/* A client process: clients [lo, hi) in threads. */
static int client_proc(struct shared *sh, int lo, int hi, int idle)
{
	int n = hi - lo;
	pthread_t *th = calloc(n, sizeof(*th));
	struct client *cl = calloc(n, sizeof(*cl));
	pthread_attr_t attr;

	if (!th || !cl)
		return 1;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1 << 20);
	for (int i = 0; i < n; i++) {
		cl[i] = (struct client){sh, lo + i, idle};
		if (pthread_create(&th[i], &attr, client_main, &cl[i])) {
			/* the others would wait at the barrier forever */
			fprintf(stderr, "many_clients: no thread for client %d\n",
				lo + i);
			_exit(1);
		}
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return atomic_load(&sh->failed) ? 1 : 0;
}

/* Start count clients in up to o.procs processes; pids gets them. */
static int spawn(struct shared *sh, int count, int idle, pid_t *pids)
{
	int np = count < o.procs ? count : o.procs;

	for (int p = 0; p < np; p++) {
		int lo = (int)((long)count * p / np),
		    hi = (int)((long)count * (p + 1) / np);

		pids[p] = fork();
		if (pids[p] < 0) {
			perror("many_clients: fork");
			exit(1);
		}
		if (pids[p] == 0)
			_exit(client_proc(sh, lo, hi, idle));
	}
	return np;
}

/* Kill every client process still listed in pids. */
static void kill_all(pid_t *pids, int np)
{
	for (int p = 0; p < np; p++)
		if (pids[p] > 0)
			kill(pids[p], SIGKILL);
}

/* A child that ended: take it off pids; a failure kills the others (they
 * would wait at a barrier for its clients) and is printed unless one was
 * already (sh->failed). */
static void ended(struct shared *sh, pid_t *pids, int np, pid_t pid, int st, int *bad)
{
	for (int p = 0; p < np; p++)
		if (pids[p] == pid)
			pids[p] = 0;
	if (WIFEXITED(st) && !WEXITSTATUS(st))
		return;
	if (!*bad && !atomic_load(&sh->failed)) {
		if (WIFEXITED(st))
			fprintf(stderr,
				"many_clients: a client process failed (exit %d)\n",
				WEXITSTATUS(st));
		else
			fprintf(stderr,
				"many_clients: a client process was killed (%s)\n",
				strsignal(WTERMSIG(st)));
	}
	*bad = 1;
	kill_all(pids, np);
}

/* Past the deadline: say how far the clients got, and end them. */
static void overdue(struct shared *sh, pid_t *pids, int np)
{
	fprintf(stderr,
		"many_clients: %d clients still running after %d s: of %d, %d "
		"started (rpfs_init returned), %d connected to every server, %d "
		"ending (in rpfs_finalize), %d done\n",
		sh->count - atomic_load(&sh->steps[STEP_DONE]), o.deadline, sh->count,
		atomic_load(&sh->steps[STEP_INIT]),
		atomic_load(&sh->steps[STEP_CONNECTED]),
		atomic_load(&sh->steps[STEP_ENDING]), atomic_load(&sh->steps[STEP_DONE]));
	atomic_store(&sh->failed, 1);
	kill_all(pids, np);
}

/* Wait for the client processes until t_end (0: no bound). 0 when all
 * exited 0. */
static int reap(struct shared *sh, pid_t *pids, int np, double t_end)
{
	int bad = 0, st;
	bool late = false;

	for (;;) {
		bool left = false;
		pid_t pid;

		for (int p = 0; p < np; p++)
			left |= pids[p] > 0;
		if (!left)
			break;
		pid = waitpid(-1, &st, t_end > 0 && !late ? WNOHANG : 0);
		if (pid > 0) {
			ended(sh, pids, np, pid, st, &bad);
			continue;
		}
		if (pid < 0 && errno != EINTR)
			break;
		if (pid == 0 && now() > t_end) {
			overdue(sh, pids, np);
			bad = late = true;
		} else if (pid == 0) {
			usleep(20000);
		}
	}
	return bad;
}

static struct shared *shared_new(int count, long records)
{
	size_t len = sizeof(struct shared) + 2 * (size_t)count * records * sizeof(float);
	struct shared *sh = mmap(NULL, len, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_barrierattr_t ba;

	if (sh == MAP_FAILED) {
		perror("many_clients: mmap");
		exit(1);
	}
	pthread_barrierattr_init(&ba);
	pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(&sh->bar, &ba, (unsigned)count);
	sem_init(&sh->connected, 1, 0);
	sem_init(&sh->release, 1, 0);
	sh->count = count;
	sh->records = records;
	return sh;
}

static void shared_free(struct shared *sh)
{
	size_t len = sizeof(struct shared) +
		     2 * (size_t)sh->count * sh->records * sizeof(float);

	pthread_barrier_destroy(&sh->bar);
	munmap(sh, len);
}

/* In a process of its own (the parent never opens the fabric, so its
 * forks are clean): a fresh file over o.servers I/O servers. */
static int make_file(void)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct rpfs_create_opts co = {0, o.servers, o.first};
		struct rpfs_stat s;
		rpfs_client_t *c;
		rpfs_file_t *f;
		int rc = rpfs_init(NULL, &c);

		if (rc) {
			fprintf(stderr, "many_clients: init: %s\n", rpfs_errmsg());
			_exit(1);
		}
		rc = rpfs_remove(c, o.file);
		if (rc && rc != -ENOENT)
			fprintf(stderr, "many_clients: remove %s: %s\n", o.file,
				rpfs_errmsg());
		rc = rpfs_create(c, o.file, 0644, RPFS_O_EXCL | RPFS_O_WRITE, &co, &f);
		if (rc) {
			fprintf(stderr, "many_clients: create %s: %s\n", o.file,
				rpfs_errmsg());
			_exit(1);
		}
		rpfs_close(f);
		rc = rpfs_stat(c, o.file, &s);
		if (rc || s.stripe_count != o.servers) {
			fprintf(stderr, "many_clients: %s has %u I/O servers, not %u\n",
				o.file, rc ? 0 : s.stripe_count, o.servers);
			_exit(1);
		}
		rpfs_finalize(c);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	return !WIFEXITED(st) || WEXITSTATUS(st);
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

static void report(struct shared *sh)
{
	static const char *names[2] = {"write", "read"};
	long r = sh->records;
	size_t ncalls = (size_t)sh->count * r;

	for (int ph = 0; ph < 2; ph++) {
		double t0 = sh->start[ph][0], t1 = sh->end[ph][0], lo = 0, hi = 0;
		float *lat = sh->lat + (size_t)ph * ncalls;

		for (int i = 0; i < sh->count; i++) {
			double bw =
				(double)r * o.size / (sh->end[ph][i] - sh->start[ph][i]);

			if (sh->start[ph][i] < t0)
				t0 = sh->start[ph][i];
			if (sh->end[ph][i] > t1)
				t1 = sh->end[ph][i];
			if (i == 0 || bw < lo)
				lo = bw;
			if (i == 0 || bw > hi)
				hi = bw;
		}
		qsort(lat, ncalls, sizeof(*lat), cmp_float);
#define ROW(val, fmt, unit)                                                              \
	printf("clients,rpfs,%s,servers=%u;conns=%d;records=%ld;size=%zu," fmt ",%s\n",  \
	       names[ph], o.servers, sh->count, r, o.size, val, unit)
		ROW((double)ncalls * o.size / (t1 - t0) / 1e6, "%.6g", "MB/s");
		ROW(lat[ncalls / 2], "%.6g", "us_p50");
		ROW(lat[ncalls * 99 / 100], "%.6g", "us_p99");
		ROW(lo / hi, "%.4f", "fairness");
#undef ROW
	}
	fflush(stdout);
}

/* The end of a count's time, now + --deadline (0: none). */
static double deadline(void)
{
	return o.deadline > 0 ? now() + o.deadline : 0;
}

static int run_count(int count)
{
	double t_end = deadline();
	long r = o.min_records;
	pid_t pids[1024];
	struct shared *sh;
	int np, bad;

	if (o.bytes / ((long long)count * (long long)o.size) > r)
		r = (long)(o.bytes / ((long long)count * (long long)o.size));
	if (make_file())
		return 1;
	sh = shared_new(count, r);
	np = spawn(sh, count, 0, pids);
	bad = reap(sh, pids, np, t_end) || atomic_load(&sh->failed);
	if (!bad)
		report(sh);
	shared_free(sh);
	return bad;
}

/* VmRSS of every listed server, KiB (-1 if one cannot be read). */
static long servers_rss(void)
{
	long sum = 0;

	for (int i = 0; i < o.npids; i++) {
		char path[64], line[256];
		long kb = -1;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/status", (int)o.pids[i]);
		f = fopen(path, "r");
		if (!f)
			return -1;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "VmRSS: %ld", &kb) == 1)
				break;
		fclose(f);
		if (kb < 0)
			return -1;
		sum += kb;
	}
	return sum;
}

static int idle_count(int count)
{
	struct shared *sh = shared_new(count, 0);
	double t_end = deadline();
	pid_t pids[1024];
	long before, held = -1;
	int np, bad = 0;

	usleep(500000); /* the last count's connections are gone */
	before = servers_rss();
	np = spawn(sh, count, 1, pids);
	for (;;) {
		struct timespec ts;
		pid_t pid;
		int st;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (!sem_timedwait(&sh->connected, &ts))
			break;
		pid = waitpid(-1, &st, WNOHANG);
		if (pid > 0) {
			/* a client process ended before all were connected: the
			 * others wait at the barrier for its clients */
			ended(sh, pids, np, pid, st, &bad);
			kill_all(pids, np);
			bad = 1;
			break;
		}
		if (t_end > 0 && now() > t_end) {
			overdue(sh, pids, np);
			bad = 1;
			break;
		}
	}
	if (!bad && !atomic_load(&sh->failed)) {
		usleep(500000); /* let the servers settle */
		held = servers_rss();
	}
	for (int i = 0; i < count; i++)
		sem_post(&sh->release);
	/* after a failure every client process was killed: just reap them */
	bad = reap(sh, pids, np, bad ? 0 : t_end) || bad || atomic_load(&sh->failed);
	if (!bad && before > 0 && held > 0) {
		printf("clients,rpfs,idle,servers=%d;conns=%d,%ld,KiB_rss_before\n",
		       o.npids, count, before);
		printf("clients,rpfs,idle,servers=%d;conns=%d,%ld,KiB_rss_held\n",
		       o.npids, count, held);
		/* every client holds one connection to each server */
		printf("clients,rpfs,idle,servers=%d;conns=%d,%.2f,KiB/conn\n", o.npids,
		       count, (double)(held - before) / ((double)count * o.npids));
		fflush(stdout);
	} else if (!bad) {
		fprintf(stderr, "many_clients: cannot read the servers' VmRSS\n");
		bad = 1;
	}
	shared_free(sh);
	return bad;
}

static long long size_arg(const char *s)
{
	char *end;
	long long v = strtoll(s, &end, 10);

	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	else if (*end == 'G')
		v <<= 30;
	return v;
}

int main(int argc, char **argv)
{
	const char *pids = NULL;
	struct rlimit rl;
	int i = 1, bad = 0;

	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		const char *a = argv[i], *v = argv[i + 1];

		if (!strcmp(a, "--file"))
			o.file = v;
		else if (!strcmp(a, "--servers"))
			o.servers = (uint32_t)atoi(v);
		else if (!strcmp(a, "--first"))
			o.first = atoi(v);
		else if (!strcmp(a, "--size"))
			o.size = (size_t)size_arg(v);
		else if (!strcmp(a, "--records"))
			o.min_records = atol(v);
		else if (!strcmp(a, "--bytes"))
			o.bytes = size_arg(v);
		else if (!strcmp(a, "--procs"))
			o.procs = atoi(v);
		else if (!strcmp(a, "--idle"))
			pids = v;
		else if (!strcmp(a, "--deadline"))
			o.deadline = atoi(v);
		else
			break;
	}
	if (i >= argc || o.size < 8 || o.size % 8 || o.min_records < 1 || o.procs < 1) {
		fprintf(stderr,
			"usage: many_clients [--file /PATH] [--servers S] [--first N] "
			"[--size B] [--records MIN] [--bytes TOTAL] [--procs P] "
			"[--idle \"PID...\"] [--deadline SECONDS] COUNT...\n");
		return 2;
	}
	for (char *s = (char *)pids; s && *s;) {
		char *end;
		long p = strtol(s, &end, 10);

		if (end == s)
			break;
		if (o.npids < MAX_PIDS)
			o.pids[o.npids++] = (pid_t)p;
		s = end;
	}
	if (pids && !o.npids) {
		fprintf(stderr, "many_clients: --idle wants the servers' PIDs\n");
		return 2;
	}
	/* each client holds a socket per server and the fabric's descriptors */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (; i < argc && !bad; i++) {
		int n = atoi(argv[i]);

		if (n < 1 || n > 1024) {
			fprintf(stderr, "many_clients: bad count '%s' (1 .. 1024)\n",
				argv[i]);
			return 2;
		}
		bad = pids ? idle_count(n) : run_count(n);
	}
	if (!bad)
		fprintf(stderr, "many_clients: %s\n",
			pids ? "every client connected to every server"
			     : "every byte read back checked");
	return bad;
}
