/* Unit tests for the zoned buffer pool (common/bufpool.c).
 *
 * Registration goes through fake regops that record every registered range,
 * so the tests can check the pool registers each zone once, derives offsets
 * and handles from it, and deregisters everything on destroy. Most tests use
 * a small pool (4 zones: 16 x 4K, 8 x 8K, 4 x 16K, 2 x 32K) so draining it is
 * cheap; one checks the defaults. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bufpool.h"

#define KiB 1024UL
#define MiB (1024UL * 1024UL)

#define MAX_REGS    64
#define SMALL_NBUFS 30 /* 16 + 8 + 4 + 2 */
#define SMALL_TOTAL (4 * 64 * KiB)

/* One registration made by the pool; the handle given back is its address. */
struct fake_reg {
	void *addr;
	size_t len;
	int live;
};

struct fake_ctx {
	int reg_calls;
	int dereg_calls;
	int fail_at; /* reg call (0-based) that fails with -EIO, or -1 */
	int nregs;
	struct fake_reg regs[MAX_REGS];
};

/* Whether h is one of the handles fake_reg gave out. */
static int is_fake_handle(const struct fake_ctx *f, const void *h)
{
	for (int i = 0; i < f->nregs; i++)
		if (h == &f->regs[i])
			return 1;
	return 0;
}

static int fake_reg(void *ctx, void *addr, size_t len, void **handle)
{
	struct fake_ctx *f = ctx;
	struct fake_reg *r;

	if (f->reg_calls++ == f->fail_at)
		return -EIO;
	ck_assert_int_lt(f->nregs, MAX_REGS);
	r = &f->regs[f->nregs++];
	r->addr = addr;
	r->len = len;
	r->live = 1;
	*handle = r;
	return 0;
}

static void fake_dereg(void *ctx, void *handle)
{
	struct fake_ctx *f = ctx;
	struct fake_reg *r = handle;

	ck_assert(is_fake_handle(f, r));
	ck_assert_int_eq(r->live, 1);
	r->live = 0;
	f->dereg_calls++;
}

static struct fake_ctx fctx;
static struct rpfs_regops fops;

static void setup(void)
{
	memset(&fctx, 0, sizeof(fctx));
	fctx.fail_at = -1;
	fops.reg = fake_reg;
	fops.dereg = fake_dereg;
	fops.ctx = &fctx;
}

static struct bpool *small_pool(void)
{
	struct bpool_params p = {
		.min_buf = 4 * KiB, .max_buf = 32 * KiB, .zone_bytes = 64 * KiB};
	struct bpool *bp = NULL;

	ck_assert_int_eq(bpool_create(&p, &fops, &bp), 0);
	ck_assert_ptr_nonnull(bp);
	return bp;
}

/* Get one buffer for len and check it is the only one. */
static struct bpool_buf get_one(struct bpool *bp, size_t len)
{
	struct bpool_buf b;
	size_t got = 0;

	ck_assert_int_eq(bpool_get(bp, len, &b, 1, &got), 1);
	ck_assert_uint_eq(got, b.len);
	return b;
}

/* Take every buffer, one per call, into bufs[cap]; returns how many. */
static int drain(struct bpool *bp, struct bpool_buf *bufs, int cap)
{
	size_t got;
	int n = 0;

	while (n < cap && bpool_get(bp, 1, &bufs[n], 1, &got) == 1)
		n++;
	return n;
}

static void put_all(struct bpool *bp, struct bpool_buf *bufs, int n)
{
	for (int i = 0; i < n; i++)
		bpool_put(bp, &bufs[i]);
}

/* Buffers of exactly this size: ask for that size until the pool falls
 * back to another zone, then give them all back. */
static int count_zone(struct bpool *bp, size_t size)
{
	struct bpool_buf bufs[256];
	int n = 0;

	while (n < 256) {
		size_t got;

		if (bpool_get(bp, size, &bufs[n], 1, &got) != 1)
			break;
		if (bufs[n].len != size) {
			bpool_put(bp, &bufs[n]);
			break;
		}
		n++;
	}
	put_all(bp, bufs, n);
	return n;
}

