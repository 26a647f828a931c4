/* mpi_io_demo: a small MPI-IO program on rpfs.
 *
 * A global ROWS x COLS matrix of doubles is split into column blocks, one
 * per process. In the file the matrix is stored row-major, so each
 * process's part is strided: ROWS pieces of COLS/N doubles. Each process
 * describes its part with a subarray file view, writes it collectively
 * (ROMIO's two-phase with stripe-aligned aggregators), reads it back
 * independently (one rpfs list-I/O call per read: every piece in one
 * request per server), and checks it.
 *
 * Build and run (after scripts/build-mpich.sh and rpfs up):
 *   $MPICH/bin/mpicc -o mpi_io_demo examples/mpi_io_demo.c
 *   $MPICH/bin/mpiexec -n 4 ./mpi_io_demo rpfs:/demo.dat
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ROWS 1024
#define COLS 1024

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "rpfs:/demo.dat";
	int rank, nprocs, sizes[2] = {ROWS, COLS}, sub[2], start[2], bad = 0, allbad;
	MPI_Datatype filetype;
	MPI_File fh;
	MPI_Info info;
	MPI_Status st;
	double *a, t_write, t_read;
	char value[MPI_MAX_INFO_VAL + 1];
	int flag, rc;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (COLS % nprocs) {
		if (rank == 0)
			fprintf(stderr, "run with a process count dividing %d\n", COLS);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}

	/* this process's column block */
	sub[0] = ROWS;
	sub[1] = COLS / nprocs;
	start[0] = 0;
	start[1] = rank * sub[1];
	MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE,
				 &filetype);
	MPI_Type_commit(&filetype);

	a = malloc(sizeof(double) * sub[0] * sub[1]);
	for (int i = 0; i < sub[0]; i++)
		for (int j = 0; j < sub[1]; j++)
			a[i * sub[1] + j] = i * COLS + start[1] + j;

	/* layout hints: 64 KiB stripes over every I/O server */
	MPI_Info_create(&info);
	MPI_Info_set(info, "striping_unit", "65536");
	rc = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, info,
			   &fh);
	MPI_Info_free(&info);
	if (rc != MPI_SUCCESS) {
		char msg[MPI_MAX_ERROR_STRING];
		int len;
		MPI_Error_string(rc, msg, &len);
		fprintf(stderr, "rank %d: open %s: %s\n", rank, name, msg);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_File_set_view(fh, 0, MPI_DOUBLE, filetype, "native", MPI_INFO_NULL);

	MPI_Barrier(MPI_COMM_WORLD);
	t_write = MPI_Wtime();
	MPI_File_write_all(fh, a, sub[0] * sub[1], MPI_DOUBLE, &st);
	MPI_File_sync(fh);
	t_write = MPI_Wtime() - t_write;

	for (int i = 0; i < sub[0] * sub[1]; i++)
		a[i] = -1;
	MPI_Barrier(MPI_COMM_WORLD);
	t_read = MPI_Wtime();
	MPI_File_read_at(fh, 0, a, sub[0] * sub[1], MPI_DOUBLE, &st);
	t_read = MPI_Wtime() - t_read;

	for (int i = 0; i < sub[0] && !bad; i++)
		for (int j = 0; j < sub[1]; j++)
			if (a[i * sub[1] + j] != (double)(i * COLS + start[1] + j)) {
				fprintf(stderr, "rank %d: element (%d,%d) is %g\n", rank,
					i, start[1] + j, a[i * sub[1] + j]);
				bad = 1;
				break;
			}
	MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

	MPI_File_get_info(fh, &info);
	MPI_Info_get(info, "striping_factor", MPI_MAX_INFO_VAL, value, &flag);
	if (rank == 0) {
		double mb = (double)ROWS * COLS * sizeof(double) / 1e6;
		printf("%s: %d processes, %.1f MB, striping_factor %s\n", name, nprocs,
		       mb, flag ? value : "?");
		printf("collective strided write + sync: %.3f s (%.1f MB/s)\n", t_write,
		       mb / t_write);
		printf("independent strided read (rank 0): %.3f s\n", t_read);
		printf(allbad ? "data check FAILED\n" : "data check ok\n");
	}
	MPI_Info_free(&info);
	MPI_File_close(&fh);
	MPI_Type_free(&filetype);
	free(a);
	MPI_Finalize();
	return allbad;
}
