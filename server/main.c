/* rpfsd: the rpfs server daemon, metadata and/or I/O roles per the config.
 *
 *   rpfsd --config FILE --name NAME [--foreground|--daemon] [--pidfile F]
 *         [--log-level L] [--log-file F] [--accept-empty-metadata]
 *   rpfsd --config FILE --name NAME --check [--copies] [--repair [--accept-damaged]]
 *   rpfsd --list-settings
 *
 * Start-up is a ladder (config, storage directory, roles, workers, the
 * listening fabric) and every rung that fails says why and exits non-zero:
 * 2 for a bad command line or config, 3 when it cannot listen on its
 * address and port (taken: try others), 1 for anything else. With --daemon the
 * parent returns only once the server listens (or failed), so scripts can
 * start servers one after another; a start-up failure's message travels
 * back through the same pipe as the status, and the parent prints it, so
 * it is seen (and logged where its stderr goes) even though the daemon
 * has left the terminal. The storage directory is locked (DIR/rpfsd.lock)
 * while a server or a check uses it; the metadata store is checked before
 * it is mapped (store.c), and a SIGBUS from a mapped file that shrank
 * under us ends the server with a message rather than a core.
 *
 * --check examines a stopped server's storage (check.c) and exits 0 when
 * it is clean, 1 when it found problems (repaired or not), 2 on a usage or
 * config error.
 *
 * --log-file F (or log_file in the server's section) appends the daemon's
 * stderr, every log line, to F (its directory made if missing, with its
 * parents, mode 0755) from the moment it is up to serve (earlier
 * failures go to the terminal); SIGHUP opens F again by name, so logrotate
 * can move it away. Under systemd without a log file, lines carry syslog
 * priorities for journald (log.h).
 *
 * --list-settings prints the table of transport settings (params.h): the
 * keys of the config's [transport] section and of RPFS_<NAME>; with
 * --config (and --name), the values in effect and their sources.
 *
 * Shutdown on SIGTERM or SIGINT: new requests are refused with -ESHUTDOWN,
 * requests in flight get up to RPFSD_DRAIN_MS to finish, then the threads
 * stop, open datafiles are fdatasync'ed, LMDB is closed, and the exit status
 * is 0. The signals are taken by sigwait in the main thread only (blocked
 * before any thread exists), so no handler runs inside the transport. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "io_rebuild.h"
#include "io_states.h"
#include "log.h"
#include "meta_record.h"
#include "mirror_dirty.h"
#include "server.h"
#include "store.h"

#define RPFSD_DRAIN_MS 10000

/* Why start-up failed, for the parent of a daemon (and for the log). */
static char startup_why[1024];
/* The pipe to that parent while it waits, for the SIGBUS handler too. */
static volatile int parent_fd = -1;
static char sigbus_msg[1400];

/* Every option, once: getopt_long's table and short options (those whose
 * val is a lower-case letter: -c for --config) are made from it, --help
 * prints it, and test/build/rpfsd-doc.sh checks that rpfsd(8) documents
 * each. */
static const struct rpfsd_option {
	const char *name;
	int has_arg;
	int val;
	const char *arg; /* the argument's name in --help, or NULL */
	const char *help;
} options[] = {
	{"config", required_argument, 'c', "FILE",
	 "the cluster configuration, rpfs.conf(5)"},
	{"name", required_argument, 'n', "NAME",
	 "this server: its section [server.NAME] in FILE, or its index (0, 1, ...)"},
	{"foreground", no_argument, 'f', NULL, "stay in the foreground (the default)"},
	{"daemon", no_argument, 'd', NULL,
	 "detach once listening; a start-up failure is printed and is the exit status"},
	{"pidfile", required_argument, 'p', "FILE", "write the process id to FILE"},
	{"log-level", required_argument, 'l', "LEVEL",
	 "error, warn (default), info or debug"},
	{"log-file", required_argument, 'O', "FILE",
	 "append the log to FILE (default: the server's log_file, else stderr); SIGHUP opens it again (logrotate)"},
	{"accept-empty-metadata", no_argument, 'E', NULL,
	 "start a metadata server with an empty store although I/O servers hold data"},
	{"check", no_argument, 'C', NULL,
	 "examine a stopped server's storage; exit 0 when clean, 1 on problems"},
	{"repair", no_argument, 'R', NULL,
	 "with --check: fix what loses nothing (orphans, indexes, torn writes)"},
	{"accept-damaged", no_argument, 'A', NULL,
	 "with --repair: take blocks that fail their checksum as they are"},
	{"copies", no_argument, 'K', NULL,
	 "with --check: compare mirrored datafiles with their copies on the other I/O servers (running); with --repair, a copy that differs from its slot's primary is marked stale and rewritten from it"},
	{"list-settings", no_argument, 'L', NULL,
	 "the transport settings ([transport], RPFS_<NAME>) with types, defaults, ranges and help; with --config, each one's value for this server and its source"},
	{"version", no_argument, 'V', NULL,
	 "rpfsd's version and the libfabric it runs on"},
	{"help", no_argument, 'h', NULL, "this text"},
};
#define NOPTIONS ((int)(sizeof(options) / sizeof(options[0])))

