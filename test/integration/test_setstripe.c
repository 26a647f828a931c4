/* Per-directory default layouts (rpfs_setstripe): new files in the
 * directory get it unless their create gives a layout (as MPI hints do),
 * new subdirectories inherit it, and it works when the directory and the
 * file live on different metadata servers. */
#include <check.h>
#include <errno.h>
#include <stdio.h>

#include "cluster.h"
#include "rpfs.h"
#include "testkit.h"

#define NSRV 4

static struct cluster *start(int nmeta)
{
	struct cl_opts o = {.nservers = NSRV, .nmeta = nmeta, .stripe_unit = 1 << 20};
	struct cluster *cl = cl_start(&o);

	ck_assert_msg(cl, "couldn't start %d servers (see stderr)", NSRV);
	return cl;
}

static struct rpfs_stat stat_of(rpfs_client_t *c, const char *path)
{
	struct rpfs_stat st;

	ck_assert_msg(rpfs_stat(c, path, &st) == 0, "stat %s: %s", path, rpfs_errmsg());
	return st;
}

static void layout_is(rpfs_client_t *c, const char *path, uint64_t unit, uint32_t count)
{
	struct rpfs_stat st = stat_of(c, path);

	ck_assert_msg(st.stripe_unit == unit && st.stripe_count == count,
		      "%s: unit %llu count %u, want %llu %u", path,
		      (unsigned long long)st.stripe_unit, st.stripe_count,
		      (unsigned long long)unit, count);
}

static void touch(rpfs_client_t *c, const char *path, const struct rpfs_create_opts *o)
{
	rpfs_close(o ? create_opts(c, path, o) : create(c, path));
}

START_TEST(test_directory_default_applies_to_new_files_and_subdirectories)
{
	struct cluster *cl = start(_i + 1);
	rpfs_client_t *c = client(cl);
	struct rpfs_create_opts hint = {
		.stripe_unit = 4096, .stripe_count = 3, .first_server = -1};
	char path[64];

	ck_assert_int_eq(rpfs_mkdir(c, "/d", 0755), 0);
	layout_is(c, "/d", 0, 0); /* no default yet: the cluster's */
	touch(c, "/d/before", NULL);
	layout_is(c, "/d/before", 1 << 20, NSRV);
	ck_assert_msg(rpfs_setstripe(c, "/d", 65536, 2) == 0, "%s", rpfs_errmsg());
	layout_is(c, "/d", 65536, 2);
	/* Several names, so that with two metadata servers some files live
	 * on another server than their directory. */
	for (int i = 0; i < 6; i++) {
		snprintf(path, sizeof(path), "/d/f%d", i);
		touch(c, path, NULL);
		layout_is(c, path, 65536, 2);
	}
	layout_is(c, "/d/before", 1 << 20, NSRV); /* existing files keep theirs */
	touch(c, "/d/hinted", &hint);		  /* the create's layout wins */
	layout_is(c, "/d/hinted", 4096, 3);
	ck_assert_int_eq(rpfs_mkdir(c, "/d/sub", 0755), 0);
	layout_is(c, "/d/sub", 65536, 2);
	touch(c, "/d/sub/g", NULL);
	layout_is(c, "/d/sub/g", 65536, 2);
	/* Only the count: the unit stays the cluster's. */
	ck_assert_int_eq(rpfs_setstripe(c, "/d/sub", 0, 1), 0);
	touch(c, "/d/sub/h", NULL);
	layout_is(c, "/d/sub/h", 1 << 20, 1);
	/* Data written under a directory default reads back. */
	{
		static char buf[300000], back[300000];
		rpfs_file_t *f = open_file(c, "/d/f0");

		fill(buf, sizeof(buf), 42);
		write_all(f, buf, sizeof(buf), 0);
		read_all(f, back, sizeof(back), 0);
		ck_assert(first_diff(buf, back, sizeof(buf)) < 0);
		rpfs_close(f);
	}
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

START_TEST(test_setstripe_refusals)
{
	struct cluster *cl = start(1);
	rpfs_client_t *c = client(cl);

	ck_assert_int_eq(rpfs_mkdir(c, "/d", 0755), 0);
	touch(c, "/f", NULL);
	ck_assert_int_eq(rpfs_setstripe(c, "/f", 65536, 1), -ENOTDIR);
	ck_assert_int_eq(rpfs_setstripe(c, "/d", 65536, NSRV + 1), -EINVAL);
	ck_assert_int_eq(rpfs_setstripe(c, "/nope", 65536, 1), -ENOENT);
	layout_is(c, "/d", 0, 0);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

static Suite *setstripe_suite(void)
{
	Suite *s = suite_create("setstripe");
	TCase *tc = tcase_create("setstripe");

	tcase_set_timeout(tc, 90);
	tcase_add_loop_test(
		tc, test_directory_default_applies_to_new_files_and_subdirectories, 0, 2);
	tcase_add_test(tc, test_setstripe_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return cl_run_suite(argc, argv, setstripe_suite);
}
