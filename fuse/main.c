/* rpfs-fuse: mount rpfs on a directory.
 *
 *   rpfs-fuse [--config F] [--log FILE] DIR [-f] [-d] [-s] [-o opts]
 *
 * Start-up order matters: the cluster is reached (rpfs_init, a statfs)
 * before anything is mounted, so a bad config or a dead cluster is an
 * error of this command, not a mount whose every call fails. Without -f
 * the process forks first, before librpfs starts its progress thread or
 * opens the fabric (neither survives a fork), and the parent waits on a
 * pipe for the child's verdict: it exits 0 once the mount is in place, or
 * prints the child's error and exits 1.
 *
 * Always on: default_permissions (the kernel checks modes and owners from
 * getattr, which adds the search permission on every ancestor that the
 * servers do not check, and is the only check for other users of an
 * allow_other mount: the servers see the mount's identity) and
 * hard_remove (no .fuse_hidden renames: an unlinked open file loses its
 * data at once). Inode numbers are libfuse's, not rpfs handles: readdir
 * does not know the handles, and an entry without its number is skipped
 * by readdir(3). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "daemon.h"
#include "rpfs_fuse.h"

struct cmd_opts {
	char *config;
	char *log;
};

static const struct fuse_opt opt_spec[] = {
	{"--config=%s", offsetof(struct cmd_opts, config), 0},
	{"--config %s", offsetof(struct cmd_opts, config), 0},
	{"--log=%s", offsetof(struct cmd_opts, log), 0},
	{"--log %s", offsetof(struct cmd_opts, log), 0},
	FUSE_OPT_END,
};

static void usage(const char *prog)
{
	printf("usage: %s [--config F] [--log FILE] DIR [-f] [-d] [-s] [-o opts]\n"
	       "  mounts rpfs on DIR (the config: --config, $RPFS_CONFIG, then\n"
	       "  /etc/rpfs/rpfs.conf, then ~/.rpfs/rpfs.conf, as librpfs looks);\n"
	       "  --log: where a daemon writes its errors (default syslog).\n"
	       "  Unmount with fusermount3 -u DIR.\n\n",
	       prog);
}

/* Where start-up errors go: stderr, or the pipe to the waiting parent. */
static int status_fd = -1;

static void start_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void start_error(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(msg) - 2)
		n = sizeof(msg) - 2;
	msg[n++] = '\n';
	msg[n] = 0;
	if (status_fd >= 0) {
		/* The waiting parent prints it and exits 1 (daemon.h). */
		if (daemon_notify(status_fd, 1, msg))
			_exit(1);
		status_fd = -1;
	} else if (write(2, msg, (size_t)n) < 0) {
		_exit(1);
	}
}

/* Running: tell the parent, leave the terminal and the working directory;
 * libfuse's own messages go to the log file, if any. */
static void detach(FILE *log)
{
	int null = open("/dev/null", O_RDWR);

	if (daemon_notify(status_fd, 0, NULL))
		_exit(1);
	status_fd = -1;
	if (null >= 0) {
		dup2(log ? fileno(log) : null, 2);
		if (null > 2)
			close(null);
	}
	if (chdir("/"))
		return;
}

static void *rfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cfg->hard_remove = 1;
	conn->max_write = RFS_MAX_IO;
	conn->max_readahead = RFS_MAX_IO;
	return fuse_get_context()->private_data;
}

/* A relative config name must survive the chdir of a daemon. */
static char *absolute_config(const char *given)
{
	const char *path = given ? given : getenv("RPFS_CONFIG");

	return path && *path ? realpath(path, NULL) : NULL;
}

/* The kernel gives a FUSE mount 128 KiB of readahead whatever
 * max_readahead says: reads then come in 128-256 KiB pieces, each a round
 * trip (cat at 260-340 MB/s here, ~700 MB/s with 1 MiB). Root may raise it
 * in sysfs. The device comes from mountinfo: a stat of the mount point
 * would wait for this process, which is not serving yet. */
static void set_readahead(struct rfs *fs, const char *mnt)
{
	FILE *mi = fopen("/proc/self/mountinfo", "r");
	char line[2 * PATH_MAX], point[PATH_MAX], sys[128] = "";
	unsigned maj, min;
	FILE *ra;

	if (!mi)
		return;
	while (fgets(line, sizeof(line), mi))
		if (sscanf(line, "%*d %*d %u:%u %*s %4095s", &maj, &min, point) == 3 &&
		    !strcmp(point, mnt))
			snprintf(sys, sizeof(sys), "/sys/class/bdi/%u:%u/read_ahead_kb",
				 maj, min);
	fclose(mi);
	if (!*sys || fs->euid != 0)
		return;
	ra = fopen(sys, "w");
	if (!ra || fprintf(ra, "%u\n", RFS_MAX_IO / 1024) < 0 || fclose(ra))
		rfs_log(fs, RPFS_LOG_WARN,
			"%s: readahead stays at the kernel's default: %s", sys,
			strerror(errno));
}

