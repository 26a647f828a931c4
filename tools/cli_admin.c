/* The rpfs command's server commands: a local server set (up, down), the
 * settings table, and each server's own view (df, stats, ping). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* The table of settings; with values and sources unless markdown. A config
 * that does not load leaves the defaults and the environment, said first. */
int cmd_settings(const struct opts *o, int argc, char **argv)
{
	const char *path = config_path(o);
	rpfs_admin_config_t *cfg = NULL;

	(void)argc;
	(void)argv;
	if (o->markdown) {
		rpfs_admin_settings_markdown(stdout);
		return 0;
	}
	if (rpfs_admin_config_load(path, &cfg))
		printf("config: none (%s): defaults and the environment\n\n",
		       *rpfs_errmsg() ? rpfs_errmsg() : path);
	else
		printf("config: %s\n\n", path);
	rpfs_admin_settings_print(stdout, cfg);
	rpfs_admin_config_free(cfg);
	return 0;
}

/* ---- up / down ---------------------------------------------------------- */

/* Why a start failed: the message, the failing server's log, and what was
 * done about it. */
static void up_failed(rpfs_launch_t *l, int ret, const char *dir)
{
	int bad = rpfs_launch_failed(l);
	struct rpfs_server_info si;

	if (ret == -EEXIST)
		die("%s (rpfs down --dir %s)", rpfs_errmsg(), dir);
	if (ret == -EALREADY) {
		printf("%s: nothing to do\n", rpfs_errmsg());
		return;
	}
	if (bad < 0 || ret == -EADDRINUSE)
		die("%s", rpfs_errmsg());
	fprintf(stderr, "rpfs: %s\n", rpfs_errmsg());
	rpfs_launch_print_log_tail(l, bad, stderr);
	if (ret == -ETIMEDOUT || rpfs_launch_server(l, bad, &si))
		die("up: stopped the other servers");
	die("up: server.%s (%s:%d) failed to start; stopped the others", si.name,
	    si.address, si.port);
}

/* A new cluster (none in dir, or --new) must have the I/O servers its
 * --redundancy needs: all its servers are I/O servers, and a file of one
 * slot needs one per copy. A cluster in dir is the launcher's to compare. */
static void up_check_redundancy(const struct opts *o, const char *cmd,
				const struct rpfs_launch_opts *lo, const char *dir)
{
	char conf[PATH_MAX + 16];
	int n = lo->nservers > 0 ? lo->nservers : RPFS_LAUNCH_NSERVERS_DEFAULT;

	snprintf(conf, sizeof(conf), "%s/rpfs.conf", dir);
	if (!o->redundancy || (!lo->new_cluster && !access(conf, F_OK)))
		return;
	if (o->redundancy_copies > n)
		usage_error(cmd,
			    "--redundancy=%s needs at least %d I/O servers, the cluster "
			    "would have %d",
			    o->redundancy, o->redundancy_copies, n);
}

