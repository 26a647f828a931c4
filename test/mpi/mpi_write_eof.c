/* mpi_write_eof: a write of nothing, or one that fails, never makes a read
 * past the end of file count bytes.
 *
 * MPI counts only the bytes before the end of file in a read's status.
 * rpfs reads bytes past the end as zeros, so the MPI-IO layer counts with
 * a size it knows (raised by its own writes); a write of 0 bytes at an
 * offset past the end, or one that failed, must not raise it.
 *
 * Usage: mpiexec -n N mpi_write_eof FILE [no-failed-nonblocking]
 * FILE gets 504 bytes (rank 0 writes them). Then, for each write path
 * (contiguous, strided, nonblocking, collective), every rank writes 0 bytes
 * past the end, or 80 bytes ending at 2^63, one past the largest file
 * offset (every file system refuses them: EINVAL or EFBIG; tmpfs and XFS
 * take 2^60), and reads 80 bytes at 1152. Each case prints one line, the
 * same from every file system:
 *   CASE: write ok|failed, read count N, size S
 * and on ufs: and rpfs: names the lines must be equal (the runners compare
 * them); every count must be 0 and every size 504. Prints " No Errors"
 * when they are. no-failed-nonblocking leaves out the nonblocking writes
 * that fail: with MPICH 4.0.2, ROMIO's ufs never completes such a request
 * (its aio poll function does not complete a request whose aio_error is
 * an error), so MPI_Wait spins forever there. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIZE	504
#define PAST	1744 /* where the writes of nothing go */
#define READ_AT 1152
#define LEN	80
/* where the writes that fail go: their last byte would be at 2^63 - 1 */
#define HUGE ((MPI_Offset)(((unsigned long long)1 << 63) - LEN))

static int rank, errs;
static MPI_File fh;
static char buf[4 * LEN];
static MPI_Datatype strided_mem; /* LEN bytes: 8-byte blocks, 16 apart */

/* Wait for a request from a post that succeeded; the write failed if
 * either did. Open MPI 4.1's MPI_Wait and MPI_Test crash on a file request
 * that failed (ompi_errhandler_request_invoke reads the request's file,
 * which OMPIO leaves NULL; on ufs too): there the status is polled with
 * MPI_Request_get_status, which invokes no error handler. */
static int waited(int rc, MPI_Request *req)
{
	MPI_Status st;

	if (rc != MPI_SUCCESS)
		return rc;
#ifdef OPEN_MPI
	int done = 0;

	st.MPI_ERROR = MPI_SUCCESS;
	while (!done)
		MPI_Request_get_status(*req, &done, &st);
	MPI_Request_free(req);
	return st.MPI_ERROR;
#else
	return MPI_Wait(req, &st);
#endif
}

/* The line for a case just written (rc: its result, same on every rank). */
static void report(const char *name, int rc)
{
	MPI_Offset size = -1;
	MPI_Status st;
	char in[LEN];
	int count = -1, failed = rc != MPI_SUCCESS, any;

	MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (MPI_File_read_at(fh, READ_AT, in, LEN, MPI_BYTE, &st) == MPI_SUCCESS)
		MPI_Get_count(&st, MPI_BYTE, &count);
	MPI_File_get_size(fh, &size);
	if (count != 0 || size != SIZE) {
		printf("rank %d: %s: read count %d, size %lld: want 0 and %d\n", rank,
		       name, count, (long long)size, SIZE);
		errs++;
	}
	if (rank == 0)
		printf("%s: write %s, read count %d, size %lld\n", name,
		       any ? "failed" : "ok", count, (long long)size);
	fflush(stdout);
	MPI_Barrier(MPI_COMM_WORLD);
}

/* A view of 8-byte blocks 16 bytes apart, its pointer at byte PAST. */
static void strided_view_past_end(void)
{
	MPI_Datatype vec, ft;

	MPI_Type_vector(1, 8, 16, MPI_BYTE, &vec);
	MPI_Type_create_resized(vec, 0, 16, &ft);
	MPI_Type_commit(&ft);
	MPI_File_set_view(fh, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL);
	MPI_File_seek(fh, PAST / 2, MPI_SEEK_SET); /* data byte PAST/2: file byte PAST */
	MPI_Type_free(&vec);
	MPI_Type_free(&ft);
}

static void plain_view(void)
{
	MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
}

