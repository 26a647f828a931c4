/* rpfs_rename end to end on servers over loopback: POSIX semantics within
 * one metadata server (replace a file, refuse a non-empty directory, move
 * a directory with everything below it, open files stay usable), -EXDEV
 * across metadata servers, and `rpfs mv` copying and removing there.
 * Permission refusals are in test_access.c (they need another user). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "rpfs.h"
#include "testkit.h"

#define NSRV 4
#define SU   (64 * 1024)
#define LEN  (3 * SU + 777) /* crosses every stripe boundary of 4 servers */

static struct cluster *start(int nmeta)
{
	struct cl_opts o = {.nservers = NSRV, .nmeta = nmeta, .stripe_unit = SU};
	struct cluster *cl = cl_start(&o);

	ck_assert_msg(cl, "couldn't start %d servers (see stderr)", NSRV);
	return cl;
}

static void put(rpfs_client_t *c, const char *path, uint64_t seed)
{
	static char buf[LEN];
	rpfs_file_t *f = create(c, path);

	fill(buf, sizeof(buf), seed);
	write_all(f, buf, sizeof(buf), 0);
	rpfs_close(f);
}

/* The file at path holds what put(path, seed) wrote. */
static void check(rpfs_client_t *c, const char *path, uint64_t seed)
{
	static char want[LEN], got[LEN];
	struct rpfs_stat st;
	rpfs_file_t *f;

	ck_assert_msg(rpfs_stat(c, path, &st) == 0, "stat %s: %s", path, rpfs_errmsg());
	ck_assert_uint_eq(st.size, LEN);
	f = open_file(c, path);
	read_all(f, got, sizeof(got), 0);
	rpfs_close(f);
	fill(want, sizeof(want), seed);
	ck_assert_msg(first_diff(want, got, sizeof(got)) < 0, "%s differs at %lld", path,
		      first_diff(want, got, sizeof(got)));
}

static void gone(rpfs_client_t *c, const char *path)
{
	struct rpfs_stat st;

	ck_assert_int_eq(rpfs_stat(c, path, &st), -ENOENT);
}

static int count(const char *name, uint32_t type, void *arg)
{
	(void)name;
	(void)type;
	++*(int *)arg;
	return 0;
}

static int entries(rpfs_client_t *c, const char *dir)
{
	int n = 0;

	ck_assert_msg(rpfs_readdir(c, dir, count, &n) == 0, "readdir %s: %s", dir,
		      rpfs_errmsg());
	return n;
}