int cmd_up(const struct opts *o, int argc, char **argv)
{
	const char *d = o->dir ? o->dir : default_dir();
	struct rpfs_opt provider = {"provider", o->provider};
	struct rpfs_launch_opts lo = {
		.nservers = o->nservers,
		.address = o->address,
		.port = o->port,
		.stripe_unit = o->stripe_unit,
		.redundancy = o->redundancy,
		.settings = &provider,
		.nsettings = o->provider ? 1 : 0,
		.mode = RPFS_LAUNCH_DAEMON,
		.new_cluster = o->new_cluster,
	};
	char dir[PATH_MAX];
	rpfs_launch_t *l;
	int ret;

	if (argc > 1) { /* `rpfs up 4` also works */
		char *end;
		long n = strtol(argv[1], &end, 10);

		if (*end || end == argv[1] || n < 1 || n > 256)
			usage_error(argv[0], "'%s': the number of servers is 1..256",
				    argv[1]);
		lo.nservers = (int)n;
	}
	up_check_redundancy(o, argv[0], &lo, d); /* before anything is made */
	if (mkdir(d, 0700) && errno != EEXIST)
		die("mkdir %s: %s", d, strerror(errno));
	if (!realpath(d, dir))
		die("%s: %s", d, strerror(errno));
	lo.dir = dir;
	ret = rpfs_launch_new(&lo, &l);
	if (ret == -ENOTEMPTY)
		die("up: %s. To start that cluster, leave out the options that differ "
		    "(and restore its rpfs.conf and cluster.key if they are gone); "
		    "to make a new one, removing its data, add --new",
		    rpfs_errmsg());
	if (ret)
		die("up: %s", rpfs_errmsg());
	ret = rpfs_launch_start(l);
	if (ret)
		up_failed(l, ret, dir);
	for (int i = 0; i < rpfs_launch_nservers(l); i++) {
		struct rpfs_server_info si;

		rpfs_launch_server(l, i, &si);
		printf("server.%s  %s:%d  %-8s %s\n", si.name, si.address, si.port,
		       si.roles & RPFS_ADMIN_ROLE_META ? "meta,io" : "io", si.dir);
	}
	printf("config: %s\n", rpfs_launch_config(l));
	printf("export RPFS_CONFIG=%s\n", rpfs_launch_config(l));
	rpfs_launch_free(l);
	return 0;
}

int cmd_down(const struct opts *o, int argc, char **argv)
{
	char dir[PATH_MAX];
	const char *d = o->dir ? o->dir : default_dir();
	int n;

	(void)argc;
	(void)argv;
	if (!realpath(d, dir)) {
		printf("no servers running in %s\n", d);
		return 0;
	}
	n = rpfs_launch_stop_dir(dir, stderr);
	if (n < 0)
		die("down: %s", rpfs_errmsg());
	if (n)
		printf("stopped %d server%s in %s\n", n, n == 1 ? "" : "s", dir);
	else
		printf("no servers running in %s\n", dir);
	return 0;
}

/* The number (1, 2, ...) of the file system fsid among the n seen so far,
 * added if new; an older server's 0 (unknown) is always a new one. */
static int fs_number(uint64_t *seen, int *n, uint64_t fsid)
{
	for (int i = 0; fsid && i < *n; i++)
		if (seen[i] == fsid)
			return i + 1;
	seen[*n] = fsid;
	return ++*n;
}

/* A server as the config names it: "server.NAME (ADDRESS:PORT)". */
static void server_label(const rpfs_admin_config_t *cfg, int i, char *out, size_t len)
{
	struct rpfs_server_info si;

	if (rpfs_admin_server(cfg, i, &si))
		strfmt(out, len, "server %d", i);
	else
		strfmt(out, len, "server.%s (%s:%d)", si.name, si.address, si.port);
}

/* Every server's own answer (RPC_STATS); a server that does not answer is
 * a row saying why, and the exit status is 1. Servers whose storage shares
 * a file system (the same storage.fsid: host boot id and device) show the
 * same number in the fs column and count once in the total. */
/* The state of each I/O server (by I/O index) as the metadata servers see
 * it (server/io_states.h: unknown, online, unreachable, offline; the worst
 * any of them reports), and since when: -1 where none answered. */
static const char *const io_state_names[] = {"unknown", "online", "unreachable",
					     "offline"};

/* Also, summed over the metadata servers, the stale copies of mirrored
 * files on each (stale[k]) and whether a rebuild of its copies is still
 * being marked (rebuilding[k]): BeeGFS's consistency, "good" or "needs
 * resync". */
