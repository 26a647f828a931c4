/* ad_rpfs_path.c: the rpfs path of a name given to MPI_File_open/delete.
 *
 * rpfs has one namespace of absolute paths. A relative name (a program run
 * under ROMIO_FSTYPE_FORCE=rpfs: that opens "out/data", or "rpfs:data")
 * is taken relative to the rpfs directory named by RPFS_CWD, or to the
 * rpfs root when it is unset: the process's local working directory is a
 * local path, which in general does not exist on rpfs, so it is not used.
 * Every rank resolves the same way, as every rank sees the same
 * environment (mpiexec forwards it). */
#include "ad_rpfs.h"

#include <stdlib.h>
#include <string.h>

char *ADIOI_RPFS_Path(const char *myname, const char *name, int *error_code)
{
	const char *cwd = getenv("RPFS_CWD");
	size_t len;
	char *path;

	*error_code = MPI_SUCCESS;
	if (name[0] == '/')
		return ADIOI_Strdup(name);
	if (cwd == NULL || cwd[0] == '\0')
		cwd = "/";
	if (cwd[0] != '/') {
		*error_code = MPIO_Err_create_code(
			MPI_SUCCESS, MPIR_ERR_RECOVERABLE, myname, __LINE__,
			MPI_ERR_BAD_FILE, "**io", "**io %s",
			"RPFS_CWD is not an absolute rpfs path (relative names "
			"are taken relative to it)");
		return NULL;
	}
	len = strlen(cwd) + 1 + strlen(name) + 1;
	path = ADIOI_Malloc(len);
	/* the client normalizes "//", "." and ".." */
	snprintf(path, len, "%s/%s", cwd, name);
	return path;
}
