/* fs_rpfs_size.c: MPI_File_set_size, MPI_File_preallocate's resize and
 * MPI_File_get_size.
 *
 * OMPIO 4.1 calls set_size from two places. MPI_File_set_size calls it on
 * every rank: there it is collective, as in the ROMIO driver: once every
 * rank has arrived (so no rank's earlier size query or I/O can see the new
 * size), one rank truncates (a request to each I/O server) and broadcasts
 * the outcome, so every rank returns the same result. MPI_File_preallocate
 * calls it only on the ranks whose own size query saw the file short,
 * which may be some of them: a collective there would pair with another
 * rank's next collective, so there each calling rank grows the file itself
 * (the same size from each: idempotent). The caller is told apart by the
 * symbol of the return address; when that is not OMPIO's set_size the
 * local path is taken, which is always safe.
 *
 * get_size asks the I/O servers, as the size is derived from their
 * datafiles and never cached on a metadata server. */
#define _GNU_SOURCE
#include "fs_rpfs.h"

#include <dlfcn.h>
#include <string.h>

/* The function that called set_size is OMPIO's MPI_File_set_size. */
static int called_by_file_set_size(void *return_address)
{
	Dl_info where;

	return dladdr(return_address, &where) != 0 && where.dli_sname != NULL &&
	       strcmp(where.dli_sname, "mca_io_ompio_file_set_size") == 0;
}

static int truncate_here(ompio_file_t *fh, uint64_t size)
{
	int ret = rpfs_truncate(rpfs_ompi_file_of(fh)->file, size);

	return ret < 0 ? rpfs_ompi_err_code(ret, fh->f_filename, NULL) : MPI_SUCCESS;
}

static int truncate_for_everyone(ompio_file_t *fh, uint64_t size)
{
	ompi_communicator_t *comm = fh->f_comm;
	struct rpfs_ompi_result res = {0};
	int code;

	code = comm->c_coll->coll_barrier(comm, comm->c_coll->coll_barrier_module);
	if (code != OMPI_SUCCESS)
		return code;
	if (fh->f_rank == 0)
		rpfs_ompi_result_set(&res,
				     rpfs_truncate(rpfs_ompi_file_of(fh)->file, size));
	return rpfs_ompi_result_bcast(comm, 0, &res, fh->f_filename);
}

int mca_fs_rpfs_file_set_size(ompio_file_t *fh, OMPI_MPI_OFFSET_TYPE size)
{
	struct rpfs_ompi_file *f = rpfs_ompi_file_of(fh);
	int code;

	if (size < 0)
		return MPI_ERR_ARG;
	if (called_by_file_set_size(__builtin_return_address(0)))
		code = truncate_for_everyone(fh, (uint64_t)size);
	else
		code = truncate_here(fh, (uint64_t)size);
	if (code == MPI_SUCCESS)
		rpfs_mpi_size_is(&f->known_size, (uint64_t)size);
	return code;
}

int mca_fs_rpfs_file_get_size(ompio_file_t *fh, OMPI_MPI_OFFSET_TYPE *size)
{
	struct rpfs_ompi_file *f = rpfs_ompi_file_of(fh);
	uint64_t sz;
	int ret;

	ret = rpfs_getsize(f->file, &sz);
	if (ret < 0)
		return rpfs_ompi_err_code(ret, fh->f_filename, NULL);
	rpfs_mpi_size_is(&f->known_size, sz);
	*size = (OMPI_MPI_OFFSET_TYPE)sz;
	return OMPI_SUCCESS;
}
