/* The launcher of a local server set (rpfs_admin.h): `rpfs up`/`rpfs down`
 * and the integration tests' cluster.c are its two users.
 *
 * A directory that holds a cluster a launcher made before (its config, key
 * and storage) gets that cluster back: same id, key, config and ports;
 * options that disagree with it are an error, and only new_cluster makes
 * a new one over it, after removing the old one's files. Otherwise
 * rpfs_launch_start chooses ports and writes the config and key
 * (launch_files.c), starts every rpfsd (launch_proc.c) and waits until each
 * answers: all start at once, since each takes a while to get ready, and
 * the wait goes round them until all answered or the time is up. A server
 * that exits with status 3 found its port taken; unless the ports were
 * given, everything is stopped and started again at other ports with the
 * same cluster id and key.
 *
 * Whether a server answers is the ping's to say: by default a client in
 * this process (rpfs_init, rpfs_ping). On verbs a forked child cannot use
 * the device its parent opened, so the tests, which fork clients, ping
 * from a fresh process of their own instead. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "admin_priv.h"

#define RETRIES 8 /* starts at other ports when a port was taken */

struct lserver {
	pid_t pid;    /* a child: the rpfsd (0: not running) */
	pid_t first;  /* a daemon: its first process until reaped */
	bool wait;    /* started: the wait is for it */
	bool spawned; /* started by the last rpfs_launch_start: undone on failure */
	char log[PATH_MAX];
	char pidfile[PATH_MAX];
};

struct rpfs_launch {
	enum rpfs_launch_mode mode;
	int port; /* the rule of rpfs_launch_opts.port */
	char rpfsd[PATH_MAX];
	char dir[PATH_MAX];
	rpfs_launch_ping_fn ping;
	void *ping_arg;
	rpfs_client_t *pc; /* the default ping's client while waiting */
	struct rpfs_config cfg;
	bool written;  /* config and key are there: the ports stay */
	bool existing; /* the config was there before: not started yet */
	int failed;
	int n;
	struct lserver *s;
};

/* "server.0 (127.0.0.1:7100)" for messages. */
static const char *desc(const struct rpfs_launch *l, int i)
{
	static _Thread_local char buf[400];
	const struct rpfs_server_cfg *s = &l->cfg.servers[i];

	snprintf(buf, sizeof(buf), "server.%s (%s:%s)", s->name, s->address, s->port);
	return buf;
}

static int fail(struct rpfs_launch *l, int i, int err)
{
	l->failed = i;
	return err;
}

/* ---- the object --------------------------------------------------------- */

static int check_opts(const struct rpfs_launch_opts *o)
{
	const char *bad = NULL;
	struct red_spec r;

	if (!o || !o->dir || !*o->dir)
		bad = "no directory";
	else if (o->nservers < 0 || o->nservers > 256)
		bad = "the number of servers must be 1..256";
	else if (o->nmeta < 0 || (o->nservers && o->nmeta > o->nservers))
		bad = "more metadata servers than servers";
	else if (o->port < RPFS_LAUNCH_ANY_PORTS || o->port + o->nservers - 1 > 65535)
		bad = "ports beyond 65535";
	else if (o->mode != RPFS_LAUNCH_DAEMON && o->mode != RPFS_LAUNCH_CHILD)
		bad = "an unknown mode";
	else if (o->nsettings < 0 || (o->nsettings && !o->settings))
		bad = "no list of settings";
	if (bad)
		rpfsc_err_set("launch: %s", bad);
	else if (!o->redundancy ||
		 !rpfsc_cluster_redundancy(o->redundancy, "launch: redundancy ", &r))
		return 0;
	return -EINVAL;
}

/* Paths of the launcher's files: none may be cut short. */
static int server_files(struct rpfs_launch *l, const struct rpfs_launch_opts *o)
{
	size_t len = sizeof(l->s[0].log);
	int n = snprintf(l->dir, sizeof(l->dir), "%s", o->dir);

	for (int i = 0; i < l->n && n >= 0 && (size_t)n < len; i++) {
		struct lserver *s = &l->s[i];

		n = snprintf(s->log, len, "%s/rpfsd.%d.log", l->dir, i);
		if (n >= 0 && (size_t)n < len)
			n = snprintf(s->pidfile, len, "%s/rpfsd.%d.pid", l->dir, i);
	}
	if (n >= 0 && (size_t)n < len)
		return 0;
	rpfsc_err_set("launch: path too long: %s", o->dir);
	return -ENAMETOOLONG;
}