static void io_states_seen(rpfs_client_t *c, const rpfs_admin_config_t *cfg, int nsrv,
			   int *state, uint64_t *since, uint64_t *stale, bool *rebuilding,
			   int nio)
{
	static struct rpfs_server_stat st[RPFS_STATS_MAX];
	char name[64];

	for (int k = 0; k < nio; k++) {
		state[k] = -1;
		since[k] = 0;
		stale[k] = 0;
		rebuilding[k] = false;
	}
	for (int i = 0; i < nsrv; i++) {
		struct rpfs_server_info si;
		int n;

		if (rpfs_admin_server(cfg, i, &si) || !(si.roles & RPFS_ADMIN_ROLE_META))
			continue;
		n = rpfs_admin_server_stats(c, i, st, RPFS_STATS_MAX);
		for (int k = 0; n > 0 && k < nio; k++) {
			uint64_t v;

			snprintf(name, sizeof(name), "ioserver.%d.state", k);
			v = rpfs_admin_stat(st, n, name, UINT64_MAX);
			if (v >= sizeof(io_state_names) / sizeof(io_state_names[0]))
				continue;
			snprintf(name, sizeof(name), "ioserver.%d.stale", k);
			stale[k] += rpfs_admin_stat(st, n, name, 0);
			snprintf(name, sizeof(name), "ioserver.%d.rebuilding", k);
			rebuilding[k] |= rpfs_admin_stat(st, n, name, 0) != 0;
			/* unknown < online < unreachable < offline */
			if (state[k] < 0 || (int)v > state[k]) {
				state[k] = (int)v;
				snprintf(name, sizeof(name), "ioserver.%d.since_s", k);
				since[k] = rpfs_admin_stat(st, n, name, 0);
			}
		}
	}
}

static void io_state_str(int state, uint64_t since, char *out, size_t len)
{
	if (state < 0)
		strfmt(out, len, "?");
	else if (state >= 2)
		strfmt(out, len, "%s(%llus)", io_state_names[state],
		       (unsigned long long)since);
	else
		strfmt(out, len, "%s", io_state_names[state]);
}

