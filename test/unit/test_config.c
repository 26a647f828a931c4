/* Cluster configuration specification (config.h): a sample file loads with
 * its roles, indexes, defaults and transport section; every kind of mistake
 * is -EINVAL with a message naming the file, the place and the cause; a
 * written file loads back identically, every setting of the table
 * included; RPFS_CONFIG is honoured, and without it /etc/rpfs then
 * ~/.rpfs (faked); server ids order the servers (which metadata server
 * owns a path: test_placement.c). Check forks each test, so environment
 * changes stay inside it. */
#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

extern char **environ;

static const char sample[] = "; a four-server cluster\n"
			     "[cluster]\n"
			     "stripe_unit = 64K\n"
			     "stripe_count = 2\n"
			     "redundancy = mirror:3\n"
			     "key_file = /etc/rpfs/key\n"
			     "\n"
			     "[server.a]\n"
			     "address = 127.0.0.1\n"
			     "port = 7100\n"
			     "roles = meta, io\n"
			     "dir = /tmp/rpfs/a\n"
			     "[server.b]\n"
			     "address = 127.0.0.1\n"
			     "port = 7101\n"
			     "roles = io\n"
			     "dir = /tmp/rpfs/b\n"
			     "[server.c]\n"
			     "address = localhost\n"
			     "port = 7102\n"
			     "roles = meta\n"
			     "dir = /tmp/rpfs/c\n"
			     "[server.3]\n"
			     "address = ::1\n"
			     "port = 7103\n"
			     "roles = io,meta\n"
			     "dir = /tmp/rpfs/d ; the fourth\n"
			     "[transport]\n"
			     "inline_max = 8K\n"
			     "credits = 64\n";

/* A minimal valid server, for error cases that change only one thing. */
#define ONE_SERVER                                                                       \
	"[server.0]\naddress = 127.0.0.1\nport = 7100\nroles = meta,io\ndir = /tmp/x\n"

/* Drop every RPFS_* variable so the tests see the file alone (make check
 * sets RPFS_PROVIDER). */
static void clear_rpfs_env(void)
{
	char name[128];

	for (int again = 1; again;) {
		again = 0;
		for (char **e = environ; *e; e++) {
			if (!strncmp(*e, "RPFS_", 5)) {
				snprintf(name, sizeof(name), "%.*s",
					 (int)strcspn(*e, "="), *e);
				unsetenv(name);
				again = 1;
				break;
			}
		}
	}
}

static void write_temp(char *path, size_t len, const char *text)
{
	FILE *f;
	int fd;

	snprintf(path, len, "/tmp/rpfs-config-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq((int)fwrite(text, 1, strlen(text), f), (int)strlen(text));
	fclose(f);
}

/* Write text to path (a name of our choosing). 0 or -1. */
static int put_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f) ? -1 : 0;
}

static int load_text(const char *text, struct rpfs_config *cfg, char *why, size_t whylen)
{
	char path[64];
	int ret;

	write_temp(path, sizeof(path), text);
	ret = rpfs_config_load(path, cfg, why, whylen);
	unlink(path);
	return ret;
}

/* ---- loading ------------------------------------------------------------ */

START_TEST(sample_loads_with_servers_in_file_order)
{
	struct rpfs_config cfg;
	char why[256] = "";

	clear_rpfs_env();
	ck_assert_msg(load_text(sample, &cfg, why, sizeof(why)) == 0, "%s", why);
	ck_assert_uint_eq(cfg.nservers, 4);
	ck_assert_str_eq(cfg.servers[0].name, "a");
	ck_assert_str_eq(cfg.servers[2].address, "localhost");
	ck_assert_str_eq(cfg.servers[3].name, "3");
	ck_assert_str_eq(cfg.servers[3].address, "::1");
	ck_assert_str_eq(cfg.servers[1].port, "7101");
	ck_assert_str_eq(cfg.servers[3].dir, "/tmp/rpfs/d");
	ck_assert_uint_eq(cfg.stripe_unit, 65536);
	ck_assert_uint_eq(cfg.stripe_count, 2);
	ck_assert_uint_eq(cfg.redundancy.kind, RPFS_LAYOUT_MIRROR);
	ck_assert_uint_eq(cfg.redundancy.copies, 3);
	ck_assert_str_eq(cfg.key_file, "/etc/rpfs/key");
	rpfs_config_free(&cfg);
}
END_TEST

