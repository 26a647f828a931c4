/* A program's settings (rpfs_init_opts, rpfs.h): options win over the
 * config file, the user's environment wins over options, every option is
 * checked (unknown keys, server settings, bad values are -EINVAL with a
 * message naming the key, even where the environment overrules them), and
 * rpfs_opt_name lists exactly the client settings of the table. The client
 * is made for real (config, key, a tcp fabric) and connects to nothing;
 * its settings are read from the client object itself. Check forks each
 * test, so environment changes stay inside it. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_priv.h"
#include "params.h"
#include "rpfs.h"

extern char **environ;

static char dir[64];  /* holds rpfs.conf and cluster.key */
static char conf[96]; /* dir/rpfs.conf */

/* A one-server cluster whose [transport] section is extra. */
static void write_config(const char *extra)
{
	FILE *f = fopen(conf, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f,
		"[cluster]\nkey_file = cluster.key\n"
		"[server.0]\naddress = 127.0.0.1\nport = 7100\nroles = meta,io\n"
		"dir = %s/s0\n"
		"[transport]\nprovider = tcp\n%s",
		dir, extra);
	ck_assert_int_eq(fclose(f), 0);
}

static void setup(void)
{
	char key[128];

	snprintf(dir, sizeof(dir), "/tmp/rpfs-opts-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(conf, sizeof(conf), "%s/rpfs.conf", dir);
	snprintf(key, sizeof(key), "%s/cluster.key", dir);
	ck_assert_int_eq(auth_key_create(key), 0);
	write_config("");
}

static void teardown(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/cluster.key", dir);
	unlink(path);
	unlink(conf);
	rmdir(dir);
}

/* The value and source the client ended up with for one setting. */
static void expect(rpfs_client_t *c, const char *name, const char *value,
		   enum xp_source src)
{
	const struct xp_setting *st = xp_setting_find(name);
	char buf[64];

	ck_assert_ptr_nonnull(st);
	xp_setting_format(&c->cfg.xport, st, buf, sizeof(buf));
	ck_assert_msg(!strcmp(buf, value), "%s = %s, want %s", name, buf, value);
	ck_assert_msg(c->cfg.xport.source[st - xp_setting_at(0)] == src,
		      "%s from %s, want %s", name,
		      xp_source_name(c->cfg.xport.source[st - xp_setting_at(0)]),
		      xp_source_name(src));
}

/* init_opts must fail with -EINVAL and a message that names what. */
static void expect_refused(const struct rpfs_opt *opts, int n, const char *what)
{
	rpfs_client_t *c = (rpfs_client_t *)1;

	ck_assert_int_eq(rpfs_init_opts(conf, opts, n, &c), -EINVAL);
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(rpfs_errmsg(), what), "message '%s' does not name %s",
		      rpfs_errmsg(), what);
}

/* ---- precedence ----------------------------------------------------------- */

START_TEST(without_options_the_config_and_defaults_hold)
{
	rpfs_client_t *c;

	write_config("timeout_ms = 9000\n");
	ck_assert_msg(rpfs_init_opts(conf, NULL, 0, &c) == 0, "%s", rpfs_errmsg());
	expect(c, "timeout_ms", "9000", XP_SRC_CONFIG);
	expect(c, "spin_us", "200", XP_SRC_DEFAULT);
	rpfs_finalize(c);
}
END_TEST

START_TEST(options_win_over_the_config_file)
{
	const struct rpfs_opt opts[] = {{"timeout_ms", "7000"}, {"spin_us", "50"}};
	rpfs_client_t *c;

	write_config("timeout_ms = 9000\n");
	ck_assert_msg(rpfs_init_opts(conf, opts, 2, &c) == 0, "%s", rpfs_errmsg());
	expect(c, "timeout_ms", "7000", XP_SRC_OPTION);
	expect(c, "spin_us", "50", XP_SRC_OPTION);
	expect(c, "provider", "tcp", XP_SRC_CONFIG);
	expect(c, "fast_max", "64K", XP_SRC_DEFAULT);
	rpfs_finalize(c);
}
END_TEST

