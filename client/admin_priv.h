/* Internals of librpfs's administration calls (rpfs_admin.h), shared by
 *
 *   admin_servers.c   a config's servers, the server of a stripe slot
 *   admin_settings.c  the settings table, sizes
 *   launch.c          the launcher: start, wait until pingable, stop, restart
 *   launch_files.c    what a launcher writes: ports chosen, config, key
 *   launch_proc.c     rpfsd processes: finding rpfsd, spawning in either
 *                     mode, pid files, stopping by pid files (rpfs down)
 *   portprobe.c       whether a port listens, without connecting to it
 *   redundancy.c      a cluster's default redundancy (and files', rpfs.h) */
#ifndef RPFS_ADMIN_PRIV_H
#define RPFS_ADMIN_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "client_priv.h"
#include "rpfs_admin.h"

/* Servers must answer a ping within this, or the cluster's timeout_ms
 * where that is longer (launch.c: up_ms). */
#define RPFSC_LAUNCH_UP_MS   20000
#define RPFSC_LAUNCH_STOP_MS 10000 /* a SIGTERMed server must exit within this */

/* ---- admin_servers.c ----------------------------------------------------- */

void rpfsc_server_info(const struct rpfs_server_cfg *s, struct rpfs_server_info *out);
const struct rpfs_config *rpfsc_admin_cfg(const rpfs_admin_config_t *a);

/* ---- redundancy.c -------------------------------------------------------- */

/* spec as a cluster's default redundancy ([cluster] redundancy): none or
 * mirror:N into r, else -EINVAL with the message ("WHAT" "SPEC: why"). */
int rpfsc_cluster_redundancy(const char *spec, const char *what, struct red_spec *r);

/* ---- launch_files.c ------------------------------------------------------ */

/* The config of a launcher (no ports yet): n servers (0: 2) on address, storage
 * dir/sN, the first nmeta also metadata servers, key dir/cluster.key, a
 * new cluster id, the settings in [transport], the redundancy (-EINVAL
 * when its copies are more than the servers). 0, or -errno with the
 * message set (a bad setting names it). */
int rpfsc_launch_config_init(struct rpfs_config *cfg, const struct rpfs_launch_opts *o,
			     const char *dir);
/* Ports for the servers of cfg by the rule of o->port (rpfs_admin.h),
 * scanning from *from when it is 0 (moved past what it takes). 0, or
 * -errno with the message set. */
int rpfsc_launch_ports(struct rpfs_config *cfg, int port, int *from);
/* Write cfg to its path, and (first) a new key; create the storage dirs. */
int rpfsc_launch_write(const struct rpfs_config *cfg, bool new_key);
/* Whether a TCP socket could listen on addr:port now (a socket that only
 * lingers in TIME-WAIT does not count: SO_REUSEADDR, as rpfsd). */
bool rpfsc_port_free(const char *addr, int port);
/* The cluster a launcher made in dir before, into cfg: 1 when there is
 * one, its config and key usable and agreeing with what o asks for (0 and
 * NULL ask nothing); 0 when dir holds no cluster (no config, no storage);
 * -ENOTEMPTY when it holds one that can't be started as asked (storage
 * without a config, a config or key that does not load, a difference:
 * the message names it); -EINVAL for a bad setting in o. */
int rpfsc_launch_existing(struct rpfs_config *cfg, const struct rpfs_launch_opts *o,
			  const char *dir);
/* Remove what launchers write in dir: rpfs.conf, cluster.key, the storage
 * directories sN and the servers' logs and pid files, nothing else. */
int rpfsc_launch_remove(const char *dir);

/* ---- launch_proc.c ------------------------------------------------------- */

/* $RPFSD, else next to this program (a libtool wrapper's program runs from
 * .libs/), else on PATH. 0 or -ENOENT. */
int rpfsc_find_rpfsd(char *out, size_t len);
/* Start rpfsd for server name: a daemon writing pidfile, or a child dying
 * with its parent; stdout and stderr to log. Returns the pid (a daemon's
 * first process) or -errno. */
pid_t rpfsc_spawn(const char *rpfsd, const char *config, const char *name,
		  enum rpfs_launch_mode mode, const char *pidfile, const char *log,
		  const char *extra_arg);
/* The pid a pid file names if it is a live rpfsd (not a recycled pid), else 0. */
pid_t rpfsc_pidfile_pid(const char *pidfile);
/* How many live rpfsd pid files in dir name. */
int rpfsc_running_in_dir(const char *dir);
/* CLOCK_MONOTONIC in ms, and a sleep. */
double rpfsc_now_ms(void);
void rpfsc_sleep_ms(int ms);
/* The end of a log on f, under a line naming it. */
void rpfsc_print_log_tail(const char *log, FILE *f);

/* ---- portprobe.c --------------------------------------------------------- */

/* 1 if a TCP socket listens on port (any address), read from /proc/net so
 * that the server sees no probe connection; 0 if none does; -1 when this
 * cannot tell: the provider in RPFS_PROVIDER (verbs) listens through
 * rdmacm, which no kernel TCP socket shows. */
int rpfsc_port_listening(int port);

#endif
