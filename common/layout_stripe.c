/* The stripe kind of layout ("none", layout.h): stripe k = [k*su, (k+1)*su)
 * lives on slot k % count at datafile offset (k / count) * su; every slot
 * holds data, there is no redundancy. The client splits every access with
 * layout_split(), the I/O server never needs the layout, and the logical
 * size is rebuilt from the datafile sizes (PVFS2 style), so writes never
 * touch the metadata server. All arithmetic is 64-bit; the two places where
 * a result can exceed 64 bits (the logical offset of a huge datafile
 * offset, the split of an extent that wraps) saturate instead of wrapping. */
#include <errno.h>
#include <stdio.h>

#include "layout_kind.h"

/* The redundancy parameters mean nothing to striping: a layout that has
 * any was made for another kind (or damaged), never striped by guess. */
static int stripe_check(const struct rpfs_layout *l, char *why, size_t len)
{
	if (!l->stripe_count) {
		snprintf(why, len, "a stripe count of 0");
		return -EINVAL;
	}
	if (l->copies || l->data_cells || l->parity_cells || l->cell_size) {
		snprintf(why, len, "redundancy parameters on a layout of kind none");
		return -EINVAL;
	}
	return 0;
}

static uint32_t stripe_slots(const struct rpfs_layout *l)
{
	return l->stripe_count;
}

static bool stripe_slot_has_data(const struct rpfs_layout *l, uint32_t slot)
{
	return slot < l->stripe_count;
}

static void stripe_map(const struct rpfs_layout *l, uint64_t off, uint32_t *slot,
		       uint64_t *local)
{
	uint64_t k = off / l->stripe_unit;
	uint64_t within = off % l->stripe_unit;

	/* (k / count) * su <= k * su <= off: cannot overflow. */
	*slot = (uint32_t)(k % l->stripe_count);
	*local = (k / l->stripe_count) * l->stripe_unit + within;
}

/* Returns UINT64_MAX when the logical offset does not fit 64 bits: such a
 * datafile offset cannot come from any logical offset. */
static uint64_t stripe_logical(const struct rpfs_layout *l, uint32_t slot, uint64_t local)
{
	uint64_t su = l->stripe_unit;
	uint64_t row = local / su;
	uint64_t within = local % su;
	uint64_t k, base;

	if (row > (UINT64_MAX - slot) / l->stripe_count)
		return UINT64_MAX;
	k = row * l->stripe_count + slot;
	if (k > UINT64_MAX / su)
		return UINT64_MAX;
	base = k * su;
	if (base > UINT64_MAX - within)
		return UINT64_MAX;
	return base + within;
}

/* Pieces end at stripe unit boundaries: the next unit is on another slot
 * (or, with one slot, at the next datafile offset anyway). */
static size_t stripe_split(const struct rpfs_layout *l, uint64_t off, uint64_t len,
			   struct rpfs_piece *out, size_t max, uint64_t *done)
{
	uint64_t pos = 0;
	uint64_t end = len;
	size_t n = 0;

	/* An extent past 2^64 cannot exist; stop at the last byte and let
	 * *done < len report it as unfinished. */
	if (end > UINT64_MAX - off)
		end = UINT64_MAX - off;
	while (pos < end && n < max) {
		struct rpfs_piece *p = &out[n++];
		uint64_t within, room;

		p->logical_off = off + pos;
		stripe_map(l, p->logical_off, &p->slot, &p->local_off);
		within = p->logical_off % l->stripe_unit;
		room = l->stripe_unit - within;
		p->len = room < end - pos ? room : end - pos;
		pos += p->len;
	}
	if (done)
		*done = pos;
	return n;
}

static uint64_t stripe_file_size(const struct rpfs_layout *l, const uint64_t *sizes)
{
	uint64_t size = 0;

	for (uint32_t s = 0; s < l->stripe_count; s++) {
		uint64_t last;

		if (!sizes[s])
			continue;
		last = stripe_logical(l, s, sizes[s] - 1);
		if (last == UINT64_MAX)
			return UINT64_MAX;
		if (last + 1 > size)
			size = last + 1;
	}
	return size;
}

static uint64_t stripe_local_size(const struct rpfs_layout *l, uint32_t slot,
				  uint64_t size)
{
	uint64_t su = l->stripe_unit;
	uint64_t count = l->stripe_count;
	uint64_t full = size / su;    /* complete stripes in [0, size) */
	uint64_t rem = size % su;     /* bytes of the partial stripe `full` */
	uint64_t rows = full / count; /* complete rows: every slot has these */
	uint64_t local = rows * su;   /* <= size: no overflow */

	if (slot < full % count)
		local += su; /* one more complete stripe in the last row */
	else if (slot == full % count)
		local += rem; /* the partial stripe, possibly empty */
	return local;
}

const struct layout_kind layout_stripe = {
	.name = "none",
	.check = stripe_check,
	.slots = stripe_slots,
	.slot_has_data = stripe_slot_has_data,
	.map = stripe_map,
	.logical = stripe_logical,
	.split = stripe_split,
	.file_size = stripe_file_size,
	.local_size = stripe_local_size,
};
