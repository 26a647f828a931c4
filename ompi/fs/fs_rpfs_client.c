/* fs_rpfs_client.c: the process's rpfs client, as the fs component gets it.
 *
 * One client serves every file of a process; librpfs's MPI glue
 * (rpfs_mpi_client, shared with the ROMIO driver) makes it at the first
 * open or delete and finalizes it once MPI_COMM_SELF is freed (an
 * attribute delete callback, which MPI_Finalize runs before it tears MPI
 * down) AND its last open file is closed, whichever comes last. MPI runs
 * those callbacks in reverse order of attachment: HDF5 attaches its own
 * before the first open and closes the files a program left open from it,
 * after ours has run; Open MPI then closes any file still open
 * (ompi_file_finalize), with MPI still working. A file never closed ends
 * the client at exit(), before libfabric's destructor. This file only
 * hands the glue Open MPI's info object. */
#include "fs_rpfs.h"

/* rpfs_mpi_hint_fn over an opal_info_t. */
static int opal_hint(void *info, const char *key, int valuelen, char *value)
{
	int flag = 0;

	return opal_info_get(info, key, valuelen, value, &flag) == OPAL_SUCCESS && flag;
}

int mca_fs_rpfs_client(opal_info_t *info, rpfs_client_t **client)
{
	struct rpfs_mpi_hints hints = {opal_hint, info, OPAL_MAX_INFO_VAL};

	return rpfs_mpi_client(info != NULL ? &hints : NULL, rpfs_mpi_watch_finalize,
			       client);
}
