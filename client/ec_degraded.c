/* Degraded reads of erasure-coded files (docs/design/erasure-coding.md,
 * "Degraded"): a data cell whose server is lost (gone, stopped, cut off),
 * or whose block is damaged (checksum mismatch), is decoded from K other
 * members of its group, read at the same datafile offsets.
 *
 * The danger is a write to another cell of the same stripe meanwhile: its
 * data cell may be new while its delta has not reached a parity cell, and
 * a decode from the two is wrong bytes. So the range is first held still
 * on every live data member of the group (IO_HOLD, server/ec_hold.c: no ec
 * write of it in flight there, none admitted), in member order, then the
 * K members are read, then the holds go. The holds have a lease
 * (RPFSC_EC_HOLD_LEASE_MS); a read that took more than three quarters of
 * it, by this client's clock from before the first hold was asked, or
 * whose holds were not all still there when let go (one lapsed, or went
 * with its server's restart: the release says), is not trusted and is
 * done again.
 *
 * Where it stops: with more members down than P, an error naming them; a
 * data member stopped (not dead) with one of its deltas sent to some
 * parity members and not yet to others can't be held, and with two data
 * members lost (P >= 2) a decode through those parity members could mix
 * the two (documented in the design note; one member lost never reads a
 * parity cell another data member's delta is on the way to unheld). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_priv.h"
#include "ec_code.h"
#include "log.h"
#include "rpc.h"
#include "wire.h"

#define RPFSC_EC_HOLD_LEASE_MS 3000u
#define EC_ATTEMPTS	       3

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* IO_HOLD calls (flags 0: take; RPC_HOLD_RELEASE) to the servers of data
 * slots[0..n), all at once: holds never wait on each other (a hold waits
 * only for ec writes in flight, which wait on no hold), so taking them
 * together is as safe as one by one, and costs one round trip. st[i] each
 * call's result; *all_held (release) whether every hold was still held. */
static void hold_calls(struct rpfs_file *f, uint16_t flags, const uint32_t *slots,
		       uint32_t n, uint64_t lo, uint64_t len, uint64_t id, int *st,
		       bool *all_held)
{
	struct rpfs_client *c = f->c;
	uint8_t body[RED_EC_CELLS_MAX][RPC_PREAMBLE + 64 + RPC_CAP_SIZE];
	uint8_t rep[RED_EC_CELLS_MAX][16];
	struct rpfsc_op ops[RED_EC_CELLS_MAX];
	uint32_t idx[RED_EC_CELLS_MAX], m = 0;
	struct rpc_cap cap;
	int ret = rpfsc_file_cap(f, &cap);

	if (all_held)
		*all_held = true;
	for (uint32_t i = 0; i < n; i++) {
		int srv = rpfsc_io_srv(c, layout_server(&f->attr.layout, slots[i]));
		int blen = ret ? ret
			       : rpc_enc_io_hold(body[m], sizeof(body[m]), flags,
						 f->attr.handle, &cap, slots[i], lo, len,
						 id, flags ? 0 : RPFSC_EC_HOLD_LEASE_MS,
						 RPC_SLOT_ANY);

		st[i] = srv < 0 ? -EINVAL : blen < 0 ? blen : 0;
		if (st[i])
			continue;
		memset(&ops[m], 0, sizeof(ops[m]));
		ops[m].srv = srv;
		ops[m].role = RPFSC_IO;
		ops[m].what = f->path;
		ops[m].body = body[m];
		ops[m].body_len = (size_t)blen;
		ops[m].rep = rep[m];
		ops[m].rep_max = sizeof(rep[m]);
		idx[m++] = i;
	}
	if (m)
		rpfsc_run_every(c, ops, (int)m);
	for (uint32_t k = 0; k < m; k++) {
		st[idx[k]] = ops[k].call.status;
		if (all_held &&
		    (ops[k].call.status || ops[k].call.rep_len < 4 || get32(rep[k]) != 1))
			*all_held = false;
	}
	for (uint32_t i = 0; all_held && i < n; i++)
		if (st[i])
			*all_held = false;
}

/* Let go of the holds: were they all still held (none lapsed, none lost
 * with its server's restart)? Only then is what was read under them
 * trusted. A release that fails lapses with its lease. */
