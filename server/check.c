/* rpfsd --check [--copies] [--repair [--accept-damaged]]: fsck of a stopped server's
 * storage directory (config and --name as for starting it).
 *
 * Role meta: the store must open (store.c's checks), and its two indexes
 * must agree: every entry of "ns" decodes, lives under the key its path
 * makes, has a handle of this server below the handle counter and a
 * "byhandle" record naming its path; every "byhandle" record names an
 * entry with that handle. Role io: every datafile has its checksum file
 * and every block of it matches its checksum; no checksum file is without
 * its datafile; a write cut short by a crash has left a block matching its
 * new or its old version (a note: a kill mid-write leaves it, rpfsd reads
 * either right, --repair drops the other). Both roles on one server: every file of the
 * store that has a stripe here has its datafile, holding that stripe slot
 * (its checksum file says which), and every datafile of a handle of this
 * store belongs to a file (or to a handle the store never handed out: then
 * the store is behind, and nothing is removed). Every other datafile's
 * handle is asked of the metadata server it names, running
 * (check_orphans.c): one that belongs to no file and to no create in
 * progress is an orphan; one whose owner can't tell is a note ("unknown,
 * not an orphan"), never removed. Notes say what the check could not
 * know, or what a crash left that loses nothing; they are not problems and
 * leave the exit status alone.
 *
 * One line per problem on stdout: the file or entry, the offset where it
 * matters, what is wrong, and what --repair did about it. --repair fixes
 * what loses nothing: orphans (checksums without data, datafiles of
 * removed files), index records, the handle counter (and tidies the
 * checksums of cut-short writes); a
 * block whose data does not match its checksum is left alone (the data
 * may be all that remains of it) unless --accept-damaged says to take the
 * data as it is and checksum it anew.
 *
 * Every record of the store must pass its checksum (meta_record.h); one
 * that fails is reported by the path (or handle) it holds and left alone.
 * A store of the old format (no checksums) is reported, and --repair
 * upgrades it as a start of rpfsd would. Inside a record, an ns value is
 * meta.c's: magic u32 (0x31415052), the encoded attributes (rpc.h), the
 * full path; its keys are the FNV-1a hash of the parent path (8 bytes,
 * big-endian) and the name. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "check_priv.h"
#include "store.h"

void chk_problem(struct chk *c, bool fixed, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("%s\n", fixed ? " [repaired]" : "");
	c->problems++;
	c->repaired += fixed;
}

void chk_note(struct chk *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	c->notes++;
}

int check_storage(struct srv *s, unsigned flags)
{
	struct chk c = {.s = s, .flags = flags};
	char why[512];
	struct stat st;

	if (stat(s->me->dir, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "rpfsd --check: no storage directory %s\n", s->me->dir);
		return 2;
	}
	if (store_lock(s->me->dir, why, sizeof(why))) {
		fprintf(stderr, "rpfsd --check: %s\n", why);
		return 2;
	}
	snprintf(c.datadir, sizeof(c.datadir), "%s/data", s->me->dir);
	snprintf(c.metadir, sizeof(c.metadir), "%s/meta", s->me->dir);
	if (s->me->roles & RPFS_ROLE_META)
		check_meta(&c);
	if (s->me->roles & RPFS_ROLE_IO)
		check_io(&c);
	if (c.env)
		mdb_env_close(c.env);
	free(c.handles);
	if (c.problems)
		printf("rpfsd --check %s: %d problem%s, %d repaired", s->me->name,
		       c.problems, c.problems == 1 ? "" : "s", c.repaired);
	else
		printf("rpfsd --check %s: clean", s->me->name);
	if (c.notes)
		printf(" (%d note%s above: what it could not know)", c.notes,
		       c.notes == 1 ? "" : "s");
	printf("\n");
	return c.problems ? 1 : 0;
}
