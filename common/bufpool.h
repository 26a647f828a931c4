/* Zoned buffer pool for pipelined bulk transfers ("PVFS over InfiniBand",
 * section 4.4).
 *
 * Zones of power-of-two buffer sizes from min_buf (64 KiB) to max_buf
 * (2 MiB), each zone one allocation registered once at creation, so the data
 * path never registers memory. A request for n bytes gets, in order of
 * preference: a free buffer of the smallest zone >= n (exact zone); else a
 * free buffer of a larger zone; else several smaller buffers that together
 * cover n (split). */
#ifndef RPFS_BUFPOOL_H
#define RPFS_BUFPOOL_H

#include <stddef.h>

#include "regops.h"

struct bpool;

struct bpool_params {
	size_t min_buf;	   /* smallest zone's buffer size, power of two */
	size_t max_buf;	   /* largest zone's buffer size, power of two */
	size_t zone_bytes; /* bytes per zone (buffers = zone_bytes / size) */
};

struct bpool_buf {
	void *addr;
	size_t len;    /* the zone's buffer size (may exceed what was asked) */
	void *handle;  /* registration handle of the zone (rpfs_regops.reg) */
	size_t offset; /* offset of addr inside its zone's registration */
	int zone;      /* zone index, for bpool_put */
};

/* Defaults: 64 KiB to 2 MiB buffers, 8 MiB per zone. */
void bpool_params_default(struct bpool_params *p);
/* Allocate and register every zone (zone_bytes / size buffers each; a rest
 * smaller than one buffer is not allocated). -EINVAL when min_buf or max_buf is
 * not a power of two, min_buf > max_buf or zone_bytes < max_buf; else 0,
 * -ENOMEM or the error of ops->reg. */
int bpool_create(const struct bpool_params *p, const struct rpfs_regops *ops,
		 struct bpool **out);
void bpool_destroy(struct bpool *bp);

/* Get buffers covering len bytes (see above), at most max_bufs of them.
 * Buffers are taken one at a time for the uncovered rest r, capped at max_buf:
 * the smallest free zone >= r, else the largest free zone < r. So len <= max_buf
 * gets one buffer if a zone >= len has one free, else a split (largest smaller
 * buffers first, the last one fitted to the remainder); len > max_buf gets a
 * sequence of max_buf (or, when those run out, smaller) buffers, which the
 * caller pipelines. Returns the number of buffers (> 0) and sets *got to the
 * bytes they cover, which is >= len unless max_bufs or free buffers ran out
 * (then *got < len and the caller moves the rest later). Returns -EAGAIN when
 * no buffer is free, -EINVAL for len == 0, max_bufs < 1 or NULL bufs/got.
 * Thread-safe. */
int bpool_get(struct bpool *bp, size_t len, struct bpool_buf *bufs, int max_bufs,
	      size_t *got);
/* Return one buffer exactly as bpool_get filled it in. */
void bpool_put(struct bpool *bp, const struct bpool_buf *buf);

/* Free buffers and bytes, over all zones (for tests and statistics). */
size_t bpool_free_bytes(struct bpool *bp);
size_t bpool_total_bytes(struct bpool *bp);

#endif
