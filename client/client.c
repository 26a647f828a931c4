/* The client object: cluster config, the transport fabric, and connections.
 *
 * rpfs_init reads the config (with a program's options: rpfs_init_opts)
 * and opens the fabric but connects to nothing: a connection to a server is
 * made on first use and kept for the life of the client, so a program
 * touching one file of a large cluster talks to the few servers that hold
 * it. A connection that breaks (timeout,
 * server restart) fails the calls on it; the next use makes a new one.
 *
 * Every request in librpfs goes through rpfsc_run: start one call per
 * server, wait for all, and turn the first failure into a message naming
 * the server and the cause. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "client_priv.h"
#include "hello.h"
#include "log.h"

/* ---- servers ------------------------------------------------------------ */

int rpfs_num_io_servers(rpfs_client_t *c)
{
	return (int)c->cfg.nio;
}

int rpfs_num_meta_servers(rpfs_client_t *c)
{
	return (int)c->cfg.nmeta;
}

int rpfsc_io_srv(struct rpfs_client *c, uint32_t idx)
{
	return idx < c->cfg.nio ? (int)c->cfg.io[idx] : -1;
}

int rpfsc_meta_srv(struct rpfs_client *c, uint32_t idx)
{
	return idx < c->cfg.nmeta ? (int)c->cfg.meta[idx] : -1;
}

const char *rpfsc_desc(struct rpfs_client *c, int srv, enum rpfsc_role role)
{
	const struct rpfs_server_cfg *s = &c->cfg.servers[srv];

	if (role == RPFSC_IO && s->io_index >= 0)
		return c->io_desc[s->io_index];
	if (role == RPFSC_META && s->meta_index >= 0)
		return c->meta_desc[s->meta_index];
	return c->srv[srv].desc;
}

const char *rpfs_server_desc(rpfs_client_t *c, int server)
{
	if (server < 0 || (uint32_t)server >= c->cfg.nservers)
		return "no such server";
	return c->srv[server].desc;
}

/* ---- connections -------------------------------------------------------- */

static void link_unref(struct rpfsc_link *l)
{
	if (--l->refs == 0) {
		xp_conn_close(l->conn);
		free(l);
	}
}

/* Connect to server srv with our hello; a server whose config disagrees
 * with ours refuses, and its answer says how: the message names it. */
static int link_connect(struct rpfs_client *c, int srv, enum rpfsc_role role,
			struct xp_conn **out)
{
	const struct rpfs_server_cfg *sc = &c->cfg.servers[srv];
	uint8_t data[XP_HELLO_MAX], rep[XP_HELLO_MAX];
	struct xp_hello h = {data, 0, rep, sizeof(rep), 0};
	struct hello_req req;
	struct hello_rep ans;
	char why[512] = "";
	int n, ret;

