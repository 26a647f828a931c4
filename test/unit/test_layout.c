/* Layout specification (layout.h), through the table of kinds: the stripe
 * kind's offset mapping against an independent oracle that deals stripes
 * out one by one, the splitting of extents into per-stripe pieces, the
 * datafile-size <-> logical-size round trip used by stat and truncate, the
 * layouts layout_check() refuses, and the kinds it refuses (those without
 * math yet, unknown ones) with the reason it gives; the mirror kind: its
 * slots, copies on distinct servers, its mapping as its data slots', its
 * size as the longest copy's; the ec kind's math (its table, before
 * layout.c takes it): what its check takes, groups of K data and P parity
 * members on distinct servers, its mapping as its data slots', its size
 * from the data slots and parity as long as its group's longest. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "layout_kind.h"

#define LSEED 12345u

/* A layout of the stripe kind ("none"). */
#define STRIPED(su, count, first, n)                                                     \
	{                                                                                \
		.stripe_unit = (su), .stripe_count = (count), .first_server = (first),   \
		.nservers = (n), .kind = RPFS_LAYOUT_STRIPE                              \
	}

/* Layouts every mapping test runs over: small and large stripe units, every
 * count from 1 to 5, slot 0 not always on server 0. */
static const struct rpfs_layout layouts[] = {
	STRIPED(1, 1, 0, 1),	   STRIPED(1, 3, 2, 4),	      STRIPED(1, 5, 4, 5),
	STRIPED(4096, 1, 3, 4),	   STRIPED(4096, 2, 1, 3),    STRIPED(4096, 4, 0, 4),
	STRIPED(4096, 5, 6, 8),	   STRIPED(1 << 20, 1, 0, 1), STRIPED(1 << 20, 2, 1, 2),
	STRIPED(1 << 20, 3, 5, 7), STRIPED(1 << 20, 5, 2, 5), STRIPED(65536, 4, 9, 16),
	STRIPED(3000, 3, 1, 3), /* not a power of two */
};
#define NLAYOUTS (sizeof(layouts) / sizeof(layouts[0]))

static uint64_t rnd64(void)
{
	return ((uint64_t)(unsigned)rand() << 33) ^ ((uint64_t)(unsigned)rand() << 11) ^
	       (uint64_t)(unsigned)rand();
}

/* The oracle: deal stripes round-robin with a rotating slot and per-slot fill
 * counters, without the division formulas layout.c uses. */
static void oracle_map(const struct rpfs_layout *l, uint64_t off, uint32_t *slot,
		       uint64_t *local)
{
	uint64_t fill[8] = {0};
	uint64_t start = 0;
	uint32_t s = 0;

	for (;;) {
		if (off < start + l->stripe_unit) {
			*slot = s;
			*local = fill[s] + (off - start);
			return;
		}
		fill[s] += l->stripe_unit;
		start += l->stripe_unit;
		if (++s == l->stripe_count)
			s = 0;
	}
}

/* ---- mapping ------------------------------------------------------------ */

START_TEST(map_matches_the_oracle_byte_by_byte)
{
	for (size_t i = 0; i < NLAYOUTS; i++) {
		const struct rpfs_layout *l = &layouts[i];
		uint64_t fill[8] = {0};
		uint64_t end;
		uint32_t s = 0;
		uint64_t in = 0;

		if (l->stripe_unit > 4096)
			continue;
		end = 3 * l->stripe_unit * l->stripe_count + 7;
		for (uint64_t off = 0; off < end; off++) {
			uint32_t slot;
			uint64_t local;

			layout_map(l, off, &slot, &local);
			ck_assert_uint_eq(slot, s);
			ck_assert_uint_eq(local, fill[s]);
			ck_assert_uint_eq(layout_logical(l, slot, local), off);
			fill[s]++;
			if (++in == l->stripe_unit) {
				in = 0;
				if (++s == l->stripe_count)
					s = 0;
			}
		}
	}
}
END_TEST

START_TEST(map_matches_the_oracle_at_random_offsets)
{
	srand(LSEED);
	for (size_t i = 0; i < NLAYOUTS; i++) {
		const struct rpfs_layout *l = &layouts[i];

		for (int t = 0; t < 2000; t++) {
			uint64_t off = rnd64() % (200 * l->stripe_unit * l->stripe_count);
			uint32_t slot, oslot;
			uint64_t local, olocal;

			layout_map(l, off, &slot, &local);
			oracle_map(l, off, &oslot, &olocal);
			ck_assert_uint_eq(slot, oslot);
			ck_assert_uint_eq(local, olocal);
			ck_assert_uint_eq(layout_logical(l, slot, local), off);
		}
	}
}
END_TEST

