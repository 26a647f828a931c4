/* fbtl_rpfs_blocking.c: blocking reads and writes, one list-I/O call each.
 *
 * In atomic mode (MPI_File_set_atomicity) the range the call touches is
 * locked on the metadata server for the duration of the call, shared for
 * reads, exclusive for writes, as in the ROMIO driver; otherwise nothing
 * is locked: list I/O writes only the bytes asked for, so no other rank's
 * data is ever read and written back. */
#include "fbtl_rpfs.h"

#include "opal/util/output.h"

ssize_t fbtl_rpfs_transfer(ompio_file_t *fh, const struct rpfs_mpi_list *l,
			   enum fbtl_rpfs_dir dir)
{
	struct rpfs_ompi_file *f = rpfs_ompi_file_of(fh);
	int atomic = fh->f_atomicity && l->nfile > 0;
	ssize_t n;
	int ret;

	if (l->bytes == 0)
		return 0;
	if (atomic) {
		ret = rpfs_lock(f->file, l->first, l->end - l->first,
				dir == FBTL_RPFS_WRITE);
		if (ret < 0)
			return ret;
	}
	if (dir == FBTL_RPFS_WRITE)
		n = rpfs_writev(f->file, l->mem, l->nmem, l->file, l->nfile);
	else
		n = rpfs_readv(f->file, l->mem, l->nmem, l->file, l->nfile);
	if (atomic)
		rpfs_unlock(f->file, l->first, l->end - l->first);
	if (n < 0)
		return n;
	if (dir == FBTL_RPFS_WRITE) {
		rpfs_ompi_wrote(f, l->end, l->bytes, n);
		return n;
	}
	return (ssize_t)rpfs_mpi_read_count(&f->known_size, f->file, l->file, l->nfile,
					    (uint64_t)n);
}

void fbtl_rpfs_report(ompio_file_t *fh, enum fbtl_rpfs_dir dir)
{
	opal_output(0, "rpfs: %s of %s failed: %s",
		    dir == FBTL_RPFS_WRITE ? "write" : "read", fh->f_filename,
		    rpfs_errmsg());
}

static ssize_t blocking(ompio_file_t *fh, enum fbtl_rpfs_dir dir)
{
	struct rpfs_mpi_list l;
	ssize_t n;

	if (fbtl_rpfs_list_build(fh, &l) < 0)
		return OMPI_ERR_OUT_OF_RESOURCE;
	n = fbtl_rpfs_transfer(fh, &l, dir);
	rpfs_mpi_list_free(&l);
	if (n < 0) {
		fbtl_rpfs_report(fh, dir);
		return OMPI_ERROR;
	}
	return n;
}

ssize_t fbtl_rpfs_preadv(ompio_file_t *fh)
{
	return blocking(fh, FBTL_RPFS_READ);
}

ssize_t fbtl_rpfs_pwritev(ompio_file_t *fh)
{
	return blocking(fh, FBTL_RPFS_WRITE);
}
