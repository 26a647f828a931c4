/* Permissions and capabilities, end to end: rpfsd servers on loopback, a
 * root client that sets files up, and clients of another user (nobody)
 * that try what they must not (server/access.c has the model).
 *
 * Another user's client runs in a child process that makes its client as
 * root (the cluster key is root's, mode 0600) and then drops to uid and
 * gid 65534 before it connects, so its connections state that identity.
 * The parent holds no client while a child runs (verbs: a child cannot use
 * the device its parent opened). Needs root; skipped otherwise (said so). */
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

static rpfs_client_t *client(struct cluster *cl)
{
	rpfs_client_t *c = NULL;
	int ret = rpfs_init(cl_config(cl), &c);

	ck_assert_msg(ret == 0, "rpfs_init: %s: %s", strerror(-ret), rpfs_errmsg());
	return c;
}

/* A file with len bytes of pattern p and the given mode, as root. */
static void put_file(rpfs_client_t *c, const char *path, uint32_t mode, int p, size_t len)
{
	char buf[8192];
	rpfs_file_t *f;
	int ret;

	ck_assert(len <= sizeof(buf));
	memset(buf, p, len);
	ret = rpfs_create(c, path, mode, RPFS_O_EXCL, NULL, &f);
	ck_assert_msg(ret == 0, "create %s: %s", path, rpfs_errmsg());
	ck_assert_int_eq(rpfs_pwrite(f, buf, len, 0), (ssize_t)len);
	rpfs_close(f);
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

/* Run fn as uid/gid NOBODY with a client of its own; the test fails if fn
 * found failures (they are printed) or the child died. */
static void as_nobody(struct cluster *cl, int (*fn)(rpfs_client_t *c))
{
	pid_t pid;
	int status;

	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		rpfs_client_t *c = NULL;

		/* The key is read now, as root; connections are made later,
		 * by the first request, as nobody. */
		if (rpfs_init(cl_config(cl), &c)) {
			fprintf(stderr, "rpfs_init: %s\n", rpfs_errmsg());
			_exit(100);
		}
		if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY)) {
			perror("dropping to nobody");
			_exit(101);
		}
		fails = fn(c);
		rpfs_finalize(c);
		_exit(fails > 99 ? 99 : fails);
	}
	ck_assert(waitpid(pid, &status, 0) == pid);
	ck_assert_msg(WIFEXITED(status), "the child as nobody died (signal %d)",
		      WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	ck_assert_msg(WEXITSTATUS(status) == 0,
		      "as nobody: %d checks failed (printed above), or setup failed",
		      WEXITSTATUS(status));
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
				EXPECT(ret == -EACCES, "read with another file's capability: %d",
				       ret);
				ret = rpfs_truncate(f, 0);
				EXPECT(ret == -EACCES,
				       "truncate with another file's capability: %d", ret);
				rpfs_close(f);
			}
			rpfs_close(mine);
		}
	}
	return fails;
}

START_TEST(test_another_user_gets_only_what_the_modes_allow)
{
	struct cluster *cl;
	rpfs_client_t *c;
	rpfs_file_t *f;
	struct rpfs_stat st;
	char buf[4096];

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: permission tests need root (to become nobody)\n");
		return;
	}
	/* Two metadata servers: parents and children often live apart. */
	cl = start(2);
	c = client(cl);
	ck_assert_int_eq(rpfs_mkdir(c, "/pub", 0755), 0);
	ck_assert_int_eq(rpfs_mkdir(c, "/pub/empty", 0755), 0);
	ck_assert_int_eq(rpfs_mkdir(c, "/priv", 0700), 0);
	put_file(c, "/pub/secret", 0600, 's', 4096);
	put_file(c, "/pub/open", 0644, 'o', 4096);
	put_file(c, "/priv/f", 0644, 'p', 10);
	put_file(c, "/rootfile", 0644, 'r', 10);
	ck_assert_int_eq(rpfs_stat(c, "/", &st), 0);
	ck_assert_uint_eq(st.mode, 01777);
	rpfs_finalize(c);

	as_nobody(cl, nobody_tries_everything);

	/* Everything root had is still there, unchanged. */
	c = client(cl);
	ck_assert_int_eq(rpfs_open(c, "/pub/secret", RPFS_O_READ, &f), 0);
	ck_assert_int_eq(rpfs_pread(f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	ck_assert(buf[0] == 's' && buf[4095] == 's');
	rpfs_close(f);
	ck_assert_int_eq(rpfs_stat(c, "/pub/open", &st), 0);
	ck_assert_uint_eq(st.mode, 0644);
	ck_assert_int_eq(rpfs_stat(c, "/rootfile", &st), 0);
	ck_assert_int_eq(rpfs_stat(c, "/mine", &st), 0);
	ck_assert_uint_eq(st.uid, NOBODY);
	ck_assert_uint_eq(st.mode, 0644);
	/* root may do what nobody may not */
	ck_assert_int_eq(rpfs_remove(c, "/mine"), 0);
	ck_assert_int_eq(rpfs_chmod(c, "/pub/open", 0600), 0);
	rpfs_finalize(c);
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
	as_nobody(cl, nobody_renews);
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
	SRunner *sr;
	int failed, status;

	if (cl_child_main(argc, argv, &status))
		return status;
	sr = srunner_create(access_suite());
	signal(SIGPIPE, SIG_IGN);
	cl_session_begin();
	srunner_run_all(sr, CK_NORMAL);
	cl_session_end();
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
