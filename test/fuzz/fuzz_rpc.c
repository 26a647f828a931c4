/* libFuzzer target: the file service's bodies (rpc.h).
 *
 * Requests: the input is a request body as rpfsd's progress thread hands it
 * to rpc_decode_req, with room for segments sized the way server/dispatch.c
 * sizes it (rpc_req_max_segs: rpc_io_max_segs of the body for IO_WRITE and
 * IO_READ, none for other ops), in an allocation of exactly that many
 * segments. A second decode offers room for fewer segments than a list I/O
 * request carries, which must be -E2BIG without a write past that room. An
 * accepted request satisfies every invariant rpc.c lists for
 * rpc_decode_req, and encodes back through the rpc_enc_* encoders to the
 * very bytes it came from (the reserved preamble word and, for ops that
 * have none, the flags aside):
 * the decoder read every field where the encoders put it and took nothing
 * more than the body.
 *
 * Replies: the same input through every reply decoder a client uses (attr,
 * u64, dirents, statfs, probe, handle states), with the checks each promises, and a
 * re-encode of what it decoded. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "rpc.h"

#define BODY_MAX 65536

static uint8_t again[BODY_MAX + 64];

/* The request encoded again from what was decoded, by its body's shape
 * (rpc_ops.h); -1 for an op the decoder should not have accepted. */
