/* rpfs_admin.h: librpfs's administration calls, for tools and tests.
 *
 * rpfs.h is what a program needs to use files on rpfs; this header is what
 * the rpfs command and the integration tests need to look at a cluster and
 * to run one, as OrangeFS's PVFS_mgmt_* calls in libpvfs2 serve its admin
 * tools:
 *
 *   - the servers a config file lists, and which I/O server holds a stripe
 *     slot of a file (admin_servers.c);
 *   - the table of transport settings, and sizes with suffixes
 *     (admin_settings.c);
 *   - the launcher of a local server set, shared by `rpfs up`/`rpfs down`
 *     and test/integration/cluster.c (launch*.c).
 *
 * Errors are reported as in rpfs.h: a negative errno, and rpfs_errmsg()
 * then gives the calling thread a message that says what failed and why. */
#ifndef RPFS_ADMIN_H
#define RPFS_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rpfs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the servers of a config -------------------------------------------- */

typedef struct rpfs_admin_config rpfs_admin_config_t;

#define RPFS_ADMIN_ROLE_META 1u
#define RPFS_ADMIN_ROLE_IO   2u

/* One server as the config lists it. The strings belong to the config (or
 * launcher) it came from and live as long as that. */
struct rpfs_server_info {
	const char *name; /* the section name after "server." */
	const char *address;
	int port;
	unsigned roles;	 /* RPFS_ADMIN_ROLE_* */
	int io_index;	 /* I/O server number (what layouts name), or -1 */
	int meta_index;	 /* metadata server number, or -1 */
	const char *dir; /* storage directory */
};

/* The config used when none is named (rpfs_init(NULL, ...), the ROMIO
 * driver without an rpfs_config hint, the rpfs command without --config
 * or --dir): $RPFS_CONFIG if set, else the first readable of
 * /etc/rpfs/rpfs.conf and ~/.rpfs/rpfs.conf ($RPFS_SYSCONFDIR replaces
 * /etc, for tests). Errors: -ENOENT (the message names every place
 * tried), -ENAMETOOLONG. */
int rpfs_admin_config_path(char *out, size_t len);
/* Load a config (NULL: rpfs_admin_config_path()), its
 * [transport] settings with the environment's RPFS_<KEY> over them.
 * Errors: -ENOENT and the like for a file that cannot be read, -EINVAL for
 * a bad one (the message names the file, line and cause), -ENOMEM. */
int rpfs_admin_config_load(const char *path, rpfs_admin_config_t **out);
void rpfs_admin_config_free(rpfs_admin_config_t *cfg);
/* Servers in config order (the index rpfs_ping takes). */
int rpfs_admin_num_servers(const rpfs_admin_config_t *cfg);
/* Errors: -EINVAL for an index outside 0 .. rpfs_admin_num_servers() - 1. */
int rpfs_admin_server(const rpfs_admin_config_t *cfg, int server,
		      struct rpfs_server_info *out);
/* The I/O server holding stripe slot `slot` of the file whose attributes
 * st are (rpfs_stat): its I/O server number is returned and *out describes
 * it. Errors: -EINVAL for a directory, a slot outside the file's stripe
 * count, or a layout this config's I/O servers cannot hold. */
int rpfs_admin_slot_server(const rpfs_admin_config_t *cfg, const struct rpfs_stat *st,
			   uint32_t slot, struct rpfs_server_info *out);

/* ---- a server's own view ------------------------------------------------- */

/* One named value of a server's answer to rpfs_admin_server_stats: its
 * storage ("storage.size", "storage.used", "storage.avail", "storage.free"
 * in bytes of the file system under its directory, "storage.fsid" which
 * file system that is: equal for servers sharing one, on any host;
 * "meta.files" entries of a metadata server's store, "io.datafiles" of an
 * I/O server) and its counters since it started ("req.<op>" requests,
 * "bytes.inline|fast|bulk" data by transport path, "waits.credit|slot|bulk_cap|pool",
 * "cache.*" hits and misses, "errors.*", "conns.now|total|refused"). */
#define RPFS_STAT_NAME_MAX 47
#define RPFS_STATS_MAX	   128
struct rpfs_server_stat {
	char name[RPFS_STAT_NAME_MAX + 1];
	uint64_t value;
};
/* Ask server (config order) for its values: at most max into st. Returns
 * how many, or -errno (rpfs_errmsg names the server); a malformed answer
 * is -EPROTO. */
int rpfs_admin_server_stats(rpfs_client_t *c, int server, struct rpfs_server_stat *st,
			    int max);
/* The value called name among n, or def if there is none. */
uint64_t rpfs_admin_stat(const struct rpfs_server_stat *st, int n, const char *name,
			 uint64_t def);

/* ---- settings ------------------------------------------------------------ */

/* The table of transport settings on f, one after another: name, type,
 * default, range, whether a client may set it (rpfs_init_opts), help, and
 * the value each has in cfg (NULL: defaults and the environment) with its
 * source (default, config, environment). */
