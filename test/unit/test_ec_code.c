/* The ec:K+P code (ec_code.h) against an oracle of its own: GF(2^8)
 * multiplication bit by bit and the Cauchy coefficients 1 / ((K + j) ^ i)
 * worked out here, not taken from ISA-L. Encode equals the oracle at odd
 * and even lengths; every erasure pattern of up to P cells of the small
 * codes, and random ones of the large, decode to the original bytes;
 * deltas applied in any order (ec_update, or ec_update_one cell by cell)
 * give the parity of the final data; decode refuses too few cells and bad
 * indexes, writing nothing; init refuses sizes out of range; known answers
 * pin the parity format. Every cell sits between guard bytes, at an odd
 * address for some, and the guards are checked after each call. */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ec_code.h"

#define GUARD	  64
#define GUARD_VAL 0xa5
#define MAXCELLS  (2 * EC_CELLS_MAX)

/* Lengths every code runs: under ISA-L's vector width, around it, a page
 * and one past it, and 64 KiB + 17. */
static const size_t lengths[] = {1, 3, 31, 33, 64, 4096, 4097, 65536 + 17};
#define NLENGTHS (sizeof(lengths) / sizeof(lengths[0]))

/* ---- a deterministic random source ------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static unsigned rnd_below(unsigned n)
{
	return (unsigned)(rnd() % n);
}

static void rnd_fill(unsigned char *b, size_t len)
{
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t x = rnd();

		memcpy(b + i, &x, 8);
	}
	for (; i < len; i++)
		b[i] = (unsigned char)(rnd() >> 24);
}

static void shuffle(unsigned *v, unsigned n)
{
	for (unsigned i = n; i > 1; i--) {
		unsigned j = rnd_below(i), t = v[i - 1];

		v[i - 1] = v[j];
		v[j] = t;
	}
}

static void seed(uint64_t s)
{
	rng_state = s * 0x9e3779b97f4a7c15ull + 1;
}

/* ---- the oracle: GF(2^8) of x^8 + x^4 + x^3 + x^2 + 1, bit by bit ------ */

static unsigned char gf_mul_slow(unsigned char a, unsigned char b)
{
	unsigned char r = 0;

	while (b) {
		if (b & 1)
			r ^= a;
		a = (unsigned char)((a << 1) ^ (a & 0x80 ? 0x1d : 0));
		b >>= 1;
	}
	return r;
}

static unsigned char gf_inv_slow(unsigned char a)
{
	for (unsigned x = 1; x < 256; x++)
		if (gf_mul_slow(a, (unsigned char)x) == 1)
			return (unsigned char)x;
	ck_abort_msg("0 has no inverse");
	return 0;
}

/* Parity j's coefficient of data cell i in the K+P Cauchy code. */
static unsigned char coef_oracle(unsigned k, unsigned j, unsigned i)
{
	return gf_inv_slow((unsigned char)((k + j) ^ i));
}

/* gf_mul_slow as a table, made once (the oracle's encode of 32+32 cells
 * of 64 KiB is 2^27 products). */
static unsigned char mul_table[256][256];
static bool mul_table_made;

static void mul_table_make(void)
{
	if (mul_table_made)
		return;
	for (unsigned a = 0; a < 256; a++)
		for (unsigned b = 0; b < 256; b++)
			mul_table[a][b] = gf_mul_slow((unsigned char)a, (unsigned char)b);
	mul_table_made = true;
}

/* parity[j][b] = sum over i of coef(j, i) * data[i][b], byte by byte. */
static void encode_oracle(unsigned k, unsigned p, size_t len, unsigned char *const *data,
			  unsigned char **parity)
{
	unsigned char coef[EC_CELLS_MAX][EC_CELLS_MAX];

	for (unsigned j = 0; j < p; j++)
		for (unsigned i = 0; i < k; i++)
			coef[j][i] = coef_oracle(k, j, i);
	mul_table_make();
	for (unsigned j = 0; j < p; j++)
		for (size_t b = 0; b < len; b++) {
			unsigned char s = 0;

			for (unsigned i = 0; i < k; i++)
				s ^= mul_table[coef[j][i]][data[i][b]];
			parity[j][b] = s;
		}
}

