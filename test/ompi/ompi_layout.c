/* ompi_layout: under Open MPI, MPI_File_get_info reports the layout an
 * rpfs file really has, on every rank: what the hints asked for at create,
 * the cluster's defaults when there were none or they could not be used,
 * and the file's own layout when it is reopened without hints.
 *
 * Usage: mpirun -n N ompi_layout rpfs:/dir/base
 * Makes BASE.hinted (striping_factor 2, striping_unit 65536,
 * start_iodevice 1: the server set needs 2 I/O servers), BASE.default (no
 * hints) and BASE.ignored (striping_factor 0 and striping_unit -5, which
 * must be ignored), keeps them, and prints for each a line
 *   layout PATH: striping_factor=C striping_unit=U start_iodevice=F
 * (PATH without the prefix) that the runner compares with `rpfs stat`.
 * Prints " No Errors" when every rank saw the same, expected values. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, errs;

struct layout {
	long factor, unit, start;
};

/* A layout hint of fh as a number, -1 if absent. */
static long hint(MPI_File fh, const char *key)
{
	char value[MPI_MAX_INFO_VAL + 1];
	MPI_Info info;
	int flag;

	MPI_File_get_info(fh, &info);
	MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag);
	MPI_Info_free(&info);
	return flag ? strtol(value, NULL, 10) : -1;
}

static void get_layout(MPI_File fh, struct layout *l)
{
	l->factor = hint(fh, "striping_factor");
	l->unit = hint(fh, "striping_unit");
	l->start = hint(fh, "start_iodevice");
}

/* Every rank reports the same layout as rank 0; returns rank 0's. */
static void check_same(const char *what, const struct layout *mine, struct layout *out)
{
	long v[3] = {mine->factor, mine->unit, mine->start}, lo[3], hi[3];

	MPI_Allreduce(v, lo, 3, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
	MPI_Allreduce(v, hi, 3, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
	if (memcmp(lo, hi, sizeof(lo)) != 0) {
		if (rank == 0)
			printf("%s: ranks disagree on the layout\n", what);
		errs++;
	}
	*out = *mine;
}

static MPI_File open_file(const char *name, int amode, MPI_Info info)
{
	MPI_File fh;
	int rc = MPI_File_open(MPI_COMM_WORLD, name, amode, info, &fh);

	if (rc != MPI_SUCCESS) {
		char msg[MPI_MAX_ERROR_STRING];
		int len;

		MPI_Error_string(rc, msg, &len);
		printf("rank %d: open %s failed: %s\n", rank, name, msg);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return fh;
}

/* Create name with the given hints (key, value pairs, NULL-ended), check
 * the layout on every rank, reopen without hints and check it is the same;
 * print the layout line. Returns the layout. */
static struct layout create_and_check(const char *name, const char *const *hints)
{
	struct layout created, reopened, l;
	MPI_Info info;
	MPI_File fh;

	if (rank == 0)
		MPI_File_delete(name, MPI_INFO_NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Info_create(&info);
	for (int i = 0; hints[i] != NULL; i += 2)
		MPI_Info_set(info, hints[i], hints[i + 1]);
	fh = open_file(name, MPI_MODE_CREATE | MPI_MODE_RDWR, info);
	MPI_Info_free(&info);
	get_layout(fh, &l);
	check_same(name, &l, &created);
	MPI_File_close(&fh);

	fh = open_file(name, MPI_MODE_RDONLY, MPI_INFO_NULL);
	get_layout(fh, &l);
	check_same(name, &l, &reopened);
	MPI_File_close(&fh);
	if (memcmp(&created, &reopened, sizeof(created)) != 0) {
		if (rank == 0)
			printf("%s: the layout reported at create (%ld/%ld/%ld) differs on reopen (%ld/%ld/%ld)\n",
			       name, created.factor, created.unit, created.start,
			       reopened.factor, reopened.unit, reopened.start);
		errs++;
	}
	if (created.factor <= 0 || created.unit <= 0 || created.start < 0) {
		if (rank == 0)
			printf("%s: no real layout reported (%ld/%ld/%ld)\n", name,
			       created.factor, created.unit, created.start);
		errs++;
	}
	if (rank == 0)
		printf("layout %s: striping_factor=%ld striping_unit=%ld start_iodevice=%ld\n",
		       strchr(name, ':') ? strchr(name, ':') + 1 : name, created.factor,
		       created.unit, created.start);
	return created;
}

static void expect(const char *what, long got, long want)
{
	if (got != want) {
		if (rank == 0)
			printf("%s: got %ld, want %ld\n", what, got, want);
		errs++;
	}
}

int main(int argc, char **argv)
{
	static const char *const hinted[] = {"striping_factor",
					     "2",
					     "striping_unit",
					     "65536",
					     "start_iodevice",
					     "1",
					     NULL};
	static const char *const none[] = {NULL};
	static const char *const ignored[] = {"striping_factor", "0", "striping_unit",
					      "-5", NULL};
	char name[1024];
	struct layout h, d, ig;
	int total;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (argc < 2) {
		if (rank == 0)
			fprintf(stderr, "usage: %s rpfs:/path/base\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}

	snprintf(name, sizeof(name), "%s.hinted", argv[1]);
	h = create_and_check(name, hinted);
	expect("hinted: striping_factor", h.factor, 2);
	expect("hinted: striping_unit", h.unit, 65536);
	expect("hinted: start_iodevice", h.start, 1);

	snprintf(name, sizeof(name), "%s.default", argv[1]);
	d = create_and_check(name, none);

	/* hints that cannot be used are ignored: the defaults, not 0 or -5 */
	snprintf(name, sizeof(name), "%s.ignored", argv[1]);
	ig = create_and_check(name, ignored);
	expect("ignored hints: striping_factor", ig.factor, d.factor);
	expect("ignored hints: striping_unit", ig.unit, d.unit);

	MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf(total ? " Found %d errors\n" : " No Errors\n", total);
	MPI_Finalize();
	return total != 0;
}
