/* mpi_hdf5: Debian's unmodified parallel HDF5 on rpfs.
 *
 * Built with Debian's h5pcc.mpich -shlib (or mpicc.mpich and the hdf5-mpich flags)
 * and run by the rebuilt MPICH's mpiexec with its libmpich.so.12 first on
 * LD_LIBRARY_PATH (test/mpi/run-hdf5-test.sh), so HDF5's MPI-IO driver
 * reaches rpfs through the rebuilt MPICH's ROMIO and its rpfs driver.
 *
 * The file (default rpfs:/h5/test.h5) gets two 2D datasets of doubles
 * written collectively (H5FD_MPIO_COLLECTIVE):
 *   /contig   contiguous layout, each rank writes a slab of rows
 *   /chunked  chunked layout, each rank writes a block of columns, so its
 *             part is strided inside every chunk
 * and an attribute on /contig. The file is closed and reopened read-only;
 * every rank reads its own slab and its right neighbour's collectively and
 * checks the values, the dimensions and the attribute. Rank 0 prints the MPI
 * library's version line and " No Errors"; any failure aborts with exit 1.
 *
 * Usage: mpiexec -n N mpi_hdf5 [rpfs:/h5/test.h5]
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS_PER_RANK 256 /* /contig: rows of each rank's slab */
#define NCOLS	      1024
#define CROWS	      512 /* /chunked: rows; CCOLS_PER columns per rank */
#define CCOLS_PER     200
#define ATTR_VALUE    424242

static int rank, nprocs;

