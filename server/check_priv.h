/* rpfsd --check: what check.c (the driver and its report), check_store.c
 * (role meta: the metadata store) and check_data.c (role io: datafiles,
 * their checksums and orphans) share. What is checked is told at the top
 * of check.c. */
#ifndef RPFS_CHECK_PRIV_H
#define RPFS_CHECK_PRIV_H

#include <lmdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meta_record.h"
#include "server.h"

#define CHK_MAP_SIZE (1ull << 30)
#define CHK_BATCH    256

struct chk {
	struct srv *s;
	unsigned flags;
	int problems, repaired;
	int notes; /* what the check could not know (not problems) */
	char datadir[1100], metadir[1100];
	/* the store, when this server has role meta and it opened */
	MDB_env *env;
	MDB_dbi ns, byh, sys;
	int fmt; /* the store's format (rec_store_format) */
	bool meta_ok;
	uint64_t next;	   /* handle counter (0: none) */
	uint64_t *handles; /* of the entries, sorted (what a datafile belongs to) */
	size_t nhandles, caphandles;
};

/* One line on stdout: a problem, and whether --repair fixed it. */
void chk_problem(struct chk *c, bool fixed, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* What the check could not know, and why: not a problem of this storage. */
void chk_note(struct chk *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline bool chk_repair(const struct chk *c)
{
	return c->flags & CHECK_REPAIR;
}

/* Role meta (check_store.c): the store opens, its indexes agree, its
 * handle counter is ahead; fills c->handles (sorted) and c->next. */
void check_meta(struct chk *c);
/* A record of the store as its payload: 0, or REC_DAMAGED. An old
 * store's values are their payloads. */
int chk_unwrap(const struct chk *c, enum rec_db db, const MDB_val *k, MDB_val *v);
/* Decode an ns value: attributes and path (NUL-terminated into path,
 * RPC_PATH_MAX + 1 bytes); -EBADMSG. */
int chk_ns_value(const MDB_val *v, struct rpc_attr *a, char *path);
/* Does an entry of the store have this handle? (after check_meta) */
bool chk_store_has(struct chk *c, uint64_t handle);

/* Role io (check_data.c): datafiles, checksum files, orphans. */
void check_io(struct chk *c);
/* --copies (check_copies.c): the datafiles of handles[0..n) here against
 * their mirror copies on the other I/O servers, by digest. */
void check_copies(struct chk *c, int dirfd, const uint64_t *handles, size_t n);

#endif
