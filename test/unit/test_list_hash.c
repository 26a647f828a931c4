/* The intrusive list (list.h) and hash table (hashtab.h) that rpfs's LRUs
 * and per-handle tables are built on: what goes in comes out, in LRU order
 * for the list; keys sharing a bucket stay apart; removing the node in
 * hand while walking visits every other one exactly once; empty lists and
 * tables answer NULL. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "hashtab.h"
#include "list.h"

struct item {
	int id;
	int seen;
	struct list_node link;
	struct hnode hn;
};

#define NITEMS 64

static struct item items[NITEMS];

static void items_reset(void)
{
	for (int i = 0; i < NITEMS; i++) {
		items[i] = (struct item){.id = i};
		list_init(&items[i].link);
	}
}

static int id_of(struct list_node *n)
{
	return n ? list_entry(n, struct item, link)->id : -1;
}

/* The list's ids front to back, checking the back links on the way. */
static int list_ids(struct list_node *head, int *out, int max)
{
	struct list_node *n;
	int k = 0;

	list_foreach(head, n) {
		ck_assert_ptr_eq(n->next->prev, n);
		ck_assert_int_lt(k, max);
		out[k++] = id_of(n);
	}
	return k;
}

/* ---- list ------------------------------------------------------------------ */

START_TEST(empty_list_has_no_first_or_last)
{
	struct list_node head, *n, *tmp;
	int visits = 0;

	list_init(&head);
	ck_assert(list_empty(&head));
	ck_assert_ptr_null(list_first(&head));
	ck_assert_ptr_null(list_last(&head));
	list_foreach_safe(&head, n, tmp)
		visits++;
	list_foreach_reverse_safe(&head, n, tmp)
		visits++;
	ck_assert_int_eq(visits, 0);
}
END_TEST

START_TEST(push_front_and_back_order)
{
	struct list_node head;
	int ids[NITEMS];

	items_reset();
	list_init(&head);
	list_push_back(&head, &items[1].link);
	list_push_back(&head, &items[2].link);
	list_push_front(&head, &items[0].link);
	ck_assert(!list_empty(&head));
	ck_assert_int_eq(list_ids(&head, ids, NITEMS), 3);
	ck_assert_int_eq(ids[0], 0);
	ck_assert_int_eq(ids[1], 1);
	ck_assert_int_eq(ids[2], 2);
	ck_assert_int_eq(id_of(list_first(&head)), 0);
	ck_assert_int_eq(id_of(list_last(&head)), 2);
}
END_TEST

START_TEST(remove_unlinks_and_is_idempotent)
{
	struct list_node head;
	int ids[NITEMS];

	items_reset();
	list_init(&head);
	for (int i = 0; i < 3; i++)
		list_push_back(&head, &items[i].link);
	list_remove(&items[1].link);
	/* Off the list it points to itself: removing again changes nothing. */
	ck_assert_ptr_eq(items[1].link.next, &items[1].link);
	list_remove(&items[1].link);
	ck_assert_int_eq(list_ids(&head, ids, NITEMS), 2);
	ck_assert_int_eq(ids[0], 0);
	ck_assert_int_eq(ids[1], 2);
	list_remove(&items[0].link);
	list_remove(&items[2].link);
	ck_assert(list_empty(&head));
	ck_assert_ptr_null(list_first(&head));
}
END_TEST

START_TEST(lru_touch_moves_to_front_and_evicts_from_back)
{
	struct list_node lru, *victim;

	items_reset();
	list_init(&lru);
	for (int i = 0; i < 4; i++) /* used 0, 1, 2, 3: 3 is the most recent */
		list_push_front(&lru, &items[i].link);
	list_move_front(&lru, &items[0].link); /* 0 used again */
	list_move_front(&lru, &items[2].link); /* then 2 */
	ck_assert_int_eq(id_of(list_first(&lru)), 2);
	/* Least recently used first: 1, 3, 0, 2. */
	const int order[] = {1, 3, 0, 2};
	for (int i = 0; i < 4; i++) {
		victim = list_last(&lru);
		ck_assert_int_eq(id_of(victim), order[i]);
		list_remove(victim);
	}
	ck_assert_ptr_null(list_last(&lru));
}
END_TEST

START_TEST(touching_the_front_keeps_the_order)
{
	struct list_node lru;
	int ids[NITEMS];

	items_reset();
	list_init(&lru);
	list_push_front(&lru, &items[0].link);
	list_push_front(&lru, &items[1].link);
	list_move_front(&lru, &items[1].link);
	ck_assert_int_eq(list_ids(&lru, ids, NITEMS), 2);
	ck_assert_int_eq(ids[0], 1);
	ck_assert_int_eq(ids[1], 0);
}
END_TEST

