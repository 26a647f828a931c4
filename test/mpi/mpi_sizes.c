/* mpi_sizes: size changes are seen by every rank, and nonblocking I/O
 * completes with the right counts.
 *
 * Usage: mpiexec -n N mpi_sizes rpfs:/dir/file
 * - MPI_File_preallocate (done by one rank in ROMIO) sets the size that
 *   every rank's MPI_File_get_size returns, and never shrinks a file;
 * - MPI_File_set_size (one truncate, broadcast) is seen by every rank;
 * - MPI_MODE_APPEND puts every rank's individual pointer at the end;
 * - MPI_File_iwrite_at / MPI_File_iread_at (generalized requests over
 *   librpfs' nonblocking calls) move the data, report the counts, and a
 *   nonblocking read across the end of file counts only the bytes before it.
 * Prints " No Errors" on success. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nprocs, errs;

#define CHECK_SIZE(fh, want, when)                                                       \
	do {                                                                             \
		MPI_Offset sz_;                                                          \
		MPI_File_get_size(fh, &sz_);                                             \
		if (sz_ != (MPI_Offset)(want)) {                                         \
			printf("rank %d: %s: size %lld, want %lld\n", rank, when,        \
			       (long long)sz_, (long long)(want));                       \
			errs++;                                                          \
		}                                                                        \
	} while (0)

int main(int argc, char **argv)
{
	MPI_File fh;
	MPI_Offset pos;
	MPI_Request req[2];
	MPI_Status st[2];
	char out[3000], in[3000];
	int rc, count, total;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (argc < 2) {
		if (rank == 0)
			fprintf(stderr, "usage: %s rpfs:/path\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (rank == 0)
		MPI_File_delete(argv[1], MPI_INFO_NULL);
	MPI_Barrier(MPI_COMM_WORLD);

	rc = MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR,
			   MPI_INFO_NULL, &fh);
	if (rc != MPI_SUCCESS) {
		printf("rank %d: create failed\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	CHECK_SIZE(fh, 0, "new file");
	MPI_File_preallocate(fh, 1 << 20);
	CHECK_SIZE(fh, 1 << 20, "after preallocate");
	MPI_File_set_size(fh, 4096);
	CHECK_SIZE(fh, 4096, "after set_size");
	MPI_File_preallocate(fh, 100);
	CHECK_SIZE(fh, 4096, "after a smaller preallocate");
	MPI_File_close(&fh);

	rc = MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_APPEND | MPI_MODE_RDWR,
			   MPI_INFO_NULL, &fh);
	if (rc != MPI_SUCCESS) {
		printf("rank %d: append open failed\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_File_get_position(fh, &pos);
	if (pos != 4096) {
		printf("rank %d: append position %lld, want 4096\n", rank,
		       (long long)pos);
		errs++;
	}
	MPI_File_close(&fh);

	/* nonblocking: each rank writes 3000 bytes at 4096 + rank*3000 */
	rc = MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
	for (int i = 0; i < (int)sizeof(out); i++)
		out[i] = (char)(rank * 7 + i);
	MPI_File_iwrite_at(fh, 4096 + (MPI_Offset)rank * 3000, out, 3000, MPI_BYTE,
			   &req[0]);
	MPI_Wait(&req[0], &st[0]);
	MPI_Get_count(&st[0], MPI_BYTE, &count);
	if (count != 3000) {
		printf("rank %d: iwrite_at count %d, want 3000\n", rank, count);
		errs++;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	CHECK_SIZE(fh, 4096 + nprocs * 3000, "after the nonblocking writes");

	memset(in, 0, sizeof(in));
	MPI_File_iread_at(fh, 4096 + (MPI_Offset)rank * 3000, in, 3000, MPI_BYTE,
			  &req[0]);
	/* across the end: only 1000 bytes exist there */
	static char tail[3000];
	MPI_File_iread_at(fh, 4096 + (MPI_Offset)nprocs * 3000 - 1000, tail, 3000,
			  MPI_BYTE, &req[1]);
	MPI_Waitall(2, req, st);
	MPI_Get_count(&st[0], MPI_BYTE, &count);
	if (count != 3000 || memcmp(in, out, 3000) != 0) {
		printf("rank %d: iread_at count %d or data differ\n", rank, count);
		errs++;
	}
	MPI_Get_count(&st[1], MPI_BYTE, &count);
	if (count != 1000) {
		printf("rank %d: iread_at across the end counted %d bytes, want 1000\n",
		       rank, count);
		errs++;
	}
	MPI_File_close(&fh);

	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		MPI_File_delete(argv[1], MPI_INFO_NULL);
	MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf(total ? " Found %d errors\n" : " No Errors\n", total);
	MPI_Finalize();
	return total != 0;
}
