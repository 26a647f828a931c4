/* Permissions and capabilities, end to end: rpfsd servers on loopback, a
 * root client that sets files up, and clients of another user (nobody)
 * that try what they must not (server/access.c has the model).
 *
 * Another user's client runs in a child process that drops to uid and gid
 * 65534 and then makes its client from a copy of the config naming its own
 * copy of the key (mode 0600, owned by nobody), as a user given the key
 * would. Dropping after rpfs_init would not do on verbs: the kernel
 * refuses a uverbs device to a process whose credentials changed after it
 * opened it (EACCES). Root's setup and checks run in children too: the
 * test process itself never opens the fabric (verbs: a child cannot use the
 * device its parent opened, and librdmacm keeps it open for the life of
 * the process). Needs root; skipped otherwise (said so). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <check.h>
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster.h"
#include "hash.h"
#include "rpfs.h"

#define NOBODY 65534u
#define NSRV   4

static struct cluster *start(int nmeta)
{
	struct cl_opts o = {.nservers = NSRV, .nmeta = nmeta, .stripe_unit = 4096};
	struct cluster *cl = cl_start(&o);

	ck_assert_msg(cl, "couldn't start %d servers (see stderr)", NSRV);
	return cl;
}

/* ---- a child as another user ---------------------------------------------- */

static int fails;

#define EXPECT(cond, ...)                                                                \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fails++;                                                         \
			fprintf(stderr, "FAIL line %d: %s: ", __LINE__, #cond);          \
			fprintf(stderr, __VA_ARGS__);                                    \
			fprintf(stderr, " (last error: %s)\n", rpfs_errmsg());           \
		}                                                                        \
	} while (0)

/* Copy src to dst (mode, owner nobody), replacing the line that starts
 * with "key_file" by key_line when key_line is not NULL. */
static void copy_for_nobody(const char *src, const char *dst, mode_t mode,
			    const char *key_line)
{
	FILE *in = fopen(src, "r"), *out = fopen(dst, "w");
	char line[4200];
	size_t n;

	ck_assert_msg(in && out, "copy %s to %s", src, dst);
	if (key_line) {
		while (fgets(line, sizeof(line), in))
			fputs(strncmp(line, "key_file", 8) ? line : key_line, out);
	} else {
		while ((n = fread(line, 1, sizeof(line), in)) > 0)
			ck_assert(fwrite(line, 1, n, out) == n);
	}
	fclose(in);
	ck_assert(fclose(out) == 0);
	ck_assert(chmod(dst, mode) == 0 && chown(dst, NOBODY, NOBODY) == 0);
}

static void put_file(rpfs_client_t *c, const char *path, uint32_t mode, int p, size_t len)
{
	char buf[8192];
	rpfs_file_t *f;
	int ret;

	memset(buf, p, len < sizeof(buf) ? len : sizeof(buf));
	ret = rpfs_create(c, path, mode, RPFS_O_EXCL, NULL, &f);
	EXPECT(ret == 0, "create %s: %d", path, ret);
	if (ret)
		return;
	EXPECT(rpfs_pwrite(f, buf, len, 0) == (ssize_t)len, "write %s", path);
	rpfs_close(f);
}

/* Run fn in a child with a client of its own, as root (nobody false) or as
 * uid/gid NOBODY; the test fails if fn found failures (they are printed)
 * or the child died. */
static void run_as(struct cluster *cl, bool nobody, int (*fn)(rpfs_client_t *c))
{
	char dir[] = "/tmp/rpfs-nobody-XXXXXX", key[64], conf[64], key_line[128];
	char cluster_key[4200];
	pid_t pid;
	int status;

	ck_assert(mkdtemp(dir));
	ck_assert(chmod(dir, 0755) == 0 && chown(dir, NOBODY, NOBODY) == 0);
	snprintf(key, sizeof(key), "%s/key", dir);
	snprintf(conf, sizeof(conf), "%s/rpfs.conf", dir);
	snprintf(key_line, sizeof(key_line), "key_file = %s\n", key);
	snprintf(cluster_key, sizeof(cluster_key), "%s", cl_config(cl));
	/* rpfs.conf -> cluster.key beside it (cluster.c writes both) */
	snprintf(strrchr(cluster_key, '/') + 1,
		 sizeof(cluster_key) -
			 (size_t)(strrchr(cluster_key, '/') + 1 - cluster_key),
		 "cluster.key");
	copy_for_nobody(cluster_key, key, 0600, NULL);
	copy_for_nobody(cl_config(cl), conf, 0644, key_line);

	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		rpfs_client_t *c = NULL;

		if (nobody && (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))) {
			perror("dropping to nobody");
			_exit(101);
		}
		if (rpfs_init(nobody ? conf : cl_config(cl), &c)) {
			fprintf(stderr, "rpfs_init: %s\n", rpfs_errmsg());
			_exit(100);
		}
		fails = fn(c);
		rpfs_finalize(c);
		_exit(fails > 99 ? 99 : fails);
	}
	ck_assert(waitpid(pid, &status, 0) == pid);
	unlink(key);
	unlink(conf);
	rmdir(dir);
	ck_assert_msg(WIFEXITED(status), "the child as %s died (signal %d)",
		      nobody ? "nobody" : "root",
		      WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	ck_assert_msg(WEXITSTATUS(status) == 0,
		      "as %s: %d checks failed (printed above), or setup failed",
		      nobody ? "nobody" : "root", WEXITSTATUS(status));
}

