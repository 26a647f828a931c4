/* ompi_delete_on_close: under Open MPI, MPI_MODE_DELETE_ON_CLOSE removes
 * the file from rpfs, and MPI_File_close returns MPI_SUCCESS on every rank
 * (OMPIO deletes on every rank after the close; the file must be removed
 * once, not once per rank with all but one failing).
 *
 * Usage: mpirun -n N ompi_delete_on_close rpfs:/dir/file
 * The runner places a marker at the file beforehand and checks that it is
 * gone afterwards. Prints " No Errors" on success. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int rank, rc, errs = 0, total, data = 42;
	char msg[MPI_MAX_ERROR_STRING];
	MPI_Status st;
	MPI_File fh;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (argc < 2) {
		if (rank == 0)
			fprintf(stderr, "usage: %s rpfs:/path\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	rc = MPI_File_open(MPI_COMM_WORLD, argv[1],
			   MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
			   MPI_INFO_NULL, &fh);
	if (rc != MPI_SUCCESS) {
		printf("rank %d: open failed\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_File_write_at(fh, rank * (MPI_Offset)sizeof(int), &data, 1, MPI_INT, &st);
	rc = MPI_File_close(&fh);
	if (rc != MPI_SUCCESS) {
		int len;
		MPI_Error_string(rc, msg, &len);
		printf("rank %d: close with delete-on-close failed: %s\n", rank, msg);
		errs++;
	}
	rc = MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
	if (rc == MPI_SUCCESS) {
		printf("rank %d: the file is still there after close\n", rank);
		MPI_File_close(&fh);
		errs++;
	}
	MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf(total ? " Found %d errors\n" : " No Errors\n", total);
	MPI_Finalize();
	return total != 0;
}
