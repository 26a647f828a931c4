/* The datafile checksums of rpfsd (server/blocksum.c, server/datafile.c), on
 * files in a temporary directory, without a server:
 *   - CRC32C is the standard one; entries and headers encode and decode;
 *   - which bytes match a block's entry: its current or its pending
 *     version, zeros for a hole, never a datafile shorter than the entry
 *     says;
 *   - reads return what was written, zeros for holes, and -EBADMSG with
 *     the right offset for a damaged block; a partial write never blesses
 *     a damaged block, a whole-block write replaces it;
 *   - truncate, size, a lost checksum file, creation (exclusive, retried);
 *   - a write request that fails part way leaves the sizes it found,
 *     unless another write or truncate came by;
 *   - a write cut short by a crash leaves blocks that still read;
 *   - threads writing overlapping unaligned ranges, with a reader, keep
 *     every block's checksum right.
 *
 * `test_csum --bench [MiB]` measures instead what the checksums cost the
 * storage step of a server: writes and reads of 1 MiB chunks (a bulk
 * transfer's) and of 4 KiB, plain pwrite/pread against datafile_write/
 * datafile_read, on tmpfs (/dev/shm) so that the disk is not what is measured;
 * best of 3, wall and CPU time (CPU time is what to compare on a busy
 * machine). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "datafile.h"
#include "ec_ends.h"
#include "rpc.h"

#define B CSUM_BLOCK

static char dir[64];
static int dirfd_;

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/rpfs-csum-XXXXXX");
	ck_assert(mkdtemp(dir));
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert(dirfd_ >= 0);
}

static void teardown(void)
{
	close(dirfd_);
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void fill(void *buf, size_t len, unsigned seed)
{
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 9));
}

/* A new datafile with its checksums, opened. */
static void make(struct datafile *f, uint64_t h)
{
	ck_assert_int_eq(datafile_create(dirfd_, h, 77, 0, false), 0);
	ck_assert_int_eq(datafile_open(f, dirfd_, h), 0);
}

static void put(struct datafile *f, const void *buf, uint64_t len, uint64_t off)
{
	uint64_t bad = 0;

	ck_assert_int_eq(datafile_write(f, buf, len, off, &bad), 0);
}

static void get(struct datafile *f, void *buf, uint64_t len, uint64_t off)
{
	uint64_t bad = 0;
	int ret = datafile_read(f, buf, len, off, &bad);

	ck_assert_msg(ret == 0, "read %llu at %llu: %s (bad %llu)",
		      (unsigned long long)len, (unsigned long long)off, strerror(-ret),
		      (unsigned long long)bad);
}

static void poke(struct datafile *f, uint64_t off, unsigned char x)
{
	unsigned char b;

	ck_assert(pread(f->fd, &b, 1, (off_t)off) == 1);
	b ^= x;
	ck_assert(pwrite(f->fd, &b, 1, (off_t)off) == 1);
}

/* ---- block math ---------------------------------------------------------- */

START_TEST(crc_is_the_standard_crc32c)
{
	static const unsigned char zeros[B];

	ck_assert_uint_eq(csum_crc("123456789", 9), 0xe3069283u);
	ck_assert_uint_eq(csum_crc(zeros, B), CSUM_ZERO_CRC);
	ck_assert_uint_eq(csum_crc("", 0), 0);
}
END_TEST

START_TEST(entries_and_headers_round_trip)
{
	struct csum_ent e = {{0x12345678, 4096}, {0x9abcdef0, 17}}, d;
	uint8_t raw[CSUM_ENT], hdr[CSUM_HDR];
	uint64_t nonce = 0;

	csum_ent_enc(raw, &e);
	csum_ent_dec(raw, &d);
	ck_assert(!memcmp(&e, &d, sizeof(e)));
	ck_assert(!csum_ent_empty(&d));
	memset(raw, 0, sizeof(raw));
	csum_ent_dec(raw, &d);
	ck_assert(csum_ent_empty(&d));

	csum_hdr_enc(hdr, 0x1234, 99, 0);
	ck_assert_int_eq(csum_hdr_check(hdr, sizeof(hdr), 0x1234, &nonce), 0);
	ck_assert_uint_eq(nonce, 99);
	ck_assert_int_eq(csum_hdr_check(hdr, sizeof(hdr), 0x1235, NULL), -EBADMSG);
	ck_assert_int_eq(csum_hdr_check(hdr, CSUM_HDR - 1, 0x1234, NULL), -EBADMSG);
	hdr[0] ^= 1;
	ck_assert_int_eq(csum_hdr_check(hdr, sizeof(hdr), 0x1234, NULL), -EBADMSG);
}
END_TEST

START_TEST(names_parse)
{
	char name[40];
	uint64_t h = 0;

	csum_data_name(0xab, name, sizeof(name));
	ck_assert_str_eq(name, "00000000000000ab");
	ck_assert_int_eq(csum_parse_name(name, &h), 0);
	ck_assert_uint_eq(h, 0xab);
	csum_sum_name(0x1000000000001ull, name, sizeof(name));
	ck_assert_str_eq(name, "0001000000000001.sum");
	ck_assert_int_eq(csum_parse_name(name, &h), 1);
	ck_assert_uint_eq(h, 0x1000000000001ull);
	ck_assert_int_eq(csum_parse_name("00000000000000AB", &h), -1);
	ck_assert_int_eq(csum_parse_name("00000000000000ab.crc", &h), -1);
	ck_assert_int_eq(csum_parse_name("000000000000000", &h), -1);
	ck_assert_int_eq(csum_parse_name("lock.mdb", &h), -1);
	/* an ec parity member's record of sizes (ec_ends.h) */
	ec_ends_name(0xab, name, sizeof(name));
	ck_assert_str_eq(name, "00000000000000ab.ends");
	ck_assert_int_eq(csum_parse_name(name, &h), 2);
	ck_assert_uint_eq(h, 0xab);
}
END_TEST

