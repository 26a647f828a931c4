/* fbtl_rpfs_list.c: fh->f_io_array as librpfs' two lists.
 *
 * Each entry of OMPIO's array is one piece, contiguous in memory and in the
 * file. librpfs takes memory pieces and file pieces as separate lists of
 * equal total length, so neighbours that touch are merged in each list on
 * its own: a strided file view over a contiguous buffer becomes one memory
 * piece and n file pieces (fewer descriptors to register and send). */
#include "fbtl_rpfs.h"

#include <errno.h>
#include <stdlib.h>

static void add_mem(struct fbtl_rpfs_list *l, void *base, size_t len)
{
	if (l->nmem > 0) {
		struct iovec *last = &l->mem[l->nmem - 1];

		if ((char *)last->iov_base + last->iov_len == (char *)base) {
			last->iov_len += len;
			return;
		}
	}
	l->mem[l->nmem].iov_base = base;
	l->mem[l->nmem].iov_len = len;
	l->nmem++;
}

static void add_seg(struct fbtl_rpfs_list *l, uint64_t off, uint64_t len)
{
	if (off < l->first)
		l->first = off;
	if (off + len > l->end)
		l->end = off + len;
	if (l->nfile > 0) {
		struct rpfs_seg *last = &l->file[l->nfile - 1];

		if (last->off + last->len == off) {
			last->len += len;
			return;
		}
	}
	l->file[l->nfile].off = off;
	l->file[l->nfile].len = len;
	l->nfile++;
}

int fbtl_rpfs_list_build(ompio_file_t *fh, struct fbtl_rpfs_list *l)
{
	int n = fh->f_num_of_io_entries;

	l->nmem = l->nfile = 0;
	l->bytes = 0;
	l->first = UINT64_MAX;
	l->end = 0;
	l->mem = malloc((size_t)n * sizeof(*l->mem));
	l->file = malloc((size_t)n * sizeof(*l->file));
	if (n > 0 && (l->mem == NULL || l->file == NULL)) {
		fbtl_rpfs_list_free(l);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		const mca_common_ompio_io_array_t *p = &fh->f_io_array[i];

		if (p->length == 0)
			continue;
		add_mem(l, p->memory_address, p->length);
		/* OMPIO keeps the absolute file offset in a pointer field */
		add_seg(l, (uint64_t)(uintptr_t)p->offset, p->length);
		l->bytes += p->length;
	}
	if (l->nfile == 0)
		l->first = 0;
	return 0;
}

void fbtl_rpfs_list_free(struct fbtl_rpfs_list *l)
{
	free(l->mem);
	free(l->file);
	l->mem = NULL;
	l->file = NULL;
}
