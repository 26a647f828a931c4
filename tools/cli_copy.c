/* The rpfs command's copies: cp (files and, with -r, trees, in any
 * direction between the local file system and rpfs), cat, and the copy
 * within rpfs that mv falls back to.
 *
 * A file moves in 8 MiB blocks with two in flight (rpfs_ipread and
 * rpfs_ipwrite), so reading block i overlaps writing block i-1. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define CP_BLOCK (8u << 20) /* cp/cat block */

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

/* One side of a copy: an rpfs path (normalized) or a local one. */
struct side {
	bool rpfs;
	char path[PATH_MAX];
};

static void side_of(const char *arg, struct side *s)
{
	s->rpfs = is_rpfs(arg);
	if (s->rpfs)
		rpath(arg, s->path, sizeof(s->path));
	else
		fmt(s->path, sizeof(s->path), "%s", arg);
}

/* Is s a directory? -ENOENT if it does not exist. */
static int side_is_dir(rpfs_client_t *c, const struct side *s, uint32_t *mode)
{
	struct rpfs_stat st;
	struct stat lst;
	int ret;

	if (s->rpfs) {
		ret = rpfs_stat(c, s->path, &st);
		if (ret)
			return ret;
		*mode = st.mode & 07777;
		return st.type == RPFS_TYPE_DIR;
	}
	if (stat(s->path, &lst))
		return -errno;
	*mode = lst.st_mode & 07777;
	return S_ISDIR(lst.st_mode) ? 1 : 0;
}

/* Copy one file; the bytes copied. Both on rpfs: with the source's mode and
 * layout where the target is new. */
static uint64_t copy_file(rpfs_client_t *c, const struct side *from,
			  const struct side *to, int bar)
{
	struct endpoint src = {.fd = -1, .name = from->path},
			dst = {.fd = -1, .name = to->path};
	struct rpfs_create_opts co = {0, 0, -1}, *cop = NULL;
	uint32_t mode = 0644;
	const char *side = "";
	uint64_t size = 0;
	int ret;

	if (from->rpfs) {
		struct rpfs_stat st;

		ret = rpfs_open(c, from->path, RPFS_O_READ, &src.f);
		if (ret)
			die_rpfs(ret, "cp: open", from->path);
		ret = rpfs_getsize(src.f, &size);
		if (ret)
			die_rpfs(ret, "cp: size of", from->path);
		rpfs_file_attr(src.f, &st);
		mode = st.mode & 07777;
		if (to->rpfs) {
			co.stripe_unit = st.stripe_unit;
			co.stripe_count = st.stripe_count;
			cop = &co;
		}
	} else {
		struct stat lst;

		src.fd = open(from->path, O_RDONLY);
		if (src.fd < 0 || fstat(src.fd, &lst))
			die("cp: %s: %s", from->path, strerror(errno));
		if (!S_ISREG(lst.st_mode))
			die("cp: %s is not a regular file", from->path);
		size = (uint64_t)lst.st_size;
		/* As cp(1): the source's mode less the umask. */
		mode_t mask = umask(0);

		umask(mask);
		mode = lst.st_mode & 0777 & ~mask;
	}
	if (to->rpfs) {
		if (from->rpfs && !strcmp(from->path, to->path))
			die("cp: %s and %s are the same file", from->path, to->path);
		ret = rpfs_create(c, to->path, mode, RPFS_O_WRITE, cop, &dst.f);
		if (ret)
			die_rpfs(ret, "cp: create", to->path);
	} else {
		dst.fd = open(to->path, O_WRONLY | O_CREAT | O_TRUNC, mode);
		if (dst.fd < 0)
			die("cp: %s: %s", to->path, strerror(errno));
	}
	ret = copy_blocks(&src, &dst, size, bar, &side);
	if (ret)
		die_rpfs(ret, "cp:", side);
	if (dst.f) {
		/* An older, longer file keeps no tail; the copy is durable when cp
		 * says so. */
		ret = rpfs_truncate(dst.f, size);
		if (ret)
			die_rpfs(ret, "cp: truncate", to->path);
		ret = rpfs_sync(dst.f);
		if (ret)
			die_rpfs(ret, "cp: sync", to->path);
		rpfs_close(dst.f);
	} else if (fsync(dst.fd) || close(dst.fd)) {
		die("cp: %s: %s", to->path, strerror(errno));
	}
	if (src.f)
		rpfs_close(src.f);
	else
		close(src.fd);
	return size;
}

