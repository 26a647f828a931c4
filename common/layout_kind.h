/* The table of functions a layout kind provides (layout.h): one instance
 * per kind, in that kind's own file (layout_stripe.c), listed by kind in
 * layout.c's table. Adding a kind is its file, its entry there, and its
 * enum value in layout.h.
 *
 * layout.c checks what every kind shares (a stripe unit, a first server
 * and slots within the cluster) before check; the other functions are
 * only called on a layout that passed both. */
#ifndef RPFS_LAYOUT_KIND_H
#define RPFS_LAYOUT_KIND_H

#include "layout.h"

struct layout_kind {
	const char *name;
	/* 0, or -EINVAL with why (len bytes) for parameters the kind can't
	 * use. */
	int (*check)(const struct rpfs_layout *l, char *why, size_t len);
	uint32_t (*slots)(const struct rpfs_layout *l);
	bool (*slot_has_data)(const struct rpfs_layout *l, uint32_t slot);
	void (*map)(const struct rpfs_layout *l, uint64_t off, uint32_t *slot,
		    uint64_t *local);
	uint64_t (*logical)(const struct rpfs_layout *l, uint32_t slot, uint64_t local);
	size_t (*split)(const struct rpfs_layout *l, uint64_t off, uint64_t len,
			struct rpfs_piece *out, size_t max, uint64_t *done);
	uint64_t (*file_size)(const struct rpfs_layout *l, const uint64_t *sizes);
	uint64_t (*local_size)(const struct rpfs_layout *l, uint32_t slot, uint64_t size);
	/* Copies of each data slot (NULL: 1) and the slot of copy c of data
	 * slot s (NULL: s). */
	uint32_t (*copies)(const struct rpfs_layout *l);
	uint32_t (*copy_slot)(const struct rpfs_layout *l, uint32_t slot, uint32_t copy);
};

extern const struct layout_kind layout_stripe;
extern const struct layout_kind layout_mirror;
extern const struct layout_kind layout_ec;

#endif
