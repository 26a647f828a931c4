/* The stored form of a namespace entry (server/meta_attr.h) and the store
 * formats that hold it (server/meta_record.h): entries round-trip every
 * field; an entry written before layouts had a kind (version 1) decodes
 * as a stripe layout, and a store of them opens as it is; kinds without
 * math, unknown kinds, unknown versions, short and damaged entries are
 * refused with a reason, never read as something else. The record every
 * stored value is wrapped in: its sum is CRC32C of exactly what
 * meta_record.h says (checked against a bitwise CRC32C here); every
 * single-bit flip, a record read under another key or in another
 * database, a short value and a wrong magic are REC_DAMAGED and leave the
 * caller's value untouched; records round-trip through rec_put/rec_get
 * and rec_reserve/rec_seal. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meta_attr.h"
#include "meta_record.h"
#include "wire.h"

/* An entry of /dir/file exactly as rpfsd wrote it before layouts had a
 * kind (version 1: "RPA1", the 80 bytes of that time's rpc_enc_attr, the
 * path): handle 0x1000000000123, mode 0640, uid 1000, gid 100, stripe
 * unit 64 KiB over 3 of 4 I/O servers from server 2. */
static const uint8_t v1_entry[] = {
	0x52, 0x50, 0x41, 0x31, 0x23, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
	0x01, 0x00, 0x00, 0x00, 0xa0, 0x01, 0x00, 0x00, 0xe8, 0x03, 0x00, 0x00,
	0x64, 0x00, 0x00, 0x00, 0x15, 0xcd, 0x85, 0x3d, 0xfe, 0x9c, 0x97, 0x17,
	0x00, 0xca, 0xc4, 0x71, 0xfe, 0x9c, 0x97, 0x17, 0x00, 0x94, 0x5f, 0xad,
	0xfe, 0x9c, 0x97, 0x17, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x03, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0xca, 0xc4, 0x71, 0xfe, 0x9c, 0x97, 0x17,
	0x2f, 0x64, 0x69, 0x72, 0x2f, 0x66, 0x69, 0x6c, 0x65,
};

static uint8_t buf[META_ATTR_SIZE + RPC_PATH_MAX + 64];

static struct rpc_attr file_attr(void)
{
	struct rpc_attr a = {0};

	a.handle = 0x0002000000000abcull;
	a.type = RPC_TYPE_FILE;
	a.mode = 0600;
	a.uid = 4242;
	a.gid = 77;
	a.atime = -5; /* before the epoch: signed */
	a.mtime = 1700000000123456789ll;
	a.ctime = 1700000000999999999ll;
	a.times_set = 1700000000000000001ll;
	a.layout.stripe_unit = 3000;
	a.layout.stripe_count = 5;
	a.layout.first_server = 7;
	a.layout.nservers = 8;
	return a;
}

static void expect_same(const struct rpc_attr *a, const struct rpc_attr *b)
{
	ck_assert_uint_eq(a->handle, b->handle);
	ck_assert_uint_eq(a->type, b->type);
	ck_assert_uint_eq(a->mode, b->mode);
	ck_assert_uint_eq(a->uid, b->uid);
	ck_assert_uint_eq(a->gid, b->gid);
	ck_assert_int_eq(a->atime, b->atime);
	ck_assert_int_eq(a->mtime, b->mtime);
	ck_assert_int_eq(a->ctime, b->ctime);
	ck_assert_int_eq(a->times_set, b->times_set);
	ck_assert_uint_eq(a->layout.kind, b->layout.kind);
	ck_assert_uint_eq(a->layout.stripe_unit, b->layout.stripe_unit);
	ck_assert_uint_eq(a->layout.stripe_count, b->layout.stripe_count);
	ck_assert_uint_eq(a->layout.first_server, b->layout.first_server);
	ck_assert_uint_eq(a->layout.nservers, b->layout.nservers);
	ck_assert_uint_eq(a->layout.copies, b->layout.copies);
	ck_assert_uint_eq(a->layout.data_cells, b->layout.data_cells);
	ck_assert_uint_eq(a->layout.parity_cells, b->layout.parity_cells);
	ck_assert_uint_eq(a->layout.cell_size, b->layout.cell_size);
}

