/* mpi_overlap: nonblocking I/O returns at once and the data moves while the
 * program computes without calling MPI.
 *
 * Usage: mpiexec -n N mpi_overlap rpfs:/dir/file [MiB per rank, default 256]
 *
 * For each of three accesses, each rank's share being MiB mebibytes:
 *   contig   MPI_File_iwrite_at / iread_at of one contiguous block;
 *   strided  the same through a file view of 64 KiB blocks dealt round
 *            robin to the ranks (a vector filetype: list I/O);
 *   all      MPI_File_iwrite_all / iread_all of one contiguous block per
 *            rank (ROMIO's nonblocking collective over the driver's calls);
 * the blocking call is timed first (T). Then the nonblocking one is
 * posted, the rank computes for max(2 T, 0.2 s) without calling MPI, and
 * waits. Checked, with loose bounds (this is not a benchmark):
 *   - the post used no more than 10% of T (plus 2 ms) of CPU, and took no
 *     longer than that unless the scheduler preempted it: servers and
 *     clients share these 2 cores, and once the first request is out the
 *     servers' and the progress thread's work competes with the posting
 *     thread (measured: 0.2 ms of CPU in 11-29 ms of wall time, the thread
 *     preempted); a post that waited for something (blocked, not
 *     preempted) fails, unless what it waited for was the disk paging in
 *     the program's own code: the first nonblocking call of a process runs
 *     code of MPI and librpfs never run before (in the Soft-RoCE VM, whose
 *     disk is the host's files, one major fault took 22-63 ms of a 23-66
 *     ms post, every run), the cost of any library's first call;
 *   - the data moved meanwhile: the wait took at most half of T (plus
 *     5 ms): without a progress engine it costs about T. Time the node
 *     kept librpfs's progress thread (from the post on) or the waiting
 *     thread from a CPU (their run-queue delay in /proc's schedstat) is
 *     added to the bound: on a node oversubscribed by other work (a VM
 *     and two computing ranks on 2 cores) the progress thread waited 170
 *     of 238 ms for a CPU and the data moved that much later, which says
 *     nothing about the engine. Every wait prints both delays;
 *   - every byte read back is the byte written;
 *   - posted and waited for at once, the wait sleeps while the data moves:
 *     the waiting thread used at most half the wait's time in CPU (plus
 *     2 ms). MPICH's MPI_Wait polls the request in a loop, and a poll
 *     that only looked held a core the transfer needed.
 * Prints the times and " No Errors" on success. */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <dirent.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define BLOCK (64 * 1024)

enum access { CONTIG, STRIDED, ALL };
static const char *names[] = {"contig", "strided", "all"};

static int rank, nprocs, errs;

/* A failed check: printed where it happens, counted, and the first one
 * printed again at the end, where the test runner's tail of the log shows
 * it. */
static char first_failure[512];

static void report(const char *fmt, ...)
{
	va_list ap;
	char msg[512];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fputs(msg, stdout);
	if (!errs++)
		snprintf(first_failure, sizeof(first_failure), "%s", msg);
}

