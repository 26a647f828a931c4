/* rpfs_mpi.h: what rpfs's two MPI-IO front ends share, once.
 *
 * The ROMIO driver (adio/ad_rpfs, compiled inside MPICH against the
 * installed headers) and the Open MPI OMPIO components (ompi/, built by
 * rpfs against Open MPI's headers) turn MPI-IO calls into librpfs calls.
 * Every rule that is not about their host's data structures lives here,
 * so the two cannot drift apart:
 *   - the process's client: made at the first open or delete from the
 *     hints rpfs_config and rpfs_<key>, ended once MPI_Finalize has begun
 *     and the last open file is closed (or at exit), and the error a
 *     client that cannot start is reported as;
 *   - opening: the rights (a write-only file is opened for reading too
 *     where its mode allows), the mode of a created file;
 *   - the size a read trusts: the bytes before the end of file, from a
 *     lower bound of the size that only whole writes raise;
 *   - the two lists of list I/O, built piece by piece, neighbours merged;
 *   - the MPI error class of a librpfs error, and the text of its message.
 * The first part (librpfs functions, rpfs_mpi_*) needs no MPI. The second,
 * compiled only where <mpi.h> came first (MPI_VERSION is defined), holds
 * what must see the host MPI's own constants and calls: static inline, so
 * MPICH and Open MPI each compile it against their mpi.h. */
#ifndef RPFS_MPI_H
#define RPFS_MPI_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "rpfs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the process's client ---------------------------------------------- */

/* How a front end reads a hint from its info object: value has room for
 * valuelen + 1 bytes; returns nonzero if the key is set. */
typedef int (*rpfs_mpi_hint_fn)(void *info, const char *key, int valuelen, char *value);

struct rpfs_mpi_hints {
	rpfs_mpi_hint_fn get;
	void *info;
	int valuelen; /* the host's MPI_MAX_INFO_VAL */
};

/* The process's client, made at the first call: rpfs_init_opts with the
 * config of hint rpfs_config (else RPFS_CONFIG, ...) and the client
 * settings given as hints rpfs_<key> (hints may be NULL: no hints); later
 * calls return the same client whatever their hints. watch_finalize, called
 * once when a client is made before MPI_Finalize has begun, arranges for
 * rpfs_mpi_finalize_begun to be called (rpfs_mpi_watch_finalize below).
 * Returns 0, or -EIO for a client that cannot start (config missing,
 * unreadable or bad, a bad hint, no fabric: the I/O service failing, not
 * the file the program named, whose -ENOENT would blame it), or -ENOMEM;
 * rpfs_errmsg() names the config and the cause. Thread-safe. */
int rpfs_mpi_client(const struct rpfs_mpi_hints *hints, void (*watch_finalize)(void),
		    rpfs_client_t **client);

/* MPI_Finalize has begun (MPI_COMM_SELF is being freed): the client ends
 * now if no file is open, else with the last close; at exit() in any case
 * (a file never closed), before libfabric's destructor. */
void rpfs_mpi_finalize_begun(void);

/* A file of the client was opened / closed (after its rpfs_close). */
void rpfs_mpi_file_opened(void);
void rpfs_mpi_file_closed(void);

/* ---- opening ------------------------------------------------------------ */

/* The access mode as librpfs sees it (rpfs_mpi_amode makes it from MPI's). */
#define RPFS_MPI_RDONLY 0x1u
#define RPFS_MPI_WRONLY 0x2u
#define RPFS_MPI_CREATE 0x4u
#define RPFS_MPI_EXCL	0x8u

/* The mode of a created file: perm, or where the program gave none
 * (perm < 0) 0666 less the process's umask. */
uint32_t rpfs_mpi_create_mode(int perm);

/* Create (RPFS_MPI_CREATE: with the mode rpfs_mpi_create_mode(perm) and
 * opts, read only then) or open path for the access mode amode. A write-only file is
 * opened for reading too, as ROMIO's generic collective open does (two-phase collective
 * writes read the holes of an aggregator's buffer), and where its mode refuses that
 * (-EACCES) it is opened as asked. Returns 0 or a negative errno (rpfs_errmsg()). */
int rpfs_mpi_open(rpfs_client_t *client, const char *path, unsigned amode, int perm,
		  const struct rpfs_create_opts *opts, rpfs_file_t **file);

