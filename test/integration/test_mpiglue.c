/* The MPI glue both MPI-IO front ends use (client/rpfs_mpi.h): the rules
 * the ROMIO driver and the Open MPI components must agree on, checked once
 * here without an MPI.
 *
 * rpfs_mpi.h's inline part is compiled against "mpi.h" below: just enough
 * of an MPI (error classes and amode bits with values of its own, and an
 * MPI_COMM_SELF whose attribute delete callback the test runs as
 * MPI_Finalize would), so the table and the finalize watch are exercised
 * as each front end compiles them. The process's client is made for real
 * against a one-server cluster; whether it still lives is seen from
 * outside: a call with a bad hint returns the living client (later hints
 * are ignored) but fails once the client has ended (a new one is made). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* ---- "mpi.h" ---------------------------------------------------------------- */
#define MPI_VERSION 3
#define MPI_SUCCESS 0
enum {
	MPI_ERR_IO = 101,
	MPI_ERR_NO_SUCH_FILE,
	MPI_ERR_FILE_EXISTS,
	MPI_ERR_ACCESS,
	MPI_ERR_READ_ONLY,
	MPI_ERR_NO_SPACE,
	MPI_ERR_QUOTA,
	MPI_ERR_NO_MEM,
	MPI_ERR_FILE_IN_USE,
	MPI_ERR_BAD_FILE,
	MPI_ERR_UNSUPPORTED_OPERATION,
	MPI_ERR_ARG,
};
#define MPI_MODE_CREATE 0x100
#define MPI_MODE_RDONLY 0x200
#define MPI_MODE_WRONLY 0x400
#define MPI_MODE_RDWR	0x800
#define MPI_MODE_EXCL	0x1000
typedef int MPI_Comm;
#define MPI_COMM_SELF 7
typedef int MPI_Comm_copy_attr_function(MPI_Comm, int, void *, void *, void *, int *);
typedef int MPI_Comm_delete_attr_function(MPI_Comm, int, void *, void *);
#define MPI_COMM_NULL_COPY_FN ((MPI_Comm_copy_attr_function *)0)

/* MPI_COMM_SELF's one attribute, as the fake MPI keeps it. */
static MPI_Comm_delete_attr_function *self_delete;
static int self_keyval = -1, keyvals_made, keyvals_freed;

static int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *copy,
				   MPI_Comm_delete_attr_function *del, int *keyval,
				   void *extra)
{
	(void)copy;
	(void)extra;
	self_delete = del;
	*keyval = ++keyvals_made;
	return MPI_SUCCESS;
}

static int PMPI_Comm_set_attr(MPI_Comm comm, int keyval, void *value)
{
	(void)value;
	ck_assert_int_eq(comm, MPI_COMM_SELF);
	self_keyval = keyval;
	return MPI_SUCCESS;
}

static int PMPI_Comm_free_keyval(int *keyval)
{
	ck_assert_int_eq(*keyval, self_keyval);
	keyvals_freed++;
	return MPI_SUCCESS;
}

/* MPI_Finalize frees MPI_COMM_SELF: its attribute's delete callback runs. */
static void mpi_finalize(void)
{
	ck_assert_ptr_nonnull(self_delete);
	self_delete(MPI_COMM_SELF, self_keyval, NULL, NULL);
}
/* ---- end of "mpi.h" --------------------------------------------------------- */

#include "cluster.h"
#include "rpfs.h"
#include "rpfs_mpi.h"
#include "testkit.h"

/* The "client" tests' one-server cluster: started in each test's own
 * process (a checked fixture), as the client is. */
static struct cluster *cl;

static void start_server(void)
{
	struct cl_opts o = {.nservers = 1};

	cl = cl_start(&o);
	ck_assert_msg(cl, "couldn't start a server (see stderr)");
}

static void stop_server(void)
{
	cl_destroy(cl);
}

/* ---- error classes ---------------------------------------------------------- */

