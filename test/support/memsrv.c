/* memsrv: an in-memory test service on the xport server API (memsrv.h).
 *
 * Threads: the progress thread runs xp_progress and every handler; with
 * memsrv_opts a worker thread does the (slow) storage step and hands results
 * back with xp_chunk_done (thread-safe) or xp_fabric_post, the way a real
 * I/O server's disk threads would. The area is never registered: a server
 * moves bulk data through its buffer pool, so that is what gets exercised. */
#include "memsrv.h"
#include "testenv.h"
#include "wire.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "mraddr.h"
#include "proto.h"
#include "xport.h"

/* ---- wire format of the body ------------------------------------------- */

/* 0 op u32 | 4 zero u32 | 8 off u64 | 16 len u64 */
void memsrv_req_encode(void *buf, const struct memsrv_req *r)
{
	uint8_t *p = buf;

	memset(p, 0, MEMSRV_REQ_SIZE);
	put32(p, r->op);
	put64(p + 8, r->off);
	put64(p + 16, r->len);
}

int memsrv_req_decode(const void *buf, size_t len, struct memsrv_req *r)
{
	const uint8_t *p = buf;

	if (!buf || len < MEMSRV_REQ_SIZE)
		return -EPROTO;
	r->op = get32(p);
	r->off = get64(p + 8);
	r->len = get64(p + 16);
	return 0;
}

void memsrv_stats_encode(void *buf, const struct memsrv_stats *st)
{
	uint8_t *p = buf;

	put64(p, st->nops);
	put64(p + 8, st->puts);
	put64(p + 16, st->gets);
	put64(p + 24, st->errors);
	put64(p + 32, st->chunks);
	put64(p + 40, st->max_busy_chunks);
	put64(p + 48, st->bytes_in);
	put64(p + 56, st->bytes_out);
	put64(p + 64, st->conn_refused);
	put64(p + 72, st->conns_live);
	put64(p + 80, st->conn_bytes);
}

int memsrv_stats_decode(const void *buf, size_t len, struct memsrv_stats *st)
{
	const uint8_t *p = buf;

	if (!buf || len < MEMSRV_STATS_SIZE)
		return -EPROTO;
	st->nops = get64(p);
	st->puts = get64(p + 8);
	st->gets = get64(p + 16);
	st->errors = get64(p + 24);
	st->chunks = get64(p + 32);
	st->max_busy_chunks = get64(p + 40);
	st->bytes_in = get64(p + 48);
	st->bytes_out = get64(p + 56);
	st->conn_refused = get64(p + 64);
	st->conns_live = get64(p + 72);
	st->conn_bytes = get64(p + 80);
	return 0;
}

/* ---- server state ------------------------------------------------------ */

enum job_kind { JOB_CHUNK, JOB_REPLY };

/* One storage step for the worker: a pipeline chunk, or the delayed reply of
 * an inline/fast request whose data was already copied. */
struct job {
	struct job *next;
	enum job_kind kind;
	struct memsrv *s;
	struct xp_chunk *ch; /* JOB_CHUNK */
	struct bulk *b;
	struct xp_req *r; /* JOB_REPLY */
	int status;
	size_t rd_len;
};

/* A bulk request in the pipeline. */
struct bulk {
	struct memsrv *s;
	int put;
	uint64_t off, len;
};

struct memsrv {
	struct xp_fabric *fab;
	int port;
	char *area;
	size_t area_size;
	struct xp_mr *area_mr; /* direct mode */
	struct memsrv_opts opts;
	bool use_worker;

	pthread_t progress_thr;
	atomic_int stop;

	pthread_t worker_thr;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *head, *tail;
	bool worker_alive;
	bool worker_stop;

	atomic_uint_fast64_t nops, puts, gets, errors, chunks, max_busy, bytes_in,
		bytes_out;
	atomic_uint_fast64_t busy;
};

