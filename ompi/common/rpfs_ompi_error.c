/* rpfs_ompi_error.c: librpfs errors (negative errno) to MPI error codes.
 *
 * The class tells the program what went wrong (MPI_ERR_NO_SUCH_FILE,
 * MPI_ERR_FILE_EXISTS, ...: rpfs_mpi_err_class, the ROMIO driver's table
 * too). Open MPI has no error stack for a component to push a message
 * onto, so the message travels in a new error code of that class
 * (MPI_Add_error_code): MPI_Error_class gives the class, MPI_Error_string
 * names the file, the server and the cause. Codes are made only on
 * failure, so the few bytes each keeps until MPI_Finalize do not add up. */
#include "rpfs_ompi.h"

int rpfs_ompi_err_code(int rpfs_error, const char *what, const char *msg)
{
	int cls = rpfs_mpi_err_class(rpfs_error), code;
	char text[RPFS_OMPI_MSG_MAX];

	if (cls == MPI_SUCCESS)
		return MPI_SUCCESS;
	rpfs_mpi_err_text(text, sizeof(text), rpfs_error, what, msg);
	/* the PMPI names: a profiling layer should not see our bookkeeping */
	if (PMPI_Add_error_code(cls, &code) != MPI_SUCCESS)
		return cls;
	if (PMPI_Add_error_string(code, text) != MPI_SUCCESS)
		return cls;
	return code;
}
