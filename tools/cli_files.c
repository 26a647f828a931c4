/* The rpfs command's namespace commands: ls, stat, mkdir, rmdir, rm,
 * chmod, chown, mv, du, find, setstripe, getstripe. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fnmatch.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* ---- namespace commands ------------------------------------------------- */

static void mode_string(const struct rpfs_stat *st, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";

	out[0] = st->type == RPFS_TYPE_DIR ? 'd' : '-';
	for (int i = 0; i < 9; i++)
		out[i + 1] = st->mode & (1u << (8 - i)) ? rwx[i] : '-';
	out[10] = 0;
}

static void print_entry(const struct opts *o, const char *name,
			const struct rpfs_stat *st, int longfmt)
{
	char mode[11], when[32], size[32];
	time_t t = (time_t)(st->mtime / 1000000000);
	struct tm tm;

	if (!longfmt) {
		printf("%s%s\n", name, st && st->type == RPFS_TYPE_DIR ? "/" : "");
		return;
	}
	mode_string(st, mode);
	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
	size_str(o, st->size, size, sizeof(size));
	printf("%s %5u %5u %12s %s %s%s\n", mode, st->uid, st->gid, size, when, name,
	       st->type == RPFS_TYPE_DIR ? "/" : "");
}

int cmd_ls(const struct opts *o, int argc, char **argv)
{
	rpfs_client_t *c = connect_cluster(o);
	char path[PATH_MAX];
	struct rpfs_stat st;
	struct names nm = {0};
	int ret;

	rpath(argc > 1 ? argv[1] : "/", path, sizeof(path));
	ret = rpfs_stat(c, path, &st);
	if (ret)
		die_rpfs(ret, "ls", path);
	if (st.type != RPFS_TYPE_DIR) {
		print_entry(o, path, &st, o->longfmt);
		rpfs_finalize(c);
		return 0;
	}
	ret = rpfs_readdir(c, path, collect, &nm);
	if (ret)
		die_rpfs(ret, "ls", path);
	if (nm.n)
		qsort(nm.v, nm.n, sizeof(*nm.v), cmp_names);
	for (size_t i = 0; i < nm.n; i++) {
		char full[PATH_MAX];
		struct rpfs_stat est;

		if (!o->longfmt) {
			printf("%s\n", nm.v[i]);
		} else {
			fmt(full, sizeof(full), "%s/%s", strcmp(path, "/") ? path : "",
			    nm.v[i]);
			ret = rpfs_stat(c, full, &est);
			if (ret)
				die_rpfs(ret, "stat", full);
			print_entry(o, nm.v[i], &est, 1);
		}
		free(nm.v[i]);
	}
	free(nm.v);
	rpfs_finalize(c);
	return 0;
}

static void fmt_time(int64_t ns, char *out, size_t len)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	size_t n;

	localtime_r(&t, &tm);
	n = strftime(out, len, "%Y-%m-%d %H:%M:%S", &tm);
	fmt(out + n, len - n, ".%09lld", (long long)(ns % 1000000000));
}

