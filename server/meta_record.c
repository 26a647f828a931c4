/* rpfsd: checksummed records of the metadata store (see meta_record.h for
 * the format). meta.c and check.c read and write every value of the store
 * through here; rec_upgrade turns a store of the old format (bare values)
 * into one of records at start-up.
 *
 * The sum is ISA-L's crc32_iscsi (CRC32C, the CPU's crc32 instruction where
 * there is one), already linked for the data checksums (blocksum.c): a few
 * nanoseconds for a record of a hundred bytes, on every metadata read. A
 * cryptographic hash (libsodium's) would buy nothing here: the store is
 * guarded against damage, not against someone who can write it. */
#include <errno.h>
#include <inttypes.h>
#include <isa-l/crc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "meta_attr.h"
#include "meta_record.h"
#include "server.h"
#include "wire.h"

#define REC_MAP_SIZE (1ull << 30) /* as meta.c's */

/* ---- records ------------------------------------------------------------- */

uint32_t rec_sum(enum rec_db db, const MDB_val *key, const void *payload, size_t len)
{
	uint8_t pre[3] = {(uint8_t)db, (uint8_t)key->mv_size,
			  (uint8_t)(key->mv_size >> 8)};
	uint32_t crc = 0xffffffffu;

	/* LMDB keys are at most 511 bytes, values far below 2^31. */
	crc = crc32_iscsi(pre, sizeof(pre), crc);
	crc = crc32_iscsi(key->mv_data, (int)key->mv_size, crc);
	crc = crc32_iscsi((unsigned char *)payload, (int)len, crc);
	return crc ^ 0xffffffffu;
}

int rec_check(enum rec_db db, const MDB_val *key, MDB_val *val)
{
	const uint8_t *p = val->mv_data;

	if (val->mv_size < REC_HDR || get32(p) != REC_MAGIC ||
	    get32(p + 4) != rec_sum(db, key, p + REC_HDR, val->mv_size - REC_HDR))
		return REC_DAMAGED;
	val->mv_data = (uint8_t *)val->mv_data + REC_HDR;
	val->mv_size -= REC_HDR;
	return 0;
}

int rec_get(MDB_txn *txn, MDB_dbi dbi, enum rec_db db, const MDB_val *key, MDB_val *val)
{
	int rc = mdb_get(txn, dbi, (MDB_val *)key, val);

	return rc ? rc : rec_check(db, key, val);
}

int rec_reserve(MDB_txn *txn, MDB_dbi dbi, const MDB_val *key, size_t len, void **payload)
{
	MDB_val v = {REC_HDR + len, NULL};
	int rc = mdb_put(txn, dbi, (MDB_val *)key, &v, MDB_RESERVE);

	if (!rc)
		*payload = (uint8_t *)v.mv_data + REC_HDR;
	return rc;
}

void rec_seal(enum rec_db db, const MDB_val *key, void *payload, size_t len)
{
	uint8_t *p = (uint8_t *)payload - REC_HDR;

	put32(p, REC_MAGIC);
	put32(p + 4, rec_sum(db, key, payload, len));
}

int rec_put(MDB_txn *txn, MDB_dbi dbi, enum rec_db db, const MDB_val *key,
	    const MDB_val *payload, unsigned flags)
{
	MDB_val v = {REC_HDR + payload->mv_size, NULL};
	int rc = mdb_put(txn, dbi, (MDB_val *)key, &v, flags | MDB_RESERVE);

	if (rc)
		return rc;
	memcpy((uint8_t *)v.mv_data + REC_HDR, payload->mv_data, payload->mv_size);
	rec_seal(db, key, (uint8_t *)v.mv_data + REC_HDR, payload->mv_size);
	return 0;
}

int rec_store_format(MDB_txn *txn, MDB_dbi sys)
{
	MDB_val k = {sizeof(REC_FORMAT_KEY) - 1, (void *)REC_FORMAT_KEY}, v;
	int rc = rec_get(txn, sys, REC_SYS, &k, &v);

	if (rc == MDB_NOTFOUND)
		return 1;
	if (rc == REC_DAMAGED || (!rc && v.mv_size != 4))
		return -EBADMSG;
	if (rc)
		return rc > 0 ? -rc : -EIO;
	switch (get32(v.mv_data)) {
	case REC_FORMAT:
		return (int)REC_FORMAT;
	case REC_FORMAT_RPA1:
		return (int)REC_FORMAT_RPA1;
	default:
		return -EPROTONOSUPPORT;
	}
}