static int serve(struct fuse *fuse, const struct fuse_cmdline_opts *co)
{
	struct fuse_loop_config *lc;
	int ret;

	if (co->singlethread)
		return fuse_loop(fuse);
	lc = fuse_loop_cfg_create();
	if (!lc)
		return -ENOMEM;
	fuse_loop_cfg_set_clone_fd(lc, (unsigned)co->clone_fd);
	fuse_loop_cfg_set_max_threads(lc, co->max_threads);
	ret = fuse_loop_mt(fuse, lc);
	fuse_loop_cfg_destroy(lc);
	return ret;
}

static int start(struct rfs *fs, const struct cmd_opts *o, const char *config)
{
	struct rpfs_statfs sf;
	int ret;

	fs->euid = geteuid();
	fs->egid = getegid();
	if (o->log) {
		fs->log = fopen(o->log, "a");
		if (!fs->log) {
			start_error("rpfs-fuse: can't open the log %s: %s", o->log,
				    strerror(errno));
			return -1;
		}
	} else if (status_fd < 0) {
		fs->log = stderr;
	} else {
		openlog("rpfs-fuse", LOG_PID, LOG_DAEMON);
	}
	ret = rpfs_init(config, &fs->c);
	if (!ret)
		ret = rpfs_statfs(fs->c, &sf);
	if (ret) {
		start_error("rpfs-fuse: can't reach the cluster (config %s): %s (%s)",
			    config ? config : "default", strerror(-ret), rpfs_errmsg());
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_operations ops = {.init = rfs_init};
	struct fuse_cmdline_opts co = {0};
	struct cmd_opts o = {0};
	struct rfs fs = {0};
	struct fuse *fuse;
	char *config;
	int ret = 1;

	rpfs_log_set_name("rpfs-fuse");
	if (fuse_opt_parse(&args, &o, opt_spec, NULL) ||
	    fuse_opt_add_arg(&args, "-odefault_permissions,fsname=rpfs") ||
	    fuse_parse_cmdline(&args, &co))
		return 2;
	if (co.show_version) {
		fuse_lowlevel_version();
		return 0;
	}
	if (co.show_help) {
		usage(argv[0]);
		fuse_lib_help(&args);
		return 0;
	}
	if (!co.mountpoint) {
		fputs("rpfs-fuse: no mount point given (rpfs-fuse --help)\n", stderr);
		return 2;
	}
	config = absolute_config(o.config);
	if (o.config && !config) {
		fprintf(stderr, "rpfs-fuse: config %s: %s\n", o.config, strerror(errno));
		return 1;
	}
	rfs_ns_ops(&ops);
	rfs_file_ops(&ops);
	if (!co.foreground)
		status_fd = daemon_fork("rpfs-fuse");
	if (start(&fs, &o, config))
		goto out_rpfs;
	fuse = fuse_new(&args, &ops, sizeof(ops), &fs);
	if (!fuse) {
		start_error("rpfs-fuse: bad options (see rpfs-fuse --help)");
		goto out_rpfs;
	}
	if (fuse_mount(fuse, co.mountpoint)) {
		start_error("rpfs-fuse: can't mount on %s (see the message above)",
			    co.mountpoint);
		goto out_fuse;
	}
	if (fuse_set_signal_handlers(fuse_get_session(fuse))) {
		start_error("rpfs-fuse: can't set signal handlers");
		goto out_mount;
	}
	set_readahead(&fs, co.mountpoint);
	if (status_fd >= 0)
		detach(fs.log);
	ret = serve(fuse, &co) ? 1 : 0;
	rfs_log(&fs, RPFS_LOG_INFO,
		"%s unmounted: %lu writes, largest %lu bytes; %lu reads, largest %lu bytes",
		co.mountpoint, atomic_load(&fs.writes), atomic_load(&fs.max_write),
		atomic_load(&fs.reads), atomic_load(&fs.max_read));
	fuse_remove_signal_handlers(fuse_get_session(fuse));
out_mount:
	fuse_unmount(fuse);
out_fuse:
	fuse_destroy(fuse);
out_rpfs:
	rpfs_finalize(fs.c);
	free(co.mountpoint);
	free(config);
	free(o.config); /* fuse_opt_parse's copies */
	free(o.log);
	if (fs.log && fs.log != stderr)
		fclose(fs.log);
	fuse_opt_free_args(&args);
	return ret;
}
