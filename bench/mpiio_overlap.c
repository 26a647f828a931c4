/* mpiio_overlap: how much of a nonblocking transfer hides behind
 * computation (issue 16's overlap experiment).
 *
 * Usage: mpiexec -n N mpiio_overlap --file rpfs:/dir/f --system rpfs
 *                [--sizes 1M,16M,256M] [--reps 5] [--sleep] [--bind] [--tag T]
 *
 * For each size (per rank, one contiguous block per rank) and direction:
 * B, the blocking call's time (median of reps); then reps times: post the
 * nonblocking call, compute for B without calling MPI, wait; the post's
 * time and the total (post + compute + wait) are the medians of the runs.
 * Medians, not best runs: the computation lasts a fixed B, so with B the
 * best blocking time a total could only come out well in a run whose
 * transfer also matched its best, and where transfers vary from run to
 * run (a few ms on a shared node: 3.0 ms best, 4.2 ms median for 16 MiB
 * here) the best total then measures that spread, not the overlap.
 * Overlap efficiency = (C + B - total) / min(C, B) with C = B: 100% when
 * the transfer hid entirely behind the compute, 0% when nothing moved
 * until the wait, below 0 when post + compute + wait took longer than
 * compute and the blocking call one after the other. Times are the
 * slowest rank's. Every read is checked.
 *
 * What bounds it: where the transfer itself needs the CPU, a computation
 * that holds cores slows it. U is the CPU time the whole node spends on one
 * blocking transfer (busy time in /proc/stat over blocking transfers
 * repeated for CPU_WINDOW seconds; servers included when they run here,
 * as in bench/run): U / B near the number of cores means the transfer
 * alone keeps every core busy, and the overlap then depends on how much
 * CPU the computation leaves it.
 * --sleep computes by sleeping: what the engine overlaps when the CPU is
 * not the bound.
 * --bind binds each rank to one CPU before it opens the file, as a
 * launcher's bind-to-core does (rank r to the (r mod n)-th of the n CPUs it
 * may use): threads the I/O library starts inherit the binding unless it
 * places them elsewhere (rpfs: the progress_cpus setting).
 *
 * Output: CSV rows experiment,system,op,param,value,unit:
 *   overlap,SYS,OP,size=S;np=N,V,us_post     the post's time
 *   overlap,SYS,OP,size=S;np=N,V,ms_blocking B
 *   overlap,SYS,OP,size=S;np=N,V,ms_postwait post, then wait at once
 *   overlap,SYS,OP,size=S;np=N,V,ms_total    post + compute + wait
 *   overlap,SYS,OP,size=S;np=N,V,pct         overlap efficiency
 *   overlap,SYS,OP,size=S;np=N,V,ms_cpu      U, the node's CPU per transfer
 *   overlap,SYS,OP,size=S;np=N,V,cores_busy  the node's busy cores meanwhile
 * (with --sleep: the same units ending in _asleep; with --bind, in _bound;
 * --tag T: in _T)
 * A wrong byte read prints a message and exits 1. */
#define _GNU_SOURCE /* clock_gettime under -std=c11, sched_setaffinity */
#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CPU_WINDOW 0.3 /* seconds of blocking transfers to measure U over */
#define MAX_REPS   99

static int rank, nprocs;
/* --sleep: "compute" by sleeping, leaving the cores to the transfer. The
 * difference to the default shows how much overlap the transfer loses to
 * the CPU the computation takes, not to waiting for progress. */
static int sleep_instead;
/* The units' suffix ("" or "_asleep", "_bound", "_TAG"). */
static char tag[40] = "";

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void compute(double seconds)
{
	double end = now() + seconds;
	volatile double x = 1;

	if (sleep_instead) {
		struct timespec ts = {(time_t)seconds,
				      (long)((seconds - (time_t)seconds) * 1e9)};

		nanosleep(&ts, NULL);
		return;
	}
	while (now() < end)
		for (int i = 0; i < 10000; i++)
			x = x * 1.0000001 + 1e-9;
}

