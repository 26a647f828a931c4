/* fs_rpfs_delete.c: MPI_File_delete and the delete of delete-on-close.
 *
 * MPI_File_delete is called by whichever processes the program chooses;
 * each call removes the metadata and every datafile (rpfs_remove), and a
 * missing file is MPI_ERR_NO_SUCH_FILE.
 *
 * Delete-on-close is collective: the fs close (fs_rpfs_open.c) has rank 0
 * remove the file and broadcasts the result; then OMPIO, after the close,
 * deletes the file by name on every rank. That delete must not remove the
 * file again (every rank but one would fail): the close leaves its result
 * here for the calling thread, and the delete of that name returns it. */
#include "fs_rpfs.h"

#include <stdlib.h>
#include <string.h>

/* The close's result, for the delete that OMPIO makes right after it in
 * the same thread: per thread, as threads may close files concurrently. */
static _Thread_local char *closed_name;
static _Thread_local int closed_code;

void mca_fs_rpfs_deleted_on_close(const char *name, int code)
{
	free(closed_name);
	closed_name = strdup(name);
	closed_code = code;
}

/* The close's result if filename is the file it deleted. */
static int take_closed(const char *filename, int *code)
{
	if (closed_name == NULL || strcmp(closed_name, filename) != 0)
		return 0;
	free(closed_name);
	closed_name = NULL;
	*code = closed_code;
	return 1;
}

int mca_fs_rpfs_file_delete(char *filename, struct opal_info_t *info)
{
	rpfs_client_t *client;
	int ret;

	if (take_closed(filename, &ret))
		return ret;
	ret = mca_fs_rpfs_client(info, &client);
	if (ret == 0)
		ret = rpfs_remove(client, rpfs_ompi_path(filename));
	if (ret < 0)
		return rpfs_ompi_err_code(ret, filename, NULL);
	return OMPI_SUCCESS;
}
