/* daemon_fork and daemon_notify (common/daemon.h): the command that starts
 * a daemon exits with the daemon's word about its start-up, prints the
 * message of a failed one, and says so when the daemon died without a
 * word; the daemon runs in its own session with stdin and stdout on
 * /dev/null.
 *
 * Each test runs "a command" in a forked process with stderr on a pipe:
 * the command calls daemon_fork, and its child (the daemon) does what the
 * test says. The test reads the command's exit status and stderr. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon.h"

enum daemon_act { SAY_UP, SAY_FAILED, DIE_SILENTLY, SAY_UP_IF_DETACHED };

/* The daemon's part, after daemon_fork returned fd. */
static void daemon_part(int fd, enum daemon_act act)
{
	struct stat in, out, nul;

	switch (act) {
	case SAY_UP:
		daemon_notify(fd, 0, "ignored: a daemon that is up has nothing to say");
		break;
	case SAY_FAILED:
		daemon_notify(fd, 3, "testd: couldn't listen on 127.0.0.1:1: in use");
		break;
	case DIE_SILENTLY:
		break;
	case SAY_UP_IF_DETACHED:
		if (getsid(0) == getpid() && !fstat(0, &in) && !fstat(1, &out) &&
		    !stat("/dev/null", &nul) && in.st_rdev == nul.st_rdev &&
		    out.st_rdev == nul.st_rdev && S_ISCHR(in.st_mode) &&
		    S_ISCHR(out.st_mode))
			daemon_notify(fd, 0, NULL);
		else
			daemon_notify(fd, 4,
				      "not in its own session, or stdio not /dev/null");
		break;
	}
	_exit(0);
}

/* Run the command; its exit status, and its stderr in err. */
static int run_command(enum daemon_act act, char *err, size_t errlen)
{
	int pfd[2], st;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe(pfd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(pfd[0]);
		dup2(pfd[1], 2);
		close(pfd[1]);
		daemon_part(daemon_fork("testd"), act);
	}
	close(pfd[1]);
	/* Until the end of the pipe: the daemon has its stderr too. */
	while (got < errlen - 1 && (n = read(pfd[0], err + got, errlen - 1 - got)) > 0)
		got += (size_t)n;
	err[got] = 0;
	close(pfd[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

START_TEST(a_daemon_that_is_up_makes_its_command_exit_0_silently)
{
	char err[512];

	ck_assert_int_eq(run_command(SAY_UP, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "");
}
END_TEST

START_TEST(a_daemon_that_failed_makes_its_command_exit_with_its_status_and_message)
{
	char err[512];

	ck_assert_int_eq(run_command(SAY_FAILED, err, sizeof(err)), 3);
	ck_assert_str_eq(err, "testd: couldn't listen on 127.0.0.1:1: in use\n");
}
END_TEST

START_TEST(a_daemon_that_died_without_a_word_makes_its_command_say_so)
{
	char err[512];

	ck_assert_int_eq(run_command(DIE_SILENTLY, err, sizeof(err)), 1);
	ck_assert_str_eq(err, "testd: the background process died during start-up\n");
}
END_TEST

START_TEST(a_daemon_has_its_own_session_and_no_terminal_stdio)
{
	char err[512];

	ck_assert_msg(run_command(SAY_UP_IF_DETACHED, err, sizeof(err)) == 0, "%s", err);
}
END_TEST

static Suite *daemon_suite(void)
{
	Suite *s = suite_create("daemon");
	TCase *tc = tcase_create("start-up word");

	tcase_add_test(tc, a_daemon_that_is_up_makes_its_command_exit_0_silently);
	tcase_add_test(
		tc,
		a_daemon_that_failed_makes_its_command_exit_with_its_status_and_message);
	tcase_add_test(tc, a_daemon_that_died_without_a_word_makes_its_command_say_so);
	tcase_add_test(tc, a_daemon_has_its_own_session_and_no_terminal_stdio);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(daemon_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
