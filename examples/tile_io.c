/* tile_io: a tile-I/O benchmark with mpi-tile-io's parameters, on rpfs.
 *
 * The file holds a 2D dataset stored row-major: nr_tiles_y x nr_tiles_x
 * tiles, each sz_tile_y rows of sz_tile_x elements of sz_element bytes
 * (defaults 2x2 tiles of 1024x768 elements of 24 bytes: 72 MiB with 4
 * processes). Neighbouring tiles may share overlap_x columns / overlap_y
 * rows (default 0). Each process owns one tile, so the process count must be
 * nr_tiles_x * nr_tiles_y, and its tile is sz_tile_y pieces in the file, one
 * per tile row (or a single piece when a tile spans the full file width).
 *
 * Modes, each a write of every tile then a read of it:
 *   list    a subarray file view and ONE independent MPI_File_write_at /
 *           read_at: the rpfs driver flattens it into one list-I/O call,
 *           which librpfs sends as one request per I/O server
 *   pieces  the default byte view and one independent MPI_File_write_at /
 *           read_at per contiguous piece: one request per piece, the
 *           baseline of the list/pieces ratio (docs/benchmarks.md, tile I/O)
 *   coll    the list view with collective MPI_File_write_at_all /
 *           read_at_all (ROMIO's two-phase I/O)
 *   all     the three interleaved: each iteration runs every mode once, in
 *           an order that rotates, so no mode always runs first or after
 *           the same one (in turn, mode after mode, the coll/list ratio of
 *           2 processes was 0.87-0.91x where separate runs gave 1.0x: both
 *           do the same list I/O there); then the ratios list/pieces and
 *           coll/list
 *
 * Each operation starts after a barrier and is timed on every rank; its
 * bandwidth is the bytes of all tiles over the slowest rank's time, and a
 * mode reports the median over --iters runs (MB = 2^20 bytes). Open and
 * close are not timed; --sync adds MPI_File_sync to the timed write. Each
 * write stores a pattern that depends on the file offset and on a
 * generation number unique to that write, and the read buffer is cleared
 * first, so a read that passes the check has seen that write's data. The
 * first read of each mode is checked, every read with --verify. Any MPI
 * error aborts the job (exit 1) with MPI's error string; a mismatch makes
 * every rank exit 1. The file is created afresh at the start; every mode
 * writes the same bytes of it.
 *
 * Build and run (after scripts/build-mpich.sh and rpfs up -n 4):
 *   $MPICH/bin/mpicc -O2 -o tile_io examples/tile_io.c
 *   $MPICH/bin/mpiexec -n 4 ./tile_io --filename rpfs:/tile --mode all
 * Other options: --nr_tiles_x N --nr_tiles_y N --sz_tile_x N --sz_tile_y N
 *   --sz_element N --overlap_x N --overlap_y N --iters N (default 5)
 *   --verify --sync --hint KEY=VALUE (an MPI_Info hint, repeatable; for
 *   example cb_nodes=4 or striping_unit=65536)
 */
#include <mpi.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MODE_LIST, MODE_PIECES, MODE_COLL, NMODES };
static const char *const mode_names[NMODES] = {"list", "pieces", "coll"};

struct params {
	const char *filename;
	long nr_tiles_x, nr_tiles_y, sz_tile_x, sz_tile_y, sz_element;
	long overlap_x, overlap_y;
	int iters, verify, sync, all, mode;
	MPI_Info info;
};

/* this process's tile and how it sits in the file */
struct tile {
	MPI_Offset file_row_bytes; /* one row of the whole dataset */
	MPI_Offset row_bytes;	   /* one row of a tile: a file piece */
	MPI_Offset first_off;	   /* file offset of the tile's first row */
	MPI_Offset bytes;	   /* the whole tile */
	long rows, pieces;
	int count; /* elements in the tile, for the view modes */
	MPI_Datatype etype, filetype;
	unsigned char *buf;
};

static int rank, nprocs;

static void check(int rc, const char *what)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len;

	if (rc == MPI_SUCCESS)
		return;
	MPI_Error_string(rc, msg, &len);
	fprintf(stderr, "tile_io: rank %d: %s: %s\n", rank, what, msg);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

