/* ad_rpfs_io_list.c: noncontiguous (strided) I/O as list I/O.
 *
 * The memory datatype and the file view are flattened into two lists,
 * memory pieces and file pieces, and handed to ONE rpfs_readv/rpfs_writev
 * call; librpfs sends one request per I/O server carrying all of that
 * server's pieces. There is no data sieving: a write touches only the bytes
 * asked for, so no read-modify-write, no locks, and no other rank's data at
 * risk. In atomic mode the accessed range is locked on the metadata server
 * for the duration of the call. */
#include "ad_rpfs.h"

#include <errno.h>

/* The memory pieces (neighbours merged by rpfs_mpi_add_mem). Returns 0 or
 * -ENOMEM. */
static int build_mem(const void *buf, int count, MPI_Datatype datatype,
		     ADIOI_RPFS_list *l)
{
	ADIOI_Flatlist_node *flat;
	MPI_Aint lb, extent, true_lb, true_extent;
	int contig, ret = 0;

	ADIOI_Datatype_iscontig(datatype, &contig);
	if (contig) {
		MPI_Type_get_true_extent(datatype, &true_lb, &true_extent);
		return rpfs_mpi_add_mem(l, (char *)buf + true_lb, l->bytes);
	}
	MPI_Type_get_extent(datatype, &lb, &extent);
	flat = ADIOI_Flatten_and_find(datatype);
	for (int i = 0; i < count && ret == 0; i++)
		for (MPI_Count j = 0; j < flat->count && ret == 0; j++)
			ret = rpfs_mpi_add_mem(l,
					       (char *)buf + (ADIO_Offset)i * extent +
						       flat->indices[j],
					       (uint64_t)flat->blocklens[j]);
	return ret;
}

/* The file pieces of the next l->bytes bytes of the view, from the
 * explicit offset (in etypes) or the individual file pointer. Returns 0 or
 * -ENOMEM. */
static int build_file(ADIO_File fd, int file_ptr_type, ADIO_Offset offset,
		      ADIOI_RPFS_list *l)
{
	ADIOI_Flatlist_node *flat;
	MPI_Count ftsize;
	MPI_Aint lb, fext;
	ADIO_Offset tile, pos, intra = 0, left = (ADIO_Offset)l->bytes;
	MPI_Count j = 0;
	int contig, ret = 0;

	ADIOI_Datatype_iscontig(fd->filetype, &contig);
	if (contig) {
		ADIO_Offset off = (file_ptr_type == ADIO_EXPLICIT_OFFSET)
					  ? fd->disp + fd->etype_size * offset
					  : fd->fp_ind;
		return rpfs_mpi_add_seg(l, (uint64_t)off, l->bytes);
	}

	flat = ADIOI_Flatten_and_find(fd->filetype);
	MPI_Type_size_x(fd->filetype, &ftsize);
	MPI_Type_get_extent(fd->filetype, &lb, &fext);
	if (ftsize == 0)
		return 0;

	if (file_ptr_type == ADIO_EXPLICIT_OFFSET) {
		/* offset counts etypes of data: skip whole filetypes, then blocks */
		pos = offset * fd->etype_size;
		tile = pos / ftsize;
		pos -= tile * ftsize;
		for (j = 0; j < flat->count; j++) {
			if (pos < flat->blocklens[j])
				break;
			pos -= flat->blocklens[j];
		}
		intra = pos;
	} else {
		/* the pointer is a byte position; it may sit in a gap, then the
		 * access starts at the next block */
		ADIO_Offset rel = fd->fp_ind - fd->disp;
		tile = (rel - flat->indices[0]) / fext;
		if (tile < 0)
			tile = 0;
		rel -= tile * fext;
		for (j = 0; j < flat->count; j++)
			if (flat->blocklens[j] > 0 &&
			    flat->indices[j] + flat->blocklens[j] > rel)
				break;
		if (j == flat->count) {
			tile++;
			j = 0;
		} else if (rel > flat->indices[j]) {
			intra = rel - flat->indices[j];
		}
	}

	while (left > 0 && ret == 0) {
		if (j == flat->count) {
			j = 0;
			tile++;
		}
		ADIO_Offset n = flat->blocklens[j] - intra;
		if (n > left)
			n = left;
		if (n > 0) {
			ret = rpfs_mpi_add_seg(l,
					       (uint64_t)(fd->disp + tile * fext +
							  flat->indices[j] + intra),
					       (uint64_t)n);
			left -= n;
		}
		intra = 0;
		j++;
	}
	return ret;
}