int cmd_stat(const struct opts *o, int argc, char **argv)
{
	rpfs_admin_config_t *cfg;
	rpfs_client_t *c;
	char path[PATH_MAX], mode[11], t[64];
	struct rpfs_stat st;
	int ret;

	if (argc < 2)
		cmd_usage(argv[0], 2);
	c = connect_cluster(o);
	rpath(argv[1], path, sizeof(path));
	ret = rpfs_stat(c, path, &st);
	if (ret)
		die_rpfs(ret, "stat", path);
	mode_string(&st, mode);
	printf("  path: %s\n", path);
	printf("  type: %s\n", st.type == RPFS_TYPE_DIR ? "directory" : "file");
	printf("  mode: %04o (%s)  uid %u  gid %u\n", st.mode & 07777, mode, st.uid,
	       st.gid);
	if (st.type != RPFS_TYPE_DIR)
		printf("  size: %llu\n", (unsigned long long)st.size);
	printf("handle: 0x%016llx\n", (unsigned long long)st.handle);
	fmt_time(st.mtime, t, sizeof(t));
	printf(" mtime: %s\n", t);
	fmt_time(st.ctime, t, sizeof(t));
	printf(" ctime: %s\n", t);
	if (st.type == RPFS_TYPE_DIR) {
		rpfs_finalize(c);
		return 0;
	}
	printf("layout: stripe unit %llu, stripe count %u, first server %u\n",
	       (unsigned long long)st.stripe_unit, st.stripe_count, st.first_server);
	cfg = load_config(config_path(o));
	for (uint32_t k = 0; k < st.stripe_count; k++) {
		struct rpfs_server_info si;
		int io = rpfs_admin_slot_server(cfg, &st, k, &si);

		if (io < 0) {
			printf("  slots: %s\n", rpfs_errmsg());
			break;
		}
		printf("  slot %u: io server %d (%s:%d)\n", k, io, si.address, si.port);
	}
	rpfs_admin_config_free(cfg);
	rpfs_finalize(c);
	return 0;
}

int cmd_each(const struct opts *o, int argc, char **argv)
{
	const char *what = argv[0];
	rpfs_client_t *c;
	char path[PATH_MAX];

	if (argc < 2)
		cmd_usage(argv[0], 2);
	c = connect_cluster(o);
	for (int i = 1; i < argc; i++) {
		int ret;

		rpath(argv[i], path, sizeof(path));
		if (!strcmp(what, "mkdir"))
			ret = rpfs_mkdir(c, path, 0755);
		else if (!strcmp(what, "rmdir"))
			ret = rpfs_rmdir(c, path);
		else
			ret = rpfs_remove(c, path);
		if (ret)
			die_rpfs(ret, what, path);
	}
	rpfs_finalize(c);
	return 0;
}

int cmd_chmod(const struct opts *o, int argc, char **argv)
{
	rpfs_client_t *c;
	char path[PATH_MAX], *end;
	unsigned long mode;

	if (argc < 3)
		cmd_usage(argv[0], 2);
	errno = 0;
	mode = strtoul(argv[1], &end, 8);
	if (errno || *end || end == argv[1] || mode > 07777)
		die("chmod: '%s' is not an octal mode (0 to 7777)", argv[1]);
	c = connect_cluster(o);
	for (int i = 2; i < argc; i++) {
		int ret;

		rpath(argv[i], path, sizeof(path));
		ret = rpfs_chmod(c, path, (uint32_t)mode);
		if (ret)
			die_rpfs(ret, "chmod", path);
	}
	rpfs_finalize(c);
	return 0;
}

/* ---- setstripe / getstripe ---------------------------------------------- */

int cmd_setstripe(const struct opts *o, int argc, char **argv)
{
	uint64_t unit = 0, count = 0;
	char path[PATH_MAX];
	struct rpfs_stat st;
	rpfs_client_t *c;
	int ch, ret;

	optind = 1;
	while ((ch = getopt(argc, argv, "+c:S:")) != -1) {
		if (ch == 'c' && !rpfs_admin_parse_size(optarg, &count) && count &&
		    count <= UINT32_MAX)
			continue;
		if (ch == 'S' && !rpfs_admin_parse_size(optarg, &unit) && unit)
			continue;
		cmd_usage(argv[0], 2);
	}
	if (optind != argc - 1)
		cmd_usage(argv[0], 2);
	rpath(argv[optind], path, sizeof(path));
	c = connect_cluster(o);
	ret = rpfs_stat(c, path, &st);
	if (ret == -ENOENT) {
		/* A new file with this layout, as lfs setstripe does. */
		struct rpfs_create_opts co = {unit, (uint32_t)count, -1};
		rpfs_file_t *f;

		ret = rpfs_create(c, path, 0644, RPFS_O_EXCL | RPFS_O_WRITE, &co, &f);
		if (ret)
			die_rpfs(ret, "setstripe: create", path);
		rpfs_close(f);
	} else if (ret) {
		die_rpfs(ret, "setstripe", path);
	} else if (st.type != RPFS_TYPE_DIR) {
		die("setstripe: %s: an existing file's layout is fixed (give a directory, "
		    "or a new file's path)",
		    path);
	} else if ((ret = rpfs_setstripe(c, path, unit, (uint32_t)count))) {
		die_rpfs(ret, "setstripe", path);
	}
	rpfs_finalize(c);
	return 0;
}

