/* File-service protocol specification (rpc.h): every encoder round-trips
 * through the decoder; the decoder refuses truncated and overlong bodies,
 * bad paths, counts beyond the body and unknown ops; and random or mutated
 * bodies never crash it, while whatever it accepts satisfies the invariants
 * the server relies on (see rpc_decode_req() in rpc.c); and the table of
 * operations (rpc_ops.h) describes every op once, consistently. */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc.h"
#include "wire.h"

#define BUFSZ  8192
#define MAXSEG 64

static uint8_t buf[BUFSZ];
static struct rpc_req req;
static struct rpc_seg segs[MAXSEG];

/* ---- helpers ------------------------------------------------------------ */

/* Raw body builder, to send what the encoders would refuse to write. */
struct raw {
	uint8_t b[BUFSZ];
	size_t n;
};

static void raw_u16(struct raw *r, uint16_t v)
{
	r->b[r->n++] = (uint8_t)v;
	r->b[r->n++] = (uint8_t)(v >> 8);
}

static void raw_u32(struct raw *r, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		r->b[r->n++] = (uint8_t)(v >> (8 * i));
}

static void raw_u64(struct raw *r, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		r->b[r->n++] = (uint8_t)(v >> (8 * i));
}

static void raw_bytes(struct raw *r, const void *p, size_t n)
{
	raw_u16(r, (uint16_t)n);
	memcpy(r->b + r->n, p, n);
	r->n += n;
}

static void raw_pre(struct raw *r, uint16_t op, uint16_t flags)
{
	r->n = 0;
	raw_u16(r, op);
	raw_u16(r, flags);
	raw_u32(r, 0);
}

static int decode(const void *b, size_t n)
{
	return rpc_decode_req(b, n, &req, segs, MAXSEG);
}

/* Every proper prefix of a valid body is refused. */
static void assert_prefixes_refused(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(decode(b, i) == -EPROTO, "prefix %zu of %zu accepted", i,
			      n);
}

static void assert_trailing_byte_refused(size_t n)
{
	uint8_t copy[BUFSZ + 1];

	memcpy(copy, buf, n);
	copy[n] = 0;
	ck_assert_int_eq(decode(copy, n + 1), -EPROTO);
}

/* ---- round trips -------------------------------------------------------- */

START_TEST(path_op_round_trips)
{
	static const uint16_t ops[] = {RPC_RMDIR, RPC_LOOKUP, RPC_REMOVE};

	for (size_t i = 0; i < 3; i++) {
		int n = rpc_enc_path_op(buf, BUFSZ, ops[i], 0, "/a/b");

		ck_assert_int_eq(n, RPC_PREAMBLE + 2 + 4);
		ck_assert_int_eq(decode(buf, (size_t)n), 0);
		ck_assert_uint_eq(req.op, ops[i]);
		ck_assert_ptr_eq(req.path, req.path_buf);
		ck_assert_str_eq(req.path, "/a/b");
		assert_prefixes_refused(buf, (size_t)n);
		assert_trailing_byte_refused((size_t)n);
	}
}
END_TEST

START_TEST(bodyless_ops_round_trip)
{
	static const uint16_t ops[] = {RPC_PING, RPC_STATFS_META, RPC_IO_STATFS,
				       RPC_STATS};

	for (size_t i = 0; i < 4; i++) {
		int n = rpc_enc_path_op(buf, BUFSZ, ops[i], 0, NULL);

		ck_assert_int_eq(n, RPC_PREAMBLE);
		ck_assert_int_eq(decode(buf, (size_t)n), 0);
		ck_assert_uint_eq(req.op, ops[i]);
		ck_assert_ptr_null(req.path);
		n = rpc_enc_handle_op(buf, BUFSZ, ops[i], 77, NULL);
		ck_assert_int_eq(n, RPC_PREAMBLE);
		assert_prefixes_refused(buf, (size_t)n);
	}
}
END_TEST

START_TEST(mkdir_round_trips)
{
	int n = rpc_enc_mkdir(buf, BUFSZ, "/d", 0755, 1000, 100);

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.op, RPC_MKDIR);
	ck_assert_str_eq(req.path, "/d");
	ck_assert_uint_eq(req.mode, 0755);
	ck_assert_uint_eq(req.uid, 1000);
	ck_assert_uint_eq(req.gid, 100);
	assert_prefixes_refused(buf, (size_t)n);
	assert_trailing_byte_refused((size_t)n);
}
END_TEST

START_TEST(create_round_trips)
{
	int n = rpc_enc_create(buf, BUFSZ, "/d/f", 0644, 7, 8, RPC_CREATE_EXCL,
			       (uint64_t)1 << 40, 4, -1);

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.op, RPC_CREATE);
	ck_assert_uint_eq(req.flags, RPC_CREATE_EXCL);
	ck_assert_str_eq(req.path, "/d/f");
	ck_assert_uint_eq(req.mode, 0644);
	ck_assert_uint_eq(req.uid, 7);
	ck_assert_uint_eq(req.gid, 8);
	ck_assert_uint_eq(req.stripe_unit, (uint64_t)1 << 40);
	ck_assert_uint_eq(req.stripe_count, 4);
	ck_assert_int_eq(req.first_server, -1);
	assert_prefixes_refused(buf, (size_t)n);
	assert_trailing_byte_refused((size_t)n);

	n = rpc_enc_create(buf, BUFSZ, "/f", 0600, 0, 0, 0, 0, 0, 3);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_int_eq(req.first_server, 3);
	ck_assert_uint_eq(req.flags, 0);
}
END_TEST

/* The redundancy field: left out when nothing is said (the body of an
 * older client, which still decodes), else the last field; a value
 * red_unpack refuses, or a present 0, is -EPROTO. */
START_TEST(create_and_setstripe_carry_a_redundancy)
{
	uint32_t mirror2 = RED_PACK_MIRROR(2);
	int plain = rpc_enc_create(buf, BUFSZ, "/d/f", 0644, 7, 8, 0, 0, 2, -1), n;

	ck_assert_int_eq(decode(buf, (size_t)plain), 0);
	ck_assert_uint_eq(req.redundancy, 0);
	n = rpc_enc_create_red(buf, BUFSZ, "/d/f", 0644, 7, 8, 0, 0, 2, -1, 0);
	ck_assert_int_eq(n, plain);
	n = rpc_enc_create_red(buf, BUFSZ, "/d/f", 0644, 7, 8, RPC_CREATE_EXCL, 4096, 2,
			       1, mirror2);
	ck_assert_int_eq(n, plain + 4);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.redundancy, mirror2);
	ck_assert_uint_eq(req.stripe_count, 2);
	ck_assert_int_eq(req.first_server, 1);
	ck_assert_uint_eq(get32(buf + n - 4), (RPFS_LAYOUT_MIRROR + 1) | 2 << 8);
	assert_trailing_byte_refused((size_t)n);
	/* a bad or zero value in the field */
	put32(buf + n - 4, 0);
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	put32(buf + n - 4, RED_PACK_MIRROR(1));
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	put32(buf + n - 4, 0x77);
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	put32(buf + n - 4, RED_DEFAULT);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	/* the encoders refuse what the decoder would */
	ck_assert_int_eq(rpc_enc_create_red(buf, BUFSZ, "/f", 0, 0, 0, 0, 0, 0, -1,
					    RED_PACK_MIRROR(9)),
			 -EINVAL);
	ck_assert_int_eq(rpc_enc_setstripe_red(buf, BUFSZ, "/d", 0, 0, 1u << 30),
			 -EINVAL);

	plain = rpc_enc_setstripe(buf, BUFSZ, "/d", 65536, 2);
	n = rpc_enc_setstripe_red(buf, BUFSZ, "/d", 65536, 2, mirror2);
	ck_assert_int_eq(n, plain + 4);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.mask, RPC_SET_LAYOUT);
	ck_assert_uint_eq(req.redundancy, mirror2);
	ck_assert_uint_eq(req.stripe_count, 2);
	assert_prefixes_refused(buf, (size_t)plain);
	assert_trailing_byte_refused((size_t)n);
	/* only a layout SETATTR has one */
	n = rpc_enc_setattr(buf, BUFSZ, "/d", RPC_SET_MODE, 0600, 0, 0, 0, 0);
	put32(buf + n, mirror2);
	ck_assert_int_eq(decode(buf, (size_t)n + 4), -EPROTO);
}
END_TEST

/* The text of a redundancy and its packed form (redundancy.h). */
START_TEST(redundancy_specs_parse_format_and_pack)
{
	static const char *const good[] = {"none",   "mirror:2", "mirror:8",
					   "ec:2+1", "ec:4+2",	 "default"};
	static const char *const bad[] = {
		"",	     "mirror",	  "mirror:",  "mirror:1", "mirror:9",
		"mirror:02", "mirror:2x", "ec:2",     "ec:0+1",	  "ec:2+0",
		"ec:2+1+1",  "raid5",	  "Mirror:2", " none",	  "ec:33+1"};
	struct red_spec r, back;
	char why[128], text[RED_TEXT_MAX];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_msg(!red_parse(good[i], &r, why, sizeof(why)), "%s: %s",
			      good[i], why);
		ck_assert_str_eq(red_format(&r, text, sizeof(text)), good[i]);
		ck_assert(red_valid(&r));
		ck_assert_int_eq(red_unpack(red_pack(&r), &back), 0);
		ck_assert_str_eq(red_format(&back, text, sizeof(text)), good[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		ck_assert_msg(red_parse(bad[i], &r, why, sizeof(why)) == -EINVAL,
			      "'%s' accepted", bad[i]);
		ck_assert_msg(why[0], "'%s': no reason", bad[i]);
	}
	ck_assert_int_eq(red_parse("mirror:3", &r, why, sizeof(why)), 0);
	ck_assert_uint_eq(r.kind, RPFS_LAYOUT_MIRROR);
	ck_assert_uint_eq(r.copies, 3);
	ck_assert_uint_eq(red_copies(&r), 3);
	ck_assert_uint_eq(red_slots(&r, 2), 6);
	ck_assert_int_eq(red_parse("ec:4+2", &r, why, sizeof(why)), 0);
	ck_assert_uint_eq(r.data_cells, 4);
	ck_assert_uint_eq(r.parity_cells, 2);
	/* not said, and values red_pack never makes */
	ck_assert_int_eq(red_unpack(0, &r), 0);
	ck_assert_uint_eq(r.kind, RED_DEFAULT);
	ck_assert_int_eq(red_unpack(1u << 24 | 1, &r), -EINVAL);
	ck_assert_int_eq(red_unpack(1 | 5 << 8, &r), -EINVAL); /* none with copies */
	ck_assert_int_eq(red_unpack(RPFS_LAYOUT_KINDS + 1, &r), -EINVAL);
}
END_TEST

/* A directory's default: "default" (nothing of its own), an explicit
 * "none", a mirror; a file's layout from a spec. */
START_TEST(redundancy_in_layouts)
{
	struct rpfs_layout l = {0};
	struct red_spec r, back;
	char why[128];

	red_of_layout(&l, true, &r);
	ck_assert_uint_eq(r.kind, RED_DEFAULT);
	red_of_layout(&l, false, &r);
	ck_assert_uint_eq(r.kind, RPFS_LAYOUT_STRIPE);
	ck_assert_int_eq(red_parse("none", &r, why, sizeof(why)), 0);
	red_to_dir_layout(&r, &l);
	red_of_layout(&l, true, &back);
	ck_assert_uint_eq(back.kind, RPFS_LAYOUT_STRIPE);
	red_to_file_layout(&r, &l);
	ck_assert_uint_eq(l.copies, 0);
	ck_assert_int_eq(red_parse("mirror:2", &r, why, sizeof(why)), 0);
	red_to_dir_layout(&r, &l);
	red_of_layout(&l, true, &back);
	ck_assert_uint_eq(back.kind, RPFS_LAYOUT_MIRROR);
	ck_assert_uint_eq(back.copies, 2);
	ck_assert_int_eq(red_parse("default", &r, why, sizeof(why)), 0);
	red_to_dir_layout(&r, &l);
	red_of_layout(&l, true, &back);
	ck_assert_uint_eq(back.kind, RED_DEFAULT);
}
END_TEST

START_TEST(setattr_round_trips)
{
	int n = rpc_enc_setattr(buf, BUFSZ, "/x", RPC_SET_MODE | RPC_SET_TIMES, 0600, 1,
				2, -5, INT64_MAX);

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.op, RPC_SETATTR);
	ck_assert_str_eq(req.path, "/x");
	ck_assert_uint_eq(req.mask, RPC_SET_MODE | RPC_SET_TIMES);
	ck_assert_uint_eq(req.mode, 0600);
	ck_assert_uint_eq(req.uid, 1);
	ck_assert_uint_eq(req.gid, 2);
	ck_assert_int_eq(req.atime, -5);
	ck_assert_int_eq(req.mtime, INT64_MAX);
	assert_prefixes_refused(buf, (size_t)n);
	assert_trailing_byte_refused((size_t)n);
}
END_TEST

START_TEST(readdir_round_trips)
{
	int n = rpc_enc_readdir(buf, BUFSZ, "/", "after.me", 128);

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.op, RPC_READDIR);
	ck_assert_str_eq(req.path, "/");
	ck_assert_str_eq(req.cookie, "after.me");
	ck_assert_uint_eq(req.max, 128);
	assert_prefixes_refused(buf, (size_t)n);
	assert_trailing_byte_refused((size_t)n);

	n = rpc_enc_readdir(buf, BUFSZ, "/d", NULL, 1);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_str_eq(req.cookie, "");
	n = rpc_enc_readdir(buf, BUFSZ, "/d", "", 1);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_str_eq(req.cookie, "");
}
END_TEST

START_TEST(rename_round_trips)
{
	int n = rpc_enc_rename(buf, BUFSZ, "/a/old", "/b/new");

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.op, RPC_RENAME);
	ck_assert_str_eq(req.path, "/a/old");
	ck_assert_ptr_eq(req.to, req.to_buf);
	ck_assert_str_eq(req.to, "/b/new");
	assert_prefixes_refused(buf, (size_t)n);
	assert_trailing_byte_refused((size_t)n);
	ck_assert_int_eq(rpc_enc_rename(buf, BUFSZ, "/a", "b"), -EINVAL);
	ck_assert_int_eq(rpc_enc_rename(buf, BUFSZ, "/a/", "/b"), -EINVAL);
	/* A target that is not a normalized path is refused by the decoder. */
	n = rpc_enc_rename(buf, BUFSZ, "/a", "/bb");
	buf[n - 2] = '/';
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
}
END_TEST

