/* Two-level registration cache: see regcache.h for the model.
 *
 * Data structures, all under one mutex per cache:
 *  - the index: valid regions in an array sorted by start address, with a
 *    prefix maximum of end addresses (pmax[i] = max end of entries 0..i).
 *    pmax is non-decreasing, so "some region starting at or before lo ends
 *    at or after hi" is one binary search on start plus one on pmax: lookups
 *    are O(log n) even with overlapping regions. Insertion and removal
 *    memmove the tail and recompute pmax behind the change, O(n) but with
 *    n in the thousands that is a few microseconds, and they happen only on
 *    misses and deregistrations, which cost a registration syscall anyway.
 *    Invalidation visits the entries between the first whose pmax passes
 *    the range and the last starting inside it: O(log n + k) unless one
 *    huge region precedes many small ones;
 *  - the unused list: valid regions with no reference, most recently
 *    released first;
 *  - the zombie list: invalidated regions still referenced, deregistered
 *    by their last rcache_put;
 *  - the pending list: ranges being registered right now (see rcache_get).
 * Every list (list.h) takes new members at the front and gives up its
 * oldest from the back.
 *
 * Overlapping buffers are not merged: a buffer that overlaps a region
 * without being covered by it gets its own registration of its own pages.
 * Merging would register (and pin) pages nobody asked for, grow regions
 * without bound along adjacent buffers, and make one free anywhere in the
 * merged span invalidate all of it; referenced regions could not be
 * replaced by the merged one anyway. The index handles overlaps in
 * O(log n), so the cost of not merging is only the duplicate pages.
 *
 * Lazy deregistration: when the unused list grows past params.batch, its
 * older half (down to batch / 2 regions) is deregistered in one batch, so
 * the most recently released buffers stay warm and the batch cost is
 * amortized over batch / 2 puts. Limits (max_entries, max_bytes) evict
 * unused regions, least recently used first, when a region is added or
 * released; referenced regions are never evicted, so a cache whose regions
 * are all in use may exceed its limits until they are released.
 *
 * pins_pages without working hooks (rcache_hooks_active() == 0): a free or
 * munmap would go unnoticed, and a registration that pins pages would keep
 * the old physical pages alive under a virtual address that now means other
 * memory. Keeping such a region after its last reference is unsafe, so
 * rcache_put deregisters it at once; while it is referenced the caller owns
 * the buffer, so concurrent gets of the same pages may still hit it.
 *
 * Reentrancy: the reg/dereg callbacks and this file call malloc and free,
 * which reach the memory hooks, which invalidate. Every entry point marks
 * its thread with rcache_hooks_enter(), so hooks fired from inside the cache
 * or its callbacks do nothing instead of taking the mutex again. Callbacks
 * run without the mutex: registrations are slow and must not stall other
 * threads' hits, and deregistrations are queued on a local list under the
 * mutex and run after unlocking. So a callback may even call back into the
 * cache without deadlock (the tests stage races so).
 *
 * A hook never deregisters: it fires inside whatever freed, and that may
 * be the fabric library itself, holding the lock its deregistration takes
 * (libfabric's tcp provider frees an MR's map entry under the domain lock:
 * deregistering a cached region from that free hung a client in
 * rpfs_finalize). The regions a hook drops leave the index at once, so no
 * lookup returns them, and wait on the deferred list until the next entry
 * point (get, find, put, invalidate, flush, drain, destroy) deregisters
 * them from the caller's own context. Their pages stay registered, never
 * used, until then. */
#define _GNU_SOURCE
#include "regcache.h"
#include "list.h"
#include "log.h"
#include "memhooks.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum rc_state {
	RC_INDEXED, /* valid: in the index, on the unused list iff refs == 0 */
	RC_ZOMBIE,  /* invalid: on the zombie list until its last put */
};

struct rc_region {
	struct rcache_region pub; /* handed out; container_of gets back here */
	uintptr_t start, end;	  /* pub.addr, pub.addr + pub.len */
	unsigned long refs;
	enum rc_state state;
	struct list_node link; /* unused, zombie or victims list */
};

struct rc_pending {
	uintptr_t start, end;
	int invalidated; /* an invalidation overlapped it meanwhile */
	struct list_node link;
};

struct rc_entry {
	uintptr_t start; /* copy of r->start: no pointer chase to search */
	uintptr_t pmax;	 /* max end over this entry and all before it */
	struct rc_region *r;
};

struct rc_index {
	struct rc_entry *e;
	size_t n, cap;
};

