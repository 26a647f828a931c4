/* ad_rpfs_open.c: collective open without a metadata storm.
 *
 * Rank 0 of fd->comm alone talks to the metadata server: it creates or
 * looks up the file (and, for MPI_MODE_APPEND, asks its size), then
 * broadcasts the result: the attributes and the file's redundancy on
 * success, or the error and its message on failure. The other ranks open
 * from those with rpfs_open_attr_redundancy, which sends nothing (the path only names the
 * file in this rank's messages). Every rank therefore sees the same outcome, errors
 * included, and an open costs one lookup whatever the number of processes.
 *
 * The process's rpfs client is made here at the first open, with its
 * hints, by librpfs's MPI glue (rpfs_mpi_client), which also ends it: when
 * MPI_COMM_SELF is freed in MPI_Finalize AND its last open file is closed,
 * whichever comes last (a library such as HDF5 closes the files a program
 * left open from its own MPI_COMM_SELF callback, after ours), or at exit()
 * for a file never closed. */
#include "ad_rpfs.h"

#include <errno.h>

/* rpfs_mpi_hint_fn over ROMIO's info (info: an MPI_Info *). */
static int info_hint(void *info, const char *key, int valuelen, char *value)
{
	int flag = 0;

	ADIOI_Info_get(*(MPI_Info *)info, key, valuelen, value, &flag);
	return flag;
}

/* The hints of the first open count, later opens keep the client as it is.
 * A bad rpfs_<key> hint fails the open with a message naming it, as a bad
 * RPFS_<KEY> variable does; where the user's environment sets the same
 * key, the environment wins (rpfs.h). */
int ADIOI_RPFS_Init(ADIO_File fd, rpfs_client_t **client, int *error_code)
{
	static char myname[] = "ADIOI_RPFS_INIT";
	struct rpfs_mpi_hints hints = {info_hint, NULL, MPI_MAX_INFO_VAL};
	int ret;

	*error_code = MPI_SUCCESS;
	if (fd != NULL && fd->info != MPI_INFO_NULL)
		hints.info = &fd->info;
	ret = rpfs_mpi_client(hints.info != NULL ? &hints : NULL, rpfs_mpi_watch_finalize,
			      client);
	if (ret < 0)
		*error_code = ADIOI_RPFS_Err(myname, __LINE__, ret, "rpfs_init", NULL);
	return ret;
}

/* Create (with the layout hints, rpfs_redundancy among them) or open, with
 * the rights of rpfs_mpi_open. */
static int open_as(ADIO_File fd, rpfs_client_t *client, rpfs_file_t **file)
{
	struct rpfs_mpi_hints hints = {info_hint, &fd->info, MPI_MAX_INFO_VAL};
	struct rpfs_create_opts opts;
	char red[RPFS_REDUNDANCY_MAX] = "";
	int ret;

	memset(&opts, 0, sizeof(opts));
	opts.first_server = -1;
	if (fd->access_mode & ADIO_CREATE) {
		ADIOI_RPFS_Create_opts(fd, &opts);
		if (fd->info != MPI_INFO_NULL &&
		    (ret = rpfs_mpi_redundancy_hint(&hints, red, sizeof(red))) < 0)
			return ret;
	}
	return rpfs_mpi_open_redundancy(
		client, fd->filename, rpfs_mpi_amode(fd->access_mode),
		fd->perm == ADIO_PERM_NULL ? -1 : fd->perm, &opts, red, file);
}

/* Rank 0's half: create or look up, fill res. Returns the open file or
 * NULL (res->err and res->msg set). */
