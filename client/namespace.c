/* Namespace operations: requests on paths, sent to the metadata server that
 * owns the path (a hash of the normalized path, place_meta_of_path, placement.h), plus
 * the cluster-wide ones: readdir (a directory's entries are spread over
 * every metadata server by the same hash, so every server is asked and the
 * answers merged), statfs and ping.
 *
 * Paths are normalized here, once, so that every client hashes a name the
 * same way and servers only ever see the canonical form. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client_priv.h"
#include "log.h"

/* Normalized path and its metadata server (config index). */
static int path_owner(struct rpfs_client *c, const char *path, char *norm, int *srv)
{
	int ret = rpfsc_path_norm(path, norm);

	if (ret)
		return ret;
	*srv = rpfsc_meta_srv(c, place_meta_of_path(&c->cfg, norm));
	return 0;
}

/* An encoder failed on something the caller gave us. */
static int enc_error(const char *path, int err)
{
	rpfsc_err_set("%s: can't encode the request: %s", path, strerror(-err));
	return err;
}

/* A reply the server should not have sent. */
static int reply_error(struct rpfs_client *c, int srv, const char *what)
{
	return rpfsc_err_server(rpfsc_desc(c, srv, RPFSC_META), what, -EPROTO, 0, false);
}

int rpfs_mkdir(rpfs_client_t *c, const char *path, uint32_t mode)
{
	char norm[RPC_PATH_MAX + 1];
	uint8_t body[RPFSC_META_BODY_CAP];
	int srv, len, ret;

	ret = path_owner(c, path, norm, &srv);
	if (ret)
		return ret;
	len = rpc_enc_mkdir(body, sizeof(body), norm, mode & 07777, (uint32_t)geteuid(),
			    (uint32_t)getegid());
	if (len < 0)
		return enc_error(norm, len);
	return rpfsc_call1(c, srv, RPFSC_META, norm, body, (size_t)len, NULL, 0, NULL);
}

static int path_op(struct rpfs_client *c, uint16_t op, const char *path)
{
	char norm[RPC_PATH_MAX + 1];
	uint8_t body[RPFSC_META_BODY_CAP];
	int srv, len, ret;

	ret = path_owner(c, path, norm, &srv);
	if (ret)
		return ret;
	len = rpc_enc_path_op(body, sizeof(body), op, 0, norm);
	if (len < 0)
		return enc_error(norm, len);
	return rpfsc_call1(c, srv, RPFSC_META, norm, body, (size_t)len, NULL, 0, NULL);
}

int rpfs_rmdir(rpfs_client_t *c, const char *path)
{
	return path_op(c, RPC_RMDIR, path);
}

int rpfs_remove(rpfs_client_t *c, const char *path)
{
	/* The metadata server removes the datafiles itself (RPC_REMOVE), so a
	 * crashed client can't leave half a file behind. */
	return path_op(c, RPC_REMOVE, path);
}

int rpfs_rename(rpfs_client_t *c, const char *from, const char *to)
{
	char nfrom[RPC_PATH_MAX + 1], nto[RPC_PATH_MAX + 1];
	char what[2 * RPC_PATH_MAX + 32];
	uint8_t body[2 * RPFSC_META_BODY_CAP];
	int srv, len, ret;

	ret = path_owner(c, from, nfrom, &srv);
	if (!ret)
		ret = rpfsc_path_norm(to, nto);
	if (ret)
		return ret;
	snprintf(what, sizeof(what), "rename %s to %s", nfrom, nto);
	/* The owner of from answers; it refuses with -EXDEV a target that
	 * another metadata server holds. */
	len = rpc_enc_rename(body, sizeof(body), nfrom, nto);
	if (len < 0)
		return enc_error(what, len);
	ret = rpfsc_call1(c, srv, RPFSC_META, what, body, (size_t)len, NULL, 0, NULL);
	if (ret == -EXDEV)
		rpfsc_err_set("%s: %s: the paths (or the directory's entries) live on "
			      "different metadata servers: copy and remove instead",
			      rpfsc_desc(c, srv, RPFSC_META), what);
	return ret;
}

/* SETATTR of mode or owner (mask RPC_SET_MODE or RPC_SET_OWNER). */
static int setattr(rpfs_client_t *c, const char *path, uint32_t mask, uint32_t mode,
		   uint32_t uid, uint32_t gid)
{
	char norm[RPC_PATH_MAX + 1];
	uint8_t body[RPFSC_META_BODY_CAP];
	int srv, len, ret;

	ret = path_owner(c, path, norm, &srv);
	if (ret)
		return ret;
	len = rpc_enc_setattr(body, sizeof(body), norm, mask, mode, uid, gid, 0, 0);
	if (len < 0)
		return enc_error(norm, len);
	return rpfsc_call1(c, srv, RPFSC_META, norm, body, (size_t)len, NULL, 0, NULL);
}

