/* Mirrored writes (layout kind mirror:N, common/layout_mirror.c): the
 * primary of a slot is the one ordering point of its copies, as a BeeGFS
 * buddy group's primary is. A client sends a write of a mirrored file to
 * the primary only, naming the copies (IO_WRITE with RPC_IO_COPIES); the
 * primary stores it as any write, then, before answering, forwards it to
 * every copy, so an acknowledged write is on every copy.
 *
 * Why copies never diverge, even under MPI's concurrent and overlapping
 * writes: what is forwarded is not the request's data but the primary's
 * datafile bytes over the write's segments, read back after the write was
 * stored; and forwards of one datafile whose ranges overlap (the span from
 * a write's lowest to its highest byte) run one at a time. Whatever order
 * two overlapping writes reach the primary's disk in, the forward that
 * runs last reads back after both are stored, so the copy ends as the
 * primary is: for each byte, the forwards that cover it are serialised,
 * and the last one reads it after every write to it whose forward went
 * before. Forwards of disjoint ranges (MPI ranks writing their own blocks)
 * run at once. A small write's extra cost is one read from the page cache.
 *
 * Forwarding blocks (peer calls), so it runs on IO_FORWARD_THREADS threads
 * of its own, never on the progress thread nor the storage workers (a
 * copy's server is being forwarded to by others: a worker waiting on it
 * could wait on a worker waiting on us). Pieces of at most IO_FORWARD_PIECE
 * bytes travel in one call per copy, all copies at once.
 *
 * A copy that cannot be written is marked stale at the file's metadata
 * server (MIRROR_STALE, meta_mirror.c) before the write is answered, and
 * the file's mirror epoch rises: this datafile and the copies still written
 * take it, and refuse writes and forwards of an older one (RPC_EBEHIND),
 * so a process that has not learnt of the mark cannot write around it.
 * Only when the copy can't be marked either does the write fail:
 * -EREMOTEIO, the copy's I/O index as the reply's detail (rpc.h).
 *
 * Resync (IO_RESYNC, from the metadata server's meta_resync.c) makes a
 * stale copy whole again from a fresh one, this server, in the background:
 * it is registered first, so that every write forwarded from then on goes
 * to it too; then the datafile goes to it piece by piece, each piece under
 * the same ordering as forwards (read back after every overlapping forward
 * before it, so the copy ends as this one is, as for forwards), at
 * resync_mbps in all; at the end, with no forward running, this datafile and
 * the copy take the epoch the metadata server gave, and MIRROR_FRESH tells
 * it to clear the mark. A forward or a truncate reaching this server from
 * elsewhere meanwhile (another primary, a client's truncate) could have
 * changed bytes behind the pieces: the resync then fails and is tried
 * again later. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ec_code.h"
#include "ec_hold.h"
#include "ec_resync.h"
#include "io_downs.h"
#include "io_forward.h"
#include "log.h"
#include "server.h"

#define IO_FORWARD_THREADS 4
#define IO_FORWARD_PIECE   (2u << 20)
/* Resyncs running at once (the other threads forward writes) and queued
 * at most; their pace together is the setting resync_mbps. */
#define IO_RESYNC_RUN	2
#define IO_RESYNC_QUEUE 16

/* A forward running: its datafile and span [lo, hi). */
struct active {
	uint64_t handle, lo, hi;
	bool used;
};

/* A resync of a stale copy from this server's datafile. */
struct resync {
	uint64_t handle;
	uint64_t epoch; /* what the copies take at the end */
	uint32_t slot;	/* this datafile's */
	struct rpc_copy target;
	bool disturbed; /* under lock: bytes may have changed behind it */
	struct resync *next;
};

struct io_forward {
	struct srv *s;
	pthread_mutex_t lock; /* queues, stop, resyncs */
	pthread_cond_t wake;
	struct srv_op *head, *tail; /* queued ops, linked by bulk_next */
	struct resync *jhead, *jtail;
	uint32_t jqueued;
	struct resync *running[IO_RESYNC_RUN];
	bool stop;
	pthread_t thr[IO_FORWARD_THREADS];
	int nthr;
	/* the forwards running, one per thread at most (under lock); a
	 * thread whose span overlaps one waits on done */
	struct active run[IO_FORWARD_THREADS];
	pthread_cond_t done;
	atomic_int nresyncs; /* running: a cheap test for io_forward_disturb */
	int64_t pace_next;   /* under lock: when the next resync piece may go (us) */
	atomic_uint_fast64_t forwarded, failed, marked, resynced, resync_failed,
		resync_bytes, resync_same;
};

/* One piece's calls, one per copy. */
struct piece {
	struct rpc_seg segs[64];
	uint32_t nseg;
	uint64_t bytes;
};

/* A copy a forward writes to. */
struct fcopy {
	struct rpc_copy c; /* c.flags: RPC_COPY_STALE, sent with the forward */
	bool live;	   /* still written to */
	bool resync;	   /* a resync's target: a failure fails the resync */
	bool maybe;	   /* stale in an older view: written to, a failure ignored */
};

/* One forward (a write's, or a resync's): the datafile, the epoch it
 * carries (raised by its own marks), its copies, what failed. */
struct fwd {
	struct srv *s;
	uint64_t handle;
	uint32_t slot;
	uint64_t epoch;
	struct fcopy cp[RPC_COPIES_MAX + 1];
	uint32_t n;
	bool degraded;	    /* a copy was marked stale on the way */
	uint32_t failed_io; /* the copy whose failure failed the write */
	struct resync *rs;  /* the resync this forward feeds, if any */
};

static int read_back(const struct fwd *w, const struct piece *pc, char *buf)
{
	char *at = buf;

	for (uint32_t i = 0; i < pc->nseg; i++) {
		int ret = io_read_local(w->s, w->handle, at, pc->segs[i].len,
					pc->segs[i].off);

		if (ret)
			return ret;
		at += pc->segs[i].len;
	}
	return 0;
}

