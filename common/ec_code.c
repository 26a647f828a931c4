/* The ec:K+P code's arithmetic (ec_code.h): a Cauchy Reed-Solomon code
 * through ISA-L, its delta updates and its decode of any K cells. */
#include "ec_code.h"

#include <errno.h>
#include <isa-l/erasure_code.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ISA-L takes an int length: longer runs go in pieces of this many bytes
 * (byte b of the output depends on byte b of the inputs alone). */
#define EC_PIECE_MAX ((size_t)1 << 30)

/* Bytes of ISA-L's expanded table of one coefficient. */
#define EC_TABLE_BYTES 32

int ec_code_init(struct ec_code *c, unsigned k, unsigned p)
{
	memset(c, 0, sizeof(*c));
	if (k < 1 || p < 1 || k > EC_CELLS_MAX || p > EC_CELLS_MAX)
		return -EINVAL;
	c->matrix = malloc((size_t)(k + p) * k);
	c->parity_tables = malloc((size_t)EC_TABLE_BYTES * k * p);
	if (!c->matrix || !c->parity_tables) {
		ec_code_fini(c);
		return -ENOMEM;
	}
	c->k = k;
	c->p = p;
	/* Cauchy, not gf_gen_rs_matrix: some square submatrices of that one
	 * are singular (lost cells it cannot rebuild) for some k and p. */
	gf_gen_cauchy1_matrix(c->matrix, (int)(k + p), (int)k);
	ec_init_tables((int)k, (int)p, c->matrix + (size_t)k * k, c->parity_tables);
	return 0;
}

void ec_code_fini(struct ec_code *c)
{
	free(c->matrix);
	free(c->parity_tables);
	memset(c, 0, sizeof(*c));
}

unsigned char ec_coef(const struct ec_code *c, unsigned parity_index, unsigned data_index)
{
	if (parity_index >= c->p || data_index >= c->k)
		abort();
	return c->matrix[(size_t)(c->k + parity_index) * c->k + data_index];
}

void ec_encode(const struct ec_code *c, size_t len, unsigned char *const *data,
	       unsigned char **parity)
{
	unsigned char *src[EC_CELLS_MAX], *dst[EC_CELLS_MAX];

	for (size_t off = 0; off < len; off += EC_PIECE_MAX) {
		size_t n = len - off < EC_PIECE_MAX ? len - off : EC_PIECE_MAX;

		for (unsigned i = 0; i < c->k; i++)
			src[i] = data[i] + off;
		for (unsigned j = 0; j < c->p; j++)
			dst[j] = parity[j] + off;
		ec_encode_data((int)n, (int)c->k, (int)c->p, c->parity_tables, src, dst);
	}
}

/* parity[0..rows-1] ^= coefficient * delta, with the tables of those rows
 * (each row's k tables in a run, as ec_init_tables lays them out). */
static void update_rows(const struct ec_code *c, unsigned rows, unsigned char *tables,
			unsigned data_index, size_t len, const unsigned char *delta,
			unsigned char **parity)
{
	unsigned char *dst[EC_CELLS_MAX];

	for (size_t off = 0; off < len; off += EC_PIECE_MAX) {
		size_t n = len - off < EC_PIECE_MAX ? len - off : EC_PIECE_MAX;

		for (unsigned j = 0; j < rows; j++)
			dst[j] = parity[j] + off;
		/* ISA-L reads delta only; its prototype is not const. */
		ec_encode_data_update((int)n, (int)c->k, (int)rows, (int)data_index,
				      tables, (unsigned char *)(uintptr_t)(delta + off),
				      dst);
	}
}

void ec_update(const struct ec_code *c, unsigned data_index, size_t len,
	       const unsigned char *delta, unsigned char **parity)
{
	if (data_index >= c->k)
		abort();
	update_rows(c, c->p, c->parity_tables, data_index, len, delta, parity);
}

