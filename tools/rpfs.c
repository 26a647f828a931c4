/* rpfs: the command-line tool.
 *
 * Two kinds of commands. `rpfs up` and `rpfs down` manage a local server
 * set on loopback: up writes a cluster config and key into a directory,
 * starts one rpfsd daemon per server and waits until each answers a ping;
 * down stops them through their pidfiles. The other commands (ls, stat,
 * mkdir, rmdir, rm, cp, cat, df, ping) are clients of any cluster through
 * librpfs; they find the config by --config, --dir, $RPFS_CONFIG, then the
 * default directory ($RPFS_DIR or ~/.rpfs). `rpfs settings` prints the
 * table of transport settings (params.h) with the values the config in use
 * gives them.
 *
 * The tool uses librpfs's public headers only: rpfs.h for files, and
 * rpfs_admin.h for the servers a config lists, the settings table and the
 * launcher of a local server set (shared with the integration tests).
 *
 * cp moves 8 MiB blocks with two in flight (rpfs_ipread/rpfs_ipwrite), so
 * reading block i overlaps writing block i-1 on either side.
 *
 * Errors print the library's message (rpfs_errmsg(), which names the
 * server and the cause) and exit with status 1. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "rpfs.h"
#include "rpfs_admin.h"

#define CP_BLOCK (8u << 20) /* cp/cat block */

struct opts {
	int nservers;
	int port;
	int longfmt;
	int markdown; /* settings */
	int human;    /* -h with ls, du, df: sizes in KiB, MiB, ... */
	int json;     /* stats --json */
	int help;     /* -h elsewhere, --help: this command's usage */
	const char *dir;
	const char *config;
	const char *address;  /* up: where the servers listen */
	const char *provider; /* up: written into the config's [transport] */
	uint64_t stripe_unit;
};

static const char usage_text[] =
	"usage: rpfs COMMAND [options] [args]\n"
	"\n"
	"Local server set (loopback):\n"
	"  up [-n N] [--dir D] [--port P] [--stripe-unit S] [--address A]\n"
	"     [--provider P]\n"
	"        write D/rpfs.conf and a cluster key, start N rpfsd daemons (default 2)\n"
	"        on address A (default 127.0.0.1; on a verbs device its IP address:\n"
	"        rdmacm cannot use loopback) at consecutive free ports from P\n"
	"        (default: the first free run from 7100), wait until each answers.\n"
	"        Server 0 has roles meta,io, the others io (a single server is\n"
	"        meta,io). Storage in D/s0, D/s1, ...; default D is $RPFS_DIR or\n"
	"        ~/.rpfs. --provider writes the libfabric provider into the config.\n"
	"  down [--dir D]       stop the servers started by up (SIGTERM, then SIGKILL)\n"
	"\n"
	"Client commands (paths are in rpfs; 'rpfs:' prefix optional):\n"
	"  ls [-l] [PATH]       list a directory\n"
	"  stat PATH            attributes and layout\n"
	"  mkdir PATH...        rmdir PATH...        rm PATH...\n"
	"  chmod MODE PATH...   change the permission bits (octal, e.g. 0640)\n"
	"  cp SRC DST           copy; mark the rpfs side(s) with 'rpfs:/path'\n"
	"  mv SRC DST           rename (into DST if it is a directory); atomic on\n"
	"                       one metadata server, else copied and removed\n"
	"  cat PATH             write a file to stdout\n"
	"  setstripe [-c COUNT] [-S UNIT] DIR|NEWFILE\n"
	"                       a directory's default layout for new files (and\n"
	"                       new subdirectories); a new file with that layout\n"
	"  getstripe PATH       a file's layout, a directory's default\n"
	"  df [-h]              each server's own answer: size, used, available\n"
	"                       (I/O servers), files (metadata servers); total\n"
	"  stats [--json]       each server's counters: requests by op, bytes by\n"
	"                       path, waits, caches, errors, connections\n"
	"  ping                 round trip to every server\n"
	"\n"
	"  settings [--markdown]\n"
	"        every transport setting: name, type, default, range, whether a\n"
	"        client may set it (rpfs_init_opts, MPI hints rpfs_<name>), help,\n"
	"        and its value and source (default, config, environment) in the\n"
	"        config in use; --markdown: the table alone, as the README has it\n"
	"\n"
	"The config comes from --config FILE, --dir D (D/rpfs.conf), $RPFS_CONFIG,\n"
	"then $RPFS_DIR/rpfs.conf or ~/.rpfs/rpfs.conf.\n";

