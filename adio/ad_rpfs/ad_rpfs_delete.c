/* ad_rpfs_delete.c: MPI_File_delete (called by one process) and
 * delete-on-close: rpfs_remove drops the metadata and every datafile. */
#include "ad_rpfs.h"

void ADIOI_RPFS_Delete(const char *filename, int *error_code)
{
	static char myname[] = "ADIOI_RPFS_DELETE";
	int ret;

	if (ADIOI_RPFS_Init(NULL, error_code) < 0)
		return;
	ret = rpfs_remove(ADIOI_RPFS_client, filename);
	if (ret < 0) {
		*error_code = ADIOI_RPFS_Err(myname, __LINE__, ret, filename, NULL);
		return;
	}
	*error_code = MPI_SUCCESS;
}
