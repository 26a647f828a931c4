/* fs_rpfs_client.c: the process's rpfs client.
 *
 * One client serves every file of a process (it holds the connections to
 * the servers, kept for its life), so it is the one piece of process-wide
 * state of the components: made at the first open or delete, finalized by
 * an attribute delete callback on MPI_COMM_SELF, which MPI_Finalize runs
 * before it tears MPI down (as the ROMIO driver does). */
#include "fs_rpfs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t client_lock = PTHREAD_MUTEX_INITIALIZER;
static rpfs_client_t *client; /* the process's client, or NULL */
static int client_keyval = MPI_KEYVAL_INVALID;

static int client_end(MPI_Comm comm, int keyval, void *attribute_val, void *extra_state)
{
	pthread_mutex_lock(&client_lock);
	if (client != NULL)
		rpfs_finalize(client);
	client = NULL;
	PMPI_Comm_free_keyval(&keyval);
	client_keyval = MPI_KEYVAL_INVALID;
	pthread_mutex_unlock(&client_lock);
	return MPI_SUCCESS;
}

/* Transport hints given at the first open reach librpfs through its
 * environment (RPFS_<KEY>), which rpfs_init reads; later opens keep the
 * client as it is. The user's environment wins. */
static void export_transport_hints(opal_info_t *info)
{
	static const char *const keys[] = {"inline_max", "fast_max",	   "fast_slots",
					   "chunk_size", "pipeline_depth", "timeout_ms",
					   "provider"};
	char key[64], env[64], value[OPAL_MAX_INFO_VAL + 1];
	int flag;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(key, sizeof(key), "rpfs_%s", keys[i]);
		opal_info_get(info, key, OPAL_MAX_INFO_VAL, value, &flag);
		if (!flag)
			continue;
		snprintf(env, sizeof(env), "RPFS_%s", keys[i]);
		for (char *p = env; *p; p++)
			if (*p >= 'a' && *p <= 'z')
				*p = (char)(*p - 'a' + 'A');
		setenv(env, value, 0);
	}
}

static int client_make(opal_info_t *info)
{
	char config[OPAL_MAX_INFO_VAL + 1];
	int flag = 0, ret;

	if (info != NULL) {
		export_transport_hints(info);
		opal_info_get(info, "rpfs_config", OPAL_MAX_INFO_VAL, config, &flag);
	}
	ret = rpfs_init(flag ? config : NULL, &client);
	if (ret < 0) {
		client = NULL;
		return ret;
	}
	if (client_keyval == MPI_KEYVAL_INVALID &&
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
