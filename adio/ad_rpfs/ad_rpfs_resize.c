/* ad_rpfs_resize.c: MPI_File_set_size. One rank truncates (a request to
 * each I/O server), then broadcasts the outcome, so every rank returns the
 * same result and the servers see one truncate, not one per process. */
#include "ad_rpfs.h"

void ADIOI_RPFS_Resize(ADIO_File fd, ADIO_Offset size, int *error_code)
{
	static char myname[] = "ADIOI_RPFS_RESIZE";
	ADIOI_RPFS_fs *fs = fd->fs_ptr;
	struct {
		int32_t err;
		char msg[ADIOI_RPFS_MSG_MAX];
	} res;
	int rank;

	memset(&res, 0, sizeof(res));
	MPI_Comm_rank(fd->comm, &rank);
	if (rank == fd->hints->ranklist[0]) {
		res.err = rpfs_truncate(fs->file, (uint64_t)size);
		if (res.err < 0)
			snprintf(res.msg, sizeof(res.msg), "%s", rpfs_errmsg());
	}
	MPI_Bcast(&res, sizeof(res), MPI_BYTE, fd->hints->ranklist[0], fd->comm);
	if (res.err < 0) {
		*error_code = ADIOI_RPFS_Err(myname, __LINE__, res.err, "rpfs_truncate",
					     res.msg);
		return;
	}
	rpfs_mpi_size_is(&fs->known_size, (uint64_t)size);
	*error_code = MPI_SUCCESS;
}
