/* Wire format specification (proto.h): every message round-trips field by
 * field, and every decoder refuses what does not fit the bytes received or
 * what a sane peer could not have sent. A fuzz loop feeds random and
 * mutated buffers, each allocated to its exact length so that a sanitizer
 * build catches any read past the end. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"
#include "proto.h"

/* Big enough for a header, a body and a few descriptors. */
#define BUFSZ 1024

static struct proto_hdr sample_hdr(void)
{
	struct proto_hdr h = {
		.type = PROTO_REP,
		.path = XP_PATH_FAST,
		.dir = PROTO_DIR_READ,
		.tag = 0xdeadbeef,
		.credits = 31,
		.acks = 7,
		.body_len = 100,
		.ndesc = 3,
		.slot = 15,
		.status = -ENOENT,
		.data_len = 0x123456789abcULL,
		.data_off = PROTO_HDR_SIZE + 100 + 3 * PROTO_DESC_SIZE + 16,
	};
	return h;
}

static size_t sample_len(const struct proto_hdr *h)
{
	return PROTO_HDR_SIZE + h->body_len + (size_t)h->ndesc * PROTO_DESC_SIZE;
}

static struct proto_hello sample_hello(void)
{
	struct proto_hello m = {
		.conn_id = 42,
		.recv_count = 33,
		.recv_size = 8192,
		.max_requests = 32,
		.fast = {.addr = 0x7f0012345000ULL,
			 .key = 0xabcdef0123ULL,
			 .slot_size = 65536 + 4096,
			 .slot_count = 16},
	};

	for (int i = 0; i < PROTO_MAC_SIZE; i++)
		m.mac[i] = (uint8_t)(i * 7 + 1);
	return m;
}

static struct proto_hello_rep sample_hello_rep(void)
{
	struct proto_hello_rep m = {
		.status = 0,
		.conn_id = 9,
		.credits = 32,
		.recv_size = 8192,
		.fast = {.addr = 4096, .key = 77, .slot_size = 69632, .slot_count = 16},
		.max_requests = 32,
	};

	for (int i = 0; i < PROTO_MAC_SIZE; i++)
		m.mac[i] = (uint8_t)(i * 5 + 3);
	return m;
}

/* Encode h into a zeroed buffer and decode it back with len bytes. */
static int hdr_try(const struct proto_hdr *h, size_t len, struct proto_hdr *out)
{
	static uint8_t buf[BUFSZ];

	memset(buf, 0, sizeof(buf));
	proto_hdr_encode(buf, h);
	return proto_hdr_decode(buf, len, out);
}

/* ---- header ------------------------------------------------------------ */

START_TEST(hdr_round_trips_every_field)
{
	struct proto_hdr h = sample_hdr(), d;

	memset(&d, 0xff, sizeof(d));
	ck_assert_int_eq(hdr_try(&h, sample_len(&h), &d), 0);
	ck_assert_uint_eq(d.type, h.type);
	ck_assert_uint_eq(d.path, h.path);
	ck_assert_uint_eq(d.dir, h.dir);
	ck_assert_uint_eq(d.tag, h.tag);
	ck_assert_uint_eq(d.credits, h.credits);
	ck_assert_uint_eq(d.acks, h.acks);
	ck_assert_uint_eq(d.body_len, h.body_len);
	ck_assert_uint_eq(d.ndesc, h.ndesc);
	ck_assert_uint_eq(d.slot, h.slot);
	ck_assert_int_eq(d.status, h.status);
	ck_assert_uint_eq(d.data_len, h.data_len);
	ck_assert_uint_eq(d.data_off, h.data_off);
	ck_assert_uint_eq(proto_desc_off(&d), PROTO_HDR_SIZE + 100);
	ck_assert_uint_eq(proto_data_off(&d), PROTO_HDR_SIZE + 100 + 3 * PROTO_DESC_SIZE);
}
END_TEST

START_TEST(hdr_is_little_endian_starting_with_magic)
{
	uint8_t buf[PROTO_HDR_SIZE];
	struct proto_hdr h = sample_hdr();

	proto_hdr_encode(buf, &h);
	/* The magic reads "RPFS" on the wire whatever the host byte order. */
	ck_assert_int_eq(memcmp(buf, "RPFS", 4), 0);
	ck_assert_uint_eq(buf[4], PROTO_VERSION);
	ck_assert_uint_eq(buf[5], 0);
	/* tag at offset 12, least significant byte first */
	ck_assert_uint_eq(buf[12], 0xef);
	ck_assert_uint_eq(buf[15], 0xde);
}
END_TEST