START_TEST(test_zones_and_counts_from_params)
{
	struct bpool *bp = small_pool();

	ck_assert_int_eq(fctx.reg_calls, 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_eq(fctx.regs[i].len, 64 * KiB);
		ck_assert_uint_eq((uintptr_t)fctx.regs[i].addr % 4096, 0);
	}
	ck_assert_int_eq(count_zone(bp, 4 * KiB), 16);
	ck_assert_int_eq(count_zone(bp, 8 * KiB), 8);
	ck_assert_int_eq(count_zone(bp, 16 * KiB), 4);
	ck_assert_int_eq(count_zone(bp, 32 * KiB), 2);
	ck_assert_uint_eq(bpool_total_bytes(bp), SMALL_TOTAL);
	ck_assert_uint_eq(bpool_free_bytes(bp), SMALL_TOTAL);
	bpool_destroy(bp);
}
END_TEST

START_TEST(test_default_params_make_six_8mib_zones)
{
	struct bpool_params p;
	struct bpool *bp;

	bpool_params_default(&p);
	ck_assert_uint_eq(p.min_buf, 64 * KiB);
	ck_assert_uint_eq(p.max_buf, 2 * MiB);
	ck_assert_uint_eq(p.zone_bytes, 8 * MiB);
	ck_assert_int_eq(bpool_create(&p, &fops, &bp), 0);
	ck_assert_int_eq(fctx.reg_calls, 6); /* 64K 128K 256K 512K 1M 2M */
	ck_assert_uint_eq(bpool_total_bytes(bp), 6 * 8 * MiB);
	ck_assert_int_eq(count_zone(bp, 64 * KiB), 128);
	ck_assert_int_eq(count_zone(bp, 2 * MiB), 4);
	bpool_destroy(bp);
}
END_TEST

START_TEST(test_zone_rest_smaller_than_buffer_not_allocated)
{
	struct bpool_params p = {
		.min_buf = 4 * KiB, .max_buf = 32 * KiB, .zone_bytes = 40 * KiB};
	struct bpool *bp;

	ck_assert_int_eq(bpool_create(&p, &fops, &bp), 0);
	ck_assert_uint_eq(fctx.regs[3].len, 32 * KiB);
	ck_assert_int_eq(count_zone(bp, 32 * KiB), 1);
	ck_assert_int_eq(count_zone(bp, 4 * KiB), 10);
	ck_assert_int_eq(count_zone(bp, 16 * KiB), 2);
	/* 10 x 4K + 5 x 8K + 2 x 16K + 1 x 32K */
	ck_assert_uint_eq(bpool_total_bytes(bp),
			  40 * KiB + 40 * KiB + 32 * KiB + 32 * KiB);
	bpool_destroy(bp);
}
END_TEST

START_TEST(test_exact_zone_chosen)
{
	struct bpool_params p;
	struct bpool *bp;
	struct bpool_buf b;

	bpool_params_default(&p);
	ck_assert_int_eq(bpool_create(&p, &fops, &bp), 0);
	b = get_one(bp, 100 * KiB);
	ck_assert_uint_eq(b.len, 128 * KiB);
	bpool_put(bp, &b);
	b = get_one(bp, 128 * KiB);
	ck_assert_uint_eq(b.len, 128 * KiB);
	bpool_put(bp, &b);
	b = get_one(bp, 128 * KiB + 1);
	ck_assert_uint_eq(b.len, 256 * KiB);
	bpool_put(bp, &b);
	b = get_one(bp, 1);
	ck_assert_uint_eq(b.len, 64 * KiB);
	bpool_put(bp, &b);
	bpool_destroy(bp);
}
END_TEST