/* ---- cells between guard bytes ----------------------------------------- */

struct cells {
	unsigned n;
	size_t len;
	unsigned char *mem[MAXCELLS];
	unsigned char *cell[MAXCELLS];
};

/* n cells of len bytes, each GUARD guard bytes either side; every third
 * cell at an odd address. Contents: fill (random if fill < 0). */
static void cells_make(struct cells *s, unsigned n, size_t len, int fill)
{
	s->n = n;
	s->len = len;
	for (unsigned i = 0; i < n; i++) {
		size_t skew = i % 3 == 1;

		s->mem[i] = malloc(len + 2 * GUARD + 1);
		ck_assert_ptr_nonnull(s->mem[i]);
		memset(s->mem[i], GUARD_VAL, len + 2 * GUARD + 1);
		s->cell[i] = s->mem[i] + GUARD + skew;
		if (fill < 0)
			rnd_fill(s->cell[i], len);
		else
			memset(s->cell[i], fill, len);
	}
}

/* Is every byte of b[0..len-1] v? */
static bool all_bytes(const unsigned char *b, size_t len, unsigned char v)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != v)
			return false;
	return true;
}

/* Are the guard bytes of every cell untouched? (One assertion a cell:
 * Check records each passed one.) */
static void cells_check_guards(const struct cells *s)
{
	for (unsigned i = 0; i < s->n; i++) {
		size_t skew = (size_t)(s->cell[i] - s->mem[i]) - GUARD;

		if (!all_bytes(s->mem[i], GUARD + skew, GUARD_VAL) ||
		    !all_bytes(s->cell[i] + s->len, GUARD + 1 - skew, GUARD_VAL))
			ck_abort_msg("a guard byte of cell %u of %u changed", i, s->n);
	}
}

static void cells_free(struct cells *s)
{
	for (unsigned i = 0; i < s->n; i++)
		free(s->mem[i]);
	s->n = 0;
}

static void assert_same_cell(const unsigned char *got, const unsigned char *want,
			     size_t len, const char *what, unsigned idx)
{
	if (memcmp(got, want, len)) {
		size_t b = 0;

		while (got[b] == want[b])
			b++;
		ck_abort_msg("%s %u differs at byte %zu of %zu: %#x, not %#x", what, idx,
			     b, len, got[b], want[b]);
	}
}

/* ---- init --------------------------------------------------------------- */

START_TEST(init_takes_1_to_the_limit_of_data_and_of_parity)
{
	static const unsigned bad[][2] = {
		{0, 1},
		{1, 0},
		{0, 0},
		{EC_CELLS_MAX + 1, 1},
		{1, EC_CELLS_MAX + 1},
		{EC_CELLS_MAX + 1, EC_CELLS_MAX + 1},
		{UINT_MAX, 2},
		{4, UINT_MAX},
		{256, 256},
	};
	struct ec_code c;

	ck_assert_uint_eq(EC_CELLS_MAX, 32);
	for (size_t t = 0; t < sizeof(bad) / sizeof(bad[0]); t++) {
		memset(&c, 0x5a, sizeof(c));
		ck_assert_int_eq(ec_code_init(&c, bad[t][0], bad[t][1]), -EINVAL);
		ck_assert_ptr_null(c.matrix);
		ck_assert_ptr_null(c.parity_tables);
		ec_code_fini(&c); /* harmless on a failed init */
	}
	for (unsigned k = 1; k <= EC_CELLS_MAX; k++)
		for (unsigned p = 1; p <= EC_CELLS_MAX; p++) {
			ck_assert_int_eq(ec_code_init(&c, k, p), 0);
			ck_assert_uint_eq(c.k, k);
			ck_assert_uint_eq(c.p, p);
			ec_code_fini(&c);
			ck_assert_ptr_null(c.matrix);
			ec_code_fini(&c); /* a second fini is harmless */
		}
}
END_TEST

/* The generator is systematic (identity on top) and its parity rows are
 * the Cauchy coefficients, for every size the limits allow. */