START_TEST(roles_give_io_and_meta_indexes_in_file_order)
{
	struct rpfs_config cfg;
	char why[256] = "";

	clear_rpfs_env();
	ck_assert_msg(load_text(sample, &cfg, why, sizeof(why)) == 0, "%s", why);
	ck_assert_uint_eq(cfg.servers[0].roles, RPFS_ROLE_META | RPFS_ROLE_IO);
	ck_assert_uint_eq(cfg.servers[1].roles, RPFS_ROLE_IO);
	ck_assert_uint_eq(cfg.servers[2].roles, RPFS_ROLE_META);
	ck_assert_uint_eq(cfg.nio, 3);
	ck_assert_uint_eq(cfg.io[0], 0);
	ck_assert_uint_eq(cfg.io[1], 1);
	ck_assert_uint_eq(cfg.io[2], 3);
	ck_assert_uint_eq(cfg.nmeta, 3);
	ck_assert_uint_eq(cfg.meta[0], 0);
	ck_assert_uint_eq(cfg.meta[1], 2);
	ck_assert_uint_eq(cfg.meta[2], 3);
	ck_assert_int_eq(cfg.servers[0].io_index, 0);
	ck_assert_int_eq(cfg.servers[1].io_index, 1);
	ck_assert_int_eq(cfg.servers[2].io_index, -1);
	ck_assert_int_eq(cfg.servers[3].io_index, 2);
	ck_assert_int_eq(cfg.servers[1].meta_index, -1);
	ck_assert_int_eq(cfg.servers[2].meta_index, 1);
	ck_assert_int_eq(cfg.servers[3].meta_index, 2);
	rpfs_config_free(&cfg);
}
END_TEST

START_TEST(missing_cluster_section_gives_the_defaults)
{
	struct rpfs_config cfg;
	struct xp_params d;
	char why[256] = "";

	clear_rpfs_env();
	ck_assert_msg(load_text(ONE_SERVER, &cfg, why, sizeof(why)) == 0, "%s", why);
	ck_assert_uint_eq(cfg.stripe_unit, 1 << 20);
	ck_assert_uint_eq(cfg.stripe_count, 0);
	ck_assert_uint_eq(cfg.redundancy.kind, RPFS_LAYOUT_STRIPE); /* none */
	ck_assert_str_eq(cfg.key_file, "");
	xp_params_default(&d);
	ck_assert_mem_eq(&cfg.xport, &d, sizeof(d));
	rpfs_config_free(&cfg);
}
END_TEST

START_TEST(transport_section_overrides_defaults)
{
	struct rpfs_config cfg;
	char why[256] = "";

	clear_rpfs_env();
	ck_assert_msg(load_text(sample, &cfg, why, sizeof(why)) == 0, "%s", why);
	ck_assert_uint_eq(cfg.xport.inline_max, 8192);
	ck_assert_uint_eq(cfg.xport.credits, 64);
	ck_assert_uint_eq(cfg.xport.fast_max, 65536); /* untouched default */
	rpfs_config_free(&cfg);
}
END_TEST

START_TEST(environment_overrides_the_transport_section)
{
	struct rpfs_config cfg;
	char why[256] = "";

	clear_rpfs_env();
	setenv("RPFS_CREDITS", "16", 1);
	ck_assert_msg(load_text(sample, &cfg, why, sizeof(why)) == 0, "%s", why);
	ck_assert_uint_eq(cfg.xport.credits, 16);
	ck_assert_uint_eq(cfg.xport.inline_max, 8192);
	rpfs_config_free(&cfg);
}
END_TEST

