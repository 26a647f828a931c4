/* The rpfs command's helpers (cli.h): errors that name the server and the
 * cause, paths, the config in use, sizes, directory listings. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

void die(const char *fmt, ...)
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
void die_rpfs(int err, const char *what, const char *path)
{
	const char *m = rpfs_errmsg();

	if (m && *m)
		die("%s %s: %s (%s)", what, path ? path : "", strerror(-err), m);
	die("%s %s: %s", what, path ? path : "", strerror(-err));
}

/* snprintf for paths and names: a result that does not fit is an error,
 * never a silently shortened path. */
int strfmt(char *out, size_t len, const char *f, ...)
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

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- directories, config ------------------------------------------------ */

const char *default_dir(void)
{
	static char buf[PATH_MAX];
	const char *d = getenv("RPFS_DIR");
	const char *home = getenv("HOME");

	if (d && *d)
		return d;
	strfmt(buf, sizeof(buf), "%s/.rpfs", home && *home ? home : ".");
	return buf;
}

/* Explicit options win over the environment; then RPFS_CONFIG, RPFS_DIR
 * (where `rpfs up` put it), then librpfs's search: /etc/rpfs/rpfs.conf,
 * ~/.rpfs/rpfs.conf (the last one tried when none exists, for messages). */
const char *config_path(const struct opts *o)
{
	static char buf[PATH_MAX];
	const char *env = getenv("RPFS_CONFIG"), *d = getenv("RPFS_DIR");

	if (o->config)
		return o->config;
	if (o->dir || (!(env && *env) && d && *d) ||
	    rpfs_admin_config_path(buf, sizeof(buf)) == -ENOENT)
		strfmt(buf, sizeof(buf), "%s/rpfs.conf", o->dir ? o->dir : default_dir());
	return buf;
}

rpfs_client_t *connect_cluster(const struct opts *o)
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

rpfs_admin_config_t *cli_load_config(const char *path)
{
	rpfs_admin_config_t *cfg;

	if (rpfs_admin_config_load(path, &cfg))
		die("%s", rpfs_errmsg());
	return cfg;
}

/* "rpfs:/a//b/../c" -> "/a/c": servers take normalized absolute paths. */
void rpath(const char *in, char *out, size_t outlen)
{
	char tmp[PATH_MAX];
	char *save = NULL, *tok;
	size_t len = 0;

	if (!strncasecmp(in, "rpfs:", 5))
		in += 5;
	strfmt(tmp, sizeof(tmp), "%s", in);
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
		len += (size_t)strfmt(out + len, outlen - len, "/%s", tok);
	}
	if (!out[0])
		strfmt(out, outlen, "/");
}

int is_rpfs(const char *p)
{
	return !strncasecmp(p, "rpfs:", 5);
}

int collect(const char *name, uint32_t type, void *arg)
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

int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s && s[1] ? s + 1 : s ? "" : p;
}

void human(uint64_t b, char *out, size_t len)
{
	static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)b;
	int i = 0;

	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	strfmt(out, len, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

/* A size as bytes, or with -h as human units. */
void size_str(const struct opts *o, uint64_t b, char *out, size_t len)
{
	if (o->human)
		human(b, out, len);
	else
		strfmt(out, len, "%llu", (unsigned long long)b);
}

void join(char *out, size_t len, const char *dir, const char *name)
{
	strfmt(out, len, "%s/%s", strcmp(dir, "/") ? dir : "", name);
}

int list_names(rpfs_client_t *c, const char *dir, struct names *nm)
{
	int ret;

	memset(nm, 0, sizeof(*nm));
	ret = rpfs_readdir(c, dir, collect, nm);
	if (!ret && nm->n) /* qsort wants a non-null base even for none */
		qsort(nm->v, nm->n, sizeof(*nm->v), cmp_names);
	return ret;
}

void names_free(struct names *nm)
{
	for (size_t i = 0; i < nm->n; i++)
		free(nm->v[i]);
	free(nm->v);
	memset(nm, 0, sizeof(*nm));
}

/* "rpfs CMD: PATH: cause (the library's message)": the library's message
 * names the server and says what it found. */
void report(const char *cmd, const char *path, int err)
{
	const char *m = rpfs_errmsg();

	if (m && *m)
		fprintf(stderr, "rpfs %s: %s: %s (%s)\n", cmd, path, strerror(-err), m);
	else
		report_local(cmd, path, err);
}

void report_local(const char *cmd, const char *path, int err)
{
	fprintf(stderr, "rpfs %s: %s: %s\n", cmd, path, strerror(-err));
}