START_TEST(search_round_trips)
{
	uint32_t groups[RPC_GROUPS_MAX + 1];
	int n;

	for (uint32_t i = 0; i <= RPC_GROUPS_MAX; i++)
		groups[i] = 1000 + i;
	n = rpc_enc_search(buf, BUFSZ, "/a/b/c", 4, 65534, 65533, groups, 3);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.op, RPC_SEARCH);
	ck_assert_str_eq(req.path, "/a/b/c");
	ck_assert_uint_eq(req.want, 4);
	ck_assert_uint_eq(req.uid, 65534);
	ck_assert_uint_eq(req.gid, 65533);
	ck_assert_uint_eq(req.ngroups, 3);
	ck_assert_uint_eq(req.groups[2], 1002);
	assert_prefixes_refused(buf, (size_t)n);
	assert_trailing_byte_refused((size_t)n);
	n = rpc_enc_search(buf, BUFSZ, "/a", 0, 1, 1, groups, RPC_GROUPS_MAX);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.groups[RPC_GROUPS_MAX - 1], 1000 + RPC_GROUPS_MAX - 1);
	ck_assert_int_eq(
		rpc_enc_search(buf, BUFSZ, "/a", 0, 1, 1, groups, RPC_GROUPS_MAX + 1),
		-EINVAL);
	ck_assert_int_eq(rpc_enc_search(buf, BUFSZ, "/a", 8, 1, 1, groups, 0), -EINVAL);
	ck_assert_int_eq(rpc_enc_search(buf, BUFSZ, "a/b", 0, 1, 1, groups, 0), -EINVAL);
	/* More groups than the body holds, wanted bits beyond rwx, flags. */
	n = rpc_enc_search(buf, BUFSZ, "/a", 0, 1, 1, groups, 1);
	buf[n - 8] = 2;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	buf[n - 8] = RPC_GROUPS_MAX + 1;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	buf[n - 8] = 1;
	buf[n - 20] = 8;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	buf[n - 20] = 0;
	buf[2] = 1;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
}
END_TEST

START_TEST(search_reply_round_trips_and_refuses_bad_input)
{
	struct rpc_search_rep r = {3, -EACCES}, back;
	uint8_t b[RPC_SEARCH_REP_SIZE];

	rpc_enc_search_rep(b, &r);
	ck_assert_int_eq(rpc_dec_search_rep(b, sizeof(b), &back), 0);
	ck_assert_uint_eq(back.depth, 3);
	ck_assert_int_eq(back.status, -EACCES);
	r = (struct rpc_search_rep){0, 0};
	rpc_enc_search_rep(b, &r);
	ck_assert_int_eq(rpc_dec_search_rep(b, sizeof(b), &back), 0);
	ck_assert_uint_eq(back.depth, 0);
	ck_assert_int_eq(rpc_dec_search_rep(b, sizeof(b) - 1, &back), -EPROTO);
	/* A refusal without a place, a place without a refusal, a positive
	 * status: none is an answer. */
	r = (struct rpc_search_rep){0, -EACCES};
	rpc_enc_search_rep(b, &r);
	ck_assert_int_eq(rpc_dec_search_rep(b, sizeof(b), &back), -EPROTO);
	r = (struct rpc_search_rep){2, 0};
	rpc_enc_search_rep(b, &r);
	ck_assert_int_eq(rpc_dec_search_rep(b, sizeof(b), &back), -EPROTO);
	r = (struct rpc_search_rep){2, EACCES};
	rpc_enc_search_rep(b, &r);
	ck_assert_int_eq(rpc_dec_search_rep(b, sizeof(b), &back), -EPROTO);
}
END_TEST

START_TEST(meta_handles_round_trips)
{
	uint64_t h[RPC_HANDLES_MAX + 1];
	int n;

	for (uint32_t i = 0; i <= RPC_HANDLES_MAX; i++)
		h[i] = (1ull << 48) | (0x1000 + i);
	n = rpc_enc_meta_handles(buf, BUFSZ, h, 3);
	ck_assert_int_eq(n, RPC_PREAMBLE + 8 + 3 * 8);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.op, RPC_META_HANDLES);
	ck_assert_uint_eq(req.nhandles, 3);
	ck_assert_uint_eq(rpc_req_handle(&req, 0), h[0]);
	ck_assert_uint_eq(rpc_req_handle(&req, 2), h[2]);
	ck_assert_ptr_null(req.path);
	assert_prefixes_refused(buf, (size_t)n);
	assert_trailing_byte_refused((size_t)n);
	n = rpc_enc_meta_handles(buf, BUFSZ, h, RPC_HANDLES_MAX);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(rpc_req_handle(&req, RPC_HANDLES_MAX - 1),
			  h[RPC_HANDLES_MAX - 1]);
	/* None, too many, or more than the body holds: refused either way. */
	ck_assert_int_eq(rpc_enc_meta_handles(buf, BUFSZ, h, 0), -EINVAL);
	ck_assert_int_eq(rpc_enc_meta_handles(buf, BUFSZ, h, RPC_HANDLES_MAX + 1),
			 -EINVAL);
	ck_assert_int_eq(rpc_enc_meta_handles(buf, 30, h, 3), -E2BIG);
	n = rpc_enc_meta_handles(buf, BUFSZ, h, 2);
	buf[8] = 3;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	buf[8] = 0;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	buf[8] = 1;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO); /* a handle too many */
	buf[8] = 2;
	buf[12] = 1; /* the pad */
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	buf[12] = 0;
	buf[2] = 1; /* flags */
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	buf[2] = 0;
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_str_eq(rpc_op_name(RPC_META_HANDLES), "meta_handles");
}
END_TEST

START_TEST(handle_states_reply_round_trips_and_refuses_bad_input)
{
	uint8_t st[4] = {RPC_HS_FILE, RPC_HS_GONE, RPC_HS_CREATING, RPC_HS_DAMAGED};
	uint8_t back[RPC_HANDLES_MAX], b[8 + RPC_HANDLES_MAX];
	int n = rpc_enc_handle_states(b, sizeof(b), st, 4);

	ck_assert_int_eq(n, 8);
	ck_assert_int_eq(rpc_dec_handle_states(b, (size_t)n, back, 4), 0);
	ck_assert_mem_eq(back, st, 4);
	/* Not the count asked, cut short, longer, an unknown state. */
	ck_assert_int_eq(rpc_dec_handle_states(b, (size_t)n, back, 3), -EPROTO);
	ck_assert_int_eq(rpc_dec_handle_states(b, (size_t)n - 1, back, 4), -EPROTO);
	ck_assert_int_eq(rpc_dec_handle_states(b, (size_t)n + 1, back, 4), -EPROTO);
	b[7] = 0;
	ck_assert_int_eq(rpc_dec_handle_states(b, (size_t)n, back, 4), -EPROTO);
	b[7] = RPC_HS_DAMAGED + 1;
	ck_assert_int_eq(rpc_dec_handle_states(b, (size_t)n, back, 4), -EPROTO);
	ck_assert_int_eq(rpc_enc_handle_states(b, 7, st, 4), -E2BIG);
	ck_assert_int_eq(rpc_enc_handle_states(b, sizeof(b), back, RPC_HANDLES_MAX + 1),
			 -EINVAL);
}
END_TEST

START_TEST(setstripe_round_trips)
{
	int n = rpc_enc_setstripe(buf, BUFSZ, "/d", 65536, 2);

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.op, RPC_SETATTR);
	ck_assert_uint_eq(req.mask, RPC_SET_LAYOUT);
	ck_assert_uint_eq(req.stripe_unit, 65536);
	ck_assert_uint_eq(req.stripe_count, 2);
	assert_prefixes_refused(buf, (size_t)n);
	assert_trailing_byte_refused((size_t)n);
	/* RPC_SET_LAYOUT with another bit, or with a mode, is refused. */
	buf[RPC_PREAMBLE + 2 + 2] |= RPC_SET_MODE;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	n = rpc_enc_setstripe(buf, BUFSZ, "/d", 65536, 2);
	buf[RPC_PREAMBLE + 2 + 2 + 4] = 1;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
}
END_TEST

START_TEST(stats_reply_round_trips_and_refuses_bad_input)
{
	struct rpc_stat in[3] = {
		{"req.io_write", 7}, {"bytes.inline", 1ull << 40}, {"x", 0}};
	struct rpc_stat out[3];
	uint32_t n = 0;
	int len = rpc_enc_stats(buf, BUFSZ, in, 3);

	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(rpc_dec_stats(buf, (size_t)len, out, 3, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(out[1].name, "bytes.inline");
	ck_assert_uint_eq(out[1].value, 1ull << 40);
	/* Short, long, too many for the reader, a bad name: all refused. */
	for (int k = 0; k < len; k++)
		ck_assert_int_eq(rpc_dec_stats(buf, (size_t)k, out, 3, &n), -EPROTO);
	ck_assert_int_eq(rpc_dec_stats(buf, (size_t)len + 1, out, 3, &n), -EPROTO);
	ck_assert_int_eq(rpc_dec_stats(buf, (size_t)len, out, 2, &n), -EPROTO);
	buf[6] = 'A'; /* in "req.io_write" */
	ck_assert_int_eq(rpc_dec_stats(buf, (size_t)len, out, 3, &n), -EPROTO);
	strcpy(in[2].name, "no space");
	ck_assert_int_eq(rpc_enc_stats(buf, BUFSZ, in, 3), -EINVAL);
	ck_assert_int_eq(rpc_enc_stats(buf, 10, in, 2), -E2BIG);
	ck_assert_str_eq(rpc_op_name(RPC_IO_WRITE), "io_write");
	ck_assert_ptr_null(rpc_op_name(47));
}
END_TEST

START_TEST(handle_ops_round_trip)
{
	static const uint16_t ops[] = {RPC_GETATTR, RPC_IO_SIZE, RPC_IO_SYNC,
				       RPC_IO_REMOVE};

	for (size_t i = 0; i < 4; i++) {
		int n = rpc_enc_handle_op(buf, BUFSZ, ops[i], 0x0003000000000042ull,
					  NULL);

		ck_assert_int_eq(n, RPC_PREAMBLE + 8 + RPC_CAP_SIZE);
		ck_assert_int_eq(decode(buf, (size_t)n), 0);
		ck_assert_uint_eq(req.op, ops[i]);
		ck_assert_uint_eq(req.handle, 0x0003000000000042ull);
		ck_assert_uint_eq(place_meta_of_handle(req.handle), 3);
		ck_assert_ptr_null(req.path);
		assert_prefixes_refused(buf, (size_t)n);
		assert_trailing_byte_refused((size_t)n);
	}
	ck_assert_int_eq(rpc_enc_handle_op(buf, BUFSZ, RPC_MKDIR, 1, NULL), -EINVAL);
}
END_TEST

START_TEST(fetch_add_round_trips)
{
	int n = rpc_enc_fetch_add(buf, BUFSZ, 99, NULL, -4096);

	ck_assert_int_eq(n, RPC_PREAMBLE + 16 + RPC_CAP_SIZE);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.op, RPC_FETCH_ADD);
	ck_assert_uint_eq(req.handle, 99);
	ck_assert_int_eq(req.delta, -4096);
	assert_prefixes_refused(buf, (size_t)n);
	assert_trailing_byte_refused((size_t)n);
}
END_TEST

START_TEST(lock_round_trips)
{
	int n = rpc_enc_lock(buf, BUFSZ, RPC_LOCK, RPC_LOCK_EXCL | RPC_LOCK_WAIT, 5, NULL,
			     100, 200, 0xfeedull);

	ck_assert_int_eq(n, RPC_PREAMBLE + 32 + RPC_CAP_SIZE);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.op, RPC_LOCK);
	ck_assert_uint_eq(req.flags, RPC_LOCK_EXCL | RPC_LOCK_WAIT);
	ck_assert_uint_eq(req.handle, 5);
	ck_assert_uint_eq(req.off, 100);
	ck_assert_uint_eq(req.len, 200);
	ck_assert_uint_eq(req.owner, 0xfeed);
	assert_prefixes_refused(buf, (size_t)n);
	assert_trailing_byte_refused((size_t)n);

	n = rpc_enc_lock(buf, BUFSZ, RPC_UNLOCK, 0, 5, NULL, 0, UINT64_MAX, 1);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.op, RPC_UNLOCK);
	ck_assert_int_eq(rpc_enc_lock(buf, BUFSZ, RPC_LOCK, 0, 5, NULL, 1, UINT64_MAX, 1),
			 -EINVAL);
	ck_assert_int_eq(rpc_enc_lock(buf, BUFSZ, RPC_LOCK, 0, 5, NULL, 1, 0, 1),
			 -EINVAL);
	ck_assert_int_eq(rpc_enc_lock(buf, BUFSZ, RPC_LOCK, 8, 5, NULL, 1, 1, 1),
			 -EINVAL);
}
END_TEST

