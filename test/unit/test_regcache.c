/* Unit tests for the registration cache (regcache.c) and the memory hooks
 * (memhooks.c).
 *
 * Registration is faked: fake_reg hands out numbered handles and counts
 * registrations and deregistrations, so each test states exactly which
 * registrations the cache must keep, share or drop. Buffers come from mmap
 * unless a test is about malloc, so that unrelated frees (Check's own) never
 * touch their pages. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memhooks.h"
#include "regcache.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* Address and thread sanitizers replace malloc/free (GCC and clang spellings). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZER_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZER_MALLOC 1
#endif
#endif

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

#define FAKE_LIVE 0x11feca5eu
#define FAKE_DEAD 0xdeadbeefu

struct fake_handle {
	unsigned magic;
	unsigned id;
	void *addr;
	size_t len;
};

struct fake {
	atomic_uint regs, deregs;
	atomic_uint next_id;
	atomic_uint last_dereg_id;
	atomic_uint bad;	     /* deregs of dead handles, checks of dead ones */
	int fail;		     /* reg returns this while non-zero */
	int churn;		     /* reg and dereg also malloc/free and mmap/munmap */
	void (*during_reg)(void);    /* run once inside the next reg: stands in for
				      * another thread acting while reg is slow */
	pthread_mutex_t *dereg_lock; /* dereg takes it, as a fabric library's
				      * MR close takes its domain's lock */
	atomic_uint dereg_lock_busy; /* deregs that found it held by their thread */
};

static struct fake fk;
static size_t pg;

/* Whether our free (and realloc) can run at all. The ASan (or TSan) runtime
 * precedes every library in lookup order and owns malloc/free; valgrind
 * redirects free in every object. Both leave munmap, mremap and madvise to
 * the hooks, so only the heap tests depend on this. */
static int free_hook_runs(void)
{
#ifdef SANITIZER_MALLOC
	return 0;
#else
	return !RUNNING_ON_VALGRIND;
#endif
}

static void churn(void)
{
	void *m = malloc(4096);
	void *p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);

	free(m);
	if (p != MAP_FAILED)
		munmap(p, pg);
}

static int fake_reg(void *ctx, void *addr, size_t len, void **handle)
{
	struct fake *f = ctx;
	struct fake_handle *h;

	if (f->fail)
		return f->fail;
	if (f->churn)
		churn();
	if (f->during_reg) {
		void (*fn)(void) = f->during_reg;

		f->during_reg = NULL;
		fn();
	}
	h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->magic = FAKE_LIVE;
	h->id = atomic_fetch_add(&f->next_id, 1) + 1;
	h->addr = addr;
	h->len = len;
	atomic_fetch_add(&f->regs, 1);
	*handle = h;
	return 0;
}

static void fake_dereg(void *ctx, void *handle)
{
	struct fake *f = ctx;
	struct fake_handle *h = handle;

	if (f->churn)
		churn();
	if (f->dereg_lock) {
		/* An error-checking mutex: taken again by its holder it says
		 * EDEADLK where the library's lock would hang. */
		if (pthread_mutex_lock(f->dereg_lock) == EDEADLK)
			atomic_fetch_add(&f->dereg_lock_busy, 1);
		else
			pthread_mutex_unlock(f->dereg_lock);
	}
	if (h->magic != FAKE_LIVE)
		atomic_fetch_add(&f->bad, 1);
	h->magic = FAKE_DEAD;
	atomic_store(&f->last_dereg_id, h->id);
	atomic_fetch_add(&f->deregs, 1);
	free(h);
}

static unsigned hid(const struct rcache_region *r)
{
	return ((const struct fake_handle *)r->handle)->id;
}

static struct rcache *make_cache(const struct rcache_params *p)
{
	struct rpfs_regops ops = {fake_reg, fake_dereg, &fk};
	struct rcache *rc = NULL;

	ck_assert_int_eq(rcache_create(p, &ops, &rc), 0);
	ck_assert_ptr_nonnull(rc);
	return rc;
}

static struct rcache *make_cache_batch(unsigned batch)
{
	struct rcache_params p;

	rcache_params_default(&p);
	p.batch = batch;
	return make_cache(&p);
}

static struct rcache_stats stats(struct rcache *rc)
{
	struct rcache_stats st;

	rcache_get_stats(rc, &st);
	return st;
}