/* ---- redundancy: the hint rpfs_redundancy ---------------------------------- */

/* The hint a create takes its redundancy from ("none", "mirror:N"; see
 * rpfs.h), and under which MPI_File_get_info reports the file's. */
#define RPFS_MPI_REDUNDANCY_HINT "rpfs_redundancy"

/* The value of the hint in hints (NULL: none), checked, in normal form
 * into out (len >= RPFS_REDUNDANCY_MAX; "" when it is not set). Returns 0,
 * or -EINVAL for a bad value (rpfs_errmsg() says why). */
int rpfs_mpi_redundancy_hint(const struct rpfs_mpi_hints *hints, char *out, size_t len);
/* rpfs_mpi_open creating with a redundancy (NULL or "": the directory's
 * default, else the cluster's). */
int rpfs_mpi_open_redundancy(rpfs_client_t *client, const char *path, unsigned amode,
			     int perm, const struct rpfs_create_opts *opts,
			     const char *redundancy, rpfs_file_t **file);
/* What rank 0 of an open tells the others with the attributes: the
 * redundancy of its open file ("none" if it can't say), into out (len >=
 * RPFS_REDUNDANCY_MAX). They open with rpfs_open_attr_redundancy and
 * report it as the hint. */
void rpfs_mpi_file_redundancy(rpfs_file_t *file, char *out, size_t len);

/* ---- the size a read trusts --------------------------------------------- */

/* librpfs reads holes and bytes past the end as zeros and returns the full
 * length; MPI counts only the bytes before the end of file. Each open file
 * keeps a lower bound of its size, *known (read and written atomically:
 * nonblocking I/O may complete on another thread), so reads within it
 * cost nothing extra. */

/* The size is now known to be size (a size query, a truncate). */
void rpfs_mpi_size_is(uint64_t *known, uint64_t size);
/* The file is known to reach end (a preallocation). */
void rpfs_mpi_size_reaches(uint64_t *known, uint64_t end);
/* A write of bytes bytes ending at end returned result (bytes written or a
 * negative errno): only a whole write of something raises the known size;
 * a write of nothing, a failed or a short one says nothing of it. */
void rpfs_mpi_wrote(uint64_t *known, uint64_t end, uint64_t bytes, int64_t result);
/* The bytes of a read of segs (moved bytes in all) of file that lie before
 * the end of file; asks the I/O servers once only when the read reaches
 * past *known (and returns moved if that fails: the data came, only the
 * count is uncertain). */
uint64_t rpfs_mpi_read_count(uint64_t *known, rpfs_file_t *file,
			     const struct rpfs_seg *segs, int nsegs, uint64_t moved);

/* ---- list I/O ------------------------------------------------------------ */

/* The memory pieces and the file pieces of one rpfs_readv/rpfs_writev.
 * Neighbours that touch are merged in each list on its own: a strided file
 * view over a contiguous buffer is one memory piece and n file pieces. */
struct rpfs_mpi_list {
	struct iovec *mem;
	int nmem, mem_cap;
	struct rpfs_seg *file;
	int nfile, file_cap;
	uint64_t bytes;	     /* total in each list (kept by the caller) */
	uint64_t first, end; /* the file range touched: [first, end) */
};

/* An empty list whose range ends at end (0, or where a file pointer
 * stands), with room for cap pieces of each kind (0: grown as needed).
 * Returns 0 or -ENOMEM (then the list is empty and needs no free). */
int rpfs_mpi_list_init(struct rpfs_mpi_list *l, int cap, uint64_t end);
/* Append a piece (nothing for len 0). Return 0 or -ENOMEM. */
int rpfs_mpi_add_mem(struct rpfs_mpi_list *l, void *base, uint64_t len);
int rpfs_mpi_add_seg(struct rpfs_mpi_list *l, uint64_t off, uint64_t len);
void rpfs_mpi_list_free(struct rpfs_mpi_list *l);

/* ---- errors ---------------------------------------------------------------- */

/* The message of a failed librpfs call: "what: msg", msg being librpfs'
 * message (NULL: this thread's rpfs_errmsg(); the errno's text where that
 * is empty). */
void rpfs_mpi_err_text(char *buf, size_t len, int rpfs_error, const char *what,
		       const char *msg);