START_TEST(test_larger_zone_when_exact_exhausted)
{
	struct bpool *bp = small_pool();
	struct bpool_buf held[8];
	struct bpool_buf b;

	for (int i = 0; i < 8; i++)
		ck_assert_uint_eq((held[i] = get_one(bp, 8 * KiB)).len, 8 * KiB);
	b = get_one(bp, 5 * KiB);
	ck_assert_uint_eq(b.len, 16 * KiB);
	bpool_put(bp, &b);
	put_all(bp, held, 8);
	bpool_destroy(bp);
}
END_TEST

START_TEST(test_split_covers_len_when_larger_zones_exhausted)
{
	struct bpool *bp = small_pool();
	struct bpool_buf held[2], bufs[8];
	size_t got = 0;
	int n;

	held[0] = get_one(bp, 32 * KiB);
	held[1] = get_one(bp, 32 * KiB);
	/* No zone >= 20K left: largest smaller buffer first, then the
	 * smallest buffer that covers the remaining 4K. */
	n = bpool_get(bp, 20 * KiB, bufs, 8, &got);
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(bufs[0].len, 16 * KiB);
	ck_assert_uint_eq(bufs[1].len, 4 * KiB);
	ck_assert_uint_eq(got, 20 * KiB);
	ck_assert_uint_eq(bpool_free_bytes(bp), SMALL_TOTAL - 64 * KiB - 20 * KiB);
	put_all(bp, bufs, n);
	put_all(bp, held, 2);
	bpool_destroy(bp);
}
END_TEST

START_TEST(test_split_limited_by_max_bufs_sets_got_short)
{
	struct bpool *bp = small_pool();
	struct bpool_buf held[6], bufs[2];
	size_t got = 0;
	int n;

	for (int i = 0; i < 2; i++)
		held[i] = get_one(bp, 32 * KiB);
	for (int i = 2; i < 6; i++)
		held[i] = get_one(bp, 16 * KiB);
	n = bpool_get(bp, 32 * KiB, bufs, 2, &got);
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(bufs[0].len, 8 * KiB);
	ck_assert_uint_eq(bufs[1].len, 8 * KiB);
	ck_assert_uint_eq(got, 16 * KiB);
	put_all(bp, bufs, n);
	put_all(bp, held, 6);
	bpool_destroy(bp);
}
END_TEST

START_TEST(test_len_above_max_buf_gets_max_buf_chunks)
{
	struct bpool *bp = small_pool();
	struct bpool_buf bufs[4];
	size_t got = 0;
	int n;

	/* 72K: both 32K buffers, then the rest (8K) from its exact zone. */
	n = bpool_get(bp, 72 * KiB, bufs, 4, &got);
	ck_assert_int_eq(n, 3);
	ck_assert_uint_eq(bufs[0].len, 32 * KiB);
	ck_assert_uint_eq(bufs[1].len, 32 * KiB);
	ck_assert_uint_eq(bufs[2].len, 8 * KiB);
	ck_assert_uint_eq(got, 72 * KiB);
	put_all(bp, bufs, n);
	bpool_destroy(bp);
}
END_TEST

START_TEST(test_eagain_when_empty)
{
	struct bpool *bp = small_pool();
	struct bpool_buf bufs[64], b;
	size_t got = 0;
	int n;

	/* Asking for more than the pool holds takes everything, short. */
	n = bpool_get(bp, SMALL_TOTAL + 4 * KiB, bufs, 64, &got);
	ck_assert_int_eq(n, SMALL_NBUFS);
	ck_assert_uint_eq(got, SMALL_TOTAL);
	ck_assert_uint_eq(bpool_free_bytes(bp), 0);
	ck_assert_int_eq(bpool_get(bp, 1, &b, 1, &got), -EAGAIN);
	ck_assert_int_eq(bpool_get(bp, 1 * MiB, &b, 1, &got), -EAGAIN);
	put_all(bp, bufs, n);
	bpool_destroy(bp);
}
END_TEST

