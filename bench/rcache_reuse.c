/* rcache_reuse: the registration cache against buffer reuse, after "PVFS
 * over InfiniBand" (section 4.3), through librpfs, for bench/run (issue 8).
 *
 * Bulk transfers (larger than fast_max) are sent from memory the client
 * registers through its registration cache. Each operation here uses one
 * of POOL buffers (round robin) with probability REUSE %, otherwise a
 * freshly mapped buffer that is unmapped after the operation (the cache
 * must notice: memhooks.c invalidates it). Three cache policies, chosen
 * with client settings (rpfs_init_opts, see `rpfs settings`):
 *   off      rcache_max_entries=1: a cache of one region, which a working
 *            set of POOL buffers always misses: register and deregister
 *            around every operation
 *   pindown  rcache_max_entries=POOL, rcache_batch=65536: the working set
 *            stays registered; a new buffer evicts (deregisters) one region
 *            at once, no batching
 *   lazy     the defaults (1024 regions, batches of 32): unused regions are
 *            deregistered lazily, in batches
 * Every operation writes SIZE bytes and reads them back into another
 * buffer of the same kind, cleared first; the bytes are compared. Rows
 * (experiment rcache, no header): write and read MB/s per policy and
 * reuse. Any failure or wrong byte exits 1.
 *
 * usage: rcache_reuse [--size 1M] [--ops N] [--file /path] POLICY REUSE... */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <rpfs.h>

#define POOL 8

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "rcache_reuse: %s: %s (%s)\n", what, strerror(-rc),
		rpfs_errmsg());
	exit(1);
}

static unsigned char *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);

	if (p == MAP_FAILED)
		die("mmap", -errno);
	return p;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fill(unsigned char *b, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = rnd(&seed);

		memcpy(b + i, &v, 8);
	}
}

struct cfg {
	size_t size;
	int ops;
	const char *path;
};

/* One policy at one reuse percentage; prints its two rows. */
static void run(const struct cfg *cfg, const char *policy, int reuse)
{
	char pool_s[16];
	struct rpfs_opt off[] = {{"rcache_max_entries", "1"}};
	struct rpfs_opt pindown[] = {{"rcache_max_entries", pool_s},
				     {"rcache_batch", "65536"}};
	struct rpfs_opt *opts = NULL;
	unsigned char *wpool[POOL], *rpool[POOL], *check = map(cfg->size);
	double t[2] = {0, 0};
	uint64_t seed = 0x2545f4914f6cdd1dULL + (uint64_t)reuse;
	rpfs_client_t *c;
	rpfs_file_t *f;
	int nopts = 0, rc;

	snprintf(pool_s, sizeof(pool_s), "%d", POOL);
	if (!strcmp(policy, "off"))
		opts = off, nopts = 1;
	else if (!strcmp(policy, "pindown"))
		opts = pindown, nopts = 2;
	else if (strcmp(policy, "lazy"))
		die("policy is off, pindown or lazy", -EINVAL);
	rc = rpfs_init_opts(NULL, opts, nopts, &c);
	if (rc)
		die("init", rc);
	rc = rpfs_create(c, cfg->path, 0644, RPFS_O_RDWR, NULL, &f);
	if (rc)
		die(cfg->path, rc);
	for (int i = 0; i < POOL; i++) {
		wpool[i] = map(cfg->size);
		rpool[i] = map(cfg->size);
	}
	for (int i = 0; i < cfg->ops; i++) {
		int reused = (int)(rnd(&seed) % 100) < reuse;
		unsigned char *w = reused ? wpool[i % POOL] : map(cfg->size);
		unsigned char *r = reused ? rpool[i % POOL] : map(cfg->size);
		uint64_t off = (uint64_t)(i % 16) * cfg->size;
		double t0;
		ssize_t n;

		fill(w, cfg->size, seed + (uint64_t)i);
		memcpy(check, w, cfg->size);
		t0 = now();
		n = rpfs_pwrite(f, w, cfg->size, off);
		t[0] += now() - t0;
		if (n != (ssize_t)cfg->size)
			die("pwrite", n < 0 ? (int)n : -EIO);
		memset(r, 0, cfg->size);
		t0 = now();
		n = rpfs_pread(f, r, cfg->size, off);
		t[1] += now() - t0;
		if (n != (ssize_t)cfg->size)
			die("pread", n < 0 ? (int)n : -EIO);
		if (memcmp(r, check, cfg->size)) {
			fprintf(stderr,
				"rcache_reuse: %s, %d%% reuse: operation %d read "
				"back wrong data\n",
				policy, reuse, i);
			exit(1);
		}
		if (!reused) {
			munmap(w, cfg->size);
			munmap(r, cfg->size);
		}
	}
	for (int i = 0; i < 2; i++)
		printf("rcache,rpfs,%s,%s;reuse=%d;size=%zu,%.6g,MB/s\n",
		       i ? "read" : "write", policy, reuse, cfg->size,
		       (double)cfg->size * cfg->ops / t[i] / 1e6);
	rpfs_close(f);
	rc = rpfs_remove(c, cfg->path);
	if (rc)
		die("remove", rc);
	rpfs_finalize(c);
	for (int i = 0; i < POOL; i++) {
		munmap(wpool[i], cfg->size);
		munmap(rpool[i], cfg->size);
	}
	munmap(check, cfg->size);
}

int main(int argc, char **argv)
{
	struct cfg cfg = {.size = (size_t)1 << 20, .ops = 200, .path = "/rcache.dat"};
	int i = 1;

	for (; i + 1 < argc && argv[i][0] == '-' && argv[i][1] == '-'; i += 2) {
		if (!strcmp(argv[i], "--size"))
			cfg.size = (size_t)strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--ops"))
			cfg.ops = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--file"))
			cfg.path = argv[i + 1];
		else
			break;
	}
	if (argc - i < 2 || cfg.size < 8 || cfg.size % 8 || cfg.ops < 1) {
		fprintf(stderr,
			"usage: rcache_reuse [--size BYTES] [--ops N] [--file /path] "
			"off|pindown|lazy REUSE%%...\n");
		return 2;
	}
	for (int k = i + 1; k < argc; k++)
		run(&cfg, argv[i], atoi(argv[k]));
	fprintf(stderr, "rcache_reuse: %s: every read verified\n", argv[i]);
	return 0;
}
