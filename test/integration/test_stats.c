/* A server's own view (RPC_STATS, rpfs_admin_server_stats): the counters
 * move by what known operations must do, and the storage sizes are the
 * server's file system's. */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cluster.h"
#include "rpfs.h"
#include "rpfs_admin.h"
#include "testkit.h"

#define NSRV 2
#define SU   (1024 * 1024)

static struct rpfs_server_stat st[RPFS_STATS_MAX];

static uint64_t get(rpfs_client_t *c, int server, const char *name)
{
	int n = rpfs_admin_server_stats(c, server, st, RPFS_STATS_MAX);

	ck_assert_msg(n > 0, "stats of server %d: %s", server, rpfs_errmsg());
	for (int i = 0; i < n; i++)
		if (!strcmp(st[i].name, name))
			return st[i].value;
	ck_abort_msg("server %d has no %s", server, name);
	return 0;
}

static struct cluster *start(void)
{
	struct cl_opts o = {.nservers = NSRV, .nmeta = 1, .stripe_unit = SU};
	struct cluster *cl = cl_start(&o);

	ck_assert_msg(cl, "couldn't start %d servers (see stderr)", NSRV);
	return cl;
}

/* N writes of 4 KiB go inline, of 16 KiB by Fast RDMA Write, all to the
 * I/O server of stripe 0 (the file is smaller than one stripe). */
