/* The rpfs command's namespace commands: ls, stat, mkdir, rmdir, rm,
 * chmod, chown, mv, du, find, setstripe, getstripe.
 *
 * Why one file of ~920 lines: twelve short commands (the longest, ls,
 * ~130 lines) that share the tree walks, mode and owner printing and
 * error reporting below; a file per command would export those helpers
 * for no reader's gain. The copy, truncate, mode, mount and admin
 * commands have their own files (cli_*.c). */
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* ---- ls ----------------------------------------------------------------- */

static void mode_string(const struct rpfs_stat *st, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";

	out[0] = st->type == RPFS_TYPE_DIR ? 'd' : '-';
	for (int i = 0; i < 9; i++)
		out[i + 1] = st->mode & (1u << (8 - i)) ? rwx[i] : '-';
	/* setuid, setgid, sticky: s/S, s/S, t/T as ls shows them */
	if (st->mode & 04000)
		out[3] = out[3] == 'x' ? 's' : 'S';
	if (st->mode & 02000)
		out[6] = out[6] == 'x' ? 's' : 'S';
	if (st->mode & 01000)
		out[9] = out[9] == 'x' ? 't' : 'T';
	out[10] = 0;
}

/* A user's or group's name where this host knows it, else its number. */
static void owner_name(uint32_t id, bool group, char *out, size_t len)
{
	struct passwd *p = group ? NULL : getpwuid((uid_t)id);
	struct group *g = group ? getgrgid((gid_t)id) : NULL;

	if (p)
		strfmt(out, len, "%s", p->pw_name);
	else if (g)
		strfmt(out, len, "%s", g->gr_name);
	else
		strfmt(out, len, "%u", id);
}

static void print_entry(const struct opts *o, const char *name,
			const struct rpfs_stat *st)
{
	char mode[11], when[32], size[32], user[64], group[64];
	struct tm tm;
	time_t t;

	if (!o->longfmt) {
		printf("%s\n", name);
		return;
	}
	t = (time_t)(st->mtime / 1000000000);
	mode_string(st, mode);
	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
	size_str(o, st->size, size, sizeof(size));
	owner_name(st->uid, false, user, sizeof(user));
	owner_name(st->gid, true, group, sizeof(group));
	printf("%s %-8s %-8s %12s %s %s%s\n", mode, user, group, size, when, name,
	       st->type == RPFS_TYPE_DIR ? "/" : "");
}

struct ls {
	const struct opts *o;
	rpfs_client_t *c;
	bool headers; /* "PATH:" before each directory's entries */
	bool blank;   /* something is printed: a blank line before the next header */
	int failed;
};

/* A directory's entries (and with -R those of the directories below). */
static void ls_dir(struct ls *l, const char *path)
{
	struct names nm;
	bool *dir;
	int ret = list_names(l->c, path, &nm);

	if (ret) {
		report("ls", path, ret);
		l->failed = 1;
		return;
	}
	if (l->headers)
		printf("%s%s:\n", l->blank ? "\n" : "", path);
	l->blank = true;
	dir = calloc(nm.n + 1, sizeof(*dir));
	if (!dir)
		die("out of memory");
	for (size_t i = 0; i < nm.n; i++) {
		char full[PATH_MAX];
		struct rpfs_stat st;

		if (!l->o->longfmt && !l->o->recursive) {
			print_entry(l->o, nm.v[i], NULL);
			continue;
		}
		join(full, sizeof(full), path, nm.v[i]);
		ret = rpfs_stat(l->c, full, &st);
		if (ret == -ENOENT) /* removed meanwhile */
			continue;
		if (ret) {
			report("ls", full, ret);
			l->failed = 1;
			continue;
		}
		dir[i] = st.type == RPFS_TYPE_DIR;
		print_entry(l->o, nm.v[i], &st);
	}
	for (size_t i = 0; i < nm.n && l->o->recursive; i++) {
		char full[PATH_MAX];

		if (!dir[i])
			continue;
		join(full, sizeof(full), path, nm.v[i]);
		ls_dir(l, full);
	}
	free(dir);
	names_free(&nm);
}

/* ls PATH...: the files (and with -d the directories) first, by the
 * names given, sorted; then each directory's entries, under a header
 * where there are several operands or -R. */
