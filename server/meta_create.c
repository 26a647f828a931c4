/* Role meta's CREATE and MKDIR. The parent is asked of its owner (it may
 * live on another metadata server); a file gets a new handle and layout,
 * and its datafiles are made before its entry is stored (meta_datafiles.c),
 * skipping handles an I/O server already holds. A create is known to be
 * in progress (meta_handles.c) until its entry commits or it gives up. */
#include <errno.h>
#include <lmdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "layout.h"
#include "log.h"
#include "meta_priv.h"
#include "io_states.h"
#include "placement.h"
#include "redundancy.h"

#define META_CREATE_TRIES 4

/* The I/O servers new files must avoid now (io_states.c), into down[nio];
 * *first_down to the first of them (-1 if none). */
static int down_now(struct srv *s, bool **down, int *first_down)
{
	*first_down = -1;
	*down = calloc(s->cfg.nio ? s->cfg.nio : 1, sizeof(**down));
	if (!*down)
		return -ENOMEM;
	if (!io_states_down(s, *down)) {
		free(*down);
		*down = NULL;
		return 0;
	}
	for (uint32_t i = 0; i < s->cfg.nio; i++)
		if ((*down)[i] && *first_down < 0)
			*first_down = (int)i;
	return 0;
}

/* The redundancy of a new file: the request's (the MPI hint,
 * rpfs_create_redundancy), else the parent directory's default (rpfs
 * setstripe -N), else the cluster's ([cluster] redundancy). "default" in
 * the request skips the directory's. */
static void new_redundancy(struct srv *s, const struct rpc_req *q,
			   const struct rpc_attr *pa, struct red_spec *r)
{
	if (q->redundancy && !red_unpack(q->redundancy, r) && r->kind != RED_DEFAULT)
		return;
	if (!q->redundancy) {
		red_of_layout(&pa->layout, true, r);
		if (r->kind != RED_DEFAULT)
			return;
	}
	*r = s->cfg.redundancy;
}

/* The data slots of redundancy r that at most slots slots hold: an ec
 * count is whole groups of K (0 when not one fits). */
static uint32_t count_in(const struct red_spec *r, uint32_t slots)
{
	if (r->kind == RPFS_LAYOUT_EC)
		return slots / (r->data_cells + r->parity_cells) * r->data_cells;
	return slots / red_copies(r);
}

/* fit_count of an ec:K+P file (the ec_preview setting allows them): G
 * groups of K data slots and P parity slots, G * (K + P) on distinct I/O
 * servers. */
static int fit_count_ec(struct srv *s, const struct rpc_req *q, const struct red_spec *r,
			const char *text, struct rpfs_layout *l)
{
	uint32_t nio = s->cfg.nio, k = r->data_cells,
		 kp = r->data_cells + r->parity_cells;

	if (!s->cfg.xport.ec_preview) {
		log_warn("rpfsd: can't create %s: %s: ec:K+P is not supported yet "
			 "(ec_preview is 0)",
			 q->path, text);
		return -EOPNOTSUPP;
	}
	if (kp > nio) {
		log_warn("rpfsd: can't create %s: %s needs %u I/O servers, the cluster "
			 "has %u",
			 q->path, text, kp, nio);
		return -EINVAL;
	}
	if (q->stripe_count && !red_fits(r, q->stripe_count, nio)) {
		log_warn("rpfsd: can't create %s: %s over %u data slots (a multiple of "
			 "%u, %llu slots in all) on %u I/O servers",
			 q->path, text, q->stripe_count, k,
			 (unsigned long long)red_slots(r, q->stripe_count), nio);
		return -EINVAL;
	}
	/* a count from a directory or the cluster: whole groups that fit */
	if (!red_fits(r, l->stripe_count, nio)) {
		uint32_t most = count_in(r, nio), want = l->stripe_count / k * k;

		l->stripe_count = want && want < most ? want : most;
	}
	return 0;
}

/* The stripe count of a new file of redundancy r: its slots (count *
 * copies, or an ec file's groups) must fit the cluster's I/O servers. A
 * count the creator asked for that can't is -EINVAL; a default one
 * shrinks to fit. */
static int fit_count(struct srv *s, const struct rpc_req *q, const struct red_spec *r,
		     struct rpfs_layout *l)
{
	uint32_t nio = s->cfg.nio, copies = red_copies(r);
	char text[RED_TEXT_MAX];