/* text from column 28 on, in lines of at most 79 columns; the first line
 * already holds col columns (the option). */
static void print_wrapped(FILE *f, const char *text, int col)
{
	while (*text) {
		int n = (int)strlen(text), room = 79 - 28;

		if (n > room) {
			n = room;
			while (n > 0 && text[n] != ' ')
				n--;
			if (!n)
				n = (int)strcspn(text, " ");
		}
		fprintf(f, "%*s%.*s\n", 28 - col, "", n, text);
		text += n;
		text += strspn(text, " ");
		col = 0;
	}
}

static void usage(FILE *f)
{
	char opt[48];

	fprintf(f,
		"usage: rpfsd --config FILE --name NAME [--foreground|--daemon]\n"
		"             [--pidfile FILE] [--log-level error|warn|info|debug]\n"
		"             [--log-file FILE] [--accept-empty-metadata]\n"
		"       rpfsd --config FILE --name NAME --check [--copies] [--repair [--accept-damaged]]\n"
		"       rpfsd --list-settings [--config FILE [--name NAME]]\n"
		"       rpfsd --version\n"
		"\n"
		"Serve the roles (meta, io) that FILE gives server NAME.\n"
		"\n"
		"Options:\n");
	for (int i = 0; i < NOPTIONS; i++) {
		bool has_short = islower(options[i].val);

		snprintf(opt, sizeof(opt), "%c%c%s--%s%s%s", has_short ? '-' : ' ',
			 has_short ? options[i].val : ' ', has_short ? ", " : "  ",
			 options[i].name, options[i].arg ? " " : "",
			 options[i].arg ? options[i].arg : "");
		fprintf(f, "  %-25s", opt);
		print_wrapped(f, options[i].help, 27);
	}
}

static int find_server(const struct rpfs_config *cfg, const char *name);

/* --list-settings: the table, with the values a server started with this
 * config and environment would use, and their sources. */
static int list_settings(const char *config, const char *name)
{
	static struct rpfs_config cfg;
	char why[512] = "";
	int ret, i;

	if (!config) {
		if (name) {
			fprintf(stderr, "rpfsd: --name goes with --config\n");
			return 2;
		}
		xp_settings_print(stdout, NULL, NULL);
		return 0;
	}
	ret = rpfs_config_load(config, &cfg, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "rpfsd: couldn't load the configuration: %s\n",
			why[0] ? why : strerror(-ret));
		return 2;
	}
	printf("config: %s\n", cfg.path);
	if (name) {
		i = find_server(&cfg, name);
		if (i < 0) {
			fprintf(stderr, "rpfsd: no server '%s' in %s\n", name, cfg.path);
			return 2;
		}
		printf("server: %s (%s%s%s), %s:%s, dir %s\n", cfg.servers[i].name,
		       cfg.servers[i].roles & RPFS_ROLE_META ? "meta" : "",
		       cfg.servers[i].roles == (RPFS_ROLE_META | RPFS_ROLE_IO) ? "," : "",
		       cfg.servers[i].roles & RPFS_ROLE_IO ? "io" : "",
		       cfg.servers[i].address, cfg.servers[i].port, cfg.servers[i].dir);
	}
	printf("\n");
	xp_settings_print(stdout, &cfg.xport,
			  cfg.xport.provider[0] ? NULL : xp_provider_default());
	return 0;
}