int cmd_ls(const struct opts *o, int argc, char **argv)
{
	struct ls l = {o, connect_cluster(o), o->recursive || argc > 2, false, 0};
	char **paths = calloc((size_t)argc + 1, sizeof(*paths));
	bool *isdir = calloc((size_t)argc + 1, sizeof(*isdir));
	int n = argc > 1 ? argc - 1 : 1;

	if (!paths || !isdir)
		die("out of memory");
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];

		rpath(argc > 1 ? argv[i + 1] : "/", path, sizeof(path));
		paths[i] = strdup(path);
		if (!paths[i])
			die("out of memory");
	}
	qsort(paths, (size_t)n, sizeof(*paths), cmp_names);
	for (int i = 0; i < n; i++) {
		struct rpfs_stat st;
		int ret = rpfs_stat(l.c, paths[i], &st);

		if (ret) {
			report("ls", paths[i], ret);
			l.failed = 1;
			free(paths[i]);
			paths[i] = NULL;
			continue;
		}
		isdir[i] = st.type == RPFS_TYPE_DIR && !o->directory;
		if (!isdir[i]) {
			print_entry(o, paths[i], &st);
			l.blank = true;
		}
	}
	for (int i = 0; i < n; i++) {
		if (paths[i] && isdir[i])
			ls_dir(&l, paths[i]);
		free(paths[i]);
	}
	free(paths);
	free(isdir);
	rpfs_finalize(l.c);
	return l.failed;
}

/* ---- stat --------------------------------------------------------------- */

static void fmt_time(int64_t ns, char *out, size_t len)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	size_t n;

	localtime_r(&t, &tm);
	n = strftime(out, len, "%Y-%m-%d %H:%M:%S", &tm);
	strfmt(out + n, len - n, ".%09lld", (long long)(ns % 1000000000));
}

/* Copies of each slot a redundancy asks for (mirror:N: N; else 1). */
static int spec_copies(const char *spec)
{
	int n;

	return spec && sscanf(spec, "mirror:%d", &n) == 1 && n > 1 ? n : 1;
}

/* The I/O servers of each copy of a mirror's slots: "  copy C of slot K:
 * io server ..." (copy 0 is the slot itself, printed above it). */
static void print_copies(rpfs_client_t *c, const struct rpfs_stat *st, const char *red,
			 rpfs_admin_config_t *cfg)
{
	int copies = spec_copies(red);
	uint32_t *io = calloc(st->stripe_count ? st->stripe_count : 1, sizeof(*io));

	if (!io)
		return;
	for (int k = 1; k < copies; k++) {
		if (rpfs_copy_servers(c, st, red, (uint32_t)k, io)) {
			printf("  copies: %s\n", rpfs_errmsg());
			break;
		}
		for (uint32_t s = 0; s < st->stripe_count; s++) {
			struct rpfs_stat one = *st;
			struct rpfs_server_info si;

			/* the server of a copy: slot 0 of a layout starting there */
			one.first_server = io[s];
			if (rpfs_admin_slot_server(cfg, &one, 0, &si) < 0)
				printf("  copy %d of slot %u: io server %u\n", k, s,
				       io[s]);
			else
				printf("  copy %d of slot %u: io server %u (%s:%d)\n", k,
				       s, io[s], si.address, si.port);
		}
	}
	free(io);
}

/* The I/O servers of an ec:K+P file's parity slots: "  parity J of group
 * G: io server ...". Group g is data slots g*K .. g*K+K-1 (printed above);
 * its parity slots follow every data slot, P a group (layout_ec.c). */
static void print_parity(const struct rpfs_stat *st, const char *red,
			 rpfs_admin_config_t *cfg)
{
	unsigned k, p;

	if (sscanf(red, "ec:%u+%u", &k, &p) != 2 || !k || st->stripe_count % k)
		return;
	for (uint32_t g = 0; g < st->stripe_count / k; g++)
		for (uint32_t j = 0; j < p; j++) {
			struct rpfs_stat one = *st;
			struct rpfs_server_info si;
			int io;

			/* the slot in a plain layout over all of the file's slots */
			one.stripe_count = st->stripe_count / k * (k + p);
			io = rpfs_admin_slot_server(cfg, &one,
						    st->stripe_count + g * p + j, &si);
			if (io < 0) {
				printf("  parity: %s\n", rpfs_errmsg());
				return;
			}
			printf("  parity %u of group %u: io server %d (%s:%d)\n", j, g,
			       io, si.address, si.port);
		}
}