/* Defaults < [transport] < a program's options < RPFS_* (params.h). */
START_TEST(options_win_over_the_transport_section_and_lose_to_the_environment)
{
	const struct xp_option opts[] = {{"inline_max", "16K"}, {"spin_us", "10"}};
	struct rpfs_config cfg;
	char path[64], why[256] = "";

	clear_rpfs_env();
	setenv("RPFS_SPIN_US", "20", 1);
	write_temp(path, sizeof(path), sample);
	ck_assert_msg(rpfs_config_load_opts(path, opts, 2, &cfg, why, sizeof(why)) == 0,
		      "%s", why);
	unlink(path);
	ck_assert_uint_eq(cfg.xport.inline_max, 16384); /* [transport] said 8K */
	ck_assert_uint_eq(cfg.xport.spin_us, 20);
	ck_assert_uint_eq(cfg.xport.credits, 64); /* [transport], untouched */
	ck_assert_int_eq(
		cfg.xport.source[xp_setting_find("inline_max") - xp_setting_at(0)],
		XP_SRC_OPTION);
	ck_assert_int_eq(cfg.xport.source[xp_setting_find("spin_us") - xp_setting_at(0)],
			 XP_SRC_ENV);
	rpfs_config_free(&cfg);
}
END_TEST

START_TEST(a_bad_option_is_einval_naming_the_key)
{
	static const struct xp_option bad[][1] = {
		{{"no_such_key", "1"}}, {{"max_conns", "8"}}, {{"fast_slots", "many"}}};
	static const char *const named[] = {"no_such_key", "max_conns", "fast_slots"};
	struct rpfs_config cfg;
	char path[64], why[256];

	clear_rpfs_env();
	write_temp(path, sizeof(path), sample);
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		why[0] = '\0';
		ck_assert_int_eq(
			rpfs_config_load_opts(path, bad[i], 1, &cfg, why, sizeof(why)),
			-EINVAL);
		ck_assert_msg(strstr(why, named[i]), "'%s' does not name %s", why,
			      named[i]);
	}
	unlink(path);
}
END_TEST

START_TEST(missing_file_is_an_error_naming_it)
{
	struct rpfs_config cfg;
	char why[256] = "";

	ck_assert_int_eq(
		rpfs_config_load("/nonexistent/rpfs.conf", &cfg, why, sizeof(why)),
		-ENOENT);
	ck_assert_ptr_nonnull(strstr(why, "/nonexistent/rpfs.conf"));
}
END_TEST

/* ---- errors ------------------------------------------------------------- */

static const struct {
	const char *text;
	const char *cause; /* must appear in the message */
	const char *where; /* likewise: line or section */
} bad_files[] = {
	{"[cluster]\ncolour = blue\n" ONE_SERVER, "unknown key", ":2:"},
	{ONE_SERVER "speed = 9\n", "unknown key", ":6:"},
	{ONE_SERVER "[transport]\nwarp = 9\n", "unknown key", ":7:"},
	{ONE_SERVER "[transport]\ncredits = lots\n", "bad value", ":7:"},
	{ONE_SERVER "[nonsense]\n", "unknown section", ":6:"},
	{"stripe_unit = 1M\n" ONE_SERVER, "outside any section", ":1:"},
	{"[server.0]\nport = 7100\nroles = io,meta\ndir = /x\n", "missing address",
	 "[server.0]"},
	{"[server.0]\naddress = h\nroles = io,meta\ndir = /x\n", "missing port",
	 "[server.0]"},
	{"[server.0]\naddress = h\nport = 1\ndir = /x\n", "missing roles", "[server.0]"},
	{"[server.0]\naddress = h\nport = 1\nroles = io,meta\n", "missing dir",
	 "[server.0]"},
	{ONE_SERVER "[server.e]\n", "missing address", "[server.e]"},
	{ONE_SERVER "[server.0]\naddress = h\nport = 2\nroles = io\ndir = /y\n",
	 "duplicate server name", ":6:"},
	{"[server.0]\naddress = h\nport = 1\nroles = meta\ndir = /x\n", "no io server",
	 ""},
	{"[server.0]\naddress = h\nport = 1\nroles = io\ndir = /x\n", "no meta server",
	 ""},
	{"[server.0]\naddress = h\nport = 70000\nroles = io,meta\ndir = /x\n",
	 "bad number", ":3:"},
	{"[server.0]\naddress = h\nport = 0\nroles = io,meta\ndir = /x\n", "bad number",
	 ":3:"},
	{"[server.0]\naddress = h\nport = 71x\nroles = io,meta\ndir = /x\n", "bad number",
	 ":3:"},
	{"[cluster]\nstripe_unit = 0\n" ONE_SERVER, "bad number", ":2:"},
	{"[cluster]\nstripe_unit = 1Q\n" ONE_SERVER, "bad number", ":2:"},
	{"[cluster]\nstripe_count = -1\n" ONE_SERVER, "bad number", ":2:"},
	{"[cluster]\nstripe_count = 99999999999\n" ONE_SERVER, "bad number", ":2:"},
	{"[cluster]\nstripe_count = 2\n" ONE_SERVER, "stripe_count", "[cluster]"},
	{"[cluster]\nredundancy = raid5\n" ONE_SERVER, "not a redundancy", ":2:"},
	{"[cluster]\nredundancy = mirror:9\n" ONE_SERVER, "2 to 8 copies", ":2:"},
	{"[cluster]\nredundancy = ec:2+1\n" ONE_SERVER, "ec:K+P is not supported yet",
	 ":2:"},
	{"[cluster]\nredundancy = default\n" ONE_SERVER, "want none or mirror:N", ":2:"},
	{"[cluster]\nredundancy = mirror:2\n" ONE_SERVER,
	 "mirror:2 needs 2 io servers, the cluster has 1", "[cluster]"},
	{"[server.0]\naddress = h\nport = 1\nroles = io,disk\ndir = /x\n",
	 "unknown role 'disk'", ":4:"},
	{"[server.0]\naddress = h\nport = 1\nroles = io,,meta\ndir = /x\n",
	 "unknown role", ":4:"},
	{ONE_SERVER "address = h2\n", "duplicate key", ":6:"},
	{"[cluster]\n[cluster]\n" ONE_SERVER, "duplicate section", ":2:"},
	{"[server.a/b]\n", "bad server name", ":1:"},
	{"[server.]\n", "bad server name", ":1:"},
	{ONE_SERVER "this is not ini\n", "syntax error", ":6:"},
	{ONE_SERVER "[transport]\ninline_max = 1M\nfast_max = 64K\n", "[transport]", ""},
};

