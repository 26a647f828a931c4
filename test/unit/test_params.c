/* Transport settings specification (params.h): sane defaults, size syntax,
 * one key at a time, RPFS_<KEY> environment variables, the [transport]
 * section of the config file, and the consistency check that stops a bad
 * configuration before any connection is made. Check forks each test, so
 * environment changes stay inside it. */
#define _GNU_SOURCE /* cpu_set_t (cpulist.h) */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cpulist.h"
#include "params.h"
#include "xport.h"

extern char **environ;

/* Write text to a new temporary file; the caller unlinks path. */
static void write_temp(char *path, size_t len, const char *text)
{
	int fd;
	ssize_t n;

	snprintf(path, len, "/tmp/rpfs-params-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	n = write(fd, text, strlen(text));
	ck_assert_int_eq((int)n, (int)strlen(text));
	close(fd);
}

/* Load a cluster config of one server plus text (its [transport] part)
 * through the one config reader; *p gets the transport settings. */
static int file_try(struct xp_params *p, const char *text)
{
	static const char head[] = "[server.0]\naddress = 127.0.0.1\nport = 7100\n"
				   "roles = meta,io\ndir = /tmp/x\n";
	char path[64], why[512] = "", *all = malloc(strlen(head) + strlen(text) + 1);
	struct rpfs_config cfg;
	int ret;

	ck_assert_ptr_nonnull(all);
	strcpy(all, head);
	strcat(all, text);
	write_temp(path, sizeof(path), all);
	free(all);
	ret = rpfs_config_load(path, &cfg, why, sizeof(why));
	unlink(path);
	if (!ret) {
		*p = cfg.xport;
		rpfs_config_free(&cfg);
	}
	return ret;
}

/* ---- defaults ----------------------------------------------------------- */

START_TEST(defaults_pass_the_check)
{
	struct xp_params p;
	char why[128] = "";

	xp_params_default(&p);
	ck_assert_msg(xp_params_check(&p, why, sizeof(why)) == 0, "defaults: %s", why);
}
END_TEST

START_TEST(defaults_follow_the_paper)
{
	struct xp_params p;

	xp_params_default(&p);
	ck_assert_str_eq(p.provider, "");
	ck_assert_uint_eq(p.inline_max, 4096);
	ck_assert_uint_eq(p.fast_max, 65536);
	ck_assert_uint_lt(p.inline_max, p.fast_max);
	ck_assert_uint_ge(p.fast_slots, 1);
	ck_assert_uint_ge(p.credits, 2);
	ck_assert_uint_ge(p.pipeline_depth, 2); /* double buffering */
	ck_assert_int_gt(p.timeout_ms, 0);
	ck_assert_int_eq(p.force_path, XP_PATH_AUTO);
}
END_TEST

/* ---- sizes ------------------------------------------------------------- */

START_TEST(size_parses_plain_and_suffixed_numbers)
{
	static const struct {
		const char *s;
		size_t v;
	} ok[] = {
		{"0", 0},
		{"4096", 4096},
		{"64K", 64 << 10},
		{"64k", 64 << 10},
		{"64KiB", 64 << 10},
		{"1M", 1 << 20},
		{"1MiB", 1 << 20},
		{"1MB", 1 << 20},
		{"2G", (size_t)2 << 30},
		{"2g", (size_t)2 << 30},
		{"3GiB", (size_t)3 << 30},
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		size_t v = 12345;

		ck_assert_msg(xp_parse_size(ok[i].s, &v) == 0, "'%s' refused", ok[i].s);
		ck_assert_msg(v == ok[i].v, "'%s' gave %zu, not %zu", ok[i].s, v,
			      ok[i].v);
	}
}
END_TEST

START_TEST(size_rejects_garbage_and_negative_values)
{
	static const char *const bad[] = {
		"",	 "-1",	"12Q",	 "K",  "M",   "1KK",
		"1MiBs", "1 M", "4096x", "0x", "--5", "1.5M",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t v = 777;

		ck_assert_msg(xp_parse_size(bad[i], &v) == -EINVAL,
			      "'%s' accepted as %zu", bad[i], v);
		ck_assert_uint_eq(v, 777);
	}
	ck_assert_int_eq(xp_parse_size(NULL, &(size_t){0}), -EINVAL);
}
END_TEST

/* strtoull skips white space and then accepts a sign, so a negative number
 * behind a blank must not slip through as a huge size. */
START_TEST(size_rejects_negative_value_behind_white_space)
{
	size_t v = 777;

	ck_assert_msg(xp_parse_size(" -1", &v) == -EINVAL, "' -1' accepted as %zu", v);
	ck_assert_msg(xp_parse_size("\t-64K", &v) == -EINVAL, "'\\t-64K' accepted as %zu",
		      v);
}
END_TEST

/* A suffix must not shift significant bits out: 2^54 K is 2^64, not 0. */
START_TEST(size_rejects_values_that_overflow_with_suffix)
{
	static const char *const bad[] = {
		"18446744073709551616", /* 2^64 */
		"18014398509481984K",	/* 2^54 K */
		"17592186044416M",	/* 2^44 M */
		"17179869184G",		/* 2^34 G */
		"18446744073709551615G",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t v = 777;

		ck_assert_msg(xp_parse_size(bad[i], &v) == -EINVAL,
			      "'%s' accepted as %zu", bad[i], v);
	}
}
END_TEST

START_TEST(path_names_are_stable)
{
	ck_assert_str_eq(xp_path_name(XP_PATH_AUTO), "auto");
	ck_assert_str_eq(xp_path_name(XP_PATH_INLINE), "inline");
	ck_assert_str_eq(xp_path_name(XP_PATH_FAST), "fast");
	ck_assert_str_eq(xp_path_name(XP_PATH_BULK), "bulk");
	ck_assert_str_eq(xp_path_name(99), "auto");
}
END_TEST

/* ---- one key ----------------------------------------------------------- */

START_TEST(set_accepts_every_known_key)
{
	struct xp_params p;

	xp_params_default(&p);
	ck_assert_int_eq(xp_params_set(&p, "provider", "tcp"), 0);
	ck_assert_str_eq(p.provider, "tcp");
	ck_assert_int_eq(xp_params_set(&p, "inline_max", "8K"), 0);
	ck_assert_uint_eq(p.inline_max, 8192);
	ck_assert_int_eq(xp_params_set(&p, "fast_max", "128K"), 0);
	ck_assert_uint_eq(p.fast_max, 131072);
	ck_assert_int_eq(xp_params_set(&p, "fast_slots", "8"), 0);
	ck_assert_uint_eq(p.fast_slots, 8);
	ck_assert_int_eq(xp_params_set(&p, "credits", "64"), 0);
	ck_assert_uint_eq(p.credits, 64);
	ck_assert_int_eq(xp_params_set(&p, "chunk_size", "2M"), 0);
	ck_assert_uint_eq(p.chunk_size, 2 << 20);
	ck_assert_int_eq(xp_params_set(&p, "pipeline_depth", "4"), 0);
	ck_assert_uint_eq(p.pipeline_depth, 4);
	ck_assert_int_eq(xp_params_set(&p, "rcache_max_entries", "100"), 0);
	ck_assert_uint_eq(p.rcache_max_entries, 100);
	ck_assert_int_eq(xp_params_set(&p, "rcache_max_bytes", "256M"), 0);
	ck_assert_uint_eq(p.rcache_max_bytes, 256 << 20);
	ck_assert_int_eq(xp_params_set(&p, "rcache_batch", "16"), 0);
	ck_assert_uint_eq(p.rcache_batch, 16);
	ck_assert_int_eq(xp_params_set(&p, "pool_zone_bytes", "16M"), 0);
	ck_assert_uint_eq(p.pool_zone_bytes, 16 << 20);
	ck_assert_int_eq(xp_params_set(&p, "timeout_ms", "1500"), 0);
	ck_assert_int_eq(p.timeout_ms, 1500);
	ck_assert_int_eq(xp_params_set(&p, "force_path", "bulk"), 0);
	ck_assert_int_eq(p.force_path, XP_PATH_BULK);
	ck_assert_int_eq(xp_params_set(&p, "force_path", "inline"), 0);
	ck_assert_int_eq(p.force_path, XP_PATH_INLINE);
	ck_assert_int_eq(xp_params_check(&p, NULL, 0), 0);
}
END_TEST

START_TEST(set_rejects_unknown_key)
{
	struct xp_params p, before;

	xp_params_default(&p);
	before = p;
	ck_assert_int_eq(xp_params_set(&p, "nonsense", "1"), -ENOENT);
	ck_assert_int_eq(xp_params_set(&p, "", "1"), -ENOENT);
	ck_assert_int_eq(xp_params_set(&p, "INLINE_MAX", "1"), -ENOENT);
	ck_assert_int_eq(memcmp(&p, &before, sizeof(p)), 0);
}
END_TEST

/* A refused value leaves the old one in place. */
START_TEST(set_rejects_bad_values_and_keeps_the_old_one)
{
	struct xp_params p;
	char longname[64];

	xp_params_default(&p);
	ck_assert_int_eq(xp_params_set(&p, "inline_max", "lots"), -EINVAL);
	ck_assert_uint_eq(p.inline_max, 4096);
	ck_assert_int_eq(xp_params_set(&p, "fast_slots", "5G"), -EINVAL); /* > 32 bits */
	ck_assert_uint_eq(p.fast_slots, 16);
	ck_assert_int_eq(xp_params_set(&p, "credits", "-3"), -EINVAL);
	ck_assert_uint_eq(p.credits, 32);
	ck_assert_int_eq(xp_params_set(&p, "timeout_ms", "0"), -EINVAL);
	ck_assert_int_eq(xp_params_set(&p, "timeout_ms", "3600001"), -EINVAL);
	ck_assert_int_eq(p.timeout_ms, 30000);
	ck_assert_int_eq(xp_params_set(&p, "force_path", "sideways"), -EINVAL);
	ck_assert_int_eq(xp_params_set(&p, "force_path", ""), -EINVAL);
	ck_assert_int_eq(p.force_path, XP_PATH_AUTO);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	ck_assert_int_eq(xp_params_set(&p, "provider", longname), -EINVAL);
	ck_assert_str_eq(p.provider, "");
}
END_TEST

/* progress_cpus: empty (the process's CPUs), all, or a CPU list; nothing
 * else, and a refused value keeps the old one. */
START_TEST(progress_cpus_takes_empty_all_or_a_cpu_list)
{
	static const char *const good[] = {"", "all", "3", "0-3,8", "0,2,4-5", "1023"};
	static const char *const bad[] = {"x",
					  "1-",
					  "3-1",
					  "1,,2",
					  "1,",
					  "-1",
					  "1024",
					  " 1",
					  "all,1",
					  "1 ",
					  "0x1",
					  "1-2-3",
					  "99999999999999999999"};
	struct xp_params p;
	char why[160];

	xp_params_default(&p);
	ck_assert_str_eq(p.progress_cpus, "");
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_msg(!xp_params_set(&p, "progress_cpus", good[i]),
			      "'%s' refused", good[i]);
		ck_assert_str_eq(p.progress_cpus, good[i]);
		ck_assert_int_eq(xp_params_check(&p, NULL, 0), 0);
	}
	ck_assert_int_eq(xp_params_set(&p, "progress_cpus", "2"), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(xp_params_set(&p, "progress_cpus", bad[i]) == -EINVAL,
			      "'%s' accepted", bad[i]);
		ck_assert_str_eq(p.progress_cpus, "2");
	}
	/* Filled in directly (not through set): the check catches it. */
	snprintf(p.progress_cpus, sizeof(p.progress_cpus), "1,x");
	ck_assert_int_eq(xp_params_check(&p, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "progress_cpus"), "why: %s", why);
}
END_TEST