static void print_stat(rpfs_client_t *c, const char *path, const struct rpfs_stat *st,
		       const char *red, rpfs_admin_config_t *cfg)
{
	char mode[11], t[64];

	mode_string(st, mode);
	printf("  path: %s\n", path);
	printf("  type: %s\n", st->type == RPFS_TYPE_DIR ? "directory" : "file");
	printf("  mode: %04o (%s)  uid %u  gid %u\n", st->mode & 07777, mode, st->uid,
	       st->gid);
	if (st->type != RPFS_TYPE_DIR)
		printf("  size: %llu\n", (unsigned long long)st->size);
	printf("handle: 0x%016llx\n", (unsigned long long)st->handle);
	fmt_time(st->mtime, t, sizeof(t));
	printf(" mtime: %s\n", t);
	fmt_time(st->ctime, t, sizeof(t));
	printf(" ctime: %s\n", t);
	if (st->type == RPFS_TYPE_DIR) {
		if (red[0] && strcmp(red, "default"))
			printf("redundancy: %s (of new files)\n", red);
		return;
	}
	printf("layout: stripe unit %llu, stripe count %u, first server %u\n",
	       (unsigned long long)st->stripe_unit, st->stripe_count, st->first_server);
	if (red[0])
		printf("redundancy: %s\n", red);
	for (uint32_t k = 0; k < st->stripe_count; k++) {
		struct rpfs_server_info si;
		int io = rpfs_admin_slot_server(cfg, st, k, &si);

		if (io < 0) {
			printf("  slots: %s\n", rpfs_errmsg());
			break;
		}
		printf("  slot %u: io server %d (%s:%d)\n", k, io, si.address, si.port);
	}
	if (spec_copies(red) > 1)
		print_copies(c, st, red, cfg);
	if (!strncmp(red, "ec:", 3))
		print_parity(st, red, cfg);
}

int cmd_stat(const struct opts *o, int argc, char **argv)
{
	rpfs_client_t *c = connect_cluster(o);
	rpfs_admin_config_t *cfg = cli_load_config(config_path(o));
	int failed = 0;

	for (int i = 1; i < argc; i++) {
		char path[PATH_MAX], red[RPFS_REDUNDANCY_MAX];
		struct rpfs_stat st;
		int ret;

		rpath(argv[i], path, sizeof(path));
		ret = rpfs_stat(c, path, &st);
		if (ret) {
			report("stat", path, ret);
			failed = 1;
			continue;
		}
		/* a stat and a lookup: the redundancy is not in rpfs_stat */
		if (rpfs_stat_redundancy(c, path, red, sizeof(red)))
			red[0] = 0;
		print_stat(c, path, &st, red, cfg);
	}
	rpfs_admin_config_free(cfg);
	rpfs_finalize(c);
	return failed;
}

/* ---- mkdir, rmdir, rm --------------------------------------------------- */

static uint32_t current_umask(void)
{
	mode_t m = umask(0);

	umask(m);
	return (uint32_t)m;
}

/* mkdir -p: each missing component, the last with mode; an existing
 * directory is no error, anything else there is. */
static int mkdir_parents(rpfs_client_t *c, const char *path, uint32_t mode)
{
	char part[PATH_MAX];
	const char *p = path;

	while (*p) {
		struct rpfs_stat st;
		const char *slash = strchr(p + 1, '/');
		bool last = !slash, existed;
		int ret;

		p = slash ? slash : p + strlen(p);
		strfmt(part, sizeof(part), "%.*s", (int)(p - path), path);
		if (!strcmp(part, "/"))
			continue;
		ret = rpfs_mkdir(c, part, last ? mode : 0755);
		existed = ret == -EEXIST;
		if (existed)
			ret = rpfs_stat(c, part, &st);
		if (existed && !ret && st.type != RPFS_TYPE_DIR) {
			fprintf(stderr, "rpfs mkdir: %s: exists and is not a directory\n",
				part);
			return 1;
		}
		if (ret) {
			report("mkdir", part, ret);
			return 1;
		}
	}
	return 0;
}

int cmd_mkdir(const struct opts *o, int argc, char **argv)
{
	uint32_t mode = 0755;
	rpfs_client_t *c;
	int failed = 0;

	/* -m: a symbolic mode applies to a=rwx, as mkdir(1) does. */
	if (o->mode && mode_apply(o->mode, 0777, true, current_umask(), &mode))
		usage_error(argv[0], "invalid mode '%s'", o->mode);
	c = connect_cluster(o);
	for (int i = 1; i < argc; i++) {
		char path[PATH_MAX];
		int ret;

		rpath(argv[i], path, sizeof(path));
		if (o->parents) {
			failed |= mkdir_parents(c, path, mode);
			continue;
		}
		ret = rpfs_mkdir(c, path, mode);
		if (ret) {
			report("mkdir", path, ret);
			failed = 1;
		}
	}
	rpfs_finalize(c);
	return failed;
}