static void usage(FILE *to, int status)
{
	fputs(usage_text, to);
	exit(status);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("rpfs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* Report a failed library call: the errno text and the library's message,
 * which names the server and cause. */
static void die_rpfs(int err, const char *what, const char *path)
{
	const char *m = rpfs_errmsg();

	if (m && *m)
		die("%s %s: %s (%s)", what, path ? path : "", strerror(-err), m);
	die("%s %s: %s", what, path ? path : "", strerror(-err));
}

/* snprintf for paths and names: a result that does not fit is an error,
 * never a silently shortened path. */
static int fmt(char *out, size_t len, const char *f, ...)
	__attribute__((format(printf, 3, 4)));
static int fmt(char *out, size_t len, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(out, len, f, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len)
		die("name too long: %s...", out);
	return n;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- directories, config ------------------------------------------------ */

static const char *default_dir(void)
{
	static char buf[PATH_MAX];
	const char *d = getenv("RPFS_DIR");
	const char *home = getenv("HOME");

	if (d && *d)
		return d;
	fmt(buf, sizeof(buf), "%s/.rpfs", home && *home ? home : ".");
	return buf;
}

/* Explicit options win over the environment. */
static const char *config_path(const struct opts *o)
{
	static char buf[PATH_MAX];
	const char *env = getenv("RPFS_CONFIG");

	if (o->config)
		return o->config;
	if (!o->dir && env && *env)
		return env;
	fmt(buf, sizeof(buf), "%s/rpfs.conf", o->dir ? o->dir : default_dir());
	return buf;
}

static rpfs_client_t *connect_cluster(const struct opts *o)
{
	const char *path = config_path(o);
	rpfs_client_t *c;
	int ret;

	if (access(path, R_OK))
		die("no cluster config at %s (start one with `rpfs up`, or give --config)",
		    path);
	ret = rpfs_init(path, &c);
	if (ret)
		die_rpfs(ret, "init with config", path);
	return c;
}

static rpfs_admin_config_t *load_config(const char *path)
{
	rpfs_admin_config_t *cfg;

	if (rpfs_admin_config_load(path, &cfg))
		die("%s", rpfs_errmsg());
	return cfg;
}

/* The table of settings; with values and sources unless markdown. A config
 * that does not load leaves the defaults and the environment, said first. */
static int cmd_settings(const struct opts *o)
{
	const char *path = config_path(o);
	rpfs_admin_config_t *cfg = NULL;

	if (o->markdown) {
		rpfs_admin_settings_markdown(stdout);
		return 0;
	}
	if (rpfs_admin_config_load(path, &cfg))
		printf("config: none (%s): defaults and the environment\n\n",
		       *rpfs_errmsg() ? rpfs_errmsg() : path);
	else
		printf("config: %s\n\n", path);
	rpfs_admin_settings_print(stdout, cfg);
	rpfs_admin_config_free(cfg);
	return 0;
}

/* "rpfs:/a//b/../c" -> "/a/c": servers take normalized absolute paths. */
static void rpath(const char *in, char *out, size_t outlen)
{
	char tmp[PATH_MAX];
	char *save = NULL, *tok;
	size_t len = 0;

	if (!strncasecmp(in, "rpfs:", 5))
		in += 5;
	fmt(tmp, sizeof(tmp), "%s", in);
	out[0] = 0;
	for (tok = strtok_r(tmp, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (!strcmp(tok, "."))
			continue;
		if (!strcmp(tok, "..")) {
			char *slash = strrchr(out, '/');

			if (slash)
				*slash = 0;
			len = strlen(out);
			continue;
		}
		if (len + strlen(tok) + 2 > outlen)
			die("path too long: %s", in);
		len += (size_t)fmt(out + len, outlen - len, "/%s", tok);
	}
	if (!out[0])
		fmt(out, outlen, "/");
}

static int is_rpfs(const char *p)
{
	return !strncasecmp(p, "rpfs:", 5);
}

/* ---- up / down ---------------------------------------------------------- */

/* Why a start failed: the message, the failing server's log, and what was
 * done about it. */
static void up_failed(rpfs_launch_t *l, int ret, const char *dir)
{
	int bad = rpfs_launch_failed(l);
	struct rpfs_server_info si;

	if (ret == -EEXIST)
		die("%s (rpfs down --dir %s)", rpfs_errmsg(), dir);
	if (bad < 0 || ret == -EADDRINUSE)
		die("%s", rpfs_errmsg());
	fprintf(stderr, "rpfs: %s\n", rpfs_errmsg());
	rpfs_launch_print_log_tail(l, bad, stderr);
	if (ret == -ETIMEDOUT || rpfs_launch_server(l, bad, &si))
		die("up: stopped the other servers");
	die("up: server.%s (%s:%d) failed to start; stopped the others", si.name,
	    si.address, si.port);
}

static int cmd_up(const struct opts *o, int argc, char **argv)
{
	const char *d = o->dir ? o->dir : default_dir();
	struct rpfs_opt provider = {"provider", o->provider};
	struct rpfs_launch_opts lo = {
		.nservers = o->nservers,
		.address = o->address,
		.port = o->port,
		.stripe_unit = o->stripe_unit,
		.settings = &provider,
		.nsettings = o->provider ? 1 : 0,
		.mode = RPFS_LAUNCH_DAEMON,
	};
	char dir[PATH_MAX];
	rpfs_launch_t *l;
	int ret;

	if (argc > 1)
		lo.nservers = atoi(argv[1]); /* `rpfs up 4` also works */
	if (lo.nservers < 1 || lo.nservers > 256)
		die("up: the number of servers must be 1..256");
	if (mkdir(d, 0700) && errno != EEXIST)
		die("mkdir %s: %s", d, strerror(errno));
	if (!realpath(d, dir))
		die("%s: %s", d, strerror(errno));
	lo.dir = dir;
	if (rpfs_launch_new(&lo, &l))
		die("up: %s", rpfs_errmsg());
	ret = rpfs_launch_start(l);
	if (ret)
		up_failed(l, ret, dir);
	for (int i = 0; i < rpfs_launch_nservers(l); i++) {
		struct rpfs_server_info si;

		rpfs_launch_server(l, i, &si);
		printf("server.%s  %s:%d  %-8s %s\n", si.name, si.address, si.port,
		       si.roles & RPFS_ADMIN_ROLE_META ? "meta,io" : "io", si.dir);
	}
	printf("config: %s\n", rpfs_launch_config(l));
	printf("export RPFS_CONFIG=%s\n", rpfs_launch_config(l));
	rpfs_launch_free(l);
	return 0;
}

static int cmd_down(const struct opts *o)
{
	char dir[PATH_MAX];
	const char *d = o->dir ? o->dir : default_dir();
	int n;

	if (!realpath(d, dir)) {
		printf("no servers running in %s\n", d);
		return 0;
	}
	n = rpfs_launch_stop_dir(dir, stderr);
	if (n < 0)
		die("down: %s", rpfs_errmsg());
	if (n)
		printf("stopped %d server%s in %s\n", n, n == 1 ? "" : "s", dir);
	else
		printf("no servers running in %s\n", dir);
	return 0;
}

/* ---- namespace commands ------------------------------------------------- */

static void mode_string(const struct rpfs_stat *st, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";

	out[0] = st->type == RPFS_TYPE_DIR ? 'd' : '-';
	for (int i = 0; i < 9; i++)
		out[i + 1] = st->mode & (1u << (8 - i)) ? rwx[i] : '-';
	out[10] = 0;
}

struct names {
	char **v;
	size_t n, cap;
};

static int collect(const char *name, uint32_t type, void *arg)
{
	struct names *nm = arg;

	(void)type;
	if (nm->n == nm->cap) {
		size_t cap = nm->cap ? nm->cap * 2 : 64;
		char **v = realloc(nm->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		nm->v = v;
		nm->cap = cap;
	}
	nm->v[nm->n] = strdup(name);
	if (!nm->v[nm->n])
		return -ENOMEM;
	nm->n++;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void print_entry(const char *name, const struct rpfs_stat *st, int longfmt)
{
	char mode[11], when[32];
	time_t t = (time_t)(st->mtime / 1000000000);
	struct tm tm;

	if (!longfmt) {
		printf("%s%s\n", name, st && st->type == RPFS_TYPE_DIR ? "/" : "");
		return;
	}
	mode_string(st, mode);
	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
	printf("%s %5u %5u %12llu %s %s%s\n", mode, st->uid, st->gid,
	       (unsigned long long)st->size, when, name,
	       st->type == RPFS_TYPE_DIR ? "/" : "");
}

static int cmd_ls(const struct opts *o, int argc, char **argv)
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
		print_entry(path, &st, o->longfmt);
		rpfs_finalize(c);
		return 0;
	}
	ret = rpfs_readdir(c, path, collect, &nm);
	if (ret)
		die_rpfs(ret, "ls", path);
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
			print_entry(nm.v[i], &est, 1);
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

static int cmd_stat(const struct opts *o, int argc, char **argv)
{
	rpfs_admin_config_t *cfg;
	rpfs_client_t *c;
	char path[PATH_MAX], mode[11], t[64];
	struct rpfs_stat st;
	int ret;

	if (argc < 2)
		die("stat: which path?");
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

static int cmd_each(const struct opts *o, int argc, char **argv, const char *what)
{
	rpfs_client_t *c;
	char path[PATH_MAX];

	if (argc < 2)
		die("%s: which path?", what);
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

static int cmd_chmod(const struct opts *o, int argc, char **argv)
{
	rpfs_client_t *c;
	char path[PATH_MAX], *end;
	unsigned long mode;

	if (argc < 3)
		die("usage: rpfs chmod MODE PATH... (MODE in octal, e.g. 0640)");
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

static int cmd_setstripe(const struct opts *o, int argc, char **argv)
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
		die("usage: rpfs setstripe [-c COUNT] [-S UNIT] DIR|NEWFILE (COUNT >= 1, "
		    "UNIT > 0 with K/M/G)");
	}
	if (optind != argc - 1)
		die("usage: rpfs setstripe [-c COUNT] [-S UNIT] DIR|NEWFILE");
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

static int cmd_getstripe(const struct opts *o, int argc, char **argv)
{
	char path[PATH_MAX], u[32], n[32];
	struct rpfs_stat st;
	rpfs_client_t *c;
	int ret;

	if (argc != 2)
		die("usage: rpfs getstripe PATH");
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

/* ---- cp / cat ----------------------------------------------------------- */

struct endpoint {
	const char *name; /* for messages */
	rpfs_file_t *f;	  /* rpfs side, or NULL */
	int fd;		  /* local side */
};

struct slot {
	char *buf;
	size_t len;
	uint64_t off;
	rpfs_request_t *rd, *wr;
};

static ssize_t full_read(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static ssize_t full_write(int fd, const char *buf, size_t len)
{
	size_t put = 0;

	while (put < len) {
		ssize_t n = write(fd, buf + put, len - put);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		put += (size_t)n;
	}
	return (ssize_t)put;
}

static void progress(uint64_t done, uint64_t total, double t0)
{
	int width = 30, fill = total ? (int)(done * (uint64_t)width / total) : width;
	double secs = now_s() - t0;

	fprintf(stderr, "\r[%.*s%*s] %3d%%  %8.1f MB/s", fill,
		"##############################", width - fill, "",
		total ? (int)(done * 100 / total) : 100,
		secs > 0 ? done / secs / 1e6 : 0.0);
}

/* Start moving a slot: the read side (sync for local files). */
static int start_read(struct endpoint *src, struct slot *s)
{
	if (src->f)
		return rpfs_ipread(src->f, s->buf, s->len, s->off, &s->rd);
	ssize_t n = full_read(src->fd, s->buf, s->len);

	if (n < 0)
		return (int)n;
	return (size_t)n == s->len ? 0 : -EIO; /* the local file shrank */
}

static int finish_read(struct slot *s)
{
	ssize_t n = 0;

	if (s->rd) {
		n = rpfs_wait(s->rd);
		s->rd = NULL;
	}
	return n < 0 ? (int)n : 0;
}

static int start_write(struct endpoint *dst, struct slot *s)
{
	if (dst->f)
		return rpfs_ipwrite(dst->f, s->buf, s->len, s->off, &s->wr);
	ssize_t n = full_write(dst->fd, s->buf, s->len);

	return n < 0 ? (int)n : 0;
}

static int finish_write(struct slot *s)
{
	ssize_t n = 0;

	if (s->wr) {
		n = rpfs_wait(s->wr);
		s->wr = NULL;
	}
	return n < 0 ? (int)n : 0;
}

/* Copy size bytes: block i is read into one slot while block i-1 is
 * written from the other. Returns 0 or -errno (and *side the failing
 * endpoint's name). */
static int copy_blocks(struct endpoint *src, struct endpoint *dst, uint64_t size, int bar,
		       const char **side)
{
	struct slot sl[2] = {{0}};
	uint64_t nblocks = (size + CP_BLOCK - 1) / CP_BLOCK, done = 0;
	double t0 = now_s();
	int ret = 0;

	for (int k = 0; k < 2; k++)
		if (posix_memalign((void **)&sl[k].buf, 4096, CP_BLOCK))
			return -ENOMEM;
	for (uint64_t i = 0; i <= nblocks && !ret; i++) {
		struct slot *cur = &sl[i % 2], *prev = &sl[(i + 1) % 2];

		if (i < nblocks) {
			*side = dst->name;
			ret = finish_write(cur);
			if (ret)
				break;
			cur->off = i * CP_BLOCK;
			cur->len = size - cur->off < CP_BLOCK ? (size_t)(size - cur->off)
							      : CP_BLOCK;
			*side = src->name;
			ret = start_read(src, cur);
			if (ret)
				break;
		}
		if (i > 0) {
			*side = src->name;
			ret = finish_read(prev);
			if (ret)
				break;
			*side = dst->name;
			ret = start_write(dst, prev);
			done += prev->len;
			if (bar)
				progress(done, size, t0);
		}
	}
	/* Nothing may still point into the buffers when they are freed. */
	for (int k = 0; k < 2; k++) {
		int r = finish_read(&sl[k]);
		int w = finish_write(&sl[k]);

		if (!ret && (r || w)) {
			ret = r ? r : w;
			*side = r ? src->name : dst->name;
		}
		free(sl[k].buf);
	}
	if (bar)
		fputc('\n', stderr);
	return ret;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s && s[1] ? s + 1 : s ? "" : p;
}

static int cmd_cp(const struct opts *o, int argc, char **argv)
{
	struct endpoint src = {.fd = -1}, dst = {.fd = -1};
	char spath[PATH_MAX], dpath[PATH_MAX];
	const char *side = "";
	rpfs_client_t *c;
	uint64_t size = 0;
	struct rpfs_stat st;
	double t0, secs;
	int ret;

	if (argc != 3)
		die("usage: rpfs cp SRC DST (mark the rpfs side(s) with rpfs:)");
	if (!is_rpfs(argv[1]) && !is_rpfs(argv[2]))
		die("cp: neither %s nor %s is an rpfs path (write rpfs:/path)", argv[1],
		    argv[2]);
	c = connect_cluster(o);

	if (is_rpfs(argv[1])) {
		rpath(argv[1], spath, sizeof(spath));
		ret = rpfs_open(c, spath, RPFS_O_READ, &src.f);
		if (ret)
			die_rpfs(ret, "cp: open", spath);
		ret = rpfs_getsize(src.f, &size);
		if (ret)
			die_rpfs(ret, "cp: size of", spath);
	} else {
		struct stat lst;

		fmt(spath, sizeof(spath), "%s", argv[1]);
		src.fd = open(spath, O_RDONLY);
		if (src.fd < 0 || fstat(src.fd, &lst))
			die("cp: %s: %s", spath, strerror(errno));
		if (!S_ISREG(lst.st_mode))
			die("cp: %s is not a regular file", spath);
		size = (uint64_t)lst.st_size;
	}
	src.name = spath;

	if (is_rpfs(argv[2])) {
		rpath(argv[2], dpath, sizeof(dpath));
		if (!rpfs_stat(c, dpath, &st) && st.type == RPFS_TYPE_DIR) {
			size_t l = strlen(dpath);

			fmt(dpath + l, sizeof(dpath) - l, "%s%s", l > 1 ? "/" : "",
			    base_name(spath));
		}
		if (src.f && !strcmp(spath, dpath))
			die("cp: %s and %s are the same file", argv[1], argv[2]);
		ret = rpfs_create(c, dpath, 0644, RPFS_O_WRITE, NULL, &dst.f);
		if (ret)
			die_rpfs(ret, "cp: create", dpath);
	} else {
		struct stat lst;

		fmt(dpath, sizeof(dpath), "%s", argv[2]);
		if (!stat(dpath, &lst) && S_ISDIR(lst.st_mode)) {
			size_t l = strlen(dpath);

			fmt(dpath + l, sizeof(dpath) - l, "/%s", base_name(spath));
		}
		dst.fd = open(dpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (dst.fd < 0)
			die("cp: %s: %s", dpath, strerror(errno));
	}
	dst.name = dpath;

	t0 = now_s();
	ret = copy_blocks(&src, &dst, size, isatty(2), &side);
	if (ret)
		die_rpfs(ret, "cp:", side);
	if (dst.f) {
		/* An older, longer file keeps no tail; the copy is durable when cp
		 * says so. */
		ret = rpfs_truncate(dst.f, size);
		if (ret)
			die_rpfs(ret, "cp: truncate", dpath);
		ret = rpfs_sync(dst.f);
		if (ret)
			die_rpfs(ret, "cp: sync", dpath);
		rpfs_close(dst.f);
	} else if (fsync(dst.fd) || close(dst.fd)) {
		die("cp: %s: %s", dpath, strerror(errno));
	}
	if (src.f)
		rpfs_close(src.f);
	else
		close(src.fd);
	secs = now_s() - t0;
	printf("copied %llu bytes in %.3f s (%.1f MB/s)\n", (unsigned long long)size,
	       secs, secs > 0 ? size / secs / 1e6 : 0.0);
	rpfs_finalize(c);
	return 0;
}

/* ---- mv ----------------------------------------------------------------- */

/* Copy a file within rpfs with its mode and layout (mv's fallback). */
static int copy_within(rpfs_client_t *c, const char *from, const char *to,
		       const struct rpfs_stat *st, const char **side)
{
	struct endpoint src = {.fd = -1, .name = from}, dst = {.fd = -1, .name = to};
	struct rpfs_create_opts co = {st->stripe_unit, st->stripe_count, -1};
	uint64_t size = 0;
	int ret;

	*side = from;
	ret = rpfs_open(c, from, RPFS_O_READ, &src.f);
	if (!ret)
		ret = rpfs_getsize(src.f, &size);
	if (!ret) {
		*side = to;
		ret = rpfs_create(c, to, st->mode, RPFS_O_WRITE, &co, &dst.f);
	}
	if (!ret)
		ret = copy_blocks(&src, &dst, size, 0, side);
	if (!ret && !(ret = rpfs_truncate(dst.f, size)))
		ret = rpfs_sync(dst.f);
	if (dst.f)
		rpfs_close(dst.f);
	if (src.f)
		rpfs_close(src.f);
	return ret;
}

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

static int cmd_mv(const struct opts *o, int argc, char **argv)
{
	char from[PATH_MAX], to[PATH_MAX];
	struct rpfs_stat st;
	rpfs_client_t *c;

	if (argc != 3)
		die("usage: rpfs mv SRC DST");
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

static int cmd_cat(const struct opts *o, int argc, char **argv)
{
	struct endpoint src = {.fd = -1}, dst = {.fd = 1, .name = "stdout"};
	char path[PATH_MAX];
	const char *side = "";
	rpfs_client_t *c;
	uint64_t size;
	int ret;

	if (argc < 2)
		die("cat: which path?");
	c = connect_cluster(o);
	for (int i = 1; i < argc; i++) {
		rpath(argv[i], path, sizeof(path));
		src.name = path;
		ret = rpfs_open(c, path, RPFS_O_READ, &src.f);
		if (ret)
			die_rpfs(ret, "cat: open", path);
		ret = rpfs_getsize(src.f, &size);
		if (ret)
			die_rpfs(ret, "cat: size of", path);
		ret = copy_blocks(&src, &dst, size, 0, &side);
		if (ret)
			die_rpfs(ret, "cat:", side);
		rpfs_close(src.f);
	}
	rpfs_finalize(c);
	return 0;
}

/* ---- df / ping ---------------------------------------------------------- */

static void human(uint64_t b, char *out, size_t len)
{
	static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)b;
	int i = 0;

	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	fmt(out, len, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

/* A size as bytes, or with -h as human units. */
static void size_str(const struct opts *o, uint64_t b, char *out, size_t len)
{
	if (o->human)
		human(b, out, len);
	else
		fmt(out, len, "%llu", (unsigned long long)b);
}

/* Every server's own answer (RPC_STATS); a server that does not answer is
 * a row saying why, and the exit status is 1. */
static int cmd_df(const struct opts *o)
{
	static struct rpfs_server_stat st[RPFS_STATS_MAX];
	rpfs_client_t *c = connect_cluster(o);
	rpfs_admin_config_t *cfg = load_config(config_path(o));
	uint64_t tsize = 0, tused = 0, tavail = 0, tfiles = 0;
	char a[32], b[32], d[32], f[32];
	int failed = 0;

	printf("%-36s %-8s %14s %14s %14s %10s\n", "server", "roles", "size", "used",
	       "avail", "files");
	for (int i = 0; i < rpfs_admin_num_servers(cfg); i++) {
		int n = rpfs_admin_server_stats(c, i, st, RPFS_STATS_MAX);
		bool meta, io;

		if (n < 0) {
			printf("%-36s FAILED: %s\n", rpfs_server_desc(c, i),
			       rpfs_errmsg());
			failed = 1;
			continue;
		}
		meta = rpfs_admin_stat(st, n, "role.meta", 0);
		io = rpfs_admin_stat(st, n, "role.io", 0);
		fmt(a, sizeof(a), "-");
		fmt(b, sizeof(b), "-");
		fmt(d, sizeof(d), "-");
		fmt(f, sizeof(f), "-");
		if (io) {
			uint64_t size = rpfs_admin_stat(st, n, "storage.size", 0);
			uint64_t used = rpfs_admin_stat(st, n, "storage.used", 0);
			uint64_t avail = rpfs_admin_stat(st, n, "storage.avail", 0);

			size_str(o, size, a, sizeof(a));
			size_str(o, used, b, sizeof(b));
			size_str(o, avail, d, sizeof(d));
			tsize += size;
			tused += used;
			tavail += avail;
		}
		if (meta) {
			uint64_t files = rpfs_admin_stat(st, n, "meta.files", 0);

			fmt(f, sizeof(f), "%llu", (unsigned long long)files);
			tfiles += files;
		}
		printf("%-36s %-8s %14s %14s %14s %10s\n", rpfs_server_desc(c, i),
		       meta && io ? "meta,io"
		       : meta	  ? "meta"
				  : "io",
		       a, b, d, f);
	}
	size_str(o, tsize, a, sizeof(a));
	size_str(o, tused, b, sizeof(b));
	size_str(o, tavail, d, sizeof(d));
	printf("%-36s %-8s %14s %14s %14s %10llu\n", "total", "", a, b, d,
	       (unsigned long long)tfiles);
	rpfs_admin_config_free(cfg);
	rpfs_finalize(c);
	return failed;
}

/* Every server's counters: one block per server, or one JSON object whose
 * "servers" array holds each server's values by name. */
static int cmd_stats(const struct opts *o)
{
	static struct rpfs_server_stat st[RPFS_STATS_MAX];
	rpfs_client_t *c = connect_cluster(o);
	rpfs_admin_config_t *cfg = load_config(config_path(o));
	int nsrv = rpfs_admin_num_servers(cfg), failed = 0;

	if (o->json)
		printf("{\"servers\": [");
	for (int i = 0; i < nsrv; i++) {
		int n = rpfs_admin_server_stats(c, i, st, RPFS_STATS_MAX);
		const char *desc = rpfs_server_desc(c, i);

		if (n < 0)
			failed = 1;
		if (o->json) {
			/* Names are [a-z0-9_.] (rpc.c checks), descriptions
			 * host:port: nothing to escape. */
			printf("%s\n  {\"server\": \"%s\"", i ? "," : "", desc);
			if (n < 0)
				printf(", \"error\": \"%s\"", strerror(-n));
			for (int k = 0; k < n; k++)
				printf(", \"%s\": %llu", st[k].name,
				       (unsigned long long)st[k].value);
			printf("}");
			continue;
		}
		printf("%s%s\n", i ? "\n" : "", desc);
		if (n < 0)
			printf("  FAILED: %s\n", rpfs_errmsg());
		for (int k = 0; k < n; k++)
			printf("  %-24s %llu\n", st[k].name,
			       (unsigned long long)st[k].value);
	}
	if (o->json)
		printf("\n]}\n");
	rpfs_admin_config_free(cfg);
	rpfs_finalize(c);
	return failed;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The first ping also makes the connection; the round trip reported is the
 * median of the next few. */
static int cmd_ping(const struct opts *o)
{
	rpfs_client_t *c = connect_cluster(o);
	rpfs_admin_config_t *cfg = load_config(config_path(o));
	int failed = 0;

	for (int i = 0; i < rpfs_admin_num_servers(cfg); i++) {
		const char *desc = rpfs_server_desc(c, i);
		double first = 0, us[7];
		int ret = rpfs_ping(c, i, &first);

		for (int k = 0; k < 7 && !ret; k++)
			ret = rpfs_ping(c, i, &us[k]);
		if (ret) {
			printf("%-36s FAILED: %s\n", desc, rpfs_errmsg());
			failed++;
			continue;
		}
		qsort(us, 7, sizeof(us[0]), cmp_double);
		printf("%-36s %9.1f us  (first, with connect: %.1f us)\n", desc, us[3],
		       first);
	}
	rpfs_admin_config_free(cfg);
	rpfs_finalize(c);
	return failed ? 1 : 0;
}

/* Where the command word is: global options (with their arguments) may
 * come before it. */
static int command_index(int argc, char **argv)
{
	static const char *const with_arg[] = {"dir",	      "port",	 "config",
					       "stripe-unit", "address", "provider"};

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] != '-' || !a[1])
			return i;
		if (!strcmp(a, "--"))
			return i + 1;
		if (a[1] == '-') {
			for (size_t k = 0; k < sizeof(with_arg) / sizeof(with_arg[0]);
			     k++)
				if (!strcmp(a + 2, with_arg[k]))
					i++;
		} else if (strchr("ndpcsaP", a[1]) && !a[2]) {
			i++;
		}
	}
	return argc;
}

/* Commands whose options are their own (-c, -s, -name...): the global
 * options are only those before the command word. */
static int own_options(const char *cmd)
{
	return !strcmp(cmd, "setstripe") || !strcmp(cmd, "find") || !strcmp(cmd, "du");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dir", required_argument, NULL, 'd'},
		{"port", required_argument, NULL, 'p'},
		{"config", required_argument, NULL, 'c'},
		{"stripe-unit", required_argument, NULL, 's'},
		{"address", required_argument, NULL, 'a'},
		{"provider", required_argument, NULL, 'P'},
		{"long", no_argument, NULL, 'l'},
		{"markdown", no_argument, NULL, 'M'},
		{"help", no_argument, NULL, 'H'},
		{"json", no_argument, NULL, 'J'},
		{NULL, 0, NULL, 0},
	};
	struct opts o = {.nservers = 2, .stripe_unit = 1 << 20, .address = "127.0.0.1"};
	int ci = command_index(argc, argv), full_argc = argc;
	char **full_argv = argv;
	const char *cmd;
	uint64_t sz;
	int ch;

	if (ci < argc && own_options(argv[ci]))
		argc = ci;

	while ((ch = getopt_long(argc, argv, "n:d:p:c:s:a:P:lh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'n':
			o.nservers = atoi(optarg);
			break;
		case 'd':
			o.dir = optarg;
			break;
		case 'p':
			o.port = atoi(optarg);
			if (o.port <= 0 || o.port > 65535)
				die("bad port %s", optarg);
			break;
		case 'c':
			o.config = optarg;
			break;
		case 's':
			if (rpfs_admin_parse_size(optarg, &sz) || !sz)
				die("bad stripe unit %s", optarg);
			o.stripe_unit = sz;
			break;
		case 'a':
			o.address = optarg;
			break;
		case 'P':
			o.provider = optarg;
			break;
		case 'l':
			o.longfmt = 1;
			break;
		case 'M':
			o.markdown = 1;
			break;
		case 'h':
			o.human = 1; /* or help: see below */
			break;
		case 'H':
			o.help = 1;
			break;
		case 'J':
			o.json = 1;
			break;
		default:
			usage(stderr, 2);
		}
	}
	if (argc < full_argc) {
		argc = full_argc - ci;
		argv = full_argv + ci;
	} else {
		argc -= optind;
		argv += optind;
	}
	if (argc < 1)
		usage(stderr, 2);
	cmd = argv[0];
	/* -h is human sizes where sizes are shown, help elsewhere. */
	if (o.human && strcmp(cmd, "ls") && strcmp(cmd, "du") && strcmp(cmd, "df"))
		o.help = 1;
	if (o.help)
		usage(stdout, 0);
	/* A peer that disappears must give an error, not kill us. */
	signal(SIGPIPE, SIG_IGN);

	if (!strcmp(cmd, "up"))
		return cmd_up(&o, argc, argv);
	if (!strcmp(cmd, "down"))
		return cmd_down(&o);
	if (!strcmp(cmd, "ls"))
		return cmd_ls(&o, argc, argv);
	if (!strcmp(cmd, "stat"))
		return cmd_stat(&o, argc, argv);
	if (!strcmp(cmd, "mkdir") || !strcmp(cmd, "rmdir") || !strcmp(cmd, "rm"))
		return cmd_each(&o, argc, argv, cmd);
	if (!strcmp(cmd, "chmod"))
		return cmd_chmod(&o, argc, argv);
	if (!strcmp(cmd, "cp"))
		return cmd_cp(&o, argc, argv);
	if (!strcmp(cmd, "cat"))
		return cmd_cat(&o, argc, argv);
	if (!strcmp(cmd, "mv"))
		return cmd_mv(&o, argc, argv);
	if (!strcmp(cmd, "setstripe"))
		return cmd_setstripe(&o, argc, argv);
	if (!strcmp(cmd, "getstripe"))
		return cmd_getstripe(&o, argc, argv);
	if (!strcmp(cmd, "df"))
		return cmd_df(&o);
	if (!strcmp(cmd, "stats"))
		return cmd_stats(&o);
	if (!strcmp(cmd, "ping"))
		return cmd_ping(&o);
	if (!strcmp(cmd, "settings"))
		return cmd_settings(&o);
	if (!strcmp(cmd, "help"))
		usage(stdout, 0);
	fprintf(stderr, "rpfs: unknown command '%s'\n", cmd);
	usage(stderr, 2);
}
