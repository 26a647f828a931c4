/* mpiio_bw: MPI-IO bandwidth, per-operation latency and first-open time, as
 * a user's program sees them, for any ROMIO file system prefix (rpfs:,
 * ufs:, ...). Part of bench/run (issue 8); prints CSV rows
 * experiment,system,op,param,value,unit (no header) on rank 0.
 *
 * Bandwidth (--sizes): for every combination of layout (shared file or file
 * per process), pattern (contiguous, or strided: a file view whose filetype
 * is a vector of pieces, so one call of SIZE bytes touches 16 pieces) and
 * mode (independent write_at/read_at or collective write_at_all/
 * read_at_all), and every transfer size, each process writes COUNT
 * transfers of SIZE bytes and reads them back. A figure is the bytes of all
 * processes over the slowest process's time, the median of --reps runs;
 * MB/s = 1e6 bytes/s like rpfs-xport-bench. Open and close are not timed.
 * --passes N writes (then reads) the same data N times in each run and
 * takes their mean, so that a profiler's window (bench/profile) holds
 * mostly I/O rather than filling and checking buffers.
 *
 * Latency (--lat N): N single 4 KiB writes then N reads at once on every
 * process (shared file, contiguous, independent), each timed alone; the
 * percentiles are over all processes' operations.
 *
 * First open: the first MPI_File_open of the process (for rpfs: it includes
 * bringing up the client library and the fabric) and a second one, the
 * slowest process's time.
 *
 * Every write stores a pattern that depends on the rank, the transfer, the
 * word and a generation unique to the run; every read goes into a cleared
 * buffer and is compared with it. A wrong byte, a short transfer or an MPI
 * error prints what happened and ends the job with exit 1.
 *
 * --cpu adds the client CPU time (getrusage, summed over processes) per GiB
 * moved for each bandwidth figure. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define MAX_SIZES 32
#define PIECES	  16 /* file pieces per strided transfer */
#define MIN_PIECE 256

enum layout { SHARED, FPP };
enum pattern { CONTIG, STRIDED };
enum mode { INDEP, COLL };
enum dir { WRITE, READ };

static const char *const layout_names[] = {"shared", "fpp"};
static const char *const pattern_names[] = {"contig", "strided"};
static const char *const mode_names[] = {"indep", "coll"};
static const char *const dir_names[] = {"write", "read"};

struct opts {
	const char *file;   /* base name with its prefix, e.g. rpfs:/b/f */
	const char *system; /* the CSV's system column */
	const char *exp;    /* the CSV's experiment column for bandwidth */
	const char *tag;    /* appended to every param (e.g. servers=2) */
	size_t sizes[MAX_SIZES];
	int nsizes;
	size_t bytes; /* per process and size: COUNT = bytes / size */
	int min_count, max_count;
	int reps;
	int passes; /* timed passes a run and direction */
	int lat;
	int cpu;
	int expect_servers; /* check the file's striping_factor (0: don't) */
	int layouts[2], patterns[2], modes[2]; /* which to run */
	MPI_Info info;
};

static int rank, nprocs;
static uint64_t generation;

static void fail(const char *fmt, const char *what, int rc)
{
	char msg[MPI_MAX_ERROR_STRING] = "";
	int len;

	if (rc != MPI_SUCCESS)
		MPI_Error_string(rc, msg, &len);
	fprintf(stderr, "mpiio_bw: rank %d: ", rank);
	fprintf(stderr, fmt, what);
	fprintf(stderr, "%s%s\n", msg[0] ? ": " : "", msg);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static void check(int rc, const char *what)
{
	if (rc != MPI_SUCCESS)
		fail("%s", what, rc);
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* ---- data pattern ------------------------------------------------------ */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

static uint64_t word_of(uint64_t gen, size_t w)
{
	return mix(gen ^ ((uint64_t)rank << 48) ^ (uint64_t)w);
}

static void fill(unsigned char *buf, size_t len, uint64_t gen)
{
	for (size_t w = 0; w < len / 8; w++) {
		uint64_t v = word_of(gen, w);

		memcpy(buf + w * 8, &v, 8);
	}
}

static void verify(const unsigned char *buf, size_t len, uint64_t gen, const char *what)
{
	for (size_t w = 0; w < len / 8; w++) {
		uint64_t v = word_of(gen, w), got;

		memcpy(&got, buf + w * 8, 8);
		if (got != v) {
			fprintf(stderr,
				"mpiio_bw: rank %d: %s: wrong data at byte %zu of %zu "
				"(read %016llx, wrote %016llx)\n",
				rank, what, w * 8, len, (unsigned long long)got,
				(unsigned long long)v);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
}

/* ---- options ----------------------------------------------------------- */

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s)
		return 0;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		v <<= 30, end++;
	return *end ? 0 : (size_t)v;
}

/* "a,b" into flags over names[0..1]; 0 on success */
static int parse_set(const char *arg, const char *const names[2], int set[2])
{
	char copy[128], *tok, *save;

	set[0] = set[1] = 0;
	snprintf(copy, sizeof(copy), "%s", arg);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, names[0]))
			set[0] = 1;
		else if (!strcmp(tok, names[1]))
			set[1] = 1;
		else
			return -1;
	}
	return set[0] || set[1] ? 0 : -1;
}

