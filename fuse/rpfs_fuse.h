/* rpfs-fuse: rpfs mounted as a POSIX file system through libfuse3.
 *
 * One librpfs client serves the whole mount; libfuse's multi-threaded loop
 * calls the operations from many threads at once (librpfs is thread-safe).
 * Operations are path-based, as rpfs's namespace is: FUSE paths are rpfs
 * paths. An open file is an rpfs_file_t kept in the FUSE file handle, and
 * reads and writes go straight to rpfs_pread/rpfs_pwrite (list I/O over
 * the same transport as MPI-IO).
 *
 *   main.c      options, start-up (the cluster is checked before the mount),
 *               daemon, the loop
 *   ops_ns.c    namespace: getattr, readdir, mkdir, rmdir, unlink, rename,
 *               chmod, chown, utimens, statfs
 *   ops_file.c  files: create, open, read, write, truncate, fsync, release
 *   errors.c    librpfs errors to errno, the log */
#ifndef RPFS_FUSE_H
#define RPFS_FUSE_H

#define FUSE_USE_VERSION 312
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/types.h>

#include "log.h"
#include "rpfs.h"

/* Largest read and write asked of the kernel (it may split further). */
#define RFS_MAX_IO (1u << 20)

struct rfs {
	rpfs_client_t *c;
	uid_t euid; /* the mount's own identity, which the servers see */
	gid_t egid;
	FILE *log; /* NULL: syslog */
	/* what the kernel sent, logged at unmount (the test checks big writes) */
	atomic_ulong reads, max_read;
	atomic_ulong writes, max_write;
};

/* Count a read or write of len bytes in n and raise max to it. */
void rfs_count(atomic_ulong *n, atomic_ulong *max, size_t len);

/* The mount, from inside an operation. */
struct rfs *rfs_get(void);

/* A librpfs result as FUSE wants it: 0 or bytes as is; errors the caller
 * can act on (ENOENT, EACCES, ...) as their -errno; anything else (a
 * server that fails, times out, or finds damaged data) is -EIO with a log
 * line naming the operation, the path, the server and the cause. */
int rfs_result(int ret, const char *op, const char *path);
void rfs_log(struct rfs *fs, enum rpfs_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A new entry made for another user through a root mount (allow_other)
 * is given to that user, as a local file system would. */
void rfs_give_to_caller(const char *path);

void rfs_ns_ops(struct fuse_operations *ops);
void rfs_file_ops(struct fuse_operations *ops);

#endif
