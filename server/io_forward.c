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
 * -EREMOTEIO, the copy's I/O index as the reply's detail (rpc.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "io_forward.h"
#include "log.h"
#include "server.h"

#define IO_FORWARD_THREADS 4
#define IO_FORWARD_PIECE   (2u << 20)

/* A forward running: its datafile and span [lo, hi). */
struct active {
	uint64_t handle, lo, hi;
	bool used;
};

struct io_forward {
	struct srv *s;
	pthread_mutex_t lock; /* queue, stop */
	pthread_cond_t wake;
	struct srv_op *head, *tail; /* queued ops, linked by bulk_next */
	bool stop;
	pthread_t thr[IO_FORWARD_THREADS];
	int nthr;
	/* the forwards running, one per thread at most (under lock); a
	 * thread whose span overlaps one waits on done */
	struct active run[IO_FORWARD_THREADS];
	pthread_cond_t done;
	atomic_uint_fast64_t forwarded, failed, marked;
};

/* One piece's calls, one per copy. */
struct piece {
	struct rpc_seg segs[64];
	uint32_t nseg;
	uint64_t bytes;
};

/* One write's forward: the epoch it carries (raised by its own marks), the
 * copies still written to (not stale), what failed. */
struct fwd {
	struct srv_op *op;
	uint64_t epoch;
	bool live[RPC_COPIES_MAX];
	bool degraded;	    /* a copy was marked stale on the way */
	uint32_t failed_io; /* the copy whose failure failed the write */
};

static int read_back(struct srv_op *op, const struct piece *pc, char *buf)
{
	char *at = buf;

	for (uint32_t i = 0; i < pc->nseg; i++) {
		int ret = io_read_local(op->s, op->q.handle, at, pc->segs[i].len,
					pc->segs[i].off);

		if (ret)
			return ret;
		at += pc->segs[i].len;
	}
	return 0;
}

/* Ask the file's metadata server to mark copies stale[0..n) (slots) stale:
 * they missed a write this primary stored. Its answer is the file's new
 * mirror epoch, which this datafile takes before the write is answered;
 * -RPC_EBEHIND if the metadata server has this primary marked stale. */
static int mark_stale(struct fwd *w, const uint32_t *stale, uint32_t n)
{
	struct srv_op *op = w->op;
	struct srv *s = op->s;
	uint32_t meta = place_meta_of_handle(op->q.handle);
	uint8_t body[RPC_PREAMBLE + 24 + 4 * RPC_COPIES_MAX];
	uint8_t rep[12 + 4 * RPC_STALE_MAX];
	uint32_t slots[RPC_STALE_MAX], ns;
	struct xp_call call;
	uint64_t epoch;
	int len, ret;

	if (meta >= s->cfg.nmeta)
		return -EINVAL;
	len = rpc_enc_mirror_stale(body, sizeof(body), op->q.handle, w->epoch, op->q.slot,
				   stale, n);
	if (len < 0)
		return len;
	memset(&call, 0, sizeof(call));
	call.req = body;
	call.req_len = (size_t)len;
	call.rep = rep;
	call.rep_max = sizeof(rep);
	ret = peer_call(s, s->cfg.meta[meta], &call);
	if (ret) {
		log_warn("rpfsd: couldn't mark the copies of handle %016" PRIx64
			 " that missed a write stale on metadata server %s: %s",
			 op->q.handle, s->cfg.servers[s->cfg.meta[meta]].name,
			 strerror(-ret));
		return ret;
	}
	if (rpc_dec_view(rep, call.rep_len, &epoch, slots, &ns) || epoch <= w->epoch)
		return -EPROTO;
	ret = io_raise_epoch(s, op->q.handle, epoch);
	if (ret)
		return ret;
	w->epoch = epoch;
	w->degraded = true;
	return 0;
}

/* Send one piece to every live copy. A copy that fails is marked stale and
 * written to no more; the others get the piece again with the new epoch
 * (they take it, so that a primary still at the old one is refused). 0 when
 * every copy that was not marked has it. */
static int send_piece(struct fwd *w, const struct piece *pc, char *buf)
{
	struct srv_op *op = w->op;
	struct srv *s = op->s;
	uint32_t n = op->q.ncopies;
	struct xp_call calls[RPC_COPIES_MAX];
	uint32_t servers[RPC_COPIES_MAX] = {0}, which[RPC_COPIES_MAX];
	uint32_t stale[RPC_COPIES_MAX], nstale = 0;
	bool transport[RPC_COPIES_MAX];
	uint8_t body[RPC_COPIES_MAX][RPC_PREAMBLE + 48 + 64 * RPC_SEG_SIZE + 64];
	uint8_t rep[RPC_COPIES_MAX][16];
	struct iovec iov = {buf, (size_t)pc->bytes};
	int k = 0, ret;

	memset(calls, 0, sizeof(calls));
	for (uint32_t c = 0; c < n; c++) {
		int len;

		if (!w->live[c])
			continue;
		len = rpc_enc_io_forward(body[k], sizeof(body[k]), op->q.handle, pc->segs,
					 pc->nseg, op->q.copies[c].slot, w->epoch, 0);
		if (len < 0)
			return len;
		which[k] = c;
		servers[k] = s->cfg.io[op->q.copies[c].io];
		calls[k].req = body[k];
		calls[k].req_len = (size_t)len;
		calls[k].wr_iov = &iov;
		calls[k].wr_cnt = 1;
		calls[k].rep = rep[k];
		calls[k].rep_max = sizeof(rep[k]);
		calls[k].path = XP_PATH_AUTO;
		k++;
	}
	if (!k || !peer_call_all(s, servers, calls, transport, k, NULL, NULL))
		return 0;
	for (int i = 0; i < k; i++) {
		uint32_t c = which[i];

		if (!calls[i].status)
			continue;
		if (calls[i].status == -RPC_EBEHIND) {
			/* this primary's view is older than the copy's */
			w->failed_io = op->q.copies[c].io;
			return -RPC_EBEHIND;
		}
		log_warn(
			"rpfsd: couldn't forward a write of handle %016" PRIx64
			" to its copy on I/O server %u (%s, slot %u): %s; marking it stale",
			op->q.handle, op->q.copies[c].io, s->cfg.servers[servers[i]].name,
			op->q.copies[c].slot, strerror(-calls[i].status));
		w->live[c] = false;
		stale[nstale++] = op->q.copies[c].slot;
		if (w->failed_io == UINT32_MAX)
			w->failed_io = op->q.copies[c].io;
	}
	ret = mark_stale(w, stale, nstale);
	if (ret)
		return ret == -RPC_EBEHIND ? ret : -EREMOTEIO;
	atomic_fetch_add(&s->fwd->marked, nstale);
	/* the survivors take the new epoch */
	return send_piece(w, pc, buf);
}

/* Forward op's segments, piece by piece. */
static int forward(struct fwd *w, char *buf)
{
	struct srv_op *op = w->op;
	struct piece pc = {.nseg = 0, .bytes = 0};
	int ret = 0;

	for (uint32_t i = 0; i < op->q.nseg && !ret; i++) {
		uint64_t off = op->segs[i].off, left = op->segs[i].len;

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
				ret = read_back(op, &pc, buf);
				if (!ret)
					ret = send_piece(w, &pc, buf);
				pc.nseg = 0;
				pc.bytes = 0;
			}
		}
	}
	if (!ret && pc.nseg) {
		ret = read_back(op, &pc, buf);
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

/* The span of op's segments. */
static void span_of(const struct srv_op *op, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	for (uint32_t i = 0; i < op->q.nseg; i++) {
		if (op->segs[i].off < *lo)
			*lo = op->segs[i].off;
		if (op->segs[i].off + op->segs[i].len > *hi)
			*hi = op->segs[i].off + op->segs[i].len;
	}
}

/* Wait until no running forward of op's datafile overlaps its span, then
 * run it (slot *me of fw->run). */
static void order_enter(struct io_forward *fw, const struct srv_op *op, int *me)
{
	uint64_t lo, hi;
	bool clash;

	span_of(op, &lo, &hi);
	pthread_mutex_lock(&fw->lock);
	do {
		clash = false;
		for (int i = 0; i < IO_FORWARD_THREADS; i++) {
			const struct active *a = &fw->run[i];

			if (a->used && a->handle == op->q.handle && a->lo < hi &&
			    lo < a->hi)
				clash = true;
		}
		if (clash)
			pthread_cond_wait(&fw->done, &fw->lock);
	} while (clash);
	for (*me = 0; fw->run[*me].used; (*me)++)
		;
	fw->run[*me] = (struct active){op->q.handle, lo, hi, true};
	pthread_mutex_unlock(&fw->lock);
}

static void order_leave(struct io_forward *fw, int me)
{
	pthread_mutex_lock(&fw->lock);
	fw->run[me].used = false;
	pthread_cond_broadcast(&fw->done);
	pthread_mutex_unlock(&fw->lock);
}

static void run_one(struct io_forward *fw, struct srv_op *op, char *buf)
{
	struct fwd w = {.op = op, .epoch = op->q.epoch, .failed_io = UINT32_MAX};
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
	for (uint32_t c = 0; c < op->q.ncopies; c++)
		w.live[c] = !(op->q.copies[c].flags & RPC_COPY_STALE);
	order_enter(fw, op, &me);
	ret = forward(&w, buf);
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
		if (w.degraded) {
			/* Written, with copies marked stale: the new epoch
			 * tells the client to reload its view. */
			rpc_enc_u64(op->rep, w.epoch);
			op->rep_len = 8;
		}
	}
	srv_op_complete(op);
}

static void *forwarder(void *arg)
{
	struct io_forward *fw = arg;
	char *buf = malloc(IO_FORWARD_PIECE);

	pthread_mutex_lock(&fw->lock);
	for (;;) {
		struct srv_op *op;

		while (!fw->head && !fw->stop)
			pthread_cond_wait(&fw->wake, &fw->lock);
		if (!fw->head)
			break;
		op = fw->head;
		fw->head = op->bulk_next;
		if (!fw->head)
			fw->tail = NULL;
		op->bulk_next = NULL;
		pthread_mutex_unlock(&fw->lock);
		if (buf) {
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

	if (op->q.op != RPC_IO_WRITE || !op->q.ncopies || op->forwarded || op->status)
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

void io_forward_counts(struct srv *s, uint64_t *forwarded, uint64_t *failed,
		       uint64_t *marked)
{
	struct io_forward *fw = s->fwd;

	*forwarded = fw ? atomic_load(&fw->forwarded) : 0;
	*failed = fw ? atomic_load(&fw->failed) : 0;
	*marked = fw ? atomic_load(&fw->marked) : 0;
}
