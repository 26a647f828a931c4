/* rpfsd's request manager: who gets a worker next, and how many bulk
 * transfers each client may have running.
 *
 * Blocking work (pread/pwrite, LMDB, fdatasync, calls to other servers)
 * runs on a pool of worker threads (the server_workers setting). Each
 * connection has its own FIFO queue, and connections with work wait in a
 * ring served round-robin: a worker takes one job from the connection at
 * the head and puts the connection back at the tail, so a client with a
 * thousand queued requests delays another client's request by at most one
 * job per worker. Chunks of running bulk transfers go in a second queue
 * per connection that is served first: their request has already started,
 * and the pipeline only overlaps network and storage while chunks flow.
 *
 * Bulk pipelines take buffers from the transport's shared pool; each
 * connection may run at most server_bulk_per_conn of them at once
 * and the rest wait, in order, so one client streaming gigabytes cannot
 * take the whole pool. A pipeline is run here from start to end: the role
 * gives its chunk function once (sched_bulk), each chunk goes from the
 * transport to a worker that runs it and tells the transport it is done,
 * and the pipeline's end answers the request.
 *
 * The connection records are created, counted and freed on the progress
 * thread only (one reference per live op); the queues are shared with the
 * workers under one mutex. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "log.h"
#include "server.h"

#define SCHED_HASH	  256
#define SCHED_MAX_WORKERS XP_SERVER_WORKERS_MAX

struct sched_conn {
	struct xp_conn *conn;
	struct hnode hn; /* in sched.conns, key: conn (progress thread) */
	int refs;	 /* live ops (progress thread) */
	bool down;
	/* bulk (progress thread) */
	uint32_t active_bulk;
	struct srv_op *bulk_head, *bulk_tail;
	/* queues (under sched->lock) */
	struct sched_job *head, *tail;	 /* requests, FIFO */
	struct sched_job *uhead, *utail; /* chunks of running requests */
	bool in_ring;
	struct sched_conn *ring_next;
};

struct sched {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct sched_conn *ring_head, *ring_tail;
	bool stop;
	int nthreads;
	pthread_t thr[SCHED_MAX_WORKERS];
	struct srv *s;
	uint32_t bulk_cap;
	struct hashtab conns; /* records by connection (progress thread) */
};

struct worker_arg {
	struct srv *s;
	int index;
};

/* ---- connection records (progress thread) -------------------------------- */

struct sched_conn *sched_conn_get(struct srv *s, struct xp_conn *c)
{
	struct sched *sd = s->sched;
	struct sched_conn *sc = NULL;
	struct hnode *n;

	for (n = hashtab_lookup(&sd->conns, (uintptr_t)c); n; n = hashtab_next_dup(n)) {
		sc = hashtab_entry(n, struct sched_conn, hn);
		if (!sc->down)
			break;
	}
	if (!n) {
		sc = calloc(1, sizeof(*sc));
		if (!sc)
			return NULL;
		sc->conn = c;
		hashtab_insert(&sd->conns, &sc->hn, (uintptr_t)c);
	}
	sc->refs++;
	return sc;
}

void sched_conn_put(struct srv *s, struct sched_conn *sc)
{
	if (--sc->refs > 0)
		return;
	/* No op holds it, so no job of it is queued: the workers are done
	 * with it. A live connection keeps no record while idle either. */
	hashtab_remove(&s->sched->conns, &sc->hn);
	free(sc);
}

void sched_conn_down(struct srv *s, struct xp_conn *c)
{
	struct sched *sd = s->sched;

	if (!sd)
		return;
	/* Its ops still finish (their replies go nowhere) and release the
	 * record; marking it keeps a new connection at a reused address from
	 * sharing it. */
	for (struct hnode *n = hashtab_lookup(&sd->conns, (uintptr_t)c); n;
	     n = hashtab_next_dup(n))
		hashtab_entry(n, struct sched_conn, hn)->down = true;
}

/* ---- queues -------------------------------------------------------------- */

static void ring_add(struct sched *sd, struct sched_conn *sc)
{
	if (sc->in_ring)
		return;
	sc->in_ring = true;
	sc->ring_next = NULL;
	if (sd->ring_tail)
		sd->ring_tail->ring_next = sc;
	else
		sd->ring_head = sc;
	sd->ring_tail = sc;
}

static void job_append(struct sched_job **head, struct sched_job **tail,
		       struct sched_job *job)
{
	job->next = NULL;
	if (*tail)
		(*tail)->next = job;
	else
		*head = job;
	*tail = job;
}

void sched_submit(struct srv_op *op)
{
	struct sched *sd = op->s->sched;

	pthread_mutex_lock(&sd->lock);
	job_append(&op->sc->head, &op->sc->tail, &op->job);
	ring_add(sd, op->sc);
	pthread_cond_signal(&sd->cond);
	pthread_mutex_unlock(&sd->lock);
}

void sched_submit_urgent(struct srv_op *op, struct sched_job *job)
{
	struct sched *sd = op->s->sched;

	pthread_mutex_lock(&sd->lock);
	job_append(&op->sc->uhead, &op->sc->utail, job);
	ring_add(sd, op->sc);
	pthread_cond_signal(&sd->cond);
	pthread_mutex_unlock(&sd->lock);
}

/* Under the lock: the next job, round-robin over connections. */
static struct sched_job *take_job(struct sched *sd)
{
	struct sched_conn *sc = sd->ring_head;
	struct sched_job *job;

	if (!sc)
		return NULL;
	sd->ring_head = sc->ring_next;
	if (!sd->ring_head)
		sd->ring_tail = NULL;
	sc->in_ring = false;
	if (sc->uhead) {
		job = sc->uhead;
		sc->uhead = job->next;
		if (!sc->uhead)
			sc->utail = NULL;
	} else {
		job = sc->head;
		sc->head = job->next;
		if (!sc->head)
			sc->tail = NULL;
	}
	if (sc->head || sc->uhead)
		ring_add(sd, sc);
	return job;
}