/* rmdir -p: the directory, then each parent up to (not) /. */
int cmd_rmdir(const struct opts *o, int argc, char **argv)
{
	rpfs_client_t *c = connect_cluster(o);
	int failed = 0;

	for (int i = 1; i < argc; i++) {
		char path[PATH_MAX];

		rpath(argv[i], path, sizeof(path));
		for (;;) {
			char *slash;
			int ret = rpfs_rmdir(c, path);

			if (ret) {
				report("rmdir", path, ret);
				failed = 1;
				break;
			}
			slash = strrchr(path, '/');
			if (!o->parents || !slash || slash == path)
				break;
			*slash = 0;
		}
	}
	rpfs_finalize(c);
	return failed;
}

/* Remove path; with -r a directory with everything below it, entries
 * first. 0, or 1 when something was not removed (said). */
static int rm_path(const struct opts *o, rpfs_client_t *c, const char *path)
{
	struct names nm;
	int ret = rpfs_remove(c, path), failed = 0;

	if (!ret || (ret == -ENOENT && o->force))
		return 0;
	if (ret != -EISDIR) {
		report("rm", path, ret);
		return 1;
	}
	if (!o->recursive) {
		fprintf(stderr,
			"rpfs rm: %s: Is a directory (rm -r removes it and all below)\n",
			path);
		return 1;
	}
	ret = list_names(c, path, &nm);
	if (ret) {
		report("rm", path, ret);
		return 1;
	}
	for (size_t i = 0; i < nm.n; i++) {
		char child[PATH_MAX];

		join(child, sizeof(child), path, nm.v[i]);
		failed |= rm_path(o, c, child);
	}
	names_free(&nm);
	if (failed) /* said why already; the directory is not empty */
		return 1;
	ret = rpfs_rmdir(c, path);
	if (ret && !(ret == -ENOENT && o->force)) {
		report("rm", path, ret);
		return 1;
	}
	return 0;
}

int cmd_rm(const struct opts *o, int argc, char **argv)
{
	rpfs_client_t *c;
	int failed = 0;

	if (argc < 2) /* rm -f with no operand: nothing to do */
		return 0;
	c = connect_cluster(o);
	for (int i = 1; i < argc; i++) {
		char path[PATH_MAX];

		rpath(argv[i], path, sizeof(path));
		if (o->recursive && !strcmp(path, "/")) {
			fprintf(stderr, "rpfs rm: refusing to remove '/' recursively\n");
			failed = 1;
			continue;
		}
		failed |= rm_path(o, c, path);
	}
	rpfs_finalize(c);
	return failed;
}

/* ---- chmod, chown: one change to each path, with -R to the trees ------- */

struct change {
	const struct opts *o;
	rpfs_client_t *c;
	const char *cmd;
	/* the change to one entry (attributes st): 0 or -errno */
	int (*fn)(struct change *ch, const char *path, const struct rpfs_stat *st);
	const char *mode; /* chmod */
	uint32_t umask_bits;
	long uid, gid; /* chown, -1: keep */
};

/* The change to path, and with -R below it. 0, or 1 if any failed (said). */
static int change_tree(struct change *ch, const char *path)
{
	struct rpfs_stat st;
	struct names nm;
	int ret = rpfs_stat(ch->c, path, &st), failed = 0;

	if (!ret)
		ret = ch->fn(ch, path, &st);
	if (ret) {
		report(ch->cmd, path, ret);
		return 1;
	}
	if (!ch->o->recursive || st.type != RPFS_TYPE_DIR)
		return 0;
	ret = list_names(ch->c, path, &nm);
	if (ret) {
		report(ch->cmd, path, ret);
		return 1;
	}
	for (size_t i = 0; i < nm.n; i++) {
		char child[PATH_MAX];

		join(child, sizeof(child), path, nm.v[i]);
		failed |= change_tree(ch, child);
	}
	names_free(&nm);
	return failed;
}

static int change_all(struct change *ch, int argc, char **argv, int first)
{
	int failed = 0;

	ch->c = connect_cluster(ch->o);
	for (int i = first; i < argc; i++) {
		char path[PATH_MAX];

		rpath(argv[i], path, sizeof(path));
		failed |= change_tree(ch, path);
	}
	rpfs_finalize(ch->c);
	return failed;
}

static int chmod_one(struct change *ch, const char *path, const struct rpfs_stat *st)
{
	uint32_t mode;

	if (mode_apply(ch->mode, st->mode, st->type == RPFS_TYPE_DIR, ch->umask_bits,
		       &mode))
		return -EINVAL; /* checked before: not reached */
	return rpfs_chmod(ch->c, path, mode);
}