START_TEST(removing_while_walking_the_list_visits_each_node_once)
{
	struct list_node head, *n, *tmp;
	int ids[NITEMS], k;

	items_reset();
	list_init(&head);
	for (int i = 0; i < 10; i++)
		list_push_back(&head, &items[i].link);
	list_foreach_safe(&head, n, tmp) {
		struct item *it = list_entry(n, struct item, link);

		it->seen++;
		if (it->id % 2 == 0)
			list_remove(n);
	}
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(items[i].seen, 1);
	k = list_ids(&head, ids, NITEMS);
	ck_assert_int_eq(k, 5);
	for (int i = 0; i < k; i++)
		ck_assert_int_eq(ids[i], 2 * i + 1);
}
END_TEST

START_TEST(reverse_walk_may_remove_all)
{
	struct list_node head, *n, *tmp;
	int next = 9;

	items_reset();
	list_init(&head);
	for (int i = 0; i < 10; i++)
		list_push_back(&head, &items[i].link);
	list_foreach_reverse_safe(&head, n, tmp) {
		ck_assert_int_eq(id_of(n), next--);
		list_remove(n);
	}
	ck_assert_int_eq(next, -1);
	ck_assert(list_empty(&head));
}
END_TEST

/* ---- hash table -------------------------------------------------------------- */

static struct item *hitem(struct hnode *n)
{
	return n ? hashtab_entry(n, struct item, hn) : NULL;
}

START_TEST(empty_table_finds_nothing)
{
	struct hashtab t;
	struct hnode *n, *tmp;
	int visits = 0;

	items_reset();
	ck_assert_int_eq(hashtab_init(&t, 16), 0);
	ck_assert_ptr_null(hashtab_lookup(&t, 0));
	ck_assert_ptr_null(hashtab_lookup(&t, 42));
	ck_assert_ptr_null(hashtab_first(&t));
	hashtab_foreach_safe(&t, n, tmp)
		visits++;
	ck_assert_int_eq(visits, 0);
	/* A node never inserted is not in it. */
	items[0].hn.key = 42;
	ck_assert(!hashtab_remove(&t, &items[0].hn));
	ck_assert_uint_eq(t.count, 0);
	hashtab_fini(&t);
}
END_TEST

START_TEST(insert_lookup_remove)
{
	struct hashtab t;

	items_reset();
	ck_assert_int_eq(hashtab_init(&t, 64), 0);
	for (int i = 0; i < NITEMS; i++)
		hashtab_insert(&t, &items[i].hn, (uint64_t)i << 48 | 1000u * (unsigned)i);
	ck_assert_uint_eq(t.count, NITEMS);
	for (int i = 0; i < NITEMS; i++) {
		uint64_t key = (uint64_t)i << 48 | 1000u * (unsigned)i;

		ck_assert_ptr_eq(hitem(hashtab_lookup(&t, key)), &items[i]);
	}
	ck_assert_ptr_null(hashtab_lookup(&t, 7));
	ck_assert(hashtab_remove(&t, &items[5].hn));
	ck_assert(!hashtab_remove(&t, &items[5].hn));
	ck_assert_ptr_null(hashtab_lookup(&t, (uint64_t)5 << 48 | 5000u));
	ck_assert_ptr_eq(hitem(hashtab_lookup(&t, (uint64_t)6 << 48 | 6000u)), &items[6]);
	ck_assert_uint_eq(t.count, NITEMS - 1);
	hashtab_fini(&t);
}
END_TEST

START_TEST(keys_sharing_one_bucket_stay_apart)
{
	struct hashtab t;

	/* One bucket: every key collides. */
	items_reset();
	ck_assert_int_eq(hashtab_init(&t, 1), 0);
	for (int i = 0; i < NITEMS; i++)
		hashtab_insert(&t, &items[i].hn, 100 + (uint64_t)i);
	for (int i = 0; i < NITEMS; i++)
		ck_assert_ptr_eq(hitem(hashtab_lookup(&t, 100 + (uint64_t)i)), &items[i]);
	/* Out of the head, the middle and the tail of the chain. */
	ck_assert(hashtab_remove(&t, &items[NITEMS - 1].hn));
	ck_assert(hashtab_remove(&t, &items[NITEMS / 2].hn));
	ck_assert(hashtab_remove(&t, &items[0].hn));
	for (int i = 0; i < NITEMS; i++) {
		struct item *want =
			i == 0 || i == NITEMS / 2 || i == NITEMS - 1 ? NULL : &items[i];

		ck_assert_ptr_eq(hitem(hashtab_lookup(&t, 100 + (uint64_t)i)), want);
	}
	ck_assert_uint_eq(t.count, NITEMS - 3);
	hashtab_fini(&t);
}
END_TEST