START_TEST(coefficients_are_the_cauchy_matrix_over_0x11d)
{
	struct ec_code c;

	for (unsigned k = 1; k <= EC_CELLS_MAX; k++)
		for (unsigned p = 1; p <= EC_CELLS_MAX; p++) {
			ck_assert_int_eq(ec_code_init(&c, k, p), 0);
			for (unsigned r = 0; r < k; r++)
				for (unsigned i = 0; i < k; i++)
					if (c.matrix[r * k + i] != (r == i))
						ck_abort_msg(
							"%u+%u: row %u is not the identity's",
							k, p, r);
			for (unsigned j = 0; j < p; j++)
				for (unsigned i = 0; i < k; i++)
					if (ec_coef(&c, j, i) != coef_oracle(k, j, i))
						ck_abort_msg(
							"%u+%u: c(%u, %u) is %#x, not %#x",
							k, p, j, i, ec_coef(&c, j, i),
							coef_oracle(k, j, i));
			ec_code_fini(&c);
		}
}
END_TEST

/* ---- encode ------------------------------------------------------------- */

static const unsigned codes[][2] = {{1, 1}, {2, 1},  {3, 2},  {4, 2},	{6, 3}, {8, 4},
				    {5, 5}, {16, 4}, {32, 8}, {32, 32}, {1, 32}};
#define NCODES (sizeof(codes) / sizeof(codes[0]))

START_TEST(encode_equals_the_oracle_at_every_length)
{
	seed(1);
	for (size_t t = 0; t < NCODES; t++) {
		unsigned k = codes[t][0], p = codes[t][1];
		struct ec_code c;

		ck_assert_int_eq(ec_code_init(&c, k, p), 0);
		for (size_t l = 0; l < NLENGTHS; l++) {
			struct cells d, got, want;

			cells_make(&d, k, lengths[l], -1);
			cells_make(&got, p, lengths[l], -1);
			cells_make(&want, p, lengths[l], 0);
			ec_encode(&c, lengths[l], d.cell, got.cell);
			encode_oracle(k, p, lengths[l], d.cell, want.cell);
			for (unsigned j = 0; j < p; j++)
				assert_same_cell(got.cell[j], want.cell[j], lengths[l],
						 "parity", j);
			cells_check_guards(&d);
			cells_check_guards(&got);
			cells_free(&d);
			cells_free(&got);
			cells_free(&want);
		}
		ec_code_fini(&c);
	}
}
END_TEST

START_TEST(length_zero_writes_nothing)
{
	struct ec_code c;
	struct cells d, par;
	unsigned have[] = {0, 1, 2, 3}, want[] = {4, 5};

	seed(2);
	ck_assert_int_eq(ec_code_init(&c, 4, 2), 0);
	cells_make(&d, 4, 0, -1);
	cells_make(&par, 2, 0, -1);
	ec_encode(&c, 0, d.cell, par.cell);
	ec_update(&c, 1, 0, d.cell[0], par.cell);
	ec_update_one(&c, 1, 3, 0, d.cell[0], par.cell[1]);
	ck_assert_int_eq(ec_decode(&c, 0, 4, have, d.cell, 2, want, par.cell), 0);
	ec_xor(d.cell[0], d.cell[1], d.cell[2], 0);
	cells_check_guards(&d);
	cells_check_guards(&par);
	cells_free(&d);
	cells_free(&par);
	ec_code_fini(&c);
}
END_TEST

/* ---- decode ------------------------------------------------------------- */

/* A stripe: k data cells with random bytes, then their p parity cells. */
static void stripe_make(const struct ec_code *c, struct cells *s, size_t len)
{
	cells_make(s, c->k + c->p, len, -1);
	ec_encode(c, len, s->cell, s->cell + c->k);
}

/* Decode stripe s with the cells of lost gone: have is every surviving
 * cell in random order (all of them, or only k: either way decode reads
 * the first k), want every cell decode does not read (all n cells if
 * want_all); each wanted cell must come out equal to the original. */
