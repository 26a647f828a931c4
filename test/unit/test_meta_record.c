/* The record layer of the metadata store (server/meta_record.h): what every
 * value rpfsd keeps in LMDB is wrapped in. A record round-trips through
 * rec_put/rec_get and through rec_reserve/rec_seal; its sum is CRC32C of
 * exactly what meta_record.h says (checked against a bitwise CRC32C here);
 * every single-bit flip, a record read under another key or in another
 * database, a short value and a wrong magic are REC_DAMAGED, and a damaged
 * record leaves the caller's value untouched. */
#define _GNU_SOURCE
#include <check.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meta_record.h"

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

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
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
	ck_assert_uint_eq(le32(rec), REC_MAGIC);
	ck_assert_uint_eq(le32(rec + 4), want);
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

/* ---- through LMDB ----------------------------------------------------------- */

struct store {
	char dir[64];
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
};

static void store_open(struct store *s)
{
	snprintf(s->dir, sizeof(s->dir), "/tmp/rpfs-test-record-XXXXXX");
	ck_assert(mkdtemp(s->dir));
	ck_assert_int_eq(mdb_env_create(&s->env), 0);
	ck_assert_int_eq(mdb_env_set_maxdbs(s->env, 4), 0);
	ck_assert_int_eq(mdb_env_open(s->env, s->dir, MDB_NOSYNC, 0600), 0);
	ck_assert_int_eq(mdb_txn_begin(s->env, NULL, 0, &s->txn), 0);
	ck_assert_int_eq(mdb_dbi_open(s->txn, "ns", MDB_CREATE, &s->dbi), 0);
}

static void store_close(struct store *s)
{
	char p[128];

	mdb_txn_abort(s->txn);
	mdb_env_close(s->env);
	snprintf(p, sizeof(p), "%s/data.mdb", s->dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/lock.mdb", s->dir);
	unlink(p);
	rmdir(s->dir);
}

START_TEST(records_round_trip_through_put_and_reserve)
{
	struct store s;
	MDB_val pv = {sizeof(payload), payload}, v, raw;
	char k2b[] = "another";
	MDB_val k2 = {sizeof(k2b) - 1, k2b};
	void *room;

	fill_payload();
	store_open(&s);
	ck_assert_int_eq(rec_put(s.txn, s.dbi, REC_NS, &key, &pv, 0), 0);
	ck_assert_int_eq(rec_get(s.txn, s.dbi, REC_NS, &key, &v), 0);
	ck_assert_uint_eq(v.mv_size, sizeof(payload));
	ck_assert(!memcmp(v.mv_data, payload, sizeof(payload)));
	/* what LMDB holds is the header and the payload */
	ck_assert_int_eq(mdb_get(s.txn, s.dbi, (MDB_val *)&key, &raw), 0);
	ck_assert_uint_eq(raw.mv_size, REC_HDR + sizeof(payload));

	/* reserved, filled, sealed: the same record */
	ck_assert_int_eq(rec_reserve(s.txn, s.dbi, &k2, sizeof(payload), &room), 0);
	memcpy(room, payload, sizeof(payload));
	rec_seal(REC_NS, &k2, room, sizeof(payload));
	ck_assert_int_eq(rec_get(s.txn, s.dbi, REC_NS, &k2, &v), 0);
	ck_assert(v.mv_size == sizeof(payload) && !memcmp(v.mv_data, payload, v.mv_size));
	/* read as the other database's, or left unsealed: damage */
	ck_assert_int_eq(rec_get(s.txn, s.dbi, REC_BYHANDLE, &k2, &v), REC_DAMAGED);
	ck_assert_int_eq(rec_reserve(s.txn, s.dbi, &k2, sizeof(payload), &room), 0);
	memset((uint8_t *)room - REC_HDR, 0, REC_HDR + sizeof(payload));
	ck_assert_int_eq(rec_get(s.txn, s.dbi, REC_NS, &k2, &v), REC_DAMAGED);
	/* a key never written */
	k2.mv_size = 3;
	ck_assert_int_eq(rec_get(s.txn, s.dbi, REC_NS, &k2, &v), MDB_NOTFOUND);
	store_close(&s);
}
END_TEST

static Suite *record_suite(void)
{
	Suite *s = suite_create("meta_record");
	TCase *tc = tcase_create("records");

	tcase_add_test(tc, the_sum_is_crc32c_of_tag_key_length_key_and_payload);
	tcase_add_test(tc, every_single_bit_flip_is_damage_and_leaves_the_value_alone);
	tcase_add_test(tc, a_record_read_under_another_key_or_database_is_damage);
	tcase_add_test(tc, short_values_and_a_wrong_magic_are_damage);
	tcase_add_test(tc, records_round_trip_through_put_and_reserve);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(record_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