START_TEST(truncate_round_trips)
{
	int n = rpc_enc_truncate(buf, BUFSZ, 12, NULL, (uint64_t)1 << 50);

	ck_assert_int_eq(n, RPC_PREAMBLE + 16 + RPC_CAP_SIZE);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.op, RPC_IO_TRUNCATE);
	ck_assert_uint_eq(req.handle, 12);
	ck_assert_uint_eq(req.size, (uint64_t)1 << 50);
	ck_assert_uint_eq(req.flags, 0);
	assert_prefixes_refused(buf, (size_t)n);
	assert_trailing_byte_refused((size_t)n);
	/* to a mirrored slot's primary with its copies, and forwarded */
	{
		struct rpc_copy cp[2] = {{3, 4, RPC_COPY_STALE}, {1, 2, 0}};

		n = rpc_enc_truncate_copies(buf, BUFSZ, 12, NULL, 7, 0, cp, 2, 9);
		ck_assert_int_eq(n, RPC_PREAMBLE + 16 + RPC_CAP_SIZE + 8 + 12 + 24);
		ck_assert_int_eq(decode(buf, (size_t)n), 0);
		ck_assert_uint_eq(req.flags, RPC_TRUNCATE_COPIES);
		ck_assert_uint_eq(req.slot, 0);
		ck_assert_uint_eq(req.ncopies, 2);
		ck_assert_uint_eq(req.copies[0].flags, RPC_COPY_STALE);
		ck_assert_uint_eq(req.copies[1].slot, 2);
		ck_assert_uint_eq(req.epoch, 9);
		assert_prefixes_refused(buf, (size_t)n);
		assert_trailing_byte_refused((size_t)n);
		ck_assert_int_eq(
			rpc_enc_truncate_copies(buf, BUFSZ, 12, NULL, 7, 0, cp, 0, 9),
			-EINVAL);
		n = rpc_enc_truncate_forward(buf, BUFSZ, 12, 7, 4, 9, RPC_COPY_STALE);
		ck_assert_int_eq(n, RPC_PREAMBLE + 16 + RPC_CAP_SIZE + 8 + 16);
		ck_assert_int_eq(decode(buf, (size_t)n), 0);
		ck_assert_uint_eq(req.flags, RPC_TRUNCATE_FORWARD);
		ck_assert_uint_eq(req.slot, 4);
		ck_assert_uint_eq(req.fwd_flags, RPC_COPY_STALE);
		assert_prefixes_refused(buf, (size_t)n);
		assert_trailing_byte_refused((size_t)n);
		/* both flags; a flagged truncate without its slot */
		buf[2] = RPC_TRUNCATE_COPIES | RPC_TRUNCATE_FORWARD;
		ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
		buf[2] = RPC_TRUNCATE_FORWARD;
		memset(buf + RPC_PREAMBLE + 16 + RPC_CAP_SIZE, 0, 4);
		ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	}
}
END_TEST

START_TEST(io_round_trips)
{
	struct rpc_seg in[5] = {
		{0, 1}, {4096, 4096}, {1ull << 40, 65536}, {7, 3}, {UINT64_MAX - 1, 1},
	};
	int n = rpc_enc_io(buf, BUFSZ, RPC_IO_WRITE, 0x42, NULL, in, 5);

	ck_assert_int_eq(n, RPC_PREAMBLE + 16 + RPC_CAP_SIZE + 5 * RPC_SEG_SIZE);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.op, RPC_IO_WRITE);
	ck_assert_uint_eq(req.handle, 0x42);
	ck_assert_uint_eq(req.nseg, 5);
	ck_assert_ptr_eq(req.segs, segs);
	ck_assert_mem_eq(req.segs, in, sizeof(in));
	assert_prefixes_refused(buf, (size_t)n);
	assert_trailing_byte_refused((size_t)n);

	n = rpc_enc_io(buf, BUFSZ, RPC_IO_READ, 1, NULL, NULL, 0);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.op, RPC_IO_READ);
	ck_assert_uint_eq(req.nseg, 0);
}
END_TEST

START_TEST(io_write_with_copies_round_trips)
{
	struct rpc_seg in[2] = {{0, 4096}, {1 << 20, 47008}};
	struct rpc_copy cp[2] = {{3, 5, 0}, {0, 0, RPC_COPY_STALE}};
	int n = rpc_enc_io_copies(buf, BUFSZ, 0x42, NULL, in, 2, 1, cp, 2, 77);

	ck_assert_int_eq(n, RPC_PREAMBLE + 16 + RPC_CAP_SIZE + 2 * RPC_SEG_SIZE + 12 +
				    2 * 12);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.op, RPC_IO_WRITE);
	ck_assert_uint_eq(req.flags, RPC_IO_COPIES);
	ck_assert_uint_eq(req.epoch, 77);
	ck_assert_uint_eq(req.copies[0].flags, 0);
	ck_assert_uint_eq(req.copies[1].flags, RPC_COPY_STALE);
	ck_assert_uint_eq(req.slot, 1);
	ck_assert_uint_eq(req.nseg, 2);
	ck_assert_mem_eq(req.segs, in, sizeof(in));
	ck_assert_uint_eq(req.ncopies, 2);
	ck_assert_uint_eq(req.copies[0].io, 3);
	ck_assert_uint_eq(req.copies[0].slot, 5);
	ck_assert_uint_eq(req.copies[1].io, 0);
	ck_assert_uint_eq(req.copies[1].slot, 0);
	assert_prefixes_refused(buf, (size_t)n);
	assert_trailing_byte_refused((size_t)n);
	/* a plain write names none */
	n = rpc_enc_io_slot(buf, BUFSZ, RPC_IO_WRITE, 1, NULL, in, 2, 0);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.ncopies, 0);
	/* no copies, too many, a read with copies, a copy without a slot */
	ck_assert_int_eq(rpc_enc_io_copies(buf, BUFSZ, 1, NULL, in, 2, 0, cp, 0, 0),
			 -EINVAL);
	ck_assert_int_eq(rpc_enc_io_copies(buf, BUFSZ, 1, NULL, in, 2, 0, cp,
					   RPC_COPIES_MAX + 1, 0),
			 -EINVAL);
	cp[1].flags = 4; /* unknown */
	ck_assert_int_eq(rpc_enc_io_copies(buf, BUFSZ, 1, NULL, in, 2, 0, cp, 2, 0),
			 -EINVAL);
	cp[1].flags = 0;
	cp[1].slot = RPC_SLOT_ANY;
	ck_assert_int_eq(rpc_enc_io_copies(buf, BUFSZ, 1, NULL, in, 2, 0, cp, 2, 0),
			 -EINVAL);
}
END_TEST

START_TEST(io_forward_round_trips)
{
	struct rpc_seg in[1] = {{8192, 4096}};
	int n = rpc_enc_io_forward(buf, BUFSZ, 0x42, in, 1, 3, 9, RPC_COPY_STALE);

	ck_assert_int_eq(n, RPC_PREAMBLE + 16 + RPC_CAP_SIZE + RPC_SEG_SIZE + 16);
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	ck_assert_uint_eq(req.flags, RPC_IO_FORWARD);
	ck_assert_uint_eq(req.epoch, 9);
	ck_assert_uint_eq(req.fwd_flags, RPC_COPY_STALE);
	ck_assert_uint_eq(req.slot, 3);
	ck_assert_uint_eq(req.ncopies, 0);
	assert_prefixes_refused(buf, (size_t)n);
	assert_trailing_byte_refused((size_t)n);
	/* unknown flags, a padding that is not 0, both tails' flags */
	buf[n - 8] = 2;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	buf[n - 8] = 0;
	buf[n - 1] = 1;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	buf[n - 1] = 0;
	buf[2] = RPC_IO_FORWARD | RPC_IO_COPIES;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	buf[2] = RPC_IO_FORWARD;
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	/* a forward carries no capability (servers send none) */
	buf[RPC_PREAMBLE + 8 + 5] = 1;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	ck_assert_int_eq(rpc_enc_io_forward(buf, BUFSZ, 1, in, 1, 0, 1, 64), -EINVAL);
}
END_TEST

START_TEST(resync_and_fresh_round_trip)
{
	struct rpc_copy t = {3, 2, 0};
	int len = rpc_enc_io_resync(buf, BUFSZ, 0x99, 0, &t, 8);

	ck_assert_int_eq(len, RPC_PREAMBLE + 32);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.op, RPC_IO_RESYNC);
	ck_assert_uint_eq(req.handle, 0x99);
	ck_assert_uint_eq(req.slot, 0);
	ck_assert_uint_eq(req.ncopies, 1);
	ck_assert_uint_eq(req.copies[0].io, 3);
	ck_assert_uint_eq(req.copies[0].slot, 2);
	ck_assert_uint_eq(req.epoch, 8);
	assert_prefixes_refused(buf, (size_t)len);
	assert_trailing_byte_refused((size_t)len);
	/* the target is the source, a padding that is not 0 */
	t.slot = 0;
	ck_assert_int_eq(rpc_enc_io_resync(buf, BUFSZ, 1, 0, &t, 1), -EINVAL);
	t.slot = 2;
	len = rpc_enc_io_resync(buf, BUFSZ, 1, 0, &t, 1);
	buf[RPC_PREAMBLE + 20] = 1;
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	/* MIRROR_FRESH: one target, the failure flag */
	len = rpc_enc_mirror_fresh(buf, BUFSZ, RPC_FRESH_FAILED, 0x99, 8, 0, 2);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.op, RPC_MIRROR_FRESH);
	ck_assert_uint_eq(req.flags, RPC_FRESH_FAILED);
	ck_assert_uint_eq(req.copies[0].slot, 2);
	ck_assert_int_eq(rpc_enc_mirror_fresh(buf, BUFSZ, 2, 1, 1, 0, 2), -EINVAL);
	{
		uint32_t two[2] = {1, 2};

		len = rpc_enc_mirror_stale(buf, BUFSZ, 1, 1, 0, two, 2);
		buf[0] = RPC_MIRROR_FRESH; /* op code, little endian */
		ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	}
}
END_TEST

/* IO_WRITE of an ec data cell (RPC_IO_PARITY): the parity members as a
 * copies list, then the code; one flag of the three at most; a code the
 * list disagrees with, or an index past K, refused both ways. */
START_TEST(io_parity_round_trip)
{
	struct rpc_seg in[2] = {{0, 4096}, {65536, 100}};
	struct rpc_copy par[2] = {{3, 4, 0}, {5, 5, RPC_COPY_STALE}};
	int len = rpc_enc_io_parity(buf, BUFSZ, 9, NULL, in, 2, 1, par, 2, 7, 4, 1);

	ck_assert_int_eq(len, RPC_PREAMBLE + 48 + 2 * RPC_SEG_SIZE + 12 + 24 + 8);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.op, RPC_IO_WRITE);
	ck_assert_uint_eq(req.flags, RPC_IO_PARITY);
	ck_assert_uint_eq(req.nseg, 2);
	ck_assert_uint_eq(req.slot, 1);
	ck_assert_uint_eq(req.ncopies, 2);
	ck_assert_uint_eq(req.copies[1].io, 5);
	ck_assert_uint_eq(req.copies[1].slot, 5);
	ck_assert_uint_eq(req.copies[1].flags, RPC_COPY_STALE);
	ck_assert_uint_eq(req.epoch, 7);
	ck_assert_uint_eq(req.ec_k, 4);
	ck_assert_uint_eq(req.ec_p, 2);
	ck_assert_uint_eq(req.ec_index, 1);
	assert_prefixes_refused(buf, (size_t)len);
	assert_trailing_byte_refused((size_t)len);
	buf[2] = RPC_IO_PARITY | RPC_IO_COPIES;
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	buf[2] = RPC_IO_PARITY;
	/* P in the code is not the list's */
	buf[len - 7] = 3;
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	buf[len - 7] = 2;
	/* the index past K */
	buf[len - 6] = 4;
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	buf[len - 6] = 1;
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_int_eq(
		rpc_enc_io_parity(buf, BUFSZ, 9, NULL, in, 2, 1, par, 2, 7, 4, 4),
		-EINVAL);
	ck_assert_int_eq(
		rpc_enc_io_parity(buf, BUFSZ, 9, NULL, in, 2, 1, par, 0, 7, 4, 1),
		-EINVAL);
	ck_assert_int_eq(
		rpc_enc_io_parity(buf, BUFSZ, 9, NULL, in, 2, 1, par, 2, 7, 0, 0),
		-EINVAL);
	/* a read never carries it */
	len = rpc_enc_io_slot(buf, BUFSZ, RPC_IO_READ, 9, NULL, in, 1, 1);
	buf[2] = RPC_IO_PARITY;
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	/* a forward's XOR flag: whose delta it is, and that member's end */
	ck_assert_int_eq(rpc_enc_io_forward(buf, BUFSZ, 9, in, 1, 4, 7, RPC_FWD_XOR),
			 -EINVAL);
	len = rpc_enc_io_forward_xor(buf, BUFSZ, 9, in, 1, 4, 7, 4, 3, 1ull << 40);
	ck_assert_int_eq(len, RPC_PREAMBLE + 16 + RPC_CAP_SIZE + RPC_SEG_SIZE + 32);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.fwd_flags, RPC_FWD_XOR);
	ck_assert_uint_eq(req.ec_k, 4);
	ck_assert_uint_eq(req.ec_index, 3);
	ck_assert_uint_eq(req.ec_end, 1ull << 40);
	/* an index past K, a K of 0, an end past INT64_MAX, a short tail */
	ck_assert_int_eq(rpc_enc_io_forward_xor(buf, BUFSZ, 9, in, 1, 4, 7, 4, 4, 0),
			 -EINVAL);
	ck_assert_int_eq(rpc_enc_io_forward_xor(buf, BUFSZ, 9, in, 1, 4, 7, 0, 0, 0),
			 -EINVAL);
	len = rpc_enc_io_forward_xor(buf, BUFSZ, 9, in, 1, 4, 7, 4, 3, 5);
	put64(buf + len - 8, UINT64_MAX);
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	put64(buf + len - 8, 5);
	buf[len - 16] = 9; /* index 3 -> K 9, index 3: fine */
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	buf[len - 15] = 9; /* index 9 of K 9 */
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	buf[len - 15] = 3;
	ck_assert_int_eq(decode(buf, (size_t)len - 8), -EPROTO);
}
END_TEST

/* IO_WRITE mending damaged blocks of an ec data cell: the holder's hold id
 * after the segments; alone, and a write's only. */
START_TEST(io_repair_round_trip)
{
	struct rpc_seg in[2] = {{8192, 4096}, {16384, 100}};
	int len = rpc_enc_io_repair(buf, BUFSZ, 9, NULL, in, 2, 1, 0x1234);

	ck_assert_int_eq(len, RPC_PREAMBLE + 16 + RPC_CAP_SIZE + 2 * RPC_SEG_SIZE + 8);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.flags, RPC_IO_REPAIR);
	ck_assert_uint_eq(req.hold_id, 0x1234);
	ck_assert_uint_eq(req.nseg, 2);
	ck_assert_uint_eq(req.ncopies, 0);
	ck_assert_int_eq(decode(buf, (size_t)len - 1), -EPROTO);
	buf[2] |= RPC_IO_PARITY;
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	len = rpc_enc_io_slot(buf, BUFSZ, RPC_IO_READ, 9, NULL, in, 1, 1);
	buf[2] = RPC_IO_REPAIR;
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
}
END_TEST