void rpfs_admin_settings_print(FILE *f, const rpfs_admin_config_t *cfg);
/* The same table in Markdown without values, as docs/settings.md has it. */
void rpfs_admin_settings_markdown(FILE *f);
/* "4096", "64K", "1M", "2G" -> bytes. Errors: -EINVAL (not a size, or too
 * large). */
int rpfs_admin_parse_size(const char *s, uint64_t *out);
/* The copies of spec as a cluster's default redundancy ([cluster]
 * redundancy, as rpfs up and rpfs genconfig --redundancy write it): 1 for
 * none, N for mirror:N. Errors: -EINVAL with the message ("ec:4+2: ec:K+P
 * is not supported yet"; default and what rpfs_redundancy_parse refuses). */
int rpfs_admin_redundancy_copies(const char *spec);

/* ---- a config for servers on several hosts (rpfs genconfig) ------------ */

/* One server: rpfs_admin_genconfig_host() fills it from
 * "ADDR[:PORT][,name=NAME][,roles=meta,io][,dir=PATH]" ([ADDR] for IPv6;
 * roles also as meta+io). Errors: -EINVAL naming what is wrong. */
struct rpfs_genconfig_host {
	char name[64];	   /* "": s<i> (i: its place in the list, its id) */
	char address[256]; /* the only address its rpfsd listens on */
	int port;	   /* 0: 7100 */
	unsigned roles;	   /* RPFS_ADMIN_ROLE_*; 0: io, and meta for the first */
	char dir[1024];	   /* "": /var/lib/rpfs/<name> */
};
int rpfs_admin_genconfig_host(const char *spec, struct rpfs_genconfig_host *out);

struct rpfs_genconfig_opts {
	const struct rpfs_genconfig_host *hosts; /* ids 0 .. nhosts-1 in this order */
	int nhosts;
	uint64_t stripe_unit;  /* 0: 1 MiB */
	uint32_t stripe_count; /* 0: all I/O servers */
	/* of new files, [cluster] redundancy: none or mirror:N (NULL: none) */
	const char *redundancy;
	/* [transport] settings, provider and timeout_ms say */
	const struct rpfs_opt *settings;
	int nsettings;
	const char *log_dir; /* NULL: servers log to stderr (journald) */
};

/* Write outdir/rpfs.conf (a new cluster id, servers with stable ids, the
 * key named relatively) and outdir/rpfs.key (new, mode 0600). Errors:
 * -EEXIST either file exists (a new key would lock a running cluster out),
 * -EINVAL a bad host, setting or stripe count (named), -errno writing. */
int rpfs_admin_genconfig(const struct rpfs_genconfig_opts *o, const char *outdir);

/* ---- launching a local server set ----------------------------------------
 *
 * A launcher writes a config and a cluster key for n servers on one address
 * into a directory, starts one rpfsd per server and waits until each
 * answers a ping. In its directory:
 *
 *   rpfs.conf, cluster.key     the config (server.0 .. server.N-1) and key
 *   s0, s1, ...                the servers' storage
 *   rpfsd.N.log                server N's stdout and stderr
 *   rpfsd.N.pid                server N's pid (daemons only)
 *
 * A server that finds its port taken (rpfsd's exit status 3) makes the
 * launcher start them all again at other ports, keeping the cluster id and
 * key, up to 8 times, unless the ports were given.
 *
 * A directory that already holds a cluster (rpfs.conf, its key, storage)
 * gets that cluster back, stopped servers started at their own ports:
 * nothing is written. Options that disagree with its config are an error
 * (-ENOTEMPTY, naming the difference), and so are storage without a
 * config and a config or key that can't be loaded. new_cluster removes the
 * old cluster's files (above, nothing else) and makes a new one. */
typedef struct rpfs_launch rpfs_launch_t;

enum rpfs_launch_mode {
	/* `rpfsd --daemon --pidfile`: the servers outlive the launcher and are
	 * found again by their pid files (rpfs up, rpfs down). */
	RPFS_LAUNCH_DAEMON = 0,
	/* `rpfsd --foreground` children that get SIGTERM when the launching
	 * process dies (tests: a failed test leaves no servers behind). */
	RPFS_LAUNCH_CHILD = 1,
};

/* rpfs_launch_opts.nservers of a new cluster when it says 0. */
#define RPFS_LAUNCH_NSERVERS_DEFAULT 2

/* rpfs_launch_opts.port: free ports the kernel picks, not consecutive. */
#define RPFS_LAUNCH_ANY_PORTS (-1)

/* Whether server `server` (config index) of the cluster whose config is
 * `config` answers. Returns 0 if it did; -EAGAIN if not (yet), with the
 * reason in why (asked again until the launcher gives up); another
 * negative errno, with why, stops the waiting: nothing will change (no
 * client can be made with the config, say). */
typedef int (*rpfs_launch_ping_fn)(const char *config, int server, char *why,
				   size_t whylen, void *arg);