START_TEST(each_mistake_is_einval_naming_file_place_and_cause)
{
	struct rpfs_config cfg;
	char why[512];

	clear_rpfs_env();
	for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
		why[0] = '\0';
		ck_assert_msg(load_text(bad_files[i].text, &cfg, why, sizeof(why)) ==
				      -EINVAL,
			      "case %zu loaded: %s", i, bad_files[i].text);
		ck_assert_msg(strstr(why, bad_files[i].cause) &&
				      strstr(why, bad_files[i].where),
			      "case %zu: message '%s' lacks '%s' or '%s'", i, why,
			      bad_files[i].cause, bad_files[i].where);
		ck_assert_msg(strstr(why, "/tmp/rpfs-config-"),
			      "case %zu: no file in '%s'", i, why);
		ck_assert_ptr_null(cfg.servers);
	}
}
END_TEST

START_TEST(overlong_line_is_refused_not_split)
{
	struct rpfs_config cfg;
	char text[2048], why[512] = "";

	clear_rpfs_env();
	snprintf(text, sizeof(text),
		 "[server.0]\naddress = h\nport = 1\nroles = io,meta\n"
		 "dir = /%0600d\n",
		 0);
	ck_assert_int_eq(load_text(text, &cfg, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "line too long") && strstr(why, ":5:"), "%s", why);
}
END_TEST

START_TEST(bad_environment_variable_is_einval)
{
	struct rpfs_config cfg;
	char why[256] = "";

	clear_rpfs_env();
	setenv("RPFS_CREDITS", "many", 1);
	ck_assert_int_eq(load_text(ONE_SERVER, &cfg, why, sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "RPFS_"));
}
END_TEST

/* ---- writing ------------------------------------------------------------ */

