/* rpfsd's progress thread: the server fabric, request decoding and routing
 * (an op's end is in op.c).
 *
 * One thread owns the transport: it loops on xp_progress, which blocks in
 * epoll when nothing happens (an idle server uses no CPU), runs the request
 * handler below for every arrival and runs what workers hand back through
 * xp_fabric_post. The handler decodes the body (rpc_decode_req: a malformed
 * body gets -EPROTO, never a guess) and takes the op's line of the table of
 * operations (rpc_ops.h): a server without the op's role refuses it, the
 * capability is checked for what the op needs (access.c), and the op's
 * handler runs where its line says: PING at once, the in-memory lock and
 * counter ops, SEARCH and META_HANDLES here, inline on the progress thread,
 * the others on a worker through the request manager (sched.c), and the
 * data ops in io.c, which chooses between a worker job and a pipelined bulk
 * transfer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ec_hold.h"
#include "log.h"
#include "server.h"

static void reply_now(struct xp_req *r, int status)
{
	int ret = xp_req_reply(r, status, NULL, 0, 0);

	if (ret)
		log_dbg("rpfsd: reply failed: %s", strerror(-ret));
}

/* Every op's handler, from the table of operations (rpc_ops.h). */
static int (*const handlers[])(struct srv_op *op) = {
#define SRV_HANDLER(NAME, code, nm, route, body, flags, access, runs, handler)           \
	[code] = handler,
	RPC_OPS(SRV_HANDLER)
#undef SRV_HANDLER
};

/* Every op is counted by its code (struct srv_stats). */
#define SRV_COUNTED(NAME, code, ...)                                                     \
	_Static_assert(code < SRV_STAT_OPS, "RPC_" #NAME " has no request counter");
RPC_OPS(SRV_COUNTED)
#undef SRV_COUNTED

/* The worker job of an op that runs on a worker, by its route: metadata ops
 * are checked for the path's owner and the search permission of their
 * paths first (meta_run), I/O ops add the detail of damaged data (io_run). */
static void (*const run_on_worker[])(struct sched_job *job) = {
	[RPC_TO_ANY] = srv_op_run,	[RPC_TO_PATH_META] = meta_run,
	[RPC_TO_EVERY_META] = meta_run, [RPC_TO_HANDLE_META] = meta_run,
	[RPC_TO_ANY_META] = meta_run,	[RPC_TO_IO] = io_run,
};

/* Does this server have the role that serves route? */
static bool serves(const struct srv *s, enum rpc_route route)
{
	if (route == RPC_TO_ANY)
		return true;
	return route == RPC_TO_IO ? s->io != NULL : s->meta != NULL;
}

/* Run a decoded op's handler where the table says; but for the ops that run
 * at once, the server's role, the identity and the capability were checked. */
static void run(struct srv_op *op)
{
	switch (op->desc->runs) {
	case RPC_RUNS_AT_ONCE:
	case RPC_RUNS_ON_PROGRESS:
		op->status = op->handler(op);
		/* (an IO_HOLD answered later, ec_hold.c) */
		if (op->status != SRV_PENDING)
			srv_op_finish(op);
		break;
	case RPC_RUNS_STREAMED:
		io_dispatch(op);
		break;
	case RPC_RUNS_ON_WORKER:
		op->job.run = run_on_worker[op->desc->route];
		/* a truncate of a range held still waits, parked (ec_hold.c) */
		if (op->q.op == RPC_IO_TRUNCATE && !ec_hold_admit(op))
			break;
		sched_submit(op);
		break;
	}
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
	/* Room for segments only for the ops whose body has them. */
	maxseg = rpc_req_max_segs(body, blen);
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
	/* A decoded op is in the table. */
	op->desc = rpc_op_desc(op->q.op);
	op->handler = handlers[op->q.op];
	if (op->q.op < SRV_STAT_OPS)
		SRV_COUNT(s, req[op->q.op]);
	if (op->desc->runs == RPC_RUNS_AT_ONCE) {
		run(op);
		return;
	}
	if (!serves(s, op->desc->route)) {
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
	run(op);
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

		ec_hold_tick(s);
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
