/* Open files: create/open, attributes, and the operations that concern a
 * whole file rather than a range of its data.
 *
 * A file is its attributes (handle, layout), nothing more: opening asks the
 * metadata server once, rpfs_open_attr asks no one (attributes broadcast by
 * MPI rank 0), and data then goes straight to the I/O servers (listio.c).
 * The logical size is never stored: as in PVFS2, it is rebuilt from the
 * datafile sizes of the file's I/O servers (IO_SIZE to each, in parallel),
 * and truncate sets each datafile to the size its slot has at that logical
 * size. Shared file pointers and byte-range locks are served by the
 * metadata server that owns the handle (top 16 bits of the handle).
 *
 * Every request naming the handle carries the capability the open got
 * (server/access.c): the rights it was opened with, until an expiry. It
 * is renewed with GETATTR once half its lifetime has passed, so a
 * long-open file keeps working and a chmod reaches it then: by the
 * progress thread in the background (keepalive.c), so that a post after a
 * long computation does not wait for the metadata server, or by the call
 * itself when there is none, when it failed (a chmod took the rights away:
 * the call reports it), or when it fell behind (three quarters passed). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client_priv.h"
#include "log.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* cap_lock held (or f new): cap, received now. Renew after half its
 * lifetime, in the caller after three quarters, by our own clock (the
 * servers' clocks need not agree with ours). */
static void cap_set(struct rpfs_file *f, const struct rpc_cap *cap)
{
	int64_t t = now_ms();

	f->attr.cap = *cap;
	if (!cap->lifetime_s) { /* none granted: nothing to renew */
		f->cap_renew_ms = f->cap_late_ms = INT64_MAX;
		return;
	}
	f->cap_renew_ms = t + (int64_t)cap->lifetime_s * 500;
	f->cap_late_ms = t + (int64_t)cap->lifetime_s * 750;
}

static int file_new(struct rpfs_client *c, const struct rpc_attr *a, const char *path,
		    const struct rpfsc_view *view, rpfs_file_t **out)
{
	struct rpfs_file *f = calloc(1, sizeof(*f));
	char what[64];

	if (!path) {
		snprintf(what, sizeof(what), "handle %#" PRIx64, a->handle);
		path = what;
	}
	if (f)
		f->path = strdup(path);
	if (!f || !f->path) {
		free(f);
		rpfsc_err_set("%s: out of memory", path);
		return -ENOMEM;
	}
	f->c = c;
	f->attr = *a;
	if (view)
		f->view = *view;
	cap_set(f, &a->cap);
	f->refs = 1;
	pthread_mutex_init(&f->cap_lock, NULL);
	pthread_cond_init(&f->renewed, NULL);
	pthread_mutex_lock(&c->live_lock);
	list_push_back(&c->files, &f->node);
	pthread_mutex_unlock(&c->live_lock);
	*out = f;
	return 0;
}

static uint16_t want_flags(unsigned flags)
{
	return (uint16_t)(((flags & RPFS_O_READ) ? RPC_WANT_READ : 0) |
			  ((flags & RPFS_O_WRITE) ? RPC_WANT_WRITE : 0));
}

static uint16_t rights_flags(uint32_t rights)
{
	return (uint16_t)(((rights & RPC_CAP_READ) ? RPC_WANT_READ : 0) |
			  ((rights & RPC_CAP_WRITE) ? RPC_WANT_WRITE : 0));
}

int rpfsc_file_cap_renew(struct rpfs_file *f)
{
	uint8_t body[64], rep[RPC_OPEN_REP_MAX];
	struct rpfsc_view view;
	struct rpc_attr a;
	size_t rep_len;
	int srv, len, ret;

	srv = rpfsc_meta_srv(f->c, place_meta_of_handle(f->attr.handle));
	pthread_mutex_lock(&f->cap_lock);
	len = rpc_enc_getattr(body, sizeof(body), f->attr.handle,
			      rights_flags(f->attr.cap.rights), &f->attr.cap);
	pthread_mutex_unlock(&f->cap_lock);
	if (srv < 0 || len < 0) {
		rpfsc_err_set("%s: can't renew its capability", f->path);
		return -EINVAL;
	}
	ret = rpfsc_call1(f->c, srv, RPFSC_META, f->path, body, (size_t)len, rep,
			  sizeof(rep), &rep_len);
	if (ret)
		return ret;
	if (rpc_dec_attr(rep, rep_len, &a) || a.handle != f->attr.handle ||
	    rep_len < RPC_ATTR_CAP_SIZE)
		return rpfsc_err_server(rpfsc_desc(f->c, srv, RPFSC_META), f->path,
					-EPROTO, 0, false);
	rpfsc_reply_view(rep, rep_len, &view);
	pthread_mutex_lock(&f->cap_lock);
	cap_set(f, &a.cap);
	/* views only move forward: a reply overtaken by a newer one */
	if (view.known && (!f->view.known || view.epoch >= f->view.epoch))
		f->view = view;
	pthread_mutex_unlock(&f->cap_lock);
	rpfsc_note_down(f->c, rep, rep_len);
	return 0;
}