	hello_req_fill(&req, &c->cfg, (uint32_t)srv, HELLO_CLIENT);
	n = hello_req_encode(data, sizeof(data), &req);
	if (n < 0)
		return n;
	h.len = (size_t)n;
	ret = xp_connect(c->fab, sc->address, sc->port, &h, out, why, sizeof(why));
	if (!ret)
		return 0;
	if (h.rep_len && !hello_rep_decode(rep, h.rep_len, &ans) && ans.mismatch) {
		hello_explain(&ans, &c->cfg, (uint32_t)srv, rpfsc_desc(c, srv, role), why,
			      sizeof(why));
		rpfsc_err_set("%s", why);
		return ret;
	}
	/* The transport's reason names the cause (a refused key, a clock
	 * out of the window, ...); without one, the errno's. */
	if (why[0])
		rpfsc_err_set("%s: %s", rpfsc_desc(c, srv, role), why);
	else
		rpfsc_err_server(rpfsc_desc(c, srv, role), "couldn't connect", ret,
				 c->cfg.xport.timeout_ms, true);
	return ret;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* s->lock held. A server that let a connection or a connect go unanswered
 * for timeout_ms is silent: every call would wait that long again, so for
 * retry_unanswered_ms they fail at once, with what was learnt, as a
 * client of BeeGFS learns a target is offline once (issue 29: clients
 * learn a state once). */
static void mark_quiet(struct rpfs_client *c, struct rpfsc_server *s, const char *why)
{
	if (!c->cfg.xport.retry_unanswered_ms)
		return;
	s->quiet_ms = mono_ms();
	snprintf(s->quiet_msg, sizeof(s->quiet_msg), "%s", why);
}

static int still_quiet(struct rpfs_client *c, struct rpfsc_server *s)
{
	int64_t left;

	if (!s->quiet_ms)
		return 0;
	left = s->quiet_ms + (int64_t)c->cfg.xport.retry_unanswered_ms - mono_ms();
	if (left <= 0)
		return 0; /* time for one more try */
	rpfsc_err_set("%s (%.1f s ago; not tried again for %.1f s: retry_unanswered_ms)",
		      s->quiet_msg, (double)(mono_ms() - s->quiet_ms) / 1000.0,
		      (double)left / 1000.0);
	return -ETIMEDOUT;
}

bool rpfsc_server_suspect(struct rpfs_client *c, int srv)
{
	struct rpfsc_server *s = &c->srv[srv];
	int64_t now = mono_ms(), reported = atomic_load(&s->reported_down_ms);
	int64_t window = (int64_t)c->cfg.xport.retry_unanswered_ms;
	bool suspect;

	if (window < 2000)
		window = 2000;
	pthread_mutex_lock(&s->lock);
	suspect = (s->quiet_ms && s->quiet_ms + window > now) ||
		  (s->link && xp_conn_error(s->link->conn)) ||
		  (reported && reported + window > now);
	pthread_mutex_unlock(&s->lock);
	return suspect;
}

bool rpfsc_lost_errno(int ret)
{
	return ret == -ETIMEDOUT || ret == -ECONNRESET || ret == -ENOTCONN ||
	       ret == -ECONNREFUSED || ret == -EHOSTDOWN || ret == -EHOSTUNREACH ||
	       ret == -EPIPE || ret == -ECONNABORTED;
}

void rpfsc_reply_view(const uint8_t *rep, size_t len, struct rpfsc_view *v)
{
	uint32_t io[RPC_DOWN_MAX], n;

	memset(v, 0, sizeof(*v));
	if (len <= RPC_ATTR_CAP_SIZE ||
	    rpc_dec_open_tail(rep + RPC_ATTR_CAP_SIZE, len - RPC_ATTR_CAP_SIZE, io, &n,
			      &v->epoch, v->stale, &v->n, &v->known))
		memset(v, 0, sizeof(*v));
}

void rpfsc_note_down(struct rpfs_client *c, const uint8_t *rep, size_t len)
{
	uint32_t io[RPC_DOWN_MAX], n, stale[RPC_STALE_MAX], nstale;
	uint64_t epoch;
	bool view;

	if (len <= RPC_ATTR_CAP_SIZE ||
	    rpc_dec_open_tail(rep + RPC_ATTR_CAP_SIZE, len - RPC_ATTR_CAP_SIZE, io, &n,
			      &epoch, stale, &nstale, &view))
		return;
	for (uint32_t i = 0; i < n; i++) {
		int srv = io[i] < c->cfg.nio ? rpfsc_io_srv(c, io[i]) : -1;

		if (srv >= 0)
			atomic_store(&c->srv[srv].reported_down_ms, mono_ms());
	}
}

int rpfsc_link_get(struct rpfs_client *c, int srv, enum rpfsc_role role,
		   struct rpfsc_link **out)
{
	struct rpfsc_server *s = &c->srv[srv];
	struct rpfsc_link *l;
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	if (s->link && xp_conn_error(s->link->conn) == -ETIMEDOUT && !s->quiet_ms) {
		char why[sizeof(s->quiet_msg)];

		snprintf(why, sizeof(why), "%s: no answer within %d ms",
			 rpfsc_desc(c, srv, role), c->cfg.xport.timeout_ms);
		mark_quiet(c, s, why);
	}
	ret = still_quiet(c, s);
	if (ret)
		goto unlock;
	if (s->link && xp_conn_error(s->link->conn)) {
		/* Broken: users still holding it keep it alive until they let go. */
		log_info("%s: reconnecting", rpfsc_desc(c, srv, role));
		link_unref(s->link);
		s->link = NULL;
	}
	/* Idle for half the servers' idle timeout: a new one, so that a
	 * request never goes out on a connection the server is about to drop. */
	if (s->link && c->cfg.xport.idle_timeout_s &&
	    xp_conn_idle_ms(s->link->conn) > (int64_t)c->cfg.xport.idle_timeout_s * 500) {
		link_unref(s->link);
		s->link = NULL;
	}
	if (!s->link) {
		l = calloc(1, sizeof(*l));
		if (!l) {
			ret = -ENOMEM;
			rpfsc_err_set("%s: out of memory", rpfsc_desc(c, srv, role));
			goto unlock;
		}
		/* Holding the server's lock while connecting: threads that want
		 * the same server wait for this attempt rather than pile on. */
		ret = link_connect(c, srv, role, &l->conn);
		if (ret) {
			if (ret == -ETIMEDOUT)
				mark_quiet(c, s, rpfs_errmsg());
			free(l);
			goto unlock;
		}
		s->quiet_ms = 0;
		l->refs = 1;
		s->link = l;
	}
	s->link->refs++;
	*out = s->link;
unlock:
	pthread_mutex_unlock(&s->lock);
	return ret;
}

void rpfsc_link_put(struct rpfs_client *c, int srv, struct rpfsc_link *l)
{
	struct rpfsc_server *s = &c->srv[srv];

	pthread_mutex_lock(&s->lock);
	link_unref(l);
	pthread_mutex_unlock(&s->lock);
}

/* ---- calls -------------------------------------------------------------- */

int rpfsc_call_error(struct rpfs_client *c, int srv, enum rpfsc_role role,
		     struct rpfsc_link *l, const char *what, int err)
{
	/* A broken connection means the wire failed the call, not the server:
	 * the cause is the transport's, and the subject adds nothing. */
	bool transport = l && xp_conn_error(l->conn) != 0;