/* chmod [-R] MODE PATH...: octal or symbolic (cli_mode.c). */
int cmd_chmod(const struct opts *o, int argc, char **argv)
{
	struct change ch = {.o = o, .cmd = "chmod", .fn = chmod_one, .mode = argv[1]};

	if (!mode_valid(argv[1]))
		usage_error(argv[0], "invalid mode '%s'", argv[1]);
	ch.umask_bits = current_umask();
	return change_all(&ch, argc, argv, 2);
}
/* ---- setstripe / getstripe ---------------------------------------------- */

/* The layout the options ask for, checked against the cluster: COUNT
 * 1..the I/O servers, -1 all of them, 0 (or left out) the default; START
 * one of the I/O servers, -1 any. Never clamped: a count the cluster cannot
 * give is an error that says its limits. */
static void stripe_layout(const struct opts *o, rpfs_client_t *c,
			  struct rpfs_create_opts *co)
{
	int nio = rpfs_num_io_servers(c), copies = spec_copies(o->redundancy);

	co->stripe_unit = o->stripe_unit;
	co->stripe_count = 0;
	co->first_server = -1;
	if (o->count_set && o->count > nio)
		usage_error(
			"setstripe",
			"stripe count %ld: the cluster has %d I/O server%s (1..%d, -1 "
			"for all, 0 for the default)",
			o->count, nio, nio == 1 ? "" : "s", nio);
	if (o->count_set)
		co->stripe_count =
			o->count < 0 ? (uint32_t)(nio / copies) : (uint32_t)o->count;
	if (o->start_set && o->start >= nio)
		usage_error("setstripe",
			    "stripe index %ld: the cluster's I/O servers are 0..%d (-1: "
			    "any)",
			    o->start, nio - 1);
	co->first_server = o->start_set ? (int32_t)o->start : -1;
}

int cmd_setstripe(const struct opts *o, int argc, char **argv)
{
	struct rpfs_create_opts co;
	char path[PATH_MAX];
	struct rpfs_stat st;
	rpfs_client_t *c;
	int ret;

	(void)argc;
	rpath(argv[1], path, sizeof(path));
	c = connect_cluster(o);
	stripe_layout(o, c, &co);
	ret = rpfs_stat(c, path, &st);
	if (ret == -ENOENT) {
		/* A new file with this layout, as lfs setstripe does. */
		rpfs_file_t *f;

		ret = rpfs_create_redundancy(c, path, 0644, RPFS_O_EXCL | RPFS_O_WRITE,
					     &co, o->redundancy, &f);
		if (ret) {
			report("setstripe", path, ret);
			return 1;
		}
		rpfs_close(f);
	} else if (ret) {
		report("setstripe", path, ret);
		return 1;
	} else if (st.type != RPFS_TYPE_DIR) {
		fprintf(stderr,
			"rpfs setstripe: %s: an existing file's layout is fixed (give a "
			"directory, or a new file's path)\n",
			path);
		return 1;
	} else if (co.first_server >= 0) {
		fprintf(stderr,
			"rpfs setstripe: %s: -i is for a new file (a directory's default "
			"layout has no first server)\n",
			path);
		return 1;
	} else if ((ret = rpfs_setstripe_redundancy(c, path, co.stripe_unit,
						    co.stripe_count, o->redundancy))) {
		report("setstripe", path, ret);
		return 1;
	}
	rpfs_finalize(c);
	return 0;
}

/* A mirror's copies: "PATH: copy C: io servers A B ..." (copy 0 is
 * first_server on). */
static void print_getstripe_copies(rpfs_client_t *c, const char *path,
				   const struct rpfs_stat *st, const char *red)
{
	uint32_t *io;

	if (spec_copies(red) < 2)
		return;
	io = calloc(st->stripe_count ? st->stripe_count : 1, sizeof(*io));
	if (!io)
		return;
	for (int k = 0; k < spec_copies(red); k++) {
		if (rpfs_copy_servers(c, st, red, (uint32_t)k, io))
			break;
		printf("%s: copy %d: io servers", path, k);
		for (uint32_t s = 0; s < st->stripe_count; s++)
			printf(" %u", io[s]);
		printf("\n");
	}
	free(io);
}