/* Encode a with path, decode it: the result, with *out and the reason. */
static int round_trip(const struct rpc_attr *a, const char *path, struct rpc_attr *out,
		      char *why, size_t whylen)
{
	size_t plen = strlen(path), got;
	const char *p;
	int ret;

	meta_attr_enc(buf, a, path, plen);
	ret = meta_attr_dec(buf, meta_attr_size(plen), out, &p, &got, why, whylen);
	if (!ret) {
		ck_assert_uint_eq(got, plen);
		ck_assert(!memcmp(p, path, plen));
	}
	return ret;
}

/* ---- round trips ----------------------------------------------------------- */

START_TEST(a_file_round_trips_every_field)
{
	struct rpc_attr a = file_attr(), b;
	char why[200];

	ck_assert_int_eq(round_trip(&a, "/a/file", &b, why, sizeof(why)), 0);
	expect_same(&a, &b);
	ck_assert_str_eq(why, "");
	ck_assert_uint_eq(get32(buf), META_ATTR_V2);
	ck_assert_uint_eq(meta_attr_size(7), META_ATTR_SIZE + 7);
}
END_TEST

START_TEST(a_directory_round_trips_its_default_layout)
{
	struct rpc_attr a = file_attr(), b;

	a.type = RPC_TYPE_DIR;
	/* No default (the cluster's): zeros, which a file could not have. */
	a.layout = (struct rpfs_layout){0};
	ck_assert_int_eq(round_trip(&a, "/d", &b, NULL, 0), 0);
	expect_same(&a, &b);
	/* A default set with rpfs setstripe. */
	a.layout.stripe_unit = 65536;
	a.layout.stripe_count = 2;
	ck_assert_int_eq(round_trip(&a, "/d", &b, NULL, 0), 0);
	expect_same(&a, &b);
}
END_TEST

START_TEST(an_entry_written_before_kinds_decodes_as_a_stripe_layout)
{
	struct rpc_attr a;
	const char *path;
	size_t plen;
	char why[200];

	memset(&a, 0xee, sizeof(a));
	ck_assert_int_eq(meta_attr_dec(v1_entry, sizeof(v1_entry), &a, &path, &plen, why,
				       sizeof(why)),
			 0);
	ck_assert_uint_eq(a.handle, 0x0001000000000123ull);
	ck_assert_uint_eq(a.type, RPC_TYPE_FILE);
	ck_assert_uint_eq(a.mode, 0640);
	ck_assert_uint_eq(a.uid, 1000);
	ck_assert_uint_eq(a.gid, 100);
	ck_assert_int_eq(a.atime, 1700000000123456789ll);
	ck_assert_int_eq(a.mtime, 1700000001000000000ll);
	ck_assert_int_eq(a.ctime, 1700000002000000000ll);
	ck_assert_int_eq(a.times_set, 1700000001000000000ll);
	ck_assert_uint_eq(a.layout.kind, RPFS_LAYOUT_STRIPE);
	ck_assert_uint_eq(a.layout.stripe_unit, 65536);
	ck_assert_uint_eq(a.layout.stripe_count, 3);
	ck_assert_uint_eq(a.layout.first_server, 2);
	ck_assert_uint_eq(a.layout.nservers, 4);
	ck_assert_uint_eq(a.layout.copies + a.layout.data_cells + a.layout.parity_cells,
			  0);
	ck_assert_uint_eq(a.layout.cell_size, 0);
	ck_assert_uint_eq(a.cap.rights, 0);
	ck_assert_uint_eq(plen, 9);
	ck_assert(!memcmp(path, "/dir/file", 9));
}
END_TEST

START_TEST(the_path_of_either_version_is_found_without_decoding)
{
	struct rpc_attr a = file_attr();
	size_t plen = 0;
	const char *p = meta_attr_path(v1_entry, sizeof(v1_entry), &plen);

	ck_assert_ptr_eq(p, (const char *)v1_entry + META_ATTR_V1_SIZE);
	ck_assert_uint_eq(plen, 9);
	/* Whatever the attributes hold (here a type no entry has). */
	a.type = 99;
	meta_attr_enc(buf, &a, "/x/y", 4);
	p = meta_attr_path(buf, meta_attr_size(4), &plen);
	ck_assert_ptr_eq(p, (const char *)buf + META_ATTR_SIZE);
	ck_assert_uint_eq(plen, 4);
	/* None: no path, or a version it can't place. */
	ck_assert_ptr_null(meta_attr_path(buf, META_ATTR_SIZE, &plen));
	put32(buf, 0x33415052u);
	ck_assert_ptr_null(meta_attr_path(buf, meta_attr_size(4), &plen));
}
END_TEST