	return rpfsc_err_server(rpfsc_desc(c, srv, role), transport ? NULL : what, err,
				c->cfg.xport.timeout_ms, transport);
}

static int run(struct rpfs_client *c, struct rpfsc_op *ops, int n, bool every)
{
	int first = 0, ret;

	for (int i = 0; i < n; i++) {
		struct rpfsc_op *op = &ops[i];

		op->started = false;
		op->link = NULL;
		op->call.status = 0;
		if (first && !every)
			continue;
		ret = rpfsc_link_get(c, op->srv, op->role, &op->link);
		if (ret) {
			op->call.status = ret;
			first = first ? first : ret;
			continue;
		}
		memset(&op->call, 0, sizeof(op->call));
		op->call.req = op->body;
		op->call.req_len = op->body_len;
		op->call.rep = op->rep;
		op->call.rep_max = op->rep_max;
		ret = xp_call_start(op->link->conn, &op->call);
		if (ret) {
			op->call.status = ret;
			if (!first)
				first = rpfsc_call_error(c, op->srv, op->role, op->link,
							 op->what, ret);
			continue;
		}
		op->started = true;
	}
	for (int i = 0; i < n; i++) {
		struct rpfsc_op *op = &ops[i];

		if (op->started) {
			ret = xp_call_wait(&op->call);
			if (ret && !first)
				first = rpfsc_call_error(c, op->srv, op->role, op->link,
							 op->what, ret);
		}
		if (op->link)
			rpfsc_link_put(c, op->srv, op->link);
		op->link = NULL;
	}
	return first;
}

int rpfsc_run(struct rpfs_client *c, struct rpfsc_op *ops, int n)
{
	return run(c, ops, n, false);
}

int rpfsc_run_every(struct rpfs_client *c, struct rpfsc_op *ops, int n)
{
	return run(c, ops, n, true);
}

int rpfsc_call1(struct rpfs_client *c, int srv, enum rpfsc_role role, const char *what,
		const void *body, size_t body_len, void *rep, size_t rep_max,
		size_t *rep_len)
{
	struct rpfsc_op op = {
		.srv = srv,
		.role = role,
		.what = what,
		.body = body,
		.body_len = body_len,
		.rep = rep,
		.rep_max = rep_max,
	};
	int ret = rpfsc_run(c, &op, 1);

	if (rep_len)
		*rep_len = op.call.rep_len;
	return ret;
}

/* ---- paths -------------------------------------------------------------- */

int rpfsc_path_norm(const char *path, char *out)
{
	size_t n = 0;
	const char *p = path;

	if (!path || path[0] != '/') {
		rpfsc_err_set("%s: not an absolute path", path ? path : "(null)");
		return -EINVAL;
	}
	while (*p) {
		const char *name;
		size_t len;

		while (*p == '/')
			p++;
		name = p;
		while (*p && *p != '/')
			p++;
		len = (size_t)(p - name);
		if (len == 0 || (len == 1 && name[0] == '.'))
			continue;
		if (len == 2 && name[0] == '.' && name[1] == '.') {
			/* ".." of the root is the root, as in POSIX. */
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
			continue;
		}
		if (len > RPC_NAME_MAX || n + 1 + len > RPC_PATH_MAX) {
			rpfsc_err_set("%s: name too long", path);
			return -ENAMETOOLONG;
		}
		out[n++] = '/';
		memcpy(out + n, name, len);
		n += len;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	return 0;
}

/* ---- init and finalize -------------------------------------------------- */

static uint64_t make_lock_owner(void)
{
	uint64_t v = 0;
	struct timespec ts;

	/* Owners must differ between clients of the whole cluster. */
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		v = ((uint64_t)getpid() << 40) ^ (uint64_t)ts.tv_nsec ^
		    ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)(uintptr_t)&v;
	}
	return v ? v : 1;
}

