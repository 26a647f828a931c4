/* Layouts (layout.h): the checks every kind shares, the placement of slots
 * on I/O servers, and the table that hands each call to the math of the
 * layout's kind (layout_kind.h: layout_stripe.c, layout_mirror.c,
 * layout_ec.c). */
#include "layout.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "layout_kind.h"

/* By enum rpfs_layout_kind. A named kind without functions is one whose
 * math is not written yet: refused. (Whether a new file may be of a kind
 * is the metadata server's rule: ec files only with ec_preview, until
 * their degraded service exists: server/meta_create.c.) */
static const char *const kind_names[RPFS_LAYOUT_KINDS] = {
	[RPFS_LAYOUT_STRIPE] = "none",
	[RPFS_LAYOUT_MIRROR] = "mirror",
	[RPFS_LAYOUT_EC] = "ec",
};
static const struct layout_kind *const kinds[RPFS_LAYOUT_KINDS] = {
	[RPFS_LAYOUT_STRIPE] = &layout_stripe,
	[RPFS_LAYOUT_MIRROR] = &layout_mirror,
	[RPFS_LAYOUT_EC] = &layout_ec,
};

const char *layout_kind_name(uint32_t kind)
{
	return kind < RPFS_LAYOUT_KINDS ? kind_names[kind] : "unknown";
}

bool layout_kind_supported(uint32_t kind)
{
	return kind < RPFS_LAYOUT_KINDS && kinds[kind];
}

/* layout_check, saying why into why (len bytes, may be 0). */
static int check(const struct rpfs_layout *l, char *why, size_t len)
{
	const struct layout_kind *k;
	uint32_t slots;
	int ret;

	if (!l) {
		snprintf(why, len, "no layout");
		return -EINVAL;
	}
	if (l->kind >= RPFS_LAYOUT_KINDS) {
		snprintf(why, len, "a layout of unknown kind %" PRIu32, l->kind);
		return -EOPNOTSUPP;
	}
	k = kinds[l->kind];
	if (!k) {
		snprintf(why, len, "layout kind %s is not supported yet",
			 kind_names[l->kind]);
		return -EOPNOTSUPP;
	}
	if (!l->stripe_unit || !l->nservers || l->first_server >= l->nservers) {
		snprintf(why, len,
			 "a stripe unit of %" PRIu64 " from I/O server %" PRIu32
			 " of %" PRIu32,
			 l->stripe_unit, l->first_server, l->nservers);
		return -EINVAL;
	}
	ret = k->check(l, why, len);
	if (ret)
		return ret;
	slots = k->slots(l);
	if (!slots || slots > l->nservers) {
		snprintf(why, len, "%" PRIu32 " slots over %" PRIu32 " I/O servers",
			 slots, l->nservers);
		return -EINVAL;
	}
	return 0;
}

int layout_check(const struct rpfs_layout *l)
{
	return check(l, NULL, 0);
}

const char *layout_problem(const struct rpfs_layout *l, char *buf, size_t len)
{
	if (len)
		buf[0] = 0;
	check(l, buf, len);
	return buf;
}

/* The kind of a checked layout. One that never passed layout_check is a
 * caller's bug: stopped here rather than striped by guess. */
static const struct layout_kind *kind_of(const struct rpfs_layout *l)
{
	if (!layout_kind_supported(l->kind))
		abort();
	return kinds[l->kind];
}

uint32_t layout_slots(const struct rpfs_layout *l)
{
	return kind_of(l)->slots(l);
}

bool layout_slot_has_data(const struct rpfs_layout *l, uint32_t slot)
{
	return kind_of(l)->slot_has_data(l, slot);
}

/* Slots sit on consecutive servers whatever the kind: placement, not
 * math of the kind. */
uint32_t layout_server(const struct rpfs_layout *l, uint32_t slot)
{
	/* 64-bit sum: first_server + slot may exceed UINT32_MAX. */
	return (uint32_t)(((uint64_t)l->first_server + slot) % l->nservers);
}

void layout_map(const struct rpfs_layout *l, uint64_t off, uint32_t *slot,
		uint64_t *local)
{
	kind_of(l)->map(l, off, slot, local);
}

uint64_t layout_logical(const struct rpfs_layout *l, uint32_t slot, uint64_t local)
{
	return kind_of(l)->logical(l, slot, local);
}

size_t layout_split(const struct rpfs_layout *l, uint64_t off, uint64_t len,
		    struct rpfs_piece *out, size_t max, uint64_t *done)
{
	return kind_of(l)->split(l, off, len, out, max, done);
}

uint64_t layout_file_size(const struct rpfs_layout *l, const uint64_t *sizes)
{
	return kind_of(l)->file_size(l, sizes);
}

uint64_t layout_local_size(const struct rpfs_layout *l, uint32_t slot, uint64_t size)
{
	return kind_of(l)->local_size(l, slot, size);
}

uint32_t layout_copies(const struct rpfs_layout *l)
{
	const struct layout_kind *k = kind_of(l);

	return k->copies ? k->copies(l) : 1;
}

uint32_t layout_copy_slot(const struct rpfs_layout *l, uint32_t slot, uint32_t copy)
{
	const struct layout_kind *k = kind_of(l);

	return k->copy_slot ? k->copy_slot(l, slot, copy) : slot;
}
