/* Role io: the rebuild of the copies this server lost with its storage,
 * asked of the metadata servers (io_rebuild.c). */
#ifndef RPFS_IO_REBUILD_H
#define RPFS_IO_REBUILD_H

#include <stdbool.h>

struct srv;

/* At start (before serving): empty, the storage holds no datafile, asks
 * for a rebuild (kept on disk until every metadata server took it); a
 * request a crash left is asked again. */
int io_rebuild_open(struct srv *s, bool empty);
/* Until every metadata server took a request made at this start (a
 * while at most): before the server says it is ready. */
void io_rebuild_wait(struct srv *s);
void io_rebuild_close(struct srv *s);

#endif
