/* rpfsd: the stored form of a namespace entry, the payload of an "ns"
 * record of the metadata store (meta_record.h wraps it in a checksummed
 * record): the entry's attributes, then its full path (no NUL). It is
 * apart from the wire form (rpc_enc_attr): a stored entry outlives any
 * protocol change, and says more than a reply needs to (its layout's kind
 * and redundancy parameters).
 *
 * Versioned by its first four bytes; an entry is decoded by the version
 * it says, and written in the newest:
 *
 *   version 1, "RPA1" (rpfsd before layouts had a kind; always a stripe
 *   layout): magic u32, then the 80 bytes of that time's wire attributes:
 *     handle u64 @4, type u32 @12, mode u32 @16, uid u32 @20, gid u32 @24,
 *     atime i64 @28, mtime i64 @36, ctime i64 @44, stripe_unit u64 @52,
 *     stripe_count u32 @60, first_server u32 @64, nservers u32 @68,
 *     (4 unused bytes @72), times_set i64 @76; the path @84
 *
 *   version 2, "RPA2" (META_ATTR_SIZE bytes before the path):
 *     magic u32 @0, handle u64 @4, type u32 @12, mode u32 @16, uid u32 @20,
 *     gid u32 @24, atime i64 @28, mtime i64 @36, ctime i64 @44,
 *     times_set i64 @52, layout: kind u32 @60, stripe_unit u64 @64,
 *     stripe_count u32 @72, first_server u32 @76, nservers u32 @80,
 *     copies u32 @84, data_cells u32 @88, parity_cells u32 @92,
 *     cell_size u64 @96; the path @104
 *
 * All little-endian. A newer version is a new magic: an rpfsd that does
 * not know it refuses the entry rather than guess (and the store's format,
 * meta_record.h, keeps an older rpfsd from opening a store that has one). */
#ifndef RPFS_META_ATTR_H
#define RPFS_META_ATTR_H

#include <stddef.h>
#include <stdint.h>

#include "rpc.h"

#define META_ATTR_V1	  0x31415052u /* "RPA1" */
#define META_ATTR_V2	  0x32415052u /* "RPA2" */
#define META_ATTR_V1_SIZE (4 + 80)
#define META_ATTR_SIZE	  104u /* what meta_attr_enc writes before the path */

/* Bytes of the entry of a's attributes and path (plen bytes). */
size_t meta_attr_size(size_t plen);
/* Write the entry (meta_attr_size(plen) bytes) into buf, newest version. */
void meta_attr_enc(void *buf, const struct rpc_attr *a, const char *path, size_t plen);

/* Decode an entry of len bytes: the attributes into a (a->cap zeroed),
 * and *path, *plen to the path inside buf (not NUL-terminated). 0, or
 *   -EPROTO       malformed: too short, no path, a path longer than
 *                 RPC_PATH_MAX, an unknown type, a file layout that
 *                 layout_check calls malformed
 *   -EOPNOTSUPP   a layout of a kind this rpfsd has no math for
 *   -EPROTONOSUPPORT  a version this rpfsd does not know
 * why (whylen bytes, may be 0) says which in words. */
int meta_attr_dec(const void *buf, size_t len, struct rpc_attr *a, const char **path,
		  size_t *plen, char *why, size_t whylen);

/* The path of an entry of a version this rpfsd knows, without decoding
 * (or trusting) its attributes: for naming a damaged entry and for
 * listing a directory. NULL if there is none. */
const char *meta_attr_path(const void *buf, size_t len, size_t *plen);

#endif
