/* Role meta's byte-range locks and fetch-and-add counters (shared file
 * pointers). They live in memory, per handle: a restart loses them with the
 * connections that held them. Served on the progress thread without
 * waiting: a conflicting LOCK gets -EAGAIN and the client retries with
 * backoff; all locks of a connection go when it goes down. */
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "hashtab.h"
#include "log.h"
#include "meta_priv.h"
#include "meta_record.h"
#include "placement.h"

/* Under m->lock. */
static struct hent *hent_find(struct meta *m, uint64_t handle, bool create)
{
	struct hnode *n = hashtab_lookup(&m->hents, handle);
	struct hent *e;

	if (n)
		return hashtab_entry(n, struct hent, hn);
	if (!create)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	hashtab_insert(&m->hents, &e->hn, handle);
	return e;
}

/* Under m->lock: free an entry that holds nothing. */
static void hent_maybe_free(struct meta *m, struct hent *e)
{
	if (e->counter || e->locks)
		return;
	hashtab_remove(&m->hents, &e->hn);
	free(e);
}

void meta_drop_hent(struct meta *m, uint64_t handle)
{
	struct hent *e;

	pthread_mutex_lock(&m->lock);
	e = hent_find(m, handle, false);
	if (e) {
		while (e->locks) {
			struct lock *l = e->locks;

			e->locks = l->next;
			free(l);
		}
		e->counter = 0;
		hent_maybe_free(m, e);
	}
	pthread_mutex_unlock(&m->lock);
}

/* The handle must be a file this server knows: counters and locks are not
 * handed out for made-up handles. */
static int handle_known(struct meta *m, uint64_t handle)
{
	uint8_t hk[8];
	MDB_val k = {8, hk}, v;
	MDB_txn *txn;
	int ret;

	if (place_meta_of_handle(handle) != m->index)
		return -EREMOTE;
	meta_put_be64(hk, handle);
	ret = meta_txn_begin(m, true, &txn);
	if (ret)
		return ret;
	ret = rec_get(txn, m->byh, REC_BYHANDLE, &k, &v);
	mdb_txn_abort(txn);
	if (ret == REC_DAMAGED) {
		char what[64];

		snprintf(what, sizeof(what), "handle %016" PRIx64, handle);
		return meta_damaged(m, what);
	}
	return meta_lmdb_err(ret, "handle lookup");
}

static int do_fetch_add(struct srv_op *op, struct hent *e)
{
	uint64_t old = e->counter;
	int64_t d = op->q.delta;

	/* A file pointer is never negative and never wraps. */
	if ((d < 0 && (uint64_t)(-(d + 1)) + 1 > old) ||
	    (d > 0 && (uint64_t)d > UINT64_MAX - old))
		return -EINVAL;
	e->counter = old + (uint64_t)d;
	rpc_enc_u64(op->rep, old);
	op->rep_len = 8;
	return 0;
}

static int do_lock(struct srv_op *op, struct hent *e)
{
	const struct rpc_req *q = &op->q;
	uint64_t end = q->len ? q->off + q->len : UINT64_MAX;
	bool excl = q->flags & RPC_LOCK_EXCL;
	struct lock *l;

	if (q->len && end < q->off)
		return -EINVAL;
	for (l = e->locks; l; l = l->next) {
		bool mine = l->owner == q->owner && l->conn == op->conn;

		if (l->off < end && q->off < l->end && (excl || l->excl) && !mine)
			return -EAGAIN;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->off = q->off;
	l->end = end;
	l->owner = q->owner;
	l->conn = op->conn;
	l->excl = excl;
	l->next = e->locks;
	e->locks = l;
	return 0;
}

static int do_unlock(struct srv_op *op, struct hent *e)
{
	const struct rpc_req *q = &op->q;
	uint64_t end = q->len ? q->off + q->len : UINT64_MAX;

	for (struct lock **pp = &e->locks; *pp; pp = &(*pp)->next) {
		struct lock *l = *pp;

		if (l->off == q->off && l->end == end && l->owner == q->owner &&
		    l->conn == op->conn) {
			*pp = l->next;
			free(l);
			return 0;
		}
	}
	return -EINVAL;
}

/* fn on the in-memory state of the handle the op names, a handle of this
 * server's that the store knows (made if create). */
static int with_hent(struct srv_op *op, bool create,
		     int (*fn)(struct srv_op *op, struct hent *e))
{
	struct meta *m = op->s->meta;
	struct hent *e;
	int ret = handle_known(m, op->q.handle);

	if (ret)
		return ret;
	pthread_mutex_lock(&m->lock);
	e = hent_find(m, op->q.handle, create);
	if (!e) {
		ret = create ? -ENOMEM : -EINVAL;
	} else {
		ret = fn(op, e);
		hent_maybe_free(m, e);
	}
	pthread_mutex_unlock(&m->lock);
	return ret;
}

int serve_fetch_add(struct srv_op *op)
{
	return with_hent(op, true, do_fetch_add);
}

int serve_lock(struct srv_op *op)
{
	return with_hent(op, true, do_lock);
}

int serve_unlock(struct srv_op *op)
{
	return with_hent(op, false, do_unlock);
}

void meta_conn_down(struct srv *s, struct xp_conn *c)
{
	struct meta *m = s->meta;
	struct hnode *n, *next;
	unsigned freed = 0;

	pthread_mutex_lock(&m->lock);
	hashtab_foreach_safe(&m->hents, n, next) {
		struct hent *e = hashtab_entry(n, struct hent, hn);

		for (struct lock **pp = &e->locks; *pp;) {
			struct lock *l = *pp;

			if (l->conn == c) {
				*pp = l->next;
				free(l);
				freed++;
			} else {
				pp = &l->next;
			}
		}
		hent_maybe_free(m, e);
	}
	pthread_mutex_unlock(&m->lock);
	if (freed)
		log_info("rpfsd: released %u locks of a closed connection", freed);
}

void meta_locks_free(struct meta *m)
{
	struct hnode *n, *next;

	hashtab_foreach_safe(&m->hents, n, next) {
		struct hent *e = hashtab_entry(n, struct hent, hn);

		while (e->locks) {
			struct lock *l = e->locks;

			e->locks = l->next;
			free(l);
		}
		free(e);
	}
}