static bool release_all(struct rpfs_file *f, const uint32_t *held, uint32_t n,
			uint64_t lo, uint64_t len, uint64_t id)
{
	int st[RED_EC_CELLS_MAX];
	bool all = true;

	if (n)
		hold_calls(f, RPC_HOLD_RELEASE, held, n, lo, len, id, st, &all);
	return all;
}

/* The members of group g (index order) down or stale as far as this
 * client knows, besides the lost one. */
static void known_down(struct rpfs_file *f, const struct rpfsc_view *v, uint32_t g,
		       unsigned lost, bool *down)
{
	const struct rpfs_layout *l = &f->attr.layout;
	struct rpfs_client *c = f->c;
	unsigned k = l->data_cells, p = l->parity_cells;

	for (unsigned m = 0; m < k + p; m++) {
		uint32_t ms = layout_ec_member(l, g, m);
		int srv = rpfsc_io_srv(c, layout_server(l, ms));
		bool stale = false;

		for (uint32_t i = 0; i < v->n; i++)
			stale |= v->stale[i] == ms;
		down[m] = m == lost || srv < 0 || rpfsc_server_suspect(c, srv) || stale;
	}
}

/* The error when more of group g's members are down than its parity
 * cells cover. */
static int too_many(struct rpfs_file *f, uint32_t slot, uint32_t g, const bool *down)
{
	const struct rpfs_layout *l = &f->attr.layout;
	struct rpfs_client *c = f->c;
	unsigned k = l->data_cells, p = l->parity_cells, n = 0;
	char names[512] = "";
	size_t at = 0;

	for (unsigned m = 0; m < k + p; m++) {
		uint32_t ms = layout_ec_member(l, g, m);
		int w;

		if (!down[m])
			continue;
		n++;
		w = snprintf(
			names + at, sizeof(names) - at, "%s%s", at ? ", " : "",
			rpfsc_desc(c, rpfsc_io_srv(c, layout_server(l, ms)), RPFSC_IO));
		if (w > 0 && (size_t)w < sizeof(names) - at)
			at += (size_t)w;
	}
	rpfsc_err_set(
		"%s: stripe slot %u can't be read: %u of the %u members of its "
		"group are down, stale or damaged (%s), more than its %u parity cells cover",
		f->path, slot, n, k + p, names, p);
	return -EIO;
}