/* The store says it is of format REC_FORMAT. */
static int put_format(MDB_txn *txn, MDB_dbi sys)
{
	MDB_val k = {sizeof(REC_FORMAT_KEY) - 1, (void *)REC_FORMAT_KEY}, v;
	uint8_t fmt[4];

	put32(fmt, REC_FORMAT);
	v.mv_data = fmt;
	v.mv_size = sizeof(fmt);
	return rec_put(txn, sys, REC_SYS, &k, &v, 0);
}

/* ---- upgrade of an old store ------------------------------------------------- */

/* Is v, under k in db, a value of the old format? Else what is wrong in
 * what (whatlen bytes). */
static bool old_value_ok(enum rec_db db, const MDB_val *k, const MDB_val *v, char *what,
			 size_t whatlen)
{
	const uint8_t *p = v->mv_data;
	struct rpc_attr a;
	const char *path;
	size_t plen;
	char why[200];

	switch (db) {
	case REC_NS:
		if (!meta_attr_dec(p, v->mv_size, &a, &path, &plen, why, sizeof(why)))
			return true;
		snprintf(what, whatlen, "an entry (key of %zu bytes) does not decode: %s",
			 k->mv_size, why);
		return false;
	case REC_BYHANDLE:
		if (k->mv_size == 8 && v->mv_size && v->mv_size <= RPC_PATH_MAX &&
		    p[0] == '/')
			return true;
		snprintf(what, whatlen,
			 "a byhandle record (key of %zu bytes) does not decode",
			 k->mv_size);
		return false;
	default:
		return true;
	}
}

#define REC_BATCH 256

struct rec_copy {
	MDB_val k, v; /* v: a whole record, header included */
};

/* Copy up to REC_BATCH records of dbi, from the first key after *last (all
 * of them if last->mv_data is NULL), as records of the new format; *got
 * says how many. */
static int copy_batch(MDB_txn *txn, MDB_dbi dbi, enum rec_db db, const MDB_val *last,
		      struct rec_copy *out, size_t *got, char *what, size_t whatlen)
{
	MDB_cursor *cur;
	MDB_val k = *last, v;
	int rc = mdb_cursor_open(txn, dbi, &cur);