bool rpfsc_copy_stale(struct rpfs_file *f, uint32_t slot)
{
	bool stale = false;

	pthread_mutex_lock(&f->cap_lock);
	for (uint32_t i = 0; i < f->view.n; i++)
		stale |= f->view.stale[i] == slot;
	pthread_mutex_unlock(&f->cap_lock);
	return stale;
}

uint64_t rpfsc_file_epoch(struct rpfs_file *f)
{
	uint64_t e;

	pthread_mutex_lock(&f->cap_lock);
	e = f->view.epoch;
	pthread_mutex_unlock(&f->cap_lock);
	return e;
}

int rpfsc_file_view_ensure(struct rpfs_file *f)
{
	bool known;

	if (!layout_redundant(&f->attr.layout))
		return 0;
	pthread_mutex_lock(&f->cap_lock);
	known = f->view.known;
	pthread_mutex_unlock(&f->cap_lock);
	return known ? 0 : rpfsc_file_cap_renew(f);
}

int rpfsc_file_view_reload(struct rpfs_file *f, uint64_t seen)
{
	if (seen && rpfsc_file_epoch(f) >= seen)
		return 0; /* another thread reloaded it meanwhile */
	return rpfsc_file_cap_renew(f);
}

/* f's view now (a copy). */
static void view_of(struct rpfs_file *f, struct rpfsc_view *v)
{
	pthread_mutex_lock(&f->cap_lock);
	*v = f->view;
	pthread_mutex_unlock(&f->cap_lock);
}

static bool view_stale(const struct rpfsc_view *v, uint32_t slot)
{
	for (uint32_t i = 0; v && i < v->n; i++)
		if (v->stale[i] == slot)
			return true;
	return false;
}

bool rpfsc_file_renew_begin(struct rpfs_file *f)
{
	bool due;

	pthread_mutex_lock(&f->cap_lock);
	due = !f->closed && !f->renewing && now_ms() >= f->cap_renew_ms;
	if (due)
		f->renewing = true;
	pthread_mutex_unlock(&f->cap_lock);
	return due;
}

void rpfsc_file_renew_end(struct rpfs_file *f, int ret)
{
	pthread_mutex_lock(&f->cap_lock);
	/* Failed (refused after a chmod, or no answer): the next call renews
	 * it itself and reports why, as without a background. */
	if (ret && f->cap_late_ms > f->cap_renew_ms)
		f->cap_late_ms = f->cap_renew_ms;
	f->renewing = false;
	pthread_cond_broadcast(&f->renewed);
	pthread_mutex_unlock(&f->cap_lock);
}

void rpfsc_file_closing(struct rpfs_file *f)
{
	pthread_mutex_lock(&f->cap_lock);
	f->closed = true;
	while (f->renewing)
		pthread_cond_wait(&f->renewed, &f->cap_lock);
	pthread_mutex_unlock(&f->cap_lock);
}

/* Never holds cap_lock across the call: the background renewal, on the
 * progress thread, takes it. Two threads finding it due both renew it:
 * either capability is good. */
int rpfsc_file_cap(struct rpfs_file *f, struct rpc_cap *cap)
{
	int64_t due;
	int ret;

	pthread_mutex_lock(&f->cap_lock);
	due = __atomic_load_n(&f->c->keepalive, __ATOMIC_RELAXED) ? f->cap_late_ms
								  : f->cap_renew_ms;
	if (now_ms() < due) {
		*cap = f->attr.cap;
		pthread_mutex_unlock(&f->cap_lock);
		return 0;
	}
	pthread_mutex_unlock(&f->cap_lock);
	ret = rpfsc_file_cap_renew(f);
	if (ret)
		return ret;
	pthread_mutex_lock(&f->cap_lock);
	*cap = f->attr.cap;
	pthread_mutex_unlock(&f->cap_lock);
	return 0;
}

/* A failed CREATE whose reply names the I/O server that could not make the
 * datafile (rpc.h): the message names that server; otherwise it stays the
 * metadata server's. */
static int create_error(struct rpfs_client *c, int srv, const char *path,
			const uint8_t *rep, size_t rep_len, int err)
{
	uint64_t io;

	if (rep_len == 8 && !rpc_dec_u64(rep, rep_len, &io) && io < c->cfg.nio)
		return rpfsc_err_create_io(c, srv, path, (uint32_t)io, err);
	return err;
}

int rpfs_create(rpfs_client_t *c, const char *path, uint32_t mode, unsigned flags,
		const struct rpfs_create_opts *opts, rpfs_file_t **out)
{
	return rpfsc_create(c, path, mode, flags, opts, 0, out);
}