START_TEST(test_put_makes_buffers_available_again)
{
	struct bpool *bp = small_pool();
	struct bpool_buf bufs[64];
	int n;

	n = drain(bp, bufs, 64);
	ck_assert_int_eq(n, SMALL_NBUFS);
	ck_assert_uint_eq(bpool_free_bytes(bp), 0);
	bpool_put(bp, &bufs[5]);
	ck_assert_uint_eq(bpool_free_bytes(bp), bufs[5].len);
	bufs[5] = get_one(bp, 1);
	ck_assert_uint_eq(bpool_free_bytes(bp), 0);
	put_all(bp, bufs, n);
	ck_assert_uint_eq(bpool_free_bytes(bp), bpool_total_bytes(bp));
	ck_assert_int_eq(drain(bp, bufs, 64), SMALL_NBUFS);
	put_all(bp, bufs, SMALL_NBUFS);
	bpool_destroy(bp);
}
END_TEST

static unsigned char pattern(int buf, size_t i)
{
	return (unsigned char)(buf * 131 + i * 7 + 1);
}

START_TEST(test_buffers_distinct_and_not_overlapping)
{
	struct bpool *bp = small_pool();
	struct bpool_buf bufs[64];
	size_t sum = 0;
	int n;

	n = drain(bp, bufs, 64);
	ck_assert_int_eq(n, SMALL_NBUFS);
	/* Fill all, then verify all: any overlap overwrites an earlier
	 * buffer's pattern. */
	for (int k = 0; k < n; k++) {
		unsigned char *p = bufs[k].addr;

		for (size_t i = 0; i < bufs[k].len; i++)
			p[i] = pattern(k, i);
		sum += bufs[k].len;
	}
	for (int k = 0; k < n; k++) {
		const unsigned char *p = bufs[k].addr;

		for (size_t i = 0; i < bufs[k].len; i++)
			ck_assert_uint_eq(p[i], pattern(k, i));
	}
	ck_assert_uint_eq(sum, SMALL_TOTAL);
	put_all(bp, bufs, n);
	bpool_destroy(bp);
}
END_TEST

START_TEST(test_offset_and_handle_match_zone_base)
{
	struct bpool *bp = small_pool();
	struct bpool_buf bufs[64];
	int n;

	n = drain(bp, bufs, 64);
	ck_assert_int_eq(n, SMALL_NBUFS);
	for (int k = 0; k < n; k++) {
		struct fake_reg *r = bufs[k].handle;

		ck_assert(is_fake_handle(&fctx, r));
		/* One registration per zone, zones in ascending size. */
		ck_assert_ptr_eq(r, &fctx.regs[bufs[k].zone]);
		ck_assert_ptr_eq(bufs[k].addr, (char *)r->addr + bufs[k].offset);
		ck_assert_uint_le(bufs[k].offset + bufs[k].len, r->len);
		ck_assert_uint_eq(bufs[k].offset % bufs[k].len, 0);
		ck_assert_uint_eq(bufs[k].len, 4 * KiB << bufs[k].zone);
	}
	put_all(bp, bufs, n);
	bpool_destroy(bp);
}
END_TEST

START_TEST(test_invalid_params_rejected)
{
	static const struct bpool_params bad[] = {
		{0, 32 * KiB, 64 * KiB},	/* min 0 */
		{3 * KiB, 32 * KiB, 64 * KiB},	/* min not pow2 */
		{4 * KiB, 24 * KiB, 64 * KiB},	/* max not pow2 */
		{4 * KiB, 0, 64 * KiB},		/* max 0 */
		{64 * KiB, 32 * KiB, 64 * KiB}, /* min > max */
		{4 * KiB, 32 * KiB, 16 * KiB},	/* zone < max */
	};
	struct bpool_params good = {4 * KiB, 32 * KiB, 64 * KiB};
	struct rpfs_regops noreg = fops;
	struct bpool *bp;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bp = (struct bpool *)&bp;
		ck_assert_int_eq(bpool_create(&bad[i], &fops, &bp), -EINVAL);
		ck_assert_ptr_null(bp);
	}
	noreg.reg = NULL;
	ck_assert_int_eq(bpool_create(&good, &noreg, &bp), -EINVAL);
	ck_assert_int_eq(bpool_create(&good, NULL, &bp), -EINVAL);
	ck_assert_int_eq(bpool_create(NULL, &fops, &bp), -EINVAL);
	ck_assert_int_eq(fctx.reg_calls, 0);
}
END_TEST

