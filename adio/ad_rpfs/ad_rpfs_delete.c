/* ad_rpfs_delete.c: MPI_File_delete (called by one process) and
 * delete-on-close: rpfs_remove drops the metadata and every datafile. */
#include "ad_rpfs.h"

void ADIOI_RPFS_Delete(const char *filename, int *error_code)
{
	static char myname[] = "ADIOI_RPFS_DELETE";
	rpfs_client_t *client;
	char *path;
	int ret;

	if (ADIOI_RPFS_Init(NULL, &client, error_code) < 0)
		return;
	path = ADIOI_RPFS_Path(myname, filename, error_code);
	if (path == NULL)
		return;
	ret = rpfs_remove(client, path);
	if (ret < 0)
		*error_code = ADIOI_RPFS_Err(myname, __LINE__, ret, path, NULL);
	else
		*error_code = MPI_SUCCESS;
	ADIOI_Free(path);
}
