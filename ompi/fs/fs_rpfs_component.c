/* fs_rpfs_component.c: the fs component's description for Open MPI's
 * component loader, its query (which files it claims) and its operations
 * table.
 *
 * OMPIO asks every fs component about each file it opens or deletes and
 * takes the one with the highest priority; for "rpfs:" names this one
 * answers above all stock components (ufs would otherwise take the name as
 * a local path). */
#include "fs_rpfs.h"

#include "ompi/mca/fs/base/base.h"

static int fs_rpfs_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
	return OMPI_SUCCESS;
}

static int fs_rpfs_module_init(ompio_file_t *fh)
{
	/* the query of a component asked after ours may have set another */
	fh->f_fstype = (enum ompio_fs_type)MCA_FS_RPFS_FSTYPE;
	return OMPI_SUCCESS;
}

static int fs_rpfs_module_finalize(ompio_file_t *fh)
{
	return OMPI_SUCCESS;
}

static mca_fs_base_module_1_0_0_t fs_rpfs_module = {
	.fs_module_init = fs_rpfs_module_init,
	.fs_module_finalize = fs_rpfs_module_finalize,
	.fs_file_open = mca_fs_rpfs_file_open,
	.fs_file_close = mca_fs_rpfs_file_close,
	.fs_file_delete = mca_fs_rpfs_file_delete,
	.fs_file_set_size = mca_fs_rpfs_file_set_size,
	.fs_file_get_size = mca_fs_rpfs_file_get_size,
	.fs_file_sync = mca_fs_rpfs_file_sync,
};

/* Called for opens (fh->f_comm set) and for deletes (a handle that holds
 * only the name): must not touch the communicator. */
static mca_fs_base_module_1_0_0_t *fs_rpfs_file_query(ompio_file_t *fh, int *priority)
{
	*priority = 0;
	if (rpfs_ompi_path(fh->f_filename) == NULL)
		return NULL;
	*priority = RPFS_OMPI_PRIORITY;
	fh->f_fstype = (enum ompio_fs_type)MCA_FS_RPFS_FSTYPE;
	return &fs_rpfs_module;
}

static int fs_rpfs_file_unquery(ompio_file_t *fh)
{
	return OMPI_SUCCESS;
}

mca_fs_base_component_2_0_0_t mca_fs_rpfs_component = {
	.fsm_version =
		{
			MCA_FS_BASE_VERSION_2_0_0,
			.mca_component_name = RPFS_OMPI_NAME,
			MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION,
					      OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION),
		},
	.fsm_data = {MCA_BASE_METADATA_PARAM_NONE},
	.fsm_init_query = fs_rpfs_init_query,
	.fsm_file_query = fs_rpfs_file_query,
	.fsm_file_unquery = fs_rpfs_file_unquery,
};
