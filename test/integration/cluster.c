/* A set of rpfsd servers on loopback for integration tests (see cluster.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* prctl, mkdtemp, nftw */
#endif

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "portprobe.h"
#include "cluster.h"
#include "config.h"
#include "rpfs.h"
#include "testenv.h"

#define CL_UP_MS   20000 /* a server must answer a ping within this */
#define CL_STOP_MS 10000 /* a SIGTERMed server must exit within this */

struct cl_server {
	pid_t pid; /* 0 when not running */
	int port;
	char dir[512];
	char log[512];
};

struct cluster {
	pid_t owner; /* the process that started it (forked clients must not clean) */
	char tmp[256];
	char config[300];
	int n;
	struct cl_server *s;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static const char *rpfsd_path(void)
{
	const char *p = getenv("RPFSD");

	return p && *p ? p : "./rpfsd";
}

/* Distinct free ports: hold all sockets bound at once so the kernel cannot
 * hand out the same ephemeral port twice. */
static int free_ports(int n, struct cl_server *s)
{
	int fds[n];
	int ret = 0, i;

	for (i = 0; i < n; i++)
		fds[i] = -1;
	for (i = 0; i < n && !ret; i++) {
		struct sockaddr_in a = {.sin_family = AF_INET};
		socklen_t len = sizeof(a);

		if (inet_pton(AF_INET, test_addr(), &a.sin_addr) != 1) {
			ret = -EINVAL;
			break;
		}
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a, sizeof(a)) ||
		    getsockname(fds[i], (struct sockaddr *)&a, &len))
			ret = -errno;
		else
			s[i].port = ntohs(a.sin_port);
	}
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return ret;
}

static void log_tail(const struct cl_server *s)
{
	char buf[2048];
	ssize_t n;
	int fd = open(s->log, O_RDONLY);

	if (fd < 0)
		return;
	off_t end = lseek(fd, 0, SEEK_END);

	lseek(fd, end > (off_t)sizeof(buf) - 1 ? end - (off_t)sizeof(buf) + 1 : 0,
	      SEEK_SET);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = 0;
		fprintf(stderr, "--- %s (tail) ---\n%s\n---\n", s->log, buf);
	}
}