	red_format(r, text, sizeof(text));
	if (r->kind == RPFS_LAYOUT_EC)
		return fit_count_ec(s, q, r, text, l);
	if (copies > nio) {
		log_warn(
			"rpfsd: can't create %s: %s needs %u I/O servers, the cluster has %u",
			q->path, text, copies, nio);
		return -EINVAL;
	}
	if (q->stripe_count && copies > 1 && (uint64_t)q->stripe_count * copies > nio) {
		log_warn("rpfsd: can't create %s: %s over %u slots needs %llu I/O "
			 "servers, the cluster has %u",
			 q->path, text, q->stripe_count,
			 (unsigned long long)q->stripe_count * copies, nio);
		return -EINVAL;
	}
	if (l->stripe_count > nio / copies)
		l->stripe_count = nio / copies;
	return 0;
}

/* The layout of a new file, from the request and the cluster's defaults,
 * on I/O servers that answer. A count the creator asked for is kept: when
 * it can't avoid the servers known down, it is placed on them anyway
 * (*forced), to be tried; a default count shrinks to the servers that are
 * up. *bad_io: a down server, when no placement avoids it. A mirror's
 * count * N slots are consecutive I/O servers from first_server on
 * (layout.h), all distinct since they fit the cluster's: the N copies of a
 * slot are on N distinct servers. */
static int new_layout(struct srv *s, const struct rpc_req *q, const struct rpc_attr *pa,
		      uint64_t handle, struct rpfs_layout *l, int *bad_io, bool *forced)
{
	uint32_t nio = s->cfg.nio;
	/* The request (MPI hints, rpfs_create_opts) wins over the parent
	 * directory's default (rpfs setstripe), which wins over the cluster's. */
	uint64_t su = q->stripe_unit ? q->stripe_unit : pa->layout.stripe_unit;
	uint32_t sc = q->stripe_count ? q->stripe_count : pa->layout.stripe_count;
	struct red_spec red;
	bool *down;
	int ret;

	if (!nio) {
		log_warn("rpfsd: can't create %s: the cluster has no I/O servers",
			 q->path);
		return -ENOSPC;
	}
	new_redundancy(s, q, pa, &red);
	red_to_file_layout(&red, l);
	l->stripe_unit = su ? su : s->cfg.stripe_unit;
	l->stripe_count = sc ? sc : s->cfg.stripe_count;
	if (!l->stripe_count || l->stripe_count > nio)
		l->stripe_count = nio;
	ret = fit_count(s, q, &red, l);
	if (ret)
		return ret;
	ret = down_now(s, &down, bad_io);
	if (ret)
		return ret;
	if (down && !q->stripe_count && q->first_server < 0) {
		uint32_t fit = count_in(
			&red,
			place_fit_count(nio, (uint32_t)red_slots(&red, l->stripe_count),
					down));

		l->stripe_count = fit ? fit : l->stripe_count;
	}
	ret = place_first_io(nio, (uint32_t)red_slots(&red, l->stripe_count), handle,
			     q->first_server, down, &l->first_server);
	free(down);
	/* What the creator asked for is tried, not refused from memory: the
	 * server may be back before a heartbeat said so. */
	*forced = false;
	if (ret == -EHOSTDOWN && (q->stripe_count || q->first_server >= 0)) {
		*forced = true;
		ret = place_first_io(nio, (uint32_t)red_slots(&red, l->stripe_count),
				     handle, q->first_server, NULL, &l->first_server);
	}
	if (ret)
		return ret;
	*bad_io = -1;
	l->nservers = nio;
	return layout_check(l);
}

/* A failed CREATE's reply names the I/O server that failed (rpc.h). */
static int create_failed(struct srv_op *op, int ret, int bad_io)
{
	if (bad_io >= 0) {
		rpc_enc_u64(op->rep, (uint64_t)bad_io);
		op->rep_len = 8;
		op->rep_on_error = true;
	}
	return ret;
}

/* An existing entry answers a CREATE or MKDIR of its path: a CREATE
 * without EXCL opens it. */
static int existing(struct srv_op *op, bool dir, struct rpc_attr *a)
{
	if (dir || (op->q.flags & RPC_CREATE_EXCL))
		return -EEXIST;
	if (a->type != RPC_TYPE_FILE)
		return -EISDIR;
	return meta_reply_open(op, a, false);
}

/* Owner of a new entry: the caller as its connection said (the uid and gid
 * in the request only count for root and the servers), the group of a
 * set-group-ID directory as on BSD and Linux. */