START_TEST(hdr_decode_accepts_every_type_path_and_dir)
{
	struct proto_hdr h = sample_hdr(), d;

	h.body_len = 0;
	h.ndesc = 0;
	for (int t = PROTO_HELLO; t <= PROTO_CREDIT; t++)
		for (int p = XP_PATH_AUTO; p <= XP_PATH_BULK; p++)
			for (int dir = PROTO_DIR_NONE; dir <= PROTO_DIR_READ; dir++) {
				h.type = (uint8_t)t;
				h.path = (uint8_t)p;
				h.dir = (uint8_t)dir;
				ck_assert_msg(hdr_try(&h, PROTO_HDR_SIZE, &d) == 0,
					      "type %d path %d dir %d refused", t, p,
					      dir);
			}
}
END_TEST

START_TEST(hdr_decode_rejects_short_buffer)
{
	struct proto_hdr h = sample_hdr(), d;

	h.body_len = 0;
	h.ndesc = 0;
	for (size_t len = 0; len < PROTO_HDR_SIZE; len++)
		ck_assert_int_eq(hdr_try(&h, len, &d), -EPROTO);
	ck_assert_int_eq(hdr_try(&h, PROTO_HDR_SIZE, &d), 0);
}
END_TEST

START_TEST(hdr_decode_rejects_bad_magic)
{
	uint8_t buf[PROTO_HDR_SIZE];
	struct proto_hdr h = sample_hdr(), d;

	h.body_len = 0;
	h.ndesc = 0;
	for (int i = 0; i < 4; i++) {
		proto_hdr_encode(buf, &h);
		buf[i] ^= 0x20;
		ck_assert_int_eq(proto_hdr_decode(buf, sizeof(buf), &d), -EPROTO);
	}
}
END_TEST

START_TEST(hdr_decode_rejects_other_versions)
{
	uint8_t buf[PROTO_HDR_SIZE];
	struct proto_hdr h = sample_hdr(), d;
	static const uint16_t versions[] = {0, PROTO_VERSION + 1, 0x100 | PROTO_VERSION,
					    0xffff};

	h.body_len = 0;
	h.ndesc = 0;
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		proto_hdr_encode(buf, &h);
		buf[4] = (uint8_t)versions[i];
		buf[5] = (uint8_t)(versions[i] >> 8);
		ck_assert_int_eq(proto_hdr_decode(buf, sizeof(buf), &d), -EPROTO);
	}
}
END_TEST

START_TEST(hdr_decode_rejects_bad_type)
{
	struct proto_hdr h = sample_hdr(), d;
	static const uint8_t bad[] = {0, PROTO_CREDIT + 1, 0x80, 0xff};

	for (size_t i = 0; i < sizeof(bad); i++) {
		h.type = bad[i];
		ck_assert_int_eq(hdr_try(&h, BUFSZ, &d), -EPROTO);
	}
}
END_TEST

START_TEST(hdr_decode_rejects_bad_path)
{
	struct proto_hdr h = sample_hdr(), d;
	static const uint8_t bad[] = {XP_PATH_BULK + 1, 0x7f, 0xff};

	for (size_t i = 0; i < sizeof(bad); i++) {
		h.path = bad[i];
		ck_assert_int_eq(hdr_try(&h, BUFSZ, &d), -EPROTO);
	}
}
END_TEST

START_TEST(hdr_decode_rejects_bad_dir)
{
	struct proto_hdr h = sample_hdr(), d;
	static const uint8_t bad[] = {PROTO_DIR_READ + 1, 0x40, 0xff};

	for (size_t i = 0; i < sizeof(bad); i++) {
		h.dir = bad[i];
		ck_assert_int_eq(hdr_try(&h, BUFSZ, &d), -EPROTO);
	}
}
END_TEST

START_TEST(hdr_decode_rejects_body_past_buffer)
{
	struct proto_hdr h = sample_hdr(), d;

	h.ndesc = 0;
	h.body_len = 10;
	ck_assert_int_eq(hdr_try(&h, PROTO_HDR_SIZE + 9, &d), -EPROTO);
	ck_assert_int_eq(hdr_try(&h, PROTO_HDR_SIZE + 10, &d), 0);
	h.body_len = BUFSZ;
	ck_assert_int_eq(hdr_try(&h, BUFSZ, &d), -EPROTO);
}
END_TEST

START_TEST(hdr_decode_rejects_descriptors_past_buffer)
{
	struct proto_hdr h = sample_hdr(), d;

	h.body_len = 0;
	h.ndesc = 2;
	ck_assert_int_eq(hdr_try(&h, PROTO_HDR_SIZE + 2 * PROTO_DESC_SIZE - 1, &d),
			 -EPROTO);
	ck_assert_int_eq(hdr_try(&h, PROTO_HDR_SIZE + 2 * PROTO_DESC_SIZE, &d), 0);
	/* body and descriptors count together */
	h.body_len = 5;
	ck_assert_int_eq(hdr_try(&h, PROTO_HDR_SIZE + 2 * PROTO_DESC_SIZE + 4, &d),
			 -EPROTO);
	ck_assert_int_eq(hdr_try(&h, PROTO_HDR_SIZE + 2 * PROTO_DESC_SIZE + 5, &d), 0);
}
END_TEST