/* IO_TRUNCATE to an ec parity member: its slot and its group's data
 * members' new sizes; and IO_SIZE's reply with the record of them. */
START_TEST(truncate_ends_and_size_ends_round_trip)
{
	uint64_t ends[3] = {4096, 0, 1ull << 35}, got[4];
	struct rpc_io_size s = {77, 5, 6}, t;
	uint32_t n;
	int len = rpc_enc_truncate_ends(buf, BUFSZ, 12, NULL, 8192, 4, ends, 3);

	ck_assert_int_eq(len, RPC_PREAMBLE + 48 + RPC_CAP_SIZE - 32 + 8 + 8 + 24);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.op, RPC_IO_TRUNCATE);
	ck_assert_uint_eq(req.flags, RPC_TRUNCATE_ENDS);
	ck_assert_uint_eq(req.size, 8192);
	ck_assert_uint_eq(req.slot, 4);
	ck_assert_uint_eq(req.nends, 3);
	for (uint32_t i = 0; i < 3; i++)
		ck_assert_uint_eq(rpc_req_end(&req, i), ends[i]);
	ck_assert_uint_eq(rpc_req_end(&req, 3), 0);
	/* a count that disagrees with the body, none, too many, no slot */
	ck_assert_int_eq(decode(buf, (size_t)len - 8), -EPROTO);
	ck_assert_int_eq(rpc_enc_truncate_ends(buf, BUFSZ, 12, NULL, 1, 4, ends, 0),
			 -EINVAL);
	ck_assert_int_eq(rpc_enc_truncate_ends(buf, BUFSZ, 12, NULL, 1, 4, ends,
					       RPC_EC_MEMBERS_MAX + 1),
			 -EINVAL);
	ck_assert_int_eq(
		rpc_enc_truncate_ends(buf, BUFSZ, 12, NULL, 1, RPC_SLOT_ANY, ends, 3),
		-EINVAL);
	/* with the copies flag too: not a shape */
	len = rpc_enc_truncate_ends(buf, BUFSZ, 12, NULL, 8192, 4, ends, 3);
	buf[2] |= RPC_TRUNCATE_COPIES;
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);

	/* IO_SIZE asking for the record */
	len = rpc_enc_io_size_req(buf, BUFSZ, 12, RPC_SIZE_ENDS, NULL);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.op, RPC_IO_SIZE);
	ck_assert_uint_eq(req.flags, RPC_SIZE_ENDS);
	ck_assert_int_eq(rpc_enc_io_size_req(buf, BUFSZ, 12, 1, NULL), -EINVAL);
	/* its reply */
	len = rpc_enc_io_size_ends(buf, BUFSZ, &s, ends, 3);
	ck_assert_int_eq(len, RPC_IO_SIZE_REP + 8 + 24);
	ck_assert_int_eq(rpc_dec_io_size_ends(buf, (size_t)len, &t, got, 4, &n), 0);
	ck_assert_mem_eq(&s, &t, sizeof(s));
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(got[0], 4096);
	ck_assert_uint_eq(got[2], 1ull << 35);
	ck_assert_uint_eq(got[3], 0); /* past the record: empty */
	ck_assert_int_eq(rpc_dec_io_size_ends(buf, (size_t)len - 1, &t, got, 4, &n),
			 -EPROTO);
	ck_assert_int_eq(rpc_dec_io_size_ends(buf, RPC_IO_SIZE_REP, &t, got, 4, &n),
			 -EPROTO);
	/* none kept yet */
	len = rpc_enc_io_size_ends(buf, BUFSZ, &s, ends, 0);
	ck_assert_int_eq(rpc_dec_io_size_ends(buf, (size_t)len, &t, got, 4, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(got[0], 0);
	ck_assert_int_eq(rpc_enc_io_size_ends(buf, RPC_IO_SIZE_REP + 8, &s, ends, 3),
			 -E2BIG);
}
END_TEST

/* IO_HOLD: a capability, a data slot, a range (len 0: to the end), the hold's id, its
 * lease and the parity slot of a resync's session; take, release or end
 * (which must name the session); nothing after. */
START_TEST(io_hold_round_trip)
{
	int len = rpc_enc_io_hold(buf, BUFSZ, 0, 0x77, NULL, 1, 4096, 0, 0xabc, 3000, 2);

	ck_assert_int_eq(len, RPC_PREAMBLE + 48 + RPC_CAP_SIZE);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.op, RPC_IO_HOLD);
	ck_assert_uint_eq(req.handle, 0x77);
	ck_assert_uint_eq(req.slot, 1);
	ck_assert_uint_eq(req.off, 4096);
	ck_assert_uint_eq(req.len, 0);
	ck_assert_uint_eq(req.hold_id, 0xabc);
	ck_assert_uint_eq(req.lease_ms, 3000);
	ck_assert_uint_eq(req.ncopies, 1);
	ck_assert_uint_eq(req.copies[0].slot, 2);
	assert_prefixes_refused(buf, (size_t)len);
	assert_trailing_byte_refused((size_t)len);
	/* no session */
	len = rpc_enc_io_hold(buf, BUFSZ, 0, 0x77, NULL, 1, 0, 10, 1, 1, RPC_SLOT_ANY);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.ncopies, 0);
	/* both flags, an end without a session, a take without a lease or
	 * past the longest, a range past 64 bits, the session on the slot */
	buf[2] = RPC_HOLD_RELEASE | RPC_HOLD_END;
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	buf[2] = RPC_HOLD_END;
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	ck_assert_int_eq(rpc_enc_io_hold(buf, BUFSZ, RPC_HOLD_END, 1, NULL, 1, 0, 0, 0, 0,
					 RPC_SLOT_ANY),
			 -EINVAL);
	ck_assert_int_eq(rpc_enc_io_hold(buf, BUFSZ, 0, 1, NULL, 1, 0, 0, 1, 0, 2),
			 -EINVAL);
	ck_assert_int_eq(rpc_enc_io_hold(buf, BUFSZ, 0, 1, NULL, 1, 0, 0, 1,
					 RPC_HOLD_LEASE_MAX_MS + 1, 2),
			 -EINVAL);
	ck_assert_int_eq(
		rpc_enc_io_hold(buf, BUFSZ, 0, 1, NULL, 1, UINT64_MAX, 2, 1, 1, 2),
		-EINVAL);
	len = rpc_enc_io_hold(buf, BUFSZ, 0, 1, NULL, 1, 0, 0, 1, 1, 2);
	put32(buf + RPC_PREAMBLE + 12 + RPC_CAP_SIZE, 1 + 1); /* session: slot 1 (+ 1) */
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	len = rpc_enc_io_hold(buf, BUFSZ, 0, 1, NULL, 1, 0, 0, 1, 1, 2);
	put32(buf + RPC_PREAMBLE + 40 + RPC_CAP_SIZE, 0); /* a take without a lease */
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
}
END_TEST

/* IO_RESYNC with RPC_RESYNC_EC: the parity slot, the code and the K data
 * members, none the parity's slot. */
START_TEST(io_resync_ec_round_trip)
{
	const struct rpc_copy m[3] = {{4, 0, 0}, {5, 1, 0}, {6, 2, 0}};
	int len = rpc_enc_io_resync_ec(buf, BUFSZ, 0x99, 4, m, 3, 2, 1, 17);

	ck_assert_int_eq(len, RPC_PREAMBLE + 32 + 3 * 8);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.op, RPC_IO_RESYNC);
	ck_assert_uint_eq(req.flags, RPC_RESYNC_EC);
	ck_assert_uint_eq(req.slot, 4);
	ck_assert_uint_eq(req.ec_k, 3);
	ck_assert_uint_eq(req.ec_p, 2);
	ck_assert_uint_eq(req.ec_index, 1);
	ck_assert_uint_eq(req.epoch, 17);
	ck_assert_uint_eq(req.nmembers, 3);
	for (uint32_t i = 0; i < 3; i++) {
		ck_assert_uint_eq(rpc_req_member(&req, i).io, m[i].io);
		ck_assert_uint_eq(rpc_req_member(&req, i).slot, m[i].slot);
	}
	assert_prefixes_refused(buf, (size_t)len);
	assert_trailing_byte_refused((size_t)len);
	/* an index past P, a member on the parity's slot */
	ck_assert_int_eq(rpc_enc_io_resync_ec(buf, BUFSZ, 1, 4, m, 3, 2, 2, 1), -EINVAL);
	ck_assert_int_eq(rpc_enc_io_resync_ec(buf, BUFSZ, 1, 1, m, 3, 2, 0, 1), -EINVAL);
	len = rpc_enc_io_resync_ec(buf, BUFSZ, 0x99, 4, m, 3, 2, 1, 17);
	put32(buf + RPC_PREAMBLE + 20, 2); /* index 2 of P 2 */
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
}
END_TEST

/* IO_DIGEST: a handle, a slot and a range from a multiple of the unit,
 * at most RPC_DIGEST_SPAN long; no flags, nothing after. The digest is
 * BLAKE2b-256 (a known answer pins it: both ends must agree). */
START_TEST(io_digest_round_trip)
{
	static const uint8_t abc_digest[RPC_DIGEST_SIZE] = {
		0xbd, 0xdd, 0x81, 0x3c, 0x63, 0x42, 0x39, 0x72, 0x31, 0x71, 0xef,
		0x3f, 0xee, 0x98, 0x57, 0x9b, 0x94, 0x96, 0x4e, 0x3b, 0xb1, 0xcb,
		0x3e, 0x42, 0x72, 0x62, 0xc8, 0xc0, 0x68, 0xd5, 0x23, 0x19};
	uint8_t d[RPC_DIGEST_SIZE], z[RPC_DIGEST_SIZE];
	int len = rpc_enc_io_digest(buf, BUFSZ, 0x1234, 3, 2 * RPC_DIGEST_UNIT,
				    RPC_DIGEST_SPAN);

	ck_assert_int_eq(len, RPC_PREAMBLE + 32);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.op, RPC_IO_DIGEST);
	ck_assert_uint_eq(req.handle, 0x1234);
	ck_assert_uint_eq(req.slot, 3);
	ck_assert_uint_eq(req.off, 2 * RPC_DIGEST_UNIT);
	ck_assert_uint_eq(req.len, RPC_DIGEST_SPAN);
	assert_prefixes_refused(buf, (size_t)len);
	assert_trailing_byte_refused((size_t)len);
	buf[2] = 1; /* no flags */
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	ck_assert_int_eq(rpc_enc_io_digest(buf, BUFSZ, 1, 0, 1, 10), -EINVAL);
	ck_assert_int_eq(rpc_enc_io_digest(buf, BUFSZ, 1, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(rpc_enc_io_digest(buf, BUFSZ, 1, 0, 0, RPC_DIGEST_SPAN + 1),
			 -EINVAL);
	ck_assert_int_eq(rpc_enc_io_digest(buf, BUFSZ, 1, RPC_SLOT_ANY, 0, 10), -EINVAL);
	/* an unaligned offset, a length past the span, on the wire */
	len = rpc_enc_io_digest(buf, BUFSZ, 1, 0, 0, 10);
	buf[RPC_PREAMBLE + 16] = 1;
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	len = rpc_enc_io_digest(buf, BUFSZ, 1, 0, 0, RPC_DIGEST_SPAN);
	buf[RPC_PREAMBLE + 24] = 1;
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	/* the digest itself */
	rpc_digest("abc", 3, d);
	ck_assert(!memcmp(d, abc_digest, sizeof(d)));
	rpc_digest("abd", 3, z);
	ck_assert(memcmp(d, z, sizeof(d)));
}
END_TEST

/* IO_HEARTBEAT: the sender's metadata index and the I/O servers it finds
 * down, none to RPC_HEARTBEAT_DOWN_MAX; no flags, nothing after. */
START_TEST(io_heartbeat_round_trip)
{
	static uint32_t many[RPC_HEARTBEAT_DOWN_MAX + 1];
	uint32_t down[3] = {4, 0, 7};
	int len = rpc_enc_io_heartbeat(buf, BUFSZ, 2, down, 3);

	ck_assert_int_eq(len, RPC_PREAMBLE + 8 + 12);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.op, RPC_IO_HEARTBEAT);
	ck_assert_uint_eq(req.meta, 2);
	ck_assert_uint_eq(req.ndown, 3);
	ck_assert_uint_eq(rpc_req_down(&req, 0), 4);
	ck_assert_uint_eq(rpc_req_down(&req, 2), 7);
	ck_assert_uint_eq(rpc_req_down(&req, 3), 0);
	assert_prefixes_refused(buf, (size_t)len);
	assert_trailing_byte_refused((size_t)len);
	buf[2] = 1; /* no flags */
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	len = rpc_enc_io_heartbeat(buf, BUFSZ, 0, NULL, 0);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.ndown, 0);
	ck_assert_int_eq(
		rpc_enc_io_heartbeat(buf, BUFSZ, 0, many, RPC_HEARTBEAT_DOWN_MAX + 1),
		-EINVAL);
	/* a count past the most */
	len = rpc_enc_io_heartbeat(buf, BUFSZ, 0, NULL, 0);
	buf[RPC_PREAMBLE + 4] = 0x01;
	buf[RPC_PREAMBLE + 5] = 0x04; /* 1025 */
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
}
END_TEST

/* MIRROR_REPAIR: a data slot and one of its copies, with the client's
 * capability; never "any" slot, never the slot itself, no flags. */
START_TEST(mirror_repair_round_trip)
{
	struct rpc_cap cap = {.rights = RPC_CAP_WRITE, .lifetime_s = 60, .expiry = 99};
	int len = rpc_enc_mirror_repair(buf, BUFSZ, 0x99, &cap, 1, 3);

	ck_assert_int_eq(len, RPC_PREAMBLE + 8 + RPC_CAP_SIZE + 8);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.op, RPC_MIRROR_REPAIR);
	ck_assert_uint_eq(req.handle, 0x99);
	ck_assert_uint_eq(req.cap.rights, RPC_CAP_WRITE);
	ck_assert_uint_eq(req.slot, 1);
	ck_assert_uint_eq(req.ncopies, 1);
	ck_assert_uint_eq(req.copies[0].slot, 3);
	assert_prefixes_refused(buf, (size_t)len);
	assert_trailing_byte_refused((size_t)len);
	buf[2] = 1; /* no flags */
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	buf[2] = 0;
	/* the copy named as its own slot, or as "any" (0 on the wire) */
	memset(buf + len - 4, 0, 4);
	buf[len - 4] = 2; /* slot 1 + 1 */
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	buf[len - 4] = 0;
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	ck_assert_int_eq(rpc_enc_mirror_repair(buf, BUFSZ, 1, &cap, 2, 2), -EINVAL);
	ck_assert_int_eq(rpc_enc_mirror_repair(buf, BUFSZ, 1, &cap, RPC_SLOT_ANY, 2),
			 -EINVAL);
	ck_assert_int_eq(rpc_enc_mirror_repair(buf, BUFSZ, 1, &cap, 2, RPC_SLOT_ANY),
			 -EINVAL);
}
END_TEST