int io_peer_ask(struct srv *s, uint32_t server, const void *body, int len, void *rep,
		size_t rep_max, size_t *rep_len, bool quiet)
{
	struct xp_call call;
	int ret;

	if (len < 0)
		return len;
	memset(&call, 0, sizeof(call));
	call.req = body;
	call.req_len = (size_t)len;
	call.rep = rep;
	call.rep_max = rep_max;
	ret = quiet ? peer_call_quiet(s, server, &call) : peer_call(s, server, &call);
	if (rep_len)
		*rep_len = call.rep_len;
	return ret;
}

static int ask_stale(struct srv *s, uint64_t handle, uint64_t epoch, uint32_t slot,
		     const uint32_t *stale, uint32_t n, bool quiet, bool raise,
		     uint64_t *new_epoch)
{
	uint32_t meta = place_meta_of_handle(handle);
	uint8_t body[RPC_PREAMBLE + 24 + 4 * RPC_COPIES_MAX];
	uint8_t rep[12 + 4 * RPC_STALE_MAX];
	uint32_t slots[RPC_STALE_MAX], ns;
	size_t rep_len;
	int ret;

	if (meta >= s->cfg.nmeta)
		return -EINVAL;
	ret = io_peer_ask(
		s, s->cfg.meta[meta], body,
		rpc_enc_mirror_stale(body, sizeof(body), handle, epoch, slot, stale, n),
		rep, sizeof(rep), &rep_len, quiet);
	if (ret && !quiet && ret != -RPC_EBEHIND)
		log_warn("rpfsd: couldn't mark the %s of handle %016" PRIx64
			 " that missed a write stale on metadata server %s: %s",
			 raise ? "copies" : "parity members", handle,
			 s->cfg.servers[s->cfg.meta[meta]].name, strerror(-ret));
	if (ret)
		return ret;
	if (rpc_dec_view(rep, rep_len, new_epoch, slots, &ns) || *new_epoch <= epoch)
		return -EPROTO;
	/* an ec data cell takes no epoch: its parity deltas carry no order */
	return raise ? io_raise_epoch(s, handle, *new_epoch) : 0;
}

int io_mark_stale(struct srv *s, uint64_t handle, uint64_t epoch, uint32_t slot,
		  const uint32_t *stale, uint32_t n, bool quiet, uint64_t *new_epoch)
{
	return ask_stale(s, handle, epoch, slot, stale, n, quiet, true, new_epoch);
}

/* Mark copies stale[0..n) of w's datafile stale: they missed a write this
 * primary stored. The file's new mirror epoch is this datafile's before
 * the write is answered; -RPC_EBEHIND if the metadata server has this
 * primary marked stale. */
static int mark_stale(struct fwd *w, const uint32_t *stale, uint32_t n)
{
	uint64_t epoch;
	int ret = io_mark_stale(w->s, w->handle, w->epoch, w->slot, stale, n, false,
				&epoch);

	if (ret)
		return ret;
	w->epoch = epoch;
	w->degraded = true;
	return 0;
}

static void disturb(struct io_forward *fw, struct resync *rs)
{
	pthread_mutex_lock(&fw->lock);
	rs->disturbed = true;
	pthread_mutex_unlock(&fw->lock);
}

/* Send one piece to every live copy. A copy that fails is marked stale and
 * written to no more (a resync's target fails its resync instead); the
 * others get the piece again with the new epoch (they take it, so that a
 * primary still at the old one is refused). 0 when every copy that was not
 * marked has it. */
static int send_piece(struct fwd *w, const struct piece *pc, char *buf);

/* Send one piece (or, trunc not NULL, a truncate to *trunc) to every live
 * copy: send_piece's. */
static int send_to_copies(struct fwd *w, const struct piece *pc, char *buf,
			  const uint64_t *trunc)
{
	struct srv *s = w->s;
	struct xp_call calls[RPC_COPIES_MAX + 1];
	uint32_t servers[RPC_COPIES_MAX + 1] = {0}, which[RPC_COPIES_MAX + 1];
	uint32_t stale[RPC_COPIES_MAX], nstale = 0;
	bool transport[RPC_COPIES_MAX + 1];
	uint8_t body[RPC_COPIES_MAX + 1][RPC_PREAMBLE + 48 + 64 * RPC_SEG_SIZE + 64];
	uint8_t rep[RPC_COPIES_MAX + 1][16];
	struct iovec iov = {buf, (size_t)pc->bytes};
	int k = 0, ret;

	memset(calls, 0, sizeof(calls));
	/* A copy whose server a metadata server's heartbeat says is down
	 * (stopped, cut off) fails now: a call to it would wait timeout_ms
	 * (io_downs.c). */
	for (uint32_t c = 0; c < w->n; c++) {
		struct fcopy *fc = &w->cp[c];

		if (!fc->live || !io_downs_down(s, fc->c.io))
			continue;
		fc->live = false;
		if (fc->maybe)
			continue;
		if (fc->resync) {
			disturb(s->fwd, w->rs);
			continue;
		}
		log_warn("rpfsd: a write of handle %016" PRIx64
			 " can't reach its copy on I/O server %u (slot %u): the metadata "
			 "server finds it down; marking it stale",
			 w->handle, fc->c.io, fc->c.slot);
		stale[nstale++] = fc->c.slot;
		if (w->failed_io == UINT32_MAX)
			w->failed_io = fc->c.io;
	}
	for (uint32_t c = 0; c < w->n; c++) {
		int len;

		if (!w->cp[c].live)
			continue;
		len = trunc ? rpc_enc_truncate_forward(body[k], sizeof(body[k]),
						       w->handle, *trunc, w->cp[c].c.slot,
						       w->epoch, w->cp[c].c.flags)
			    : rpc_enc_io_forward(body[k], sizeof(body[k]), w->handle,
						 pc->segs, pc->nseg, w->cp[c].c.slot,
						 w->epoch, w->cp[c].c.flags);
		if (len < 0)
			return len;
		which[k] = c;
		servers[k] = s->cfg.io[w->cp[c].c.io];
		calls[k].req = body[k];
		calls[k].req_len = (size_t)len;
		calls[k].wr_iov = !trunc && pc->bytes ? &iov : NULL;
		calls[k].wr_cnt = !trunc && pc->bytes ? 1 : 0;
		calls[k].rep = rep[k];
		calls[k].rep_max = sizeof(rep[k]);
		calls[k].path = XP_PATH_AUTO;
		k++;
	}
	if (k && !peer_call_all(s, servers, calls, transport, k, NULL, NULL))
		k = 0; /* every call went through */
	for (int i = 0; i < k; i++) {
		struct fcopy *fc = &w->cp[which[i]];

		if (!calls[i].status)
			continue;
		fc->live = false;
		if (fc->maybe)
			continue;
		if (fc->resync) {
			log_info("rpfsd: resync of handle %016" PRIx64
				 " to I/O server %u (slot %u): %s",
				 w->handle, fc->c.io, fc->c.slot,
				 strerror(-calls[i].status));
			disturb(s->fwd, w->rs);
			continue;
		}
		if (calls[i].status == -RPC_EBEHIND) {
			/* this primary's view is older than the copy's */
			w->failed_io = fc->c.io;
			return -RPC_EBEHIND;
		}
		log_warn(
			"rpfsd: couldn't forward a write of handle %016" PRIx64
			" to its copy on I/O server %u (%s, slot %u): %s; marking it stale",
			w->handle, fc->c.io, s->cfg.servers[servers[i]].name, fc->c.slot,
			strerror(-calls[i].status));
		stale[nstale++] = fc->c.slot;
		if (w->failed_io == UINT32_MAX)
			w->failed_io = fc->c.io;
	}
	if (!nstale)
		return 0;
	ret = mark_stale(w, stale, nstale);
	if (ret)
		return ret == -RPC_EBEHIND ? ret : -EREMOTEIO;
	atomic_fetch_add(&s->fwd->marked, nstale);
	/* the survivors take the new epoch */
	return send_to_copies(w, pc, buf, trunc);
}

