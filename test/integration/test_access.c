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

/* ---- the modes ------------------------------------------------------------ */

static int count_entry(const char *name, uint32_t type, void *arg)
{
	(void)name;
	(void)type;
	++*(int *)arg;
	return 0;
}

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

static Suite *access_suite(void)
{
	Suite *s = suite_create("access");
	TCase *tc = tcase_create("access");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_another_user_gets_only_what_the_modes_allow);
	tcase_add_test(tc, test_capabilities_renew_and_see_a_chmod);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return cl_run_suite(argc, argv, access_suite);
}
