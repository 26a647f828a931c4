/* sharedfp_rpfs_io.c: accesses at the shared file pointer.
 *
 * Each claims its range from the pointer (sharedfp_rpfs_pointer.c), then
 * is an ordinary access at an explicit offset through OMPIO, so it takes
 * the same data path as everything else: the fbtl's list I/O for
 * independent accesses, OMPIO's collective algorithm for ordered ones. */
#include "sharedfp_rpfs.h"

#include "ompi/request/request.h"

int sharedfp_rpfs_write(ompio_file_t *fh, const void *buf, int count,
			struct ompi_datatype_t *datatype, ompi_status_public_t *status)
{
	OMPI_MPI_OFFSET_TYPE offset;
	int code = sharedfp_rpfs_claim(fh, sharedfp_rpfs_bytes(count, datatype), &offset);

	if (code != MPI_SUCCESS)
		return code;
	return mca_common_ompio_file_write_at(fh, offset, buf, count, datatype, status);
}

int sharedfp_rpfs_read(ompio_file_t *fh, void *buf, int count,
		       struct ompi_datatype_t *datatype, ompi_status_public_t *status)
{
	OMPI_MPI_OFFSET_TYPE offset;
	int code = sharedfp_rpfs_claim(fh, sharedfp_rpfs_bytes(count, datatype), &offset);

	if (code != MPI_SUCCESS)
		return code;
	return mca_common_ompio_file_read_at(fh, offset, buf, count, datatype, status);
}

int sharedfp_rpfs_iwrite(ompio_file_t *fh, const void *buf, int count,
			 struct ompi_datatype_t *datatype, ompi_request_t **request)
{
	OMPI_MPI_OFFSET_TYPE offset;
	int code = sharedfp_rpfs_claim(fh, sharedfp_rpfs_bytes(count, datatype), &offset);

	if (code != MPI_SUCCESS)
		return code;
	return mca_common_ompio_file_iwrite_at(fh, offset, buf, count, datatype, request);
}

int sharedfp_rpfs_iread(ompio_file_t *fh, void *buf, int count,
			struct ompi_datatype_t *datatype, ompi_request_t **request)
{
	OMPI_MPI_OFFSET_TYPE offset;
	int code = sharedfp_rpfs_claim(fh, sharedfp_rpfs_bytes(count, datatype), &offset);

	if (code != MPI_SUCCESS)
		return code;
	return mca_common_ompio_file_iread_at(fh, offset, buf, count, datatype, request);
}

int sharedfp_rpfs_write_ordered(ompio_file_t *fh, const void *buf, int count,
				struct ompi_datatype_t *datatype,
				ompi_status_public_t *status)
{
	OMPI_MPI_OFFSET_TYPE offset;
	int code = sharedfp_rpfs_claim_ordered(fh, sharedfp_rpfs_bytes(count, datatype),
					       &offset);

	if (code != MPI_SUCCESS)
		return code;
	return mca_common_ompio_file_write_at_all(fh, offset, buf, count, datatype,
						  status);
}

int sharedfp_rpfs_read_ordered(ompio_file_t *fh, void *buf, int count,
			       struct ompi_datatype_t *datatype,
			       ompi_status_public_t *status)
{
	OMPI_MPI_OFFSET_TYPE offset;
	int code = sharedfp_rpfs_claim_ordered(fh, sharedfp_rpfs_bytes(count, datatype),
					       &offset);

	if (code != MPI_SUCCESS)
		return code;
	return mca_common_ompio_file_read_at_all(fh, offset, buf, count, datatype,
						 status);
}

/* Split collectives: begin starts the collective access as a nonblocking
 * one in OMPIO's split-collective slot (one per file handle, as MPI
 * allows), end waits for it. */
int sharedfp_rpfs_write_ordered_begin(ompio_file_t *fh, const void *buf, int count,
				      struct ompi_datatype_t *datatype)
{
	OMPI_MPI_OFFSET_TYPE offset;
	int code;

	if (fh->f_split_coll_in_use)
		return MPI_ERR_REQUEST;
	code = sharedfp_rpfs_claim_ordered(fh, sharedfp_rpfs_bytes(count, datatype),
					   &offset);
	if (code != MPI_SUCCESS)
		return code;
	code = mca_common_ompio_file_iwrite_at_all(fh, offset, buf, count, datatype,
						   &fh->f_split_coll_req);
	fh->f_split_coll_in_use = true;
	return code;
}

int sharedfp_rpfs_read_ordered_begin(ompio_file_t *fh, void *buf, int count,
				     struct ompi_datatype_t *datatype)
{
	OMPI_MPI_OFFSET_TYPE offset;
	int code;

	if (fh->f_split_coll_in_use)
		return MPI_ERR_REQUEST;
	code = sharedfp_rpfs_claim_ordered(fh, sharedfp_rpfs_bytes(count, datatype),
					   &offset);
	if (code != MPI_SUCCESS)
		return code;
	code = mca_common_ompio_file_iread_at_all(fh, offset, buf, count, datatype,
						  &fh->f_split_coll_req);
	fh->f_split_coll_in_use = true;
	return code;
}

static int ordered_end(ompio_file_t *fh, ompi_status_public_t *status)
{
	int code;

	if (!fh->f_split_coll_in_use)
		return MPI_ERR_REQUEST;
	code = ompi_request_wait(&fh->f_split_coll_req, status);
	fh->f_split_coll_in_use = false;
	return code;
}

int sharedfp_rpfs_write_ordered_end(ompio_file_t *fh, const void *buf,
				    ompi_status_public_t *status)
{
	return ordered_end(fh, status);
}

int sharedfp_rpfs_read_ordered_end(ompio_file_t *fh, void *buf,
				   ompi_status_public_t *status)
{
	return ordered_end(fh, status);
}
