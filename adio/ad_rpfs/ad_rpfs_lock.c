/* ad_rpfs_lock.c: ROMIO's byte-range lock slot, served by rpfs' metadata
 * server instead of fcntl().
 *
 * ROMIO's generic code takes these locks for the shared file pointer (the
 * hidden ".shfp" file, ad_get_sh_fp.c), for atomic mode around contiguous
 * accesses, and for atomic two-phase writes, so MPI_File_*_shared,
 * *_ordered and MPI_File_set_atomicity work through it. rpfs_lock blocks
 * until granted or until the transport timeout, never forever. */
#include "ad_rpfs.h"

#include <fcntl.h>

int ADIOI_RPFS_SetLock(ADIO_File fd, int cmd, int type, ADIO_Offset offset, int whence,
		       ADIO_Offset len)
{
	static char myname[] = "ADIOI_RPFS_SETLOCK";
	ADIOI_RPFS_fs *fs = fd->fs_ptr;
	int ret;

	if (len < 0)
		len = 0;
	if (whence == SEEK_CUR)
		offset += fd->fp_ind;
	else if (whence == SEEK_END)
		return MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, myname,
					    __LINE__, MPI_ERR_UNSUPPORTED_OPERATION,
					    "**io", "**io %s",
					    "SEEK_END locks are not supported");

	if (type == F_UNLCK)
		ret = rpfs_unlock(fs->file, (uint64_t)offset, (uint64_t)len);
	else
		ret = rpfs_lock(fs->file, (uint64_t)offset, (uint64_t)len,
				type == F_WRLCK);
	if (ret < 0)
		return ADIOI_RPFS_Err(myname, __LINE__, ret,
				      type == F_UNLCK ? "rpfs_unlock" : "rpfs_lock",
				      NULL);
	return MPI_SUCCESS;
}
