/* sharedfp_rpfs.h: the sharedfp component: MPI's shared file pointer for
 * rpfs files, held by the file's metadata server.
 *
 * The pointer is the per-file counter that the metadata server owning the
 * file keeps in memory; rpfs_fetch_add adds to it atomically and returns
 * the old value, one round trip. So the pointer works across processes on
 * any number of nodes (Open MPI's sharedfp/sm works on one node only, and
 * sharedfp/lockedfile needs a local lock file next to the data). The
 * counter counts bytes of the file view's data, as OMPIO's explicit
 * offsets (in etypes) do.
 *
 * The counter belongs to the file, not to an open: two programs that open
 * the same file at the same time share one pointer. Opening (and every
 * MPI_File_set_view) sets it to 0, or to the end of file for
 * MPI_MODE_APPEND, as MPI asks. */
#ifndef SHAREDFP_RPFS_H
#define SHAREDFP_RPFS_H

#include "rpfs_ompi.h"
#include "ompi/mca/sharedfp/sharedfp.h"

extern OMPI_MODULE_DECLSPEC mca_sharedfp_base_component_2_0_0_t
	mca_sharedfp_rpfs_component;

/* The pointer itself (sharedfp_rpfs_pointer.c). */

/* Move the pointer past bytes of data; *offset gets where the access
 * starts, in etypes (OMPIO's explicit offset). Returns MPI_SUCCESS or an
 * MPI error code. */
int sharedfp_rpfs_claim(ompio_file_t *fh, size_t bytes, OMPI_MPI_OFFSET_TYPE *offset);

/* Collective: the offset in etypes where this rank's part of an ordered
 * access of bytes starts, all ranks' parts in rank order from the pointer,
 * which moves past them all. */
int sharedfp_rpfs_claim_ordered(ompio_file_t *fh, size_t bytes,
				OMPI_MPI_OFFSET_TYPE *offset);

/* The data bytes of count elements of datatype. */
size_t sharedfp_rpfs_bytes(int count, struct ompi_datatype_t *datatype);

/* The module's slots. */
int sharedfp_rpfs_file_open(struct ompi_communicator_t *comm, const char *filename,
			    int amode, struct opal_info_t *info, ompio_file_t *fh);
int sharedfp_rpfs_file_close(ompio_file_t *fh);
int sharedfp_rpfs_seek(ompio_file_t *fh, OMPI_MPI_OFFSET_TYPE offset, int whence);
int sharedfp_rpfs_get_position(ompio_file_t *fh, OMPI_MPI_OFFSET_TYPE *offset);
int sharedfp_rpfs_read(ompio_file_t *fh, void *buf, int count,
		       struct ompi_datatype_t *datatype, ompi_status_public_t *status);
int sharedfp_rpfs_write(ompio_file_t *fh, const void *buf, int count,
			struct ompi_datatype_t *datatype, ompi_status_public_t *status);
int sharedfp_rpfs_iread(ompio_file_t *fh, void *buf, int count,
			struct ompi_datatype_t *datatype, ompi_request_t **request);
int sharedfp_rpfs_iwrite(ompio_file_t *fh, const void *buf, int count,
			 struct ompi_datatype_t *datatype, ompi_request_t **request);
int sharedfp_rpfs_read_ordered(ompio_file_t *fh, void *buf, int count,
			       struct ompi_datatype_t *datatype,
			       ompi_status_public_t *status);
int sharedfp_rpfs_write_ordered(ompio_file_t *fh, const void *buf, int count,
				struct ompi_datatype_t *datatype,
				ompi_status_public_t *status);
int sharedfp_rpfs_read_ordered_begin(ompio_file_t *fh, void *buf, int count,
				     struct ompi_datatype_t *datatype);
int sharedfp_rpfs_read_ordered_end(ompio_file_t *fh, void *buf,
				   ompi_status_public_t *status);
int sharedfp_rpfs_write_ordered_begin(ompio_file_t *fh, const void *buf, int count,
				      struct ompi_datatype_t *datatype);
int sharedfp_rpfs_write_ordered_end(ompio_file_t *fh, const void *buf,
				    ompi_status_public_t *status);

#endif /* SHAREDFP_RPFS_H */