static char *map_pages(size_t n)
{
	char *p = mmap(NULL, n * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	ck_assert_ptr_ne(p, MAP_FAILED);
	return p;
}

static struct rcache_region *get_ok(struct rcache *rc, const void *addr, size_t len)
{
	struct rcache_region *r = NULL;

	ck_assert_int_eq(rcache_get(rc, addr, len, &r), 0);
	ck_assert_ptr_nonnull(r);
	ck_assert((uintptr_t)r->addr <= (uintptr_t)addr);
	ck_assert((uintptr_t)r->addr + r->len >= (uintptr_t)addr + len);
	return r;
}

static void setup(void)
{
	memset(&fk, 0, sizeof(fk));
	pg = (size_t)sysconf(_SC_PAGESIZE);
}

/* --- pin-down cache ---------------------------------------------------- */

START_TEST(test_params_default)
{
	struct rcache_params p;

	rcache_params_default(&p);
	ck_assert_uint_eq(p.max_entries, 1024);
	ck_assert_uint_eq(p.max_bytes, (size_t)1 << 30);
	ck_assert_uint_eq(p.batch, 32);
	ck_assert_int_eq(p.pins_pages, 0);
}
END_TEST

START_TEST(test_miss_then_hit_on_same_buffer)
{
	struct rcache *rc = make_cache(NULL);
	char *buf = map_pages(4);
	struct rcache_region *a, *b;

	a = get_ok(rc, buf + 100, 3 * pg);
	ck_assert_uint_eq(stats(rc).misses, 1);
	ck_assert_uint_eq(fk.regs, 1);
	rcache_put(rc, a);
	b = get_ok(rc, buf + 100, 3 * pg);
	ck_assert_ptr_eq(b, a);
	ck_assert_uint_eq(stats(rc).hits, 1);
	ck_assert_uint_eq(fk.regs, 1);
	rcache_put(rc, b);
	rcache_destroy(rc);
	ck_assert_uint_eq(fk.deregs, 1);
	munmap(buf, 4 * pg);
}
END_TEST

START_TEST(test_registration_covers_whole_pages)
{
	struct rcache *rc = make_cache(NULL);
	char *buf = map_pages(4);
	struct rcache_region *r;

	/* 10 bytes straddling the first page boundary: two pages. */
	r = get_ok(rc, buf + pg - 5, 10);
	ck_assert_ptr_eq(r->addr, buf);
	ck_assert_uint_eq(r->len, 2 * pg);
	ck_assert_ptr_eq(((struct fake_handle *)r->handle)->addr, buf);
	ck_assert_uint_eq(((struct fake_handle *)r->handle)->len, 2 * pg);
	rcache_put(rc, r);
	rcache_destroy(rc);
	munmap(buf, 4 * pg);
}
END_TEST

START_TEST(test_hit_on_sub_range_inside_registered_pages)
{
	struct rcache *rc = make_cache(NULL);
	char *buf = map_pages(4);
	struct rcache_region *a, *b;

	a = get_ok(rc, buf + 100, 50);
	/* Another buffer in the same page needs no registration. */
	b = get_ok(rc, buf + 1000, 2000);
	ck_assert_ptr_eq(b, a);
	ck_assert_uint_eq(stats(rc).hits, 1);
	ck_assert_uint_eq(fk.regs, 1);
	rcache_put(rc, a);
	rcache_put(rc, b);
	rcache_destroy(rc);
	munmap(buf, 4 * pg);
}
END_TEST

START_TEST(test_overlapping_buffer_not_covered_gets_own_registration)
{
	struct rcache *rc = make_cache(NULL);
	char *buf = map_pages(4);
	struct rcache_region *a, *b, *c;

	a = get_ok(rc, buf, pg);
	b = get_ok(rc, buf + pg / 2, pg); /* pages 0-1: overlaps a, not covered */
	ck_assert_ptr_ne(b, a);
	ck_assert_ptr_eq(b->addr, buf);
	ck_assert_uint_eq(b->len, 2 * pg);
	ck_assert_uint_eq(fk.regs, 2);
	/* Both stay usable: a sub-range of page 0 hits one of them. */
	c = get_ok(rc, buf + 10, 10);
	ck_assert(c == a || c == b);
	ck_assert_uint_eq(stats(rc).entries, 2);
	rcache_put(rc, a);
	rcache_put(rc, b);
	rcache_put(rc, c);
	rcache_destroy(rc);
	ck_assert_uint_eq(fk.deregs, 2);
	munmap(buf, 4 * pg);
}
END_TEST

START_TEST(test_lookup_finds_covering_region_among_many_overlaps)
{
	/* Many regions starting before the buffer, only an early, long one
	 * covers it: the prefix-maximum search must still find it. */
	struct rcache *rc = make_cache(NULL);
	char *buf = map_pages(64);
	struct rcache_region *big, *small[32], *r;
	int i;

	big = get_ok(rc, buf, 64 * pg);
	for (i = 0; i < 32; i++)
		small[i] = get_ok(rc, buf + (size_t)i * pg + pg / 2, pg);
	ck_assert_uint_eq(fk.regs, 1); /* all covered by big so far */
	rcache_put(rc, big);
	r = get_ok(rc, buf + 40 * pg, 10 * pg);
	ck_assert_ptr_eq(r, big);
	rcache_put(rc, r);
	for (i = 0; i < 32; i++)
		rcache_put(rc, small[i]);
	rcache_destroy(rc);
	munmap(buf, 64 * pg);
}
END_TEST

START_TEST(test_get_rejects_empty_and_wrapping_ranges)
{
	struct rcache *rc = make_cache(NULL);
	struct rcache_region *r = NULL;
	char *buf = map_pages(1);

	ck_assert_int_eq(rcache_get(rc, buf, 0, &r), -EINVAL);
	ck_assert_int_eq(rcache_get(rc, (void *)(UINTPTR_MAX - 10), 100, &r), -EINVAL);
	ck_assert_uint_eq(fk.regs, 0);
	rcache_destroy(rc);
	munmap(buf, pg);
}
END_TEST

START_TEST(test_reg_failure_is_returned_and_nothing_is_cached)
{
	struct rcache *rc = make_cache(NULL);
	char *buf = map_pages(1);
	struct rcache_region *r = NULL;
	struct rcache_stats st;

	fk.fail = -ENOMEM;
	ck_assert_int_eq(rcache_get(rc, buf, 100, &r), -ENOMEM);
	ck_assert_ptr_null(r);
	st = stats(rc);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.bytes, 0);
	fk.fail = 0;
	r = get_ok(rc, buf, 100);
	ck_assert_uint_eq(stats(rc).misses, 2);
	rcache_put(rc, r);
	rcache_destroy(rc);
	munmap(buf, pg);
}
END_TEST

