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
		strfmt(s->path, sizeof(s->path), "%s", arg);
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

/* The destination of one file's copy: a new file (created), or an
 * existing one, opened for writing (a local one truncated, as cp does). */
static int open_dest(rpfs_client_t *c, const struct side *to, uint32_t mode,
		     const struct rpfs_create_opts *cop, const char *red,
		     struct endpoint *dst, bool *created)
{
	int ret;

	*created = true;
	if (to->rpfs) {
		ret = rpfs_create_redundancy(
			c, to->path, mode, RPFS_O_WRITE | RPFS_O_EXCL, cop, red, &dst->f);
		if (ret == -EEXIST) {
			*created = false;
			ret = rpfs_create(c, to->path, mode, RPFS_O_WRITE, cop, &dst->f);
		}
		return ret;
	}
	dst->fd = open(to->path, O_WRONLY | O_CREAT | O_EXCL, mode);
	if (dst->fd < 0 && errno == EEXIST) {
		*created = false;
		dst->fd = open(to->path, O_WRONLY | O_TRUNC);
	}
	return dst->fd < 0 ? -errno : 0;
}

/* A copy that failed after its destination was opened: what cp created is
 * removed (no half file is left behind); a file that existed is said to be
 * partly written. */
static void undo_dest(rpfs_client_t *c, const struct side *to, struct endpoint *dst,
		      bool created)
{
	int ret;

	if (dst->f)
		rpfs_close(dst->f);
	else if (dst->fd >= 0)
		close(dst->fd);
	dst->f = NULL;
	dst->fd = -1;
	if (!created) {
		fprintf(stderr, "rpfs cp: %s: existed and is now partly overwritten\n",
			to->path);
		return;
	}
	ret = to->rpfs ? rpfs_remove(c, to->path) : unlink(to->path) ? -errno : 0;
	if (ret && to->rpfs)
		report("cp: removing the partial copy", to->path, ret);
	else if (ret)
		report_local("cp: removing the partial copy", to->path, ret);
}

/* The source of one file's copy, open, with its size and mode; for an
 * rpfs copy within rpfs, its layout into *co and its redundancy into red
 * (RPFS_REDUNDANCY_MAX bytes). 0, or 1 (said). */
static int open_source(rpfs_client_t *c, const struct side *from, bool to_rpfs,
		       struct endpoint *src, uint64_t *size, uint32_t *mode,
		       struct rpfs_create_opts *co, char *red)
{
	struct stat lst;
	mode_t mask;
	int ret;

	if (from->rpfs) {
		struct rpfs_stat st;

		ret = rpfs_open(c, from->path, RPFS_O_READ, &src->f);
		if (!ret && (ret = rpfs_getsize(src->f, size))) {
			rpfs_close(src->f);
			src->f = NULL;
		}
		if (ret) {
			report("cp", from->path, ret);
			return 1;
		}
		rpfs_file_attr(src->f, &st);
		*mode = st.mode & 07777;
		if (to_rpfs) {
			co->stripe_unit = st.stripe_unit;
			co->stripe_count = st.stripe_count;
			if (rpfs_file_redundancy(src->f, red, RPFS_REDUNDANCY_MAX))
				red[0] = '\0';
		}
		return 0;
	}
	src->fd = open(from->path, O_RDONLY);
	if (src->fd < 0 || fstat(src->fd, &lst)) {
		report_local("cp", from->path, -errno);
		if (src->fd >= 0)
			close(src->fd);
		return 1;
	}
	if (!S_ISREG(lst.st_mode)) {
		fprintf(stderr, "rpfs cp: %s: not a regular file\n", from->path);
		close(src->fd);
		return 1;
	}
	*size = (uint64_t)lst.st_size;
	/* As cp(1): the source's mode less the umask. */
	mask = umask(0);
	umask(mask);
	*mode = lst.st_mode & 0777 & ~mask;
	return 0;
}

/* Copy one file, adding its size to *bytes. Both on rpfs: with the
 * source's mode and layout where the target is new. 0, or 1 when it
 * failed (said, and no partial file of its own left). */