/* The names in a directory on either side, sorted. */
static void side_names(rpfs_client_t *c, const struct side *s, struct names *nm)
{
	struct dirent *de;
	DIR *d;
	int ret;

	if (s->rpfs) {
		ret = list_names(c, s->path, nm);
		if (ret)
			die_rpfs(ret, "cp: list", s->path);
		return;
	}
	memset(nm, 0, sizeof(*nm));
	d = opendir(s->path);
	if (!d)
		die("cp: %s: %s", s->path, strerror(errno));
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    collect(de->d_name, 0, nm))
			die("cp: out of memory");
	closedir(d);
	if (nm->n)
		qsort(nm->v, nm->n, sizeof(*nm->v), cmp_names);
}

static void side_child(const struct side *s, const char *name, struct side *out)
{
	out->rpfs = s->rpfs;
	join(out->path, sizeof(out->path), s->path, name);
}

/* cp -r: the tree under from becomes to (a new or existing directory). */
static uint64_t copy_tree(rpfs_client_t *c, const struct side *from,
			  const struct side *to, uint32_t mode, uint64_t *files)
{
	struct names nm;
	uint64_t bytes = 0;
	int ret;

	if (to->rpfs)
		ret = rpfs_mkdir(c, to->path, mode | 0700);
	else
		ret = mkdir(to->path, mode | 0700) ? -errno : 0;
	if (ret && ret != -EEXIST)
		die_rpfs(ret, "cp: mkdir", to->path);
	side_names(c, from, &nm);
	for (size_t i = 0; i < nm.n; i++) {
		struct side f, t;
		uint32_t m;
		int dir;

		side_child(from, nm.v[i], &f);
		side_child(to, nm.v[i], &t);
		dir = side_is_dir(c, &f, &m);
		if (dir < 0)
			die("cp: %s: %s", f.path, strerror(-dir));
		if (dir) {
			bytes += copy_tree(c, &f, &t, m, files);
		} else {
			bytes += copy_file(c, &f, &t, 0);
			++*files;
		}
	}
	names_free(&nm);
	return bytes;
}

int cmd_cp(const struct opts *o, int argc, char **argv)
{
	struct side from, to;
	uint64_t size, files = 1;
	rpfs_client_t *c;
	uint32_t mode = 0;
	double t0, secs;
	int sdir, ddir;

	if (argc != 3)
		cmd_usage(argv[0], 2);
	if (!is_rpfs(argv[1]) && !is_rpfs(argv[2]))
		die("cp: neither %s nor %s is an rpfs path (write rpfs:/path)", argv[1],
		    argv[2]);
	side_of(argv[1], &from);
	side_of(argv[2], &to);
	c = connect_cluster(o);
	sdir = side_is_dir(c, &from, &mode);
	if (sdir < 0)
		die("cp: %s: %s%s%s", from.path, strerror(-sdir), from.rpfs ? " (" : "",
		    from.rpfs ? rpfs_errmsg() : "");
	if (sdir && !o->recursive)
		die("cp: %s is a directory (cp -r copies trees)", from.path);
	/* Into an existing directory, as cp does. */
	ddir = side_is_dir(c, &to, &(uint32_t){0});
	if (ddir > 0) {
		size_t l = strlen(to.path);

		fmt(to.path + l, sizeof(to.path) - l, "%s%s",
		    to.rpfs && l == 1 ? "" : "/", base_name(from.path));
	}
	t0 = now_s();
	if (sdir) {
		files = 0;
		size = copy_tree(c, &from, &to, mode, &files);
	} else {
		size = copy_file(c, &from, &to, isatty(2));
	}
	secs = now_s() - t0;
	printf("copied %llu bytes in %.3f s (%.1f MB/s)\n", (unsigned long long)size,
	       secs, secs > 0 ? size / secs / 1e6 : 0.0);
	if (sdir)
		printf("%llu files\n", (unsigned long long)files);
	rpfs_finalize(c);
	return 0;
}

/* Copy a file within rpfs with its mode and layout (mv's fallback). */
int copy_within(rpfs_client_t *c, const char *from, const char *to,
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

int cmd_cat(const struct opts *o, int argc, char **argv)
{
	struct endpoint src = {.fd = -1}, dst = {.fd = 1, .name = "stdout"};
	char path[PATH_MAX];
	const char *side = "";
	rpfs_client_t *c;
	uint64_t size;
	int ret;

	if (argc < 2)
		cmd_usage(argv[0], 2);
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