START_TEST(cpu_lists_parse_and_print_back)
{
	static const char *const lists[] = {"0", "0-3,8,10-11", "1,3,5", "1020-1023"};
	cpu_set_t set;
	char buf[64];

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		ck_assert_int_eq(cpulist_parse(lists[i], &set), 0);
		cpulist_format(&set, buf, sizeof(buf));
		ck_assert_str_eq(buf, lists[i]);
	}
	ck_assert_int_eq(cpulist_parse("5,1-2,2", &set), 0);
	ck_assert_int_eq(CPU_COUNT(&set), 3);
	cpulist_format(&set, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1-2,5");
	ck_assert_int_eq(cpulist_parse("all", &set), 0);
	ck_assert_int_eq(CPU_COUNT(&set), CPU_SETSIZE);
	ck_assert_int_eq(cpulist_parse("", &set), -EINVAL);
	ck_assert_int_eq(cpulist_parse(NULL, &set), -EINVAL);
	CPU_ZERO(&set);
	cpulist_format(&set, buf, sizeof(buf));
	ck_assert_str_eq(buf, "");
}
END_TEST

/* ---- environment ------------------------------------------------------- */

START_TEST(env_overrides_defaults)
{
	struct xp_params p;

	setenv("RPFS_FAST_MAX", "32K", 1);
	setenv("RPFS_FORCE_PATH", "fast", 1);
	setenv("RPFS_PROVIDER", "tcp", 1);
	xp_params_default(&p);
	ck_assert_int_eq(xp_params_from_env(&p), 0);
	ck_assert_uint_eq(p.fast_max, 32768);
	ck_assert_int_eq(p.force_path, XP_PATH_FAST);
	ck_assert_str_eq(p.provider, "tcp");
	ck_assert_uint_eq(p.inline_max, 4096); /* untouched */
}
END_TEST