static int copy_file(rpfs_client_t *c, const struct side *from, const struct side *to,
		     int bar, uint64_t *bytes)
{
	struct endpoint src = {.fd = -1, .name = from->path},
			dst = {.fd = -1, .name = to->path};
	struct rpfs_create_opts co = {0, 0, -1};
	char red[RPFS_REDUNDANCY_MAX] = "";
	uint32_t mode = 0644;
	const char *side = "";
	uint64_t size = 0;
	bool created = false, opened;
	int ret;

	if (from->rpfs && to->rpfs && !strcmp(from->path, to->path)) {
		fprintf(stderr, "rpfs cp: %s and %s are the same file\n", from->path,
			to->path);
		return 1;
	}
	if (open_source(c, from, to->rpfs, &src, &size, &mode, &co, red))
		return 1;
	side = to->path;
	ret = open_dest(c, to, mode, from->rpfs && to->rpfs ? &co : NULL,
			from->rpfs && to->rpfs ? red : NULL, &dst, &created);
	opened = !ret;
	if (!ret)
		ret = copy_blocks(&src, &dst, size, bar, &side);
	if (!ret && dst.f) {
		/* An older, longer file keeps no tail; the copy is durable when cp
		 * says so. */
		ret = rpfs_truncate(dst.f, size);
		if (!ret)
			ret = rpfs_sync(dst.f);
	} else if (!ret) {
		if (fsync(dst.fd))
			ret = -errno;
		if (close(dst.fd) && !ret)
			ret = -errno;
		dst.fd = -1;
	}
	if (ret) {
		if (ret == -EIO && side == from->path && !from->rpfs)
			fprintf(stderr,
				"rpfs cp: %s: fewer bytes than its size when the copy began "
				"(it changed meanwhile)\n",
				side);
		else if (side == from->path ? from->rpfs : to->rpfs)
			report("cp", side, ret);
		else
			report_local("cp", side, ret);
		if (opened)
			undo_dest(c, to, &dst, created);
	} else if (dst.f) {
		rpfs_close(dst.f);
	}
	if (src.f)
		rpfs_close(src.f);
	else
		close(src.fd);
	if (!ret)
		*bytes += size;
	return ret ? 1 : 0;
}

/* The names in a directory on either side, sorted. */
static int side_names(rpfs_client_t *c, const struct side *s, struct names *nm)
{
	struct dirent *de;
	DIR *d;
	int ret;

	if (s->rpfs) {
		ret = list_names(c, s->path, nm);
		if (ret)
			report("cp", s->path, ret);
		return ret;
	}
	memset(nm, 0, sizeof(*nm));
	d = opendir(s->path);
	if (!d) {
		report_local("cp", s->path, -errno);
		return -1;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    collect(de->d_name, 0, nm))
			die("cp: out of memory");
	closedir(d);
	if (nm->n) /* qsort wants a non-null base even for none */
		qsort(nm->v, nm->n, sizeof(*nm->v), cmp_names);
	return 0;
}

static void side_child(const struct side *s, const char *name, struct side *out)
{
	out->rpfs = s->rpfs;
	join(out->path, sizeof(out->path), s->path, name);
}

/* What a copy did: bytes and files copied, whether anything failed. */
struct copied {
	uint64_t bytes, files;
	int failed;
};

/* cp -r: the tree under from becomes to (a new or existing directory);
 * an entry that fails is said and the others are copied. */
static void copy_tree(rpfs_client_t *c, const struct side *from, const struct side *to,
		      uint32_t mode, struct copied *cp)
{
	struct names nm;
	int ret;

	if (to->rpfs)
		ret = rpfs_mkdir(c, to->path, mode | 0700);
	else
		ret = mkdir(to->path, mode | 0700) ? -errno : 0;
	if (ret && ret != -EEXIST) {
		if (to->rpfs)
			report("cp", to->path, ret);
		else
			report_local("cp", to->path, ret);
		cp->failed = 1;
		return;
	}
	if (side_names(c, from, &nm)) {
		cp->failed = 1;
		return;
	}
	for (size_t i = 0; i < nm.n; i++) {
		struct side f, t;
		uint32_t m;
		int dir;

		side_child(from, nm.v[i], &f);
		side_child(to, nm.v[i], &t);
		dir = side_is_dir(c, &f, &m);
		if (dir < 0) {
			report_local("cp", f.path, dir);
			cp->failed = 1;
		} else if (dir) {
			copy_tree(c, &f, &t, m, cp);
		} else if (copy_file(c, &f, &t, 0, &cp->bytes)) {
			cp->failed = 1;
		} else {
			cp->files++;
		}
	}
	names_free(&nm);
}

