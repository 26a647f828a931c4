/* rpfs-ec-bench: what the arithmetic of ec:K+P files costs a CPU core
 * (common/ec_code.c, ISA-L), for bench/run's erasure-code rows and the
 * cost section of docs/design/erasure-coding.md.
 *
 * For each code K+P and cell size, one thread, CPU time of this process:
 *   encode   the P parity cells of K data cells (a stripe made whole, a
 *            parity member re-encoded): per GiB of data
 *   delta    old ^ new of a write (ec_xor, on the data server): per GiB
 *            written
 *   update   c(j, i) * delta for each of the P parity members
 *            (ec_update_one, on the data server, before the forwards): per
 *            GiB written
 *   apply    what one parity server does with a delta it receives (an XOR
 *            into its old bytes): per GiB written
 *   decode1  one lost data cell from K survivors: per GiB rebuilt
 *   decodeP  P lost data cells from K survivors: per GiB rebuilt
 * Rows: "ec_cost,isal,OP,k=K;p=P;cell=BYTES,VALUE,s/GiB" and the same as
 * GB/s of one core. Each figure runs for at least --seconds (0.3; --quick
 * 0.05) and is the best of 3 such runs (the least disturbed by the other
 * processes on a shared machine). Every result is checked before it is
 * timed: parity from deltas equals parity encoded from scratch, and
 * decoded cells equal the lost ones; a mismatch ends the run with exit 1.
 *
 * usage: rpfs-ec-bench [--quick] [--seconds S] [--codes K+P,...]
 *                      [--cell BYTES]   (defaults 2+1,4+2,8+3 and 1 MiB) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ec_code.h"

#define CODES_MAX 16
#define ROUNDS	  3

struct stripe {
	size_t cell;
	unsigned char *data[EC_CELLS_MAX];   /* K data cells */
	unsigned char *parity[EC_CELLS_MAX]; /* P parity cells */
	unsigned char *spare[EC_CELLS_MAX];  /* scratch: parity again, decoded cells */
	unsigned char *newer;		     /* a write's new bytes of cell 0 */
	unsigned char *delta;		     /* old ^ new */
	unsigned char *scaled;		     /* c(j, 0) * delta */
};

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned long long rng = 0x9e3779b97f4a7c15ull;

static void fill(unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		p[i] = (unsigned char)rng;
	}
}

static unsigned char *cell_new(size_t len)
{
	unsigned char *p = malloc(len);

	if (!p) {
		fprintf(stderr, "rpfs-ec-bench: no memory for a cell of %zu bytes\n",
			len);
		exit(1);
	}
	fill(p, len);
	return p;
}

static void bad(const char *what, const struct ec_code *c)
{
	fprintf(stderr, "rpfs-ec-bench: ec:%u+%u: %s\n", c->k, c->p, what);
	exit(1);
}

/* Decode the first lost data cells of s into s->spare from the next K
 * cells (data, then parity): what a degraded read of them does. */
static void decode_first(const struct ec_code *c, struct stripe *s, unsigned lost)
{
	unsigned have[EC_CELLS_MAX], want[EC_CELLS_MAX], n = 0;
	unsigned char *have_buf[EC_CELLS_MAX];

	for (unsigned i = lost; i < c->k + c->p && n < c->k; i++) {
		have[n] = i;
		have_buf[n++] = i < c->k ? s->data[i] : s->parity[i - c->k];
	}
	for (unsigned i = 0; i < lost; i++)
		want[i] = i;
	if (ec_decode(c, s->cell, n, have, have_buf, lost, want, s->spare))
		bad("decode refused", c);
}

/* The checks the timed operations rely on, once per code. */
static void verify(const struct ec_code *c, struct stripe *s)
{
	unsigned lost = c->p < c->k ? c->p : c->k;

	ec_encode(c, s->cell, s->data, s->parity);
	/* a write of cell 0 by delta keeps parity equal to a fresh encode */
	ec_xor(s->delta, s->data[0], s->newer, s->cell);
	for (unsigned j = 0; j < c->p; j++) {
		memset(s->scaled, 0, s->cell);
		ec_update_one(c, j, 0, s->cell, s->delta, s->scaled);
		ec_xor(s->parity[j], s->parity[j], s->scaled, s->cell);
	}
	memcpy(s->data[0], s->newer, s->cell);
	ec_encode(c, s->cell, s->data, s->spare);
	for (unsigned j = 0; j < c->p; j++)
		if (memcmp(s->spare[j], s->parity[j], s->cell))
			bad("parity updated by a delta differs from parity encoded", c);
	/* the first min(P, K) data cells lost: decoded from the rest */
	decode_first(c, s, lost);
	for (unsigned i = 0; i < lost; i++)
		if (memcmp(s->spare[i], s->data[i], s->cell))
			bad("a decoded cell differs from the lost one", c);
}

enum op { OP_ENCODE, OP_DELTA, OP_UPDATE, OP_APPLY, OP_DECODE1, OP_DECODEP, OPS };
static const char *const op_names[OPS] = {"encode", "delta",   "update",
					  "apply",  "decode1", "decodeP"};

/* One run of op: bytes of user data it stands for (a GiB's worth is the
 * unit of the rows). */
