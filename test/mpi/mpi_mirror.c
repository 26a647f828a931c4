/* mpi_mirror: a mirrored file (hint rpfs_redundancy=mirror:2) written by
 * every rank and read back, then read again by a second run with one of
 * its servers killed.
 *
 * Usage: mpiexec -n N mpi_mirror write|read rpfs:/dir/file [share] [pause=FILE]
 *                                [red=SPEC]
 *   red=SPEC  the redundancy the write asks for (default mirror:2; e.g.
 *          ec:2+1, where the servers' ec_preview allows it: the caller
 *          then checks the parity with rpfs verify)
 *   write  creates the file with rpfs_redundancy=mirror:2, checks that
 *          MPI_File_get_info says mirror:2, and writes, every rank at
 *          once: (1) 4 MiB blocks, rank r's at blocks r, r+N, ... (blocking
 *          independent), (2) 47008-byte records interleaved by rank
 *          (collective, two-phase), (3) every other row of them again
 *          with nonblocking independent writes; then reads all back, checking
 *          every byte;
 *   read   opens it read-only and checks every byte (run with a server of
 *          the file killed: the reads come from the other copies); with
 *          "share" each rank checks a 1/N share (slow links).
 *   pause=FILE  (write) after the 4 MiB blocks, rank 0 makes FILE and
 *          every rank waits until it is gone (at most 120 s): a test kills
 *          one of the file's servers meanwhile, so that the records are
 *          written with it down (degraded writes) and read back so.
 * Every byte is a function of its offset and of the pass that wrote it,
 * so a byte from the wrong place, a stale copy or a lost write is found.
 * Prints " No Errors" on success. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK	 (4 << 20)
#define NBLOCKS	 2 /* per rank */
#define RECORD	 47008
#define NRECORDS 40 /* per rank */

static int errs;

static void die(int rc, const char *what)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len;

	MPI_Error_string(rc, msg, &len);
	fprintf(stderr, "%s: %s\n", what, msg);
	MPI_Abort(MPI_COMM_WORLD, 1);
}
#define CHECK(call, what)                                                                \
	do {                                                                             \
		int rc_ = (call);                                                        \
		if (rc_ != MPI_SUCCESS)                                                  \
			die(rc_, what);                                                  \
	} while (0)

static unsigned char byte_at(uint64_t off, int pass)
{
	uint64_t x = off * 2654435761u + (uint64_t)pass * 40503u;

	return (unsigned char)(x >> 13 ^ x >> 29 ^ (uint64_t)pass);
}

static void fill(unsigned char *b, uint64_t off, size_t len, int pass)
{
	for (size_t i = 0; i < len; i++)
		b[i] = byte_at(off + i, pass);
}

/* Records start after the blocks; pass 3 rewrote the even ones (record
 * row i = index / nprocs), pass 2's odd ones stay. */
static uint64_t records_at(int nprocs)
{
	return (uint64_t)BLOCK * NBLOCKS * (uint64_t)nprocs;
}

static int pass_of(uint64_t off, int nprocs)
{
	if (off < records_at(nprocs))
		return 1;
	return ((off - records_at(nprocs)) / RECORD / (uint64_t)nprocs) % 2 ? 2 : 3;
}

static void check_all(MPI_File fh, int rank, int nprocs, int share)
{
	uint64_t size =
		records_at(nprocs) + (uint64_t)RECORD * NRECORDS * (uint64_t)nprocs;
	unsigned char *b = malloc(BLOCK);
	MPI_Offset got;

	CHECK(MPI_File_get_size(fh, &got), "MPI_File_get_size");
	if ((uint64_t)got != size) {
		fprintf(stderr, "rank %d: size %lld, want %llu\n", rank, (long long)got,
			(unsigned long long)size);
		errs++;
	}
	/* each rank checks every byte, in 4 MiB reads from its own start */
	for (uint64_t k = 0; k * BLOCK < size; k++) {
		uint64_t off = ((k + (uint64_t)rank) * BLOCK) %
			       (((size + BLOCK - 1) / BLOCK) * BLOCK);
		uint64_t len = size - off < BLOCK ? size - off : BLOCK;
		MPI_Status st;
		int n;

		if (off >= size || (share && k % (uint64_t)nprocs))
			continue;
		CHECK(MPI_File_read_at(fh, (MPI_Offset)off, b, (int)len, MPI_BYTE, &st),
		      "MPI_File_read_at");
		MPI_Get_count(&st, MPI_BYTE, &n);
		if ((uint64_t)n != len) {
			fprintf(stderr, "rank %d: read %d of %llu bytes at %llu\n", rank,
				n, (unsigned long long)len, (unsigned long long)off);
			errs++;
			continue;
		}
		for (uint64_t i = 0; i < len; i++) {
			int p = pass_of(off + i, nprocs);

			if (b[i] != byte_at(off + i, p)) {
				fprintf(stderr, "rank %d: wrong byte at %llu\n", rank,
					(unsigned long long)(off + i));
				errs++;
				break;
			}
		}
	}
	free(b);
}

