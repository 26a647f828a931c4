/* ad_rpfs_write.c: contiguous write, one rpfs_pwrite. librpfs picks the
 * path by size: inline, Fast RDMA Write, or pipelined bulk. A write of
 * nothing (a collective call's rank with no data, maybe far past the end)
 * leaves the known size alone. */
#include "ad_rpfs.h"

void ADIOI_RPFS_WriteContig(ADIO_File fd, const void *buf, int count,
			    MPI_Datatype datatype, int file_ptr_type, ADIO_Offset offset,
			    ADIO_Status *status, int *error_code)
{
	static char myname[] = "ADIOI_RPFS_WRITECONTIG";
	ADIOI_RPFS_fs *fs = fd->fs_ptr;
	MPI_Count datatype_size;
	ADIO_Offset len, off;
	ssize_t ret;

	MPI_Type_size_x(datatype, &datatype_size);
	len = datatype_size * (ADIO_Offset)count;
	off = (file_ptr_type == ADIO_EXPLICIT_OFFSET) ? offset : fd->fp_ind;

	ret = len ? rpfs_pwrite(fs->file, buf, (size_t)len, (uint64_t)off) : 0;
	if (ret < 0) {
		*error_code =
			ADIOI_RPFS_Err(myname, __LINE__, (int)ret, "rpfs_pwrite", NULL);
		return;
	}
	fd->dirty_write = 1;
	rpfs_mpi_wrote(&fs->known_size, (uint64_t)(off + len), (uint64_t)len, ret);

	if (file_ptr_type == ADIO_INDIVIDUAL)
		fd->fp_ind = off + ret;
	fd->fp_sys_posn = -1;

#ifdef HAVE_STATUS_SET_BYTES
	MPIR_Status_set_bytes(status, datatype, ret);
#endif
	*error_code = MPI_SUCCESS;
}