static void assert_same_config(const struct rpfs_config *a, const struct rpfs_config *b)
{
	ck_assert_uint_eq(a->stripe_unit, b->stripe_unit);
	ck_assert_uint_eq(a->stripe_count, b->stripe_count);
	ck_assert_mem_eq(&a->redundancy, &b->redundancy, sizeof(a->redundancy));
	ck_assert_str_eq(a->key_file, b->key_file);
	ck_assert_uint_eq(a->nservers, b->nservers);
	ck_assert_mem_eq(a->servers, b->servers, a->nservers * sizeof(a->servers[0]));
	ck_assert_uint_eq(a->nio, b->nio);
	ck_assert_mem_eq(a->io, b->io, a->nio * sizeof(a->io[0]));
	ck_assert_uint_eq(a->nmeta, b->nmeta);
	ck_assert_mem_eq(a->meta, b->meta, a->nmeta * sizeof(a->meta[0]));
	/* every setting's value; where it came from differs by design */
	ck_assert_mem_eq(&a->xport, &b->xport, offsetof(struct xp_params, source));
}

START_TEST(written_file_loads_back_identically)
{
	struct rpfs_config a, b;
	char path[] = "/tmp/rpfs-config-rt-XXXXXX";
	char why[256] = "";
	int fd;

	clear_rpfs_env();
	ck_assert_msg(load_text(sample, &a, why, sizeof(why)) == 0, "%s", why);
	/* Settings that are not the defaults of anything. */
	a.stripe_unit = 3 * 4096 + 1;
	strcpy(a.xport.provider, "tcp");
	a.xport.force_path = XP_PATH_FAST;
	a.xport.timeout_ms = 1234;
	a.xport.rcache_max_bytes = (size_t)3 << 30;
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(rpfs_config_write(&a, path), 0);
	ck_assert_msg(rpfs_config_load(path, &b, why, sizeof(why)) == 0, "%s", why);
	ck_assert_str_eq(b.path, path);
	assert_same_config(&a, &b);
	unlink(path);
	rpfs_config_free(&a);
	rpfs_config_free(&b);
}
END_TEST

START_TEST(write_refuses_a_value_that_would_not_load_back)
{
	struct rpfs_config a;
	char path[] = "/tmp/rpfs-config-bad-XXXXXX";
	char why[256] = "";
	int fd;

	clear_rpfs_env();
	ck_assert_msg(load_text(sample, &a, why, sizeof(why)) == 0, "%s", why);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	strcpy(a.servers[1].dir, "/tmp/x ;y"); /* would read back as "/tmp/x" */
	ck_assert_int_eq(rpfs_config_write(&a, path), -EINVAL);
	strcpy(a.servers[1].dir, "/tmp/x\n[server.z]");
	ck_assert_int_eq(rpfs_config_write(&a, path), -EINVAL);
	strcpy(a.servers[1].dir, "");
	ck_assert_int_eq(rpfs_config_write(&a, path), -EINVAL);
	unlink(path);
	rpfs_config_free(&a);
}
END_TEST

/* A value for setting st other than what p holds, that p passes the check
 * with: its range's ends, or another word. */
static const char *other_value(const struct xp_params *p, const struct xp_setting *st,
			       char *buf, size_t len)
{
	struct xp_params q;
	char now[64];
	uint64_t ends[2] = {st->min, st->max};

	xp_setting_format(p, st, now, sizeof(now));
	if (st->type == XP_SET_STR)
		return strcmp(now, "tcp") ? "tcp" : "verbs";
	if (st->type == XP_SET_PATH)
		return strcmp(now, "bulk") ? "bulk" : "inline";
	if (st->type == XP_SET_CPUS)
		return strcmp(now, "0-1,3") ? "0-1,3" : "all";
	for (int i = 0; i < 2; i++) {
		q = *p;
		if (st->type == XP_SET_SIZE)
			xp_format_size(buf, len, ends[i]);
		else
			snprintf(buf, len, "%llu", (unsigned long long)ends[i]);
		if (strcmp(buf, now) && !xp_params_set(&q, st->name, buf) &&
		    !xp_params_check(&q, NULL, 0))
			return buf;
	}
	ck_abort_msg("%s: no other value to write", st->name);
	return NULL;
}

/* The writer is driven by the table: whatever a setting is set to (spin_us
 * was once left out), it is written and loads back from the file. */