START_TEST(a_block_matches_its_current_or_pending_version)
{
	unsigned char blk[B] = {0}, other[B];
	struct csum_ent hole = {{0, 0}, {0, 0}}, e;

	/* A hole: zeros only. */
	ck_assert_int_eq(csum_match(&hole, blk, 0, 0), 1);
	ck_assert_int_eq(csum_match(&hole, blk, B, 0), 1);
	blk[100] = 1;
	ck_assert_int_eq(csum_match(&hole, blk, B, 0), 0);

	fill(blk, B, 1);
	fill(other, B, 2);
	e.cur.crc = csum_crc(blk, B);
	e.cur.end = 3000;
	e.pend.crc = 0;
	e.pend.end = 0;
	ck_assert_int_eq(csum_match(&e, blk, B, 0), 1);
	ck_assert_int_eq(csum_match(&e, blk, 3000, 0), 1);
	/* The datafile ends before the entry's end: cut short. */
	ck_assert_int_eq(csum_match(&e, blk, 2999, 0), 0);
	ck_assert_int_eq(csum_match(&e, other, B, 0), 0);
	/* A write in progress: either version. */
	e.pend.crc = csum_crc(other, B);
	e.pend.end = B;
	ck_assert_int_eq(csum_match(&e, blk, B, 0), 1);
	ck_assert_int_eq(csum_match(&e, other, B, 0), 2);
	ck_assert_int_eq(csum_match(&e, other, B - 1, 0), 0);
	blk[5] ^= 0x80;
	ck_assert_int_eq(csum_match(&e, blk, B, 0), 0);
}
END_TEST

/* ---- files ------------------------------------------------------------------ */

START_TEST(reads_return_writes_and_holes_read_as_zeros)
{
	static unsigned char buf[64 * B], back[64 * B], zero[64 * B];
	struct datafile f;

	make(&f, 1);
	fill(buf, sizeof(buf), 3);
	/* Unaligned, across many blocks, then beyond a hole. */
	put(&f, buf, 10 * B + 123, 1000);
	put(&f, buf, 100, 50 * B + 7);
	get(&f, back, 60 * B, 0);
	ck_assert(!memcmp(back, zero, 1000));
	ck_assert(!memcmp(back + 1000, buf, 10 * B + 123));
	ck_assert(!memcmp(back + 1000 + 10 * B + 123, zero,
			  50 * B + 7 - 1000 - 10 * B - 123));
	ck_assert(!memcmp(back + 50 * B + 7, buf, 100));
	ck_assert(!memcmp(back + 50 * B + 107, zero, 10 * B - 107));
	/* Past the end: zeros. */
	get(&f, back, 4 * B, 200 * B);
	ck_assert(!memcmp(back, zero, 4 * B));
	/* Many small writes inside one block. */
	for (int i = 0; i < 40; i++)
		put(&f, buf + i, 1, 20 * B + (uint64_t)i * 100);
	get(&f, back, B, 20 * B);
	for (int i = 0; i < 40; i++)
		ck_assert_uint_eq(back[i * 100], buf[i]);
	datafile_close(&f);
}
END_TEST

START_TEST(damage_is_found_and_never_blessed)
{
	static unsigned char buf[16 * B], back[16 * B];
	struct datafile f;
	uint64_t bad = 0;

	make(&f, 2);
	fill(buf, sizeof(buf), 4);
	put(&f, buf, sizeof(buf), 0);
	poke(&f, 5 * B + 300, 0x04);
	/* Whole-file read: the damaged block's start. */
	ck_assert_int_eq(datafile_read(&f, back, sizeof(buf), 0, &bad), -EBADMSG);
	ck_assert_uint_eq(bad, 5 * B);
	/* Part of the block, after the bad byte: where the read starts. */
	ck_assert_int_eq(datafile_read(&f, back, 10, 5 * B + 1000, &bad), -EBADMSG);
	ck_assert_uint_eq(bad, 5 * B + 1000);
	/* Its neighbours read fine. */
	get(&f, back, 5 * B, 0);
	get(&f, back, 10 * B, 6 * B);
	ck_assert(!memcmp(back, buf + 6 * B, 10 * B));
	/* A partial write would keep the damaged bytes: refused. */
	ck_assert_int_eq(datafile_write(&f, buf, 10, 5 * B + 8, &bad), -EBADMSG);
	ck_assert_uint_eq(bad, 5 * B);
	ck_assert_int_eq(datafile_write(&f, buf, 10, 5 * B, &bad), -EBADMSG);
	ck_assert_uint_eq(bad, 5 * B + 10);
	/* A whole-block write replaces it. */
	put(&f, buf + 5 * B, B, 5 * B);
	get(&f, back, sizeof(buf), 0);
	ck_assert(!memcmp(back, buf, sizeof(buf)));
	/* A damaged checksum is damage too. */
	{
		unsigned char b;

		ck_assert(pread(f.cfd, &b, 1, CSUM_HDR + 3 * CSUM_ENT) == 1);
		b ^= 1;
		ck_assert(pwrite(f.cfd, &b, 1, CSUM_HDR + 3 * CSUM_ENT) == 1);
	}
	ck_assert_int_eq(datafile_read(&f, back, B, 3 * B, &bad), -EBADMSG);
	ck_assert_uint_eq(bad, 3 * B);
	datafile_close(&f);
}
END_TEST

/* Mending (an ec data cell's damaged blocks, their bytes decoded from
 * the rest of its group): only blocks that fail their checksums, covered
 * exactly (whole blocks; the last up to the datafile's end), never a good
 * block; after it the bytes read right. */