/* The config: the cluster in the directory, or (none there, or a new one
 * asked for over it) a new one. */
static int config(struct rpfs_launch *l, const struct rpfs_launch_opts *o)
{
	int ret;

	if (o->new_cluster) {
		if (rpfsc_running_in_dir(o->dir)) {
			rpfsc_err_set("servers are running in %s: stop them before "
				      "making a new cluster there",
				      o->dir);
			return -EEXIST;
		}
		ret = rpfsc_launch_remove(o->dir);
	} else {
		ret = rpfsc_launch_existing(&l->cfg, o, o->dir);
	}
	if (ret < 0)
		return ret;
	l->existing = l->written = ret == 1;
	return ret == 1 ? 0 : rpfsc_launch_config_init(&l->cfg, o, o->dir);
}

int rpfs_launch_new(const struct rpfs_launch_opts *o, rpfs_launch_t **out)
{
	struct rpfs_launch *l;
	int ret = check_opts(o);

	*out = NULL;
	if (ret)
		return ret;
	l = calloc(1, sizeof(*l));
	if (!l) {
		rpfsc_err_set("out of memory");
		return -ENOMEM;
	}
	l->mode = o->mode;
	l->port = o->port;
	l->failed = -1;
	l->ping = o->ping;
	l->ping_arg = o->ping_arg;
	if (o->rpfsd)
		snprintf(l->rpfsd, sizeof(l->rpfsd), "%s", o->rpfsd);
	else
		ret = rpfsc_find_rpfsd(l->rpfsd, sizeof(l->rpfsd));
	ret = ret ? ret : config(l, o);
	if (!ret) {
		l->n = (int)l->cfg.nservers;
		l->s = calloc((size_t)l->n, sizeof(*l->s));
		if (!l->s) {
			rpfsc_err_set("out of memory");
			ret = -ENOMEM;
		}
	}
	ret = ret ? ret : server_files(l, o);
	if (ret) {
		rpfs_launch_free(l);
		return ret;
	}
	*out = l;
	return 0;
}

void rpfs_launch_free(rpfs_launch_t *l)
{
	if (!l)
		return;
	rpfs_config_free(&l->cfg);
	free(l->s);
	free(l);
}

int rpfs_launch_failed(const rpfs_launch_t *l)
{
	return l->failed;
}

const char *rpfs_launch_config(const rpfs_launch_t *l)
{
	return l->cfg.path;
}

int rpfs_launch_nservers(const rpfs_launch_t *l)
{
	return l->n;
}

static int check_index(const struct rpfs_launch *l, int i)
{
	if (i >= 0 && i < l->n)
		return 0;
	rpfsc_err_set("launch: no server %d (it has %d)", i, l->n);
	return -EINVAL;
}

int rpfs_launch_server(const rpfs_launch_t *l, int i, struct rpfs_server_info *out)
{
	int ret = check_index(l, i);

	if (!ret)
		rpfsc_server_info(&l->cfg.servers[i], out);
	return ret;
}

const char *rpfs_launch_log(const rpfs_launch_t *l, int i)
{
	return check_index(l, i) ? NULL : l->s[i].log;
}

void rpfs_launch_print_log_tail(const rpfs_launch_t *l, int i, FILE *f)
{
	if (!check_index(l, i))
		rpfsc_print_log_tail(l->s[i].log, f);
}

/* ---- one server --------------------------------------------------------- */

/* The pid of server i, or 0 when it does not run. */
static pid_t server_pid(const struct rpfs_launch *l, int i)
{
	if (l->mode == RPFS_LAUNCH_CHILD)
		return l->s[i].pid;
	return rpfsc_pidfile_pid(l->s[i].pidfile);
}

static int spawn(struct rpfs_launch *l, int i, const char *extra_arg)
{
	struct lserver *s = &l->s[i];
	pid_t pid = rpfsc_spawn(l->rpfsd, l->cfg.path, l->cfg.servers[i].name, l->mode,
				s->pidfile, s->log, extra_arg);

	if (pid < 0)
		return fail(l, i, (int)pid);
	s->spawned = true;
	if (l->mode == RPFS_LAUNCH_CHILD)
		s->pid = pid;
	else
		s->first = pid;
	s->wait = true;
	return 0;
}

