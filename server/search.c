/* Search permission on every ancestor of a path, as POSIX path resolution
 * asks, in a namespace hashed over several metadata servers.
 *
 * The entry of /a/b/c lives on the metadata server its full path hashes to
 * (place_meta_of_path); /a and /a/b usually live on others. A client that
 * is not root reaches /a/b/c only if it may search (x) /a and /a/b, so the
 * server serving a request that names a path asks, at once, each other
 * metadata server that holds one of its ancestors: one SEARCH per server,
 * carrying the path and the client's identity. That server checks every
 * ancestor it holds in one LMDB read transaction, on its progress thread
 * (never queued behind workers that may themselves wait on a peer), and
 * answers with the first one that refuses. The ancestors held here are
 * checked meanwhile. The first refusal in path order wins, as in a
 * component-by-component walk: a missing /a/x under a 0700 /a is EACCES,
 * not ENOENT, so a mode hides names as well as contents.
 *
 * Cost: nothing for root and the servers (they may search anything). For
 * others, the ancestors held locally cost an LMDB get each (all of them,
 * with one metadata server); the others one round trip, whatever the depth:
 * at most min(depth - 1, metadata servers - 1) calls, all in flight
 * together. Nothing is cached, so nothing can be stale: a chmod 0700 of a
 * directory that has returned refuses every later lookup below it, and a
 * rename (which moves entries to their new paths) changes what is
 * reachable at once. An open file keeps its capability (as a POSIX file
 * descriptor outlives a chmod of its directory). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server.h"

_Static_assert(RPC_GROUPS_MAX ==
		       sizeof(((struct srv_client *)0)->groups) / sizeof(uint32_t),
	       "SEARCH carries every group a client may state");

int search_entry(const struct srv_client *who, int st, const struct rpc_attr *a,
		 unsigned want)
{
	if (st)
		return st;
	if (a->type != RPC_TYPE_DIR)
		return -ENOTDIR;
	return access_may(who, a, want) ? 0 : -EACCES;
}

/* One path to check: its want on the path itself, its result so far. */
struct search_path {
	const char *path;
	unsigned want;
	struct rpc_search_rep res; /* the earliest refusal found (depth 0: none) */
	uint8_t *body;		   /* its SEARCH request */
	int len;
};

/* A refusal at depth: kept if it is the earliest of its path. */
static void refuse(struct search_path *p, uint32_t depth, int status)
{
	if (!p->res.depth || depth < p->res.depth) {
		p->res.depth = depth;
		p->res.status = status;
	}
}

struct search_local {
	struct srv *s;
	const struct srv_client *who;
	struct search_path *p;
	int n;
	int err; /* the local store could not be read */
};

static void check_local(void *arg)
{
	struct search_local *l = arg;

	for (int i = 0; i < l->n && !l->err; i++) {
		struct rpc_search_rep r;

		l->err = meta_search_local(l->s, l->who, l->p[i].path, l->p[i].want, &r);
		if (!l->err && r.depth)
			refuse(&l->p[i], r.depth, r.status);
	}
}

/* The first depth of each metadata server other than this one that holds a
 * component checked of p (first[m] 0: none). */
static void remote_owners(struct srv *s, const struct search_path *p, uint32_t *first)
{
	char pre[RPC_PATH_MAX + 1];
	size_t len = strlen(p->path);
	uint32_t depth = 0;

	memset(first, 0, s->cfg.nmeta * sizeof(*first));
	memcpy(pre, p->path, len + 1);
	/* "/" itself (depth 0) needs no one: anyone searches and lists it. */
	for (size_t i = 1; i <= len && len > 1; i++) {
		uint32_t m;

		if (i < len && pre[i] != '/')
			continue;
		depth++;
		if (i == len && !p->want)
			break;
		pre[i] = 0; /* pre is this component's path for a moment */
		m = place_meta_of_path(&s->cfg, pre);
		pre[i] = p->path[i];
		if ((int)m != s->me->meta_index && m < s->cfg.nmeta && !first[m])
			first[m] = depth;
	}
}

/* The SEARCH calls of check_all: to whom, for which path, from which depth. */
struct search_calls {
	uint32_t *servers, *meta_of, *depth_of;
	int *path_of;
	struct xp_call *calls;
	uint8_t (*rep)[RPC_SEARCH_REP_SIZE];
	bool *down;
	uint32_t n;
};

static int calls_alloc(struct search_calls *c, size_t most)
{
	memset(c, 0, sizeof(*c));
	c->servers = calloc(most, sizeof(*c->servers));
	c->meta_of = calloc(most, sizeof(*c->meta_of));
	c->depth_of = calloc(most, sizeof(*c->depth_of));
	c->path_of = calloc(most, sizeof(*c->path_of));
	c->calls = calloc(most, sizeof(*c->calls));
	c->rep = calloc(most, sizeof(*c->rep));
	c->down = calloc(most, sizeof(*c->down));
	return c->servers && c->meta_of && c->depth_of && c->path_of && c->calls &&
			       c->rep && c->down
		       ? 0
		       : -ENOMEM;
}

static void calls_free(struct search_calls *c)
{
	free(c->servers);
	free(c->meta_of);
	free(c->depth_of);
	free(c->path_of);
	free(c->calls);
	free(c->rep);
	free(c->down);
}