int cmd_df(const struct opts *o, int argc, char **argv)
{
	static struct rpfs_server_stat st[RPFS_STATS_MAX];
	rpfs_client_t *c = connect_cluster(o);
	rpfs_admin_config_t *cfg = cli_load_config(config_path(o));
	uint64_t tsize = 0, tused = 0, tavail = 0, tfiles = 0;
	int nsrv = rpfs_admin_num_servers(cfg), nfs = 0;
	uint64_t *fsids = calloc((size_t)nsrv + 1, sizeof(*fsids));
	char a[32], b[32], d[32], f[32], fs[16], label[300], state[48];
	int *iostate = calloc((size_t)nsrv + 1, sizeof(*iostate));
	uint64_t *since = calloc((size_t)nsrv + 1, sizeof(*since));
	uint64_t *stale = calloc((size_t)nsrv + 1, sizeof(*stale));
	bool *rebuilding = calloc((size_t)nsrv + 1, sizeof(*rebuilding));
	char copies[48];
	int failed = 0;

	(void)argc;
	(void)argv;
	if (!fsids || !iostate || !since || !stale || !rebuilding)
		die("df: out of memory");
	io_states_seen(c, cfg, nsrv, iostate, since, stale, rebuilding, nsrv);
	printf("%-36s %-8s %14s %14s %14s %10s %4s %-16s %s\n", "server", "roles", "size",
	       "used", "avail", "files", "fs", "state", "copies");
	for (int i = 0; i < nsrv; i++) {
		int n = rpfs_admin_server_stats(c, i, st, RPFS_STATS_MAX);
		struct rpfs_server_info si;
		bool meta, io;

		server_label(cfg, i, label, sizeof(label));
		strfmt(state, sizeof(state), "-");
		strfmt(copies, sizeof(copies), "-");
		if (!rpfs_admin_server(cfg, i, &si) && si.io_index >= 0) {
			int k = si.io_index;

			io_state_str(iostate[k], since[k], state, sizeof(state));
			/* of its copies of mirrored files: all whole, some
			 * stale (resynced when it is online), or lost with its
			 * storage and being found */
			if (rebuilding[k])
				strfmt(copies, sizeof(copies), "rebuilding");
			else if (stale[k])
				strfmt(copies, sizeof(copies), "needs-resync(%llu)",
				       (unsigned long long)stale[k]);
			else if (iostate[k] >= 0)
				strfmt(copies, sizeof(copies), "good");
		}
		if (n < 0) {
			printf("%-36s FAILED: %s (state %s) (copies %s)\n", label,
			       rpfs_errmsg(), state, copies);
			failed = 1;
			continue;
		}
		meta = rpfs_admin_stat(st, n, "role.meta", 0);
		io = rpfs_admin_stat(st, n, "role.io", 0);
		strfmt(a, sizeof(a), "-");
		strfmt(b, sizeof(b), "-");
		strfmt(d, sizeof(d), "-");
		strfmt(f, sizeof(f), "-");
		strfmt(fs, sizeof(fs), "-");
		if (io) {
			uint64_t size = rpfs_admin_stat(st, n, "storage.size", 0);
			uint64_t used = rpfs_admin_stat(st, n, "storage.used", 0);
			uint64_t avail = rpfs_admin_stat(st, n, "storage.avail", 0);
			int had = nfs,
			    k = fs_number(fsids, &nfs,
					  rpfs_admin_stat(st, n, "storage.fsid", 0));

			size_str(o, size, a, sizeof(a));
			size_str(o, used, b, sizeof(b));
			size_str(o, avail, d, sizeof(d));
			strfmt(fs, sizeof(fs), "%d", k);
			if (nfs > had) { /* a file system not counted yet */
				tsize += size;
				tused += used;
				tavail += avail;
			}
		}
		if (meta) {
			uint64_t files = rpfs_admin_stat(st, n, "meta.files", 0);

			strfmt(f, sizeof(f), "%llu", (unsigned long long)files);
			tfiles += files;
		}
		printf("%-36s %-8s %14s %14s %14s %10s %4s %-16s %s\n", label,
		       meta && io ? "meta,io"
		       : meta	  ? "meta"
				  : "io",
		       a, b, d, f, fs, io ? state : "-", io ? copies : "-");
	}
	size_str(o, tsize, a, sizeof(a));
	size_str(o, tused, b, sizeof(b));
	size_str(o, tavail, d, sizeof(d));
	strfmt(label, sizeof(label), "total (%d file system%s)", nfs,
	       nfs == 1 ? "" : "s");
	printf("%-36s %-8s %14s %14s %14s %10llu %4s\n", label, "", a, b, d,
	       (unsigned long long)tfiles, "");
	free(fsids);
	free(iostate);
	free(since);
	free(stale);
	free(rebuilding);
	rpfs_admin_config_free(cfg);
	rpfs_finalize(c);
	return failed;
}

/* Every server's counters: one block per server, or one JSON object whose
 * "servers" array holds each server's values by name. */