static void decode_and_compare(const struct ec_code *c, const struct cells *s,
			       uint64_t lost, bool want_all)
{
	unsigned n = c->k + c->p, have[MAXCELLS], want[MAXCELLS], nhave = 0, nwant = 0;
	unsigned char *have_buf[MAXCELLS];
	struct cells out;
	uint64_t read = 0;

	for (unsigned i = 0; i < n; i++)
		if (!(lost >> i & 1))
			have[nhave++] = i;
	ck_assert_uint_ge(nhave, c->k);
	shuffle(have, nhave);
	if (rnd() & 1)
		nhave = c->k;
	for (unsigned r = 0; r < nhave; r++) {
		have_buf[r] = s->cell[have[r]];
		if (r < c->k)
			read |= (uint64_t)1 << have[r];
	}
	for (unsigned i = 0; i < n; i++)
		if (want_all || !(read >> i & 1))
			want[nwant++] = i;
	shuffle(want, nwant);

	cells_make(&out, nwant, s->len, 0x3c);
	ck_assert_int_eq(
		ec_decode(c, s->len, nhave, have, have_buf, nwant, want, out.cell), 0);
	for (unsigned w = 0; w < nwant; w++)
		assert_same_cell(out.cell[w], s->cell[want[w]], s->len, "cell", want[w]);
	cells_check_guards(&out);
	cells_check_guards(s);
	cells_free(&out);
}

static unsigned popcount64(uint64_t v)
{
	unsigned n = 0;

	for (; v; v &= v - 1)
		n++;
	return n;
}

/* Every set of at most p lost cells, data and parity, of the small codes. */
START_TEST(every_erasure_of_up_to_p_cells_decodes)
{
	static const unsigned small[][2] = {{2, 1}, {3, 2}, {4, 2}, {6, 3}, {8, 4}};

	seed(3);
	for (size_t t = 0; t < sizeof(small) / sizeof(small[0]); t++) {
		unsigned k = small[t][0], p = small[t][1], n = k + p, patterns = 0;
		struct ec_code c;

		ck_assert_int_eq(ec_code_init(&c, k, p), 0);
		for (size_t l = 0; l < NLENGTHS; l++) {
			struct cells s;

			stripe_make(&c, &s, lengths[l]);
			patterns = 0;
			for (uint64_t lost = 0; lost < (uint64_t)1 << n; lost++) {
				if (popcount64(lost) > p)
					continue;
				decode_and_compare(&c, &s, lost, false);
				patterns++;
			}
			cells_free(&s);
		}
		/* 8+4: 1 + 12 + 66 + 220 + 495 patterns. */
		if (k == 8)
			ck_assert_uint_eq(patterns, 794);
		ec_code_fini(&c);
	}
}
END_TEST

/* Random sets of at most p lost cells of the large codes, the largest the
 * limits allow among them; every cell asked for, those read too. */
START_TEST(random_erasures_of_large_codes_decode)
{
	static const unsigned large[][2] = {
		{16, 4}, {32, 8}, {EC_CELLS_MAX, EC_CELLS_MAX}, {10, 1}, {1, 8}};

	seed(4);
	for (size_t t = 0; t < sizeof(large) / sizeof(large[0]); t++) {
		unsigned k = large[t][0], p = large[t][1], n = k + p;
		struct ec_code c;

		ck_assert_int_eq(ec_code_init(&c, k, p), 0);
		for (size_t l = 0; l < NLENGTHS; l++) {
			unsigned rounds = lengths[l] > 5000 ? 12 : 60;
			struct cells s;

			stripe_make(&c, &s, lengths[l]);
			for (unsigned r = 0; r < rounds; r++) {
				unsigned idx[MAXCELLS], nlost = rnd_below(p + 1);
				uint64_t lost = 0;

				/* First the first p cells lost (as much
				 * data as can be), then the last p (all
				 * the parity), then random ones. */
				if (r < 2)
					nlost = p;
				for (unsigned i = 0; i < n; i++)
					idx[i] = i;
				if (r > 1)
					shuffle(idx, n);
				for (unsigned i = 0; i < nlost; i++)
					lost |= (uint64_t)1
						<< idx[r == 1 ? n - 1 - i : i];
				decode_and_compare(&c, &s, lost, r % 2 == 0);
			}
			cells_free(&s);
		}
		ec_code_fini(&c);
	}
}
END_TEST

/* Fewer than k cells, indexes out of range, repeated indexes: -EINVAL,
 * and the wanted cells keep their bytes. */