static void srv_reply(struct memsrv *s, struct xp_req *r, int status, const void *body,
		      size_t len, size_t rd_len)
{
	int ret;

	if (status)
		atomic_fetch_add(&s->errors, 1);
	ret = xp_req_reply(r, status, body, len, rd_len);
	/* A reply to a client that went away fails; the server carries on. */
	if (ret)
		log_dbg("memsrv: reply failed: %s", strerror(-ret));
}

/* ---- the storage step --------------------------------------------------- */

static void busy_enter(struct memsrv *s)
{
	uint_fast64_t now = atomic_fetch_add(&s->busy, 1) + 1;
	uint_fast64_t max = atomic_load(&s->max_busy);

	while (now > max && !atomic_compare_exchange_weak(&s->max_busy, &max, now))
		;
}

/* Copy one chunk between the pool buffer and the area. */
static int chunk_copy(struct bulk *b, struct xp_chunk *ch)
{
	struct memsrv *s = b->s;

	if (b->put) {
		/* The transport must never hand over bytes the client did not send. */
		if (ch->off > b->len || ch->len > b->len - ch->off)
			return -EIO;
		memcpy(s->area + b->off + ch->off, ch->buf, ch->len);
		atomic_fetch_add(&s->bytes_in, ch->len);
	} else {
		/* The room may exceed what was asked: the rest reads as zeros. */
		size_t n = ch->off < b->len ? b->len - ch->off : 0;

		if (n > ch->len)
			n = ch->len;
		memcpy(ch->buf, s->area + b->off + ch->off, n);
		memset((char *)ch->buf + n, 0, ch->len - n);
		atomic_fetch_add(&s->bytes_out, n);
	}
	atomic_fetch_add(&s->chunks, 1);
	return 0;
}

static void chunk_finish(struct bulk *b, struct xp_chunk *ch)
{
	int ret = chunk_copy(b, ch);

	atomic_fetch_sub(&b->s->busy, 1);
	xp_chunk_done(ch, ret);
}

static void posted_reply(void *arg)
{
	struct job *j = arg;

	srv_reply(j->s, j->r, j->status, NULL, 0, j->rd_len);
	free(j);
}

static void job_run(struct job *j, bool delay)
{
	if (delay && j->s->opts.delay_us)
		usleep(j->s->opts.delay_us);
	if (j->kind == JOB_CHUNK) {
		chunk_finish(j->b, j->ch);
		free(j);
		return;
	}
	/* Replies belong to the progress thread. */
	if (xp_fabric_post(j->s->fab, posted_reply, j)) {
		log_err("memsrv: cannot hand a reply back to progress");
		free(j);
	}
}

static void *worker_main(void *arg)
{
	struct memsrv *s = arg;

	for (;;) {
		struct job *j;
		bool stopping;

		pthread_mutex_lock(&s->lock);
		while (!s->head && !s->worker_stop)
			pthread_cond_wait(&s->cond, &s->lock);
		j = s->head;
		if (!j) {
			s->worker_alive = false;
			pthread_mutex_unlock(&s->lock);
			return NULL;
		}
		s->head = j->next;
		if (!s->head)
			s->tail = NULL;
		stopping = s->worker_stop;
		pthread_mutex_unlock(&s->lock);
		/* Drain quickly when stopping: nobody waits for realism then. */
		job_run(j, !stopping);
	}
}

/* Queue a job for the worker; 0, or -1 when there is no worker to take it
 * (the caller then does the step itself). */