/* Lengths chosen so that 32-bit sums or products wrap to something small. */
START_TEST(hdr_decode_rejects_lengths_that_wrap_32_bits)
{
	struct proto_hdr h = sample_hdr(), d;
	static const struct {
		uint32_t body_len, ndesc;
	} cases[] = {
		{0xffffffffu, 0},
		{0u - PROTO_HDR_SIZE, 0},     /* 48 + body == 2^32 */
		{0u - PROTO_HDR_SIZE + 8, 0}, /* 48 + body == 8 mod 2^32 */
		{0, 0xffffffffu},
		{0, 0x0aaaaaabu}, /* ndesc * 24 == 2^32 + 8 */
		{0, (uint32_t)(0x100000000ULL / PROTO_DESC_SIZE) + 1},
		{0xffffffffu, 0xffffffffu},
		{0x80000000u, 0x0aaaaaabu},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		h.body_len = cases[i].body_len;
		h.ndesc = cases[i].ndesc;
		ck_assert_msg(hdr_try(&h, BUFSZ, &d) == -EPROTO,
			      "body_len %#x ndesc %#x accepted in %d bytes",
			      (unsigned)h.body_len, (unsigned)h.ndesc, BUFSZ);
	}
}
END_TEST

/* ---- data placement ------------------------------------------------------ */

static struct proto_hdr data_hdr(uint16_t data_off, uint64_t data_len)
{
	struct proto_hdr h = sample_hdr();

	h.body_len = 10;
	h.ndesc = 0;
	h.data_off = data_off;
	h.data_len = data_len;
	return h;
}

START_TEST(data_fits_accepts_data_inside_the_message)
{
	struct proto_hdr h;

	h = data_hdr(PROTO_HDR_SIZE + 10, 100); /* packed right after the body */
	ck_assert(proto_data_fits(&h, PROTO_HDR_SIZE + 110));
	ck_assert(proto_data_fits(&h, 4096));
	h = data_hdr(1024, 3072); /* a gap before the data, ending at len */
	ck_assert(proto_data_fits(&h, 4096));
	h = data_hdr(4096, 0); /* empty, at the very end */
	ck_assert(proto_data_fits(&h, 4096));
}
END_TEST

START_TEST(data_fits_rejects_data_over_body_or_descriptors)
{
	struct proto_hdr h = data_hdr(PROTO_HDR_SIZE + 9, 1);

	ck_assert(!proto_data_fits(&h, 4096));
	h = data_hdr(0, 1);
	ck_assert(!proto_data_fits(&h, 4096));
	h = data_hdr(PROTO_HDR_SIZE + 10 + PROTO_DESC_SIZE - 1, 1);
	h.ndesc = 1;
	ck_assert(!proto_data_fits(&h, 4096));
}
END_TEST

START_TEST(data_fits_rejects_data_past_the_end)
{
	struct proto_hdr h = data_hdr(PROTO_HDR_SIZE + 10, 101);

	ck_assert(!proto_data_fits(&h, PROTO_HDR_SIZE + 110));
	h = data_hdr(4097, 0);
	ck_assert(!proto_data_fits(&h, 4096));
	h = data_hdr(0xffff, 0);
	ck_assert(!proto_data_fits(&h, 4096));
}
END_TEST

/* data_off + data_len must not be computed where it can wrap. */
START_TEST(data_fits_rejects_lengths_that_wrap)
{
	struct proto_hdr h = data_hdr(1024, UINT64_MAX);

	ck_assert(!proto_data_fits(&h, 4096));
	h = data_hdr(1024, UINT64_MAX - 1000);
	ck_assert(!proto_data_fits(&h, 4096));
	h = data_hdr(1024, (uint64_t)1 << 63);
	ck_assert(!proto_data_fits(&h, 4096));
}
END_TEST

/* ---- descriptors ------------------------------------------------------- */

START_TEST(desc_round_trips_64_bit_fields)
{
	uint8_t buf[PROTO_DESC_SIZE];
	struct proto_desc d = {0xfedcba9876543210ULL, 0x0000000100000001ULL,
			       0x8000000000000001ULL},
			  e;

	proto_desc_encode(buf, &d);
	proto_desc_decode(buf, &e);
	ck_assert_uint_eq(e.addr, d.addr);
	ck_assert_uint_eq(e.len, d.len);
	ck_assert_uint_eq(e.key, d.key);
	/* addr first, least significant byte first */
	ck_assert_uint_eq(buf[0], 0x10);
	ck_assert_uint_eq(buf[7], 0xfe);
	ck_assert_uint_eq(buf[8], 0x01);
	ck_assert_uint_eq(buf[16], 0x01);
	ck_assert_uint_eq(buf[23], 0x80);
}
END_TEST