/* The message for a process that ended with status. */
static int exited(struct rpfs_launch *l, int i, int status, bool movable)
{
	if (movable && WIFEXITED(status) && WEXITSTATUS(status) == 3)
		return -EADDRINUSE; /* the caller tries other ports */
	if (WIFEXITED(status))
		rpfsc_err_set("%s: rpfsd exited with status %d", desc(l, i),
			      WEXITSTATUS(status));
	else
		rpfsc_err_set("%s: rpfsd was killed by signal %d", desc(l, i),
			      WTERMSIG(status));
	return fail(l, i, -EIO);
}

/* 0 while server i may still come up, else why not (message set). A
 * daemon's first process tells how its start went; after it, the daemon
 * runs as long as its pid file names a live rpfsd. */
static int check_alive(struct rpfs_launch *l, int i, bool movable)
{
	struct lserver *s = &l->s[i];
	bool child = l->mode == RPFS_LAUNCH_CHILD;
	pid_t *p = child ? &s->pid : &s->first;
	int status;
	pid_t r;

	if (!*p) {
		if (!child && rpfsc_pidfile_pid(s->pidfile))
			return 0;
		rpfsc_err_set("%s: %s", desc(l, i),
			      child ? "rpfsd does not run" : "the daemon exited");
		return fail(l, i, -EIO);
	}
	r = waitpid(*p, &status, WNOHANG);
	if (r == 0)
		return 0;
	*p = 0;
	if (r < 0) {
		rpfsc_err_set("%s: waitpid: %s", desc(l, i), strerror(errno));
		return fail(l, i, -ECHILD);
	}
	if (child || !WIFEXITED(status) || WEXITSTATUS(status))
		return exited(l, i, status, movable);
	return check_alive(l, i, movable); /* the daemon is on its own now */
}

/* The default ping: a client of this process, kept while it works. */
static int ping_here(const char *config, int server, char *why, size_t whylen, void *arg)
{
	struct rpfs_launch *l = arg;
	double us;
	int ret;

	if (!l->pc && (ret = rpfs_init(config, &l->pc))) {
		/* Not a server's fault: no retry helps. */
		snprintf(why, whylen, "can't start a client with %s: %s", config,
			 rpfs_errmsg());
		return ret == -EAGAIN ? -EIO : ret;
	}
	ret = rpfs_ping(l->pc, server, &us);
	if (!ret)
		return 0;
	snprintf(why, whylen, "%s", rpfs_errmsg());
	rpfs_finalize(l->pc); /* no broken connection is reused */
	l->pc = NULL;
	return -EAGAIN;
}

/* Whether server i answers: 0, -EAGAIN (why set), or the ping's error. */
static int answers(struct rpfs_launch *l, int i, char *why, size_t whylen)
{
	int port = atoi(l->cfg.servers[i].port);

	if (rpfsc_port_listening(port) == 0) {
		snprintf(why, whylen, "not listening on port %d", port);
		return -EAGAIN;
	}
	if (l->ping)
		return l->ping(l->cfg.path, i, why, whylen, l->ping_arg);
	return ping_here(l->cfg.path, i, why, whylen, l);
}

/* How long a started server may take to answer: as long as a client waits
 * on an operation (the cluster's timeout_ms), and never less than
 * RPFSC_LAUNCH_UP_MS. A server whose process lives but does not answer is
 * slow, not failed, until then (a loaded host, an emulated one). */
static int up_ms(const struct rpfs_launch *l)
{
	return l->cfg.xport.timeout_ms > RPFSC_LAUNCH_UP_MS ? l->cfg.xport.timeout_ms
							    : RPFSC_LAUNCH_UP_MS;
}

/* Wait until every server started (s->wait) answers, going round them:
 * they come up in parallel. */
static int wait_up(struct rpfs_launch *l, bool movable)
{
	double deadline = rpfsc_now_ms() + up_ms(l);
	char why[2200] = "not listening yet"; /* the config path and a message */
	int ret = 0, bad = -1, left;

	do {
		left = 0;
		for (int i = 0; i < l->n && !ret; i++) {
			if (!l->s[i].wait)
				continue;
			ret = check_alive(l, i, movable);
			if (ret)
				break;
			ret = answers(l, i, why, sizeof(why));
			if (ret == -EAGAIN) {
				bad = i;
				left++;
				ret = 0;
			} else if (ret) {
				rpfsc_err_set("%s", why); /* the ping's own failure */
			} else {
				l->s[i].wait = false;
				/* Each has its time after the one before. */
				deadline = rpfsc_now_ms() + up_ms(l);
			}
		}
		if (left && !ret)
			rpfsc_sleep_ms(20);
	} while (left && !ret && rpfsc_now_ms() < deadline);
	if (l->pc)
		rpfs_finalize(l->pc);
	l->pc = NULL;
	if (left && !ret) {
		rpfsc_err_set("%s did not come up within %d s: %s", desc(l, bad),
			      up_ms(l) / 1000, why);
		ret = fail(l, bad, -ETIMEDOUT);
	}
	return ret;
}

