/* The erasure-coded kind of layout ("ec:K+P", layout.h,
 * docs/design/erasure-coding.md): the file is striped as the stripe kind
 * over stripe_count = G * K data slots (the stripe unit is the cell), in G
 * groups of K; group g's P parity slots follow every data slot, at
 * G * K + g * P + j. Every member of a group holds its cells at the same
 * datafile offsets, so the bytes at local offset o of a group's K data
 * slots are coded into the bytes at o of its P parity slots, byte column by
 * byte column: a write of [a, b) on a data slot changes [a, b) on its
 * parity slots, and a lost member's [a, b) is decoded from [a, b) of any K
 * others. Bytes past a datafile's end count as zeros.
 *
 * The logical size is the stripe kind's over the data slots; a parity
 * datafile is as long as the longest of its group's data datafiles. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "layout_kind.h"
#include "redundancy.h"

static int ec_check(const struct rpfs_layout *l, char *why, size_t len)
{
	uint32_t k = l->data_cells, p = l->parity_cells;

	if (k < 1 || k > RED_EC_CELLS_MAX || p < 1 || p > RED_EC_CELLS_MAX) {
		snprintf(why, len, "ec:%" PRIu32 "+%" PRIu32 " (1 to %d cells of each)",
			 k, p, RED_EC_CELLS_MAX);
		return -EINVAL;
	}
	/* a write names its group's parity members, at most a mirror's
	 * copies besides the primary (RPC_COPIES_MAX) */
	if (p > RPFS_COPIES_MAX - 1) {
		snprintf(why, len,
			 "ec:%" PRIu32 "+%" PRIu32 " (at most %d parity cells a stripe)",
			 k, p, RPFS_COPIES_MAX - 1);
		return -EINVAL;
	}
	if (!l->stripe_count || l->stripe_count % k) {
		snprintf(why, len,
			 "ec:%" PRIu32 "+%" PRIu32 " over %" PRIu32
			 " data slots (a multiple of %" PRIu32 ")",
			 k, p, l->stripe_count, k);
		return -EINVAL;
	}
	if (l->copies) {
		snprintf(why, len, "copies on an erasure-coded layout");
		return -EINVAL;
	}
	/* a cell other than the stripe unit would need a map of its own */
	if (l->cell_size && l->cell_size != l->stripe_unit) {
		snprintf(why, len,
			 "a cell of %" PRIu64 " bytes in stripe units of %" PRIu64,
			 l->cell_size, l->stripe_unit);
		return -EINVAL;
	}
	/* G * (K + P) slots, checked against nservers by layout.c */
	if ((uint64_t)(l->stripe_count / k) * (k + p) > UINT32_MAX) {
		snprintf(why, len, "%" PRIu32 " data slots of ec:%" PRIu32 "+%" PRIu32,
			 l->stripe_count, k, p);
		return -EINVAL;
	}
	return 0;
}

/* The stripe kind's math over the data slots. */
static struct rpfs_layout data_view(const struct rpfs_layout *l)
{
	struct rpfs_layout d = *l;

	d.kind = RPFS_LAYOUT_STRIPE;
	d.data_cells = d.parity_cells = 0;
	d.cell_size = 0;
	return d;
}

static uint32_t groups(const struct rpfs_layout *l)
{
	return l->stripe_count / l->data_cells;
}

static uint32_t ec_slots(const struct rpfs_layout *l)
{
	return groups(l) * (l->data_cells + l->parity_cells);
}

static bool ec_slot_has_data(const struct rpfs_layout *l, uint32_t slot)
{
	return slot < l->stripe_count;
}

static void ec_map(const struct rpfs_layout *l, uint64_t off, uint32_t *slot,
		   uint64_t *local)
{
	struct rpfs_layout d = data_view(l);

	layout_stripe.map(&d, off, slot, local);
}

/* A parity slot holds no logical byte. */
static uint64_t ec_logical(const struct rpfs_layout *l, uint32_t slot, uint64_t local)
{
	struct rpfs_layout d = data_view(l);

	if (slot >= l->stripe_count)
		return UINT64_MAX;
	return layout_stripe.logical(&d, slot, local);
}

static size_t ec_split(const struct rpfs_layout *l, uint64_t off, uint64_t len,
		       struct rpfs_piece *out, size_t max, uint64_t *done)
{
	struct rpfs_layout d = data_view(l);

	return layout_stripe.split(&d, off, len, out, max, done);
}

/* The data slots' sizes alone: parity adds no byte to the file. */
static uint64_t ec_file_size(const struct rpfs_layout *l, const uint64_t *sizes)
{
	struct rpfs_layout d = data_view(l);

	return layout_stripe.file_size(&d, sizes);
}

static uint64_t ec_local_size(const struct rpfs_layout *l, uint32_t slot, uint64_t size)
{
	struct rpfs_layout d = data_view(l);
	uint32_t g, first;
	uint64_t most = 0;

	if (slot < l->stripe_count)
		return layout_stripe.local_size(&d, slot, size);
	/* a parity slot: as long as the longest data slot of its group */
	g = (slot - l->stripe_count) / l->parity_cells;
	first = g * l->data_cells;
	for (uint32_t i = 0; i < l->data_cells; i++) {
		uint64_t one = layout_stripe.local_size(&d, first + i, size);

		if (one > most)
			most = one;
	}
	return most;
}

const struct layout_kind layout_ec = {
	.name = "ec",
	.check = ec_check,
	.slots = ec_slots,
	.slot_has_data = ec_slot_has_data,
	.map = ec_map,
	.logical = ec_logical,
	.split = ec_split,
	.file_size = ec_file_size,
	.local_size = ec_local_size,
};

uint32_t layout_ec_group(const struct rpfs_layout *l, uint32_t slot)
{
	if (slot < l->stripe_count)
		return slot / l->data_cells;
	return (slot - l->stripe_count) / l->parity_cells;
}

uint32_t layout_ec_index(const struct rpfs_layout *l, uint32_t slot)
{
	if (slot < l->stripe_count)
		return slot % l->data_cells;
	return l->data_cells + (slot - l->stripe_count) % l->parity_cells;
}

uint32_t layout_ec_member(const struct rpfs_layout *l, uint32_t group, uint32_t index)
{
	if (index < l->data_cells)
		return group * l->data_cells + index;
	return l->stripe_count + group * l->parity_cells + (index - l->data_cells);
}