/* ROMIO's convention: hints are advice; the user running the program can
 * overrule them without a rebuild. */
START_TEST(the_environment_wins_over_options)
{
	const struct rpfs_opt opts[] = {{"timeout_ms", "7000"}, {"fast_max", "32K"}};
	rpfs_client_t *c;

	write_config("timeout_ms = 9000\n");
	setenv("RPFS_TIMEOUT_MS", "5000", 1);
	ck_assert_msg(rpfs_init_opts(conf, opts, 2, &c) == 0, "%s", rpfs_errmsg());
	expect(c, "timeout_ms", "5000", XP_SRC_ENV);
	expect(c, "fast_max", "32K", XP_SRC_OPTION);
	rpfs_finalize(c);
}
END_TEST

/* Several options for one key: the last one counts, as in a config. */
START_TEST(the_last_option_for_a_key_wins)
{
	const struct rpfs_opt opts[] = {{"spin_us", "10"}, {"spin_us", "20"}};
	rpfs_client_t *c;

	ck_assert_msg(rpfs_init_opts(conf, opts, 2, &c) == 0, "%s", rpfs_errmsg());
	expect(c, "spin_us", "20", XP_SRC_OPTION);
	rpfs_finalize(c);
}
END_TEST

/* The whole is checked after every source: an option may fix what the
 * config alone would not allow, and break what it would. */
START_TEST(options_are_checked_together_with_the_config)
{
	const struct rpfs_opt raise[] = {{"fast_max", "256K"}};
	const struct rpfs_opt clash[] = {{"inline_max", "128K"}};
	rpfs_client_t *c;

	write_config("inline_max = 128K\n"); /* above the default fast_max */
	ck_assert_int_eq(rpfs_init(conf, &c), -EINVAL);
	ck_assert_msg(rpfs_init_opts(conf, raise, 1, &c) == 0, "%s", rpfs_errmsg());
	expect(c, "inline_max", "128K", XP_SRC_CONFIG);
	expect(c, "fast_max", "256K", XP_SRC_OPTION);
	rpfs_finalize(c);
	write_config("");
	expect_refused(clash, 1, "inline_max");
}
END_TEST

START_TEST(rpfs_init_is_init_opts_without_options)
{
	rpfs_client_t *c;

	setenv("RPFS_SPIN_US", "30", 1);
	ck_assert_msg(rpfs_init(conf, &c) == 0, "%s", rpfs_errmsg());
	expect(c, "spin_us", "30", XP_SRC_ENV);
	rpfs_finalize(c);
}
END_TEST

/* ---- errors --------------------------------------------------------------- */

START_TEST(an_unknown_key_is_refused_by_name)
{
	const struct rpfs_opt opts[] = {{"spin_us", "10"}, {"fast_mx", "1M"}};

	expect_refused(opts, 2, "fast_mx");
}
END_TEST

START_TEST(a_server_setting_is_refused_by_name)
{
	static const char *const server[] = {"max_conns", "credits", "chunk_size",
					     "pipeline_depth", "idle_timeout_s"};

	for (size_t i = 0; i < sizeof(server) / sizeof(server[0]); i++) {
		const struct rpfs_opt opts[] = {{server[i], "4"}};

		expect_refused(opts, 1, server[i]);
	}
}
END_TEST

START_TEST(a_bad_value_is_refused_by_name)
{
	const struct rpfs_opt word[] = {{"timeout_ms", "soon"}};
	const struct rpfs_opt range[] = {{"fast_slots", "0"}};
	const struct rpfs_opt empty[] = {{"force_path", ""}};
	const struct rpfs_opt null[] = {{"spin_us", NULL}};

	expect_refused(word, 1, "timeout_ms = soon");
	expect_refused(range, 1, "fast_slots");
	expect_refused(empty, 1, "force_path");
	expect_refused(null, 1, "spin_us");
}
END_TEST