void ec_update_one(const struct ec_code *c, unsigned parity_index, unsigned data_index,
		   size_t len, const unsigned char *delta, unsigned char *parity)
{
	if (parity_index >= c->p || data_index >= c->k)
		abort();
	/* One row: that parity cell's k tables. ec_encode_data_update rather
	 * than gf_vect_mad itself, because its dispatcher sends lengths under
	 * 32 bytes to the base code (the vector gf_vect_mad refuses them). */
	update_rows(c, 1, c->parity_tables + (size_t)EC_TABLE_BYTES * c->k * parity_index,
		    data_index, len, delta, &parity);
}

/* Are the n indexes of idx each below limit and distinct? */
static bool distinct_below(const unsigned *idx, unsigned n, unsigned limit)
{
	uint64_t seen = 0;

	for (unsigned i = 0; i < n; i++) {
		if (idx[i] >= limit || (seen >> idx[i] & 1))
			return false;
		seen |= (uint64_t)1 << idx[i];
	}
	return true;
}

int ec_decode(const struct ec_code *c, size_t len, unsigned nhave, const unsigned *have,
	      unsigned char *const *have_buf, unsigned nwant, const unsigned *want,
	      unsigned char **want_buf)
{
	const unsigned k = c->k, n = c->k + c->p;
	unsigned char *src[EC_CELLS_MAX], *dst[2 * EC_CELLS_MAX];
	unsigned char *sub, *inv, *rows, *tables;

	_Static_assert(2 * EC_CELLS_MAX <= 64, "cell sets are held in a u64");
	if (nhave < k || nhave > n || nwant > n || !distinct_below(have, nhave, n) ||
	    !distinct_below(want, nwant, n))
		return -EINVAL;
	if (!nwant || !len)
		return 0;

	/* One allocation: the k x k submatrix of the cells read, its
	 * inverse, the nwant x k decode rows, and their ISA-L tables. */
	sub = malloc((size_t)k * k * 2 + (size_t)nwant * k * (1 + EC_TABLE_BYTES));
	if (!sub)
		return -ENOMEM;
	inv = sub + (size_t)k * k;
	rows = inv + (size_t)k * k;
	tables = rows + (size_t)nwant * k;

	for (unsigned r = 0; r < k; r++)
		memcpy(sub + (size_t)r * k, c->matrix + (size_t)have[r] * k, k);
	if (gf_invert_matrix(sub, inv, (int)k)) {
		/* Never, for a Cauchy matrix's rows: every k of them are
		 * independent. */
		free(sub);
		return -EIO;
	}
	/* The data are inv x (the cells read); cell w is row w of the
	 * generator times the data: (row w) x inv. A data cell's row is the
	 * identity's, so it is inv's row w. */
	for (unsigned i = 0; i < nwant; i++) {
		unsigned char *out = rows + (size_t)i * k;

		if (want[i] < k) {
			memcpy(out, inv + (size_t)want[i] * k, k);
			continue;
		}
		const unsigned char *g = c->matrix + (size_t)want[i] * k;

		for (unsigned col = 0; col < k; col++) {
			unsigned char s = 0;

			for (unsigned t = 0; t < k; t++)
				s ^= gf_mul(g[t], inv[(size_t)t * k + col]);
			out[col] = s;
		}
	}
	ec_init_tables((int)k, (int)nwant, rows, tables);

	for (size_t off = 0; off < len; off += EC_PIECE_MAX) {
		size_t m = len - off < EC_PIECE_MAX ? len - off : EC_PIECE_MAX;

		for (unsigned r = 0; r < k; r++)
			src[r] = have_buf[r] + off;
		for (unsigned i = 0; i < nwant; i++)
			dst[i] = want_buf[i] + off;
		ec_encode_data((int)m, (int)k, (int)nwant, tables, src, dst);
	}
	free(sub);
	return 0;
}

void ec_xor(unsigned char *dst, const unsigned char *a, const unsigned char *b,
	    size_t len)
{
	size_t i = 0;

	/* Whole words through memcpy: any alignment, no aliasing rule
	 * broken, and dst == a or b is fine (each word is read before it is
	 * written). */
	for (; i + 8 <= len; i += 8) {
		uint64_t x, y;

		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		x ^= y;
		memcpy(dst + i, &x, 8);
	}
	for (; i < len; i++)
		dst[i] = a[i] ^ b[i];
}