START_TEST(mending_takes_damaged_blocks_only)
{
	static unsigned char buf[4 * B + 100], back[4 * B + 100];
	struct datafile f;
	uint64_t bad = 0;

	make(&f, 3);
	fill(buf, sizeof(buf), 9);
	put(&f, buf, sizeof(buf), 0);
	/* a good block: never rewritten this way */
	ck_assert_int_eq(datafile_repair(&f, buf + B, B, B, &bad), -EEXIST);
	poke(&f, B + 7, 0x10);
	poke(&f, 4 * B + 50, 0x10); /* the last, partial block */
	/* not a block's start, not all of it, past what it holds */
	ck_assert_int_eq(datafile_repair(&f, buf + B + 1, B - 1, B + 1, &bad), -EINVAL);
	ck_assert_int_eq(datafile_repair(&f, buf + B, B - 1, B, &bad), -EINVAL);
	ck_assert_int_eq(datafile_repair(&f, buf + 4 * B, 101, 4 * B, &bad), -EINVAL);
	/* two blocks, one of them good: refused whole */
	ck_assert_int_eq(datafile_repair(&f, buf, 2 * B, 0, &bad), -EEXIST);
	ck_assert_int_eq(datafile_read(&f, back, B, B, &bad), -EBADMSG);
	ck_assert_int_eq(datafile_repair(&f, buf + B, B, B, &bad), 0);
	ck_assert_int_eq(datafile_repair(&f, buf + 4 * B, 100, 4 * B, &bad), 0);
	get(&f, back, sizeof(buf), 0);
	ck_assert(!memcmp(back, buf, sizeof(buf)));
	datafile_close(&f);
}
END_TEST

/* An ec parity member's record of its data members' sizes: none is every
 * member empty; a note keeps the largest; a set is exact; it survives the
 * datafile's closing; a damaged one is refused, and a set replaces it. */
