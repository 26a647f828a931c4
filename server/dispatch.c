/* rpfsd's progress thread: the server fabric, request decoding and routing
 * (an op's end is in op.c).
 *
 * One thread owns the transport: it loops on xp_progress, which blocks in
 * epoll when nothing happens (an idle server uses no CPU), runs the request
 * handler below for every arrival and runs what workers hand back through
 * xp_fabric_post. The handler decodes the body (rpc_decode_req: a malformed
 * body gets -EPROTO, never a guess), answers PING at once, serves the
 * in-memory lock and counter ops in place, and gives everything else to the
 * request manager (sched.c) or, for I/O, to io.c, which chooses between a
 * worker job and a pipelined bulk transfer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "server.h"

static void reply_now(struct xp_req *r, int status)
{
	int ret = xp_req_reply(r, status, NULL, 0, 0);

	if (ret)
		log_dbg("rpfsd: reply failed: %s", strerror(-ret));
}

static bool is_meta_op(uint16_t op)
{
	return (op >= RPC_MKDIR && op <= RPC_STATFS_META) || op == RPC_RENAME ||
	       op == RPC_SEARCH || op == RPC_META_HANDLES;
}

static bool is_io_op(uint16_t op)
{
	return rpc_is_io_op(op);
}

static void handle(struct xp_req *r, void *arg)
{
	struct srv *s = arg;
	struct srv_op *op;
	const void *body;
	size_t blen = 0;
	uint32_t maxseg;
	int ret;

	if (atomic_load(&s->draining)) {
		reply_now(r, -ESHUTDOWN);
		return;
	}
	body = xp_req_body(r, &blen);
	op = calloc(1, sizeof(*op));
	/* Room for segments only for I/O requests (op: first u16, LE). */
	maxseg = 0;
	if (blen >= 2) {
		const uint8_t *b = body;
		uint16_t code = (uint16_t)(b[0] | b[1] << 8);

		if (code == RPC_IO_WRITE || code == RPC_IO_READ)
			maxseg = rpc_io_max_segs(blen);
	}
	if (op && maxseg)
		op->segs = calloc(maxseg, sizeof(*op->segs));
	if (!op || (maxseg && !op->segs)) {
		if (op)
			free(op);
		reply_now(r, -ENOMEM);
		return;
	}
	op->s = s;
	op->r = r;
	op->conn = xp_req_conn(r);
	atomic_fetch_add(&s->live_ops, 1);
	ret = rpc_decode_req(body, blen, &op->q, op->segs, maxseg);
	if (ret) {
		log_dbg("rpfsd: malformed request from %s: %s", xp_conn_peer(op->conn),
			strerror(-ret));
		op->status = -EPROTO;
		srv_op_finish(op);
		return;
	}
	if (op->q.op < SRV_STAT_OPS)
		SRV_COUNT(s, req[op->q.op]);
	if (op->q.op == RPC_PING) {
		srv_op_finish(op);
		return;
	}
	if ((is_meta_op(op->q.op) && !s->meta) || (is_io_op(op->q.op) && !s->io) ||
	    (!is_meta_op(op->q.op) && !is_io_op(op->q.op) && op->q.op != RPC_STATS)) {
		/* A client that picked the wrong server: say so, don't guess. */
		op->status = -EOPNOTSUPP;
		srv_op_finish(op);
		return;
	}
	ret = access_check_request(op);
	if (ret) {
		op->status = ret;
		srv_op_finish(op);
		return;
	}
	op->sc = sched_conn_get(s, op->conn);
	if (!op->sc) {
		op->status = -ENOMEM;
		srv_op_finish(op);
		return;
	}
	if (op->q.op == RPC_STATS) {
		op->job.run = stats_run;
		sched_submit(op);
	} else if (is_io_op(op->q.op)) {
		io_dispatch(op);
	} else if (meta_is_fast(op->q.op)) {
		meta_fast(op);
		srv_op_finish(op);
	} else {
		op->job.run = meta_run;
		sched_submit(op);
	}
}

static void conn_event(struct xp_conn *c, int up, void *arg)
{
	struct srv *s = arg;

	if (up) {
		log_dbg("rpfsd: connection from %s", xp_conn_peer(c));
		return;
	}
	log_dbg("rpfsd: connection from %s went down", xp_conn_peer(c));
	if (s->meta)
		meta_conn_down(s, c);
	sched_conn_down(s, c);
}

static void *progress_main(void *arg)
{
	struct srv *s = arg;
	int last_err = 0;

	binding_progress_thread(s);
	while (!atomic_load(&s->stop_progress)) {
		int ret = xp_progress(s->fab, 100);

		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -ETIMEDOUT) {
			/* Log each new error once, and never spin on a lasting one. */
			if (ret != last_err)
				log_warn("rpfsd: progress: %s", strerror(-ret));
			last_err = ret;
			usleep(1000);
		}
	}
	return NULL;
}

int srv_progress_start(struct srv *s)
{
	const char *host = s->me->address;
	int ret;

	ret = xp_fabric_open(&s->cfg.xport, XP_SERVER, &s->key, &s->fab);
	if (ret) {
		log_err("rpfsd: couldn't open the fabric (provider '%s'): %s",
			s->cfg.xport.provider[0] ? s->cfg.xport.provider : "auto",
			strerror(-ret));
		return ret;
	}
	xp_set_conn_handler(s->fab, conn_event, s);
	xp_set_hello_handler(s->fab, ident_hello, s);
	ret = xp_listen(s->fab, host, s->me->port, handle, s);
	if (ret) {
		log_err("rpfsd: couldn't listen on %s:%s: %s", host, s->me->port,
			strerror(-ret));
		/* One error for "the address is taken or not ours", whatever
		 * the provider said (rdmacm: ENODATA), so that a launcher can
		 * try other ports (exit status 3). */
		ret = -EADDRINUSE;
		goto err_close;
	}
	s->port = xp_listen_port(s->fab);
	ret = -pthread_create(&s->progress_thr, NULL, progress_main, s);
	if (ret) {
		log_err("rpfsd: couldn't start the progress thread: %s", strerror(-ret));
		goto err_close;
	}
	s->progress_running = true;
	return 0;

err_close:
	xp_fabric_close(s->fab);
	s->fab = NULL;
	return ret;
}

static void wake(void *arg)
{
	(void)arg;
}

void srv_progress_stop(struct srv *s)
{
	if (s->progress_running) {
		atomic_store(&s->stop_progress, 1);
		xp_fabric_post(s->fab, wake, NULL);
		pthread_join(s->progress_thr, NULL);
		s->progress_running = false;
	}
}
