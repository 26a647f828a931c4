/* Unit tests for common/auth.c: key files, MACs, the replay guard. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"

static char dir[64];
static char path[128];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/rpfs-test-auth.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/key", dir);
}

static void teardown(void)
{
	unlink(path);
	rmdir(dir);
}

static void write_file(const char *p, const void *buf, size_t len, mode_t mode)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
}

START_TEST(created_key_loads_and_is_mode_0600)
{
	struct auth_key k;
	struct stat st;
	char why[256] = "";

	ck_assert_int_eq(auth_key_create(path), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(st.st_size, AUTH_KEY_SIZE);
	ck_assert_int_eq(auth_key_load(path, &k, why, sizeof(why)), 0);
}
END_TEST

START_TEST(create_never_replaces_a_key)
{
	ck_assert_int_eq(auth_key_create(path), 0);
	ck_assert_int_eq(auth_key_create(path), -EEXIST);
}
END_TEST

START_TEST(missing_key_names_the_file)
{
	struct auth_key k;
	char why[256] = "";

	ck_assert_int_eq(auth_key_load(path, &k, why, sizeof(why)), -ENOENT);
	ck_assert_msg(strstr(why, path), "'%s'", why);
}
END_TEST

START_TEST(key_readable_by_others_is_refused)
{
	uint8_t b[AUTH_KEY_SIZE] = {1};
	struct auth_key k;
	char why[256] = "";

	write_file(path, b, sizeof(b), 0644);
	ck_assert_int_eq(auth_key_load(path, &k, why, sizeof(why)), -EPERM);
	ck_assert_msg(strstr(why, "chmod 600"), "'%s'", why);
}
END_TEST

START_TEST(key_of_wrong_size_is_refused)
{
	uint8_t b[AUTH_KEY_SIZE + 1] = {1};
	struct auth_key k;
	char why[256] = "";

	write_file(path, b, sizeof(b), 0600);
	ck_assert_int_eq(auth_key_load(path, &k, why, sizeof(why)), -EINVAL);
	write_file(path, b, 5, 0600);
	ck_assert_int_eq(auth_key_load(path, &k, why, sizeof(why)), -EINVAL);
}
END_TEST

START_TEST(no_key_file_named_is_an_error)
{
	struct auth_key k;
	char why[256] = "";

	ck_assert_int_eq(auth_key_load("", &k, why, sizeof(why)), -ENOENT);
	ck_assert_msg(strstr(why, "key_file"), "'%s'", why);
}
END_TEST

START_TEST(mac_depends_on_key_label_and_every_byte)
{
	struct auth_key k1 = {{1}}, k2 = {{2}};
	uint8_t m1[AUTH_MAC_SIZE], m2[AUTH_MAC_SIZE];
	char msg[] = "nonce-and-time";

	auth_mac(&k1, "connreq", msg, sizeof(msg), NULL, 0, NULL, 0, m1);
	auth_mac(&k1, "connreq", msg, sizeof(msg), NULL, 0, NULL, 0, m2);
	ck_assert(auth_mac_equal(m1, m2));
	auth_mac(&k2, "connreq", msg, sizeof(msg), NULL, 0, NULL, 0, m2);
	ck_assert(!auth_mac_equal(m1, m2));
	auth_mac(&k1, "accept", msg, sizeof(msg), NULL, 0, NULL, 0, m2);
	ck_assert(!auth_mac_equal(m1, m2));
	msg[3] ^= 1;
	auth_mac(&k1, "connreq", msg, sizeof(msg), NULL, 0, NULL, 0, m2);
	ck_assert(!auth_mac_equal(m1, m2));
}
END_TEST

START_TEST(mac_label_cannot_slide_into_the_message)
{
	struct auth_key k = {{7}};
	uint8_t m1[AUTH_MAC_SIZE], m2[AUTH_MAC_SIZE];

	auth_mac(&k, "ab", "c", 1, NULL, 0, NULL, 0, m1);
	auth_mac(&k, "a", "bc", 2, NULL, 0, NULL, 0, m2);
	ck_assert(!auth_mac_equal(m1, m2));
}
END_TEST

START_TEST(replay_guard_accepts_once_then_refuses_the_same_nonce)
{
	struct auth_replay *r;
	uint8_t n[AUTH_NONCE_SIZE];

	ck_assert_int_eq(auth_replay_create(100, 60, &r), 0);
	auth_random(n, sizeof(n));
	ck_assert_int_eq(auth_replay_check(r, n, 1000, 1000), 0);
	ck_assert_int_eq(auth_replay_check(r, n, 1000, 1010), -EALREADY);
	n[15] ^= 1;
	ck_assert_int_eq(auth_replay_check(r, n, 1000, 1010), 0);
	auth_replay_destroy(r);
}
END_TEST

START_TEST(replay_guard_refuses_times_outside_the_window)
{
	struct auth_replay *r;
	uint8_t n[AUTH_NONCE_SIZE];

	ck_assert_int_eq(auth_replay_create(100, 60, &r), 0);
	auth_random(n, sizeof(n));
	ck_assert_int_eq(auth_replay_check(r, n, 1000 - 61, 1000), -ETIME);
	ck_assert_int_eq(auth_replay_check(r, n, 1000 + 61, 1000), -ETIME);
	ck_assert_int_eq(auth_replay_check(r, n, 1000 + 60, 1000), 0);
	/* the remembered request is stale by the time it is forgotten */
	ck_assert_int_eq(auth_replay_check(r, n, 1000 + 60, 1000 + 200), -ETIME);
	auth_replay_destroy(r);
}
END_TEST

