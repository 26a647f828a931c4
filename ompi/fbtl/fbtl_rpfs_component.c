/* fbtl_rpfs_component.c: the fbtl component's description for Open MPI's
 * component loader, its query and its operations table.
 *
 * OMPIO picks the fbtl after the fs; this one serves exactly the files that
 * rpfs's fs component opened (fbtl/posix would otherwise take them and
 * pread a local descriptor that does not exist). */
#include "fbtl_rpfs.h"

static int fbtl_rpfs_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
	return OMPI_SUCCESS;
}

static int fbtl_rpfs_module_init(ompio_file_t *fh)
{
	return OMPI_SUCCESS;
}

static int fbtl_rpfs_module_finalize(ompio_file_t *fh)
{
	return OMPI_SUCCESS;
}

static mca_fbtl_base_module_1_0_0_t fbtl_rpfs_module = {
	.fbtl_module_init = fbtl_rpfs_module_init,
	.fbtl_module_finalize = fbtl_rpfs_module_finalize,
	.fbtl_preadv = fbtl_rpfs_preadv,
	.fbtl_ipreadv = fbtl_rpfs_ipreadv,
	.fbtl_pwritev = fbtl_rpfs_pwritev,
	.fbtl_ipwritev = fbtl_rpfs_ipwritev,
	.fbtl_progress = fbtl_rpfs_progress,
	.fbtl_request_free = fbtl_rpfs_request_free,
};

static mca_fbtl_base_module_1_0_0_t *fbtl_rpfs_file_query(ompio_file_t *fh, int *priority)
{
	*priority = 0;
	if (!rpfs_ompi_owns(fh))
		return NULL;
	*priority = RPFS_OMPI_PRIORITY;
	return &fbtl_rpfs_module;
}

static int fbtl_rpfs_file_unquery(ompio_file_t *fh)
{
	return OMPI_SUCCESS;
}

mca_fbtl_base_component_2_0_0_t mca_fbtl_rpfs_component = {
	.fbtlm_version =
		{
			MCA_FBTL_BASE_VERSION_2_0_0,
			.mca_component_name = RPFS_OMPI_NAME,
			MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION,
					      OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION),
		},
	.fbtlm_data = {MCA_BASE_METADATA_PARAM_NONE},
	.fbtlm_init_query = fbtl_rpfs_init_query,
	.fbtlm_file_query = fbtl_rpfs_file_query,
	.fbtlm_file_unquery = fbtl_rpfs_file_unquery,
};