START_TEST(logical_inverts_map_near_two_to_the_64)
{
	srand(LSEED + 1);
	for (size_t i = 0; i < NLAYOUTS; i++) {
		const struct rpfs_layout *l = &layouts[i];

		for (int t = 0; t < 1000; t++) {
			uint64_t off = UINT64_MAX - rnd64() % (1ull << 40);
			uint32_t slot;
			uint64_t local;

			layout_map(l, off, &slot, &local);
			ck_assert_uint_lt(slot, l->stripe_count);
			ck_assert_uint_le(local, off);
			ck_assert_uint_eq(layout_logical(l, slot, local), off);
		}
	}
}
END_TEST

START_TEST(logical_saturates_instead_of_wrapping)
{
	struct rpfs_layout l = STRIPED(1 << 20, 4, 0, 4);

	ck_assert_uint_eq(layout_logical(&l, 3, UINT64_MAX), UINT64_MAX);
	ck_assert_uint_eq(layout_logical(&l, 1, UINT64_MAX / 2), UINT64_MAX);
}
END_TEST

START_TEST(server_wraps_from_first_server)
{
	struct rpfs_layout l = STRIPED(4096, 3, 3, 4);

	ck_assert_uint_eq(layout_server(&l, 0), 3);
	ck_assert_uint_eq(layout_server(&l, 1), 0);
	ck_assert_uint_eq(layout_server(&l, 2), 1);
}
END_TEST

START_TEST(server_does_not_overflow_with_large_indexes)
{
	struct rpfs_layout l = STRIPED(4096, 2, UINT32_MAX - 1, UINT32_MAX);

	ck_assert_uint_eq(layout_server(&l, 0), UINT32_MAX - 1);
	ck_assert_uint_eq(layout_server(&l, 1), 0);
}
END_TEST

/* ---- split -------------------------------------------------------------- */

/* Pieces cover [off, off + done) exactly, in logical order, each within one
 * stripe unit and mapped as layout_map() maps its first byte. */
static void check_pieces(const struct rpfs_layout *l, uint64_t off,
			 const struct rpfs_piece *p, size_t n, uint64_t done)
{
	uint64_t pos = off;

	for (size_t i = 0; i < n; i++) {
		uint32_t slot;
		uint64_t local;

		ck_assert_uint_eq(p[i].logical_off, pos);
		ck_assert_uint_gt(p[i].len, 0);
		ck_assert_uint_eq(p[i].logical_off / l->stripe_unit,
				  (p[i].logical_off + p[i].len - 1) / l->stripe_unit);
		layout_map(l, p[i].logical_off, &slot, &local);
		ck_assert_uint_eq(p[i].slot, slot);
		ck_assert_uint_eq(p[i].local_off, local);
		pos += p[i].len;
	}
	ck_assert_uint_eq(pos - off, done);
}

START_TEST(split_covers_the_extent_in_order)
{
	static struct rpfs_piece p[4096];

	srand(LSEED + 2);
	for (size_t i = 0; i < NLAYOUTS; i++) {
		const struct rpfs_layout *l = &layouts[i];

		for (int t = 0; t < 300; t++) {
			uint64_t off = rnd64() % (50 * l->stripe_unit * l->stripe_count);
			uint64_t len = 1 + rnd64() % (20 * l->stripe_unit);
			uint64_t done = 0;
			size_t n;

			if (t == 0)
				off = 0;
			if (l->stripe_unit == 1)
				len %= 1000;
			n = layout_split(l, off, len, p, 4096, &done);
			ck_assert_uint_eq(done, len);
			check_pieces(l, off, p, n, done);
		}
	}
}
END_TEST

START_TEST(split_of_nothing_is_no_pieces)
{
	struct rpfs_piece p[2];
	uint64_t done = 99;

	ck_assert_uint_eq(layout_split(&layouts[4], 12345, 0, p, 2, &done), 0);
	ck_assert_uint_eq(done, 0);
}
END_TEST

