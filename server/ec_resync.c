/* The resync of a stale ec parity member (IO_RESYNC with RPC_RESYNC_EC,
 * from the file's metadata server, meta_resync.c), run by the member's own
 * server: it pulls, as nobody else holds the code of its row.
 *
 * Piece by piece (EC_PIECE bytes of the datafile's offsets, paced by
 * resync_mbps), it holds the piece still on each of the group's K data
 * members in order (IO_HOLD, ec_hold.c: no ec write of the range is in
 * flight there, none starts), reads the K cells' bytes of the piece, encodes
 * its own row, writes it, and lets go. The first hold on each member also
 * opens a session there: from then on every ec write of the file sends
 * this member its deltas, stale or not, so a piece once re-encoded stays
 * right; a delta that can't be sent disturbs the session, and the resync
 * fails at its end (RPC_HOLD_END) and runs again later. The last piece is
 * held to the datafiles' ends (writes that grow the file wait too), and
 * the parity datafile is cut to the longest data member there: past it,
 * old parity bytes would be XORed by deltas as if they were right.
 *
 * Fencing: a hold lapses after EC_HOLD_LEASE_MS on the data member; this
 * server writes a piece only if less than three quarters of the lease has
 * gone by its own clock since it asked for the first hold of the piece
 * (asked before the members granted it, so its lease ends first), and a
 * release that finds its hold gone (lapsed, or lost with its server's
 * restart) fails the resync: the member stays stale, and it runs again.
 *
 * At the end MIRROR_FRESH tells the metadata server, which clears the mark
 * unless the file's epoch moved meanwhile (marked again). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ec_code.h"
#include "ec_resync.h"
#include "io_forward.h"
#include "log.h"
#include "server.h"
#include "wire.h"

#define EC_PIECE	 (256u << 10)
#define EC_HOLD_LEASE_MS 3000u
#define EC_QUEUE	 16

struct job {
	uint64_t handle, epoch;
	uint32_t slot; /* the parity slot, here */
	uint32_t k, p, j;
	struct rpc_copy members[RPC_EC_MEMBERS_MAX];
	struct job *next;
};

struct ec_resync {
	struct srv *s;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct job *head, *tail, *running;
	uint32_t queued;
	bool stop;
	atomic_bool stopping; /* the running resync gives up */
	pthread_t thr;
	bool started;
	atomic_uint_fast64_t resynced, failed, bytes;
};

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* One call to a data member's server; reply into rep. */
static int ask(struct srv *s, const struct rpc_copy *m, const void *body, int len,
	       void *rep, size_t rep_max, size_t *rep_len)
{
	return io_peer_ask(s, s->cfg.io[m->io], body, len, rep, rep_max, rep_len, true);
}

/* One IO_HOLD (flags: take, RPC_HOLD_RELEASE or RPC_HOLD_END) of
 * [off, off + len) to data member i, with this member's session; the
 * reply into rep (16 bytes). */
static int hold_rpc(struct srv *s, const struct job *jb, uint32_t i, uint16_t flags,
		    uint64_t off, uint64_t len, uint64_t id, uint8_t *rep,
		    size_t *rep_len)
{
	uint8_t body[RPC_PREAMBLE + 64 + RPC_CAP_SIZE];

	*rep_len = 0;
	return ask(s, &jb->members[i], body,
		   rpc_enc_io_hold(body, sizeof(body), flags, jb->handle, NULL,
				   jb->members[i].slot, off, len, id,
				   flags ? 0 : EC_HOLD_LEASE_MS, jb->slot),
		   rep, 16, rep_len);
}

/* Let go of the piece's holds on data members 0..n-1: were they all still
 * held (none lapsed, none lost with its server's restart)? A release that
 * fails lapses with its lease. */
static bool release_all(struct srv *s, const struct job *jb, uint32_t n, uint64_t off,
			uint64_t len, uint64_t id)
{
	uint8_t rep[16];
	bool all = true;

	for (uint32_t i = 0; i < n; i++) {
		size_t rep_len;
		int ret =
			hold_rpc(s, jb, i, RPC_HOLD_RELEASE, off, len, id, rep, &rep_len);

		all &= !ret && rep_len >= 4 && get32(rep) == 1;
	}
	return all;
}

/* Hold [off, off + len) (len 0: to the end) of every data member, in
 * order, with this member's session; each member's size into sizes[i],
 * the longest into *max. On failure the holds taken are released. */