static int reencode(const struct rpc_req *r, size_t cap)
{
	const struct rpc_op_desc *d = rpc_op_desc(r->op);

	if (!d)
		return -1;
	switch (d->body) {
	case RPC_BODY_NONE:
		return rpc_enc_path_op(again, cap, r->op, r->flags, NULL);
	case RPC_BODY_PATH:
		return rpc_enc_path_op(again, cap, r->op, r->flags, r->path);
	case RPC_BODY_MKDIR:
		return rpc_enc_mkdir(again, cap, r->path, r->mode, r->uid, r->gid);
	case RPC_BODY_CREATE:
		return rpc_enc_create_red(again, cap, r->path, r->mode, r->uid, r->gid,
					  r->flags, r->stripe_unit, r->stripe_count,
					  r->first_server, r->redundancy);
	case RPC_BODY_SETATTR:
		if (r->mask == RPC_SET_LAYOUT)
			return rpc_enc_setstripe_red(again, cap, r->path, r->stripe_unit,
						     r->stripe_count, r->redundancy);
		return rpc_enc_setattr(again, cap, r->path, r->mask, r->mode, r->uid,
				       r->gid, r->atime, r->mtime);
	case RPC_BODY_READDIR:
		return rpc_enc_readdir(again, cap, r->path, r->cookie, r->max);
	case RPC_BODY_RENAME:
		return rpc_enc_rename(again, cap, r->path, r->to);
	case RPC_BODY_HANDLE:
		if (r->op == RPC_GETATTR)
			return rpc_enc_getattr(again, cap, r->handle, r->flags, &r->cap);
		if (r->op == RPC_IO_SIZE && r->flags == RPC_SIZE_ENDS)
			return rpc_enc_io_size_req(again, cap, r->handle, r->flags,
						   &r->cap);
		return rpc_enc_handle_op(again, cap, r->op, r->handle, &r->cap);
	case RPC_BODY_FETCH_ADD:
		return rpc_enc_fetch_add(again, cap, r->handle, &r->cap, r->delta);
	case RPC_BODY_LOCK:
		return rpc_enc_lock(again, cap, r->op, r->flags, r->handle, &r->cap,
				    r->off, r->len, r->owner);
	case RPC_BODY_TRUNCATE:
		if (r->flags == RPC_TRUNCATE_ENDS) {
			uint64_t e[RPC_EC_MEMBERS_MAX];

			if (r->nends > RPC_EC_MEMBERS_MAX)
				return -1;
			for (uint32_t i = 0; i < r->nends; i++)
				e[i] = rpc_req_end(r, i);
			return rpc_enc_truncate_ends(again, cap, r->handle, &r->cap,
						     r->size, r->slot, e, r->nends);
		}
		if (r->flags & RPC_TRUNCATE_COPIES)
			return rpc_enc_truncate_copies(again, cap, r->handle, &r->cap,
						       r->size, r->slot, r->copies,
						       r->ncopies, r->epoch);
		if (r->flags & RPC_TRUNCATE_FORWARD)
			return rpc_enc_truncate_forward(again, cap, r->handle, r->size,
							r->slot, r->epoch, r->fwd_flags);
		return rpc_enc_truncate(again, cap, r->handle, &r->cap, r->size);
	case RPC_BODY_IO:
		if (r->flags & RPC_IO_REPAIR)
			return rpc_enc_io_repair(again, cap, r->handle, &r->cap, r->segs,
						 r->nseg, r->slot, r->hold_id);
		if (r->flags & RPC_IO_PARITY)
			return rpc_enc_io_parity(again, cap, r->handle, &r->cap, r->segs,
						 r->nseg, r->slot, r->copies, r->ncopies,
						 r->epoch, r->ec_k, r->ec_index);
		if (r->ncopies)
			return rpc_enc_io_copies(again, cap, r->handle, &r->cap, r->segs,
						 r->nseg, r->slot, r->copies, r->ncopies,
						 r->epoch);
		if ((r->flags & RPC_IO_FORWARD) && (r->fwd_flags & RPC_FWD_XOR))
			return rpc_enc_io_forward_xor(again, cap, r->handle, r->segs,
						      r->nseg, r->slot, r->epoch, r->ec_k,
						      r->ec_index, r->ec_end);
		if (r->flags & RPC_IO_FORWARD)
			return rpc_enc_io_forward(again, cap, r->handle, r->segs, r->nseg,
						  r->slot, r->epoch, r->fwd_flags);
		return rpc_enc_io_slot(again, cap, r->op, r->handle, &r->cap, r->segs,
				       r->nseg, r->slot);
	case RPC_BODY_IO_CREATE:
		return rpc_enc_io_create(again, cap, r->handle, r->nonce, r->slot,
					 r->flags);
	case RPC_BODY_PROBE:
		if (r->op == RPC_MIRROR_REBUILD)
			return rpc_enc_mirror_rebuild(again, cap, r->meta);
		return rpc_enc_io_probe(again, cap, r->meta);
	case RPC_BODY_SEARCH:
		return rpc_enc_search(again, cap, r->path, r->want, r->uid, r->gid,
				      r->groups, r->ngroups);
	case RPC_BODY_STALE: {
		uint32_t st[RPC_COPIES_MAX];

		for (uint32_t i = 0; i < r->ncopies && i < RPC_COPIES_MAX; i++)
			st[i] = r->copies[i].slot;
		if (r->op == RPC_MIRROR_FRESH)
			return rpc_enc_mirror_fresh(again, cap, r->flags, r->handle,
						    r->epoch, r->slot, st[0]);
		if (r->op == RPC_MIRROR_STALE && (r->flags & RPC_STALE_DAMAGED))
			return rpc_enc_mirror_damaged(again, cap, r->handle, r->slot);
		return rpc_enc_mirror_stale(again, cap, r->handle, r->epoch, r->slot, st,
					    r->ncopies);
	}
	case RPC_BODY_RESYNC: {
		struct rpc_copy m[RPC_EC_MEMBERS_MAX];

		if (!(r->flags & RPC_RESYNC_EC))
			return rpc_enc_io_resync(again, cap, r->handle, r->slot,
						 &r->copies[0], r->epoch);
		if (r->nmembers > RPC_EC_MEMBERS_MAX || r->nmembers != r->ec_k)
			return -1;
		for (uint32_t i = 0; i < r->nmembers; i++)
			m[i] = rpc_req_member(r, i);
		return rpc_enc_io_resync_ec(again, cap, r->handle, r->slot, m, r->ec_k,
					    r->ec_p, r->ec_index, r->epoch);
	}
	case RPC_BODY_HOLD:
		return rpc_enc_io_hold(again, cap, r->flags, r->handle, &r->cap, r->slot,
				       r->off, r->len, r->hold_id, r->lease_ms,
				       r->ncopies ? r->copies[0].slot : RPC_SLOT_ANY);
	case RPC_BODY_DOWN: {
		uint32_t down[RPC_HEARTBEAT_DOWN_MAX];

		if (r->ndown > RPC_HEARTBEAT_DOWN_MAX)
			return -1;
		for (uint32_t i = 0; i < r->ndown; i++)
			down[i] = rpc_req_down(r, i);
		return rpc_enc_io_heartbeat(again, cap, r->meta, down, r->ndown);
	}
	case RPC_BODY_REPAIR:
		return rpc_enc_mirror_repair(again, cap, r->handle, &r->cap, r->slot,
					     r->copies[0].slot);
	case RPC_BODY_DIGEST:
		return rpc_enc_io_digest(again, cap, r->handle, r->slot, r->off, r->len);
	case RPC_BODY_HANDLES: {
		uint64_t h[RPC_HANDLES_MAX];

		if (r->nhandles > RPC_HANDLES_MAX)
			return -1;
		for (uint32_t i = 0; i < r->nhandles; i++)
			h[i] = rpc_req_handle(r, i);
		return rpc_enc_meta_handles(again, cap, h, r->nhandles);
	}
	}
	/* A new body shape needs its encoder here too. */
	fprintf(stderr, "fuzz_rpc: op %u accepted but not re-encoded here\n", r->op);
	return -1;
}

