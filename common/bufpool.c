/* Zoned buffer pool: see bufpool.h.
 *
 * The server stages bulk transfers through these buffers, so they are
 * registered once, at creation, and the data path only pushes and pops
 * indices. Each zone is one page-aligned allocation carved into equal
 * power-of-two buffers, with one registration handle for the whole zone; a
 * buffer is identified by (zone, index) and its free list is a stack of
 * indices, so get and put are O(1) per buffer plus a scan over the few zones.
 * One mutex guards everything: the critical sections are a handful of
 * instructions, and buffers are held for a whole network transfer. */
#include "bufpool.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

struct bpool_zone {
	char *base;  /* page-aligned allocation of nbufs * size bytes */
	size_t size; /* buffer size, power of two */
	size_t nbufs;
	void *handle;	  /* ops->reg handle for [base, base + nbufs * size) */
	size_t *free_idx; /* stack of free buffer indices */
	size_t nfree;	  /* stack depth */
	bool *in_use;	  /* per buffer, to catch double and foreign puts */
};

struct bpool {
	pthread_mutex_t lock;
	struct rpfs_regops ops;
	struct bpool_zone *zones; /* ascending buffer size */
	int nzones;
	size_t free_bytes;
	size_t total_bytes;
};

static bool is_pow2(size_t x)
{
	return x && !(x & (x - 1));
}

void bpool_params_default(struct bpool_params *p)
{
	p->min_buf = 64 * 1024;
	p->max_buf = 2 * 1024 * 1024;
	p->zone_bytes = 8 * 1024 * 1024;
}

static int check_params(const struct bpool_params *p)
{
	if (!is_pow2(p->min_buf) || !is_pow2(p->max_buf))
		return -EINVAL;
	if (p->min_buf > p->max_buf || p->zone_bytes < p->max_buf)
		return -EINVAL;
	return 0;
}

/* Release zones [0, nzones): those with a handle were registered. */
static void free_zones(struct bpool *bp, int nzones)
{
	for (int i = 0; i < nzones; i++) {
		struct bpool_zone *z = &bp->zones[i];

		if (z->handle)
			bp->ops.dereg(bp->ops.ctx, z->handle);
		free(z->base);
		free(z->free_idx);
		free(z->in_use);
	}
	free(bp->zones);
}

static int init_zone(struct bpool *bp, struct bpool_zone *z, size_t size,
		     size_t zone_bytes)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t bytes;
	void *mem;
	int ret;

	z->size = size;
	z->nbufs = zone_bytes / size;
	bytes = z->nbufs * size;
	if (page <= 0)
		page = 4096;
	/* Page alignment keeps registration from pinning neighbouring heap
	 * pages and lets every buffer start on a page. */
	ret = posix_memalign(&mem, (size_t)page, bytes);
	if (ret) {
		ret = -ret;
		goto out;
	}
	z->base = mem;
	z->free_idx = calloc(z->nbufs, sizeof(*z->free_idx));
	z->in_use = calloc(z->nbufs, sizeof(*z->in_use));
	if (!z->free_idx || !z->in_use) {
		ret = -ENOMEM;
		goto out;
	}
	/* Lowest index on top, so a fresh pool hands out buffers in address
	 * order; nothing depends on it, it only makes dumps easier to read. */
	for (size_t i = 0; i < z->nbufs; i++)
		z->free_idx[i] = z->nbufs - 1 - i;
	z->nfree = z->nbufs;
	ret = bp->ops.reg(bp->ops.ctx, z->base, bytes, &z->handle);
	if (ret) {
		z->handle = NULL;
		log_err("bufpool: registering %zu-byte zone of %zu-byte buffers: %d",
			bytes, size, ret);
		goto out;
	}
	bp->total_bytes += bytes;
out:
	return ret;
}

int bpool_create(const struct bpool_params *p, const struct rpfs_regops *ops,
		 struct bpool **out)
{
	struct bpool *bp = NULL;
	int built = 0;
	int ret;

	*out = NULL;
	if (!p || !ops || !ops->reg || !ops->dereg) {
		ret = -EINVAL;
		goto out;
	}
	ret = check_params(p);
	if (ret)
		goto out;
	bp = calloc(1, sizeof(*bp));
	if (!bp) {
		ret = -ENOMEM;
		goto out;
	}
	bp->ops = *ops;
	/* log2(max / min) + 1 zones; shifting the ratio cannot overflow. */
	for (size_t r = p->max_buf / p->min_buf; r; r >>= 1)
		bp->nzones++;
	bp->zones = calloc(bp->nzones, sizeof(*bp->zones));
	if (!bp->zones) {
		ret = -ENOMEM;
		goto out;
	}
	for (built = 0; built < bp->nzones; built++) {
		/* Count the zone before init so a half-built one is freed too. */
		ret = init_zone(bp, &bp->zones[built], p->min_buf << built,
				p->zone_bytes);
		if (ret) {
			built++;
			goto out;
		}
	}
	ret = pthread_mutex_init(&bp->lock, NULL);
	if (ret) {
		ret = -ret;
		goto out;
	}
	bp->free_bytes = bp->total_bytes;
	*out = bp;
out:
	if (ret && bp) {
		if (bp->zones)
			free_zones(bp, built);
		free(bp);
	}
	return ret;
}

