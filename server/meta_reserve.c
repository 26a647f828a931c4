/* rpfsd: the metadata store's reserve of disk space, so that a full disk
 * can always be emptied.
 *
 * LMDB copies every page a write transaction changes into a page from its
 * free list or, while none is free yet, from the end of data.mdb, which
 * then grows. A REMOVE too: on a full disk its commit failed with ENOSPC,
 * and the one request that frees space could not run. So data.mdb is kept
 * META_RESERVE bytes longer than LMDB's last page: the blocks are allocated
 * (posix_fallocate) and belong to the file, so no datafile write can take
 * them, and LMDB's pages grow into them without asking the disk for more.
 * It is topped up before every write transaction. When the disk cannot
 * give the top-up, transactions that free space (REMOVE, RMDIR) may use
 * what is left; every other write is refused with ENOSPC once less than
 * half is left, which a remove's few pages never exhaust (the pages it
 * frees are reused two transactions later). LMDB never reads a page past
 * its last one (store.c), so the tail means nothing to it. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "store.h"

#define META_RESERVE (2u << 20)

int store_reserve(MDB_env *env, const char *dir, bool freeing)
{
	MDB_envinfo info;
	struct stat fst;
	MDB_stat st;
	uint64_t used, have;
	int fd, rc;

	if (mdb_env_get_fd(env, &fd) || mdb_env_info(env, &info) ||
	    mdb_env_stat(env, &st) || fstat(fd, &fst))
		return 0; /* the transaction itself will say what is wrong */
	used = ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
	have = (uint64_t)fst.st_size > used ? (uint64_t)fst.st_size - used : 0;
	if (have >= META_RESERVE / 2)
		return 0;
	rc = posix_fallocate(fd, (off_t)used, META_RESERVE);
	if (!rc || freeing)
		return 0;
	log_warn("rpfsd: metadata store %s: can't keep its %u KiB reserve (%s, %llu KiB "
		 "left, kept for removes): write refused",
		 dir, META_RESERVE >> 10, strerror(rc), (unsigned long long)(have >> 10));
	return -rc;
}
