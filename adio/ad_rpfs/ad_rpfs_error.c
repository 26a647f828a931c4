/* ad_rpfs_error.c: librpfs errors (negative errno) to MPI error codes.
 *
 * The class tells the program what went wrong (MPI_ERR_NO_SUCH_FILE,
 * MPI_ERR_FILE_EXISTS, ...: rpfs_mpi_err_class, the table the Open MPI
 * components use too); the message keeps librpfs' text, which names the
 * server and the cause, so MPI_Error_string shows both. */
#include "ad_rpfs.h"

/* An MPI error code for a failed librpfs call: what the driver was doing,
 * then librpfs' message (msg, or this thread's rpfs_errmsg()). */
int ADIOI_RPFS_Err(const char *myname, int line, int rpfs_error, const char *what,
		   const char *msg)
{
	char text[ADIOI_RPFS_MSG_MAX + 128];

	rpfs_mpi_err_text(text, sizeof(text), rpfs_error, what, msg);
	return MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, myname, line,
				    rpfs_mpi_err_class(rpfs_error), "**io", "**io %s",
				    text);
}
