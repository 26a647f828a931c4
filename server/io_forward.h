/* Mirrored writes: the primary of a slot forwards each write to the slot's
 * copies before answering it (io_forward.c). */
#ifndef RPFS_IO_FORWARD_H
#define RPFS_IO_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

struct srv;
struct srv_op;

int io_forward_open(struct srv *s);
void io_forward_close(struct srv *s);
/* An IO_WRITE whose local part is done and that names copies: queue it for
 * forwarding (its reply follows when every copy has it). false: it needs
 * none (no copies, failed, or already forwarded); answer it now. */
bool io_forward_take(struct srv_op *op);
/* Counters for rpfs stats: writes forwarded, writes that failed for a
 * copy, copies marked stale. */
void io_forward_counts(struct srv *s, uint64_t *forwarded, uint64_t *failed,
		       uint64_t *marked);

#endif