static unsigned char byte_at(uint64_t i)
{
	return (unsigned char)((i * 2654435761u) >> 13) ^ (unsigned char)(i >> 20);
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

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* Seconds a thread has spent runnable but waiting for a CPU: the second
 * field of its schedstat file (ns); 0 where the kernel does not keep it. */
static double run_delay(const char *schedstat)
{
	unsigned long long cpu, delay;
	FILE *f = fopen(schedstat, "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "%llu %llu", &cpu, &delay);
	fclose(f);
	return n == 2 ? delay / 1e9 : 0;
}

/* librpfs's progress thread (named rpfs-progress): its schedstat file, or
 * "" when there is none. */
static char progress_stat[64];

static void find_progress_thread(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	progress_stat[0] = 0;
	while (d && (e = readdir(d))) {
		char path[64], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%.20s/comm", e->d_name);
		f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f) && !strcmp(comm, "rpfs-progress\n"))
			snprintf(progress_stat, sizeof(progress_stat),
				 "/proc/self/task/%.20s/schedstat", e->d_name);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
}

/* Busy work that calls nothing: the overlap must come from librpfs. */
static double compute(double seconds)
{
	double end = now() + seconds, x = 1;

	while (now() < end)
		for (int i = 0; i < 10000; i++)
			x = x * 1.0000001 + 1e-9;
	return x;
}

/* The file offset of byte k of this rank's share. */
static uint64_t file_off(enum access a, uint64_t share, uint64_t k)
{
	if (a != STRIDED)
		return (uint64_t)rank * share + k;
	return (k / BLOCK * (uint64_t)nprocs + (uint64_t)rank) * BLOCK + k % BLOCK;
}

static void set_view(MPI_File fh, enum access a, uint64_t share)
{
	MPI_Datatype ftype;

	if (a != STRIDED) {
		die_on(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native",
					 MPI_INFO_NULL),
		       "set_view");
		return;
	}
	MPI_Type_vector((int)(share / BLOCK), BLOCK, BLOCK * nprocs, MPI_BYTE, &ftype);
	MPI_Type_commit(&ftype);
	die_on(MPI_File_set_view(fh, (MPI_Offset)rank * BLOCK, MPI_BYTE, ftype, "native",
				 MPI_INFO_NULL),
	       "set_view");
	MPI_Type_free(&ftype);
}

static int blocking(MPI_File fh, enum access a, bool write, void *buf, uint64_t share)
{
	MPI_Offset off = a == STRIDED ? 0 : (MPI_Offset)rank * (MPI_Offset)share;
	MPI_Status st;

	if (a == ALL)
		return write ? MPI_File_write_at_all(fh, off, buf, (int)share, MPI_BYTE,
						     &st)
			     : MPI_File_read_at_all(fh, off, buf, (int)share, MPI_BYTE,
						    &st);
	return write ? MPI_File_write_at(fh, off, buf, (int)share, MPI_BYTE, &st)
		     : MPI_File_read_at(fh, off, buf, (int)share, MPI_BYTE, &st);
}

static int post(MPI_File fh, enum access a, bool write, void *buf, uint64_t share,
		MPI_Request *req)
{
	MPI_Offset off = a == STRIDED ? 0 : (MPI_Offset)rank * (MPI_Offset)share;

	if (a == ALL)
		return write ? MPI_File_iwrite_at_all(fh, off, buf, (int)share, MPI_BYTE,
						      req)
			     : MPI_File_iread_at_all(fh, off, buf, (int)share, MPI_BYTE,
						     req);
	return write ? MPI_File_iwrite_at(fh, off, buf, (int)share, MPI_BYTE, req)
		     : MPI_File_iread_at(fh, off, buf, (int)share, MPI_BYTE, req);
}