/* The ops whose encoders carry the flags (the others write 0). */
static int has_flags(uint16_t op)
{
	const struct rpc_op_desc *d = rpc_op_desc(op);

	return d && (d->body == RPC_BODY_NONE || d->body == RPC_BODY_PATH ||
		     d->body == RPC_BODY_CREATE || d->body == RPC_BODY_LOCK ||
		     d->body == RPC_BODY_IO_CREATE);
}

static int is_bodyless(uint16_t op)
{
	const struct rpc_op_desc *d = rpc_op_desc(op);

	return d && d->body == RPC_BODY_NONE;
}

static void check_req(const uint8_t *data, size_t size, const struct rpc_req *r,
		      const struct rpc_seg *segs, uint32_t maxseg)
{
	struct red_spec red;
	int n;

	FUZZ_CHECK(size >= RPC_PREAMBLE);
	if (r->path) {
		FUZZ_CHECK(r->path == r->path_buf);
		FUZZ_CHECK(rpc_path_ok(r->path));
	}
	switch (r->op) {
	case RPC_RENAME:
		FUZZ_CHECK(r->to == r->to_buf && rpc_path_ok(r->to));
		break;
	case RPC_READDIR:
		FUZZ_CHECK(strlen(r->cookie) <= RPC_NAME_MAX);
		FUZZ_CHECK(!strchr(r->cookie, '/'));
		FUZZ_CHECK(strcmp(r->cookie, ".") && strcmp(r->cookie, ".."));
		break;
	case RPC_CREATE:
		FUZZ_CHECK(!(r->flags & ~(RPC_CREATE_EXCL | RPC_WANT_RIGHTS)) &&
			   r->first_server >= -1);
		FUZZ_CHECK(!red_unpack(r->redundancy, &red));
		break;
	case RPC_LOOKUP:
	case RPC_GETATTR:
		FUZZ_CHECK(!(r->flags & ~RPC_WANT_RIGHTS));
		break;
	case RPC_SETATTR:
		FUZZ_CHECK(r->mask == RPC_SET_LAYOUT ||
			   !(r->mask & ~(RPC_SET_MODE | RPC_SET_OWNER | RPC_SET_TIMES)));
		break;
	case RPC_LOCK:
	case RPC_UNLOCK:
		FUZZ_CHECK(!(r->flags & ~(RPC_LOCK_EXCL | RPC_LOCK_WAIT)));
		FUZZ_CHECK(r->len > 0 && r->len <= UINT64_MAX - r->off);
		break;
	case RPC_IO_WRITE:
	case RPC_IO_READ:
		FUZZ_CHECK(r->nseg <= maxseg && r->segs == segs);
		/* a copies list only on a write with the flag, 1..RPC_COPIES_MAX
		 * copies, each with a slot */
		FUZZ_CHECK(!(r->flags & ~(RPC_IO_COPIES | RPC_IO_FORWARD | RPC_IO_PARITY |
					  RPC_IO_REPAIR)));
		/* one of the three at most */
		FUZZ_CHECK(!(r->flags & (r->flags - 1)));
		FUZZ_CHECK(!r->flags || r->op == RPC_IO_WRITE);
		FUZZ_CHECK(!!(r->flags & (RPC_IO_COPIES | RPC_IO_PARITY)) ==
			   (r->ncopies > 0));
		/* an ec write: its code (K, P = its parity members, its index) */
		FUZZ_CHECK(!(r->flags & RPC_IO_PARITY) ||
			   (r->ec_p == r->ncopies && r->ec_k >= 1 &&
			    r->ec_k <= RED_EC_CELLS_MAX && r->ec_index < r->ec_k));
		FUZZ_CHECK(r->ncopies <= RPC_COPIES_MAX);
		FUZZ_CHECK(!(r->fwd_flags & ~RPC_FWD_FLAGS));
		for (uint32_t i = 0; i < r->ncopies; i++)
			FUZZ_CHECK(r->copies[i].slot != RPC_SLOT_ANY &&
				   !(r->copies[i].flags & ~RPC_COPY_FLAGS));
		FUZZ_CHECK(RPC_PREAMBLE + 16 + RPC_CAP_SIZE +
				   (uint64_t)r->nseg * RPC_SEG_SIZE +
				   (r->ncopies ? 12 + 12 * (uint64_t)r->ncopies : 0) +
				   ((r->flags & RPC_IO_FORWARD) ? 16 : 0) +
				   ((r->fwd_flags & RPC_FWD_XOR) ? 16 : 0) +
				   ((r->flags & RPC_IO_PARITY) ? 8 : 0) +
				   ((r->flags & RPC_IO_REPAIR) ? 8 : 0) ==
			   size);
		/* a parity delta says whose, and that member's end */
		FUZZ_CHECK(!(r->fwd_flags & RPC_FWD_XOR) ||
			   (r->ec_k >= 1 && r->ec_k <= RED_EC_CELLS_MAX &&
			    r->ec_index < r->ec_k && r->ec_end <= (uint64_t)INT64_MAX));
		for (uint32_t i = 0; i < r->nseg; i++)
			FUZZ_CHECK(segs[i].len > 0 &&
				   segs[i].len <= UINT64_MAX - segs[i].off);
		break;
	case RPC_IO_CREATE:
		FUZZ_CHECK(r->nonce != 0 && !(r->flags & ~RPC_IO_CREATE_INCOMPLETE));
		break;
	case RPC_IO_DIGEST:
		/* a range of whole units from its start, within the span */
		FUZZ_CHECK(!r->flags && r->slot != RPC_SLOT_ANY &&
			   r->off % RPC_DIGEST_UNIT == 0 && r->len > 0 &&
			   r->len <= RPC_DIGEST_SPAN && size == RPC_PREAMBLE + 32);
		break;
	case RPC_IO_HEARTBEAT:
		FUZZ_CHECK(!r->flags && r->ndown <= RPC_HEARTBEAT_DOWN_MAX);
		FUZZ_CHECK(r->down == data + RPC_PREAMBLE + 8);
		FUZZ_CHECK(size == RPC_PREAMBLE + 8 + 4 * (size_t)r->ndown);
		break;
	case RPC_MIRROR_REPAIR:
		/* a data slot and another slot, one copy, no flags */
		FUZZ_CHECK(!r->flags && r->ncopies == 1 && r->slot != RPC_SLOT_ANY &&
			   r->copies[0].slot != RPC_SLOT_ANY &&
			   r->copies[0].slot != r->slot);
		FUZZ_CHECK(size == RPC_PREAMBLE + 8 + RPC_CAP_SIZE + 8);
		break;
	case RPC_IO_HOLD:
		/* one of take, release, end; a take's lease within bounds, an
		 * end's session named; a range that fits 64 bits */
		FUZZ_CHECK(r->flags == 0 || r->flags == RPC_HOLD_RELEASE ||
			   r->flags == RPC_HOLD_END);
		FUZZ_CHECK(r->slot != RPC_SLOT_ANY && r->len <= UINT64_MAX - r->off);
		FUZZ_CHECK(r->flags ||
			   (r->lease_ms >= 1 && r->lease_ms <= RPC_HOLD_LEASE_MAX_MS));
		FUZZ_CHECK(r->flags != RPC_HOLD_END || r->ncopies == 1);
		FUZZ_CHECK(!r->ncopies || (r->copies[0].slot != RPC_SLOT_ANY &&
					   r->copies[0].slot != r->slot));
		FUZZ_CHECK(size == RPC_PREAMBLE + 48 + RPC_CAP_SIZE);
		break;
	case RPC_IO_RESYNC:
		if (r->flags & RPC_RESYNC_EC) {
			/* K members, each a slot other than the parity's */
			FUZZ_CHECK(r->ec_k >= 1 && r->ec_k <= RPC_EC_MEMBERS_MAX &&
				   r->nmembers == r->ec_k && r->ec_index < r->ec_p &&
				   r->ec_p <= RPC_COPIES_MAX);
			for (uint32_t i = 0; i < r->nmembers; i++)
				FUZZ_CHECK(rpc_req_member(r, i).slot != RPC_SLOT_ANY &&
					   rpc_req_member(r, i).slot != r->slot);
			FUZZ_CHECK(size == RPC_PREAMBLE + 32 + 8 * (size_t)r->nmembers);
		}
		break;
	case RPC_META_HANDLES:
		FUZZ_CHECK(!r->flags && r->nhandles >= 1 &&
			   r->nhandles <= RPC_HANDLES_MAX);
		FUZZ_CHECK(r->handles == data + RPC_PREAMBLE + 8);
		break;
	default:
		break;
	}
	if (size > BODY_MAX)
		return;
	n = reencode(r, sizeof(again));
	FUZZ_CHECK(n >= RPC_PREAMBLE);
	if (is_bodyless(r->op)) {
		FUZZ_CHECK(n == RPC_PREAMBLE);
	} else {
		FUZZ_CHECK((size_t)n == size);
	}
	FUZZ_CHECK(!memcmp(again, data, 2));
	FUZZ_CHECK(!has_flags(r->op) || !memcmp(again + 2, data + 2, 2));
	FUZZ_CHECK(!memcmp(again + RPC_PREAMBLE, data + RPC_PREAMBLE,
			   (size_t)n - RPC_PREAMBLE));
}

