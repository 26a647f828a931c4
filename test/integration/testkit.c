/* Shared helpers of the integration tests (see testkit.h). */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "testkit.h"

uint64_t rnd_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t rnd_range(uint64_t *s, uint64_t lo, uint64_t hi)
{
	return lo + rnd_next(s) % (hi - lo + 1);
}

/* Small and large pieces equally often. */
uint64_t rnd_size(uint64_t *s, uint64_t max)
{
	int bits = 0;

	while ((1ull << bits) < max)
		bits++;
	uint64_t top = 1ull << rnd_range(s, 0, (uint64_t)bits);
	uint64_t v = rnd_range(s, top / 2 ? top / 2 : 1, top);

	return v > max ? max : v;
}

void fill(void *buf, size_t len, uint64_t seed)
{
	unsigned char *p = buf;
	uint64_t s = seed, v = 0;

	for (size_t i = 0; i < len; i++) {
		if (!(i & 7))
			v = rnd_next(&s);
		p[i] = (unsigned char)(v >> ((i & 7) * 8));
	}
}

long long first_diff(const void *a, const void *b, size_t len)
{
	const unsigned char *x = a, *y = b;

	if (!memcmp(a, b, len))
		return -1;
	for (size_t i = 0; i < len; i++)
		if (x[i] != y[i])
			return (long long)i;
	return -1;
}

double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

rpfs_client_t *client(struct cluster *cl)
{
	rpfs_client_t *c = NULL;
	int ret = rpfs_init(cl_config(cl), &c);

	ck_assert_msg(ret == 0, "rpfs_init: %s: %s", strerror(-ret), rpfs_errmsg());
	return c;
}

rpfs_file_t *create_opts(rpfs_client_t *c, const char *path,
			 const struct rpfs_create_opts *o)
{
	rpfs_file_t *f = NULL;
	int ret = rpfs_create(c, path, 0644, 0, o, &f);

	ck_assert_msg(ret == 0, "create %s: %s: %s", path, strerror(-ret), rpfs_errmsg());
	return f;
}

rpfs_file_t *create(rpfs_client_t *c, const char *path)
{
	return create_opts(c, path, NULL);
}

rpfs_file_t *open_file(rpfs_client_t *c, const char *path)
{
	rpfs_file_t *f = NULL;
	int ret = rpfs_open(c, path, RPFS_O_RDWR, &f);

	ck_assert_msg(ret == 0, "open %s: %s: %s", path, strerror(-ret), rpfs_errmsg());
	return f;
}

void write_all(rpfs_file_t *f, const void *buf, size_t len, uint64_t off)
{
	ssize_t n = rpfs_pwrite(f, buf, len, off);

	ck_assert_msg(n == (ssize_t)len, "pwrite %zu at %llu: %zd: %s", len,
		      (unsigned long long)off, n, rpfs_errmsg());
}

void read_all(rpfs_file_t *f, void *buf, size_t len, uint64_t off)
{
	ssize_t n = rpfs_pread(f, buf, len, off);

	ck_assert_msg(n == (ssize_t)len, "pread %zu at %llu: %zd: %s", len,
		      (unsigned long long)off, n, rpfs_errmsg());
}
