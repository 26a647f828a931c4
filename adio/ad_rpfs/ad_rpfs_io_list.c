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

/* Append a piece, merging with the previous one when they touch. */
static void add_mem(ADIOI_RPFS_list *l, int *cap, char *base, ADIO_Offset len)
{
	if (len <= 0)
		return;
	if (l->nmem > 0) {
		struct iovec *last = &l->mem[l->nmem - 1];
		if ((char *)last->iov_base + last->iov_len == base) {
			last->iov_len += (size_t)len;
			return;
		}
	}
	if (l->nmem == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		l->mem = l->mem ? ADIOI_Realloc(l->mem, *cap * sizeof(*l->mem))
				: ADIOI_Malloc(*cap * sizeof(*l->mem));
	}
	l->mem[l->nmem].iov_base = base;
	l->mem[l->nmem].iov_len = (size_t)len;
	l->nmem++;
}

static void add_seg(ADIOI_RPFS_list *l, int *cap, ADIO_Offset off, ADIO_Offset len)
{
	if (len <= 0)
		return;
	if (l->nfile > 0) {
		struct rpfs_seg *last = &l->file[l->nfile - 1];
		if ((ADIO_Offset)(last->off + last->len) == off) {
			last->len += (uint64_t)len;
			goto out;
		}
	}
	if (l->nfile == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		l->file = l->file ? ADIOI_Realloc(l->file, *cap * sizeof(*l->file))
				  : ADIOI_Malloc(*cap * sizeof(*l->file));
	}
	l->file[l->nfile].off = (uint64_t)off;
	l->file[l->nfile].len = (uint64_t)len;
	l->nfile++;
out:
	if (off + len > l->file_end)
		l->file_end = off + len;
}

static void build_mem(const void *buf, int count, MPI_Datatype datatype,
		      ADIOI_RPFS_list *l)
{
	ADIOI_Flatlist_node *flat;
	MPI_Aint lb, extent, true_lb, true_extent;
	int contig, cap = 0;

	ADIOI_Datatype_iscontig(datatype, &contig);
	if (contig) {
		MPI_Type_get_true_extent(datatype, &true_lb, &true_extent);
		add_mem(l, &cap, (char *)buf + true_lb, l->bytes);
		return;
	}
	MPI_Type_get_extent(datatype, &lb, &extent);
	flat = ADIOI_Flatten_and_find(datatype);
	for (int i = 0; i < count; i++)
		for (MPI_Count j = 0; j < flat->count; j++)
			add_mem(l, &cap,
				(char *)buf + (ADIO_Offset)i * extent + flat->indices[j],
				flat->blocklens[j]);
}

/* The file pieces of the next l->bytes bytes of the view, from the
 * explicit offset (in etypes) or the individual file pointer. */
static void build_file(ADIO_File fd, int file_ptr_type, ADIO_Offset offset,
		       ADIOI_RPFS_list *l)
{
	ADIOI_Flatlist_node *flat;
	MPI_Count ftsize;
	MPI_Aint lb, fext;
	ADIO_Offset tile, pos, intra = 0, left = l->bytes;
	MPI_Count j = 0;
	int contig, cap = 0;

	ADIOI_Datatype_iscontig(fd->filetype, &contig);
	if (contig) {
		ADIO_Offset off = (file_ptr_type == ADIO_EXPLICIT_OFFSET)
					  ? fd->disp + fd->etype_size * offset
					  : fd->fp_ind;
		add_seg(l, &cap, off, l->bytes);
		return;
	}

	flat = ADIOI_Flatten_and_find(fd->filetype);
	MPI_Type_size_x(fd->filetype, &ftsize);
	MPI_Type_get_extent(fd->filetype, &lb, &fext);
	if (ftsize == 0)
		return;

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

	while (left > 0) {
		if (j == flat->count) {
			j = 0;
			tile++;
		}
		ADIO_Offset n = flat->blocklens[j] - intra;
		if (n > left)
			n = left;
		if (n > 0) {
			add_seg(l, &cap,
				fd->disp + tile * fext + flat->indices[j] + intra, n);
			left -= n;
		}
		intra = 0;
		j++;
	}
}