static int spawn(struct cluster *cl, int i, const char *extra)
{
	struct cl_server *s = &cl->s[i];
	char name[16];
	pid_t parent = getpid();
	sigset_t term, old;
	pid_t pid;

	snprintf(name, sizeof(name), "%d", i);
	/* Until exec the child is a copy of the test, with Check's SIGTERM
	 * handler, which kills the whole process group: keep SIGTERM blocked
	 * across fork until the child has put the default action back. */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigaddset(&term, SIGINT);
	sigprocmask(SIG_BLOCK, &term, &old);
	fflush(NULL);
	pid = fork();
	if (pid != 0)
		sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		int nul = open("/dev/null", O_RDONLY);

		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		/* A test that dies (failed assertion, Check's timeout) takes its
		 * servers with it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (nul >= 0)
			dup2(nul, 0);
		execl(rpfsd_path(), "rpfsd", "--config", cl->config, "--name", name,
		      "--foreground", extra, (char *)NULL);
		fprintf(stderr, "cluster: couldn't run %s: %s\n", rpfsd_path(),
			strerror(errno));
		_exit(127);
	}
	s->pid = pid;
	return 0;
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

/* One ping in a new process: this program run afresh (fork + exec), so
 * that neither this process's libfabric state nor the test's clients
 * matter (a child of a process that has used verbs cannot use the device
 * the parent opened). The error message comes back through a pipe. */
static int ping_once(struct cluster *cl, int i, char *why, size_t whylen)
{
	char idx[16], fd[16];
	int pfd[2], status;
	pid_t pid;
	ssize_t n;

	if (pipe(pfd))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		close(pfd[0]);
		snprintf(idx, sizeof(idx), "%d", i);
		snprintf(fd, sizeof(fd), "%d", pfd[1]);
		execl("/proc/self/exe", "cluster-ping", "--cl-ping", cl->config, idx, fd,
		      (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	n = read(pfd[0], why, whylen - 1);
	why[n > 0 ? n : 0] = 0;
	close(pfd[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

static int wait_up(struct cluster *cl, int i)
{
	struct cl_server *s = &cl->s[i];
	double deadline = now_ms() + CL_UP_MS;
	char why[512] = "not listening yet";
	int status;

	while (now_ms() < deadline) {
		if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
			fprintf(stderr,
				"cluster: server %d (port %d) exited with status %d\n", i,
				s->port, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
			s->pid = 0;
			log_tail(s);
			return -ECHILD;
		}
		if (rpfs_port_listening(s->port) != 0 &&
		    !ping_once(cl, i, why, sizeof(why)))
			return 0;
		sleep_ms(20);
	}
	fprintf(stderr, "cluster: server %d (port %d) did not answer within %d ms: %s\n",
		i, s->port, CL_UP_MS, why);
	log_tail(s);
	return -ETIMEDOUT;
}

static int write_key(const char *path)
{
	unsigned char key[32];
	int fd, ret = 0;

	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key))
		return -EIO;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, key, sizeof(key)) != (ssize_t)sizeof(key))
		ret = -EIO;
	close(fd);
	return ret;
}

static int write_config(struct cluster *cl, const struct cl_opts *o)
{
	struct rpfs_config cfg;
	int nmeta = o->nmeta > 0 ? o->nmeta : 1;
	int ret = -ENOMEM;

	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.path, sizeof(cfg.path), "%s", cl->config);
	cfg.stripe_unit = o->stripe_unit ? o->stripe_unit : 64 * 1024;
	cfg.stripe_count = 0;
	snprintf(cfg.key_file, sizeof(cfg.key_file), "%s/cluster.key", cl->tmp);
	xp_params_default(&cfg.xport);
	rpfs_config_new_id(&cfg);
	if (o->timeout_ms)
		cfg.xport.timeout_ms = o->timeout_ms;
	if (o->force_path && xp_params_set(&cfg.xport, "force_path", o->force_path))
		return -EINVAL;

	cfg.servers = calloc((size_t)cl->n, sizeof(*cfg.servers));
	cfg.io = calloc((size_t)cl->n, sizeof(*cfg.io));
	cfg.meta = calloc((size_t)cl->n, sizeof(*cfg.meta));
	if (!cfg.servers || !cfg.io || !cfg.meta)
		goto out;
	cfg.nservers = (uint32_t)cl->n;
	for (int i = 0; i < cl->n; i++) {
		struct rpfs_server_cfg *sc = &cfg.servers[i];

		snprintf(sc->name, sizeof(sc->name), "%d", i);
		snprintf(sc->address, sizeof(sc->address), "%s", test_addr());
		snprintf(sc->port, sizeof(sc->port), "%d", cl->s[i].port);
		snprintf(sc->dir, sizeof(sc->dir), "%s", cl->s[i].dir);
		sc->roles = RPFS_ROLE_IO | (i < nmeta ? RPFS_ROLE_META : 0);
		sc->io_index = i;
		cfg.io[cfg.nio++] = (uint32_t)i;
		sc->meta_index = i < nmeta ? i : -1;
		if (i < nmeta)
			cfg.meta[cfg.nmeta++] = (uint32_t)i;
	}
	ret = write_key(cfg.key_file);
	if (!ret)
		ret = rpfs_config_write(&cfg, cl->config);
	if (ret)
		fprintf(stderr, "cluster: couldn't write %s: %s\n", cl->config,
			strerror(-ret));
out:
	free(cfg.servers);
	free(cfg.io);
	free(cfg.meta);
	return ret;
}

struct cluster *cl_start(const struct cl_opts *o)
{
	struct cluster *cl = calloc(1, sizeof(*cl));
	int i;

	if (!cl)
		return NULL;
	cl->owner = getpid();
	cl->n = o->nservers;
	cl->s = calloc((size_t)cl->n, sizeof(*cl->s));
	const char *session = getenv("RPFS_TEST_SESSION");

	snprintf(cl->tmp, sizeof(cl->tmp), "/tmp/rpfs-test-%s-XXXXXX",
		 session && *session ? session : "x");
	if (!cl->s || !mkdtemp(cl->tmp)) {
		perror("cluster: mkdtemp");
		free(cl->s);
		free(cl);
		return NULL;
	}
	snprintf(cl->config, sizeof(cl->config), "%s/rpfs.conf", cl->tmp);
	if (free_ports(cl->n, cl->s)) {
		perror("cluster: finding free ports");
		goto fail;
	}
	for (i = 0; i < cl->n; i++) {
		struct cl_server *s = &cl->s[i];

		snprintf(s->dir, sizeof(s->dir), "%s/s%d", cl->tmp, i);
		snprintf(s->log, sizeof(s->log), "%s/s%d.log", cl->tmp, i);
		if (mkdir(s->dir, 0700)) {
			perror("cluster: mkdir");
			goto fail;
		}
	}
	if (write_config(cl, o))
		goto fail;
	if (cl_start_all(cl))
		goto fail;
	return cl;
fail:
	cl_destroy(cl);
	return NULL;
}

const char *cl_config(const struct cluster *cl)
{
	return cl->config;
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
	return cl->n;
}

int cl_stop(struct cluster *cl, int i)
{
	struct cl_server *s = &cl->s[i];
	double deadline = now_ms() + CL_STOP_MS;
	int status;

	if (!s->pid)
		return 0;
	kill(s->pid, SIGTERM);
	while (now_ms() < deadline) {
		pid_t pid = s->pid;
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid || (r < 0 && errno == ECHILD)) {
			s->pid = 0;
			if (r == pid &&
			    !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
				fprintf(stderr,
					"cluster: server %d (port %d) exited with %s %d "
					"on SIGTERM\n",
					i, s->port,
					WIFEXITED(status) ? "status" : "signal",
					WIFEXITED(status) ? WEXITSTATUS(status)
							  : WTERMSIG(status));
				log_tail(s);
				return -EIO;
			}
			return 0;
		}
		sleep_ms(10);
	}
	fprintf(stderr, "cluster: server %d ignored SIGTERM for %d ms; killing it\n", i,
		CL_STOP_MS);
	log_tail(s);
	cl_kill(cl, i);
	return -ETIMEDOUT;
}

