/* rpfsd: is the metadata store (LMDB, DIR/meta) whole before we map it?
 * And the storage directory's lock. ("store" is the metadata store here;
 * the datafile store is datafile.c.)
 *
 * LMDB maps its file and trusts it: a page it reads past the end of a
 * truncated data.mdb is a SIGBUS, a garbled page can be a SIGSEGV, both
 * deep inside a transaction of a running server. So before the metadata
 * role opens its store for real, store_validate opens it read-only and
 * without locks (the storage directory's lock keeps everyone else out),
 * checks what LMDB's meta pages claim against the file (magic and version
 * by LMDB itself, then the last page it would use against the file's
 * size: LMDB never reads a page beyond that one), and walks every record
 * of every database once. A fault during that walk is caught and becomes
 * an error message, not a dead server. The same check starts rpfsd
 * --check. */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

static sigjmp_buf walk_env;
static volatile sig_atomic_t walk_sig;

static void on_fault(int sig)
{
	walk_sig = sig;
	siglongjmp(walk_env, 1);
}

/* Every record of dbi; 0 or an LMDB error. */
static int walk_db(MDB_txn *txn, MDB_dbi dbi, uint64_t *records)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = mdb_cursor_open(txn, dbi, &cur);

	if (rc)
		return rc;
	while (!(rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)))
		(*records)++;
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* The databases meta.c makes, all in its first transaction: a store that
 * has any has them all. */
static const char *const store_dbs[] = {"ns", "byhandle", "sys"};

/* The main database names the others: walk it and each of them. A main
 * database that names none of rpfs's databases but holds records (garbage
 * that reads as a tree) is damage too: opening the store would try to
 * make them in it, and LMDB aborts writing into such pages. */
static int walk_all(MDB_env *env, uint64_t *records, char *what, size_t whatlen)
{
	MDB_txn *txn;
	MDB_dbi main_db, sub;
	MDB_cursor *cur;
	MDB_val k, v;
	uint64_t in_main = 0;
	int rc;

	snprintf(what, whatlen, "the main database");
	rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
	if (rc)
		return rc;
	rc = mdb_dbi_open(txn, NULL, 0, &main_db);
	if (!rc)
		rc = mdb_cursor_open(txn, main_db, &cur);
	if (rc) {
		mdb_txn_abort(txn);
		return rc;
	}
	while (!(rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))) {
		char name[64];

		(*records)++;
		in_main++;
		if (k.mv_size == 0 || k.mv_size >= sizeof(name) ||
		    memchr(k.mv_data, 0, k.mv_size))
			continue;
		memcpy(name, k.mv_data, k.mv_size);
		name[k.mv_size] = 0;
		snprintf(what, whatlen, "database \"%s\"", name);
		if (mdb_dbi_open(txn, name, 0, &sub))
			continue; /* a plain record of the main database */
		rc = walk_db(txn, sub, records);
		if (rc)
			break;
	}
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND)
		rc = 0;
	for (size_t i = 0; !rc && in_main && i < sizeof(store_dbs) / sizeof(*store_dbs);
	     i++)
		if (mdb_dbi_open(txn, store_dbs[i], 0, &sub)) {
			snprintf(what, whatlen, "the main database: no database \"%s\"",
				 store_dbs[i]);
			rc = MDB_CORRUPTED;
		}
	mdb_txn_abort(txn);
	return rc;
}

int store_validate(const char *metadir, char *why, size_t whylen)
{
	struct sigaction fault = {0}, old_bus, old_segv;
	char path[1200], what[96] = "";
	MDB_envinfo info;
	MDB_stat st;
	MDB_env *env = NULL;
	struct stat fst;
	uint64_t need, records = 0;
	int rc;

	snprintf(path, sizeof(path), "%s/data.mdb", metadir);
	if (stat(path, &fst)) {
		if (errno == ENOENT)
			return 0; /* a new store */
		snprintf(why, whylen, "can't read the metadata store %s: %s", path,
			 strerror(errno));
		return -errno;
	}
	if (fst.st_size == 0) {
		snprintf(
			why, whylen,
			"the metadata store %s is empty (0 bytes): truncated? Restore it from a backup (or remove it to start an empty store)",
			path);
		return -EBADMSG;
	}
	rc = mdb_env_create(&env);
	if (!rc)
		rc = mdb_env_set_maxdbs(env, 8);
	if (!rc)
		rc = mdb_env_open(env, metadir, MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS,
				  0600);
	if (rc) {
		snprintf(
			why, whylen,
			"the metadata store %s is damaged (%s): restore it from a backup",
			path, mdb_strerror(rc));
		goto fail;
	}
	mdb_env_info(env, &info);
	mdb_env_stat(env, &st);
	need = ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
	if ((uint64_t)fst.st_size < need) {
		snprintf(
			why, whylen,
			"the metadata store %s is truncated: %lld bytes, but its last page ends at %llu: restore it from a backup",
			path, (long long)fst.st_size, (unsigned long long)need);
		rc = MDB_CORRUPTED;
		goto fail;
	}
	/* Garbage inside a page can still fault: catch it. */
	fault.sa_handler = on_fault;
	sigemptyset(&fault.sa_mask);
	sigaction(SIGBUS, &fault, &old_bus);
	sigaction(SIGSEGV, &fault, &old_segv);
	walk_sig = 0;
	if (sigsetjmp(walk_env, 1) == 0)
		rc = walk_all(env, &records, what, sizeof(what));
	sigaction(SIGBUS, &old_bus, NULL);
	sigaction(SIGSEGV, &old_segv, NULL);
	if (walk_sig) {
		snprintf(
			why, whylen,
			"the metadata store %s is damaged (%s reading %s): restore it from a backup",
			path, strsignal(walk_sig), what);
		/* The environment is in an unknown state: leave it be. */
		return -EBADMSG;
	}
	if (rc) {
		snprintf(
			why, whylen,
			"the metadata store %s is damaged (%s in %s): restore it from a backup",
			path, mdb_strerror(rc), what);
		goto fail;
	}
	mdb_env_close(env);
	return 0;
fail:
	if (env)
		mdb_env_close(env);
	return rc > 0 ? -rc : -EBADMSG;
}

int store_lock(const char *dir, char *why, size_t whylen)
{
	char path[1100];
	int fd;

	snprintf(path, sizeof(path), "%s/rpfsd.lock", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(why, whylen, "couldn't open %s: %s", path, strerror(errno));
		return -errno;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int err = errno;

		close(fd);
		if (err == EWOULDBLOCK) {
			snprintf(
				why, whylen,
				"%s is in use by another rpfsd (a running server or rpfsd --check)",
				dir);
			return -EBUSY;
		}
		snprintf(why, whylen, "couldn't lock %s: %s", path, strerror(err));
		return -err;
	}
	/* Kept open (and locked) until the process ends. */
	return 0;
}
