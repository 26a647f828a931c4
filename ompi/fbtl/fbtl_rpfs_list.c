/* fbtl_rpfs_list.c: fh->f_io_array as librpfs' two lists.
 *
 * Each entry of OMPIO's array is one piece, contiguous in memory and in the
 * file. librpfs takes memory pieces and file pieces as separate lists of
 * equal total length; rpfs_mpi_add_mem and rpfs_mpi_add_seg merge the
 * neighbours that touch in each list on its own, so a strided file view
 * over a contiguous buffer becomes one memory piece and n file pieces
 * (fewer descriptors to register and send). */
#include "fbtl_rpfs.h"

int fbtl_rpfs_list_build(ompio_file_t *fh, struct rpfs_mpi_list *l)
{
	int n = fh->f_num_of_io_entries, ret;

	/* room for every entry: never grown */
	ret = rpfs_mpi_list_init(l, n, 0);
	for (int i = 0; i < n && ret == 0; i++) {
		const mca_common_ompio_io_array_t *p = &fh->f_io_array[i];

		ret = rpfs_mpi_add_mem(l, p->memory_address, p->length);
		/* OMPIO keeps the absolute file offset in a pointer field */
		if (ret == 0)
			ret = rpfs_mpi_add_seg(l, (uint64_t)(uintptr_t)p->offset,
					       p->length);
		l->bytes += p->length;
	}
	if (ret < 0)
		rpfs_mpi_list_free(l);
	return ret;
}
