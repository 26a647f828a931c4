/* rpfsd processes for the launcher (admin_priv.h): finding rpfsd, starting
 * it in either mode, pid files, and stopping daemons by their pid files
 * (rpfs_launch_stop_dir, which is `rpfs down`).
 *
 * A daemon (`rpfsd --daemon --pidfile F`) is started in a new session; its
 * first process exits once the daemon listens (status 0) or failed (its
 * status: 3 when the address is taken), which launch.c reaps. A child
 * (`rpfsd --foreground`) gets SIGTERM when its parent dies
 * (PR_SET_PDEATHSIG), so a test that fails leaves no servers behind. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* prctl */
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "admin_priv.h"

static bool executable(const char *p)
{
	struct stat st;

	return !stat(p, &st) && S_ISREG(st.st_mode) && !access(p, X_OK);
}

/* dir/rpfsd if it is there. */
static bool in_dir(char *out, size_t len, const char *dir, int dirlen)
{
	int n = snprintf(out, len, "%.*s/rpfsd", dirlen, dir);

	return n > 0 && (size_t)n < len && executable(out);
}

int rpfsc_find_rpfsd(char *out, size_t len)
{
	const char *env = getenv("RPFSD"), *path = getenv("PATH");
	char exe[PATH_MAX], buf[8192], *save = NULL;
	ssize_t n;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		if (executable(out))
			return 0;
		rpfsc_err_set("RPFSD=%s is not an executable file", env);
		return -ENOENT;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *dir;
		int dl;

		exe[n] = 0;
		dir = dirname(exe);
		dl = (int)strlen(dir);
		if (dl >= 6 && !strcmp(dir + dl - 6, "/.libs") &&
		    in_dir(out, len, dir, dl - 6))
			return 0;
		if (in_dir(out, len, dir, dl))
			return 0;
	}
	snprintf(buf, sizeof(buf), "%s", path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (char *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save))
		if (in_dir(out, len, *d ? d : ".", *d ? (int)strlen(d) : 1))
			return 0;
	rpfsc_err_set("rpfsd not found ($RPFSD, next to this program, or on PATH)");
	return -ENOENT;
}

/* In the child: stdin from /dev/null, stdout and stderr to the log. */
static void redirect(const char *log)
{
	int nul = open("/dev/null", O_RDONLY);
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

	if (nul >= 0)
		dup2(nul, 0);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
}

/* The child's last words when exec fails, with write(2) only: the parent
 * may have other threads (librpfs' progress thread logs), so between fork
 * and exec only async-signal-safe calls are allowed; fprintf could wait
 * forever for a stdio lock held by a thread that no longer exists. */
static void exec_failed(const char *rpfsd)
{
	const char *parts[] = {"rpfs: couldn't run ", rpfsd, ": ", strerrordesc_np(errno),
			       "\n"};

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (parts[i] && write(2, parts[i], strlen(parts[i])) < 0)
			break;
}

pid_t rpfsc_spawn(const char *rpfsd, const char *config, const char *name,
		  enum rpfs_launch_mode mode, const char *pidfile, const char *log,
		  const char *extra_arg)
{
	bool child = mode == RPFS_LAUNCH_CHILD;
	pid_t parent = getpid(), pid;
	sigset_t term, old;

	if (!child)
		unlink(pidfile);
	/* Until exec the child is a copy of the caller, whose SIGTERM handler
	 * may do anything (Check's kills the whole process group): SIGTERM
	 * stays blocked across fork until the child has the default back. */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigaddset(&term, SIGINT);
	sigprocmask(SIG_BLOCK, &term, &old);
	fflush(NULL);
	pid = fork();
	if (pid != 0) {
		int err = errno;

		sigprocmask(SIG_SETMASK, &old, NULL);
		if (pid < 0) {
			rpfsc_err_set("server.%s: can't fork: %s", name, strerror(err));
			return -err;
		}
		return pid;
	}
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (child) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent) /* it died before prctl */
			_exit(1);
	} else {
		setsid();
	}
	redirect(log);
	if (child)
		execl(rpfsd, "rpfsd", "--config", config, "--name", name, "--foreground",
		      extra_arg, (char *)NULL);
	else
		execl(rpfsd, "rpfsd", "--config", config, "--name", name, "--daemon",
		      "--pidfile", pidfile, extra_arg, (char *)NULL);
	exec_failed(rpfsd);
	_exit(127);
}