int rpfs_setstripe(rpfs_client_t *c, const char *dir, uint64_t stripe_unit,
		   uint32_t stripe_count)
{
	char norm[RPC_PATH_MAX + 1];
	uint8_t body[RPFSC_META_BODY_CAP];
	int srv, len, ret;

	ret = path_owner(c, dir, norm, &srv);
	if (ret)
		return ret;
	len = rpc_enc_setstripe(body, sizeof(body), norm, stripe_unit, stripe_count);
	if (len < 0)
		return enc_error(norm, len);
	return rpfsc_call1(c, srv, RPFSC_META, norm, body, (size_t)len, NULL, 0, NULL);
}

int rpfs_chmod(rpfs_client_t *c, const char *path, uint32_t mode)
{
	return setattr(c, path, RPC_SET_MODE, mode & 07777, 0, 0);
}

int rpfs_chown(rpfs_client_t *c, const char *path, uint32_t uid, uint32_t gid)
{
	return setattr(c, path, RPC_SET_OWNER, 0, uid, gid);
}

int rpfs_utimes(rpfs_client_t *c, const char *path, int64_t atime_ns, int64_t mtime_ns)
{
	char norm[RPC_PATH_MAX + 1];
	uint8_t body[RPFSC_META_BODY_CAP];
	int srv, len, ret;

	ret = path_owner(c, path, norm, &srv);
	if (ret)
		return ret;
	len = rpc_enc_setattr(body, sizeof(body), norm, RPC_SET_TIMES, 0, 0, 0, atime_ns,
			      mtime_ns);
	if (len < 0)
		return enc_error(norm, len);
	return rpfsc_call1(c, srv, RPFSC_META, norm, body, (size_t)len, NULL, 0, NULL);
}

/* LOOKUP of a normalized path: the attributes, with the layout completed. */
static int lookup(struct rpfs_client *c, const char *norm, int srv, uint16_t flags,
		  struct rpc_attr *a, struct rpfsc_view *view)
{
	uint8_t body[RPFSC_META_BODY_CAP];
	uint8_t rep[RPC_OPEN_REP_MAX];
	size_t rep_len;
	int len, ret;

	len = rpc_enc_path_op(body, sizeof(body), RPC_LOOKUP, flags, norm);
	if (len < 0)
		return enc_error(norm, len);
	ret = rpfsc_call1(c, srv, RPFSC_META, norm, body, (size_t)len, rep, sizeof(rep),
			  &rep_len);
	if (ret)
		return ret;
	if (rpc_dec_attr(rep, rep_len, a))
		return reply_error(c, srv, norm);
	if (a->type == RPC_TYPE_FILE && rpfsc_attr_layout(c, a))
		return reply_error(c, srv, norm);
	rpfsc_note_down(c, rep, rep_len);
	if (view)
		rpfsc_reply_view(rep, rep_len, view);
	return 0;
}

int rpfsc_lookup_view(struct rpfs_client *c, const char *path, uint16_t flags, char *norm,
		      struct rpc_attr *a, struct rpfsc_view *view)
{
	int srv, ret;

	ret = path_owner(c, path, norm, &srv);
	return ret ? ret : lookup(c, norm, srv, flags, a, view);
}

int rpfsc_lookup(struct rpfs_client *c, const char *path, uint16_t flags, char *norm,
		 struct rpc_attr *a)
{
	return rpfsc_lookup_view(c, path, flags, norm, a, NULL);
}

/* ---- readdir ------------------------------------------------------------ */

struct dirlist {
	struct rpc_dirent *e;
	size_t n, cap;
};

/* One metadata server's listing, fetched page by page. */
struct dirpage {
	char cookie[RPC_NAME_MAX + 1];
	bool done;
	uint8_t *rep;
	uint8_t body[RPFSC_META_BODY_CAP];
};

static int dirent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rpc_dirent *)a)->name,
		      ((const struct rpc_dirent *)b)->name);
}

