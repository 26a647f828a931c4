/* Role io: the scrub of every datafile against its checksums, in the
 * background (io_scrub.c). */
#ifndef RPFS_IO_SCRUB_H
#define RPFS_IO_SCRUB_H

#include <stdbool.h>
#include <stdint.h>

struct srv;

/* Start (when scrub_mbps is not 0) and stop the scrub thread. */
int io_scrub_start(struct srv *s);
void io_scrub_stop(struct srv *s);
/* For io_scrub_read: was handle's damage logged within the hour (the
 * scrub thread's own record; it is now)? */
struct io_scrub;
bool io_scrub_quiet(struct io_scrub *sc, uint64_t handle);
/* Bytes read, damaged pieces found, passes done (0 without a scrub). */
void io_scrub_counts(struct srv *s, uint64_t *bytes, uint64_t *damaged, uint64_t *passes);

#endif