static bool errmsg_has(const char *what)
{
	return strstr(rpfs_errmsg(), what) != NULL;
}

static int count_entry(const char *name, uint32_t type, void *arg)
{
	(void)name;
	(void)type;
	++*(int *)arg;
	return 0;
}

/* ---- the modes ------------------------------------------------------------ */

static int nobody_tries_everything(rpfs_client_t *c)
{
	char buf[4096];
	int n = 0;
	rpfs_file_t *f = NULL;
	struct rpfs_stat st;
	int ret;

	/* 0600 root's: neither read nor write; 0644: read only. */
	ret = rpfs_open(c, "/pub/secret", RPFS_O_READ, &f);
	EXPECT(ret == -EACCES, "open 0600 root's file for reading: %d", ret);
	EXPECT(errmsg_has("meta server"), "the message names no server");
	ret = rpfs_open(c, "/pub/secret", RPFS_O_WRITE, &f);
	EXPECT(ret == -EACCES, "open 0600 root's file for writing: %d", ret);
	ret = rpfs_create(c, "/pub/secret", 0666, RPFS_O_RDWR, NULL, &f);
	EXPECT(ret == -EACCES, "create (open) of root's 0600 file: %d", ret);
	ret = rpfs_open(c, "/pub/open", RPFS_O_WRITE, &f);
	EXPECT(ret == -EACCES, "open 0644 root's file for writing: %d", ret);
	ret = rpfs_open(c, "/pub/open", RPFS_O_READ, &f);
	EXPECT(ret == 0, "open 0644 root's file for reading: %d", ret);
	if (!ret) {
		ret = (int)rpfs_pread(f, buf, 100, 0);
		EXPECT(ret == 100 && buf[0] == 'o' && buf[99] == 'o', "read it: %d", ret);
		/* The capability says read: the I/O servers refuse a write. */
		ret = (int)rpfs_pwrite(f, buf, 100, 0);
		EXPECT(ret == -EACCES, "write through a read-only open: %d", ret);
		EXPECT(errmsg_has("io server"), "the message names no I/O server");
		ret = rpfs_truncate(f, 0);
		EXPECT(ret == -EACCES, "truncate through a read-only open: %d", ret);
		rpfs_close(f);
	}

	/* Directories: /pub is root's 0755, /priv root's 0700. */
	ret = rpfs_remove(c, "/pub/secret");
	EXPECT(ret == -EACCES, "remove from root's 0755 directory: %d", ret);
	ret = rpfs_remove(c, "/pub/open");
	EXPECT(ret == -EACCES, "remove from root's 0755 directory: %d", ret);
	ret = rpfs_create(c, "/pub/mine", 0644, 0, NULL, &f);
	EXPECT(ret == -EACCES, "create in root's 0755 directory: %d", ret);
	ret = rpfs_mkdir(c, "/pub/d", 0755);
	EXPECT(ret == -EACCES, "mkdir in root's 0755 directory: %d", ret);
	ret = rpfs_rmdir(c, "/pub/empty");
	EXPECT(ret == -EACCES, "rmdir in root's 0755 directory: %d", ret);
	ret = rpfs_readdir(c, "/priv", count_entry, &n);
	EXPECT(ret == -EACCES, "list root's 0700 directory: %d", ret);
	ret = rpfs_chmod(c, "/pub/open", 0666);
	EXPECT(ret == -EPERM, "chmod of root's file: %d", ret);

	/* "/" is 01777 like /tmp: anyone creates, only owners remove. */
	ret = rpfs_create(c, "/mine", 0600, RPFS_O_EXCL, NULL, &f);
	EXPECT(ret == 0, "create in /: %d", ret);
	if (!ret) {
		rpfs_file_attr(f, &st);
		EXPECT(st.uid == NOBODY && st.gid == NOBODY, "owner %u:%u", st.uid,
		       st.gid);
		memset(buf, 'm', sizeof(buf));
		ret = (int)rpfs_pwrite(f, buf, sizeof(buf), 0);
		EXPECT(ret == (int)sizeof(buf), "write own file: %d", ret);
		rpfs_close(f);
	}
	ret = rpfs_remove(c, "/rootfile");
	EXPECT(ret == -EPERM, "remove root's file from sticky /: %d", ret);
	ret = rpfs_chmod(c, "/mine", 0644);
	EXPECT(ret == 0, "chmod of own file: %d", ret);
	/* rename: write and search on both parents, the sticky bit of "/". */
	ret = rpfs_rename(c, "/pub/open", "/pub/renamed");
	EXPECT(ret == -EACCES, "rename in root's 0755 directory: %d", ret);
	ret = rpfs_rename(c, "/mine", "/pub/mine");
	EXPECT(ret == -EACCES, "rename into root's 0755 directory: %d", ret);
	ret = rpfs_rename(c, "/pub/open", "/taken");
	EXPECT(ret == -EACCES, "rename out of root's 0755 directory: %d", ret);
	ret = rpfs_rename(c, "/rootfile", "/stolen");
	EXPECT(ret == -EPERM, "rename root's file in sticky /: %d", ret);
	ret = rpfs_rename(c, "/mine", "/rootfile");
	EXPECT(ret == -EPERM, "replace root's file in sticky /: %d", ret);
	ret = rpfs_rename(c, "/mine", "/mine2");
	EXPECT(ret == 0, "rename own file in /: %d", ret);
	ret = rpfs_rename(c, "/mine2", "/mine");
	EXPECT(ret == 0, "and back: %d", ret);
	ret = rpfs_chown(c, "/mine", 0, NOBODY);
	EXPECT(ret == -EPERM, "give own file to root: %d", ret);
	ret = rpfs_chown(c, "/mine", NOBODY, 0);
	EXPECT(ret == -EPERM, "own file to a group not ours: %d", ret);
	ret = rpfs_chown(c, "/mine", NOBODY, NOBODY);
	EXPECT(ret == 0, "own file to our own group: %d", ret);
	ret = rpfs_chown(c, "/pub/open", NOBODY, NOBODY);
	EXPECT(ret == -EPERM, "take root's file: %d", ret);

	/* Guessed handles: the attributes are public (stat), the data is
	 * not. A stat grants no rights; a capability with its rights raised,
	 * none at all, or another file's all get nothing. */
	ret = rpfs_stat(c, "/pub/secret", &st);
	EXPECT(ret == 0 && st.size == 4096, "stat root's 0600 file: %d", ret);
	if (!ret) {
		struct rpfs_stat forged = st;
		rpfs_file_t *mine;

		ret = rpfs_open_attr(c, &forged, &f);
		EXPECT(ret == 0, "open from attributes: %d", ret);
		if (!ret) {
			ret = (int)rpfs_pread(f, buf, 100, 0);
			EXPECT(ret == -EACCES, "read with a stat's capability: %d", ret);
			rpfs_close(f);
		}
		forged.cap[8] |= 3; /* rights: read and write */
		if (!rpfs_open_attr(c, &forged, &f)) {
			ret = (int)rpfs_pread(f, buf, 100, 0);
			EXPECT(ret == -EACCES, "read with raised rights: %d", ret);
			rpfs_close(f);
		}
		memset(forged.cap, 0, sizeof(forged.cap));
		if (!rpfs_open_attr(c, &forged, &f)) {
			ret = (int)rpfs_pwrite(f, buf, 100, 0);
			EXPECT(ret == -EACCES, "write with no capability: %d", ret);
			rpfs_close(f);
		}
		if (!rpfs_open(c, "/mine", RPFS_O_RDWR, &mine)) {
			struct rpfs_stat ms;

			rpfs_file_attr(mine, &ms);
			memcpy(forged.cap, ms.cap, sizeof(forged.cap));
			if (!rpfs_open_attr(c, &forged, &f)) {
				ret = (int)rpfs_pread(f, buf, 100, 0);
				EXPECT(ret == -EACCES,
				       "read with another file's capability: %d", ret);
				ret = rpfs_truncate(f, 0);
				EXPECT(ret == -EACCES,
				       "truncate with another file's capability: %d",
				       ret);
				rpfs_close(f);
			}
			rpfs_close(mine);
		}
	}
	return fails;
}

