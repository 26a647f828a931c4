/* fs_rpfs_delete.c: MPI_File_delete and the delete of delete-on-close.
 *
 * MPI_File_delete is called by whichever processes the program chooses;
 * each call removes the metadata and every datafile (rpfs_remove), and a
 * missing file is MPI_ERR_NO_SUCH_FILE.
 *
 * Delete-on-close is collective: the fs close (fs_rpfs_open.c) has rank 0
 * remove the file and broadcasts the result; then OMPIO, after the close,
 * deletes fh->f_fullfilename on every rank and returns what that delete
 * returns. That delete must not remove the file again (every rank but one
 * would fail), so the close renames the handle after its outcome, a name
 * no program passes (it starts with a control character after the rpfs:
 * prefix), and the delete of such a name returns that outcome: the result
 * travels in the call it is for, not in state beside it. */
#define _GNU_SOURCE
#include "fs_rpfs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLOSED_NAME	RPFS_OMPI_PREFIX "\001closed, result "
#define CLOSED_NAME_LEN (sizeof(CLOSED_NAME) - 1)

int mca_fs_rpfs_name_closed(ompio_file_t *fh, int code)
{
	char *name;

	if (asprintf(&name, CLOSED_NAME "%d", code) < 0)
		return OMPI_ERR_OUT_OF_RESOURCE;
	free(fh->f_fullfilename);
	fh->f_fullfilename = name;
	return code;
}

/* The close's result if filename is a name mca_fs_rpfs_name_closed made. */
static int closed_result(const char *filename, int *code)
{
	return strncmp(filename, CLOSED_NAME, CLOSED_NAME_LEN) == 0 &&
	       sscanf(filename + CLOSED_NAME_LEN, "%d", code) == 1;
}

int mca_fs_rpfs_file_delete(char *filename, struct opal_info_t *info)
{
	rpfs_client_t *client;
	int ret;

	if (closed_result(filename, &ret))
		return ret;
	ret = mca_fs_rpfs_client(info, &client);
	if (ret == 0)
		ret = rpfs_remove(client, rpfs_ompi_path(filename));
	if (ret < 0)
		return rpfs_ompi_err_code(ret, filename, NULL);
	return OMPI_SUCCESS;
}
