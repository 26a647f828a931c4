/* Two-level registration cache ("PVFS over InfiniBand", section 4.3).
 *
 * Level 1, the pin-down cache: registered regions looked up by address
 * range, with reference counts; rcache_put() only drops a reference.
 * Level 2, lazy deregistration: unreferenced regions wait on an LRU list and
 * are deregistered in batches once the list passes a threshold (or the cache
 * passes its entry/byte limits).
 *
 * Correctness when the application frees or unmaps a cached buffer: the
 * memory hooks (memhooks.c) intercept free, munmap, mremap and madvise and
 * call rcache_invalidate() on every live cache for the affected range, so a
 * later buffer at the same address gets a fresh registration. Where the
 * hooks cannot be first in symbol lookup order (rcache_hooks_active() is 0)
 * and registrations pin pages (params.pins_pages), the cache does not keep
 * unreferenced regions at all: every put deregisters. */
#ifndef RPFS_REGCACHE_H
#define RPFS_REGCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "regops.h"

struct rcache;

struct rcache_params {
	size_t max_entries; /* registered regions kept (referenced + unused) */
	size_t max_bytes;   /* bytes registered in all regions */
	unsigned batch;	    /* deregister when the unused list passes this */
	int pins_pages;	    /* registrations pin physical pages (verbs) */
};

/* A cached registration; callers read it, never write it. */
struct rcache_region {
	void *addr;   /* page-aligned start of the registered range */
	size_t len;   /* page-aligned length */
	void *handle; /* from rpfs_regops.reg */
};

struct rcache_stats {
	uint64_t hits, misses;
	uint64_t invalidations; /* regions dropped by rcache_invalidate */
	uint64_t evictions;	/* unused regions dropped for limits or batches */
	uint64_t dereg_batches; /* times a batch of deregistrations ran */
	uint64_t deregs;	/* regions deregistered in total */
	size_t entries, bytes, unused;
};

void rcache_params_default(struct rcache_params *p);

int rcache_create(const struct rcache_params *p, const struct rpfs_regops *ops,
		  struct rcache **out);
/* Deregisters everything; regions still referenced are a caller bug (asserted). */
void rcache_destroy(struct rcache *rc);

/* Find a valid region covering [addr, addr + len) or register one; takes a
 * reference. Returns 0 or a negative errno from the reg callback. */
int rcache_get(struct rcache *rc, const void *addr, size_t len,
	       struct rcache_region **out);
/* Lookup only: a valid region covering [addr, addr + len) with a reference
 * taken, or -ENOENT without registering anything (the fast path copies
 * instead of registering). */
int rcache_find(struct rcache *rc, const void *addr, size_t len,
		struct rcache_region **out);
/* Drop a reference taken by rcache_get or rcache_find. */
void rcache_put(struct rcache *rc, struct rcache_region *r);
/* The range [addr, addr + len) is no longer the memory it was: no lookup
 * may return a region overlapping it again. The regions it drops are
 * deregistered before it returns (with those the memory hooks dropped). */
void rcache_invalidate(struct rcache *rc, const void *addr, size_t len);
/* Deregister the regions the memory hooks dropped (every other entry
 * point does it too: see regcache.c, "Reentrancy"). */
void rcache_drain(struct rcache *rc);
/* Deregister every unreferenced region now. */
void rcache_flush(struct rcache *rc);
void rcache_get_stats(struct rcache *rc, struct rcache_stats *st);

#endif