static int hold_all(struct srv *s, const struct job *jb, uint64_t off, uint64_t len,
		    uint64_t id, uint64_t *sizes, uint64_t *max, uint32_t *failed)
{
	uint8_t rep[16];
	size_t rep_len;
	uint32_t i;
	int ret = 0;

	*max = 0;
	for (i = 0; i < jb->k && !ret; i++) {
		ret = hold_rpc(s, jb, i, 0, off, len, id, rep, &rep_len);
		if (!ret && rpc_dec_u64(rep, rep_len, &sizes[i]))
			ret = -EPROTO;
		if (!ret && sizes[i] > *max)
			*max = sizes[i];
		if (ret)
			*failed = jb->members[i].io;
	}
	if (ret)
		release_all(s, jb, i - 1, off, len, id);
	return ret;
}

/* Read [off, off + n) of every data member into cells[i] (zeros past a
 * member's end), all at once. A member without its datafile (storage
 * lost) fails the resync: its bytes are not zeros, and its rebuild comes
 * first. */
static int read_all(struct srv *s, const struct job *jb, uint64_t off, uint64_t n,
		    unsigned char **cells, uint32_t *failed)
{
	uint8_t body[RPC_EC_MEMBERS_MAX][RPC_PREAMBLE + 96], rep[RPC_EC_MEMBERS_MAX][16];
	struct xp_call calls[RPC_EC_MEMBERS_MAX];
	uint32_t servers[RPC_EC_MEMBERS_MAX];
	bool transport[RPC_EC_MEMBERS_MAX];
	struct iovec iov[RPC_EC_MEMBERS_MAX];
	struct rpc_seg seg = {off, n};
	struct rpc_cap none;
	int ret;

	memset(&none, 0, sizeof(none));
	memset(calls, 0, sizeof(calls));
	for (uint32_t i = 0; i < jb->k; i++) {
		int len =
			rpc_enc_io_slot(body[i], sizeof(body[i]), RPC_IO_READ, jb->handle,
					&none, &seg, 1, jb->members[i].slot);

		if (len < 0)
			return len;
		iov[i] = (struct iovec){cells[i], (size_t)n};
		calls[i].req = body[i];
		calls[i].req_len = (size_t)len;
		calls[i].rd_iov = &iov[i];
		calls[i].rd_cnt = 1;
		calls[i].rep = rep[i];
		calls[i].rep_max = sizeof(rep[i]);
		calls[i].path = XP_PATH_AUTO;
		servers[i] = s->cfg.io[jb->members[i].io];
	}
	ret = peer_call_all(s, servers, calls, transport, (int)jb->k, NULL, NULL);
	(void)ret; /* each call's status says */
	for (uint32_t i = 0; i < jb->k; i++) {
		if (calls[i].status) {
			*failed = jb->members[i].io;
			return calls[i].status;
		}
		if (calls[i].rd_len < n)
			memset(cells[i] + calls[i].rd_len, 0, n - calls[i].rd_len);
	}
	return 0;
}

/* Every data member takes the file's new epoch (a forward without data,
 * as a mirror resync's end): a client whose view still has this member
 * stale is refused (-RPC_EBEHIND) and reloads it, rather than have its
 * writes skip a member that is whole again. Taken while the sessions still
 * send this member every delta. */
static int raise_all(struct srv *s, const struct job *jb, uint32_t *failed)
{
	uint8_t body[RPC_PREAMBLE + 96], rep[16];

	for (uint32_t i = 0; i < jb->k; i++) {
		int ret = ask(s, &jb->members[i], body,
			      rpc_enc_io_forward(body, sizeof(body), jb->handle, NULL, 0,
						 jb->members[i].slot, jb->epoch, 0),
			      rep, sizeof(rep), NULL);

		if (ret) {
			*failed = jb->members[i].io;
			return ret;
		}
	}
	return 0;
}

/* End the sessions: was any delta for this member lost meanwhile? */
static bool end_all(struct srv *s, const struct job *jb)
{
	uint8_t rep[16];
	bool ok = true;

	for (uint32_t i = 0; i < jb->k; i++) {
		size_t rep_len;
		int ret = hold_rpc(s, jb, i, RPC_HOLD_END, 0, 0, 0, rep, &rep_len);

		if (ret || rep_len < 4 || get32(rep))
			ok = false;
	}
	return ok;
}

static void report(struct srv *s, const struct job *jb, bool ok)
{
	uint32_t meta = place_meta_of_handle(jb->handle);
	uint8_t body[RPC_PREAMBLE + 32], rep[64];

	if (meta < s->cfg.nmeta &&
	    io_peer_ask(s, s->cfg.meta[meta], body,
			rpc_enc_mirror_fresh(body, sizeof(body),
					     ok ? 0 : RPC_FRESH_FAILED, jb->handle,
					     jb->epoch, jb->members[0].slot, jb->slot),
			rep, sizeof(rep), NULL, false))
		log_info("rpfsd: couldn't tell metadata server %s how the parity resync "
			 "of handle %016" PRIx64 " went (it asks again)",
			 s->cfg.servers[s->cfg.meta[meta]].name, jb->handle);
}