START_TEST(decode_refuses_too_few_cells_and_bad_indexes_writing_nothing)
{
	struct ec_code c;
	struct cells s, out;
	unsigned char *hb[MAXCELLS];
	unsigned have[MAXCELLS], want[MAXCELLS];
	const size_t len = 100;

	seed(5);
	ck_assert_int_eq(ec_code_init(&c, 8, 4), 0);
	stripe_make(&c, &s, len);
	cells_make(&out, 13, len, 0x3c);
	for (unsigned i = 0; i < 12; i++)
		hb[i] = s.cell[i];
	for (unsigned i = 0; i < MAXCELLS; i++)
		have[i] = want[i] = i % 12;

#define REFUSED(nh, nw)                                                                  \
	do {                                                                             \
		ck_assert_int_eq(                                                        \
			ec_decode(&c, len, (nh), have, hb, (nw), want, out.cell),        \
			-EINVAL);                                                        \
		for (unsigned o = 0; o < out.n; o++)                                     \
			ck_assert(all_bytes(out.cell[o], len, 0x3c));                    \
		cells_check_guards(&out);                                                \
	} while (0)

	/* p + 1 = 5 cells lost: 7 left, k is 8 (whichever 7, any count
	 * under k). */
	for (unsigned nh = 0; nh < 8; nh++) {
		for (unsigned i = 0; i < nh; i++)
			have[i] = 11 - i;
		want[0] = 0;
		want[1] = 1;
		REFUSED(nh, 2);
	}
	for (unsigned i = 0; i < 8; i++) {
		have[i] = i + 1;
		hb[i] = s.cell[i + 1];
	}
	want[0] = 0;
	want[1] = 9;
	/* The same arguments, good: it works (the refusals are for the
	 * reasons given). */
	ck_assert_int_eq(ec_decode(&c, len, 8, have, hb, 2, want, out.cell), 0);
	assert_same_cell(out.cell[0], s.cell[0], len, "cell", 0);
	memset(out.cell[0], 0x3c, len);
	memset(out.cell[1], 0x3c, len);

	have[3] = 12; /* n is 12 */
	REFUSED(8, 2);
	have[3] = UINT_MAX;
	REFUSED(8, 2);
	have[3] = 64;
	REFUSED(8, 2);
	have[3] = have[5]; /* a repeat */
	REFUSED(8, 2);
	have[3] = 4;
	have[8] = 1; /* a repeat past the first k */
	REFUSED(9, 2);
	have[8] = 12; /* out of range past the first k */
	REFUSED(9, 2);
	have[8] = 0;

	want[1] = 12;
	REFUSED(8, 2);
	want[1] = 1u << 31;
	REFUSED(8, 2);
	want[1] = 0; /* a repeat */
	REFUSED(8, 2);
	want[1] = 9;
	for (unsigned i = 0; i < 13; i++)
		want[i] = i % 12; /* 13 wanted of 12 cells */
	REFUSED(8, 13);
	REFUSED(13, 2); /* more cells given than a stripe has */
#undef REFUSED

	cells_check_guards(&s);
	cells_free(&s);
	cells_free(&out);
	ec_code_fini(&c);
}
END_TEST

/* ---- updates by delta --------------------------------------------------- */

struct upd {
	unsigned cell;
	size_t off, len;
	unsigned char *delta;
};

/* Random overwrites of random ranges of random data cells, each turned
 * into a delta (ec_xor of old and new) as a data server would; the deltas
 * applied to parity in another order, by ec_update and by ec_update_one
 * in an order of their own mixing parity cells; both equal the parity of
 * the final data, encoded afresh and by the oracle. */