int rpfsc_create(rpfs_client_t *c, const char *path, uint32_t mode, unsigned flags,
		 const struct rpfs_create_opts *opts, uint32_t redundancy,
		 rpfs_file_t **out)
{
	char norm[RPC_PATH_MAX + 1];
	uint8_t body[RPFSC_META_BODY_CAP];
	uint8_t rep[RPC_OPEN_REP_MAX];
	struct rpfsc_view view;
	struct rpc_attr a;
	size_t rep_len;
	int srv, len, ret;

	*out = NULL;
	ret = rpfsc_path_norm(path, norm);
	if (ret)
		return ret;
	srv = rpfsc_meta_srv(c, place_meta_of_path(&c->cfg, norm));
	if (!(flags & RPFS_O_RDWR))
		flags |= RPFS_O_RDWR;
	len = rpc_enc_create_red(
		body, sizeof(body), norm, mode & 07777, (uint32_t)geteuid(),
		(uint32_t)getegid(),
		((flags & RPFS_O_EXCL) ? RPC_CREATE_EXCL : 0) | want_flags(flags),
		opts ? opts->stripe_unit : 0, opts ? opts->stripe_count : 0,
		opts ? opts->first_server : -1, redundancy);
	if (len < 0) {
		rpfsc_err_set("%s: can't encode the request: %s", norm, strerror(-len));
		return len;
	}
	ret = rpfsc_call1(c, srv, RPFSC_META, norm, body, (size_t)len, rep, sizeof(rep),
			  &rep_len);
	if (ret)
		return create_error(c, srv, norm, rep, rep_len, ret);
	if (rpc_dec_attr(rep, rep_len, &a) || rpfsc_attr_layout(c, &a))
		return rpfsc_err_server(rpfsc_desc(c, srv, RPFSC_META), norm, -EPROTO, 0,
					false);
	rpfsc_note_down(c, rep, rep_len);
	rpfsc_reply_view(rep, rep_len, &view);
	if (a.type != RPC_TYPE_FILE) {
		/* Without EXCL an existing name answers with its attributes. */
		rpfsc_err_set("%s: %s", norm, strerror(EISDIR));
		return -EISDIR;
	}
	return file_new(c, &a, norm, &view, out);
}

int rpfs_open(rpfs_client_t *c, const char *path, unsigned flags, rpfs_file_t **out)
{
	char norm[RPC_PATH_MAX + 1];
	struct rpfsc_view view;
	struct rpc_attr a;
	int ret;

	*out = NULL;
	if (!(flags & RPFS_O_RDWR))
		flags |= RPFS_O_READ;
	ret = rpfsc_lookup_view(c, path, want_flags(flags), norm, &a, &view);
	if (ret)
		return ret;
	if (a.type != RPC_TYPE_FILE) {
		rpfsc_err_set("%s: %s", norm, strerror(EISDIR));
		return -EISDIR;
	}
	return file_new(c, &a, norm, &view, out);
}

int rpfs_open_attr(rpfs_client_t *c, const struct rpfs_stat *st, rpfs_file_t **out)
{
	return rpfs_open_attr_path(c, st, NULL, out);
}

int rpfs_open_attr_path(rpfs_client_t *c, const struct rpfs_stat *st, const char *path,
			rpfs_file_t **out)
{
	char norm[RPC_PATH_MAX + 1], what[64];
	struct rpc_attr a = {0};

	*out = NULL;
	/* Only for messages: a name that does not normalize is shown as given. */
	if (path && !rpfsc_path_norm(path, norm))
		path = norm;
	snprintf(what, sizeof(what), "handle %#" PRIx64, st->handle);
	if (st->type != RPFS_TYPE_FILE) {
		rpfsc_err_set("%s: %s", path ? path : what, strerror(EISDIR));
		return -EISDIR;
	}
	a.handle = st->handle;
	a.type = RPC_TYPE_FILE;
	a.mode = st->mode;
	a.uid = st->uid;
	a.gid = st->gid;
	a.atime = st->atime;
	a.mtime = st->mtime;
	a.ctime = st->ctime;
	a.layout.stripe_unit = st->stripe_unit;
	a.layout.stripe_count = st->stripe_count;
	a.layout.first_server = st->first_server;
	a.layout.nservers = c->cfg.nio;
	rpc_dec_cap(st->cap, &a.cap);
	if (place_meta_of_handle(a.handle) >= c->cfg.nmeta || rpfsc_attr_layout(c, &a)) {
		rpfsc_err_set(
			"%s: attributes don't fit this cluster (%u metadata, %u I/O servers)",
			path ? path : what, c->cfg.nmeta, c->cfg.nio);
		return -EINVAL;
	}
	return file_new(c, &a, path, NULL, out);
}

void rpfsc_file_put_locked(struct rpfs_file *f)
{
	if (--f->refs)
		return;
	list_remove(&f->node);
	pthread_mutex_destroy(&f->cap_lock);
	pthread_cond_destroy(&f->renewed);
	free(f->path);
	free(f);
}

void rpfsc_files_free_all(struct rpfs_client *c)
{
	pthread_mutex_lock(&c->live_lock);
	while (!list_empty(&c->files)) {
		struct rpfs_file *f =
			list_entry(list_first(&c->files), struct rpfs_file, node);

		f->refs = 1;
		rpfsc_file_put_locked(f);
	}
	pthread_mutex_unlock(&c->live_lock);
}

void rpfs_file_attr(rpfs_file_t *f, struct rpfs_stat *st)
{
	pthread_mutex_lock(&f->cap_lock);
	rpfsc_attr_to_stat(&f->attr, st);
	pthread_mutex_unlock(&f->cap_lock);
}

/* A path's attributes, with a file's size and data times from its I/O
 * servers (the same requests). */