START_TEST(env_rejects_bad_value)
{
	struct xp_params p;

	setenv("RPFS_CREDITS", "plenty", 1);
	xp_params_default(&p);
	ck_assert_int_eq(xp_params_from_env(&p), -EINVAL);
}
END_TEST

/* The server's threads are settings of the table, so their variables keep
 * the names they had before (RPFS_<KEY>) and a bad value is an error. */
START_TEST(server_thread_settings_come_from_their_old_variables)
{
	struct xp_params p;

	xp_params_default(&p);
	ck_assert_uint_eq(p.server_workers, 4);
	ck_assert_uint_eq(p.server_bulk_per_conn, 2);
	setenv("RPFS_SERVER_WORKERS", "8", 1);
	setenv("RPFS_SERVER_BULK_PER_CONN", "3", 1);
	ck_assert_int_eq(xp_params_from_env(&p), 0);
	ck_assert_uint_eq(p.server_workers, 8);
	ck_assert_uint_eq(p.server_bulk_per_conn, 3);
}
END_TEST

START_TEST(a_bad_server_thread_setting_is_an_error_not_a_fallback)
{
	static const char *const bad[][2] = {
		{"RPFS_SERVER_WORKERS", "0"},	     {"RPFS_SERVER_WORKERS", "65"},
		{"RPFS_SERVER_WORKERS", "four"},     {"RPFS_SERVER_BULK_PER_CONN", "0"},
		{"RPFS_SERVER_BULK_PER_CONN", "65"},
	};
	struct xp_params p;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsetenv("RPFS_SERVER_WORKERS");
		unsetenv("RPFS_SERVER_BULK_PER_CONN");
		setenv(bad[i][0], bad[i][1], 1);
		xp_params_default(&p);
		ck_assert_msg(xp_params_from_env(&p) == -EINVAL, "%s=%s accepted",
			      bad[i][0], bad[i][1]);
		ck_assert_uint_eq(p.server_workers, 4);
		ck_assert_uint_eq(p.server_bulk_per_conn, 2);
	}
}
END_TEST