static void *worker_main(void *arg)
{
	struct worker_arg *wa = arg;
	struct sched *sd = wa->s->sched;

	binding_worker(wa->s, wa->index);
	free(wa);
	pthread_mutex_lock(&sd->lock);
	for (;;) {
		struct sched_job *job = take_job(sd);

		if (!job) {
			if (sd->stop)
				break;
			pthread_cond_wait(&sd->cond, &sd->lock);
			continue;
		}
		pthread_mutex_unlock(&sd->lock);
		job->run(job);
		pthread_mutex_lock(&sd->lock);
	}
	pthread_mutex_unlock(&sd->lock);
	return NULL;
}

/* ---- bulk pipelines -------------------------------------------------------- */

/* A bulk chunk handed to a worker. */
struct chunk_job {
	struct sched_job job;
	struct srv_op *op;
	struct xp_chunk *ch;
};

/* Worker: the op's chunk function, then the transport hears the result. */
static void chunk_run(struct sched_job *job)
{
	struct chunk_job *cj = (struct chunk_job *)job;
	struct xp_chunk *ch = cj->ch;
	int ret = cj->op->bulk_chunk(cj->op, ch);

	free(cj);
	xp_chunk_done(ch, ret);
}

/* Progress thread: the pipeline has a chunk for storage; it goes ahead of
 * the connection's waiting requests (sched_submit_urgent). */
static void chunk_ready(struct xp_chunk *ch, void *ctx)
{
	struct srv_op *op = ctx;
	struct chunk_job *cj = malloc(sizeof(*cj));

	if (!cj) {
		xp_chunk_done(ch, -ENOMEM);
		return;
	}
	cj->job.run = chunk_run;
	cj->op = op;
	cj->ch = ch;
	sched_submit_urgent(op, &cj->job);
}

static void bulk_start(struct srv_op *op);

/* Progress thread: op's pipeline ended; the next waiting one of its
 * connection starts. */
static void bulk_done(struct srv_op *op)
{
	struct sched_conn *sc = op->sc;
	struct srv_op *next = sc->bulk_head;

	sc->active_bulk--;
	if (!next)
		return;
	sc->bulk_head = next->bulk_next;
	if (!sc->bulk_head)
		sc->bulk_tail = NULL;
	sc->active_bulk++;
	bulk_start(next);
}

/* Progress thread: after the last chunk or the first error. */
static void pipe_finish(struct xp_req *r, int status, void *ctx)
{
	struct srv_op *op = ctx;

	(void)r;
	op->status = status;
	bulk_done(op);
	srv_op_finish(op);
}

static void bulk_start(struct srv_op *op)
{
	int ret = xp_req_pipeline(op->r, chunk_ready, pipe_finish, op);

	if (ret) {
		/* Not started: the request is still ours to answer. */
		op->status = ret;
		bulk_done(op);
		srv_op_finish(op);
	}
}

void sched_bulk(struct srv_op *op, sched_chunk_fn chunk)
{
	struct sched_conn *sc = op->sc;

	op->bulk_chunk = chunk;
	if (sc->active_bulk < op->s->sched->bulk_cap) {
		sc->active_bulk++;
		bulk_start(op);
		return;
	}
	SRV_COUNT(op->s, bulk_waits);
	op->bulk_next = NULL;
	if (sc->bulk_tail)
		sc->bulk_tail->bulk_next = op;
	else
		sc->bulk_head = op;
	sc->bulk_tail = op;
}

/* ---- life cycle ------------------------------------------------------------ */

int sched_start(struct srv *s)
{
	struct sched *sd = calloc(1, sizeof(*sd));
	int ret = 0;

	if (!sd)
		return -ENOMEM;
	if (hashtab_init(&sd->conns, SCHED_HASH)) {
		free(sd);
		return -ENOMEM;
	}
	pthread_mutex_init(&sd->lock, NULL);
	pthread_cond_init(&sd->cond, NULL);
	sd->s = s;
	/* Checked with the other settings when the config was loaded. */
	sd->bulk_cap = s->cfg.xport.server_bulk_per_conn;
	s->nworkers = (int)s->cfg.xport.server_workers;
	s->sched = sd;
	for (int i = 0; i < s->nworkers; i++) {
		struct worker_arg *wa = malloc(sizeof(*wa));

		if (!wa) {
			ret = -ENOMEM;
			break;
		}
		wa->s = s;
		wa->index = i;
		ret = -pthread_create(&sd->thr[i], NULL, worker_main, wa);
		if (ret) {
			free(wa);
			break;
		}
		sd->nthreads++;
	}
	if (ret) {
		log_err("rpfsd: couldn't start %d worker threads: %s", s->nworkers,
			strerror(-ret));
		sched_stop(s);
	}
	return ret;
}

void sched_stop(struct srv *s)
{
	struct sched *sd = s->sched;

	if (!sd)
		return;
	/* Workers finish what is queued, then leave. */
	pthread_mutex_lock(&sd->lock);
	sd->stop = true;
	pthread_cond_broadcast(&sd->cond);
	pthread_mutex_unlock(&sd->lock);
	for (int i = 0; i < sd->nthreads; i++)
		pthread_join(sd->thr[i], NULL);
	/* Records of ops that never finished (a bounded shutdown gave up on
	 * them) stay allocated: the process is about to exit. */
	pthread_cond_destroy(&sd->cond);
	pthread_mutex_destroy(&sd->lock);
	hashtab_fini(&sd->conns);
	free(sd);
	s->sched = NULL;
}