int rpfs_stat(rpfs_client_t *c, const char *path, struct rpfs_stat *st)
{
	char norm[RPC_PATH_MAX + 1];
	int64_t mtime = 0, ctime = 0;
	struct rpfsc_view view;
	struct rpc_attr a;
	uint64_t size = 0;
	int ret;

	ret = rpfsc_lookup_view(c, path, 0, norm, &a, &view);
	if (ret)
		return ret;
	if (a.type == RPC_TYPE_FILE) {
		ret = rpfsc_file_size_times(c, &a, &view, norm, &size, &mtime, &ctime);
		if (ret)
			return ret;
	}
	rpfsc_attr_to_stat(&a, st);
	rpfsc_attr_fold_data(&a, mtime, ctime, st);
	st->size = size;
	return 0;
}

/* ---- per-datafile operations -------------------------------------------- */

/* Of a mirrored file's IO_SIZE, one copy of each slot
 * answering is enough (every acknowledged write is on every copy:
 * io_forward.c); the copies that did not answer count as empty in sizes.
 * 0, or the first failure of a slot none of whose copies answered (its
 * message set again). */
static int every_slot_has_a_copy(struct rpfs_client *c, const struct rpc_attr *a,
				 const struct rpfsc_view *view, struct rpfsc_op *ops,
				 struct rpc_io_size *sizes)
{
	const struct rpfs_layout *l = &a->layout;

	for (uint32_t s = 0; s < l->stripe_count; s++) {
		int err = 0, errsrv = -1;
		bool any = false;

		for (uint32_t k = 0; k < layout_copies(l); k++) {
			uint32_t cs = layout_copy_slot(l, s, k);

			if (!ops[cs].call.status && !view_stale(view, cs)) {
				any = true;
			} else if (view_stale(view, cs)) {
				/* missed writes: neither its size nor its sync counts */
				if (sizes)
					memset(&sizes[cs], 0, sizeof(sizes[cs]));
			} else {
				if (!err) {
					err = ops[cs].call.status;
					errsrv = ops[cs].srv;
				}
				if (sizes)
					memset(&sizes[cs], 0, sizeof(sizes[cs]));
			}
		}
		if (!any && !err) {
			rpfsc_err_set("%s: every copy of stripe slot %u is stale (missed "
				      "writes): no copy holds its bytes",
				      ops[0].what, s);
			return -EIO;
		}
		if (!any)
			return rpfsc_call_error(c, errsrv, RPFSC_IO, NULL, ops[0].what,
						err);
	}
	return 0;
}

/* A mirrored file's IO_SIZE: first to the copies whose servers
 * are not known to be down (rpfsc_server_suspect), then, for a slot none
 * of those answered, to its other copies; so a stopped copy costs no
 * timeout while another answers. ops[i].call.status is each result (-EAGAIN
 * for one not sent). */
static int run_mirror(struct rpfs_client *c, const struct rpc_attr *a,
		      const struct rpfsc_view *view, struct rpfsc_op *ops, uint32_t n)
{
	const struct rpfs_layout *l = &a->layout;
	struct rpfsc_op *run = calloc(n, sizeof(*run));
	uint32_t *idx = calloc(n, sizeof(*idx));
	bool *sent = calloc(n, sizeof(*sent));
	int ret = -ENOMEM;

	if (!run || !idx || !sent) {
		rpfsc_err_set("%s: out of memory", ops[0].what);
		goto out;
	}
	for (uint32_t s = 0; s < n; s++)
		ops[s].call.status = -EAGAIN;
	for (int pass = 0; pass < 2; pass++) {
		uint32_t k = 0;

		for (uint32_t s = 0; s < n; s++) {
			uint32_t data = s % l->stripe_count;
			bool answered = false;

			if (sent[s] || view_stale(view, s))
				continue;
			for (uint32_t j = 0; j < layout_copies(l); j++)
				answered |=
					!ops[layout_copy_slot(l, data, j)].call.status;
			if (answered ||
			    (pass == 0 && rpfsc_server_suspect(c, ops[s].srv)))
				continue;
			run[k] = ops[s];
			idx[k++] = s;
			sent[s] = true;
		}
		if (k)
			rpfsc_run_every(c, run, (int)k);
		for (uint32_t i = 0; i < k; i++)
			ops[idx[i]].call = run[i].call;
	}
	ret = every_slot_has_a_copy(c, a, view, ops, NULL);
out:
	free(run);
	free(idx);
	free(sent);
	return ret;
}

/* A mirrored file's IO_SYNC: every copy that is not stale, so that what
 * the sync covers survives the loss of any of them (one that can't be
 * reached fails it, naming its server: a stale copy is not synced, it is
 * resynced whole). A copy whose server lost its datafile (-ESTALE: storage
 * replaced) or that a resync is filling (-RPC_EBEHIND) holds nothing to
 * sync and is stale in the metadata server's view already, or about to
 * be (meta_rebuild.c): it counts as stale when another copy of its slot
 * synced. */
static bool slot_synced(const struct rpc_attr *a, const struct rpfsc_op *run,
			const uint32_t *idx, uint32_t k, uint32_t slot)
{
	const struct rpfs_layout *l = &a->layout;

	for (uint32_t i = 0; i < k; i++)
		if (idx[i] % l->stripe_count == slot % l->stripe_count &&
		    idx[i] != slot && !run[i].call.status)
			return true;
	return false;
}