int cmd_getstripe(const struct opts *o, int argc, char **argv)
{
	char path[PATH_MAX], u[32], n[32];
	struct rpfs_stat st;
	rpfs_client_t *c;
	int ret;

	if (argc != 2)
		cmd_usage(argv[0], 2);
	rpath(argv[1], path, sizeof(path));
	c = connect_cluster(o);
	ret = rpfs_stat(c, path, &st);
	if (ret)
		die_rpfs(ret, "getstripe", path);
	if (st.stripe_unit)
		fmt(u, sizeof(u), "%llu", (unsigned long long)st.stripe_unit);
	else
		fmt(u, sizeof(u), "default");
	if (st.stripe_count)
		fmt(n, sizeof(n), "%u", st.stripe_count);
	else
		fmt(n, sizeof(n), "default");
	if (st.type == RPFS_TYPE_DIR)
		printf("%s: new files: stripe_unit %s stripe_count %s\n", path, u, n);
	else
		printf("%s: stripe_unit %s stripe_count %s first_server %u\n", path, u, n,
		       st.first_server);
	rpfs_finalize(c);
	return 0;
}

/* ---- mv ----------------------------------------------------------------- */

/* Rename, or where rpfs_rename says -EXDEV (the paths live on different
 * metadata servers), copy and remove as mv(1) does across file systems: a
 * directory entry by entry, each entry moved the same way. */
static void move_tree(rpfs_client_t *c, const char *from, const char *to)
{
	struct names nm = {0};
	struct rpfs_stat st;
	const char *side;
	int ret = rpfs_rename(c, from, to);

	if (ret != -EXDEV) {
		if (ret)
			die_rpfs(ret, "mv", from);
		return;
	}
	ret = rpfs_stat(c, from, &st);
	if (ret)
		die_rpfs(ret, "mv: stat", from);
	if (st.type != RPFS_TYPE_DIR) {
		ret = copy_within(c, from, to, &st, &side);
		if (ret)
			die_rpfs(ret, "mv: copy", side);
	} else {
		ret = rpfs_mkdir(c, to, st.mode);
		if (ret && ret != -EEXIST)
			die_rpfs(ret, "mv: mkdir", to);
		ret = rpfs_readdir(c, from, collect, &nm);
		if (ret)
			die_rpfs(ret, "mv: list", from);
		for (size_t i = 0; i < nm.n; i++) {
			char f[PATH_MAX], t[PATH_MAX];

			fmt(f, sizeof(f), "%s/%s", strcmp(from, "/") ? from : "",
			    nm.v[i]);
			fmt(t, sizeof(t), "%s/%s", to, nm.v[i]);
			move_tree(c, f, t);
			free(nm.v[i]);
		}
		free(nm.v);
	}
	if (geteuid() == 0)
		(void)rpfs_chown(c, to, st.uid, st.gid);
	ret = st.type == RPFS_TYPE_DIR ? rpfs_rmdir(c, from) : rpfs_remove(c, from);
	if (ret)
		die_rpfs(ret, "mv: remove", from);
}