START_TEST(split_stops_at_max_and_reports_done)
{
	const struct rpfs_layout l = STRIPED(4096, 3, 0, 3);
	struct rpfs_piece p[4];
	uint64_t off = 1000, len = 10 * 4096, pos = 0, done;
	size_t n;

	n = layout_split(&l, off, len, p, 4, &done);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(done, (4096 - 1000) + 3 * 4096);
	check_pieces(&l, off, p, n, done);
	/* Resuming from done finishes the extent. */
	while (pos < len) {
		n = layout_split(&l, off + pos, len - pos, p, 4, &done);
		ck_assert_uint_gt(n, 0);
		check_pieces(&l, off + pos, p, n, done);
		pos += done;
	}
	ck_assert_uint_eq(pos, len);
}
END_TEST

START_TEST(split_of_an_extent_past_two_to_the_64_stops_short)
{
	const struct rpfs_layout l = STRIPED(4096, 2, 0, 2);
	struct rpfs_piece p[8];
	uint64_t done;
	size_t n;

	n = layout_split(&l, UINT64_MAX - 100, 1000, p, 8, &done);
	ck_assert_uint_lt(done, 1000);
	check_pieces(&l, UINT64_MAX - 100, p, n, done);
}
END_TEST

/* ---- sizes -------------------------------------------------------------- */

START_TEST(local_sizes_give_back_the_file_size)
{
	srand(LSEED + 3);
	for (size_t i = 0; i < NLAYOUTS; i++) {
		const struct rpfs_layout *l = &layouts[i];

		for (int t = 0; t < 2000; t++) {
			uint64_t size = rnd64() % (30 * l->stripe_unit * l->stripe_count);
			uint64_t sizes[8], sum = 0;

			if (t < 3)
				size = (uint64_t)t * l->stripe_unit;
			for (uint32_t s = 0; s < l->stripe_count; s++) {
				sizes[s] = layout_local_size(l, s, size);
				sum += sizes[s];
			}
			ck_assert_uint_eq(sum, size);
			ck_assert_uint_eq(layout_file_size(l, sizes), size);
		}
	}
}
END_TEST

/* local_size counts the bytes of [0, size) the oracle puts on the slot. */
START_TEST(local_size_counts_the_bytes_on_the_slot)
{
	const struct rpfs_layout l = STRIPED(3, 3, 1, 4);

	for (uint64_t size = 0; size < 60; size++) {
		uint64_t count[3] = {0};

		for (uint64_t off = 0; off < size; off++) {
			uint32_t slot;
			uint64_t local;

			oracle_map(&l, off, &slot, &local);
			count[slot]++;
		}
		for (uint32_t s = 0; s < 3; s++)
			ck_assert_uint_eq(layout_local_size(&l, s, size), count[s]);
	}
}
END_TEST

START_TEST(file_size_is_zero_when_every_datafile_is_empty)
{
	uint64_t sizes[5] = {0};

	ck_assert_uint_eq(layout_file_size(&layouts[2], sizes), 0);
}
END_TEST

START_TEST(file_size_takes_the_furthest_byte_of_a_sparse_file)
{
	const struct rpfs_layout l = STRIPED(4096, 3, 0, 3);
	/* Only slot 1 has data: one byte at datafile offset 4096 (row 1). */
	uint64_t sizes[3] = {0, 4097, 0};

	ck_assert_uint_eq(layout_file_size(&l, sizes), (1 * 3 + 1) * 4096 + 1);
}
END_TEST

/* ---- check -------------------------------------------------------------- */

START_TEST(check_accepts_good_layouts)
{
	for (size_t i = 0; i < NLAYOUTS; i++)
		ck_assert_int_eq(layout_check(&layouts[i]), 0);
}
END_TEST

