/* mpi_fstype_force: ROMIO_FSTYPE_FORCE=rpfs: sends names without a prefix
 * to rpfs, relative names and absolute names whose directory exists only
 * on rpfs alike.
 *
 * Usage: ROMIO_FSTYPE_FORCE=rpfs: [RPFS_CWD=/dir] \
 *        mpiexec -n N mpi_fstype_force RELATIVE ABSOLUTE DELETE
 *   RELATIVE  a relative name: the driver takes it relative to RPFS_CWD
 *             (or the rpfs root)
 *   ABSOLUTE  an absolute name whose parent directory does not exist on
 *             this host (ROMIO used to statfs it and fail)
 *   DELETE    a relative name of an existing file, removed with
 *             MPI_File_delete
 * Each file is written collectively (interleaved blocks of every rank, not
 * stripe aligned), read back by every rank and checked; the relative one
 * also gets one record per rank appended with MPI_File_write_ordered (the
 * shared file pointer's hidden file is named after the relative name).
 * The runner (run-mpi-tests.sh) checks that the files are on rpfs where
 * they should be and that nothing appeared locally. Prints " No Errors". */
#include <errno.h>
#include <libgen.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BLOCK  100000 /* bytes of one block: not a stripe multiple */
#define BLOCKS 3      /* blocks per rank */
#define RECORD 16     /* bytes of one rank's record in write_ordered */

static int rank, nprocs, errs;

static unsigned char byte_at(uint64_t i)
{
	return (unsigned char)((i * 2654435761u) >> 11) ^ (unsigned char)(i >> 17);
}

static void die_on(int rc, const char *what, const char *name)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len;

	if (rc == MPI_SUCCESS)
		return;
	MPI_Error_string(rc, msg, &len);
	fprintf(stderr, "rank %d: %s %s: %s\n", rank, what, name, msg);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static void check(const unsigned char *buf, uint64_t off, uint64_t len, const char *name)
{
	for (uint64_t i = 0; i < len; i++)
		if (buf[i] != byte_at(off + i)) {
			printf("rank %d: %s: byte %llu is %u, want %u\n", rank, name,
			       (unsigned long long)(off + i), buf[i], byte_at(off + i));
			errs++;
			return;
		}
}

/* Write blocks rank, rank+N, ... collectively, then read the whole file on
 * every rank and check it. Returns the file size, leaves fh open. */
static MPI_Offset write_and_check(const char *name, MPI_File *fh)
{
	MPI_Offset total = (MPI_Offset)nprocs * BLOCKS * BLOCK, size;
	unsigned char *buf = malloc(BLOCK), *all = malloc((size_t)total);
	MPI_Status st;

	die_on(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR,
			     MPI_INFO_NULL, fh),
	       "open", name);
	for (int b = 0; b < BLOCKS; b++) {
		MPI_Offset off = ((MPI_Offset)b * nprocs + rank) * BLOCK;

		for (int i = 0; i < BLOCK; i++)
			buf[i] = byte_at((uint64_t)off + i);
		die_on(MPI_File_write_at_all(*fh, off, buf, BLOCK, MPI_BYTE, &st),
		       "write_at_all", name);
	}
	die_on(MPI_File_sync(*fh), "sync", name);
	MPI_Barrier(MPI_COMM_WORLD);
	die_on(MPI_File_sync(*fh), "sync", name);
	die_on(MPI_File_get_size(*fh, &size), "get_size", name);
	if (size != total) {
		printf("rank %d: %s: size %lld, want %lld\n", rank, name, (long long)size,
		       (long long)total);
		errs++;
	}
	die_on(MPI_File_read_at(*fh, 0, all, (int)total, MPI_BYTE, &st), "read_at", name);
	check(all, 0, (uint64_t)total, name);
	free(all);
	free(buf);
	return total;
}

/* One record per rank, in rank order, after the data, through the shared
 * file pointer; then every rank checks them all. */
static void append_ordered(const char *name, MPI_File fh, MPI_Offset end)
{
	char rec[RECORD + 1], *all = malloc((size_t)nprocs * RECORD);
	MPI_Status st;

	die_on(MPI_File_seek_shared(fh, end, MPI_SEEK_SET), "seek_shared", name);
	snprintf(rec, sizeof(rec), "rank %010d\n", rank);
	die_on(MPI_File_write_ordered(fh, rec, RECORD, MPI_BYTE, &st), "write_ordered",
	       name);
	MPI_Barrier(MPI_COMM_WORLD);
	die_on(MPI_File_sync(fh), "sync", name);
	die_on(MPI_File_read_at(fh, end, all, nprocs * RECORD, MPI_BYTE, &st), "read_at",
	       name);
	for (int r = 0; r < nprocs; r++) {
		snprintf(rec, sizeof(rec), "rank %010d\n", r);
		if (memcmp(all + (size_t)r * RECORD, rec, RECORD)) {
			printf("rank %d: %s: record %d is not rank %d's\n", rank, name, r,
			       r);
			errs++;
		}
	}
	free(all);
}

/* The absolute name's directory must not exist here, else the test would
 * not show that ROMIO no longer looks at it. */
static void check_no_local_dir(const char *name)
{
	char *copy = strdup(name);
	struct stat sb;

	if (stat(dirname(copy), &sb) == 0 || errno != ENOENT) {
		printf("rank %d: the directory of %s exists on this host: the test proves nothing\n",
		       rank, name);
		errs++;
	}
	free(copy);
}

int main(int argc, char **argv)
{
	const char *force = getenv("ROMIO_FSTYPE_FORCE");
	MPI_Offset end;
	MPI_File fh;
	int total;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (argc != 4 || argv[1][0] == '/' || argv[2][0] != '/' || argv[3][0] == '/' ||
	    strchr(argv[1], ':') || strchr(argv[2], ':') || strchr(argv[3], ':')) {
		if (rank == 0)
			fprintf(stderr,
				"usage: %s RELATIVE /ABSOLUTE RELATIVE-TO-DELETE\n",
				argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (force == NULL || strcmp(force, "rpfs:") != 0) {
		if (rank == 0)
			fprintf(stderr, "run with ROMIO_FSTYPE_FORCE=rpfs:\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}

	end = write_and_check(argv[1], &fh);
	append_ordered(argv[1], fh, end);
	die_on(MPI_File_close(&fh), "close", argv[1]);

	check_no_local_dir(argv[2]);
	write_and_check(argv[2], &fh);
	die_on(MPI_File_close(&fh), "close", argv[2]);

	if (rank == 0)
		die_on(MPI_File_delete(argv[3], MPI_INFO_NULL), "delete", argv[3]);

	MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0 && total == 0)
		printf(" No Errors\n");
	MPI_Finalize();
	return total != 0;
}