static void new_owner(const struct srv_op *op, const struct rpc_attr *pa,
		      struct rpc_attr *a, bool dir)
{
	const struct srv_client *who = ident_of(op->conn);

	a->uid = access_is_super(who) ? op->q.uid : who->uid;
	a->gid = access_is_super(who) ? op->q.gid : who->gid;
	if (pa->mode & S_ISGID) {
		a->gid = pa->gid;
		if (dir)
			a->mode |= S_ISGID;
	}
}

static int do_mkdir_create(struct srv_op *op, bool dir)
{
	struct srv *s = op->s;
	struct meta *m = s->meta;
	const struct rpc_req *q = &op->q;
	struct rpc_attr a, had, pa;
	MDB_txn *txn;
	bool skip = false, moved = false, forced = false;
	uint64_t past;
	int ret, tries = 0, bad_io = -1;

	if (!strcmp(q->path, "/"))
		return dir ? -EEXIST : -EISDIR;
	ret = meta_parent_attr(s, q->path, &pa);
	if (ret)
		return ret;
	ret = meta_local_lookup(s, q->path, &had);
	if (!ret)
		return existing(op, dir, &had);
	if (ret != -ENOENT)
		return ret;
	ret = access_dir_change(ident_of(op->conn), &pa, NULL);
	if (ret)
		return ret;
	do {
		memset(&a, 0, sizeof(a));
		ret = meta_alloc_handle(s, &a.handle);
		if (ret)
			return ret;
		a.type = dir ? RPC_TYPE_DIR : RPC_TYPE_FILE;
		a.mode = q->mode & 07777;
		new_owner(op, &pa, &a, dir);
		a.atime = a.mtime = a.ctime = srv_now_ns();
		if (dir) {
			/* Subdirectories inherit the default layout, its
			 * redundancy too. */
			a.layout.stripe_unit = pa.layout.stripe_unit;
			a.layout.stripe_count = pa.layout.stripe_count;
			a.layout.kind = pa.layout.kind;
			a.layout.copies = pa.layout.copies;
			a.layout.data_cells = pa.layout.data_cells;
			a.layout.parity_cells = pa.layout.parity_cells;
			break;
		}
		ret = new_layout(s, q, &pa, a.handle, &a.layout, &bad_io, &forced);
		if (ret)
			return create_failed(op, ret, bad_io);
		/* Datafiles first: an entry never names missing ones. */
		ret = meta_create_datafiles(s, &a, &skip, &past, &bad_io);
		if (skip && (ret = meta_skip_handles(m, past)))
			return ret;
		/* An I/O server that could not be reached is now known down
		 * (meta_create_datafiles told io_states.c): the next try
		 * places the file on the others, if the request lets it. */
		moved = ret == -EHOSTDOWN && !forced;
	} while ((skip || moved) && ++tries < META_CREATE_TRIES);
	if (skip) {
		log_err("rpfsd: can't create %s: %d handles in a row already have datafiles",
			q->path, tries);
		return -EIO;
	}
	if (ret)
		return create_failed(op, ret, bad_io);
	ret = meta_txn_begin(m, false, &txn);
	if (!ret) {
		ret = meta_get_entry(m, txn, q->path, &had);
		if (!ret) {
			/* Another create of this path got there first. */
			mdb_txn_abort(txn);
			if (!dir)
				meta_remove_datafiles(s, &a, NULL);
			return existing(op, dir, &had);
		}
		if (ret == -ENOENT)
			ret = meta_put_entry(m, txn, q->path, &a, true);
		if (ret)
			mdb_txn_abort(txn);
		else
			ret = meta_lmdb_err(mdb_txn_commit(txn), "commit");
	}
	if (ret && !dir)
		meta_remove_datafiles(s, &a, NULL);
	if (ret)
		return ret;
	/* Its creator may use a new file as asked, whatever its mode (as
	 * open(O_CREAT | O_RDWR, 0444) does). */
	return meta_reply_open(op, &a, true);
}

int serve_mkdir(struct srv_op *op)
{
	return do_mkdir_create(op, true);
}

/* A create is in progress from before its handle is taken until its entry
 * commits or it gave up: META_HANDLES tells it from an orphan. */
int serve_create(struct srv_op *op)
{
	struct creating in;
	int ret;

	meta_create_begin(op->s->meta, &in);
	ret = do_mkdir_create(op, false);
	meta_create_end(op->s->meta, &in);
	return ret;
}
