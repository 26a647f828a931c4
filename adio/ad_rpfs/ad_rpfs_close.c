/* ad_rpfs_close.c: release this process's handle. Nothing is sent: data
 * is on the servers already (no client cache), MPI_File_sync makes it
 * durable, and ROMIO's close does any delete-on-close from one rank. The
 * close of the last file ends the client once MPI_Finalize has begun
 * (rpfs_mpi_file_closed): a file closed from a delete callback on
 * MPI_COMM_SELF still has it. */
#include "ad_rpfs.h"

void ADIOI_RPFS_Close(ADIO_File fd, int *error_code)
{
	ADIOI_RPFS_fs *fs = fd->fs_ptr;

	if (fs != NULL) {
		rpfs_close(fs->file);
		ADIOI_Free(fs);
		fd->fs_ptr = NULL;
		rpfs_mpi_file_closed();
	}
	fd->fd_sys = -1;
	*error_code = MPI_SUCCESS;
}