int rpfsc_ec_read_decoded(struct rpfs_file *f, const struct rpfsc_view *v, uint32_t slot,
			  const struct rpc_seg *segs, uint32_t nseg,
			  const struct iovec *iov, int niov)
{
	const struct rpfs_layout *l = &f->attr.layout;
	unsigned k = l->data_cells, p = l->parity_cells;
	uint32_t g = layout_ec_group(l, slot);
	unsigned lost = layout_ec_index(l, slot);
	unsigned char *bufs[RED_EC_CELLS_MAX + RPFS_COPIES_MAX] = {0}, *out = NULL;
	bool down[RED_EC_CELLS_MAX + RPFS_COPIES_MAX];
	uint64_t lo = UINT64_MAX, hi = 0, total = 0;
	struct ec_code code;
	int ret = 0;

	if (l->kind != RPFS_LAYOUT_EC || lost >= k || !nseg)
		return -EINVAL;
	for (uint32_t i = 0; i < nseg; i++) {
		total += segs[i].len;
		if (segs[i].off < lo)
			lo = segs[i].off;
		if (segs[i].off + segs[i].len > hi)
			hi = segs[i].off + segs[i].len;
	}
	if (ec_code_init(&code, k, p))
		return -ENOMEM;
	out = malloc(total ? total : 1);
	for (unsigned m = 0; m < k && out; m++)
		if (!(bufs[m] = malloc(total ? total : 1)))
			ret = -ENOMEM;
	if (!out)
		ret = -ENOMEM;
	if (ret) {
		rpfsc_err_set("%s: out of memory", f->path);
		goto done;
	}
	known_down(f, v, g, lost, down);
	ret = -EAGAIN;
	for (int attempt = 0; attempt < EC_ATTEMPTS && ret == -EAGAIN; attempt++) {
		uint32_t held[RED_EC_CELLS_MAX], nheld = 0;
		unsigned have[RED_EC_CELLS_MAX], nhave = 0;
		uint64_t id = ((uint64_t)mono_us() << 20) ^ (uint64_t)(uintptr_t)out ^
			      ((uint64_t)slot << 48);
		int64_t asked = mono_us();

		for (unsigned m = 0; m < k + p && nhave < k; m++)
			if (!down[m])
				have[nhave++] = m;
		if (nhave < k) {
			ret = too_many(f, slot, g, down);
			break;
		}
		ret = 0;
		/* every live data member of the group held, all at once */
		{
			uint32_t want[RED_EC_CELLS_MAX], wm[RED_EC_CELLS_MAX], nw = 0;
			int st[RED_EC_CELLS_MAX];

			for (unsigned m = 0; m < k; m++)
				if (!down[m]) {
					want[nw] = layout_ec_member(l, g, m);
					wm[nw++] = m;
				}
			hold_calls(f, 0, want, nw, lo, hi - lo, id, st, NULL);
			for (uint32_t w = 0; w < nw; w++) {
				if (!st[w])
					held[nheld++] = want[w];
				else if (rpfsc_lost_errno(st[w]))
					down[wm[w]] = true;
				if (st[w] && !ret)
					ret = st[w];
			}
		}
		/* then the K members read at the same offsets, all at once */
		if (!ret) {
			uint32_t ms[RED_EC_CELLS_MAX];
			struct iovec one[RED_EC_CELLS_MAX];
			uint64_t got[RED_EC_CELLS_MAX];
			int st[RED_EC_CELLS_MAX];

			for (unsigned h = 0; h < nhave; h++) {
				ms[h] = layout_ec_member(l, g, have[h]);
				one[h] = (struct iovec){bufs[h], (size_t)total};
				if (down[have[h]])
					ret = -EAGAIN; /* found down while holding */
			}
			if (!ret)
				rpfsc_read_slots(f, ms, nhave, segs, nseg, one, got, st);
			for (unsigned h = 0; h < nhave && !ret; h++) {
				/* (a damaged block there too, or its datafile
				 * gone: another member) */
				if (st[h] && (rpfsc_lost_errno(st[h]) ||
					      st[h] == -EBADMSG || st[h] == -ESTALE))
					down[have[h]] = true;
				else if (!st[h] && got[h] < total)
					memset(bufs[h] + got[h], 0,
					       (size_t)(total - got[h]));
			}
			for (unsigned h = 0; h < nhave && !ret; h++)
				ret = st[h];
		}
		if (!ret && mono_us() - asked > (int64_t)RPFSC_EC_HOLD_LEASE_MS * 750)
			ret = -ETIMEDOUT; /* the holds may have lapsed */
		if (!release_all(f, held, nheld, lo, hi - lo, id) && !ret)
			ret = -ETIMEDOUT; /* one lapsed, or its server restarted */
		if (ret == -ETIMEDOUT || ret == -EAGAIN || ret == -EBADMSG ||
		    ret == -ESTALE || rpfsc_lost_errno(ret)) {
			ret = -EAGAIN; /* again, without what was found down */
			continue;
		}
		if (ret)
			break;
		ret = ec_decode(&code, (size_t)total, nhave, have, bufs, 1, &lost, &out);
	}
	if (ret == -EAGAIN) {
		unsigned n = 0;

		for (unsigned m = 0; m < k + p; m++)
			n += down[m];
		if (n > p) {
			ret = too_many(f, slot, g, down);
		} else {
			rpfsc_err_set(
				"%s: stripe slot %u: the members of its group kept "
				"failing or answering late while it was decoded from them",
				f->path, slot);
			ret = -EIO;
		}
	}
	if (!ret) {
		uint64_t at = 0;

		for (int i = 0; i < niov && at < total; i++) {
			size_t n = iov[i].iov_len < total - at ? iov[i].iov_len
							       : (size_t)(total - at);

			memcpy(iov[i].iov_base, out + at, n);
			at += n;
		}
	}
done:
	ec_code_fini(&code);
	for (unsigned m = 0; m < k; m++)
		free(bufs[m]);
	free(out);
	return ret;
}

/* ---- damaged blocks mended --------------------------------------------------- */

static int parity_record(struct rpfs_client *c, const struct rpc_attr *a,
			 const struct rpfsc_view *view, uint32_t g, const char *what,
			 uint64_t *ends, struct rpc_io_size *rs);