/* --- lazy deregistration ----------------------------------------------- */

START_TEST(test_put_keeps_registration_until_unused_list_passes_batch)
{
	struct rcache *rc = make_cache_batch(4);
	char *buf = map_pages(10);
	struct rcache_region *r[5];
	struct rcache_stats st;
	int i;

	/* Five one-page buffers, a page apart. */
	for (i = 0; i < 5; i++)
		r[i] = get_ok(rc, buf + (size_t)i * 2 * pg, 100);
	for (i = 0; i < 4; i++)
		rcache_put(rc, r[i]);
	st = stats(rc);
	ck_assert_uint_eq(st.unused, 4);
	ck_assert_uint_eq(st.deregs, 0);
	ck_assert_uint_eq(fk.deregs, 0);

	/* The fifth passes the batch: one batch deregisters the three least
	 * recently released, the two most recent stay cached. */
	rcache_put(rc, r[4]);
	st = stats(rc);
	ck_assert_uint_eq(st.dereg_batches, 1);
	ck_assert_uint_eq(st.deregs, 3);
	ck_assert_uint_eq(st.evictions, 3);
	ck_assert_uint_eq(st.unused, 2);
	ck_assert_uint_eq(st.entries, 2);
	ck_assert_uint_eq(fk.deregs, 3);

	rcache_put(rc, get_ok(rc, buf + 3 * 2 * pg, 100));
	rcache_put(rc, get_ok(rc, buf + 4 * 2 * pg, 100));
	ck_assert_uint_eq(stats(rc).hits, 2);
	rcache_put(rc, get_ok(rc, buf, 100));
	ck_assert_uint_eq(stats(rc).misses, 6);
	rcache_destroy(rc);
	munmap(buf, 10 * pg);
}
END_TEST

START_TEST(test_hit_takes_region_off_unused_list)
{
	struct rcache *rc = make_cache(NULL);
	char *buf = map_pages(1);
	struct rcache_region *r;

	rcache_put(rc, get_ok(rc, buf, 100));
	ck_assert_uint_eq(stats(rc).unused, 1);
	r = get_ok(rc, buf, 100);
	ck_assert_uint_eq(stats(rc).unused, 0);
	/* Referenced again, so a flush leaves it alone. */
	rcache_flush(rc);
	ck_assert_uint_eq(fk.deregs, 0);
	rcache_put(rc, r);
	rcache_flush(rc);
	ck_assert_uint_eq(fk.deregs, 1);
	ck_assert_uint_eq(stats(rc).entries, 0);
	rcache_destroy(rc);
	munmap(buf, pg);
}
END_TEST

START_TEST(test_max_entries_evicts_lru_unused_never_referenced)
{
	struct rcache_params p;
	struct rcache *rc;
	char *buf = map_pages(10);
	struct rcache_region *a, *b, *c, *d, *e;
	unsigned ida;

	rcache_params_default(&p);
	p.max_entries = 3;
	p.batch = 100;
	rc = make_cache(&p);
	a = get_ok(rc, buf, 100);
	b = get_ok(rc, buf + 2 * pg, 100);
	c = get_ok(rc, buf + 4 * pg, 100);
	ida = hid(a);
	rcache_put(rc, a);
	rcache_put(rc, b);
	/* Full: d evicts the least recently released, a; c is referenced. */
	d = get_ok(rc, buf + 6 * pg, 100);
	ck_assert_uint_eq(fk.deregs, 1);
	ck_assert_uint_eq(fk.last_dereg_id, ida);
	ck_assert_uint_eq(stats(rc).evictions, 1);
	ck_assert_uint_eq(stats(rc).entries, 3);

	/* All referenced: e is registered beyond the limit, nothing evicted. */
	b = get_ok(rc, buf + 2 * pg, 100);
	ck_assert_uint_eq(stats(rc).hits, 1);
	e = get_ok(rc, buf + 8 * pg, 100);
	ck_assert_uint_eq(fk.deregs, 1);
	ck_assert_uint_eq(stats(rc).entries, 4);
	/* Its release brings the cache back within the limit. */
	rcache_put(rc, e);
	ck_assert_uint_eq(fk.deregs, 2);
	ck_assert_uint_eq(stats(rc).entries, 3);

	rcache_put(rc, b);
	rcache_put(rc, c);
	rcache_put(rc, d);
	rcache_destroy(rc);
	ck_assert_uint_eq(fk.deregs, fk.regs);
	munmap(buf, 10 * pg);
}
END_TEST