START_TEST(check_rejects_unusable_layouts)
{
	static const struct rpfs_layout bad[] = {
		STRIPED(0, 1, 0, 1),	/* stripe unit 0 */
		STRIPED(4096, 0, 0, 1), /* count 0 */
		STRIPED(4096, 3, 0, 2), /* count > nservers */
		STRIPED(4096, 1, 2, 2), /* first_server >= nservers */
		STRIPED(4096, 1, 0, 0), /* no servers */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(layout_check(&bad[i]), -EINVAL);
	ck_assert_int_eq(layout_check(NULL), -EINVAL);
}
END_TEST

/* ---- kinds ---------------------------------------------------------------- */

/* Every named kind has its math in the table: ec:2+1 over 2 data slots is
 * 3 slots; over 3 data slots (not a multiple of K) or on fewer servers
 * than its slots it is refused, saying why. */
START_TEST(check_takes_every_named_kind)
{
	struct rpfs_layout ec = STRIPED(4096, 2, 0, 4);
	char why[160];

	ec.kind = RPFS_LAYOUT_EC;
	ec.data_cells = 2;
	ec.parity_cells = 1;
	ck_assert(layout_kind_supported(RPFS_LAYOUT_MIRROR));
	ck_assert(layout_kind_supported(RPFS_LAYOUT_EC));
	ck_assert_int_eq(layout_check(&ec), 0);
	ck_assert_uint_eq(layout_slots(&ec), 3);
	ec.stripe_count = 3;
	ck_assert_int_eq(layout_check(&ec), -EINVAL);
	ck_assert_ptr_nonnull(
		strstr(layout_problem(&ec, why, sizeof(why)), "a multiple of 2"));
	ec.stripe_count = 4; /* 2 groups: 6 slots on 4 servers */
	ck_assert_int_eq(layout_check(&ec), -EINVAL);
}
END_TEST

/* ---- the mirror kind ------------------------------------------------------ */

/* mirror:copies over count data slots of unit su, from first of n. */
static struct rpfs_layout mirror_of(uint64_t su, uint32_t count, uint32_t copies,
				    uint32_t first, uint32_t n)
{
	struct rpfs_layout l = STRIPED(su, count, first, n);

	l.kind = RPFS_LAYOUT_MIRROR;
	l.copies = copies;
	return l;
}

START_TEST(mirror_check_takes_2_to_8_copies_that_fit)
{
	struct rpfs_layout l = mirror_of(4096, 2, 2, 0, 4);
	char why[160];

	ck_assert_int_eq(layout_check(&l), 0);
	ck_assert_str_eq(layout_problem(&l, why, sizeof(why)), "");
	l = mirror_of(4096, 1, RPFS_COPIES_MAX, 3, RPFS_COPIES_MAX);
	ck_assert_int_eq(layout_check(&l), 0);
	/* too few, too many copies */
	l = mirror_of(4096, 2, 1, 0, 4);
	ck_assert_int_eq(layout_check(&l), -EINVAL);
	ck_assert_msg(strstr(layout_problem(&l, why, sizeof(why)), "2 to 8 copies"), "%s",
		      why);
	l = mirror_of(4096, 1, RPFS_COPIES_MAX + 1, 0, 16);
	ck_assert_int_eq(layout_check(&l), -EINVAL);
	/* count * copies slots must fit the servers */
	l = mirror_of(4096, 3, 2, 0, 5);
	ck_assert_int_eq(layout_check(&l), -EINVAL);
	l = mirror_of(4096, 3, 2, 0, 6);
	ck_assert_int_eq(layout_check(&l), 0);
	/* ec parameters on a mirror */
	l = mirror_of(4096, 2, 2, 0, 4);
	l.data_cells = 2;
	ck_assert_int_eq(layout_check(&l), -EINVAL);
}
END_TEST

START_TEST(mirror_slots_are_count_times_copies_all_holding_data)
{
	for (uint32_t copies = 2; copies <= 4; copies++)
		for (uint32_t count = 1; count <= 3; count++) {
			struct rpfs_layout l = mirror_of(4096, count, copies, 1, 12);

			ck_assert_int_eq(layout_check(&l), 0);
			ck_assert_uint_eq(layout_slots(&l), count * copies);
			ck_assert_uint_eq(layout_copies(&l), copies);
			for (uint32_t s = 0; s < count * copies; s++)
				ck_assert(layout_slot_has_data(&l, s));
			ck_assert(!layout_slot_has_data(&l, count * copies));
		}
}
END_TEST

/* Copy c of data slot s is slot c * count + s, whichever copy is asked
 * from; the copies of a slot are on distinct servers. */
START_TEST(mirror_copy_slot_names_each_copy_on_a_distinct_server)
{
	struct rpfs_layout l = mirror_of(4096, 3, 3, 5, 9);

	ck_assert_int_eq(layout_check(&l), 0);
	for (uint32_t s = 0; s < layout_slots(&l); s++) {
		bool seen[9] = {false};

		for (uint32_t c = 0; c < 3; c++) {
			uint32_t cs = layout_copy_slot(&l, s, c), srv;

			ck_assert_uint_eq(cs, c * 3 + s % 3);
			srv = layout_server(&l, cs);
			ck_assert_uint_lt(srv, 9);
			ck_assert_msg(!seen[srv], "slot %u: two copies on server %u", s,
				      srv);
			seen[srv] = true;
		}
	}
	/* a stripe layout has one copy, itself */
	ck_assert_uint_eq(layout_copies(&layouts[1]), 1);
	ck_assert_uint_eq(layout_copy_slot(&layouts[1], 2, 0), 2);
}
END_TEST

/* A mirror's logical bytes map and split as the stripe layout of its data
 * slots: pieces are on primaries, slots below count. */
START_TEST(mirror_maps_and_splits_as_its_data_slots)
{
	struct rpfs_layout m = mirror_of(4096, 3, 2, 1, 7);
	struct rpfs_layout d = STRIPED(4096, 3, 1, 7);
	struct rpfs_piece pm[64], pd[64];
	uint64_t donem = 0, doned = 0;
	size_t nm, nd;

	srand(LSEED);
	for (int i = 0; i < 2000; i++) {
		uint64_t off = rnd64() % (1u << 24), lm, ld;
		uint32_t sm, sd;

		layout_map(&m, off, &sm, &lm);
		layout_map(&d, off, &sd, &ld);
		ck_assert_uint_eq(sm, sd);
		ck_assert_uint_eq(lm, ld);
		ck_assert_uint_lt(sm, 3);
		/* every copy's byte is the same logical byte */
		ck_assert_uint_eq(layout_logical(&m, sm + 3, lm), off);
	}
	nm = layout_split(&m, 1000, 50000, pm, 64, &donem);
	nd = layout_split(&d, 1000, 50000, pd, 64, &doned);
	ck_assert_uint_eq(nm, nd);
	ck_assert_uint_eq(donem, doned);
	for (size_t i = 0; i < nm; i++) {
		ck_assert_uint_eq(pm[i].slot, pd[i].slot);
		ck_assert_uint_lt(pm[i].slot, 3);
		ck_assert_uint_eq(pm[i].local_off, pd[i].local_off);
		ck_assert_uint_eq(pm[i].len, pd[i].len);
	}
}
END_TEST

/* The file is as long as its longest copy; each copy of a slot has the
 * local size of its primary. */
START_TEST(mirror_file_size_is_the_max_over_every_copy)
{
	struct rpfs_layout m = mirror_of(4096, 2, 2, 0, 4);
	uint64_t sizes[4] = {0};

	ck_assert_uint_eq(layout_file_size(&m, sizes), 0);
	/* 10000 bytes: slot 0 has units 0 and 2 (4096 + 1808), slot 1 unit 1 */
	for (uint32_t s = 0; s < 4; s++)
		sizes[s] = layout_local_size(&m, s, 10000);
	ck_assert_uint_eq(sizes[0], 4096 + 1808);
	ck_assert_uint_eq(sizes[1], 4096);
	ck_assert_uint_eq(sizes[2], sizes[0]);
	ck_assert_uint_eq(sizes[3], sizes[1]);
	ck_assert_uint_eq(layout_file_size(&m, sizes), 10000);
	/* one copy lost the last write: the other still says how long */
	sizes[0] = 4096;
	ck_assert_uint_eq(layout_file_size(&m, sizes), 10000);
	/* only a second copy holds the far byte */
	memset(sizes, 0, sizeof(sizes));
	sizes[3] = 1;
	ck_assert_uint_eq(layout_file_size(&m, sizes), 4097);
}
END_TEST

START_TEST(check_refuses_unknown_kinds)
{
	static const uint32_t unknown[] = {RPFS_LAYOUT_KINDS, 77, UINT32_MAX};
	char why[160];

	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		struct rpfs_layout l = STRIPED(4096, 1, 0, 1);

		l.kind = unknown[i];
		ck_assert_int_eq(layout_check(&l), -EOPNOTSUPP);
		ck_assert_msg(
			strstr(layout_problem(&l, why, sizeof(why)), "unknown kind"),
			"%s", why);
		ck_assert(!layout_kind_supported(unknown[i]));
		ck_assert_str_eq(layout_kind_name(unknown[i]), "unknown");
	}
}
END_TEST

