/* Remote addressing specification (mraddr.h), in both libfabric MR modes.
 *
 * tcp (mr_mode 0) uses offsets and caller keys, verbs uses virtual addresses
 * and provider keys; only tcp runs here, so the verbs rules are checked on
 * the helpers themselves rather than through a provider. */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "mraddr.h"

static char region[4096];

START_TEST(remote_addr_in_virt_mode_is_the_pointer)
{
	ck_assert_uint_eq(xp_remote_addr(1, region, region), (uint64_t)(uintptr_t)region);
	ck_assert_uint_eq(xp_remote_addr(1, region, region + 100),
			  (uint64_t)(uintptr_t)(region + 100));
	ck_assert_uint_eq(xp_remote_addr(1, region, region + sizeof(region) - 1),
			  (uint64_t)(uintptr_t)region + sizeof(region) - 1);
}
END_TEST

START_TEST(remote_addr_in_offset_mode_is_distance_from_base)
{
	ck_assert_uint_eq(xp_remote_addr(0, region, region), 0);
	ck_assert_uint_eq(xp_remote_addr(0, region, region + 100), 100);
	ck_assert_uint_eq(xp_remote_addr(0, region, region + sizeof(region) - 1),
			  sizeof(region) - 1);
	/* A piece inside a larger registration: offset from the registration. */
	ck_assert_uint_eq(xp_remote_addr(0, region + 1000, region + 1234), 234);
}
END_TEST

/* The same arithmetic serves both modes once the peer announced an address. */
START_TEST(remote_target_adds_offset)
{
	uint64_t out = 0;

	ck_assert_int_eq(xp_remote_target(0, 0, &out), 0);
	ck_assert_uint_eq(out, 0);
	ck_assert_int_eq(xp_remote_target(4096, 100, &out), 0);
	ck_assert_uint_eq(out, 4196);
	ck_assert_int_eq(xp_remote_target(0x7f0000000000ULL, 0x1000, &out), 0);
	ck_assert_uint_eq(out, 0x7f0000001000ULL);
	ck_assert_int_eq(xp_remote_target(UINT64_MAX - 5, 5, &out), 0);
	ck_assert_uint_eq(out, UINT64_MAX);
}
END_TEST

START_TEST(remote_target_refuses_wrap)
{
	uint64_t out = 42;

	ck_assert_int_eq(xp_remote_target(UINT64_MAX, 1, &out), -1);
	ck_assert_int_eq(xp_remote_target(UINT64_MAX - 5, 6, &out), -1);
	ck_assert_int_eq(xp_remote_target(1, UINT64_MAX, &out), -1);
	ck_assert_int_eq(xp_remote_target(UINT64_MAX, UINT64_MAX, &out), -1);
	ck_assert_uint_eq(out, 42); /* untouched on failure */
}
END_TEST

START_TEST(requested_key_with_provider_keys_is_zero)
{
	uint64_t counter = 7;

	for (int i = 0; i < 10; i++)
		ck_assert_uint_eq(xp_requested_key(1, &counter), 0);
	ck_assert_uint_eq(counter, 7); /* no caller key consumed */
}
END_TEST

START_TEST(requested_key_without_provider_keys_increases_and_is_unique)
{
	uint64_t counter = 0, prev = 0;

	for (int i = 0; i < 100000; i++) {
		uint64_t k = xp_requested_key(0, &counter);

		/* Strictly increasing implies unique; 0 never, it looks like "none". */
		ck_assert_uint_gt(k, prev);
		prev = k;
	}
	/* Provider-key calls in between leave the sequence alone. */
	ck_assert_uint_eq(xp_requested_key(1, &counter), 0);
	ck_assert_uint_eq(xp_requested_key(0, &counter), prev + 1);
}
END_TEST

/* Threads registering at once never get the same key. */
#define KEY_THREADS 4
#define KEYS_EACH   100000

struct key_taker {
	uint64_t *counter;
	uint64_t keys[KEYS_EACH];
};

