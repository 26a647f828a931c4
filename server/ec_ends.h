/* rpfsd: an ec parity member's record of its group's data members' sizes
 * (docs/design/erasure-coding.md, "sizes"). With a data member lost, a
 * client takes the file's size from it: a datafile's size is not in its
 * parity, and a file's size is its datafiles'.
 *
 * Kept beside the parity datafile, DIR/data/<handle>.ends:
 *
 *   magic "RPFSEND1", n u32 (1..EC_ENDS_MAX), pad u32 (0),
 *   n x size u64 (member i's datafile size), crc u32 (CRC32C of all
 *   before it)
 *
 * No file is the record of a parity datafile no write reached yet: every
 * member empty. Grown by each parity delta (the data member's size after
 * its write rides with it: ec_ends_note), set by a truncate of the parity
 * slot (which carries every member's new size) and by the member's resync
 * (the sizes its last holds answered, held to the members' ends). It
 * follows its parity datafile's durability: written with every change (a
 * kill -9 keeps it), made durable by the datafile's sync; a torn or
 * damaged record is refused (-EBADMSG), never taken as sizes.
 *
 * The record lives in the datafile's struct (f->ends), under f->lock. */
#ifndef RPFS_EC_ENDS_H
#define RPFS_EC_ENDS_H

#include <stdint.h>

#include "blocksum.h"

#define EC_ENDS_MAX    32u /* RED_EC_CELLS_MAX */
#define EC_ENDS_SUFFIX CSUM_ENDS_SUFFIX

struct datafile;
struct ec_ends;

/* ends[index] = max(ends[index], end), written if it grew (k: the
 * group's K, which a new record takes). */
int ec_ends_note(struct datafile *f, uint32_t k, uint32_t index, uint64_t end);
/* The record becomes ends[0..n) exactly. */
int ec_ends_set(struct datafile *f, const uint64_t *ends, uint32_t n);
/* ends[0..max) from the record (zeros past its n), *n its n (0: none). */
int ec_ends_get(struct datafile *f, uint64_t *ends, uint32_t max, uint32_t *n);
/* fdatasync of the record, if there is one. */
int ec_ends_sync(struct datafile *f);
/* datafile_close's part. */
void ec_ends_free(struct ec_ends *e);

/* "<16 hex>.ends", and its removal (ENOENT is success). */
void ec_ends_name(uint64_t handle, char *buf, size_t len);
int ec_ends_remove(int dirfd, uint64_t handle);
/* Check a record's bytes (rpfsd --check): 0, or -EBADMSG. */
int ec_ends_check(const uint8_t *buf, size_t len);

#endif