/* resync_mbps: the pieces' pace (bytes a microsecond). */
static void pace(struct srv *s, int64_t *next, uint64_t bytes)
{
	uint32_t mbps = s->cfg.xport.resync_mbps;
	int64_t now = mono_us();

	if (!mbps)
		return;
	if (*next > now) {
		struct timespec d = {(*next - now) / 1000000,
				     ((*next - now) % 1000000) * 1000};

		nanosleep(&d, NULL);
		now = *next;
	}
	*next = now + (int64_t)(bytes / mbps);
}

static void run(struct ec_resync *r, struct job *jb)
{
	struct srv *s = r->s;
	unsigned char *cells[RPC_EC_MEMBERS_MAX] = {0}, *par[RPC_COPIES_MAX] = {0};
	uint64_t off = 0, known = 0, written = 0, size, sizes[RPC_EC_MEMBERS_MAX];
	int64_t start = mono_us(), next = 0;
	uint32_t failed = UINT32_MAX;
	struct ec_code code;
	bool ok = false;
	int ret;

	ret = ec_code_init(&code, jb->k, jb->p);
	for (uint32_t i = 0; !ret && i < jb->k; i++)
		if (!(cells[i] = malloc(EC_PIECE)))
			ret = -ENOMEM;
	for (uint32_t j = 0; !ret && j < jb->p; j++)
		if (!(par[j] = malloc(EC_PIECE)))
			ret = -ENOMEM;
	/* this member's datafile, made again if its storage went */
	if (!ret && io_size_local(s, jb->handle, &size) == -ESTALE)
		ret = io_create_handle(s, jb->handle, ((uint64_t)mono_us() << 8) | 2,
				       jb->slot, false);
	while (!ret) {
		/* the last piece (as far as known) is held to the end */
		bool open = off + EC_PIECE >= known;
		uint64_t id = ((uint64_t)mono_us() << 16) ^
			      (jb->handle * 0x9e3779b97f4a7c15ull),
			 max, n;
		int64_t asked;

		pace(s, &next, EC_PIECE);
		if (atomic_load(&r->stopping)) {
			ret = -ESHUTDOWN;
			break;
		}
		asked = mono_us();
		ret = hold_all(s, jb, off, open ? 0 : EC_PIECE, id, sizes, &max, &failed);
		if (ret)
			break;
		if (!open && max <= off + EC_PIECE) {
			/* it is the last: again, held to the end */
			release_all(s, jb, jb->k, off, EC_PIECE, id);
			known = max;
			continue;
		}
		n = max > off ? (max - off < EC_PIECE ? max - off : EC_PIECE) : 0;
		if (n)
			ret = read_all(s, jb, off, n, cells, &failed);
		if (!ret && n)
			ec_encode(&code, n, cells, par);
		if (!ret && mono_us() - asked > (int64_t)EC_HOLD_LEASE_MS * 750)
			ret = -ETIMEDOUT; /* fenced: the holds may have lapsed */
		if (!ret)
			ret = io_write_local(s, jb->handle, par[jb->j], n, off,
					     open && max <= off + EC_PIECE ? max
									   : UINT64_MAX);
		/* the last piece, held to the members' ends: their sizes are
		 * exact, and the record of them takes them (ec_ends.h) */
		if (!ret && open && max <= off + EC_PIECE)
			ret = io_ends_local(s, jb->handle, sizes, jb->k);
		/* a hold that lapsed or went with its server's restart: the
		 * piece may be wrong; the member stays stale and the resync
		 * runs again */
		if (!release_all(s, jb, jb->k, off, open ? 0 : EC_PIECE, id) && !ret)
			ret = -ETIMEDOUT;
		if (ret)
			break;
		written += n;
		atomic_fetch_add(&r->bytes, n);
		if (open && max <= off + EC_PIECE) {
			ok = true;
			break;
		}
		known = max;
		off += EC_PIECE;
	}
	/* the end: the data members take the new epoch, then the sessions
	 * end (none lost a delta), then the metadata server clears the mark
	 * at that epoch */
	if (ok && (ret = raise_all(s, jb, &failed)))
		ok = false;
	if (ok) {
		ok = end_all(s, jb);
	} else {
		end_all(s, jb);
	}
	if (!ok && jb->epoch > 1) {
		/* Some data members may have taken the new epoch: the mark is
		 * made again past it, so that the file's epoch is ahead of
		 * theirs (clients are not refused for ever) and the resync
		 * runs again. */
		uint64_t e;
		uint32_t t = jb->slot;

		io_mark_stale(s, jb->handle, jb->epoch, jb->members[0].slot, &t, 1, true,
			      &e);
	}
	report(s, jb, ok);
	atomic_fetch_add(ok ? &r->resynced : &r->failed, 1);
	if (ok)
		log_info("rpfsd: re-encoded parity slot %u of handle %016" PRIx64
			 " from its %u data members: %" PRIu64 " bytes in %.1f s",
			 jb->slot, jb->handle, jb->k, written,
			 (double)(mono_us() - start) / 1e6);
	else if (failed != UINT32_MAX)
		log_warn("rpfsd: the parity resync of slot %u of handle %016" PRIx64
			 " failed on I/O server %u (%s): tried again later",
			 jb->slot, jb->handle, failed, strerror(ret ? -ret : EIO));
	else
		log_warn("rpfsd: the parity resync of slot %u of handle %016" PRIx64
			 " failed (%s): tried again later",
			 jb->slot, jb->handle,
			 ret ? strerror(-ret) : "a write could not send it its delta");
	ec_code_fini(&code);
	for (uint32_t i = 0; i < RPC_EC_MEMBERS_MAX; i++)
		free(cells[i]);
	for (uint32_t j = 0; j < RPC_COPIES_MAX; j++)
		free(par[j]);
}