int cmd_getstripe(const struct opts *o, int argc, char **argv)
{
	rpfs_client_t *c = connect_cluster(o);
	int failed = 0;

	for (int i = 1; i < argc; i++) {
		char path[PATH_MAX], u[32], n[32], red[RPFS_REDUNDANCY_MAX];
		struct rpfs_stat st;
		int ret;

		rpath(argv[i], path, sizeof(path));
		ret = rpfs_stat(c, path, &st);
		if (!ret)
			ret = rpfs_stat_redundancy(c, path, red, sizeof(red));
		if (ret) {
			report("getstripe", path, ret);
			failed = 1;
			continue;
		}
		if (st.stripe_unit)
			strfmt(u, sizeof(u), "%llu", (unsigned long long)st.stripe_unit);
		else
			strfmt(u, sizeof(u), "default");
		if (st.stripe_count)
			strfmt(n, sizeof(n), "%u", st.stripe_count);
		else
			strfmt(n, sizeof(n), "default");
		if (st.type == RPFS_TYPE_DIR) {
			printf("%s: new files: stripe_unit %s stripe_count %s\n", path, u,
			       n);
			/* a directory without one of its own: the cluster's */
			if (strcmp(red, "default"))
				printf("%s: new files: redundancy %s\n", path, red);
			continue;
		}
		printf("%s: stripe_unit %s stripe_count %s first_server %u\n", path, u, n,
		       st.first_server);
		printf("%s: redundancy %s\n", path, red);
		print_getstripe_copies(c, path, &st, red);
	}
	rpfs_finalize(c);
	return failed;
}

/* ---- verify --------------------------------------------------------------- */

/* Verify one file (repair: have its differing copies rewritten and wait
 * for it). 0, or 1 when it failed (said). */
static int verify_file(const struct opts *o, rpfs_client_t *c, const char *path)
{
	char red[RPFS_REDUNDANCY_MAX];
	uint64_t checked, where;
	uint32_t marked = 0;
	rpfs_file_t *f;
	int ret;

	ret = rpfs_open(c, path, o->repair ? RPFS_O_RDWR : RPFS_O_READ, &f);
	if (ret) {
		report("verify", path, ret);
		return 1;
	}
	ret = rpfs_file_redundancy(f, red, sizeof(red));
	if (!ret)
		ret = rpfs_verify(f, &checked, &where);
	if (ret == -EILSEQ && o->repair) {
		fprintf(stderr, "rpfs verify: %s\n", rpfs_errmsg());
		ret = rpfs_mirror_repair(f, &marked);
		if (!ret && !strncmp(red, "ec:", 3))
			printf("%s: %u parity member%s re-encoded from the data\n", path,
			       marked, marked == 1 ? "" : "s");
		else if (!ret)
			printf("%s: %u cop%s rewritten from %s primary\n", path, marked,
			       marked == 1 ? "y" : "ies", marked == 1 ? "its" : "their");
		/* the resync runs in the background: the copy is stale
		 * until it ends (10 minutes at most) */
		for (int i = 0; !ret; i++) {
			ret = rpfs_verify(f, &checked, &where);
			if (ret != -ESTALE || i == 6000)
				break;
			ret = 0;
			usleep(100000);
		}
	}
	if (ret) {
		report("verify", path, ret);
	} else if (!strncmp(red, "mirror:", 7)) {
		printf("%s: %s, copies agree (%llu bytes read)\n", path, red,
		       (unsigned long long)checked);
	} else if (!strncmp(red, "ec:", 3)) {
		printf("%s: %s, parity agrees with the data (%llu bytes read)\n", path,
		       red, (unsigned long long)checked);
	} else {
		printf("%s: %s, no copies to compare\n", path, red);
	}
	rpfs_close(f);
	return ret ? 1 : 0;
}

/* A path: a file, or with -r a directory's files and those below. */
static int verify_path(const struct opts *o, rpfs_client_t *c, const char *path)
{
	struct rpfs_stat st;
	struct names nm = {0};
	int ret, failed = 0;

	if (!o->recursive)
		return verify_file(o, c, path);
	ret = rpfs_stat(c, path, &st);
	if (ret) {
		report("verify", path, ret);
		return 1;
	}
	if (st.type != RPFS_TYPE_DIR)
		return verify_file(o, c, path);
	ret = list_names(c, path, &nm);
	if (ret) {
		report("verify", path, ret);
		return 1;
	}
	for (size_t i = 0; i < nm.n; i++) {
		char sub[PATH_MAX];

		join(sub, sizeof(sub), path, nm.v[i]);
		failed |= verify_path(o, c, sub);
	}
	names_free(&nm);
	return failed;
}

int cmd_verify(const struct opts *o, int argc, char **argv)
{
	rpfs_client_t *c = connect_cluster(o);
	int failed = 0;

	for (int i = 1; i < argc; i++) {
		char path[PATH_MAX];

		rpath(argv[i], path, sizeof(path));
		failed |= verify_path(o, c, path);
	}
	rpfs_finalize(c);
	return failed;
}

