/* A set of rpfsd servers on loopback for integration tests.
 *
 * cl_start() makes a temporary directory under /tmp (one per cluster) and
 * has librpfs's launcher (rpfs_admin.h, the one `rpfs up` uses) write the
 * config and key there for servers at free ports the kernel picks, start
 * one `rpfsd --foreground` per server and wait until each answers rpfs_ping
 * (from a fresh process: see cl_child_main). Tests then stop (SIGTERM),
 * kill -9 and restart single servers to check failure behaviour, and
 * cl_destroy() stops everything and removes the directory.
 *
 * The servers are children of the test process and get SIGTERM when it
 * dies (PR_SET_PDEATHSIG), so a failed or timed-out test leaves no daemons
 * behind. The ping that checks a server is up runs in a new process (this
 * program run afresh), so the test process holds no libfabric state of ours
 * and may itself fork clients, as long as it has no client of its own then:
 * on verbs a child cannot use the device its parent opened.
 *
 * rpfsd is $RPFSD, else ./rpfsd (automake runs tests from the top build
 * directory, where the server is built). */
#ifndef RPFS_TEST_CLUSTER_H
#define RPFS_TEST_CLUSTER_H

#include <check.h>
#include <stdint.h>

struct cluster;

/* Check ends a test whose assertion fails with _exit, so cl_destroy does not
 * run: main() calls cl_session_begin() before the tests and
 * cl_session_end() after them, which removes every temporary directory a
 * test of this run left behind (their servers die with the test). */
void cl_session_begin(void);
void cl_session_end(void);

/* Servers are pinged from this program run afresh: main() must first call
 * cl_child_main, which returns 1 (and sets *status) in such a child. */
int cl_child_main(int argc, char **argv, int *status);

/* The whole main() of a test program: cl_child_main, then the suite
 * make_suite() returns within cl_session_begin/end, SIGPIPE ignored (a
 * dead server must not kill the test). Returns the exit status. */
int cl_run_suite(int argc, char **argv, Suite *(*make_suite)(void));

struct cl_opts {
	int nservers;		/* all are I/O servers */
	int nmeta;		/* the first nmeta are also metadata servers (0: 1) */
	uint64_t stripe_unit;	/* 0: 64 KiB, so that small tests cross servers */
	int timeout_ms;		/* transport timeout, 0: the default */
	const char *force_path; /* NULL, "inline", "fast" or "bulk" */
	int idle_timeout_s;	/* servers drop idle connections, 0: the default */
	int cap_lifetime_s;	/* capabilities last, 0: the default */
};

/* Start a cluster; NULL on failure (the reason and the server log tails are
 * printed on stderr). */
struct cluster *cl_start(const struct cl_opts *o);
/* Stop every server and remove the temporary directory. */
void cl_destroy(struct cluster *cl);

const char *cl_config(const struct cluster *cl);     /* config file path */
const char *cl_dir(const struct cluster *cl, int i); /* server i's storage dir */
int cl_port(const struct cluster *cl, int i);
int cl_nservers(const struct cluster *cl);

/* SIGTERM and wait (bounded); returns 0 if it exited cleanly with status 0. */
int cl_stop(struct cluster *cl, int i);
/* SIGKILL and reap. */
int cl_kill(struct cluster *cl, int i);
/* Send any signal (SIGSTOP/SIGCONT to simulate a hung server). */
int cl_signal(struct cluster *cl, int i, int sig);
/* Start server i again (same port and directory) and wait until pingable. */
int cl_restart(struct cluster *cl, int i);
/* The same with one more rpfsd argument (e.g. "--accept-empty-metadata"). */
int cl_restart_with(struct cluster *cl, int i, const char *arg);
/* Server i's log (its stdout and stderr). */
const char *cl_log(const struct cluster *cl, int i);
int cl_stop_all(struct cluster *cl);
int cl_start_all(struct cluster *cl);

#endif