void rpfsc_ec_mend(struct rpfs_file *f, const struct rpfsc_view *v, uint32_t slot,
		   uint64_t local)
{
	const struct rpfs_layout *l = &f->attr.layout;
	struct rpfs_client *c = f->c;
	int srv = rpfsc_io_srv(c, layout_server(l, slot));
	uint64_t ends[RPC_EC_MEMBERS_MAX], blk = local / 4096 * 4096, len, id, got = 0;
	size_t room = c->io_hdr + RPC_SEG_SIZE + 8, rep_len;
	unsigned char *bytes = NULL;
	uint8_t *body = malloc(room), rep[16];
	struct rpc_io_size rs;
	struct rpc_attr a = f->attr;
	struct rpc_seg seg;
	struct iovec iov;
	bool still = false;
	int st = 0, ret;
	int64_t t0;

	/* a mending writes: only an opener with write rights mends */
	ret = body ? rpfsc_file_cap(f, &a.cap) : -ENOMEM;
	if (ret || !(a.cap.rights & RPC_CAP_WRITE) || srv < 0)
		goto out;
	/* the block's bytes as the member holds them: up to its size, which
	 * its parity members' record says (its own size may be refused) */
	ret = parity_record(c, &a, v, layout_ec_group(l, slot), f->path, ends, &rs);
	if (ret || blk >= ends[layout_ec_index(l, slot)])
		goto out;
	len = ends[layout_ec_index(l, slot)] - blk < 4096
		      ? ends[layout_ec_index(l, slot)] - blk
		      : 4096;
	seg = (struct rpc_seg){blk, len};
	bytes = malloc(len);
	if (!bytes) {
		ret = -ENOMEM;
		goto out;
	}
	iov = (struct iovec){bytes, (size_t)len};
	id = ((uint64_t)mono_us() << 20) ^ (uint64_t)(uintptr_t)bytes ^
	     ((uint64_t)slot << 52);
	/* held still on the member itself first (no write of its own to the
	 * block in flight, none admitted), then decoded from the others under
	 * their holds, then written back under it */
	t0 = mono_us();
	hold_calls(f, 0, &slot, 1, blk, len, id, &st, NULL);
	if ((ret = st))
		goto out;
	ret = rpfsc_ec_read_decoded(f, v, slot, &seg, 1, &iov, 1);
	if (!ret && mono_us() - t0 > (int64_t)RPFSC_EC_HOLD_LEASE_MS * 750)
		ret = -ETIMEDOUT;
	if (!ret)
		ret = rpfsc_call_io(f, srv, body,
				    rpc_enc_io_repair(body, room, a.handle, &a.cap, &seg,
						      1, slot, id),
				    &iov, 1, NULL, 0, rep, &rep_len, &got);
	hold_calls(f, RPC_HOLD_RELEASE, &slot, 1, blk, len, id, &st, &still);
	if (!ret)
		log_warn("%s: the damaged block at offset %" PRIu64
			 " of stripe slot %u on %s "
			 "mended from the rest of its group",
			 f->path, blk, slot, rpfsc_desc(c, srv, RPFSC_IO));
out:
	if (ret)
		log_info("%s: the damaged block at offset %" PRIu64 " of stripe slot %u "
			 "not mended (%s): read around it until it is",
			 f->path, blk, slot, strerror(ret < 0 ? -ret : EPERM));
	free(bytes);
	free(body);
}

/* ---- sizes with a data member lost --------------------------------------- */

/* Is a data member's IO_SIZE answer not its datafile's size: its server
 * lost, or its datafile gone with its storage or damaged? */
static bool size_lost(int st)
{
	return rpfsc_lost_errno(st) || st == -ESTALE || st == -EBADMSG || st == -ENOENT;
}

static bool in_view_stale(const struct rpfsc_view *v, uint32_t slot)
{
	for (uint32_t i = 0; v && i < v->n; i++)
		if (v->stale[i] == slot)
			return true;
	return false;
}

/* Group g's record of its data members' sizes from one of its parity
 * members that is not stale (ec_ends.h on the server): those not known
 * down first, then the others. 0, ends[0..K) and *rs (the member's own
 * times), or the last member's error (-ENODATA: none to ask). */
