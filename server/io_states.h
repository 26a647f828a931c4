/* A metadata server's view of its I/O servers: online or not (io_states.c
 * says how it is learnt). */
#ifndef RPFS_IO_STATES_H
#define RPFS_IO_STATES_H

#include <stdbool.h>
#include <stdint.h>

struct srv;

/* Shown by `rpfs df` and `rpfs stats` by number: never renumber. */
enum io_state {
	IO_UNKNOWN = 0,	    /* not heard from yet: placed on */
	IO_ONLINE = 1,	    /* answers */
	IO_UNREACHABLE = 2, /* does not answer: not placed on */
	IO_OFFLINE = 3,	    /* has not answered for io_offline_s */
	IO_STATES
};

const char *io_state_name(int state);

/* Start (role meta) and stop the heartbeat threads. Stopping returns
 * false when a heartbeat still waits for a server after a short while:
 * the peer connections it uses must then be left to exit. */
int io_states_start(struct srv *s);
bool io_states_stop(struct srv *s);
/* A call to I/O server io (index among the I/O servers) failed for want of
 * a connection (err): unreachable until it answers a heartbeat. */
void io_states_lost(struct srv *s, uint32_t io, int err);
/* The state of io now, and how long it has been in it (since_s, may be
 * NULL). */
int io_states_get(struct srv *s, uint32_t io, int64_t *since_s);
/* down[cfg.nio]: true for each I/O server new files must not use. Returns
 * whether any is down. */
bool io_states_down(struct srv *s, bool *down);

#endif