static int send_piece(struct fwd *w, const struct piece *pc, char *buf)
{
	return send_to_copies(w, pc, buf, NULL);
}

/* Forward segs[0..nseg), piece by piece. */
static int forward(struct fwd *w, const struct rpc_seg *segs, uint32_t nseg, char *buf)
{
	struct piece pc = {.nseg = 0, .bytes = 0};
	int ret = 0;

	for (uint32_t i = 0; i < nseg && !ret; i++) {
		uint64_t off = segs[i].off, left = segs[i].len;

		while (left && !ret) {
			uint64_t room = IO_FORWARD_PIECE - pc.bytes;
			uint64_t n = left < room ? left : room;

			pc.segs[pc.nseg].off = off;
			pc.segs[pc.nseg].len = n;
			pc.nseg++;
			pc.bytes += n;
			off += n;
			left -= n;
			if (pc.bytes == IO_FORWARD_PIECE || pc.nseg == 64) {
				ret = read_back(w, &pc, buf);
				if (!ret)
					ret = send_piece(w, &pc, buf);
				pc.nseg = 0;
				pc.bytes = 0;
			}
		}
	}
	if (!ret && pc.nseg) {
		ret = read_back(w, &pc, buf);
		if (!ret)
			ret = send_piece(w, &pc, buf);
	}
	return ret;
}

/* Are op's copies I/O servers of the cluster, other than this one? */
static bool copies_ok(struct srv_op *op)
{
	struct srv *s = op->s;

	for (uint32_t c = 0; c < op->q.ncopies; c++) {
		uint32_t io = op->q.copies[c].io;

		if (io >= s->cfg.nio || (int)s->cfg.io[io] == s->self)
			return false;
	}
	return true;
}

/* The span of segs. */
static void span_of(const struct rpc_seg *segs, uint32_t nseg, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	for (uint32_t i = 0; i < nseg; i++) {
		if (segs[i].off < *lo)
			*lo = segs[i].off;
		if (segs[i].off + segs[i].len > *hi)
			*hi = segs[i].off + segs[i].len;
	}
}

/* Wait until no running forward of handle's datafile overlaps [lo, hi),
 * then run it (slot *me of fw->run). */
static void order_enter(struct io_forward *fw, uint64_t handle, uint64_t lo, uint64_t hi,
			int *me)
{
	bool clash;

	pthread_mutex_lock(&fw->lock);
	do {
		clash = false;
		for (int i = 0; i < IO_FORWARD_THREADS; i++) {
			const struct active *a = &fw->run[i];

			if (a->used && a->handle == handle && a->lo < hi && lo < a->hi)
				clash = true;
		}
		if (clash)
			pthread_cond_wait(&fw->done, &fw->lock);
	} while (clash);
	for (*me = 0; fw->run[*me].used; (*me)++)
		;
	fw->run[*me] = (struct active){handle, lo, hi, true};
	pthread_mutex_unlock(&fw->lock);
}

static void order_leave(struct io_forward *fw, int me)
{
	pthread_mutex_lock(&fw->lock);
	fw->run[me].used = false;
	pthread_cond_broadcast(&fw->done);
	pthread_mutex_unlock(&fw->lock);
}

/* A resync of handle's slot running here: its target copy is written to by
 * this forward too (called in order, so that no piece of the resync read
 * back before this write was stored is sent after it). */
static void join_resync(struct io_forward *fw, struct fwd *w)
{
	pthread_mutex_lock(&fw->lock);
	for (int i = 0; i < IO_RESYNC_RUN; i++) {
		struct resync *rs = fw->running[i];

		if (!rs || rs->handle != w->handle || rs->slot != w->slot)
			continue;
		w->rs = rs;
		for (uint32_t c = 0; c < w->n; c++)
			if (w->cp[c].c.slot == rs->target.slot)
				w->cp[c].live =
					false; /* as the client saw it: replaced */
		w->cp[w->n] =
			(struct fcopy){.c = rs->target, .live = true, .resync = true};
		w->cp[w->n].c.flags = RPC_COPY_STALE;
		w->n++;
		break;
	}
	pthread_mutex_unlock(&fw->lock);
}

/* ---- erasure-coded writes -------------------------------------------------------- */

/* The answer to an ec write whose parity member on I/O server io could
 * neither be written nor marked stale: -EREMOTEIO with that server as the
 * detail, as a mirror copy's (rpc.h). */
