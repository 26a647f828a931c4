/* Role meta's start-up check: an empty store must not hand out handles an
 * I/O server already holds datafiles of (a lost or replaced store would
 * otherwise share them between files). A store that never handed out a
 * handle asks every I/O server (IO_PROBE), waiting for those that start
 * with it, and refuses to start if any holds some or can't be asked,
 * unless --accept-empty-metadata; no handle is handed out before the check
 * passed (meta_handles.c waits for it). */
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "meta_priv.h"

struct probe_state {
	int st; /* 0 answered, 1 not yet (unreachable so far), <0 refused */
	struct rpc_probe p;
};

/* SIGTERM or SIGINT waiting (main blocks them until it sigwaits)? */
static bool stop_asked(void)
{
	sigset_t pending;

	return !sigpending(&pending) && (sigismember(&pending, SIGTERM) == 1 ||
					 sigismember(&pending, SIGINT) == 1);
}

/* A call that failed for want of an answer (a connection refused, reset
 * or timed out while the server starts with us) rather than with the
 * server's own refusal: asked again until timeout_ms. Taking it for a
 * refusal made a new cluster's metadata server refuse to start now and
 * then, when an I/O server starting beside it dropped the first call. */
static bool unanswered(int status)
{
	switch (-status) {
	case ETIMEDOUT:
	case ECONNRESET:
	case ECONNREFUSED:
	case ECONNABORTED:
	case ENOTCONN:
	case EPIPE:
	case EHOSTDOWN:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case ESHUTDOWN:
	case EAGAIN:
		return true;
	default:
		return false;
	}
}

/* Ask every I/O server for datafiles of our handles, retrying those that
 * cannot be reached (they may be starting with us) until timeout_ms, or
 * until we are told to stop (false then). */
static bool probe_all(struct srv *s, struct probe_state *ps)
{
	uint32_t nio = s->cfg.nio, left;
	struct timespec pause = {0, 100 * 1000 * 1000};
	struct timespec t0, now;
	uint32_t *servers = calloc(nio, sizeof(*servers)),
		 *which = calloc(nio, sizeof(*which));
	struct xp_call *calls = calloc(nio, sizeof(*calls));
	uint8_t(*rep)[RPC_PROBE_SIZE] = calloc(nio, sizeof(*rep));
	bool *down = calloc(nio, sizeof(*down));
	uint8_t body[32];
	int len = rpc_enc_io_probe(body, sizeof(body), s->meta->index);
	bool ret = true;

	for (uint32_t i = 0; i < nio; i++)
		ps[i].st = 1;
	if (!servers || !which || !calls || !rep || !down || len < 0)
		goto out;
	peer_waiting(s, true); /* they start with us: an expected wait */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		uint32_t n = 0;

		for (uint32_t i = 0; i < nio; i++) {
			if (ps[i].st != 1)
				continue;
			if ((int)s->cfg.io[i] == s->self && s->io) {
				ps[i].st = io_probe(s, s->meta->index, &ps[i].p);
				continue;
			}
			memset(&calls[n], 0, sizeof(calls[n]));
			calls[n].req = body;
			calls[n].req_len = (size_t)len;
			calls[n].rep = rep[n];
			calls[n].rep_max = sizeof(rep[n]);
			servers[n] = s->cfg.io[i];
			which[n++] = i;
		}
		if (n)
			peer_call_all(s, servers, calls, down, (int)n, NULL, NULL);
		left = 0;
		for (uint32_t k = 0; k < n; k++) {
			struct probe_state *p = &ps[which[k]];

			if (!calls[k].status)
				p->st = rpc_dec_probe(rep[k], calls[k].rep_len, &p->p)
						? -EPROTO
						: 0;
			else if (!down[k] && !unanswered(calls[k].status))
				p->st = calls[k].status;
			else
				left++;
		}
		if (left && stop_asked()) {
			ret = false;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!left || (now.tv_sec - t0.tv_sec) * 1000 +
					     (now.tv_nsec - t0.tv_nsec) / 1000000 >=
				     s->cfg.xport.timeout_ms)
			break;
		nanosleep(&pause, NULL);
		if (pause.tv_nsec < 800 * 1000 * 1000)
			pause.tv_nsec *= 2;
	}
	peer_waiting(s, false);
