/* The resync of a stale ec parity member, by its own server: re-encoded
 * from its group's data members, piece by piece under holds (ec_resync.c). */
#ifndef RPFS_EC_RESYNC_H
#define RPFS_EC_RESYNC_H

#include <stdint.h>

struct srv;
struct srv_op;

int ec_resync_open(struct srv *s);
void ec_resync_close(struct srv *s);
/* IO_RESYNC with RPC_RESYNC_EC: queued (0), or -EBUSY when this handle's
 * is queued or running or the queue is full (asked again later). */
int ec_resync_take(struct srv_op *op);

/* Counters for rpfs stats. */
struct ec_resync_counts {
	uint64_t resynced; /* parity members re-encoded whole */
	uint64_t failed;   /* resyncs that failed (tried again) */
	uint64_t bytes;	   /* parity bytes written by them */
};
void ec_resync_counts(struct srv *s, struct ec_resync_counts *n);

#endif
