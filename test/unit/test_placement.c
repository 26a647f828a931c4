/* Placement specification (placement.h): the metadata server of a path is
 * a fixed hash every version computes alike, a handle names the metadata
 * server that made it, and a new file's first I/O server follows its
 * handle, or the creator's choice, and never puts a slot on a server known
 * to be down. */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "placement.h"

/* ---- path -> metadata server ------------------------------------------- */

START_TEST(path_owner_is_stable_and_in_range)
{
	struct rpfs_config cfg = {.nmeta = 3};
	unsigned hits[3] = {0};
	char p[64];

	for (int i = 0; i < 3000; i++) {
		uint32_t m;

		snprintf(p, sizeof(p), "/dir/file.%d", i);
		m = place_meta_of_path(&cfg, p);
		ck_assert_uint_lt(m, cfg.nmeta);
		ck_assert_uint_eq(place_meta_of_path(&cfg, p), m);
		hits[m]++;
	}
	/* FNV-1a spreads names: every server gets a fair share. */
	for (int m = 0; m < 3; m++)
		ck_assert_uint_gt(hits[m], 700);
}
END_TEST

START_TEST(path_owner_never_changes_between_versions)
{
	struct rpfs_config cfg = {.nmeta = 3};

	/* Existing files would be looked up on the wrong server otherwise.
	 * FNV-1a 64 of "/" is 0xaf63a24c860189fe, of "/a" 0x07d66707b49cd92d. */
	ck_assert_uint_eq(place_meta_of_path(&cfg, "/"), 0xaf63a24c860189feull % 3);
	cfg.nmeta = 7;
	ck_assert_uint_eq(place_meta_of_path(&cfg, "/a"), 0x07d66707b49cd92dull % 7);
}
END_TEST

START_TEST(path_owner_without_metadata_servers_is_0)
{
	struct rpfs_config cfg = {.nmeta = 0};

	ck_assert_uint_eq(place_meta_of_path(&cfg, "/a/b"), 0);
}
END_TEST

/* ---- handles ------------------------------------------------------------ */

START_TEST(a_handle_names_the_metadata_server_that_made_it)
{
	for (uint32_t m = 0; m < 70000; m += 997) {
		uint64_t h = place_handle(m & 0xffff, 12345);

		ck_assert_uint_eq(place_meta_of_handle(h), m & 0xffff);
		ck_assert_uint_eq(place_serial(h), 12345);
	}
	ck_assert_uint_eq(place_meta_of_handle(place_handle(0xffff, PLACE_SERIAL_MAX)),
			  0xffff);
	ck_assert_uint_eq(place_serial(place_handle(3, PLACE_SERIAL_MAX)),
			  PLACE_SERIAL_MAX);
}
END_TEST

START_TEST(handle_bits_never_change_between_versions)
{
	/* Handles are on the wire, in stores and in datafile names. */
	ck_assert_uint_eq(place_handle(1, 5), 0x0001000000000005ull);
	ck_assert_uint_eq(place_handle(0x1234, 0xabcdef), 0x1234000000abcdefull);
	ck_assert_uint_eq(place_meta_of_handle(0x0003000000000042ull), 3);
	ck_assert_uint_eq(PLACE_SERIAL_MAX, 0xffffffffffffull);
	/* The root directory's handle: serial 0. */
	ck_assert_uint_eq(place_serial(place_handle(2, 0)), 0);
}
END_TEST

/* ---- a new file's I/O servers ------------------------------------------ */

START_TEST(consecutive_files_start_on_consecutive_servers)
{
	uint32_t first, prev = 0;

	for (uint64_t serial = 1; serial < 50; serial++) {
		ck_assert_int_eq(
			place_first_io(5, 2, place_handle(1, serial), -1, NULL, &first),
			0);
		ck_assert_uint_eq(first, serial % 5);
		if (serial > 1)
			ck_assert_uint_eq(first, (prev + 1) % 5);
		prev = first;
	}
}
END_TEST

START_TEST(the_creators_choice_wins)
{
	uint32_t first = 99;

	ck_assert_int_eq(place_first_io(4, 4, place_handle(0, 7), 2, NULL, &first), 0);
	ck_assert_uint_eq(first, 2);
	ck_assert_int_eq(place_first_io(4, 1, place_handle(0, 7), 0, NULL, &first), 0);
	ck_assert_uint_eq(first, 0);
}
END_TEST