START_TEST(test_max_bytes_evicts_lru_unused)
{
	struct rcache_params p;
	struct rcache *rc;
	char *buf = map_pages(12);
	struct rcache_region *a, *b, *c;
	unsigned ida;

	rcache_params_default(&p);
	p.max_bytes = 4 * pg;
	p.batch = 100;
	rc = make_cache(&p);
	a = get_ok(rc, buf, 2 * pg);
	b = get_ok(rc, buf + 4 * pg, 2 * pg);
	ida = hid(a);
	rcache_put(rc, a);
	rcache_put(rc, b);
	c = get_ok(rc, buf + 8 * pg, 2 * pg);
	ck_assert_uint_eq(fk.deregs, 1);
	ck_assert_uint_eq(fk.last_dereg_id, ida);
	ck_assert_uint_eq(stats(rc).bytes, 4 * pg);
	/* b survived. */
	rcache_put(rc, get_ok(rc, buf + 4 * pg, 2 * pg));
	ck_assert_uint_eq(stats(rc).hits, 1);
	rcache_put(rc, c);
	rcache_destroy(rc);
	munmap(buf, 12 * pg);
}
END_TEST

START_TEST(test_flush_deregisters_unused_keeps_referenced)
{
	struct rcache *rc = make_cache(NULL);
	char *buf = map_pages(4);
	struct rcache_region *held;
	struct rcache_stats st;

	rcache_put(rc, get_ok(rc, buf, 100));
	held = get_ok(rc, buf + 2 * pg, 100);
	rcache_flush(rc);
	st = stats(rc);
	ck_assert_uint_eq(fk.deregs, 1);
	ck_assert_uint_eq(st.entries, 1);
	ck_assert_uint_eq(st.unused, 0);
	ck_assert_uint_eq(st.dereg_batches, 1);
	rcache_put(rc, held);
	rcache_destroy(rc);
	munmap(buf, 4 * pg);
}
END_TEST

START_TEST(test_destroy_deregisters_everything)
{
	struct rcache *rc = make_cache(NULL);
	char *buf = map_pages(8);
	int i;

	for (i = 0; i < 4; i++)
		rcache_put(rc, get_ok(rc, buf + (size_t)i * 2 * pg, 100));
	ck_assert_uint_eq(fk.deregs, 0);
	rcache_destroy(rc);
	ck_assert_uint_eq(fk.regs, 4);
	ck_assert_uint_eq(fk.deregs, 4);
	ck_assert_uint_eq(fk.bad, 0);
	munmap(buf, 8 * pg);
}
END_TEST

#ifndef NDEBUG
START_TEST(test_destroy_with_reference_held_asserts)
{
	struct rcache *rc = make_cache(NULL);
	char *buf = map_pages(1);

	get_ok(rc, buf, 100);
	/* Quiet the expected error line and assertion message (this runs in
	 * a forked child). */
	ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
	rcache_destroy(rc); /* raises SIGABRT */
}
END_TEST
#endif

/* --- invalidation ------------------------------------------------------- */

START_TEST(test_invalidate_unreferenced_deregisters_now_next_get_misses)
{
	struct rcache *rc = make_cache(NULL);
	char *buf = map_pages(2);
	struct rcache_region *r;
	unsigned id;

	r = get_ok(rc, buf, 100);
	id = hid(r);
	rcache_put(rc, r);
	rcache_invalidate(rc, buf + 50, 1);
	ck_assert_uint_eq(fk.deregs, 1);
	ck_assert_uint_eq(fk.last_dereg_id, id);
	ck_assert_uint_eq(stats(rc).invalidations, 1);
	ck_assert_uint_eq(stats(rc).entries, 0);
	r = get_ok(rc, buf, 100);
	ck_assert_uint_eq(stats(rc).misses, 2);
	ck_assert_uint_ne(hid(r), id);
	rcache_put(rc, r);
	rcache_destroy(rc);
	munmap(buf, 2 * pg);
}
END_TEST

START_TEST(test_invalidate_referenced_defers_dereg_until_put)
{
	struct rcache *rc = make_cache(NULL);
	char *buf = map_pages(2);
	struct rcache_region *r, *r2;

	r = get_ok(rc, buf, 100);
	rcache_invalidate(rc, buf, pg);
	ck_assert_uint_eq(fk.deregs, 0);
	ck_assert_uint_eq(stats(rc).invalidations, 1);
	ck_assert_uint_eq(((struct fake_handle *)r->handle)->magic, FAKE_LIVE);
	/* Invalid: no lookup returns it again, even while it is referenced. */
	r2 = get_ok(rc, buf, 100);
	ck_assert_ptr_ne(r2, r);
	ck_assert_uint_eq(fk.regs, 2);
	rcache_put(rc, r);
	ck_assert_uint_eq(fk.deregs, 1);
	rcache_put(rc, r2);
	ck_assert_uint_eq(fk.deregs, 1); /* r2 is valid: cached */
	rcache_destroy(rc);
	munmap(buf, 2 * pg);
}
END_TEST

START_TEST(test_invalidate_spares_regions_outside_the_range)
{
	struct rcache *rc = make_cache(NULL);
	char *buf = map_pages(8);
	int i;

	for (i = 0; i < 4; i++)
		rcache_put(rc, get_ok(rc, buf + (size_t)i * 2 * pg, pg));
	/* Pages 2-4 hold the regions of pages 2 and 4. */
	rcache_invalidate(rc, buf + 2 * pg + 10, 2 * pg);
	ck_assert_uint_eq(stats(rc).invalidations, 2);
	ck_assert_uint_eq(fk.deregs, 2);
	rcache_put(rc, get_ok(rc, buf, pg));
	rcache_put(rc, get_ok(rc, buf + 6 * pg, pg));
	ck_assert_uint_eq(stats(rc).hits, 2);
	rcache_destroy(rc);
	munmap(buf, 8 * pg);
}
END_TEST

