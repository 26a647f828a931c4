/* Layouts: how a file's bytes are spread over I/O servers, by kind.
 *
 * A layout places a file on stripe_count consecutive I/O servers (slots),
 * starting at first_server (an index into the cluster's list of I/O
 * servers, wrapping modulo nservers); slot s holds one datafile. What a
 * slot holds and where a logical byte goes depend on the layout's kind:
 *
 *   RPFS_LAYOUT_STRIPE ("none")  stripe units dealt round-robin over the
 *                                slots (layout_stripe.c): every layout made
 *                                before kinds existed, and today's only one
 *   RPFS_LAYOUT_MIRROR ("mirror:N")
 *                                N copies of every data slot
 *                                (layout_mirror.c): copy c of data slot s
 *                                is slot c * stripe_count + s
 *   RPFS_LAYOUT_EC ("ec:K+P")    K data and P parity cells per stripe
 *                                (layout_ec.c): G = count / K groups of K
 *                                data slots, group g's parity slots after
 *                                every data slot; new files of it only
 *                                with ec_preview until its degraded
 *                                service exists (issue 29)
 *
 * Each kind's math lives in its own file (common/layout_<kind>.c) behind
 * the table of functions in layout_kind.h, as OrangeFS's distributions do;
 * layout.c picks the kind's functions. The functions below other than
 * layout_check take a layout that passed layout_check (every decoder and
 * the layout of a new file check it once). As in PVFS2 the logical size
 * is derived from the datafile sizes, so writes never touch the metadata
 * server. No other file does this arithmetic: elsewhere the stripe unit
 * and count are only reported (rpfs stat, MPI_File_get_info) or used as a
 * size hint (st_blksize, ROMIO's cb_fr_alignment, OMPIO's stripe size).
 *
 * Stored, a layout has its kind and parameters (server/meta_attr.h); on
 * the wire (rpc_enc_attr) the stripe fields, the kind and the copies
 * travel: a kind that gets its math must get its fields on the wire too. */
#ifndef RPFS_LAYOUT_H
#define RPFS_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Stored (server/meta_attr.c): never renumber. 0 is the stripe kind, so a
 * layout built field by field without a kind is today's striping. */
enum rpfs_layout_kind {
	RPFS_LAYOUT_STRIPE = 0, /* "none": striping, no redundancy */
	RPFS_LAYOUT_MIRROR = 1, /* "mirror:N": N copies of every data slot */
	RPFS_LAYOUT_EC = 2,	/* "ec:K+P": K data + P parity cells */
	RPFS_LAYOUT_KINDS	/* how many kinds have a name */
};

/* The most copies a mirror layout may have. */
#define RPFS_COPIES_MAX 8

struct rpfs_layout {
	uint64_t stripe_unit;  /* bytes, > 0 */
	uint32_t stripe_count; /* I/O servers the file uses, >= 1 */
	uint32_t first_server; /* index of slot 0 in the cluster's I/O servers */
	uint32_t nservers;     /* I/O servers in the cluster (slots wrap modulo this) */
	uint32_t kind;	       /* enum rpfs_layout_kind */
	/* Redundancy parameters, each 0 where the kind has no use for it
	 * (all of them for the stripe kind). */
	uint32_t copies;       /* mirror: N */
	uint32_t data_cells;   /* ec: K */
	uint32_t parity_cells; /* ec: P */
	uint64_t cell_size;    /* ec: bytes per cell (0: the stripe unit) */
};

/* A piece of a logical extent on one server. */
struct rpfs_piece {
	uint32_t slot;	      /* 0 .. layout_slots()-1 */
	uint64_t local_off;   /* offset in that server's datafile */
	uint64_t logical_off; /* offset in the file */
	uint64_t len;
};

/* 0 if the layout is usable; -EINVAL if it is malformed (a zero stripe
 * unit or count, more slots than servers, parameters its kind does not
 * take); -EOPNOTSUPP if its kind is unknown or not supported yet.
 * layout_problem says which in words. */
int layout_check(const struct rpfs_layout *l);
/* Why layout_check refuses l, in words (into buf, returned), or "" when it
 * does not. */
const char *layout_problem(const struct rpfs_layout *l, char *buf, size_t len);
/* The kind's name ("none", "mirror", "ec"), "unknown" past the table. */
const char *layout_kind_name(uint32_t kind);
/* Does this build have the math of kind (may a layout be of it)? */
bool layout_kind_supported(uint32_t kind);

/* Slots (datafiles, I/O servers) the layout uses: per-slot arrays
 * (sizes[] of layout_file_size) have this many entries. */
uint32_t layout_slots(const struct rpfs_layout *l);
/* Does slot hold file data (rather than redundancy only)? */
bool layout_slot_has_data(const struct rpfs_layout *l, uint32_t slot);
/* Cluster index of the I/O server holding slot. */
uint32_t layout_server(const struct rpfs_layout *l, uint32_t slot);

/* Copies of each data slot: N for mirror:N, 1 otherwise. */
uint32_t layout_copies(const struct rpfs_layout *l);
/* Is the file redundant (mirror:N or ec:K+P): does it have a view of
 * stale members (the metadata server's MIRROR_STALE marks)? */
static inline bool layout_redundant(const struct rpfs_layout *l)
{
	return l->kind == RPFS_LAYOUT_EC || layout_copies(l) > 1;
}
/* The slot holding copy (0 .. layout_copies()-1; 0 = the primary) of the
 * data in slot (any copy of it). */
uint32_t layout_copy_slot(const struct rpfs_layout *l, uint32_t slot, uint32_t copy);

/* ec layouts (layout_ec.c; any slot of a layout that passed the kind's
 * check): the group of slot, its index among the group's K + P members
 * (data 0..K-1, parity K..K+P-1), and the slot of member index of group.
 * Members of a group hold their cells at the same datafile offsets. */
uint32_t layout_ec_group(const struct rpfs_layout *l, uint32_t slot);
uint32_t layout_ec_index(const struct rpfs_layout *l, uint32_t slot);
uint32_t layout_ec_member(const struct rpfs_layout *l, uint32_t group, uint32_t index);

/* Map one logical offset (to a data slot: a mirror's primary). */
void layout_map(const struct rpfs_layout *l, uint64_t off, uint32_t *slot,
		uint64_t *local);
/* Inverse: logical offset of datafile offset local on slot (UINT64_MAX
 * when it does not fit 64 bits). */
uint64_t layout_logical(const struct rpfs_layout *l, uint32_t slot, uint64_t local);

/* Split [off, off + len) into pieces in logical order, each on one slot
 * and contiguous in its datafile; at most max pieces. Returns the number
 * of pieces written; if more were needed, *done < len tells how far they
 * go. */
size_t layout_split(const struct rpfs_layout *l, uint64_t off, uint64_t len,
		    struct rpfs_piece *out, size_t max, uint64_t *done);

/* Logical file size from the datafile size of each slot
 * (sizes[layout_slots()]). */
uint64_t layout_file_size(const struct rpfs_layout *l, const uint64_t *sizes);
/* Datafile size slot must have for a logical size of size (for truncate). */
uint64_t layout_local_size(const struct rpfs_layout *l, uint32_t slot, uint64_t size);

#endif