static void parity_failed(struct srv_op *op, uint32_t io)
{
	op->status = -EREMOTEIO;
	rpc_enc_u64(op->rep, io);
	op->rep_len = 8;
	op->rep_on_error = true;
}

/* An ec data cell's write (RPC_IO_PARITY), stored here with old ^ new of
 * each byte kept (io.c, datafile_write_delta): each parity member j of its
 * group gets c(j, i) * delta over the same segments, to XOR in
 * (RPC_FWD_XOR), before the write is answered. Unlike a mirror's forwards
 * these take no range order: deltas commute, and each was taken with its
 * blocks locked from reading the old bytes to storing the new, so the
 * deltas of two writes of the same bytes add up to first-to-last whatever
 * order they reach a parity member in (docs/design/erasure-coding.md). A
 * write that failed midway still sends its deltas: bytes it did not store
 * have a zero delta.
 *
 * A parity member is not written to when it is stale (the client's view),
 * unless its resync has a session here (ec_hold.c: from its first piece on
 * it must get every delta). One known down (to the client or a heartbeat)
 * or that can't take its delta is marked stale at the file's metadata
 * server before the write is answered, and the reply carries the file's
 * new epoch (the client reloads its view); only when it can't be marked
 * either does the write fail, naming its server. A delta lost for a
 * member being resynced fails that resync (it runs again). */
static void run_parity(struct srv_op *op, char *buf)
{
	struct srv *s = op->s;
	const unsigned char *delta = io_write_delta(op);
	uint32_t np = op->q.ncopies, piece_max = IO_FORWARD_PIECE / np;
	uint8_t body[RPC_COPIES_MAX][RPC_PREAMBLE + 48 + 64 * RPC_SEG_SIZE + 64];
	uint8_t rep[RPC_COPIES_MAX][16];
	bool send[RPC_COPIES_MAX], session[RPC_COPIES_MAX], lost[RPC_COPIES_MAX];
	uint32_t mark[RPC_COPIES_MAX], nmark = 0;
	struct ec_code code;
	uint64_t epoch = op->q.epoch, cur, pos = 0, new_epoch = 0, end = 0;
	uint32_t i = 0;
	int ret;

	if (!delta || ec_code_init(&code, op->q.ec_k, op->q.ec_p)) {
		op->status = op->status ? op->status : -ENOMEM;
		srv_op_complete(op);
		return;
	}
	if (!io_epoch_local(s, op->q.handle, &cur) && cur > epoch)
		epoch = cur;
	/* This member's size after the write, for the parity members'
	 * record (ec_ends.h): stored whole, the datafile holds at least the
	 * write's last byte, and each member keeps the largest it is told,
	 * so the write's end is enough (a truncate sets the record exactly);
	 * a store that failed tells what the datafile holds. */
	for (uint32_t k = 0; k < op->q.nseg; k++)
		if (op->segs[k].off + op->segs[k].len > end)
			end = op->segs[k].off + op->segs[k].len;
	if (op->status && io_size_local(s, op->q.handle, &end))
		end = 0;
	for (uint32_t j = 0; j < np; j++) {
		const struct rpc_copy *c = &op->q.copies[j];

		session[j] = ec_session_on(s, op->q.handle, c->slot);
		lost[j] = false;
		send[j] = session[j] || !(c->flags & RPC_COPY_STALE);
		if (send[j] && !session[j] &&
		    (c->flags == RPC_COPY_DOWN || io_downs_down(s, c->io))) {
			/* known down: a call would wait timeout_ms */
			send[j] = false;
			lost[j] = true;
		}
	}
	while (pos < op->total) {
		struct piece pc = {.nseg = 0, .bytes = 0};
		struct xp_call calls[RPC_COPIES_MAX];
		uint32_t servers[RPC_COPIES_MAX], which[RPC_COPIES_MAX];
		bool transport[RPC_COPIES_MAX];
		struct iovec iov[RPC_COPIES_MAX];
		int k = 0;

		/* the next piece: segments from stream position pos */
		while (i < op->q.nseg && pc.bytes < piece_max && pc.nseg < 64) {
			const struct rpc_seg *sg = &op->segs[i];
			uint64_t start = op->seg_end[i] - sg->len,
				 skip = pos + pc.bytes - start;
			uint64_t n = sg->len - skip;

			if (n > piece_max - pc.bytes)
				n = piece_max - pc.bytes;
			pc.segs[pc.nseg].off = sg->off + skip;
			pc.segs[pc.nseg].len = n;
			pc.nseg++;
			pc.bytes += n;
			if (skip + n == sg->len)
				i++;
		}
		memset(calls, 0, sizeof(calls));
		for (uint32_t j = 0; j < np; j++) {
			unsigned char *out = (unsigned char *)buf + (size_t)j * piece_max;
			int len;

			if (!send[j])
				continue;
			memset(out, 0, pc.bytes);
			ec_update_one(&code, j, op->q.ec_index, pc.bytes, delta + pos,
				      out);
			len = rpc_enc_io_forward_xor(body[j], sizeof(body[j]),
						     op->q.handle, pc.segs, pc.nseg,
						     op->q.copies[j].slot, epoch,
						     op->q.ec_k, op->q.ec_index, end);
			if (len < 0)
				continue;
			calls[k].req = body[j];
			calls[k].req_len = (size_t)len;
			iov[k] = (struct iovec){out, (size_t)pc.bytes};
			calls[k].wr_iov = &iov[k];
			calls[k].wr_cnt = 1;
			calls[k].rep = rep[j];
			calls[k].rep_max = sizeof(rep[j]);
			calls[k].path = XP_PATH_AUTO;
			servers[k] = s->cfg.io[op->q.copies[j].io];
			which[k++] = j;
		}
		ret = k ? peer_call_all(s, servers, calls, transport, k, NULL, NULL) : 0;
		for (int c = 0; ret && c < k; c++) {
			uint32_t j = which[c];

			if (!calls[c].status)
				continue;
			log_warn(
				"rpfsd: couldn't send a parity delta of handle %016" PRIx64
				" to I/O server %u (slot %u): %s",
				op->q.handle, op->q.copies[j].io, op->q.copies[j].slot,
				strerror(-calls[c].status));
			/* written to no more; its parity is behind now */
			send[j] = false;
			lost[j] = true;
			if (session[j])
				ec_session_disturb(s, op->q.handle, op->q.copies[j].slot);
		}
		pos += pc.bytes;
	}
	ec_code_fini(&code);
	/* the members that missed this write's deltas: stale before the
	 * answer (one stale already is marked again: its resync, if one
	 * runs, must not end as if it had them) */
	for (uint32_t j = 0; j < np; j++)
		if (lost[j])
			mark[nmark++] = op->q.copies[j].slot;
	if (nmark) {
		ret = ask_stale(s, op->q.handle, epoch, op->q.slot, mark, nmark, false,
				false, &new_epoch);
		if (ret) {
			for (uint32_t j = 0; j < np; j++)
				if (lost[j] && !op->status) {
					parity_failed(op, op->q.copies[j].io);
					break;
				}
		} else {
			atomic_fetch_add(&s->fwd->marked, nmark);
			if (!op->status) {
				/* the new epoch: the client reloads its view */
				rpc_enc_u64(op->rep, new_epoch);
				op->rep_len = 8;
			}
		}
	}
	atomic_fetch_add(op->status ? &s->fwd->failed : &s->fwd->forwarded, 1);
	srv_op_complete(op);
}