int main(int argc, char **argv)
{
	MPI_File fh;
	MPI_Info info, got;
	MPI_Request req[NRECORDS];
	MPI_Status sts[NRECORDS];
	unsigned char *recs[NRECORDS];
	int nreq = 0;
	MPI_Status st;
	unsigned char *b;
	int rank, nprocs, all, flag, share = 0;
	const char *pause = NULL, *red = "mirror:2";
	char val[MPI_MAX_INFO_VAL + 1];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (argc < 3 || (strcmp(argv[1], "write") && strcmp(argv[1], "read"))) {
		if (!rank)
			fprintf(stderr, "usage: %s write|read rpfs:/path\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "share"))
			share = 1;
		else if (!strncmp(argv[i], "pause=", 6))
			pause = argv[i] + 6;
		else if (!strncmp(argv[i], "red=", 4))
			red = argv[i] + 4;
	}
	MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
	b = malloc(BLOCK);
	if (!strcmp(argv[1], "read")) {
		CHECK(MPI_File_open(MPI_COMM_WORLD, argv[2], MPI_MODE_RDONLY,
				    MPI_INFO_NULL, &fh),
		      "MPI_File_open (read)");
		check_all(fh, rank, nprocs, share);
		goto done;
	}
	MPI_Info_create(&info);
	MPI_Info_set(info, "rpfs_redundancy", red);
	MPI_Info_set(info, "romio_cb_write", "enable");
	CHECK(MPI_File_open(MPI_COMM_WORLD, argv[2], MPI_MODE_CREATE | MPI_MODE_RDWR,
			    info, &fh),
	      "MPI_File_open (create)");
	MPI_Info_free(&info);
	CHECK(MPI_File_get_info(fh, &got), "MPI_File_get_info");
	MPI_Info_get(got, "rpfs_redundancy", MPI_MAX_INFO_VAL, val, &flag);
	if (!flag || strcmp(val, red)) {
		fprintf(stderr, "rank %d: rpfs_redundancy is %s, want %s\n", rank,
			flag ? val : "not set", red);
		errs++;
	}
	MPI_Info_free(&got);
	/* (1) 4 MiB blocks, blocking independent */
	for (int k = 0; k < NBLOCKS; k++) {
		uint64_t off = ((uint64_t)k * (uint64_t)nprocs + (uint64_t)rank) * BLOCK;

		fill(b, off, BLOCK, 1);
		CHECK(MPI_File_write_at(fh, (MPI_Offset)off, b, BLOCK, MPI_BYTE, &st),
		      "MPI_File_write_at (4 MiB)");
	}
	if (pause) {
		/* a server is killed here (the caller's) */
		MPI_Barrier(MPI_COMM_WORLD);
		if (!rank) {
			FILE *m = fopen(pause, "w");

			if (m)
				fclose(m);
			for (int t = 0; t < 1200; t++) {
				FILE *still = fopen(pause, "r");

				if (!still)
					break;
				fclose(still);
				usleep(100000);
			}
		}
		MPI_Barrier(MPI_COMM_WORLD);
	}
	/* (2) interleaved records, collective (pass 2), then (3) rewritten
	 * with nonblocking independent writes (pass 3) */
	for (int i = 0; i < NRECORDS; i++) {
		uint64_t off = records_at(nprocs) +
			       ((uint64_t)i * (uint64_t)nprocs + (uint64_t)rank) * RECORD;

		fill(b, off, RECORD, 2);
		CHECK(MPI_File_write_at_all(fh, (MPI_Offset)off, b, RECORD, MPI_BYTE,
					    &st),
		      "MPI_File_write_at_all (47008 B)");
	}
	for (int i = 0; i < NRECORDS; i += 2) {
		uint64_t off = records_at(nprocs) +
			       ((uint64_t)i * (uint64_t)nprocs + (uint64_t)rank) * RECORD;

		recs[nreq] = malloc(RECORD);
		fill(recs[nreq], off, RECORD, 3);
		CHECK(MPI_File_iwrite_at(fh, (MPI_Offset)off, recs[nreq], RECORD,
					 MPI_BYTE, &req[nreq]),
		      "MPI_File_iwrite_at (47008 B)");
		nreq++;
	}
	CHECK(MPI_Waitall(nreq, req, sts), "MPI_Waitall");
	for (int i = 0; i < nreq; i++)
		free(recs[i]);
	CHECK(MPI_File_sync(fh), "MPI_File_sync");
	MPI_Barrier(MPI_COMM_WORLD);
	CHECK(MPI_File_sync(fh), "MPI_File_sync");
	check_all(fh, rank, nprocs, 0);
done:
	CHECK(MPI_File_close(&fh), "MPI_File_close");
	free(b);
	MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (!rank && !all)
		printf(" No Errors\n");
	MPI_Finalize();
	return all != 0;
}