/* ---- hello ------------------------------------------------------------- */

static int hello_try(const struct proto_hello *m, size_t len, struct proto_hello *out)
{
	uint8_t buf[PROTO_HELLO_SIZE + 16];

	memset(buf, 0, sizeof(buf));
	proto_hello_encode(buf, m);
	return proto_hello_decode(buf, len, out);
}

START_TEST(hello_round_trips_every_field)
{
	struct proto_hello m = sample_hello(), d;

	memset(&d, 0, sizeof(d));
	ck_assert_int_eq(hello_try(&m, PROTO_HELLO_SIZE, &d), 0);
	ck_assert_uint_eq(d.conn_id, m.conn_id);
	ck_assert_uint_eq(d.recv_count, m.recv_count);
	ck_assert_uint_eq(d.recv_size, m.recv_size);
	ck_assert_uint_eq(d.max_requests, m.max_requests);
	ck_assert_uint_eq(d.fast.addr, m.fast.addr);
	ck_assert_uint_eq(d.fast.key, m.fast.key);
	ck_assert_uint_eq(d.fast.slot_size, m.fast.slot_size);
	ck_assert_uint_eq(d.fast.slot_count, m.fast.slot_count);
	ck_assert_int_eq(memcmp(d.mac, m.mac, PROTO_MAC_SIZE), 0);
	ck_assert_uint_eq(d.app_len, 0);
}
END_TEST

START_TEST(hello_app_data_must_lie_inside_the_body)
{
	struct proto_hello m = sample_hello(), d;
	uint8_t buf[PROTO_HELLO_SIZE + PROTO_APP_MAX + 1];

	m.app_len = 100;
	proto_hello_encode(buf, &m);
	ck_assert_int_eq(proto_hello_decode(buf, PROTO_HELLO_SIZE + 100, &d), 0);
	ck_assert_uint_eq(d.app_len, 100);
	ck_assert_int_eq(proto_hello_decode(buf, PROTO_HELLO_SIZE + 99, &d), -EPROTO);
	m.app_len = PROTO_APP_MAX + 1;
	proto_hello_encode(buf, &m);
	ck_assert_int_eq(proto_hello_decode(buf, sizeof(buf), &d), -EPROTO);
	m.app_len = 0xffffffffu;
	proto_hello_encode(buf, &m);
	ck_assert_int_eq(proto_hello_decode(buf, sizeof(buf), &d), -EPROTO);
}
END_TEST

START_TEST(hello_decode_rejects_short_buffer)
{
	struct proto_hello m = sample_hello(), d;

	for (size_t len = 0; len < PROTO_HELLO_SIZE; len++)
		ck_assert_int_eq(hello_try(&m, len, &d), -EPROTO);
}
END_TEST

/* The client must keep more receives posted than requests in flight: each
 * reply needs one, and control messages need at least one more. */
START_TEST(hello_decode_rejects_recv_count_not_above_max_requests)
{
	struct proto_hello m = sample_hello(), d;

	m.max_requests = 32;
	m.recv_count = 32;
	ck_assert_int_eq(hello_try(&m, PROTO_HELLO_SIZE, &d), -EPROTO);
	m.recv_count = 31;
	ck_assert_int_eq(hello_try(&m, PROTO_HELLO_SIZE, &d), -EPROTO);
	m.recv_count = 0;
	ck_assert_int_eq(hello_try(&m, PROTO_HELLO_SIZE, &d), -EPROTO);
	m.recv_count = 33;
	ck_assert_int_eq(hello_try(&m, PROTO_HELLO_SIZE, &d), 0);
}
END_TEST

START_TEST(hello_decode_rejects_zero_max_requests)
{
	struct proto_hello m = sample_hello(), d;

	m.max_requests = 0;
	m.recv_count = 1;
	ck_assert_int_eq(hello_try(&m, PROTO_HELLO_SIZE, &d), -EPROTO);
}
END_TEST

START_TEST(hello_decode_rejects_absurd_receive_counts_and_sizes)
{
	struct proto_hello m, d;

	m = sample_hello();
	m.recv_count = 4097;
	ck_assert_int_eq(hello_try(&m, PROTO_HELLO_SIZE, &d), -EPROTO);
	m.recv_count = 0xffffffffu;
	ck_assert_int_eq(hello_try(&m, PROTO_HELLO_SIZE, &d), -EPROTO);

	m = sample_hello();
	m.recv_size = PROTO_HDR_SIZE + 63;
	ck_assert_int_eq(hello_try(&m, PROTO_HELLO_SIZE, &d), -EPROTO);
	m.recv_size = 0;
	ck_assert_int_eq(hello_try(&m, PROTO_HELLO_SIZE, &d), -EPROTO);
	m.recv_size = (16u << 20) + 1;
	ck_assert_int_eq(hello_try(&m, PROTO_HELLO_SIZE, &d), -EPROTO);
	m.recv_size = 0xffffffffu;
	ck_assert_int_eq(hello_try(&m, PROTO_HELLO_SIZE, &d), -EPROTO);
}
END_TEST

