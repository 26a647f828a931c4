/* rpfsd as a client of the other servers.
 *
 * A metadata server sometimes needs another server: the parent directory
 * of a new file may be owned by another metadata server (paths are spread
 * by hash), the ancestors of a path a client names are checked for search
 * permission where they live (SEARCH, search.c), RMDIR must know that no
 * other metadata server holds a child,
 * CREATE and REMOVE make and delete the file's datafiles on its I/O servers
 * (peer_call_all: all at once), and a metadata server starting on an empty
 * store asks every I/O server for datafiles of its handles; rpfsd --check
 * of a server holding datafiles asks their metadata servers which belong
 * to no file (META_HANDLES, check_orphans.c). Those calls
 * come from worker threads and block; they go through one XP_CLIENT fabric
 * of this server (thread-safe: whoever waits drives its progress), opened
 * on first use, with one connection per peer made lazily and kept. A
 * broken connection is replaced on the next call (and the call retried
 * once, since every peer op the server sends is idempotent); the broken
 * one is closed by the last worker still using it (a count of users per
 * connection), not kept to exit: a peer that restarts or is stopped now
 * and then would otherwise cost its buffers (MBs) each time. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "hello.h"
#include "log.h"
#include "server.h"

/* A connection and the workers using it: closed when it is broken, no
 * longer the peer's current one, and its last user lets go. */
struct peer_conn {
	struct xp_conn *conn;
	uint32_t users; /* under the peer's lock */
	bool retired;	/* replaced: the last user closes it */
};

struct peer {
	pthread_mutex_t lock; /* held while connecting; users, retired */
	struct peer_conn *cur;
};

struct peers {
	pthread_mutex_t lock; /* fabric open */
	atomic_bool waiting;  /* peers may still be starting: no warnings */
	struct xp_fabric *fab;
	struct peer *p; /* one per configured server */
};

int peer_init(struct srv *s)
{
	struct peers *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return -ENOMEM;
	ps->p = calloc(s->cfg.nservers, sizeof(*ps->p));
	if (!ps->p) {
		free(ps);
		return -ENOMEM;
	}
	pthread_mutex_init(&ps->lock, NULL);
	for (uint32_t i = 0; i < s->cfg.nservers; i++)
		pthread_mutex_init(&ps->p[i].lock, NULL);
	s->peers = ps;
	return 0;
}

void peer_fini(struct srv *s)
{
	struct peers *ps = s->peers;

	if (!ps)
		return;
	/* The workers have stopped: only the current connections are left
	 * (a retired one is closed by its last user). */
	for (uint32_t i = 0; i < s->cfg.nservers; i++) {
		struct peer_conn *pc = ps->p[i].cur;

		if (pc) {
			xp_conn_close(pc->conn);
			free(pc);
		}
		pthread_mutex_destroy(&ps->p[i].lock);
	}
	if (ps->fab)
		xp_fabric_close(ps->fab);
	pthread_mutex_destroy(&ps->lock);
	free(ps->p);
	free(ps);
	s->peers = NULL;
}

/* Memory this server's connections to the others hold (rpfs stats:
 * peers.conn_bytes): a connection per peer at most, whatever comes and
 * goes. */
uint64_t peer_conn_bytes(struct srv *s)
{
	struct peers *ps = s->peers;
	struct xp_stats st = {0};
	struct xp_fabric *fab;

	if (!ps)
		return 0;
	pthread_mutex_lock(&ps->lock);
	fab = ps->fab;
	pthread_mutex_unlock(&ps->lock);
	if (fab)
		xp_fabric_stats(fab, &st);
	return st.conn_bytes;
}

void peer_waiting(struct srv *s, bool waiting)
{
	atomic_store(&s->peers->waiting, waiting);
}

static int open_fabric(struct srv *s, struct peers *ps)
{
	int ret = 0;

	pthread_mutex_lock(&ps->lock);
	if (!ps->fab) {
		ret = xp_fabric_open(&s->cfg.xport, XP_CLIENT, &s->key, &ps->fab);
		if (ret)
			log_err("rpfsd: couldn't open a client fabric to reach other servers: %s",
				strerror(-ret));
	}
	pthread_mutex_unlock(&ps->lock);
	return ret;
}

/* Take the peer's current connection (making one if there is none or it
 * is broken) for a call: put_conn gives it back. */
static int get_conn(struct srv *s, uint32_t server, bool quiet, struct peer_conn **out)
{
	struct peers *ps = s->peers;
	struct peer *p = &ps->p[server];
	const struct rpfs_server_cfg *sc = &s->cfg.servers[server];
	struct peer_conn *old = NULL;
	char why[256] = "";
	int ret = 0;

	*out = NULL;
	pthread_mutex_lock(&p->lock);
	if (p->cur && xp_conn_error(p->cur->conn)) {
		p->cur->retired = true;
		if (!p->cur->users)
			old = p->cur;
		p->cur = NULL;
	}
	if (!p->cur) {
		uint8_t data[XP_HELLO_MAX];
		struct xp_hello h = {data, 0, NULL, 0, 0};
		struct hello_req req;
		struct xp_conn *c = NULL;
		int n;

		hello_req_fill(&req, &s->cfg, server, HELLO_PEER);
		n = hello_req_encode(data, sizeof(data), &req);
		h.len = n > 0 ? (size_t)n : 0;
		ret = xp_connect(ps->fab, sc->address, sc->port, &h, &c, why,
				 sizeof(why));
		if (!ret && !(p->cur = calloc(1, sizeof(*p->cur)))) {
			xp_conn_close(c);
			ret = -ENOMEM;
		} else if (!ret) {
			p->cur->conn = c;
		}
		if (ret)
			rpfs_log(quiet || atomic_load(&ps->waiting) ? RPFS_LOG_INFO
								    : RPFS_LOG_WARN,
				 "rpfsd: couldn't reach server %s (%s:%s)%s: %s",
				 sc->name, sc->address, sc->port,
				 atomic_load(&ps->waiting) ? " yet" : "",
				 why[0] ? why : strerror(-ret));
	}
	if (p->cur) {
		p->cur->users++;
		*out = p->cur;
	}
	pthread_mutex_unlock(&p->lock);
	if (old) {
		xp_conn_close(old->conn);
		free(old);
	}
	return ret;
}