/* IO_CREATE of a resync's target (not whole until its end), and the
 * rebuild of an I/O server's copies, from that server. */
START_TEST(io_create_incomplete_and_rebuild_round_trip)
{
	int len = rpc_enc_io_create(buf, BUFSZ, 0x99, 5, 3, RPC_IO_CREATE_INCOMPLETE);

	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.op, RPC_IO_CREATE);
	ck_assert_uint_eq(req.flags, RPC_IO_CREATE_INCOMPLETE);
	ck_assert_uint_eq(req.slot, 3);
	assert_trailing_byte_refused((size_t)len);
	ck_assert_int_eq(rpc_enc_io_create(buf, BUFSZ, 0x99, 5, 3, 2), -EINVAL);
	buf[2] = 2; /* a flag IO_CREATE does not know */
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);

	len = rpc_enc_mirror_rebuild(buf, BUFSZ, 3);
	ck_assert_int_eq(len, RPC_PREAMBLE + 8);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.op, RPC_MIRROR_REBUILD);
	ck_assert_uint_eq(req.meta, 3);
	assert_prefixes_refused(buf, (size_t)len);
	assert_trailing_byte_refused((size_t)len);
	buf[RPC_PREAMBLE + 4] = 1; /* the padding */
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	buf[RPC_PREAMBLE + 4] = 0;
	buf[2] = 1; /* no flags */
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);

	/* a damaged copy: the sender's own slot, no epoch; MIRROR_FRESH's
	 * flag of the same value means a failed resync, with its epoch */
	len = rpc_enc_mirror_damaged(buf, BUFSZ, 0x99, 2);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.op, RPC_MIRROR_STALE);
	ck_assert_uint_eq(req.flags, RPC_STALE_DAMAGED);
	ck_assert_uint_eq(req.slot, 2);
	ck_assert_uint_eq(req.ncopies, 1);
	ck_assert_uint_eq(req.copies[0].slot, 2);
	buf[RPC_PREAMBLE + 8] = 1; /* an epoch */
	ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	{
		uint32_t other = 3;

		len = rpc_enc_mirror_stale(buf, BUFSZ, 0x99, 0, 2, &other, 1);
		buf[2] = RPC_STALE_DAMAGED; /* another copy than its own */
		ck_assert_int_eq(decode(buf, (size_t)len), -EPROTO);
	}
	len = rpc_enc_mirror_fresh(buf, BUFSZ, RPC_FRESH_FAILED, 0x99, 8, 0, 2);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);

	/* a resync's forwards: its start and its end, and nothing else */
	{
		struct rpc_seg s1 = {0, 4096};

		len = rpc_enc_truncate_forward(buf, BUFSZ, 1, 4096, 2, 3,
					       RPC_COPY_STALE | RPC_FWD_RESYNC);
		ck_assert_int_eq(decode(buf, (size_t)len), 0);
		ck_assert_uint_eq(req.fwd_flags, RPC_COPY_STALE | RPC_FWD_RESYNC);
		len = rpc_enc_truncate_forward(buf, BUFSZ, 1, 4096, 2, 3,
					       RPC_COPY_STALE | RPC_FWD_RESYNC |
						       RPC_FWD_KEEP);
		ck_assert_int_eq(decode(buf, (size_t)len), 0);
		ck_assert_uint_eq(req.fwd_flags,
				  RPC_COPY_STALE | RPC_FWD_RESYNC | RPC_FWD_KEEP);
		len = rpc_enc_io_forward(buf, BUFSZ, 1, &s1, 1, 2, 4, RPC_FWD_WHOLE);
		ck_assert_int_eq(decode(buf, (size_t)len), 0);
		ck_assert_uint_eq(req.fwd_flags, RPC_FWD_WHOLE);
		ck_assert_int_eq(rpc_enc_io_forward(buf, BUFSZ, 1, &s1, 1, 2, 4, 64),
				 -EINVAL);
	}
}
END_TEST

START_TEST(mirror_stale_and_view_round_trip)
{
	uint32_t stale[2] = {4, 6}, out[RPC_STALE_MAX], nd, ns, n;
	uint32_t down[RPC_DOWN_MAX];
	uint64_t epoch;
	uint8_t b[4 + 12 + 4 * (RPC_STALE_MAX + 1)];
	bool has;
	int len = rpc_enc_mirror_stale(buf, BUFSZ, 0x77, 5, 2, stale, 2);

	ck_assert_int_eq(len, RPC_PREAMBLE + 24 + 8);
	ck_assert_int_eq(decode(buf, (size_t)len), 0);
	ck_assert_uint_eq(req.op, RPC_MIRROR_STALE);
	ck_assert_uint_eq(req.handle, 0x77);
	ck_assert_uint_eq(req.epoch, 5);
	ck_assert_uint_eq(req.slot, 2);
	ck_assert_uint_eq(req.ncopies, 2);
	ck_assert_uint_eq(req.copies[1].slot, 6);
	assert_prefixes_refused(buf, (size_t)len);
	assert_trailing_byte_refused((size_t)len);
	ck_assert_int_eq(rpc_enc_mirror_stale(buf, BUFSZ, 1, 0, 0, stale, 0), -EINVAL);
	ck_assert_int_eq(rpc_enc_mirror_stale(buf, BUFSZ, 1, 0, RPC_SLOT_ANY, stale, 1),
			 -EINVAL);
	/* the view: alone, after a down list, and refusals */
	len = rpc_enc_view(b, sizeof(b), 12, stale, 2);
	ck_assert_int_eq(len, 20);
	ck_assert_int_eq(rpc_dec_view(b, 20, &epoch, out, &n), 0);
	ck_assert_uint_eq(epoch, 12);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(out[0], 4);
	ck_assert_int_eq(rpc_dec_view(b, 19, &epoch, out, &n), -EPROTO);
	ck_assert_int_eq(rpc_enc_view(b, sizeof(b), 1, out, RPC_STALE_MAX + 1), -EINVAL);
	ck_assert_int_eq(rpc_enc_view(b, 19, 1, stale, 2), -E2BIG);
	ck_assert_int_eq(rpc_enc_down(b, sizeof(b), stale, 1), 8);
	ck_assert_int_eq(rpc_enc_view(b + 8, sizeof(b) - 8, 3, stale, 2), 20);
	ck_assert_int_eq(rpc_dec_open_tail(b, 28, down, &nd, &epoch, out, &ns, &has), 0);
	ck_assert(has);
	ck_assert_uint_eq(nd, 1);
	ck_assert_uint_eq(down[0], 4);
	ck_assert_uint_eq(epoch, 3);
	ck_assert_uint_eq(ns, 2);
	ck_assert_int_eq(rpc_dec_open_tail(b, 8, down, &nd, &epoch, out, &ns, &has), 0);
	ck_assert(!has);
	ck_assert_uint_eq(nd, 1);
	ck_assert_int_eq(rpc_dec_open_tail(b, 27, down, &nd, &epoch, out, &ns, &has),
			 -EPROTO);
	ck_assert_int_eq(rpc_dec_open_tail(b, 6, down, &nd, &epoch, out, &ns, &has),
			 -EPROTO);
}
END_TEST

START_TEST(io_copies_list_that_lies_is_refused)
{
	struct rpc_seg in[1] = {{0, 4096}};
	struct rpc_copy cp[1] = {{2, 3, 0}};
	int n = rpc_enc_io_copies(buf, BUFSZ, 1, NULL, in, 1, 0, cp, 1, 0);
	size_t at = (size_t)n - 24; /* the count */

	ck_assert_int_gt(n, 0);
	/* a count of 0, of more than the list, of more than the most */
	buf[at] = 0;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	buf[at] = 2;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	buf[at] = RPC_COPIES_MAX + 1;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	buf[at] = 1;
	ck_assert_int_eq(decode(buf, (size_t)n), 0);
	/* a copy's unknown flag */
	buf[n - 4] = 4;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	buf[n - 4] = 0;
	/* a copy's slot of 0 (none said) */
	memset(buf + n - 8, 0, 4);
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	/* the flag on a read */
	n = rpc_enc_io(buf, BUFSZ, RPC_IO_READ, 1, NULL, in, 1);
	buf[2] = RPC_IO_COPIES;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	/* another flag on a write */
	n = rpc_enc_io(buf, BUFSZ, RPC_IO_WRITE, 1, NULL, in, 1);
	buf[2] = 4;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
}
END_TEST