static void fail(const char *what, int line)
{
	fprintf(stderr, "mpi_hdf5: rank %d: %s failed (line %d)\n", rank, what, line);
	H5Eprint2(H5E_DEFAULT, stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

/* HDF5 calls return a negative value on failure; hid_t holds every result
 * type (herr_t, htri_t, hid_t) */
static hid_t try_(hid_t r, const char *what, int line)
{
	if (r < 0)
		fail(what, line);
	return r;
}
#define TRY(call) try_((hid_t)(call), #call, __LINE__)

static double value_contig(hsize_t row, hsize_t col)
{
	return (double)row * NCOLS + (double)col + 0.25;
}

static double value_chunked(hsize_t row, hsize_t col)
{
	return -((double)col * CROWS + (double)row) - 0.5;
}

static hid_t open_fapl(void)
{
	hid_t fapl = TRY(H5Pcreate(H5P_FILE_ACCESS));

	TRY(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
	if (H5Pget_driver(fapl) != H5FD_MPIO)
		fail("the MPI-IO file driver", __LINE__);
	return fapl;
}

static hid_t collective_dxpl(void)
{
	hid_t dxpl = TRY(H5Pcreate(H5P_DATASET_XFER));

	TRY(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE));
	return dxpl;
}

/* The part of dataset d (0 contig, 1 chunked) owned by rank r. */
static void part(int d, int r, hsize_t start[2], hsize_t count[2])
{
	if (d == 0) {
		start[0] = (hsize_t)r * ROWS_PER_RANK;
		start[1] = 0;
		count[0] = ROWS_PER_RANK;
		count[1] = NCOLS;
	} else {
		start[0] = 0;
		start[1] = (hsize_t)r * CCOLS_PER;
		count[0] = CROWS;
		count[1] = CCOLS_PER;
	}
}

static void fill(int d, int r, double *buf)
{
	hsize_t start[2], count[2];

	part(d, r, start, count);
	for (hsize_t i = 0; i < count[0]; i++)
		for (hsize_t j = 0; j < count[1]; j++)
			buf[i * count[1] + j] =
				d == 0 ? value_contig(start[0] + i, start[1] + j)
				       : value_chunked(start[0] + i, start[1] + j);
}

/* Collective write or read of rank r's part of dataset dset. */
static void xfer(hid_t dset, int d, int r, double *buf, int write)
{
	hsize_t start[2], count[2];
	hid_t fspace, mspace, dxpl = collective_dxpl();
	H5D_mpio_actual_io_mode_t mode;

	part(d, r, start, count);
	fspace = TRY(H5Dget_space(dset));
	TRY(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL));
	mspace = TRY(H5Screate_simple(2, count, NULL));
	if (write)
		TRY(H5Dwrite(dset, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf));
	else
		TRY(H5Dread(dset, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf));
	/* HDF5 may quietly fall back to independent I/O: it must not here */
	TRY(H5Pget_mpio_actual_io_mode(dxpl, &mode));
	if (mode == H5D_MPIO_NO_COLLECTIVE)
		fail("collective I/O (HDF5 fell back to independent)", __LINE__);
	H5Sclose(mspace);
	H5Sclose(fspace);
	H5Pclose(dxpl);
}

static long check(int d, int r, const double *buf, const char *what)
{
	hsize_t start[2], count[2];
	long bad = 0;

	part(d, r, start, count);
	for (hsize_t i = 0; i < count[0]; i++)
		for (hsize_t j = 0; j < count[1]; j++) {
			double want = d == 0 ? value_contig(start[0] + i, start[1] + j)
					     : value_chunked(start[0] + i, start[1] + j);
			double got = buf[i * count[1] + j];

			if (got == want)
				continue;
			if (!bad)
				fprintf(stderr,
					"mpi_hdf5: rank %d: %s (%llu,%llu) is %g, expected %g\n",
					rank, what, (unsigned long long)(start[0] + i),
					(unsigned long long)(start[1] + j), got, want);
			bad++;
		}
	return bad;
}

static void write_file(const char *name, double *buf)
{
	hsize_t dims0[2] = {(hsize_t)nprocs * ROWS_PER_RANK, NCOLS};
	hsize_t dims1[2] = {CROWS, (hsize_t)nprocs * CCOLS_PER};
	hsize_t chunk[2] = {64, 150}; /* chunks straddle the ranks' columns */
	hid_t fapl = open_fapl(), file, space, dcpl, d0, d1, aspace, attr;
	int av = ATTR_VALUE;

	file = TRY(H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
	H5Pclose(fapl);

	space = TRY(H5Screate_simple(2, dims0, NULL));
	d0 = TRY(H5Dcreate2(file, "contig", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT,
			    H5P_DEFAULT, H5P_DEFAULT));
	H5Sclose(space);
	aspace = TRY(H5Screate(H5S_SCALAR));
	attr = TRY(H5Acreate2(d0, "answer", H5T_NATIVE_INT, aspace, H5P_DEFAULT,
			      H5P_DEFAULT));
	TRY(H5Awrite(attr, H5T_NATIVE_INT, &av));
	H5Aclose(attr);
	H5Sclose(aspace);

	dcpl = TRY(H5Pcreate(H5P_DATASET_CREATE));
	TRY(H5Pset_chunk(dcpl, 2, chunk));
	space = TRY(H5Screate_simple(2, dims1, NULL));
	d1 = TRY(H5Dcreate2(file, "chunked", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl,
			    H5P_DEFAULT));
	H5Sclose(space);
	H5Pclose(dcpl);

	fill(0, rank, buf);
	xfer(d0, 0, rank, buf, 1);
	fill(1, rank, buf);
	xfer(d1, 1, rank, buf, 1);

	TRY(H5Dclose(d0));
	TRY(H5Dclose(d1));
	TRY(H5Fclose(file));
}

static long read_file(const char *name, double *buf)
{
	hid_t fapl = open_fapl(), file, dset, space, attr;
	const char *names[2] = {"contig", "chunked"};
	hsize_t want[2][2] = {{(hsize_t)nprocs * ROWS_PER_RANK, NCOLS},
			      {CROWS, (hsize_t)nprocs * CCOLS_PER}};
	int right = (rank + 1) % nprocs, av = 0;
	long bad = 0;

	file = TRY(H5Fopen(name, H5F_ACC_RDONLY, fapl));
	H5Pclose(fapl);
	for (int d = 0; d < 2; d++) {
		hsize_t dims[2];
		char what[64];

		dset = TRY(H5Dopen2(file, names[d], H5P_DEFAULT));
		space = TRY(H5Dget_space(dset));
		if (H5Sget_simple_extent_ndims(space) != 2)
			fail("2 dimensions", __LINE__);
		TRY(H5Sget_simple_extent_dims(space, dims, NULL));
		if (dims[0] != want[d][0] || dims[1] != want[d][1]) {
			fprintf(stderr, "mpi_hdf5: rank %d: /%s is %llux%llu\n", rank,
				names[d], (unsigned long long)dims[0],
				(unsigned long long)dims[1]);
			bad++;
		}
		H5Sclose(space);

		memset(buf, 0, sizeof(double) * ROWS_PER_RANK * NCOLS);
		xfer(dset, d, rank, buf, 0);
		snprintf(what, sizeof(what), "/%s own part", names[d]);
		bad += check(d, rank, buf, what);
		memset(buf, 0, sizeof(double) * ROWS_PER_RANK * NCOLS);
		xfer(dset, d, right, buf, 0);
		snprintf(what, sizeof(what), "/%s rank %d's part", names[d], right);
		bad += check(d, right, buf, what);

		if (d == 0) {
			attr = TRY(H5Aopen(dset, "answer", H5P_DEFAULT));
			TRY(H5Aread(attr, H5T_NATIVE_INT, &av));
			H5Aclose(attr);
			if (av != ATTR_VALUE) {
				fprintf(stderr, "mpi_hdf5: rank %d: attribute is %d\n",
					rank, av);
				bad++;
			}
		}
		TRY(H5Dclose(dset));
	}
	TRY(H5Fclose(file));
	return bad;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "rpfs:/h5/test.h5";
	char version[MPI_MAX_LIBRARY_VERSION_STRING], *dev;
	unsigned maj, min, rel;
	long bad, allbad;
	double *buf;
	int len;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	/* the larger of the two parts: ROWS_PER_RANK*NCOLS vs CROWS*CCOLS_PER */
	buf = malloc(sizeof(double) * ROWS_PER_RANK * NCOLS);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (rank == 0) {
		MPI_Get_library_version(version, &len);
		H5get_libversion(&maj, &min, &rel);
		/* MPICH: "MPICH Version: ..." first, the device further on */
		dev = strstr(version, "Device:");
		printf("MPI: %.*s, %.*s\n", (int)strcspn(version, "\n"), version,
		       dev ? (int)strcspn(dev, "\n") : 14, dev ? dev : "Device unknown");
		printf("HDF5 %u.%u.%u, %d processes, file %s\n", maj, min, rel, nprocs,
		       name);
		fflush(stdout);
	}

	write_file(name, buf);
	MPI_Barrier(MPI_COMM_WORLD);
	bad = read_file(name, buf);

	MPI_Allreduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		if (allbad)
			printf("%ld errors\n", allbad);
		else
			printf(" No Errors\n");
	}
	free(buf);
	MPI_Finalize();
	return allbad != 0;
}
