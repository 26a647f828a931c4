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
 * Any function that sends a request (all but rpfs_open_attr*, rpfs_close,
 * rpfs_file_attr, rpfs_errmsg, rpfs_opt_name, rpfs_num_*, rpfs_server_desc,
 * rpfs_redundancy_parse, rpfs_file_redundancy, rpfs_copy_servers)
 * may also fail with these, besides the errors listed with it:
 *   -ETIMEDOUT     a server answered nothing for timeout_ms; the connection
 *                  is dropped (the next call connects again)
 *   -ECONNREFUSED  a server cannot be reached, or refused without a reason
 *   -ECONNRESET, -ECONNABORTED  the connection was lost during the call
 *   -EPROTO        a malformed message or reply (the connection is closed)
 *   -EKEYREJECTED  the server does not accept our cluster key, or cannot
 *                  prove it holds it (not a server of this cluster)
 *   -ETIME         our clock and the server's differ by more than
 *                  auth_window_s; -EALREADY: the server saw this connection
 *                  request before (a replay); -EPROTONOSUPPORT: another
 *                  protocol version; -EUSERS: the server is at max_conns
 *   -ESTALE        when connecting: the server's config disagrees with ours
 *                  (another cluster, another server list); on a file (data,
 *                  size, truncate, sync): a datafile of it is missing (the
 *                  file was removed, or an I/O server lost its storage)
 *   -EHOSTDOWN     the server needed another server that is unreachable (a
 *                  metadata server holding an ancestor or the parent of the
 *                  path, an I/O server of a new file's layout); its log
 *                  names it
 *   -EBADMSG       damaged data or metadata: a block that fails its checksum
 *                  (the message gives the file offset), a metadata record
 *                  that fails its own, a layout that disagrees with the
 *                  datafiles; `rpfsd --check` on that server lists them
 *   -EIO           a server's storage failed (LMDB, a disk error)
 *   -EACCES        the caller may not (the modes, search permission on every
 *                  ancestor of a path, the rights of the file's open)
 *   -EKEYEXPIRED   a server found the file's capability expired (its clock is
 *                  far from the metadata server's: keep clocks in step)
 *   -ENOMEM        out of memory, here or on the server
 * A path must be absolute (-EINVAL otherwise), names at most 255 bytes and
 * the normalized path at most 4095 (-ENAMETOOLONG).
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
 * the fabric's when it cannot be opened (-ENODEV: no such provider here);
 * rpfs_errmsg() says which. Connects to nothing: a server's errors come
 * with the first call that needs it. */
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
/* The i-th key rpfs_init_opts accepts, from 0; NULL past the last (no errors). */
const char *rpfs_opt_name(int i);

/* Requests still in flight move their data first; then requests never
 * waited for and files never closed are freed with the client. No errors:
 * a request's is lost unless it is waited for before. */
void rpfs_finalize(rpfs_client_t *c);
/* The last error message of the calling thread ("" if none); never NULL. */
const char *rpfs_errmsg(void);

/* Servers of the cluster, from the config (no errors). */
int rpfs_num_io_servers(rpfs_client_t *c);
int rpfs_num_meta_servers(rpfs_client_t *c);
/* Round trip to server index (in config order); *usec gets the time.
 * Errors: -EINVAL (no such server), the connection's (see the top). */
int rpfs_ping(rpfs_client_t *c, int server, double *usec);
/* "io server 1 (host:port)"; "no such server" for an index out of range. */
const char *rpfs_server_desc(rpfs_client_t *c, int server);

/* ---- namespace ---------------------------------------------------------- */
/* The new directory belongs to the caller. Errors: -EEXIST (the path
 * exists, "/" too), -ENOENT (no parent), -ENOTDIR (the parent is a file),
 * -EACCES (no write and search permission on the parent), -ENOSPC (the
 * metadata server's disk is full). */
int rpfs_mkdir(rpfs_client_t *c, const char *path, uint32_t mode);
/* Errors: -ENOENT, -ENOTDIR (a file), -ENOTEMPTY, -EBUSY ("/"), -EACCES
 * (no write and search permission on the parent), -EPERM (the parent's
 * sticky bit: neither the directory's owner nor the parent's). */
int rpfs_rmdir(rpfs_client_t *c, const char *path);
/* A file's size and times are asked of its I/O servers. Errors: -ENOENT,
 * -ENOTDIR (an ancestor is a file), -EACCES (search permission on an
 * ancestor); for a file also -ESTALE and -EBADMSG (a datafile missing, or
 * longer or shorter than its checksums say). */
int rpfs_stat(rpfs_client_t *c, const char *path, struct rpfs_stat *st);
/* Errors: -ENOENT, -EPERM (not the owner or root; "/"), -ENOSPC (the
 * metadata server's disk is full). */
int rpfs_chmod(rpfs_client_t *c, const char *path, uint32_t mode);
/* Root may give a file to anyone; its owner may only change its group, to
 * one of the owner's groups (-EPERM otherwise, and for "/"). Errors also:
 * -ENOENT, -ENOSPC. */
int rpfs_chown(rpfs_client_t *c, const char *path, uint32_t uid, uint32_t gid);
/* Sets the access and modification times (ns since the epoch): the owner,
 * root, or a process allowed to write the file. A later data write or
 * truncate makes mtime and ctime that write's (rpfs_stat asks the I/O
 * servers, which keep the time of each datafile's last change, so writes
 * never reach the metadata server); one before no longer counts. Errors:
 * -ENOENT, -EACCES (neither the owner, root, nor allowed to write), -EPERM
 * ("/"), -ENOSPC. */
int rpfs_utimes(rpfs_client_t *c, const char *path, int64_t atime_ns, int64_t mtime_ns);
/* Removes the metadata and every datafile (files open elsewhere lose their
 * data at once). Errors: -ENOENT, -EISDIR (a directory: rpfs_rmdir),
 * -EACCES (no write and search permission on the parent), -EPERM (the
 * parent's sticky bit). An I/O server that cannot be reached keeps an
 * orphan datafile, which `rpfsd --check --repair` removes: no error. */
int rpfs_remove(rpfs_client_t *c, const char *path);
/* Renames from to to, atomically on the metadata server that holds both:
 * an existing file at to is replaced, an existing empty directory at to
 * is replaced by a directory; a directory moves with everything below it.
 * Files open under the old name stay usable. Errors: -ENOENT (no from, or
 * no parent of to), -ENOTDIR, -EISDIR (file onto a directory), -ENOTEMPTY
 * (directory onto a non-empty one), -EINVAL (to inside from, or "/"),
 * -EACCES/-EPERM (write and search on both parents; the sticky bit),
 * -EBUSY (from or to is "/"), -ENAMETOOLONG (an entry moved below would
 * get a path over 4095 bytes), -ENOSPC, -EXDEV when from and to live on
 * different metadata servers (or a non-empty directory's entries do): copy
 * and remove instead, as mv(1) does across file systems (`rpfs mv` does so
 * by itself). */
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

/* ---- redundancy --------------------------------------------------------- */
/* A file's redundancy is part of its layout, chosen when it is made and
 * fixed after; as text:
 *   "none"       striping only, no redundancy
 *   "mirror:N"   N copies (2..8) of every stripe slot, on N distinct I/O
 *                servers: a file over C slots needs C * N I/O servers
 *   "ec:K+P"     K data and P parity cells: accepted by
 *                rpfs_redundancy_parse, refused where a file or default is
 *                made (-EOPNOTSUPP, "not supported yet")
 *   "default"    no choice of its own: the directory's default, then the
 *                cluster's ([cluster] redundancy, rpfs.conf(5))
 * A new file takes the redundancy it is created with, else its directory's
 * default (rpfs_setstripe_redundancy), else the cluster's. */

/* The longest redundancy text, NUL included. */
#define RPFS_REDUNDANCY_MAX 16

/* Checks spec and writes its normal form into norm (len bytes, at least
 * RPFS_REDUNDANCY_MAX; norm may be NULL). Errors: -EINVAL (not one of the
 * forms above; rpfs_errmsg() says why), -ERANGE (norm too short). Sends
 * nothing. */
int rpfs_redundancy_parse(const char *spec, char *norm, size_t len);
/* rpfs_create with a redundancy (NULL or "": as rpfs_create, the
 * directory's or the cluster's). The stripe count of opts (0: the
 * default, which shrinks to fit) is the number of data slots: a mirror:N
 * file uses count * N I/O servers. Errors: rpfs_create's, and -EINVAL for
 * a bad spec or a layout that needs more I/O servers than the cluster has
 * (the message says how many: "mirror:2 over 3 slots needs 6 I/O servers,
 * the cluster has 4"), -EOPNOTSUPP for ec:K+P. A new file is created, then
 * opened by its path: a mode that refuses the creator the rights asked
 * for fails with -EACCES (the file stays). */
int rpfs_create_redundancy(rpfs_client_t *c, const char *path, uint32_t mode,
			   unsigned flags, const struct rpfs_create_opts *opts,
			   const char *redundancy, rpfs_file_t **out);
/* rpfs_setstripe with the directory's default redundancy (NULL or "": the
 * directory keeps the one it has; "default": it takes the cluster's
 * again). Errors: rpfs_setstripe's, -EINVAL for a bad spec or a mirror
 * that does not fit the cluster (N copies of stripe_count slots, or of
 * one when stripe_count is 0), -EOPNOTSUPP for ec:K+P. */
int rpfs_setstripe_redundancy(rpfs_client_t *c, const char *dir, uint64_t stripe_unit,
			      uint32_t stripe_count, const char *redundancy);
/* The redundancy of the file at path, or the default of the directory at
 * path ("default" where it has none of its own), into buf (len bytes, at
 * least RPFS_REDUNDANCY_MAX). Errors: rpfs_stat's, -ERANGE (buf too
 * short). */
int rpfs_stat_redundancy(rpfs_client_t *c, const char *path, char *buf, size_t len);
/* The same for an open file (sends nothing). Errors: -ERANGE. */
int rpfs_file_redundancy(rpfs_file_t *f, char *buf, size_t len);
/* Compare a mirrored file's copies byte for byte, each read from its own
 * server (as `lfs mirror verify`): 0 when every copy of every slot holds
 * the same bytes (*checked: the bytes read, every copy counted), -EILSEQ
 * at the first difference (*where: its file offset; the message names the
 * slot and both servers), or the error of a copy that could not be read
 * (its server down, a damaged block). An erasure-coded file: every
 * group's parity cells are made again from its data cells, each read from
 * its own server, and compared with the stored ones (-EILSEQ naming the
 * parity member and the data's file offset). A file without redundancy:
 * 0, nothing read. Writes during the comparison make its answer
 * meaningless for the bytes they touch. */
int rpfs_verify(rpfs_file_t *f, uint64_t *checked, uint64_t *where);
/* Compare as rpfs_verify, every copy with its slot's primary, and have each
 * copy that differs rewritten from the primary (as `lfs mirror resync`):
 * the file's metadata server marks it stale and its resync runs in the
 * background (rpfs_verify answers -ESTALE until it ends). 0 when every
 * copy was compared (*marked: how many were marked), -ESTALE if a copy is
 * already stale (its resync runs), the error of a read otherwise. Needs a
 * file opened for writing. A difference only comes from a write that
 * failed midway (its bytes were never promised) or a block taken as it is
 * by `rpfsd --check --repair --accept-damaged`: the primary, the slot's one
 * ordering point, is the copy kept. An ec:K+P file: each parity member
 * that disagrees with the code of its group's data is marked stale, and
 * its server re-encodes it from the data (*marked: how many). */
int rpfs_mirror_repair(rpfs_file_t *f, uint32_t *marked);
/* rpfs_open_attr_path for attributes another process looked up, with the
 * redundancy that process's rpfs_file_redundancy gave (struct rpfs_stat
 * has no room for it; MPI drivers broadcast both). NULL or "" as "none".
 * Errors: rpfs_open_attr_path's, -EINVAL for a bad redundancy or one whose
 * copies do not fit this cluster. */
int rpfs_open_attr_redundancy(rpfs_client_t *c, const struct rpfs_stat *st,
			      const char *path, const char *redundancy,
			      rpfs_file_t **out);
/* The I/O servers holding copy `copy` (0 = the first, .. N-1) of the file
 * whose attributes st are, with redundancy r ("none", "mirror:N"): out[s]
 * for each of its st->stripe_count slots (out holds that many). Errors:
 * -EINVAL (a directory, a copy past N, a bad r). Sends nothing. */
int rpfs_copy_servers(rpfs_client_t *c, const struct rpfs_stat *st, const char *r,
		      uint32_t copy, uint32_t *out);
/* Calls fn for each entry of a directory (name only, no path), sorted by
 * name, once every metadata server has given its entries; stops early when
 * fn returns nonzero (that value is returned). Errors: -ENOENT, -ENOTDIR,
 * -EACCES (no read permission on it, or search on an ancestor). */
int rpfs_readdir(rpfs_client_t *c, const char *path,
		 int (*fn)(const char *name, uint32_t type, void *arg), void *arg);
struct rpfs_statfs {
	/* Bytes of the file systems holding the I/O servers' storage, each
	 * counted once however many servers share it: avail is what an
	 * unprivileged writer may still use (f_bavail), free below. */
	uint64_t total, avail;
	uint64_t files; /* objects over all metadata servers */
	uint64_t free;	/* free bytes (f_bfree, root's reserve included) */
	/* I/O servers that did not answer: their space is not counted. */
	uint32_t io_unreachable;
};
/* Asks every server. Errors: only those of the top (a metadata server's,
 * or every I/O server's when none answers). */
int rpfs_statfs(rpfs_client_t *c, struct rpfs_statfs *st);

/* ---- files -------------------------------------------------------------- */
/* Permissions are the servers' (mode and owner as in POSIX, for the uid and
 * groups of the process): opening for RPFS_O_READ and/or RPFS_O_WRITE
 * fails with -EACCES where the mode does not allow it, and the file then
 * reads or writes only as opened. rpfs_create without either flag opens
 * for both; an existing file (no RPFS_O_EXCL) is opened as rpfs_open does,
 * a new one as asked whatever its mode. rpfs_open with neither flag opens
 * for reading. *out is NULL after an error. */
/* Creates the file's datafile on every I/O server of its layout, then its
 * entry. Errors: -EEXIST (exists, with RPFS_O_EXCL), -EISDIR (a directory
 * has the name), -EACCES (an existing file the mode does not open as
 * asked; no write and search permission on the parent of a new one),
 * -ENOENT (no parent), -ENOTDIR (the parent is a file), -EINVAL (a layout
 * the cluster cannot give: first_server past its I/O servers, a bad stripe
 * unit), -ENOSPC (no I/O servers, or a full disk), -EHOSTDOWN (an I/O
 * server of the layout is unreachable: nothing is left behind), -EIO. */
int rpfs_create(rpfs_client_t *c, const char *path, uint32_t mode, unsigned flags,
		const struct rpfs_create_opts *opts, rpfs_file_t **out);
/* Errors: -ENOENT, -EISDIR, -ENOTDIR (an ancestor is a file), -EACCES (the
 * mode does not open it as asked, or search on an ancestor). */
int rpfs_open(rpfs_client_t *c, const char *path, unsigned flags, rpfs_file_t **out);
/* Open from attributes another process looked up (e.g. broadcast by MPI
 * rank 0), without any request: scalable opens. The rights are those of the
 * capability in st. Its error messages name the file by its handle ("handle
 * 0x6"): the attributes carry no path (rpfs_open_attr_path gives one).
 * Errors: -EISDIR, -EINVAL (attributes that do not fit this cluster: a
 * handle or layout naming servers it does not have), -ENOMEM. */
int rpfs_open_attr(rpfs_client_t *c, const struct rpfs_stat *st, rpfs_file_t **out);
/* The same, with the file's path for its error messages (as rpfs_open's
 * name it), so every process of a program names the file alike; NULL as
 * rpfs_open_attr. Nothing checks that path and attributes belong together. */
int rpfs_open_attr_path(rpfs_client_t *c, const struct rpfs_stat *st, const char *path,
			rpfs_file_t **out);
/* Waits until the file's nonblocking requests have moved their data; they
 * stay valid, to be tested or waited for (their errors are theirs). Sends
 * nothing: data is on the servers already (rpfs_sync makes it durable). */
void rpfs_close(rpfs_file_t *f);
/* Attributes as opened (size is 0: use rpfs_getsize); no errors. */
void rpfs_file_attr(rpfs_file_t *f, struct rpfs_stat *st);

/* Data calls (rpfs_pwrite, rpfs_pread, rpfs_writev, rpfs_readv, their
 * nonblocking forms and what rpfs_test/rpfs_timedwait/rpfs_wait return):
 * the whole length or an error, never a short count. Errors: -EACCES (the
 * file was not opened for it; or its capability, renewed after half its
 * lifetime, was refused: a chmod since the open), -ENOENT (the file was
 * removed and its capability was due for renewal), -EBADMSG (a damaged
 * block, named by its file offset; a write of part of a damaged block is
 * refused too), -ESTALE (a datafile is missing), -ENOSPC (an I/O server's
 * disk is full: a write that fails part way leaves the datafile the size it
 * had), -EFBIG (past 2^63 bytes), -EINVAL (memory and file lists of
 * different lengths, a negative count, lengths past 64 bits), -EIO, or an
 * error registering the buffer for RDMA (-ENOMEM: raise `ulimit -l`). */
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
 * until the request completes (the lists are copied; the memory is not).
 * Errors: those found before any call starts (-EINVAL for the lists,
 * -ENOMEM, the capability's renewal); a server's come from rpfs_test,
 * rpfs_timedwait or rpfs_wait. *req is NULL after an error. */
int rpfs_ipwrite(rpfs_file_t *f, const void *buf, size_t len, uint64_t off,
		 rpfs_request_t **req);
int rpfs_ipread(rpfs_file_t *f, void *buf, size_t len, uint64_t off,
		rpfs_request_t **req);
int rpfs_iwritev(rpfs_file_t *f, const struct iovec *mem, int nmem,
		 const struct rpfs_seg *file, int nfile, rpfs_request_t **req);
int rpfs_ireadv(rpfs_file_t *f, const struct iovec *mem, int nmem,
		const struct rpfs_seg *file, int nfile, rpfs_request_t **req);
/* *done = 1 when complete; then *bytes (if not NULL) and the return value
 * give the result (bytes, or the errors of the data calls above) and the
 * request is freed. 0 with *done = 0 while it is in flight. */
int rpfs_test(rpfs_request_t *req, int *done, ssize_t *bytes);
/* rpfs_test that waits, asleep, at most timeout_us for the request to
 * complete: for a caller that would otherwise test in a loop (MPICH's
 * MPI_Wait polls a generalized request that way). */
int rpfs_timedwait(rpfs_request_t *req, long timeout_us, int *done, ssize_t *bytes);
/* Wait, return the result (bytes or negative errno, the errors of the data
 * calls above) and free the request. */
ssize_t rpfs_wait(rpfs_request_t *req);

/* The size from the file's datafiles (one request per I/O server). Errors:
 * -ESTALE, -EBADMSG (a datafile longer or shorter than its checksums say),
 * the capability's renewal (-EACCES, -ENOENT). */
int rpfs_getsize(rpfs_file_t *f, uint64_t *size);
/* Shrinks or extends (with zeros) on every I/O server of the layout.
 * Errors: -EACCES (not opened for writing), -EFBIG (size past 2^63),
 * -ESTALE, -EBADMSG (the block the new end falls in is damaged), -ENOSPC,
 * -EIO. */
int rpfs_truncate(rpfs_file_t *f, uint64_t size);
/* Data written before this call survives a server crash once it returns.
 * Errors: -ESTALE, -EIO (a datafile could not be synced: its data may be
 * lost), the capability's renewal. */
int rpfs_sync(rpfs_file_t *f);

/* Shared file pointer: atomically add delta to the file's counter on its
 * metadata server, returning the old value. Errors: -EINVAL (the counter
 * would go below 0 or past 2^64; a handle naming no metadata server). */
int rpfs_fetch_add(rpfs_file_t *f, int64_t delta, int64_t *old);
/* Byte-range locks served by the metadata server (len 0: to the end).
 * Blocks until granted (bounded by the timeout); owner-based, so several
 * threads of one client may hold disjoint ranges. A client's locks go when
 * its connection to the metadata server does. Errors: -ETIMEDOUT (another
 * owner still held the range after 10 x timeout_ms), -EINVAL (a range past
 * 2^64). */
int rpfs_lock(rpfs_file_t *f, uint64_t off, uint64_t len, int exclusive);
/* Errors: -EINVAL (no lock of this client with exactly that range). */
int rpfs_unlock(rpfs_file_t *f, uint64_t off, uint64_t len);

#ifdef __cplusplus
}
#endif
#endif
