/* fs_rpfs_layout.c: layout hints in, the real layout out.
 *
 * The MPI-IO reserved hints apply when a file is created:
 *   striping_factor  stripe count (I/O servers the file spans)
 *   striping_unit    stripe unit in bytes
 *   start_iodevice   I/O server holding stripe 0
 *   rpfs_redundancy  none, mirror:N (rpfs.h; ec:K+P is refused: not yet)
 * Rank 0 alone creates the file, with its hints, and every rank opens from
 * the attributes it broadcasts, so the layout is never known to only some
 * ranks. After open, MPI_File_get_info reports the layout the file really
 * has under the same names (not what was asked), on every rank, also when
 * the file is reopened without hints.
 *
 * The layout also goes where OMPIO's collective I/O reads it: the stripe
 * size and count, and the file system type that makes OMPIO pick its
 * stripe-aligned collective algorithm (see MCA_FS_RPFS_FSTYPE). */
#include "fs_rpfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* A hint that is an integer >= min, or -1 (absent or malformed: ignored,
 * as ROMIO ignores layout hints it cannot use). */
static long long int_hint(opal_info_t *info, const char *key, long long min)
{
	char value[OPAL_MAX_INFO_VAL + 1], *end;
	long long v;
	int flag = 0;

	if (info == NULL)
		return -1;
	opal_info_get(info, key, OPAL_MAX_INFO_VAL, value, &flag);
	if (!flag)
		return -1;
	errno = 0;
	v = strtoll(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || v < min)
		return -1;
	return v;
}

void mca_fs_rpfs_create_opts(opal_info_t *info, struct rpfs_create_opts *opts)
{
	long long unit = int_hint(info, "striping_unit", 1);
	long long factor = int_hint(info, "striping_factor", 1);
	long long start = int_hint(info, "start_iodevice", 0);

	/* zero fields take the cluster defaults; -1 lets the server spread */
	opts->stripe_unit = unit > 0 ? (uint64_t)unit : 0;
	opts->stripe_count = factor > 0 && factor <= UINT32_MAX ? (uint32_t)factor : 0;
	opts->first_server = start >= 0 && start <= INT32_MAX ? (int32_t)start : -1;
}

static void set_hint(opal_info_t *info, const char *key, unsigned long long v)
{
	char value[32];

	snprintf(value, sizeof(value), "%llu", v);
	opal_info_set(info, key, value);
}

/* rpfs_mpi_hint_fn over an opal_info_t. */
static int opal_hint(void *info, const char *key, int valuelen, char *value)
{
	int flag = 0;

	return opal_info_get(info, key, valuelen, value, &flag) == OPAL_SUCCESS && flag;
}

int mca_fs_rpfs_redundancy(opal_info_t *info, char *out, size_t len)
{
	struct rpfs_mpi_hints hints = {opal_hint, info, OPAL_MAX_INFO_VAL};

	return rpfs_mpi_redundancy_hint(info != NULL ? &hints : NULL, out, len);
}

void mca_fs_rpfs_report_layout(ompio_file_t *fh, const struct rpfs_stat *st,
			       const char *redundancy)
{
	if (fh->f_info != NULL) {
		set_hint(fh->f_info, "striping_factor", st->stripe_count);
		set_hint(fh->f_info, "striping_unit", st->stripe_unit);
		set_hint(fh->f_info, "start_iodevice", st->first_server);
		opal_info_set(fh->f_info, RPFS_MPI_REDUNDANCY_HINT,
			      redundancy[0] ? redundancy : "none");
	}
	fh->f_fstype = (enum ompio_fs_type)MCA_FS_RPFS_FSTYPE;
	fh->f_stripe_size = st->stripe_unit;
	fh->f_stripe_count = (int)st->stripe_count;
	fh->f_fs_block_size = (int)st->stripe_unit;
}
