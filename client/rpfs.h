/* librpfs: the rpfs client library.
 *
 * A client reads the cluster config, connects lazily to each server it
 * needs (one transport connection per server, kept for the life of the
 * client), and turns file operations into requests: metadata to the
 * metadata server owning the path (or handle), data to the I/O servers that
 * hold the stripes, one request per server for any list of pieces.
 *
 * Errors: every function returns 0 (or a byte count) on success and a
 * negative errno on failure; rpfs_errmsg() then gives a message for the
 * calling thread that names the server and the cause, e.g.
 * "io server 2 (127.0.0.1:7102): no progress within 30000 ms". A client
 * never blocks forever on a server: every operation is bounded by the
 * transport timeout (timeout_ms).
 *
 * Thread-safe: a client and its files may be used from many threads. */
#ifndef RPFS_H
#define RPFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rpfs_client rpfs_client_t;
typedef struct rpfs_file rpfs_file_t;
typedef struct rpfs_request rpfs_request_t;

enum { RPFS_TYPE_FILE = 1, RPFS_TYPE_DIR = 2 };

/* Bytes of the capability a file's attributes carry (see rpfs_stat.cap). */
#define RPFS_CAP_SIZE 32

struct rpfs_stat {
	uint64_t handle;
	uint32_t type; /* RPFS_TYPE_* */
	uint32_t mode, uid, gid;
	int64_t atime, mtime, ctime; /* ns since the epoch */
	uint64_t size;		     /* files: logical size from the I/O servers */
	uint64_t stripe_unit;
	uint32_t stripe_count;
	uint32_t first_server; /* I/O server index of stripe 0 */
	/* Opaque: the capability the metadata server granted with these
	 * attributes (the rights of the open that got them; none from
	 * rpfs_stat). The I/O servers serve a handle only with it, so
	 * attributes broadcast to other processes (rpfs_open_attr) carry it. */
	unsigned char cap[RPFS_CAP_SIZE];
};

/* Layout for a new file; zero fields take the cluster defaults. */
struct rpfs_create_opts {
	uint64_t stripe_unit;
	uint32_t stripe_count;
	int32_t first_server; /* -1: the metadata server picks (spreads files) */
};

/* A piece of a file: offset and length in the file (logical). */
struct rpfs_seg {
	uint64_t off;
	uint64_t len;
};

#define RPFS_O_EXCL  1u /* rpfs_create: fail with -EEXIST if it exists */
#define RPFS_O_READ  2u /* rpfs_open, rpfs_create: for reading */
#define RPFS_O_WRITE 4u /* rpfs_open, rpfs_create: for writing */
#define RPFS_O_RDWR  (RPFS_O_READ | RPFS_O_WRITE)

/* config: a path, or NULL for $RPFS_CONFIG, then /etc/rpfs/rpfs.conf, then
 * ~/.rpfs/rpfs.conf (the first readable; rpfs.conf(5)).
 * Errors: the config's (-ENOENT and the like for a file that cannot be
 * read, -EINVAL for a bad one, -ENOKEY without a cluster key), -ENOMEM, or
 * the fabric's when it cannot be opened; rpfs_errmsg() says which. */
int rpfs_init(const char *config, rpfs_client_t **out);

/* A transport setting a program chooses: key is a client setting's name
 * (`rpfs settings` lists them, column "client"), value as the config file
 * would write it ("64K", "5000", "tcp"). */
struct rpfs_opt {
	const char *key;
	const char *value;
};

/* rpfs_init with settings from the program (an MPI program's hints
 * rpfs_<key>). Settings come from, later ones winning: built-in defaults,
 * the config's [transport] section, these options, then the user's
 * environment RPFS_<KEY>. The environment wins on purpose: like ROMIO's
 * hints, a program's options are advice the user running it may overrule.
 * Errors: as rpfs_init, and -EINVAL, with rpfs_errmsg() naming the key,
 * for an unknown key, a server setting (max_conns, ...) or a bad value,
 * even where the environment overrules it. */
int rpfs_init_opts(const char *config, const struct rpfs_opt *opts, int nopts,
		   rpfs_client_t **out);
/* The i-th key rpfs_init_opts accepts, from 0; NULL past the last. */
const char *rpfs_opt_name(int i);

/* Requests still in flight move their data first; then requests never
 * waited for and files never closed are freed with the client. */
