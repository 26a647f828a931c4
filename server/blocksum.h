/* rpfsd: the checksum math of datafiles, a CRC32C per 4 KiB block, and the
 * format of the checksum file that holds them (the datafile store that keeps
 * them true is datafile.[ch]).
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
 * place, (handle, slot, k) (csum_place). A block moved within its datafile,
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
 * Nothing here touches a file: these are the bytes and numbers the store
 * (datafile.c) and rpfsd --check (check.c) read and write. */
#ifndef RPFS_BLOCKSUM_H
#define RPFS_BLOCKSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CSUM_BLOCK  4096u
#define CSUM_HDR    64u
#define CSUM_ENT    16u
#define CSUM_SUFFIX ".sum"
/* CRC32C of a block of zeros (test_csum checks it). */
#define CSUM_ZERO_CRC 0x98f94189u
#define CSUM_SLOT_ANY 0xffffffffu
#define CSUM_VERSION  2u
/* Header fields of version 2. */
#define CSUM_HDR_SLOT	32
#define CSUM_HDR_EXTENT 40
/* The mirror epoch a copy of a mirrored file is current at (u64, 0 in files
 * made before mirrors had epochs: server/io_forward.c). */
#define CSUM_HDR_EPOCH 48
/* Flags (u32, 0 in files made before them): CSUM_HDR_INCOMPLETE, the copy
 * of a mirrored file is a resync's target not yet whole: it serves no read
 * and acts as no primary until the resync's end clears it. */
#define CSUM_HDR_FLAGS	    56
#define CSUM_HDR_INCOMPLETE 1u

struct csum_ver {
	uint32_t crc, end; /* end 0: no version */
};

struct csum_ent {
	struct csum_ver cur, pend;
};

/* Standard CRC32C (iSCSI) of len bytes, from ISA-L. */
uint32_t csum_crc(const void *buf, uint64_t len);

/* Block k of (handle, slot) as 32 bits, what a version 2 file's crcs are
 * XORed with (datafile_bind gives it for an open datafile). */
uint32_t csum_place(uint64_t handle, uint32_t slot, uint64_t k);

/* Entry (de)coding and the check of one block: bytes holds CSUM_BLOCK bytes
 * (zeros past the datafile's end), avail of them are in the datafile, bind
 * is datafile_bind of its place. csum_match returns which version matched: 1
 * cur (or a hole), 2 pend, 0 none; csum_matched that version (a hole is the
 * empty version). */
void csum_ent_dec(const uint8_t *p, struct csum_ent *e);
void csum_ent_enc(uint8_t *p, const struct csum_ent *e);
int csum_match(const struct csum_ent *e, const void *bytes, uint32_t avail,
	       uint32_t bind);
struct csum_ver csum_matched(const struct csum_ent *e, int m);
bool csum_ent_empty(const struct csum_ent *e);

/* Header of a checksum file (version 2, extent 0). csum_hdr_check: 0, or
 * -EBADMSG if it is not one of ours for handle (nonce, if not NULL, gets
 * its create nonce). */
void csum_hdr_enc(uint8_t hdr[CSUM_HDR], uint64_t handle, uint64_t nonce, uint32_t slot);
int csum_hdr_check(const uint8_t *hdr, size_t len, uint64_t handle, uint64_t *nonce);

/* Names: "<16 hex>" and "<16 hex>.sum"; csum_parse_name tells which a
 * directory entry is (0 datafile, 1 checksum file, 2 an ec parity member's
 * record of sizes, "<16 hex>.ends" (ec_ends.h), -1 none of them). */
#define CSUM_ENDS_SUFFIX ".ends"
void csum_data_name(uint64_t handle, char *buf, size_t len);
void csum_sum_name(uint64_t handle, char *buf, size_t len);
int csum_parse_name(const char *name, uint64_t *handle);

#endif