static const char usage_text[] =
	"usage: mpiio_bw --file PREFIX:PATH [--system NAME] [--exp NAME] [--tag TEXT]\n"
	"  [--sizes 4K,64K,1M] [--bytes 32M] [--min-count 2] [--max-count 256]\n"
	"  [--reps 3] [--passes 1] [--layouts shared,fpp] [--patterns contig,strided]\n"
	"  [--modes indep,coll] [--lat N] [--cpu] [--hint KEY=VALUE]...\n"
	"  [--expect-servers N]  (fail unless each file is striped over N servers)\n"
	"  --sizes none: no bandwidth runs (latency and open only)\n";

static void usage_exit(const char *why)
{
	if (rank == 0)
		fprintf(stderr, "mpiio_bw: %s\n%s", why, usage_text);
	MPI_Finalize();
	exit(2);
}

static void parse_sizes(struct opts *o, const char *arg)
{
	char copy[512], *tok, *save;

	o->nsizes = 0;
	if (!strcmp(arg, "none"))
		return;
	snprintf(copy, sizeof(copy), "%s", arg);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t s = parse_size(tok);

		if (!s || s % 8 || s > ((size_t)1 << 30) || o->nsizes == MAX_SIZES)
			usage_exit("--sizes: sizes are multiples of 8 up to 1G");
		o->sizes[o->nsizes++] = s;
	}
}

static void parse_args(struct opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"file", required_argument, NULL, 'f'},
		{"system", required_argument, NULL, 'y'},
		{"exp", required_argument, NULL, 'e'},
		{"tag", required_argument, NULL, 't'},
		{"sizes", required_argument, NULL, 's'},
		{"bytes", required_argument, NULL, 'b'},
		{"min-count", required_argument, NULL, 'm'},
		{"max-count", required_argument, NULL, 'M'},
		{"reps", required_argument, NULL, 'r'},
		{"passes", required_argument, NULL, 'p'},
		{"layouts", required_argument, NULL, 'L'},
		{"patterns", required_argument, NULL, 'P'},
		{"modes", required_argument, NULL, 'O'},
		{"lat", required_argument, NULL, 'l'},
		{"cpu", no_argument, NULL, 'c'},
		{"expect-servers", required_argument, NULL, 'x'},
		{"hint", required_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char *eq;
	int c;

	o->system = "?";
	o->exp = "bw";
	o->tag = "";
	parse_sizes(o, "4K,64K,1M");
	o->bytes = (size_t)32 << 20;
	o->min_count = 2;
	o->max_count = 256;
	o->reps = 3;
	o->passes = 1;
	o->layouts[SHARED] = o->layouts[FPP] = 1;
	o->patterns[CONTIG] = o->patterns[STRIDED] = 1;
	o->modes[INDEP] = o->modes[COLL] = 1;
	MPI_Info_create(&o->info);
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			o->file = optarg;
			break;
		case 'y':
			o->system = optarg;
			break;
		case 'e':
			o->exp = optarg;
			break;
		case 't':
			o->tag = optarg;
			break;
		case 's':
			parse_sizes(o, optarg);
			break;
		case 'b':
			o->bytes = parse_size(optarg);
			break;
		case 'm':
			o->min_count = atoi(optarg);
			break;
		case 'M':
			o->max_count = atoi(optarg);
			break;
		case 'r':
			o->reps = atoi(optarg);
			break;
		case 'p':
			o->passes = atoi(optarg);
			break;
		case 'l':
			o->lat = atoi(optarg);
			break;
		case 'c':
			o->cpu = 1;
			break;
		case 'x':
			o->expect_servers = atoi(optarg);
			break;
		case 'L':
			if (parse_set(optarg, layout_names, o->layouts))
				usage_exit("--layouts: shared and/or fpp");
			break;
		case 'P':
			if (parse_set(optarg, pattern_names, o->patterns))
				usage_exit("--patterns: contig and/or strided");
			break;
		case 'O':
			if (parse_set(optarg, mode_names, o->modes))
				usage_exit("--modes: indep and/or coll");
			break;
		case 'h':
			eq = strchr(optarg, '=');
			if (!eq)
				usage_exit("--hint wants KEY=VALUE");
			*eq = 0;
			MPI_Info_set(o->info, optarg, eq + 1);
			break;
		default:
			usage_exit("unknown option");
		}
	}
	if (!o->file || optind < argc)
		usage_exit("--file is required, and nothing else");
	if (o->reps < 1 || o->passes < 1 || o->min_count < 1 ||
	    o->max_count < o->min_count || o->lat < 0 || !o->bytes)
		usage_exit(
			"bad --reps, --passes, --bytes, --min-count, --max-count or --lat");
}