static void die_on(int rc, const char *what)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len;

	if (rc == MPI_SUCCESS)
		return;
	MPI_Error_string(rc, msg, &len);
	fprintf(stderr, "rank %d: %s: %s\n", rank, what, msg);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);

	if (*end == 'K' || *end == 'k')
		v <<= 10;
	else if (*end == 'M' || *end == 'm')
		v <<= 20;
	else if (*end == 'G' || *end == 'g')
		v <<= 30;
	return v;
}

static unsigned char byte_at(uint64_t i)
{
	return (unsigned char)((i * 2654435761u) >> 13) ^ (unsigned char)(i >> 20);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorts v). */
static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The slowest rank's value. */
static double slowest(double v)
{
	MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return v;
}

static double blocking(MPI_File fh, int write, unsigned char *buf, uint64_t size)
{
	MPI_Offset off = (MPI_Offset)rank * (MPI_Offset)size;
	MPI_Status st;
	double t0;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = now();
	die_on(write ? MPI_File_write_at(fh, off, buf, (int)size, MPI_BYTE, &st)
		     : MPI_File_read_at(fh, off, buf, (int)size, MPI_BYTE, &st),
	       "blocking call");
	return slowest(now() - t0);
}

/* Busy CPU seconds of the whole node so far (/proc/stat: all but idle and
 * iowait), read by rank 0; -1 where there is no /proc/stat. */
static double node_busy(void)
{
	unsigned long long v[10] = {0}, total = 0;
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
	fclose(f);
	if (n < 5)
		return -1;
	/* guest time (8, 9) is already counted in user time */
	for (int i = 0; i < 8; i++)
		total += v[i];
	return (double)(total - v[3] - v[4]) / (double)sysconf(_SC_CLK_TCK);
}

/* U: the node's CPU seconds per blocking transfer (rank 0's answer; -1
 * when unknown); *cores: the node's busy cores meanwhile. Repeats the
 * transfer until CPU_WINDOW has passed, so the clock ticks of /proc/stat
 * are a small part of it. */
static double node_cpu_per_transfer(MPI_File fh, int write, unsigned char *buf,
				    uint64_t size, double *cores)
{
	double busy0, t0, u = -1;
	int n = 0, more = 1;

	MPI_Barrier(MPI_COMM_WORLD);
	busy0 = rank ? 0 : node_busy();
	t0 = now();
	while (more) {
		blocking(fh, write, buf, size);
		n++;
		more = now() - t0 < CPU_WINDOW;
		MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
	}
	if (!rank && busy0 >= 0) {
		double busy = node_busy() - busy0;

		u = busy / n;
		*cores = busy / (now() - t0);
	}
	return u;
}

/* One post, compute, wait; *post gets the post's time. Returns the total. */
static double overlapped(MPI_File fh, int write, unsigned char *buf, uint64_t size,
			 double busy, double *post)
{
	MPI_Offset off = (MPI_Offset)rank * (MPI_Offset)size;
	MPI_Request req;
	MPI_Status st;
	double t0, tp;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = now();
	die_on(write ? MPI_File_iwrite_at(fh, off, buf, (int)size, MPI_BYTE, &req)
		     : MPI_File_iread_at(fh, off, buf, (int)size, MPI_BYTE, &req),
	       "post");
	tp = now() - t0;
	compute(busy);
	die_on(MPI_Wait(&req, &st), "wait");
	*post = slowest(tp);
	return slowest(now() - t0);
}

/* One CSV row; the units end in the run's tag. */
static void row(const char *sys, const char *op, uint64_t size, double v,
		const char *unit)
{
	printf("overlap,%s,%s,size=%llu;np=%d,%.3f,%s%s\n", sys, op,
	       (unsigned long long)size, nprocs, v, unit, tag);
}