/* Sources apply in order, later ones winning: file, then environment. */
START_TEST(env_wins_over_config_file)
{
	struct xp_params p;

	setenv("RPFS_FAST_MAX", "32K", 1);
	xp_params_default(&p);
	ck_assert_int_eq(file_try(&p, "[transport]\nfast_max = 128K\ncredits = 8\n"), 0);
	ck_assert_uint_eq(p.fast_max, 32768);
	ck_assert_uint_eq(p.credits, 8);
}
END_TEST

/* ---- config file ------------------------------------------------------- */

START_TEST(file_applies_transport_section_and_records_the_source)
{
	const struct xp_setting *st;
	struct xp_params p;
	int i;

	xp_params_default(&p);
	ck_assert_int_eq(file_try(&p, "[transport]\n"
				      "inline_max = 8K\n"
				      "fast_max = 128KiB\n"
				      "force_path = bulk\n"
				      "provider = tcp\n"),
			 0);
	ck_assert_uint_eq(p.inline_max, 8192);
	ck_assert_uint_eq(p.fast_max, 131072);
	ck_assert_int_eq(p.force_path, XP_PATH_BULK);
	ck_assert_str_eq(p.provider, "tcp");
	ck_assert_uint_eq(p.credits, 32);
	for (i = 0; (st = xp_setting_at(i)); i++) {
		int from_file = !strcmp(st->name, "inline_max") ||
				!strcmp(st->name, "fast_max") ||
				!strcmp(st->name, "force_path") ||
				!strcmp(st->name, "provider");

		ck_assert_msg(p.source[i] == (from_file ? XP_SRC_CONFIG : XP_SRC_DEFAULT),
			      "%s: source %s", st->name, xp_source_name(p.source[i]));
	}
}
END_TEST