START_TEST(hello_decode_rejects_absurd_fast_buffer)
{
	struct proto_hello m, d;
	static const struct {
		uint32_t size, count;
	} bad[] = {
		{0, 16},
		{PROTO_HDR_SIZE - 1, 16},
		{(16u << 20) + 4097, 16},
		{0xffffffffu, 16},
		{65536, 0},
		{65536, 4097},
		{65536, 0xffffffffu},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = sample_hello();
		m.fast.slot_size = bad[i].size;
		m.fast.slot_count = bad[i].count;
		ck_assert_msg(hello_try(&m, PROTO_HELLO_SIZE, &d) == -EPROTO,
			      "slot_size %u slot_count %u accepted",
			      (unsigned)bad[i].size, (unsigned)bad[i].count);
	}
}
END_TEST

/* ---- hello reply -------------------------------------------------------- */

static int hello_rep_try(const struct proto_hello_rep *m, size_t len,
			 struct proto_hello_rep *out)
{
	uint8_t buf[PROTO_HELLO_REP_SIZE + 16];

	memset(buf, 0, sizeof(buf));
	proto_hello_rep_encode(buf, m);
	return proto_hello_rep_decode(buf, len, out);
}

START_TEST(hello_rep_round_trips_every_field)
{
	struct proto_hello_rep m = sample_hello_rep(), d;

	memset(&d, 0, sizeof(d));
	ck_assert_int_eq(hello_rep_try(&m, PROTO_HELLO_REP_SIZE, &d), 0);
	ck_assert_int_eq(d.status, 0);
	ck_assert_uint_eq(d.conn_id, m.conn_id);
	ck_assert_uint_eq(d.credits, m.credits);
	ck_assert_uint_eq(d.recv_size, m.recv_size);
	ck_assert_uint_eq(d.fast.addr, m.fast.addr);
	ck_assert_uint_eq(d.fast.key, m.fast.key);
	ck_assert_uint_eq(d.fast.slot_size, m.fast.slot_size);
	ck_assert_uint_eq(d.fast.slot_count, m.fast.slot_count);
	ck_assert_uint_eq(d.max_requests, m.max_requests);
	ck_assert_int_eq(memcmp(d.mac, m.mac, PROTO_MAC_SIZE), 0);
}
END_TEST

START_TEST(hello_rep_app_data_must_lie_inside_the_body)
{
	struct proto_hello_rep m = sample_hello_rep(), d;
	uint8_t buf[PROTO_HELLO_REP_SIZE + 64];

	m.app_len = 64;
	proto_hello_rep_encode(buf, &m);
	ck_assert_int_eq(proto_hello_rep_decode(buf, sizeof(buf), &d), 0);
	ck_assert_int_eq(proto_hello_rep_decode(buf, sizeof(buf) - 1, &d), -EPROTO);
}
END_TEST

START_TEST(hello_rep_decode_rejects_positive_status_and_zero_max_requests)
{
	struct proto_hello_rep m = sample_hello_rep(), d;

	m.status = 5;
	ck_assert_int_eq(hello_rep_try(&m, PROTO_HELLO_REP_SIZE, &d), -EPROTO);
	m = sample_hello_rep();
	m.max_requests = 0;
	ck_assert_int_eq(hello_rep_try(&m, PROTO_HELLO_REP_SIZE, &d), -EPROTO);
}
END_TEST

/* A refusal carries only its reason; the other fields need not be valid. */
START_TEST(hello_rep_refusal_decodes_with_its_status)
{
	struct proto_hello_rep m, d;

	memset(&m, 0, sizeof(m));
	m.status = -EACCES;
	ck_assert_int_eq(hello_rep_try(&m, PROTO_HELLO_REP_SIZE, &d), 0);
	ck_assert_int_eq(d.status, -EACCES);
}
END_TEST

START_TEST(hello_rep_decode_rejects_short_buffer)
{
	struct proto_hello_rep m = sample_hello_rep(), d;

	for (size_t len = 0; len < PROTO_HELLO_REP_SIZE; len++)
		ck_assert_int_eq(hello_rep_try(&m, len, &d), -EPROTO);
}
END_TEST