static int root_sets_up(rpfs_client_t *c)
{
	struct rpfs_stat st;

	EXPECT(rpfs_mkdir(c, "/pub", 0755) == 0, "mkdir /pub");
	EXPECT(rpfs_mkdir(c, "/pub/empty", 0755) == 0, "mkdir /pub/empty");
	EXPECT(rpfs_mkdir(c, "/priv", 0700) == 0, "mkdir /priv");
	put_file(c, "/pub/secret", 0600, 's', 4096);
	put_file(c, "/pub/open", 0644, 'o', 4096);
	put_file(c, "/priv/f", 0644, 'p', 10);
	put_file(c, "/rootfile", 0644, 'r', 10);
	EXPECT(rpfs_stat(c, "/", &st) == 0 && st.mode == 01777, "/ is 01777: %o",
	       st.mode);
	return fails;
}

/* Everything root had is still there, unchanged; root may do what nobody
 * may not. */
static int root_checks(rpfs_client_t *c)
{
	struct rpfs_stat st;
	rpfs_file_t *f;
	char buf[4096];

	EXPECT(rpfs_open(c, "/pub/secret", RPFS_O_READ, &f) == 0, "open /pub/secret");
	if (!fails) {
		EXPECT(rpfs_pread(f, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf),
		       "read");
		EXPECT(buf[0] == 's' && buf[4095] == 's', "the data changed");
		rpfs_close(f);
	}
	EXPECT(rpfs_stat(c, "/pub/open", &st) == 0 && st.mode == 0644, "/pub/open");
	EXPECT(rpfs_stat(c, "/rootfile", &st) == 0, "/rootfile");
	EXPECT(rpfs_stat(c, "/mine", &st) == 0 && st.uid == NOBODY && st.mode == 0644,
	       "/mine: uid %u mode %o", st.uid, st.mode);
	EXPECT(rpfs_remove(c, "/mine") == 0, "root removes nobody's file");
	EXPECT(rpfs_chmod(c, "/pub/open", 0600) == 0, "root chmods");
	return fails;
}

START_TEST(test_another_user_gets_only_what_the_modes_allow)
{
	struct cluster *cl;

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: permission tests need root (to become nobody)\n");
		return;
	}
	/* Two metadata servers: parents and children often live apart. */
	cl = start(2);
	run_as(cl, false, root_sets_up);
	run_as(cl, true, nobody_tries_everything);
	run_as(cl, false, root_checks);
	cl_destroy(cl);
}
END_TEST