static void run_one(struct io_forward *fw, struct srv_op *op, char *buf)
{
	struct fwd w = {.s = op->s,
			.handle = op->q.handle,
			.slot = op->q.slot,
			.epoch = op->q.epoch,
			.n = op->q.ncopies,
			.failed_io = UINT32_MAX};
	uint32_t down[RPC_COPIES_MAX], ndown = 0;
	uint64_t lo, hi, cur;
	int me, ret;

	if (!copies_ok(op)) {
		log_warn(
			"rpfsd: a write of handle %016" PRIx64
			" names a copy that is not another I/O server of the cluster: refused",
			op->q.handle);
		op->status = -EINVAL;
		srv_op_complete(op);
		return;
	}
	if (op->q.flags & RPC_IO_PARITY) {
		run_parity(op, buf);
		return;
	}
	for (uint32_t c = 0; c < op->q.ncopies; c++) {
		w.cp[c].c = op->q.copies[c];
		w.cp[c].c.flags = 0;
		w.cp[c].live = !(op->q.copies[c].flags & RPC_COPY_FLAGS);
		if (op->q.copies[c].flags == RPC_COPY_DOWN)
			down[ndown++] = op->q.copies[c].slot;
	}
	/* A truncate was applied here before: its forward, after every
	 * forward running, and before any that starts, orders it with them
	 * on every copy as here. */
	if (op->q.op == RPC_IO_TRUNCATE) {
		lo = 0;
		hi = UINT64_MAX;
	} else {
		span_of(op->segs, op->q.nseg, &lo, &hi);
	}
	order_enter(fw, op->q.handle, lo, hi, &me);
	/* The datafile's epoch may have risen since the op was admitted (a
	 * resync's end, a mark by another forward): this primary stored the
	 * bytes and is not stale, so they go at its epoch now, which the
	 * copies take; at the op's they would be refused. */
	if (!io_epoch_local(op->s, op->q.handle, &cur) && cur > w.epoch) {
		w.epoch = cur;
		/* The client's view is older than this datafile's: a copy it
		 * took for stale may be whole again (a resync ended since),
		 * and must not miss this write. It gets it, without taking
		 * the epoch; if it can't, it is stale anyway. */
		for (uint32_t c = 0; c < w.n; c++)
			if (op->q.copies[c].flags & RPC_COPY_STALE) {
				w.cp[c].live = true;
				w.cp[c].maybe = true;
				w.cp[c].c.flags = RPC_COPY_STALE;
			}
	}
	if (atomic_load(&fw->nresyncs))
		join_resync(fw, &w);
	/* copies the client knows down: marked now, not waited for */
	ret = ndown ? mark_stale(&w, down, ndown) : 0;
	if (ret) {
		for (uint32_t c = 0; c < op->q.ncopies && w.failed_io == UINT32_MAX; c++)
			if (op->q.copies[c].flags == RPC_COPY_DOWN)
				w.failed_io = op->q.copies[c].io;
		if (ret != -RPC_EBEHIND)
			ret = -EREMOTEIO;
	} else if (ndown) {
		atomic_fetch_add(&fw->marked, ndown);
	}
	if (ret) {
		/* the write is not forwarded: answered with the failure */
	} else if (op->q.op == RPC_IO_TRUNCATE) {
		struct piece none = {.nseg = 0, .bytes = 0};

		ret = send_to_copies(&w, &none, buf, &op->q.size);
	} else {
		ret = forward(&w, op->segs, op->q.nseg, buf);
	}
	order_leave(fw, me);
	if (ret == -RPC_EBEHIND) {
		/* this primary is stale, or the client's view is old: it
		 * reloads its view and writes again (client/listio.c) */
		atomic_fetch_add(&fw->failed, 1);
		op->status = ret;
	} else if (ret && w.failed_io != UINT32_MAX) {
		atomic_fetch_add(&fw->failed, 1);
		/* The copy's server, not ours, is the cause, and it could not
		 * be marked stale: -EREMOTEIO, and which copy as the detail
		 * (rpc.h). */
		op->status = -EREMOTEIO;
		rpc_enc_u64(op->rep, w.failed_io);
		op->rep_len = 8;
		op->rep_on_error = true;
	} else if (ret) {
		/* ours: the read-back of what was just stored failed (the
		 * datafile removed meanwhile, a damaged block) */
		atomic_fetch_add(&fw->failed, 1);
		log_warn("rpfsd: couldn't read back a write of handle %016" PRIx64
			 " to forward it to its copies: %s",
			 op->q.handle, strerror(-ret));
		op->status = ret;
	} else {
		atomic_fetch_add(&fw->forwarded, 1);
		if (w.degraded || w.epoch > op->q.epoch) {
			/* Written, with copies marked stale (or the epoch
			 * moved meanwhile): the new epoch tells the client to
			 * reload its view. */
			rpc_enc_u64(op->rep, w.epoch);
			op->rep_len = 8;
		}
	}
	srv_op_complete(op);
}

