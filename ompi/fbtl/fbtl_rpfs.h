/* fbtl_rpfs.h: the fbtl component: OMPIO's data path to rpfs.
 *
 * OMPIO flattens every read and write (memory datatype and file view) into
 * fh->f_io_array, a list of pieces each contiguous in memory and in the
 * file, and hands the whole list to the fbtl. This one turns it into ONE
 * librpfs list-I/O call, which sends each I/O server one request carrying
 * all of its pieces: no data sieving, no per-piece round trips. Nonblocking
 * operations post the same list with librpfs' nonblocking calls and are
 * completed by OMPIO's progress function, polled from opal_progress. */
#ifndef FBTL_RPFS_H
#define FBTL_RPFS_H

#include "rpfs_ompi.h"
#include "ompi/mca/fbtl/fbtl.h"
#include "ompi/mca/common/ompio/common_ompio_request.h"

extern OMPI_MODULE_DECLSPEC mca_fbtl_base_component_2_0_0_t mca_fbtl_rpfs_component;

/* Direction of a transfer. */
enum fbtl_rpfs_dir { FBTL_RPFS_READ, FBTL_RPFS_WRITE };

/* fh->f_io_array as librpfs lists (fbtl_rpfs_list.c): 0, or -ENOMEM with
 * nothing to free; else free with rpfs_mpi_list_free. */
int fbtl_rpfs_list_build(ompio_file_t *fh, struct rpfs_mpi_list *l);

/* One blocking transfer of a built list, in atomic mode under a lock of
 * its range (fbtl_rpfs_blocking.c). Returns MPI's byte count or a negative
 * errno (rpfs_errmsg() says why). */
ssize_t fbtl_rpfs_transfer(ompio_file_t *fh, const struct rpfs_mpi_list *l,
			   enum fbtl_rpfs_dir dir);
/* Report a failed transfer: OMPIO 4.1 keeps only the sign of the fbtl's
 * return for independent I/O, so the message is printed here. */
void fbtl_rpfs_report(ompio_file_t *fh, enum fbtl_rpfs_dir dir);

/* The module's slots. */
ssize_t fbtl_rpfs_preadv(ompio_file_t *fh);
ssize_t fbtl_rpfs_pwritev(ompio_file_t *fh);
ssize_t fbtl_rpfs_ipreadv(ompio_file_t *fh, ompi_request_t *request);
ssize_t fbtl_rpfs_ipwritev(ompio_file_t *fh, ompi_request_t *request);
bool fbtl_rpfs_progress(mca_ompio_request_t *req);
void fbtl_rpfs_request_free(mca_ompio_request_t *req);

#endif /* FBTL_RPFS_H */
