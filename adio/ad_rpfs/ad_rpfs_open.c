/* ad_rpfs_open.c: collective open without a metadata storm.
 *
 * Rank 0 of fd->comm alone talks to the metadata server: it creates or
 * looks up the file (and, for MPI_MODE_APPEND, asks its size), then
 * broadcasts the result: the attributes on success, or the error and its
 * message on failure. The other ranks open from those attributes with
 * rpfs_open_attr_path, which sends nothing (the path only names the file
 * in this rank's messages). Every rank therefore sees the same
 * outcome, errors included, and an open costs one lookup whatever the
 * number of processes.
 *
 * The process's rpfs client is made here at the first open. It ends when
 * MPI_COMM_SELF is freed in MPI_Finalize (an attribute delete callback) AND
 * its last open file is closed, whichever comes last: MPI runs those
 * callbacks in reverse order of attachment, and a library that attached
 * its own before the first open (HDF5 does, to close the files a program
 * left open) writes and closes its files after ours has run. A file never
 * closed at all ends the client at exit(), before libfabric's destructor. */
#include "ad_rpfs.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

rpfs_client_t *ADIOI_RPFS_client = NULL;
static int ADIOI_RPFS_keyval = MPI_KEYVAL_INVALID;
/* Files open on the client (ROMIO serializes the driver's calls, the
 * delete callback included), and whether MPI_COMM_SELF is gone. */
static int ADIOI_RPFS_nfiles = 0;
static int ADIOI_RPFS_ending = 0;

static void end_client(void)
{
	if (ADIOI_RPFS_client != NULL)
		rpfs_finalize(ADIOI_RPFS_client);
	ADIOI_RPFS_client = NULL;
}

/* The delete callback: MPI_Finalize has begun. A file still open keeps the
 * client for whoever closes it later (its delete callback may yet write). */
static int ADIOI_RPFS_End_call(MPI_Comm comm, int keyval, void *attribute_val,
			       void *extra_state)
{
	MPI_Comm_free_keyval(&keyval);
	ADIOI_RPFS_keyval = MPI_KEYVAL_INVALID;
	if (!ADIOI_RPFS_ending)
		atexit(end_client);
	ADIOI_RPFS_ending = 1;
	if (ADIOI_RPFS_nfiles == 0)
		end_client();
	return MPI_SUCCESS;
}

void ADIOI_RPFS_File_closed(void)
{
	if (--ADIOI_RPFS_nfiles == 0 && ADIOI_RPFS_ending)
		end_client();
}

/* The client settings a program gave as hints rpfs_<key> (rpfs_opt_name
 * lists them, from librpfs's table of settings), as options for
 * rpfs_init_opts. *opts gets the list, its values stored after it, in one
 * ADIOI_Malloc; returns the number of options. */
static int transport_hints(ADIO_File fd, struct rpfs_opt **opts)
{
	char key[64], *values;
	const char *name;
	int max = 0, n = 0, flag;

	while (rpfs_opt_name(max) != NULL)
		max++;
	*opts = ADIOI_Malloc((size_t)max * (sizeof(**opts) + MPI_MAX_INFO_VAL + 1));
	values = (char *)(*opts + max);
	for (int i = 0; (name = rpfs_opt_name(i)) != NULL; i++) {
		char *value = values + (size_t)n * (MPI_MAX_INFO_VAL + 1);

		snprintf(key, sizeof(key), "rpfs_%s", name);
		ADIOI_Info_get(fd->info, key, MPI_MAX_INFO_VAL, value, &flag);
		if (flag)
			(*opts)[n++] = (struct rpfs_opt){name, value};
	}
	return n;
}

/* Make the process's client if there is none yet: the hints of the first
 * open count, later opens keep the client as it is. Returns 0 or a negative
 * errno (then *error_code is set). A bad rpfs_<key> hint fails the open
 * with a message naming it, as a bad RPFS_<KEY> variable does; where the
 * user's environment sets the same key, the environment wins (rpfs.h). */
