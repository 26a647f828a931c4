/* The attributes of a file or directory as the client holds them: from a
 * reply (rpc_attr) to what a program sees (struct rpfs_stat), and the
 * layout checked against this client's cluster. Used by namespace.c and
 * file.c alike. */
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
