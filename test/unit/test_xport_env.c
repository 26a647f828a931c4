/* The environment rpfs sets for libfabric (xport_domain.c) is set when the
 * program is loaded, never while threads run: setenv adding a variable
 * moves the environ array and frees the old one under any getenv walking
 * it in another thread (a SIGSEGV in getenv at rpfsd's start-up, where one
 * thread opened its peers' fabric while the main thread was in libfabric's
 * first fi_getinfo).
 *
 * The test runs itself again with an environment of its own choosing (no
 * FI_* variables but those a case sets), so the result does not depend on
 * what the caller exported. */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth.h"
#include "params.h"
#include "xport.h"

extern char **environ;

#define CHILD_MARK "RPFS_TEST_XPORT_ENV_CHILD"

/* In the child: what the environment held when main began, before Check or
 * anything of the test ran (the constructor had run by then). */
static char at_main_monitor[64], at_main_rx[64];

static void save(char *dst, size_t len, const char *name)
{
	const char *v = getenv(name);

	snprintf(dst, len, "%s", v ? v : "(unset)");
}

static struct xp_fabric *open_client(void)
{
	struct xp_params p;
	struct auth_key key;
	struct xp_fabric *fab = NULL;

	xp_params_default(&p);
	snprintf(p.provider, sizeof(p.provider), "tcp");
	memset(&key, 0x5a, sizeof(key));
	ck_assert_int_eq(xp_fabric_open(&p, XP_CLIENT, &key, &fab), 0);
	return fab;
}

START_TEST(test_set_before_main)
{
	const char *given = getenv("RPFS_TEST_GIVEN_RX");

	ck_assert_str_eq(at_main_monitor, "disabled");
	/* a value the user set is kept; else ours */
	ck_assert_str_eq(at_main_rx, given ? given : "512");
}
END_TEST

START_TEST(test_opening_leaves_environ_alone)
{
	char **before = environ;
	struct xp_fabric *fab = open_client();

	ck_assert_ptr_eq(environ, before);
	xp_fabric_close(fab);
	fab = open_client();
	ck_assert_ptr_eq(environ, before);
	xp_fabric_close(fab);
	ck_assert_str_eq(getenv("FI_MR_CACHE_MONITOR"), "disabled");
}
END_TEST

static atomic_bool stop;

static void *reader(void *arg)
{
	unsigned long n = 0;

	(void)arg;
	while (!atomic_load(&stop)) {
		/* names libfabric reads at its initialisation, and one that is
		 * not there (a getenv that walks the whole array) */
		n += getenv("FI_PROVIDER") != NULL;
		n += getenv("FI_LOG_LEVEL") != NULL;
		n += getenv("RPFS_TEST_NOT_THERE") != NULL;
	}
	return (void *)n;
}

/* What rpfsd does at start-up: fabrics opened on threads while others read
 * the environment. Before the fix this read freed memory (ASan: a
 * heap-use-after-free in getenv); now nothing moves. */
START_TEST(test_open_beside_getenv)
{
	pthread_t thr[2];
	char **before = environ;

	atomic_store(&stop, false);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&thr[i], NULL, reader, NULL), 0);
	for (int i = 0; i < 3; i++)
		xp_fabric_close(open_client());
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(thr[i], NULL);
	ck_assert_ptr_eq(environ, before);
}
END_TEST

/* Run this program again with env: the variables a case chooses, and
 * those a sanitizer or the test harness needs. */
static int run_child(const char *self, const char *monitor, const char *rx)
{
	static const char *keep[] = {
		"PATH=", "ASAN_OPTIONS=",    "UBSAN_OPTIONS=", "LSAN_OPTIONS=",
		"CK_",	 "LD_LIBRARY_PATH=", "HOME=",	       "TMPDIR="};
	char *env[64], mon[128], rxv[128], given[128];
	int n = 0, status;
	pid_t pid;

	for (char **e = environ; *e && n < 48; e++)
		for (size_t k = 0; k < sizeof(keep) / sizeof(keep[0]); k++)
			if (!strncmp(*e, keep[k], strlen(keep[k]))) {
				env[n++] = *e;
				break;
			}
	env[n++] = CHILD_MARK "=1";
	if (monitor) {
		snprintf(mon, sizeof(mon), "FI_MR_CACHE_MONITOR=%s", monitor);
		env[n++] = mon;
	}
	if (rx) {
		snprintf(rxv, sizeof(rxv), "FI_TCP_MAX_RX_SIZE=%s", rx);
		snprintf(given, sizeof(given), "RPFS_TEST_GIVEN_RX=%s", rx);
		env[n++] = rxv;
		env[n++] = given;
	}
	env[n] = NULL;
	pid = fork();
	if (pid == 0) {
		execve(self, (char *[]){(char *)self, NULL}, env);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 1;
	if (!WIFEXITED(status)) {
		fprintf(stderr, "child (monitor %s, rx %s) ended by signal %d\n",
			monitor ? monitor : "unset", rx ? rx : "unset", WTERMSIG(status));
		return 1;
	}
	return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
	Suite *s;
	TCase *tc;
	SRunner *sr;
	int failed;

	if (argc < 1)
		return EXIT_FAILURE;
	if (!getenv(CHILD_MARK)) {
		/* no FI_* at all; the user's own values for both */
		int r = run_child(argv[0], NULL, NULL);

		r |= run_child(argv[0], "userfaultfd", "1024");
		return r ? EXIT_FAILURE : EXIT_SUCCESS;
	}
	save(at_main_monitor, sizeof(at_main_monitor), "FI_MR_CACHE_MONITOR");
	save(at_main_rx, sizeof(at_main_rx), "FI_TCP_MAX_RX_SIZE");
	s = suite_create("xport_env");
	tc = tcase_create("env");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_set_before_main);
	tcase_add_test(tc, test_opening_leaves_environ_alone);
	tcase_add_test(tc, test_open_beside_getenv);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
