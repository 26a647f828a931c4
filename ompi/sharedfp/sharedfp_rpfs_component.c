/* sharedfp_rpfs_component.c: the sharedfp component's description for Open
 * MPI's component loader, its query and its operations table.
 *
 * OMPIO picks a sharedfp component at every open, before the fs component
 * opens the file; this one takes exactly the files of rpfs's fs component,
 * above sharedfp/sm (30), which would otherwise keep the pointer in one
 * node's shared memory. */
#include "sharedfp_rpfs.h"

static int sharedfp_rpfs_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
	return OMPI_SUCCESS;
}

static int sharedfp_rpfs_module_init(ompio_file_t *fh)
{
	return OMPI_SUCCESS;
}

static int sharedfp_rpfs_module_finalize(ompio_file_t *fh)
{
	return OMPI_SUCCESS;
}

static mca_sharedfp_base_module_1_0_0_t sharedfp_rpfs_module = {
	.sharedfp_module_init = sharedfp_rpfs_module_init,
	.sharedfp_module_finalize = sharedfp_rpfs_module_finalize,
	.sharedfp_seek = sharedfp_rpfs_seek,
	.sharedfp_get_position = sharedfp_rpfs_get_position,
	.sharedfp_read = sharedfp_rpfs_read,
	.sharedfp_read_ordered = sharedfp_rpfs_read_ordered,
	.sharedfp_read_ordered_begin = sharedfp_rpfs_read_ordered_begin,
	.sharedfp_read_ordered_end = sharedfp_rpfs_read_ordered_end,
	.sharedfp_iread = sharedfp_rpfs_iread,
	.sharedfp_write = sharedfp_rpfs_write,
	.sharedfp_write_ordered = sharedfp_rpfs_write_ordered,
	.sharedfp_write_ordered_begin = sharedfp_rpfs_write_ordered_begin,
	.sharedfp_write_ordered_end = sharedfp_rpfs_write_ordered_end,
	.sharedfp_iwrite = sharedfp_rpfs_iwrite,
	.sharedfp_file_open = sharedfp_rpfs_file_open,
	.sharedfp_file_close = sharedfp_rpfs_file_close,
};

static mca_sharedfp_base_module_1_0_0_t *sharedfp_rpfs_file_query(ompio_file_t *fh,
								  int *priority)
{
	*priority = 0;
	if (!rpfs_ompi_owns(fh))
		return NULL;
	*priority = RPFS_OMPI_PRIORITY;
	return &sharedfp_rpfs_module;
}

static int sharedfp_rpfs_file_unquery(ompio_file_t *fh)
{
	return OMPI_SUCCESS;
}

mca_sharedfp_base_component_2_0_0_t mca_sharedfp_rpfs_component = {
	.sharedfpm_version =
		{
			MCA_SHAREDFP_BASE_VERSION_2_0_0,
			.mca_component_name = RPFS_OMPI_NAME,
			MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION,
					      OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION),
		},
	.sharedfpm_data = {MCA_BASE_METADATA_PARAM_NONE},
	.sharedfpm_init_query = sharedfp_rpfs_init_query,
	.sharedfpm_file_query = sharedfp_rpfs_file_query,
	.sharedfpm_file_unquery = sharedfp_rpfs_file_unquery,
};