/* ---- capabilities over time ------------------------------------------------ */

static int nobody_renews(rpfs_client_t *c)
{
	char buf[4096];
	rpfs_file_t *f, *g;
	int ret;

	memset(buf, 'n', sizeof(buf));
	ret = rpfs_create(c, "/n", 0600, RPFS_O_EXCL | RPFS_O_RDWR, NULL, &f);
	EXPECT(ret == 0, "create /n: %d", ret);
	if (ret)
		return fails;
	ret = rpfs_create(c, "/keep", 0600, RPFS_O_EXCL | RPFS_O_RDWR, NULL, &g);
	EXPECT(ret == 0, "create /keep: %d", ret);
	if (ret)
		return fails;
	EXPECT(rpfs_pwrite(f, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf), "write");
	/* Past the capability's expiry (2 s): renewed, so it still works. */
	sleep(3);
	ret = (int)rpfs_pwrite(g, buf, sizeof(buf), 4096);
	EXPECT(ret == (int)sizeof(buf), "write after the first expiry: %d", ret);
	ret = (int)rpfs_pread(g, buf, sizeof(buf), 0);
	EXPECT(ret == (int)sizeof(buf), "read after the first expiry: %d", ret);
	/* A chmod reaches an open file when it renews (half the lifetime). */
	EXPECT(rpfs_pwrite(f, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf), "write");
	ret = rpfs_chmod(c, "/n", 0400);
	EXPECT(ret == 0, "chmod 0400 own file: %d", ret);
	sleep(2);
	ret = (int)rpfs_pwrite(f, buf, sizeof(buf), 0);
	EXPECT(ret == -EACCES, "write after chmod 0400 and a renewal: %d", ret);
	rpfs_close(f);
	rpfs_close(g);
	return fails;
}

START_TEST(test_capabilities_renew_and_see_a_chmod)
{
	struct cluster *cl;

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: permission tests need root (to become nobody)\n");
		return;
	}
	setenv("RPFS_CAP_LIFETIME_S", "2", 1);
	cl = start(1);
	unsetenv("RPFS_CAP_LIFETIME_S");
	run_as(cl, true, nobody_renews);
	cl_destroy(cl);
}
END_TEST

/* ---- search permission on every ancestor ------------------------------------ */

/* Loop tests run with one metadata server (_i 0) and three (_i 1): with
 * three, a path and its ancestors live on different servers, which ask
 * each other (server/search.c). */
static int nmeta_of(int i)
{
	return i ? 3 : 1;
}

/* The metadata server of path, as place_meta_of_path (common/placement.c)
 * computes it: tests pick names that put a path apart from its ancestors,
 * or two paths of a rename on the same server (a rename between servers is
 * -EXDEV, not what is tested). */
static uint32_t meta_of(const char *path, int nmeta)
{
	return (uint32_t)(rpfs_fnv1a64(path, strlen(path)) % (uint64_t)nmeta);
}

/* out = base with the first number suffix for which ok(out) holds. */
static void pick(char *out, size_t len, const char *base, bool (*ok)(const char *, int),
		 int nmeta)
{
	for (int i = 0; i < 1000; i++) {
		if (snprintf(out, len, "%s%d", base, i) >= (int)len)
			break;
		if (ok(out, nmeta))
			return;
	}
	ck_abort_msg("no name %sN fits", base);
}

/* The paths a test's children use (set before they fork). */
static struct {
	int nmeta;
	char top[64];		 /* root's, 0700 */
	char deep[128];		 /* top/b/c/d: 0755 directories */
	char file[160];		 /* deep/f, 0644, "f" x 100 */
	char from[160], to[160]; /* a rename's two ends */
} t;

static bool top_apart(const char *top, int nmeta)
{
	char file[160];

	/* With several servers, the closed directory is not where the file
	 * is: the refusal has to come from another server. */
	snprintf(file, sizeof(file), "%s/b/c/d/f", top);
	return nmeta == 1 || meta_of(top, nmeta) != meta_of(file, nmeta);
}

static void name_tree(int nmeta)
{
	memset(&t, 0, sizeof(t));
	t.nmeta = nmeta;
	pick(t.top, sizeof(t.top), "/a", top_apart, nmeta);
	snprintf(t.deep, sizeof(t.deep), "%s/b/c/d", t.top);
	snprintf(t.file, sizeof(t.file), "%s/f", t.deep);
}

/* top 0700, its subtree open (0755 directories, a 0644 file): only top's
 * mode keeps others out. */
static int root_makes_tree(rpfs_client_t *c)
{
	char p[128];

	EXPECT(rpfs_mkdir(c, t.top, 0700) == 0, "mkdir %s", t.top);
	snprintf(p, sizeof(p), "%s/b", t.top);
	EXPECT(rpfs_mkdir(c, p, 0755) == 0, "mkdir %s", p);
	snprintf(p, sizeof(p), "%s/b/c", t.top);
	EXPECT(rpfs_mkdir(c, p, 0755) == 0, "mkdir %s", p);
	EXPECT(rpfs_mkdir(c, t.deep, 0755) == 0, "mkdir %s", t.deep);
	put_file(c, t.file, 0644, 'f', 100);
	return fails;
}

