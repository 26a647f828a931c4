/* rpfs truncate: files shrunk or extended to a size, as truncate(1) does.
 * -s SIZE: bytes with an optional suffix (K M G T P E: powers of 1024, also
 * written KiB...; KB MB GB...: powers of 1000), after an optional operator:
 * + extend by, - shrink by (not below 0), < at most, > at least, / round
 * down to a multiple, % round up to one. Missing files are created (mode
 * 0666 less the umask) unless -c. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

struct size_spec {
	char op; /* 0 (set), '+', '-', '<', '>', '/', '%' */
	uint64_t n;
};

/* The multiplier of a suffix, 0 for one that is not. */
static uint64_t suffix(const char *s)
{
	static const char units[] = "KMGTPE";
	const char *u;
	uint64_t m = 1, base;

	if (!*s)
		return 1;
	u = strchr(units, s[0]);
	if (!u)
		return 0;
	if (!s[1] || !strcmp(s + 1, "iB"))
		base = 1024;
	else if (!strcmp(s + 1, "B"))
		base = 1000;
	else
		return 0;
	for (const char *k = units; k <= u; k++)
		m *= base;
	return m;
}

static int parse_spec(const char *s, struct size_spec *sp)
{
	uint64_t n, mul;
	char *end;

	sp->op = strchr("+-<>/%", *s) && *s ? *s++ : 0;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	n = strtoull(s, &end, 10);
	mul = suffix(end);
	if (errno || !mul || n > UINT64_MAX / mul || n * mul > (uint64_t)INT64_MAX)
		return -EINVAL;
	sp->n = n * mul;
	if ((sp->op == '/' || sp->op == '%') && !sp->n)
		return -EINVAL;
	return 0;
}

/* The size a file of size cur gets; -EFBIG past the largest file. */
static int new_size(const struct size_spec *sp, uint64_t cur, uint64_t *out)
{
	uint64_t v;

	switch (sp->op) {
	case '+':
		v = cur + sp->n;
		break;
	case '-':
		v = cur > sp->n ? cur - sp->n : 0;
		break;
	case '<':
		v = cur < sp->n ? cur : sp->n;
		break;
	case '>':
		v = cur > sp->n ? cur : sp->n;
		break;
	case '/':
		v = cur / sp->n * sp->n;
		break;
	case '%':
		v = (cur + sp->n - 1) / sp->n * sp->n;
		break;
	default:
		v = sp->n;
	}
	if (v > (uint64_t)INT64_MAX || v < (sp->op == '+' ? cur : 0))
		return -EFBIG;
	*out = v;
	return 0;
}

static int truncate_one(rpfs_client_t *c, const struct opts *o, const char *path,
			const struct size_spec *sp, uint32_t mode)
{
	uint64_t cur = 0, size;
	rpfs_file_t *f;
	int ret;

	if (o->no_create)
		ret = rpfs_open(c, path, RPFS_O_WRITE, &f);
	else
		ret = rpfs_create(c, path, mode, RPFS_O_WRITE, NULL, &f);
	if (ret == -ENOENT && o->no_create)
		return 0; /* -c: nothing to do, as truncate(1) */
	if (ret) {
		report("truncate", path, ret);
		return 1;
	}
	if (sp->op)
		ret = rpfs_getsize(f, &cur);
	if (!ret && !(ret = new_size(sp, cur, &size)))
		ret = rpfs_truncate(f, size);
	if (ret == -EFBIG)
		fprintf(stderr, "rpfs truncate: %s: %s: past the largest file size\n",
			path, o->size);
	else if (ret)
		report("truncate", path, ret);
	rpfs_close(f);
	return ret ? 1 : 0;
}

int cmd_truncate(const struct opts *o, int argc, char **argv)
{
	struct size_spec sp;
	rpfs_client_t *c;
	mode_t mask = umask(0);
	int failed = 0;

	umask(mask);
	if (!o->size)
		usage_error(argv[0], "-s SIZE is needed");
	if (parse_spec(o->size, &sp))
		usage_error(
			argv[0],
			"invalid size '%s' ([+-<>/%%]N with K, M, G, T suffixes, or KB, "
			"MB, ...)",
			o->size);
	c = connect_cluster(o);
	for (int i = 1; i < argc; i++) {
		char path[PATH_MAX];

		rpath(argv[i], path, sizeof(path));
		failed |= truncate_one(c, o, path, &sp, 0666 & ~(uint32_t)mask);
	}
	rpfs_finalize(c);
	return failed;
}