START_TEST(test_each_errno_has_the_mpi_error_class_that_names_it)
{
	static const struct {
		int err, cls;
	} want[] = {
		{ENOENT, MPI_ERR_NO_SUCH_FILE},
		{EEXIST, MPI_ERR_FILE_EXISTS},
		{EACCES, MPI_ERR_ACCESS},
		{EPERM, MPI_ERR_ACCESS},
		{EROFS, MPI_ERR_READ_ONLY},
		{ENOSPC, MPI_ERR_NO_SPACE},
		{EDQUOT, MPI_ERR_QUOTA},
		{ENOMEM, MPI_ERR_NO_MEM},
		{EBUSY, MPI_ERR_FILE_IN_USE},
		{ETXTBSY, MPI_ERR_FILE_IN_USE},
		{ENAMETOOLONG, MPI_ERR_BAD_FILE},
		{ENOTDIR, MPI_ERR_BAD_FILE},
		{EISDIR, MPI_ERR_BAD_FILE},
		{ELOOP, MPI_ERR_BAD_FILE},
		{ENOSYS, MPI_ERR_UNSUPPORTED_OPERATION},
		{EOPNOTSUPP, MPI_ERR_UNSUPPORTED_OPERATION},
		{EINVAL, MPI_ERR_ARG},
		/* the service failing, integrity included */
		{EIO, MPI_ERR_IO},
		{ETIMEDOUT, MPI_ERR_IO},
		{ECONNRESET, MPI_ERR_IO},
		{EPROTO, MPI_ERR_IO},
		{EBADMSG, MPI_ERR_IO},
		{ESTALE, MPI_ERR_IO},
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ck_assert_msg(rpfs_mpi_err_class(-want[i].err) == want[i].cls,
			      "%s: class %d, want %d", strerror(want[i].err),
			      rpfs_mpi_err_class(-want[i].err), want[i].cls);
		/* the sign does not matter */
		ck_assert_int_eq(rpfs_mpi_err_class(want[i].err), want[i].cls);
	}
	ck_assert_int_eq(rpfs_mpi_err_class(0), MPI_SUCCESS);
}
END_TEST

START_TEST(test_an_error_text_is_what_then_the_message)
{
	char text[128];

	rpfs_mpi_err_text(text, sizeof(text), -EIO, "rpfs_writev",
			  "I/O server 1 (s1, 127.0.0.1:7001): timed out");
	ck_assert_str_eq(text,
			 "rpfs_writev: I/O server 1 (s1, 127.0.0.1:7001): timed out");
	/* no message: the errno's own text */
	rpfs_mpi_err_text(text, sizeof(text), -ENOMEM, "file view", "");
	ck_assert_str_eq(text, "file view: Cannot allocate memory");
}
END_TEST

/* ---- opening ---------------------------------------------------------------- */

START_TEST(test_the_mpi_access_mode_maps_to_the_glue_bits)
{
	ck_assert_uint_eq(rpfs_mpi_amode(MPI_MODE_RDONLY), RPFS_MPI_RDONLY);
	ck_assert_uint_eq(rpfs_mpi_amode(MPI_MODE_WRONLY | MPI_MODE_CREATE),
			  RPFS_MPI_WRONLY | RPFS_MPI_CREATE);
	ck_assert_uint_eq(rpfs_mpi_amode(MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL),
			  RPFS_MPI_CREATE | RPFS_MPI_EXCL);
}
END_TEST

START_TEST(test_a_created_file_has_the_given_mode_or_0666_less_the_umask)
{
	umask(027);
	ck_assert_uint_eq(rpfs_mpi_create_mode(0600), 0600);
	ck_assert_uint_eq(rpfs_mpi_create_mode(-1), 0640);
	/* the umask is left as it was */
	ck_assert_uint_eq(umask(022), 027);
}
END_TEST

/* ---- the size a read trusts ------------------------------------------------- */

START_TEST(test_only_a_whole_write_of_something_raises_the_known_size)
{
	uint64_t known = 100;

	rpfs_mpi_wrote(&known, 5000, 0, 0); /* nothing, maybe far past the end */
	ck_assert_uint_eq(known, 100);
	rpfs_mpi_wrote(&known, 5000, 4096, 1000); /* short */
	ck_assert_uint_eq(known, 100);
	rpfs_mpi_wrote(&known, 5000, 4096, -EIO); /* failed */
	ck_assert_uint_eq(known, 100);
	rpfs_mpi_wrote(&known, 5000, 4096, 4096);
	ck_assert_uint_eq(known, 5000);
	rpfs_mpi_wrote(&known, 200, 100, 100); /* within: no lowering */
	ck_assert_uint_eq(known, 5000);
}
END_TEST