static int parity_record(struct rpfs_client *c, const struct rpc_attr *a,
			 const struct rpfsc_view *view, uint32_t g, const char *what,
			 uint64_t *ends, struct rpc_io_size *rs)
{
	const struct rpfs_layout *l = &a->layout;
	uint32_t k = l->data_cells, p = l->parity_cells, n;
	uint8_t body[64], rep[RPC_IO_SIZE_ENDS_REP];
	int ret = -ENODATA;

	for (int pass = 0; pass < 2; pass++)
		for (uint32_t j = 0; j < p; j++) {
			uint32_t ps = layout_ec_member(l, g, k + j);
			int srv = rpfsc_io_srv(c, layout_server(l, ps));
			size_t rep_len = 0;
			int len, st;

			if (srv < 0 || in_view_stale(view, ps) ||
			    rpfsc_server_suspect(c, srv) != (pass == 1))
				continue;
			len = rpc_enc_io_size_req(body, sizeof(body), a->handle,
						  RPC_SIZE_ENDS, &a->cap);
			if (len < 0)
				return len;
			st = rpfsc_call1(c, srv, RPFSC_IO, what, body, (size_t)len, rep,
					 sizeof(rep), &rep_len);
			if (!st && rpc_dec_io_size_ends(rep, rep_len, rs, ends, k, &n))
				st = rpfsc_err_server(rpfsc_desc(c, srv, RPFSC_IO), what,
						      -EPROTO, 0, false);
			if (!st)
				return 0;
			ret = st;
		}
	return ret;
}

int rpfsc_ec_sizes(struct rpfs_client *c, const struct rpc_attr *a,
		   const struct rpfsc_view *view, const char *what, struct rpfsc_op *ops)
{
	const struct rpfs_layout *l = &a->layout;
	uint32_t nd = l->stripe_count, k = l->data_cells;
	struct rpfsc_op *run = calloc(nd, sizeof(*run));
	uint32_t *idx = calloc(nd, sizeof(*idx)), m = 0;
	int ret = 0;

	if (!run || !idx) {
		free(run);
		free(idx);
		rpfsc_err_set("%s: out of memory", what);
		return -ENOMEM;
	}
	/* the data members, but those known down: a stopped server would
	 * cost timeout_ms, and its group's record says its size */
	for (uint32_t s = 0; s < nd; s++) {
		ops[s].call.status = -EHOSTDOWN;
		if (ops[s].srv >= 0 && rpfsc_server_suspect(c, ops[s].srv))
			continue;
		run[m] = ops[s];
		idx[m++] = s;
	}
	if (m)
		rpfsc_run_every(c, run, (int)m);
	for (uint32_t i = 0; i < m; i++)
		ops[idx[i]].call = run[i].call;
	for (uint32_t g = 0; g * k < nd && !ret; g++) {
		uint64_t ends[RPC_EC_MEMBERS_MAX];
		struct rpc_io_size rs;
		uint32_t first = UINT32_MAX;
		int st;

		for (uint32_t i = 0; i < k; i++) {
			int s_st = ops[g * k + i].call.status;

			if (s_st && !size_lost(s_st)) {
				/* an answer that is an error of its own */
				ret = rpfsc_call_error(c, ops[g * k + i].srv, RPFSC_IO,
						       NULL, what, s_st);
				break;
			}
			if (s_st && first == UINT32_MAX)
				first = g * k + i;
		}
		if (ret || first == UINT32_MAX)
			continue;
		st = parity_record(c, a, view, g, what, ends, &rs);
		if (st) {
			/* no record to be had: the data members themselves,
			 * those known down too, and their error */
			uint32_t n = 0;

			for (uint32_t i = 0; i < k; i++)
				if (ops[g * k + i].call.status) {
					run[n] = ops[g * k + i];
					idx[n++] = g * k + i;
				}
			rpfsc_run_every(c, run, (int)n);
			for (uint32_t i = 0; i < n; i++) {
				ops[idx[i]].call = run[i].call;
				if (run[i].call.status && !ret)
					ret = rpfsc_call_error(c, run[i].srv, RPFSC_IO,
							       NULL, what,
							       run[i].call.status);
			}
			continue;
		}
		for (uint32_t i = 0; i < k; i++) {
			struct rpfsc_op *o = &ops[g * k + i];
			struct rpc_io_size mine = rs;

			if (!o->call.status)
				continue;
			mine.size = ends[i];
			rpc_enc_io_size(o->rep, &mine);
			o->call.rep_len = RPC_IO_SIZE_REP;
			o->call.status = 0;
			log_info(
				"%s: %s did not answer for its size: taken from its parity "
				"members' record (%" PRIu64 " bytes)",
				what, rpfsc_desc(c, o->srv, RPFSC_IO), ends[i]);
		}
	}
	free(run);
	free(idx);
	return ret;
}