/* One SEARCH to each other metadata server holding a component of p[i]. */
static int plan_calls(struct srv *s, struct search_path *p, int n, struct search_calls *c)
{
	uint32_t nmeta = s->cfg.nmeta;
	uint32_t *first = calloc(nmeta, sizeof(*first));

	if (!first)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		remote_owners(s, &p[i], first);
		for (uint32_t m = 0; m < nmeta; m++) {
			uint32_t k = c->n;

			if (!first[m])
				continue;
			c->servers[k] = s->cfg.meta[m];
			c->meta_of[k] = m;
			c->depth_of[k] = first[m];
			c->path_of[k] = i;
			c->calls[k].req = p[i].body;
			c->calls[k].req_len = (size_t)p[i].len;
			c->calls[k].rep = c->rep[k];
			c->calls[k].rep_max = sizeof(c->rep[k]);
			c->n++;
		}
	}
	free(first);
	return 0;
}

/* Each call's answer into its path's result. */
static void take_answers(struct search_path *p, const struct search_calls *c)
{
	for (uint32_t k = 0; k < c->n; k++) {
		struct search_path *q = &p[c->path_of[k]];
		struct rpc_search_rep r;
		int st = c->calls[k].status;

		if (!st && rpc_dec_search_rep(c->rep[k], c->calls[k].rep_len, &r))
			st = -EPROTO;
		if (!st) {
			if (r.depth)
				refuse(q, r.depth, r.status);
			continue;
		}
		/* Unknown from its first component on: a refusal before it
		 * still stands, anything after it is unknown. */
		log_warn(
			"rpfsd: couldn't check search permission on %s with metadata server %u: %s",
			q->path, c->meta_of[k],
			c->down[k] ? "unreachable" : strerror(-st));
		refuse(q, c->depth_of[k], c->down[k] ? -EHOSTDOWN : st);
	}
}

/* Ask the other holders of the paths' components, check ours meanwhile.
 * The first path's refusal, else the second's, else 0. */
static int check_all(struct srv *s, const struct srv_client *who, struct search_path *p,
		     int n)
{
	struct search_local local = {s, who, p, n, 0};
	struct search_calls c;
	int ret = 0;

	if (s->cfg.nmeta < 2) {
		/* All here: no call, nothing to allocate. */
		check_local(&local);
	} else {
		ret = calls_alloc(&c, (size_t)n * s->cfg.nmeta);
		if (!ret)
			ret = plan_calls(s, p, n, &c);
		if (!ret && c.n)
			peer_call_all(s, c.servers, c.calls, c.down, (int)c.n,
				      check_local, &local);
		else if (!ret)
			check_local(&local);
		if (!ret)
			take_answers(p, &c);
		calls_free(&c);
		if (ret)
			return ret;
	}
	if (local.err) {
		log_warn(
			"rpfsd: couldn't check search permission on %s in the local metadata store: %s",
			p[0].path, strerror(-local.err));
		return local.err;
	}
	for (int i = 0; i < n && !ret; i++)
		ret = p[i].res.status;
	return ret;
}

int search_paths(struct srv *s, const struct srv_client *who, const char *const *paths,
		 const unsigned *want, int n)
{
	struct search_path p[2];
	int ret = 0;

	if (n < 1 || n > 2)
		return -EINVAL;
	memset(p, 0, sizeof(p));
	for (int i = 0; i < n && !ret; i++) {
		p[i].path = paths[i];
		p[i].want = want[i];
		if (s->cfg.nmeta < 2)
			continue;
		p[i].body = malloc(RPC_PATH_MAX + 64 + 4 * RPC_GROUPS_MAX);
		if (!p[i].body) {
			ret = -ENOMEM;
			break;
		}
		p[i].len = rpc_enc_search(
			p[i].body, RPC_PATH_MAX + 64 + 4 * RPC_GROUPS_MAX, paths[i],
			want[i], who->uid, who->gid, who->groups, who->ngroups);
		if (p[i].len < 0)
			ret = p[i].len;
	}
	if (!ret)
		ret = check_all(s, who, p, n);
	for (int i = 0; i < n; i++)
		free(p[i].body);
	return ret;
}

int search_request(struct srv_op *op)
{
	const struct srv_client *who = ident_of(op->conn);
	const struct rpc_req *q = &op->q;
	const char *paths[2] = {q->path, q->to};
	unsigned want[2] = {0, 0};

	if (access_is_super(who) || !q->path)
		return 0;
	switch (q->op) {
	case RPC_READDIR:
		/* Listing: read permission on the directory itself too. */
		want[0] = ACCESS_R;
		return search_paths(op->s, who, paths, want, 1);
	case RPC_RENAME:
		return search_paths(op->s, who, paths, want, 2);
	default:
		return search_paths(op->s, who, paths, want, 1);
	}
}

/* Progress thread (a few LMDB reads: never behind workers that may be
 * waiting on the server that asks). */
int serve_search(struct srv_op *op)
{
	struct srv_client who = {.peer = false, .uid = op->q.uid, .gid = op->q.gid};
	struct rpc_search_rep r;
	int ret;

	who.ngroups = op->q.ngroups;
	memcpy(who.groups, op->q.groups, op->q.ngroups * sizeof(who.groups[0]));
	ret = meta_search_local(op->s, &who, op->q.path, op->q.want, &r);
	if (ret)
		return ret;
	rpc_enc_search_rep(op->rep, &r);
	op->rep_len = RPC_SEARCH_REP_SIZE;
	return 0;
}