static void *take_keys(void *arg)
{
	struct key_taker *t = arg;

	for (int i = 0; i < KEYS_EACH; i++)
		t->keys[i] = xp_requested_key(0, t->counter);
	return NULL;
}

START_TEST(requested_keys_taken_by_threads_at_once_are_unique)
{
	const size_t n = (size_t)KEY_THREADS * KEYS_EACH;
	struct key_taker *t = calloc(KEY_THREADS, sizeof(*t));
	pthread_t tid[KEY_THREADS];
	uint64_t counter = 0;
	unsigned char *seen = calloc(n + 1, 1);

	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(seen);
	for (int i = 0; i < KEY_THREADS; i++) {
		t[i].counter = &counter;
		ck_assert_int_eq(pthread_create(&tid[i], NULL, take_keys, &t[i]), 0);
	}
	for (int i = 0; i < KEY_THREADS; i++)
		pthread_join(tid[i], NULL);
	/* n keys from a counter that started at 0, all different: exactly 1..n */
	ck_assert_uint_eq(counter, n);
	for (int i = 0; i < KEY_THREADS; i++)
		for (int k = 0; k < KEYS_EACH; k++) {
			uint64_t key = t[i].keys[k];

			ck_assert_msg(key >= 1 && key <= n && !seen[key],
				      "key %llu handed out twice or out of range",
				      (unsigned long long)key);
			seen[key] = 1;
		}
	free(seen);
	free(t);
}
END_TEST

START_TEST(range_ok_accepts_ranges_inside)
{
	ck_assert(xp_range_ok(0, 0, 0));
	ck_assert(xp_range_ok(0, 100, 100));
	ck_assert(xp_range_ok(99, 1, 100));
	ck_assert(xp_range_ok(100, 0, 100)); /* empty range at the end */
	ck_assert(xp_range_ok(0, UINT64_MAX, UINT64_MAX));
	ck_assert(xp_range_ok(UINT64_MAX, 0, UINT64_MAX));
}
END_TEST

START_TEST(range_ok_refuses_ranges_past_the_end)
{
	ck_assert(!xp_range_ok(0, 1, 0));
	ck_assert(!xp_range_ok(0, 101, 100));
	ck_assert(!xp_range_ok(99, 2, 100));
	ck_assert(!xp_range_ok(101, 0, 100));
	ck_assert(!xp_range_ok(1, 100, 100));
}
END_TEST

/* off + len must not be computed where it can wrap back inside the area. */
START_TEST(range_ok_refuses_ranges_that_wrap)
{
	ck_assert(!xp_range_ok(UINT64_MAX, 1, 100));
	ck_assert(!xp_range_ok(50, UINT64_MAX, 100));
	ck_assert(!xp_range_ok(50, UINT64_MAX - 40, 100)); /* 50 + len wraps to 9 */
	ck_assert(!xp_range_ok(UINT64_MAX - 10, 20, 100));
	ck_assert(!xp_range_ok(1, UINT64_MAX, UINT64_MAX));
}
END_TEST

static Suite *mraddr_suite(void)
{
	Suite *s = suite_create("mraddr");
	TCase *tc = tcase_create("helpers");

	tcase_add_test(tc, remote_addr_in_virt_mode_is_the_pointer);
	tcase_add_test(tc, remote_addr_in_offset_mode_is_distance_from_base);
	tcase_add_test(tc, remote_target_adds_offset);
	tcase_add_test(tc, remote_target_refuses_wrap);
	tcase_add_test(tc, requested_key_with_provider_keys_is_zero);
	tcase_add_test(tc, requested_key_without_provider_keys_increases_and_is_unique);
	tcase_add_test(tc, requested_keys_taken_by_threads_at_once_are_unique);
	tcase_add_test(tc, range_ok_accepts_ranges_inside);
	tcase_add_test(tc, range_ok_refuses_ranges_past_the_end);
	tcase_add_test(tc, range_ok_refuses_ranges_that_wrap);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(mraddr_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