/* ---- refused ------------------------------------------------------------------ */

/* An ec layout (ec:2+1 over 4 data slots: 6 of the 8 servers) keeps its
 * kind and code through the store, for a file and a directory's default. */
START_TEST(an_ec_layout_round_trips)
{
	struct rpc_attr a = file_attr(), b;
	char why[200];

	a.layout.stripe_count = 4;
	a.layout.kind = RPFS_LAYOUT_EC;
	a.layout.data_cells = 2;
	a.layout.parity_cells = 1;
	ck_assert_int_eq(round_trip(&a, "/f", &b, why, sizeof(why)), 0);
	expect_same(&a, &b);
	a.type = RPC_TYPE_DIR;
	ck_assert_int_eq(round_trip(&a, "/d", &b, why, sizeof(why)), 0);
	expect_same(&a, &b);
}
END_TEST

/* A mirror file's layout, and the redundancy a directory's default holds
 * (redundancy.h: a mirror; an explicit "none", kind stripe with copies 1;
 * nothing of its own, zeros), are stored and read back as they are. */
START_TEST(a_mirror_and_a_directory_redundancy_round_trip)
{
	struct rpc_attr a = file_attr(), b;
	char why[200];

	a.layout.stripe_count = 2;
	a.layout.kind = RPFS_LAYOUT_MIRROR;
	a.layout.copies = 4;
	ck_assert_int_eq(round_trip(&a, "/f", &b, why, sizeof(why)), 0);
	expect_same(&a, &b);
	ck_assert_uint_eq(b.layout.kind, RPFS_LAYOUT_MIRROR);
	ck_assert_uint_eq(b.layout.copies, 4);
	/* 2 x 5 slots do not fit 8 servers */
	a.layout.copies = 5;
	ck_assert_int_eq(round_trip(&a, "/f", &b, why, sizeof(why)), -EPROTO);

	a.type = RPC_TYPE_DIR;
	a.layout = (struct rpfs_layout){0};
	a.layout.kind = RPFS_LAYOUT_MIRROR;
	a.layout.copies = 2;
	ck_assert_int_eq(round_trip(&a, "/d", &b, why, sizeof(why)), 0);
	ck_assert_uint_eq(b.layout.kind, RPFS_LAYOUT_MIRROR);
	ck_assert_uint_eq(b.layout.copies, 2);
	a.layout.kind = RPFS_LAYOUT_STRIPE;
	a.layout.copies = 1;
	ck_assert_int_eq(round_trip(&a, "/d", &b, why, sizeof(why)), 0);
	ck_assert_uint_eq(b.layout.kind, RPFS_LAYOUT_STRIPE);
	ck_assert_uint_eq(b.layout.copies, 1);
}
END_TEST

START_TEST(an_unknown_kind_is_refused)
{
	struct rpc_attr a = file_attr(), b;
	char why[200];

	a.layout.kind = RPFS_LAYOUT_KINDS;
	ck_assert_int_eq(round_trip(&a, "/f", &b, why, sizeof(why)), -EOPNOTSUPP);
	ck_assert_msg(strstr(why, "unknown kind"), "%s", why);
	a.layout.kind = UINT32_MAX;
	ck_assert_int_eq(round_trip(&a, "/f", &b, why, sizeof(why)), -EOPNOTSUPP);
}
END_TEST

START_TEST(an_unknown_version_is_refused)
{
	struct rpc_attr a = file_attr(), b;
	const char *p;
	size_t plen;
	char why[200];

	meta_attr_enc(buf, &a, "/f", 2);
	put32(buf, 0x33415052u); /* "RPA3" */
	ck_assert_int_eq(
		meta_attr_dec(buf, meta_attr_size(2), &b, &p, &plen, why, sizeof(why)),
		-EPROTONOSUPPORT);
	ck_assert_msg(strstr(why, "unknown version"), "%s", why);
}
END_TEST