static rpfs_file_t *lookup(ADIO_File fd, rpfs_client_t *client,
			   ADIOI_RPFS_open_result *res)
{
	rpfs_file_t *file = NULL;
	int ret;

	ret = open_as(fd, client, &file);
	if (ret < 0)
		goto fail;

	rpfs_file_attr(file, &res->st);
	rpfs_mpi_file_redundancy(file, res->redundancy, sizeof(res->redundancy));
	if (fd->access_mode & ADIO_APPEND) {
		ret = rpfs_getsize(file, &res->size);
		if (ret < 0)
			goto fail_close_msg;
	}
	res->err = 0;
	return file;

fail_close_msg:
	snprintf(res->msg, sizeof(res->msg), "%s", rpfs_errmsg());
	rpfs_close(file);
	res->err = ret;
	return NULL;
fail:
	snprintf(res->msg, sizeof(res->msg), "%s", rpfs_errmsg());
	res->err = ret;
	return NULL;
}

void ADIOI_RPFS_Open(ADIO_File fd, int *error_code)
{
	static char myname[] = "ADIOI_RPFS_OPEN";
	ADIOI_RPFS_open_result *res;
	ADIOI_RPFS_fs *fs;
	rpfs_client_t *client;
	rpfs_file_t *file = NULL;
	int rank, ret;

	*error_code = MPI_SUCCESS;
	MPI_Comm_rank(fd->comm, &rank);
	/* the absolute rpfs name from here on: the shared file pointer's file,
	 * delete-on-close and error messages derive from fd->filename */
	if (fd->filename[0] != '/') {
		char *path = ADIOI_RPFS_Path(myname, fd->filename, error_code);

		if (path == NULL)
			return;
		ADIOI_Free(fd->filename);
		fd->filename = path;
	}

	res = ADIOI_Calloc(1, sizeof(*res));
	if (rank == 0) {
		ret = ADIOI_RPFS_Init(fd, &client, error_code);
		if (ret < 0) {
			res->err = ret;
			snprintf(res->msg, sizeof(res->msg), "rpfs_init: %s",
				 rpfs_errmsg());
		} else {
			file = lookup(fd, client, res);
		}
	}
	/* one broadcast carries the outcome to everyone */
	MPI_Bcast(res, sizeof(*res), MPI_BYTE, 0, fd->comm);

	if (res->err < 0) {
		*error_code = ADIOI_RPFS_Err(myname, __LINE__, res->err, fd->filename,
					     res->msg);
		goto out;
	}
	if (rank != 0) {
		ret = ADIOI_RPFS_Init(fd, &client, error_code);
		if (ret < 0)
			goto out;
		/* with the path: this rank's messages name the file too */
		ret = rpfs_open_attr_redundancy(client, &res->st, fd->filename,
						res->redundancy, &file);
		if (ret < 0) {
			*error_code =
				ADIOI_RPFS_Err(myname, __LINE__, ret, fd->filename, NULL);
			goto out;
		}
	}

	fs = ADIOI_Calloc(1, sizeof(*fs));
	rpfs_mpi_file_opened(); /* until ADIOI_RPFS_Close */
	fs->file = file;
	fs->st = res->st;
	memcpy(fs->redundancy, res->redundancy, sizeof(fs->redundancy));
	fs->known_size = (fd->access_mode & ADIO_APPEND) ? res->size : 0;
	fd->fs_ptr = fs;
	fd->fd_sys = -1;
	fd->fd_direct = -1;
	fd->fp_sys_posn = -1;
	if (fd->access_mode & ADIO_APPEND)
		fd->fp_ind = (ADIO_Offset)res->size;
	fd->blksize = res->st.stripe_unit ? (long)res->st.stripe_unit : 1024 * 1024;
	ADIOI_RPFS_Report_layout(fd, &res->st, res->redundancy);

out:
	ADIOI_Free(res);
}

/* ROMIO's generic collective open creates the file from one rank, closes
 * it and opens it again everywhere; rpfs' Open is collective and scalable
 * by itself, so this does a single pass. No data sieving writes means
 * MPI_MODE_WRONLY can stay write-only. */
void ADIOI_RPFS_OpenColl(ADIO_File fd, int rank, int access_mode, int *error_code)
{
	fd->access_mode = access_mode;
	ADIOI_RPFS_Open(fd, error_code);
	if (*error_code != MPI_SUCCESS)
		return;
	fd->is_open = 1;
	fd->dirty_write = 0;
}
