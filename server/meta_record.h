/* rpfsd: checksummed records of the metadata store (LMDB).
 *
 * Every value meta.c keeps in the store ("ns", "byhandle", "sys") is a
 * record: an 8-byte header, then the payload meta.c encodes.
 *
 *   magic u32 LE   REC_MAGIC ("RPR2")
 *   sum   u32 LE   CRC32C of: the database's tag (1 byte), the key's
 *                  length (u16 LE), the key, the payload
 *
 * The sum binds the payload to its key and its database: a flipped bit, a
 * value written under another key, a record of one database read as one of
 * another all fail the check. Every read checks it (rec_get, rec_check);
 * a failure is REC_DAMAGED, never a guess at what the bytes meant.
 *
 * The store says its format in "sys" under "format" (a record, payload u32
 * LE):
 *   (none)  1, the old format: bare payloads; rec_upgrade rewrites them as
 *           records, once, at start-up
 *   2       records, every entry's attributes of version 1 (meta_attr.h):
 *           opens as it is; rec_upgrade only says 3, as an rpfsd writes
 *           entries of version 2 from then on
 *   3       REC_FORMAT: records, entries of any version meta_attr.c knows
 * A number above REC_FORMAT is a newer rpfsd's store: refused. */
#ifndef RPFS_META_RECORD_H
#define RPFS_META_RECORD_H

#include <errno.h>
#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

#define REC_HDR		8u
#define REC_MAGIC	0x32525052u /* "RPR2" */
#define REC_FORMAT	3u	    /* records, entries of any attribute version */
#define REC_FORMAT_RPA1 2u	    /* records, entries of attribute version 1 */
#define REC_DAMAGED	EBADMSG	    /* an LMDB-style (positive) return code */
#define REC_FORMAT_KEY	"format"

/* Which database a record lives in (part of what its sum covers). */
enum rec_db { REC_NS = 1, REC_BYHANDLE = 2, REC_SYS = 3 };

/* The sum of a record's payload under key in db. */
uint32_t rec_sum(enum rec_db db, const MDB_val *key, const void *payload, size_t len);

/* Check a stored value (from mdb_get or a cursor) of key in db and make
 * val its payload: 0, or REC_DAMAGED (val untouched). */
int rec_check(enum rec_db db, const MDB_val *key, MDB_val *val);

/* mdb_get and rec_check: 0, MDB_NOTFOUND, REC_DAMAGED, or LMDB's code. */
int rec_get(MDB_txn *txn, MDB_dbi dbi, enum rec_db db, const MDB_val *key, MDB_val *val);

/* mdb_put of payload as a record: LMDB's code. */
int rec_put(MDB_txn *txn, MDB_dbi dbi, enum rec_db db, const MDB_val *key,
	    const MDB_val *payload, unsigned flags);

/* Room for a payload of len bytes under key (*payload points to it: fill
 * it, then rec_seal before the next write of the transaction). */
int rec_reserve(MDB_txn *txn, MDB_dbi dbi, const MDB_val *key, size_t len,
		void **payload);
void rec_seal(enum rec_db db, const MDB_val *key, void *payload, size_t len);

/* The store's format in txn (sys the "sys" database): REC_FORMAT,
 * REC_FORMAT_RPA1, 1 (old: no "format" record), or a negative errno
 * (-EBADMSG: the format record is damaged; -EPROTONOSUPPORT: a newer
 * format). */
int rec_store_format(MDB_txn *txn, MDB_dbi sys);

/* At start-up, before meta_open: make the store in metadir (created if
 * there is none) one of format REC_FORMAT, rewriting an old store's values
 * as records once, or marking a store of format 2 (logged). 0, or a
 * negative errno and why says what is wrong and what to do. */
int rec_upgrade(const char *metadir, char *why, size_t whylen);

#endif