START_TEST(writer_writes_every_setting_of_the_table)
{
	const struct xp_setting *st;
	char path[] = "/tmp/rpfs-config-all-XXXXXX";
	char why[256] = "", buf[64], line[128], got[64];
	int fd;

	clear_rpfs_env();
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	for (int i = 0; (st = xp_setting_at(i)); i++) {
		struct rpfs_config a, b;
		const char *v;
		char *text;
		FILE *f;
		size_t cap = 0;

		ck_assert_msg(load_text(sample, &a, why, sizeof(why)) == 0, "%s", why);
		v = other_value(&a.xport, st, buf, sizeof(buf));
		ck_assert_int_eq(xp_params_set(&a.xport, st->name, v), 0);
		ck_assert_int_eq(rpfs_config_write(&a, path), 0);
		f = fopen(path, "r");
		ck_assert_ptr_nonnull(f);
		text = NULL;
		ck_assert_int_gt(getdelim(&text, &cap, '\0', f), 0);
		fclose(f);
		snprintf(line, sizeof(line), "\n%s = %s\n", st->name, v);
		ck_assert_msg(strstr(text, line), "%s = %s not written:\n%s", st->name, v,
			      text);
		free(text);
		ck_assert_msg(rpfs_config_load(path, &b, why, sizeof(why)) == 0, "%s",
			      why);
		xp_setting_format(&b.xport, st, got, sizeof(got));
		ck_assert_str_eq(got, v);
		ck_assert_int_eq(b.xport.source[i], XP_SRC_CONFIG);
		rpfs_config_free(&a);
		rpfs_config_free(&b);
	}
	unlink(path);
}
END_TEST

/* ---- finding ------------------------------------------------------------ */

START_TEST(rpfs_config_variable_names_the_file)
{
	struct rpfs_config cfg;
	char path[64], why[256] = "";

	clear_rpfs_env();
	write_temp(path, sizeof(path), sample);
	setenv("RPFS_CONFIG", path, 1);
	ck_assert_msg(rpfs_config_load(NULL, &cfg, why, sizeof(why)) == 0, "%s", why);
	ck_assert_str_eq(cfg.path, path);
	ck_assert_uint_eq(cfg.nservers, 4);
	rpfs_config_free(&cfg);
	unlink(path);
}
END_TEST

START_TEST(explicit_path_wins_over_rpfs_config)
{
	struct rpfs_config cfg;
	char path[64], why[256] = "";

	clear_rpfs_env();
	write_temp(path, sizeof(path), ONE_SERVER);
	setenv("RPFS_CONFIG", "/nonexistent/rpfs.conf", 1);
	ck_assert_msg(rpfs_config_load(path, &cfg, why, sizeof(why)) == 0, "%s", why);
	ck_assert_uint_eq(cfg.nservers, 1);
	rpfs_config_free(&cfg);
	unlink(path);
}
END_TEST

START_TEST(find_accepts_name_or_section_name)
{
	struct rpfs_config cfg;
	char why[256] = "";

	clear_rpfs_env();
	ck_assert_msg(load_text(sample, &cfg, why, sizeof(why)) == 0, "%s", why);
	ck_assert_int_eq(rpfs_config_find(&cfg, "a"), 0);
	ck_assert_int_eq(rpfs_config_find(&cfg, "server.c"), 2);
	ck_assert_int_eq(rpfs_config_find(&cfg, "3"), 3);
	ck_assert_int_eq(rpfs_config_find(&cfg, "server.3"), 3);
	ck_assert_int_eq(rpfs_config_find(&cfg, "d"), -1);
	ck_assert_int_eq(rpfs_config_find(&cfg, "server."), -1);
	rpfs_config_free(&cfg);
}
END_TEST

/* ---- the search when no path is named --------------------------------- */

/* A fake HOME and system directory, each with or without a config. */
struct search_dirs {
	char root[64], etc[128], home[128];
};

