/* mpi_finalize_open: a file left open at MPI_Finalize loses no data, in
 * whatever order MPI runs the delete callbacks on MPI_COMM_SELF.
 *
 * Libraries close the files a program left open from such a callback:
 * HDF5 attaches one when it starts, before the program's first open, so
 * MPI (which runs them in reverse order of attachment) runs it after the
 * callbacks the MPI-IO layer attached at the first open. MPI still works
 * inside the callbacks: collective I/O and MPI_File_close are allowed.
 *
 * Usage: mpiexec -n N mpi_finalize_open MODE FILE
 *   before   attach a callback before the first open; open FILE, write the
 *            first half of each rank's block; MPI_Finalize: the callback
 *            writes the second half (independently and collectively) and
 *            closes the file
 *   after    the same with the callback attached after the open (it runs
 *            before the MPI-IO layer's own)
 *   unclosed open FILE, write each rank's whole block, MPI_Finalize
 *            without closing it (nothing closes it)
 *   check    reopen FILE and check every rank's block (run with the same N)
 * Each mode prints " No Errors" once MPI_Finalize has returned (and, for
 * check, the data is right); a crash in MPI_Finalize prints nothing. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK (256 * 1024) /* bytes of each rank's block */
#define HALF  (BLOCK / 2)

static int rank, nprocs;
static MPI_File file = MPI_FILE_NULL;
static char data[BLOCK];

/* The byte at offset off of the file: a function of the offset only. */
static char byte_at(MPI_Offset off)
{
	return (char)((off * 7 + off / 4093) & 0xff);
}

static void fill(char *buf, MPI_Offset off, int len)
{
	for (int i = 0; i < len; i++)
		buf[i] = byte_at(off + i);
}

static void die(const char *what, int rc)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;

	MPI_Error_string(rc, msg, &len);
	printf("rank %d: %s: %s\n", rank, what, msg);
	fflush(stdout);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The second half of this rank's block: the first quarter of the block
 * independently, the rest collectively, then the close, as a library
 * closing its files at MPI_Finalize does. */
static int finish_file(MPI_Comm comm, int keyval, void *attr, void *extra)
{
	MPI_Offset base = (MPI_Offset)rank * BLOCK;
	MPI_Status st;
	int rc;

	rc = MPI_File_write_at(file, base + HALF, data + HALF, HALF / 2, MPI_BYTE, &st);
	if (rc != MPI_SUCCESS)
		die("write_at in the delete callback", rc);
	rc = MPI_File_write_at_all(file, base + HALF + HALF / 2, data + HALF + HALF / 2,
				   HALF / 2, MPI_BYTE, &st);
	if (rc != MPI_SUCCESS)
		die("write_at_all in the delete callback", rc);
	rc = MPI_File_close(&file);
	if (rc != MPI_SUCCESS)
		die("close in the delete callback", rc);
	return MPI_SUCCESS;
}

static void attach_callback(void)
{
	int keyval;

	MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finish_file, &keyval, NULL);
	MPI_Comm_set_attr(MPI_COMM_SELF, keyval, NULL);
}

static void open_and_write(const char *name, int len)
{
	MPI_Status st;
	int rc;

	rc = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY,
			   MPI_INFO_NULL, &file);
	if (rc != MPI_SUCCESS)
		die("open", rc);
	rc = MPI_File_write_at(file, (MPI_Offset)rank * BLOCK, data, len, MPI_BYTE, &st);
	if (rc != MPI_SUCCESS)
		die("write_at", rc);
}

static int check(const char *name)
{
	char *got = malloc(BLOCK);
	MPI_Offset size;
	MPI_Status st;
	int rc, count, errs = 0;

	rc = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &file);
	if (rc != MPI_SUCCESS)
		die("reopen", rc);
	MPI_File_get_size(file, &size);
	if (size != (MPI_Offset)nprocs * BLOCK) {
		printf("rank %d: size %lld, want %lld\n", rank, (long long)size,
		       (long long)nprocs * BLOCK);
		errs++;
	}
	rc = MPI_File_read_at(file, (MPI_Offset)rank * BLOCK, got, BLOCK, MPI_BYTE, &st);
	if (rc != MPI_SUCCESS)
		die("read_at", rc);
	MPI_Get_count(&st, MPI_BYTE, &count);
	for (int i = 0; i < BLOCK && count == BLOCK; i++) {
		if (got[i] != data[i]) {
			printf("rank %d: byte %lld is %d, want %d\n", rank,
			       (long long)rank * BLOCK + i, got[i], data[i]);
			errs++;
			break;
		}
	}
	if (count != BLOCK) {
		printf("rank %d: read %d bytes of my block, want %d\n", rank, count,
		       BLOCK);
		errs++;
	}
	MPI_File_close(&file);
	free(got);
	return errs;
}

int main(int argc, char **argv)
{
	int errs = 0, all = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (argc < 3) {
		if (rank == 0)
			fprintf(stderr, "usage: %s before|after|unclosed|check FILE\n",
				argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	fill(data, (MPI_Offset)rank * BLOCK, BLOCK);

	if (strcmp(argv[1], "before") == 0) {
		attach_callback();
		open_and_write(argv[2], HALF);
	} else if (strcmp(argv[1], "after") == 0) {
		open_and_write(argv[2], HALF);
		attach_callback();
	} else if (strcmp(argv[1], "unclosed") == 0) {
		open_and_write(argv[2], BLOCK);
	} else if (strcmp(argv[1], "check") == 0) {
		errs = check(argv[2]);
		MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	} else {
		if (rank == 0)
			fprintf(stderr, "unknown mode %s\n", argv[1]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Finalize();
	if (rank == 0 && all == 0)
		printf(" No Errors\n");
	return all != 0;
}