/* ---- one run ----------------------------------------------------------- */

struct run {
	const struct opts *o;
	enum layout layout;
	enum pattern pattern;
	enum mode mode;
	size_t size;
	int count;
	char name[1024];
	MPI_File fh;
	MPI_Datatype filetype;
	unsigned char *wbuf, *rbuf; /* count * size each */
};

static double median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The layout the file really has (MPI_File_get_info), so a scaling figure
 * cannot silently be made with another server count. */
static void check_servers(struct run *r)
{
	char val[MPI_MAX_INFO_VAL + 1] = "";
	MPI_Info info;
	int flag = 0;

	check(MPI_File_get_info(r->fh, &info), "get_info");
	MPI_Info_get(info, "striping_factor", MPI_MAX_INFO_VAL, val, &flag);
	MPI_Info_free(&info);
	if (!flag || atoi(val) != r->o->expect_servers) {
		fprintf(stderr,
			"mpiio_bw: rank %d: %s is striped over %s servers, not %d\n",
			rank, r->name, flag ? val : "(unknown)", r->o->expect_servers);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

static void open_file(struct run *r)
{
	MPI_Comm comm = r->layout == FPP ? MPI_COMM_SELF : MPI_COMM_WORLD;
	int procs = r->layout == FPP ? 1 : nprocs;
	int me = r->layout == FPP ? 0 : rank;
	size_t piece = r->size / PIECES;

	check(MPI_File_open(comm, r->name, MPI_MODE_CREATE | MPI_MODE_RDWR, r->o->info,
			    &r->fh),
	      r->name);
	if (r->o->expect_servers)
		check_servers(r);
	if (r->pattern == CONTIG) {
		r->filetype = MPI_DATATYPE_NULL;
		return;
	}
	/* Pieces of this process alternate with the other processes' and with
	 * holes (stride 2 * procs pieces), so the view is strided even for a
	 * single process. */
	if (piece < MIN_PIECE)
		piece = MIN_PIECE;
	{
		MPI_Datatype block;

		check(MPI_Type_contiguous((int)piece, MPI_BYTE, &block),
		      "type_contiguous");
		check(MPI_Type_create_resized(block, 0, (MPI_Aint)(2 * procs * piece),
					      &r->filetype),
		      "type_create_resized");
		MPI_Type_free(&block);
		check(MPI_Type_commit(&r->filetype), "type_commit");
	}
	check(MPI_File_set_view(r->fh, (MPI_Offset)(me * piece), MPI_BYTE, r->filetype,
				"native", r->o->info),
	      "set_view");
}

static void close_file(struct run *r)
{
	check(MPI_File_close(&r->fh), "close");
	if (r->filetype != MPI_DATATYPE_NULL)
		MPI_Type_free(&r->filetype);
}

/* Offset of transfer i in the view (bytes). Contiguous shared: the
 * processes' transfers interleave. Strided: each process's view is its own,
 * so transfers follow each other in it. */
static MPI_Offset offset_of(const struct run *r, int i)
{
	if (r->pattern == CONTIG && r->layout == SHARED)
		return ((MPI_Offset)i * nprocs + rank) * (MPI_Offset)r->size;
	return (MPI_Offset)i * (MPI_Offset)r->size;
}

static void transfer(struct run *r, enum dir d, unsigned char *buf, int i)
{
	MPI_Offset off = offset_of(r, i);
	MPI_Status st;
	int rc, got;

	if (d == WRITE)
		rc = r->mode == COLL ? MPI_File_write_at_all(r->fh, off, buf,
							     (int)r->size, MPI_BYTE, &st)
				     : MPI_File_write_at(r->fh, off, buf, (int)r->size,
							 MPI_BYTE, &st);
	else
		rc = r->mode == COLL ? MPI_File_read_at_all(r->fh, off, buf, (int)r->size,
							    MPI_BYTE, &st)
				     : MPI_File_read_at(r->fh, off, buf, (int)r->size,
							MPI_BYTE, &st);
	check(rc, dir_names[d]);
	MPI_Get_count(&st, MPI_BYTE, &got);
	if ((size_t)got != r->size) {
		fprintf(stderr, "mpiio_bw: rank %d: %s of %zu bytes moved %d\n", rank,
			dir_names[d], r->size, got);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

/* One timed pass over all transfers; returns the slowest rank's seconds and
 * adds this rank's CPU seconds to *cpu. */
static double timed_pass(struct run *r, enum dir d, double *cpu)
{
	double t0, t, c0, tmax;

	MPI_Barrier(MPI_COMM_WORLD);
	c0 = cpu_seconds();
	t0 = MPI_Wtime();
	for (int i = 0; i < r->count; i++)
		transfer(r, d, (d == WRITE ? r->wbuf : r->rbuf) + (size_t)i * r->size, i);
	t = MPI_Wtime() - t0;
	*cpu += cpu_seconds() - c0;
	MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return tmax;
}

static void emit(const struct opts *o, const char *exp, const char *op, const char *param,
		 double value, const char *unit)
{
	if (rank == 0)
		printf("%s,%s,%s,%s%s%s,%.6g,%s\n", exp, o->system, op, param,
		       o->tag[0] ? ";" : "", o->tag, value, unit);
}

static void bw_run(struct run *r)
{
	const struct opts *o = r->o;
	size_t bytes = (size_t)r->count * r->size;
	double t[2][64], cpu[2] = {0, 0};
	char param[256], what[64];
	int reps = o->reps < 64 ? o->reps : 64;

	if (r->layout == FPP)
		snprintf(r->name, sizeof(r->name), "%s.%s.%s.%s.%d", o->file,
			 layout_names[r->layout], pattern_names[r->pattern],
			 mode_names[r->mode], rank);
	else
		snprintf(r->name, sizeof(r->name), "%s.%s.%s.%s", o->file,
			 layout_names[r->layout], pattern_names[r->pattern],
			 mode_names[r->mode]);
	open_file(r);
	for (int k = 0; k < reps; k++) {
		uint64_t gen = ++generation * 0x9e3779b97f4a7c15ULL;

		fill(r->wbuf, bytes, gen);
		t[WRITE][k] = t[READ][k] = 0;
		for (int p = 0; p < o->passes; p++)
			t[WRITE][k] += timed_pass(r, WRITE, &cpu[WRITE]) / o->passes;
		memset(r->rbuf, 0, bytes);
		for (int p = 0; p < o->passes; p++)
			t[READ][k] += timed_pass(r, READ, &cpu[READ]) / o->passes;
		snprintf(what, sizeof(what), "read of %zu-byte transfers", r->size);
		verify(r->rbuf, bytes, gen, what);
	}
	close_file(r);
	MPI_Barrier(MPI_COMM_WORLD);
	if (r->layout == FPP || rank == 0)
		MPI_File_delete(r->name, MPI_INFO_NULL);

	snprintf(param, sizeof(param), "%s;%s;%s;np=%d;size=%zu", layout_names[r->layout],
		 pattern_names[r->pattern], mode_names[r->mode], nprocs, r->size);
	for (int d = WRITE; d <= READ; d++) {
		double secs = median(t[d], reps), all_cpu;
		double total = (double)bytes * nprocs;

		emit(o, o->exp, dir_names[d], param, total / secs / 1e6, "MB/s");
		MPI_Reduce(&cpu[d], &all_cpu, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
		if (o->cpu)
			emit(o, "cpu", d == WRITE ? "client_write" : "client_read", param,
			     all_cpu / (total * reps * o->passes / (1u << 30)), "s/GiB");
		if (o->cpu)
			emit(o, "cpu", d == WRITE ? "moved_write" : "moved_read", param,
			     total * reps * o->passes / (1u << 30), "GiB");
	}
}

static void bandwidth(const struct opts *o)
{
	size_t max_bytes = 0;
	unsigned char *wbuf, *rbuf;

	for (int i = 0; i < o->nsizes; i++) {
		size_t c = o->bytes / o->sizes[i];

		c = c < (size_t)o->min_count ? (size_t)o->min_count : c;
		c = c > (size_t)o->max_count ? (size_t)o->max_count : c;
		if (c * o->sizes[i] > max_bytes)
			max_bytes = c * o->sizes[i];
	}
	if (!max_bytes)
		return;
	wbuf = malloc(max_bytes);
	rbuf = malloc(max_bytes);
	if (!wbuf || !rbuf)
		fail("cannot allocate %s", "buffers", MPI_SUCCESS);
	for (int l = SHARED; l <= FPP; l++)
		for (int p = CONTIG; p <= STRIDED; p++)
			for (int m = INDEP; m <= COLL; m++) {
				if (!o->layouts[l] || !o->patterns[p] || !o->modes[m])
					continue;
				for (int i = 0; i < o->nsizes; i++) {
					struct run r = {.o = o,
							.layout = l,
							.pattern = p,
							.mode = m,
							.size = o->sizes[i],
							.wbuf = wbuf,
							.rbuf = rbuf};
					size_t c = o->bytes / r.size;

					c = c < (size_t)o->min_count
						    ? (size_t)o->min_count
						    : c;
					c = c > (size_t)o->max_count
						    ? (size_t)o->max_count
						    : c;
					r.count = (int)c;
					bw_run(&r);
				}
			}
	free(wbuf);
	free(rbuf);
}

/* ---- latency and open -------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void latency(const struct opts *o, MPI_File fh)
{
	const size_t size = 4096;
	int n = o->lat;
	unsigned char *wbuf = malloc(size * (size_t)n), *rbuf = malloc(size * (size_t)n);
	double *mine = malloc(sizeof(double) * (size_t)n);
	double *all = rank == 0 ? malloc(sizeof(double) * (size_t)n * nprocs) : NULL;
	uint64_t gen = ++generation * 0x9e3779b97f4a7c15ULL;
	static const double pct[] = {50, 90, 99, 100};
	static const char *const pct_names[] = {"p50", "p90", "p99", "max"};

	if (!wbuf || !rbuf || !mine || (rank == 0 && !all))
		fail("cannot allocate %s", "latency buffers", MPI_SUCCESS);
	fill(wbuf, size * (size_t)n, gen);
	memset(rbuf, 0, size * (size_t)n);
	for (int d = WRITE; d <= READ; d++) {
		MPI_Barrier(MPI_COMM_WORLD);
		for (int i = 0; i < n; i++) {
			MPI_Offset off =
				((MPI_Offset)i * nprocs + rank) * (MPI_Offset)size;
			unsigned char *b = (d == WRITE ? wbuf : rbuf) + (size_t)i * size;
			MPI_Status st;
			double t0 = MPI_Wtime();
			int rc = d == WRITE ? MPI_File_write_at(fh, off, b, (int)size,
								MPI_BYTE, &st)
					    : MPI_File_read_at(fh, off, b, (int)size,
							       MPI_BYTE, &st);

			mine[i] = MPI_Wtime() - t0;
			check(rc, dir_names[d]);
		}
		MPI_Gather(mine, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		if (rank == 0) {
			int total = n * nprocs;

			qsort(all, (size_t)total, sizeof(double), cmp_double);
			for (int k = 0; k < 4; k++) {
				int idx = (int)(pct[k] / 100.0 * total + 0.5) - 1;
				char param[64];

				idx = idx < 0 ? 0 : idx >= total ? total - 1 : idx;
				snprintf(param, sizeof(param), "np=%d;size=%zu;%s",
					 nprocs, size, pct_names[k]);
				emit(o, "latency", dir_names[d], param, all[idx] * 1e6,
				     "us");
			}
		}
	}
	verify(rbuf, size * (size_t)n, gen, "latency read");
	free(wbuf);
	free(rbuf);
	free(mine);
	free(all);
}

/* The first open of the process, a second one, and the latency runs on
 * that file. */
static void open_and_latency(const struct opts *o)
{
	char name[1024], param[64];
	double t0, t[2], tmax[2];
	MPI_File fh;

	snprintf(name, sizeof(name), "%s.open", o->file);
	for (int k = 0; k < 2; k++) {
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		check(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR,
				    o->info, &fh),
		      name);
		t[k] = MPI_Wtime() - t0;
		if (k == 0)
			check(MPI_File_close(&fh), "close");
	}
	MPI_Allreduce(t, tmax, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	snprintf(param, sizeof(param), "np=%d", nprocs);
	emit(o, "open", "first_open", param, tmax[0] * 1e3, "ms");
	emit(o, "open", "open", param, tmax[1] * 1e3, "ms");
	if (o->lat)
		latency(o, fh);
	check(MPI_File_close(&fh), "close");
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		MPI_File_delete(name, MPI_INFO_NULL);
}

int main(int argc, char **argv)
{
	struct opts o = {0};

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
	parse_args(&o, argc, argv);
	open_and_latency(&o);
	bandwidth(&o);
	fflush(stdout);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		fprintf(stderr, "mpiio_bw: %s: every read verified\n", o.system);
	MPI_Info_free(&o.info);
	MPI_Finalize();
	return 0;
}