START_TEST(a_short_entry_is_refused)
{
	struct rpc_attr a = file_attr(), b;
	const char *p;
	size_t plen;

	meta_attr_enc(buf, &a, "/f", 2);
	/* Every length up to the attributes alone (no path). */
	for (size_t n = 0; n <= META_ATTR_SIZE; n++)
		ck_assert_int_eq(meta_attr_dec(buf, n, &b, &p, &plen, NULL, 0), -EPROTO);
	for (size_t n = 4; n <= META_ATTR_V1_SIZE; n++)
		ck_assert_int_eq(meta_attr_dec(v1_entry, n, &b, &p, &plen, NULL, 0),
				 -EPROTO);
}
END_TEST

START_TEST(a_path_longer_than_a_path_can_be_is_refused)
{
	struct rpc_attr a = file_attr(), b;
	static char path[RPC_PATH_MAX + 2];
	const char *p;
	size_t plen;

	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	meta_attr_enc(buf, &a, path, RPC_PATH_MAX);
	ck_assert_int_eq(
		meta_attr_dec(buf, meta_attr_size(RPC_PATH_MAX), &b, &p, &plen, NULL, 0),
		0);
	meta_attr_enc(buf, &a, path, RPC_PATH_MAX + 1);
	ck_assert_int_eq(meta_attr_dec(buf, meta_attr_size(RPC_PATH_MAX + 1), &b, &p,
				       &plen, NULL, 0),
			 -EPROTO);
}
END_TEST

START_TEST(damaged_attributes_are_refused)
{
	struct rpc_attr a = file_attr(), b;
	char why[200];

	a.layout.stripe_unit = 0; /* a client would divide by it */
	ck_assert_int_eq(round_trip(&a, "/f", &b, why, sizeof(why)), -EPROTO);
	ck_assert_msg(strstr(why, "layout"), "%s", why);
	a = file_attr();
	a.layout.stripe_count = a.layout.nservers + 1;
	ck_assert_int_eq(round_trip(&a, "/f", &b, NULL, 0), -EPROTO);
	a = file_attr();
	a.layout.copies = 2; /* a stripe layout has no copies */
	ck_assert_int_eq(round_trip(&a, "/f", &b, NULL, 0), -EPROTO);
	a = file_attr();
	a.type = 7;
	ck_assert_int_eq(round_trip(&a, "/f", &b, why, sizeof(why)), -EPROTO);
	ck_assert_msg(strstr(why, "type"), "%s", why);
}
END_TEST

/* ---- stores ------------------------------------------------------------------- */

static char storedir[64];

static void store_setup(void)
{
	strcpy(storedir, "/tmp/rpfs-test-meta-attr.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(storedir));
}

static void store_teardown(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/data.mdb", storedir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/lock.mdb", storedir);
	unlink(path);
	rmdir(storedir);
}

struct store {
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi ns, sys;
};

static void store_open(struct store *s, unsigned flags)
{
	ck_assert_int_eq(mdb_env_create(&s->env), 0);
	ck_assert_int_eq(mdb_env_set_maxdbs(s->env, 4), 0);
	ck_assert_int_eq(mdb_env_set_mapsize(s->env, 1ull << 24), 0);
	ck_assert_int_eq(mdb_env_open(s->env, storedir, MDB_NOTLS, 0600), 0);
	ck_assert_int_eq(mdb_txn_begin(s->env, NULL, flags, &s->txn), 0);
	ck_assert_int_eq(mdb_dbi_open(s->txn, "ns", MDB_CREATE, &s->ns), 0);
	ck_assert_int_eq(mdb_dbi_open(s->txn, "sys", MDB_CREATE, &s->sys), 0);
	ck_assert_int_eq(mdb_dbi_open(s->txn, "byhandle", MDB_CREATE, &(MDB_dbi){0}), 0);
}

static void store_close(struct store *s)
{
	ck_assert_int_eq(mdb_txn_commit(s->txn), 0);
	mdb_env_close(s->env);
}

static const MDB_val entry_key = {4, "\0\0\0k"};

/* A store as an rpfsd of format fmt left it: v1_entry under entry_key, a
 * record (bare value for format 1), and its format record (none for 1). */
