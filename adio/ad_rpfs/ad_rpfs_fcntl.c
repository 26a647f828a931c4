/* ad_rpfs_fcntl.c: size, preallocation and atomic mode.
 *
 * MPI_File_get_size is not collective, so each caller asks the I/O servers
 * itself. MPI_File_preallocate reaches here on one rank only (ROMIO then
 * synchronizes): rpfs allocates datafiles sparsely, so preallocation is a
 * size extension, never a write of zeros through the whole range. */
#include "ad_rpfs.h"

void ADIOI_RPFS_Fcntl(ADIO_File fd, int flag, ADIO_Fcntl_t *fcntl_struct, int *error_code)
{
	static char myname[] = "ADIOI_RPFS_FCNTL";
	ADIOI_RPFS_fs *fs = fd->fs_ptr;
	uint64_t size;
	int ret;

	*error_code = MPI_SUCCESS;
	switch (flag) {
	case ADIO_FCNTL_GET_FSIZE:
		ret = rpfs_getsize(fs->file, &size);
		if (ret < 0) {
			*error_code = ADIOI_RPFS_Err(myname, __LINE__, ret,
						     "rpfs_getsize", NULL);
			return;
		}
		rpfs_mpi_size_is(&fs->known_size, size);
		fcntl_struct->fsize = (ADIO_Offset)size;
		break;

	case ADIO_FCNTL_SET_DISKSPACE:
		ret = rpfs_getsize(fs->file, &size);
		if (ret == 0 && (ADIO_Offset)size < fcntl_struct->diskspace)
			ret = rpfs_truncate(fs->file, (uint64_t)fcntl_struct->diskspace);
		if (ret < 0) {
			*error_code = ADIOI_RPFS_Err(myname, __LINE__, ret, "preallocate",
						     NULL);
			return;
		}
		rpfs_mpi_size_reaches(&fs->known_size, (uint64_t)fcntl_struct->diskspace);
		break;

	case ADIO_FCNTL_SET_ATOMICITY:
		/* ROMIO's generic contiguous paths and ours take byte-range
		 * locks (ADIOI_RPFS_SetLock) while this is set */
		fd->atomicity = fcntl_struct->atomicity ? 1 : 0;
		break;

	default:
		*error_code = MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE,
						   myname, __LINE__, MPI_ERR_ARG,
						   "**flag", "**flag %d", flag);
		break;
	}
}