static void put_conn(struct srv *s, uint32_t server, struct peer_conn *pc)
{
	struct peer *p = &s->peers->p[server];
	bool last;

	if (!pc)
		return;
	pthread_mutex_lock(&p->lock);
	last = !--pc->users && pc->retired;
	pthread_mutex_unlock(&p->lock);
	if (last) {
		xp_conn_close(pc->conn);
		free(pc);
	}
}

static int call_one(struct srv *s, uint32_t server, bool quiet, struct xp_call *call)
{
	struct peer_conn *pc;
	int ret;

	if (server >= s->cfg.nservers)
		return -EINVAL;
	ret = open_fabric(s, s->peers);
	if (ret)
		return ret;
	for (int attempt = 0; attempt < 2; attempt++) {
		struct xp_call again = *call;
		bool broken;

		ret = get_conn(s, server, quiet, &pc);
		if (ret)
			return ret;
		ret = xp_call(pc->conn, call);
		broken = xp_conn_error(pc->conn) != 0;
		put_conn(s, server, pc);
		/* A kept connection to a server that restarted breaks on first
		 * use: try once more on a fresh one. Not one broken because
		 * the server is known down (peer_abort's -EHOSTDOWN): a
		 * connect to a stopped server would wait out its handshake. */
		if (!ret || !broken || attempt || ret == -EHOSTDOWN)
			break;
		*call = again;
	}
	return ret;
}

int peer_call(struct srv *s, uint32_t server, struct xp_call *call)
{
	return call_one(s, server, false, call);
}

int peer_call_quiet(struct srv *s, uint32_t server, struct xp_call *call)
{
	return call_one(s, server, true, call);
}

void peer_abort(struct srv *s, uint32_t server, const char *why)
{
	struct peer *p;

	if (!s->peers || server >= s->cfg.nservers)
		return;
	p = &s->peers->p[server];
	/* a connect under way holds the lock for as long as it waits: the
	 * caller (a progress thread) never waits for it */
	if (pthread_mutex_trylock(&p->lock))
		return;
	if (p->cur)
		xp_conn_abort(p->cur->conn, -EHOSTDOWN, why);
	pthread_mutex_unlock(&p->lock);
}

/* Is the kept connection to server unusable (or none could be made)? */
static bool peer_broken(struct srv *s, uint32_t server)
{
	struct peer *p = &s->peers->p[server];
	bool broken;

	pthread_mutex_lock(&p->lock);
	broken = !p->cur || xp_conn_error(p->cur->conn);
	pthread_mutex_unlock(&p->lock);
	return broken;
}

int peer_call_all(struct srv *s, const uint32_t *servers, struct xp_call *calls,
		  bool *transport, int n, void (*meanwhile)(void *arg), void *arg)
{
	struct peer_conn **conns = calloc((size_t)(n ? n : 1), sizeof(*conns));
	struct xp_call *fresh = malloc((size_t)(n ? n : 1) * sizeof(*fresh));
	int first = 0, ret;

	if (!conns || !fresh) {
		free(conns);
		free(fresh);
		return -ENOMEM;
	}
	memcpy(fresh, calls, (size_t)n * sizeof(*fresh));
	ret = open_fabric(s, s->peers);
	/* Start them all, then wait for each: the slowest sets the time. */
	for (int i = 0; i < n; i++) {
		transport[i] = false;
		calls[i].status = ret;
		if (ret)
			continue;
		if (servers[i] >= s->cfg.nservers) {
			calls[i].status = -EINVAL;
			continue;
		}
		calls[i].status = get_conn(s, servers[i], false, &conns[i]);
		if (calls[i].status) {
			/* No connection could be made: a retry would not help. */
			conns[i] = NULL;
			transport[i] = true;
			continue;
		}
		calls[i].status = xp_call_start(conns[i]->conn, &calls[i]);
	}
	if (meanwhile)
		meanwhile(arg);
	for (int i = 0; i < n; i++) {
		bool held = conns[i] != NULL;

		if (held && !calls[i].status)
			xp_call_wait(&calls[i]);
		put_conn(s, servers[i], conns[i]);
		if (held && calls[i].status && calls[i].status != -EHOSTDOWN &&
		    peer_broken(s, servers[i])) {
			/* As in peer_call: a kept connection to a server that
			 * restarted breaks on first use; every op sent this way
			 * is idempotent, so one more try on a fresh one (not
			 * when it broke as known down: peer_abort). */
			calls[i] = fresh[i];
			calls[i].status = peer_call(s, servers[i], &calls[i]);
			transport[i] = calls[i].status && peer_broken(s, servers[i]);
		} else if (held && calls[i].status == -EHOSTDOWN) {
			transport[i] = true;
		}
		if (calls[i].status && !first)
			first = calls[i].status;
	}
	free(conns);
	free(fresh);
	return first;
}
