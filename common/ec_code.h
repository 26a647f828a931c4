/* The arithmetic of the ec:K+P layout: a systematic Reed-Solomon code over
 * GF(2^8), K data cells and P parity cells a stripe, computed by ISA-L.
 *
 * The code's generator is ISA-L's Cauchy matrix (gf_gen_cauchy1_matrix):
 * (K+P) x K, the identity on top, below it c(j, i) = 1 / ((K + j) ^ i) for
 * parity j and data i (GF(2^8) of the polynomial 0x11d). Every K x K
 * submatrix of it is invertible, so any K cells of a stripe rebuild the
 * others. Its coefficients are the on-disk format of ec files' parity: a
 * change to them makes existing files undecodable (test_ec_code pins them).
 *
 * A cell is a run of len bytes; byte b of a parity cell depends only on
 * byte b of each data cell. Every function takes any len >= 1: ISA-L's
 * dispatchers give lengths its vector code does not take (under 32 bytes)
 * to its base code, and its vector code does tails of any length; the
 * tests check 1, 3, 31, 33, 64, 4096, 4097 and 65553 bytes against an
 * independent byte-by-byte computation. len 0 does nothing; a len above
 * INT_MAX (ISA-L's int) is done in pieces. No buffer needs an alignment.
 * Buffers given to one call must not overlap, except where said.
 *
 * Writes update parity by deltas: a data server writing bytes of cell i
 * sends delta = old ^ new (ec_xor), and each parity server applies
 * parity_j ^= c(j, i) * delta (ec_update_one) to the same byte range.
 * Deltas commute, so writers of different cells of one stripe share no
 * lock.
 *
 * Nothing here locks: a code is read-only after ec_code_init and may be
 * used by any number of threads at once. */
#ifndef RPFS_EC_CODE_H
#define RPFS_EC_CODE_H

#include <stddef.h>

#include "redundancy.h"

/* The largest K and the largest P a code takes: an ec spec's. */
#define EC_CELLS_MAX RED_EC_CELLS_MAX

/* A code for one (K, P). Its fields are the module's: read k and p, touch
 * nothing else. */
struct ec_code {
	unsigned k;	       /* data cells a stripe */
	unsigned p;	       /* parity cells a stripe */
	unsigned char *matrix; /* (k+p) x k generator, row-major, identity on top */
	unsigned char *parity_tables; /* ISA-L's tables of its last p rows: 32*k*p */
};

/* Make the code of k data and p parity cells: the generator and the
 * expanded tables of its parity rows, once, so that encode and update do
 * no setup. 0; -EINVAL unless 1 <= k, p <= EC_CELLS_MAX; -ENOMEM. On
 * failure c holds nothing to free (ec_code_fini is harmless on it). */
int ec_code_init(struct ec_code *c, unsigned k, unsigned p);
/* Free what ec_code_init made; c is then zeroed (a second call is
 * harmless). */
void ec_code_fini(struct ec_code *c);

/* The coefficient of data cell data_index (< k) in parity cell
 * parity_index (< p): what ec_update_one multiplies a delta by. */
unsigned char ec_coef(const struct ec_code *c, unsigned parity_index,
		      unsigned data_index);

/* Compute the p parity cells of the k data cells data[0..k-1] (a whole
 * stripe written at once, or parity made again from scratch). */
void ec_encode(const struct ec_code *c, size_t len, unsigned char *const *data,
	       unsigned char **parity);

/* Apply a delta of data cell data_index (< k) to all p parity cells:
 * parity[j] ^= c(j, data_index) * delta, byte for byte. The parity
 * pointers point at the same byte range of their cells as delta does in
 * the data cell. Updates commute: any order of the deltas of any cells
 * gives the parity of the final data. An index out of range is the
 * caller's bug: the program stops (abort) rather than corrupt parity. */
void ec_update(const struct ec_code *c, unsigned data_index, size_t len,
	       const unsigned char *delta, unsigned char **parity);

/* ec_update for one parity cell, parity_index (< p): what a parity server,
 * which holds only its own cell, applies. Equal to that cell's part of
 * ec_update. Indexes out of range stop the program, as above. */
void ec_update_one(const struct ec_code *c, unsigned parity_index, unsigned data_index,
		   size_t len, const unsigned char *delta, unsigned char *parity);

/* Rebuild cells of a stripe from cells that survived. Cells are indexed
 * 0..k-1 for data, k..k+p-1 for parity. have[0..nhave-1] (nhave >= k, in
 * any order) name the cells in have_buf; the first k of them are read.
 * want[0..nwant-1] name the cells to make into want_buf (data or parity,
 * one given in have too is copied through the code). 0; -EINVAL (nothing
 * written) if nhave < k, an index is >= k+p, or an index repeats within
 * have or within want; -ENOMEM (nothing written). want_buf must not
 * overlap have_buf. Allocates 2*k*k + 33*k*nwant bytes for the call
 * (under 70 KiB), freed before it returns. */
int ec_decode(const struct ec_code *c, size_t len, unsigned nhave, const unsigned *have,
	      unsigned char *const *have_buf, unsigned nwant, const unsigned *want,
	      unsigned char **want_buf);

/* dst = a ^ b over len bytes (a delta: old ^ new; or a delta applied to
 * data). dst may be a or b; no other overlap. A plain loop of 8-byte words,
 * not ISA-L's xor_gen: that one wants 32-byte aligned buffers and an int
 * length, and the cells of a write are pieces of a user's buffer at any
 * offset; the compiler vectorizes the loop. */
void ec_xor(unsigned char *dst, const unsigned char *a, const unsigned char *b,
	    size_t len);

#endif
