/* Striping math: logical file offsets <-> (I/O server, datafile offset).
 *
 * A file's data is split into stripe units dealt round-robin over
 * stripe_count I/O servers, starting at first_server (an index into the
 * cluster's list of I/O servers). Stripe k (bytes [k*su, (k+1)*su)) lives on
 * server slot k % count at datafile offset (k / count) * su. As in PVFS2 the
 * logical size is derived from the datafile sizes, so writes never touch the
 * metadata server. This file is the only place that does this arithmetic. */
#ifndef RPFS_LAYOUT_H
#define RPFS_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

struct rpfs_layout {
	uint64_t stripe_unit;  /* bytes, > 0 */
	uint32_t stripe_count; /* I/O servers the file uses, >= 1 */
	uint32_t first_server; /* index of slot 0 in the cluster's I/O servers */
	uint32_t nservers;     /* I/O servers in the cluster (slots wrap modulo this) */
};

/* A piece of a logical extent on one server. */
struct rpfs_piece {
	uint32_t slot;	      /* 0 .. stripe_count-1 */
	uint64_t local_off;   /* offset in that server's datafile */
	uint64_t logical_off; /* offset in the file */
	uint64_t len;
};

/* 0 if the layout is usable, else -EINVAL. */
int layout_check(const struct rpfs_layout *l);
/* Cluster index of the I/O server holding slot. */
uint32_t layout_server(const struct rpfs_layout *l, uint32_t slot);
/* Map one logical offset. */
void layout_map(const struct rpfs_layout *l, uint64_t off, uint32_t *slot,
		uint64_t *local);
/* Inverse: logical offset of datafile offset local on slot. */
uint64_t layout_logical(const struct rpfs_layout *l, uint32_t slot, uint64_t local);

/* Split [off, off + len) into pieces in logical order, each inside one
 * stripe unit; at most max pieces. Returns the number of pieces written; if
 * more were needed, *done < len tells how far they go. */
size_t layout_split(const struct rpfs_layout *l, uint64_t off, uint64_t len,
		    struct rpfs_piece *out, size_t max, uint64_t *done);

/* Logical file size from the datafile size of each slot (sizes[stripe_count]). */
uint64_t layout_file_size(const struct rpfs_layout *l, const uint64_t *sizes);
/* Datafile size slot must have for a logical size of size (for truncate). */
uint64_t layout_local_size(const struct rpfs_layout *l, uint32_t slot, uint64_t size);

#endif
