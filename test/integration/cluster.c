/* A set of rpfsd servers on loopback for integration tests (see cluster.h):
 * a thin user of librpfs's launcher (rpfs_admin.h), which `rpfs up` uses
 * too, with children that die with the test and a ping from a fresh
 * process. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkdtemp, nftw */
#endif

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster.h"
#include "rpfs.h"
#include "rpfs_admin.h"
#include "testenv.h"

struct cluster {
	pid_t owner; /* the process that started it (forked clients must not clean) */
	char tmp[256];
	rpfs_launch_t *l;
	struct rpfs_server_info *s; /* per server, as the launcher wrote them */
};

static const char *rpfsd_path(void)
{
	const char *p = getenv("RPFSD");

	return p && *p ? p : "./rpfsd";
}

/* A launcher's failure: its message and the failing server's log. */
static int report(struct cluster *cl, int ret)
{
	int bad = cl->l ? rpfs_launch_failed(cl->l) : -1;

	if (ret) {
		fprintf(stderr, "cluster: %s\n", rpfs_errmsg());
		if (bad >= 0)
			rpfs_launch_print_log_tail(cl->l, bad, stderr);
	}
	return ret;
}

/* The ping's own process: a client of its own, the error message to fd. */
static int ping_main(const char *config, int i, int fd)
{
	rpfs_client_t *c;
	double us;
	int ret;

	ret = rpfs_init(config, &c);
	if (!ret) {
		ret = rpfs_ping(c, i, &us);
		if (ret) {
			const char *m = rpfs_errmsg();

			if (write(fd, m, strlen(m)) < 0)
				return 2;
		}
		rpfs_finalize(c);
	} else {
		dprintf(fd, "rpfs_init: %s: %s", strerror(-ret), rpfs_errmsg());
	}
	return ret ? 1 : 0;
}

int cl_child_main(int argc, char **argv, int *status)
{
	if (argc != 5 || strcmp(argv[1], "--cl-ping"))
		return 0;
	*status = ping_main(argv[2], atoi(argv[3]), atoi(argv[4]));
	return 1;
}

/* The launcher's ping: one in a new process, this program run afresh
 * (fork + exec), so that neither this process's libfabric state nor the
 * test's clients matter (a child of a process that has used verbs cannot
 * use the device the parent opened). The error message comes back through
 * a pipe. */