int ADIOI_RPFS_Build_list(ADIO_File fd, const void *buf, int count, MPI_Datatype datatype,
			  int file_ptr_type, ADIO_Offset offset, ADIOI_RPFS_list *list)
{
	MPI_Count size;

	memset(list, 0, sizeof(*list));
	MPI_Type_size_x(datatype, &size);
	list->bytes = size * (ADIO_Offset)count;
	list->file_end = (file_ptr_type == ADIO_EXPLICIT_OFFSET) ? 0 : fd->fp_ind;
	if (list->bytes == 0)
		return 0;
	build_mem(buf, count, datatype, list);
	build_file(fd, file_ptr_type, offset, list);
	return 0;
}

void ADIOI_RPFS_Free_list(ADIOI_RPFS_list *list)
{
	/* ADIOI_Free aborts on NULL */
	if (list->mem != NULL)
		ADIOI_Free(list->mem);
	if (list->file != NULL)
		ADIOI_Free(list->file);
	list->mem = NULL;
	list->file = NULL;
}

void ADIOI_RPFS_Wrote(ADIO_File fd, ADIO_Offset end)
{
	ADIOI_RPFS_fs *fs = fd->fs_ptr;

	if (end > fs->known_size)
		fs->known_size = end;
}

void ADIOI_RPFS_Write_done(ADIO_File fd, ADIO_Offset end, ADIO_Offset bytes,
			   ADIO_Offset ret)
{
	if (bytes > 0 && ret == bytes)
		ADIOI_RPFS_Wrote(fd, end);
}

ADIO_Offset ADIOI_RPFS_Read_count(ADIO_File fd, const struct rpfs_seg *segs, int nsegs,
				  ADIO_Offset moved)
{
	ADIOI_RPFS_fs *fs = fd->fs_ptr;
	ADIO_Offset end = 0, count = 0;
	uint64_t size;

	for (int i = 0; i < nsegs; i++)
		if ((ADIO_Offset)(segs[i].off + segs[i].len) > end)
			end = (ADIO_Offset)(segs[i].off + segs[i].len);
	if (end <= fs->known_size)
		return moved;
	/* the read reaches past what we know: ask once */
	if (rpfs_getsize(fs->file, &size) < 0)
		return moved;
	fs->known_size = (ADIO_Offset)size;
	if (end <= fs->known_size)
		return moved;
	for (int i = 0; i < nsegs; i++) {
		ADIO_Offset e = (ADIO_Offset)(segs[i].off + segs[i].len);
		if (e > fs->known_size)
			e = fs->known_size;
		if (e > (ADIO_Offset)segs[i].off)
			count += e - (ADIO_Offset)segs[i].off;
	}
	return count < moved ? count : moved;
}

/* Atomic mode: hold the whole accessed range for the call. */
static int lock_range(ADIO_File fd, const ADIOI_RPFS_list *l, int exclusive)
{
	ADIOI_RPFS_fs *fs = fd->fs_ptr;

	if (!fd->atomicity || l->nfile == 0)
		return 0;
	return rpfs_lock(fs->file, l->file[0].off,
			 (uint64_t)(l->file_end - l->file[0].off), exclusive);
}

static void unlock_range(ADIO_File fd, const ADIOI_RPFS_list *l)
{
	ADIOI_RPFS_fs *fs = fd->fs_ptr;

	if (fd->atomicity && l->nfile > 0)
		rpfs_unlock(fs->file, l->file[0].off,
			    (uint64_t)(l->file_end - l->file[0].off));
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

	ADIOI_RPFS_Build_list(fd, buf, count, datatype, file_ptr_type, offset, &l);
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
		/* l.file_end of an empty list is the file pointer */
		ADIOI_RPFS_Write_done(fd, l.file_end, l.bytes, ret);
	} else if (status != MPI_STATUS_IGNORE && nbytes > 0) {
		nbytes = ADIOI_RPFS_Read_count(fd, l.file, l.nfile, nbytes);
	}
	if (file_ptr_type == ADIO_INDIVIDUAL && l.nfile > 0)
		fd->fp_ind = l.file_end;
	fd->fp_sys_posn = -1;
#ifdef HAVE_STATUS_SET_BYTES
	MPIR_Status_set_bytes(status, datatype, nbytes);
#endif
	*error_code = MPI_SUCCESS;
out:
	ADIOI_RPFS_Free_list(&l);
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