START_TEST(test_get_invalid_args_rejected)
{
	struct bpool *bp = small_pool();
	struct bpool_buf b;
	size_t got;

	ck_assert_int_eq(bpool_get(bp, 0, &b, 1, &got), -EINVAL);
	ck_assert_int_eq(bpool_get(bp, 1, &b, 0, &got), -EINVAL);
	ck_assert_int_eq(bpool_get(bp, 1, &b, -1, &got), -EINVAL);
	ck_assert_uint_eq(bpool_free_bytes(bp), SMALL_TOTAL);
	bpool_destroy(bp);
}
END_TEST

START_TEST(test_destroy_deregisters_every_zone)
{
	struct bpool *bp = small_pool();

	ck_assert_int_eq(fctx.dereg_calls, 0);
	bpool_destroy(bp);
	ck_assert_int_eq(fctx.dereg_calls, 4);
	for (int i = 0; i < fctx.nregs; i++)
		ck_assert_int_eq(fctx.regs[i].live, 0);
}
END_TEST

START_TEST(test_reg_failure_undoes_earlier_zones)
{
	struct bpool_params p = {4 * KiB, 32 * KiB, 64 * KiB};
	struct bpool *bp;

	fctx.fail_at = 2;
	ck_assert_int_eq(bpool_create(&p, &fops, &bp), -EIO);
	ck_assert_ptr_null(bp);
	ck_assert_int_eq(fctx.reg_calls, 3);
	ck_assert_int_eq(fctx.dereg_calls, 2);
}
END_TEST

#ifndef NDEBUG
START_TEST(test_double_put_aborts)
{
	struct bpool *bp = small_pool();
	struct bpool_buf b = get_one(bp, 1);

	bpool_put(bp, &b);
	bpool_put(bp, &b);
}
END_TEST
#endif

/* --- concurrency -------------------------------------------------------- */

#define NTHREADS 4
#define ITERS	 100000
#define HOLD_MAX 8

struct worker {
	struct bpool *bp;
	pthread_t tid;
	unsigned seed;
	uint64_t stamp;
	long gets, eagains;
};

static atomic_int worker_errors;

/* Stamp first and last word: a buffer handed to two holders at once gets
 * the other's stamp. */
static void stamp(struct bpool_buf *b, uint64_t v)
{
	memcpy(b->addr, &v, sizeof(v));
	memcpy((char *)b->addr + b->len - sizeof(v), &v, sizeof(v));
}

static int stamp_ok(const struct bpool_buf *b, uint64_t v)
{
	uint64_t x, y;

	memcpy(&x, b->addr, sizeof(x));
	memcpy(&y, (char *)b->addr + b->len - sizeof(y), sizeof(y));
	return x == v && y == v;
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	struct bpool_buf held[HOLD_MAX];
	uint64_t stamps[HOLD_MAX];
	size_t total = bpool_total_bytes(w->bp);
	int nheld = 0;

	for (int it = 0; it < ITERS && !atomic_load(&worker_errors); it++) {
		int room = HOLD_MAX - nheld;

		if (room && (nheld == 0 || rand_r(&w->seed) % 2)) {
			size_t len = 1 + rand_r(&w->seed) % (80 * KiB);
			int want = 1 + rand_r(&w->seed) % 4;
			size_t got = 0, sum = 0;
			int n;

			n = bpool_get(w->bp, len, &held[nheld], want < room ? want : room,
				      &got);
			if (n == -EAGAIN) {
				w->eagains++;
				continue;
			}
			if (n < 1) {
				atomic_fetch_add(&worker_errors, 1);
				break;
			}
			for (int i = nheld; i < nheld + n; i++) {
				sum += held[i].len;
				stamps[i] = w->stamp++;
				stamp(&held[i], stamps[i]);
			}
			if (sum != got)
				atomic_fetch_add(&worker_errors, 1);
			nheld += n;
			w->gets++;
		} else {
			int k = rand_r(&w->seed) % nheld;

			if (!stamp_ok(&held[k], stamps[k]))
				atomic_fetch_add(&worker_errors, 1);
			bpool_put(w->bp, &held[k]);
			held[k] = held[--nheld];
			stamps[k] = stamps[nheld];
		}
		if (bpool_free_bytes(w->bp) > total)
			atomic_fetch_add(&worker_errors, 1);
	}
	for (int k = 0; k < nheld; k++) {
		if (!stamp_ok(&held[k], stamps[k]))
			atomic_fetch_add(&worker_errors, 1);
		bpool_put(w->bp, &held[k]);
	}
	return NULL;
}