/* ---- resync ---------------------------------------------------------------------- */

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A call from this server to the target's. */
static int call_target(struct srv *s, const struct rpc_copy *t, const void *body, int len)
{
	uint8_t rep[64];

	return io_peer_ask(s, s->cfg.io[t->io], body, len, rep, sizeof(rep), NULL, false);
}

/* The target's datafile cut (or grown) to size, its bytes kept to be
 * compared (keep) or none of them, and not whole until the resync's end
 * (RPC_FWD_RESYNC: it serves no read meanwhile); made first, not whole, if
 * its server lost it (a stale copy whose storage went). */
static int target_size(struct srv *s, const struct resync *rs, uint64_t size, bool keep)
{
	uint32_t flags = RPC_COPY_STALE | RPC_FWD_RESYNC | (keep ? RPC_FWD_KEEP : 0);
	uint8_t body[128];
	int ret;

	ret = call_target(s, &rs->target, body,
			  rpc_enc_truncate_forward(body, sizeof(body), rs->handle, size,
						   rs->target.slot, rs->epoch - 1,
						   flags));
	if (ret != -ESTALE)
		return ret;
	ret = call_target(s, &rs->target, body,
			  rpc_enc_io_create(body, sizeof(body), rs->handle,
					    ((uint64_t)mono_us() << 8) | 1,
					    rs->target.slot, RPC_IO_CREATE_INCOMPLETE));
	if (ret && ret != -EEXIST)
		return ret;
	return call_target(s, &rs->target, body,
			   rpc_enc_truncate_forward(body, sizeof(body), rs->handle, size,
						    rs->target.slot, rs->epoch - 1,
						    RPC_COPY_STALE | RPC_FWD_RESYNC));
}

/* Send to the resync's target only the RPC_DIGEST_UNITs of piece pc (one
 * segment from a multiple of the unit, read into buf) whose bytes differ
 * from its own: its digests asked for first (IO_DIGEST). A copy that was
 * away while a few writes went by gets those, not the whole datafile. When
 * the digests can't be had the whole piece goes; -EBADMSG when a unit
 * there is damaged (the resync starts again, keeping none of the
 * target's bytes: a piece written over a damaged block could fail on it).
 * The units that go are moved to the front of buf. */
static int send_changed(struct fwd *w, const struct resync *rs, const struct piece *pc,
			char *buf, uint64_t *sent)
{
	struct srv *s = w->s;
	uint8_t body[RPC_PREAMBLE + 64], rep[RPC_DIGEST_MAX * RPC_DIGEST_SIZE];
	uint8_t mine[RPC_DIGEST_SIZE];
	uint64_t off = pc->segs[0].off, len = pc->bytes;
	uint32_t n = (uint32_t)((len + RPC_DIGEST_UNIT - 1) / RPC_DIGEST_UNIT);
	struct piece diff = {.nseg = 0, .bytes = 0};
	size_t rep_len = 0;
	char *to = buf;
	int ret;

	ret = io_peer_ask(s, s->cfg.io[rs->target.io], body,
			  rpc_enc_io_digest(body, sizeof(body), rs->handle,
					    rs->target.slot, off, len),
			  rep, sizeof(rep), &rep_len, true);
	if (ret == -EBADMSG)
		return ret;
	if (ret || pc->nseg != 1 || rep_len != n * (size_t)RPC_DIGEST_SIZE) {
		*sent += pc->bytes;
		return send_piece(w, pc, buf);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t at = (uint64_t)i * RPC_DIGEST_UNIT;
		uint64_t m = len - at < RPC_DIGEST_UNIT ? len - at : RPC_DIGEST_UNIT;
		struct rpc_seg *last = diff.nseg ? &diff.segs[diff.nseg - 1] : NULL;

		rpc_digest(buf + at, m, mine);
		if (!memcmp(mine, rep + (size_t)i * RPC_DIGEST_SIZE, RPC_DIGEST_SIZE))
			continue;
		if (to != buf + at)
			memmove(to, buf + at, m);
		if (last && last->off + last->len == off + at) {
			last->len += m;
		} else {
			diff.segs[diff.nseg].off = off + at;
			diff.segs[diff.nseg].len = m;
			diff.nseg++;
		}
		to += m;
		diff.bytes += m;
	}
	atomic_fetch_add(&s->fwd->resync_same, len - diff.bytes);
	if (!diff.bytes)
		return 0;
	*sent += diff.bytes;
	return send_piece(w, &diff, buf);
}

/* Tell the file's metadata server how the resync went. */
static void report(struct srv *s, const struct resync *rs, bool ok)
{
	uint32_t meta = place_meta_of_handle(rs->handle);
	uint8_t body[RPC_PREAMBLE + 32], rep[64];

	if (meta < s->cfg.nmeta &&
	    io_peer_ask(s, s->cfg.meta[meta], body,
			rpc_enc_mirror_fresh(body, sizeof(body),
					     ok ? 0 : RPC_FRESH_FAILED, rs->handle,
					     rs->epoch, rs->slot, rs->target.slot),
			rep, sizeof(rep), NULL, false))
		log_info(
			"rpfsd: couldn't tell metadata server %s how the resync of handle "
			"%016" PRIx64 " went (it asks again)",
			s->cfg.servers[s->cfg.meta[meta]].name, rs->handle);
}

/* rs runs no more: forwards stop joining it. */
static void resync_end(struct io_forward *fw, struct resync *rs)
{
	pthread_mutex_lock(&fw->lock);
	for (int i = 0; i < IO_RESYNC_RUN; i++)
		if (fw->running[i] == rs)
			fw->running[i] = NULL;
	atomic_fetch_sub(&fw->nresyncs, 1);
	pthread_mutex_unlock(&fw->lock);
}

/* The pace of every resync from this server together (resync_mbps, as
 * many bytes a microsecond): a piece may start at pace_next, which it
 * moves on by its bytes' time. Taken outside the piece's order, so
 * forwards of its range never wait for the pace. */