/* ---- mv ----------------------------------------------------------------- */

/* Rename, or where rpfs_rename says -EXDEV (the paths live on different
 * metadata servers), copy and remove as mv(1) does across file systems: a
 * directory entry by entry, each entry moved the same way. 0, or 1 when
 * something failed (said; what was not moved stays at from). */
static int move_tree(rpfs_client_t *c, const char *from, const char *to)
{
	struct names nm = {0};
	struct rpfs_stat st;
	const char *side;
	int ret = rpfs_rename(c, from, to), failed = 0;

	if (ret != -EXDEV) {
		if (ret)
			report("mv", from, ret);
		return ret ? 1 : 0;
	}
	ret = rpfs_stat(c, from, &st);
	if (ret) {
		report("mv", from, ret);
		return 1;
	}
	if (st.type != RPFS_TYPE_DIR) {
		ret = copy_within(c, from, to, &st, &side);
		if (ret) {
			report("mv", side, ret);
			return 1;
		}
	} else {
		ret = rpfs_mkdir(c, to, st.mode);
		if (!ret || ret == -EEXIST)
			ret = list_names(c, from, &nm);
		if (ret) {
			report("mv", ret == -EEXIST ? to : from, ret);
			return 1;
		}
		for (size_t i = 0; i < nm.n; i++) {
			char f[PATH_MAX], t[PATH_MAX];

			join(f, sizeof(f), from, nm.v[i]);
			join(t, sizeof(t), to, nm.v[i]);
			failed |= move_tree(c, f, t);
		}
		names_free(&nm);
		if (failed)
			return 1;
	}
	if (geteuid() == 0)
		(void)rpfs_chown(c, to, st.uid, st.gid);
	ret = st.type == RPFS_TYPE_DIR ? rpfs_rmdir(c, from) : rpfs_remove(c, from);
	if (ret) {
		report("mv", from, ret);
		return 1;
	}
	return 0;
}