START_TEST(hello_rep_decode_rejects_absurd_credits_and_sizes)
{
	struct proto_hello_rep m, d;
	static const uint32_t bad_credits[] = {0, 1, 4097, 0xffffffffu};
	static const uint32_t bad_sizes[] = {0, PROTO_HDR_SIZE + 63, (16u << 20) + 1,
					     0xffffffffu};

	for (size_t i = 0; i < 4; i++) {
		m = sample_hello_rep();
		m.credits = bad_credits[i];
		ck_assert_int_eq(hello_rep_try(&m, PROTO_HELLO_REP_SIZE, &d), -EPROTO);
		m = sample_hello_rep();
		m.recv_size = bad_sizes[i];
		ck_assert_int_eq(hello_rep_try(&m, PROTO_HELLO_REP_SIZE, &d), -EPROTO);
	}
	m = sample_hello_rep();
	m.fast.slot_count = 0;
	ck_assert_int_eq(hello_rep_try(&m, PROTO_HELLO_REP_SIZE, &d), -EPROTO);
	m = sample_hello_rep();
	m.fast.slot_size = 0xffffffffu;
	ck_assert_int_eq(hello_rep_try(&m, PROTO_HELLO_REP_SIZE, &d), -EPROTO);
}
END_TEST

/* ---- connection-manager data ------------------------------------------- */

START_TEST(cm_req_round_trips_every_field)
{
	uint8_t buf[PROTO_CM_REQ_SIZE];
	struct proto_cm_req m = {.magic = PROTO_MAGIC,
				 .version = PROTO_VERSION,
				 .time_s = 0x123456789aULL},
			    d;

	for (int i = 0; i < PROTO_NONCE_SIZE; i++)
		m.nonce[i] = (uint8_t)(0xa0 + i);
	for (int i = 0; i < PROTO_MAC_SIZE; i++)
		m.mac[i] = (uint8_t)(0x10 + i);
	proto_cm_req_encode(buf, &m);
	memset(&d, 0, sizeof(d));
	ck_assert_int_eq(proto_cm_req_decode(buf, sizeof(buf), &d), 0);
	ck_assert_uint_eq(d.version, PROTO_VERSION);
	ck_assert_uint_eq(d.time_s, m.time_s);
	ck_assert_int_eq(memcmp(d.nonce, m.nonce, PROTO_NONCE_SIZE), 0);
	ck_assert_int_eq(memcmp(d.mac, m.mac, PROTO_MAC_SIZE), 0);
	ck_assert_int_eq(memcmp(buf, "RPFS", 4), 0);
	/* the MAC covers everything before it */
	ck_assert_int_eq(memcmp(buf + PROTO_CM_REQ_MAC_OFF, m.mac, PROTO_MAC_SIZE), 0);
}
END_TEST

START_TEST(cm_acc_and_rej_round_trip)
{
	uint8_t buf[PROTO_CM_ACC_SIZE];
	struct proto_cm_acc a = {.magic = PROTO_MAGIC, .version = PROTO_VERSION}, da;
	struct proto_cm_rej j = {.magic = PROTO_MAGIC,
				 .version = 7,
				 .status = -EKEYREJECTED},
			    dj;

	for (int i = 0; i < PROTO_NONCE_SIZE; i++)
		a.nonce[i] = (uint8_t)(0xb0 + i);
	for (int i = 0; i < PROTO_MAC_SIZE; i++)
		a.mac[i] = (uint8_t)(0xc0 + i);
	proto_cm_acc_encode(buf, &a);
	ck_assert_int_eq(proto_cm_acc_decode(buf, PROTO_CM_ACC_SIZE, &da), 0);
	ck_assert_int_eq(memcmp(da.nonce, a.nonce, PROTO_NONCE_SIZE), 0);
	ck_assert_int_eq(memcmp(da.mac, a.mac, PROTO_MAC_SIZE), 0);
	proto_cm_rej_encode(buf, &j);
	ck_assert_int_eq(proto_cm_rej_decode(buf, PROTO_CM_REJ_SIZE, &dj), 0);
	ck_assert_int_eq(dj.status, -EKEYREJECTED);
	ck_assert_uint_eq(dj.version, 7);
}
END_TEST

/* Providers may hand over no connection data at all (NULL, 0). */
START_TEST(cm_decode_rejects_missing_or_short_data)
{
	uint8_t buf[PROTO_CM_REQ_SIZE];
	struct proto_cm_req m = {.magic = PROTO_MAGIC, .version = PROTO_VERSION}, d;
	struct proto_cm_acc da;
	struct proto_cm_rej dj;

	proto_cm_req_encode(buf, &m);
	ck_assert_int_eq(proto_cm_req_decode(NULL, 0, &d), -EPROTO);
	ck_assert_int_eq(proto_cm_req_decode(NULL, PROTO_CM_REQ_SIZE, &d), -EPROTO);
	for (size_t len = 0; len < PROTO_CM_REQ_SIZE; len++)
		ck_assert_int_eq(proto_cm_req_decode(buf, len, &d), -EPROTO);
	for (size_t len = 0; len < PROTO_CM_ACC_SIZE; len++)
		ck_assert_int_eq(proto_cm_acc_decode(buf, len, &da), -EPROTO);
	for (size_t len = 0; len < PROTO_CM_REJ_SIZE; len++)
		ck_assert_int_eq(proto_cm_rej_decode(buf, len, &dj), -EPROTO);
}
END_TEST