int cmd_mv(const struct opts *o, int argc, char **argv)
{
	char from[PATH_MAX], to[PATH_MAX];
	struct rpfs_stat st;
	rpfs_client_t *c;

	if (argc != 3)
		cmd_usage(argv[0], 2);
	rpath(argv[1], from, sizeof(from));
	rpath(argv[2], to, sizeof(to));
	c = connect_cluster(o);
	/* Into an existing directory, as mv does. */
	if (!rpfs_stat(c, to, &st) && st.type == RPFS_TYPE_DIR && strcmp(from, to)) {
		size_t l = strlen(to);

		fmt(to + l, sizeof(to) - l, "%s%s", l > 1 ? "/" : "", base_name(from));
	}
	move_tree(c, from, to);
	rpfs_finalize(c);
	return 0;
}

/* ---- chown -------------------------------------------------------------- */

/* A user or group by name or number; -1 if it is neither. */
static long id_of(const char *s, bool group)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*s && !*end && !errno && v >= 0 && v <= UINT32_MAX - 1L)
		return v;
	if (group) {
		struct group *g = getgrnam(s);

		return g ? (long)g->gr_gid : -1;
	}
	struct passwd *p = getpwnam(s);

	return p ? (long)p->pw_uid : -1;
}

/* USER, USER:GROUP, USER: (the user's login group) or :GROUP; a part left
 * out keeps each file's own. */
int cmd_chown(const struct opts *o, int argc, char **argv)
{
	char spec[256], path[PATH_MAX], *colon;
	long uid = -1, gid = -1;
	rpfs_client_t *c;

	if (argc < 3)
		cmd_usage(argv[0], 2);
	fmt(spec, sizeof(spec), "%s", argv[1]);
	colon = strchr(spec, ':');
	if (colon)
		*colon = 0;
	if (spec[0] && (uid = id_of(spec, false)) < 0)
		die("chown: no user '%s'", spec);
	if (colon && colon[1] && (gid = id_of(colon + 1, true)) < 0)
		die("chown: no group '%s'", colon + 1);
	if (colon && !colon[1] && spec[0]) {
		struct passwd *p = getpwuid((uid_t)uid);

		if (!p)
			die("chown: user %ld has no login group", uid);
		gid = (long)p->pw_gid;
	}
	if (uid < 0 && gid < 0)
		cmd_usage(argv[0], 2);
	c = connect_cluster(o);
	for (int i = 2; i < argc; i++) {
		struct rpfs_stat st;
		int ret;

		rpath(argv[i], path, sizeof(path));
		ret = rpfs_stat(c, path, &st);
		if (!ret)
			ret = rpfs_chown(c, path, uid < 0 ? st.uid : (uint32_t)uid,
					 gid < 0 ? st.gid : (uint32_t)gid);
		if (ret)
			die_rpfs(ret, "chown", path);
	}
	rpfs_finalize(c);
	return 0;
}

/* ---- du / find ---------------------------------------------------------- */

/* Walk the tree under path (attributes st) depth first, names sorted:
 * visit(path, st, depth, arg) before the children; after(path, bytes,
 * depth, arg) with the bytes of the files below, once they are done. */
struct walk {
	rpfs_client_t *c;
	void (*visit)(const char *path, const struct rpfs_stat *st, int depth, void *arg);
	void (*after)(const char *path, uint64_t bytes, int depth, void *arg);
	void *arg;
};

static uint64_t walk(struct walk *w, const char *path, const struct rpfs_stat *st,
		     int depth)
{
	struct names nm;
	uint64_t bytes = 0;
	int ret;

	if (w->visit)
		w->visit(path, st, depth, w->arg);
	if (st->type != RPFS_TYPE_DIR)
		return st->size;
	ret = list_names(w->c, path, &nm);
	if (ret)
		die_rpfs(ret, "list", path);
	for (size_t i = 0; i < nm.n; i++) {
		char child[PATH_MAX];
		struct rpfs_stat cst;

		join(child, sizeof(child), path, nm.v[i]);
		ret = rpfs_stat(w->c, child, &cst);
		if (ret == -ENOENT) /* removed meanwhile */
			continue;
		if (ret)
			die_rpfs(ret, "stat", child);
		bytes += walk(w, child, &cst, depth + 1);
	}
	names_free(&nm);
	if (w->after)
		w->after(path, bytes, depth, w->arg);
	return bytes;
}