/* mv SRC DST, or SRC... DIR: into an existing directory as mv does. */
int cmd_mv(const struct opts *o, int argc, char **argv)
{
	char dst[PATH_MAX];
	struct rpfs_stat st;
	rpfs_client_t *c;
	bool into;
	int failed = 0;

	rpath(argv[argc - 1], dst, sizeof(dst));
	c = connect_cluster(o);
	into = !rpfs_stat(c, dst, &st) && st.type == RPFS_TYPE_DIR;
	if (argc > 3 && !into) {
		fprintf(stderr, "rpfs mv: target %s is not a directory (%d sources)\n",
			dst, argc - 2);
		rpfs_finalize(c);
		return 1;
	}
	for (int i = 1; i < argc - 1; i++) {
		char from[PATH_MAX], to[PATH_MAX];

		rpath(argv[i], from, sizeof(from));
		if (into && strcmp(from, dst))
			join(to, sizeof(to), dst, base_name(from));
		else
			strfmt(to, sizeof(to), "%s", dst);
		failed |= move_tree(c, from, to);
	}
	rpfs_finalize(c);
	return failed;
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

static int chown_one(struct change *ch, const char *path, const struct rpfs_stat *st)
{
	return rpfs_chown(ch->c, path, ch->uid < 0 ? st->uid : (uint32_t)ch->uid,
			  ch->gid < 0 ? st->gid : (uint32_t)ch->gid);
}

/* USER, USER:GROUP, USER: (the user's login group) or :GROUP; a part left
 * out keeps each file's own. */
int cmd_chown(const struct opts *o, int argc, char **argv)
{
	struct change ch = {
		.o = o, .cmd = "chown", .fn = chown_one, .uid = -1, .gid = -1};
	char spec[256], *colon;

	strfmt(spec, sizeof(spec), "%s", argv[1]);
	colon = strchr(spec, ':');
	if (colon)
		*colon = 0;
	if (spec[0] && (ch.uid = id_of(spec, false)) < 0)
		die("chown: no user '%s'", spec);
	if (colon && colon[1] && (ch.gid = id_of(colon + 1, true)) < 0)
		die("chown: no group '%s'", colon + 1);
	if (colon && !colon[1] && spec[0]) {
		struct passwd *p = getpwuid((uid_t)ch.uid);

		if (!p)
			die("chown: user %ld has no login group", ch.uid);
		ch.gid = (long)p->pw_gid;
	}
	if (ch.uid < 0 && ch.gid < 0)
		usage_error(argv[0], "'%s' names no user and no group", argv[1]);
	return change_all(&ch, argc, argv, 2);
}

/* ---- du / find ---------------------------------------------------------- */

/* Walk the tree under path (attributes st) depth first, names sorted:
 * visit(path, st, depth, arg) before the children; after(path, bytes,
 * depth, arg) with the bytes of the files below, once they are done. What
 * cannot be listed or stat'ed is said and skipped (failed set). */
struct walk {
	rpfs_client_t *c;
	const char *cmd;
	void (*visit)(const char *path, const struct rpfs_stat *st, int depth, void *arg);
	void (*after)(const char *path, uint64_t bytes, int depth, void *arg);
	void *arg;
	int failed;
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
	if (ret) {
		report(w->cmd, path, ret);
		w->failed = 1;
	}
	for (size_t i = 0; !ret && i < nm.n; i++) {
		char child[PATH_MAX];
		struct rpfs_stat cst;
		int r;

		join(child, sizeof(child), path, nm.v[i]);
		r = rpfs_stat(w->c, child, &cst);
		if (r == -ENOENT) /* removed meanwhile */
			continue;
		if (r) {
			report(w->cmd, child, r);
			w->failed = 1;
			continue;
		}
		bytes += walk(w, child, &cst, depth + 1);
	}
	if (!ret)
		names_free(&nm);
	if (w->after)
		w->after(path, bytes, depth, w->arg);
	return bytes;
}

static void du_print(const struct opts *o, const char *path, uint64_t bytes)
{
	char s[32];

	size_str(o, bytes, s, sizeof(s));
	printf("%s\t%s\n", s, path);
}

static void du_after(const char *path, uint64_t bytes, int depth, void *arg)
{
	const struct opts *o = arg;

	if (!o->summary || depth == 0)
		du_print(o, path, bytes);
}

/* Logical bytes (the files' sizes) of each directory below PATH and of
 * PATH, or with -s of PATH only; -h in KiB, MiB, ... */
int cmd_du(const struct opts *o, int argc, char **argv)
{
	struct walk w = {connect_cluster(o), "du", NULL, du_after, (void *)o, 0};

	for (int i = 1; i < (argc > 1 ? argc : 2); i++) {
		char path[PATH_MAX];
		struct rpfs_stat st;
		int ret;

		rpath(i < argc ? argv[i] : "/", path, sizeof(path));
		ret = rpfs_stat(w.c, path, &st);
		if (ret) {
			report("du", path, ret);
			w.failed = 1;
		} else if (st.type != RPFS_TYPE_DIR) {
			du_print(o, path, st.size);
		} else {
			walk(&w, path, &st, 0);
		}
	}
	rpfs_finalize(w.c);
	return w.failed;
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

/* find [PATH...] [-name GLOB] [-type f|d]: every entry under each PATH
 * (itself too) that matches, one path per line, depth first, names
 * sorted. The expression is find's, not options (rpfs.c passes it as is). */
int cmd_find(const struct opts *o, int argc, char **argv)
{
	struct find_arg f = {NULL, 0};
	struct walk w = {NULL, "find", find_visit, NULL, &f, 0};
	int i = 1, npaths;

	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	while (i < argc && (argv[i][0] != '-' || !argv[i][1]))
		i++;
	npaths = i - 1;
	for (; i < argc; i += 2) {
		if (!strcmp(argv[i], "-name") || !strcmp(argv[i], "-type")) {
			if (i + 1 >= argc)
				usage_error(argv[0], "%s needs an argument", argv[i]);
		} else {
			usage_error(argv[0],
				    "unknown expression '%s' (-name GLOB, -type f|d)",
				    argv[i]);
		}
		if (!strcmp(argv[i], "-name"))
			f.name = argv[i + 1];
		else if (!strcmp(argv[i + 1], "f"))
			f.type = RPFS_TYPE_FILE;
		else if (!strcmp(argv[i + 1], "d"))
			f.type = RPFS_TYPE_DIR;
		else
			usage_error(argv[0], "-type %s: f (file) or d (directory)",
				    argv[i + 1]);
	}
	w.c = connect_cluster(o);
	for (int k = 1; k <= (npaths ? npaths : 1); k++) {
		char path[PATH_MAX];
		struct rpfs_stat st;
		int ret;

		if (!npaths)
			strfmt(path, sizeof(path), "/");
		else if (!strcmp(argv[k], "--"))
			continue;
		else
			rpath(argv[k], path, sizeof(path));
		ret = rpfs_stat(w.c, path, &st);
		if (ret) {
			report("find", path, ret);
			w.failed = 1;
			continue;
		}
		walk(&w, path, &st, 0);
	}
	rpfs_finalize(w.c);
	return w.failed;
}
