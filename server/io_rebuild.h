/* Role io: the rebuild of the copies this server lost with its storage,
 * asked of the metadata servers (io_rebuild.c). */
#ifndef RPFS_IO_REBUILD_H
#define RPFS_IO_REBUILD_H

#include <stdbool.h>
#include <stdint.h>

struct srv;

/* At start (before serving): empty, the storage holds no datafile, asks
 * for a rebuild (kept on disk until every metadata server took it); a
 * request a crash left is asked again. */
int io_rebuild_open(struct srv *s, bool empty);
/* Until every metadata server took a request made at this start (a
 * while at most): before the server says it is ready. */
void io_rebuild_wait(struct srv *s);
void io_rebuild_close(struct srv *s);
/* A read found a block of handle's datafile (stripe slot slot) failing its
 * checksums: reported, so that it is rewritten from another copy. */
void io_rebuild_damaged(struct srv *s, uint64_t handle, uint32_t slot);

#endif
