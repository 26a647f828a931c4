/* ompi_nonblocking: under Open MPI, nonblocking I/O on rpfs is truly
 * asynchronous and is completed by MPI's progress (MPI_Test), and a
 * strided nonblocking access is one list.
 *
 * Usage: mpirun -n N ompi_nonblocking rpfs:/dir/file
 * Each rank:
 *   - posts MPI_File_iwrite_at of 16 MiB: an MPI_Test right after must find
 *     it still in flight (the call returned before the data moved); posts 8
 *     more of 64 KiB, and polls all with MPI_Testall until they complete,
 *     with their full counts;
 *   - reads all of it back with MPI_File_iread_at, polled the same way;
 *   - with a strided view (every other 4 KiB block of its own region),
 *     iwrite_all/iread of the view move the right bytes;
 *   - an iread_at across the end of file counts only the bytes before it.
 * Prints the post and completion times of the big write, and " No Errors".
 * The file is kept. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG    (16 << 20)
#define SMALL  (64 << 10)
#define NSMALL 8
#define REGION ((MPI_Offset)(BIG + NSMALL * SMALL))

static int rank, nprocs, errs;

static void die_on(int rc, const char *what)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len;

	if (rc == MPI_SUCCESS)
		return;
	MPI_Error_string(rc, msg, &len);
	printf("rank %d: %s failed: %s\n", rank, what, msg);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static unsigned char pattern(MPI_Offset off)
{
	return (unsigned char)((off * 131 + (off >> 12) * 7 + 1) & 0xff);
}

static void fill(unsigned char *p, MPI_Offset off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(off + (MPI_Offset)i);
}

static int check(const unsigned char *p, MPI_Offset off, size_t len, const char *what)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern(off + (MPI_Offset)i)) {
			printf("rank %d: %s: byte %lld is %d, want %d\n", rank, what,
			       (long long)(off + (MPI_Offset)i), p[i],
			       pattern(off + (MPI_Offset)i));
			errs++;
			return 0;
		}
	return 1;
}

/* Poll reqs to completion; returns how many MPI_Testall calls it took. */
static long poll_all(int n, MPI_Request *reqs, MPI_Status *st)
{
	long polls = 0;
	int done = 0;

	while (!done) {
		die_on(MPI_Testall(n, reqs, &done, st), "MPI_Testall");
		polls++;
	}
	return polls;
}

static void expect_count(MPI_Status *st, int want, const char *what)
{
	int count;

	MPI_Get_count(st, MPI_BYTE, &count);
	if (count != want) {
		printf("rank %d: %s: count %d, want %d\n", rank, what, count, want);
		errs++;
	}
}

static void many_at_once(MPI_File fh, unsigned char *buf)
{
	MPI_Offset base = (MPI_Offset)rank * REGION;
	MPI_Request reqs[NSMALL + 1];
	MPI_Status st[NSMALL + 1];
	double t0, t_post, t_done;
	int done, in_flight;
	long polls;

	fill(buf, base, (size_t)REGION);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	die_on(MPI_File_iwrite_at(fh, base, buf, BIG, MPI_BYTE, &reqs[0]), "iwrite_at");
	t_post = MPI_Wtime() - t0;
	/* the call returned before the data moved: the first poll finds it
	 * still in flight */
	die_on(MPI_Test(&reqs[0], &done, &st[0]), "MPI_Test");
	in_flight = !done;
	if (!in_flight) {
		printf("rank %d: the 16 MiB iwrite_at was complete at the first poll: not asynchronous\n",
		       rank);
		errs++;
	}
	for (int i = 0; i < NSMALL; i++)
		die_on(MPI_File_iwrite_at(fh, base + BIG + i * SMALL,
					  buf + BIG + i * SMALL, SMALL, MPI_BYTE,
					  &reqs[i + 1]),
		       "iwrite_at small");
	polls = 1 + poll_all(NSMALL + (in_flight ? 1 : 0), reqs + (in_flight ? 0 : 1),
			     st + (in_flight ? 0 : 1));
	t_done = MPI_Wtime() - t0;
	for (int i = 0; i <= NSMALL; i++)
		expect_count(&st[i], i == 0 ? BIG : SMALL, "iwrite_at");
	if (rank == 0)
		printf("16 MiB iwrite_at: returned after %.2f ms, complete after %.2f ms and %ld polls\n",
		       t_post * 1e3, t_done * 1e3, polls);

	memset(buf, 0, (size_t)REGION);
	die_on(MPI_File_iread_at(fh, base, buf, BIG, MPI_BYTE, &reqs[0]), "iread_at");
	for (int i = 0; i < NSMALL; i++)
		die_on(MPI_File_iread_at(fh, base + BIG + i * SMALL,
					 buf + BIG + i * SMALL, SMALL, MPI_BYTE,
					 &reqs[i + 1]),
		       "iread_at small");
	poll_all(NSMALL + 1, reqs, st);
	for (int i = 0; i <= NSMALL; i++)
		expect_count(&st[i], i == 0 ? BIG : SMALL, "iread_at");
	check(buf, base, (size_t)REGION, "iread_at");
}