static void make_store(uint32_t fmt)
{
	MDB_val fk = {sizeof(REC_FORMAT_KEY) - 1, REC_FORMAT_KEY};
	MDB_val v = {sizeof(v1_entry), (void *)v1_entry}, fv;
	uint8_t f[4];
	struct store s;

	store_open(&s, 0);
	if (fmt == 1) {
		ck_assert_int_eq(mdb_put(s.txn, s.ns, (MDB_val *)&entry_key, &v, 0), 0);
	} else {
		put32(f, fmt);
		fv = (MDB_val){4, f};
		ck_assert_int_eq(rec_put(s.txn, s.ns, REC_NS, &entry_key, &v, 0), 0);
		ck_assert_int_eq(rec_put(s.txn, s.sys, REC_SYS, &fk, &fv, 0), 0);
	}
	store_close(&s);
}

/* The store's format, and its entry still v1_entry, byte for byte. */
static int format_and_entry_kept(void)
{
	struct store s;
	MDB_val v;
	int fmt;

	store_open(&s, MDB_RDONLY);
	fmt = rec_store_format(s.txn, s.sys);
	ck_assert_int_eq(rec_get(s.txn, s.ns, REC_NS, &entry_key, &v), 0);
	ck_assert_uint_eq(v.mv_size, sizeof(v1_entry));
	ck_assert(!memcmp(v.mv_data, v1_entry, sizeof(v1_entry)));
	store_close(&s);
	return fmt;
}

START_TEST(a_store_of_version_1_entries_opens_as_it_is)
{
	char why[512] = "";

	make_store(REC_FORMAT_RPA1);
	ck_assert_int_eq(rec_upgrade(storedir, why, sizeof(why)), 0);
	/* Marked as one that may hold version 2 entries; its entry untouched. */
	ck_assert_int_eq(format_and_entry_kept(), REC_FORMAT);
	ck_assert_int_eq(rec_upgrade(storedir, why, sizeof(why)), 0);
	ck_assert_int_eq(format_and_entry_kept(), REC_FORMAT);
}
END_TEST

START_TEST(a_store_without_records_of_version_1_entries_is_upgraded)
{
	char why[512] = "";

	make_store(1);
	ck_assert_int_eq(rec_upgrade(storedir, why, sizeof(why)), 0);
	ck_assert_int_eq(format_and_entry_kept(), REC_FORMAT);
}
END_TEST

START_TEST(a_store_of_a_newer_format_is_refused)
{
	char why[512] = "";

	make_store(REC_FORMAT + 1);
	ck_assert_int_eq(rec_upgrade(storedir, why, sizeof(why)), -EPROTONOSUPPORT);
	ck_assert_msg(strstr(why, "newer format") && strstr(why, storedir), "%s", why);
}
END_TEST

/* ---- records (meta_record.c) -------------------------------------------------- */

/* CRC32C (Castagnoli, reflected 0x82f63b78), one bit at a time: the
 * reference the ISA-L sum must equal. */
static uint32_t crc32c_bitwise(uint32_t crc, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		crc ^= p[i];
		for (int b = 0; b < 8; b++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
	}
	return crc;
}

static char key_bytes[] = "\x00\x11\x22\x33\x44\x55\x66\x77"
			  "file-name";
static const MDB_val key = {sizeof(key_bytes) - 1, key_bytes};
static uint8_t payload[100];

/* A record of payload under key in db, built by rec_seal in rec[]. */
static void make_record(enum rec_db db, uint8_t *rec)
{
	memcpy(rec + REC_HDR, payload, sizeof(payload));
	rec_seal(db, &key, rec + REC_HDR, sizeof(payload));
}

static void fill_payload(void)
{
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 37 + 11);
}

START_TEST(the_sum_is_crc32c_of_tag_key_length_key_and_payload)
{
	uint8_t pre[3] = {REC_NS, (uint8_t)key.mv_size, (uint8_t)(key.mv_size >> 8)};
	uint32_t want = 0xffffffffu;
	uint8_t rec[REC_HDR + sizeof(payload)];

	fill_payload();
	want = crc32c_bitwise(want, pre, sizeof(pre));
	want = crc32c_bitwise(want, key.mv_data, key.mv_size);
	want = crc32c_bitwise(want, payload, sizeof(payload)) ^ 0xffffffffu;
	ck_assert_uint_eq(rec_sum(REC_NS, &key, payload, sizeof(payload)), want);
	/* CRC32C's check value ("123456789" -> 0xe3069283) */
	ck_assert_uint_eq(crc32c_bitwise(0xffffffffu, (const uint8_t *)"123456789", 9) ^
				  0xffffffffu,
			  0xe3069283u);
	/* and the header as stored: magic, then the sum, both little-endian */
	make_record(REC_NS, rec);
	ck_assert_uint_eq(get32(rec), REC_MAGIC);
	ck_assert_uint_eq(get32(rec + 4), want);
	ck_assert(!memcmp(rec, "RPR2", 4));
}
END_TEST

