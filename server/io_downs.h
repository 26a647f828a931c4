/* Role io: the I/O servers the metadata servers' heartbeats say are down
 * (io_downs.c). */
#ifndef RPFS_IO_DOWNS_H
#define RPFS_IO_DOWNS_H

#include <stdbool.h>
#include <stdint.h>

struct srv;

int io_downs_open(struct srv *s);
void io_downs_close(struct srv *s);
/* Does a metadata server's recent heartbeat say I/O server io (index among
 * the I/O servers) is down (unreachable or offline)? */
bool io_downs_down(struct srv *s, uint32_t io);
/* A metadata server's list of the I/O servers it finds down (indexes), as
 * an IO_HEARTBEAT brings it; a bad list is ignored. The metadata server
 * that is also this I/O server gives its own this way (io_states.c): no
 * heartbeat goes to itself. */
void io_downs_take(struct srv *s, uint32_t meta, const uint32_t *down, uint32_t ndown);

#endif
