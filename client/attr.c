/* The attributes of a file or directory as the client holds them: from a
 * reply (rpc_attr) to what a program sees (struct rpfs_stat), with the
 * times of its data folded in, and the layout checked against this
 * client's cluster. Used by namespace.c and file.c alike.
 *
 * Data writes never reach the metadata server, so a file's mtime and
 * ctime there say when its attributes last changed. Each I/O server's
 * datafile has the time of the last write or truncate there, returned
 * with the size stat asks for anyway (IO_SIZE): stat shows the later of
 * the two, as PVFS2 derives the size. */
#include <errno.h>
#include <string.h>

#include "client_priv.h"

void rpfsc_attr_to_stat(const struct rpc_attr *a, struct rpfs_stat *st)
{
	memset(st, 0, sizeof(*st));
	st->handle = a->handle;
	st->type = a->type == RPC_TYPE_DIR ? RPFS_TYPE_DIR : RPFS_TYPE_FILE;
	st->mode = a->mode;
	st->uid = a->uid;
	st->gid = a->gid;
	st->atime = a->atime;
	st->mtime = a->mtime;
	st->ctime = a->ctime;
	/* A directory's: the default of new files in it (0: the cluster's). */
	st->stripe_unit = a->layout.stripe_unit;
	st->stripe_count = a->layout.stripe_count;
	if (a->type == RPC_TYPE_FILE)
		st->first_server = a->layout.first_server;
	_Static_assert(RPFS_CAP_SIZE == RPC_CAP_SIZE, "rpfs.h and rpc.h disagree");
	rpc_enc_cap(st->cap, &a->cap);
}

void rpfsc_attr_fold_data(const struct rpc_attr *a, int64_t mtime, int64_t ctime,
			  struct rpfs_stat *st)
{
	/* A data write after the times were last set (touch -d, cp -p) is
	 * the file's last modification; one before them no longer counts. */
	if (mtime > a->times_set && mtime > st->mtime)
		st->mtime = mtime;
	if (ctime > st->ctime)
		st->ctime = ctime;
}

int rpfsc_attr_layout(struct rpfs_client *c, struct rpc_attr *a)
{
	/* Slots wrap modulo the cluster's I/O servers; a layout made for more
	 * servers than this client knows would address servers it lacks. */
	if (!a->layout.nservers)
		a->layout.nservers = c->cfg.nio;
	if (a->layout.nservers > c->cfg.nio || layout_check(&a->layout))
		return -EINVAL;
	return 0;
}