START_TEST(file_without_transport_section_changes_nothing)
{
	struct xp_params p, before;

	xp_params_default(&p);
	before = p;
	ck_assert_int_eq(file_try(&p, ""), 0);
	ck_assert_int_eq(memcmp(&p, &before, sizeof(p)), 0);
}
END_TEST

/* A typo in a key must not be silently ignored. */
START_TEST(file_rejects_unknown_transport_key)
{
	struct xp_params p;

	xp_params_default(&p);
	ck_assert_int_eq(file_try(&p, "[transport]\nfast_mx = 128K\n"), -EINVAL);
}
END_TEST

START_TEST(file_rejects_bad_value)
{
	struct xp_params p;

	xp_params_default(&p);
	ck_assert_int_eq(file_try(&p, "[transport]\nfast_max = big\n"), -EINVAL);
}
END_TEST

START_TEST(file_rejects_syntax_error)
{
	struct xp_params p;

	xp_params_default(&p);
	ck_assert_int_eq(file_try(&p, "[transport\nfast_max = 128K\n"), -EINVAL);
	xp_params_default(&p);
	ck_assert_int_eq(file_try(&p, "[transport]\nthis line has no equals sign\n"),
			 -EINVAL);
}
END_TEST

START_TEST(file_missing_gives_errno)
{
	struct rpfs_config cfg;
	char why[256] = "";

	ck_assert_int_eq(
		rpfs_config_load("/nonexistent/rpfs/config.ini", &cfg, why, sizeof(why)),
		-ENOENT);
}
END_TEST

/* ---- the table ------------------------------------------------------------ */