static void requests(const uint8_t *data, size_t size)
{
	static struct rpc_req r;
	struct rpc_seg *segs = NULL;
	uint32_t maxseg = 0;
	int ret;

	/* As server/dispatch.c: room only for I/O requests, sized by the body. */
	maxseg = rpc_req_max_segs(data, size);
	if (maxseg)
		segs = malloc(maxseg * sizeof(*segs));
	ret = rpc_decode_req(data, size, &r, segs, maxseg);
	FUZZ_CHECK(ret == 0 || ret == -EPROTO || ret == -E2BIG);
	if (!ret)
		check_req(data, size, &r, segs, maxseg);
	if (ret) {
		FUZZ_CHECK(r.nseg == 0 && r.segs == NULL);
	}
	/* Less room than the request needs: -E2BIG, nothing written past it. */
	if (!ret && (r.op == RPC_IO_WRITE || r.op == RPC_IO_READ) && r.nseg) {
		uint32_t room = r.nseg - 1;
		struct rpc_seg *few = malloc((room ? room : 1) * sizeof(*few));

		ret = rpc_decode_req(data, size, &r, room ? few : NULL, room);
		FUZZ_CHECK(ret == -E2BIG);
		free(few);
	}
	free(segs);
}

static void replies(const uint8_t *data, size_t size)
{
	static struct rpc_dirent ents[64];
	uint8_t buf[RPC_ATTR_CAP_SIZE];
	struct rpc_attr a, a2;
	struct rpc_statfs st;
	struct rpc_io_size isz;
	struct rpc_probe p;
	struct rpc_search_rep sr;
	uint32_t n, more;
	uint64_t v;
	int ret;

	if (!rpc_dec_attr(data, size, &a)) {
		FUZZ_CHECK(size >= RPC_ATTR_SIZE);
		FUZZ_CHECK(a.type == RPC_TYPE_FILE || a.type == RPC_TYPE_DIR);
		FUZZ_CHECK(a.type != RPC_TYPE_FILE ||
			   (a.layout.stripe_unit > 0 && a.layout.stripe_count >= 1));
		rpc_enc_attr(buf, &a);
		FUZZ_CHECK(!memcmp(buf, data, 68));
		FUZZ_CHECK(rpc_dec_attr(buf, RPC_ATTR_SIZE, &a2) == 0);
		if (size >= RPC_ATTR_CAP_SIZE) {
			/* a granted capability travels unchanged */
			rpc_enc_attr_cap(buf, &a);
			FUZZ_CHECK(!memcmp(buf + RPC_ATTR_SIZE, data + RPC_ATTR_SIZE,
					   RPC_CAP_SIZE));
		}
	}
	if (!rpc_dec_u64(data, size, &v))
		FUZZ_CHECK(size >= 8);
	if (!rpc_dec_statfs(data, size, &st))
		FUZZ_CHECK(size >= RPC_STATFS_MIN && (size >= RPC_STATFS_SIZE ||
						      (st.free == st.avail && !st.fsid)));
	if (!rpc_dec_io_size(data, size, &isz))
		FUZZ_CHECK(size >= 8 &&
			   (size >= RPC_IO_SIZE_REP || (!isz.mtime && !isz.ctime)));
	{
		/* a parity member's record of sizes: as many as it says,
		 * re-encoded to the same bytes */
		static uint64_t ends[RPC_EC_MEMBERS_MAX];
		static uint8_t again[RPC_IO_SIZE_ENDS_REP];
		uint32_t ne;

		if (!rpc_dec_io_size_ends(data, size, &isz, ends, RPC_EC_MEMBERS_MAX,
					  &ne)) {
			FUZZ_CHECK(ne <= RPC_EC_MEMBERS_MAX &&
				   size == RPC_IO_SIZE_REP + 8 + 8 * (size_t)ne);
			FUZZ_CHECK(rpc_enc_io_size_ends(again, sizeof(again), &isz, ends,
							ne) == (int)size);
			FUZZ_CHECK(!memcmp(again, data, size));
		}
	}
	if (!rpc_dec_probe(data, size, &p))
		FUZZ_CHECK(size >= RPC_PROBE_SIZE);
	{
		/* Handle states: as many as the body says, each a known one;
		 * they encode back to the same bytes. */
		static uint8_t hs[RPC_HANDLES_MAX];
		uint32_t nh = size >= 4 ? (uint32_t)data[0] | (uint32_t)data[1] << 8 |
						  (uint32_t)data[2] << 16 |
						  (uint32_t)data[3] << 24
					: 0;

		if (nh <= RPC_HANDLES_MAX && !rpc_dec_handle_states(data, size, hs, nh)) {
			FUZZ_CHECK(size == 4 + (size_t)nh);
			for (uint32_t i = 0; i < nh; i++)
				FUZZ_CHECK(hs[i] >= RPC_HS_FILE &&
					   hs[i] <= RPC_HS_DAMAGED);
			ret = rpc_enc_handle_states(again, sizeof(again), hs, nh);
			FUZZ_CHECK(ret >= 0 && (size_t)ret == size &&
				   !memcmp(again, data, size));
		}
	}
	if (!rpc_dec_search_rep(data, size, &sr))
		FUZZ_CHECK(size >= RPC_SEARCH_REP_SIZE && sr.status <= 0 &&
			   !sr.status == !sr.depth);
	{
		static struct rpc_stat sv[RPC_STATS_MAX];
		uint32_t ns;

		if (!rpc_dec_stats(data, size, sv, RPC_STATS_MAX, &ns)) {
			/* what was accepted encodes back to the same bytes */
			ret = rpc_enc_stats(again, sizeof(again), sv, ns);
			FUZZ_CHECK(ret >= 0 && (size_t)ret == size &&
				   !memcmp(again, data, size));
		}
	}
	/* A page of at most 64 entries, as a client asks for a page. */
	ret = rpc_dec_dirents(data, size, ents, 64, &n, &more);
	FUZZ_CHECK(ret == 0 || ret == -EPROTO || ret == -E2BIG);
	if (!ret) {
		FUZZ_CHECK(n <= 64 && more <= 1);
		for (uint32_t i = 0; i < n; i++) {
			size_t len = strlen(ents[i].name);

			FUZZ_CHECK(len >= 1 && len <= RPC_NAME_MAX);
			FUZZ_CHECK(!strchr(ents[i].name, '/'));
			FUZZ_CHECK(ents[i].type == RPC_TYPE_FILE ||
				   ents[i].type == RPC_TYPE_DIR);
		}
		if (size <= BODY_MAX) {
			ret = rpc_enc_dirents(again, sizeof(again), ents, n, more);
			FUZZ_CHECK(ret >= 0 && (size_t)ret == size);
			FUZZ_CHECK(!memcmp(again, data, size));
		}
	} else {
		FUZZ_CHECK(n == 0 && more == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	requests(data, size);
	replies(data, size);
	return 0;
}
