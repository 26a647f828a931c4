/* ad_rpfs_hints.c: hints.
 *
 * Layout hints (MPI-IO reserved names) apply when the file is created:
 *   striping_factor  stripe count (I/O servers the file spans)
 *   striping_unit    stripe unit in bytes
 *   start_iodevice   I/O server holding stripe 0
 *   rpfs_redundancy  none, mirror:N (rpfs.h; ec:K+P is refused: not yet)
 * After open, MPI_File_get_info reports the file's actual layout under the
 * same names, and fd->hints->striping_unit holds its stripe unit, which
 * ROMIO's two-phase code uses to start each aggregator's file domain on a
 * stripe boundary (ADIOI_Calc_file_domains); with romio_cb_pfr enabled,
 * romio_cb_fr_alignment follows it too, for persistent file realms.
 * librpfs hints, read at the first open of the process (ad_rpfs_open.c):
 *   rpfs_config  the cluster config file (instead of RPFS_CONFIG)
 *   rpfs_<key>   every client setting of librpfs's table of settings
 *                (rpfs_opt_name; `rpfs settings` lists them), passed to
 *                rpfs_init_opts: rpfs_timeout_ms, rpfs_inline_max, ...
 * Everything else (cb_*, romio_*) goes to ROMIO's generic processing. */
#include "ad_rpfs.h"
#include "hint_fns.h"

/* Keep a librpfs hint of users_info in fd->info, where Init finds it and
 * MPI_File_get_info reports it. */
static void keep_hint(ADIO_File fd, MPI_Info users_info, const char *key)
{
	char value[MPI_MAX_INFO_VAL + 1];
	int flag;

	ADIOI_Info_get(users_info, key, MPI_MAX_INFO_VAL, value, &flag);
	if (flag)
		ADIOI_Info_set(fd->info, key, value);
}

void ADIOI_RPFS_SetInfo(ADIO_File fd, MPI_Info users_info, int *error_code)
{
	static char myname[] = "ADIOI_RPFS_SETINFO";
	const char *name;
	char key[64];

	*error_code = MPI_SUCCESS;
	if (!fd->hints->initialized) {
		if (fd->info == MPI_INFO_NULL)
			MPI_Info_create(&fd->info);
		fd->hints->striping_factor = 0; /* 0: the cluster default */
		fd->hints->start_iodevice = -1; /* -1: the server spreads files */
	}

	if (users_info != MPI_INFO_NULL) {
		/* these broadcast from rank 0 and fail if ranks disagree, so a
		 * layout is never known to only some ranks */
		ADIOI_Info_check_and_install_int(fd, users_info, "striping_factor",
						 &fd->hints->striping_factor, myname,
						 error_code);
		ADIOI_Info_check_and_install_int(fd, users_info, "start_iodevice",
						 &fd->hints->start_iodevice, myname,
						 error_code);
		if (*error_code != MPI_SUCCESS)
			return;
		keep_hint(fd, users_info, "rpfs_config");
		/* read at create (ad_rpfs_open.c); after open, the file's */
		if (fd->fs_ptr == NULL)
			keep_hint(fd, users_info, RPFS_MPI_REDUNDANCY_HINT);
		for (int i = 0; (name = rpfs_opt_name(i)) != NULL; i++) {
			snprintf(key, sizeof(key), "rpfs_%s", name);
			keep_hint(fd, users_info, key);
		}
	}

	/* cb_*, romio_*, striping_unit, ... */
	ADIOI_GEN_SetInfo(fd, users_info, error_code);
	if (*error_code != MPI_SUCCESS)
		return;

	/* an open file keeps its layout whatever a later hint says */
	if (fd->fs_ptr != NULL)
		ADIOI_RPFS_Report_layout(fd, &((ADIOI_RPFS_fs *)fd->fs_ptr)->st,
					 ((ADIOI_RPFS_fs *)fd->fs_ptr)->redundancy);
}

void ADIOI_RPFS_Create_opts(ADIO_File fd, struct rpfs_create_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->stripe_unit =
		fd->hints->striping_unit > 0 ? (uint64_t)fd->hints->striping_unit : 0;
	opts->stripe_count =
		fd->hints->striping_factor > 0 ? (uint32_t)fd->hints->striping_factor : 0;
	opts->first_server =
		fd->hints->start_iodevice >= 0 ? fd->hints->start_iodevice : -1;
}

void ADIOI_RPFS_Report_layout(ADIO_File fd, const struct rpfs_stat *st,
			      const char *redundancy)
{
	char value[32];

	fd->hints->striping_unit = (int)st->stripe_unit;
	fd->hints->striping_factor = (int)st->stripe_count;
	fd->hints->start_iodevice = (int)st->first_server;
	snprintf(value, sizeof(value), "%llu", (unsigned long long)st->stripe_unit);
	ADIOI_Info_set(fd->info, "striping_unit", value);
	snprintf(value, sizeof(value), "%u", st->stripe_count);
	ADIOI_Info_set(fd->info, "striping_factor", value);
	snprintf(value, sizeof(value), "%u", st->first_server);
	ADIOI_Info_set(fd->info, "start_iodevice", value);
	ADIOI_Info_set(fd->info, RPFS_MPI_REDUNDANCY_HINT,
		       redundancy[0] ? redundancy : "none");

	/* persistent file realms, when enabled, align like the file domains
	 * (unless the user chose an alignment); otherwise the hint is left at
	 * ROMIO's default, as it has no effect */
	if (fd->hints->cb_pfr == ADIOI_HINT_ENABLE && fd->hints->cb_fr_alignment <= 1 &&
	    st->stripe_unit > 0) {
		fd->hints->cb_fr_alignment = (int)st->stripe_unit;
		snprintf(value, sizeof(value), "%llu",
			 (unsigned long long)st->stripe_unit);
		ADIOI_Info_set(fd->info, "romio_cb_fr_alignment", value);
	}
}