int cl_kill(struct cluster *cl, int i)
{
	struct cl_server *s = &cl->s[i];

	if (!s->pid)
		return 0;
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
	return 0;
}

int cl_signal(struct cluster *cl, int i, int sig)
{
	return cl->s[i].pid && !kill(cl->s[i].pid, sig) ? 0 : -ESRCH;
}

int cl_restart(struct cluster *cl, int i)
{
	return cl_restart_with(cl, i, NULL);
}

int cl_restart_with(struct cluster *cl, int i, const char *arg)
{
	int ret;

	if (cl->s[i].pid)
		cl_stop(cl, i);
	ret = spawn(cl, i, arg);
	return ret ? ret : wait_up(cl, i);
}

const char *cl_log(const struct cluster *cl, int i)
{
	return cl->s[i].log;
}

int cl_stop_all(struct cluster *cl)
{
	int ret = 0;

	for (int i = 0; i < cl->n; i++) {
		int r = cl_stop(cl, i);

		if (r && !ret)
			ret = r;
	}
	return ret;
}

int cl_start_all(struct cluster *cl)
{
	int ret;

	/* Start all, then wait for each: the servers come up in parallel. */
	for (int i = 0; i < cl->n; i++) {
		if (cl->s[i].pid)
			continue;
		ret = spawn(cl, i, NULL);
		if (ret)
			return ret;
	}
	for (int i = 0; i < cl->n; i++) {
		ret = wait_up(cl, i);
		if (ret)
			return ret;
	}
	return 0;
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
		for (int i = 0; i < cl->n; i++)
			if (cl->s[i].pid && cl_stop(cl, i))
				cl_kill(cl, i);
		if (!getenv("RPFS_KEEP_TMP"))
			nftw(cl->tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		else
			fprintf(stderr, "cluster: kept %s\n", cl->tmp);
	}
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