void bpool_destroy(struct bpool *bp)
{
	if (!bp)
		return;
	/* A buffer still out may be the target of an RDMA operation; say so,
	 * since deregistering under it turns into a remote access error. */
	if (bp->free_bytes != bp->total_bytes)
		log_warn("bufpool: destroyed with %zu of %zu bytes still in use",
			 bp->total_bytes - bp->free_bytes, bp->total_bytes);
	free_zones(bp, bp->nzones);
	pthread_mutex_destroy(&bp->lock);
	free(bp);
}

/* Zone to take the next buffer from for a rest of r bytes (r <= max_buf):
 * the smallest zone >= r with a free buffer, else the largest smaller one.
 * -1 when the pool is empty. Caller holds the lock. */
static int pick_zone(const struct bpool *bp, size_t r)
{
	int first = 0;

	while (first < bp->nzones - 1 && bp->zones[first].size < r)
		first++;
	for (int i = first; i < bp->nzones; i++)
		if (bp->zones[i].nfree)
			return i;
	for (int i = first - 1; i >= 0; i--)
		if (bp->zones[i].nfree)
			return i;
	return -1;
}

int bpool_get(struct bpool *bp, size_t len, struct bpool_buf *bufs, int max_bufs,
	      size_t *got)
{
	size_t max_buf = bp->zones[bp->nzones - 1].size;
	size_t covered = 0;
	int n = 0;

	if (!len || max_bufs < 1 || !bufs || !got)
		return -EINVAL;
	pthread_mutex_lock(&bp->lock);
	while (n < max_bufs && covered < len) {
		size_t rest = len - covered;
		struct bpool_zone *z;
		struct bpool_buf *b;
		size_t idx;
		int zi;

		zi = pick_zone(bp, rest < max_buf ? rest : max_buf);
		if (zi < 0)
			break;
		z = &bp->zones[zi];
		idx = z->free_idx[--z->nfree];
		assert(!z->in_use[idx]);
		z->in_use[idx] = true;
		b = &bufs[n++];
		b->offset = idx * z->size;
		b->addr = z->base + b->offset;
		b->len = z->size;
		b->handle = z->handle;
		b->zone = zi;
		covered += z->size;
	}
	bp->free_bytes -= covered;
	pthread_mutex_unlock(&bp->lock);
	*got = covered;
	return n ? n : -EAGAIN;
}

/* Index of buf in its zone, or false when buf is not one of ours. */
static bool buf_index(const struct bpool *bp, const struct bpool_buf *buf, size_t *idx)
{
	const struct bpool_zone *z;
	size_t off;

	if (buf->zone < 0 || buf->zone >= bp->nzones)
		return false;
	z = &bp->zones[buf->zone];
	if ((char *)buf->addr < z->base)
		return false;
	off = (size_t)((char *)buf->addr - z->base);
	*idx = off / z->size;
	return *idx < z->nbufs && off % z->size == 0 && off == buf->offset &&
	       buf->len == z->size && buf->handle == z->handle;
}

void bpool_put(struct bpool *bp, const struct bpool_buf *buf)
{
	struct bpool_zone *z;
	bool ok;
	size_t idx = 0;

	ok = buf_index(bp, buf, &idx);
	assert(ok);
	if (!ok)
		goto bad;
	z = &bp->zones[buf->zone];
	pthread_mutex_lock(&bp->lock);
	/* A double put would push the index twice and hand the buffer to two
	 * transfers at once; refuse it even when asserts are compiled out. */
	ok = z->in_use[idx];
	assert(ok);
	if (ok) {
		z->in_use[idx] = false;
		z->free_idx[z->nfree++] = idx;
		bp->free_bytes += z->size;
	}
	pthread_mutex_unlock(&bp->lock);
	if (!ok)
		goto bad;
	return;
bad:
	log_err("bufpool: put of foreign or free buffer %p (zone %d)", buf->addr,
		buf->zone);
}

size_t bpool_free_bytes(struct bpool *bp)
{
	size_t n;

	pthread_mutex_lock(&bp->lock);
	n = bp->free_bytes;
	pthread_mutex_unlock(&bp->lock);
	return n;
}

size_t bpool_total_bytes(struct bpool *bp)
{
	/* Fixed at creation: no lock needed. */
	return bp->total_bytes;
}