/* A transfer must move every byte asked for: a short count is an error. */
static void check_count(MPI_Status *st, MPI_Offset want, const char *what)
{
	MPI_Count got;

	check(MPI_Get_elements_x(st, MPI_BYTE, &got), "MPI_Get_elements_x");
	if (got != want) {
		fprintf(stderr, "tile_io: rank %d: %s moved %lld bytes, not %lld\n", rank,
			what, (long long)got, (long long)want);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

/* The byte stored at file offset off by write number gen. */
static inline unsigned char pattern(uint64_t off, uint64_t gen)
{
	uint64_t x = (off + 1) * 0x9E3779B97F4A7C15ull ^ gen * 0xD1B54A32D192ED03ull;

	x ^= x >> 29;
	return (unsigned char)(x >> 48);
}

static void fill(struct tile *t, uint64_t gen)
{
	for (long r = 0; r < t->rows; r++) {
		unsigned char *p = t->buf + r * t->row_bytes;
		uint64_t off = (uint64_t)(t->first_off + r * t->file_row_bytes);

		for (MPI_Offset j = 0; j < t->row_bytes; j++)
			p[j] = pattern(off + (uint64_t)j, gen);
	}
}

/* Returns the number of wrong bytes; reports the first. */
static long long verify(struct tile *t, uint64_t gen, const char *mode)
{
	long long bad = 0;

	for (long r = 0; r < t->rows; r++) {
		const unsigned char *p = t->buf + r * t->row_bytes;
		uint64_t off = (uint64_t)(t->first_off + r * t->file_row_bytes);

		for (MPI_Offset j = 0; j < t->row_bytes; j++) {
			unsigned char want = pattern(off + (uint64_t)j, gen);

			if (p[j] == want)
				continue;
			if (!bad)
				fprintf(stderr,
					"tile_io: rank %d: %s: byte at file offset %llu (tile row %ld) is 0x%02x, expected 0x%02x\n",
					rank, mode, (unsigned long long)(off + j), r,
					p[j], want);
			bad++;
		}
	}
	return bad;
}

static void usage(void)
{
	if (rank == 0)
		fprintf(stderr,
			"usage: tile_io --filename rpfs:/PATH [--mode list|pieces|coll|all]\n"
			"  [--nr_tiles_x N] [--nr_tiles_y N] [--sz_tile_x N] [--sz_tile_y N]\n"
			"  [--sz_element N] [--overlap_x N] [--overlap_y N] [--iters N]\n"
			"  [--verify] [--sync] [--hint KEY=VALUE]...\n"
			"  run with nr_tiles_x * nr_tiles_y processes\n");
}

static int parse_long(const char *s, long min, long *out)
{
	char *end;
	long v = strtol(s, &end, 0);

	if (*s == '\0' || *end != '\0' || v < min)
		return -1;
	*out = v;
	return 0;
}

static int parse(int argc, char **argv, struct params *p)
{
	static const struct option opts[] = {
		{"filename", required_argument, NULL, 'f'},
		{"nr_tiles_x", required_argument, NULL, 'X'},
		{"nr_tiles_y", required_argument, NULL, 'Y'},
		{"sz_tile_x", required_argument, NULL, 'x'},
		{"sz_tile_y", required_argument, NULL, 'y'},
		{"sz_element", required_argument, NULL, 'e'},
		{"overlap_x", required_argument, NULL, 'o'},
		{"overlap_y", required_argument, NULL, 'O'},
		{"mode", required_argument, NULL, 'm'},
		{"iters", required_argument, NULL, 'i'},
		{"verify", no_argument, NULL, 'v'},
		{"sync", no_argument, NULL, 's'},
		{"hint", required_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	long iters = 5;
	int c, idx = 0;

	*p = (struct params){.nr_tiles_x = 2,
			     .nr_tiles_y = 2,
			     .sz_tile_x = 1024,
			     .sz_tile_y = 768,
			     .sz_element = 24,
			     .all = 1};
	MPI_Info_create(&p->info);
	opterr = rank == 0;
	while ((c = getopt_long(argc, argv, "", opts, &idx)) != -1) {
		int bad = 0;

		switch (c) {
		case 'f':
			p->filename = optarg;
			break;
		case 'X':
			bad = parse_long(optarg, 1, &p->nr_tiles_x);
			break;
		case 'Y':
			bad = parse_long(optarg, 1, &p->nr_tiles_y);
			break;
		case 'x':
			bad = parse_long(optarg, 1, &p->sz_tile_x);
			break;
		case 'y':
			bad = parse_long(optarg, 1, &p->sz_tile_y);
			break;
		case 'e':
			bad = parse_long(optarg, 1, &p->sz_element);
			break;
		case 'o':
			bad = parse_long(optarg, 0, &p->overlap_x);
			break;
		case 'O':
			bad = parse_long(optarg, 0, &p->overlap_y);
			break;
		case 'i':
			bad = parse_long(optarg, 1, &iters) || iters > 1000;
			break;
		case 'v':
			p->verify = 1;
			break;
		case 's':
			p->sync = 1;
			break;
		case 'm':
			p->all = !strcmp(optarg, "all");
			bad = !p->all;
			for (int m = 0; m < NMODES && bad; m++)
				if (!strcmp(optarg, mode_names[m])) {
					p->mode = m;
					bad = 0;
				}
			break;
		case 'H': {
			char *eq = strchr(optarg, '=');

			bad = !eq || eq == optarg;
			if (!bad) {
				*eq = '\0';
				check(MPI_Info_set(p->info, optarg, eq + 1),
				      "MPI_Info_set");
				*eq = '=';
			}
			break;
		}
		default:
			return -1;
		}
		if (bad) {
			if (rank == 0)
				fprintf(stderr, "tile_io: bad value '%s' for --%s\n",
					optarg, opts[idx].name);
			return -1;
		}
	}
	p->iters = (int)iters;
	if (optind < argc || !p->filename) {
		if (rank == 0)
			fprintf(stderr, "tile_io: %s\n",
				p->filename ? "unexpected argument"
					    : "--filename is required");
		return -1;
	}
	if (p->overlap_x >= p->sz_tile_x || p->overlap_y >= p->sz_tile_y) {
		if (rank == 0)
			fprintf(stderr,
				"tile_io: an overlap must be smaller than the tile\n");
		return -1;
	}
	if (p->nr_tiles_x * p->nr_tiles_y != nprocs) {
		if (rank == 0)
			fprintf(stderr,
				"tile_io: %ld x %ld tiles need %ld processes, not %d\n",
				p->nr_tiles_x, p->nr_tiles_y,
				p->nr_tiles_x * p->nr_tiles_y, nprocs);
		return -1;
	}
	if (p->sz_tile_x * p->sz_tile_y > INT32_MAX || p->sz_element > INT32_MAX ||
	    p->sz_tile_x * p->sz_element > INT32_MAX) {
		if (rank == 0)
			fprintf(stderr, "tile_io: tile too large for int counts\n");
		return -1;
	}
	return 0;
}

static void setup_tile(const struct params *p, struct tile *t)
{
	long tx = rank % p->nr_tiles_x, ty = rank / p->nr_tiles_x;
	long step_x = p->sz_tile_x - p->overlap_x, step_y = p->sz_tile_y - p->overlap_y;
	long dim_x = step_x * (p->nr_tiles_x - 1) + p->sz_tile_x;
	long dim_y = step_y * (p->nr_tiles_y - 1) + p->sz_tile_y;
	int sizes[2] = {(int)dim_y, (int)dim_x};
	int sub[2] = {(int)p->sz_tile_y, (int)p->sz_tile_x};
	int start[2] = {(int)(ty * step_y), (int)(tx * step_x)};

	if (dim_x > INT32_MAX || dim_y > INT32_MAX) {
		if (rank == 0)
			fprintf(stderr, "tile_io: dataset dimensions too large\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	t->file_row_bytes = (MPI_Offset)dim_x * p->sz_element;
	t->row_bytes = (MPI_Offset)p->sz_tile_x * p->sz_element;
	t->first_off = (MPI_Offset)start[0] * t->file_row_bytes +
		       (MPI_Offset)start[1] * p->sz_element;
	t->rows = p->sz_tile_y;
	t->bytes = t->row_bytes * t->rows;
	t->count = (int)(p->sz_tile_x * p->sz_tile_y);
	/* a tile as wide as the file is one contiguous piece */
	t->pieces = t->row_bytes == t->file_row_bytes ? 1 : t->rows;

	check(MPI_Type_contiguous((int)p->sz_element, MPI_BYTE, &t->etype),
	      "MPI_Type_contiguous");
	check(MPI_Type_commit(&t->etype), "MPI_Type_commit");
	check(MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, t->etype,
				       &t->filetype),
	      "MPI_Type_create_subarray");
	check(MPI_Type_commit(&t->filetype), "MPI_Type_commit");
	t->buf = malloc((size_t)t->bytes);
	if (!t->buf) {
		fprintf(stderr, "tile_io: rank %d: cannot allocate %lld bytes\n", rank,
			(long long)t->bytes);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

/* One write or read of this process's tile in the given mode. */
static void transfer(MPI_File fh, struct tile *t, int mode, int write)
{
	MPI_Status st;
	int rc;

	switch (mode) {
	case MODE_LIST:
		rc = write ? MPI_File_write_at(fh, 0, t->buf, t->count, t->etype, &st)
			   : MPI_File_read_at(fh, 0, t->buf, t->count, t->etype, &st);
		check(rc, write ? "MPI_File_write_at (list)" : "MPI_File_read_at (list)");
		check_count(&st, t->bytes, mode_names[mode]);
		break;
	case MODE_COLL:
		rc = write ? MPI_File_write_at_all(fh, 0, t->buf, t->count, t->etype, &st)
			   : MPI_File_read_at_all(fh, 0, t->buf, t->count, t->etype, &st);
		check(rc, write ? "MPI_File_write_at_all" : "MPI_File_read_at_all");
		check_count(&st, t->bytes, mode_names[mode]);
		break;
	case MODE_PIECES: {
		MPI_Offset len = t->bytes / t->pieces;

		for (long r = 0; r < t->pieces; r++) {
			MPI_Offset off = t->first_off + r * t->file_row_bytes;
			unsigned char *b = t->buf + r * len;

			rc = write ? MPI_File_write_at(fh, off, b, (int)len, MPI_BYTE,
						       &st)
				   : MPI_File_read_at(fh, off, b, (int)len, MPI_BYTE,
						      &st);
			check(rc, write ? "MPI_File_write_at (piece)"
					: "MPI_File_read_at (piece)");
			check_count(&st, len, mode_names[mode]);
		}
		break;
	}
	}
}

/* Barrier, the operation, and the slowest rank's time. */
static double timed(MPI_File fh, struct tile *t, int mode, int write, int sync)
{
	double t0, dt, max;

	check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
	t0 = MPI_Wtime();
	transfer(fh, t, mode, write);
	if (write && sync)
		check(MPI_File_sync(fh), "MPI_File_sync");
	dt = MPI_Wtime() - t0;
	check(MPI_Allreduce(&dt, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
	      "MPI_Allreduce");
	return max;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The pieces mode addresses the file in bytes, the others through the
 * tile's view (collective: every rank calls it). */
static void set_mode_view(MPI_File fh, const struct tile *t, int mode)
{
	if (mode == MODE_PIECES)
		check(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native",
					MPI_INFO_NULL),
		      "MPI_File_set_view");
	else
		check(MPI_File_set_view(fh, 0, t->etype, t->filetype, "native",
					MPI_INFO_NULL),
		      "MPI_File_set_view");
}

/* Runs modes first..last, interleaved (see the top); returns 0, or 1 after
 * a data mismatch (on every rank). */
static int run_modes(const struct params *p, struct tile *t, int first, int last,
		     double total, double *wbw, double *rbw)
{
	int n = last - first + 1;
	double *w = malloc(sizeof(double) * p->iters * NMODES * 2);
	double *r = w + p->iters * NMODES;
	long long bad = 0, allbad;
	MPI_File fh;

	if (!w)
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (rank == 0)
		MPI_File_delete(p->filename, MPI_INFO_NULL); /* may not exist */
	check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
	check(MPI_File_open(MPI_COMM_WORLD, p->filename, MPI_MODE_CREATE | MPI_MODE_RDWR,
			    p->info, &fh),
	      "MPI_File_open");
	for (int i = 0; i < p->iters; i++) {
		for (int k = 0; k < n; k++) {
			int mode = first + (i + k) % n;
			uint64_t gen = (uint64_t)mode * 1000 + (uint64_t)i + 1;
			double *wm = w + mode * p->iters, *rm = r + mode * p->iters;

			set_mode_view(fh, t, mode);
			fill(t, gen);
			wm[i] = total / timed(fh, t, mode, 1, p->sync);
			memset(t->buf, 0xa5, (size_t)t->bytes);
			rm[i] = total / timed(fh, t, mode, 0, 0);
			if (i == 0 || p->verify)
				bad += verify(t, gen, mode_names[mode]);
		}
	}
	check(MPI_File_close(&fh), "MPI_File_close");
	check(MPI_Allreduce(&bad, &allbad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD),
	      "MPI_Allreduce");
	for (int m = first; m <= last; m++) {
		wbw[m] = median(w + m * p->iters, p->iters);
		rbw[m] = median(r + m * p->iters, p->iters);
	}
	free(w);
	if (allbad && rank == 0)
		fprintf(stderr, "tile_io: %lld bytes read back wrong\n", allbad);
	return allbad != 0;
}

static void print_target(const char *what, double wr, double rr, double target)
{
	double worst = wr < rr ? wr : rr;

	printf("%s: %.1fx (target >= %gx) %s\n", what, worst, target,
	       worst >= target ? "MET" : "NOT MET");
}

int main(int argc, char **argv)
{
	double wbw[NMODES] = {0}, rbw[NMODES] = {0}, total, mb = 1024.0 * 1024.0;
	struct params p;
	struct tile t;
	int failed = 0, first, last;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (parse(argc, argv, &p)) {
		usage();
		MPI_Finalize();
		return 2;
	}
	setup_tile(&p, &t);
	total = (double)t.bytes * nprocs;
	first = p.all ? 0 : p.mode;
	last = p.all ? NMODES - 1 : p.mode;

	if (rank == 0) {
		printf("tile_io: %s, %d processes, %ldx%ld tiles of %ldx%ld elements of %ld bytes (overlap %ld,%ld)\n",
		       p.filename, nprocs, p.nr_tiles_x, p.nr_tiles_y, p.sz_tile_x,
		       p.sz_tile_y, p.sz_element, p.overlap_x, p.overlap_y);
		printf("%.1f MiB per iteration, %ld pieces of %lld bytes per process, %d iterations, median MB/s (MB = 2^20 bytes)%s\n",
		       total / mb, t.pieces, (long long)(t.bytes / t.pieces), p.iters,
		       p.sync ? ", write includes MPI_File_sync" : "");
		fflush(stdout);
	}
	failed = run_modes(&p, &t, first, last, total / mb, wbw, rbw);

	if (rank == 0 && !failed) {
		printf("%-8s %12s %12s\n", "mode", "write_MBps", "read_MBps");
		for (int m = first; m <= last; m++)
			printf("%-8s %12.1f %12.1f\n", mode_names[m], wbw[m], rbw[m]);
		if (p.all) {
			double lw = wbw[MODE_LIST] / wbw[MODE_PIECES];
			double lr = rbw[MODE_LIST] / rbw[MODE_PIECES];
			double cw = wbw[MODE_COLL] / wbw[MODE_LIST];
			double cr = rbw[MODE_COLL] / rbw[MODE_LIST];

			printf("%-12s %8s %8s\n", "ratio", "write", "read");
			printf("%-12s %7.2fx %7.2fx\n", "list/pieces", lw, lr);
			printf("%-12s %7.2fx %7.2fx\n", "coll/list", cw, cr);
			print_target("list I/O vs pieces", lw, lr, 3);
			print_target("collective vs independent", cw, cr, 1);
		}
		printf("data check ok\n");
	}
	MPI_Info_free(&p.info);
	MPI_Type_free(&t.filetype);
	MPI_Type_free(&t.etype);
	free(t.buf);
	MPI_Finalize();
	return failed;
}
