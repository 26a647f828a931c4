/* rpfs_ompi_result.c: one rank does a metadata operation for everyone and
 * broadcasts the outcome.
 *
 * Open, close with delete, set_size, sync and moving the shared file
 * pointer are collective: one request from one rank, not one per process
 * (no metadata storm), and every rank returns the same result, errors
 * included, with the message of the rank that saw the failure. */
#include "rpfs_ompi.h"

#include <stdio.h>
#include <string.h>

void rpfs_ompi_result_set(struct rpfs_ompi_result *r, int err)
{
	r->err = err < 0 ? err : 0;
	r->msg[0] = '\0';
	if (err < 0)
		snprintf(r->msg, sizeof(r->msg), "%s", rpfs_errmsg());
}

int rpfs_ompi_result_bcast(ompi_communicator_t *comm, int root,
			   struct rpfs_ompi_result *r, const char *what)
{
	int ret;

	ret = comm->c_coll->coll_bcast(r, sizeof(*r), MPI_BYTE, root, comm,
				       comm->c_coll->coll_bcast_module);
	if (ret != OMPI_SUCCESS)
		return ret;
	if (r->err < 0)
		return rpfs_ompi_err_code(r->err, what, r->msg);
	return MPI_SUCCESS;
}