/* Can c open and read t.file (expect: 0, or the errno refused)? */
static void reads_file(rpfs_client_t *c, const char *path, int expect)
{
	struct rpfs_stat st;
	rpfs_file_t *f;
	char buf[100];
	int ret;

	ret = rpfs_stat(c, path, &st);
	EXPECT(ret == expect, "stat %s: %d, expected %d", path, ret, expect);
	ret = rpfs_open(c, path, RPFS_O_READ, &f);
	EXPECT(ret == expect, "open %s for reading: %d, expected %d", path, ret, expect);
	if (ret)
		return;
	ret = (int)rpfs_pread(f, buf, sizeof(buf), 0);
	EXPECT(ret == (int)sizeof(buf) && buf[0] == 'f' && buf[99] == 'f', "read %s: %d",
	       path, ret);
	rpfs_close(f);
}

static int nobody_is_kept_out(rpfs_client_t *c)
{
	struct rpfs_stat st;
	rpfs_file_t *f;
	char p[160];
	int n = 0, ret;

	reads_file(c, t.file, -EACCES);
	EXPECT(errmsg_has(t.file), "the message names no path");
	ret = rpfs_create(c, t.file, 0644, RPFS_O_READ, NULL, &f);
	EXPECT(ret == -EACCES, "create (open) of %s: %d", t.file, ret);
	/* A name that does not exist is refused too: a mode hides names. */
	snprintf(p, sizeof(p), "%s/none", t.deep);
	ret = rpfs_stat(c, p, &st);
	EXPECT(ret == -EACCES, "stat of a missing %s: %d", p, ret);
	snprintf(p, sizeof(p), "%s/b", t.top);
	ret = rpfs_stat(c, p, &st);
	EXPECT(ret == -EACCES, "stat %s: %d", p, ret);
	ret = rpfs_readdir(c, t.deep, count_entry, &n);
	EXPECT(ret == -EACCES, "list %s: %d", t.deep, ret);
	/* The closed directory itself is in "/", which anyone searches. */
	ret = rpfs_stat(c, t.top, &st);
	EXPECT(ret == 0 && st.mode == 0700, "stat %s: %d", t.top, ret);
	return fails;
}

START_TEST(test_a_0700_directory_hides_what_is_below_it)
{
	struct cluster *cl;

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: permission tests need root (to become nobody)\n");
		return;
	}
	name_tree(nmeta_of(_i));
	cl = start(t.nmeta);
	run_as(cl, false, root_makes_tree);
	run_as(cl, true, nobody_is_kept_out);
	cl_destroy(cl);
}
END_TEST

/* Below the closed top: e (0777) holds nobody's file and directory, so
 * only top's mode stands between nobody and changing them. */
static int root_gives_nobody_a_corner(rpfs_client_t *c)
{
	char p[192];

	root_makes_tree(c);
	snprintf(p, sizeof(p), "%s/e", t.deep);
	EXPECT(rpfs_mkdir(c, p, 0777) == 0, "mkdir %s", p);
	snprintf(p, sizeof(p), "%s/e/mine", t.deep);
	put_file(c, p, 0644, 'm', 10);
	EXPECT(rpfs_chown(c, p, NOBODY, NOBODY) == 0, "chown %s", p);
	snprintf(p, sizeof(p), "%s/e/mydir", t.deep);
	EXPECT(rpfs_mkdir(c, p, 0755) == 0, "mkdir %s", p);
	EXPECT(rpfs_chown(c, p, NOBODY, NOBODY) == 0, "chown %s", p);
	return fails;
}

static int nobody_changes_nothing(rpfs_client_t *c)
{
	char e[160], mine[192], mydir[192], p[192];
	rpfs_file_t *f;
	int ret;

	snprintf(e, sizeof(e), "%s/e", t.deep);
	snprintf(mine, sizeof(mine), "%s/mine", e);
	snprintf(mydir, sizeof(mydir), "%s/mydir", e);
	snprintf(p, sizeof(p), "%s/new", e);
	ret = rpfs_create(c, p, 0644, RPFS_O_EXCL, NULL, &f);
	EXPECT(ret == -EACCES, "create %s: %d", p, ret);
	ret = rpfs_mkdir(c, p, 0755);
	EXPECT(ret == -EACCES, "mkdir %s: %d", p, ret);
	ret = rpfs_remove(c, mine);
	EXPECT(ret == -EACCES, "remove own %s: %d", mine, ret);
	ret = rpfs_rmdir(c, mydir);
	EXPECT(ret == -EACCES, "rmdir own %s: %d", mydir, ret);
	ret = rpfs_chmod(c, mine, 0666);
	EXPECT(ret == -EACCES, "chmod own %s: %d", mine, ret);
	ret = rpfs_chown(c, mine, NOBODY, NOBODY);
	EXPECT(ret == -EACCES, "chown own %s: %d", mine, ret);
	ret = rpfs_utimes(c, mine, 1, 1);
	EXPECT(ret == -EACCES, "utimes own %s: %d", mine, ret);
	ret = rpfs_setstripe(c, mydir, 65536, 1);
	EXPECT(ret == -EACCES, "setstripe own %s: %d", mydir, ret);
	snprintf(p, sizeof(p), "%s/mine2", e);
	ret = rpfs_rename(c, mine, p);
	EXPECT(ret == -EACCES, "rename within %s: %d", e, ret);
	ret = rpfs_rename(c, mine, "/stolen");
	EXPECT(ret == -EACCES, "rename out of %s: %d", e, ret);
	put_file(c, "/own", 0644, 'o', 10);
	snprintf(p, sizeof(p), "%s/own", e);
	ret = rpfs_rename(c, "/own", p);
	EXPECT(ret == -EACCES, "rename into %s: %d", e, ret);
	return fails;
}