/* Registration runs without the cache mutex; these two tests act from
 * inside fake_reg where another thread could act meanwhile. */
static struct rcache *race_rc;
static char *race_buf;
static struct rcache_region *race_region;

static void race_invalidate(void)
{
	rcache_invalidate(race_rc, race_buf, pg);
}

static void race_get(void)
{
	race_region = get_ok(race_rc, race_buf, 100);
}

START_TEST(test_invalidation_during_registration_keeps_it_uncached)
{
	struct rcache_region *r;

	race_rc = make_cache(NULL);
	race_buf = map_pages(1);
	fk.during_reg = race_invalidate;
	r = get_ok(race_rc, race_buf, 100);
	ck_assert_uint_eq(stats(race_rc).invalidations, 1);
	/* It serves this reference, then goes. */
	ck_assert_uint_eq(((struct fake_handle *)r->handle)->magic, FAKE_LIVE);
	rcache_put(race_rc, r);
	ck_assert_uint_eq(fk.deregs, 1);
	ck_assert_uint_eq(stats(race_rc).entries, 0);
	rcache_put(race_rc, get_ok(race_rc, race_buf, 100));
	ck_assert_uint_eq(stats(race_rc).misses, 2);
	rcache_destroy(race_rc);
	munmap(race_buf, pg);
}
END_TEST

START_TEST(test_concurrent_misses_on_same_pages_share_one_region)
{
	struct rcache_region *r;

	race_rc = make_cache(NULL);
	race_buf = map_pages(1);
	fk.during_reg = race_get;
	r = get_ok(race_rc, race_buf + 8, 100);
	/* The inner get registered first; the outer one drops its own. */
	ck_assert_ptr_eq(r, race_region);
	ck_assert_uint_eq(fk.regs, 2);
	ck_assert_uint_eq(fk.deregs, 1);
	ck_assert_uint_eq(stats(race_rc).entries, 1);
	rcache_put(race_rc, r);
	rcache_put(race_rc, race_region);
	ck_assert_uint_eq(stats(race_rc).unused, 1);
	rcache_destroy(race_rc);
	ck_assert_uint_eq(fk.deregs, 2);
	munmap(race_buf, pg);
}
END_TEST

/* --- memory hooks -------------------------------------------------------- */

START_TEST(test_hooks_active_in_test_binary)
{
	/* librpfs-common is linked before libc: our free and munmap win,
	 * except under ASan and valgrind (see free_hook_runs). */
	ck_assert_int_eq(rcache_hooks_active(), free_hook_runs());
}
END_TEST

/* The bug the hooks exist for: freed memory comes back at the same address
 * with other pages behind it, and a cache hit would hand out the old
 * registration. */