static void pace(struct io_forward *fw, uint64_t bytes)
{
	uint32_t mbps = fw->s->cfg.xport.resync_mbps;
	int64_t now, at;

	if (!mbps)
		return;
	now = mono_us();
	pthread_mutex_lock(&fw->lock);
	at = fw->pace_next > now ? fw->pace_next : now;
	fw->pace_next = at + (int64_t)(bytes / mbps);
	pthread_mutex_unlock(&fw->lock);
	if (at > now) {
		struct timespec d = {(at - now) / 1000000, ((at - now) % 1000000) * 1000};

		nanosleep(&d, NULL);
	}
}

/* A piece's bytes that were not sent (found equal on the copy) given back
 * to the clock: the setting is for the network, and a unit found equal
 * costs a read on each server only. */
static void pace_refund(struct io_forward *fw, uint64_t bytes)
{
	uint32_t mbps = fw->s->cfg.xport.resync_mbps;
	int64_t now;

	if (!mbps || !bytes)
		return;
	now = mono_us();
	pthread_mutex_lock(&fw->lock);
	fw->pace_next -= (int64_t)(bytes / mbps);
	if (fw->pace_next < now)
		fw->pace_next = now;
	pthread_mutex_unlock(&fw->lock);
}

static void run_resync(struct io_forward *fw, struct resync *rs, char *buf)
{
	struct srv *s = fw->s;
	struct fwd w = {.s = s,
			.handle = rs->handle,
			.slot = rs->slot,
			.epoch = rs->epoch - 1,
			.n = 1,
			.failed_io = UINT32_MAX,
			.rs = rs};
	int64_t start = mono_us();
	uint64_t size = 0, off = 0, sent = 0, before;
	bool ok, keep = true, damaged_there = false;
	int me, ret;

	w.cp[0] = (struct fcopy){.c = rs->target, .live = true, .resync = true};
	w.cp[0].c.flags = RPC_COPY_STALE; /* not whole: its first truncate said */
again:
	/* the target as long as this datafile, with no forward running */
	order_enter(fw, rs->handle, 0, UINT64_MAX, &me);
	ret = io_size_local(s, rs->handle, &size);
	if (!ret)
		ret = target_size(s, rs, size, keep);
	order_leave(fw, me);
	while (!ret) {
		struct piece pc = {.nseg = 1};

		ret = io_size_local(s, rs->handle, &size);
		if (ret || off >= size)
			break;
		pc.segs[0].off = off;
		pc.segs[0].len =
			size - off < IO_FORWARD_PIECE ? size - off : IO_FORWARD_PIECE;
		pc.bytes = pc.segs[0].len;
		pace(fw, pc.bytes);
		before = sent;
		order_enter(fw, rs->handle, off, off + pc.bytes, &me);
		ret = read_back(&w, &pc, buf);
		if (ret) {
			/* ours: the source can't be read */
		} else if (keep) {
			ret = send_changed(&w, rs, &pc, buf, &sent);
			damaged_there = ret == -EBADMSG;
		} else {
			sent += pc.bytes;
			ret = send_piece(&w, &pc, buf);
		}
		order_leave(fw, me);
		pace_refund(fw, pc.bytes - (sent - before));
		if (!ret && !w.cp[0].live)
			ret = -EIO;
		off += pc.bytes;
	}
	if (damaged_there && keep) {
		/* a damaged unit on the target: everything again, none kept */
		log_info("rpfsd: resync of handle %016" PRIx64
			 " to I/O server %u (slot %u): damaged data there, sent whole",
			 rs->handle, rs->target.io, rs->target.slot);
		keep = false;
		off = 0;
		goto again;
	}
	/* the end: with no forward running, both take the new epoch */
	order_enter(fw, rs->handle, 0, UINT64_MAX, &me);
	pthread_mutex_lock(&fw->lock);
	ok = !ret && !rs->disturbed;
	pthread_mutex_unlock(&fw->lock);
	if (ok) {
		struct piece none = {.nseg = 0, .bytes = 0};

		w.epoch = rs->epoch;
		w.cp[0].c.flags = RPC_FWD_WHOLE; /* it takes the epoch, serves again */
		ok = !io_raise_epoch(s, rs->handle, rs->epoch) &&
		     !send_piece(&w, &none, buf) && w.cp[0].live;
	}
	resync_end(fw, rs);
	order_leave(fw, me);
	atomic_fetch_add(&fw->resync_bytes, sent);
	atomic_fetch_add(ok ? &fw->resynced : &fw->resync_failed, 1);
	if (ok)
		log_info("rpfsd: resynced handle %016" PRIx64
			 " to its copy on I/O server %u (slot %u): %" PRIu64
			 " bytes in %.1f s (sent of %" PRIu64 " compared)",
			 rs->handle, rs->target.io, rs->target.slot, sent,
			 (double)(mono_us() - start) / 1e6, off);
	else
		log_warn(
			"rpfsd: the resync of handle %016" PRIx64
			" to its copy on I/O server %u (slot %u) failed (%s): tried again "
			"later",
			rs->handle, rs->target.io, rs->target.slot,
			ret ? strerror(-ret) : "changed meanwhile");
	report(s, rs, ok);
	free(rs);
}

int serve_io_resync(struct srv_op *op)
{
	struct srv *s = op->s;
	struct io_forward *fw = s->io ? s->fwd : NULL;
	const struct rpc_copy *t = &op->q.copies[0];
	struct resync *rs;
	int ret = 0;

	if (op->q.flags & RPC_RESYNC_EC)
		return ec_resync_take(op); /* a parity member, by its own server */
	if (!fw)
		return -EOPNOTSUPP;
	if (t->io >= s->cfg.nio || (int)s->cfg.io[t->io] == s->self || !op->q.epoch)
		return -EINVAL;
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return -ENOMEM;
	rs->handle = op->q.handle;
	rs->epoch = op->q.epoch;
	rs->slot = op->q.slot;
	rs->target = *t;
	pthread_mutex_lock(&fw->lock);
	for (int i = 0; i < IO_RESYNC_RUN; i++)
		if (fw->running[i] && fw->running[i]->handle == rs->handle)
			ret = -EBUSY;
	for (struct resync *q = fw->jhead; q; q = q->next)
		if (q->handle == rs->handle)
			ret = -EBUSY;
	if (!ret && fw->jqueued >= IO_RESYNC_QUEUE)
		ret = -EBUSY;
	if (!ret) {
		if (fw->jtail)
			fw->jtail->next = rs;
		else
			fw->jhead = rs;
		fw->jtail = rs;
		fw->jqueued++;
		pthread_cond_signal(&fw->wake);
	}
	pthread_mutex_unlock(&fw->lock);
	if (ret)
		free(rs);
	return ret;
}