static void writes_of_nothing(void)
{
	MPI_Request req;
	MPI_Status st;
	int rc;

	rc = MPI_File_write_at(fh, PAST, buf, 0, MPI_BYTE, &st);
	report("write_at of 0 bytes past the end", rc);
	rc = MPI_File_write_at_all(fh, PAST, buf, 0, MPI_BYTE, &st);
	report("write_at_all of 0 bytes past the end", rc);
	rc = MPI_File_write_at_all(fh, PAST, buf, 0, strided_mem, &st);
	report("write_at_all of 0 strided bytes past the end", rc);
	MPI_File_seek(fh, PAST, MPI_SEEK_SET);
	rc = MPI_File_write_all(fh, buf, 0, MPI_BYTE, &st);
	report("write_all of 0 bytes at a pointer past the end", rc);
	MPI_File_seek(fh, PAST, MPI_SEEK_SET);
	rc = MPI_File_write(fh, buf, 0, MPI_BYTE, &st);
	report("write of 0 bytes at a pointer past the end", rc);
	strided_view_past_end();
	rc = MPI_File_write_all(fh, buf, 0, MPI_BYTE, &st);
	plain_view();
	report("write_all of 0 bytes, strided view, pointer past the end", rc);
	rc = waited(MPI_File_iwrite_at(fh, PAST, buf, 0, MPI_BYTE, &req), &req);
	report("iwrite_at of 0 bytes past the end", rc);
	rc = waited(MPI_File_iwrite_at_all(fh, PAST, buf, 0, MPI_BYTE, &req), &req);
	report("iwrite_at_all of 0 bytes past the end", rc);
	strided_view_past_end();
	rc = waited(MPI_File_iwrite_all(fh, buf, 0, MPI_BYTE, &req), &req);
	plain_view();
	report("iwrite_all of 0 bytes, strided view, pointer past the end", rc);
}

static void writes_that_fail(int nonblocking)
{
	MPI_Request req;
	MPI_Status st;
	int rc;

	rc = MPI_File_write_at(fh, HUGE, buf, LEN, MPI_BYTE, &st);
	report("write_at at 2^63-80 (fails)", rc);
	rc = MPI_File_write_at(fh, HUGE, buf, 1, strided_mem, &st);
	report("write_at of strided memory at 2^63-80 (fails)", rc);
	rc = MPI_File_write_at_all(fh, HUGE, buf, LEN, MPI_BYTE, &st);
	report("write_at_all at 2^63-80 (fails)", rc);
	if (!nonblocking)
		return;
	rc = waited(MPI_File_iwrite_at(fh, HUGE, buf, LEN, MPI_BYTE, &req), &req);
	report("iwrite_at at 2^63-80 (fails)", rc);
	rc = waited(MPI_File_iwrite_at(fh, HUGE, buf, 1, strided_mem, &req), &req);
	report("iwrite_at of strided memory at 2^63-80 (fails)", rc);
	rc = waited(MPI_File_iwrite_at_all(fh, HUGE, buf, LEN, MPI_BYTE, &req), &req);
	report("iwrite_at_all at 2^63-80 (fails)", rc);
}

int main(int argc, char **argv)
{
	MPI_Datatype vec;
	MPI_Status st;
	char data[SIZE];
	int rc, all;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	/* a failed nonblocking write's MPI_Wait reports to this handler */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if (argc < 2) {
		if (rank == 0)
			fprintf(stderr, "usage: %s FILE\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Type_vector(LEN / 8, 8, 16, MPI_BYTE, &vec);
	MPI_Type_create_resized(vec, 0, 2 * LEN, &strided_mem);
	MPI_Type_commit(&strided_mem);
	MPI_Type_free(&vec);
	memset(buf, 'x', sizeof(buf));
	memset(data, 'd', sizeof(data));

	if (rank == 0)
		MPI_File_delete(argv[1], MPI_INFO_NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	rc = MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR,
			   MPI_INFO_NULL, &fh);
	if (rc != MPI_SUCCESS) {
		printf("rank %d: open failed\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (rank == 0 &&
	    MPI_File_write_at(fh, 0, data, SIZE, MPI_BYTE, &st) != MPI_SUCCESS) {
		printf("rank 0: the first %d bytes could not be written\n", SIZE);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_File_sync(fh);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_File_sync(fh);

	writes_of_nothing();
	writes_that_fail(argc < 3 || strcmp(argv[2], "no-failed-nonblocking") != 0);

	MPI_File_close(&fh);
	MPI_Type_free(&strided_mem);
	MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0 && all == 0)
		printf(" No Errors\n");
	MPI_Finalize();
	return all != 0;
}