int cmd_stats(const struct opts *o, int argc, char **argv)
{
	static struct rpfs_server_stat st[RPFS_STATS_MAX];
	rpfs_client_t *c = connect_cluster(o);
	rpfs_admin_config_t *cfg = cli_load_config(config_path(o));
	int nsrv = rpfs_admin_num_servers(cfg), failed = 0;

	(void)argc;
	(void)argv;
	if (o->json)
		printf("{\"servers\": [");
	for (int i = 0; i < nsrv; i++) {
		int n = rpfs_admin_server_stats(c, i, st, RPFS_STATS_MAX);
		const char *desc = rpfs_server_desc(c, i);

		if (n < 0)
			failed = 1;
		if (o->json) {
			/* Names are [a-z0-9_.] (rpc.c checks), descriptions
			 * host:port: nothing to escape. */
			printf("%s\n  {\"server\": \"%s\"", i ? "," : "", desc);
			if (n < 0)
				printf(", \"error\": \"%s\"", strerror(-n));
			for (int k = 0; k < n; k++)
				printf(", \"%s\": %llu", st[k].name,
				       (unsigned long long)st[k].value);
			printf("}");
			continue;
		}
		printf("%s%s\n", i ? "\n" : "", desc);
		if (n < 0)
			printf("  FAILED: %s\n", rpfs_errmsg());
		for (int k = 0; k < n; k++)
			printf("  %-24s %llu\n", st[k].name,
			       (unsigned long long)st[k].value);
	}
	if (o->json)
		printf("\n]}\n");
	rpfs_admin_config_free(cfg);
	rpfs_finalize(c);
	return failed;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The first ping also makes the connection; the round trip reported is the
 * median of the next few. */
int cmd_ping(const struct opts *o, int argc, char **argv)
{
	rpfs_client_t *c = connect_cluster(o);
	rpfs_admin_config_t *cfg = cli_load_config(config_path(o));
	int failed = 0;

	(void)argc;
	(void)argv;
	for (int i = 0; i < rpfs_admin_num_servers(cfg); i++) {
		const char *desc = rpfs_server_desc(c, i);
		double first = 0, us[7];
		int ret = rpfs_ping(c, i, &first);

		for (int k = 0; k < 7 && !ret; k++)
			ret = rpfs_ping(c, i, &us[k]);
		if (ret) {
			printf("%-36s FAILED: %s\n", desc, rpfs_errmsg());
			failed++;
			continue;
		}
		qsort(us, 7, sizeof(us[0]), cmp_double);
		printf("%-36s %9.1f us  (first, with connect: %.1f us)\n", desc, us[3],
		       first);
	}
	rpfs_admin_config_free(cfg);
	rpfs_finalize(c);
	return failed ? 1 : 0;
}

/* rpfs genconfig: its options (rpfs.c keeps them in o->given, in order:
 * --host and --set repeat), librpfs does the work. */
int cmd_genconfig(const struct opts *o, int argc, char **argv)
{
	struct rpfs_genconfig_host hosts[256];
	struct rpfs_opt set[64];
	struct rpfs_genconfig_opts g = {
		.hosts = hosts, .settings = set, .redundancy = o->redundancy};
	const char *out = NULL;
	uint64_t sz;
	char *eq;

	(void)argc;
	for (int i = 0; i < o->ngiven; i++) {
		int id = o->given[i].id;
		const char *arg = o->given[i].arg;

		if (id == OPT_HOST) {
			if (g.nhosts == 256)
				usage_error(argv[0], "more than 256 --host");
			if (rpfs_admin_genconfig_host(arg, &hosts[g.nhosts++]))
				die("%s", rpfs_errmsg());
		} else if (id == OPT_PROVIDER || id == OPT_SET) {
			char *kv = (char *)arg; /* an argv string: split in place */

			if (g.nsettings == 64)
				usage_error(argv[0], "more than 64 settings");
			eq = id == OPT_SET ? strchr(kv, '=') : NULL;
			if (id == OPT_SET && !eq)
				usage_error(argv[0], "--set %s: want KEY=VALUE", arg);
			if (eq)
				*eq = 0;
			set[g.nsettings++] =
				(struct rpfs_opt){eq ? kv : "provider", eq ? eq + 1 : kv};
		} else if (id == OPT_STRIPE_UNIT) {
			if (rpfs_admin_parse_size(arg, &sz) || !sz || sz > (4ull << 30))
				usage_error(argv[0],
					    "--stripe-unit %s: a size from 1 to 4G", arg);
			g.stripe_unit = sz;
		} else if (id == OPT_STRIPE_COUNT) {
			if (rpfs_admin_parse_size(arg, &sz) || sz > 1024)
				usage_error(argv[0], "--stripe-count %s: 0..1024", arg);
			g.stripe_count = (uint32_t)sz;
		} else if (id == OPT_LOG_DIR) {
			g.log_dir = arg;
		} else if (id == OPT_OUT) {
			out = arg;
		}
	}
	if (!g.nhosts)
		usage_error(argv[0], "no --host");
	if (!out)
		usage_error(argv[0], "no --out DIR");
	if (rpfs_admin_genconfig(&g, out))
		die("genconfig: %s", rpfs_errmsg());
	printf("wrote %s/rpfs.conf and %s/rpfs.key (0600) for %d servers\n", out, out,
	       g.nhosts);
	return 0;
}
