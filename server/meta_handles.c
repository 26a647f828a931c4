/* Role meta's handles: the stored counter (sys "next_handle", the first
 * handle never handed out), handles reserved from it META_HANDLE_BATCH at a
 * time so it only ever grows, those skipped because an I/O server already
 * holds their datafiles, the creates in progress, and META_HANDLES, which
 * tells rpfsd --check of an I/O server which of its datafiles no entry and
 * no create in progress has. Handle making itself is placement.h's. */
#include <errno.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "log.h"
#include "meta_priv.h"
#include "meta_record.h"
#include "placement.h"

#define META_HANDLE_BATCH 64

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static const char next_key[] = "next_handle";

/* The stored counter: the first handle never handed out (0 if none). */
int meta_stored_next(struct meta *m, MDB_txn *txn, uint64_t *n)
{
	MDB_val k = {sizeof(next_key) - 1, (void *)next_key}, v;
	int rc = rec_get(txn, m->sys, REC_SYS, &k, &v);
	int ret = rc == REC_DAMAGED ? meta_damaged(m, "the handle counter")
				    : meta_lmdb_err(rc, "handle counter");

	*n = 0;
	if (ret == -ENOENT)
		return 0;
	if (!ret && v.mv_size != 8) {
		log_err("rpfsd: corrupt handle counter in %s", m->dir);
		return -EIO;
	}
	if (!ret)
		*n = get_le(v.mv_data, 8);
	return ret;
}

/* Under hlock: move the stored counter to at least min + META_HANDLE_BATCH
 * and take what lies between as the reserved range. */
static int reserve_handles(struct meta *m, uint64_t min)
{
	MDB_val k = {sizeof(next_key) - 1, (void *)next_key}, v;
	uint8_t buf[8];
	MDB_txn *txn;
	uint64_t n;
	int ret;

	ret = meta_lmdb_err(mdb_txn_begin(m->env, NULL, 0, &txn), "begin transaction");
	if (ret)
		return ret;
	ret = meta_stored_next(m, txn, &n);
	if (!ret && n < min)
		n = min;
	if (!ret && !n)
		n = 1;
	if (!ret && n > PLACE_SERIAL_MAX - META_HANDLE_BATCH)
		ret = -ENOSPC;
	if (!ret) {
		put_le(buf, n + META_HANDLE_BATCH, 8);
		v.mv_data = buf;
		v.mv_size = 8;
		ret = meta_lmdb_err(rec_put(txn, m->sys, REC_SYS, &k, &v, 0),
				    "handle counter");
	}
	if (ret) {
		mdb_txn_abort(txn);
		return ret;
	}
	ret = meta_lmdb_err(mdb_txn_commit(txn), "commit");
	if (!ret) {
		m->h_next = n;
		m->h_limit = n + META_HANDLE_BATCH;
	}
	return ret;
}

/* Wait for the start-up check of the store (it runs while we already
 * listen: the I/O servers it asks may be starting too). */
static int store_ready(struct srv *s)
{
	struct timespec tick = {0, 10 * 1000 * 1000};
	long waited = 0, limit = 4L * s->cfg.xport.timeout_ms + 10000;
	int st;

	while (!(st = atomic_load(&s->meta->store_state)) && waited < limit) {
		nanosleep(&tick, NULL);
		waited += 10;
	}
	return st > 0 ? 0 : st < 0 ? -ESHUTDOWN : -EAGAIN;
}

int meta_alloc_handle(struct srv *s, uint64_t *out)
{
	struct meta *m = s->meta;
	int ret = store_ready(s);

	if (ret)
		return ret;
	pthread_mutex_lock(&m->hlock);
	if (m->h_next == m->h_limit)
		ret = reserve_handles(m, 0);
	if (!ret)
		*out = place_handle(m->index, m->h_next++);
	pthread_mutex_unlock(&m->hlock);
	return ret;
}

/* Hand out nothing at or below past again. */
int meta_skip_handles(struct meta *m, uint64_t past)
{
	int ret = 0;

	past = place_serial(past);
	pthread_mutex_lock(&m->hlock);
	if (m->h_next <= past)
		ret = reserve_handles(m, past + 1);
	pthread_mutex_unlock(&m->hlock);
	return ret;
}

void meta_create_begin(struct meta *m, struct creating *c)
{
	pthread_mutex_lock(&m->hlock);
	c->floor = m->h_limit ? m->h_next : 0;
	c->next = m->creating;
	m->creating = c;
	pthread_mutex_unlock(&m->hlock);
}

void meta_create_end(struct meta *m, struct creating *c)
{
	pthread_mutex_lock(&m->hlock);
	for (struct creating **pp = &m->creating; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	pthread_mutex_unlock(&m->hlock);
}

/* META_HANDLES (rpfsd --check of an I/O server): the state of each handle
 * asked. A create makes its datafiles before its entry commits, so a
 * datafile without an entry is an orphan (GONE) only if no create that
 * may have its handle is still running: the creates in progress and the
 * counter are read first, the store after, so a create that ends in
 * between has committed (FILE) or failed (GONE, its datafiles orphans
 * indeed). On the progress thread: reads only, never behind a worker. */
int serve_meta_handles(struct srv_op *op)
{
	struct meta *m = op->s->meta;
	uint64_t floor = UINT64_MAX, next;
	uint8_t st[RPC_HANDLES_MAX];
	MDB_txn *txn = NULL;
	int ret, len;

	pthread_mutex_lock(&m->hlock);
	for (struct creating *c = m->creating; c; c = c->next)
		floor = c->floor < floor ? c->floor : floor;
	next = m->h_limit ? m->h_next : 0;
	pthread_mutex_unlock(&m->hlock);
	ret = meta_txn_begin(m, true, &txn);
	if (!ret && !next)
		ret = meta_stored_next(m, txn, &next);
	for (uint32_t i = 0; !ret && i < op->q.nhandles; i++) {
		uint64_t h = rpc_req_handle(&op->q, i), c = place_serial(h);
		uint8_t hk[8];
		MDB_val k = {8, hk}, v;
		int rc;

		if (place_meta_of_handle(h) != m->index) {
			st[i] = RPC_HS_NOT_MINE;
			continue;
		}
		if (c >= next) {
			st[i] = RPC_HS_NEVER;
			continue;
		}
		if (c >= floor) {
			st[i] = RPC_HS_CREATING;
			continue;
		}
		meta_put_be64(hk, h);
		rc = rec_get(txn, m->byh, REC_BYHANDLE, &k, &v);
		if (rc == REC_DAMAGED)
			st[i] = RPC_HS_DAMAGED;
		else if (rc == MDB_NOTFOUND)
			st[i] = RPC_HS_GONE;
		else if (!(ret = meta_lmdb_err(rc, "handle lookup")))
			st[i] = RPC_HS_FILE;
	}
	if (txn)
		mdb_txn_abort(txn);
	if (ret)
		return ret;
	len = rpc_enc_handle_states(op->rep, sizeof(op->rep), st, op->q.nhandles);
	if (len < 0)
		return len;
	op->rep_len = (size_t)len;
	return 0;
}