struct rcache {
	pthread_mutex_t lock;
	struct rcache_params params;
	struct rpfs_regops ops;
	uintptr_t page;
	int keep_unused; /* 0: pins_pages without hooks, see above */
	struct rc_index idx;
	struct list_node unused; /* most recently released first */
	struct list_node zombies;
	struct list_node deferred; /* dropped by hooks, not deregistered yet */
	struct list_node pending;
	struct rcache_stats st; /* entries, bytes, unused are live counters */
	struct rcache_hooknode hooknode;
};

void rcache_params_default(struct rcache_params *p)
{
	p->max_entries = 1024;
	p->max_bytes = (size_t)1 << 30;
	p->batch = 32;
	p->pins_pages = 0;
}

/* --- index ------------------------------------------------------------- */

/* Number of entries starting at or before key. */
static size_t idx_upper(const struct rc_index *ix, uintptr_t key)
{
	size_t lo = 0, hi = ix->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ix->e[mid].start <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* First entry below lim whose pmax is above key, or lim. */
static size_t idx_pmax_above(const struct rc_index *ix, uintptr_t key, size_t lim)
{
	size_t lo = 0, hi = lim, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ix->e[mid].pmax <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void idx_fix_pmax(struct rc_index *ix, size_t from)
{
	uintptr_t m = from ? ix->e[from - 1].pmax : 0;
	size_t i;

	for (i = from; i < ix->n; i++) {
		if (ix->e[i].r->end > m)
			m = ix->e[i].r->end;
		ix->e[i].pmax = m;
	}
}

/* A region covering [lo, hi), hi > lo. With i entries starting at or before
 * lo, the first entry j whose pmax reaches hi is itself the region that
 * raised the maximum there, so it ends at or after hi, and j < i. */
static struct rc_region *idx_cover(const struct rc_index *ix, uintptr_t lo, uintptr_t hi)
{
	size_t i = idx_upper(ix, lo);

	if (!i || ix->e[i - 1].pmax < hi)
		return NULL;
	return ix->e[idx_pmax_above(ix, hi - 1, i)].r;
}

static int idx_insert(struct rc_index *ix, struct rc_region *r)
{
	struct rc_entry *e;
	size_t pos, cap;

	if (ix->n == ix->cap) {
		cap = ix->cap ? ix->cap * 2 : 64;
		e = realloc(ix->e, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		ix->e = e;
		ix->cap = cap;
	}
	pos = idx_upper(ix, r->start);
	memmove(&ix->e[pos + 1], &ix->e[pos], (ix->n - pos) * sizeof(ix->e[0]));
	ix->e[pos].start = r->start;
	ix->e[pos].r = r;
	ix->n++;
	idx_fix_pmax(ix, pos);
	return 0;
}

static void idx_remove(struct rc_index *ix, struct rc_region *r)
{
	size_t pos = idx_upper(ix, r->start);

	/* Regions sharing a start are few: scan back among them. */
	while (pos > 0 && ix->e[pos - 1].r != r)
		pos--;
	assert(pos > 0);
	pos--;
	memmove(&ix->e[pos], &ix->e[pos + 1], (ix->n - pos - 1) * sizeof(ix->e[0]));
	ix->n--;
	idx_fix_pmax(ix, pos);
}

/* --- regions ------------------------------------------------------------ */

static void rc_ref(struct rcache *rc, struct rc_region *r)
{
	if (!r->refs++) {
		list_remove(&r->link);
		rc->st.unused--;
	}
}

/* r leaves the cache: account for it and queue it for rc_dereg_list. r must
 * be off every list and out of the index. */
static void rc_retire(struct rcache *rc, struct rc_region *r, struct list_node *victims)
{
	rc->st.entries--;
	rc->st.bytes -= r->pub.len;
	rc->st.deregs++;
	list_push_front(victims, &r->link);
}

static void rc_unindex(struct rcache *rc, struct rc_region *r)
{
	idx_remove(&rc->idx, r);
	rcache_hooks_regions_add(-1);
}

/* Retire the least recently released unused region. */
static void rc_drop_lru(struct rcache *rc, struct list_node *victims)
{
	struct rc_region *r = list_entry(list_last(&rc->unused), struct rc_region, link);

	list_remove(&r->link);
	rc->st.unused--;
	rc_unindex(rc, r);
	rc_retire(rc, r, victims);
}

/* Lazy deregistration (see the top of the file), making room for a region
 * of add_bytes about to be added when add_entries is 1. */
static void rc_trim(struct rcache *rc, size_t add_entries, size_t add_bytes,
		    struct list_node *victims)
{
	const struct rcache_params *p = &rc->params;
	uint64_t before = rc->st.evictions;

	if (rc->st.unused > p->batch) {
		while (rc->st.unused > p->batch / 2) {
			rc_drop_lru(rc, victims);
			rc->st.evictions++;
		}
	}
	while (rc->st.unused && (rc->st.entries + add_entries > p->max_entries ||
				 rc->st.bytes + add_bytes > p->max_bytes)) {
		rc_drop_lru(rc, victims);
		rc->st.evictions++;
	}
	if (rc->st.evictions != before)
		rc->st.dereg_batches++;
}

/* Run the deregistrations queued under the mutex, without it. */
static void rc_dereg_list(struct rcache *rc, struct list_node *victims)
{
	struct rc_region *r;

	while (!list_empty(victims)) {
		r = list_entry(list_last(victims), struct rc_region, link);
		list_remove(&r->link);
		rc->ops.dereg(rc->ops.ctx, r->pub.handle);
		free(r);
	}
}

/* Register the pages [start, end) into a new region, without the mutex. */
static int rc_register(struct rcache *rc, uintptr_t start, uintptr_t end,
		       struct rc_region **out)
{
	struct rc_region *r;
	int ret;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	ret = rc->ops.reg(rc->ops.ctx, (void *)start, end - start, &r->pub.handle);
	if (ret) {
		free(r);
		return ret < 0 ? ret : -EIO;
	}
	r->pub.addr = (void *)start;
	r->pub.len = end - start;
	r->start = start;
	r->end = end;
	list_init(&r->link);
	*out = r;
	return 0;
}

/* Add a freshly registered region holding one reference. */
static void rc_add(struct rcache *rc, struct rc_region *r, int invalidated)
{
	r->refs = 1;
	rc->st.entries++;
	rc->st.bytes += r->pub.len;
	if (!invalidated && !idx_insert(&rc->idx, r)) {
		r->state = RC_INDEXED;
		rcache_hooks_regions_add(1);
		return;
	}
	/* Its memory changed while it was being registered, or the index
	 * cannot grow: it serves this reference only. */
	r->state = RC_ZOMBIE;
	list_push_front(&rc->zombies, &r->link);
}

/* --- public ------------------------------------------------------------- */

static void invalidate(struct rcache *rc, const void *addr, size_t len, bool from_hook);

/* The memory hooks' call for a range being freed or unmapped. */
static void hook_invalidate(struct rcache_hooknode *n, const void *addr, size_t len)
{
	invalidate(container_of(n, struct rcache, hooknode), addr, len, true);
}

/* Under the lock: what the hooks dropped joins victims (deregistered by
 * the caller after unlocking). */
static void rc_take_deferred(struct rcache *rc, struct list_node *victims)
{
	while (!list_empty(&rc->deferred)) {
		struct rc_region *r =
			list_entry(list_last(&rc->deferred), struct rc_region, link);

		list_remove(&r->link);
		list_push_front(victims, &r->link);
	}
}

int rcache_create(const struct rcache_params *p, const struct rpfs_regops *ops,
		  struct rcache **out)
{
	struct rcache *rc = NULL;
	long page;
	int ret;

	if (!ops || !ops->reg || !ops->dereg || !out)
		return -EINVAL;
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return -ENOMEM;
	ret = -pthread_mutex_init(&rc->lock, NULL);
	if (ret)
		goto out;
	if (p)
		rc->params = *p;
	else
		rcache_params_default(&rc->params);
	rc->ops = *ops;
	page = sysconf(_SC_PAGESIZE);
	rc->page = page > 0 && !(page & (page - 1)) ? (uintptr_t)page : 4096;
	list_init(&rc->unused);
	list_init(&rc->zombies);
	list_init(&rc->deferred);
	list_init(&rc->pending);
	rc->keep_unused = !(rc->params.pins_pages && !rcache_hooks_active());
	if (!rc->keep_unused)
		log_info(
			"rcache: memory hooks inactive, pinned registrations are released at their last put");
	rc->hooknode.invalidate = hook_invalidate;
	rcache_hooks_register(&rc->hooknode);
	*out = rc;
	rc = NULL;
out:
	free(rc);
	return ret;
}

void rcache_destroy(struct rcache *rc)
{
	struct list_node victims;
	struct rc_region *r;
	size_t i, busy = 0;

	if (!rc)
		return;
	/* First, so that no hook is inside this cache or enters it again. */
	rcache_hooks_unregister(&rc->hooknode);
	list_init(&victims);
	rcache_hooks_enter();
	pthread_mutex_lock(&rc->lock);
	for (i = 0; i < rc->idx.n; i++) {
		r = rc->idx.e[i].r;
		if (r->refs)
			busy++;
		list_remove(&r->link);
		list_push_front(&victims, &r->link);
	}
	rcache_hooks_regions_add(-(long)rc->idx.n);
	rc->idx.n = 0;
	while (!list_empty(&rc->zombies)) {
		r = list_entry(list_last(&rc->zombies), struct rc_region, link);
		busy++;
		list_remove(&r->link);
		list_push_front(&victims, &r->link);
	}
	rc_take_deferred(rc, &victims);
	pthread_mutex_unlock(&rc->lock);
	if (busy)
		log_err("rcache_destroy: %zu regions still referenced", busy);
	assert(!busy);
	rc_dereg_list(rc, &victims);
	free(rc->idx.e);
	pthread_mutex_destroy(&rc->lock);
	free(rc);
	rcache_hooks_exit();
}

int rcache_find(struct rcache *rc, const void *addr, size_t len,
		struct rcache_region **out)
{
	uintptr_t lo = (uintptr_t)addr;
	struct list_node victims;
	struct rc_region *r;

	if (!rc || !out || !len || len > UINTPTR_MAX - lo)
		return -EINVAL;
	list_init(&victims);
	rcache_hooks_enter();
	pthread_mutex_lock(&rc->lock);
	r = idx_cover(&rc->idx, lo, lo + len);
	if (r) {
		rc_ref(rc, r);
		rc->st.hits++;
	}
	rc_take_deferred(rc, &victims);
	pthread_mutex_unlock(&rc->lock);
	rc_dereg_list(rc, &victims);
	rcache_hooks_exit();
	if (!r)
		return -ENOENT;
	*out = &r->pub;
	return 0;
}

int rcache_get(struct rcache *rc, const void *addr, size_t len,
	       struct rcache_region **out)
{
	uintptr_t lo = (uintptr_t)addr, hi, start, end;
	struct rc_region *r = NULL, *nr = NULL;
	struct rc_pending pend;
	struct list_node victims;
	int ret = 0;

	if (!rc || !out || !len || len > UINTPTR_MAX - lo)
		return -EINVAL;
	hi = lo + len;
	if (hi > UINTPTR_MAX - (rc->page - 1))
		return -EINVAL;
	start = lo & ~(rc->page - 1);
	end = (hi + rc->page - 1) & ~(rc->page - 1);
	list_init(&victims);

	rcache_hooks_enter();
	pthread_mutex_lock(&rc->lock);
	r = idx_cover(&rc->idx, lo, hi);
	if (r) {
		rc_ref(rc, r);
		rc->st.hits++;
		goto unlock;
	}
	rc->st.misses++;
	/* Register without the mutex. Invalidations meanwhile cannot see the
	 * region yet, so they mark the pending range instead; counting it in
	 * the hooks' region count keeps them from skipping it. */
	pend.start = start;
	pend.end = end;
	pend.invalidated = 0;
	list_push_front(&rc->pending, &pend.link);
	rcache_hooks_regions_add(1);
	pthread_mutex_unlock(&rc->lock);

	ret = rc_register(rc, start, end, &nr);

	pthread_mutex_lock(&rc->lock);
	list_remove(&pend.link);
	rcache_hooks_regions_add(-1);
	if (ret)
		goto unlock;
	r = idx_cover(&rc->idx, lo, hi);
	if (r) {
		/* Another thread registered these pages meanwhile: share its
		 * region rather than keep two. */
		rc_ref(rc, r);
		rc->st.deregs++;
		list_push_front(&victims, &nr->link);
		goto unlock;
	}
	rc_trim(rc, 1, nr->pub.len, &victims);
	rc_add(rc, nr, pend.invalidated);
	r = nr;
unlock:
	rc_take_deferred(rc, &victims);
	pthread_mutex_unlock(&rc->lock);
	rc_dereg_list(rc, &victims);
	if (!ret)
		*out = &r->pub;
	rcache_hooks_exit();
	return ret;
}

void rcache_put(struct rcache *rc, struct rcache_region *pub)
{
	struct list_node victims;
	struct rc_region *r;

	if (!rc || !pub)
		return;
	r = container_of(pub, struct rc_region, pub);
	list_init(&victims);
	rcache_hooks_enter();
	pthread_mutex_lock(&rc->lock);
	assert(r->refs > 0);
	if (!r->refs) {
		log_err("rcache_put: region %p has no reference", pub->addr);
		goto unlock;
	}
	if (--r->refs)
		goto unlock;
	if (r->state == RC_ZOMBIE) {
		list_remove(&r->link);
		rc_retire(rc, r, &victims);
	} else if (!rc->keep_unused) {
		rc_unindex(rc, r);
		rc_retire(rc, r, &victims);
	} else {
		list_push_front(&rc->unused, &r->link);
		rc->st.unused++;
		rc_trim(rc, 0, 0, &victims);
	}
unlock:
	rc_take_deferred(rc, &victims);
	pthread_mutex_unlock(&rc->lock);
	rc_dereg_list(rc, &victims);
	rcache_hooks_exit();
}

/* Drop from the index every region overlapping [lo, hi): the entries that
 * can overlap lie between the first whose pmax passes lo and the last that
 * starts before hi. Survivors are compacted in place. */
static void rc_invalidate_locked(struct rcache *rc, uintptr_t lo, uintptr_t hi,
				 struct list_node *victims)
{
	struct rc_index *ix = &rc->idx;
	size_t last = idx_upper(ix, hi - 1);
	size_t first = idx_pmax_above(ix, lo, last);
	size_t k, w = first;
	struct rc_region *r;

	for (k = first; k < last; k++) {
		r = ix->e[k].r;
		if (r->end <= lo) {
			ix->e[w++] = ix->e[k];
			continue;
		}
		rc->st.invalidations++;
		if (r->refs) {
			r->state = RC_ZOMBIE;
			list_push_front(&rc->zombies, &r->link);
		} else {
			list_remove(&r->link);
			rc->st.unused--;
			rc_retire(rc, r, victims);
		}
	}
	if (w == last)
		return;
	memmove(&ix->e[w], &ix->e[last], (ix->n - last) * sizeof(ix->e[0]));
	ix->n -= last - w;
	rcache_hooks_regions_add(-(long)(last - w));
	idx_fix_pmax(ix, first);
}

static void invalidate(struct rcache *rc, const void *addr, size_t len, bool from_hook)
{
	uintptr_t lo = (uintptr_t)addr, hi;
	struct rc_pending *p;
	struct list_node victims, *l;

	if (!rc || !len)
		return;
	hi = len > UINTPTR_MAX - lo ? UINTPTR_MAX : lo + len;
	list_init(&victims);
	rcache_hooks_enter();
	pthread_mutex_lock(&rc->lock);
	list_foreach(&rc->pending, l) {
		p = list_entry(l, struct rc_pending, link);
		if (p->start < hi && p->end > lo && !p->invalidated) {
			p->invalidated = 1;
			rc->st.invalidations++;
		}
	}
	/* A hook's victims wait for an entry point (see the top). */
	rc_invalidate_locked(rc, lo, hi, from_hook ? &rc->deferred : &victims);
	if (!from_hook)
		rc_take_deferred(rc, &victims);
	pthread_mutex_unlock(&rc->lock);
	rc_dereg_list(rc, &victims);
	rcache_hooks_exit();
}

void rcache_invalidate(struct rcache *rc, const void *addr, size_t len)
{
	invalidate(rc, addr, len, false);
}

void rcache_drain(struct rcache *rc)
{
	struct list_node victims;

	if (!rc)
		return;
	list_init(&victims);
	rcache_hooks_enter();
	pthread_mutex_lock(&rc->lock);
	rc_take_deferred(rc, &victims);
	pthread_mutex_unlock(&rc->lock);
	rc_dereg_list(rc, &victims);
	rcache_hooks_exit();
}

void rcache_flush(struct rcache *rc)
{
	struct list_node victims;

	if (!rc)
		return;
	list_init(&victims);
	rcache_hooks_enter();
	pthread_mutex_lock(&rc->lock);
	/* A flush is asked for, not an eviction: it counts as a batch only. */
	if (rc->st.unused)
		rc->st.dereg_batches++;
	while (rc->st.unused)
		rc_drop_lru(rc, &victims);
	rc_take_deferred(rc, &victims);
	pthread_mutex_unlock(&rc->lock);
	rc_dereg_list(rc, &victims);
	rcache_hooks_exit();
}

void rcache_get_stats(struct rcache *rc, struct rcache_stats *st)
{
	if (!rc || !st)
		return;
	pthread_mutex_lock(&rc->lock);
	*st = rc->st;
	pthread_mutex_unlock(&rc->lock);
}