int ADIOI_RPFS_Build_list(ADIO_File fd, const void *buf, int count, MPI_Datatype datatype,
			  int file_ptr_type, ADIO_Offset offset, ADIOI_RPFS_list *list)
{
	MPI_Count size;
	int ret;

	rpfs_mpi_list_init(list, 0,
			   file_ptr_type == ADIO_EXPLICIT_OFFSET ? 0
								 : (uint64_t)fd->fp_ind);
	MPI_Type_size_x(datatype, &size);
	list->bytes = (uint64_t)(size * (ADIO_Offset)count);
	if (list->bytes == 0)
		return 0;
	ret = build_mem(buf, count, datatype, list);
	if (ret == 0)
		ret = build_file(fd, file_ptr_type, offset, list);
	if (ret < 0)
		rpfs_mpi_list_free(list);
	return ret;
}

/* Atomic mode: hold the whole accessed range for the call. */
static int lock_range(ADIO_File fd, const ADIOI_RPFS_list *l, int exclusive)
{
	ADIOI_RPFS_fs *fs = fd->fs_ptr;

	if (!fd->atomicity || l->nfile == 0)
		return 0;
	return rpfs_lock(fs->file, l->first, l->end - l->first, exclusive);
}

static void unlock_range(ADIO_File fd, const ADIOI_RPFS_list *l)
{
	ADIOI_RPFS_fs *fs = fd->fs_ptr;

	if (fd->atomicity && l->nfile > 0)
		rpfs_unlock(fs->file, l->first, l->end - l->first);
}

static void strided(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
		    int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
		    int *error_code, ADIOI_RPFS_dir dir)
{
	static char rname[] = "ADIOI_RPFS_READSTRIDED";
	static char wname[] = "ADIOI_RPFS_WRITESTRIDED";
	char *myname = dir == ADIOI_RPFS_WRITE ? wname : rname;
	ADIOI_RPFS_fs *fs = fd->fs_ptr;
	ADIOI_RPFS_list l;
	ADIO_Offset nbytes;
	ssize_t ret = 0;
	int lret;

	lret = ADIOI_RPFS_Build_list(fd, buf, count, datatype, file_ptr_type, offset, &l);
	if (lret < 0) {
		*error_code = ADIOI_RPFS_Err(myname, __LINE__, lret, "file view", "");
		return;
	}
	if (l.bytes > 0) {
		lret = lock_range(fd, &l, dir == ADIOI_RPFS_WRITE);
		if (lret < 0) {
			*error_code =
				ADIOI_RPFS_Err(myname, __LINE__, lret, "rpfs_lock", NULL);
			goto out;
		}
		if (dir == ADIOI_RPFS_WRITE)
			ret = rpfs_writev(fs->file, l.mem, l.nmem, l.file, l.nfile);
		else
			ret = rpfs_readv(fs->file, l.mem, l.nmem, l.file, l.nfile);
		unlock_range(fd, &l);
		if (ret < 0) {
			*error_code = ADIOI_RPFS_Err(
				myname, __LINE__, (int)ret,
				dir == ADIOI_RPFS_WRITE ? "rpfs_writev" : "rpfs_readv",
				NULL);
			goto out;
		}
	}

	nbytes = ret;
	if (dir == ADIOI_RPFS_WRITE) {
		fd->dirty_write = 1;
		/* l.end of an empty list is the file pointer */
		rpfs_mpi_wrote(&fs->known_size, l.end, l.bytes, ret);
	} else if (status != MPI_STATUS_IGNORE && nbytes > 0) {
		nbytes = (ADIO_Offset)rpfs_mpi_read_count(
			&fs->known_size, fs->file, l.file, l.nfile, (uint64_t)nbytes);
	}
	if (file_ptr_type == ADIO_INDIVIDUAL && l.nfile > 0)
		fd->fp_ind = (ADIO_Offset)l.end;
	fd->fp_sys_posn = -1;
#ifdef HAVE_STATUS_SET_BYTES
	MPIR_Status_set_bytes(status, datatype, nbytes);
#endif
	*error_code = MPI_SUCCESS;
out:
	rpfs_mpi_list_free(&l);
}

void ADIOI_RPFS_ReadStrided(ADIO_File fd, void *buf, int count, MPI_Datatype datatype,
			    int file_ptr_type, ADIO_Offset offset, ADIO_Status *status,
			    int *error_code)
{
	strided(fd, buf, count, datatype, file_ptr_type, offset, status, error_code,
		ADIOI_RPFS_READ);
}

void ADIOI_RPFS_WriteStrided(ADIO_File fd, const void *buf, int count,
			     MPI_Datatype datatype, int file_ptr_type, ADIO_Offset offset,
			     ADIO_Status *status, int *error_code)
{
	strided(fd, (void *)buf, count, datatype, file_ptr_type, offset, status,
		error_code, ADIOI_RPFS_WRITE);
}
