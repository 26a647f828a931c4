/* rpfsd: checks of the metadata store (LMDB) before it is mapped (store.c). */
#ifndef RPFS_STORE_H
#define RPFS_STORE_H

#include <lmdb.h>
#include <stdbool.h>
#include <stddef.h>

/* 0 if metadir holds no store yet or a whole one; else a negative errno
 * and why (whylen bytes) says what is wrong and what to do. Never faults,
 * whatever the file holds. */
int store_validate(const char *metadir, char *why, size_t whylen);

/* Lock the storage directory dir for this process (DIR/rpfsd.lock, kept
 * until exit): one server or check at a time. -EBUSY (why says who) if
 * another process holds it. */
int store_lock(const char *dir, char *why, size_t whylen);

/* meta_reserve.c: keep data.mdb's reserve allocated past LMDB's last page,
 * before a write transaction. 0, or -ENOSPC (logged, naming dir) when the
 * disk can't top it up and less than half is left, unless the transaction
 * frees space (freeing: REMOVE, RMDIR), which may always use it. */
int store_reserve(MDB_env *env, const char *dir, bool freeing);

#endif
