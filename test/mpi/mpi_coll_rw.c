/* mpi_coll_rw: a file written collectively by one number of processes
 * reads back the same by another.
 *
 * Usage: mpiexec -n N mpi_coll_rw write rpfs:/dir/file [blocks [blocksize]]
 *        mpiexec -n M mpi_coll_rw read  rpfs:/dir/file [blocks [blocksize]]
 * write: the file is `blocks` blocks of `blocksize` bytes, dealt round
 *        robin to the N writers through a strided file view (a vector
 *        filetype), written with MPI_File_write_all (the driver aggregates
 *        with two-phase below 16 KiB blocks, else each rank writes its own
 *        blocks as one list I/O: adio/ad_rpfs/ad_rpfs_coll.c).
 * read:  each of the M readers reads a contiguous share of the file with
 *        independent MPI_File_read_at calls, and also a strided share
 *        through a view (list I/O), and checks every byte.
 * The content of byte i is a function of i alone, so any N and M agree.
 * Prints " No Errors" on success. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char byte_at(uint64_t i)
{
	return (unsigned char)((i * 2654435761u) >> 13) ^ (unsigned char)(i >> 20);
}

static int rank, nprocs, errs;

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

static void check(const unsigned char *buf, uint64_t off, uint64_t len, const char *what)
{
	for (uint64_t i = 0; i < len; i++)
		if (buf[i] != byte_at(off + i)) {
			printf("rank %d: %s: byte %llu is %u, want %u\n", rank, what,
			       (unsigned long long)(off + i), buf[i], byte_at(off + i));
			errs++;
			return;
		}
}

int main(int argc, char **argv)
{
	MPI_File fh;
	MPI_Datatype ftype;
	MPI_Status st;
	int blocks, bsize, total, mine, count;
	unsigned char *buf;
	uint64_t fsize;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (argc < 3 || (strcmp(argv[1], "write") && strcmp(argv[1], "read"))) {
		if (rank == 0)
			fprintf(stderr,
				"usage: %s write|read rpfs:/path [blocks [blocksize]]\n",
				argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	blocks = argc > 3 ? atoi(argv[3]) : 96;
	bsize = argc > 4 ? atoi(argv[4]) : 40000; /* not a stripe multiple on purpose */
	fsize = (uint64_t)blocks * bsize;

	if (!strcmp(argv[1], "write")) {
		/* blocks rank, rank+N, rank+2N, ... */
		mine = blocks / nprocs + (rank < blocks % nprocs);
		buf = malloc((size_t)mine * bsize + 1);
		for (int b = 0; b < mine; b++) {
			uint64_t off = (uint64_t)(rank + (uint64_t)b * nprocs) * bsize;
			for (int i = 0; i < bsize; i++)
				buf[(size_t)b * bsize + i] = byte_at(off + i);
		}
		die_on(MPI_File_open(MPI_COMM_WORLD, argv[2],
				     MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
				     &fh),
		       "open for write");
		die_on(MPI_File_set_size(fh, 0), "set_size 0");
		MPI_Type_vector(blocks / nprocs + 1, bsize, bsize * nprocs, MPI_BYTE,
				&ftype);
		MPI_Type_commit(&ftype);
		die_on(MPI_File_set_view(fh, (MPI_Offset)rank * bsize, MPI_BYTE, ftype,
					 "native", MPI_INFO_NULL),
		       "set_view");
		die_on(MPI_File_write_all(fh, buf, mine * bsize, MPI_BYTE, &st),
		       "write_all");
		MPI_Get_count(&st, MPI_BYTE, &count);
		if (count != mine * bsize) {
			printf("rank %d: write_all wrote %d bytes, want %d\n", rank,
			       count, mine * bsize);
			errs++;
		}
		die_on(MPI_File_sync(fh), "sync");
		MPI_Type_free(&ftype);
		MPI_File_close(&fh);
		free(buf);
	} else {
		MPI_Offset size;
		uint64_t share = (fsize + nprocs - 1) / nprocs;
		uint64_t start = share * rank, len;

		die_on(MPI_File_open(MPI_COMM_WORLD, argv[2], MPI_MODE_RDONLY,
				     MPI_INFO_NULL, &fh),
		       "open for read");
		die_on(MPI_File_get_size(fh, &size), "get_size");
		if ((uint64_t)size != fsize) {
			printf("rank %d: size %lld, want %llu\n", rank, (long long)size,
			       (unsigned long long)fsize);
			errs++;
		}
		len = start >= fsize ? 0
				     : (start + share > fsize ? fsize - start : share);
		buf = malloc(share + 1);
		/* independent contiguous read of this rank's share */
		die_on(MPI_File_read_at(fh, (MPI_Offset)start, buf, (int)len, MPI_BYTE,
					&st),
		       "read_at");
		MPI_Get_count(&st, MPI_BYTE, &count);
		if ((uint64_t)count != len) {
			printf("rank %d: read_at got %d bytes, want %llu\n", rank, count,
			       (unsigned long long)len);
			errs++;
		}
		check(buf, start, len, "contiguous read");

		/* reading past the end returns the bytes before it */
		if (rank == nprocs - 1) {
			die_on(MPI_File_read_at(fh, (MPI_Offset)fsize - 10, buf, 100,
						MPI_BYTE, &st),
			       "read at end");
			MPI_Get_count(&st, MPI_BYTE, &count);
			if (count != 10) {
				printf("rank %d: read across the end got %d bytes, want 10\n",
				       rank, count);
				errs++;
			}
		}

		/* independent strided read: every nprocs-th block from block rank */
		mine = blocks / nprocs + (rank < blocks % nprocs);
		MPI_Type_vector(blocks / nprocs + 1, bsize, bsize * nprocs, MPI_BYTE,
				&ftype);
		MPI_Type_commit(&ftype);
		free(buf);
		buf = malloc((size_t)mine * bsize + 1);
		die_on(MPI_File_set_view(fh, (MPI_Offset)rank * bsize, MPI_BYTE, ftype,
					 "native", MPI_INFO_NULL),
		       "set_view");
		die_on(MPI_File_read(fh, buf, mine * bsize, MPI_BYTE, &st),
		       "strided read");
		for (int b = 0; b < mine; b++)
			check(buf + (size_t)b * bsize,
			      (uint64_t)(rank + (uint64_t)b * nprocs) * bsize, bsize,
			      "strided read");
		MPI_Type_free(&ftype);
		MPI_File_close(&fh);
		free(buf);
	}

	MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf(total ? " Found %d errors\n" : " No Errors\n", total);
	MPI_Finalize();
	return total != 0;
}