START_TEST(deltas_in_any_order_give_the_parity_of_the_final_data)
{
	static const unsigned ucodes[][2] = {
		{2, 1}, {3, 2},	 {4, 2},  {6, 3},
		{8, 4}, {16, 4}, {32, 8}, {EC_CELLS_MAX, EC_CELLS_MAX}};
	static const size_t ulens[] = {1, 31, 64, 4097, 65536 + 17};
	enum { NUPD = 24 };

	seed(6);
	for (size_t t = 0; t < sizeof(ucodes) / sizeof(ucodes[0]); t++) {
		unsigned k = ucodes[t][0], p = ucodes[t][1];
		struct ec_code c;

		ck_assert_int_eq(ec_code_init(&c, k, p), 0);
		for (size_t l = 0; l < sizeof(ulens) / sizeof(ulens[0]); l++) {
			size_t len = ulens[l];
			struct cells s, pa, pb, fresh, oracle;
			struct upd u[NUPD];
			unsigned order[NUPD], pairs[NUPD * MAXCELLS];
			unsigned char *old = malloc(len);

			ck_assert_ptr_nonnull(old);
			stripe_make(&c, &s, len);
			cells_make(&pa, p, len, 0);
			cells_make(&pb, p, len, 0);
			for (unsigned j = 0; j < p; j++) {
				memcpy(pa.cell[j], s.cell[k + j], len);
				memcpy(pb.cell[j], s.cell[k + j], len);
			}
			for (unsigned n = 0; n < NUPD; n++) {
				struct upd *x = &u[n];

				x->cell = rnd_below(k);
				x->off = rnd_below((unsigned)len);
				/* Short ranges (ISA-L's base code) as often
				 * as long ones. */
				x->len = 1 + rnd_below((unsigned)(len - x->off));
				if (rnd() & 1 && x->len > 40)
					x->len = 1 + rnd_below(40);
				if (n == 1) {
					/* The same cell as the first, its
					 * range overlapping. */
					x->cell = u[0].cell;
					x->off = u[0].off;
					x->len = u[0].len;
				}
				x->delta = malloc(x->len);
				ck_assert_ptr_nonnull(x->delta);
				memcpy(old, s.cell[x->cell] + x->off, x->len);
				rnd_fill(s.cell[x->cell] + x->off, x->len);
				ec_xor(x->delta, old, s.cell[x->cell] + x->off, x->len);
				order[n] = n;
			}
			shuffle(order, NUPD);
			for (unsigned n = 0; n < NUPD; n++) {
				const struct upd *x = &u[order[n]];
				unsigned char *dst[EC_CELLS_MAX];

				for (unsigned j = 0; j < p; j++)
					dst[j] = pa.cell[j] + x->off;
				ec_update(&c, x->cell, x->len, x->delta, dst);
			}
			for (unsigned n = 0; n < NUPD * p; n++)
				pairs[n] = n;
			shuffle(pairs, NUPD * p);
			for (unsigned n = 0; n < NUPD * p; n++) {
				const struct upd *x = &u[pairs[n] / p];
				unsigned j = pairs[n] % p;

				ec_update_one(&c, j, x->cell, x->len, x->delta,
					      pb.cell[j] + x->off);
			}

			cells_make(&fresh, p, len, -1);
			cells_make(&oracle, p, len, 0);
			ec_encode(&c, len, s.cell, fresh.cell);
			encode_oracle(k, p, len, s.cell, oracle.cell);
			for (unsigned j = 0; j < p; j++) {
				assert_same_cell(fresh.cell[j], oracle.cell[j], len,
						 "fresh", j);
				assert_same_cell(pa.cell[j], fresh.cell[j], len,
						 "updated parity", j);
				assert_same_cell(pb.cell[j], fresh.cell[j], len,
						 "parity updated one by one", j);
			}
			cells_check_guards(&pa);
			cells_check_guards(&pb);
			cells_check_guards(&s);
			for (unsigned n = 0; n < NUPD; n++)
				free(u[n].delta);
			free(old);
			cells_free(&s);
			cells_free(&pa);
			cells_free(&pb);
			cells_free(&fresh);
			cells_free(&oracle);
		}
		ec_code_fini(&c);
	}
}
END_TEST

/* A delta of one byte changes that byte of each parity cell by
 * coefficient * delta and no other byte. */
START_TEST(update_one_multiplies_by_the_one_coefficient)
{
	struct ec_code c;
	unsigned char par[100], ref[100], delta[1];

	seed(7);
	ck_assert_int_eq(ec_code_init(&c, 6, 3), 0);
	for (unsigned r = 0; r < 200; r++) {
		unsigned j = rnd_below(3), i = rnd_below(6), at = rnd_below(100);

		rnd_fill(par, sizeof(par));
		memcpy(ref, par, sizeof(par));
		rnd_fill(delta, 1);
		ec_update_one(&c, j, i, 1, delta, par + at);
		ref[at] ^= gf_mul_slow(coef_oracle(6, j, i), delta[0]);
		ck_assert_mem_eq(par, ref, sizeof(par));
	}
	ec_code_fini(&c);
}
END_TEST

