/* fs_rpfs.h: the fs component: names, open/close, delete, size, sync and
 * layout hints for "rpfs:" files under OMPIO.
 *
 * Like the ROMIO driver (adio/ad_rpfs) it is glue only: every operation is
 * a librpfs call, and metadata is done by one rank and broadcast. */
#ifndef FS_RPFS_H
#define FS_RPFS_H

#include "rpfs_ompi.h"
#include "ompi/mca/fs/fs.h"

extern OMPI_MODULE_DECLSPEC mca_fs_base_component_2_0_0_t mca_fs_rpfs_component;

/* fh->f_fstype of rpfs files. OMPIO reads it for one thing only: which
 * collective algorithm (fcoll) to use. For LUSTRE it picks dynamic_gen2,
 * whose aggregators each own the stripes of one storage target (stripe i
 * goes to aggregator i mod stripe count), which is rpfs's layout too: each
 * aggregator writes whole stripes to one I/O server. Every other value gets
 * vulcan, which cuts the accessed range into equal pieces regardless of
 * stripes. Nothing else in Open MPI 4.1 looks at LUSTRE (no Lustre ioctl is
 * made: the fs and fbtl are rpfs's own). */
#define MCA_FS_RPFS_FSTYPE LUSTRE

/* The process's client (fs_rpfs_client.c, rpfs_mpi_client): made at the
 * first open or delete, with transport hints from info (may be NULL);
 * finalized once MPI_COMM_SELF is freed in MPI_Finalize and no file is open
 * (rpfs_mpi_file_opened/closed count them). Returns 0 or a negative errno
 * (rpfs_errmsg() says why): -EIO or -ENOMEM, whatever the config's errno. */
int mca_fs_rpfs_client(opal_info_t *info, rpfs_client_t **client);

/* Layout hints (fs_rpfs_layout.c). */
void mca_fs_rpfs_create_opts(opal_info_t *info, struct rpfs_create_opts *opts);
/* The rpfs_redundancy hint of info (NULL: none), checked, into out ("" if
 * not set); 0 or -EINVAL (rpfs_errmsg() says why). */
int mca_fs_rpfs_redundancy(opal_info_t *info, char *out, size_t len);
void mca_fs_rpfs_report_layout(ompio_file_t *fh, const struct rpfs_stat *st,
			       const char *redundancy);

/* Delete-on-close (fs_rpfs_delete.c): the close removes the file once for
 * everyone, then OMPIO deletes fh->f_fullfilename on every rank; this
 * renames it after the close's result code, which that delete returns
 * instead of trying again. Returns code, or OMPI_ERR_OUT_OF_RESOURCE. */
int mca_fs_rpfs_name_closed(ompio_file_t *fh, int code);

/* The module's slots. */
int mca_fs_rpfs_file_open(struct ompi_communicator_t *comm, const char *filename,
			  int amode, struct opal_info_t *info, ompio_file_t *fh);
int mca_fs_rpfs_file_close(ompio_file_t *fh);
int mca_fs_rpfs_file_delete(char *filename, struct opal_info_t *info);
int mca_fs_rpfs_file_set_size(ompio_file_t *fh, OMPI_MPI_OFFSET_TYPE size);
int mca_fs_rpfs_file_get_size(ompio_file_t *fh, OMPI_MPI_OFFSET_TYPE *size);
int mca_fs_rpfs_file_sync(ompio_file_t *fh);

#endif /* FS_RPFS_H */