START_TEST(every_single_bit_flip_is_damage_and_leaves_the_value_alone)
{
	uint8_t rec[REC_HDR + sizeof(payload)];
	size_t flips = 0;

	fill_payload();
	make_record(REC_BYHANDLE, rec);
	for (size_t bit = 0; bit < 8 * sizeof(rec); bit++) {
		MDB_val v = {sizeof(rec), rec};

		rec[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		ck_assert_msg(rec_check(REC_BYHANDLE, &key, &v) == REC_DAMAGED,
			      "bit %zu flipped: not damaged", bit);
		ck_assert(v.mv_data == rec && v.mv_size == sizeof(rec));
		rec[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		flips++;
	}
	ck_assert_uint_eq(flips, 8 * (REC_HDR + sizeof(payload)));
	/* and unflipped it is whole again */
	{
		MDB_val v = {sizeof(rec), rec};

		ck_assert_int_eq(rec_check(REC_BYHANDLE, &key, &v), 0);
		ck_assert_uint_eq(v.mv_size, sizeof(payload));
		ck_assert(!memcmp(v.mv_data, payload, sizeof(payload)));
	}
}
END_TEST

START_TEST(a_record_read_under_another_key_or_database_is_damage)
{
	uint8_t rec[REC_HDR + sizeof(payload)];
	char other[sizeof(key_bytes)];
	MDB_val v, k2 = {key.mv_size, other};

	fill_payload();
	make_record(REC_NS, rec);
	/* another database: the same bytes in "byhandle" or "sys" */
	for (int db = REC_NS; db <= REC_SYS; db++) {
		v = (MDB_val){sizeof(rec), rec};
		ck_assert_int_eq(rec_check((enum rec_db)db, &key, &v),
				 db == REC_NS ? 0 : REC_DAMAGED);
	}
	/* another key: one bit of it, its last byte dropped, one byte added */
	memcpy(other, key_bytes, sizeof(other));
	other[3] ^= 0x40;
	v = (MDB_val){sizeof(rec), rec};
	ck_assert_int_eq(rec_check(REC_NS, &k2, &v), REC_DAMAGED);
	memcpy(other, key_bytes, sizeof(other));
	k2.mv_size = key.mv_size - 1;
	v = (MDB_val){sizeof(rec), rec};
	ck_assert_int_eq(rec_check(REC_NS, &k2, &v), REC_DAMAGED);
	k2.mv_size = key.mv_size + 1; /* the string's NUL */
	v = (MDB_val){sizeof(rec), rec};
	ck_assert_int_eq(rec_check(REC_NS, &k2, &v), REC_DAMAGED);
}
END_TEST

START_TEST(short_values_and_a_wrong_magic_are_damage)
{
	uint8_t rec[REC_HDR + sizeof(payload)];
	MDB_val v;

	fill_payload();
	make_record(REC_SYS, rec);
	for (size_t len = 0; len < REC_HDR; len++) {
		v = (MDB_val){len, rec};
		ck_assert_int_eq(rec_check(REC_SYS, &key, &v), REC_DAMAGED);
	}
	/* a record cut short is damage too (its sum covers the payload) */
	v = (MDB_val){sizeof(rec) - 1, rec};
	ck_assert_int_eq(rec_check(REC_SYS, &key, &v), REC_DAMAGED);
	/* the old format's bare value, however it starts, is not a record */
	memcpy(rec, "RPA1", 4);
	v = (MDB_val){sizeof(rec), rec};
	ck_assert_int_eq(rec_check(REC_SYS, &key, &v), REC_DAMAGED);
	/* an empty payload is a record like any other */
	rec_seal(REC_SYS, &key, rec + REC_HDR, 0);
	v = (MDB_val){REC_HDR, rec};
	ck_assert_int_eq(rec_check(REC_SYS, &key, &v), 0);
	ck_assert_uint_eq(v.mv_size, 0);
}
END_TEST

START_TEST(records_round_trip_through_put_and_reserve)
{
	struct store s;
	MDB_val pv = {sizeof(payload), payload}, v, raw;
	char k2b[] = "another";
	MDB_val k2 = {sizeof(k2b) - 1, k2b};
	void *room;

	fill_payload();
	store_open(&s, 0);
	ck_assert_int_eq(rec_put(s.txn, s.ns, REC_NS, &key, &pv, 0), 0);
	ck_assert_int_eq(rec_get(s.txn, s.ns, REC_NS, &key, &v), 0);
	ck_assert_uint_eq(v.mv_size, sizeof(payload));
	ck_assert(!memcmp(v.mv_data, payload, sizeof(payload)));
	/* what LMDB holds is the header and the payload */
	ck_assert_int_eq(mdb_get(s.txn, s.ns, (MDB_val *)&key, &raw), 0);
	ck_assert_uint_eq(raw.mv_size, REC_HDR + sizeof(payload));

	/* reserved, filled, sealed: the same record */
	ck_assert_int_eq(rec_reserve(s.txn, s.ns, &k2, sizeof(payload), &room), 0);
	memcpy(room, payload, sizeof(payload));
	rec_seal(REC_NS, &k2, room, sizeof(payload));
	ck_assert_int_eq(rec_get(s.txn, s.ns, REC_NS, &k2, &v), 0);
	ck_assert(v.mv_size == sizeof(payload) && !memcmp(v.mv_data, payload, v.mv_size));
	/* read as the other database's, or left unsealed: damage */
	ck_assert_int_eq(rec_get(s.txn, s.ns, REC_BYHANDLE, &k2, &v), REC_DAMAGED);
	ck_assert_int_eq(rec_reserve(s.txn, s.ns, &k2, sizeof(payload), &room), 0);
	memset((uint8_t *)room - REC_HDR, 0, REC_HDR + sizeof(payload));
	ck_assert_int_eq(rec_get(s.txn, s.ns, REC_NS, &k2, &v), REC_DAMAGED);
	/* a key never written */
	k2.mv_size = 3;
	ck_assert_int_eq(rec_get(s.txn, s.ns, REC_NS, &k2, &v), MDB_NOTFOUND);
	store_close(&s);
}
END_TEST

static Suite *meta_attr_suite(void)
{
	Suite *s = suite_create("meta_attr");
	TCase *tc = tcase_create("round trips");

	tcase_add_test(tc, a_file_round_trips_every_field);
	tcase_add_test(tc, a_directory_round_trips_its_default_layout);
	tcase_add_test(tc, an_entry_written_before_kinds_decodes_as_a_stripe_layout);
	tcase_add_test(tc, the_path_of_either_version_is_found_without_decoding);
	suite_add_tcase(s, tc);

	tc = tcase_create("refused");
	tcase_add_test(tc, an_ec_layout_round_trips);
	tcase_add_test(tc, a_mirror_and_a_directory_redundancy_round_trip);
	tcase_add_test(tc, an_unknown_kind_is_refused);
	tcase_add_test(tc, an_unknown_version_is_refused);
	tcase_add_test(tc, a_short_entry_is_refused);
	tcase_add_test(tc, a_path_longer_than_a_path_can_be_is_refused);
	tcase_add_test(tc, damaged_attributes_are_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("stores");
	tcase_add_checked_fixture(tc, store_setup, store_teardown);
	tcase_add_test(tc, a_store_of_version_1_entries_opens_as_it_is);
	tcase_add_test(tc, a_store_without_records_of_version_1_entries_is_upgraded);
	tcase_add_test(tc, a_store_of_a_newer_format_is_refused);
	tcase_add_test(tc, records_round_trip_through_put_and_reserve);
	suite_add_tcase(s, tc);

	tc = tcase_create("records");
	tcase_add_test(tc, the_sum_is_crc32c_of_tag_key_length_key_and_payload);
	tcase_add_test(tc, every_single_bit_flip_is_damage_and_leaves_the_value_alone);
	tcase_add_test(tc, a_record_read_under_another_key_or_database_is_damage);
	tcase_add_test(tc, short_values_and_a_wrong_magic_are_damage);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(meta_attr_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