void io_forward_disturb(struct srv *s, uint64_t handle)
{
	struct io_forward *fw = s->fwd;

	if (!fw || !atomic_load(&fw->nresyncs))
		return;
	pthread_mutex_lock(&fw->lock);
	for (int i = 0; i < IO_RESYNC_RUN; i++)
		if (fw->running[i] && fw->running[i]->handle == handle)
			fw->running[i]->disturbed = true;
	pthread_mutex_unlock(&fw->lock);
}

/* ---- threads --------------------------------------------------------------------- */

/* Under lock: a queued resync that may run now (registered as running). */
static struct resync *take_resync(struct io_forward *fw)
{
	struct resync *rs = fw->jhead;

	for (int i = 0; rs && i < IO_RESYNC_RUN; i++) {
		if (fw->running[i])
			continue;
		fw->jhead = rs->next;
		if (!fw->jhead)
			fw->jtail = NULL;
		fw->jqueued--;
		rs->next = NULL;
		fw->running[i] = rs;
		atomic_fetch_add(&fw->nresyncs, 1);
		return rs;
	}
	return NULL;
}

static void *forwarder(void *arg)
{
	struct io_forward *fw = arg;
	char *buf = malloc(IO_FORWARD_PIECE);

	pthread_mutex_lock(&fw->lock);
	for (;;) {
		struct srv_op *op = NULL;
		struct resync *rs = NULL;

		while (!fw->head && !fw->stop && !(fw->jhead && (rs = take_resync(fw))))
			pthread_cond_wait(&fw->wake, &fw->lock);
		if (!fw->head && !rs)
			break;
		if (!rs) {
			op = fw->head;
			fw->head = op->bulk_next;
			if (!fw->head)
				fw->tail = NULL;
			op->bulk_next = NULL;
		}
		pthread_mutex_unlock(&fw->lock);
		if (rs && buf) {
			run_resync(fw, rs, buf);
		} else if (rs) {
			resync_end(fw, rs);
			report(fw->s, rs, false);
			free(rs);
		} else if (buf) {
			run_one(fw, op, buf);
		} else {
			op->status = -ENOMEM;
			srv_op_complete(op);
		}
		pthread_mutex_lock(&fw->lock);
	}
	pthread_mutex_unlock(&fw->lock);
	free(buf);
	return NULL;
}

bool io_forward_take(struct srv_op *op)
{
	struct io_forward *fw = op->s->io ? op->s->fwd : NULL;

	/* an ec write that failed midway still sends the deltas of what it
	 * stored (run_parity) */
	if ((op->q.op != RPC_IO_WRITE && op->q.op != RPC_IO_TRUNCATE) || !op->q.ncopies ||
	    op->forwarded || (op->status && !(op->q.flags & RPC_IO_PARITY)))
		return false;
	op->forwarded = true;
	if (!fw) {
		op->status = -EINVAL; /* a copies list sent to a server without role io */
		return false;
	}
	pthread_mutex_lock(&fw->lock);
	op->bulk_next = NULL;
	if (fw->tail)
		fw->tail->bulk_next = op;
	else
		fw->head = op;
	fw->tail = op;
	pthread_cond_signal(&fw->wake);
	pthread_mutex_unlock(&fw->lock);
	return true;
}

int io_forward_open(struct srv *s)
{
	struct io_forward *fw = calloc(1, sizeof(*fw));

	if (!fw)
		return -ENOMEM;
	fw->s = s;
	pthread_mutex_init(&fw->lock, NULL);
	pthread_cond_init(&fw->wake, NULL);
	pthread_cond_init(&fw->done, NULL);
	for (int i = 0; i < IO_FORWARD_THREADS; i++) {
		if (pthread_create(&fw->thr[i], NULL, forwarder, fw))
			break;
		fw->nthr++;
	}
	if (!fw->nthr) {
		free(fw);
		return -EAGAIN;
	}
	s->fwd = fw;
	return 0;
}

void io_forward_close(struct srv *s)
{
	struct io_forward *fw = s->fwd;

	if (!fw)
		return;
	pthread_mutex_lock(&fw->lock);
	fw->stop = true;
	/* queued resyncs are dropped: the metadata server asks again */
	while (fw->jhead) {
		struct resync *rs = fw->jhead;

		fw->jhead = rs->next;
		free(rs);
	}
	fw->jtail = NULL;
	pthread_cond_broadcast(&fw->wake);
	pthread_mutex_unlock(&fw->lock);
	for (int i = 0; i < fw->nthr; i++)
		pthread_join(fw->thr[i], NULL);
	pthread_cond_destroy(&fw->done);
	pthread_cond_destroy(&fw->wake);
	pthread_mutex_destroy(&fw->lock);
	free(fw);
	s->fwd = NULL;
}

void io_forward_counts(struct srv *s, struct io_forward_counts *n)
{
	struct io_forward *fw = s->fwd;

	memset(n, 0, sizeof(*n));
	if (!fw)
		return;
	n->forwarded = atomic_load(&fw->forwarded);
	n->failed = atomic_load(&fw->failed);
	n->marked = atomic_load(&fw->marked);
	n->resynced = atomic_load(&fw->resynced);
	n->resync_failed = atomic_load(&fw->resync_failed);
	n->resync_bytes = atomic_load(&fw->resync_bytes);
	n->resync_same = atomic_load(&fw->resync_same);
	n->resyncing = (uint64_t)atomic_load(&fw->nresyncs);
}