START_TEST(xor_is_bytewise_at_any_alignment_and_in_place)
{
	unsigned char a[200], b[200], d[200], ref[200];

	seed(8);
	for (size_t len = 0; len <= 80; len++)
		for (size_t off = 0; off < 9; off++) {
			rnd_fill(a, sizeof(a));
			rnd_fill(b, sizeof(b));
			memcpy(d, a, sizeof(d));
			for (size_t i = 0; i < len; i++)
				ref[i] = a[off + i] ^ b[i + 3];
			ec_xor(d + off + 1, a + off, b + 3, len);
			ck_assert_mem_eq(d + off + 1, ref, len);
			/* No byte outside: */
			ck_assert_mem_eq(d, a, off + 1);
			ck_assert_mem_eq(d + off + 1 + len, a + off + 1 + len,
					 sizeof(d) - off - 1 - len);
			/* In place, dst == a and dst == b. */
			memcpy(d, a, sizeof(d));
			ec_xor(d + off, d + off, b + 3, len);
			ck_assert_mem_eq(d + off, ref, len);
			memcpy(d, b, sizeof(d));
			ec_xor(d + 3, a + off, d + 3, len);
			ck_assert_mem_eq(d + 3, ref, len);
		}
}
END_TEST

/* ---- known answers ------------------------------------------------------ */

/* The parity of fixed data, computed once (by this code, equal to the
 * oracle above) and pasted here. These bytes pin the on-disk format of ec
 * files' parity: if the code ever computes other bytes, the parity of
 * every existing ec file no longer decodes its data. Never change them to
 * make the test pass; a new format is a new layout kind. Data cell i, byte
 * b: (b * 7 + i) & 0xff; 48 bytes (ISA-L's vector code and a tail). */
#define KAT_LEN 48

static const unsigned char kat_2_1[1][KAT_LEN] = {
	{0xf4, 0x7e, 0x02, 0x7d, 0x05, 0x83, 0x0c, 0x73, 0x0b, 0x5a, 0x1e, 0x92,
	 0x19, 0x97, 0x10, 0x9c, 0x17, 0x9d, 0xe1, 0x45, 0x3d, 0x40, 0xcf, 0x4b,
	 0x33, 0x42, 0x36, 0xba, 0x21, 0xaf, 0xd3, 0x5f, 0x2f, 0xa5, 0xd9, 0xa6,
	 0xde, 0x78, 0xf7, 0x88, 0xf0, 0x6a, 0x0e, 0x82, 0x09, 0x87, 0xeb, 0x67},
};
static const unsigned char kat_4_2[2][KAT_LEN] = {
	{0x80, 0xc4, 0xa8, 0x4b, 0x27, 0x2f, 0x8e, 0x06, 0xd3, 0x2d, 0xc1, 0xeb,
	 0xd2, 0x94, 0x7b, 0xc9, 0x26, 0x62, 0xf5, 0xbc, 0xd0, 0xac, 0x0d, 0xf1,
	 0x24, 0x5e, 0xaa, 0xff, 0x25, 0x63, 0xf8, 0x4a, 0xd1, 0x95, 0xf9, 0x1a,
	 0x76, 0x5b, 0xfa, 0x72, 0xa7, 0xa1, 0x5d, 0x77, 0x4e, 0x08, 0x0f, 0xbd},
	{0xa0, 0x50, 0x88, 0x42, 0x07, 0xe8, 0xae, 0x41, 0xf3, 0xec, 0xe1, 0x7e,
	 0xf2, 0x53, 0x5b, 0x8e, 0x06, 0xf6, 0xd5, 0xb5, 0xf0, 0x6b, 0x2d, 0xb6,
	 0x04, 0x6c, 0x8a, 0x05, 0x05, 0xa4, 0xd8, 0x0d, 0xf1, 0x01, 0xd9, 0x13,
	 0x56, 0x9c, 0xda, 0x35, 0x87, 0xc2, 0x7d, 0xe2, 0x6e, 0xcf, 0x2f, 0xfa},
};