static int root_finds_all_unchanged(rpfs_client_t *c)
{
	struct rpfs_stat st;
	char p[192];

	snprintf(p, sizeof(p), "%s/e/mine", t.deep);
	EXPECT(rpfs_stat(c, p, &st) == 0 && st.mode == 0644 && st.size == 10 &&
		       st.mtime != 1,
	       "%s changed", p);
	snprintf(p, sizeof(p), "%s/e/mydir", t.deep);
	EXPECT(rpfs_stat(c, p, &st) == 0 && st.stripe_unit != 65536, "%s changed", p);
	snprintf(p, sizeof(p), "%s/e/new", t.deep);
	EXPECT(rpfs_stat(c, p, &st) == -ENOENT, "%s was made", p);
	EXPECT(rpfs_stat(c, "/stolen", &st) == -ENOENT, "/stolen was made");
	EXPECT(rpfs_stat(c, "/own", &st) == 0, "/own moved");
	return fails;
}

START_TEST(test_a_0700_directory_refuses_changes_below_it)
{
	struct cluster *cl;

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: permission tests need root (to become nobody)\n");
		return;
	}
	name_tree(nmeta_of(_i));
	cl = start(t.nmeta);
	run_as(cl, false, root_gives_nobody_a_corner);
	run_as(cl, true, nobody_changes_nothing);
	run_as(cl, false, root_finds_all_unchanged);
	cl_destroy(cl);
}
END_TEST

static int root_opens_top(rpfs_client_t *c)
{
	EXPECT(rpfs_chmod(c, t.top, 0755) == 0, "chmod 0755 %s", t.top);
	return fails;
}

static int nobody_reads(rpfs_client_t *c)
{
	reads_file(c, t.file, 0);
	return fails;
}

START_TEST(test_chmod_0755_opens_a_closed_subtree)
{
	struct cluster *cl;

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: permission tests need root (to become nobody)\n");
		return;
	}
	name_tree(nmeta_of(_i));
	cl = start(t.nmeta);
	run_as(cl, false, root_makes_tree);
	run_as(cl, true, nobody_is_kept_out);
	run_as(cl, false, root_opens_top);
	run_as(cl, true, nobody_reads);
	cl_destroy(cl);
}
END_TEST

/* nobody's own tree: the owner's bits of a mode count for its owner, and
 * a chmod that returned holds for the very next lookup. */
static int nobody_closes_and_opens_its_own(rpfs_client_t *c)
{
	char p[128];
	int ret;

	snprintf(p, sizeof(p), "%s/b", t.top);
	EXPECT(rpfs_mkdir(c, t.top, 0755) == 0, "mkdir %s", t.top);
	EXPECT(rpfs_mkdir(c, p, 0755) == 0, "mkdir %s", p);
	snprintf(p, sizeof(p), "%s/b/c", t.top);
	EXPECT(rpfs_mkdir(c, p, 0755) == 0, "mkdir %s", p);
	EXPECT(rpfs_mkdir(c, t.deep, 0755) == 0, "mkdir %s", t.deep);
	put_file(c, t.file, 0644, 'f', 100);
	reads_file(c, t.file, 0);
	ret = rpfs_chmod(c, t.top, 0600); /* no search for its owner */
	EXPECT(ret == 0, "chmod 0600 %s: %d", t.top, ret);
	reads_file(c, t.file, -EACCES);
	ret = rpfs_chmod(c, t.top, 0700);
	EXPECT(ret == 0, "chmod 0700 %s: %d", t.top, ret);
	reads_file(c, t.file, 0);
	return fails;
}

START_TEST(test_chmod_of_a_directory_closes_it_at_once)
{
	struct cluster *cl;

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: permission tests need root (to become nobody)\n");
		return;
	}
	name_tree(nmeta_of(_i));
	cl = start(t.nmeta);
	run_as(cl, true, nobody_closes_and_opens_its_own);
	cl_destroy(cl);
}
END_TEST

/* A rename's ends: from in a directory fdir, to in tdir, on the same
 * metadata server (one cluster or several). */
static bool same_server(const char *to, int nmeta)
{
	return meta_of(to, nmeta) == meta_of(t.from, nmeta);
}

static void name_rename(int nmeta, const char *from, const char *tdir)
{
	char base[64];

	memset(&t, 0, sizeof(t));
	t.nmeta = nmeta;
	snprintf(t.from, sizeof(t.from), "%s", from);
	snprintf(base, sizeof(base), "%s/f", tdir);
	pick(t.to, sizeof(t.to), base, same_server, nmeta);
}

static int root_makes_closed_and_open(rpfs_client_t *c)
{
	EXPECT(rpfs_mkdir(c, "/closed", 0700) == 0, "mkdir /closed");
	EXPECT(rpfs_mkdir(c, "/open", 0755) == 0, "mkdir /open");
	put_file(c, t.from, 0644, 'f', 100);
	return fails;
}