static int sync_copies(struct rpfs_client *c, const struct rpc_attr *a,
		       const struct rpfsc_view *view, struct rpfsc_op *ops, uint32_t n)
{
	struct rpfsc_op *run = calloc(n, sizeof(*run));
	uint32_t *idx = calloc(n, sizeof(*idx)), k = 0;
	int ret = 0;

	if (!run || !idx) {
		free(run);
		free(idx);
		rpfsc_err_set("%s: out of memory", ops[0].what);
		return -ENOMEM;
	}
	for (uint32_t s = 0; s < n; s++)
		if (!view_stale(view, s)) {
			run[k] = ops[s];
			idx[k++] = s;
		}
	rpfsc_run_every(c, run, (int)k);
	for (uint32_t i = 0; i < k && !ret; i++) {
		int st = run[i].call.status;

		if ((st == -ESTALE || st == -RPC_EBEHIND) &&
		    slot_synced(a, run, idx, k, idx[i]))
			continue;
		if (st)
			ret = rpfsc_call_error(c, run[i].srv, RPFSC_IO, NULL, run[i].what,
					       st);
	}
	free(run);
	free(idx);
	return ret;
}

/* One request per slot of the layout, all in flight at once: IO_SIZE
 * (sizes[] gets each datafile's size and times), IO_TRUNCATE to the slot's
 * share of size, or IO_SYNC. A mirrored file's size and sync need one copy
 * of each slot (every_slot_has_a_copy), its sync every copy not stale
 * (sync_copies); its truncate goes through the primaries (listio.c). */
static int per_slot(struct rpfs_client *c, const struct rpc_attr *a,
		    const struct rpfsc_view *view, const char *what, uint16_t op,
		    uint64_t size, struct rpc_io_size *sizes)
{
	return rpfsc_per_slot(c, a, view, what, op, size, sizes, op == RPC_IO_TRUNCATE);
}

int rpfsc_mark_member_stale(struct rpfs_client *c, const struct rpc_attr *a,
			    uint32_t slot, uint32_t member, const char *what)
{
	int srv = rpfsc_meta_srv(c, place_meta_of_handle(a->handle));
	uint8_t body[128], rep[16 + 4 * RPC_STALE_MAX];
	int len = rpc_enc_mirror_repair(body, sizeof(body), a->handle, &a->cap, slot,
					member);
	size_t rep_len;

	if (srv < 0) {
		rpfsc_err_set("%s: handle names no metadata server", what);
		return -EINVAL;
	}
	if (len < 0) {
		rpfsc_err_set("%s: can't encode the request: %s", what, strerror(-len));
		return len;
	}
	return rpfsc_call1(c, srv, RPFSC_META, what, body, (size_t)len, rep, sizeof(rep),
			   &rep_len);
}

/* An ec file's parity member in slot ps missed a truncate or a sync for
 * want of its server: marked stale (as rpfs verify --repair does), for its
 * resync to re-encode it whole when it is back. */
static int parity_missed(struct rpfs_client *c, const struct rpc_attr *a, uint32_t ps,
			 const char *what)
{
	const struct rpfs_layout *l = &a->layout;

	return rpfsc_mark_member_stale(
		c, a, layout_ec_member(l, layout_ec_group(l, ps), 0), ps, what);
}

/* An ec file's per-slot op: the data slots must all answer (a size: or
 * their group's parity members' record of it, rpfsc_ec_sizes); the parity
 * slots are not asked a size (they add no byte), a stale one is skipped
 * (its resync re-encodes it, cut to the data; but a truncate, below), and
 * one whose server is lost is marked stale and the op goes on. A skipped slot's status is
 * -ENODATA. */
static int run_ec(struct rpfs_client *c, const struct rpc_attr *a,
		  const struct rpfsc_view *view, const char *what, uint16_t op,
		  struct rpfsc_op *ops, uint32_t n)
{
	uint32_t nd = a->layout.stripe_count, np = 0;
	struct rpfsc_op *pops = calloc(n - nd ? n - nd : 1, sizeof(*pops));
	uint32_t *which = calloc(n - nd ? n - nd : 1, sizeof(*which));
	bool *stale_too = calloc(n - nd ? n - nd : 1, sizeof(*stale_too));
	int ret = !pops || !which || !stale_too ? -ENOMEM
		  : op == RPC_IO_SIZE		? rpfsc_ec_sizes(c, a, view, what, ops)
						: rpfsc_run(c, ops, (int)nd);

	for (uint32_t s = nd; s < n; s++) {
		bool stale = false;

		for (uint32_t i = 0; view && i < view->n; i++)
			stale |= view->stale[i] == s;
		ops[s].call.status = -ENODATA;
		if (ret || op == RPC_IO_SIZE)
			continue;
		/* A stale member's truncate too, when its server is not known
		 * down, and whatever comes of it: its resync may have cut it
		 * and set its record of sizes already, before its mark goes
		 * (a truncate of the data members waits for the resync's last
		 * holds: server/ec_hold.c). */
		if (stale &&
		    (op != RPC_IO_TRUNCATE || rpfsc_server_suspect(c, ops[s].srv)))
			continue;
		pops[np] = ops[s];
		which[np] = s;
		stale_too[np++] = stale;
	}
	if (!ret && np && rpfsc_run_every(c, pops, (int)np)) {
		ret = 0;
		for (uint32_t i = 0; i < np && !ret; i++) {
			int st = pops[i].call.status;

			if (st && stale_too[i]) {
				log_info("%s: %s: the stale parity member's truncate: %s "
					 "(its resync cuts it)",
					 what, rpfsc_desc(c, pops[i].srv, RPFSC_IO),
					 strerror(-st));
			} else if (st && !rpfsc_lost_errno(st)) {
				ret = rpfsc_err_server(
					rpfsc_desc(c, pops[i].srv, RPFSC_IO), what, st, 0,
					false);
			} else if (st && (ret = parity_missed(c, a, which[i], what))) {
				/* neither reached nor marked: the op failed */
			} else if (st) {
				log_info("%s: %s: parity member missed, marked stale",
					 what, rpfsc_desc(c, pops[i].srv, RPFSC_IO));
			}
		}
	}
	for (uint32_t i = 0; i < np; i++)
		ops[which[i]].call = pops[i].call;
	free(pops);
	free(which);
	free(stale_too);
	return ret;
}

