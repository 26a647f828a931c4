/* rpfs_ompi_size.c: what a process knows of a file's size, for read counts.
 *
 * librpfs reads holes and bytes past the end as zeros and returns the full
 * length; MPI counts only the bytes before the end of file. As in the ROMIO
 * driver, each process keeps a lower bound of the size (what it wrote,
 * what it last asked), so reads within it cost nothing extra and only a
 * read reaching past it asks the I/O servers once. */
#include "rpfs_ompi.h"

void rpfs_ompi_wrote(struct rpfs_ompi_file *f, uint64_t end, size_t bytes, size_t written)
{
	uint64_t known = __atomic_load_n(&f->known_size, __ATOMIC_RELAXED);

	if (bytes == 0 || written != bytes)
		end = 0;
	/* nonblocking writes may finish in opal_progress on another thread */
	while (end > known &&
	       !__atomic_compare_exchange_n(&f->known_size, &known, end, 1,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	__atomic_store_n(&f->dirty, 1, __ATOMIC_RELAXED);
}

static uint64_t segs_end(const struct rpfs_seg *segs, int nsegs)
{
	uint64_t end = 0;

	for (int i = 0; i < nsegs; i++)
		if (segs[i].off + segs[i].len > end)
			end = segs[i].off + segs[i].len;
	return end;
}

size_t rpfs_ompi_read_count(struct rpfs_ompi_file *f, const struct rpfs_seg *segs,
			    int nsegs, size_t moved)
{
	uint64_t end = segs_end(segs, nsegs), size, count = 0;

	if (end <= __atomic_load_n(&f->known_size, __ATOMIC_RELAXED))
		return moved;
	if (rpfs_getsize(f->file, &size) < 0)
		return moved; /* the data came; only the count is uncertain */
	__atomic_store_n(&f->known_size, size, __ATOMIC_RELAXED);
	if (end <= size)
		return moved;
	for (int i = 0; i < nsegs; i++) {
		uint64_t e = segs[i].off + segs[i].len;

		if (e > size)
			e = size;
		if (e > segs[i].off)
			count += e - segs[i].off;
	}
	return count < moved ? (size_t)count : moved;
}
