/* Ranges of ec data cells held still (IO_HOLD), for whoever reads a
 * stripe across members: an ec parity member's resync (ec_resync.c), and
 * later degraded reads (docs/design/erasure-coding.md). */
#ifndef RPFS_EC_HOLD_H
#define RPFS_EC_HOLD_H

#include <stdbool.h>
#include <stdint.h>

struct srv;
struct srv_op;

int ec_holds_open(struct srv *s);
void ec_holds_close(struct srv *s);
/* On the progress thread, before an ec write (RPC_IO_PARITY) or a truncate
 * (the range from its cut on) goes on: true when it may (counted in flight
 * until ec_hold_write_done), false when it waits behind a hold of its
 * range (it goes on, by io_dispatch_go or to a worker, once the hold is
 * released or lapses). */
bool ec_hold_admit(struct srv_op *op);
/* Is [lo, hi) of handle held here by hold id, its lease not over (a
 * mending of damaged blocks, RPC_IO_REPAIR: from a storage worker)? */
bool ec_hold_covers(struct srv *s, uint64_t handle, uint64_t id, uint64_t lo,
		    uint64_t hi);
/* On the progress thread, as op ends (every op). */
void ec_hold_write_done(struct srv_op *op);
/* From the progress loop (every 100 ms at most): holds and sessions past
 * their lease go, and the writes they stopped go on. */
void ec_hold_tick(struct srv *s);
/* Has a resync of parity slot of handle a session here: its member gets
 * every delta, stale or not (from the forward threads)? */
bool ec_session_on(struct srv *s, uint64_t handle, uint32_t slot);
/* A delta for that member could not be sent: its resync must fail. */
void ec_session_disturb(struct srv *s, uint64_t handle, uint32_t slot);

/* Counters for rpfs stats: holds taken, ec writes that waited behind
 * one, holds that lapsed (their holder did not let go in time). */
void ec_hold_counts(struct srv *s, uint64_t *taken, uint64_t *parked, uint64_t *lapsed);

/* serve_io_hold's op is answered later (parked until its range drains). */
#define SRV_PENDING 1

#endif
