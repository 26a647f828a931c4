/* Redundancy specs: the text a user gives for a file's redundancy (rpfs
 * setstripe -N, the rpfs_redundancy hint, [cluster] redundancy), its
 * parsed form, and the u32 that carries it in CREATE and SETATTR requests
 * (rpc.c).
 *
 *   "none"       striping only (RPFS_LAYOUT_STRIPE)
 *   "mirror:N"   N copies of every data slot, 2 <= N <= RPFS_COPIES_MAX
 *   "ec:K+P"     K data and P parity cells: parsed, refused at create
 *                (-EOPNOTSUPP, "not supported yet") until its math exists
 *   "default"    no choice: what the directory or the cluster says (a
 *                directory's setstripe clears its own with it)
 *
 * Packed (red_pack): 0 = not said; else bits 0..7 the kind + 1 (0xff:
 * "default"), bits 8..15 the mirror's copies or the ec's K, bits 16..23 the
 * ec's P, bits 24..31 zero. */
#ifndef RPFS_REDUNDANCY_H
#define RPFS_REDUNDANCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"

/* The kind of a spec that asks for nothing: the directory's or cluster's. */
#define RED_DEFAULT 0xffu
/* Longest text red_format writes, NUL included ("ec:255+255"). */
#define RED_TEXT_MAX 16
/* The largest K and P an ec spec may name. */
#define RED_EC_CELLS_MAX 32

/* The packed value of mirror:n (tests, the corpus). */
#define RED_PACK_MIRROR(n) ((uint32_t)(RPFS_LAYOUT_MIRROR + 1) | (uint32_t)(n) << 8)

struct red_spec {
	uint32_t kind;	       /* enum rpfs_layout_kind, or RED_DEFAULT */
	uint32_t copies;       /* mirror: N, else 0 */
	uint32_t data_cells;   /* ec: K, else 0 */
	uint32_t parity_cells; /* ec: P, else 0 */
};

/* Parse spec (case-sensitive, no spaces). 0, or -EINVAL with a message in
 * why ("mirror:9: a mirror has 2 to 8 copies"). */
int red_parse(const char *spec, struct red_spec *r, char *why, size_t whylen);
/* The text of r ("none", "mirror:2", "ec:4+2", "default") into buf;
 * returns buf. */
const char *red_format(const struct red_spec *r, char *buf, size_t len);
/* Is r one that red_parse accepts? */
bool red_valid(const struct red_spec *r);

/* The u32 of a request (see above); 0 for NULL. */
uint32_t red_pack(const struct red_spec *r);
/* 0 (r filled, kind RED_DEFAULT for a packed 0), or -EINVAL for a packed
 * value red_pack does not make. */
int red_unpack(uint32_t v, struct red_spec *r);

/* The redundancy of a layout (a file's, or the default a directory holds:
 * kind stripe with copies 1 means an explicit "none" there, and kind
 * stripe with copies 0 no choice, "default"). */
void red_of_layout(const struct rpfs_layout *l, bool dir, struct red_spec *r);
/* Put r into a directory's default layout (the inverse of red_of_layout). */
void red_to_dir_layout(const struct red_spec *r, struct rpfs_layout *l);
/* Put r (not RED_DEFAULT) into a new file's layout. */
void red_to_file_layout(const struct red_spec *r, struct rpfs_layout *l);
/* Slots a layout of r needs for count data slots (count * N for a mirror,
 * count for none; ec: count * (K + P) / K rounded up, for messages). */
uint64_t red_slots(const struct red_spec *r, uint32_t count);
/* Do count data slots of r (0: as few as r takes, K for ec, else 1) fit
 * nio I/O servers: their slots on as many servers, an ec count in whole
 * groups of K? The one rule the client, setstripe and create share. */
bool red_fits(const struct red_spec *r, uint32_t count, uint32_t nio);
/* Data slots per copy group: how many slots each data slot costs (N for a
 * mirror, 1 otherwise). */
uint32_t red_copies(const struct red_spec *r);

#endif