struct rpfs_launch_opts {
	const char *dir; /* an existing directory for the files above */
	/* 1 .. 256, all of them I/O servers (0: as the cluster in dir has,
	 * a new one RPFS_LAUNCH_NSERVERS_DEFAULT) */
	int nservers;
	int nmeta;	     /* the first nmeta are also metadata servers (0: 1) */
	const char *address; /* IPv4 address to listen on (NULL: 127.0.0.1) */
	/* > 0: port, port + 1, ... (each must be free); 0: the first run of
	 * free consecutive ports from 7100; RPFS_LAUNCH_ANY_PORTS. */
	int port;
	uint64_t stripe_unit; /* of new files (0: 1 MiB) */
	/* Of new files, [cluster] redundancy: none or mirror:N, N at most the
	 * servers (NULL: none, or as the cluster in dir has). */
	const char *redundancy;
	/* Transport settings written into the config's [transport] section
	 * (any setting, e.g. provider, timeout_ms, force_path). */
	const struct rpfs_opt *settings;
	int nsettings;
	enum rpfs_launch_mode mode;
	const char
		*rpfsd; /* NULL: $RPFSD, else rpfsd next to this program, else on PATH */
	/* NULL: rpfs_init and rpfs_ping in this process (a client kept while
	 * waiting, replaced after a failure, finalized before returning). */
	rpfs_launch_ping_fn ping;
	void *ping_arg;
	/* Remove the cluster in dir (its config, key, storage, logs) and make a
	 * new one; -EEXIST if its servers run. */
	bool new_cluster;
};

/* A launcher for o (copied; nothing is started yet, but new_cluster has
 * removed the old files). Errors: -EINVAL for bad options (the message
 * names which), -ENOENT when there is no rpfsd, -ENOTEMPTY for a cluster
 * in dir that can't be started as asked (above), -EEXIST new_cluster over
 * running servers, -ENOMEM, -errno removing files. */
int rpfs_launch_new(const struct rpfs_launch_opts *o, rpfs_launch_t **out);
/* The first time: choose the ports, write the config and key, start every
 * server and wait (20 s) until each answers; on failure every server it
 * started is stopped again. A cluster that was in the directory: start
 * its servers that do not run, at their ports (-EALREADY, nothing done,
 * when all run). Later (after stops): start the servers that do not run,
 * at their ports, and wait for them. rpfs_launch_failed() then tells
 * which server failed (for its log). Errors: -EEXIST a daemon already runs with
 * a pid file in the directory; -EADDRINUSE no free ports (or a given one
 * is taken); -EIO a server exited; -ETIMEDOUT one did not answer in time;
 * the ping's error; -errno of a file or process operation. */
int rpfs_launch_start(rpfs_launch_t *l);
/* Forget the launcher. Servers keep running (children still die with the
 * process that started them). */
void rpfs_launch_free(rpfs_launch_t *l);

/* The server the last failure was about, or -1. */
int rpfs_launch_failed(const rpfs_launch_t *l);
const char *rpfs_launch_config(const rpfs_launch_t *l); /* config file path */
int rpfs_launch_nservers(const rpfs_launch_t *l);
/* Server i as the config says (ports known once started). -EINVAL for no
 * server i. */
int rpfs_launch_server(const rpfs_launch_t *l, int i, struct rpfs_server_info *out);
const char *rpfs_launch_log(const rpfs_launch_t *l, int i); /* its log's path */
/* The end of server i's log on f, under a line naming the file. */
void rpfs_launch_print_log_tail(const rpfs_launch_t *l, int i, FILE *f);

/* SIGTERM, then wait up to 10 s. Returns 0 when it exited (a child: with
 * status 0) or did not run; -EIO a child that exited otherwise;
 * -ETIMEDOUT it ignored SIGTERM and was killed. */
int rpfs_launch_stop(rpfs_launch_t *l, int i);
/* All at once, as rpfs_launch_stop; the first error. */
int rpfs_launch_stop_all(rpfs_launch_t *l);
/* SIGKILL (and reap a child). */
int rpfs_launch_kill(rpfs_launch_t *l, int i);
/* Any signal (SIGSTOP/SIGCONT for a hung server). -ESRCH if it does not run.
 * SIGSTOP returns once the server is stopped (kill returns before), so
 * that nothing sent afterwards is served; -ETIMEDOUT if it is not within
 * 5 s. */
int rpfs_launch_signal(rpfs_launch_t *l, int i, int sig);
/* Stop server i if it runs, start it again at its port with one more rpfsd
 * argument (NULL: none; e.g. "--accept-empty-metadata") and wait until it
 * answers. Errors as rpfs_launch_start. */
int rpfs_launch_restart(rpfs_launch_t *l, int i, const char *extra_arg);

/* Stop the daemons whose pid files are in dir, whatever its config says
 * now (rpfs down): SIGTERM to all, up to 10 s, then SIGKILL, said on notes
 * (NULL: nowhere). Returns how many were running, or -errno. */
int rpfs_launch_stop_dir(const char *dir, FILE *notes);

#ifdef __cplusplus
}
#endif
#endif
