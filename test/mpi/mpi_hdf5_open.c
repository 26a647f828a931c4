/* mpi_hdf5_open: an HDF5 file a program leaves open at MPI_Finalize is
 * complete afterwards.
 *
 * HDF5 closes such files itself, from a delete callback it attached to
 * MPI_COMM_SELF when the library started (before the program's first
 * open): it flushes its metadata (the dataset's header, the attribute, the
 * superblock's end of file) and closes the MPI file then, after the MPI-IO
 * layer's own callbacks have run.
 *
 * Usage: mpiexec -n N mpi_hdf5_open write|check FILE
 *   write  create FILE with the MPI-IO driver, a dataset of N x ROWS x COLS
 *          doubles (each rank writes its rows collectively) and an
 *          attribute; close nothing; MPI_Finalize. Prints " No Errors" once
 *          MPI_Finalize has returned.
 *   check  reopen FILE (same N), read every rank's rows and the attribute,
 *          check them; prints " No Errors" when right.
 * Built like mpi_hdf5.c (h5pcc.mpich -shlib, h5pcc.openmpi -shlib). */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS	   128 /* rows of each rank */
#define COLS	   512
#define ATTR_VALUE 271828

static int rank, nprocs;

static void fail(const char *what, int line)
{
	fprintf(stderr, "mpi_hdf5_open: rank %d: %s failed (line %d)\n", rank, what,
		line);
	H5Eprint2(H5E_DEFAULT, stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static hid_t try_(hid_t r, const char *what, int line)
{
	if (r < 0)
		fail(what, line);
	return r;
}
#define TRY(call) try_((hid_t)(call), #call, __LINE__)

static double value(hsize_t row, hsize_t col)
{
	return (double)row * COLS + (double)col + 0.5;
}

static hid_t mpio_fapl(void)
{
	hid_t fapl = TRY(H5Pcreate(H5P_FILE_ACCESS));

	TRY(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
	return fapl;
}

/* Collective transfer of this rank's rows of dset. */
static void rows(hid_t dset, double *buf, int write)
{
	hsize_t start[2] = {(hsize_t)rank * ROWS, 0}, count[2] = {ROWS, COLS};
	hid_t fspace = TRY(H5Dget_space(dset)), mspace, dxpl;

	TRY(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL));
	mspace = TRY(H5Screate_simple(2, count, NULL));
	dxpl = TRY(H5Pcreate(H5P_DATASET_XFER));
	TRY(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE));
	if (write)
		TRY(H5Dwrite(dset, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf));
	else
		TRY(H5Dread(dset, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf));
	H5Pclose(dxpl);
	H5Sclose(mspace);
	H5Sclose(fspace);
}

/* Everything is left open: HDF5 closes it during MPI_Finalize. */
static void write_and_leave_open(const char *name, double *buf)
{
	hsize_t dims[2] = {(hsize_t)nprocs * ROWS, COLS};
	hid_t fapl = mpio_fapl(), file, space, dset, aspace, attr;
	int av = ATTR_VALUE;

	file = TRY(H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
	space = TRY(H5Screate_simple(2, dims, NULL));
	dset = TRY(H5Dcreate2(file, "data", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT,
			      H5P_DEFAULT, H5P_DEFAULT));
	aspace = TRY(H5Screate(H5S_SCALAR));
	attr = TRY(H5Acreate2(dset, "answer", H5T_NATIVE_INT, aspace, H5P_DEFAULT,
			      H5P_DEFAULT));
	TRY(H5Awrite(attr, H5T_NATIVE_INT, &av));
	for (hsize_t i = 0; i < ROWS; i++)
		for (hsize_t j = 0; j < COLS; j++)
			buf[i * COLS + j] = value((hsize_t)rank * ROWS + i, j);
	rows(dset, buf, 1);
}

static long check(const char *name, double *buf)
{
	hid_t fapl = mpio_fapl(), file, dset, space, attr;
	hsize_t dims[2] = {0, 0};
	long bad = 0;
	int av = 0;

	file = TRY(H5Fopen(name, H5F_ACC_RDONLY, fapl));
	H5Pclose(fapl);
	dset = TRY(H5Dopen2(file, "data", H5P_DEFAULT));
	space = TRY(H5Dget_space(dset));
	TRY(H5Sget_simple_extent_dims(space, dims, NULL));
	H5Sclose(space);
	if (dims[0] != (hsize_t)nprocs * ROWS || dims[1] != COLS) {
		fprintf(stderr, "rank %d: dims %llux%llu, want %llux%d\n", rank,
			(unsigned long long)dims[0], (unsigned long long)dims[1],
			(unsigned long long)nprocs * ROWS, COLS);
		bad++;
	}
	attr = TRY(H5Aopen(dset, "answer", H5P_DEFAULT));
	TRY(H5Aread(attr, H5T_NATIVE_INT, &av));
	H5Aclose(attr);
	if (av != ATTR_VALUE) {
		fprintf(stderr, "rank %d: attribute %d, want %d\n", rank, av, ATTR_VALUE);
		bad++;
	}
	if (!bad) {
		rows(dset, buf, 0);
		for (hsize_t i = 0; i < ROWS * COLS; i++) {
			double want = value((hsize_t)rank * ROWS + i / COLS, i % COLS);

			if (buf[i] != want) {
				if (!bad)
					fprintf(stderr,
						"rank %d: element %llu is %g, want %g\n",
						rank, (unsigned long long)i, buf[i],
						want);
				bad++;
			}
		}
	}
	TRY(H5Dclose(dset));
	TRY(H5Fclose(file));
	return bad;
}

int main(int argc, char **argv)
{
	double *buf;
	long bad = 0, all = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (argc < 3 || (strcmp(argv[1], "write") && strcmp(argv[1], "check"))) {
		if (rank == 0)
			fprintf(stderr, "usage: %s write|check FILE\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = malloc(sizeof(double) * ROWS * COLS);
	if (strcmp(argv[1], "write") == 0) {
		write_and_leave_open(argv[2], buf);
	} else {
		bad = check(argv[2], buf);
		MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	}
	MPI_Finalize();
	free(buf);
	if (rank == 0 && all == 0)
		printf(" No Errors\n");
	return all != 0;
}