static int dirlist_add(struct dirlist *d, const struct rpc_dirent *e, uint32_t n)
{
	if (!n)
		return 0;
	if (d->n + n > d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		struct rpc_dirent *ne;

		while (cap < d->n + n)
			cap *= 2;
		ne = realloc(d->e, cap * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		d->e = ne;
		d->cap = cap;
	}
	memcpy(d->e + d->n, e, n * sizeof(*e));
	d->n += n;
	return 0;
}

/* Ask every metadata server for its entries of dir, in rounds of one page
 * per server in parallel, until none has more. */
static int readdir_all(struct rpfs_client *c, const char *norm, struct dirlist *out)
{
	uint32_t nmeta = c->cfg.nmeta;
	/* A page must fit one reply message: the transport gives replies
	 * inline_max + 4 KiB, less its header; each entry is at most
	 * 6 + RPC_NAME_MAX bytes after an 8-byte count and flag. */
	size_t rep_max = c->cfg.xport.inline_max + 4096 - 64;
	uint32_t per_page = (uint32_t)((rep_max - 8) / (6 + RPC_NAME_MAX));
	struct dirpage *pg = calloc(nmeta, sizeof(*pg));
	struct rpfsc_op *ops = calloc(nmeta, sizeof(*ops));
	struct rpc_dirent *ents = calloc(per_page ? per_page : 1, sizeof(*ents));
	int ret = 0;

	if (!pg || !ops || !ents || !per_page) {
		ret = -ENOMEM;
		rpfsc_err_set("%s: out of memory", norm);
		goto out;
	}
	for (uint32_t i = 0; i < nmeta; i++) {
		pg[i].rep = malloc(rep_max);
		if (!pg[i].rep) {
			ret = -ENOMEM;
			rpfsc_err_set("%s: out of memory", norm);
			goto out;
		}
	}
	for (;;) {
		int n = 0;

		for (uint32_t i = 0; i < nmeta; i++) {
			int len;

			if (pg[i].done)
				continue;
			len = rpc_enc_readdir(pg[i].body, sizeof(pg[i].body), norm,
					      pg[i].cookie, per_page);
			if (len < 0) {
				ret = enc_error(norm, len);
				goto out;
			}
			memset(&ops[n], 0, sizeof(ops[n]));
			ops[n].srv = rpfsc_meta_srv(c, i);
			ops[n].role = RPFSC_META;
			ops[n].what = norm;
			ops[n].body = pg[i].body;
			ops[n].body_len = (size_t)len;
			ops[n].rep = pg[i].rep;
			ops[n].rep_max = rep_max;
			n++;
		}
		if (!n)
			break;
		ret = rpfsc_run(c, ops, n);
		if (ret)
			goto out;
		n = 0;
		for (uint32_t i = 0; i < nmeta; i++) {
			uint32_t cnt, more;
			struct rpfsc_op *op;

			if (pg[i].done)
				continue;
			op = &ops[n++];
			if (rpc_dec_dirents(pg[i].rep, op->call.rep_len, ents, per_page,
					    &cnt, &more)) {
				ret = reply_error(c, op->srv, norm);
				goto out;
			}
			if (dirlist_add(out, ents, cnt)) {
				ret = -ENOMEM;
				rpfsc_err_set("%s: out of memory", norm);
				goto out;
			}
			/* An empty page with "more" would loop forever. */
			if (!more || !cnt)
				pg[i].done = true;
			else
				strcpy(pg[i].cookie, ents[cnt - 1].name);
		}
	}
out:
	for (uint32_t i = 0; pg && i < nmeta; i++)
		free(pg[i].rep);
	free(pg);
	free(ops);
	free(ents);
	return ret;
}

int rpfs_readdir(rpfs_client_t *c, const char *path,
		 int (*fn)(const char *name, uint32_t type, void *arg), void *arg)
{
	char norm[RPC_PATH_MAX + 1];
	struct dirlist d = {0};
	int ret;

	/* No LOOKUP first: the directory's owner checks it (ENOENT, ENOTDIR)
	 * in the same round as everyone lists their children. */
	ret = rpfsc_path_norm(path, norm);
	if (ret)
		return ret;
	ret = readdir_all(c, norm, &d);
	if (ret)
		goto out;
	if (d.n)
		qsort(d.e, d.n, sizeof(*d.e), dirent_cmp);
	for (size_t i = 0; i < d.n; i++) {
		if (i && !strcmp(d.e[i].name, d.e[i - 1].name))
			continue;
		ret = fn(d.e[i].name,
			 d.e[i].type == RPC_TYPE_DIR ? RPFS_TYPE_DIR : RPFS_TYPE_FILE,
			 arg);
		if (ret)
			break;
	}
out:
	free(d.e);
	return ret;
}

/* ---- cluster-wide ------------------------------------------------------- */

/* Is fsid among ids[0..n)? 0 (an older server's: unknown) never is. */
static bool seen(const uint64_t *ids, uint32_t n, uint64_t fsid)
{
	for (uint32_t i = 0; fsid && i < n; i++)
		if (ids[i] == fsid)
			return true;
	return false;
}

int rpfs_statfs(rpfs_client_t *c, struct rpfs_statfs *st)
{
	uint32_t n = c->cfg.nmeta + c->cfg.nio;
	struct rpfsc_op *ops = calloc(n, sizeof(*ops));
	uint8_t(*rep)[64] = calloc(n, sizeof(*rep));
	uint64_t *fsid = calloc(n, sizeof(*fsid));
	uint8_t meta_body[16], io_body[16];
	int mlen, ilen, ret;

	memset(st, 0, sizeof(*st));
	if (!ops || !rep || !fsid) {
		ret = -ENOMEM;
		rpfsc_err_set("statfs: out of memory");
		goto out;
	}
	mlen = rpc_enc_path_op(meta_body, sizeof(meta_body), RPC_STATFS_META, 0, NULL);
	ilen = rpc_enc_path_op(io_body, sizeof(io_body), RPC_IO_STATFS, 0, NULL);
	if (mlen < 0 || ilen < 0) {
		ret = enc_error("statfs", mlen < 0 ? mlen : ilen);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		bool meta = i < c->cfg.nmeta;

		ops[i].srv =
			meta ? rpfsc_meta_srv(c, i) : rpfsc_io_srv(c, i - c->cfg.nmeta);
		ops[i].role = meta ? RPFSC_META : RPFSC_IO;
		ops[i].what = "statfs";
		ops[i].body = meta ? meta_body : io_body;
		ops[i].body_len = (size_t)(meta ? mlen : ilen);
		ops[i].rep = rep[i];
		ops[i].rep_max = sizeof(rep[i]);
	}
	/* Every metadata server must answer (it holds a share of the names);
	 * an I/O server that does not is left out of the space and counted in
	 * io_unreachable, as Lustre's df leaves out an inactive OST: a mount
	 * must come up, and df answer, while a server is down. */
	ret = rpfsc_run_every(c, ops, (int)n);
	if (ret) {
		int first_io = 0;
		uint32_t io_ok = 0;

		for (uint32_t i = 0; i < n; i++) {
			int r = ops[i].call.status;

			if (i < c->cfg.nmeta && r) {
				/* The first failure may have been an I/O
				 * server's: name the metadata server. */
				ret = rpfsc_call_error(c, ops[i].srv, ops[i].role, NULL,
						       "statfs", r);
				goto out;
			}
			if (i >= c->cfg.nmeta && !r)
				io_ok++;
			else if (i >= c->cfg.nmeta && !first_io)
				first_io = r;
		}
		if (!io_ok)
			goto out;
		st->io_unreachable = c->cfg.nio - io_ok;
		log_info("statfs: %u of %u I/O servers did not answer (%s): their space "
			 "is not counted",
			 st->io_unreachable, c->cfg.nio, strerror(-first_io));
		ret = 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct rpc_statfs s;

		if (i >= c->cfg.nmeta && ops[i].call.status)
			continue;
		if (rpc_dec_statfs(rep[i], ops[i].call.rep_len, &s)) {
			ret = rpfsc_err_server(rpfsc_desc(c, ops[i].srv, ops[i].role),
					       "statfs", -EPROTO, 0, false);
			goto out;
		}
		fsid[i] = s.fsid;
		if (i < c->cfg.nmeta) {
			st->files += s.objects;
		} else if (!seen(fsid + c->cfg.nmeta, i - c->cfg.nmeta, s.fsid)) {
			/* Servers sharing a disk share its space: once. */
			st->total += s.total;
			st->avail += s.avail;
			st->free += s.free;
		}
	}
out:
	free(ops);
	free(rep);
	free(fsid);
	return ret;
}

int rpfs_ping(rpfs_client_t *c, int server, double *usec)
{
	uint8_t body[16];
	struct timespec t0, t1;
	struct rpfsc_link *l;
	int len, ret;

	if (server < 0 || (uint32_t)server >= c->cfg.nservers) {
		rpfsc_err_set("ping: no server %d (the cluster has %u)", server,
			      c->cfg.nservers);
		return -EINVAL;
	}
	len = rpc_enc_path_op(body, sizeof(body), RPC_PING, 0, NULL);
	if (len < 0)
		return enc_error("ping", len);
	/* Connect first, so the time is one round trip, not a handshake. */
	ret = rpfsc_link_get(c, server, RPFSC_ANY, &l);
	if (ret)
		return ret;
	rpfsc_link_put(c, server, l);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = rpfsc_call1(c, server, RPFSC_ANY, "ping", body, (size_t)len, NULL, 0, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (ret == -EAGAIN)
		rpfsc_err_set("%s is starting: it answers, but its start-up check is not "
			      "done",
			      c->srv[server].desc);
	if (!ret && usec)
		*usec = (double)(t1.tv_sec - t0.tv_sec) * 1e6 +
			(double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
	return ret;
}
