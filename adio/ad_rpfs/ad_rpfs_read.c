/* ad_rpfs_read.c: contiguous read, one rpfs_pread.
 *
 * librpfs reads holes and bytes past the end as zeros; MPI wants the count
 * of bytes before the end of file in the status, so a read that reaches
 * past the size this process knows asks the size (rpfs_mpi_read_count). */
#include "ad_rpfs.h"

void ADIOI_RPFS_ReadContig(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			   int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
			   int *error_code)
{
	static char myname[] = "ADIOI_RPFS_READCONTIG";
	ADIOI_RPFS_fs *fs = fd->fs_ptr;
	MPI_Count datatype_size;
	ADIO_Offset len, off, nread;
	struct rpfs_seg seg;
	ssize_t ret;

	MPI_Type_size_x(datatype, &datatype_size);
	len = datatype_size * (ADIO_Offset)count;
	off = (file_ptr_type == ADIO_EXPLICIT_OFFSET) ? offset : fd->fp_ind;

	ret = len ? rpfs_pread(fs->file, buf, (size_t)len, (uint64_t)off) : 0;
	if (ret < 0) {
		*error_code =
			ADIOI_RPFS_Err(myname, __LINE__, (int)ret, "rpfs_pread", NULL);
		return;
	}

	if (file_ptr_type == ADIO_INDIVIDUAL)
		fd->fp_ind = off + ret;
	fd->fp_sys_posn = -1;

	nread = ret;
	if (status != MPI_STATUS_IGNORE && nread > 0) {
		seg.off = (uint64_t)off;
		seg.len = (uint64_t)nread;
		nread = (ADIO_Offset)rpfs_mpi_read_count(&fs->known_size, fs->file, &seg,
							 1, (uint64_t)nread);
	}
#ifdef HAVE_STATUS_SET_BYTES
	MPIR_Status_set_bytes(status, datatype, nread);
#endif
	*error_code = MPI_SUCCESS;
}