START_TEST(the_record_of_sizes_keeps_the_largest_and_refuses_damage)
{
	struct datafile f;
	uint64_t ends[4], want[3] = {100, 0, 7};
	uint32_t n = 9;
	char name[40];
	int fd;

	make(&f, 4);
	ck_assert_int_eq(ec_ends_get(&f, ends, 4, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(ends[0] | ends[1] | ends[2] | ends[3], 0);
	ck_assert_int_eq(ec_ends_note(&f, 3, 1, 5000), 0);
	ck_assert_int_eq(ec_ends_note(&f, 3, 1, 4000), 0); /* smaller: kept */
	ck_assert_int_eq(ec_ends_note(&f, 3, 0, 10), 0);
	ck_assert_int_eq(ec_ends_note(&f, 3, 3, 10), -EINVAL);
	ck_assert_int_eq(ec_ends_get(&f, ends, 4, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(ends[0], 10);
	ck_assert_uint_eq(ends[1], 5000);
	ck_assert_uint_eq(ends[2], 0);
	ck_assert_uint_eq(ends[3], 0);
	ck_assert_int_eq(ec_ends_set(&f, want, 3), 0); /* a truncate: exact */
	datafile_close(&f);
	ck_assert_int_eq(datafile_open(&f, dirfd_, 4), 0);
	ck_assert_int_eq(ec_ends_get(&f, ends, 3, &n), 0);
	ck_assert_mem_eq(ends, want, sizeof(want));
	datafile_close(&f);
	/* a flipped byte: refused, on reads and notes alike */
	ec_ends_name(4, name, sizeof(name));
	fd = openat(dirfd_, name, O_RDWR);
	ck_assert(fd >= 0);
	{
		unsigned char b;

		ck_assert(pread(fd, &b, 1, 17) == 1);
		b ^= 1;
		ck_assert(pwrite(fd, &b, 1, 17) == 1);
	}
	close(fd);
	ck_assert_int_eq(datafile_open(&f, dirfd_, 4), 0);
	ck_assert_int_eq(ec_ends_get(&f, ends, 3, &n), -EBADMSG);
	ck_assert_int_eq(ec_ends_note(&f, 3, 0, 1), -EBADMSG);
	ck_assert_int_eq(ec_ends_set(&f, want, 3), 0);
	ck_assert_int_eq(ec_ends_get(&f, ends, 3, &n), 0);
	ck_assert_mem_eq(ends, want, sizeof(want));
	ck_assert_int_eq(datafile_sync(&f), 0);
	datafile_close(&f);
	/* a create of the handle anew takes no leftover record */
	ck_assert_int_eq(unlinkat(dirfd_, "0000000000000004", 0), 0);
	csum_sum_name(4, name, sizeof(name));
	ck_assert_int_eq(unlinkat(dirfd_, name, 0), 0);
	make(&f, 4);
	ck_assert_int_eq(ec_ends_get(&f, ends, 3, &n), 0);
	ck_assert_uint_eq(n, 0);
	datafile_close(&f);
	ck_assert_int_eq(ec_ends_check((const uint8_t *)"RPFSEND1", 8), -EBADMSG);
}
END_TEST

START_TEST(a_datafile_cut_short_is_damage)
{
	static unsigned char buf[8 * B], back[8 * B];
	struct datafile f;
	uint64_t bad = 0, size = 0;

	make(&f, 3);
	fill(buf, sizeof(buf), 5);
	put(&f, buf, 7 * B + 10, 0);
	ck_assert_int_eq(datafile_size(&f, &size, &bad), 0);
	ck_assert_uint_eq(size, 7 * B + 10);
	/* Cut in the last block: the size is no longer believed. */
	ck_assert(ftruncate(f.fd, 7 * B + 5) == 0);
	ck_assert_int_eq(datafile_size(&f, &size, &bad), -EBADMSG);
	ck_assert_uint_eq(bad, 7 * B + 5);
	ck_assert_int_eq(datafile_read(&f, back, B, 7 * B, &bad), -EBADMSG);
	/* Cut at a block boundary: the blocks beyond are missing. */
	ck_assert(ftruncate(f.fd, 4 * B) == 0);
	ck_assert_int_eq(datafile_read(&f, back, 2 * B, 4 * B, &bad), -EBADMSG);
	ck_assert_uint_eq(bad, 4 * B);
	get(&f, back, 4 * B, 0);
	datafile_close(&f);
}
END_TEST

START_TEST(truncate_keeps_checksums_right)
{
	static unsigned char buf[8 * B], back[8 * B], zero[8 * B];
	struct datafile f;
	uint64_t bad = 0, size = 0;

	make(&f, 4);
	fill(buf, sizeof(buf), 6);
	put(&f, buf, sizeof(buf), 0);
	ck_assert_int_eq(datafile_truncate(&f, 3 * B + 100, &bad), 0);
	ck_assert_int_eq(datafile_size(&f, &size, &bad), 0);
	ck_assert_uint_eq(size, 3 * B + 100);
	/* Grow again: zeros past the cut, in the cut block and beyond. */
	ck_assert_int_eq(datafile_truncate(&f, 6 * B, &bad), 0);
	get(&f, back, 6 * B, 0);
	ck_assert(!memcmp(back, buf, 3 * B + 100));
	ck_assert(!memcmp(back + 3 * B + 100, zero, 3 * B - 100));
	/* To nothing, then written again. */
	ck_assert_int_eq(datafile_truncate(&f, 0, &bad), 0);
	ck_assert_int_eq(datafile_size(&f, &size, &bad), 0);
	ck_assert_uint_eq(size, 0);
	put(&f, buf, 10, 2 * B);
	get(&f, back, 3 * B, 0);
	ck_assert(!memcmp(back, zero, 2 * B));
	ck_assert(!memcmp(back + 2 * B, buf, 10));
	datafile_close(&f);
}
END_TEST

/* What a failed write request leaves (ENOSPC after some chunks): the
 * datafile and its checksums as long as before it, what was there intact. */
START_TEST(a_failed_write_leaves_the_sizes_it_found)
{
	static unsigned char buf[8 * B], back[8 * B];
	struct datafile f;
	struct datafile_mark m;
	uint64_t bad = 0, size = 0;
	struct stat cst0, cst;

	make(&f, 8);
	fill(buf, sizeof(buf), 9);
	put(&f, buf, 3 * B + 100, 0);
	ck_assert_int_eq(fstat(f.cfd, &cst0), 0);
	datafile_mark(&f, &m);
	/* Two chunks of the request got through, then the disk was full. */
	put(&f, buf + 3 * B + 100, B, 3 * B + 100);
	put(&f, buf + 4 * B + 100, 2 * B, 4 * B + 100);
	datafile_undo_growth(&f, &m, 2);
	ck_assert_int_eq(datafile_size(&f, &size, &bad), 0);
	ck_assert_uint_eq(size, 3 * B + 100);
	ck_assert_int_eq(fstat(f.cfd, &cst), 0);
	ck_assert_int_eq(cst.st_size, cst0.st_size);
	get(&f, back, 3 * B + 100, 0);
	ck_assert(!memcmp(back, buf, 3 * B + 100));
	/* The file takes writes again, past the old end too. */
	put(&f, buf, 8 * B, 0);
	get(&f, back, 8 * B, 0);
	ck_assert(!memcmp(back, buf, 8 * B));
	datafile_close(&f);
}
END_TEST

/* Another write (or truncate) since the mark may own the bytes past the
 * old end: nothing is cut. */
START_TEST(a_failed_write_never_cuts_another_writes_bytes)
{
	static unsigned char buf[6 * B], back[6 * B];
	struct datafile f;
	struct datafile_mark m;
	uint64_t bad = 0, size = 0;

	make(&f, 9);
	fill(buf, sizeof(buf), 10);
	put(&f, buf, B, 0);
	datafile_mark(&f, &m);
	put(&f, buf + B, B, B);		    /* the failed request's one chunk */
	put(&f, buf + 2 * B, 4 * B, 2 * B); /* someone else's write */
	datafile_undo_growth(&f, &m, 1);
	ck_assert_int_eq(datafile_size(&f, &size, &bad), 0);
	ck_assert_uint_eq(size, 6 * B);
	get(&f, back, 6 * B, 0);
	ck_assert(!memcmp(back, buf, 6 * B));
	/* Likewise a truncate. */
	datafile_mark(&f, &m);
	put(&f, buf, B, 6 * B);
	ck_assert_int_eq(datafile_truncate(&f, 7 * B + 5, &bad), 0);
	datafile_undo_growth(&f, &m, 1);
	ck_assert_int_eq(datafile_size(&f, &size, &bad), 0);
	ck_assert_uint_eq(size, 7 * B + 5);
	datafile_close(&f);
}
END_TEST

START_TEST(create_is_exclusive_and_retries_are_harmless)
{
	struct datafile f;
	char name[40];

	ck_assert_int_eq(datafile_create(dirfd_, 5, 1111, 0, false), 0);
	/* The same create again (a lost reply): fine. */
	ck_assert_int_eq(datafile_create(dirfd_, 5, 1111, 0, false), 0);
	/* Another create of the handle: refused. */
	ck_assert_int_eq(datafile_create(dirfd_, 5, 2222, 0, false), -EEXIST);
	/* A datafile left without checksums: refused, nothing added. */
	csum_data_name(6, name, sizeof(name));
	ck_assert(close(openat(dirfd_, name, O_CREAT | O_WRONLY, 0600)) == 0);
	ck_assert_int_eq(datafile_create(dirfd_, 6, 3333, 0, false), -EEXIST);
	csum_sum_name(6, name, sizeof(name));
	ck_assert(faccessat(dirfd_, name, F_OK, 0) != 0);
	/* No datafile: no file. */
	ck_assert_int_eq(datafile_open(&f, dirfd_, 7), -ENOENT);
}
END_TEST

START_TEST(a_lost_checksum_file_fails_the_data_not_the_holes)
{
	static unsigned char buf[4 * B], back[4 * B], zero[4 * B];
	struct datafile f;
	char name[40];
	uint64_t bad = 0;

	make(&f, 8);
	fill(buf, sizeof(buf), 7);
	put(&f, buf, 2 * B, 0);
	datafile_close(&f);
	csum_sum_name(8, name, sizeof(name));
	ck_assert(unlinkat(dirfd_, name, 0) == 0);
	ck_assert_int_eq(datafile_open(&f, dirfd_, 8), 0);
	ck_assert_int_eq(f.cfd, -1);
	ck_assert_int_eq(datafile_read(&f, back, B, 0, &bad), -EBADMSG);
	get(&f, back, 2 * B, 2 * B);
	ck_assert(!memcmp(back, zero, 2 * B));
	/* A write makes a new checksum file; the rest stays unverified. */
	put(&f, buf, B, 3 * B);
	ck_assert(f.cfd >= 0);
	get(&f, back, B, 3 * B);
	ck_assert(!memcmp(back, buf, B));
	ck_assert_int_eq(datafile_read(&f, back, B, B, &bad), -EBADMSG);
	datafile_close(&f);
}
END_TEST

START_TEST(a_write_cut_short_still_reads)
{
	static unsigned char old[2 * B], nw[2 * B], back[2 * B];
	struct datafile f;
	struct csum_ent e[2];
	uint64_t bad = 0;

	make(&f, 9);
	fill(old, sizeof(old), 8);
	fill(nw, sizeof(nw), 9);
	put(&f, old, sizeof(old), 0);
	/* Killed after the pending versions were stored ... */
	ck_assert_int_eq(datafile_read_ents(&f, 0, 2, e), 0);
	for (int i = 0; i < 2; i++) {
		e[i].pend.crc = csum_crc(nw + i * B, B) ^ datafile_bind(&f, (uint64_t)i);
		e[i].pend.end = B;
	}
	ck_assert_int_eq(datafile_write_ents(&f, 0, 2, e), 0);
	get(&f, back, sizeof(back), 0);
	ck_assert(!memcmp(back, old, sizeof(old)));
	/* ... and with one block of the new data written. */
	ck_assert(pwrite(f.fd, nw, B, 0) == (ssize_t)B);
	get(&f, back, sizeof(back), 0);
	ck_assert(!memcmp(back, nw, B));
	ck_assert(!memcmp(back + B, old + B, B));
	/* A block torn inside is damage. */
	ck_assert(pwrite(f.fd, nw + B, 100, B) == 100);
	ck_assert_int_eq(datafile_read(&f, back, B, B, &bad), -EBADMSG);
	/* The next write of the block takes the version that matched. */
	put(&f, nw + B, B, B);
	put(&f, old, 10, 5);
	get(&f, back, sizeof(back), 0);
	ck_assert(!memcmp(back + 5, old, 10));
	datafile_close(&f);
}
END_TEST

/* ---- blocks bound to their place ------------------------------------------------ */

/* Swap blocks a and b of a datafile and their checksum entries: each
 * block's bytes and entry still agree, only their places are exchanged. */
static void swap_blocks(struct datafile *f, uint64_t a, uint64_t b)
{
	static unsigned char x[B], y[B];
	struct csum_ent ea, eb;

	ck_assert(pread(f->fd, x, B, (off_t)(a * B)) == (ssize_t)B);
	ck_assert(pread(f->fd, y, B, (off_t)(b * B)) == (ssize_t)B);
	ck_assert(pwrite(f->fd, y, B, (off_t)(a * B)) == (ssize_t)B);
	ck_assert(pwrite(f->fd, x, B, (off_t)(b * B)) == (ssize_t)B);
	ck_assert_int_eq(datafile_read_ents(f, a, 1, &ea), 0);
	ck_assert_int_eq(datafile_read_ents(f, b, 1, &eb), 0);
	ck_assert_int_eq(datafile_write_ents(f, a, 1, &eb), 0);
	ck_assert_int_eq(datafile_write_ents(f, b, 1, &ea), 0);
}

START_TEST(a_block_moved_with_its_checksum_is_damage)
{
	static unsigned char data[4 * B], back[4 * B];
	struct datafile f;
	uint64_t bad = 0;

	make(&f, 20);
	fill(data, sizeof(data), 20);
	put(&f, data, sizeof(data), 0);
	swap_blocks(&f, 1, 2);
	ck_assert_int_eq(datafile_read(&f, back, sizeof(back), 0, &bad), -EBADMSG);
	ck_assert_uint_eq(bad, B);
	ck_assert_int_eq(datafile_read(&f, back, B, 2 * B, &bad), -EBADMSG);
	ck_assert_uint_eq(bad, 2 * B);
	/* The blocks around them are fine. */
	get(&f, back, B, 0);
	get(&f, back, B, 3 * B);
	ck_assert(!memcmp(back, data + 3 * B, B));
	datafile_close(&f);
}
END_TEST

START_TEST(checksums_are_bound_to_handle_and_slot)
{
	struct datafile f = {.handle = 1, .slot = 0, .version = CSUM_VERSION};
	struct datafile g = f, h = f, v1 = f;

	g.handle = 2;
	h.slot = 1;
	v1.version = 1;
	ck_assert_uint_ne(datafile_bind(&f, 0), datafile_bind(&g, 0));
	ck_assert_uint_ne(datafile_bind(&f, 0), datafile_bind(&h, 0));
	ck_assert_uint_ne(datafile_bind(&f, 0), datafile_bind(&f, 1));
	ck_assert_uint_ne(datafile_bind(&f, 7), datafile_bind(&f, 7 + (1ull << 31)));
	/* Version 1 files: the bare CRC, as they were written. */
	ck_assert_uint_eq(datafile_bind(&v1, 5), 0);
}
END_TEST

/* The datafile grown behind our back, as truncate -s +N would. */
static void extend(struct datafile *f, uint64_t by)
{
	struct stat st;

	ck_assert(fstat(f->fd, &st) == 0);
	ck_assert(ftruncate(f->fd, st.st_size + (off_t)by) == 0);
}

START_TEST(bytes_no_checksum_covers_are_damage)
{
	static unsigned char data[3 * B + 100], back[2 * B];
	struct datafile f;
	uint64_t size, bad = 0;

	make(&f, 21);
	fill(data, sizeof(data), 21);
	put(&f, data, sizeof(data), 0);
	extend(&f, 8 * B);
	ck_assert_int_eq(datafile_size(&f, &size, &bad), -EBADMSG);
	ck_assert_uint_eq(bad, sizeof(data));
	ck_assert_int_eq(datafile_read(&f, back, B, 5 * B, &bad), -EBADMSG);
	ck_assert_uint_eq(bad, 5 * B);
	/* From the last written block on: its bytes past its end are zeros
	 * its checksum covers; the next block's are nobody's. */
	ck_assert_int_eq(datafile_read(&f, back, 2 * B, 3 * B, &bad), -EBADMSG);
	ck_assert_uint_eq(bad, 4 * B);
	/* What the checksums cover reads. */
	get(&f, back, B, 0);
	ck_assert(!memcmp(back, data, B));
	/* A truncate says what the file is again. */
	ck_assert_int_eq(datafile_truncate(&f, sizeof(data), &bad), 0);
	ck_assert_int_eq(datafile_size(&f, &size, &bad), 0);
	ck_assert_uint_eq(size, sizeof(data));
	datafile_close(&f);
}
END_TEST

START_TEST(a_file_grown_by_truncate_is_covered)
{
	static unsigned char data[B], back[4 * B], zero[4 * B];
	struct datafile f;
	uint64_t size, bad = 0;

	make(&f, 22);
	fill(data, sizeof(data), 22);
	put(&f, data, 100, 0);
	ck_assert_int_eq(datafile_truncate(&f, 20 * B + 5, &bad), 0);
	ck_assert_int_eq(datafile_size(&f, &size, &bad), 0);
	ck_assert_uint_eq(size, 20 * B + 5);
	get(&f, back, sizeof(back), 10 * B);
	ck_assert(!memcmp(back, zero, sizeof(back)));
	/* Reopened: the extent is in the checksum file. */
	datafile_close(&f);
	ck_assert_int_eq(datafile_open(&f, dirfd_, 22), 0);
	ck_assert_int_eq(datafile_size(&f, &size, &bad), 0);
	ck_assert_uint_eq(size, 20 * B + 5);
	/* One byte more than that is not. */
	extend(&f, 1);
	ck_assert_int_eq(datafile_size(&f, &size, &bad), -EBADMSG);
	ck_assert_uint_eq(bad, 20 * B + 5);
	datafile_close(&f);
}
END_TEST

/* A resync's target not yet whole (CSUM_HDR_INCOMPLETE): made so, or set
 * later, kept across opens with the epoch beside it, cleared at its end;
 * files made before the flag read as whole. */
START_TEST(the_incomplete_flag_of_a_resync_target_is_kept)
{
	struct datafile f;
	uint8_t hdr[CSUM_HDR];
	char name[40];
	int cfd;

	ck_assert_int_eq(datafile_create(dirfd_, 41, 9, 1, true), 0);
	ck_assert_int_eq(datafile_open(&f, dirfd_, 41), 0);
	ck_assert(atomic_load(&f.incomplete));
	ck_assert_int_eq(datafile_admit_epoch(&f, 7, true), 0);
	datafile_close(&f);
	ck_assert_int_eq(datafile_open(&f, dirfd_, 41), 0);
	ck_assert(atomic_load(&f.incomplete));
	ck_assert_uint_eq(f.epoch, 7);
	ck_assert_int_eq(datafile_set_incomplete(&f, false), 0);
	datafile_close(&f);
	ck_assert_int_eq(datafile_open(&f, dirfd_, 41), 0);
	ck_assert(!atomic_load(&f.incomplete));
	ck_assert_uint_eq(f.epoch, 7);
	ck_assert_int_eq(datafile_set_incomplete(&f, true), 0);
	datafile_close(&f);
	ck_assert_int_eq(datafile_open(&f, dirfd_, 41), 0);
	ck_assert(atomic_load(&f.incomplete));
	datafile_close(&f);
	/* the flag is its own field: the slot and the epoch are untouched */
	csum_sum_name(41, name, sizeof(name));
	cfd = openat(dirfd_, name, O_RDONLY);
	ck_assert_int_ge(cfd, 0);
	ck_assert_int_eq(pread(cfd, hdr, CSUM_HDR, 0), CSUM_HDR);
	close(cfd);
	ck_assert_uint_eq(hdr[CSUM_HDR_FLAGS], CSUM_HDR_INCOMPLETE);
	ck_assert_uint_eq(hdr[CSUM_HDR_SLOT], 1);
	ck_assert_uint_eq(hdr[CSUM_HDR_EPOCH], 7);
	/* a file made whole (every file made before the flag) */
	ck_assert_int_eq(datafile_create(dirfd_, 42, 9, 0, false), 0);
	ck_assert_int_eq(datafile_open(&f, dirfd_, 42), 0);
	ck_assert(!atomic_load(&f.incomplete));
	datafile_close(&f);
}
END_TEST

START_TEST(a_version_1_checksum_file_still_reads)
{
	static unsigned char data[2 * B + 7], back[2 * B + 7];
	uint8_t hdr[CSUM_HDR];
	struct csum_ent e[3];
	struct datafile f;
	uint64_t size, bad = 0;
	int fd;

	/* As an rpfsd before bound checksums wrote it: version 1, bare CRCs. */
	make(&f, 23);
	fill(data, sizeof(data), 23);
	ck_assert(pwrite(f.fd, data, sizeof(data), 0) == (ssize_t)sizeof(data));
	for (int i = 0; i < 3; i++) {
		unsigned char blk[B] = {0};
		uint32_t n = i < 2 ? B : 7;

		memcpy(blk, data + i * B, n);
		e[i].cur.crc = csum_crc(blk, B);
		e[i].cur.end = n;
		e[i].pend = (struct csum_ver){0, 0};
	}
	ck_assert_int_eq(datafile_write_ents(&f, 0, 3, e), 0);
	csum_hdr_enc(hdr, 23, 77, 0);
	hdr[8] = 1; /* version, little-endian */
	memset(hdr + 32, 0, CSUM_HDR - 32);
	fd = f.cfd;
	ck_assert(pwrite(fd, hdr, CSUM_HDR, 0) == (ssize_t)CSUM_HDR);
	datafile_close(&f);
	ck_assert_int_eq(datafile_open(&f, dirfd_, 23), 0);
	ck_assert_uint_eq(f.version, 1);
	get(&f, back, sizeof(back), 0);
	ck_assert(!memcmp(back, data, sizeof(data)));
	ck_assert_int_eq(datafile_size(&f, &size, &bad), 0);
	ck_assert_uint_eq(size, sizeof(data));
	/* And writes keep its format. */
	put(&f, data, 10, B + 3);
	get(&f, back, 20, B);
	datafile_close(&f);
}
END_TEST

/* ---- concurrency ---------------------------------------------------------------- */

#define TW_RANGE (3 * B + 500)
#define TW_OPS	 3000

struct tw {
	struct datafile *f;
	int id;
	int errors;
	volatile int *stop;
};

static void *tw_writer(void *arg)
{
	struct tw *t = arg;
	unsigned char buf[2 * B];
	unsigned s = (unsigned)t->id * 7919u + 1;

	memset(buf, 'A' + t->id, sizeof(buf));
	for (int i = 0; i < TW_OPS; i++) {
		uint64_t len, off, bad;

		s = s * 1103515245u + 12345u;
		len = 1 + (s >> 8) % (sizeof(buf) - 1);
		s = s * 1103515245u + 12345u;
		off = (s >> 8) % (TW_RANGE - len);
		if (datafile_write(t->f, buf, len, off, &bad))
			t->errors++;
	}
	return NULL;
}

static void *tw_reader(void *arg)
{
	struct tw *t = arg;
	unsigned char buf[TW_RANGE];

	while (!*t->stop) {
		uint64_t bad;

		if (datafile_read(t->f, buf, TW_RANGE, 0, &bad))
			t->errors++;
	}
	return NULL;
}

START_TEST(threads_writing_the_same_blocks_keep_checksums_right)
{
	static unsigned char back[TW_RANGE];
	volatile int stop = 0;
	struct datafile f;
	struct tw t[5];
	pthread_t thr[5];

	make(&f, 10);
	for (int i = 0; i < 5; i++) {
		t[i] = (struct tw){&f, i, 0, &stop};
		pthread_create(&thr[i], NULL, i < 4 ? tw_writer : tw_reader, &t[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(thr[i], NULL);
	stop = 1;
	pthread_join(thr[4], NULL);
	for (int i = 0; i < 5; i++)
		ck_assert_msg(!t[i].errors, "thread %d: %d errors", i, t[i].errors);
	get(&f, back, TW_RANGE, 0);
	for (size_t i = 0; i < TW_RANGE; i++)
		ck_assert(!back[i] || (back[i] >= 'A' && back[i] <= 'D'));
	/* Every block checks against its current version alone. */
	for (uint64_t k = 0; k * B < TW_RANGE; k++) {
		unsigned char blk[B];
		struct csum_ent e;
		uint32_t avail;

		ck_assert_int_eq(datafile_read_ents(&f, k, 1, &e), 0);
		ck_assert_uint_eq(e.pend.end, 0);
		ck_assert_int_eq(datafile_read_block(&f, k, blk, &avail), 0);
		ck_assert_int_eq(csum_match(&e, blk, avail, datafile_bind(&f, k)), 1);
	}
	datafile_close(&f);
}
END_TEST

/* ---- the new RPC bodies ----------------------------------------------------- */

START_TEST(io_create_and_probe_round_trip)
{
	uint8_t body[64];
	struct rpc_req r;
	struct rpc_probe p = {12, 0x3000000000007ull}, q;
	int n;

	n = rpc_enc_io_create(body, sizeof(body), 0x1000000000005ull, 0xfeed, 2, 0);
	ck_assert_int_eq(n, RPC_PREAMBLE + 24);
	ck_assert_int_eq(rpc_decode_req(body, (size_t)n, &r, NULL, 0), 0);
	ck_assert_uint_eq(r.op, RPC_IO_CREATE);
	ck_assert_uint_eq(r.handle, 0x1000000000005ull);
	ck_assert_uint_eq(r.nonce, 0xfeed);
	ck_assert_uint_eq(r.slot, 2);
	ck_assert(rpc_is_io_op(RPC_IO_CREATE) && rpc_is_io_op(RPC_IO_PROBE));
	ck_assert(!rpc_is_io_op(RPC_CREATE) && !rpc_is_io_op(47));
	/* No nonce, short, long: refused. */
	ck_assert_int_eq(rpc_enc_io_create(body, sizeof(body), 1, 0, 0, 0), -EINVAL);
	body[RPC_PREAMBLE + 8] = 0;
	body[RPC_PREAMBLE + 9] = 0;
	ck_assert_int_eq(rpc_decode_req(body, (size_t)n, &r, NULL, 0), -EPROTO);
	ck_assert_int_eq(rpc_decode_req(body, (size_t)n - 1, &r, NULL, 0), -EPROTO);

	n = rpc_enc_io_probe(body, sizeof(body), 3);
	ck_assert_int_eq(n, RPC_PREAMBLE + 8);
	ck_assert_int_eq(rpc_decode_req(body, (size_t)n, &r, NULL, 0), 0);
	ck_assert_uint_eq(r.op, RPC_IO_PROBE);
	ck_assert_uint_eq(r.meta, 3);
	body[RPC_PREAMBLE + 4] = 1; /* the pad must be 0 */
	ck_assert_int_eq(rpc_decode_req(body, (size_t)n, &r, NULL, 0), -EPROTO);
	ck_assert_int_eq(rpc_decode_req(body, (size_t)n + 1, &r, NULL, 0), -EPROTO);

	rpc_enc_probe(body, &p);
	ck_assert_int_eq(rpc_dec_probe(body, RPC_PROBE_SIZE, &q), 0);
	ck_assert(q.count == 12 && q.max_handle == p.max_handle);
	ck_assert_int_eq(rpc_dec_probe(body, RPC_PROBE_SIZE - 1, &q), -EPROTO);
}
END_TEST

static Suite *csum_suite(void)
{
	Suite *s = suite_create("csum");
	TCase *tc = tcase_create("block math");

	tcase_add_test(tc, crc_is_the_standard_crc32c);
	tcase_add_test(tc, entries_and_headers_round_trip);
	tcase_add_test(tc, names_parse);
	tcase_add_test(tc, a_block_matches_its_current_or_pending_version);
	tcase_add_test(tc, checksums_are_bound_to_handle_and_slot);
	tcase_add_test(tc, io_create_and_probe_round_trip);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, reads_return_writes_and_holes_read_as_zeros);
	tcase_add_test(tc, damage_is_found_and_never_blessed);
	tcase_add_test(tc, mending_takes_damaged_blocks_only);
	tcase_add_test(tc, the_record_of_sizes_keeps_the_largest_and_refuses_damage);
	tcase_add_test(tc, a_datafile_cut_short_is_damage);
	tcase_add_test(tc, truncate_keeps_checksums_right);
	tcase_add_test(tc, a_failed_write_leaves_the_sizes_it_found);
	tcase_add_test(tc, a_failed_write_never_cuts_another_writes_bytes);
	tcase_add_test(tc, create_is_exclusive_and_retries_are_harmless);
	tcase_add_test(tc, a_lost_checksum_file_fails_the_data_not_the_holes);
	tcase_add_test(tc, a_write_cut_short_still_reads);
	tcase_add_test(tc, a_block_moved_with_its_checksum_is_damage);
	tcase_add_test(tc, bytes_no_checksum_covers_are_damage);
	tcase_add_test(tc, a_file_grown_by_truncate_is_covered);
	tcase_add_test(tc, a_version_1_checksum_file_still_reads);
	tcase_add_test(tc, the_incomplete_flag_of_a_resync_target_is_kept);
	tcase_add_test(tc, threads_writing_the_same_blocks_keep_checksums_right);
	suite_add_tcase(s, tc);
	return s;
}

/* ---- bench mode --------------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* One pass over total bytes in pieces of len: write (1) or read (0), plain
 * or checksummed. Best wall and CPU time of 3. */
static void bench_one(struct datafile *f, bool sums, bool wr, uint64_t total,
		      uint64_t len, char *buf, double *wall, double *cpu)
{
	*wall = *cpu = 1e30;
	for (int rep = 0; rep < 3; rep++) {
		double t0 = now_s(), c0 = cpu_s();

		for (uint64_t off = 0; off < total; off += len) {
			uint64_t bad;
			int ret = sums ? (wr ? datafile_write(f, buf, len, off, &bad)
					     : datafile_read(f, buf, len, off, &bad))
				       : (wr ? (pwrite(f->fd, buf, len, (off_t)off) ==
								(ssize_t)len
							? 0
							: -EIO)
					     : (pread(f->fd, buf, len, (off_t)off) ==
								(ssize_t)len
							? 0
							: -EIO));

			if (ret) {
				fprintf(stderr, "bench: %s at %llu: %s\n",
					wr ? "write" : "read", (unsigned long long)off,
					strerror(-ret));
				exit(1);
			}
		}
		if (now_s() - t0 < *wall)
			*wall = now_s() - t0;
		if (cpu_s() - c0 < *cpu)
			*cpu = cpu_s() - c0;
	}
}

static int bench(uint64_t mib)
{
	static const uint64_t lens[] = {1 << 20, 4096};
	uint64_t total = mib << 20;
	char *buf = malloc(1 << 20);
	struct datafile f;
	uint64_t h = 100;

	snprintf(dir, sizeof(dir), "/dev/shm/rpfs-csum-bench-XXXXXX");
	if (!buf || !mkdtemp(dir))
		return 1;
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY);
	fill(buf, 1 << 20, 1);
	printf("%-8s %-6s %12s %12s %12s %12s %9s\n", "piece", "op", "plain MB/s",
	       "csum MB/s", "plain cpu s", "csum cpu s", "us/piece");
	for (size_t l = 0; l < 2; l++) {
		uint64_t t = lens[l] == 4096 ? (total < (256u << 20) ? total : 256u << 20)
					     : total;

		for (int wr = 1; wr >= 0; wr--) {
			double w[2], c[2];

			for (int sums = 0; sums < 2; sums++) {
				if (datafile_create(dirfd_, ++h, 1, 0, false) ||
				    datafile_open(&f, dirfd_, h)) {
					fprintf(stderr,
						"bench: can't make a datafile in %s\n",
						dir);
					return 1;
				}
				if (!wr)
					bench_one(&f, sums, true, t, 1 << 20, buf,
						  &w[sums], &c[sums]);
				bench_one(&f, sums, wr, t, lens[l], buf, &w[sums],
					  &c[sums]);
				datafile_close(&f);
			}
			printf("%-8s %-6s %12.0f %12.0f %12.3f %12.3f %+9.2f\n",
			       lens[l] == 4096 ? "4 KiB" : "1 MiB", wr ? "write" : "read",
			       t / 1e6 / w[0], t / 1e6 / w[1], c[0], c[1],
			       (c[1] - c[0]) / (double)(t / lens[l]) * 1e6);
		}
	}
	printf("(%llu MiB per pass, 4 KiB: at most 256 MiB; tmpfs; best of 3; us/piece: the checksums' extra CPU time per piece)\n",
	       (unsigned long long)mib);
	close(dirfd_);
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	if (argc >= 2 && !strcmp(argv[1], "--bench"))
		return bench(argc >= 3 ? strtoull(argv[2], NULL, 10) : 1024);
	sr = srunner_create(csum_suite());

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
