/* ad_rpfs_flush.c: MPI_File_sync. The servers make data durable
 * (fdatasync of the datafiles), which covers every client's writes, so one
 * rank asks once everyone's writes have returned, and only if someone
 * wrote since the last sync; the outcome is broadcast. */
#include "ad_rpfs.h"

void ADIOI_RPFS_Flush(ADIO_File fd, int *error_code)
{
	static char myname[] = "ADIOI_RPFS_FLUSH";
	ADIOI_RPFS_fs *fs = fd->fs_ptr;
	struct {
		int32_t err;
		char msg[ADIOI_RPFS_MSG_MAX];
	} res;
	int rank, dirty = 0;

	memset(&res, 0, sizeof(res));
	MPI_Comm_rank(fd->comm, &rank);
	/* also the barrier that orders everyone's writes before the sync */
	MPI_Allreduce(&fd->dirty_write, &dirty, 1, MPI_INT, MPI_MAX, fd->comm);
	if (!dirty) {
		*error_code = MPI_SUCCESS;
		return;
	}
	if (rank == fd->hints->ranklist[0]) {
		res.err = rpfs_sync(fs->file);
		if (res.err < 0)
			snprintf(res.msg, sizeof(res.msg), "%s", rpfs_errmsg());
	}
	MPI_Bcast(&res, sizeof(res), MPI_BYTE, fd->hints->ranklist[0], fd->comm);
	if (res.err < 0) {
		*error_code =
			ADIOI_RPFS_Err(myname, __LINE__, res.err, "rpfs_sync", res.msg);
		return;
	}
	fd->dirty_write = 0;
	*error_code = MPI_SUCCESS;
}