START_TEST(test_munmap_then_mmap_at_same_address_misses)
{
	struct rcache *rc = make_cache(NULL);
	size_t sz = 1 << 20;
	char *a, *b;
	struct rcache_region *r;
	uint64_t inval;
	unsigned id;

	a = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(a, MAP_FAILED);
	memset(a, 'A', sz);
	r = get_ok(rc, a, sz);
	id = hid(r);
	ck_assert_uint_eq(stats(rc).misses, 1);
	rcache_put(rc, r);
	inval = stats(rc).invalidations;

	ck_assert_int_eq(munmap(a, sz), 0);
	/* Dropped at once; deregistered at the next call into the cache. */
	ck_assert_uint_eq(fk.deregs, 0);
	rcache_drain(rc);
	ck_assert_uint_eq(fk.deregs, 1);
	b = mmap(a, sz, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ck_assert_ptr_eq(b, a);
	memset(b, 'B', sz);

	r = get_ok(rc, b, sz);
	ck_assert_uint_eq(stats(rc).misses, 2);
	ck_assert_uint_ne(hid(r), id);
	ck_assert_uint_gt(stats(rc).invalidations, inval);
	rcache_put(rc, r);
	rcache_destroy(rc);
	munmap(b, sz);
}
END_TEST

START_TEST(test_free_then_malloc_misses)
{
	struct rcache *rc = make_cache(NULL);
	size_t sz = 1 << 20;
	struct rcache_region *r;
	uint64_t inval;
	char *a, *b;
	unsigned id;

	/* A fixed threshold keeps both buffers mmapped, so the second one
	 * usually gets the first one's address back. */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	a = malloc(sz);
	ck_assert_ptr_nonnull(a);
	memset(a, 'A', sz);
	r = get_ok(rc, a, sz);
	id = hid(r);
	rcache_put(rc, r);
	inval = stats(rc).invalidations;
	free(a);
	b = malloc(sz);
	ck_assert_ptr_nonnull(b);
	memset(b, 'B', sz);
	r = get_ok(rc, b, sz);
	/* Under ASan or valgrind their free runs instead of ours, so the
	 * cache cannot see this free (and their allocators keep b away from
	 * a's address). The munmap test above still covers the hooks there. */
	if (free_hook_runs()) {
		ck_assert_uint_eq(fk.last_dereg_id, id);
		ck_assert_uint_gt(stats(rc).invalidations, inval);
		ck_assert_uint_eq(stats(rc).misses, 2);
		ck_assert_uint_ne(hid(r), id);
	}
	rcache_put(rc, r);
	rcache_destroy(rc);
	free(b);
}
END_TEST

START_TEST(test_realloc_invalidates_old_buffer)
{
	struct rcache *rc = make_cache(NULL);
	struct rcache_region *r;
	char *a;

	a = malloc(64 * 1024);
	ck_assert_ptr_nonnull(a);
	rcache_put(rc, get_ok(rc, a, 64 * 1024));
	a = realloc(a, 2 << 20);
	ck_assert_ptr_nonnull(a);
	if (free_hook_runs()) {
		ck_assert_uint_ge(stats(rc).invalidations, 1);
		ck_assert_uint_eq(fk.deregs, 0);
		rcache_drain(rc);
		ck_assert_uint_eq(fk.deregs, 1);
	}
	r = get_ok(rc, a, 2 << 20);
	rcache_put(rc, r);
	rcache_destroy(rc);
	free(a);
}
END_TEST

/* A free or munmap inside the fabric library, under the lock its MR close
 * takes (libfabric's tcp provider frees an MR's map entry so): the hook
 * must not deregister there, or the thread waits for itself. The region
 * is dropped at once and deregistered by the next call into the cache. */
START_TEST(test_a_hook_never_deregisters_in_the_freeing_thread)
{
	struct rcache *rc = make_cache(NULL);
	char *buf = map_pages(4);
	pthread_mutexattr_t ma;
	pthread_mutex_t lib_lock;

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&lib_lock, &ma);
	fk.dereg_lock = &lib_lock;
	rcache_put(rc, get_ok(rc, buf, 4 * pg));

	pthread_mutex_lock(&lib_lock); /* "inside the library" */
	ck_assert_int_eq(munmap(buf, 2 * pg), 0);
	ck_assert_uint_eq(stats(rc).invalidations, 1);
	ck_assert_uint_eq(fk.deregs, 0);
	pthread_mutex_unlock(&lib_lock);

	ck_assert_int_eq(rcache_find(rc, buf + 2 * pg, pg, &(struct rcache_region *){0}),
			 -ENOENT);
	ck_assert_uint_eq(fk.deregs, 1); /* the find deregistered it */
	ck_assert_uint_eq(fk.dereg_lock_busy, 0);
	fk.dereg_lock = NULL;
	rcache_destroy(rc);
	munmap(buf + 2 * pg, 2 * pg);
	pthread_mutex_destroy(&lib_lock);
	pthread_mutexattr_destroy(&ma);
}
END_TEST

START_TEST(test_madvise_dontneed_invalidates_other_advice_does_not)
{
	struct rcache *rc = make_cache(NULL);
	char *buf = map_pages(4);

	rcache_put(rc, get_ok(rc, buf, 4 * pg));
	ck_assert_int_eq(madvise(buf, 4 * pg, MADV_WILLNEED), 0);
	ck_assert_uint_eq(stats(rc).invalidations, 0);
	ck_assert_int_eq(madvise(buf + pg, pg, MADV_DONTNEED), 0);
	ck_assert_uint_eq(stats(rc).invalidations, 1);
	rcache_drain(rc);
	ck_assert_uint_eq(fk.deregs, 1);
	rcache_destroy(rc);
	munmap(buf, 4 * pg);
}
END_TEST

START_TEST(test_mremap_invalidates_source_and_fixed_target)
{
	struct rcache *rc = make_cache(NULL);
	char *a = map_pages(2), *b = map_pages(2), *m;

	rcache_put(rc, get_ok(rc, a, 2 * pg));
	rcache_put(rc, get_ok(rc, b, 2 * pg));
	/* Variadic: the fifth argument only exists with MREMAP_FIXED. */
	m = mremap(a, 2 * pg, 2 * pg, MREMAP_MAYMOVE | MREMAP_FIXED, b);
	ck_assert_ptr_eq(m, b);
	ck_assert_uint_eq(stats(rc).invalidations, 2);
	rcache_drain(rc);
	ck_assert_uint_eq(fk.deregs, 2);
	rcache_put(rc, get_ok(rc, b, 2 * pg));
	ck_assert_uint_eq(stats(rc).misses, 3);
	rcache_destroy(rc);
	munmap(b, 2 * pg);
}
END_TEST

START_TEST(test_hooks_fired_inside_callbacks_do_not_deadlock)
{
	struct rcache *rc = make_cache_batch(0);
	char *buf = map_pages(4);
	int i;

	/* reg and dereg malloc, free, mmap and munmap while the cache holds
	 * regions: those hooks must be ignored, not re-enter the cache. */
	fk.churn = 1;
	for (i = 0; i < 100; i++)
		rcache_put(rc, get_ok(rc, buf + (size_t)(i % 2) * 2 * pg, 100));
	ck_assert_uint_eq(stats(rc).invalidations, 0);
	ck_assert_uint_eq(fk.regs, 100); /* batch 0: every put deregisters */
	rcache_destroy(rc);
	ck_assert_uint_eq(fk.deregs, fk.regs);
	munmap(buf, 4 * pg);
}
END_TEST

/* --- pins_pages without hooks ------------------------------------------ */