/* A mistake in the program is reported even on a machine whose user
 * happens to overrule that setting. */
START_TEST(a_bad_value_is_refused_where_the_environment_overrules_it)
{
	const struct rpfs_opt opts[] = {{"timeout_ms", "-1"}};

	setenv("RPFS_TIMEOUT_MS", "5000", 1);
	expect_refused(opts, 1, "timeout_ms");
}
END_TEST

START_TEST(a_list_that_does_not_match_its_count_is_refused)
{
	rpfs_client_t *c;

	ck_assert_int_eq(rpfs_init_opts(conf, NULL, 1, &c), -EINVAL);
	ck_assert_ptr_null(c);
	ck_assert_int_eq(rpfs_init_opts(conf, NULL, -1, &c), -EINVAL);
	ck_assert_ptr_null(c);
}
END_TEST

/* ---- the names ------------------------------------------------------------ */

START_TEST(opt_names_are_the_client_settings_of_the_table)
{
	const struct xp_setting *st;
	int n = 0;

	for (int i = 0; (st = xp_setting_at(i)); i++) {
		if (st->scope != XP_SCOPE_CLIENT)
			continue;
		ck_assert_ptr_nonnull(rpfs_opt_name(n));
		ck_assert_str_eq(rpfs_opt_name(n), st->name);
		n++;
	}
	ck_assert_int_gt(n, 0);
	ck_assert_ptr_null(rpfs_opt_name(n));
	ck_assert_ptr_null(rpfs_opt_name(-1));
}
END_TEST

/* What the MPI drivers pass: every name with its default is accepted. */
START_TEST(every_opt_name_is_accepted_with_its_default)
{
	const char *name;
	rpfs_client_t *c;

	for (int i = 0; (name = rpfs_opt_name(i)); i++) {
		const struct xp_setting *st = xp_setting_find(name);
		struct rpfs_opt opt = {name, st->def};

		if (!strcmp(name, "provider"))
			opt.value = "tcp"; /* the default means "verbs if present" */
		ck_assert_msg(rpfs_init_opts(conf, &opt, 1, &c) == 0, "%s: %s", name,
			      rpfs_errmsg());
		rpfs_finalize(c);
	}
}
END_TEST

static void clear_rpfs_env(void)
{
	char name[128];

	for (int again = 1; again;) {
		again = 0;
		for (char **e = environ; *e; e++) {
			if (!strncmp(*e, "RPFS_", 5) && strncmp(*e, "RPFS_LOG=", 9)) {
				snprintf(name, sizeof(name), "%.*s",
					 (int)strcspn(*e, "="), *e);
				unsetenv(name);
				again = 1;
				break;
			}
		}
	}
}

static Suite *opts_suite(void)
{
	Suite *s = suite_create("init_opts");
	TCase *tc;

	tc = tcase_create("precedence");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, without_options_the_config_and_defaults_hold);
	tcase_add_test(tc, options_win_over_the_config_file);
	tcase_add_test(tc, the_environment_wins_over_options);
	tcase_add_test(tc, the_last_option_for_a_key_wins);
	tcase_add_test(tc, options_are_checked_together_with_the_config);
	tcase_add_test(tc, rpfs_init_is_init_opts_without_options);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, an_unknown_key_is_refused_by_name);
	tcase_add_test(tc, a_server_setting_is_refused_by_name);
	tcase_add_test(tc, a_bad_value_is_refused_by_name);
	tcase_add_test(tc, a_bad_value_is_refused_where_the_environment_overrules_it);
	tcase_add_test(tc, a_list_that_does_not_match_its_count_is_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("names");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, opt_names_are_the_client_settings_of_the_table);
	tcase_add_test(tc, every_opt_name_is_accepted_with_its_default);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	/* The config alone, not the caller's RPFS_* (make check sets
	 * RPFS_PROVIDER): tests set what they test. */
	clear_rpfs_env();
	setenv("RPFS_LOG", "error", 0);
	sr = srunner_create(opts_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