struct du_arg {
	const struct opts *o;
	bool summary;
};

static void du_print(const struct opts *o, const char *path, uint64_t bytes)
{
	char s[32];

	size_str(o, bytes, s, sizeof(s));
	printf("%s\t%s\n", s, path);
}

static void du_after(const char *path, uint64_t bytes, int depth, void *arg)
{
	struct du_arg *a = arg;

	if (!a->summary || depth == 0)
		du_print(a->o, path, bytes);
}

/* Logical bytes (the files' sizes) of each directory below PATH and of
 * PATH, or with -s of PATH only; -h in KiB, MiB, ... */
int cmd_du(const struct opts *o, int argc, char **argv)
{
	struct opts mine = *o;
	struct du_arg a = {&mine, false};
	rpfs_client_t *c;
	int ch, first;

	optind = 1;
	while ((ch = getopt(argc, argv, "+sh")) != -1) {
		if (ch == 's')
			a.summary = true;
		else if (ch == 'h')
			mine.human = 1;
		else
			cmd_usage(argv[0], 2);
	}
	first = optind;
	c = connect_cluster(o);
	for (int i = first; i < (argc > first ? argc : first + 1); i++) {
		struct walk w = {c, NULL, du_after, &a};
		char path[PATH_MAX];
		struct rpfs_stat st;
		int ret;

		rpath(i < argc ? argv[i] : "/", path, sizeof(path));
		ret = rpfs_stat(c, path, &st);
		if (ret)
			die_rpfs(ret, "du", path);
		if (st.type != RPFS_TYPE_DIR)
			du_print(&mine, path, st.size);
		else
			walk(&w, path, &st, 0);
	}
	rpfs_finalize(c);
	return 0;
}

struct find_arg {
	const char *name; /* glob on the last component, or NULL */
	int type;	  /* RPFS_TYPE_*, or 0 */
};

static void find_visit(const char *path, const struct rpfs_stat *st, int depth, void *arg)
{
	struct find_arg *f = arg;

	(void)depth;
	if (f->type && (int)st->type != f->type)
		return;
	if (f->name && fnmatch(f->name, base_name(path)[0] ? base_name(path) : "/", 0))
		return;
	printf("%s\n", path);
}

/* find PATH [-name GLOB] [-type f|d]: every entry under PATH (itself too)
 * that matches, one path per line, depth first, names sorted. */
int cmd_find(const struct opts *o, int argc, char **argv)
{
	struct find_arg f = {NULL, 0};
	char path[PATH_MAX];
	struct rpfs_stat st;
	rpfs_client_t *c;
	int i = 1, ret;

	if (argc > 1 && argv[1][0] != '-')
		rpath(argv[i++], path, sizeof(path));
	else
		fmt(path, sizeof(path), "/");
	for (; i < argc; i += 2) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			cmd_usage(argv[0], 0);
		if (i + 1 >= argc)
			cmd_usage(argv[0], 2);
		if (!strcmp(argv[i], "-name"))
			f.name = argv[i + 1];
		else if (!strcmp(argv[i], "-type") && !strcmp(argv[i + 1], "f"))
			f.type = RPFS_TYPE_FILE;
		else if (!strcmp(argv[i], "-type") && !strcmp(argv[i + 1], "d"))
			f.type = RPFS_TYPE_DIR;
		else
			cmd_usage(argv[0], 2);
	}
	c = connect_cluster(o);
	ret = rpfs_stat(c, path, &st);
	if (ret)
		die_rpfs(ret, "find", path);
	{
		struct walk w = {c, find_visit, NULL, &f};

		walk(&w, path, &st, 0);
	}
	rpfs_finalize(c);
	return 0;
}
