/* rpfs_ompi.h: what rpfs's three Open MPI components (fs, fbtl, sharedfp)
 * share.
 *
 * OMPIO loads each component from its own shared object, so they meet only
 * through the ompio_file_t: the fs component opens the file and hangs the
 * state below on fh->f_fs_ptr; the fbtl moves data with it and the sharedfp
 * component uses its handle for the shared file pointer. The helpers here
 * are compiled into each object (a convenience library with hidden
 * visibility), so none of them holds state: the one process-wide object,
 * the rpfs client, lives in the fs component alone. */
#ifndef RPFS_OMPI_H
#define RPFS_OMPI_H

#include "ompi_config.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/common/ompio/common_ompio.h"

#include <rpfs.h>
#include <stdint.h>

/* The names rpfs claims, matched case-insensitively as ROMIO does. */
#define RPFS_OMPI_PREFIX     "rpfs:"
#define RPFS_OMPI_PREFIX_LEN 5

/* The component name the fs, fbtl and sharedfp components share; the fbtl
 * and sharedfp components serve a file when the fs component that opened
 * it has this name. */
#define RPFS_OMPI_NAME "rpfs"

/* Priority of each component for the files it claims: above every stock
 * component (ufs 10, sm 30, pvfs2/vulcan/posix for their own files 50). */
#define RPFS_OMPI_PRIORITY 80

/* Per-file state behind fh->f_fs_ptr (made by the fs component's open). */
struct rpfs_ompi_file {
	rpfs_file_t *file;
	struct rpfs_stat st; /* attributes as opened: the layout */
	/* A lower bound of the file size, so a read that ends within it needs
	 * no size query for its count; grown by writes, set by set_size. */
	uint64_t known_size;
	int dirty; /* this process wrote since the last sync */
};

static inline struct rpfs_ompi_file *rpfs_ompi_file_of(ompio_file_t *fh)
{
	return (struct rpfs_ompi_file *)fh->f_fs_ptr;
}

/* The file was opened by rpfs's fs component. */
int rpfs_ompi_owns(const ompio_file_t *fh);

/* The path on rpfs of a name that carries the prefix, or NULL. */
const char *rpfs_ompi_path(const char *name);

/* ---- errors (rpfs_ompi_error.c) ---------------------------------------- */

/* The MPI error class of a librpfs error (a negative errno). */
int rpfs_ompi_err_class(int rpfs_error);
/* The error to report a failed rpfs_init as: -EIO (MPI_ERR_IO), whatever
 * the config's errno, or -ENOMEM. */
int rpfs_ompi_init_error(int rpfs_error);

/* An MPI error code of that class whose MPI_Error_string is "what: msg"
 * (msg: librpfs' message naming the server and the cause; NULL for this
 * thread's rpfs_errmsg()). Falls back to the bare class if MPI cannot make
 * a new code. */
int rpfs_ompi_err_code(int rpfs_error, const char *what, const char *msg);

/* ---- one rank decides, everyone learns (rpfs_ompi_result.c) ------------- */

#define RPFS_OMPI_MSG_MAX 256 /* MPI_MAX_ERROR_STRING in Open MPI */

/* What a rank that did a metadata operation for everyone broadcasts. */
struct rpfs_ompi_result {
	int32_t err; /* 0 or a negative errno */
	int32_t pad;
	int64_t value; /* an operation's result (a file pointer) */
	char msg[RPFS_OMPI_MSG_MAX];
};

/* Record err and, on failure, this thread's rpfs_errmsg() in r. */
void rpfs_ompi_result_set(struct rpfs_ompi_result *r, int err);

/* Broadcast r from root over comm; returns MPI_SUCCESS, or the MPI error
 * code (with message, see rpfs_ompi_err_code) for r's failure. */
int rpfs_ompi_result_bcast(ompi_communicator_t *comm, int root,
			   struct rpfs_ompi_result *r, const char *what);

/* ---- data (rpfs_ompi_size.c) ------------------------------------------- */

/* After a write of bytes bytes ending at end that wrote written bytes:
 * grow the known size only if every byte was written (a write of nothing
 * or a short one says nothing of the size, and read counts trust it); the
 * file is dirty (for sync) either way. */
void rpfs_ompi_wrote(struct rpfs_ompi_file *f, uint64_t end, size_t bytes,
		     size_t written);

/* The bytes of a read of segs (moved bytes in all) that lie before the end
 * of file, as MPI counts them; asks the servers only when the read reaches
 * past the known size. */
size_t rpfs_ompi_read_count(struct rpfs_ompi_file *f, const struct rpfs_seg *segs,
			    int nsegs, size_t moved);

#endif /* RPFS_OMPI_H */