/* --bind: this thread (and the threads it starts) on one CPU. */
static void bind_rank(void)
{
	cpu_set_t may, one;
	int n = 0, want;

	if (sched_getaffinity(0, sizeof(may), &may)) {
		perror("sched_getaffinity");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	want = rank % CPU_COUNT(&may);
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &may) && n++ == want) {
			CPU_SET(c, &one);
			break;
		}
	if (sched_setaffinity(0, sizeof(one), &one)) {
		perror("sched_setaffinity");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

static int check(const unsigned char *buf, uint64_t size)
{
	uint64_t base = (uint64_t)rank * size;

	for (uint64_t k = 0; k < size; k++)
		if (buf[k] != byte_at(base + k)) {
			fprintf(stderr, "rank %d: byte %llu of the file is %u, want %u\n",
				rank, (unsigned long long)(base + k), buf[k],
				byte_at(base + k));
			return 1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	const char *file = NULL, *sys = "rpfs";
	char sizes[256] = "1M,16M,256M";
	int reps = 5, bad = 0, bind = 0;
	double t_b[MAX_REPS], t_total[MAX_REPS], t_post[MAX_REPS], t_pw[MAX_REPS];
	MPI_File fh;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	for (int i = 1; i < argc; i++) {
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--sleep"))
			sleep_instead = 1;
		else if (!strcmp(argv[i], "--bind"))
			bind = 1;
		else if (!val)
			break;
		else if (!strcmp(argv[i], "--file"))
			file = argv[++i];
		else if (!strcmp(argv[i], "--system"))
			sys = argv[++i];
		else if (!strcmp(argv[i], "--sizes"))
			snprintf(sizes, sizeof(sizes), "%s", argv[++i]);
		else if (!strcmp(argv[i], "--reps"))
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--tag"))
			snprintf(tag, sizeof(tag), "_%s", argv[++i]);
	}
	if (!tag[0] && (sleep_instead || bind))
		snprintf(tag, sizeof(tag), "%s", sleep_instead ? "_asleep" : "_bound");
	if (!file || reps < 1 || reps > MAX_REPS) {
		if (!rank)
			fprintf(stderr,
				"usage: mpiio_overlap --file F [--system S] [--sizes L] [--reps N<=99] [--sleep] [--bind] [--tag T]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (bind)
		bind_rank();
	die_on(MPI_File_open(MPI_COMM_WORLD, file, MPI_MODE_CREATE | MPI_MODE_RDWR,
			     MPI_INFO_NULL, &fh),
	       "open");
	for (char *tok = strtok(sizes, ","); tok; tok = strtok(NULL, ",")) {
		uint64_t size = parse_size(tok);
		unsigned char *buf = malloc(size);

		if (!buf || !size || size > (1u << 30)) {
			fprintf(stderr,
				"rank %d: size %s: out of range or out of memory\n", rank,
				tok);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		for (int write = 1; write >= 0; write--) {
			double b, pw, total, post, u, cores = 0;

			if (write)
				for (uint64_t k = 0; k < size; k++)
					buf[k] = byte_at((uint64_t)rank * size + k);
			for (int r = 0; r < reps; r++)
				t_b[r] = blocking(fh, write, buf, size);
			b = median(t_b, reps);
			/* Post and wait at once: the engine's own transfer time.
			 * Equal to B, a posted transfer moves as fast as a
			 * blocking one, and what the overlap loses is the CPU
			 * the computation takes and the transfer's run-to-run
			 * spread (the computation lasts the median B). */
			for (int r = 0; r < reps; r++)
				t_pw[r] = overlapped(fh, write, buf, size, 0, &post);
			pw = median(t_pw, reps);
			u = node_cpu_per_transfer(fh, write, buf, size, &cores);
			for (int r = 0; r < reps; r++) {
				if (!write)
					memset(buf, 0, size);
				t_total[r] =
					overlapped(fh, write, buf, size, b, &t_post[r]);
				if (!write)
					bad |= check(buf, size);
			}
			total = median(t_total, reps);
			post = median(t_post, reps);
			if (!rank) {
				const char *op = write ? "write" : "read";
				double eff = (b + b - total) / b * 100;

				row(sys, op, size, post * 1e6, "us_post");
				row(sys, op, size, b * 1e3, "ms_blocking");
				row(sys, op, size, pw * 1e3, "ms_postwait");
				row(sys, op, size, total * 1e3, "ms_total");
				row(sys, op, size, eff, "pct");
				if (u >= 0) {
					row(sys, op, size, u * 1e3, "ms_cpu");
					row(sys, op, size, cores, "cores_busy");
				}
			}
		}
		free(buf);
	}
	die_on(MPI_File_close(&fh), "close");
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	MPI_Finalize();
	return bad;
}
