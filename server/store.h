/* rpfsd: checks of the metadata store (LMDB) before it is mapped (store.c). */
#ifndef RPFS_STORE_H
#define RPFS_STORE_H

#include <stddef.h>

/* 0 if metadir holds no store yet or a whole one; else a negative errno
 * and why (whylen bytes) says what is wrong and what to do. Never faults,
 * whatever the file holds. */
int store_validate(const char *metadir, char *why, size_t whylen);

/* Lock the storage directory dir for this process (DIR/rpfsd.lock, kept
 * until exit): one server or check at a time. -EBUSY (why says who) if
 * another process holds it. */
int store_lock(const char *dir, char *why, size_t whylen);

#endif