/* An ec parity slot's truncate: its new size, and its group's data
 * members', which its record of their sizes takes (the file's size with
 * one of them lost). */
static int enc_parity_truncate(void *buf, size_t cap, const struct rpc_attr *a,
			       uint32_t ps, uint64_t size)
{
	const struct rpfs_layout *l = &a->layout;
	uint32_t g = layout_ec_group(l, ps), k = l->data_cells;
	uint64_t ends[RPC_EC_MEMBERS_MAX];

	if (k > RPC_EC_MEMBERS_MAX)
		return -EINVAL;
	for (uint32_t i = 0; i < k; i++)
		ends[i] = layout_local_size(l, layout_ec_member(l, g, i), size);
	return rpc_enc_truncate_ends(buf, cap, a->handle, &a->cap,
				     layout_local_size(l, ps, size), ps, ends, k);
}

int rpfsc_per_slot(struct rpfs_client *c, const struct rpc_attr *a,
		   const struct rpfsc_view *view, const char *what, uint16_t op,
		   uint64_t size, struct rpc_io_size *sizes, bool every_copy)
{
	uint32_t n = layout_slots(&a->layout);
	struct rpfsc_op *ops = calloc(n, sizeof(*ops));
	uint8_t(*body)[96 + 8 * RPC_EC_MEMBERS_MAX] = calloc(n, sizeof(*body));
	uint8_t(*rep)[RPC_IO_SIZE_REP] = calloc(n, sizeof(*rep));
	int ret = 0;

	if (!ops || !body || !rep) {
		ret = -ENOMEM;
		rpfsc_err_set("%s: out of memory", what);
		goto out;
	}
	for (uint32_t s = 0; s < n; s++) {
		int len = op == RPC_IO_TRUNCATE && s >= a->layout.stripe_count &&
					  a->layout.kind == RPFS_LAYOUT_EC
				  ? enc_parity_truncate(body[s], sizeof(body[s]), a, s,
							size)
			  : op == RPC_IO_TRUNCATE
				  ? rpc_enc_truncate(
					    body[s], sizeof(body[s]), a->handle, &a->cap,
					    layout_local_size(&a->layout, s, size))
				  : rpc_enc_handle_op(body[s], sizeof(body[s]), op,
						      a->handle, &a->cap);

		if (len < 0) {
			ret = len;
			rpfsc_err_set("%s: can't encode the request: %s", what,
				      strerror(-len));
			goto out;
		}
		ops[s].srv = rpfsc_io_srv(c, layout_server(&a->layout, s));
		ops[s].role = RPFSC_IO;
		ops[s].what = what;
		ops[s].body = body[s];
		ops[s].body_len = (size_t)len;
		ops[s].rep = rep[s];
		ops[s].rep_max = sizeof(rep[s]);
	}
	if (a->layout.kind == RPFS_LAYOUT_EC) {
		ret = run_ec(c, a, view, what, op, ops, n);
	} else if (layout_copies(&a->layout) > 1 && op == RPC_IO_SYNC) {
		ret = sync_copies(c, a, view, ops, n);
	} else if (layout_copies(&a->layout) > 1 && !every_copy) {
		ret = run_mirror(c, a, view, ops, n);
	} else {
		ret = rpfsc_run(c, ops, (int)n);
	}
	if (ret || !sizes)
		goto out;
	for (uint32_t s = 0; s < n; s++) {
		if (ops[s].call.status) {
			memset(&sizes[s], 0,
			       sizeof(sizes[s])); /* a copy that didn't answer */
			continue;
		}
		if (rpc_dec_io_size(rep[s], ops[s].call.rep_len, &sizes[s])) {
			ret = rpfsc_err_server(rpfsc_desc(c, ops[s].srv, RPFSC_IO), what,
					       -EPROTO, 0, false);
			goto out;
		}
	}
out:
	free(ops);
	free(body);
	free(rep);
	return ret;
}

