/* ompi_shared_fp: MPI's shared file pointer works across processes on
 * rpfs under Open MPI (the pointer is kept by the file's metadata server).
 *
 * Usage: mpirun -n N ompi_shared_fp rpfs:/dir/base
 * On BASE.shared:
 *   - every rank writes K records with MPI_File_write_shared; every record
 *     lands exactly once and the file holds nothing else;
 *   - every rank sees the pointer after all of them (get_position_shared);
 *   - after seek_shared to 0, K read_shared per rank read every record
 *     exactly once over all ranks;
 *   - after seek_shared to the end, one iwrite_shared per rank appends.
 * On BASE.ordered:
 *   - write_ordered of rank r's r+1 records stores them in rank order;
 *   - read_ordered from 0 gives each rank its own records back;
 *   - write_ordered_begin/end appends a second block in rank order.
 * Both files are kept. Prints " No Errors" on success. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K 40 /* records each rank writes with write_shared */

/* One record; check makes a torn or foreign record detectable. */
struct rec {
	int32_t rank, seq, tag, check;
};

enum { TAG_SHARED = 1, TAG_APPEND = 2, TAG_ORDERED = 3, TAG_SPLIT = 4 };

static int rank, nprocs, errs;

static struct rec make(int r, int seq, int tag)
{
	struct rec x = {r, seq, tag, (int32_t)(0x5eed0000 ^ (r * 7919 + seq * 31 + tag))};
	return x;
}

static int valid(const struct rec *x)
{
	struct rec want = make(x->rank, x->seq, x->tag);
	return x->rank >= 0 && x->rank < nprocs && x->check == want.check;
}

static void die_on(int rc, const char *what)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len;

	if (rc == MPI_SUCCESS)
		return;
	MPI_Error_string(rc, msg, &len);
	printf("rank %d: %s failed: %s\n", rank, what, msg);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static void fail(const char *fmt, long a, long b)
{
	printf("rank %d: ", rank);
	printf(fmt, a, b);
	printf("\n");
	errs++;
}

static MPI_File open_new(const char *name)
{
	MPI_File fh;

	if (rank == 0)
		MPI_File_delete(name, MPI_INFO_NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	die_on(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR,
			     MPI_INFO_NULL, &fh),
	       "open");
	return fh;
}

/* Rank 0: the n records from record first hold each (rank, seq < per, tag)
 * exactly once, and nothing else. */
static void check_each_once(MPI_File fh, MPI_Offset first, int n, int tag, int per)
{
	struct rec *all = calloc((size_t)n, sizeof(*all));
	char *seen = calloc((size_t)nprocs * (size_t)per, 1);
	MPI_Status st;

	die_on(MPI_File_read_at(fh, first * (MPI_Offset)sizeof(struct rec), all,
				n * (int)sizeof(struct rec), MPI_BYTE, &st),
	       "read_at");
	for (int i = 0; i < n; i++) {
		struct rec *x = &all[i];

		if (!valid(x) || x->tag != tag || x->seq < 0 || x->seq >= per) {
			fail("record %ld is not one that was written (tag %ld)",
			     first + i, x->tag);
			continue;
		}
		if (seen[x->rank * per + x->seq]++)
			fail("rank %ld's record %ld landed twice", x->rank, x->seq);
	}
	free(all);
	free(seen);
}