static void search_setup(struct search_dirs *d, int in_etc, int in_home)
{
	char p[256];

	clear_rpfs_env();
	snprintf(d->root, sizeof(d->root), "/tmp/rpfs-search-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(d->root));
	snprintf(d->etc, sizeof(d->etc), "%s/etc", d->root);
	snprintf(d->home, sizeof(d->home), "%s/home", d->root);
	snprintf(p, sizeof(p), "%s/rpfs", d->etc);
	ck_assert_int_eq(mkdir(d->etc, 0755) | mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/.rpfs", d->home);
	ck_assert_int_eq(mkdir(d->home, 0755) | mkdir(p, 0755), 0);
	setenv("RPFS_SYSCONFDIR", d->etc, 1);
	setenv("HOME", d->home, 1);
	if (in_etc) {
		snprintf(p, sizeof(p), "%s/rpfs/rpfs.conf", d->etc);
		ck_assert_int_eq(put_text(p, ONE_SERVER), 0);
	}
	if (in_home) {
		snprintf(p, sizeof(p), "%s/.rpfs/rpfs.conf", d->home);
		ck_assert_int_eq(put_text(p, ONE_SERVER), 0);
	}
}

static void search_teardown(struct search_dirs *d)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", d->root);
	ck_assert_int_eq(system(cmd), 0);
}

/* What rpfs_config_load(NULL) opened, or the error. */
static int search_loads(char *path, size_t len)
{
	struct rpfs_config cfg;
	char why[512] = "";
	int ret = rpfs_config_load(NULL, &cfg, why, sizeof(why));

	snprintf(path, len, "%.500s", ret ? why : cfg.path);
	if (!ret)
		rpfs_config_free(&cfg);
	return ret;
}

START_TEST(search_takes_rpfs_config_first)
{
	struct search_dirs d;
	char path[512], want[256];

	search_setup(&d, 1, 1);
	snprintf(want, sizeof(want), "%s/elsewhere.conf", d.root);
	ck_assert_int_eq(put_text(want, ONE_SERVER), 0);
	setenv("RPFS_CONFIG", want, 1);
	ck_assert_int_eq(search_loads(path, sizeof(path)), 0);
	ck_assert_str_eq(path, want);
	/* named but missing: an error naming it, not a fall-back */
	setenv("RPFS_CONFIG", "/nonexistent/x.conf", 1);
	ck_assert_int_eq(search_loads(path, sizeof(path)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(path, "/nonexistent/x.conf"));
	search_teardown(&d);
}
END_TEST

START_TEST(search_takes_the_system_config_before_home)
{
	struct search_dirs d;
	char path[512], want[256];

	search_setup(&d, 1, 1);
	snprintf(want, sizeof(want), "%s/rpfs/rpfs.conf", d.etc);
	ck_assert_int_eq(search_loads(path, sizeof(path)), 0);
	ck_assert_str_eq(path, want);
	search_teardown(&d);
}
END_TEST

START_TEST(search_takes_home_without_a_system_config)
{
	struct search_dirs d;
	char path[512], want[256];

	search_setup(&d, 0, 1);
	snprintf(want, sizeof(want), "%s/.rpfs/rpfs.conf", d.home);
	ck_assert_int_eq(search_loads(path, sizeof(path)), 0);
	ck_assert_str_eq(path, want);
	search_teardown(&d);
}
END_TEST

START_TEST(search_without_any_config_names_every_place)
{
	struct search_dirs d;
	char path[512];

	search_setup(&d, 0, 0);
	ck_assert_int_eq(search_loads(path, sizeof(path)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(path, "RPFS_CONFIG"));
	ck_assert_ptr_nonnull(strstr(path, d.etc));
	ck_assert_ptr_nonnull(strstr(path, d.home));
	search_teardown(&d);
}
END_TEST

/* ---- stable server ids ------------------------------------------------ */

#define SERVER_ID(name, id, roles)                                                       \
	"[server." name "]\naddress = 127.0.0.1\nport = 71" id "\nroles = " roles        \
	"\ndir = /tmp/" name "\nid = " id "\n"

START_TEST(ids_order_the_servers_whatever_the_file_order)
{
	static const char a[] = SERVER_ID("x", "10", "meta,io") SERVER_ID("y", "20", "io")
		SERVER_ID("z", "30", "io");
	static const char b[] = SERVER_ID("z", "30", "io") SERVER_ID("x", "10", "meta,io")
		SERVER_ID("y", "20", "io");
	struct rpfs_config ca, cb;
	uint8_t fa[RPFS_FINGERPRINT_SIZE], fb[RPFS_FINGERPRINT_SIZE];
	char why[256] = "";

	clear_rpfs_env();
	ck_assert_msg(load_text(a, &ca, why, sizeof(why)) == 0, "%s", why);
	ck_assert_msg(load_text(b, &cb, why, sizeof(why)) == 0, "%s", why);
	for (int i = 0; i < 3; i++) {
		ck_assert_str_eq(ca.servers[i].name, cb.servers[i].name);
		ck_assert_int_eq(ca.servers[i].io_index, cb.servers[i].io_index);
	}
	ck_assert_str_eq(cb.servers[0].name, "x");
	ck_assert_int_eq(cb.servers[2].io_index, 2);
	ck_assert_uint_eq(cb.servers[2].id, 30);
	/* the same cluster to a client's handshake */
	memset(ca.cluster_id, 0, sizeof(ca.cluster_id));
	memset(cb.cluster_id, 0, sizeof(cb.cluster_id));
	rpfs_config_fingerprint(&ca, fa);
	rpfs_config_fingerprint(&cb, fb);
	ck_assert_mem_eq(fa, fb, sizeof(fa));
	rpfs_config_free(&ca);
	rpfs_config_free(&cb);
}
END_TEST

START_TEST(ids_must_be_unique_and_on_every_server_or_none)
{
	static const char dup[] =
		SERVER_ID("x", "10", "meta,io") SERVER_ID("y", "10", "io");
	static const char some[] = SERVER_ID("x", "10", "meta,io") ONE_SERVER;
	struct rpfs_config cfg;
	char why[256] = "";

	clear_rpfs_env();
	ck_assert_int_eq(load_text(dup, &cfg, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "id 10 is taken"), "%s", why);
	ck_assert_int_eq(load_text(some, &cfg, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "1 of the 2 servers have an id"), "%s", why);
	ck_assert_int_eq(load_text(ONE_SERVER "id = x\n", &cfg, why, sizeof(why)),
			 -EINVAL);
	ck_assert_msg(strstr(why, "bad number"), "%s", why);
}
END_TEST

START_TEST(a_server_log_file_is_read_and_written)
{
	struct rpfs_config cfg;
	char why[256] = "";

	clear_rpfs_env();
	ck_assert_msg(load_text(ONE_SERVER "log_file = /var/log/rpfs/0.log\n", &cfg, why,
				sizeof(why)) == 0,
		      "%s", why);
	ck_assert_str_eq(cfg.servers[0].log_file, "/var/log/rpfs/0.log");
	ck_assert_uint_eq(cfg.servers[0].id, 0);
	rpfs_config_free(&cfg);
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("load");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, sample_loads_with_servers_in_file_order);
	tcase_add_test(tc, roles_give_io_and_meta_indexes_in_file_order);
	tcase_add_test(tc, missing_cluster_section_gives_the_defaults);
	tcase_add_test(tc, transport_section_overrides_defaults);
	tcase_add_test(tc, environment_overrides_the_transport_section);
	tcase_add_test(
		tc, options_win_over_the_transport_section_and_lose_to_the_environment);
	tcase_add_test(tc, a_bad_option_is_einval_naming_the_key);
	tcase_add_test(tc, missing_file_is_an_error_naming_it);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, each_mistake_is_einval_naming_file_place_and_cause);
	tcase_add_test(tc, overlong_line_is_refused_not_split);
	tcase_add_test(tc, bad_environment_variable_is_einval);
	suite_add_tcase(s, tc);

	tc = tcase_create("write");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, written_file_loads_back_identically);
	tcase_add_test(tc, write_refuses_a_value_that_would_not_load_back);
	tcase_add_test(tc, writer_writes_every_setting_of_the_table);
	suite_add_tcase(s, tc);

	tc = tcase_create("find");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, rpfs_config_variable_names_the_file);
	tcase_add_test(tc, explicit_path_wins_over_rpfs_config);
	tcase_add_test(tc, find_accepts_name_or_section_name);
	tcase_add_test(tc, search_takes_rpfs_config_first);
	tcase_add_test(tc, search_takes_the_system_config_before_home);
	tcase_add_test(tc, search_takes_home_without_a_system_config);
	tcase_add_test(tc, search_without_any_config_names_every_place);
	suite_add_tcase(s, tc);

	tc = tcase_create("ids");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, ids_order_the_servers_whatever_the_file_order);
	tcase_add_test(tc, ids_must_be_unique_and_on_every_server_or_none);
	tcase_add_test(tc, a_server_log_file_is_read_and_written);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(config_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