START_TEST(check_refuses_redundancy_parameters_on_a_stripe_layout)
{
	for (int field = 0; field < 4; field++) {
		struct rpfs_layout l = STRIPED(4096, 2, 0, 2);
		char why[160];

		l.copies = field == 0;
		l.data_cells = field == 1;
		l.parity_cells = field == 2;
		l.cell_size = field == 3 ? 4096 : 0;
		ck_assert_int_eq(layout_check(&l), -EINVAL);
		ck_assert_msg(strstr(layout_problem(&l, why, sizeof(why)), "redundancy"),
			      "%s", why);
	}
}
END_TEST

START_TEST(problem_of_a_usable_layout_is_empty)
{
	char why[160] = "x";

	for (size_t i = 0; i < NLAYOUTS; i++)
		ck_assert_str_eq(layout_problem(&layouts[i], why, sizeof(why)), "");
}
END_TEST

START_TEST(kinds_have_their_names)
{
	ck_assert_str_eq(layout_kind_name(RPFS_LAYOUT_STRIPE), "none");
	ck_assert_str_eq(layout_kind_name(RPFS_LAYOUT_MIRROR), "mirror");
	ck_assert_str_eq(layout_kind_name(RPFS_LAYOUT_EC), "ec");
	ck_assert(layout_kind_supported(RPFS_LAYOUT_STRIPE));
}
END_TEST