int rpfsc_file_size_times(struct rpfs_client *c, const struct rpc_attr *a,
			  const struct rpfsc_view *view, const char *what, uint64_t *size,
			  int64_t *mtime, int64_t *ctime)
{
	uint32_t n = layout_slots(&a->layout);
	struct rpc_io_size *rs = calloc(n, sizeof(*rs));
	uint64_t *sizes = calloc(n, sizeof(*sizes));
	int ret = -ENOMEM;

	if (!rs || !sizes) {
		rpfsc_err_set("%s: out of memory", what);
		goto out;
	}
	ret = per_slot(c, a, view, what, RPC_IO_SIZE, 0, rs);
	if (ret)
		goto out;
	*mtime = *ctime = 0;
	for (uint32_t s = 0; s < n; s++) {
		sizes[s] = rs[s].size;
		*mtime = rs[s].mtime > *mtime ? rs[s].mtime : *mtime;
		*ctime = rs[s].ctime > *ctime ? rs[s].ctime : *ctime;
	}
	*size = layout_file_size(&a->layout, sizes);
out:
	free(rs);
	free(sizes);
	return ret;
}

int rpfsc_file_size(struct rpfs_client *c, const struct rpc_attr *a,
		    const struct rpfsc_view *view, const char *what, uint64_t *size)
{
	int64_t mtime, ctime;

	return rpfsc_file_size_times(c, a, view, what, size, &mtime, &ctime);
}

/* The file's attributes with a current capability and its mirror view, for
 * one operation. */
static int attr_now(rpfs_file_t *f, struct rpc_attr *a, struct rpfsc_view *view)
{
	int ret = rpfsc_file_view_ensure(f);

	*a = f->attr;
	view_of(f, view);
	return ret ? ret : rpfsc_file_cap(f, &a->cap);
}

int rpfs_getsize(rpfs_file_t *f, uint64_t *size)
{
	struct rpfsc_view view;
	struct rpc_attr a;
	int ret = attr_now(f, &a, &view);

	return ret ? ret : rpfsc_file_size(f->c, &a, &view, f->path, size);
}

/* Before an ec file's datafiles are cut: parity past a data cell's new
 * end must lose that cell's bytes there, or a decode would bring them
 * back. In each group the parity keeps the group's longest new data end
 * L (layout_local_size of a parity slot); a data slot whose new end n is
 * shorter has zeros written over [n, L) first, an ordinary ec write whose
 * deltas take its old bytes out of the parity. [n, L) lies within one
 * cell (the new ends of a group differ by at most a stripe unit), so this
 * writes at most a cell a data slot, whatever the size; the cut that
 * follows takes the zeros away again. */
static int ec_zero_tails(rpfs_file_t *f, uint64_t size)
{
	const struct rpfs_layout *l = &f->attr.layout;
	uint32_t groups = l->stripe_count / l->data_cells;
	size_t chunk = (size_t)(l->stripe_unit < (1u << 20) ? l->stripe_unit : 1u << 20);
	char *zeros = NULL;
	int ret = 0;

	for (uint32_t g = 0; g < groups && !ret; g++) {
		uint64_t end =
			layout_local_size(l, layout_ec_member(l, g, l->data_cells), size);

		for (uint32_t i = 0; i < l->data_cells && !ret; i++) {
			uint32_t slot = layout_ec_member(l, g, i);
			uint64_t n = layout_local_size(l, slot, size);

			for (uint64_t at = n; at < end && !ret;) {
				uint64_t off = layout_logical(l, slot, at),
					 len = end - at;
				ssize_t w;

				if (len > chunk)
					len = chunk;
				if (!zeros && !(zeros = calloc(1, chunk))) {
					rpfsc_err_set("%s: out of memory", f->path);
					return -ENOMEM;
				}
				w = rpfs_pwrite(f, zeros, (size_t)len, off);
				if (w < 0)
					ret = (int)w;
				else if ((uint64_t)w != len)
					ret = -EIO;
				at += len;
			}
		}
	}
	free(zeros);
	return ret;
}

/* An ec file's truncate changes every data member (zeros, then the cut):
 * one whose server is thought down (a heartbeat's list, a call that went
 * unanswered) is asked its size first, and if it does not answer the
 * truncate fails before anything changes, naming it (a write to a lost
 * data member is not built: the design note). Asked, not refused from
 * memory: a server started again is in the lists for a while yet. */
static int ec_data_members_up(rpfs_file_t *f)
{
	const struct rpfs_layout *l = &f->attr.layout;
	struct rpc_attr a = f->attr;
	int ret = rpfsc_file_cap(f, &a.cap);

	for (uint32_t s = 0; s < l->stripe_count && !ret; s++) {
		int srv = rpfsc_io_srv(f->c, layout_server(l, s)), len;
		uint8_t body[64], rep[RPC_IO_SIZE_REP];
		size_t rep_len;

		if (srv < 0 || !rpfsc_server_suspect(f->c, srv))
			continue;
		len = rpc_enc_handle_op(body, sizeof(body), RPC_IO_SIZE, a.handle,
					&a.cap);
		ret = len < 0 ? len
			      : rpfsc_call1(f->c, srv, RPFSC_IO, f->path, body,
					    (size_t)len, rep, sizeof(rep), &rep_len);
		if (ret && rpfsc_lost_errno(ret)) {
			rpfsc_err_set(
				"%s: can't truncate: %s (data member of stripe slot "
				"%u) is down, and an ec file's truncate needs every "
				"data member; nothing was changed",
				f->path, rpfsc_desc(f->c, srv, RPFSC_IO), s);
			return -EHOSTDOWN;
		}
		ret = 0; /* it answered: the truncate says the rest */
	}
	return ret;
}