static char *desc_dup(const char *role, int idx, const struct rpfs_server_cfg *s)
{
	char buf[400];

	snprintf(buf, sizeof(buf), "%s server %d (%s:%s)", role, idx, s->address,
		 s->port);
	return strdup(buf);
}

void rpfsc_client_free(struct rpfs_client *c)
{
	if (c->srv) {
		for (uint32_t i = 0; i < c->cfg.nservers; i++) {
			if (c->srv[i].link)
				link_unref(c->srv[i].link);
			pthread_mutex_destroy(&c->srv[i].lock);
		}
	}
	for (uint32_t i = 0; c->io_desc && i < c->cfg.nio; i++)
		free(c->io_desc[i]);
	for (uint32_t i = 0; c->meta_desc && i < c->cfg.nmeta; i++)
		free(c->meta_desc[i]);
	free(c->io_desc);
	free(c->meta_desc);
	free(c->srv);
	if (c->fab)
		xp_fabric_close(c->fab);
	rpfs_config_free(&c->cfg);
	pthread_mutex_destroy(&c->live_lock);
	pthread_mutex_destroy(&c->bg_lock);
	pthread_cond_destroy(&c->bg_done);
	free(c);
}

const char *rpfs_opt_name(int i)
{
	const struct xp_setting *s;

	for (int k = 0; (s = xp_setting_at(k)); k++)
		if (s->scope == XP_SCOPE_CLIENT && i-- == 0)
			return s->name;
	return NULL;
}

/* The config with the program's options (params.h gives the order). */
static int load_config(struct rpfs_client *c, const char *config,
		       const struct rpfs_opt *opts, int nopts, char *why, size_t whylen)
{
	struct xp_option *xo = NULL;
	int ret;

	if (nopts < 0 || (nopts > 0 && !opts)) {
		snprintf(why, whylen, "rpfs_init_opts: no list for %d options", nopts);
		return -EINVAL;
	}
	if (nopts > 0) {
		xo = calloc((size_t)nopts, sizeof(*xo));
		if (!xo)
			return -ENOMEM;
		for (int i = 0; i < nopts; i++)
			xo[i] = (struct xp_option){opts[i].key, opts[i].value};
	}
	ret = rpfs_config_load_opts(config, xo, nopts, &c->cfg, why, whylen);
	free(xo);
	return ret;
}