START_TEST(down_list_round_trips)
{
	uint32_t io[RPC_DOWN_MAX + 1], out[RPC_DOWN_MAX], n;
	uint8_t b[4 + 4 * (RPC_DOWN_MAX + 1)];

	for (uint32_t i = 0; i <= RPC_DOWN_MAX; i++)
		io[i] = i * 3;
	ck_assert_int_eq(rpc_enc_down(b, sizeof(b), io, 2), 12);
	ck_assert_int_eq(rpc_dec_down(b, 12, out, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(out[1], 3);
	/* at most RPC_DOWN_MAX */
	ck_assert_int_eq(rpc_enc_down(b, sizeof(b), io, RPC_DOWN_MAX + 1),
			 4 + 4 * RPC_DOWN_MAX);
	ck_assert_int_eq(rpc_dec_down(b, 4 + 4 * RPC_DOWN_MAX, out, &n), 0);
	ck_assert_uint_eq(n, RPC_DOWN_MAX);
	ck_assert_int_eq(rpc_enc_down(b, 7, io, 1), -E2BIG);
	/* none, short, a count the body doesn't hold */
	ck_assert_int_eq(rpc_dec_down(b, 0, out, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(rpc_dec_down(b, 3, out, &n), -EPROTO);
	ck_assert_int_eq(rpc_enc_down(b, sizeof(b), io, 2), 12);
	ck_assert_int_eq(rpc_dec_down(b, 11, out, &n), -EPROTO);
	b[0] = RPC_DOWN_MAX + 1;
	ck_assert_int_eq(rpc_dec_down(b, 12, out, &n), -EPROTO);
}
END_TEST

START_TEST(io_max_segs_fills_the_body_exactly)
{
	static struct rpc_seg in[300];
	uint32_t max = rpc_io_max_segs(1024);

	for (int i = 0; i < 300; i++)
		in[i] = (struct rpc_seg){(uint64_t)i * 8192, 4096};
	ck_assert_uint_eq(max, (1024 - RPC_PREAMBLE - 16 - RPC_CAP_SIZE) / RPC_SEG_SIZE);
	ck_assert_int_le(rpc_enc_io(buf, 1024, RPC_IO_READ, 1, NULL, in, max), 1024);
	ck_assert_int_gt(rpc_enc_io(buf, 1024, RPC_IO_READ, 1, NULL, in, max),
			 1024 - RPC_SEG_SIZE);
	ck_assert_int_eq(rpc_enc_io(buf, 1024, RPC_IO_READ, 1, NULL, in, max + 1),
			 -E2BIG);
	ck_assert_uint_eq(rpc_io_max_segs(0), 0);
	ck_assert_uint_eq(rpc_io_max_segs(RPC_PREAMBLE + 16 + RPC_CAP_SIZE), 0);
	ck_assert_uint_eq(
		rpc_io_max_segs(RPC_PREAMBLE + 16 + RPC_CAP_SIZE + RPC_SEG_SIZE), 1);
}
END_TEST

START_TEST(encoders_report_e2big_below_their_length)
{
	struct rpc_seg s[2] = {{0, 1}, {9, 9}};
	int full[6];

	full[0] = rpc_enc_create(buf, BUFSZ, "/some/file", 0644, 1, 2, 0, 0, 0, -1);
	full[1] = rpc_enc_readdir(buf, BUFSZ, "/some", "x", 9);
	full[2] = rpc_enc_io(buf, BUFSZ, RPC_IO_WRITE, 1, NULL, s, 2);
	full[3] = rpc_enc_lock(buf, BUFSZ, RPC_LOCK, 0, 1, NULL, 2, 3, 4);
	full[4] = rpc_enc_setattr(buf, BUFSZ, "/a", 0, 0, 0, 0, 0, 0);
	full[5] = rpc_enc_path_op(buf, BUFSZ, RPC_LOOKUP, 0, "/a");
	for (int cap = 0; cap < full[0]; cap++)
		ck_assert_int_eq(rpc_enc_create(buf, (size_t)cap, "/some/file", 0644, 1,
						2, 0, 0, 0, -1),
				 -E2BIG);
	for (int cap = 0; cap < full[1]; cap++)
		ck_assert_int_eq(rpc_enc_readdir(buf, (size_t)cap, "/some", "x", 9),
				 -E2BIG);
	for (int cap = 0; cap < full[2]; cap++)
		ck_assert_int_eq(
			rpc_enc_io(buf, (size_t)cap, RPC_IO_WRITE, 1, NULL, s, 2),
			-E2BIG);
	for (int cap = 0; cap < full[3]; cap++)
		ck_assert_int_eq(
			rpc_enc_lock(buf, (size_t)cap, RPC_LOCK, 0, 1, NULL, 2, 3, 4),
			-E2BIG);
	for (int cap = 0; cap < full[4]; cap++)
		ck_assert_int_eq(
			rpc_enc_setattr(buf, (size_t)cap, "/a", 0, 0, 0, 0, 0, 0),
			-E2BIG);
	for (int cap = 0; cap < full[5]; cap++)
		ck_assert_int_eq(rpc_enc_path_op(buf, (size_t)cap, RPC_LOOKUP, 0, "/a"),
				 -E2BIG);
}
END_TEST

START_TEST(encoding_is_little_endian_field_by_field)
{
	/* preamble, handle, a zero capability (16..47), delta -1 */
	static const uint8_t want[56] = {
		[0] = RPC_FETCH_ADD, [8] = 0x08,  [9] = 0x07,  [10] = 0x06, [11] = 0x05,
		[12] = 0x04,	     [13] = 0x03, [14] = 0x02, [15] = 0x01, [48] = 0xff,
		[49] = 0xff,	     [50] = 0xff, [51] = 0xff, [52] = 0xff, [53] = 0xff,
		[54] = 0xff,	     [55] = 0xff,
	};

	ck_assert_int_eq(rpc_enc_fetch_add(buf, BUFSZ, 0x0102030405060708ull, NULL, -1),
			 (int)sizeof(want));
	ck_assert_mem_eq(buf, want, sizeof(want));
}
END_TEST

/* ---- paths -------------------------------------------------------------- */

START_TEST(path_table_good_and_bad)
{
	static char longname[RPC_NAME_MAX + 3], okname[RPC_NAME_MAX + 2];
	static char longpath[RPC_PATH_MAX + 2], okpath[RPC_PATH_MAX + 1];
	static const struct {
		const char *p;
		int ok;
	} t[] = {
		{"/", 1},      {"/a", 1},	{"/a/b/c", 1}, {"/.a", 1},   {"/a..", 1},
		{"/...", 1},   {"/a.b/c d", 1}, {"", 0},       {"a", 0},     {"a/b", 0},
		{"//", 0},     {"/a//b", 0},	{"/a/", 0},    {"/.", 0},    {"/..", 0},
		{"/a/./b", 0}, {"/a/../b", 0},	{"/a/.", 0},   {"/a/..", 0}, {"/./", 0},
		{"//a", 0},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ck_assert_msg(!!rpc_path_ok(t[i].p) == t[i].ok, "'%s'", t[i].p);
	ck_assert(!rpc_path_ok(NULL));

	okname[0] = '/';
	memset(okname + 1, 'n', RPC_NAME_MAX);
	ck_assert(rpc_path_ok(okname));
	longname[0] = '/';
	memset(longname + 1, 'n', RPC_NAME_MAX + 1);
	ck_assert(!rpc_path_ok(longname));

	/* /nnn...n/nnn...n up to exactly RPC_PATH_MAX bytes. */
	for (size_t i = 0; i < RPC_PATH_MAX; i++)
		okpath[i] = i % 100 == 0 ? '/' : 'p';
	if (okpath[RPC_PATH_MAX - 1] == '/')
		okpath[RPC_PATH_MAX - 1] = 'p';
	ck_assert(rpc_path_ok(okpath));
	memcpy(longpath, okpath, RPC_PATH_MAX);
	longpath[RPC_PATH_MAX] = 'p';
	ck_assert(!rpc_path_ok(longpath));
}
END_TEST

START_TEST(encoders_refuse_bad_paths)
{
	static char longname[RPC_NAME_MAX + 3];

	longname[0] = '/';
	memset(longname + 1, 'n', RPC_NAME_MAX + 1);
	ck_assert_int_eq(rpc_enc_path_op(buf, BUFSZ, RPC_LOOKUP, 0, "a/b"), -EINVAL);
	ck_assert_int_eq(rpc_enc_path_op(buf, BUFSZ, RPC_LOOKUP, 0, NULL), -EINVAL);
	ck_assert_int_eq(rpc_enc_mkdir(buf, BUFSZ, "/a/", 0, 0, 0), -EINVAL);
	ck_assert_int_eq(rpc_enc_create(buf, BUFSZ, "/../x", 0, 0, 0, 0, 0, 0, -1),
			 -EINVAL);
	ck_assert_int_eq(rpc_enc_setattr(buf, BUFSZ, longname, 0, 0, 0, 0, 0, 0),
			 -ENAMETOOLONG);
	ck_assert_int_eq(rpc_enc_readdir(buf, BUFSZ, "/d", "a/b", 1), -EINVAL);
	/* An op that carries no path only alone. */
	ck_assert_int_eq(rpc_enc_path_op(buf, BUFSZ, RPC_GETATTR, 0, "/a"), -EINVAL);
}
END_TEST

START_TEST(decoder_refuses_bad_paths)
{
	static const char *const bad[] = {"", "a", "/a/", "//a", "/a/./b", "/a/..", "/."};
	struct raw r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		raw_pre(&r, RPC_LOOKUP, 0);
		raw_bytes(&r, bad[i], strlen(bad[i]));
		ck_assert_msg(decode(r.b, r.n) == -EPROTO, "'%s' accepted", bad[i]);
	}
	/* A NUL inside the path. */
	raw_pre(&r, RPC_LOOKUP, 0);
	raw_bytes(&r, "/a\0b", 4);
	ck_assert_int_eq(decode(r.b, r.n), -EPROTO);
	/* A length beyond RPC_PATH_MAX, with the bytes present. */
	raw_pre(&r, RPC_LOOKUP, 0);
	raw_u16(&r, RPC_PATH_MAX + 1);
	r.b[r.n] = '/';
	memset(r.b + r.n + 1, 'x', RPC_PATH_MAX);
	r.n += RPC_PATH_MAX + 1;
	ck_assert_int_eq(decode(r.b, r.n), -EPROTO);
	/* A bad readdir cookie. */
	raw_pre(&r, RPC_READDIR, 0);
	raw_bytes(&r, "/d", 2);
	raw_bytes(&r, "..", 2);
	raw_u32(&r, 1);
	ck_assert_int_eq(decode(r.b, r.n), -EPROTO);
}
END_TEST

/* ---- counts, flags, ops ------------------------------------------------- */

static void raw_io(struct raw *r, uint32_t nseg, uint32_t present)
{
	raw_pre(r, RPC_IO_READ, 0);
	raw_u64(r, 1);
	for (int i = 0; i < RPC_CAP_SIZE / 8; i++) /* a zero capability */
		raw_u64(r, 0);
	raw_u32(r, nseg);
	raw_u32(r, 0);
	for (uint32_t i = 0; i < present; i++) {
		raw_u64(r, i * 100);
		raw_u64(r, 10);
	}
}

START_TEST(io_count_beyond_the_body_is_refused)
{
	struct raw r;

	raw_io(&r, 3, 2);
	ck_assert_int_eq(decode(r.b, r.n), -EPROTO);
	raw_io(&r, UINT32_MAX, 2);
	ck_assert_int_eq(decode(r.b, r.n), -EPROTO);
	raw_io(&r, 0x10000001u, 1); /* * 16 wraps to 16 in 32 bits */
	ck_assert_int_eq(decode(r.b, r.n), -EPROTO);
	raw_io(&r, 1, 2); /* fewer claimed than present */
	ck_assert_int_eq(decode(r.b, r.n), -EPROTO);
}
END_TEST

START_TEST(io_more_segments_than_room_is_e2big)
{
	struct raw r;

	raw_io(&r, MAXSEG + 1, MAXSEG + 1);
	ck_assert_int_eq(decode(r.b, r.n), -E2BIG);
	raw_io(&r, MAXSEG, MAXSEG);
	ck_assert_int_eq(decode(r.b, r.n), 0);
}
END_TEST

START_TEST(io_empty_or_wrapping_segment_is_refused)
{
	struct raw r;

	raw_io(&r, 1, 0);
	raw_u64(&r, 5);
	raw_u64(&r, 0);
	ck_assert_int_eq(decode(r.b, r.n), -EPROTO);
	raw_io(&r, 1, 0);
	raw_u64(&r, UINT64_MAX);
	raw_u64(&r, 2);
	ck_assert_int_eq(decode(r.b, r.n), -EPROTO);
	/* And the encoder will not write them either. */
	ck_assert_int_eq(
		rpc_enc_io(buf, BUFSZ, RPC_IO_READ, 1, NULL, &(struct rpc_seg){5, 0}, 1),
		-EINVAL);
}
END_TEST

START_TEST(unknown_op_is_refused)
{
	static const uint16_t ops[] = {0, 3, 9, 24, 39, 47, 0xffff};
	struct raw r;

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		raw_pre(&r, ops[i], 0);
		raw_u64(&r, 1);
		ck_assert_int_eq(decode(r.b, r.n), -EPROTO);
		raw_pre(&r, ops[i], 0);
		ck_assert_int_eq(decode(r.b, r.n), -EPROTO);
	}
}
END_TEST

START_TEST(unknown_flag_and_mask_bits_are_refused)
{
	struct raw r;
	int n;

	n = rpc_enc_create(buf, BUFSZ, "/f", 0, 0, 0, 0, 0, 0, -1);
	buf[2] = 0x80;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	n = rpc_enc_lock(buf, BUFSZ, RPC_LOCK, 0, 1, NULL, 0, 1, 1);
	buf[2] = 0x04;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
	raw_pre(&r, RPC_SETATTR, 0);
	raw_bytes(&r, "/f", 2);
	raw_u32(&r, 16);
	for (int i = 0; i < 3; i++)
		raw_u32(&r, 0);
	raw_u64(&r, 0);
	raw_u64(&r, 0);
	ck_assert_int_eq(decode(r.b, r.n), -EPROTO);
	/* first_server below -1 */
	n = rpc_enc_create(buf, BUFSZ, "/f", 0, 0, 0, 0, 0, 0, -1);
	buf[n - 4] = 0xfe;
	ck_assert_int_eq(decode(buf, (size_t)n), -EPROTO);
}
END_TEST

/* ---- the table of operations (rpc_ops.h) -------------------------------- */

/* Every op of the protocol: the table's, so that a new op is checked too. */
static const uint16_t all_ops[] = {
#define OP_CODE(NAME, ...) RPC_##NAME,
	RPC_OPS(OP_CODE)
#undef OP_CODE
};
#define NOPS (sizeof(all_ops) / sizeof(all_ops[0]))

static bool is_listed(uint32_t code)
{
	for (size_t i = 0; i < NOPS; i++)
		if (all_ops[i] == code)
			return true;
	return false;
}

START_TEST(op_numbers_never_change)
{
	/* The wire's numbers: a change would make old peers misread. */
	ck_assert_uint_eq(RPC_PING, 1);
	ck_assert_uint_eq(RPC_STATS, 2);
	ck_assert_uint_eq(RPC_MKDIR, 10);
	ck_assert_uint_eq(RPC_STATFS_META, 21);
	ck_assert_uint_eq(RPC_RENAME, 22);
	ck_assert_uint_eq(RPC_SEARCH, 23);
	ck_assert_uint_eq(RPC_META_HANDLES, 24);
	ck_assert_uint_eq(RPC_IO_WRITE, 40);
	ck_assert_uint_eq(RPC_IO_STATFS, 46);
	ck_assert_uint_eq(RPC_IO_CREATE, 48);
	ck_assert_uint_eq(RPC_IO_PROBE, 49);
}
END_TEST

START_TEST(every_op_and_only_ops_have_a_description)
{
	for (uint32_t code = 0; code <= UINT16_MAX; code++) {
		const struct rpc_op_desc *d = rpc_op_desc((uint16_t)code);

		ck_assert_msg(!d == !is_listed(code), "op %u", code);
		ck_assert(!rpc_op_name((uint16_t)code) == !d);
	}
	ck_assert_ptr_null(rpc_op_desc(47));
}
END_TEST

START_TEST(op_names_are_unique_counter_names)
{
	for (size_t i = 0; i < NOPS; i++) {
		const char *n = rpc_op_name(all_ops[i]);

		ck_assert(n && *n && strlen(n) <= 40);
		ck_assert_uint_eq(strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789_"),
				  strlen(n));
		for (size_t j = 0; j < i; j++)
			ck_assert_str_ne(n, rpc_op_name(all_ops[j]));
	}
	ck_assert_str_eq(rpc_op_name(RPC_STATFS_META), "statfs_meta");
	ck_assert_str_eq(rpc_op_name(RPC_IO_PROBE), "io_probe");
}
END_TEST

START_TEST(io_ops_are_those_routed_to_io_servers)
{
	for (size_t i = 0; i < NOPS; i++) {
		const struct rpc_op_desc *d = rpc_op_desc(all_ops[i]);

		ck_assert_int_eq(rpc_is_io_op(all_ops[i]), d->route == RPC_TO_IO);
		/* Data streams only to I/O servers, and only with segments. */
		if (d->runs == RPC_RUNS_STREAMED)
			ck_assert(d->route == RPC_TO_IO && d->body == RPC_BODY_IO);
	}
	ck_assert(rpc_is_io_op(RPC_IO_CREATE) && rpc_is_io_op(RPC_IO_PROBE));
	ck_assert(!rpc_is_io_op(RPC_CREATE) && !rpc_is_io_op(RPC_SEARCH));
	ck_assert(!rpc_is_io_op(47));
}
END_TEST

START_TEST(ops_a_client_names_by_handle_need_a_capability)
{
	for (size_t i = 0; i < NOPS; i++) {
		const struct rpc_op_desc *d = rpc_op_desc(all_ops[i]);
		bool by_handle = d->body == RPC_BODY_HANDLE || d->body == RPC_BODY_IO ||
				 d->body == RPC_BODY_LOCK ||
				 d->body == RPC_BODY_FETCH_ADD ||
				 d->body == RPC_BODY_TRUNCATE ||
				 d->body == RPC_BODY_REPAIR || d->body == RPC_BODY_HOLD;

		/* A handle alone is worth nothing (server/access.c). */
		if (by_handle)
			ck_assert_msg(d->access != RPC_ACCESS_FREE, "%s", d->name);
		else
			ck_assert_msg(d->access == RPC_ACCESS_FREE ||
					      d->access == RPC_ACCESS_PEERS,
				      "%s", d->name);
	}
	ck_assert_int_eq(rpc_op_desc(RPC_IO_WRITE)->access, RPC_ACCESS_WRITE);
	ck_assert_int_eq(rpc_op_desc(RPC_IO_TRUNCATE)->access, RPC_ACCESS_WRITE);
	ck_assert_int_eq(rpc_op_desc(RPC_IO_READ)->access, RPC_ACCESS_READ);
	/* a degraded reader holds what it may read */
	ck_assert_int_eq(rpc_op_desc(RPC_IO_HOLD)->access, RPC_ACCESS_READ);
	ck_assert_int_eq(rpc_op_desc(RPC_MIRROR_REPAIR)->access, RPC_ACCESS_WRITE);
	ck_assert_int_eq(rpc_op_desc(RPC_GETATTR)->access, RPC_ACCESS_RENEW);
	ck_assert_int_eq(rpc_op_desc(RPC_SEARCH)->access, RPC_ACCESS_PEERS);
	ck_assert_int_eq(rpc_op_desc(RPC_IO_CREATE)->access, RPC_ACCESS_PEERS);
	ck_assert_int_eq(rpc_op_desc(RPC_META_HANDLES)->access, RPC_ACCESS_PEERS);
}
END_TEST

START_TEST(generic_encoders_take_every_op_of_their_shape)
{
	for (size_t i = 0; i < NOPS; i++) {
		const struct rpc_op_desc *d = rpc_op_desc(all_ops[i]);
		int p = rpc_enc_path_op(buf, BUFSZ, all_ops[i], 0, "/a/b");
		int none = rpc_enc_path_op(buf, BUFSZ, all_ops[i], 0, NULL);
		int h = rpc_enc_handle_op(buf, BUFSZ, all_ops[i], 5, NULL);

		ck_assert_int_eq(p > 0, d->body == RPC_BODY_PATH);
		ck_assert_int_eq(none > 0, d->body == RPC_BODY_NONE);
		ck_assert_int_eq(h > 0,
				 d->body == RPC_BODY_HANDLE || d->body == RPC_BODY_NONE);
		if (p > 0) {
			ck_assert_int_eq(decode(buf, (size_t)p), 0);
			ck_assert_str_eq(req.path, "/a/b");
		}
	}
}
END_TEST

START_TEST(room_for_segments_only_where_the_body_has_them)
{
	struct rpc_seg in[3] = {{0, 10}, {100, 10}, {50, 1}};
	int n = rpc_enc_io(buf, BUFSZ, RPC_IO_READ, 9, NULL, in, 3);

	ck_assert_uint_eq(rpc_req_max_segs(buf, (size_t)n), 3);
	ck_assert_uint_eq(rpc_req_max_segs(buf, BUFSZ), rpc_io_max_segs(BUFSZ));
	ck_assert_uint_eq(rpc_req_max_segs(buf, 1), 0);
	n = rpc_enc_handle_op(buf, BUFSZ, RPC_IO_SIZE, 9, NULL);
	ck_assert_uint_eq(rpc_req_max_segs(buf, BUFSZ), 0);
	buf[0] = 47;
	ck_assert_uint_eq(rpc_req_max_segs(buf, BUFSZ), 0);
}
END_TEST

/* ---- replies ------------------------------------------------------------ */

START_TEST(attr_round_trips)
{
	static const struct rpc_attr a = {.handle = 0x0001000000000007ull,
					  .type = RPC_TYPE_FILE,
					  .mode = 0644,
					  .uid = 10,
					  .gid = 20,
					  .atime = -1,
					  .mtime = INT64_MAX,
					  .ctime = 1700000000000000000ll,
					  .layout = {1 << 20, 3, 2, 4}};
	struct rpc_attr b;

	memset(buf, 0xaa, RPC_ATTR_SIZE + 8);
	rpc_enc_attr(buf, &a);
	ck_assert_uint_eq(buf[RPC_ATTR_SIZE], 0xaa); /* writes exactly 80 bytes */
	ck_assert_uint_eq(buf[RPC_ATTR_SIZE - 1], 0);
	ck_assert_int_eq(rpc_dec_attr(buf, RPC_ATTR_SIZE, &b), 0);
	ck_assert_mem_eq(&a, &b, sizeof(a));
	for (size_t n = 0; n < RPC_ATTR_SIZE; n++)
		ck_assert_int_eq(rpc_dec_attr(buf, n, &b), -EPROTO);
	/* Fields at their documented offsets. */
	ck_assert_uint_eq(buf[8], RPC_TYPE_FILE);
	ck_assert_uint_eq(buf[50], 0x10);
	ck_assert_uint_eq(buf[56], 3);
	ck_assert_uint_eq(buf[60], 2);
	ck_assert_uint_eq(buf[64], 4);
}
END_TEST

/* An ec file's code travels with its layout: K at byte 70, P at 71. */
START_TEST(attr_of_an_ec_file_round_trips)
{
	struct rpc_attr a = {.handle = 0x0001000000000008ull,
			     .type = RPC_TYPE_FILE,
			     .mode = 0644,
			     .layout = {.stripe_unit = 1 << 16,
					.stripe_count = 4,
					.first_server = 1,
					.nservers = 6,
					.kind = RPFS_LAYOUT_EC,
					.data_cells = 2,
					.parity_cells = 1}},
			b;

	rpc_enc_attr(buf, &a);
	ck_assert_uint_eq(buf[68], RPFS_LAYOUT_EC);
	ck_assert_uint_eq(buf[70], 2);
	ck_assert_uint_eq(buf[71], 1);
	ck_assert_int_eq(rpc_dec_attr(buf, RPC_ATTR_SIZE, &b), 0);
	ck_assert_mem_eq(&a, &b, sizeof(a));
	/* a code that does not fit the slots is refused as any bad layout */
	buf[70] = 3;
	ck_assert_int_eq(rpc_dec_attr(buf, RPC_ATTR_SIZE, &b), -EPROTO);
}
END_TEST

/* A reply that grants a capability carries it after the attributes; one
 * without reads as no capability. Handle ops carry theirs after the handle. */
START_TEST(capabilities_round_trip)
{
	struct rpc_attr a = {.handle = 0x0002000000000009ull,
			     .type = RPC_TYPE_FILE,
			     .mode = 0600,
			     .layout = {1 << 16, 2, 1, 2},
			     .cap = {.expiry = 1800000000000000000ll,
				     .rights = RPC_CAP_READ | RPC_CAP_WRITE,
				     .lifetime_s = 3600}};
	struct rpc_seg seg = {4096, 100}, sg[2];
	struct rpc_attr b;
	struct rpc_req r;
	int n;

	memset(a.cap.mac, 0x5c, sizeof(a.cap.mac));
	rpc_enc_attr_cap(buf, &a);
	ck_assert_int_eq(rpc_dec_attr(buf, RPC_ATTR_CAP_SIZE, &b), 0);
	ck_assert_mem_eq(&a, &b, sizeof(a));
	ck_assert_int_eq(rpc_dec_attr(buf, RPC_ATTR_SIZE, &b), 0);
	ck_assert_int_eq(b.cap.rights, 0);
	ck_assert_int_eq(b.cap.expiry, 0);

	n = rpc_enc_io(buf, BUFSZ, RPC_IO_WRITE, a.handle, &a.cap, &seg, 1);
	ck_assert_int_eq(n, RPC_PREAMBLE + 8 + RPC_CAP_SIZE + 8 + RPC_SEG_SIZE);
	ck_assert_int_eq(rpc_decode_req(buf, (size_t)n, &r, sg, 2), 0);
	ck_assert_uint_eq(r.handle, a.handle);
	ck_assert_mem_eq(&r.cap, &a.cap, sizeof(a.cap));
	/* Without one, a zero capability travels (server to server). */
	n = rpc_enc_handle_op(buf, BUFSZ, RPC_IO_SIZE, a.handle, NULL);
	ck_assert_int_eq(n, RPC_PREAMBLE + 8 + RPC_CAP_SIZE);
	ck_assert_int_eq(rpc_decode_req(buf, (size_t)n, &r, sg, 2), 0);
	ck_assert_int_eq(r.cap.rights, 0);
	ck_assert_int_eq(r.cap.expiry, 0);
	/* A renewal asks for rights; other flags are refused both ways. */
	n = rpc_enc_getattr(buf, BUFSZ, a.handle, RPC_WANT_READ, &a.cap);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(rpc_decode_req(buf, (size_t)n, &r, sg, 2), 0);
	ck_assert_uint_eq(r.flags, RPC_WANT_READ);
	ck_assert_int_eq(rpc_enc_getattr(buf, BUFSZ, a.handle, 0x40, &a.cap), -EINVAL);
	buf[2] = 0x40;
	ck_assert_int_eq(rpc_decode_req(buf, (size_t)n, &r, sg, 2), -EPROTO);
	n = rpc_enc_path_op(buf, BUFSZ, RPC_LOOKUP, RPC_WANT_WRITE, "/f");
	ck_assert_int_eq(rpc_decode_req(buf, (size_t)n, &r, sg, 2), 0);
	ck_assert_uint_eq(r.flags, RPC_WANT_WRITE);
	buf[2] = 0x80;
	ck_assert_int_eq(rpc_decode_req(buf, (size_t)n, &r, sg, 2), -EPROTO);
}
END_TEST

START_TEST(attr_with_bad_type_or_layout_is_refused)
{
	struct rpc_attr a = {.handle = 1,
			     .type = RPC_TYPE_FILE,
			     .mode = 0644,
			     .layout = {.stripe_count = 1, .nservers = 1}};
	struct rpc_attr b;

	rpc_enc_attr(buf, &a);
	ck_assert_int_eq(rpc_dec_attr(buf, RPC_ATTR_SIZE, &b), -EPROTO);
	a.layout = (struct rpfs_layout){
		.stripe_unit = 4096, .stripe_count = 1, .nservers = 1};
	a.type = 7;
	rpc_enc_attr(buf, &a);
	ck_assert_int_eq(rpc_dec_attr(buf, RPC_ATTR_SIZE, &b), -EPROTO);
	a.type = RPC_TYPE_DIR;
	a.layout = (struct rpfs_layout){0};
	rpc_enc_attr(buf, &a);
	ck_assert_int_eq(rpc_dec_attr(buf, RPC_ATTR_SIZE, &b), 0);
}
END_TEST

START_TEST(u64_and_statfs_round_trip)
{
	struct rpc_statfs s = {1ull << 40, 12345, 7, 23456, 0xfeedfacecafebeefull}, t;
	uint64_t v;

	rpc_enc_u64(buf, 0x1122334455667788ull);
	ck_assert_uint_eq(buf[0], 0x88);
	ck_assert_int_eq(rpc_dec_u64(buf, 8, &v), 0);
	ck_assert_uint_eq(v, 0x1122334455667788ull);
	ck_assert_int_eq(rpc_dec_u64(buf, 7, &v), -EPROTO);
	rpc_enc_statfs(buf, &s);
	ck_assert_int_eq(rpc_dec_statfs(buf, RPC_STATFS_SIZE, &t), 0);
	ck_assert_mem_eq(&s, &t, sizeof(s));
	ck_assert_int_eq(rpc_dec_statfs(buf, RPC_STATFS_MIN - 1, &t), -EPROTO);
}
END_TEST

START_TEST(statfs_of_an_older_server_has_free_as_avail_and_no_fsid)
{
	struct rpc_statfs s = {1ull << 40, 12345, 7, 23456, 99}, t;

	rpc_enc_statfs(buf, &s);
	ck_assert_int_eq(rpc_dec_statfs(buf, RPC_STATFS_MIN, &t), 0);
	ck_assert_uint_eq(t.total, s.total);
	ck_assert_uint_eq(t.avail, s.avail);
	ck_assert_uint_eq(t.objects, s.objects);
	ck_assert_uint_eq(t.free, s.avail);
	ck_assert_uint_eq(t.fsid, 0);
}
END_TEST

START_TEST(io_size_round_trip_and_older_form)
{
	struct rpc_io_size s = {1ull << 33, 1795766949446409000ll, -5}, t;

	rpc_enc_io_size(buf, &s);
	ck_assert_int_eq(rpc_dec_io_size(buf, RPC_IO_SIZE_REP, &t), 0);
	ck_assert_mem_eq(&s, &t, sizeof(s));
	/* an older server's reply: the size alone */
	ck_assert_int_eq(rpc_dec_io_size(buf, 8, &t), 0);
	ck_assert_uint_eq(t.size, s.size);
	ck_assert_int_eq(t.mtime, 0);
	ck_assert_int_eq(t.ctime, 0);
	ck_assert_int_eq(rpc_dec_io_size(buf, 7, &t), -EPROTO);
}
END_TEST

START_TEST(dirents_round_trip)
{
	static struct rpc_dirent e[3], d[3];
	uint32_t n, more;
	int len;

	e[0].type = RPC_TYPE_DIR;
	strcpy(e[0].name, "sub");
	e[1].type = RPC_TYPE_FILE;
	strcpy(e[1].name, ".hidden");
	e[2].type = RPC_TYPE_FILE;
	memset(e[2].name, 'z', RPC_NAME_MAX);
	len = rpc_enc_dirents(buf, BUFSZ, e, 3, 1);
	ck_assert_int_eq(len, 8 + 3 * 6 + 3 + 7 + RPC_NAME_MAX);
	ck_assert_int_eq(rpc_dec_dirents(buf, (size_t)len, d, 3, &n, &more), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(more, 1);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(d[i].type, e[i].type);
		ck_assert_str_eq(d[i].name, e[i].name);
	}
	for (int i = 0; i < len; i++)
		ck_assert_int_eq(rpc_dec_dirents(buf, (size_t)i, d, 3, &n, &more),
				 -EPROTO);
	ck_assert_int_eq(rpc_dec_dirents(buf, (size_t)len, d, 2, &n, &more), -E2BIG);
	for (int cap = 0; cap < len; cap++)
		ck_assert_int_eq(rpc_enc_dirents(buf, (size_t)cap, e, 3, 1), -E2BIG);
	strcpy(e[1].name, "..");
	ck_assert_int_eq(rpc_enc_dirents(buf, BUFSZ, e, 3, 1), -EINVAL);
}
END_TEST

START_TEST(dirents_count_beyond_the_body_is_refused)
{
	struct rpc_dirent d[4];
	uint32_t n, more;
	struct raw r = {.n = 0};

	raw_u32(&r, 1000000);
	raw_u32(&r, 0);
	raw_u32(&r, RPC_TYPE_FILE);
	raw_bytes(&r, "a", 1);
	ck_assert_int_eq(rpc_dec_dirents(r.b, r.n, d, 4, &n, &more), -EPROTO);
	ck_assert_uint_eq(n, 0);
}
END_TEST

/* ---- fuzz --------------------------------------------------------------- */

static uint64_t fz_state = 0x9e3779b97f4a7c15ull;

static uint32_t fz_next(void)
{
	/* xorshift64*: fast, reproducible, independent of rand(). */
	fz_state ^= fz_state >> 12;
	fz_state ^= fz_state << 25;
	fz_state ^= fz_state >> 27;
	return (uint32_t)((fz_state * 0x2545f4914f6cdd1dull) >> 32);
}

/* The ops random bodies start with: every op of the table. */
#define fz_ops	all_ops
#define NFZ_OPS NOPS

/* What the server may rely on after a successful decode. */
static void assert_invariants(const struct rpc_req *r, size_t len)
{
	const struct rpc_op_desc *d = rpc_op_desc(r->op);

	ck_assert_ptr_nonnull(d);
	ck_assert(!(r->flags & ~d->flags));
	ck_assert_uint_ge(len, RPC_PREAMBLE);
	switch (d->body) {
	case RPC_BODY_PATH:
	case RPC_BODY_MKDIR:
	case RPC_BODY_CREATE:
	case RPC_BODY_SETATTR:
	case RPC_BODY_READDIR:
	case RPC_BODY_RENAME:
		ck_assert_ptr_eq(r->path, r->path_buf);
		ck_assert(r->op != RPC_RENAME || rpc_path_ok(r->to));
		ck_assert(rpc_path_ok(r->path));
		ck_assert_uint_le(strlen(r->path), RPC_PATH_MAX);
		ck_assert_uint_le(strlen(r->cookie), RPC_NAME_MAX);
		ck_assert(!strchr(r->cookie, '/'));
		ck_assert(r->op != RPC_CREATE ||
			  !(r->flags & ~(RPC_CREATE_EXCL | RPC_WANT_RIGHTS)));
		ck_assert((r->op != RPC_LOOKUP && r->op != RPC_GETATTR) ||
			  !(r->flags & ~RPC_WANT_RIGHTS));
		ck_assert(r->op != RPC_CREATE || r->first_server >= -1);
		ck_assert(r->mask == RPC_SET_LAYOUT ||
			  !(r->mask & ~(RPC_SET_MODE | RPC_SET_OWNER | RPC_SET_TIMES)));
		break;
	case RPC_BODY_SEARCH:
		ck_assert(rpc_path_ok(r->path));
		ck_assert_uint_le(r->want, 7);
		ck_assert_uint_le(r->ngroups, RPC_GROUPS_MAX);
		break;
	case RPC_BODY_HANDLES:
		ck_assert_uint_ge(r->nhandles, 1);
		ck_assert_uint_le(r->nhandles, RPC_HANDLES_MAX);
		ck_assert_uint_eq(len, RPC_PREAMBLE + 8 + 8 * (size_t)r->nhandles);
		ck_assert_ptr_null(r->path);
		break;
	case RPC_BODY_LOCK:
		ck_assert_uint_gt(r->len, 0);
		ck_assert_uint_le(r->len, UINT64_MAX - r->off);
		ck_assert(!(r->flags & ~(RPC_LOCK_EXCL | RPC_LOCK_WAIT)));
		break;
	case RPC_BODY_IO:
		ck_assert_uint_le(r->nseg, MAXSEG);
		ck_assert_uint_eq(len, RPC_PREAMBLE + 16 + RPC_CAP_SIZE +
					       (size_t)r->nseg * RPC_SEG_SIZE);
		ck_assert(r->nseg == 0 || r->segs == segs);
		for (uint32_t i = 0; i < r->nseg; i++) {
			ck_assert_uint_gt(r->segs[i].len, 0);
			ck_assert_uint_le(r->segs[i].len, UINT64_MAX - r->segs[i].off);
		}
		break;
	default:
		ck_assert_ptr_null(r->path);
		break;
	}
}

/* A valid body of a random kind, for mutation. */
static size_t fz_valid(uint8_t *b)
{
	struct rpc_seg s[4] = {{0, 1}, {100, 50}, {1 << 20, 4096}, {7, 7}};
	uint64_t h[3] = {1, 2ull << 48, UINT64_MAX};
	int n;

	switch (fz_next() % 10) {
	case 0:
		n = rpc_enc_create(b, BUFSZ, "/dir/file", 0644, 1, 2, RPC_CREATE_EXCL,
				   65536, 2, 1);
		break;
	case 1:
		n = rpc_enc_mkdir(b, BUFSZ, "/a/b", 0755, 0, 0);
		break;
	case 2:
		n = rpc_enc_setattr(b, BUFSZ, "/x", RPC_SET_OWNER, 0, 3, 4, 5, 6);
		break;
	case 3:
		n = rpc_enc_readdir(b, BUFSZ, "/", "name", 10);
		break;
	case 4:
		n = rpc_enc_io(b, BUFSZ, fz_next() & 1 ? RPC_IO_READ : RPC_IO_WRITE, 9,
			       NULL, s, 1 + fz_next() % 4);
		break;
	case 5:
		n = rpc_enc_lock(b, BUFSZ, RPC_LOCK, RPC_LOCK_WAIT, 1, NULL, 2, 3, 4);
		break;
	case 6:
		n = rpc_enc_fetch_add(b, BUFSZ, 1, NULL, 2);
		break;
	case 7:
		n = rpc_enc_truncate(b, BUFSZ, 1, NULL, 2);
		break;
	case 8:
		n = rpc_enc_meta_handles(b, BUFSZ, h, 3);
		break;
	default:
		n = rpc_enc_path_op(b, BUFSZ, RPC_LOOKUP, 0, "/l/o/o/k");
		break;
	}
	ck_assert_int_gt(n, 0);
	return (size_t)n;
}

START_TEST(random_bodies_never_crash_the_decoder)
{
	static uint8_t b[600];
	unsigned accepted = 0;

	for (int i = 0; i < 200000; i++) {
		size_t len = fz_next() % sizeof(b);
		int ret;

		for (size_t j = 0; j < len; j++)
			b[j] = (uint8_t)fz_next();
		/* Mostly real ops with plausible small lengths, to get past the
		 * first checks. */
		if (len >= 4 && fz_next() % 4) {
			uint16_t op = fz_ops[fz_next() % NFZ_OPS];

			b[0] = (uint8_t)op;
			b[1] = (uint8_t)(op >> 8);
			b[2] = b[3] = 0;
			if (len >= 10 && fz_next() % 2) {
				b[8] = (uint8_t)(fz_next() % 40);
				b[9] = 0;
				b[10] = '/';
			}
		}
		ret = decode(b, len);
		ck_assert(ret == 0 || ret == -EPROTO || ret == -E2BIG);
		if (ret == 0) {
			accepted++;
			assert_invariants(&req, len);
		}
	}
	ck_assert_uint_gt(accepted, 0);
}
END_TEST

START_TEST(mutated_bodies_never_crash_the_decoder)
{
	static uint8_t b[BUFSZ];
	unsigned accepted = 0, refused = 0;

	for (int i = 0; i < 100000; i++) {
		size_t len = fz_valid(b);
		int ret, flips = 1 + fz_next() % 4;

		for (int f = 0; f < flips; f++) {
			switch (fz_next() % 4) {
			case 0: /* one random byte */
				b[fz_next() % len] = (uint8_t)fz_next();
				break;
			case 1: /* one bit */
				b[fz_next() % len] ^= (uint8_t)(1u << (fz_next() % 8));
				break;
			case 2: /* cut */
				len = fz_next() % (len + 1);
				if (!len)
					len = 1;
				break;
			default: /* extend with garbage */
				for (int k = fz_next() % 20; k > 0; k--)
					b[len++] = (uint8_t)fz_next();
				break;
			}
		}
		ret = decode(b, len);
		ck_assert(ret == 0 || ret == -EPROTO || ret == -E2BIG);
		if (ret == 0) {
			accepted++;
			assert_invariants(&req, len);
		} else {
			refused++;
		}
	}
	ck_assert_uint_gt(accepted, 0);
	ck_assert_uint_gt(refused, 0);
}
END_TEST

START_TEST(random_reply_bodies_never_crash_the_decoders)
{
	static uint8_t b[2048];
	struct rpc_dirent d[8];
	struct rpc_attr a;
	struct rpc_statfs s;
	struct rpc_io_size isz;
	uint64_t ends[4];
	uint32_t nends;
	uint8_t st[16];
	uint32_t n, more;
	uint64_t v;

	for (int i = 0; i < 100000; i++) {
		size_t len = fz_next() % sizeof(b);

		for (size_t j = 0; j < len; j++)
			b[j] = (uint8_t)fz_next();
		if (len >= 8 && fz_next() % 2) {
			b[0] = (uint8_t)(fz_next() % 10);
			b[1] = b[2] = b[3] = 0;
			b[4] = (uint8_t)(fz_next() % 2);
			b[5] = b[6] = b[7] = 0;
		}
		if (rpc_dec_dirents(b, len, d, 8, &n, &more) == 0) {
			ck_assert_uint_le(n, 8);
			ck_assert_uint_le(more, 1);
			for (uint32_t k = 0; k < n; k++)
				ck_assert_uint_le(strlen(d[k].name), RPC_NAME_MAX);
		}
		if (rpc_dec_attr(b, len, &a) == 0 && a.type == RPC_TYPE_FILE)
			ck_assert_int_eq(layout_check(&a.layout), 0);
		rpc_dec_statfs(b, len, &s);
		rpc_dec_io_size(b, len, &isz);
		if (rpc_dec_io_size_ends(b, len, &isz, ends, 4, &nends) == 0)
			ck_assert_uint_le(nends, RPC_EC_MEMBERS_MAX);
		rpc_dec_u64(b, len, &v);
		if (rpc_dec_handle_states(b, len, st, b[0] % 16) == 0)
			for (uint32_t k = 0; k < b[0] % 16u; k++)
				ck_assert(st[k] >= RPC_HS_FILE &&
					  st[k] <= RPC_HS_DAMAGED);
	}
}
END_TEST

static Suite *rpc_suite(void)
{
	Suite *s = suite_create("rpc");
	TCase *tc = tcase_create("round trip");

	tcase_add_test(tc, io_forward_round_trips);
	tcase_add_test(tc, mirror_stale_and_view_round_trip);
	tcase_add_test(tc, resync_and_fresh_round_trip);
	tcase_add_test(tc, io_create_incomplete_and_rebuild_round_trip);
	tcase_add_test(tc, mirror_repair_round_trip);
	tcase_add_test(tc, io_heartbeat_round_trip);
	tcase_add_test(tc, io_digest_round_trip);
	tcase_add_test(tc, io_hold_round_trip);
	tcase_add_test(tc, truncate_ends_and_size_ends_round_trip);
	tcase_add_test(tc, io_repair_round_trip);
	tcase_add_test(tc, io_resync_ec_round_trip);
	tcase_add_test(tc, io_parity_round_trip);
	tcase_add_test(tc, path_op_round_trips);
	tcase_add_test(tc, bodyless_ops_round_trip);
	tcase_add_test(tc, mkdir_round_trips);
	tcase_add_test(tc, create_round_trips);
	tcase_add_test(tc, setattr_round_trips);
	tcase_add_test(tc, readdir_round_trips);
	tcase_add_test(tc, rename_round_trips);
	tcase_add_test(tc, stats_reply_round_trips_and_refuses_bad_input);
	tcase_add_test(tc, setstripe_round_trips);
	tcase_add_test(tc, create_and_setstripe_carry_a_redundancy);
	tcase_add_test(tc, redundancy_specs_parse_format_and_pack);
	tcase_add_test(tc, redundancy_in_layouts);
	tcase_add_test(tc, search_round_trips);
	tcase_add_test(tc, search_reply_round_trips_and_refuses_bad_input);
	tcase_add_test(tc, meta_handles_round_trips);
	tcase_add_test(tc, handle_states_reply_round_trips_and_refuses_bad_input);
	tcase_add_test(tc, handle_ops_round_trip);
	tcase_add_test(tc, fetch_add_round_trips);
	tcase_add_test(tc, lock_round_trips);
	tcase_add_test(tc, truncate_round_trips);
	tcase_add_test(tc, io_round_trips);
	tcase_add_test(tc, io_max_segs_fills_the_body_exactly);
	tcase_add_test(tc, encoders_report_e2big_below_their_length);
	tcase_add_test(tc, encoding_is_little_endian_field_by_field);
	suite_add_tcase(s, tc);

	tc = tcase_create("refusals");
	tcase_add_test(tc, path_table_good_and_bad);
	tcase_add_test(tc, encoders_refuse_bad_paths);
	tcase_add_test(tc, decoder_refuses_bad_paths);
	tcase_add_test(tc, io_count_beyond_the_body_is_refused);
	tcase_add_test(tc, io_more_segments_than_room_is_e2big);
	tcase_add_test(tc, io_empty_or_wrapping_segment_is_refused);
	tcase_add_test(tc, unknown_op_is_refused);
	tcase_add_test(tc, unknown_flag_and_mask_bits_are_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("table of operations");
	tcase_add_test(tc, op_numbers_never_change);
	tcase_add_test(tc, every_op_and_only_ops_have_a_description);
	tcase_add_test(tc, op_names_are_unique_counter_names);
	tcase_add_test(tc, io_ops_are_those_routed_to_io_servers);
	tcase_add_test(tc, ops_a_client_names_by_handle_need_a_capability);
	tcase_add_test(tc, generic_encoders_take_every_op_of_their_shape);
	tcase_add_test(tc, room_for_segments_only_where_the_body_has_them);
	tcase_add_test(tc, io_write_with_copies_round_trips);
	tcase_add_test(tc, io_copies_list_that_lies_is_refused);
	tcase_add_test(tc, down_list_round_trips);
	suite_add_tcase(s, tc);

	tc = tcase_create("replies");
	tcase_add_test(tc, attr_round_trips);
	tcase_add_test(tc, attr_of_an_ec_file_round_trips);
	tcase_add_test(tc, capabilities_round_trip);
	tcase_add_test(tc, attr_with_bad_type_or_layout_is_refused);
	tcase_add_test(tc, u64_and_statfs_round_trip);
	tcase_add_test(tc, statfs_of_an_older_server_has_free_as_avail_and_no_fsid);
	tcase_add_test(tc, io_size_round_trip_and_older_form);
	tcase_add_test(tc, dirents_round_trip);
	tcase_add_test(tc, dirents_count_beyond_the_body_is_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("fuzz");
	/* Generous: the same loops run under ASan+UBSan. */
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, random_bodies_never_crash_the_decoder);
	tcase_add_test(tc, mutated_bodies_never_crash_the_decoder);
	tcase_add_test(tc, random_reply_bodies_never_crash_the_decoders);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(rpc_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