START_TEST(test_counters_follow_known_writes_and_reads)
{
	struct cluster *cl = start();
	rpfs_client_t *c = client(cl);
	struct rpfs_create_opts co = {
		.stripe_unit = SU, .stripe_count = 1, .first_server = 1};
	static char buf[16384];
	rpfs_file_t *f = create_opts(c, "/counted", &co);
	uint64_t w0, in0, fast0, r0, err0;
	struct rpfs_stat sst;
	const int n = 8;

	w0 = get(c, 1, "req.io_write");
	in0 = get(c, 1, "bytes.inline");
	fast0 = get(c, 1, "bytes.fast");
	r0 = get(c, 1, "req.io_read");
	for (int i = 0; i < n; i++)
		write_all(f, buf, 4096, (uint64_t)i * 4096);
	ck_assert_uint_eq(get(c, 1, "req.io_write"), w0 + n);
	ck_assert_uint_eq(get(c, 1, "bytes.inline"), in0 + n * 4096);
	for (int i = 0; i < n; i++)
		write_all(f, buf, sizeof(buf), (uint64_t)i * sizeof(buf));
	ck_assert_uint_eq(get(c, 1, "req.io_write"), w0 + 2 * n);
	ck_assert_uint_eq(get(c, 1, "bytes.fast"), fast0 + n * sizeof(buf));
	read_all(f, buf, 4096, 0);
	ck_assert_uint_eq(get(c, 1, "req.io_read"), r0 + 1);
	/* Server 0 (metadata) holds no stripe of this file. */
	ck_assert_uint_eq(get(c, 0, "req.io_write"), 0);
	rpfs_close(f);

	err0 = get(c, 0, "errors.replies");
	ck_assert_int_eq(rpfs_stat(c, "/missing", &sst), -ENOENT);
	ck_assert_uint_eq(get(c, 0, "errors.replies"), err0 + 1);
	ck_assert_uint_ge(get(c, 0, "req.create"), 1);
	ck_assert_uint_eq(get(c, 0, "meta.files"), 1);
	ck_assert_uint_ge(get(c, 1, "conns.now"), 1);
	ck_assert_uint_ge(get(c, 1, "conns.total"), get(c, 1, "conns.now"));
	ck_assert_uint_eq(get(c, 1, "role.meta"), 0);
	ck_assert_uint_eq(get(c, 1, "role.io"), 1);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* df's rows are the servers' own statvfs of their directories. */
START_TEST(test_storage_sizes_are_the_servers_file_systems)
{
	struct cluster *cl = start();
	rpfs_client_t *c = client(cl);

	for (int i = 0; i < NSRV; i++) {
		struct statvfs sv;
		uint64_t size = get(c, i, "storage.size");
		uint64_t used = get(c, i, "storage.used");
		uint64_t avail = get(c, i, "storage.avail");

		ck_assert_int_eq(statvfs(cl_dir(cl, i), &sv), 0);
		ck_assert_uint_eq(size, (uint64_t)sv.f_blocks * sv.f_frsize);
		ck_assert_uint_le(used + avail, size);
		ck_assert_uint_gt(avail, 0);
	}
	ck_assert_int_eq(rpfs_admin_server_stats(c, NSRV, st, RPFS_STATS_MAX), -EINVAL);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* The servers' storage directories are all on one file system here: each
 * says so (the same storage.fsid), and the cluster's capacity counts it
 * once, not once per server on it. */
START_TEST(test_a_file_system_shared_by_servers_counts_once)
{
	struct cluster *cl = start();
	rpfs_client_t *c = client(cl);
	uint64_t fsid = get(c, 0, "storage.fsid");
	struct rpfs_statfs sf;
	struct statvfs sv;

	ck_assert_uint_ne(fsid, 0);
	for (int i = 1; i < NSRV; i++)
		ck_assert_uint_eq(get(c, i, "storage.fsid"), fsid);
	ck_assert_uint_ge(get(c, 0, "storage.free"), get(c, 0, "storage.avail"));
	ck_assert_int_eq(statvfs(cl_dir(cl, 0), &sv), 0);
	ck_assert_int_eq(rpfs_statfs(c, &sf), 0);
	ck_assert_uint_eq(sf.total, (uint64_t)sv.f_blocks * sv.f_frsize);
	ck_assert_uint_le(sf.avail, sf.free);
	ck_assert_uint_le(sf.free, sf.total);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* A client with a file open keeps its connections through the servers'
 * idle timeout (its progress thread pings them), so a post after a long
 * computation does not connect again; once nothing is open, they are left
 * to the timeout, and the next call connects anew. */
START_TEST(test_connections_of_a_client_with_open_files_outlive_the_idle_timeout)
{
	struct cl_opts o = {
		.nservers = NSRV, .nmeta = 1, .stripe_unit = SU, .idle_timeout_s = 2};
	struct cluster *cl = cl_start(&o);
	rpfs_client_t *c;
	rpfs_file_t *f;
	static char buf[2 * SU];
	uint64_t total[NSRV];

	ck_assert_msg(cl, "couldn't start %d servers (see stderr)", NSRV);
	c = client(cl);
	f = create(c, "/kept"); /* striped over both servers */
	write_all(f, buf, sizeof(buf), 0);
	for (int i = 0; i < NSRV; i++)
		total[i] = get(c, i, "conns.total");
	usleep(3500 * 1000); /* 1.75 idle timeouts */
	write_all(f, buf, sizeof(buf), 0);
	for (int i = 0; i < NSRV; i++)
		ck_assert_msg(
			get(c, i, "conns.total") == total[i],
			"server %d: the client connected again after 3.5 s idle with a "
			"file open",
			i);
	rpfs_close(f);
	usleep(3500 * 1000);
	for (int i = 0; i < NSRV; i++)
		ck_assert_msg(get(c, i, "conns.total") == total[i] + 1,
			      "server %d: with nothing open the connection should have "
			      "been left to the timeout and made again",
			      i);
	rpfs_finalize(c);
	cl_destroy(cl);
}
END_TEST

/* A file's capability is renewed in the background while the program
 * computes, so a post after a long computation does not wait for the
 * metadata server. The file here is opened from attributes (as every MPI
 * rank but 0 opens it): its client never talked to the metadata server,
 * and the renewal connects there too. */
START_TEST(test_capabilities_of_open_files_are_renewed_while_the_program_computes)
{
	struct cl_opts o = {
		.nservers = NSRV, .nmeta = 1, .stripe_unit = SU, .cap_lifetime_s = 4};
	struct cluster *cl = cl_start(&o);
	rpfs_client_t *a, *b;
	rpfs_file_t *fa, *fb;
	rpfs_request_t *req;
	struct rpfs_stat attr;
	static char buf[2 * SU];
	uint64_t g0, g1;

	ck_assert_msg(cl, "couldn't start %d servers (see stderr)", NSRV);
	a = client(cl);
	fa = create(a, "/renewed");
	rpfs_file_attr(fa, &attr);
	rpfs_close(fa); /* a renews nothing now: the count is b's */
	b = client(cl);
	ck_assert_msg(rpfs_open_attr(b, &attr, &fb) == 0, "open_attr: %s", rpfs_errmsg());
	write_all(fb, buf, sizeof(buf), 0);
	g0 = get(a, 0, "req.getattr");
	usleep(6000 * 1000); /* 1.5 lifetimes: renewed after 2 s, 4 s */
	g1 = get(a, 0, "req.getattr");
	ck_assert_msg(g1 >= g0 + 2,
		      "%llu renewals in 6 s of a 4 s capability while the program "
		      "computed (want 2 or more)",
		      (unsigned long long)(g1 - g0));
	ck_assert_msg(rpfs_ipwrite(fb, buf, sizeof(buf), 0, &req) == 0, "ipwrite: %s",
		      rpfs_errmsg());
	ck_assert_msg(rpfs_wait(req) == (ssize_t)sizeof(buf), "write after 6 s: %s",
		      rpfs_errmsg());
	rpfs_close(fb);
	rpfs_finalize(b);
	rpfs_finalize(a);
	cl_destroy(cl);
}
END_TEST

static Suite *stats_suite(void)
{
	Suite *s = suite_create("stats");
	TCase *tc = tcase_create("stats");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_counters_follow_known_writes_and_reads);
	tcase_add_test(tc, test_storage_sizes_are_the_servers_file_systems);
	tcase_add_test(tc, test_a_file_system_shared_by_servers_counts_once);
	tcase_add_test(
		tc,
		test_connections_of_a_client_with_open_files_outlive_the_idle_timeout);
	tcase_add_test(
		tc,
		test_capabilities_of_open_files_are_renewed_while_the_program_computes);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return cl_run_suite(argc, argv, stats_suite);
}
