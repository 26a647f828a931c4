/* rpfsd: the datafile store. One datafile per handle, DIR/data/<handle>,
 * read and written only through here so that its checksum file (beside it,
 * DIR/data/<handle>.sum, in the format and with the math of blocksum.h)
 * always says what its blocks hold: every read is verified against it, and
 * every write, truncate and undone growth keeps it true.
 *
 * A write stores the new versions as pend first, then the data, then makes
 * them cur: a server killed in between leaves every block matching one of
 * the two, so only a torn block is ever reported. Writes lock their block
 * range (datafile.held), so writers of the same block, even from different
 * requests and clients, take turns and a block's bytes and its entry always
 * change together; a partial block is read, checked and merged under that
 * lock (read-modify-write), and a damaged one is refused rather than given
 * a fresh checksum. Reads take no lock: they check what they read, and only
 * a block that fails is read again under the lock before it is reported,
 * so a read racing a write sees the old or the new block, never an error.
 *
 * Functions return 0 or a negative errno; -EBADMSG (damaged data) sets *bad
 * to the datafile offset of the first damaged byte asked for. */
#ifndef RPFS_DATAFILE_H
#define RPFS_DATAFILE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "blocksum.h"

struct datafile_range;
struct ec_ends;

/* One datafile and its checksums, shared by the requests on that handle. */
struct datafile {
	uint64_t handle;
	int dirfd;    /* DIR/data, not owned */
	int fd;	      /* datafile */
	int cfd;      /* checksum file, -1 if there is none (made on first write) */
	bool bad_hdr; /* the checksum file's header is not ours: nothing verifies */
	bool cfd_created;
	uint32_t version;	/* of the checksum file's format */
	uint32_t slot;		/* the stripe slot the datafile holds, or CSUM_SLOT_ANY */
	uint64_t extent;	/* the size the last truncate gave (version 2) */
	uint64_t epoch;		/* mirror epoch (version 2; under lock) */
	atomic_bool incomplete; /* CSUM_HDR_INCOMPLETE (set under lock) */
	pthread_mutex_t lock;	/* held, cfd */
	pthread_cond_t cond;
	struct datafile_range *held; /* block ranges being written */
	atomic_uint_fast64_t wgen;   /* writes and truncates begun */
	struct ec_ends *ends;	     /* an ec parity member's record (ec_ends.h; lock) */
};

/* What block k's crcs are XORed with: its place (0 for version 1). */
uint32_t datafile_bind(const struct datafile *f, uint64_t k);

/* Open handle's datafile (O_RDWR) and its checksum file in dirfd. -ENOENT
 * if the datafile does not exist. */
int datafile_open(struct datafile *f, int dirfd, uint64_t handle);
void datafile_close(struct datafile *f);
/* Make the checksum file (header with nonce and slot, the file's stripe
 * slot this datafile holds) and the datafile, both exclusively, and sync
 * the directory. A pair this nonce made before is success (a retried
 * create); anything else there is -EEXIST, and a failure leaves nothing
 * behind. */
int datafile_create(int dirfd, uint64_t handle, uint64_t nonce, uint32_t slot,
		    bool incomplete);

/* Data: verified read (bytes past the datafile's end read as zeros, if no
 * checksum says they should be there) and checksummed write. */
int datafile_read(struct datafile *f, void *buf, uint64_t len, uint64_t off,
		  uint64_t *bad);
int datafile_write(struct datafile *f, const void *buf, uint64_t len, uint64_t off,
		   uint64_t *bad);
/* An erasure-coded data cell's write: as datafile_write, and delta[0..len)
 * gets old ^ new, read (checked) and stored with the blocks locked, so
 * that the deltas of writes of the same bytes add up to first-to-last
 * whatever order they reach the parity cells in. */
int datafile_write_delta(struct datafile *f, const void *buf, uint64_t len, uint64_t off,
			 uint64_t *bad, unsigned char *delta);
/* Mend damaged blocks (an ec data cell's, their bytes decoded from the
 * rest of its group): [off, off + len) starts at a block and covers
 * exactly the bytes each of its blocks holds; every one must fail its
 * checksum now (-EEXIST for one that does not: a good block is never
 * rewritten without its parity, -EINVAL for a range that is not whole
 * blocks). Stored with fresh checksums, as a write. */
int datafile_repair(struct datafile *f, const void *buf, uint64_t len, uint64_t off,
		    uint64_t *bad);
/* A parity cell taking a delta: the bytes become old ^ delta, read
 * (checked) and stored with the blocks locked. */
int datafile_write_xor(struct datafile *f, const void *delta, uint64_t len, uint64_t off,
		       uint64_t *bad);
/* ftruncate with the checksums of the cut block redone (its old bytes are
 * checked first) and those of dropped blocks removed. */
int datafile_truncate(struct datafile *f, uint64_t size, uint64_t *bad);
/* The datafile's size, checked against its checksums (-EBADMSG if the
 * datafile is shorter than the last block's end, or longer than what the
 * checksums cover: *bad is where the uncovered bytes start). */
int datafile_size(struct datafile *f, uint64_t *size, uint64_t *bad);
/* Where the bytes the checksums cover end (UINT64_MAX for version 1). */
int datafile_covered(struct datafile *f, uint64_t *end);
/* Record size as the extent (what a truncate does; also --accept-damaged). */
int datafile_set_extent(struct datafile *f, uint64_t size);
int datafile_sync(struct datafile *f);
/* A mirrored write of the mirror epoch epoch (io_forward.c): -RPC_EBEHIND
 * (its sender's view is older than this copy's) when epoch is below the
 * datafile's; else, with raise, the datafile's epoch becomes epoch (kept
 * in the checksum file's header before the write is admitted). */
int datafile_admit_epoch(struct datafile *f, uint64_t epoch, bool raise);
/* A resync's target not yet whole (CSUM_HDR_INCOMPLETE), or whole again:
 * kept in the header before it returns. */
int datafile_set_incomplete(struct datafile *f, bool on);

/* A write request that fails part way (ENOSPC after some of its chunks or
 * pages) must leave the datafile no longer than it was, or the size would
 * count bytes no reply acknowledged, and no checksum entries past that.
 * datafile_mark, before the request's first datafile_write, notes the sizes of
 * both files and whether anyone else was writing; datafile_undo_growth, after
 * its last (writes: its datafile_write calls), cuts both back to those sizes
 * if no other write or truncate began meanwhile, and else leaves them:
 * bytes past the old end may then be someone else's. */
struct datafile_mark {
	uint64_t size, csize, ino, gen;
	bool alone, known;
};
void datafile_mark(struct datafile *f, struct datafile_mark *m);
void datafile_undo_growth(struct datafile *f, const struct datafile_mark *m,
			  uint64_t writes);

/* Entries [b0, b0 + n) into e (missing ones read as empty). */
int datafile_read_ents(struct datafile *f, uint64_t b0, uint64_t n, struct csum_ent *e);
int datafile_write_ents(struct datafile *f, uint64_t b0, uint64_t n,
			const struct csum_ent *e);
/* Block k's bytes (zero-filled past the end) and how many are in the file. */
int datafile_read_block(struct datafile *f, uint64_t k, void *bytes, uint32_t *avail);
/* Make the checksum file if there is none (under f->lock). */
int datafile_ensure_sumfile(struct datafile *f);

#endif
