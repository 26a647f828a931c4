/* fs_rpfs_client.c: the process's rpfs client.
 *
 * One client serves every file of a process (it holds the connections to
 * the servers, kept for its life), so it is the one piece of process-wide
 * state of the components: made at the first open or delete, finalized
 * once MPI_COMM_SELF is freed (an attribute delete callback, which
 * MPI_Finalize runs before it tears MPI down) AND its last open file is
 * closed, whichever comes last, as in the ROMIO driver. MPI runs those
 * callbacks in reverse order of attachment: HDF5 attaches its own before
 * the first open and closes the files a program left open from it, after
 * ours has run; Open MPI then closes any file still open (ompi_file_finalize),
 * with MPI still working. A file never closed ends the client at exit(),
 * before libfabric's destructor. */
#include "fs_rpfs.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t client_lock = PTHREAD_MUTEX_INITIALIZER;
static rpfs_client_t *client; /* the process's client, or NULL */
static int client_keyval = MPI_KEYVAL_INVALID;
static int open_files; /* open on the client (client_lock) */
static int ending;     /* MPI_COMM_SELF is gone (client_lock) */

/* With client_lock held. */
static void end_locked(void)
{
	if (client != NULL)
		rpfs_finalize(client);
	client = NULL;
}

static void end_at_exit(void)
{
	pthread_mutex_lock(&client_lock);
	end_locked();
	pthread_mutex_unlock(&client_lock);
}

/* MPI_Finalize has begun: a file still open keeps the client for whoever
 * closes it (a delete callback attached before ours may yet write). */
static int client_end(MPI_Comm comm, int keyval, void *attribute_val, void *extra_state)
{
	pthread_mutex_lock(&client_lock);
	PMPI_Comm_free_keyval(&keyval);
	client_keyval = MPI_KEYVAL_INVALID;
	if (!ending)
		atexit(end_at_exit);
	ending = 1;
	if (open_files == 0)
		end_locked();
	pthread_mutex_unlock(&client_lock);
	return MPI_SUCCESS;
}

void mca_fs_rpfs_client_file_opened(void)
{
	pthread_mutex_lock(&client_lock);
	open_files++;
	pthread_mutex_unlock(&client_lock);
}

void mca_fs_rpfs_client_file_closed(void)
{
	pthread_mutex_lock(&client_lock);
	if (--open_files == 0 && ending)
		end_locked();
	pthread_mutex_unlock(&client_lock);
}

/* The client settings a program gave as hints rpfs_<key> (rpfs_opt_name
 * lists them, from librpfs's table of settings), as options for
 * rpfs_init_opts. *opts gets the list, its values stored after it, in one
 * malloc; returns their number, or -ENOMEM. */
static int transport_hints(opal_info_t *info, struct rpfs_opt **opts)
{
	char key[64], *values;
	const char *name;
	int max = 0, n = 0, flag;

	while (rpfs_opt_name(max) != NULL)
		max++;
	*opts = malloc((size_t)max * (sizeof(**opts) + OPAL_MAX_INFO_VAL + 1));
	if (*opts == NULL)
		return -ENOMEM;
	values = (char *)(*opts + max);
	for (int i = 0; (name = rpfs_opt_name(i)) != NULL; i++) {
		char *value = values + (size_t)n * (OPAL_MAX_INFO_VAL + 1);

		snprintf(key, sizeof(key), "rpfs_%s", name);
		opal_info_get(info, key, OPAL_MAX_INFO_VAL, value, &flag);
		if (flag)
			(*opts)[n++] = (struct rpfs_opt){name, value};
	}
	return n;
}

/* The hints of the first open count; later opens keep the client as it
 * is. A bad rpfs_<key> hint fails the open with a message naming it; the
 * user's environment wins over a hint (rpfs.h). */
static int client_make(opal_info_t *info)
{
	char config[OPAL_MAX_INFO_VAL + 1];
	struct rpfs_opt *opts = NULL;
	int flag = 0, nopts = 0, ret;

	if (info != NULL) {
		nopts = transport_hints(info, &opts);
		if (nopts < 0)
			return nopts;
		opal_info_get(info, "rpfs_config", OPAL_MAX_INFO_VAL, config, &flag);
	}
	ret = rpfs_init_opts(flag ? config : NULL, opts, nopts, &client);
	free(opts);
	if (ret < 0) {
		client = NULL;
		/* the config's errno is not the file's (rpfs_ompi_error.c) */
		return rpfs_ompi_init_error(ret);
	}
	/* once MPI_Finalize has begun, the client ends with its last file */
	if (client_keyval == MPI_KEYVAL_INVALID && !ending &&
	    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, client_end, &client_keyval,
				    NULL) == MPI_SUCCESS)
		PMPI_Comm_set_attr(MPI_COMM_SELF, client_keyval, NULL);
	return 0;
}

int mca_fs_rpfs_client(opal_info_t *info, rpfs_client_t **out)
{
	int ret = 0;

	pthread_mutex_lock(&client_lock);
	if (client == NULL)
		ret = client_make(info);
	*out = client;
	pthread_mutex_unlock(&client_lock);
	return ret;
}