START_TEST(replay_guard_grows_and_still_finds_every_nonce)
{
	enum { N = 5000 };
	static uint8_t n[N][AUTH_NONCE_SIZE];
	struct auth_replay *r;

	ck_assert_int_eq(auth_replay_create(100000, 60, &r), 0);
	for (int i = 0; i < N; i++) {
		auth_random(n[i], sizeof(n[i]));
		ck_assert_int_eq(auth_replay_check(r, n[i], 1000, 1000), 0);
	}
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(auth_replay_check(r, n[i], 1000, 1001), -EALREADY);
	auth_replay_destroy(r);
}
END_TEST

START_TEST(replay_guard_is_bounded_and_frees_expired_entries)
{
	struct auth_replay *r;
	uint8_t n[AUTH_NONCE_SIZE];
	int refused = 0;

	ck_assert_int_eq(auth_replay_create(1000, 10, &r), 0);
	for (int i = 0; i < 3000; i++) {
		auth_random(n, sizeof(n));
		refused += auth_replay_check(r, n, 1000, 1000) == -ENOSPC;
	}
	ck_assert_msg(refused >= 1000, "only %d of 3000 refused at a cap of 1000",
		      refused);
	/* once those have expired there is room again */
	auth_random(n, sizeof(n));
	ck_assert_int_eq(auth_replay_check(r, n, 1100, 1100), 0);
	auth_replay_destroy(r);
}
END_TEST

static Suite *auth_suite(void)
{
	Suite *s = suite_create("auth");
	TCase *key = tcase_create("key"), *mac = tcase_create("mac"),
	      *replay = tcase_create("replay");

	tcase_add_checked_fixture(key, setup, teardown);
	tcase_add_test(key, created_key_loads_and_is_mode_0600);
	tcase_add_test(key, create_never_replaces_a_key);
	tcase_add_test(key, missing_key_names_the_file);
	tcase_add_test(key, key_readable_by_others_is_refused);
	tcase_add_test(key, key_of_wrong_size_is_refused);
	tcase_add_test(key, no_key_file_named_is_an_error);
	tcase_add_test(mac, mac_depends_on_key_label_and_every_byte);
	tcase_add_test(mac, mac_label_cannot_slide_into_the_message);
	tcase_add_test(replay, replay_guard_accepts_once_then_refuses_the_same_nonce);
	tcase_add_test(replay, replay_guard_refuses_times_outside_the_window);
	tcase_add_test(replay, replay_guard_grows_and_still_finds_every_nonce);
	tcase_add_test(replay, replay_guard_is_bounded_and_frees_expired_entries);
	suite_add_tcase(s, key);
	suite_add_tcase(s, mac);
	suite_add_tcase(s, replay);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(auth_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