	*got = 0;
	if (rc)
		return rc;
	rc = last->mv_data ? mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE)
			   : mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	/* SET_RANGE lands on last itself: step past it. */
	if (!rc && last->mv_data)
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	for (; !rc && *got < REC_BATCH; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct rec_copy *c = &out[*got];

		if (!old_value_ok(db, &k, &v, what, whatlen)) {
			rc = REC_DAMAGED;
			break;
		}
		c->k.mv_size = k.mv_size;
		c->v.mv_size = REC_HDR + v.mv_size;
		c->k.mv_data = malloc(k.mv_size);
		c->v.mv_data = malloc(c->v.mv_size);
		if (!c->k.mv_data || !c->v.mv_data) {
			free(c->k.mv_data);
			free(c->v.mv_data);
			rc = ENOMEM;
			break;
		}
		memcpy(c->k.mv_data, k.mv_data, k.mv_size);
		memcpy((uint8_t *)c->v.mv_data + REC_HDR, v.mv_data, v.mv_size);
		rec_seal(db, &c->k, (uint8_t *)c->v.mv_data + REC_HDR, v.mv_size);
		(*got)++;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Rewrite every value of dbi as a record; *n counts them. In batches,
 * copied out before they are written back: a put moves what a cursor
 * walks. The keys stay, so the walk resumes after the last one. */
static int upgrade_db(MDB_txn *txn, MDB_dbi dbi, enum rec_db db, uint64_t *n, char *what,
		      size_t whatlen)
{
	struct rec_copy *batch = calloc(REC_BATCH, sizeof(*batch));
	uint8_t lastkey[512];
	MDB_val last = {0, NULL};
	size_t got;
	int rc;

	if (!batch)
		return ENOMEM;
	do {
		rc = copy_batch(txn, dbi, db, &last, batch, &got, what, whatlen);
		for (size_t i = 0; i < got; i++) {
			if (!rc)
				rc = mdb_put(txn, dbi, &batch[i].k, &batch[i].v, 0);
			if (!rc && i == got - 1 &&
			    batch[i].k.mv_size <= sizeof(lastkey)) {
				memcpy(lastkey, batch[i].k.mv_data, batch[i].k.mv_size);
				last.mv_data = lastkey;
				last.mv_size = batch[i].k.mv_size;
			}
			free(batch[i].k.mv_data);
			free(batch[i].v.mv_data);
		}
		*n += got;
	} while (!rc && got == REC_BATCH);
	free(batch);
	return rc;
}

/* Under an open write transaction: an old store's values become records,
 * then the store says its format. */
static int upgrade(MDB_txn *txn, const MDB_dbi dbi[3], uint64_t *n, char *what,
		   size_t whatlen)
{
	static const enum rec_db dbs[3] = {REC_NS, REC_BYHANDLE, REC_SYS};
	int rc = 0;

	for (int i = 0; i < 3 && !rc; i++)
		rc = upgrade_db(txn, dbi[i], dbs[i], n, what, whatlen);
	return rc ? rc : put_format(txn, dbi[2]);
}

int rec_upgrade(const char *metadir, char *why, size_t whylen)
{
	static const char *names[3] = {"ns", "byhandle", "sys"};
	char what[320] = "";
	MDB_env *env = NULL;
	MDB_txn *txn = NULL;
	MDB_dbi dbi[3];
	uint64_t n = 0;
	int rc, fmt;

	if (mkdir(metadir, 0700) && errno != EEXIST) {
		snprintf(why, whylen, "couldn't create %s: %s", metadir, strerror(errno));
		return -errno;
	}
	rc = mdb_env_create(&env);
	if (!rc)
		rc = mdb_env_set_mapsize(env, REC_MAP_SIZE);
	if (!rc)
		rc = mdb_env_set_maxdbs(env, 4);
	if (!rc)
		rc = mdb_env_open(env, metadir, MDB_NOTLS, 0600);
	if (!rc)
		rc = mdb_txn_begin(env, NULL, 0, &txn);
	for (int i = 0; i < 3 && !rc; i++)
		rc = mdb_dbi_open(txn, names[i], MDB_CREATE, &dbi[i]);
	if (rc) {
		snprintf(why, whylen, "couldn't open the metadata store in %s: %s",
			 metadir, mdb_strerror(rc));
		goto fail;
	}
	fmt = rec_store_format(txn, dbi[2]);
	if (fmt == -EBADMSG) {
		snprintf(
			why, whylen,
			"the metadata store in %s is damaged: its format record fails its checksum (rpfsd --check tells more; restore the store from a backup)",
			metadir);
		rc = EBADMSG;
		goto fail;
	}
	if (fmt < 0) {
		snprintf(
			why, whylen,
			"the metadata store in %s is of a newer format than this rpfsd's (%u): run a newer rpfsd",
			metadir, REC_FORMAT);
		rc = -fmt;
		goto fail;
	}
	if (fmt != 1) {
		/* A store of format 2 opens as it is (its entries decode as
		 * attribute version 1); it only says that it may hold entries
		 * of version 2 from now on, which an older rpfsd would not read. */
		if (fmt == (int)REC_FORMAT_RPA1)
			rc = put_format(txn, dbi[2]);
		/* Committed: it may have made the databases of a new store. */
		if (!rc)
			rc = mdb_txn_commit(txn);
		else
			mdb_txn_abort(txn);
		txn = NULL;
		if (rc) {
			snprintf(why, whylen,
				 "couldn't write the metadata store in %s: %s", metadir,
				 mdb_strerror(rc));
			goto fail;
		}
		if (fmt == (int)REC_FORMAT_RPA1)
			log_warn(
				"rpfsd: the metadata store in %s is now of format %u: its entries stay as they are, new ones are written in attribute version 2 (an older rpfsd no longer opens it)",
				metadir, REC_FORMAT);
		mdb_env_close(env);
		return 0;
	}
	rc = upgrade(txn, dbi, &n, what, sizeof(what));
	if (rc == REC_DAMAGED) {
		snprintf(
			why, whylen,
			"the metadata store in %s is of the old format (no record checksums) and %s: not upgraded; run rpfsd --check on it, or restore it from a backup",
			metadir, what);
		goto fail;
	}
	if (!rc) {
		rc = mdb_txn_commit(txn);
		txn = NULL;
	}
	if (rc) {
		snprintf(why, whylen, "couldn't upgrade the metadata store in %s: %s",
			 metadir, mdb_strerror(rc));
		goto fail;
	}
	/* A warning: it happens once, and an operator should know it did. */
	if (n)
		log_warn(
			"rpfsd: the metadata store in %s was of the old format: upgraded to checksummed records (%" PRIu64
			" records rewritten, once)",
			metadir, n);
	mdb_env_close(env);
	return 0;
fail:
	if (txn)
		mdb_txn_abort(txn);
	if (env)
		mdb_env_close(env);
	return rc > 0 ? -rc : -EIO;
}