int rpfs_truncate(rpfs_file_t *f, uint64_t size)
{
	struct rpfsc_view view;
	struct rpc_attr a;
	int ret;

	if (size > (uint64_t)INT64_MAX) {
		rpfsc_err_set("%s: size %llu is past the largest file size (2^63 - 1)",
			      f->path, (unsigned long long)size);
		return -EFBIG;
	}
	if (layout_copies(&f->attr.layout) > 1)
		return rpfsc_truncate_mirror(f, size);
	if (f->attr.layout.kind == RPFS_LAYOUT_EC &&
	    ((ret = ec_data_members_up(f)) || (ret = ec_zero_tails(f, size))))
		return ret;
	ret = attr_now(f, &a, &view);
	return ret ? ret
		   : per_slot(f->c, &a, &view, f->path, RPC_IO_TRUNCATE, size, NULL);
}

int rpfs_sync(rpfs_file_t *f)
{
	struct rpfsc_view view;
	struct rpc_attr a;
	int ret = attr_now(f, &a, &view);

	if (!ret)
		ret = per_slot(f->c, &a, &view, f->path, RPC_IO_SYNC, 0, NULL);
	/* After a sync a process sees what others wrote before theirs
	 * (MPI's sync-barrier-sync): for a mirrored file that includes the
	 * copies their writes marked stale. */
	if (!ret && layout_copies(&a.layout) > 1)
		ret = rpfsc_file_view_reload(f, 0);
	return ret;
}

/* ---- shared file pointer and locks -------------------------------------- */

static int handle_meta(rpfs_file_t *f)
{
	return rpfsc_meta_srv(f->c, place_meta_of_handle(f->attr.handle));
}

int rpfsc_handle_meta_cap(struct rpfs_file *f, int *srv, struct rpc_cap *cap)
{
	*srv = handle_meta(f);
	if (*srv < 0) {
		rpfsc_err_set("%s: handle names no metadata server", f->path);
		return -EINVAL;
	}
	return rpfsc_file_cap(f, cap);
}

int rpfs_fetch_add(rpfs_file_t *f, int64_t delta, int64_t *old)
{
	uint8_t body[64], rep[16];
	struct rpc_cap cap;
	size_t rep_len;
	uint64_t v;
	int srv, len, ret;

	ret = rpfsc_handle_meta_cap(f, &srv, &cap);
	if (ret)
		return ret;
	len = rpc_enc_fetch_add(body, sizeof(body), f->attr.handle, &cap, delta);
	if (len < 0) {
		rpfsc_err_set("%s: can't encode the request: %s", f->path,
			      strerror(-len));
		return len;
	}
	ret = rpfsc_call1(f->c, srv, RPFSC_META, f->path, body, (size_t)len, rep,
			  sizeof(rep), &rep_len);
	if (ret)
		return ret;
	if (rpc_dec_u64(rep, rep_len, &v))
		return rpfsc_err_server(rpfsc_desc(f->c, srv, RPFSC_META), f->path,
					-EPROTO, 0, false);
	*old = (int64_t)v;
	return 0;
}

static int lock_call(rpfs_file_t *f, uint16_t op, uint16_t flags, uint64_t off,
		     uint64_t len)
{
	uint8_t body[96];
	struct rpc_cap cap;
	int srv, blen, ret;

	ret = rpfsc_handle_meta_cap(f, &srv, &cap);
	if (ret)
		return ret;
	/* len 0 means "to the end of the file", whatever its size becomes. */
	if (!len)
		len = UINT64_MAX - off;
	blen = rpc_enc_lock(body, sizeof(body), op, flags, f->attr.handle, &cap, off, len,
			    f->c->lock_owner);
	if (blen < 0) {
		rpfsc_err_set("%s: bad lock range [%" PRIu64 ", +%" PRIu64 ")", f->path,
			      off, len);
		return blen;
	}
	return rpfsc_call1(f->c, srv, RPFSC_META, f->path, body, (size_t)blen, NULL, 0,
			   NULL);
}

int rpfs_lock(rpfs_file_t *f, uint64_t off, uint64_t len, int exclusive)
{
	/* The server never queues a waiter (a dead client would hold up the
	 * queue): a conflict is -EAGAIN and the client retries with backoff,
	 * for a bounded time, so a lock leaked by a crashed holder gives an
	 * error rather than a hang. */
	int64_t limit = 10 * (int64_t)f->c->cfg.xport.timeout_ms;
	int64_t start = now_ms();
	long delay_us = 50;
	int ret;

	for (;;) {
		ret = lock_call(f, RPC_LOCK, exclusive ? RPC_LOCK_EXCL : 0, off, len);
		if (ret != -EAGAIN)
			return ret;
		if (now_ms() - start > limit) {
			rpfsc_err_set("%s: %s: lock [%" PRIu64 ", +%" PRIu64
				      ") still held by another owner after %" PRId64
				      " ms",
				      rpfsc_desc(f->c, handle_meta(f), RPFSC_META),
				      f->path, off, len, limit);
			return -ETIMEDOUT;
		}
		usleep((useconds_t)delay_us);
		if (delay_us < 20000)
			delay_us *= 2;
	}
}

int rpfs_unlock(rpfs_file_t *f, uint64_t off, uint64_t len)
{
	return lock_call(f, RPC_UNLOCK, 0, off, len);
}