START_TEST(a_stripe_layout_uses_count_slots_all_holding_data)
{
	for (size_t i = 0; i < NLAYOUTS; i++) {
		const struct rpfs_layout *l = &layouts[i];

		ck_assert_uint_eq(layout_slots(l), l->stripe_count);
		for (uint32_t s = 0; s < l->stripe_count; s++)
			ck_assert(layout_slot_has_data(l, s));
		ck_assert(!layout_slot_has_data(l, l->stripe_count));
	}
}
END_TEST

/* A caller that skipped layout_check is stopped, never served striping
 * math for a file whose bytes lie elsewhere. */
START_TEST(math_on_a_kind_without_math_stops_the_program)
{
	struct rpfs_layout l = STRIPED(4096, 2, 0, 4);
	struct rpfs_piece p[4];

	l.kind = RPFS_LAYOUT_KINDS; /* a kind no table entry has */
	layout_split(&l, 0, 8192, p, 4, NULL);
}
END_TEST

/* ---- the ec kind ------------------------------------------------------------ */

/* ec:k+p over count data slots of unit su, from first of n. */
static struct rpfs_layout ec_of(uint64_t su, uint32_t count, uint32_t k, uint32_t p,
				uint32_t first, uint32_t n)
{
	struct rpfs_layout l = STRIPED(su, count, first, n);

	l.kind = RPFS_LAYOUT_EC;
	l.data_cells = k;
	l.parity_cells = p;
	return l;
}

static int ec_check_of(const struct rpfs_layout *l, char *why, size_t len)
{
	why[0] = 0;
	return layout_ec.check(l, why, len);
}

START_TEST(ec_check_takes_groups_of_k_data_slots)
{
	struct rpfs_layout l = ec_of(4096, 4, 4, 2, 0, 6);
	char why[160];

	ck_assert_int_eq(ec_check_of(&l, why, sizeof(why)), 0);
	l = ec_of(4096, 4, 2, 1, 0, 6); /* 2 groups */
	ck_assert_int_eq(ec_check_of(&l, why, sizeof(why)), 0);
	l.cell_size = 4096; /* the cell may be named: the stripe unit */
	ck_assert_int_eq(ec_check_of(&l, why, sizeof(why)), 0);
	l = ec_of(4096, 3, 2, 1, 0, 6); /* not a multiple of k */
	ck_assert_int_eq(ec_check_of(&l, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "a multiple of 2"), "%s", why);
	l = ec_of(4096, 2, 0, 1, 0, 6);
	ck_assert_int_eq(ec_check_of(&l, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "1 to 32 cells"), "%s", why);
	l = ec_of(4096, 2, 2, 0, 0, 6);
	ck_assert_int_eq(ec_check_of(&l, why, sizeof(why)), -EINVAL);
	l = ec_of(4096, 33, 33, 1, 0, 64);
	ck_assert_int_eq(ec_check_of(&l, why, sizeof(why)), -EINVAL);
	l = ec_of(4096, 2, 2, 1, 0, 6);
	l.copies = 2;
	ck_assert_int_eq(ec_check_of(&l, why, sizeof(why)), -EINVAL);
	l = ec_of(4096, 2, 2, 1, 0, 6);
	l.cell_size = 8192; /* a cell other than the stripe unit */
	ck_assert_int_eq(ec_check_of(&l, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "a cell of 8192 bytes"), "%s", why);
}
END_TEST

