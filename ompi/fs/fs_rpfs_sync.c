/* fs_rpfs_sync.c: MPI_File_sync.
 *
 * The servers make data durable (fdatasync of the datafiles), which covers
 * every client's writes, so one rank asks once everyone's writes have
 * returned, and only if some rank wrote since the last sync; the outcome
 * is broadcast. OMPIO calls this on every rank after a barrier. */
#include "fs_rpfs.h"

int mca_fs_rpfs_file_sync(ompio_file_t *fh)
{
	struct rpfs_ompi_file *f = rpfs_ompi_file_of(fh);
	ompi_communicator_t *comm = fh->f_comm;
	struct rpfs_ompi_result res = {0};
	int dirty = __atomic_load_n(&f->dirty, __ATOMIC_RELAXED), any = 0, code;

	code = comm->c_coll->coll_allreduce(&dirty, &any, 1, MPI_INT, MPI_MAX, comm,
					    comm->c_coll->coll_allreduce_module);
	if (code != OMPI_SUCCESS)
		return code;
	if (!any)
		return OMPI_SUCCESS;
	if (fh->f_rank == 0)
		rpfs_ompi_result_set(&res, rpfs_sync(f->file));
	code = rpfs_ompi_result_bcast(comm, 0, &res, fh->f_filename);
	if (code == MPI_SUCCESS)
		__atomic_store_n(&f->dirty, 0, __ATOMIC_RELAXED);
	return code;
}