START_TEST(test_rename_file_keeps_data_handle_and_open_files)
{
	struct cluster *cl = start(1);
	rpfs_client_t *c = client(cl);
	struct rpfs_stat before, after;
	static char buf[LEN];
	rpfs_file_t *f;

	put(c, "/a", 1);
	ck_assert_int_eq(rpfs_stat(c, "/a", &before), 0);
	f = open_file(c, "/a");
	ck_assert_msg(rpfs_rename(c, "/a", "/b") == 0, "rename: %s", rpfs_errmsg());
	gone(c, "/a");
	check(c, "/b", 1);
	ck_assert_int_eq(rpfs_stat(c, "/b", &after), 0);
	ck_assert_uint_eq(before.handle, after.handle);
	ck_assert_uint_eq(before.mode, after.mode);
	ck_assert_uint_eq(before.stripe_count, after.stripe_count);
	/* The open file is the same file under its new name. */
	fill(buf, sizeof(buf), 2);
	write_all(f, buf, sizeof(buf), 0);
	rpfs_close(f);
	check(c, "/b", 2);
	/* A rename onto itself changes nothing. */
	ck_assert_int_eq(rpfs_rename(c, "/b", "/b"), 0);
	check(c, "/b", 2);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_rename_replaces_an_existing_file)
{
	struct cluster *cl = start(1);
	rpfs_client_t *c = client(cl);
	rpfs_file_t *old;
	char b[16];

	put(c, "/x", 10);
	put(c, "/y", 20);
	old = open_file(c, "/y");
	ck_assert_msg(rpfs_rename(c, "/x", "/y") == 0, "rename: %s", rpfs_errmsg());
	gone(c, "/x");
	check(c, "/y", 10);
	ck_assert_int_eq(entries(c, "/"), 1);
	/* The replaced file is gone with its datafiles. */
	ck_assert_int_eq(rpfs_pread(old, b, sizeof(b), 0), -ESTALE);
	rpfs_close(old);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_rename_moves_into_another_directory_with_its_subtree)
{
	struct cluster *cl = start(1);
	rpfs_client_t *c = client(cl);

	ck_assert_int_eq(rpfs_mkdir(c, "/d1", 0755), 0);
	ck_assert_int_eq(rpfs_mkdir(c, "/d1/sub", 0750), 0);
	ck_assert_int_eq(rpfs_mkdir(c, "/d1/sub/deeper", 0755), 0);
	ck_assert_int_eq(rpfs_mkdir(c, "/d2", 0755), 0);
	put(c, "/d1/f", 3);
	put(c, "/d1/sub/g", 4);
	put(c, "/d1/sub/deeper/h", 5);

	ck_assert_msg(rpfs_rename(c, "/d1/f", "/d2/f") == 0, "%s", rpfs_errmsg());
	gone(c, "/d1/f");
	check(c, "/d2/f", 3);

	ck_assert_msg(rpfs_rename(c, "/d1", "/d2/moved") == 0, "%s", rpfs_errmsg());
	gone(c, "/d1");
	gone(c, "/d1/sub/g");
	ck_assert_int_eq(entries(c, "/d2"), 2);
	ck_assert_int_eq(entries(c, "/d2/moved"), 1);
	ck_assert_int_eq(entries(c, "/d2/moved/sub"), 2);
	check(c, "/d2/moved/sub/g", 4);
	check(c, "/d2/moved/sub/deeper/h", 5);
	{
		struct rpfs_stat st;

		ck_assert_int_eq(rpfs_stat(c, "/d2/moved/sub", &st), 0);
		ck_assert_uint_eq(st.mode & 0777, 0750);
	}
	/* The moved tree is a normal tree: it can be emptied and removed. */
	ck_assert_int_eq(rpfs_remove(c, "/d2/moved/sub/deeper/h"), 0);
	ck_assert_int_eq(rpfs_rmdir(c, "/d2/moved/sub/deeper"), 0);
	ck_assert_int_eq(rpfs_rmdir(c, "/d2/moved/sub"), -ENOTEMPTY);
	/* An empty directory target is replaced by a directory. */
	ck_assert_int_eq(rpfs_mkdir(c, "/empty", 0755), 0);
	ck_assert_msg(rpfs_rename(c, "/d2/moved", "/empty") == 0, "%s", rpfs_errmsg());
	check(c, "/empty/sub/g", 4);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_rename_refusals)
{
	struct cluster *cl = start(1);
	rpfs_client_t *c = client(cl);

	ck_assert_int_eq(rpfs_mkdir(c, "/d", 0755), 0);
	ck_assert_int_eq(rpfs_mkdir(c, "/full", 0755), 0);
	put(c, "/full/f", 6);
	put(c, "/file", 7);

	ck_assert_int_eq(rpfs_rename(c, "/nope", "/x"), -ENOENT);
	ck_assert_msg(strstr(rpfs_errmsg(), "meta server"), "message: %s", rpfs_errmsg());
	ck_assert_int_eq(rpfs_rename(c, "/file", "/nodir/x"), -ENOENT);
	ck_assert_int_eq(rpfs_rename(c, "/file", "/file/x"), -ENOTDIR);
	ck_assert_int_eq(rpfs_rename(c, "/d", "/full"), -ENOTEMPTY);
	ck_assert_int_eq(rpfs_rename(c, "/file", "/d"), -EISDIR);
	ck_assert_int_eq(rpfs_rename(c, "/d", "/file"), -ENOTDIR);
	ck_assert_int_eq(rpfs_rename(c, "/full", "/full/inside"), -EINVAL);
	ck_assert_int_eq(rpfs_rename(c, "/", "/x"), -EBUSY);
	ck_assert_int_eq(rpfs_rename(c, "/file", "/"), -EBUSY);
	/* Nothing moved. */
	check(c, "/full/f", 6);
	check(c, "/file", 7);
	ck_assert_int_eq(entries(c, "/d"), 0);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* With two metadata servers a rename works where both paths hash to the
 * same one and is -EXDEV otherwise; `rpfs mv` then copies and removes. */
START_TEST(test_rename_across_metadata_servers_is_exdev_and_mv_copies)
{
	struct cluster *cl = start(2);
	rpfs_client_t *c = client(cl);
	char to[64], cmd[512];
	int same = 0, cross = 0, i;

	put(c, "/src", 8);
	for (i = 0; i < 32 && (!same || !cross); i++) {
		int ret;

		snprintf(to, sizeof(to), "/t%d", i);
		ret = rpfs_rename(c, "/src", to);
		if (ret == -EXDEV) {
			ck_assert_msg(strstr(rpfs_errmsg(), "different metadata servers"),
				      "message: %s", rpfs_errmsg());
			cross++;
			continue;
		}
		ck_assert_msg(ret == 0, "rename /src %s: %s", to, rpfs_errmsg());
		check(c, to, 8);
		ck_assert_int_eq(rpfs_rename(c, to, "/src"), 0);
		same++;
	}
	ck_assert_msg(same && cross, "32 names: %d on the same server, %d not", same,
		      cross);
	/* A non-empty directory's entries live on both servers. */
	ck_assert_int_eq(rpfs_mkdir(c, "/tree", 0755), 0);
	ck_assert_int_eq(rpfs_mkdir(c, "/tree/sub", 0755), 0);
	put(c, "/tree/sub/f", 9);
	put(c, "/tree/g", 10);
	ck_assert_int_eq(rpfs_rename(c, "/tree", "/tree2"), -EXDEV);

	/* rpfs mv gets there anyway: the file, then the whole tree. */
	snprintf(cmd, sizeof(cmd), "./rpfs --config %s mv /src %s >/dev/null",
		 cl_config(cl), to);
	ck_assert_int_eq(system(cmd), 0);
	gone(c, "/src");
	check(c, to, 8);
	snprintf(cmd, sizeof(cmd), "./rpfs --config %s mv rpfs:/tree /tree2",
		 cl_config(cl));
	ck_assert_int_eq(system(cmd), 0);
	gone(c, "/tree");
	check(c, "/tree2/sub/f", 9);
	check(c, "/tree2/g", 10);
	ck_assert_int_eq(entries(c, "/tree2"), 2);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

static Suite *rename_suite(void)
{
	Suite *s = suite_create("rename");
	TCase *tc = tcase_create("rename");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_rename_file_keeps_data_handle_and_open_files);
	tcase_add_test(tc, test_rename_replaces_an_existing_file);
	tcase_add_test(tc, test_rename_moves_into_another_directory_with_its_subtree);
	tcase_add_test(tc, test_rename_refusals);
	tcase_add_test(tc, test_rename_across_metadata_servers_is_exdev_and_mv_copies);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return cl_run_suite(argc, argv, rename_suite);
}