/* G * (K + P) slots; only the data slots hold the file's bytes; every slot
 * is member index of group g and back, each group's members on distinct
 * servers. */
START_TEST(ec_groups_have_k_data_and_p_parity_members)
{
	static const uint32_t kp[][3] = {
		{2, 1, 1}, {4, 2, 1}, {2, 1, 3}, {3, 2, 2}, {8, 4, 1}};

	for (size_t t = 0; t < sizeof(kp) / sizeof(kp[0]); t++) {
		uint32_t k = kp[t][0], p = kp[t][1], g = kp[t][2];
		uint32_t n = g * (k + p) + 1;
		struct rpfs_layout l = ec_of(65536, g * k, k, p, n - 2, n);
		char why[160];

		ck_assert_int_eq(ec_check_of(&l, why, sizeof(why)), 0);
		ck_assert_uint_eq(layout_ec.slots(&l), g * (k + p));
		for (uint32_t s = 0; s < g * (k + p); s++) {
			uint32_t grp = layout_ec_group(&l, s),
				 idx = layout_ec_index(&l, s);

			ck_assert(layout_ec.slot_has_data(&l, s) == (s < g * k));
			ck_assert_uint_lt(grp, g);
			ck_assert_uint_lt(idx, k + p);
			ck_assert((idx < k) == (s < g * k));
			ck_assert_uint_eq(layout_ec_member(&l, grp, idx), s);
		}
		for (uint32_t grp = 0; grp < g; grp++) {
			bool seen[64] = {false};

			for (uint32_t idx = 0; idx < k + p; idx++) {
				uint32_t srv =
					layout_server(&l, layout_ec_member(&l, grp, idx));

				ck_assert_msg(!seen[srv],
					      "group %u: two members on server %u", grp,
					      srv);
				seen[srv] = true;
			}
		}
		/* a parity slot holds no logical byte */
		ck_assert_uint_eq(layout_ec.logical(&l, g * k, 0), UINT64_MAX);
	}
}
END_TEST

/* The data maps and splits as the stripe layout of its data slots. */
START_TEST(ec_maps_and_splits_as_its_data_slots)
{
	struct rpfs_layout e = ec_of(4096, 4, 2, 1, 1, 7);
	struct rpfs_layout d = STRIPED(4096, 4, 1, 7);
	struct rpfs_piece pe[64], pd[64];
	uint64_t donee = 0, doned = 0;
	size_t ne, nd;

	srand(LSEED);
	for (int i = 0; i < 2000; i++) {
		uint64_t off = rnd64() % (1ull << 40), a, b;
		uint32_t se, sd;

		layout_ec.map(&e, off, &se, &a);
		layout_stripe.map(&d, off, &sd, &b);
		ck_assert_uint_eq(se, sd);
		ck_assert_uint_eq(a, b);
		ck_assert_uint_eq(layout_ec.logical(&e, se, a), off);
	}
	ne = layout_ec.split(&e, 1000, 100000, pe, 64, &donee);
	nd = layout_stripe.split(&d, 1000, 100000, pd, 64, &doned);
	ck_assert_uint_eq(ne, nd);
	ck_assert_uint_eq(donee, doned);
	for (size_t i = 0; i < ne; i++) {
		ck_assert_uint_eq(pe[i].slot, pd[i].slot);
		ck_assert_uint_eq(pe[i].local_off, pd[i].local_off);
		ck_assert_uint_eq(pe[i].logical_off, pd[i].logical_off);
		ck_assert_uint_eq(pe[i].len, pd[i].len);
	}
}
END_TEST

/* The size comes from the data slots alone; a parity slot is as long as
 * its group's longest data slot, so a delta at [a, b) of any member lands
 * inside it. */
