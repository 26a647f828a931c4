/* rpfs_ompi_error.c: librpfs errors (negative errno) to MPI error codes.
 *
 * The class tells the program what went wrong (MPI_ERR_NO_SUCH_FILE,
 * MPI_ERR_FILE_EXISTS, ...), as in the ROMIO driver. Open MPI has no error
 * stack for a component to push a message onto, so the message travels in
 * a new error code of that class (MPI_Add_error_code): MPI_Error_class
 * gives the class, MPI_Error_string names the file, the server and the
 * cause. Codes are made only on failure, so the few bytes each keeps
 * until MPI_Finalize do not add up. */
#include "rpfs_ompi.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int rpfs_ompi_err_class(int rpfs_error)
{
	switch (rpfs_error < 0 ? -rpfs_error : rpfs_error) {
	case 0:
		return MPI_SUCCESS;
	case ENOENT:
		return MPI_ERR_NO_SUCH_FILE;
	case EEXIST:
		return MPI_ERR_FILE_EXISTS;
	case EACCES:
	case EPERM:
		return MPI_ERR_ACCESS;
	case EROFS:
		return MPI_ERR_READ_ONLY;
	case ENOSPC:
		return MPI_ERR_NO_SPACE;
	case EDQUOT:
		return MPI_ERR_QUOTA;
	case ENOMEM:
		return MPI_ERR_NO_MEM;
	case EBUSY:
	case ETXTBSY:
		return MPI_ERR_FILE_IN_USE;
	case ENAMETOOLONG:
	case ENOTDIR:
	case EISDIR:
	case ELOOP:
		return MPI_ERR_BAD_FILE;
	case ENOSYS:
	case EOPNOTSUPP:
		return MPI_ERR_UNSUPPORTED_OPERATION;
	case EINVAL:
		return MPI_ERR_ARG;
	default:
		/* EIO, ETIMEDOUT, ECONNRESET, EPROTO ...: the service failed */
		return MPI_ERR_IO;
	}
}

/* As in the ROMIO driver (ad_rpfs_error.c): a client that cannot start
 * (the cluster config missing or unreadable, a bad one, a bad rpfs_<key>
 * hint) is the I/O service failing, MPI_ERR_IO, not the file the program
 * named: the config's -ENOENT is not MPI_ERR_NO_SUCH_FILE. The message
 * names the config and the cause. */
int rpfs_ompi_init_error(int rpfs_error)
{
	return rpfs_error == -ENOMEM ? -ENOMEM : -EIO;
}

int rpfs_ompi_err_code(int rpfs_error, const char *what, const char *msg)
{
	int cls = rpfs_ompi_err_class(rpfs_error), code;
	char text[RPFS_OMPI_MSG_MAX];

	if (cls == MPI_SUCCESS)
		return MPI_SUCCESS;
	if (msg == NULL)
		msg = rpfs_errmsg();
	if (msg == NULL || msg[0] == '\0')
		msg = strerror(rpfs_error < 0 ? -rpfs_error : rpfs_error);
	snprintf(text, sizeof(text), "%s: %s", what, msg);
	/* the PMPI names: a profiling layer should not see our bookkeeping */
	if (PMPI_Add_error_code(cls, &code) != MPI_SUCCESS)
		return cls;
	if (PMPI_Add_error_string(code, text) != MPI_SUCCESS)
		return cls;
	return code;
}
