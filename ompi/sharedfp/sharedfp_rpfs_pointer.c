/* sharedfp_rpfs_pointer.c: the shared file pointer on the metadata server.
 *
 * Independent accesses (write_shared, read_shared and their nonblocking
 * forms) claim their range with one rpfs_fetch_add each: the server adds
 * atomically, so concurrent ranks, on any nodes, get disjoint ranges.
 * Ordered accesses (collective) need rank order: an exclusive prefix sum of
 * the sizes gives each rank its place, and the last rank, which knows the
 * total, makes the one fetch_add and broadcasts where the block starts.
 * Seeking is collective: after everyone arrives, rank 0 sets the counter
 * and tells the others. */
#include "sharedfp_rpfs.h"

#include <errno.h>
#include <stdio.h>

size_t sharedfp_rpfs_bytes(int count, struct ompi_datatype_t *datatype)
{
	size_t size;

	opal_datatype_type_size(&datatype->super, &size);
	return size * (size_t)(count > 0 ? count : 0);
}

static rpfs_file_t *file_of(ompio_file_t *fh)
{
	return rpfs_ompi_file_of(fh)->file;
}

int sharedfp_rpfs_claim(ompio_file_t *fh, size_t bytes, OMPI_MPI_OFFSET_TYPE *offset)
{
	int64_t old;
	int ret;

	ret = rpfs_fetch_add(file_of(fh), (int64_t)bytes, &old);
	if (ret < 0)
		return rpfs_ompi_err_code(ret, fh->f_filename, NULL);
	*offset = (OMPI_MPI_OFFSET_TYPE)old / (OMPI_MPI_OFFSET_TYPE)fh->f_etype_size;
	return MPI_SUCCESS;
}

int sharedfp_rpfs_claim_ordered(ompio_file_t *fh, size_t bytes,
				OMPI_MPI_OFFSET_TYPE *offset)
{
	ompi_communicator_t *comm = fh->f_comm;
	int64_t mine = (int64_t)bytes, before = 0;
	int last = fh->f_size - 1, code;
	struct rpfs_ompi_result res = {0};

	code = comm->c_coll->coll_exscan(&mine, &before, 1, MPI_INT64_T, MPI_SUM, comm,
					 comm->c_coll->coll_exscan_module);
	if (code != OMPI_SUCCESS)
		return code;
	if (fh->f_rank == 0)
		before = 0; /* MPI leaves rank 0's result undefined */
	if (fh->f_rank == last) {
		int ret = rpfs_fetch_add(file_of(fh), before + mine, &res.value);

		rpfs_ompi_result_set(&res, ret);
	}
	code = rpfs_ompi_result_bcast(comm, last, &res, fh->f_filename);
	if (code != MPI_SUCCESS)
		return code;
	*offset = (OMPI_MPI_OFFSET_TYPE)(res.value + before) /
		  (OMPI_MPI_OFFSET_TYPE)fh->f_etype_size;
	return MPI_SUCCESS;
}

/* Set the counter to target (bytes): one add of the difference. */
static int set_pointer(rpfs_file_t *file, int64_t target)
{
	int64_t cur;
	int ret;

	ret = rpfs_fetch_add(file, 0, &cur);
	if (ret == 0 && cur != target)
		ret = rpfs_fetch_add(file, target - cur, &cur);
	return ret;
}

/* Rank 0's half of a seek: where the pointer goes, in bytes. */
static int seek_target(ompio_file_t *fh, int64_t delta, int whence, int64_t *target)
{
	uint64_t size;
	int64_t cur;
	int ret;

	switch (whence) {
	case MPI_SEEK_SET:
		*target = delta;
		break;
	case MPI_SEEK_CUR:
		ret = rpfs_fetch_add(file_of(fh), 0, &cur);
		if (ret < 0)
			return ret;
		*target = cur + delta;
		break;
	case MPI_SEEK_END:
		ret = rpfs_getsize(file_of(fh), &size);
		if (ret < 0)
			return ret;
		*target = (int64_t)size + delta;
		break;
	default:
		return -EINVAL;
	}
	return *target < 0 ? -EINVAL : 0;
}

int sharedfp_rpfs_seek(ompio_file_t *fh, OMPI_MPI_OFFSET_TYPE offset, int whence)
{
	ompi_communicator_t *comm = fh->f_comm;
	struct rpfs_ompi_result res = {0};
	int64_t target = 0;
	int code, ret;

	/* every rank's earlier shared accesses have claimed their ranges */
	code = comm->c_coll->coll_barrier(comm, comm->c_coll->coll_barrier_module);
	if (code != OMPI_SUCCESS)
		return code;
	if (fh->f_rank == 0) {
		ret = seek_target(fh, (int64_t)offset * (int64_t)fh->f_etype_size, whence,
				  &target);
		if (ret == 0)
			ret = set_pointer(file_of(fh), target);
		rpfs_ompi_result_set(&res, ret);
		if (ret == -EINVAL)
			snprintf(
				res.msg, sizeof(res.msg),
				"seek_shared: the pointer would be negative or whence is unknown");
	}
	return rpfs_ompi_result_bcast(comm, 0, &res, fh->f_filename);
}

int sharedfp_rpfs_get_position(ompio_file_t *fh, OMPI_MPI_OFFSET_TYPE *offset)
{
	return sharedfp_rpfs_claim(fh, 0, offset);
}

/* Nothing to set up: the counter exists on the metadata server as soon as
 * the file does, and OMPIO's open sets the view, which sets the pointer. */
int sharedfp_rpfs_file_open(struct ompi_communicator_t *comm, const char *filename,
			    int amode, struct opal_info_t *info, ompio_file_t *fh)
{
	return OMPI_SUCCESS;
}

int sharedfp_rpfs_file_close(ompio_file_t *fh)
{
	return OMPI_SUCCESS;
}