START_TEST(cm_decode_rejects_bad_magic_and_bad_reject_status)
{
	uint8_t buf[PROTO_CM_REQ_SIZE];
	struct proto_cm_req m = {.magic = PROTO_MAGIC ^ 1, .version = PROTO_VERSION}, d;
	struct proto_cm_rej j = {.magic = PROTO_MAGIC, .version = 2, .status = 0}, dj;

	proto_cm_req_encode(buf, &m);
	ck_assert_int_eq(proto_cm_req_decode(buf, sizeof(buf), &d), -EPROTO);
	m.magic = 0;
	proto_cm_req_encode(buf, &m);
	ck_assert_int_eq(proto_cm_req_decode(buf, sizeof(buf), &d), -EPROTO);
	proto_cm_rej_encode(buf, &j);
	ck_assert_int_eq(proto_cm_rej_decode(buf, PROTO_CM_REJ_SIZE, &dj), -EPROTO);
	j.status = 3;
	proto_cm_rej_encode(buf, &j);
	ck_assert_int_eq(proto_cm_rej_decode(buf, PROTO_CM_REJ_SIZE, &dj), -EPROTO);
}
END_TEST

/* ---- fuzz -------------------------------------------------------------- */

#define FUZZ_ROUNDS 100000
#define FUZZ_MAXLEN 320

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* xorshift64*: reproducible from the printed seed */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static uint64_t fuzz_seed(void)
{
	const char *s = getenv("RPFS_FUZZ_SEED");

	return s ? strtoull(s, NULL, 0) : 0x5eed5eedULL;
}

/* A buffer that starts as a valid message of some kind (so that mutations
 * get past the magic check) or as plain noise, then has a few bytes or a
 * length field changed. */
static void fuzz_fill(uint8_t *buf, size_t len, int kind)
{
	uint8_t tmp[FUZZ_MAXLEN + PROTO_HDR_SIZE];

	for (size_t i = 0; i < sizeof(tmp); i++)
		tmp[i] = (uint8_t)rng();
	if (kind == 1) {
		struct proto_hdr h = sample_hdr();

		h.type = (uint8_t)(1 + rng() % 5);
		h.path = (uint8_t)(rng() % 4);
		h.dir = (uint8_t)(rng() % 3);
		h.body_len = (uint32_t)(rng() % 64);
		h.ndesc = (uint32_t)(rng() % 4);
		h.data_off = (uint16_t)(proto_data_off(&h) + rng() % 32);
		h.data_len = rng() % 128;
		proto_hdr_encode(tmp, &h);
	} else if (kind == 2) {
		struct proto_hello m = sample_hello();

		proto_hello_encode(tmp, &m);
	} else if (kind == 3) {
		struct proto_hello_rep m = sample_hello_rep();

		proto_hello_rep_encode(tmp, &m);
	}
	for (int n = (int)(rng() % 4); n > 0; n--)
		tmp[rng() % (PROTO_HDR_SIZE + 32)] = (uint8_t)rng();
	/* Sometimes aim straight at body_len or ndesc with an extreme value. */
	if (kind == 1 && rng() % 4 == 0) {
		uint32_t v = (rng() & 1) ? (uint32_t)rng()
					 : 0xffffffffu - (uint32_t)(rng() % 64);
		size_t at = (rng() & 1) ? 24 : 28;

		for (int i = 0; i < 4; i++)
			tmp[at + i] = (uint8_t)(v >> (8 * i));
	}
	memcpy(buf, tmp, len);
}