START_TEST(test_a_size_query_sets_the_known_size_a_preallocation_only_grows_it)
{
	uint64_t known = 5000;

	rpfs_mpi_size_is(&known, 10); /* truncated meanwhile */
	ck_assert_uint_eq(known, 10);
	rpfs_mpi_size_reaches(&known, 4);
	ck_assert_uint_eq(known, 10);
	rpfs_mpi_size_reaches(&known, 1 << 20);
	ck_assert_uint_eq(known, 1 << 20);
}
END_TEST

START_TEST(test_a_read_within_the_known_size_asks_no_server)
{
	struct rpfs_seg segs[] = {{0, 10}, {90, 10}};
	uint64_t known = 100;

	/* no file at all: a size query would fail the test */
	ck_assert_uint_eq(rpfs_mpi_read_count(&known, NULL, segs, 2, 20), 20);
}
END_TEST

START_TEST(test_a_read_past_the_known_size_counts_only_bytes_before_eof)
{
	struct rpfs_seg across = {50, 100}, two[] = {{10, 10}, {90, 40}};
	char buf[100] = {0};
	uint64_t known = 0;
	rpfs_client_t *c;
	rpfs_file_t *f;

	c = client(cl);
	f = create(c, "/eof");
	write_all(f, buf, 100, 0);

	ck_assert_uint_eq(rpfs_mpi_read_count(&known, f, &across, 1, 100), 50);
	ck_assert_uint_eq(known, 100); /* learnt from the servers */
	ck_assert_uint_eq(rpfs_mpi_read_count(&known, f, two, 2, 50), 20);
	rpfs_close(f);
	rpfs_finalize(c);
}
END_TEST

/* ---- list I/O ---------------------------------------------------------------- */

START_TEST(test_list_pieces_that_touch_merge_in_each_list_on_its_own)
{
	char buf[64];
	struct rpfs_mpi_list l;

	ck_assert_int_eq(rpfs_mpi_list_init(&l, 0, 0), 0);
	/* a contiguous buffer over a strided view */
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(rpfs_mpi_add_mem(&l, buf + 8 * i, 8), 0);
		ck_assert_int_eq(rpfs_mpi_add_seg(&l, 1000 + 100 * (uint64_t)i, 8), 0);
	}
	ck_assert_int_eq(rpfs_mpi_add_seg(&l, 1308, 4), 0);	/* touches the last */
	ck_assert_int_eq(rpfs_mpi_add_mem(&l, buf + 40, 0), 0); /* nothing */
	ck_assert_int_eq(l.nmem, 1);
	ck_assert_ptr_eq(l.mem[0].iov_base, buf);
	ck_assert_uint_eq(l.mem[0].iov_len, 32);
	ck_assert_int_eq(l.nfile, 4);
	ck_assert_uint_eq(l.file[3].off, 1300);
	ck_assert_uint_eq(l.file[3].len, 12);
	ck_assert_uint_eq(l.first, 1000);
	ck_assert_uint_eq(l.end, 1312);
	rpfs_mpi_list_free(&l);
}
END_TEST

START_TEST(test_a_list_grows_past_its_room_and_keeps_its_start)
{
	struct rpfs_mpi_list l;
	char buf[4];

	/* an empty list's range ends where the access starts */
	ck_assert_int_eq(rpfs_mpi_list_init(&l, 4, 4096), 0);
	ck_assert_uint_eq(l.end, 4096);
	for (uint64_t i = 0; i < 100; i++) {
		ck_assert_int_eq(rpfs_mpi_add_seg(&l, 8192 + 2 * i, 1), 0);
		/* buf[0], buf[2], buf[0], ...: never touching */
		ck_assert_int_eq(rpfs_mpi_add_mem(&l, buf + 2 * (i % 2), 1), 0);
	}
	ck_assert_int_eq(l.nfile, 100);
	ck_assert_uint_eq(l.file[99].off, 8192 + 198);
	ck_assert_uint_eq(l.end, 8192 + 199);
	ck_assert_int_eq(l.nmem, 100);
	rpfs_mpi_list_free(&l);
	ck_assert_ptr_null(l.mem);
	ck_assert_ptr_null(l.file);
}
END_TEST

