/* Redundancy specs (redundancy.h): text <-> parsed form <-> the u32 of a
 * request, and their place in a layout. */
#include "redundancy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A decimal number of 1..3 digits at *s, no sign or leading zero; moves
 * *s past it. */
static bool small_num(const char **s, uint32_t *v)
{
	const char *p = *s;
	uint32_t n = 0;
	int digits = 0;

	while (*p >= '0' && *p <= '9') {
		if (++digits > 3 || (digits == 2 && n == 0))
			return false;
		n = n * 10 + (uint32_t)(*p - '0');
		p++;
	}
	if (!digits)
		return false;
	*v = n;
	*s = p;
	return true;
}

bool red_valid(const struct red_spec *r)
{
	switch (r->kind) {
	case RED_DEFAULT:
	case RPFS_LAYOUT_STRIPE:
		return !r->copies && !r->data_cells && !r->parity_cells;
	case RPFS_LAYOUT_MIRROR:
		return r->copies >= 2 && r->copies <= RPFS_COPIES_MAX && !r->data_cells &&
		       !r->parity_cells;
	case RPFS_LAYOUT_EC:
		return !r->copies && r->data_cells >= 1 &&
		       r->data_cells <= RED_EC_CELLS_MAX && r->parity_cells >= 1 &&
		       r->parity_cells <= RED_EC_CELLS_MAX;
	default:
		return false;
	}
}

int red_parse(const char *spec, struct red_spec *r, char *why, size_t whylen)
{
	const char *p;

	memset(r, 0, sizeof(*r));
	if (!spec || !*spec) {
		snprintf(why, whylen, "an empty redundancy (none, mirror:N or ec:K+P)");
		return -EINVAL;
	}
	if (!strcmp(spec, "none")) {
		r->kind = RPFS_LAYOUT_STRIPE;
		return 0;
	}
	if (!strcmp(spec, "default")) {
		r->kind = RED_DEFAULT;
		return 0;
	}
	if (!strncmp(spec, "mirror:", 7)) {
		p = spec + 7;
		r->kind = RPFS_LAYOUT_MIRROR;
		if (!small_num(&p, &r->copies) || *p) {
			snprintf(why, whylen, "%s: not mirror:N (N copies, 2 to %d)",
				 spec, RPFS_COPIES_MAX);
			return -EINVAL;
		}
		if (!red_valid(r)) {
			snprintf(why, whylen, "%s: a mirror has 2 to %d copies", spec,
				 RPFS_COPIES_MAX);
			return -EINVAL;
		}
		return 0;
	}
	if (!strncmp(spec, "ec:", 3)) {
		p = spec + 3;
		r->kind = RPFS_LAYOUT_EC;
		if (!small_num(&p, &r->data_cells) || *p++ != '+' ||
		    !small_num(&p, &r->parity_cells) || *p) {
			snprintf(
				why, whylen,
				"%s: not ec:K+P (K data and P parity cells, such as ec:4+2)",
				spec);
			return -EINVAL;
		}
		if (!red_valid(r)) {
			snprintf(why, whylen, "%s: ec:K+P takes 1 to %d cells of each",
				 spec, RED_EC_CELLS_MAX);
			return -EINVAL;
		}
		return 0;
	}
	snprintf(why, whylen, "%s: not a redundancy (none, mirror:N or ec:K+P)", spec);
	return -EINVAL;
}

const char *red_format(const struct red_spec *r, char *buf, size_t len)
{
	switch (r->kind) {
	case RPFS_LAYOUT_STRIPE:
		snprintf(buf, len, "none");
		break;
	case RPFS_LAYOUT_MIRROR:
		snprintf(buf, len, "mirror:%" PRIu32, r->copies);
		break;
	case RPFS_LAYOUT_EC:
		snprintf(buf, len, "ec:%" PRIu32 "+%" PRIu32, r->data_cells,
			 r->parity_cells);
		break;
	case RED_DEFAULT:
		snprintf(buf, len, "default");
		break;
	default:
		snprintf(buf, len, "unknown(%" PRIu32 ")", r->kind);
		break;
	}
	return buf;
}