START_TEST(test_pinning_without_hooks_put_deregisters_immediately)
{
	struct rcache_params p;
	struct rcache *rc;
	char *buf = map_pages(2);
	struct rcache_region *a, *b;

	rcache_hooks_force_inactive(1);
	rcache_params_default(&p);
	p.pins_pages = 1;
	rc = make_cache(&p);
	rcache_hooks_force_inactive(0);

	rcache_put(rc, get_ok(rc, buf, 100));
	ck_assert_uint_eq(fk.deregs, 1);
	ck_assert_uint_eq(stats(rc).entries, 0);
	rcache_put(rc, get_ok(rc, buf, 100));
	ck_assert_uint_eq(stats(rc).misses, 2);

	/* While referenced, the region is still shared. */
	a = get_ok(rc, buf, 100);
	b = get_ok(rc, buf + 200, 100);
	ck_assert_ptr_eq(a, b);
	ck_assert_uint_eq(stats(rc).hits, 1);
	rcache_put(rc, a);
	ck_assert_uint_eq(fk.deregs, 2);
	rcache_put(rc, b);
	ck_assert_uint_eq(fk.deregs, 3);
	rcache_destroy(rc);
	munmap(buf, 2 * pg);
}
END_TEST

START_TEST(test_pinning_with_hooks_keeps_unused_regions)
{
	struct rcache_params p;
	struct rcache *rc;
	char *buf = map_pages(1);

	rcache_params_default(&p);
	p.pins_pages = 1;
	rc = make_cache(&p);
	rcache_put(rc, get_ok(rc, buf, 100));
	if (free_hook_runs()) {
		ck_assert_uint_eq(fk.deregs, 0);
		ck_assert_uint_eq(stats(rc).unused, 1);
	} else {
		/* Hooks inactive (see test_hooks_active_in_test_binary). */
		ck_assert_uint_eq(fk.deregs, 1);
	}
	rcache_destroy(rc);
	munmap(buf, pg);
}
END_TEST

/* --- threads -------------------------------------------------------------- */

#define MT_PAGES   20
#define MT_ITERS   10000
#define MT_THREADS 4

struct mt {
	struct rcache *rc;
	char *buf;
	atomic_int stop;
	atomic_uint bad;
	atomic_uint ninval; /* rcache_invalidate calls made */
	unsigned seed;
};

static void *mt_getput(void *arg)
{
	struct mt *m = arg;
	unsigned seed = m->seed + (unsigned)(uintptr_t)pthread_self();
	struct rcache_region *r;
	struct fake_handle *h;
	size_t off, len;
	int i;

	for (i = 0; i < MT_ITERS; i++) {
		/* Buffers start on 32 half-page slots and span up to two
		 * pages: they overlap often, so hits and misses mix. */
		off = (size_t)(rand_r(&seed) % 32) * (pg / 2);
		off += (size_t)rand_r(&seed) % 64;
		len = 1 + (size_t)rand_r(&seed) % (2 * pg);
		if (rcache_get(m->rc, m->buf + off, len, &r)) {
			atomic_fetch_add(&m->bad, 1);
			continue;
		}
		h = r->handle;
		/* Even if invalidated meanwhile, a referenced region stays
		 * registered and covers the buffer. */
		if (h->magic != FAKE_LIVE || (char *)r->addr > m->buf + off ||
		    (char *)r->addr + r->len < m->buf + off + len)
			atomic_fetch_add(&m->bad, 1);
		rcache_put(m->rc, r);
	}
	return NULL;
}

static void *mt_invalidator(void *arg)
{
	struct mt *m = arg;
	unsigned seed = 12345;
	size_t off, len;

	while (!atomic_load(&m->stop)) {
		off = (size_t)rand_r(&seed) % (MT_PAGES * pg);
		len = 1 + (size_t)rand_r(&seed) % (2 * pg);
		rcache_invalidate(m->rc, m->buf + off, len);
		atomic_fetch_add(&m->ninval, 1);
	}
	return NULL;
}

START_TEST(test_threads_get_put_while_another_invalidates)
{
	struct rcache_params p;
	struct mt m = {0};
	pthread_t t[MT_THREADS], inv;
	struct rcache_stats st;
	int i;

	rcache_params_default(&p);
	p.max_entries = 64; /* also exercise limit evictions */
	p.batch = 8;
	m.rc = make_cache(&p);
	m.buf = map_pages(MT_PAGES);
	m.seed = 42;
	ck_assert_int_eq(pthread_create(&inv, NULL, mt_invalidator, &m), 0);
	/* Make sure the invalidator is running before the workers. */
	while (!atomic_load(&m.ninval))
		sched_yield();
	for (i = 0; i < MT_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, mt_getput, &m), 0);
	for (i = 0; i < MT_THREADS; i++)
		pthread_join(t[i], NULL);
	atomic_store(&m.stop, 1);
	pthread_join(inv, NULL);

	ck_assert_uint_eq(m.bad, 0);
	rcache_flush(m.rc);
	st = stats(m.rc);
	ck_assert_uint_eq(st.hits + st.misses, MT_THREADS * MT_ITERS);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.bytes, 0);
	ck_assert_uint_eq(st.unused, 0);
	ck_assert_uint_eq(st.deregs, fk.deregs);
	rcache_destroy(m.rc);
	ck_assert_uint_eq(fk.regs, fk.deregs);
	ck_assert_uint_eq(fk.bad, 0);
	munmap(m.buf, MT_PAGES * pg);
}
END_TEST

