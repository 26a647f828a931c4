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
 * A copy that cannot be written fails the write with -EREMOTEIO and the
 * copy's I/O index as the reply's detail (rpc.h), so the client names the
 * server; the bytes on the primary stay (a failed write's bytes are
 * unspecified, as in POSIX). Writing on while a copy is down and resyncing
 * it later (issue 29) is not done yet. */
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
	atomic_uint_fast64_t forwarded, failed;
};

/* One piece's calls, one per copy. */
struct piece {
	struct rpc_seg segs[64];
	uint32_t nseg;
	uint64_t bytes;
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

/* Send one piece to every copy; on failure *failed_io is the copy's I/O
 * index. */
static int send_piece(struct srv_op *op, const struct piece *pc, char *buf,
		      uint32_t *failed_io)
{
	struct srv *s = op->s;
	uint32_t n = op->q.ncopies;
	struct xp_call calls[RPC_COPIES_MAX];
	uint32_t servers[RPC_COPIES_MAX] = {0};
	bool transport[RPC_COPIES_MAX];
	uint8_t body[RPC_COPIES_MAX][RPC_PREAMBLE + 48 + 64 * RPC_SEG_SIZE + 64];
	uint8_t rep[RPC_COPIES_MAX][16];
	struct iovec iov = {buf, (size_t)pc->bytes};
	int ret;

	memset(calls, 0, sizeof(calls));
	for (uint32_t c = 0; c < n; c++) {
		int len = rpc_enc_io_slot(body[c], sizeof(body[c]), RPC_IO_WRITE,
					  op->q.handle, NULL, pc->segs, pc->nseg,
					  op->q.copies[c].slot);

		if (len < 0)
			return len;
		servers[c] = s->cfg.io[op->q.copies[c].io];
		calls[c].req = body[c];
		calls[c].req_len = (size_t)len;
		calls[c].wr_iov = &iov;
		calls[c].wr_cnt = 1;
		calls[c].rep = rep[c];
		calls[c].rep_max = sizeof(rep[c]);
		calls[c].path = XP_PATH_AUTO;
	}
	ret = peer_call_all(s, servers, calls, transport, (int)n, NULL, NULL);
	if (!ret)
		return 0;
	for (uint32_t c = 0; c < n; c++) {
		if (!calls[c].status)
			continue;
		*failed_io = op->q.copies[c].io;
		log_warn("rpfsd: couldn't forward a write of handle %016" PRIx64
			 " to its copy on I/O server %u (%s, slot %u): %s",
			 op->q.handle, op->q.copies[c].io,
			 s->cfg.servers[servers[c]].name, op->q.copies[c].slot,
			 strerror(-calls[c].status));
		return calls[c].status;
	}
	return ret;
}

/* Forward op's segments, piece by piece. */
static int forward(struct srv_op *op, char *buf, uint32_t *failed_io)
{
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
					ret = send_piece(op, &pc, buf, failed_io);
				pc.nseg = 0;
				pc.bytes = 0;
			}
		}
	}
	if (!ret && pc.nseg) {
		ret = read_back(op, &pc, buf);
		if (!ret)
			ret = send_piece(op, &pc, buf, failed_io);
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
	uint32_t failed_io = UINT32_MAX;
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
	order_enter(fw, op, &me);
	ret = forward(op, buf, &failed_io);
	order_leave(fw, me);
	if (ret && failed_io != UINT32_MAX) {
		atomic_fetch_add(&fw->failed, 1);
		/* The copy's server, not ours, is the cause: -EREMOTEIO, and
		 * which copy as the detail (rpc.h). */
		op->status = -EREMOTEIO;
		rpc_enc_u64(op->rep, failed_io);
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

void io_forward_counts(struct srv *s, uint64_t *forwarded, uint64_t *failed)
{
	struct io_forward *fw = s->fwd;

	*forwarded = fw ? atomic_load(&fw->forwarded) : 0;
	*failed = fw ? atomic_load(&fw->failed) : 0;
}