START_TEST(every_setting_has_a_unique_name_help_and_a_default_that_parses)
{
	const struct xp_setting *st, *other;
	struct xp_params p;
	char buf[64];

	xp_params_default(&p);
	for (int i = 0; (st = xp_setting_at(i)); i++) {
		ck_assert_msg(st->help && strlen(st->help) > 10, "%s: no help", st->name);
		for (int j = 0; (other = xp_setting_at(j)); j++)
			ck_assert_msg(j == i || strcmp(st->name, other->name), "%s twice",
				      st->name);
		ck_assert_ptr_eq(xp_setting_find(st->name), st);
		ck_assert_msg(xp_params_set(&p, st->name, st->def) == 0,
			      "%s: default '%s' does not parse", st->name, st->def);
		/* what the writer writes reads back as the same value */
		xp_setting_format(&p, st, buf, sizeof(buf));
		ck_assert_msg(xp_params_set(&p, st->name, buf) == 0, "%s: '%s'", st->name,
			      buf);
	}
	ck_assert_int_eq(xp_params_check(&p, NULL, 0), 0);
}
END_TEST

START_TEST(every_number_outside_its_range_is_refused)
{
	const struct xp_setting *st;
	struct xp_params p, before;
	char buf[32];

	xp_params_default(&p);
	before = p;
	for (int i = 0; (st = xp_setting_at(i)); i++) {
		if (st->type == XP_SET_STR || st->type == XP_SET_PATH ||
		    st->type == XP_SET_CPUS)
			continue;
		if (st->min > 0) {
			snprintf(buf, sizeof(buf), "%llu",
				 (unsigned long long)st->min - 1);
			ck_assert_msg(xp_params_set(&p, st->name, buf) == -EINVAL,
				      "%s = %s accepted", st->name, buf);
		}
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)st->max + 1);
		ck_assert_msg(xp_params_set(&p, st->name, buf) == -EINVAL,
			      "%s = %s accepted", st->name, buf);
	}
	ck_assert_int_eq(memcmp(&p, &before, sizeof(p)), 0);
}
END_TEST

/* A number of regions, not of bytes: "1024" and "integer", never "1K" or
 * "size" (the table printed it as a size). */