void rpfs_finalize(rpfs_client_t *c);
/* The last error message of the calling thread ("" if none). */
const char *rpfs_errmsg(void);

/* Servers of the cluster. */
int rpfs_num_io_servers(rpfs_client_t *c);
int rpfs_num_meta_servers(rpfs_client_t *c);
/* Round trip to server index (in config order); *usec gets the time. */
int rpfs_ping(rpfs_client_t *c, int server, double *usec);
const char *rpfs_server_desc(rpfs_client_t *c,
			     int server); /* "io server 1 (host:port)" */

/* ---- namespace ---------------------------------------------------------- */
int rpfs_mkdir(rpfs_client_t *c, const char *path, uint32_t mode);
int rpfs_rmdir(rpfs_client_t *c, const char *path);
int rpfs_stat(rpfs_client_t *c, const char *path, struct rpfs_stat *st);
int rpfs_chmod(rpfs_client_t *c, const char *path, uint32_t mode);
/* Root may give a file to anyone; its owner may only change its group, to
 * one of the owner's groups (-EPERM otherwise). */
int rpfs_chown(rpfs_client_t *c, const char *path, uint32_t uid, uint32_t gid);
/* Sets the access and modification times (ns since the epoch): the owner,
 * root, or a process allowed to write the file. A later data write or
 * truncate makes mtime and ctime that write's (rpfs_stat asks the I/O
 * servers, which keep the time of each datafile's last change, so writes
 * never reach the metadata server); one before no longer counts. */
int rpfs_utimes(rpfs_client_t *c, const char *path, int64_t atime_ns, int64_t mtime_ns);
/* Removes the metadata and every datafile. */
int rpfs_remove(rpfs_client_t *c, const char *path);
/* Renames from to to, atomically on the metadata server that holds both:
 * an existing file at to is replaced, an existing empty directory at to
 * is replaced by a directory; a directory moves with everything below it.
 * Files open under the old name stay usable. Errors: -ENOENT (no from, or
 * no parent of to), -ENOTDIR, -EISDIR (file onto a directory), -ENOTEMPTY
 * (directory onto a non-empty one), -EINVAL (to inside from, or "/"),
 * -EACCES/-EPERM (write and search on both parents; the sticky bit),
 * -EXDEV when from and to live on different metadata servers (or a
 * non-empty directory's entries do): copy and remove instead, as mv(1)
 * does across file systems (`rpfs mv` does so by itself). */
int rpfs_rename(rpfs_client_t *c, const char *from, const char *to);
/* The default layout of files created in dir from now on, and of its new
 * subdirectories (which inherit it at mkdir): stripe_unit bytes (0: the
 * cluster's) over stripe_count I/O servers (0: the cluster's). A layout
 * given at create (rpfs_create_opts, MPI hints) wins over it; rpfs_stat of
 * a directory reports it. Errors: -ENOTDIR (a file's layout is fixed when
 * it is created), -EINVAL (more servers than the cluster has, a unit over
 * 4 GiB), -EPERM (not the owner or root), -ENOENT. */
int rpfs_setstripe(rpfs_client_t *c, const char *dir, uint64_t stripe_unit,
		   uint32_t stripe_count);
/* Calls fn for each entry of a directory (name only, no path); stops early
 * when fn returns nonzero (that value is returned). */
int rpfs_readdir(rpfs_client_t *c, const char *path,
		 int (*fn)(const char *name, uint32_t type, void *arg), void *arg);
struct rpfs_statfs {
	/* Bytes of the file systems holding the I/O servers' storage, each
	 * counted once however many servers share it: avail is what an
	 * unprivileged writer may still use (f_bavail), free below. */
	uint64_t total, avail;
	uint64_t files; /* objects over all metadata servers */
	uint64_t free;	/* free bytes (f_bfree, root's reserve included) */
};
int rpfs_statfs(rpfs_client_t *c, struct rpfs_statfs *st);

/* ---- files -------------------------------------------------------------- */
/* Permissions are the servers' (mode and owner as in POSIX, for the uid and
 * groups of the process): opening for RPFS_O_READ and/or RPFS_O_WRITE
 * fails with -EACCES where the mode does not allow it, and the file then
 * reads or writes only as opened. rpfs_create without either flag opens
 * for both; an existing file (no RPFS_O_EXCL) is opened as rpfs_open does,
 * a new one as asked whatever its mode. rpfs_open with neither flag opens
 * for reading. */