static int root_renames(rpfs_client_t *c)
{
	int ret = rpfs_rename(c, t.from, t.to);

	EXPECT(ret == 0, "rename %s %s: %d", t.from, t.to, ret);
	return fails;
}

/* What nobody gets opening t.from and t.to: 0 or the errno. A name under
 * a directory nobody may not search is -EACCES whether it exists or not. */
static int want_from, want_to;

static int nobody_tries_both(rpfs_client_t *c)
{
	reads_file(c, t.from, want_from);
	reads_file(c, t.to, want_to);
	return fails;
}

START_TEST(test_a_file_renamed_out_of_a_0700_directory_becomes_readable)
{
	struct cluster *cl;

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: permission tests need root (to become nobody)\n");
		return;
	}
	name_rename(nmeta_of(_i), "/closed/f", "/open");
	cl = start(t.nmeta);
	run_as(cl, false, root_makes_closed_and_open);
	want_from = -EACCES;
	want_to = -ENOENT;
	run_as(cl, true, nobody_tries_both);
	run_as(cl, false, root_renames);
	want_to = 0;
	run_as(cl, true, nobody_tries_both);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_a_file_renamed_into_a_0700_directory_becomes_unreadable)
{
	struct cluster *cl;

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: permission tests need root (to become nobody)\n");
		return;
	}
	name_rename(nmeta_of(_i), "/open/f", "/closed");
	cl = start(t.nmeta);
	run_as(cl, false, root_makes_closed_and_open);
	want_from = 0;
	want_to = -EACCES;
	run_as(cl, true, nobody_tries_both);
	run_as(cl, false, root_renames);
	want_from = -ENOENT;
	run_as(cl, true, nobody_tries_both);
	cl_destroy(cl);
}
END_TEST

/* A directory /open/dN moved into /closed and out again. With one
 * metadata server it holds sub/f, which moves with it; with several only
 * an empty directory can be renamed (its subtree is spread over the
 * servers: -EXDEV), so what follows it there is whether nobody may create
 * in it. t.from is the directory, t.to its path in /closed, t.top its
 * path back in /open. */
static void closed_path(char *to, size_t len, const char *from)
{
	snprintf(to, len, "/closed%s", strrchr(from, '/'));
}

static bool dir_with_to(const char *from, int nmeta)
{
	char to[64];

	closed_path(to, sizeof(to), from);
	return meta_of(from, nmeta) == meta_of(to, nmeta);
}

static bool dir_back(const char *back, int nmeta)
{
	return meta_of(back, nmeta) == meta_of(t.from, nmeta);
}

static int root_makes_open_dir(rpfs_client_t *c)
{
	char p[192];

	EXPECT(rpfs_mkdir(c, "/closed", 0700) == 0, "mkdir /closed");
	EXPECT(rpfs_mkdir(c, "/open", 0755) == 0, "mkdir /open");
	EXPECT(rpfs_mkdir(c, t.from, 0777) == 0, "mkdir %s", t.from);
	if (t.nmeta > 1)
		return fails;
	snprintf(p, sizeof(p), "%s/sub", t.from);
	EXPECT(rpfs_mkdir(c, p, 0755) == 0, "mkdir %s", p);
	snprintf(p, sizeof(p), "%s/sub/f", t.from);
	put_file(c, p, 0644, 'f', 100);
	return fails;
}

/* In dir: sub/f readable (one metadata server), a new entry made and
 * removed (several), or neither (expect -EACCES). */
static void uses_dir(rpfs_client_t *c, const char *dir, int expect)
{
	char p[192];
	int ret;

	if (t.nmeta == 1) {
		snprintf(p, sizeof(p), "%s/sub/f", dir);
		reads_file(c, p, expect);
		return;
	}
	snprintf(p, sizeof(p), "%s/x", dir);
	ret = rpfs_mkdir(c, p, 0755);
	EXPECT(ret == expect, "mkdir %s: %d, expected %d", p, ret, expect);
	if (!ret)
		EXPECT(rpfs_rmdir(c, p) == 0, "rmdir %s", p);
}

static int nobody_uses_from(rpfs_client_t *c)
{
	uses_dir(c, t.from, 0);
	return fails;
}

static int nobody_cannot_use_to(rpfs_client_t *c)
{
	uses_dir(c, t.to, -EACCES);
	return fails;
}

static int nobody_uses_back(rpfs_client_t *c)
{
	uses_dir(c, t.top, 0);
	return fails;
}

static int root_moves_dir_in(rpfs_client_t *c)
{
	int ret = rpfs_rename(c, t.from, t.to);

	EXPECT(ret == 0, "rename %s %s: %d", t.from, t.to, ret);
	return fails;
}

static int root_moves_dir_out(rpfs_client_t *c)
{
	int ret = rpfs_rename(c, t.to, t.top);

	EXPECT(ret == 0, "rename %s %s: %d", t.to, t.top, ret);
	return fails;
}