START_TEST(test_concurrent_get_put_keeps_accounting)
{
	struct bpool *bp = small_pool();
	struct worker w[NTHREADS];
	struct bpool_buf bufs[64];
	long gets = 0;

	atomic_store(&worker_errors, 0);
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){
			.bp = bp, .seed = 1234u + i, .stamp = (uint64_t)(i + 1) << 48};
		ck_assert_int_eq(pthread_create(&w[i].tid, NULL, worker_run, &w[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++) {
		ck_assert_int_eq(pthread_join(w[i].tid, NULL), 0);
		gets += w[i].gets;
	}
	ck_assert_int_eq(atomic_load(&worker_errors), 0);
	ck_assert_int_gt(gets, NTHREADS * ITERS / 4);
	ck_assert_uint_eq(bpool_free_bytes(bp), bpool_total_bytes(bp));
	/* Free lists intact: every buffer still comes out exactly once. */
	ck_assert_int_eq(drain(bp, bufs, 64), SMALL_NBUFS);
	put_all(bp, bufs, SMALL_NBUFS);
	bpool_destroy(bp);
}
END_TEST

static Suite *bufpool_suite(int forking)
{
	Suite *s = suite_create("bufpool");
	TCase *tc = tcase_create("core");

	(void)forking;
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_zones_and_counts_from_params);
	tcase_add_test(tc, test_default_params_make_six_8mib_zones);
	tcase_add_test(tc, test_zone_rest_smaller_than_buffer_not_allocated);
	tcase_add_test(tc, test_exact_zone_chosen);
	tcase_add_test(tc, test_larger_zone_when_exact_exhausted);
	tcase_add_test(tc, test_split_covers_len_when_larger_zones_exhausted);
	tcase_add_test(tc, test_split_limited_by_max_bufs_sets_got_short);
	tcase_add_test(tc, test_len_above_max_buf_gets_max_buf_chunks);
	tcase_add_test(tc, test_eagain_when_empty);
	tcase_add_test(tc, test_put_makes_buffers_available_again);
	tcase_add_test(tc, test_buffers_distinct_and_not_overlapping);
	tcase_add_test(tc, test_offset_and_handle_match_zone_base);
	tcase_add_test(tc, test_invalid_params_rejected);
	tcase_add_test(tc, test_get_invalid_args_rejected);
	tcase_add_test(tc, test_destroy_deregisters_every_zone);
	tcase_add_test(tc, test_reg_failure_undoes_earlier_zones);
	tcase_add_test(tc, test_concurrent_get_put_keeps_accounting);
#ifndef NDEBUG
	/* The abort would take the whole runner down without fork mode. */
	if (forking)
		tcase_add_test_raise_signal(tc, test_double_put_aborts, SIGABRT);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(NULL);
	int failed;

	srunner_add_suite(sr, bufpool_suite(srunner_fork_status(sr) == CK_FORK));
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