out:
	free(servers);
	free(which);
	free(calls);
	free(rep);
	free(down);
	return ret;
}

static size_t io_desc(struct srv *s, uint32_t i, char *buf, size_t len)
{
	const struct rpfs_server_cfg *sc = &s->cfg.servers[s->cfg.io[i]];

	return (size_t)snprintf(buf, len, "io server %u (%s:%s)", i, sc->address,
				sc->port);
}

int meta_check_store(struct srv *s, bool accept_empty, char *why, size_t whylen)
{
	struct meta *m = s->meta;
	struct probe_state *ps;
	uint64_t next = 0, max = 0;
	size_t used = 0;
	int held = 0, unknown = 0, ret;
	MDB_txn *txn;

	ret = meta_txn_begin(m, true, &txn);
	if (!ret) {
		ret = meta_stored_next(m, txn, &next);
		mdb_txn_abort(txn);
	}
	if (ret) {
		snprintf(why, whylen, "couldn't read the handle counter in %s: %s",
			 m->dir, strerror(-ret));
		return ret;
	}
	if (next) {
		atomic_store(&m->store_state, 1);
		return 0;
	}
	/* Never handed out a handle: a new cluster, or a store that was lost
	 * while the I/O servers kept the datafiles of its files. */
	ps = calloc(s->cfg.nio ? s->cfg.nio : 1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	if (!probe_all(s, ps)) {
		snprintf(
			why, whylen,
			"stopped while asking the I/O servers about its empty metadata store");
		free(ps);
		atomic_store(&m->store_state, -1);
		return -ESHUTDOWN;
	}
	for (uint32_t i = 0; i < s->cfg.nio; i++) {
		if (!ps[i].st && (ps[i].p.count || ps[i].p.max_handle)) {
			held++;
			if (ps[i].p.max_handle > max)
				max = ps[i].p.max_handle;
		}
		unknown += ps[i].st != 0;
	}
	if ((held || unknown) && !accept_empty) {
		used = (size_t)snprintf(why, whylen,
					"the metadata store in %s is empty, but", m->dir);
		for (uint32_t i = 0; i < s->cfg.nio && used < whylen; i++) {
			if (ps[i].st == 0 && !ps[i].p.count && !ps[i].p.max_handle)
				continue;
			used += (size_t)snprintf(why + used, whylen - used, " ");
			used += io_desc(s, i, why + used,
					used < whylen ? whylen - used : 0);
			if (used >= whylen)
				break;
			if (ps[i].st == 0)
				used += (size_t)snprintf(
					why + used, whylen - used,
					" holds %" PRIu64
					" datafiles of its files (handles up to %#" PRIx64
					");",
					ps[i].p.count, ps[i].p.max_handle);
			else
				used += (size_t)snprintf(
					why + used, whylen - used,
					" %s, so it can't be checked for them;",
					ps[i].st == 1 ? "did not answer"
						      : "couldn't be asked");
		}
		if (used < whylen)
			snprintf(
				why + used, whylen - used,
				held ? " the store was lost or replaced, and new files would reuse those handles. Restore the store from a backup, or start with --accept-empty-metadata to begin an empty namespace (the old datafiles stay, unused)"
				     : " start the I/O servers (with this one), or start with --accept-empty-metadata");
		free(ps);
		atomic_store(&m->store_state, -1);
		return -ESTALE;
	}
	if (held || unknown)
		log_warn(
			"rpfsd: metadata store in %s is empty; %d I/O servers hold datafiles of its handles, %d could not be asked: starting anyway (--accept-empty-metadata), new handles start after %#" PRIx64,
			m->dir, held, unknown, max);
	free(ps);
	/* From now on the store is not empty: restarts need not ask again. */
	ret = meta_skip_handles(m, max);
	if (ret) {
		snprintf(why, whylen, "couldn't store the handle counter in %s: %s",
			 m->dir, strerror(-ret));
		atomic_store(&m->store_state, -1);
		return ret;
	}
	atomic_store(&m->store_state, 1);
	return 0;
}