static int parse_level(const char *s, enum rpfs_log_level *out)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};

	for (int i = 0; i < 4; i++) {
		if (!strcmp(s, names[i])) {
			*out = (enum rpfs_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* mkdir -p */
static int make_dirs(const char *path)
{
	char buf[1024];
	size_t len = strlen(path);

	if (!len || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

static int find_server(const struct rpfs_config *cfg, const char *name)
{
	int i = rpfs_config_find(cfg, name);
	char *end;
	long n;

	if (i >= 0)
		return i;
	n = strtol(name, &end, 10);
	if (*name && !*end && n >= 0 && n < (long)cfg->nservers)
		return (int)n;
	return -1;
}

/* Tell the parent of a daemon how start-up went (daemon.h): the status,
 * then on failure the message, which the parent prints. */
static void notify(int fd, char status)
{
	if (fd >= 0) {
		parent_fd = -1;
		if (daemon_notify(fd, (unsigned char)status, startup_why))
			log_warn(
				"rpfsd: couldn't tell the parent process how start-up went");
	}
}

/* A mapped file (the metadata store) shrank or its disk failed: LMDB would
 * fault again and again. Say so and stop, also to a waiting parent. */
static void on_sigbus(int sig)
{
	int fd = parent_fd;

	(void)sig;
	if (fd >= 0 && !daemon_notify(fd, 1, sigbus_msg))
		_exit(1);
	if (write(2, sigbus_msg, strlen(sigbus_msg)) < 0 || write(2, "\n", 1) < 0)
		_exit(1);
	_exit(1);
}

static void guard_sigbus(const struct srv *s)
{
	struct sigaction sa = {0};

	snprintf(
		sigbus_msg, sizeof(sigbus_msg),
		"rpfsd %s: fatal SIGBUS: a file it maps shrank or its storage failed (the metadata store in %s/meta?): stopping; rpfsd --check tells what is damaged",
		s->me->name, s->me->dir);
	sa.sa_handler = on_sigbus;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

static int write_pidfile(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f, "%d\n", (int)getpid());
	if (fclose(f))
		return -errno;
	return 0;
}

static void roles_str(unsigned roles, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", roles & RPFS_ROLE_META ? "meta" : "",
		 (roles & RPFS_ROLE_META) && (roles & RPFS_ROLE_IO) ? "," : "",
		 roles & RPFS_ROLE_IO ? "io" : "");
}

/* Wait for the requests in flight, at most RPFSD_DRAIN_MS. */
static bool drain(struct srv *s)
{
	struct timespec tick = {0, 10 * 1000 * 1000};

	for (int waited = 0; waited < RPFSD_DRAIN_MS; waited += 10) {
		if (!atomic_load(&s->live_ops))
			return true;
		nanosleep(&tick, NULL);
	}
	return !atomic_load(&s->live_ops);
}

static void shutdown_server(struct srv *s)
{
	bool clean = true, beats_done;

	atomic_store(&s->draining, 1);
	if (s->progress_running && !drain(s)) {
		log_warn(
			"rpfsd %s: %ld requests still running after %d ms: stopping anyway",
			s->me->name, atomic_load(&s->live_ops), RPFSD_DRAIN_MS);
		clean = false;
	}
	srv_progress_stop(s);
	sched_stop(s);
	/* A heartbeat still waiting for a server holds a peer connection:
	 * then the peers are left to exit. */
	beats_done = meta_resync_stop(s);
	beats_done = io_states_stop(s) && beats_done;
	io_close(s);
	meta_close(s);
	if (beats_done)
		peer_fini(s);
	/* Unfinished ops still point into the fabric: leave it to exit. */
	if (s->fab && clean && !atomic_load(&s->live_ops)) {
		/* Closing reports the connections still open as going down;
		 * the state that would hear it is gone. */
		xp_set_conn_handler(s->fab, NULL, NULL);
		xp_fabric_close(s->fab);
	}
	s->fab = NULL;
	binding_fini(s);
}

int main(int argc, char **argv)
{
	struct option opts[NOPTIONS + 1] = {{0}}; /* ends with a zero entry */
	char shortopts[2 * NOPTIONS + 1] = "";
	const char *config = NULL, *name = NULL, *pidfile = NULL, *log_file = NULL;
	struct srv *s = NULL;
	bool daemon_mode = false, accept_empty = false, check = false, list = false;
	unsigned check_flags = 0;
	char why[512] = "", roles[16], lf[64];
	enum rpfs_log_level level;
	sigset_t set;
	int notify_fd = -1, opt, ret, sig, status = 1;

	rpfs_log_set_name("rpfsd");
	for (int i = 0, n = 0; i < NOPTIONS; i++) {
		opts[i] = (struct option){options[i].name, options[i].has_arg, NULL,
					  options[i].val};
		if (islower(options[i].val)) {
			shortopts[n++] = (char)options[i].val;
			if (options[i].has_arg == required_argument)
				shortopts[n++] = ':';
		}
	}
	while ((opt = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			config = optarg;
			break;
		case 'n':
			name = optarg;
			break;
		case 'f':
			daemon_mode = false;
			break;
		case 'd':
			daemon_mode = true;
			break;
		case 'p':
			pidfile = optarg;
			break;
		case 'l':
			if (parse_level(optarg, &level)) {
				fprintf(stderr, "rpfsd: unknown log level '%s'\n",
					optarg);
				return 2;
			}
			rpfs_log_set_level(level);
			break;
		case 'O':
			log_file = optarg;
			break;
		case 'E':
			accept_empty = true;
			break;
		case 'C':
			check = true;
			break;
		case 'R':
			check_flags |= CHECK_REPAIR;
			break;
		case 'A':
			check_flags |= CHECK_ACCEPT_DAMAGED;
			break;
		case 'K':
			check_flags |= CHECK_COPIES;
			break;
		case 'L':
			list = true;
			break;
		case 'V':
			printf("rpfsd %s (%s)\n", PACKAGE_VERSION,
			       xp_libfabric_desc(lf, sizeof(lf)));
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (list && optind == argc)
		return list_settings(config, name);
	if (optind < argc || !name) {
		fprintf(stderr, "rpfsd: %s\n",
			optind < argc ? "unexpected argument" : "--name is required");
		usage(stderr);
		return 2;
	}
	if (check_flags && !check) {
		fprintf(stderr,
			"rpfsd: --repair, --accept-damaged and --copies go with --check\n");
		return 2;
	}
	if ((check_flags & CHECK_ACCEPT_DAMAGED) && !(check_flags & CHECK_REPAIR)) {
		fprintf(stderr, "rpfsd: --accept-damaged goes with --repair\n");
		return 2;
	}

	/* Before any thread: every thread inherits the mask, and sigwait
	 * below is the only taker. A client that vanishes mid-write must not
	 * kill the server. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	s = calloc(1, sizeof(*s));
	if (!s) {
		fprintf(stderr, "rpfsd: out of memory\n");
		return 1;
	}
	ret = rpfs_config_load(config, &s->cfg, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "rpfsd: couldn't load the configuration: %s\n",
			why[0] ? why : strerror(-ret));
		free(s);
		return 2;
	}
	s->self = find_server(&s->cfg, name);
	if (s->self < 0) {
		fprintf(stderr, "rpfsd: no server '%s' in %s\n", name, s->cfg.path);
		status = 2;
		goto out_cfg;
	}
	s->me = &s->cfg.servers[s->self];
	if (!(s->me->roles & (RPFS_ROLE_META | RPFS_ROLE_IO))) {
		fprintf(stderr,
			"rpfsd: server '%s' in %s has no roles (want meta and/or io)\n",
			s->me->name, s->cfg.path);
		status = 2;
		goto out_cfg;
	}
	if (check) {
		/* No server fabric, no daemon; the storage must exist (the
		 * orphan search may ask metadata servers, check_orphans.c). */
		status = check_storage(s, check_flags);
		goto out_cfg;
	}
	ret = rpfs_config_key(&s->cfg, &s->key, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "rpfsd: %s\n", why);
		status = 2;
		goto out_cfg;
	}
	ret = make_dirs(s->me->dir);
	if (ret) {
		fprintf(stderr, "rpfsd: couldn't create storage directory %s: %s\n",
			s->me->dir, strerror(-ret));
		goto out_cfg;
	}
	if (ident_check_storage(s)) {
		status = 2;
		goto out_cfg;
	}
	if (daemon_mode)
		notify_fd = daemon_fork("rpfsd"); /* paths may be relative: no chdir */
	if (!log_file && s->me->log_file[0])
		log_file = s->me->log_file;
	why[0] = 0;
	if (log_file && ((ret = rpfs_log_make_dir(log_file, why, sizeof(why))) ||
			 (ret = rpfs_log_to_file(log_file)))) {
		snprintf(startup_why, sizeof(startup_why),
			 "rpfsd %s: couldn't open log file %.400s: %.500s", s->me->name,
			 log_file, why[0] ? why : strerror(-ret));
		if (notify_fd < 0)
			fprintf(stderr, "%s\n", startup_why);
		notify(notify_fd, 2);
		status = 2;
		goto out_cfg;
	}
	/* The pid file from the start, not only once ready: a launcher that
	 * gives up on a start (`rpfs up` moving to other ports) must find a
	 * server still starting, to stop it. */
	if (pidfile && (ret = write_pidfile(pidfile)))
		log_warn("rpfsd: couldn't write pid file %s: %s", pidfile,
			 strerror(-ret));

	parent_fd = notify_fd;
	guard_sigbus(s);
	binding_init(s);
	ret = store_lock(s->me->dir, startup_why, sizeof(startup_why));
	if (!ret)
		ret = peer_init(s);
	if (!ret && (s->me->roles & RPFS_ROLE_META)) {
		char metadir[1100];

		snprintf(metadir, sizeof(metadir), "%s/meta", s->me->dir);
		ret = store_validate(metadir, startup_why, sizeof(startup_why));
		if (!ret)
			ret = rec_upgrade(metadir, startup_why, sizeof(startup_why));
	}
	if (!ret && (s->me->roles & RPFS_ROLE_META))
		ret = meta_open(s);
	if (!ret && (s->me->roles & RPFS_ROLE_IO))
		ret = io_open(s);
	if (!ret)
		ret = sched_start(s);
	if (!ret)
		ret = srv_progress_start(s);
	/* Listening first: the I/O servers it asks may be waiting for us. */
	if (!ret && s->meta)
		ret = meta_check_store(s, accept_empty, startup_why, sizeof(startup_why));
	if (!ret && s->meta)
		ret = io_states_start(s);
	if (!ret && s->meta)
		ret = meta_resync_start(s);
	/* storage replaced: the rebuild asked for before saying ready */
	if (!ret && s->io)
		io_rebuild_wait(s);
	/* a crash's list of copies that may lag: reported before ready */
	if (!ret && s->io)
		mirror_dirty_wait(s);
	if (ret) {
		char line[sizeof(startup_why) + 320];
		size_t len;

		snprintf(line, sizeof(line), "rpfsd %s: couldn't start: %s", s->me->name,
			 startup_why[0] ? startup_why : strerror(-ret));
		len = strnlen(line, sizeof(startup_why) - 1);
		memcpy(startup_why, line, len);
		startup_why[len] = 0;
		/* A daemon's parent prints it: once is enough. */
		if (notify_fd < 0)
			log_err("%s", startup_why);
		shutdown_server(s);
		if (pidfile)
			unlink(pidfile);
		status = ret == -EADDRINUSE ? 3 : 1;
		notify(notify_fd, (char)status);
		goto out_cfg;
	}
	roles_str(s->me->roles, roles, sizeof(roles));
	/* Which libfabric: the fix for its tcp provider is in the embedded
	 * build (configure --with-embedded-libfabric). */
	atomic_store(&s->ready, true);
	log_info("rpfsd %s ready on %s:%d roles=%s (%s)", s->me->name, s->me->address,
		 s->port, roles, xp_libfabric_desc(lf, sizeof(lf)));
	notify(notify_fd, 0);

	for (;;) {
		ret = sigwait(&set, &sig);
		if (ret == EINTR)
			continue;
		if (sig != SIGHUP)
			break;
		ret = rpfs_log_reopen();
		if (ret)
			log_err("rpfsd %s: couldn't open log file %s again: %s",
				s->me->name, log_file, strerror(-ret));
		else
			log_info("rpfsd %s: log file opened again (SIGHUP)", s->me->name);
	}
	log_info("rpfsd %s: %s, shutting down", s->me->name, strsignal(sig));
	shutdown_server(s);
	if (pidfile)
		unlink(pidfile);
	log_info("rpfsd %s: stopped", s->me->name);
	status = 0;

out_cfg:
	rpfs_config_free(&s->cfg);
	free(s);
	return status;
}