/* One source to its destination (into DST/NAME where DST is a directory). */
static void copy_one(rpfs_client_t *c, const struct opts *o, const char *arg,
		     const struct side *dst, bool into, int bar, struct copied *cp)
{
	struct side from, to = *dst;
	uint32_t mode = 0;
	int sdir;

	side_of(arg, &from);
	sdir = side_is_dir(c, &from, &mode);
	if (sdir < 0) {
		if (from.rpfs)
			report("cp", from.path, sdir);
		else
			report_local("cp", from.path, sdir);
		cp->failed = 1;
		return;
	}
	if (sdir && !o->recursive) {
		fprintf(stderr, "rpfs cp: %s: is a directory (cp -r copies trees)\n",
			from.path);
		cp->failed = 1;
		return;
	}
	if (into) {
		size_t l = strlen(to.path);

		strfmt(to.path + l, sizeof(to.path) - l, "%s%s",
		       to.rpfs && l == 1 ? "" : "/", base_name(from.path));
	}
	if (sdir)
		copy_tree(c, &from, &to, mode, cp);
	else if (copy_file(c, &from, &to, bar, &cp->bytes))
		cp->failed = 1;
	else
		cp->files++;
}

/* cp [-r] SRC DST, or SRC... DIR; a side on rpfs is 'rpfs:/path'. */
int cmd_cp(const struct opts *o, int argc, char **argv)
{
	struct copied cp = {0, 0, 0};
	const char *dst_arg = argv[argc - 1];
	struct side to;
	rpfs_client_t *c;
	double t0, secs;
	int ddir;

	for (int i = 1; i < argc - 1; i++)
		if (!is_rpfs(argv[i]) && !is_rpfs(dst_arg))
			usage_error(
				argv[0],
				"neither %s nor %s is an rpfs path (write rpfs:/path)",
				argv[i], dst_arg);
	side_of(dst_arg, &to);
	c = connect_cluster(o);
	/* Into an existing directory, as cp does; several sources need one. */
	ddir = side_is_dir(c, &to, &(uint32_t){0});
	if (argc > 3 && ddir <= 0) {
		fprintf(stderr, "rpfs cp: target %s is not a directory (%d sources)\n",
			to.path, argc - 2);
		rpfs_finalize(c);
		return 1;
	}
	t0 = now_s();
	for (int i = 1; i < argc - 1; i++)
		copy_one(c, o, argv[i], &to, ddir > 0, argc == 3 && isatty(2), &cp);
	secs = now_s() - t0;
	if (!cp.failed) {
		printf("copied %llu bytes in %.3f s (%.1f MB/s)\n",
		       (unsigned long long)cp.bytes, secs,
		       secs > 0 ? cp.bytes / secs / 1e6 : 0.0);
		if (o->recursive)
			printf("%llu files\n", (unsigned long long)cp.files);
	}
	rpfs_finalize(c);
	return cp.failed;
}

/* Copy a file within rpfs with its mode and layout (mv's fallback). */
int copy_within(rpfs_client_t *c, const char *from, const char *to,
		const struct rpfs_stat *st, const char **side)
{
	struct endpoint src = {.fd = -1, .name = from}, dst = {.fd = -1, .name = to};
	struct rpfs_create_opts co = {st->stripe_unit, st->stripe_count, -1};
	char red[RPFS_REDUNDANCY_MAX] = "";
	uint64_t size = 0;
	int ret;

	*side = from;
	ret = rpfs_open(c, from, RPFS_O_READ, &src.f);
	if (!ret)
		ret = rpfs_getsize(src.f, &size);
	if (!ret && rpfs_file_redundancy(src.f, red, sizeof(red)))
		red[0] = '\0';
	if (!ret) {
		*side = to;
		ret = rpfs_create_redundancy(c, to, st->mode, RPFS_O_WRITE, &co, red,
					     &dst.f);
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
	rpfs_client_t *c = connect_cluster(o);
	const char *side = "";
	int failed = 0;

	for (int i = 1; i < argc; i++) {
		char path[PATH_MAX];
		uint64_t size;
		int ret;

		rpath(argv[i], path, sizeof(path));
		src.name = path;
		ret = rpfs_open(c, path, RPFS_O_READ, &src.f);
		if (ret) {
			report("cat", path, ret);
			failed = 1;
			continue;
		}
		side = path;
		ret = rpfs_getsize(src.f, &size);
		if (!ret)
			ret = copy_blocks(&src, &dst, size, 0, &side);
		if (ret && side == dst.name)
			report_local("cat", side, ret);
		else if (ret)
			report("cat", side, ret);
		failed |= ret != 0;
		rpfs_close(src.f);
	}
	rpfs_finalize(c);
	return failed;
}