/* librpfs errors (negative errno) and the MPI error class each is
 * reported in; every other errno (EIO, ETIMEDOUT, ECONNRESET, EPROTO,
 * ...) is the service failing, MPI_ERR_IO. */
#define RPFS_MPI_ERRNO_CLASSES(X)                                                        \
	X(ENOENT, MPI_ERR_NO_SUCH_FILE)                                                  \
	X(EEXIST, MPI_ERR_FILE_EXISTS)                                                   \
	X(EACCES, MPI_ERR_ACCESS)                                                        \
	X(EPERM, MPI_ERR_ACCESS)                                                         \
	X(EROFS, MPI_ERR_READ_ONLY)                                                      \
	X(ENOSPC, MPI_ERR_NO_SPACE)                                                      \
	X(EDQUOT, MPI_ERR_QUOTA)                                                         \
	X(ENOMEM, MPI_ERR_NO_MEM)                                                        \
	X(EBUSY, MPI_ERR_FILE_IN_USE)                                                    \
	X(ETXTBSY, MPI_ERR_FILE_IN_USE)                                                  \
	X(ENAMETOOLONG, MPI_ERR_BAD_FILE)                                                \
	X(ENOTDIR, MPI_ERR_BAD_FILE)                                                     \
	X(EISDIR, MPI_ERR_BAD_FILE)                                                      \
	X(ELOOP, MPI_ERR_BAD_FILE)                                                       \
	X(ENOSYS, MPI_ERR_UNSUPPORTED_OPERATION)                                         \
	X(EOPNOTSUPP, MPI_ERR_UNSUPPORTED_OPERATION)                                     \
	X(EINVAL, MPI_ERR_ARG)

#ifdef MPI_VERSION
/* ---- compiled against the host MPI ----------------------------------------- */

/* The MPI error class of a librpfs error (0: MPI_SUCCESS). */
static inline int rpfs_mpi_err_class(int rpfs_error)
{
	switch (rpfs_error < 0 ? -rpfs_error : rpfs_error) {
	case 0:
		return MPI_SUCCESS;
#define RPFS_MPI_CLASS_CASE(err, cls)                                                    \
	case err:                                                                        \
		return cls;
		RPFS_MPI_ERRNO_CLASSES(RPFS_MPI_CLASS_CASE)
#undef RPFS_MPI_CLASS_CASE
	default:
		return MPI_ERR_IO;
	}
}

/* The access mode of MPI_File_open's amode (ROMIO's ADIO_* bits are the
 * same values) for rpfs_mpi_open. */
static inline unsigned rpfs_mpi_amode(int amode)
{
	return ((amode & MPI_MODE_RDONLY) ? RPFS_MPI_RDONLY : 0) |
	       ((amode & MPI_MODE_WRONLY) ? RPFS_MPI_WRONLY : 0) |
	       ((amode & MPI_MODE_CREATE) ? RPFS_MPI_CREATE : 0) |
	       ((amode & MPI_MODE_EXCL) ? RPFS_MPI_EXCL : 0);
}

/* MPI_COMM_SELF's attribute delete callback: MPI_Finalize has begun. The
 * PMPI names: a profiling layer should not see rpfs's bookkeeping. */
static inline int rpfs_mpi_finalize_call(MPI_Comm comm, int keyval, void *value,
					 void *extra)
{
	(void)comm;
	(void)value;
	(void)extra;
	PMPI_Comm_free_keyval(&keyval);
	rpfs_mpi_finalize_begun();
	return MPI_SUCCESS;
}

/* The watch_finalize of rpfs_mpi_client: an attribute on MPI_COMM_SELF,
 * whose delete callback MPI_Finalize runs while MPI still works. MPI runs
 * those callbacks in reverse order of attachment, so a library that
 * attached its own before the first open (HDF5, to close the files a
 * program left open) writes and closes its files after this one has run:
 * hence the client ends with the last close, not here. */
static inline void rpfs_mpi_watch_finalize(void)
{
	int keyval;

	if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, rpfs_mpi_finalize_call,
				    &keyval, NULL) == MPI_SUCCESS)
		PMPI_Comm_set_attr(MPI_COMM_SELF, keyval, NULL);
}
#endif /* MPI_VERSION */

#ifdef __cplusplus
}
#endif

#endif /* RPFS_MPI_H */