/* ---- the process's client ---------------------------------------------------- */

/* Hints of a test: rpfs_config and one more key, value. */
struct hints {
	const char *config, *key, *value;
};

static int hint(void *info, const char *key, int valuelen, char *value)
{
	const struct hints *h = info;

	if (!strcmp(key, "rpfs_config") && h->config != NULL)
		return snprintf(value, (size_t)valuelen + 1, "%s", h->config) >= 0;
	if (h->key != NULL && !strcmp(key, h->key))
		return snprintf(value, (size_t)valuelen + 1, "%s", h->value) >= 0;
	return 0;
}

static int watches;
static void watch(void)
{
	watches++;
}

/* rpfs_mpi_client with hints config and key = value. */
static int get_client(const char *config, const char *key, const char *value,
		      rpfs_client_t **c)
{
	struct hints h = {config, key, value};
	struct rpfs_mpi_hints mh = {hint, &h, 256};

	return rpfs_mpi_client(&mh, watch, c);
}

/* The client c still lives: a call whose hint is bad returns it. */
static void assert_alive(const char *config, rpfs_client_t *c)
{
	rpfs_client_t *again = NULL;

	ck_assert_int_eq(get_client(config, "rpfs_timeout_ms", "soon", &again), 0);
	ck_assert_ptr_eq(again, c);
}

/* The client has ended: a call whose hint is bad makes a new one, which
 * fails. */
static void assert_ended(const char *config)
{
	rpfs_client_t *c = NULL;

	ck_assert_int_eq(get_client(config, "rpfs_timeout_ms", "soon", &c), -EIO);
	ck_assert_ptr_null(c);
}

/* The process's client, made with the cluster's config. */
static rpfs_client_t *made_client(void)
{
	rpfs_client_t *c = NULL;

	ck_assert_int_eq(get_client(cl_config(cl), NULL, NULL, &c), 0);
	ck_assert_ptr_nonnull(c);
	return c;
}

START_TEST(test_the_first_call_makes_the_client_later_hints_are_ignored)
{
	assert_alive(cl_config(cl), made_client());
	ck_assert_int_eq(watches, 1); /* once, for the one client */
}
END_TEST

START_TEST(test_a_client_that_cannot_start_is_eio_whatever_the_config_errno)
{
	rpfs_client_t *c = NULL;

	/* the config's -ENOENT is not the file's MPI_ERR_NO_SUCH_FILE */
	ck_assert_int_eq(get_client("/nonexistent/rpfs.conf", NULL, NULL, &c), -EIO);
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(rpfs_errmsg(), "/nonexistent/rpfs.conf"),
		      "message \"%s\" does not name the config", rpfs_errmsg());
	ck_assert_int_eq(watches, 0);
}
END_TEST

START_TEST(test_a_bad_hint_fails_the_client_with_a_message_naming_it)
{
	assert_ended(cl_config(cl)); /* no client yet: this makes one */
	ck_assert_msg(strstr(rpfs_errmsg(), "timeout_ms"),
		      "message \"%s\" does not name the hint", rpfs_errmsg());
}
END_TEST

START_TEST(test_mpi_finalize_with_no_file_open_ends_the_client)
{
	struct hints h = {cl_config(cl), NULL, NULL};
	struct rpfs_mpi_hints mh = {hint, &h, 256};
	rpfs_client_t *c = NULL;

	/* the front ends' watch: an attribute on MPI_COMM_SELF */
	ck_assert_int_eq(rpfs_mpi_client(&mh, rpfs_mpi_watch_finalize, &c), 0);
	ck_assert_int_eq(keyvals_made, 1);
	mpi_finalize();
	ck_assert_int_eq(keyvals_freed, 1);
	assert_ended(cl_config(cl));
}
END_TEST

