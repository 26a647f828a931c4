/* An op's end: its reply, and the hand-back from the worker that ran it;
 * the ops of no role (PING; STATS is in stats.c).
 *
 * An op (struct srv_op) is one request from decoding (dispatch.c) to its
 * reply. Whoever finishes it on the progress thread calls srv_op_finish;
 * a worker calls srv_op_complete, which posts the finish to the progress
 * thread (the transport is driven there). Also the server's clock. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ec_hold.h"
#include "io_forward.h"
#include "mirror_dirty.h"
#include "log.h"
#include "server.h"

int64_t srv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void op_free(struct srv_op *op)
{
	struct srv *s = op->s;

	if (op->sc)
		sched_conn_put(s, op->sc);
	free(op->segs);
	free(op->seg_end);
	mirror_dirty_release(s, op);
	ec_hold_write_done(op);
	io_write_free(op);
	free(op);
	atomic_fetch_sub(&s->live_ops, 1);
}

/* A damaged-data reply names the datafile offset (rpc.h) that io.c noted
 * in bad_plus1, whichever path (one job or a bulk pipeline) the op took. */
static void set_detail(struct srv_op *op)
{
	uint64_t bad = atomic_load(&op->bad_plus1);

	if (op->status == -EBADMSG && bad) {
		rpc_enc_u64(op->rep, bad - 1);
		op->rep_len = 8;
		op->rep_on_error = true;
	}
}

void srv_op_finish(struct srv_op *op)
{
	int ret;

	/* A mirrored write is answered once its copies have it. */
	if (io_forward_take(op))
		return;
	set_detail(op);
	/* A failed op answers with no data; its body only if it set one on
	 * purpose (the detail of a damaged read: rpc.h). */
	if (op->status) {
		SRV_COUNT(op->s, errors);
		op->rd_len = 0;
		if (!op->rep_on_error)
			op->rep_len = 0;
	}
	ret = xp_req_reply(op->r, op->status, op->rep, op->rep_len, op->rd_len);
	/* A client that went away cannot be answered; the server carries on. */
	if (ret)
		log_dbg("rpfsd: reply to op %u failed: %s", op->q.op, strerror(-ret));
	op_free(op);
}

static void op_posted(void *arg)
{
	srv_op_finish(arg);
}

void srv_op_complete(struct srv_op *op)
{
	int ret = xp_fabric_post(op->s->fab, op_posted, op);

	/* Only fails without memory for the hand-off; the reply path takes
	 * the transport lock itself, so answering from here is still safe. */
	if (ret) {
		log_err("rpfsd: couldn't hand a reply to the progress thread: %s",
			strerror(-ret));
		srv_op_finish(op);
	}
}

void srv_op_run(struct sched_job *job)
{
	struct srv_op *op = (struct srv_op *)job;

	op->status = op->handler(op);
	srv_op_complete(op);
}

/* PING: answered on arrival, with nothing (a client's liveness check);
 * -EAGAIN while the server is starting (struct srv's ready). */
int serve_ping(struct srv_op *op)
{
	return atomic_load(&op->s->ready) ? 0 : -EAGAIN;
}