static void *mt_malloc_getput_free(void *arg)
{
	struct mt *m = arg;
	unsigned seed = m->seed + (unsigned)(uintptr_t)pthread_self();
	struct rcache_region *r;
	size_t len;
	char *b;
	int i;

	for (i = 0; i < 2000; i++) {
		len = 1 + (size_t)rand_r(&seed) % (64 * 1024);
		b = malloc(len);
		if (!b || rcache_get(m->rc, b, len, &r)) {
			atomic_fetch_add(&m->bad, 1);
			free(b);
			continue;
		}
		memset(b, i, len);
		if (((struct fake_handle *)r->handle)->magic != FAKE_LIVE)
			atomic_fetch_add(&m->bad, 1);
		rcache_put(m->rc, r);
		free(b);
	}
	return NULL;
}

START_TEST(test_threads_malloc_get_put_free_through_the_hooks)
{
	struct mt m = {0};
	pthread_t t[MT_THREADS];
	struct rcache_stats st;
	int i;

	m.rc = make_cache_batch(16);
	m.seed = 7;
	for (i = 0; i < MT_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, mt_malloc_getput_free, &m),
				 0);
	for (i = 0; i < MT_THREADS; i++)
		pthread_join(t[i], NULL);
	ck_assert_uint_eq(m.bad, 0);
	if (free_hook_runs()) /* the frees reached the cache */
		ck_assert_uint_gt(stats(m.rc).invalidations, 0);
	rcache_flush(m.rc);
	st = stats(m.rc);
	ck_assert_uint_eq(st.entries, 0);
	rcache_destroy(m.rc);
	ck_assert_uint_eq(fk.regs, fk.deregs);
	ck_assert_uint_eq(fk.bad, 0);
}
END_TEST

static Suite *regcache_suite(void)
{
	Suite *s = suite_create("regcache");
	TCase *tc;

	tc = tcase_create("pin-down");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_params_default);
	tcase_add_test(tc, test_miss_then_hit_on_same_buffer);
	tcase_add_test(tc, test_registration_covers_whole_pages);
	tcase_add_test(tc, test_hit_on_sub_range_inside_registered_pages);
	tcase_add_test(tc, test_overlapping_buffer_not_covered_gets_own_registration);
	tcase_add_test(tc, test_lookup_finds_covering_region_among_many_overlaps);
	tcase_add_test(tc, test_get_rejects_empty_and_wrapping_ranges);
	tcase_add_test(tc, test_reg_failure_is_returned_and_nothing_is_cached);
	suite_add_tcase(s, tc);

	tc = tcase_create("lazy-dereg");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_put_keeps_registration_until_unused_list_passes_batch);
	tcase_add_test(tc, test_hit_takes_region_off_unused_list);
	tcase_add_test(tc, test_max_entries_evicts_lru_unused_never_referenced);
	tcase_add_test(tc, test_max_bytes_evicts_lru_unused);
	tcase_add_test(tc, test_flush_deregisters_unused_keeps_referenced);
	tcase_add_test(tc, test_destroy_deregisters_everything);
	suite_add_tcase(s, tc);

	tc = tcase_create("invalidate");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_invalidate_unreferenced_deregisters_now_next_get_misses);
	tcase_add_test(tc, test_invalidate_referenced_defers_dereg_until_put);
	tcase_add_test(tc, test_invalidate_spares_regions_outside_the_range);
	tcase_add_test(tc, test_invalidation_during_registration_keeps_it_uncached);
	tcase_add_test(tc, test_concurrent_misses_on_same_pages_share_one_region);
	suite_add_tcase(s, tc);

	tc = tcase_create("hooks");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_hooks_active_in_test_binary);
	tcase_add_test(tc, test_munmap_then_mmap_at_same_address_misses);
	tcase_add_test(tc, test_free_then_malloc_misses);
	tcase_add_test(tc, test_realloc_invalidates_old_buffer);
	tcase_add_test(tc, test_madvise_dontneed_invalidates_other_advice_does_not);
	tcase_add_test(tc, test_mremap_invalidates_source_and_fixed_target);
	tcase_add_test(tc, test_a_hook_never_deregisters_in_the_freeing_thread);
	tcase_add_test(tc, test_hooks_fired_inside_callbacks_do_not_deadlock);
	tcase_add_test(tc, test_pinning_without_hooks_put_deregisters_immediately);
	tcase_add_test(tc, test_pinning_with_hooks_keeps_unused_regions);
	suite_add_tcase(s, tc);

	tc = tcase_create("threads");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_threads_get_put_while_another_invalidates);
	tcase_add_test(tc, test_threads_malloc_get_put_free_through_the_hooks);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	Suite *s = regcache_suite();
	SRunner *sr = srunner_create(s);
	int failed;

#ifndef NDEBUG
	/* An abort kills the runner itself unless tests run in children. */
	if (srunner_fork_status(sr) != CK_NOFORK) {
		TCase *tc = tcase_create("debug-asserts");

		tcase_add_checked_fixture(tc, setup, NULL);
		tcase_add_test_raise_signal(tc, test_destroy_with_reference_held_asserts,
					    SIGABRT);
		suite_add_tcase(s, tc);
	}
#endif
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0;
}