/* Up to len - 1 bytes of a small file, NUL-terminated; length or -1. */
static ssize_t slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n >= 0)
		buf[n] = 0;
	return n;
}

pid_t rpfsc_pidfile_pid(const char *pidfile)
{
	char buf[64], proc[64], cmd[4096];
	long pid;

	if (slurp(pidfile, buf, sizeof(buf)) <= 0)
		return 0;
	pid = strtol(buf, NULL, 10);
	if (pid <= 0 || kill((pid_t)pid, 0))
		return 0;
	snprintf(proc, sizeof(proc), "/proc/%ld/cmdline", pid);
	if (slurp(proc, cmd, sizeof(cmd)) <= 0)
		return 0;
	return strstr(cmd, "rpfsd") ? (pid_t)pid : 0; /* argv[0] only */
}

void rpfsc_print_log_tail(const char *log, FILE *f)
{
	char buf[2048];
	int fd = open(log, O_RDONLY | O_CLOEXEC);
	off_t end;
	ssize_t n;

	if (fd < 0)
		return;
	end = lseek(fd, 0, SEEK_END);
	lseek(fd, end > (off_t)sizeof(buf) - 1 ? end - (off_t)sizeof(buf) + 1 : 0,
	      SEEK_SET);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = 0;
		fprintf(f, "--- last lines of %s ---\n%s%s", log, buf,
			buf[n - 1] == '\n' ? "" : "\n");
	}
}

/* ---- rpfs down ---------------------------------------------------------- */

struct pidfile {
	char name[64]; /* the server's, from "rpfsd.NAME.pid" */
	char path[PATH_MAX];
	pid_t pid;
};

/* The pid files "rpfsd.NAME.pid" in dir; *n of them in a new array. */
static int list_pidfiles(const char *dir, struct pidfile **out, int *n)
{
	DIR *d = opendir(dir);
	struct pidfile *v = NULL;
	struct dirent *e;
	int cap = 0;

	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if (l <= 10 || strncmp(e->d_name, "rpfsd.", 6) ||
		    strcmp(e->d_name + l - 4, ".pid") || l - 10 >= sizeof(v->name))
			continue;
		if (*n == cap) {
			struct pidfile *nv = realloc(
				v, (size_t)(cap = cap ? 2 * cap : 16) * sizeof(*v));

			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		snprintf(v[*n].name, sizeof(v[*n].name), "%.*s", (int)(l - 10),
			 e->d_name + 6);
		if (snprintf(v[*n].path, sizeof(v[*n].path), "%s/%s", dir, e->d_name) <
		    (int)sizeof(v[*n].path))
			(*n)++;
	}
	closedir(d);
	*out = v;
	return 0;
}

int rpfsc_running_in_dir(const char *dir)
{
	struct pidfile *p = NULL;
	int n, running = 0;

	if (list_pidfiles(dir, &p, &n))
		return 0;
	for (int i = 0; i < n; i++)
		running += rpfsc_pidfile_pid(p[i].path) != 0;
	free(p);
	return running;
}

double rpfsc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void rpfsc_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

int rpfs_launch_stop_dir(const char *dir, FILE *notes)
{
	struct pidfile *p = NULL;
	int n, running = 0, left, ret = list_pidfiles(dir, &p, &n);
	double deadline;

	if (ret) {
		rpfsc_err_set("%s: %s", dir, strerror(-ret));
		return ret;
	}
	for (int i = 0; i < n; i++) {
		p[i].pid = rpfsc_pidfile_pid(p[i].path);
		if (p[i].pid && !kill(p[i].pid, SIGTERM))
			running++;
		else
			p[i].pid = 0;
	}
	deadline = rpfsc_now_ms() + RPFSC_LAUNCH_STOP_MS;
	do {
		left = 0;
		for (int i = 0; i < n; i++) {
			if (p[i].pid && kill(p[i].pid, 0) && errno == ESRCH)
				p[i].pid = 0;
			left += p[i].pid != 0;
		}
		if (left)
			rpfsc_sleep_ms(20);
	} while (left && rpfsc_now_ms() < deadline);
	for (int i = 0; i < n; i++) {
		if (p[i].pid) {
			if (notes)
				fprintf(notes,
					"rpfs: server.%s (pid %d) ignored SIGTERM for %d s: killed\n",
					p[i].name, (int)p[i].pid,
					RPFSC_LAUNCH_STOP_MS / 1000);
			kill(p[i].pid, SIGKILL);
		}
		unlink(p[i].path);
	}
	free(p);
	return running;
}
