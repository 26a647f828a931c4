/* fs_rpfs_open.c: collective open and close without a metadata storm.
 *
 * Rank 0 of the file's communicator alone talks to the metadata server: it
 * creates or looks up the file and broadcasts the outcome (attributes, or
 * the error and its message). The other ranks open from the attributes
 * with rpfs_open_attr_path, which sends nothing; a rank that still fails (its
 * own client cannot start) makes the open fail everywhere, so every rank
 * returns the same result. An open costs one lookup whatever the number of
 * processes.
 *
 * Close sends nothing (no client cache: the data is on the servers, and
 * MPI_File_sync makes it durable) except for MPI_MODE_DELETE_ON_CLOSE,
 * where rank 0 removes the file for everyone and the delete OMPIO makes
 * after the close returns that result (fs_rpfs_delete.c). Each open file
 * keeps the process's client (rpfs_mpi_file_opened), so a file closed
 * during MPI_Finalize (from a delete callback, or by Open MPI itself) has
 * it. */
#include "fs_rpfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What rank 0 broadcasts. */
struct open_result {
	struct rpfs_ompi_result r;
	struct rpfs_stat st;
	char redundancy[RPFS_REDUNDANCY_MAX]; /* not in st: rpfs_file_redundancy */
};

/* Create (with the layout hints, rpfs_redundancy among them) or open, with
 * the rights of rpfs_mpi_open. */
static int open_as(rpfs_client_t *client, const char *path, opal_info_t *info,
		   const ompio_file_t *fh, rpfs_file_t **file)
{
	struct rpfs_create_opts opts = {0, 0, -1};
	char red[RPFS_REDUNDANCY_MAX] = "";
	int ret;

	if (fh->f_amode & MPI_MODE_CREATE) {
		mca_fs_rpfs_create_opts(info, &opts);
		ret = mca_fs_rpfs_redundancy(info, red, sizeof(red));
		if (ret < 0)
			return ret;
	}
	return rpfs_mpi_open_redundancy(client, path, rpfs_mpi_amode(fh->f_amode),
					fh->f_perm == OMPIO_PERM_NULL ? -1 : fh->f_perm,
					&opts, red, file);
}

/* Rank 0's half: create or look up. Returns the open file, or NULL with
 * res->r set to the failure. fh->f_amode is the program's access mode:
 * OMPIO may have widened its own copy from write-only to read-write for
 * data sieving, which rpfs never does. */
static rpfs_file_t *lookup(const char *path, opal_info_t *info, const ompio_file_t *fh,
			   struct open_result *res)
{
	rpfs_client_t *client;
	rpfs_file_t *file = NULL;
	int ret;

	ret = mca_fs_rpfs_client(info, &client);
	if (ret < 0)
		goto fail;
	ret = open_as(client, path, info, fh, &file);
	if (ret < 0)
		goto fail;
	rpfs_file_attr(file, &res->st);
	rpfs_mpi_file_redundancy(file, res->redundancy, sizeof(res->redundancy));
	rpfs_ompi_result_set(&res->r, 0);
	return file;
fail:
	rpfs_ompi_result_set(&res->r, ret);
	return NULL;
}

/* Every rank's own half after the broadcast: open from the attributes. */
static int open_local(opal_info_t *info, const struct rpfs_stat *st,
		      const char *redundancy, const char *path, rpfs_file_t **file,
		      char *msg, size_t len)
{
	rpfs_client_t *client;
	int ret;

	ret = mca_fs_rpfs_client(info, &client);
	/* with the path: this rank's messages name the file too */
	if (ret == 0)
		ret = rpfs_open_attr_redundancy(client, st, path, redundancy, file);
	if (ret < 0)
		snprintf(msg, len, "%s", rpfs_errmsg());
	return ret;
}

/* The open succeeded on every rank: returns MPI_SUCCESS, or the error of
 * the lowest rank that failed (the others learn that one did). */
static int agree(ompi_communicator_t *comm, int ret, const char *filename,
		 const char *msg)
{
	int mine[2] = {ret < 0 ? 1 : 0, ompi_comm_rank(comm)}, worst[2];
	char text[RPFS_OMPI_MSG_MAX];
	int err;

	/* MAXLOC: whether anyone failed, and the lowest rank that did */
	err = comm->c_coll->coll_allreduce(mine, worst, 1, MPI_2INT, MPI_MAXLOC, comm,
					   comm->c_coll->coll_allreduce_module);
	if (err != OMPI_SUCCESS)
		return err;
	if (!worst[0])
		return MPI_SUCCESS;
	if (ret < 0)
		return rpfs_ompi_err_code(ret, filename, msg);
	snprintf(text, sizeof(text), "the open failed on rank %d", worst[1]);
	return rpfs_ompi_err_code(-EIO, filename, text);
}

int mca_fs_rpfs_file_open(struct ompi_communicator_t *comm, const char *filename,
			  int amode, struct opal_info_t *info, ompio_file_t *fh)
{
	ompi_communicator_t *fcomm = fh->f_comm;
	const char *path = rpfs_ompi_path(filename);
	struct open_result res;
	struct rpfs_ompi_file *f;
	rpfs_file_t *file = NULL;
	char msg[RPFS_OMPI_MSG_MAX] = "";
	int ret, err;

	memset(&res, 0, sizeof(res));
	if (ompi_comm_rank(fcomm) == 0)
		file = lookup(path, info, fh, &res);
	/* one broadcast carries the outcome and the attributes */
	err = fcomm->c_coll->coll_bcast(&res, sizeof(res), MPI_BYTE, 0, fcomm,
					fcomm->c_coll->coll_bcast_module);
	if (err != OMPI_SUCCESS)
		return err;
	if (res.r.err < 0)
		return rpfs_ompi_err_code(res.r.err, filename, res.r.msg);

	ret = 0;
	if (file == NULL)
		ret = open_local(info, &res.st, res.redundancy, path, &file, msg,
				 sizeof(msg));
	err = agree(fcomm, ret, filename, msg);
	if (err != MPI_SUCCESS) {
		if (file != NULL)
			rpfs_close(file);
		return err;
	}

	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		rpfs_close(file);
		return OMPI_ERR_OUT_OF_RESOURCE;
	}
	f->file = file;
	f->st = res.st;
	fh->f_fs_ptr = f;
	rpfs_mpi_file_opened(); /* until mca_fs_rpfs_file_close */
	mca_fs_rpfs_report_layout(fh, &res.st, res.redundancy);
	return OMPI_SUCCESS;
}

int mca_fs_rpfs_file_close(ompio_file_t *fh)
{
	struct rpfs_ompi_file *f = rpfs_ompi_file_of(fh);
	struct rpfs_ompi_result res;
	int code = MPI_SUCCESS;

	if (f == NULL)
		return OMPI_SUCCESS;
	/* OMPIO's close has already had every rank reach a barrier */
	if (fh->f_amode & MPI_MODE_DELETE_ON_CLOSE) {
		memset(&res, 0, sizeof(res));
		if (fh->f_rank == 0) {
			rpfs_client_t *client;
			int ret = mca_fs_rpfs_client(NULL, &client);

			if (ret == 0)
				ret = rpfs_remove(client, rpfs_ompi_path(fh->f_filename));
			rpfs_ompi_result_set(&res, ret);
		}
		code = rpfs_ompi_result_bcast(fh->f_comm, 0, &res, fh->f_filename);
		code = mca_fs_rpfs_name_closed(fh, code);
	}
	rpfs_close(f->file);
	free(f);
	fh->f_fs_ptr = NULL;
	rpfs_mpi_file_closed();
	return code;
}