START_TEST(a_choice_the_cluster_does_not_have_is_refused)
{
	uint32_t first = 99;

	ck_assert_int_eq(place_first_io(4, 2, 1, 4, NULL, &first), -EINVAL);
	ck_assert_int_eq(place_first_io(4, 5, 1, -1, NULL, &first), -EINVAL);
	ck_assert_int_eq(place_first_io(4, 0, 1, -1, NULL, &first), -EINVAL);
	ck_assert_int_eq(place_first_io(4, 2, 1, -2, NULL, &first), -EINVAL);
	ck_assert_int_eq(place_first_io(0, 1, 1, -1, NULL, &first), -ENOSPC);
	ck_assert_uint_eq(first, 99);
}
END_TEST

START_TEST(no_slot_goes_to_a_server_known_to_be_down)
{
	bool down[4] = {false, false, true, false};
	uint32_t first;

	/* Serial 1 would start on 1, with slot 1 on server 2: down. Start 2
	 * is down itself; start 3 holds slots on 3 and 0. */
	ck_assert_int_eq(place_first_io(4, 2, place_handle(0, 1), -1, down, &first), 0);
	ck_assert_uint_eq(first, 3);
	/* One slot: only the server itself matters. */
	ck_assert_int_eq(place_first_io(4, 1, place_handle(0, 1), -1, down, &first), 0);
	ck_assert_uint_eq(first, 1);
	/* Nothing down: the same as no list. */
	down[2] = false;
	ck_assert_int_eq(place_first_io(4, 3, place_handle(0, 6), -1, down, &first), 0);
	ck_assert_uint_eq(first, 2);
}
END_TEST

START_TEST(no_placement_without_enough_servers_up)
{
	bool down[4] = {false, true, false, false};
	uint32_t first = 99;

	/* Every server is needed and one is down. */
	ck_assert_int_eq(place_first_io(4, 4, place_handle(0, 1), -1, down, &first),
			 -EHOSTDOWN);
	/* The creator asked for a start whose slots include it. */
	ck_assert_int_eq(place_first_io(4, 2, place_handle(0, 1), 0, down, &first),
			 -EHOSTDOWN);
	ck_assert_uint_eq(first, 99);
	ck_assert_int_eq(place_first_io(4, 2, place_handle(0, 1), 2, down, &first), 0);
	ck_assert_uint_eq(first, 2);
}
END_TEST

START_TEST(a_default_count_fits_the_longest_run_up)
{
	bool down[5] = {false, false, false, false, false};

	/* Nothing down, or no list: the count itself, at most the servers. */
	ck_assert_uint_eq(place_fit_count(5, 4, NULL), 4);
	ck_assert_uint_eq(place_fit_count(5, 9, NULL), 5);
	ck_assert_uint_eq(place_fit_count(5, 5, down), 5);
	/* One down: the other 4, consecutive round robin. */
	down[2] = true;
	ck_assert_uint_eq(place_fit_count(5, 5, down), 4);
	ck_assert_uint_eq(place_fit_count(5, 2, down), 2);
	/* Two apart: 0 and 3 down leave runs {1,2} and {4}: 2, not 3. */
	down[2] = false;
	down[0] = down[3] = true;
	ck_assert_uint_eq(place_fit_count(5, 5, down), 2);
	/* A run that wraps: 1 and 2 down leave {3,4,0}. */
	down[0] = down[3] = false;
	down[1] = down[2] = true;
	ck_assert_uint_eq(place_fit_count(5, 5, down), 3);
	/* ... and place_first_io finds it. */
	{
		uint32_t first = 99;

		ck_assert_int_eq(
			place_first_io(5, 3, place_handle(0, 1), -1, down, &first), 0);
		ck_assert_uint_eq(first, 3);
	}
	/* All down: 0. */
	for (int i = 0; i < 5; i++)
		down[i] = true;
	ck_assert_uint_eq(place_fit_count(5, 5, down), 0);
}
END_TEST

static Suite *placement_suite(void)
{
	Suite *s = suite_create("placement");
	TCase *tc = tcase_create("paths");

	tcase_add_test(tc, path_owner_is_stable_and_in_range);
	tcase_add_test(tc, path_owner_never_changes_between_versions);
	tcase_add_test(tc, path_owner_without_metadata_servers_is_0);
	suite_add_tcase(s, tc);

	tc = tcase_create("handles");
	tcase_add_test(tc, a_handle_names_the_metadata_server_that_made_it);
	tcase_add_test(tc, handle_bits_never_change_between_versions);
	suite_add_tcase(s, tc);

	tc = tcase_create("new files");
	tcase_add_test(tc, consecutive_files_start_on_consecutive_servers);
	tcase_add_test(tc, the_creators_choice_wins);
	tcase_add_test(tc, a_choice_the_cluster_does_not_have_is_refused);
	tcase_add_test(tc, no_slot_goes_to_a_server_known_to_be_down);
	tcase_add_test(tc, no_placement_without_enough_servers_up);
	tcase_add_test(tc, a_default_count_fits_the_longest_run_up);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(placement_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