int ADIOI_RPFS_Init(ADIO_File fd, int *error_code)
{
	static char myname[] = "ADIOI_RPFS_INIT";
	char config[MPI_MAX_INFO_VAL + 1];
	struct rpfs_opt *opts = NULL;
	int flag = 0, nopts = 0, ret;

	*error_code = MPI_SUCCESS;
	if (ADIOI_RPFS_client != NULL)
		return 0;

	if (fd != NULL && fd->info != MPI_INFO_NULL) {
		nopts = transport_hints(fd, &opts);
		ADIOI_Info_get(fd->info, "rpfs_config", MPI_MAX_INFO_VAL, config, &flag);
	}
	ret = rpfs_init_opts(flag ? config : NULL, opts, nopts, &ADIOI_RPFS_client);
	if (opts != NULL)
		ADIOI_Free(opts);
	if (ret < 0) {
		ADIOI_RPFS_client = NULL;
		/* the config's errno is not the file's: MPI_ERR_IO, not
		 * MPI_ERR_NO_SUCH_FILE (ad_rpfs_error.c) */
		ret = ADIOI_RPFS_Init_error(ret);
		*error_code = ADIOI_RPFS_Err(myname, __LINE__, ret, "rpfs_init", NULL);
		return ret;
	}
	/* once MPI_Finalize has begun, the client ends with its last file */
	if (ADIOI_RPFS_keyval == MPI_KEYVAL_INVALID && !ADIOI_RPFS_ending) {
		MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, ADIOI_RPFS_End_call,
				       &ADIOI_RPFS_keyval, NULL);
		MPI_Comm_set_attr(MPI_COMM_SELF, ADIOI_RPFS_keyval, NULL);
	}
	return 0;
}

static uint32_t create_mode(ADIO_File fd)
{
	mode_t old_mask;

	if (fd->perm != ADIO_PERM_NULL)
		return (uint32_t)fd->perm;
	old_mask = umask(022);
	umask(old_mask);
	return (uint32_t)(0666 & ~old_mask);
}

/* The rights to open with. A write-only file is opened for reading too
 * where its mode allows, as ROMIO's generic collective open does: two-phase
 * collective writes read the holes of an aggregator's buffer before they
 * write it back. The servers check the mode (-EACCES); then it is opened as
 * asked. */
static unsigned open_rights(const ADIO_File fd, bool widen)
{
	if (fd->access_mode & ADIO_RDONLY)
		return RPFS_O_READ;
	if ((fd->access_mode & ADIO_WRONLY) && !widen)
		return RPFS_O_WRITE;
	return RPFS_O_RDWR;
}

static int open_as(const ADIO_File fd, bool widen, rpfs_file_t **file)
{
	unsigned rights = open_rights(fd, widen);
	struct rpfs_create_opts opts;
	int ret;

	if (fd->access_mode & ADIO_CREATE) {
		ADIOI_RPFS_Create_opts(fd, &opts);
		ret = rpfs_create(
			ADIOI_RPFS_client, fd->filename, create_mode(fd),
			rights | ((fd->access_mode & ADIO_EXCL) ? RPFS_O_EXCL : 0), &opts,
			file);
		/* a library that reports an existing file even without O_EXCL */
		if (ret == -EEXIST && !(fd->access_mode & ADIO_EXCL))
			ret = rpfs_open(ADIOI_RPFS_client, fd->filename, rights, file);
		return ret;
	}
	return rpfs_open(ADIOI_RPFS_client, fd->filename, rights, file);
}

/* Rank 0's half: create or look up, fill res. Returns the open file or
 * NULL (res->err and res->msg set). */
static rpfs_file_t *lookup(ADIO_File fd, ADIOI_RPFS_open_result *res)
{
	rpfs_file_t *file = NULL;
	int ret;

	ret = open_as(fd, true, &file);
	if (ret == -EACCES && (fd->access_mode & ADIO_WRONLY))
		ret = open_as(fd, false, &file);
	if (ret < 0)
		goto fail;

	rpfs_file_attr(file, &res->st);
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
		ret = ADIOI_RPFS_Init(fd, error_code);
		if (ret < 0) {
			res->err = ret;
			snprintf(res->msg, sizeof(res->msg), "rpfs_init: %s",
				 rpfs_errmsg());
		} else {
			file = lookup(fd, res);
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
		ret = ADIOI_RPFS_Init(fd, error_code);
		if (ret < 0)
			goto out;
		/* with the path: this rank's messages name the file too */
		ret = rpfs_open_attr_path(ADIOI_RPFS_client, &res->st, fd->filename,
					  &file);
		if (ret < 0) {
			*error_code =
				ADIOI_RPFS_Err(myname, __LINE__, ret, fd->filename, NULL);
			goto out;
		}
	}

	fs = ADIOI_Calloc(1, sizeof(*fs));
	ADIOI_RPFS_nfiles++; /* until ADIOI_RPFS_File_closed */
	fs->file = file;
	fs->st = res->st;
	fs->known_size = (fd->access_mode & ADIO_APPEND) ? (ADIO_Offset)res->size : 0;
	fd->fs_ptr = fs;
	fd->fd_sys = -1;
	fd->fd_direct = -1;
	fd->fp_sys_posn = -1;
	if (fd->access_mode & ADIO_APPEND)
		fd->fp_ind = (ADIO_Offset)res->size;
	fd->blksize = res->st.stripe_unit ? (long)res->st.stripe_unit : 1024 * 1024;
	ADIOI_RPFS_Report_layout(fd, &res->st);

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