START_TEST(ec_sizes_come_from_data_slots_and_parity_covers_its_group)
{
	struct rpfs_layout e = ec_of(4096, 4, 2, 1, 0, 6);
	uint64_t sizes[6];

	srand(LSEED + 1);
	for (int i = 0; i < 3000; i++) {
		uint64_t size = i < 100 ? (uint64_t)i * 1000 : rnd64() % (1ull << 36);

		for (uint32_t s = 0; s < 6; s++)
			sizes[s] = layout_ec.local_size(&e, s, size);
		ck_assert_uint_eq(layout_ec.file_size(&e, sizes), size);
		for (uint32_t s = 4; s < 6; s++) {
			uint32_t g = layout_ec_group(&e, s);
			uint64_t most = 0;

			for (uint32_t idx = 0; idx < 2; idx++) {
				uint64_t one = sizes[layout_ec_member(&e, g, idx)];

				most = one > most ? one : most;
			}
			ck_assert_uint_eq(sizes[s], most);
		}
		/* parity sizes, whatever they are, never change the file's */
		sizes[4] = sizes[5] = rnd64() % (1ull << 40);
		ck_assert_uint_eq(layout_ec.file_size(&e, sizes), size);
	}
}
END_TEST

static Suite *layout_suite(void)
{
	Suite *s = suite_create("layout");
	TCase *tc = tcase_create("map");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, map_matches_the_oracle_byte_by_byte);
	tcase_add_test(tc, map_matches_the_oracle_at_random_offsets);
	tcase_add_test(tc, logical_inverts_map_near_two_to_the_64);
	tcase_add_test(tc, logical_saturates_instead_of_wrapping);
	tcase_add_test(tc, server_wraps_from_first_server);
	tcase_add_test(tc, server_does_not_overflow_with_large_indexes);
	suite_add_tcase(s, tc);

	tc = tcase_create("split");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, split_covers_the_extent_in_order);
	tcase_add_test(tc, split_of_nothing_is_no_pieces);
	tcase_add_test(tc, split_stops_at_max_and_reports_done);
	tcase_add_test(tc, split_of_an_extent_past_two_to_the_64_stops_short);
	suite_add_tcase(s, tc);

	tc = tcase_create("size");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, local_sizes_give_back_the_file_size);
	tcase_add_test(tc, local_size_counts_the_bytes_on_the_slot);
	tcase_add_test(tc, file_size_is_zero_when_every_datafile_is_empty);
	tcase_add_test(tc, file_size_takes_the_furthest_byte_of_a_sparse_file);
	suite_add_tcase(s, tc);

	tc = tcase_create("check");
	tcase_add_test(tc, check_accepts_good_layouts);
	tcase_add_test(tc, check_rejects_unusable_layouts);
	suite_add_tcase(s, tc);

	tc = tcase_create("kinds");
	tcase_add_test(tc, check_takes_every_named_kind);
	tcase_add_test(tc, check_refuses_unknown_kinds);
	tcase_add_test(tc, check_refuses_redundancy_parameters_on_a_stripe_layout);
	tcase_add_test(tc, problem_of_a_usable_layout_is_empty);
	tcase_add_test(tc, kinds_have_their_names);
	tcase_add_test(tc, a_stripe_layout_uses_count_slots_all_holding_data);
	tcase_add_test_raise_signal(tc, math_on_a_kind_without_math_stops_the_program,
				    SIGABRT);
	suite_add_tcase(s, tc);

	tc = tcase_create("ec");
	tcase_add_test(tc, ec_check_takes_groups_of_k_data_slots);
	tcase_add_test(tc, ec_groups_have_k_data_and_p_parity_members);
	tcase_add_test(tc, ec_maps_and_splits_as_its_data_slots);
	tcase_add_test(tc, ec_sizes_come_from_data_slots_and_parity_covers_its_group);
	suite_add_tcase(s, tc);

	tc = tcase_create("mirror");
	tcase_add_test(tc, mirror_check_takes_2_to_8_copies_that_fit);
	tcase_add_test(tc, mirror_slots_are_count_times_copies_all_holding_data);
	tcase_add_test(tc, mirror_copy_slot_names_each_copy_on_a_distinct_server);
	tcase_add_test(tc, mirror_maps_and_splits_as_its_data_slots);
	tcase_add_test(tc, mirror_file_size_is_the_max_over_every_copy);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(layout_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