int rpfs_create(rpfs_client_t *c, const char *path, uint32_t mode, unsigned flags,
		const struct rpfs_create_opts *opts, rpfs_file_t **out);
int rpfs_open(rpfs_client_t *c, const char *path, unsigned flags, rpfs_file_t **out);
/* Open from attributes another process looked up (e.g. broadcast by MPI
 * rank 0), without any request: scalable opens. Its error messages name
 * the file by its handle ("handle 0x6"): the attributes carry no path. */
int rpfs_open_attr(rpfs_client_t *c, const struct rpfs_stat *st, rpfs_file_t **out);
/* The same, with the file's path for its error messages (as rpfs_open's
 * name it), so every process of a program names the file alike; NULL as
 * rpfs_open_attr. Nothing checks that path and attributes belong together. */
int rpfs_open_attr_path(rpfs_client_t *c, const struct rpfs_stat *st, const char *path,
			rpfs_file_t **out);
/* Waits until the file's nonblocking requests have moved their data; they
 * stay valid, to be tested or waited for. */
void rpfs_close(rpfs_file_t *f);
/* Attributes as opened (size is 0: use rpfs_getsize). */
void rpfs_file_attr(rpfs_file_t *f, struct rpfs_stat *st);

ssize_t rpfs_pwrite(rpfs_file_t *f, const void *buf, size_t len, uint64_t off);
/* Reads return len bytes: holes and bytes beyond the end read as zeros
 * (use rpfs_getsize for the end of file). */
ssize_t rpfs_pread(rpfs_file_t *f, void *buf, size_t len, uint64_t off);
/* List I/O: memory pieces and file pieces of equal total length, any number
 * of each; one request per I/O server (long lists are split over several
 * messages transparently). Returns the bytes moved. */
ssize_t rpfs_writev(rpfs_file_t *f, const struct iovec *mem, int nmem,
		    const struct rpfs_seg *file, int nfile);
ssize_t rpfs_readv(rpfs_file_t *f, const struct iovec *mem, int nmem,
		   const struct rpfs_seg *file, int nfile);

/* Nonblocking versions: they return once every server's call is started;
 * the data moves while the caller does something else (the client's
 * progress thread, setting progress_thread). The buffers must stay valid
 * until the request completes (the lists are copied; the memory is not). */
int rpfs_ipwrite(rpfs_file_t *f, const void *buf, size_t len, uint64_t off,
		 rpfs_request_t **req);
int rpfs_ipread(rpfs_file_t *f, void *buf, size_t len, uint64_t off,
		rpfs_request_t **req);
int rpfs_iwritev(rpfs_file_t *f, const struct iovec *mem, int nmem,
		 const struct rpfs_seg *file, int nfile, rpfs_request_t **req);
int rpfs_ireadv(rpfs_file_t *f, const struct iovec *mem, int nmem,
		const struct rpfs_seg *file, int nfile, rpfs_request_t **req);
/* *done = 1 when complete; then *bytes (if not NULL) and the return value
 * give the result and the request is freed. */
int rpfs_test(rpfs_request_t *req, int *done, ssize_t *bytes);
/* rpfs_test that waits, asleep, at most timeout_us for the request to
 * complete: for a caller that would otherwise test in a loop (MPICH's
 * MPI_Wait polls a generalized request that way). */
int rpfs_timedwait(rpfs_request_t *req, long timeout_us, int *done, ssize_t *bytes);
/* Wait, return the result (bytes or negative errno) and free the request. */
ssize_t rpfs_wait(rpfs_request_t *req);

int rpfs_getsize(rpfs_file_t *f, uint64_t *size);
int rpfs_truncate(rpfs_file_t *f, uint64_t size);
/* Data written before this call survives a server crash once it returns. */
int rpfs_sync(rpfs_file_t *f);

/* Shared file pointer: atomically add delta to the file's counter on its
 * metadata server, returning the old value. */
int rpfs_fetch_add(rpfs_file_t *f, int64_t delta, int64_t *old);
/* Byte-range locks served by the metadata server (len 0: to the end).
 * Blocks until granted (bounded by the timeout); owner-based, so several
 * threads of one client may hold disjoint ranges. */
int rpfs_lock(rpfs_file_t *f, uint64_t off, uint64_t len, int exclusive);
int rpfs_unlock(rpfs_file_t *f, uint64_t off, uint64_t len);

#ifdef __cplusplus
}
#endif
#endif