START_TEST(rcache_max_entries_is_a_count)
{
	const struct xp_setting *st = xp_setting_find("rcache_max_entries");
	struct xp_params p;
	char buf[64];

	ck_assert_ptr_nonnull(st);
	ck_assert_str_eq(xp_setting_type_name(st), "integer");
	xp_params_default(&p);
	xp_setting_format(&p, st, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1024");
	xp_setting_range(st, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1 .. 16777216");
	ck_assert_int_eq(xp_params_set(&p, "rcache_max_entries", "2048"), 0);
	ck_assert_uint_eq(p.rcache_max_entries, 2048);
	xp_setting_format(&p, st, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2048");
	ck_assert_int_eq(xp_params_set(&p, "rcache_max_entries", "16777217"), -EINVAL);
}
END_TEST

/* The provider line of the table with values, printed with resolved. */
static void provider_line(const struct xp_params *p, const char *resolved, char *out,
			  size_t len)
{
	char *text = NULL, *line;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);

	ck_assert_ptr_nonnull(f);
	xp_settings_print(f, p, resolved);
	fclose(f);
	line = strstr(text, "\nprovider ");
	ck_assert_ptr_nonnull(line);
	snprintf(out, len, "%.*s", (int)strcspn(line + 1, "\n"), line + 1);
	free(text);
}

/* `rpfs settings` showed "" for an empty provider: it shows what that
 * means here, and says it was resolved. */
START_TEST(settings_show_what_an_empty_provider_resolves_to)
{
	struct xp_params p;
	char line[256];

	xp_params_default(&p);
	provider_line(&p, "tcp", line, sizeof(line));
	ck_assert_msg(strstr(line, " tcp ") && strstr(line, "default (resolved)"), "%s",
		      line);
	provider_line(&p, NULL, line, sizeof(line));
	ck_assert_msg(strstr(line, "\"\"") && !strstr(line, "resolved"), "%s", line);
	ck_assert_int_eq(xp_params_set_from(&p, "provider", "verbs", XP_SRC_CONFIG), 0);
	provider_line(&p, "tcp", line, sizeof(line));
	ck_assert_msg(strstr(line, " verbs ") && strstr(line, " config") &&
			      !strstr(line, "resolved"),
		      "%s", line);
}
END_TEST

/* verbs only where the kernel lists an RDMA device; tcp without one. */
START_TEST(empty_provider_resolves_to_tcp_without_an_rdma_device)
{
	const char *prov = xp_provider_default();

	if (access("/sys/class/infiniband", F_OK))
		ck_assert_str_eq(prov, "tcp");
	else
		ck_assert_msg(!strcmp(prov, "verbs") || !strcmp(prov, "tcp"), "%s", prov);
}
END_TEST

START_TEST(handshake_and_resource_settings_exist)
{
	struct xp_params p;

	xp_params_default(&p);
	ck_assert_uint_eq(p.auth_window_s, 300);
	ck_assert_uint_eq(p.max_conns, 1024);
	ck_assert_uint_eq(p.handshake_ms, 10000);
	ck_assert_uint_eq(p.idle_timeout_s, 600);
	ck_assert_int_eq(xp_params_set(&p, "idle_timeout_s", "0"), 0);
	ck_assert_int_eq(xp_params_set(&p, "max_conns", "16"), 0);
	ck_assert_uint_eq(p.max_conns, 16);
}
END_TEST

START_TEST(env_settings_say_so)
{
	const struct xp_setting *st = xp_setting_find("credits");
	struct xp_params p;

	setenv("RPFS_CREDITS", "8", 1);
	xp_params_default(&p);
	ck_assert_int_eq(xp_params_from_env(&p), 0);
	ck_assert_str_eq(xp_source_name(p.source[st - xp_setting_at(0)]), "environment");
}
END_TEST

/* ---- consistency check ------------------------------------------------- */

static void expect_check_fails(const struct xp_params *p, const char *what)
{
	char why[128] = "";

	ck_assert_msg(xp_params_check(p, why, sizeof(why)) == -EINVAL, "%s accepted",
		      what);
	ck_assert_msg(why[0] != 0, "%s: no reason given", what);
	/* Callers that do not want the reason pass NULL. */
	ck_assert_int_eq(xp_params_check(p, NULL, 0), -EINVAL);
}

START_TEST(check_rejects_inline_above_fast)
{
	struct xp_params p;

	xp_params_default(&p);
	p.inline_max = 128 << 10;
	p.fast_max = 64 << 10;
	expect_check_fails(&p, "inline_max > fast_max");
}
END_TEST

START_TEST(check_rejects_chunks_larger_than_pool_zones)
{
	struct xp_params p;
	char why[256] = "";

	xp_params_default(&p);
	p.chunk_size = 16 << 20;
	p.pool_zone_bytes = 8 << 20;
	ck_assert_int_eq(xp_params_check(&p, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "chunk_size") && strstr(why, "pool_zone_bytes"),
		      "the message names both settings: %s", why);
	p.pool_zone_bytes = 16 << 20;
	ck_assert_int_eq(xp_params_check(&p, why, sizeof(why)), 0);
}
END_TEST

START_TEST(check_rejects_out_of_range_values)
{
	struct xp_params p;

#define BAD(field, value)                                                                \
	do {                                                                             \
		xp_params_default(&p);                                                   \
		p.field = value;                                                         \
		expect_check_fails(&p, #field " = " #value);                             \
	} while (0)
	BAD(inline_max, 0);
	BAD(inline_max, 10);
	BAD(fast_max, (size_t)1 << 30);
	BAD(fast_slots, 0);
	BAD(credits, 0);
	BAD(credits, 1);
	BAD(chunk_size, 0);
	BAD(chunk_size, 3000000); /* not a power of two */
	BAD(chunk_size, 2048);	  /* below 4 KiB */
	BAD(pipeline_depth, 0);
	BAD(rcache_batch, 0);
	BAD(pool_zone_bytes, 1 << 20);
	BAD(force_path, 4);
	BAD(force_path, -1);
#undef BAD
}
END_TEST

static void clear_rpfs_env(void)
{
	char name[128];
	int again = 1;

	/* unsetenv reshuffles environ: rescan after each removal. */
	while (again) {
		again = 0;
		for (char **e = environ; *e; e++) {
			size_t n = strcspn(*e, "=");

			if (strncmp(*e, "RPFS_", 5) || n >= sizeof(name) ||
			    !strncmp(*e, "RPFS_LOG=", 9))
				continue;
			memcpy(name, *e, n);
			name[n] = 0;
			unsetenv(name);
			again = 1;
			break;
		}
	}
}

static Suite *params_suite(void)
{
	Suite *s = suite_create("params");
	TCase *tc;

	tc = tcase_create("values");
	tcase_add_test(tc, defaults_pass_the_check);
	tcase_add_test(tc, check_rejects_chunks_larger_than_pool_zones);
	tcase_add_test(tc, defaults_follow_the_paper);
	tcase_add_test(tc, size_parses_plain_and_suffixed_numbers);
	tcase_add_test(tc, size_rejects_garbage_and_negative_values);
	tcase_add_test(tc, size_rejects_negative_value_behind_white_space);
	tcase_add_test(tc, size_rejects_values_that_overflow_with_suffix);
	tcase_add_test(tc, path_names_are_stable);
	tcase_add_test(tc, set_accepts_every_known_key);
	tcase_add_test(tc, set_rejects_unknown_key);
	tcase_add_test(tc, set_rejects_bad_values_and_keeps_the_old_one);
	tcase_add_test(tc, progress_cpus_takes_empty_all_or_a_cpu_list);
	tcase_add_test(tc, cpu_lists_parse_and_print_back);
	tcase_add_test(tc, check_rejects_inline_above_fast);
	tcase_add_test(tc, check_rejects_out_of_range_values);
	suite_add_tcase(s, tc);

	tc = tcase_create("sources");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, env_overrides_defaults);
	tcase_add_test(tc, env_rejects_bad_value);
	tcase_add_test(tc, server_thread_settings_come_from_their_old_variables);
	tcase_add_test(tc, a_bad_server_thread_setting_is_an_error_not_a_fallback);
	tcase_add_test(tc, env_wins_over_config_file);
	tcase_add_test(tc, file_applies_transport_section_and_records_the_source);
	tcase_add_test(tc, file_without_transport_section_changes_nothing);
	tcase_add_test(tc, file_rejects_unknown_transport_key);
	tcase_add_test(tc, file_rejects_bad_value);
	tcase_add_test(tc, file_rejects_syntax_error);
	tcase_add_test(tc, file_missing_gives_errno);
	tcase_add_test(tc,
		       every_setting_has_a_unique_name_help_and_a_default_that_parses);
	tcase_add_test(tc, every_number_outside_its_range_is_refused);
	tcase_add_test(tc, handshake_and_resource_settings_exist);
	tcase_add_test(tc, rcache_max_entries_is_a_count);
	tcase_add_test(tc, settings_show_what_an_empty_provider_resolves_to);
	tcase_add_test(tc, empty_provider_resolves_to_tcp_without_an_rdma_device);
	tcase_add_test(tc, env_settings_say_so);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	/* The tests set RPFS_* themselves (make check sets RPFS_PROVIDER):
	 * start from an environment without any. */
	clear_rpfs_env();
	/* Refused settings are logged; keep the test output readable. */
	setenv("RPFS_LOG", "error", 0);
	sr = srunner_create(params_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