static void *worker(void *arg)
{
	struct ec_resync *r = arg;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		struct job *jb;

		while (!r->head && !r->stop)
			pthread_cond_wait(&r->wake, &r->lock);
		if (r->stop)
			break;
		jb = r->head;
		r->head = jb->next;
		if (!r->head)
			r->tail = NULL;
		r->queued--;
		r->running = jb;
		pthread_mutex_unlock(&r->lock);
		run(r, jb);
		pthread_mutex_lock(&r->lock);
		r->running = NULL;
		free(jb);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/* IO_RESYNC with RPC_RESYNC_EC (io_forward.c's serve_io_resync hands it
 * here): queued; -EBUSY when this handle's is queued or running, or the
 * queue is full (the metadata server asks again). */
int ec_resync_take(struct srv_op *op)
{
	struct ec_resync *r = op->s->ec_resync;
	const struct rpc_req *q = &op->q;
	struct job *jb;
	int ret = 0;

	if (!r)
		return -EOPNOTSUPP;
	if (q->ec_index >= q->ec_p || !q->epoch)
		return -EINVAL;
	jb = calloc(1, sizeof(*jb));
	if (!jb)
		return -ENOMEM;
	*jb = (struct job){.handle = q->handle,
			   .epoch = q->epoch,
			   .slot = q->slot,
			   .k = q->ec_k,
			   .p = q->ec_p,
			   .j = q->ec_index};
	for (uint32_t i = 0; i < q->nmembers; i++) {
		jb->members[i] = rpc_req_member(q, i);
		if (jb->members[i].io >= op->s->cfg.nio ||
		    (int)op->s->cfg.io[jb->members[i].io] == op->s->self)
			ret = -EINVAL;
	}
	pthread_mutex_lock(&r->lock);
	if (!ret && r->running && r->running->handle == jb->handle)
		ret = -EBUSY;
	for (struct job *x = r->head; !ret && x; x = x->next)
		if (x->handle == jb->handle)
			ret = -EBUSY;
	if (!ret && r->queued >= EC_QUEUE)
		ret = -EBUSY;
	if (!ret) {
		if (r->tail)
			r->tail->next = jb;
		else
			r->head = jb;
		r->tail = jb;
		r->queued++;
		pthread_cond_signal(&r->wake);
	}
	pthread_mutex_unlock(&r->lock);
	if (ret)
		free(jb);
	return ret;
}

int ec_resync_open(struct srv *s)
{
	struct ec_resync *r = calloc(1, sizeof(*r));
	int ret;

	if (!r)
		return -ENOMEM;
	r->s = s;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->wake, NULL);
	ret = pthread_create(&r->thr, NULL, worker, r);
	if (ret) {
		pthread_cond_destroy(&r->wake);
		pthread_mutex_destroy(&r->lock);
		free(r);
		return -ret;
	}
	s->ec_resync = r;
	return 0;
}

void ec_resync_close(struct srv *s)
{
	struct ec_resync *r = s->ec_resync;

	if (!r)
		return;
	atomic_store(&r->stopping, true);
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	while (r->head) {
		struct job *jb = r->head;

		r->head = jb->next;
		free(jb);
	}
	r->tail = NULL;
	pthread_cond_broadcast(&r->wake);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thr, NULL);
	pthread_cond_destroy(&r->wake);
	pthread_mutex_destroy(&r->lock);
	free(r);
	s->ec_resync = NULL;
}

void ec_resync_counts(struct srv *s, struct ec_resync_counts *n)
{
	struct ec_resync *r = s->ec_resync;

	memset(n, 0, sizeof(*n));
	if (!r)
		return;
	n->resynced = atomic_load(&r->resynced);
	n->failed = atomic_load(&r->failed);
	n->bytes = atomic_load(&r->bytes);
}
