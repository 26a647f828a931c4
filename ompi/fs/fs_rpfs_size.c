/* fs_rpfs_size.c: MPI_File_set_size, MPI_File_preallocate's resize and
 * MPI_File_get_size.
 *
 * set_size truncates on the calling rank, and is not collective although
 * MPI_File_set_size is: OMPIO 4.1's preallocate calls it only on the ranks
 * whose own size query saw the file short, which may be some of them, so a
 * collective here would pair up with another rank's next collective. A
 * truncate to one size is idempotent, and OMPIO holds a barrier after
 * MPI_File_set_size, so every rank returns once the size is set. get_size
 * asks the I/O servers, as the size is derived from their datafiles and
 * never cached on a metadata server. */
#include "fs_rpfs.h"

int mca_fs_rpfs_file_set_size(ompio_file_t *fh, OMPI_MPI_OFFSET_TYPE size)
{
	struct rpfs_ompi_file *f = rpfs_ompi_file_of(fh);
	int ret;

	if (size < 0)
		return MPI_ERR_ARG;
	ret = rpfs_truncate(f->file, (uint64_t)size);
	if (ret < 0)
		return rpfs_ompi_err_code(ret, fh->f_filename, NULL);
	__atomic_store_n(&f->known_size, (uint64_t)size, __ATOMIC_RELAXED);
	return OMPI_SUCCESS;
}

int mca_fs_rpfs_file_get_size(ompio_file_t *fh, OMPI_MPI_OFFSET_TYPE *size)
{
	struct rpfs_ompi_file *f = rpfs_ompi_file_of(fh);
	uint64_t sz;
	int ret;

	ret = rpfs_getsize(f->file, &sz);
	if (ret < 0)
		return rpfs_ompi_err_code(ret, fh->f_filename, NULL);
	__atomic_store_n(&f->known_size, sz, __ATOMIC_RELAXED);
	*size = (OMPI_MPI_OFFSET_TYPE)sz;
	return OMPI_SUCCESS;
}
