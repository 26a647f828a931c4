/* rpfs_ompi.h: what rpfs's three Open MPI components (fs, fbtl, sharedfp)
 * share.
 *
 * OMPIO loads each component from its own shared object, so they meet only
 * through the ompio_file_t: the fs component opens the file and hangs the
 * state below on fh->f_fs_ptr; the fbtl moves data with it and the sharedfp
 * component uses its handle for the shared file pointer. The helpers here
 * are compiled into each object (a convenience library with hidden
 * visibility), so none of them holds state. What they share with the
 * ROMIO driver (the process's client and its lifetime, open rights, the
 * size a read trusts, the lists of list I/O, error classes) is librpfs's
 * MPI glue, rpfs_mpi.h. */
#ifndef RPFS_OMPI_H
#define RPFS_OMPI_H

#include "ompi_config.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/common/ompio/common_ompio.h"

#include <rpfs.h>
#include <rpfs_mpi.h>
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
	 * no size query for its count (rpfs_mpi_read_count); grown by whole
	 * writes, set by set_size and get_size. */
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

/* An MPI error code of the class of rpfs_error (rpfs_mpi_err_class) whose
 * MPI_Error_string is "what: msg" (msg: librpfs' message naming the server
 * and the cause; NULL for this thread's rpfs_errmsg()). Falls back to the
 * bare class if MPI cannot make a new code. */
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

/* ---- data ---------------------------------------------------------------- */

/* After a write of bytes bytes ending at end whose result is result (bytes
 * written or a negative errno): only a whole write raises the known size
 * (rpfs_mpi_wrote); the file is dirty (for sync) either way. */
static inline void rpfs_ompi_wrote(struct rpfs_ompi_file *f, uint64_t end, uint64_t bytes,
				   int64_t result)
{
	rpfs_mpi_wrote(&f->known_size, end, bytes, result);
	__atomic_store_n(&f->dirty, 1, __ATOMIC_RELAXED);
}

#endif /* RPFS_OMPI_H */