START_TEST(fuzz_decoders_never_overread_and_accept_only_consistent_messages)
{
	uint64_t seed = fuzz_seed();
	unsigned accepted = 0;

	rng_state = seed ? seed : 1;
	for (int round = 0; round < FUZZ_ROUNDS; round++) {
		size_t len = (size_t)(rng() % (FUZZ_MAXLEN + 1));
		/* Exactly len bytes: a sanitizer build traps any read beyond. */
		uint8_t *buf = malloc(len ? len : 1);
		struct proto_hdr h;
		struct proto_hello hm;
		struct proto_hello_rep hr;
		struct proto_cm_req cm;
		int kind = (int)(rng() % 4);

		ck_assert_ptr_nonnull(buf);
		fuzz_fill(buf, len, kind);
		if (proto_hdr_decode(buf, len, &h) == 0) {
			accepted++;
			ck_assert_msg(
				proto_data_off(&h) <= len,
				"seed %#llx round %d: accepted header overruns %zu bytes",
				(unsigned long long)seed, round, len);
			ck_assert(h.type >= PROTO_HELLO && h.type <= PROTO_CREDIT);
			ck_assert(h.path <= XP_PATH_BULK);
			ck_assert(h.dir <= PROTO_DIR_READ);
			if (proto_data_fits(&h, len))
				ck_assert((uint64_t)h.data_off + h.data_len <= len &&
					  h.data_off >= proto_data_off(&h));
		}
		if (proto_hello_decode(buf, len, &hm) == 0) {
			ck_assert(len >= PROTO_HELLO_SIZE);
			ck_assert(hm.recv_count > hm.max_requests &&
				  hm.max_requests >= 1);
			ck_assert(hm.fast.slot_count >= 1 &&
				  hm.fast.slot_size >= PROTO_HDR_SIZE);
			ck_assert(PROTO_HELLO_SIZE + (size_t)hm.app_len <= len);
		}
		if (proto_hello_rep_decode(buf, len, &hr) == 0) {
			ck_assert(len >= PROTO_HELLO_REP_SIZE);
			ck_assert(hr.status != 0 ||
				  (hr.credits >= 2 && hr.fast.slot_count >= 1));
		}
		if (proto_cm_req_decode(buf, len, &cm) == 0) {
			ck_assert(len >= PROTO_CM_REQ_SIZE);
			ck_assert_uint_eq(cm.magic, PROTO_MAGIC);
		}
		free(buf);
	}
	/* The mutations must reach past the early checks, or the loop proves little. */
	ck_assert_msg(accepted > FUZZ_ROUNDS / 20, "only %u headers accepted", accepted);
}
END_TEST

static Suite *proto_suite(void)
{
	Suite *s = suite_create("proto");
	TCase *tc;

	tc = tcase_create("header");
	tcase_add_test(tc, hdr_round_trips_every_field);
	tcase_add_test(tc, hdr_is_little_endian_starting_with_magic);
	tcase_add_test(tc, hdr_decode_accepts_every_type_path_and_dir);
	tcase_add_test(tc, hdr_decode_rejects_short_buffer);
	tcase_add_test(tc, hdr_decode_rejects_bad_magic);
	tcase_add_test(tc, hdr_decode_rejects_other_versions);
	tcase_add_test(tc, hdr_decode_rejects_bad_type);
	tcase_add_test(tc, hdr_decode_rejects_bad_path);
	tcase_add_test(tc, hdr_decode_rejects_bad_dir);
	tcase_add_test(tc, hdr_decode_rejects_body_past_buffer);
	tcase_add_test(tc, hdr_decode_rejects_descriptors_past_buffer);
	tcase_add_test(tc, hdr_decode_rejects_lengths_that_wrap_32_bits);
	tcase_add_test(tc, data_fits_accepts_data_inside_the_message);
	tcase_add_test(tc, data_fits_rejects_data_over_body_or_descriptors);
	tcase_add_test(tc, data_fits_rejects_data_past_the_end);
	tcase_add_test(tc, data_fits_rejects_lengths_that_wrap);
	tcase_add_test(tc, desc_round_trips_64_bit_fields);
	suite_add_tcase(s, tc);

	tc = tcase_create("handshake");
	tcase_add_test(tc, hello_round_trips_every_field);
	tcase_add_test(tc, hello_decode_rejects_short_buffer);
	tcase_add_test(tc, hello_decode_rejects_recv_count_not_above_max_requests);
	tcase_add_test(tc, hello_decode_rejects_zero_max_requests);
	tcase_add_test(tc, hello_decode_rejects_absurd_receive_counts_and_sizes);
	tcase_add_test(tc, hello_decode_rejects_absurd_fast_buffer);
	tcase_add_test(tc, hello_app_data_must_lie_inside_the_body);
	tcase_add_test(tc, hello_rep_round_trips_every_field);
	tcase_add_test(tc, hello_rep_app_data_must_lie_inside_the_body);
	tcase_add_test(tc,
		       hello_rep_decode_rejects_positive_status_and_zero_max_requests);
	tcase_add_test(tc, hello_rep_refusal_decodes_with_its_status);
	tcase_add_test(tc, hello_rep_decode_rejects_short_buffer);
	tcase_add_test(tc, hello_rep_decode_rejects_absurd_credits_and_sizes);
	tcase_add_test(tc, cm_req_round_trips_every_field);
	tcase_add_test(tc, cm_acc_and_rej_round_trip);
	tcase_add_test(tc, cm_decode_rejects_missing_or_short_data);
	tcase_add_test(tc, cm_decode_rejects_bad_magic_and_bad_reject_status);
	suite_add_tcase(s, tc);

	tc = tcase_create("fuzz");
	/* 100000 rounds take well under a second, several under sanitizers. */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc,
		       fuzz_decoders_never_overread_and_accept_only_consistent_messages);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(proto_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