START_TEST(repeated_key_finds_newest_then_older)
{
	struct hashtab t;
	struct hnode *n;

	items_reset();
	ck_assert_int_eq(hashtab_init(&t, 8), 0);
	hashtab_insert(&t, &items[0].hn, 77);
	hashtab_insert(&t, &items[1].hn, 78);
	hashtab_insert(&t, &items[2].hn, 77);
	n = hashtab_lookup(&t, 77);
	ck_assert_ptr_eq(hitem(n), &items[2]);
	n = hashtab_next_dup(n);
	ck_assert_ptr_eq(hitem(n), &items[0]);
	ck_assert_ptr_null(hashtab_next_dup(n));
	ck_assert(hashtab_remove(&t, &items[2].hn));
	ck_assert_ptr_eq(hitem(hashtab_lookup(&t, 77)), &items[0]);
	hashtab_fini(&t);
}
END_TEST

START_TEST(removing_while_walking_the_table_visits_each_node_once)
{
	struct hashtab t;
	struct hnode *n, *tmp;
	int left = 0;

	items_reset();
	/* Few buckets, so chains and bucket ends both occur. */
	ck_assert_int_eq(hashtab_init(&t, 4), 0);
	for (int i = 0; i < NITEMS; i++)
		hashtab_insert(&t, &items[i].hn, (uint64_t)i * 4096);
	hashtab_foreach_safe(&t, n, tmp) {
		struct item *it = hitem(n);

		it->seen++;
		if (it->id % 3)
			ck_assert(hashtab_remove(&t, n));
	}
	for (int i = 0; i < NITEMS; i++) {
		ck_assert_int_eq(items[i].seen, 1);
		ck_assert_ptr_eq(hitem(hashtab_lookup(&t, (uint64_t)i * 4096)),
				 i % 3 ? NULL : &items[i]);
		left += i % 3 == 0;
	}
	ck_assert_uint_eq(t.count, (size_t)left);
	/* Emptying it the same way leaves nothing to find. */
	hashtab_foreach_safe(&t, n, tmp)
		hashtab_remove(&t, n);
	ck_assert_uint_eq(t.count, 0);
	ck_assert_ptr_null(hashtab_first(&t));
	hashtab_fini(&t);
}
END_TEST

START_TEST(sequential_handles_spread_over_the_buckets)
{
	enum { NB = 256, NK = 4 * NB };
	static struct hnode nodes[NK];
	struct hashtab t;
	size_t longest = 0;

	/* Handles as rpfsd makes them: a server index over a counter. */
	ck_assert_int_eq(hashtab_init(&t, NB), 0);
	for (uint64_t i = 0; i < NK; i++)
		hashtab_insert(&t, &nodes[i], (uint64_t)3 << 48 | i);
	for (size_t b = 0; b < NB; b++) {
		size_t len = 0;

		for (struct hnode *n = t.buckets[b]; n; n = n->next)
			len++;
		ck_assert_uint_gt(len, 0);
		if (len > longest)
			longest = len;
	}
	ck_assert_uint_le(longest, 4 * (NK / NB));
	hashtab_fini(&t);
}
END_TEST

static Suite *list_hash_suite(void)
{
	Suite *s = suite_create("list_hash");
	TCase *tc;

	tc = tcase_create("list");
	tcase_add_test(tc, empty_list_has_no_first_or_last);
	tcase_add_test(tc, push_front_and_back_order);
	tcase_add_test(tc, remove_unlinks_and_is_idempotent);
	tcase_add_test(tc, lru_touch_moves_to_front_and_evicts_from_back);
	tcase_add_test(tc, touching_the_front_keeps_the_order);
	tcase_add_test(tc, removing_while_walking_the_list_visits_each_node_once);
	tcase_add_test(tc, reverse_walk_may_remove_all);
	suite_add_tcase(s, tc);

	tc = tcase_create("hashtab");
	tcase_add_test(tc, empty_table_finds_nothing);
	tcase_add_test(tc, insert_lookup_remove);
	tcase_add_test(tc, keys_sharing_one_bucket_stay_apart);
	tcase_add_test(tc, repeated_key_finds_newest_then_older);
	tcase_add_test(tc, removing_while_walking_the_table_visits_each_node_once);
	tcase_add_test(tc, sequential_handles_spread_over_the_buckets);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(list_hash_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