int rpfsc_client_new(const char *config, const struct rpfs_opt *opts, int nopts,
		     struct rpfs_client **out)
{
	struct rpfs_client *c;
	struct rpc_seg seg = {0, 1};
	char why[512] = "";
	uint8_t body[128];
	int ret;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		rpfsc_err_set("out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&c->live_lock, NULL);
	pthread_mutex_init(&c->bg_lock, NULL);
	pthread_cond_init(&c->bg_done, NULL);
	list_init(&c->files);
	list_init(&c->live);
	ret = load_config(c, config, opts, nopts, why, sizeof(why));
	if (ret) {
		rpfsc_err_set("%s", why[0] ? why : strerror(-ret));
		free(c);
		return ret;
	}
	if (!c->cfg.nio || !c->cfg.nmeta) {
		rpfsc_err_set("%s: needs at least one metadata and one I/O server",
			      c->cfg.path);
		ret = -EINVAL;
		goto fail;
	}
	c->srv = calloc(c->cfg.nservers, sizeof(*c->srv));
	c->io_desc = calloc(c->cfg.nio, sizeof(char *));
	c->meta_desc = calloc(c->cfg.nmeta, sizeof(char *));
	if (!c->srv || !c->io_desc || !c->meta_desc)
		goto nomem;
	for (uint32_t i = 0; i < c->cfg.nservers; i++) {
		const struct rpfs_server_cfg *s = &c->cfg.servers[i];

		pthread_mutex_init(&c->srv[i].lock, NULL);
		if (s->io_index >= 0)
			snprintf(c->srv[i].desc, sizeof(c->srv[i].desc),
				 "io server %d (%s:%s)", s->io_index, s->address,
				 s->port);
		else if (s->meta_index >= 0)
			snprintf(c->srv[i].desc, sizeof(c->srv[i].desc),
				 "meta server %d (%s:%s)", s->meta_index, s->address,
				 s->port);
		else
			snprintf(c->srv[i].desc, sizeof(c->srv[i].desc),
				 "server %s (%s:%s)", s->name, s->address, s->port);
	}
	for (uint32_t i = 0; i < c->cfg.nio; i++)
		if (!(c->io_desc[i] =
			      desc_dup("io", (int)i, &c->cfg.servers[c->cfg.io[i]])))
			goto nomem;
	for (uint32_t i = 0; i < c->cfg.nmeta; i++)
		if (!(c->meta_desc[i] =
			      desc_dup("meta", (int)i, &c->cfg.servers[c->cfg.meta[i]])))
			goto nomem;

	/* The I/O body size for n segments is header + n * RPC_SEG_SIZE;
	 * learn the header from the encoder rather than restate the format. */
	ret = rpc_enc_io(body, sizeof(body), RPC_IO_READ, 0, NULL, &seg, 1);
	if (ret < RPC_SEG_SIZE) {
		rpfsc_err_set("internal error: can't encode an I/O request (%d)", ret);
		ret = -EINVAL;
		goto fail;
	}
	c->io_hdr = (size_t)ret - RPC_SEG_SIZE;
	/* room kept for a mirrored write's copies list */
	c->io_max_segs = rpc_io_max_segs(RPFSC_IO_BODY_CAP - RPC_IO_COPIES_ROOM);
	if (!c->io_max_segs) {
		rpfsc_err_set("internal error: no room for I/O segments");
		ret = -EINVAL;
		goto fail;
	}
	c->lock_owner = make_lock_owner();
	ret = rpfs_config_key(&c->cfg, &c->key, why, sizeof(why));
	if (ret) {
		rpfsc_err_set("%s", why);
		goto fail;
	}

	ret = xp_fabric_open(&c->cfg.xport, XP_CLIENT, &c->key, &c->fab);
	if (ret) {
		rpfsc_err_set("can't open the %s fabric: %s",
			      c->cfg.xport.provider[0] ? c->cfg.xport.provider
						       : "default",
			      strerror(-ret));
		c->fab = NULL;
		goto fail;
	}
	*out = c;
	return 0;
nomem:
	rpfsc_err_set("out of memory");
	ret = -ENOMEM;
fail:
	rpfsc_client_free(c);
	return ret;
}