static int ping_fresh(const char *config, int i, char *why, size_t whylen, void *arg)
{
	char idx[16], fd[16];
	int pfd[2], status;
	pid_t pid;
	ssize_t n;

	(void)arg;
	if (pipe(pfd))
		return -EAGAIN;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -EAGAIN;
	}
	if (pid == 0) {
		close(pfd[0]);
		snprintf(idx, sizeof(idx), "%d", i);
		snprintf(fd, sizeof(fd), "%d", pfd[1]);
		execl("/proc/self/exe", "cluster-ping", "--cl-ping", config, idx, fd,
		      (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	n = read(pfd[0], why, whylen - 1);
	why[n > 0 ? n : 0] = 0;
	close(pfd[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -EAGAIN;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EAGAIN;
}

struct cluster *cl_start(const struct cl_opts *o)
{
	struct cluster *cl = calloc(1, sizeof(*cl));
	const char *session = getenv("RPFS_TEST_SESSION");
	struct rpfs_opt set[4];
	struct rpfs_launch_opts lo = {
		.nservers = o->nservers,
		.nmeta = o->nmeta,
		.address = test_addr(),
		.port = RPFS_LAUNCH_ANY_PORTS,
		.stripe_unit = o->stripe_unit ? o->stripe_unit : 64 * 1024,
		.settings = set,
		.mode = RPFS_LAUNCH_CHILD,
		.rpfsd = rpfsd_path(),
		.ping = ping_fresh,
	};
	char timeout[16], idle[16], life[16];

	if (!cl)
		return NULL;
	cl->owner = getpid();
	snprintf(cl->tmp, sizeof(cl->tmp), "/tmp/rpfs-test-%s-XXXXXX",
		 session && *session ? session : "x");
	if (!mkdtemp(cl->tmp)) {
		perror("cluster: mkdtemp");
		free(cl);
		return NULL;
	}
	lo.dir = cl->tmp;
	snprintf(timeout, sizeof(timeout), "%d", o->timeout_ms);
	if (o->timeout_ms)
		set[lo.nsettings++] = (struct rpfs_opt){"timeout_ms", timeout};
	if (o->force_path)
		set[lo.nsettings++] = (struct rpfs_opt){"force_path", o->force_path};
	snprintf(idle, sizeof(idle), "%d", o->idle_timeout_s);
	if (o->idle_timeout_s)
		set[lo.nsettings++] = (struct rpfs_opt){"idle_timeout_s", idle};
	snprintf(life, sizeof(life), "%d", o->cap_lifetime_s);
	if (o->cap_lifetime_s)
		set[lo.nsettings++] = (struct rpfs_opt){"cap_lifetime_s", life};
	cl->s = calloc((size_t)(o->nservers > 0 ? o->nservers : 1), sizeof(*cl->s));
	if (!cl->s || report(cl, rpfs_launch_new(&lo, &cl->l)) ||
	    report(cl, rpfs_launch_start(cl->l)))
		goto fail;
	for (int i = 0; i < o->nservers; i++)
		rpfs_launch_server(cl->l, i, &cl->s[i]);
	return cl;
fail:
	cl_destroy(cl);
	return NULL;
}

const char *cl_config(const struct cluster *cl)
{
	return rpfs_launch_config(cl->l);
}

const char *cl_dir(const struct cluster *cl, int i)
{
	return cl->s[i].dir;
}

int cl_port(const struct cluster *cl, int i)
{
	return cl->s[i].port;
}

int cl_nservers(const struct cluster *cl)
{
	return rpfs_launch_nservers(cl->l);
}

int cl_stop(struct cluster *cl, int i)
{
	return report(cl, rpfs_launch_stop(cl->l, i));
}

int cl_kill(struct cluster *cl, int i)
{
	return rpfs_launch_kill(cl->l, i);
}

int cl_signal(struct cluster *cl, int i, int sig)
{
	return rpfs_launch_signal(cl->l, i, sig);
}

int cl_restart(struct cluster *cl, int i)
{
	return cl_restart_with(cl, i, NULL);
}

int cl_restart_with(struct cluster *cl, int i, const char *arg)
{
	return report(cl, rpfs_launch_restart(cl->l, i, arg));
}

const char *cl_log(const struct cluster *cl, int i)
{
	return rpfs_launch_log(cl->l, i);
}

int cl_stop_all(struct cluster *cl)
{
	return report(cl, rpfs_launch_stop_all(cl->l));
}

int cl_start_all(struct cluster *cl)
{
	return report(cl, rpfs_launch_start(cl->l));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void cl_session_begin(void)
{
	char id[32];

	snprintf(id, sizeof(id), "%ld", (long)getpid());
	setenv("RPFS_TEST_SESSION", id, 1);
}

void cl_session_end(void)
{
	char prefix[64];
	struct dirent *e;
	DIR *d;

	if (getenv("RPFS_KEEP_TMP"))
		return;
	snprintf(prefix, sizeof(prefix), "rpfs-test-%ld-", (long)getpid());
	d = opendir("/tmp");
	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[300];

		if (strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(path, sizeof(path), "/tmp/%s", e->d_name);
		nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	}
	closedir(d);
}

void cl_destroy(struct cluster *cl)
{
	if (!cl)
		return;
	if (getpid() == cl->owner) {
		if (cl->l)
			report(cl, rpfs_launch_stop_all(cl->l)); /* kills stragglers */
		if (!getenv("RPFS_KEEP_TMP"))
			nftw(cl->tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		else
			fprintf(stderr, "cluster: kept %s\n", cl->tmp);
	}
	rpfs_launch_free(cl->l);
	free(cl->s);
	free(cl);
}

int cl_run_suite(int argc, char **argv, Suite *(*make_suite)(void))
{
	SRunner *sr;
	int failed, status;

	if (cl_child_main(argc, argv, &status))
		return status;
	sr = srunner_create(make_suite());
	signal(SIGPIPE, SIG_IGN);
	cl_session_begin();
	srunner_run_all(sr, CK_NORMAL);
	cl_session_end();
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