START_TEST(test_open_files_keep_the_client_past_mpi_finalize_until_the_last_close)
{
	rpfs_client_t *c = made_client();

	rpfs_mpi_file_opened();
	rpfs_mpi_file_opened();
	rpfs_mpi_finalize_begun();
	assert_alive(cl_config(cl), c); /* HDF5 may yet write and close */
	rpfs_mpi_file_closed();
	assert_alive(cl_config(cl), c);
	rpfs_mpi_file_closed();
	assert_ended(cl_config(cl));
}
END_TEST

START_TEST(test_a_client_made_after_mpi_finalize_began_is_not_watched)
{
	made_client();
	rpfs_mpi_finalize_begun();
	/* a delete or open from a later MPI_COMM_SELF callback */
	made_client();
	ck_assert_int_eq(watches, 1);
}
END_TEST

/* ---- opening through the client ---------------------------------------------- */

START_TEST(test_a_write_only_open_may_read_too_and_create_honours_excl)
{
	unsigned wo = RPFS_MPI_WRONLY | RPFS_MPI_CREATE;
	char in[16] = "written", out[16] = "";
	rpfs_client_t *c = client(cl);
	rpfs_file_t *f = NULL, *g = NULL;

	ck_assert_int_eq(rpfs_mpi_open(c, "/wo", wo, 0644, NULL, &f), 0);
	write_all(f, in, sizeof(in), 0);
	/* widened to read-write: collective writes read the holes they fill */
	ck_assert_int_eq(rpfs_pread(f, out, sizeof(out), 0), (ssize_t)sizeof(out));
	ck_assert_str_eq(out, "written");
	/* without EXCL an existing file is opened, with it refused */
	ck_assert_int_eq(rpfs_mpi_open(c, "/wo", wo, 0644, NULL, &g), 0);
	rpfs_close(g);
	ck_assert_int_eq(rpfs_mpi_open(c, "/wo", wo | RPFS_MPI_EXCL, 0644, NULL, &g),
			 -EEXIST);
	ck_assert_int_eq(rpfs_mpi_open(c, "/none", RPFS_MPI_RDONLY, -1, NULL, &g),
			 -ENOENT);
	rpfs_close(f);
	rpfs_finalize(c);
}
END_TEST

static Suite *mpiglue_suite(void)
{
	Suite *s = suite_create("mpiglue");
	TCase *rules = tcase_create("rules");
	TCase *client = tcase_create("client");

	tcase_add_test(rules, test_each_errno_has_the_mpi_error_class_that_names_it);
	tcase_add_test(rules, test_an_error_text_is_what_then_the_message);
	tcase_add_test(rules, test_the_mpi_access_mode_maps_to_the_glue_bits);
	tcase_add_test(rules,
		       test_a_created_file_has_the_given_mode_or_0666_less_the_umask);
	tcase_add_test(rules, test_only_a_whole_write_of_something_raises_the_known_size);
	tcase_add_test(
		rules,
		test_a_size_query_sets_the_known_size_a_preallocation_only_grows_it);
	tcase_add_test(rules, test_a_read_within_the_known_size_asks_no_server);
	tcase_add_test(rules, test_list_pieces_that_touch_merge_in_each_list_on_its_own);
	tcase_add_test(rules, test_a_list_grows_past_its_room_and_keeps_its_start);
	suite_add_tcase(s, rules);

	tcase_set_timeout(client, 120);
	tcase_add_checked_fixture(client, start_server, stop_server);
	tcase_add_test(client,
		       test_a_read_past_the_known_size_counts_only_bytes_before_eof);
	tcase_add_test(client,
		       test_the_first_call_makes_the_client_later_hints_are_ignored);
	tcase_add_test(client,
		       test_a_client_that_cannot_start_is_eio_whatever_the_config_errno);
	tcase_add_test(client, test_a_bad_hint_fails_the_client_with_a_message_naming_it);
	tcase_add_test(client, test_mpi_finalize_with_no_file_open_ends_the_client);
	tcase_add_test(
		client,
		test_open_files_keep_the_client_past_mpi_finalize_until_the_last_close);
	tcase_add_test(client,
		       test_a_client_made_after_mpi_finalize_began_is_not_watched);
	tcase_add_test(client,
		       test_a_write_only_open_may_read_too_and_create_honours_excl);
	suite_add_tcase(s, client);
	return s;
}

int main(int argc, char **argv)
{
	return cl_run_suite(argc, argv, mpiglue_suite);
}