START_TEST(test_a_renamed_directory_takes_its_subtree_along)
{
	struct cluster *cl;
	int nmeta = nmeta_of(_i);

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: permission tests need root (to become nobody)\n");
		return;
	}
	memset(&t, 0, sizeof(t));
	t.nmeta = nmeta;
	pick(t.from, sizeof(t.from), "/open/d", dir_with_to, nmeta);
	closed_path(t.to, sizeof(t.to), t.from);
	pick(t.top, sizeof(t.top), "/open/back", dir_back, nmeta);
	cl = start(nmeta);
	run_as(cl, false, root_makes_open_dir);
	run_as(cl, true, nobody_uses_from);
	run_as(cl, false, root_moves_dir_in);
	run_as(cl, true, nobody_cannot_use_to);
	run_as(cl, false, root_moves_dir_out);
	run_as(cl, true, nobody_uses_back);
	cl_destroy(cl);
}
END_TEST

/* nobody's tree, closed to everyone (0000 on top, 0000 on the file). */
static int nobody_makes_closed_tree(rpfs_client_t *c)
{
	nobody_closes_and_opens_its_own(c);
	EXPECT(rpfs_chmod(c, t.top, 0) == 0, "chmod 0 %s", t.top);
	reads_file(c, t.file, -EACCES);
	return fails;
}

static int root_reads(rpfs_client_t *c)
{
	reads_file(c, t.file, 0);
	return fails;
}

START_TEST(test_root_searches_every_directory)
{
	struct cluster *cl;

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: permission tests need root (to become nobody)\n");
		return;
	}
	name_tree(nmeta_of(_i));
	cl = start(t.nmeta);
	run_as(cl, true, nobody_makes_closed_tree);
	run_as(cl, false, root_reads);
	cl_destroy(cl);
}
END_TEST

/* t.top on metadata server 2, t.deep (its child) and t.file elsewhere. */
static bool top_on_2(const char *top, int nmeta)
{
	char p[160];

	snprintf(p, sizeof(p), "%s/b", top);
	return meta_of(top, nmeta) == 2 && meta_of(p, nmeta) != 2;
}

static bool new_not_on_2(const char *p, int nmeta)
{
	return meta_of(p, nmeta) != 2;
}

static int root_makes_two_levels(rpfs_client_t *c)
{
	EXPECT(rpfs_mkdir(c, t.top, 0755) == 0, "mkdir %s", t.top);
	EXPECT(rpfs_mkdir(c, t.deep, 0777) == 0, "mkdir %s", t.deep);
	return fails;
}

static int nobody_is_told_a_server_is_down(rpfs_client_t *c)
{
	int ret = rpfs_mkdir(c, t.file, 0755);

	EXPECT(ret == -EHOSTDOWN, "mkdir %s with %s's server down: %d", t.file, t.top,
	       ret);
	EXPECT(errmsg_has(t.file) && errmsg_has("unreachable"),
	       "the message names no path or cause");
	return fails;
}

static int root_needs_no_search(rpfs_client_t *c)
{
	int ret = rpfs_mkdir(c, t.file, 0755);

	EXPECT(ret == 0, "mkdir %s as root with %s's server down: %d", t.file, t.top,
	       ret);
	return fails;
}

/* Three metadata servers; the one that holds an ancestor is down: a
 * request below it gets -EHOSTDOWN, promptly, and the log of the server
 * that asked names the ancestor's server. Root needs no search. */
START_TEST(test_an_unreachable_holder_of_an_ancestor_fails_the_request)
{
	struct cluster *cl;
	char base[160];

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: permission tests need root (to become nobody)\n");
		return;
	}
	memset(&t, 0, sizeof(t));
	t.nmeta = 3;
	pick(t.top, sizeof(t.top), "/up", top_on_2, 3);
	snprintf(t.deep, sizeof(t.deep), "%s/b", t.top);
	snprintf(base, sizeof(base), "%s/new", t.deep);
	pick(t.file, sizeof(t.file), base, new_not_on_2, 3);
	cl = start(3);
	run_as(cl, false, root_makes_two_levels);
	ck_assert_int_eq(cl_stop(cl, 2), 0);
	run_as(cl, true, nobody_is_told_a_server_is_down);
	run_as(cl, false, root_needs_no_search);
	cl_destroy(cl);
}
END_TEST

static Suite *access_suite(void)
{
	Suite *s = suite_create("access");
	TCase *tc = tcase_create("access");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_another_user_gets_only_what_the_modes_allow);
	tcase_add_test(tc, test_capabilities_renew_and_see_a_chmod);
	/* Each with one metadata server (0) and with three (1). */
	tcase_add_loop_test(tc, test_a_0700_directory_hides_what_is_below_it, 0, 2);
	tcase_add_loop_test(tc, test_a_0700_directory_refuses_changes_below_it, 0, 2);
	tcase_add_loop_test(tc, test_chmod_0755_opens_a_closed_subtree, 0, 2);
	tcase_add_loop_test(tc, test_chmod_of_a_directory_closes_it_at_once, 0, 2);
	tcase_add_loop_test(
		tc, test_a_file_renamed_out_of_a_0700_directory_becomes_readable, 0, 2);
	tcase_add_loop_test(
		tc, test_a_file_renamed_into_a_0700_directory_becomes_unreadable, 0, 2);
	tcase_add_loop_test(tc, test_a_renamed_directory_takes_its_subtree_along, 0, 2);
	tcase_add_loop_test(tc, test_root_searches_every_directory, 0, 2);
	tcase_add_test(tc, test_an_unreachable_holder_of_an_ancestor_fails_the_request);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return cl_run_suite(argc, argv, access_suite);
}