uint32_t red_pack(const struct red_spec *r)
{
	uint32_t a = 0, b = 0;

	if (!r || !red_valid(r))
		return 0;
	if (r->kind == RED_DEFAULT)
		return RED_DEFAULT;
	if (r->kind == RPFS_LAYOUT_MIRROR)
		a = r->copies;
	if (r->kind == RPFS_LAYOUT_EC) {
		a = r->data_cells;
		b = r->parity_cells;
	}
	return (r->kind + 1) | a << 8 | b << 16;
}

int red_unpack(uint32_t v, struct red_spec *r)
{
	uint32_t k = v & 0xff, a = (v >> 8) & 0xff, b = (v >> 16) & 0xff;

	memset(r, 0, sizeof(*r));
	if (!v || v == RED_DEFAULT) {
		r->kind = RED_DEFAULT;
		return 0;
	}
	if (v >> 24 || !k)
		return -EINVAL;
	r->kind = k - 1;
	if (r->kind == RPFS_LAYOUT_MIRROR)
		r->copies = a;
	else if (r->kind == RPFS_LAYOUT_EC) {
		r->data_cells = a;
		r->parity_cells = b;
	} else if (a || b)
		return -EINVAL;
	if (r->kind != RPFS_LAYOUT_EC && b)
		return -EINVAL;
	return red_valid(r) ? 0 : -EINVAL;
}

void red_of_layout(const struct rpfs_layout *l, bool dir, struct red_spec *r)
{
	memset(r, 0, sizeof(*r));
	r->kind = l->kind;
	switch (l->kind) {
	case RPFS_LAYOUT_STRIPE:
		if (dir && !l->copies)
			r->kind = RED_DEFAULT;
		break;
	case RPFS_LAYOUT_MIRROR:
		r->copies = l->copies;
		break;
	case RPFS_LAYOUT_EC:
		r->data_cells = l->data_cells;
		r->parity_cells = l->parity_cells;
		break;
	default:
		break;
	}
}

void red_to_dir_layout(const struct red_spec *r, struct rpfs_layout *l)
{
	l->kind = RPFS_LAYOUT_STRIPE;
	l->copies = l->data_cells = l->parity_cells = 0;
	l->cell_size = 0;
	switch (r->kind) {
	case RPFS_LAYOUT_STRIPE:
		l->copies = 1; /* an explicit "none" */
		break;
	case RPFS_LAYOUT_MIRROR:
		l->kind = RPFS_LAYOUT_MIRROR;
		l->copies = r->copies;
		break;
	case RPFS_LAYOUT_EC:
		l->kind = RPFS_LAYOUT_EC;
		l->data_cells = r->data_cells;
		l->parity_cells = r->parity_cells;
		break;
	default:
		break;
	}
}

void red_to_file_layout(const struct red_spec *r, struct rpfs_layout *l)
{
	red_to_dir_layout(r, l);
	if (l->kind == RPFS_LAYOUT_STRIPE)
		l->copies = 0;
}

uint32_t red_copies(const struct red_spec *r)
{
	return r->kind == RPFS_LAYOUT_MIRROR ? r->copies : 1;
}

bool red_fits(const struct red_spec *r, uint32_t count, uint32_t nio)
{
	bool ec = r->kind == RPFS_LAYOUT_EC;

	if (!count)
		count = ec ? r->data_cells : 1;
	return red_slots(r, count) <= nio && !(ec && count % r->data_cells);
}

uint64_t red_slots(const struct red_spec *r, uint32_t count)
{
	if (r->kind == RPFS_LAYOUT_EC && r->data_cells)
		return ((uint64_t)count * (r->data_cells + r->parity_cells) +
			r->data_cells - 1) /
		       r->data_cells;
	return (uint64_t)count * red_copies(r);
}