static void kat_check(unsigned k, unsigned p, const unsigned char (*want)[KAT_LEN])
{
	struct ec_code c;
	unsigned char data[EC_CELLS_MAX][KAT_LEN], par[EC_CELLS_MAX][KAT_LEN];
	unsigned char oracle[EC_CELLS_MAX][KAT_LEN];
	unsigned char *dp[EC_CELLS_MAX], *pp[EC_CELLS_MAX], *op[EC_CELLS_MAX];

	ck_assert_int_eq(ec_code_init(&c, k, p), 0);
	for (unsigned i = 0; i < k; i++) {
		for (unsigned b = 0; b < KAT_LEN; b++)
			data[i][b] = (unsigned char)(b * 7 + i);
		dp[i] = data[i];
	}
	for (unsigned j = 0; j < p; j++) {
		pp[j] = par[j];
		op[j] = oracle[j];
	}
	ec_encode(&c, KAT_LEN, dp, pp);
	encode_oracle(k, p, KAT_LEN, dp, op);
	for (unsigned j = 0; j < p; j++) {
		assert_same_cell(par[j], oracle[j], KAT_LEN, "oracle parity", j);
		assert_same_cell(par[j], want[j], KAT_LEN, "known parity", j);
	}
	ec_code_fini(&c);
}

START_TEST(parity_of_fixed_data_is_the_known_answer)
{
	kat_check(2, 1, kat_2_1);
	kat_check(4, 2, kat_4_2);
}
END_TEST

/* ---- a caller's bug stops the program ----------------------------------- */

START_TEST(update_of_a_data_cell_past_k_stops_the_program)
{
	struct ec_code c;
	unsigned char delta[8] = {1}, par[2][8], *pp[2] = {par[0], par[1]};

	ck_assert_int_eq(ec_code_init(&c, 4, 2), 0);
	ec_update(&c, 4, sizeof(delta), delta, pp);
}
END_TEST

START_TEST(update_one_of_a_parity_cell_past_p_stops_the_program)
{
	struct ec_code c;
	unsigned char delta[8] = {1}, par[8];

	ck_assert_int_eq(ec_code_init(&c, 4, 2), 0);
	ec_update_one(&c, 2, 0, sizeof(delta), delta, par);
}
END_TEST

static Suite *ec_suite(void)
{
	Suite *s = suite_create("ec_code");
	TCase *tc = tcase_create("init");

	tcase_add_test(tc, init_takes_1_to_the_limit_of_data_and_of_parity);
	tcase_add_test(tc, coefficients_are_the_cauchy_matrix_over_0x11d);
	tcase_add_test(tc, parity_of_fixed_data_is_the_known_answer);
	suite_add_tcase(s, tc);

	tc = tcase_create("encode");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, encode_equals_the_oracle_at_every_length);
	tcase_add_test(tc, length_zero_writes_nothing);
	tcase_add_test(tc, xor_is_bytewise_at_any_alignment_and_in_place);
	suite_add_tcase(s, tc);

	tc = tcase_create("decode");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, every_erasure_of_up_to_p_cells_decodes);
	tcase_add_test(tc, random_erasures_of_large_codes_decode);
	tcase_add_test(tc, decode_refuses_too_few_cells_and_bad_indexes_writing_nothing);
	suite_add_tcase(s, tc);

	tc = tcase_create("update");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, deltas_in_any_order_give_the_parity_of_the_final_data);
	tcase_add_test(tc, update_one_multiplies_by_the_one_coefficient);
	suite_add_tcase(s, tc);
	return s;
}

/* Tests that end in abort(): only where each test runs in a child. */
static Suite *ec_abort_suite(void)
{
	Suite *s = suite_create("ec_code_bugs");
	TCase *tc = tcase_create("bugs");

	tcase_add_test_raise_signal(tc, update_of_a_data_cell_past_k_stops_the_program,
				    SIGABRT);
	tcase_add_test_raise_signal(
		tc, update_one_of_a_parity_cell_past_p_stops_the_program, SIGABRT);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ec_suite());
	int failed;

	if (srunner_fork_status(sr) == CK_FORK)
		srunner_add_suite(sr, ec_abort_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
