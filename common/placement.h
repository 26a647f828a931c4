/* Placement: which server holds what. The metadata server of a path and
 * of a handle, the making of handles, and the I/O servers of a new file are
 * decided here and nowhere else, as layout.h decides where a file's bytes
 * go among its I/O servers.
 *
 *   path -> metadata server   a hash of the whole normalized path (FNV-1a,
 *                             hash.h) modulo the metadata servers: every
 *                             client and server computes the same owner,
 *                             with no directory to ask. A directory's
 *                             children live on every metadata server.
 *   handle -> metadata server the top 16 bits of the handle: the index of
 *                             the metadata server that made it, so anyone
 *                             finds the owner of a handle without asking.
 *   handle making             (metadata server index << 48) | serial, the
 *                             serial from a counter of that server's store
 *                             that only grows (reserved by meta_handles.c).
 *   a new file's I/O servers  slot 0 on I/O server first, the others round
 *                             robin after it (layout_server); first follows
 *                             the serial, so consecutive files start on
 *                             consecutive servers, unless the creator asked
 *                             for one.
 *
 * Servers known to be down (a metadata server's io_states.c): the choice
 * of a new file's servers takes a list of them and never places a slot on
 * one; a count the creator did not ask for itself shrinks to the longest
 * run of servers that are up (place_fit_count), as Lustre stripes over the
 * OSTs it has when some are inactive. */
#ifndef RPFS_PLACEMENT_H
#define RPFS_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

struct rpfs_config;

#define PLACE_SERIAL_BITS 48
/* The largest serial a metadata server may hand out. */
#define PLACE_SERIAL_MAX ((1ull << PLACE_SERIAL_BITS) - 1)

/* The index of the metadata server that owns path (0 without any). */
uint32_t place_meta_of_path(const struct rpfs_config *cfg, const char *path);

/* The index of the metadata server that made handle. */
static inline uint32_t place_meta_of_handle(uint64_t handle)
{
	return (uint32_t)(handle >> PLACE_SERIAL_BITS);
}

/* Metadata server meta's handle of serial (<= PLACE_SERIAL_MAX); serial 0
 * is the root directory's, never a file's. */
static inline uint64_t place_handle(uint32_t meta, uint64_t serial)
{
	return (uint64_t)meta << PLACE_SERIAL_BITS | (serial & PLACE_SERIAL_MAX);
}

/* The serial of handle among its metadata server's. */
static inline uint64_t place_serial(uint64_t handle)
{
	return handle & PLACE_SERIAL_MAX;
}

/* The I/O server of slot 0 of a new file with count slots (1..nio), in a
 * cluster of nio I/O servers, into *first. asked: the creator's choice, or
 * -1 for the servers' own (from the handle's serial). down: NULL, or nio
 * flags, true for an I/O server known to be down; no slot is placed on
 * one: the servers' own choice moves on to the next start whose count
 * servers are all up. Returns 0; -EINVAL for an asked server or a count
 * the cluster does not have; -EHOSTDOWN if the asked servers, or every
 * start, include one that is down; -ENOSPC without I/O servers. */
int place_first_io(uint32_t nio, uint32_t count, uint64_t handle, int32_t asked,
		   const bool *down, uint32_t *first);

/* The largest count <= count (and <= nio) of consecutive I/O servers, round
 * robin, none of them down (down: NULL or nio flags); 0 if all are down. */
uint32_t place_fit_count(uint32_t nio, uint32_t count, const bool *down);

#endif
