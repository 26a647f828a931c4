/* mpi_hints: layout hints are applied at create and reported back by
 * MPI_File_get_info, on every rank, and again when the file is reopened
 * without hints; ROMIO's own hints still pass through. Transport hints
 * rpfs_<key> reach librpfs (rpfs_init_opts) at the process's first open: a
 * bad one fails that open on every rank with a message naming the key.
 *
 * Usage: mpiexec -n N mpi_hints rpfs:/dir/file [striping_factor]
 * (striping_factor defaults to 2: the server set needs that many I/O
 * servers). Prints " No Errors" on success. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, errs;

static void check_hint(MPI_File fh, const char *key, const char *want, const char *when)
{
	MPI_Info info;
	char value[MPI_MAX_INFO_VAL + 1];
	int flag;

	MPI_File_get_info(fh, &info);
	MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag);
	if (!flag) {
		printf("rank %d: %s: hint %s missing, want %s\n", rank, when, key, want);
		errs++;
	} else if (strcmp(value, want) != 0) {
		printf("rank %d: %s: hint %s = %s, want %s\n", rank, when, key, value,
		       want);
		errs++;
	}
	MPI_Info_free(&info);
}

int main(int argc, char **argv)
{
	MPI_File fh;
	MPI_Info info;
	const char *factor = argc > 2 ? argv[2] : "2";
	int rc, total;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (argc < 2) {
		if (rank == 0)
			fprintf(stderr, "usage: %s rpfs:/path [striping_factor]\n",
				argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	/* First, before anything makes the process's rpfs client: the
	 * transport hints of this open are its options. */
	MPI_Info_create(&info);
	MPI_Info_set(info, "rpfs_timeout_ms", "soon");
	rc = MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, info,
			   &fh);
	MPI_Info_free(&info);
	if (rc == MPI_SUCCESS) {
		printf("rank %d: open with rpfs_timeout_ms = soon succeeded\n", rank);
		errs++;
		MPI_File_close(&fh);
	} else {
		char msg[MPI_MAX_ERROR_STRING];
		int len;

		MPI_Error_string(rc, msg, &len);
		if (!strstr(msg, "timeout_ms")) {
			printf("rank %d: bad hint: message names no key: %s\n", rank,
			       msg);
			errs++;
		}
	}

	if (rank == 0)
		MPI_File_delete(argv[1], MPI_INFO_NULL);
	MPI_Barrier(MPI_COMM_WORLD);

	MPI_Info_create(&info);
	MPI_Info_set(info, "striping_factor", (char *)factor);
	MPI_Info_set(info, "striping_unit", "65536");
	MPI_Info_set(info, "start_iodevice", "1");
	MPI_Info_set(info, "cb_buffer_size", "1048576");
	MPI_Info_set(info, "rpfs_fast_max", "65536"); /* accepted */
	rc = MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, info,
			   &fh);
	MPI_Info_free(&info);
	if (rc != MPI_SUCCESS) {
		char msg[MPI_MAX_ERROR_STRING];
		int len;
		MPI_Error_string(rc, msg, &len);
		printf("rank %d: create failed: %s\n", rank, msg);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	check_hint(fh, "striping_factor", factor, "after create");
	check_hint(fh, "striping_unit", "65536", "after create");
	check_hint(fh, "start_iodevice", "1", "after create");
	check_hint(fh, "cb_buffer_size", "1048576", "after create");
	check_hint(fh, "romio_filesystem_type",
		   "RPFS: the rpfs RDMA parallel file service", "after create");

	/* a hint after open does not change the layout */
	MPI_Info_create(&info);
	MPI_Info_set(info, "striping_unit", "4096");
	MPI_File_set_info(fh, info);
	MPI_Info_free(&info);
	check_hint(fh, "striping_unit", "65536", "after set_info");
	MPI_File_close(&fh);

	/* reopen without hints: the file's layout is reported */
	rc = MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
	if (rc != MPI_SUCCESS) {
		printf("rank %d: reopen failed\n", rank);
		errs++;
	} else {
		check_hint(fh, "striping_factor", factor, "after reopen");
		check_hint(fh, "striping_unit", "65536", "after reopen");
		check_hint(fh, "start_iodevice", "1", "after reopen");
		MPI_File_close(&fh);
	}

	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		MPI_File_delete(argv[1], MPI_INFO_NULL);
	MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf(total ? " Found %d errors\n" : " No Errors\n", total);
	MPI_Finalize();
	return total != 0;
}
