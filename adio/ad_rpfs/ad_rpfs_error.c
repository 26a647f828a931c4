/* ad_rpfs_error.c: librpfs errors (negative errno) to MPI error codes.
 *
 * The class tells the program what went wrong (MPI_ERR_NO_SUCH_FILE,
 * MPI_ERR_FILE_EXISTS, ...); the message keeps librpfs' text, which names
 * the server and the cause, so MPI_Error_string shows both. */
#include "ad_rpfs.h"

#include <errno.h>

int ADIOI_RPFS_error_convert(int rpfs_error)
{
	switch (rpfs_error < 0 ? -rpfs_error : rpfs_error) {
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

/* The cluster config missing or unreadable, a bad one, a bad rpfs_<key>
 * hint, no fabric: a client that cannot start is the I/O service failing,
 * not the file the program named. Its -ENOENT is the config's, which
 * MPI_ERR_NO_SUCH_FILE would blame on the data file (and -EACCES,
 * -EINVAL, -EISDIR would blame the file's mode, the program's arguments,
 * the file's name). MPI_ERR_IO, "other I/O error", is what ROMIO's own
 * drivers report for a file system library they cannot start
 * (ad_quobytefs); MPI_ERR_FILE would say the file handle is invalid. The
 * message names the config and the cause. Out of memory stays itself. */
int ADIOI_RPFS_Init_error(int rpfs_error)
{
	return rpfs_error == -ENOMEM ? -ENOMEM : -EIO;
}

/* An MPI error code for a failed librpfs call: what the driver was doing,
 * then librpfs' message (msg, or this thread's rpfs_errmsg()). */
int ADIOI_RPFS_Err(const char *myname, int line, int rpfs_error, const char *what,
		   const char *msg)
{
	char text[ADIOI_RPFS_MSG_MAX + 128];

	if (msg == NULL)
		msg = rpfs_errmsg();
	if (msg == NULL || msg[0] == '\0')
		msg = strerror(rpfs_error < 0 ? -rpfs_error : rpfs_error);
	snprintf(text, sizeof(text), "%s: %s", what, msg);
	return MPIO_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, myname, line,
				    ADIOI_RPFS_error_convert(rpfs_error), "**io",
				    "**io %s", text);
}