static void run(MPI_File fh, enum access a, bool write, unsigned char *buf,
		uint64_t share)
{
	const char *what = write ? "write" : "read";
	double t0, c0, d0, p0, tblock, tpost, cpost, twait, dwait, dprog, cwait, busy,
		bound;
	struct rusage ru0, ru1;
	long preempted, paged;
	MPI_Request req;
	MPI_Status st;
	int count;

	if (write)
		for (uint64_t k = 0; k < share; k++)
			buf[k] = byte_at(file_off(a, share, k));
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = now();
	die_on(blocking(fh, a, write, buf, share), "blocking call");
	tblock = now() - t0;
	if (!write)
		memset(buf, 0, share);
	MPI_Barrier(MPI_COMM_WORLD);
	busy = 2 * tblock > 0.2 ? 2 * tblock : 0.2;
	getrusage(RUSAGE_THREAD, &ru0);
	p0 = run_delay(progress_stat);
	c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	t0 = now();
	die_on(post(fh, a, write, buf, share, &req), "post");
	tpost = now() - t0;
	cpost = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
	getrusage(RUSAGE_THREAD, &ru1);
	preempted = ru1.ru_nivcsw - ru0.ru_nivcsw;
	paged = ru1.ru_majflt - ru0.ru_majflt;
	compute(busy);
	t0 = now();
	d0 = run_delay("/proc/thread-self/schedstat");
	die_on(MPI_Wait(&req, &st), "wait");
	dwait = run_delay("/proc/thread-self/schedstat") - d0;
	twait = now() - t0;
	dprog = run_delay(progress_stat) - p0;
	MPI_Get_count(&st, MPI_BYTE, &count);
	if ((uint64_t)count != share) {
		report("rank %d: %s %s: count %d, want %llu\n", rank, names[a], what,
		       count, (unsigned long long)share);
	}
	printf("rank %d: %-7s %-5s blocking %8.1f ms  post %7.2f ms (cpu %5.2f ms, preempted %ld, major faults %ld)  wait after %.0f ms of compute %7.1f ms (kept from a CPU: waiting %.1f ms, progress thread %.1f ms)\n",
	       rank, names[a], what, tblock * 1e3, tpost * 1e3, cpost * 1e3, preempted,
	       paged, busy * 1e3, twait * 1e3, dwait * 1e3, dprog * 1e3);
	bound = 0.1 * tblock + 0.002;
	if (cpost > bound || (tpost > bound && !preempted && !paged)) {
		report("rank %d: %s %s: the post took %.2f ms (%.2f ms of CPU, preempted %ld times, %ld major page faults), more than 10%% of the blocking call's %.1f ms\n",
		       rank, names[a], what, tpost * 1e3, cpost * 1e3, preempted, paged,
		       tblock * 1e3);
	}
	/* Time the node kept the progress thread or the waiting thread from
	 * a CPU is not the engine's: on a node oversubscribed by other work
	 * the transfer moves that much later. */
	if (twait > 0.5 * tblock + 0.005 + dwait + dprog) {
		report("rank %d: %s %s: the wait after computing still took %.1f ms of the blocking call's %.1f ms (%.1f ms of it excused: threads kept from a CPU): the data did not move meanwhile\n",
		       rank, names[a], what, twait * 1e3, tblock * 1e3,
		       (dwait + dprog) * 1e3);
	}
	if (!write)
		for (uint64_t k = 0; k < share; k++)
			if (buf[k] != byte_at(file_off(a, share, k))) {
				report("rank %d: %s read: byte %llu of the share is %u, want %u\n",
				       rank, names[a], (unsigned long long)k, buf[k],
				       byte_at(file_off(a, share, k)));
				break;
			}

	/* the same again, waited for at once (same bytes, same place) */
	MPI_Barrier(MPI_COMM_WORLD);
	die_on(post(fh, a, write, buf, share, &req), "post");
	c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	t0 = now();
	die_on(MPI_Wait(&req, &st), "wait");
	twait = now() - t0;
	cwait = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
	printf("rank %d: %-7s %-5s waited at once: %.1f ms, %.1f ms of it in CPU\n", rank,
	       names[a], what, twait * 1e3, cwait * 1e3);
	if (cwait > 0.5 * twait + 0.002) {
		report("rank %d: %s %s: MPI_Wait used %.1f ms of CPU in %.1f ms: it polled instead of sleeping\n",
		       rank, names[a], what, cwait * 1e3, twait * 1e3);
	}
}

int main(int argc, char **argv)
{
	uint64_t share;
	unsigned char *buf;
	MPI_File fh;
	int total;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (argc < 2) {
		if (!rank)
			fprintf(stderr,
				"usage: mpi_overlap rpfs:/dir/file [MiB per rank]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	share = (uint64_t)(argc > 2 ? atoi(argv[2]) : 256) << 20;
	if (share < BLOCK || share > (1u << 30)) {
		if (!rank)
			fprintf(stderr, "MiB per rank: 1 .. 1024\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = malloc(share);
	if (!buf) {
		fprintf(stderr, "rank %d: out of memory\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	die_on(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR,
			     MPI_INFO_NULL, &fh),
	       "open");
	find_progress_thread();
	for (int a = CONTIG; a <= ALL; a++) {
		set_view(fh, (enum access)a, share);
		run(fh, (enum access)a, true, buf, share);
		run(fh, (enum access)a, false, buf, share);
	}
	die_on(MPI_File_close(&fh), "close");
	free(buf);
	if (errs)
		printf("rank %d: %d checks failed, the first: %s", rank, errs,
		       first_failure);
	MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (!rank && !total)
		printf(" No Errors\n");
	MPI_Finalize();
	return total != 0;
}