static void test_shared(const char *name)
{
	MPI_File fh = open_new(name);
	MPI_Offset pos, size;
	struct rec x, got[K];
	int count, total = 0;
	MPI_Status st;
	MPI_Request req;

	for (int i = 0; i < K; i++) {
		x = make(rank, i, TAG_SHARED);
		die_on(MPI_File_write_shared(fh, &x, sizeof(x), MPI_BYTE, &st),
		       "write_shared");
		MPI_Get_count(&st, MPI_BYTE, &count);
		if (count != (int)sizeof(x))
			fail("write_shared wrote %ld bytes, want %ld", count, sizeof(x));
	}
	MPI_Barrier(MPI_COMM_WORLD);
	die_on(MPI_File_get_position_shared(fh, &pos), "get_position_shared");
	if (pos != (MPI_Offset)nprocs * K * (MPI_Offset)sizeof(x))
		fail("shared pointer at %ld after all writes, want %ld", (long)pos,
		     (long)nprocs * K * (long)sizeof(x));
	die_on(MPI_File_get_size(fh, &size), "get_size");
	if (size != (MPI_Offset)nprocs * K * (MPI_Offset)sizeof(x))
		fail("file size %ld, want %ld", (long)size,
		     (long)nprocs * K * (long)sizeof(x));
	if (rank == 0)
		check_each_once(fh, 0, nprocs * K, TAG_SHARED, K);

	/* read_shared: over all ranks, every record exactly once */
	die_on(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET), "seek_shared");
	for (int i = 0; i < K; i++)
		die_on(MPI_File_read_shared(fh, &got[i], sizeof(got[i]), MPI_BYTE, &st),
		       "read_shared");
	{
		struct rec *all = rank == 0 ? malloc(sizeof(got) * (size_t)nprocs) : NULL;
		char *seen = rank == 0 ? calloc((size_t)nprocs * K, 1) : NULL;

		MPI_Gather(got, (int)sizeof(got), MPI_BYTE, all, (int)sizeof(got),
			   MPI_BYTE, 0, MPI_COMM_WORLD);
		for (int i = 0; rank == 0 && i < nprocs * K; i++) {
			if (!valid(&all[i]) || all[i].tag != TAG_SHARED ||
			    all[i].seq >= K)
				fail("read_shared got a record never written (%ld, %ld)",
				     all[i].rank, all[i].seq);
			else if (seen[all[i].rank * K + all[i].seq]++)
				fail("read_shared read rank %ld's record %ld twice",
				     all[i].rank, all[i].seq);
			else
				total++;
		}
		if (rank == 0 && total != nprocs * K)
			fail("read_shared read %ld distinct records, want %ld", total,
			     nprocs * K);
		free(all);
		free(seen);
	}

	/* iwrite_shared after seek_shared to the end appends */
	die_on(MPI_File_seek_shared(fh, 0, MPI_SEEK_END), "seek_shared end");
	x = make(rank, 0, TAG_APPEND);
	die_on(MPI_File_iwrite_shared(fh, &x, sizeof(x), MPI_BYTE, &req),
	       "iwrite_shared");
	die_on(MPI_Wait(&req, &st), "wait iwrite_shared");
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		check_each_once(fh, (MPI_Offset)nprocs * K, nprocs, TAG_APPEND, 1);
	die_on(MPI_File_close(&fh), "close");
}

/* Rank 0: after first, the records of tag in rank order, r+1 from rank r. */
static void check_rank_order(MPI_File fh, MPI_Offset first, int tag)
{
	int n = nprocs * (nprocs + 1) / 2, i = 0;
	struct rec *all = calloc((size_t)n, sizeof(*all));
	MPI_Status st;

	die_on(MPI_File_read_at(fh, first * (MPI_Offset)sizeof(struct rec), all,
				n * (int)sizeof(struct rec), MPI_BYTE, &st),
	       "read_at");
	for (int r = 0; r < nprocs; r++)
		for (int s = 0; s <= r; s++, i++)
			if (!valid(&all[i]) || all[i].rank != r || all[i].seq != s ||
			    all[i].tag != tag)
				fail("ordered record %ld is not rank %ld's", first + i,
				     r);
	free(all);
}

static void test_ordered(const char *name)
{
	MPI_File fh = open_new(name);
	int n = rank + 1, block = nprocs * (nprocs + 1) / 2;
	struct rec mine[64], back[64];
	MPI_Offset pos;
	MPI_Status st;

	for (int s = 0; s < n; s++)
		mine[s] = make(rank, s, TAG_ORDERED);
	die_on(MPI_File_write_ordered(fh, mine, n * (int)sizeof(struct rec), MPI_BYTE,
				      &st),
	       "write_ordered");
	die_on(MPI_File_get_position_shared(fh, &pos), "get_position_shared");
	if (pos != (MPI_Offset)block * (MPI_Offset)sizeof(struct rec))
		fail("pointer at %ld after write_ordered, want %ld", (long)pos,
		     (long)block * (long)sizeof(struct rec));
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		check_rank_order(fh, 0, TAG_ORDERED);

	die_on(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET), "seek_shared");
	memset(back, 0, sizeof(back));
	die_on(MPI_File_read_ordered(fh, back, n * (int)sizeof(struct rec), MPI_BYTE,
				     &st),
	       "read_ordered");
	if (memcmp(back, mine, (size_t)n * sizeof(struct rec)) != 0)
		fail("read_ordered did not give rank %ld its %ld records", rank, n);

	/* the pointer is after the block: a split ordered write appends */
	for (int s = 0; s < n; s++)
		mine[s] = make(rank, s, TAG_SPLIT);
	die_on(MPI_File_write_ordered_begin(fh, mine, n * (int)sizeof(struct rec),
					    MPI_BYTE),
	       "write_ordered_begin");
	die_on(MPI_File_write_ordered_end(fh, mine, &st), "write_ordered_end");
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		check_rank_order(fh, block, TAG_SPLIT);
	die_on(MPI_File_close(&fh), "close");
}

int main(int argc, char **argv)
{
	char name[1024];
	int total;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (argc < 2 || nprocs > 63) {
		if (rank == 0)
			fprintf(stderr,
				"usage: %s rpfs:/path/base (at most 63 processes)\n",
				argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	snprintf(name, sizeof(name), "%s.shared", argv[1]);
	test_shared(name);
	snprintf(name, sizeof(name), "%s.ordered", argv[1]);
	test_ordered(name);

	MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf(total ? " Found %d errors\n" : " No Errors\n", total);
	MPI_Finalize();
	return total != 0;
}