static int job_queue(struct memsrv *s, struct job *j)
{
	int ret = -1;

	pthread_mutex_lock(&s->lock);
	if (s->worker_alive && !s->worker_stop) {
		j->next = NULL;
		if (s->tail)
			s->tail->next = j;
		else
			s->head = j;
		s->tail = j;
		pthread_cond_signal(&s->cond);
		ret = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* ---- request handling ---------------------------------------------------- */

static void pipe_chunk(struct xp_chunk *ch, void *ctx)
{
	struct bulk *b = ctx;
	struct memsrv *s = b->s;
	struct job *j;

	busy_enter(s);
	if (s->use_worker) {
		j = calloc(1, sizeof(*j));
		if (j) {
			j->kind = JOB_CHUNK;
			j->s = s;
			j->ch = ch;
			j->b = b;
			if (!job_queue(s, j))
				return;
			free(j);
		}
	}
	chunk_finish(b, ch);
}

static void pipe_finish(struct xp_req *r, int status, void *ctx)
{
	struct bulk *b = ctx;

	srv_reply(b->s, r, status, NULL, 0, status || b->put ? 0 : b->len);
	free(b);
}

/* Reply now, or after the storage delay when a worker is in use. */
static void reply_after_storage(struct memsrv *s, struct xp_req *r, int status,
				size_t rd_len)
{
	struct job *j;

	if (s->use_worker && (j = calloc(1, sizeof(*j)))) {
		j->kind = JOB_REPLY;
		j->s = s;
		j->r = r;
		j->status = status;
		j->rd_len = rd_len;
		if (!job_queue(s, j))
			return;
		free(j);
	}
	srv_reply(s, r, status, NULL, 0, rd_len);
}

static void direct_done(struct xp_req *r, int status, void *ctx)
{
	struct bulk *b = ctx;

	if (!status)
		atomic_fetch_add(b->put ? &b->s->bytes_in : &b->s->bytes_out, b->len);
	pipe_finish(r, status, b);
}

static void start_bulk(struct memsrv *s, struct xp_req *r, int put, uint64_t off,
		       uint64_t len)
{
	struct bulk *b = malloc(sizeof(*b));
	int ret;

	if (!b) {
		srv_reply(s, r, -ENOMEM, NULL, 0, 0);
		return;
	}
	b->s = s;
	b->put = put;
	b->off = off;
	b->len = len;
	if (s->area_mr) {
		void *desc = xp_mr_desc(s->area_mr);

		ret = put ? xp_req_pull(r, 0, s->area + off, len, desc, direct_done, b)
			  : xp_req_push(r, 0, s->area + off, len, desc, direct_done, b);
	} else {
		ret = xp_req_pipeline(r, pipe_chunk, pipe_finish, b);
	}
	if (ret) {
		/* Not started: finish was not called, the request is still ours. */
		free(b);
		srv_reply(s, r, ret, NULL, 0, 0);
	}
}

static void do_put(struct memsrv *s, struct xp_req *r, const struct memsrv_req *q)
{
	const void *data;

	atomic_fetch_add(&s->puts, 1);
	if (!xp_range_ok(q->off, q->len, s->area_size) || xp_req_data_len(r) != q->len ||
	    (q->len && xp_req_dir(r) != PROTO_DIR_WRITE)) {
		srv_reply(s, r, -EINVAL, NULL, 0, 0);
		return;
	}
	if (!q->len) {
		srv_reply(s, r, 0, NULL, 0, 0);
		return;
	}
	data = xp_req_wr_data(r);
	if (!data) {
		start_bulk(s, r, 1, q->off, q->len);
		return;
	}
	memcpy(s->area + q->off, data, q->len);
	atomic_fetch_add(&s->bytes_in, q->len);
	reply_after_storage(s, r, 0, 0);
}

static void do_get(struct memsrv *s, struct xp_req *r, const struct memsrv_req *q)
{
	void *buf;

	atomic_fetch_add(&s->gets, 1);
	if (!xp_range_ok(q->off, q->len, s->area_size) || q->len > xp_req_data_len(r) ||
	    (q->len && xp_req_dir(r) != PROTO_DIR_READ)) {
		srv_reply(s, r, -EINVAL, NULL, 0, 0);
		return;
	}
	if (!q->len) {
		srv_reply(s, r, 0, NULL, 0, 0);
		return;
	}
	buf = xp_req_rd_buf(r);
	if (!buf) {
		start_bulk(s, r, 0, q->off, q->len);
		return;
	}
	memcpy(buf, s->area + q->off, q->len);
	atomic_fetch_add(&s->bytes_out, q->len);
	reply_after_storage(s, r, 0, q->len);
}

static void do_stats(struct memsrv *s, struct xp_req *r)
{
	uint8_t body[MEMSRV_STATS_SIZE];
	struct memsrv_stats st;

	memsrv_get_stats(s, &st);
	memsrv_stats_encode(body, &st);
	srv_reply(s, r, 0, body, sizeof(body), 0);
}

static void handle(struct xp_req *r, void *arg)
{
	struct memsrv *s = arg;
	struct memsrv_req q;
	const void *body;
	size_t blen = 0;

	body = xp_req_body(r, &blen);
	if (memsrv_req_decode(body, blen, &q)) {
		srv_reply(s, r, -EPROTO, NULL, 0, 0);
		return;
	}
	switch (q.op) {
	case MEMSRV_NOP:
		atomic_fetch_add(&s->nops, 1);
		srv_reply(s, r, 0, NULL, 0, 0);
		break;
	case MEMSRV_PUT:
		do_put(s, r, &q);
		break;
	case MEMSRV_GET:
		do_get(s, r, &q);
		break;
	case MEMSRV_STATS:
		do_stats(s, r);
		break;
	default:
		srv_reply(s, r, -EOPNOTSUPP, NULL, 0, 0);
		break;
	}
}

/* ---- life cycle ---------------------------------------------------------- */

static void *progress_main(void *arg)
{
	struct memsrv *s = arg;
	int last_err = 0;

	while (!atomic_load(&s->stop)) {
		int ret = xp_progress(s->fab, 100);

		if (ret < 0 && ret != -EINTR && ret != -EAGAIN) {
			/* Log each new error once, and do not spin on a persistent one.
			 */
			if (ret != last_err)
				log_warn("memsrv: progress: %s", strerror(-ret));
			last_err = ret;
			usleep(1000);
		}
	}
	return NULL;
}

static void wake(void *arg)
{
	(void)arg;
}

void memsrv_get_stats(struct memsrv *s, struct memsrv_stats *st)
{
	st->nops = atomic_load(&s->nops);
	st->puts = atomic_load(&s->puts);
	st->gets = atomic_load(&s->gets);
	st->errors = atomic_load(&s->errors);
	st->chunks = atomic_load(&s->chunks);
	st->max_busy_chunks = atomic_load(&s->max_busy);
	st->bytes_in = atomic_load(&s->bytes_in);
	st->bytes_out = atomic_load(&s->bytes_out);
	if (s->fab) {
		struct xp_stats x;

		xp_fabric_stats(s->fab, &x);
		st->conn_refused = x.conn_refused;
		st->conns_live = x.conns_live;
		st->conn_bytes = x.conn_bytes;
	}
}

/* opts.refuse_hello: every client is turned away with an answer. */
static int refuse_hello(struct xp_conn *c, const void *data, size_t len, void *rep,
			size_t rep_max, size_t *rep_len, void *arg)
{
	static const char msg[] = "memsrv refuses";
	struct memsrv *s = arg;

	if (rep_max >= sizeof(msg)) {
		memcpy(rep, msg, sizeof(msg));
		*rep_len = sizeof(msg);
	}
	return s->opts.refuse_hello;
}

int memsrv_start_opts(const struct xp_params *p, size_t area_size,
		      const struct memsrv_opts *o, struct memsrv **out)
{
	struct xp_params defaults;
	struct memsrv *s;
	const char *addr;
	int ret;

	if (!p) {
		xp_params_default(&defaults);
		ret = xp_params_from_env(&defaults);
		if (ret)
			return ret;
		p = &defaults;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (o)
		s->opts = *o;
	s->use_worker = s->opts.worker || s->opts.delay_us;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->area_size = area_size;
	/* Anonymous memory: zero-filled, and untouched pages cost nothing. */
	s->area = mmap(NULL, area_size ? area_size : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->area == MAP_FAILED) {
		ret = -errno;
		log_err("memsrv: cannot map a %zu byte area: %s", area_size,
			strerror(-ret));
		goto err_free;
	}
	ret = xp_fabric_open(p, XP_SERVER, s->opts.key ? s->opts.key : test_key(),
			     &s->fab);
	if (ret) {
		log_err("memsrv: cannot open the fabric: %s", strerror(-ret));
		goto err_unmap;
	}
	addr = s->opts.addr ? s->opts.addr : test_addr();
	if (s->opts.refuse_hello)
		xp_set_hello_handler(s->fab, refuse_hello, s);
	ret = xp_listen(s->fab, addr, "0", handle, s);
	if (ret) {
		log_err("memsrv: cannot listen on %s: %s", addr, strerror(-ret));
		goto err_close;
	}
	s->port = xp_listen_port(s->fab);
	if (o && o->direct) {
		ret = xp_mr_reg(s->fab, s->area, s->area_size ? s->area_size : 1,
				&s->area_mr);
		if (ret) {
			log_err("memsrv: cannot register the area: %s", strerror(-ret));
			goto err_close;
		}
	}
	if (s->use_worker) {
		s->worker_alive = true;
		ret = -pthread_create(&s->worker_thr, NULL, worker_main, s);
		if (ret) {
			s->worker_alive = false;
			goto err_close;
		}
	}
	ret = -pthread_create(&s->progress_thr, NULL, progress_main, s);
	if (ret)
		goto err_worker;
	*out = s;
	return 0;

err_worker:
	if (s->use_worker) {
		pthread_mutex_lock(&s->lock);
		s->worker_stop = true;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->worker_thr, NULL);
	}
err_close:
	xp_mr_dereg(s->area_mr);
	xp_fabric_close(s->fab);
err_unmap:
	munmap(s->area, area_size ? area_size : 1);
err_free:
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return ret;
}

int memsrv_start(const struct xp_params *p, size_t area_size, struct memsrv **out)
{
	return memsrv_start_opts(p, area_size, NULL, out);
}

int memsrv_port(struct memsrv *s)
{
	return s->port;
}

void *memsrv_area(struct memsrv *s, size_t *size)
{
	if (size)
		*size = s->area_size;
	return s->area;
}

void memsrv_stop(struct memsrv *s)
{
	if (!s)
		return;
	/* The worker first, while progress still runs the replies it posts. */
	if (s->use_worker) {
		pthread_mutex_lock(&s->lock);
		s->worker_stop = true;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->worker_thr, NULL);
	}
	atomic_store(&s->stop, 1);
	xp_fabric_post(s->fab, wake, NULL);
	pthread_join(s->progress_thr, NULL);
	/* Run what was posted after the loop's last turn; we are the only
	 * thread driving the fabric now. */
	xp_progress(s->fab, 0);
	xp_mr_dereg(s->area_mr); /* before its domain goes */
	xp_fabric_close(s->fab);
	munmap(s->area, s->area_size ? s->area_size : 1);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int memsrv_run_forever_opts(const struct xp_params *p, size_t area_size,
			    const struct memsrv_opts *o, int out_fd)
{
	struct memsrv *s;
	sigset_t set, old;
	char line[32];
	int ret, sig;

	/* Block the stop signals before any thread exists, so that every
	 * thread inherits the mask and sigwait below is the only taker. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	/* A client that vanishes must not kill the server through a write. */
	signal(SIGPIPE, SIG_IGN);

	ret = memsrv_start_opts(p, area_size, o, &s);
	if (ret)
		goto out;
	snprintf(line, sizeof(line), "port %d\n", s->port);
	ret = write_all(out_fd, line, strlen(line));
	if (ret) {
		memsrv_stop(s);
		goto out;
	}
	do {
		ret = sigwait(&set, &sig);
	} while (ret == EINTR);
	memsrv_stop(s);
	ret = 0;
out:
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

int memsrv_run_forever(const struct xp_params *p, size_t area_size, int out_fd)
{
	return memsrv_run_forever_opts(p, area_size, NULL, out_fd);
}
