/* chmod modes (tools/cli_mode.c): octal and symbolic modes as POSIX chmod
 * gives them: who ugoa, ops + - =, perms rwxXst, copies of u g o, comma
 * lists applied left to right, the umask where who is left out, X only
 * for directories and files that have an x bit; anything else -EINVAL. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "cli_mode.h"

/* spec applied to old (a file, umask 022). */
static uint32_t on_file(const char *spec, uint32_t old)
{
	uint32_t m = 0xdead;

	ck_assert_msg(!mode_apply(spec, old, false, 022, &m), "'%s' refused", spec);
	return m;
}

static uint32_t on_dir(const char *spec, uint32_t old)
{
	uint32_t m = 0xdead;

	ck_assert_msg(!mode_apply(spec, old, true, 022, &m), "'%s' refused", spec);
	return m;
}

START_TEST(octal_modes_set_the_mode)
{
	ck_assert_uint_eq(on_file("640", 0777), 0640);
	ck_assert_uint_eq(on_file("0755", 0), 0755);
	ck_assert_uint_eq(on_file("4711", 0), 04711);
	ck_assert_uint_eq(on_file("0", 0777), 0);
}
END_TEST

START_TEST(who_and_plus_add_bits)
{
	ck_assert_uint_eq(on_file("u+x", 0644), 0744);
	ck_assert_uint_eq(on_file("go+w", 0644), 0666);
	ck_assert_uint_eq(on_file("a+x", 0600), 0711);
	ck_assert_uint_eq(on_file("ug+rw", 0), 0660);
}
END_TEST

START_TEST(minus_removes_bits)
{
	ck_assert_uint_eq(on_file("go-w", 0666), 0644);
	ck_assert_uint_eq(on_file("a-x", 0755), 0644);
	ck_assert_uint_eq(on_file("o-rwx", 0777), 0770);
}
END_TEST

START_TEST(equals_sets_exactly_what_who_names)
{
	ck_assert_uint_eq(on_file("a=r", 0777), 0444);
	ck_assert_uint_eq(on_file("u=rw", 0700), 0600);
	ck_assert_uint_eq(on_file("g=", 0777), 0707);
	ck_assert_uint_eq(on_file("o=x", 0640), 0641);
}
END_TEST

START_TEST(no_who_leaves_the_umask_bits_alone)
{
	/* umask 022: +w only for the owner, +x for everyone */
	ck_assert_uint_eq(on_file("+w", 0444), 0644);
	ck_assert_uint_eq(on_file("+x", 0644), 0755);
	ck_assert_uint_eq(on_file("-w", 0666), 0466);
	/* = clears every bit, then sets what the umask allows */
	ck_assert_uint_eq(on_file("=rw", 0777), 0644);
}
END_TEST

START_TEST(special_bits_go_with_their_class)
{
	ck_assert_uint_eq(on_file("+t", 0755), 01755);
	ck_assert_uint_eq(on_file("a+t", 0755), 01755);
	ck_assert_uint_eq(on_file("u+s", 0755), 04755);
	ck_assert_uint_eq(on_file("g+s", 0755), 02755);
	ck_assert_uint_eq(on_file("ug+s", 0755), 06755);
	/* o has no s, u has no t */
	ck_assert_uint_eq(on_file("o+s", 0755), 0755);
	ck_assert_uint_eq(on_file("u+t", 0755), 0755);
	ck_assert_uint_eq(on_file("-t", 01777), 0777);
	ck_assert_uint_eq(on_file("u-s", 06755), 02755);
}
END_TEST

START_TEST(big_x_is_x_for_directories_and_executables_only)
{
	ck_assert_uint_eq(on_file("a+X", 0644), 0644);
	ck_assert_uint_eq(on_file("a+X", 0744), 0755);
	ck_assert_uint_eq(on_dir("a+X", 0644), 0755);
	ck_assert_uint_eq(on_dir("u=rwX,go=rX", 0600), 0755);
	ck_assert_uint_eq(on_file("u=rwX,go=rX", 0600), 0644);
}
END_TEST

START_TEST(copies_take_a_class_as_it_is_now)
{
	ck_assert_uint_eq(on_file("g=u", 0750), 0770);
	ck_assert_uint_eq(on_file("o=g", 0750), 0755);
	ck_assert_uint_eq(on_file("go=u", 0700), 0777);
	ck_assert_uint_eq(on_file("u-g", 0750), 0250);
	/* the second clause copies what the first made */
	ck_assert_uint_eq(on_file("u+x,g=u", 0600), 0770);
}
END_TEST

START_TEST(clauses_and_actions_apply_left_to_right)
{
	ck_assert_uint_eq(on_file("u=rwx,g=rx,o=", 0), 0750);
	ck_assert_uint_eq(on_file("a=,u+r", 0777), 0400);
	ck_assert_uint_eq(on_file("u+r-w", 0200), 0400);
	ck_assert_uint_eq(on_file("a-x+w", 0755), 0666);
	ck_assert_uint_eq(on_file("g+w,g-w", 0640), 0640);
}
END_TEST

START_TEST(bad_modes_are_refused)
{
	static const char *const bad[] = {"",	   "8",	   "0778", "17777", "u",   "ux",
					  "u+y",   "+r,",  ",u+r", "u+r,,", "z+r", "a=rz",
					  "u+x g", "u+ug", "-R",   "755x"};
	uint32_t m = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(mode_apply(bad[i], 0644, false, 022, &m) == -EINVAL,
			      "'%s' was taken as %o", bad[i], m);
		ck_assert(!mode_valid(bad[i]));
	}
	ck_assert(mode_valid("u+x"));
	ck_assert(mode_valid("0644"));
}
END_TEST

static Suite *mode_suite(void)
{
	Suite *s = suite_create("mode");
	TCase *tc = tcase_create("chmod");

	tcase_add_test(tc, octal_modes_set_the_mode);
	tcase_add_test(tc, who_and_plus_add_bits);
	tcase_add_test(tc, minus_removes_bits);
	tcase_add_test(tc, equals_sets_exactly_what_who_names);
	tcase_add_test(tc, no_who_leaves_the_umask_bits_alone);
	tcase_add_test(tc, special_bits_go_with_their_class);
	tcase_add_test(tc, big_x_is_x_for_directories_and_executables_only);
	tcase_add_test(tc, copies_take_a_class_as_it_is_now);
	tcase_add_test(tc, clauses_and_actions_apply_left_to_right);
	tcase_add_test(tc, bad_modes_are_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(mode_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