static size_t once(const struct ec_code *c, struct stripe *s, enum op op)
{
	unsigned lost = op == OP_DECODE1 ? 1 : (c->p < c->k ? c->p : c->k);

	switch (op) {
	case OP_ENCODE:
		ec_encode(c, s->cell, s->data, s->spare);
		return s->cell * c->k;
	case OP_DELTA:
		ec_xor(s->delta, s->data[0], s->newer, s->cell);
		return s->cell;
	case OP_UPDATE:
		for (unsigned j = 0; j < c->p; j++) {
			memset(s->spare[j], 0, s->cell);
			ec_update_one(c, j, 0, s->cell, s->delta, s->spare[j]);
		}
		return s->cell;
	case OP_APPLY:
		ec_xor(s->spare[0], s->parity[0], s->scaled, s->cell);
		return s->cell;
	case OP_DECODE1:
	case OP_DECODEP:
		decode_first(c, s, lost);
		return s->cell * lost;
	default:
		return 0;
	}
}

/* CPU seconds per GiB of op: the best of ROUNDS runs of >= secs each. */
static double cost(const struct ec_code *c, struct stripe *s, enum op op, double secs)
{
	double best = 0;

	for (int r = 0; r < ROUNDS; r++) {
		double t0 = cpu_now(), t;
		size_t bytes = 0;

		do {
			bytes += once(c, s, op);
			t = cpu_now() - t0;
		} while (t < secs);
		t = t / ((double)bytes / (1u << 30));
		if (!r || t < best)
			best = t;
	}
	return best;
}

static int parse_codes(const char *arg, unsigned (*codes)[2], int *n)
{
	const char *p = arg;

	*n = 0;
	while (*p) {
		char *end;
		unsigned long k = strtoul(p, &end, 10), q;

		if (end == p || *end != '+' || *n >= CODES_MAX)
			return -1;
		p = end + 1;
		q = strtoul(p, &end, 10);
		if (end == p || (*end && *end != ','))
			return -1;
		if (!k || !q || k > EC_CELLS_MAX || q > EC_CELLS_MAX)
			return -1;
		codes[*n][0] = (unsigned)k;
		codes[(*n)++][1] = (unsigned)q;
		p = *end ? end + 1 : end;
	}
	return *n ? 0 : -1;
}

int main(int argc, char **argv)
{
	unsigned codes[CODES_MAX][2];
	int ncodes = 0;
	double secs = 0.3;
	size_t cell = 1u << 20;

	parse_codes("2+1,4+2,8+3", codes, &ncodes);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--quick")) {
			secs = 0.05;
		} else if (!strcmp(a, "--seconds") && v) {
			secs = atof(v);
			i++;
		} else if (!strcmp(a, "--codes") && v) {
			if (parse_codes(v, codes, &ncodes)) {
				fprintf(stderr,
					"rpfs-ec-bench: bad --codes '%s' (K+P,...)\n", v);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--cell") && v) {
			cell = strtoull(v, NULL, 10);
			i++;
		} else {
			fprintf(stderr, "usage: rpfs-ec-bench [--quick] [--seconds S] "
					"[--codes K+P,...] [--cell BYTES]\n");
			return 2;
		}
	}
	if (!cell || secs <= 0) {
		fprintf(stderr, "rpfs-ec-bench: --cell and --seconds must be > 0\n");
		return 2;
	}
	for (int n = 0; n < ncodes; n++) {
		struct ec_code c;
		struct stripe s = {.cell = cell};

		if (ec_code_init(&c, codes[n][0], codes[n][1])) {
			fprintf(stderr, "rpfs-ec-bench: no code ec:%u+%u\n", codes[n][0],
				codes[n][1]);
			return 1;
		}
		for (unsigned i = 0; i < c.k; i++)
			s.data[i] = cell_new(cell);
		for (unsigned j = 0; j < EC_CELLS_MAX; j++) {
			s.parity[j] = j < c.p ? cell_new(cell) : NULL;
			s.spare[j] = cell_new(cell);
		}
		s.newer = cell_new(cell);
		s.delta = cell_new(cell);
		s.scaled = cell_new(cell);
		verify(&c, &s);
		ec_xor(s.delta, s.data[0], s.newer, cell);
		for (int op = 0; op < OPS; op++) {
			double t = cost(&c, &s, (enum op)op, secs);

			printf("ec_cost,isal,%s,k=%u;p=%u;cell=%zu,%.6f,s/GiB\n",
			       op_names[op], c.k, c.p, cell, t);
			printf("ec_cost,isal,%s,k=%u;p=%u;cell=%zu,%.3f,GB/s\n",
			       op_names[op], c.k, c.p, cell,
			       (double)(1u << 30) / t / 1e9);
		}
		fflush(stdout);
		for (unsigned i = 0; i < c.k; i++)
			free(s.data[i]);
		for (unsigned j = 0; j < EC_CELLS_MAX; j++) {
			free(s.parity[j]);
			free(s.spare[j]);
		}
		free(s.newer);
		free(s.delta);
		free(s.scaled);
		ec_code_fini(&c);
	}
	fprintf(stderr, "rpfs-ec-bench: every code's parity and decodes checked\n");
	return 0;
}
