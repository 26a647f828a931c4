/* rpfsd: a CRC32C per 4 KiB block of every datafile, verified on every read.
 *
 * Each datafile DIR/data/<handle> has a checksum file beside it,
 * DIR/data/<handle>.sum:
 *
 *   header (64 bytes)  magic "RPFSSUM1", version u32 (2), block size u32,
 *                      handle u64, create nonce u64, stripe slot u32
 *                      (CSUM_SLOT_ANY: not known), zero u32, extent u64
 *                      (the size the last truncate gave), zeros
 *   entry k (16 bytes, at 64 + 16 k), for datafile block k:
 *                      cur  = { crc u32, end u32 }  the block's contents
 *                      pend = { crc u32, end u32 }  a write in progress
 *
 * A version's crc is the CRC32C of the whole block, bytes past the end of
 * the datafile counted as zeros, XORed with a 32-bit mix of the block's
 * place, (handle, slot, k) (datafile_bind). A block moved within its datafile,
 * or into another file's, or a datafile given to another handle or slot,
 * no longer matches (but for a 2^-32 chance, as for any damage). Its end
 * (1..4096) is how many bytes of the block the datafile must hold, so a
 * datafile cut short is caught even where the lost bytes were zeros. end 0
 * means "no version": a block with no cur is a hole that was never written
 * and must read as zeros. A block is good when its bytes match cur (or are
 * zeros and there is no cur), or match pend.
 *
 * The checksums cover the datafile up to the end of the last entry's
 * version, or up to the extent if that is further (a file grown by
 * truncate is a hole, with no entries). Bytes beyond are covered by no
 * checksum: damage (a datafile extended behind our back), never data.
 *
 * Version 1 files (before the binding and the extent) keep working as they
 * were: their crcs are of the bare block and nothing bounds their length;
 * files made since are version 2.
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
#ifndef RPFS_CSUM_H
#define RPFS_CSUM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define CSUM_BLOCK  4096u
#define CSUM_HDR    64u
#define CSUM_ENT    16u
#define CSUM_SUFFIX ".sum"
/* CRC32C of a block of zeros (test_csum checks it). */
#define CSUM_ZERO_CRC 0x98f94189u
#define CSUM_SLOT_ANY 0xffffffffu
#define CSUM_VERSION  2u

struct csum_ver {
	uint32_t crc, end; /* end 0: no version */
};

struct csum_ent {
	struct csum_ver cur, pend;
};

struct datafile_range;

/* One datafile and its checksums, shared by the requests on that handle. */
struct datafile {
	uint64_t handle;
	int dirfd;    /* DIR/data, not owned */
	int fd;	      /* datafile */
	int cfd;      /* checksum file, -1 if there is none (made on first write) */
	bool bad_hdr; /* the checksum file's header is not ours: nothing verifies */
	bool cfd_created;
	uint32_t version;     /* of the checksum file's format */
	uint32_t slot;	      /* the stripe slot the datafile holds, or CSUM_SLOT_ANY */
	uint64_t extent;      /* the size the last truncate gave (version 2) */
	pthread_mutex_t lock; /* held, cfd */
	pthread_cond_t cond;
	struct datafile_range *held; /* block ranges being written */
	atomic_uint_fast64_t wgen;   /* writes and truncates begun */
};

/* Standard CRC32C (iSCSI) of len bytes, from ISA-L. */
uint32_t csum_crc(const void *buf, uint64_t len);

/* What block k's crcs are XORed with: its place (0 for version 1). */
uint32_t datafile_bind(const struct datafile *f, uint64_t k);

/* Entry (de)coding and the check of one block: bytes holds CSUM_BLOCK bytes
 * (zeros past the datafile's end), avail of them are in the datafile, bind
 * is datafile_bind of its place. csum_match returns which version matched: 1
 * cur (or a hole), 2 pend, 0 none. */
void csum_ent_dec(const uint8_t *p, struct csum_ent *e);
void csum_ent_enc(uint8_t *p, const struct csum_ent *e);
int csum_match(const struct csum_ent *e, const void *bytes, uint32_t avail,
	       uint32_t bind);
bool csum_ent_empty(const struct csum_ent *e);

/* Header of a checksum file (version 2, extent 0). csum_hdr_check: 0, or
 * -EBADMSG if it is not one of ours for handle (nonce, if not NULL, gets
 * its create nonce). csum_hdr_dec also gives its version, slot and extent
 * (f's). */
void csum_hdr_enc(uint8_t hdr[CSUM_HDR], uint64_t handle, uint64_t nonce, uint32_t slot);
int csum_hdr_check(const uint8_t *hdr, size_t len, uint64_t handle, uint64_t *nonce);
int csum_hdr_dec(const uint8_t *hdr, size_t len, struct datafile *f);

/* Names: "<16 hex>" and "<16 hex>.sum"; csum_parse_name tells which a
 * directory entry is (0 datafile, 1 checksum file, -1 neither). */
void csum_data_name(uint64_t handle, char *buf, size_t len);
void csum_sum_name(uint64_t handle, char *buf, size_t len);
int csum_parse_name(const char *name, uint64_t *handle);

/* Open handle's datafile (O_RDWR) and its checksum file in dirfd. -ENOENT
 * if the datafile does not exist. */
int datafile_open(struct datafile *f, int dirfd, uint64_t handle);
void datafile_close(struct datafile *f);
/* Make the checksum file (header with nonce and slot, the file's stripe
 * slot this datafile holds) and the datafile, both exclusively, and sync
 * the directory. A pair this nonce made before is success (a retried
 * create); anything else there is -EEXIST, and a failure leaves nothing
 * behind. */
int datafile_create(int dirfd, uint64_t handle, uint64_t nonce, uint32_t slot);

/* Data: verified read (bytes past the datafile's end read as zeros, if no
 * checksum says they should be there) and checksummed write. */
int datafile_read(struct datafile *f, void *buf, uint64_t len, uint64_t off,
		  uint64_t *bad);
int datafile_write(struct datafile *f, const void *buf, uint64_t len, uint64_t off,
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