/* ---- stopping ----------------------------------------------------------- */

/* SIGTERM to server i. A daemon's first process is waited for first: until
 * it exits, the daemon may not have written its pid file. */
static void term(struct rpfs_launch *l, int i, double deadline)
{
	struct lserver *s = &l->s[i];
	pid_t pid;

	while (s->first && rpfsc_now_ms() < deadline) {
		if (waitpid(s->first, NULL, WNOHANG) != 0)
			s->first = 0;
		else
			rpfsc_sleep_ms(10);
	}
	s->wait = false;
	pid = server_pid(l, i);
	if (pid)
		kill(pid, SIGTERM);
}

/* Whether server i is gone: 0 yes, 1 not yet, -EIO a child that exited
 * with an error (message set). */
static int gone(struct rpfs_launch *l, int i)
{
	struct lserver *s = &l->s[i];
	int status;
	pid_t r;

	if (l->mode == RPFS_LAUNCH_DAEMON) {
		if (rpfsc_pidfile_pid(s->pidfile))
			return 1;
		unlink(s->pidfile);
		return 0;
	}
	if (!s->pid)
		return 0;
	r = waitpid(s->pid, &status, WNOHANG);
	if (r == 0)
		return 1;
	s->pid = 0;
	if (r < 0 || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
		return 0;
	rpfsc_err_set("%s exited with %s %d on SIGTERM", desc(l, i),
		      WIFEXITED(status) ? "status" : "signal",
		      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return fail(l, i, -EIO);
}

/* Wait for server i to be gone until deadline, then kill it. */
static int await_gone(struct rpfs_launch *l, int i, double deadline)
{
	int ret;

	while ((ret = gone(l, i)) == 1 && rpfsc_now_ms() < deadline)
		rpfsc_sleep_ms(10);
	if (ret != 1)
		return ret;
	rpfsc_err_set("%s ignored SIGTERM for %d s: killed", desc(l, i),
		      RPFSC_LAUNCH_STOP_MS / 1000);
	rpfs_launch_kill(l, i);
	return fail(l, i, -ETIMEDOUT);
}

int rpfs_launch_stop(rpfs_launch_t *l, int i)
{
	double deadline = rpfsc_now_ms() + RPFSC_LAUNCH_STOP_MS;
	int ret = check_index(l, i);

	l->failed = -1;
	if (ret)
		return ret;
	term(l, i, deadline);
	return await_gone(l, i, deadline);
}

/* Stop all servers, or those the last start spawned, all at once. */
static int stop_set(struct rpfs_launch *l, bool spawned_only)
{
	double deadline = rpfsc_now_ms() + RPFSC_LAUNCH_STOP_MS;
	char msg[1024] = "";
	int ret = 0, failed = -1;

	l->failed = -1;
	for (int i = 0; i < l->n; i++)
		if (!spawned_only || l->s[i].spawned)
			term(l, i, deadline);
	for (int i = 0; i < l->n; i++) {
		int r = spawned_only && !l->s[i].spawned ? 0 : await_gone(l, i, deadline);

		if (r && !ret) {
			ret = r;
			failed = l->failed;
			snprintf(msg, sizeof(msg), "%s", rpfs_errmsg());
		}
	}
	if (ret)
		rpfsc_err_set("%s", msg);
	l->failed = failed;
	return ret;
}

int rpfs_launch_stop_all(rpfs_launch_t *l)
{
	return stop_set(l, false);
}

int rpfs_launch_kill(rpfs_launch_t *l, int i)
{
	int ret = check_index(l, i);
	pid_t pid;

	if (ret)
		return ret;
	pid = server_pid(l, i);
	if (!pid)
		return 0;
	kill(pid, SIGKILL);
	if (l->mode == RPFS_LAUNCH_CHILD) {
		waitpid(pid, NULL, 0);
		l->s[i].pid = 0;
	} else {
		for (int t = 0; t < 500 && !kill(pid, 0); t++)
			rpfsc_sleep_ms(10); /* not our child: gone when init reaped it */
		unlink(l->s[i].pidfile);
	}
	return 0;
}

/* pid's state letter in /proc/PID/stat ("pid (comm) S ..."), or 0. */
static char proc_state(pid_t pid)
{
	char path[64], buf[512], *rp;
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = 0;
	rp = strrchr(buf, ')'); /* comm may hold anything */
	return rp && rp[1] == ' ' ? rp[2] : 0;
}

int rpfs_launch_signal(rpfs_launch_t *l, int i, int sig)
{
	int ret = check_index(l, i);
	double deadline;
	pid_t pid;

	if (ret)
		return ret;
	pid = server_pid(l, i);
	if (!pid || kill(pid, sig)) {
		rpfsc_err_set("%s does not run", desc(l, i));
		return -ESRCH;
	}
	if (sig != SIGSTOP)
		return 0;
	deadline = rpfsc_now_ms() + 5000;
	while (rpfsc_now_ms() < deadline) {
		char st = proc_state(pid);

		if (st == 'T' || st == 't')
			return 0;
		usleep(1000);
	}
	rpfsc_err_set("%s did not stop within 5 s of SIGSTOP", desc(l, i));
	return -ETIMEDOUT;
}

/* ---- starting ----------------------------------------------------------- */

/* Start the servers that do not run (only < 0) or server only, and wait
 * for them. */
static int start_stopped(struct rpfs_launch *l, bool movable, const char *extra_arg,
			 int only)
{
	int ret = 0;

	for (int i = 0; i < l->n && !ret; i++)
		if ((only < 0 || i == only) && !server_pid(l, i))
			ret = spawn(l, i, extra_arg);
	return ret ? ret : wait_up(l, movable);
}

/* Stop the servers a failed start started, keeping the failure's message:
 * those that ran before it keep running. */
static int undo(struct rpfs_launch *l, int ret)
{
	int failed = l->failed;
	char msg[1024];

	snprintf(msg, sizeof(msg), "%s", rpfs_errmsg());
	stop_set(l, true);
	rpfsc_err_set("%s", msg);
	l->failed = failed;
	return ret;
}

int rpfs_launch_restart(rpfs_launch_t *l, int i, const char *extra_arg)
{
	int ret = check_index(l, i);

	if (ret)
		return ret;
	if (server_pid(l, i))
		rpfs_launch_stop(l, i);
	l->failed = -1;
	return start_stopped(l, false, extra_arg, i);
}

/* The first start of the cluster that was in the directory: its servers
 * that do not run, at their own ports, which must be free. */
static int start_existing(struct rpfs_launch *l)
{
	int running = 0, ret = 0;

	for (int i = 0; i < l->n; i++)
		running += server_pid(l, i) != 0;
	if (running == l->n) {
		rpfsc_err_set("the cluster in %s is already running (%d server%s)",
			      l->dir, l->n, l->n == 1 ? "" : "s");
		return -EALREADY;
	}
	for (int i = 0; i < l->n && !ret; i++) {
		const struct rpfs_server_cfg *s = &l->cfg.servers[i];

		if (server_pid(l, i) || rpfsc_port_free(s->address, atoi(s->port)))
			continue;
		rpfsc_err_set("%s: port %s is in use by another program", desc(l, i),
			      s->port);
		ret = fail(l, i, -EADDRINUSE);
	}
	ret = ret ? ret : start_stopped(l, false, NULL, -1);
	if (ret)
		return undo(l, ret);
	l->existing = false;
	return 0;
}

int rpfs_launch_start(rpfs_launch_t *l)
{
	int ret, from = 0;

	l->failed = -1;
	for (int i = 0; i < l->n; i++)
		l->s[i].spawned = false;
	if (l->existing)
		return start_existing(l);
	if (l->written)
		return start_stopped(l, false, NULL, -1);
	if (l->mode == RPFS_LAUNCH_DAEMON && rpfsc_running_in_dir(l->dir)) {
		rpfsc_err_set("servers are already running in %s", l->dir);
		return -EEXIST;
	}
	for (int tries = 0;; tries++) {
		ret = rpfsc_launch_ports(&l->cfg, l->port, &from);
		if (!ret)
			ret = rpfsc_launch_write(&l->cfg, tries == 0);
		if (ret)
			return ret;
		l->written = true;
		ret = start_stopped(l, l->port <= 0 && tries < RETRIES - 1, NULL, -1);
		if (ret)
			undo(l, ret);
		if (ret != -EADDRINUSE)
			return ret;
	}
}