/* A strided view: every other 4 KiB block of this rank's region. */
static void strided(MPI_File fh, unsigned char *buf)
{
	const int blk = 4096, nblk = 256;
	MPI_Offset base = (MPI_Offset)rank * REGION;
	MPI_Datatype vec, ftype;
	MPI_Request req;
	MPI_Status st;

	MPI_Type_vector(nblk, blk, 2 * blk, MPI_BYTE, &vec);
	MPI_Type_create_resized(vec, 0, (MPI_Aint)2 * blk * nblk, &ftype);
	MPI_Type_commit(&ftype);
	die_on(MPI_File_set_view(fh, base, MPI_BYTE, ftype, "native", MPI_INFO_NULL),
	       "set_view");
	for (int i = 0; i < nblk; i++)
		fill(buf + i * blk, base + (MPI_Offset)i * 2 * blk + 7, blk);
	die_on(MPI_File_iwrite_all(fh, buf, nblk * blk, MPI_BYTE, &req), "iwrite_all");
	poll_all(1, &req, &st);
	expect_count(&st, nblk * blk, "iwrite_all");
	memset(buf, 0, (size_t)nblk * blk);
	die_on(MPI_File_iread_at(fh, 0, buf, nblk * blk, MPI_BYTE, &req),
	       "iread_at view");
	poll_all(1, &req, &st);
	expect_count(&st, nblk * blk, "iread_at view");
	for (int i = 0; i < nblk; i++)
		if (!check(buf + i * blk, base + (MPI_Offset)i * 2 * blk + 7, blk,
			   "strided iread"))
			break;
	die_on(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL),
	       "set_view back");
	MPI_Type_free(&ftype);
	MPI_Type_free(&vec);
}

/* An iread_at across the end of file counts the bytes before it. */
static void across_eof(MPI_File fh, unsigned char *buf)
{
	MPI_Offset size;
	MPI_Request req;
	MPI_Status st;

	die_on(MPI_File_get_size(fh, &size), "get_size");
	die_on(MPI_File_iread_at(fh, size - 1000, buf, 3000, MPI_BYTE, &req), "iread_at");
	poll_all(1, &req, &st);
	expect_count(&st, 1000, "iread_at across the end of file");
}

int main(int argc, char **argv)
{
	unsigned char *buf;
	MPI_File fh;
	int total;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (argc < 2) {
		if (rank == 0)
			fprintf(stderr, "usage: %s rpfs:/path\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = malloc((size_t)REGION);
	if (rank == 0)
		MPI_File_delete(argv[1], MPI_INFO_NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	die_on(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR,
			     MPI_INFO_NULL, &fh),
	       "open");
	many_at_once(fh, buf);
	strided(fh, buf);
	MPI_Barrier(MPI_COMM_WORLD);
	across_eof(fh, buf);
	die_on(MPI_File_close(&fh), "close");
	free(buf);

	MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf(total ? " Found %d errors\n" : " No Errors\n", total);
	MPI_Finalize();
	return total != 0;
}
