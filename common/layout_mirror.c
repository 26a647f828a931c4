/* The mirror kind of layout ("mirror:N", layout.h): the file is striped as
 * the stripe kind over stripe_count data slots, and each data slot has N-1
 * more copies: copy c (0 = the primary) of data slot s is slot
 * c * stripe_count + s, so the N copies of a slot sit on N distinct,
 * consecutive-by-count I/O servers (placement puts slot i on server
 * first + i, and count * N <= nservers). Every copy of a slot holds the
 * same datafile bytes at the same offsets: a piece maps to its primary
 * (layout_split's slots are data slots < stripe_count) and layout_copy_slot
 * names its copies.
 *
 * Writes go to the primary, which orders them and forwards them to the
 * copies before answering (server/io_forward.c), so copies never diverge;
 * reads may go to any copy. The logical size is the largest over every
 * copy of every slot: a write that reached one copy but not another (a
 * copy server lost mid-write) may make one copy longer, and the file is
 * as long as its longest copy. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "layout_kind.h"

static int mirror_check(const struct rpfs_layout *l, char *why, size_t len)
{
	if (!l->stripe_count) {
		snprintf(why, len, "a stripe count of 0");
		return -EINVAL;
	}
	if (l->copies < 2 || l->copies > RPFS_COPIES_MAX) {
		snprintf(why, len, "mirror:%" PRIu32 " (a mirror has 2 to %d copies)",
			 l->copies, RPFS_COPIES_MAX);
		return -EINVAL;
	}
	if (l->data_cells || l->parity_cells || l->cell_size) {
		snprintf(why, len, "erasure-code parameters on a mirror layout");
		return -EINVAL;
	}
	/* count * copies servers, checked against nservers by layout.c */
	if ((uint64_t)l->stripe_count * l->copies > UINT32_MAX) {
		snprintf(why, len, "%" PRIu32 " copies of %" PRIu32 " slots", l->copies,
			 l->stripe_count);
		return -EINVAL;
	}
	return 0;
}

/* The stripe kind's math over the data slots. */
static struct rpfs_layout data_view(const struct rpfs_layout *l)
{
	struct rpfs_layout d = *l;

	d.kind = RPFS_LAYOUT_STRIPE;
	d.copies = 0;
	return d;
}

static uint32_t mirror_slots(const struct rpfs_layout *l)
{
	return l->stripe_count * l->copies;
}

static bool mirror_slot_has_data(const struct rpfs_layout *l, uint32_t slot)
{
	return slot < mirror_slots(l);
}

static void mirror_map(const struct rpfs_layout *l, uint64_t off, uint32_t *slot,
		       uint64_t *local)
{
	struct rpfs_layout d = data_view(l);

	layout_stripe.map(&d, off, slot, local);
}

static uint64_t mirror_logical(const struct rpfs_layout *l, uint32_t slot, uint64_t local)
{
	struct rpfs_layout d = data_view(l);

	return layout_stripe.logical(&d, slot % l->stripe_count, local);
}

static size_t mirror_split(const struct rpfs_layout *l, uint64_t off, uint64_t len,
			   struct rpfs_piece *out, size_t max, uint64_t *done)
{
	struct rpfs_layout d = data_view(l);

	return layout_stripe.split(&d, off, len, out, max, done);
}

/* Copy c's slots are sizes[c * count .. (c + 1) * count): each copy is a
 * stripe layout of its own. */
static uint64_t mirror_file_size(const struct rpfs_layout *l, const uint64_t *sizes)
{
	struct rpfs_layout d = data_view(l);
	uint64_t size = 0;

	for (uint32_t c = 0; c < l->copies; c++) {
		uint64_t one =
			layout_stripe.file_size(&d, sizes + (size_t)c * l->stripe_count);

		if (one > size)
			size = one;
	}
	return size;
}

static uint64_t mirror_local_size(const struct rpfs_layout *l, uint32_t slot,
				  uint64_t size)
{
	struct rpfs_layout d = data_view(l);

	return layout_stripe.local_size(&d, slot % l->stripe_count, size);
}

static uint32_t mirror_copies(const struct rpfs_layout *l)
{
	return l->copies;
}

static uint32_t mirror_copy_slot(const struct rpfs_layout *l, uint32_t slot,
				 uint32_t copy)
{
	return copy * l->stripe_count + slot % l->stripe_count;
}

const struct layout_kind layout_mirror = {
	.name = "mirror",
	.check = mirror_check,
	.slots = mirror_slots,
	.slot_has_data = mirror_slot_has_data,
	.map = mirror_map,
	.logical = mirror_logical,
	.split = mirror_split,
	.file_size = mirror_file_size,
	.local_size = mirror_local_size,
	.copies = mirror_copies,
	.copy_slot = mirror_copy_slot,
};
