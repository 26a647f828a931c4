/* What a launcher writes into its directory (admin_priv.h): the config of
 * a local server set, the ports in it, the cluster key, the storage
 * directories; and, when the directory already holds a cluster, reading
 * its config back (a stopped cluster starts again as it was made) or
 * removing what an earlier launcher wrote (a new cluster asked for).
 *
 * Ports are free for TCP when chosen. rdmacm (verbs) has its own port space
 * that no socket shows, and another program may take a port in between:
 * a server that cannot listen exits with status 3 and launch.c comes back
 * here for other ports, keeping the cluster id and key (the servers of the
 * first attempt may have recorded the id in their storage). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw */
#endif

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin_priv.h"

#define PORT_FIRST 7100 /* where a scan for consecutive free ports starts */
#define PORT_SCAN  2000 /* and how far it goes */

/* snprintf that fails rather than shortening a path or name. */
static int put(char *out, size_t len, const char *what, const char *f, const char *s,
	       int i)
{
	int n = snprintf(out, len, f, s, i);

	if (n < 0 || (size_t)n >= len) {
		rpfsc_err_set("%s too long: %s...", what, s);
		return -ENAMETOOLONG;
	}
	return 0;
}

static int apply_settings(struct rpfs_config *cfg, const struct rpfs_launch_opts *o)
{
	for (int i = 0; i < o->nsettings; i++) {
		const struct rpfs_opt *s = &o->settings[i];

		if (!s->key || !s->value ||
		    xp_params_set(&cfg->xport, s->key, s->value)) {
			rpfsc_err_set("bad setting %s = '%s'", s->key ? s->key : "(null)",
				      s->value ? s->value : "(null)");
			return -EINVAL;
		}
	}
	return 0;
}

int rpfsc_launch_config_init(struct rpfs_config *cfg, const struct rpfs_launch_opts *o,
			     const char *dir)
{
	int n = o->nservers > 0 ? o->nservers : RPFS_LAUNCH_NSERVERS_DEFAULT;
	int nmeta = o->nmeta > 0 ? o->nmeta : 1, ret;

	memset(cfg, 0, sizeof(*cfg));
	cfg->stripe_unit = o->stripe_unit ? o->stripe_unit : 1u << 20;
	/* Every server is an I/O server: a mirror:N needs N of them (each new
	 * file at least one slot, its N copies on distinct servers). */
	if (o->redundancy &&
	    (ret = rpfsc_cluster_redundancy(o->redundancy, "launch: redundancy ",
					    &cfg->redundancy)))
		return ret;
	if (red_copies(&cfg->redundancy) > (uint32_t)n) {
		rpfsc_err_set("launch: redundancy %s needs at least %u I/O servers, the "
			      "cluster would have %d",
			      o->redundancy, red_copies(&cfg->redundancy), n);
		return -EINVAL;
	}
	xp_params_default(&cfg->xport);
	rpfs_config_new_id(cfg);
	ret = put(cfg->path, sizeof(cfg->path), "path", "%s/rpfs.conf", dir, 0);
	ret = ret ? ret
		  : put(cfg->key_file, sizeof(cfg->key_file), "path", "%s/cluster.key",
			dir, 0);
	ret = ret ? ret : apply_settings(cfg, o);
	if (ret)
		return ret;
	cfg->servers = calloc((size_t)n, sizeof(*cfg->servers));
	cfg->io = calloc((size_t)n, sizeof(*cfg->io));
	cfg->meta = calloc((size_t)n, sizeof(*cfg->meta));
	if (!cfg->servers || !cfg->io || !cfg->meta) {
		rpfs_config_free(cfg);
		rpfsc_err_set("out of memory");
		return -ENOMEM;
	}
	cfg->nservers = (uint32_t)n;
	for (int i = 0; i < n && !ret; i++) {
		struct rpfs_server_cfg *s = &cfg->servers[i];

		snprintf(s->name, sizeof(s->name), "%d", i);
		s->id = (uint32_t)i;
		ret = put(s->address, sizeof(s->address), "address", "%s",
			  o->address ? o->address : "127.0.0.1", 0);
		ret = ret ? ret : put(s->dir, sizeof(s->dir), "path", "%s/s%d", dir, i);
		s->roles = RPFS_ROLE_IO | (i < nmeta ? RPFS_ROLE_META : 0);
		s->io_index = i;
		cfg->io[cfg->nio++] = (uint32_t)i;
		s->meta_index = i < nmeta ? i : -1;
		if (i < nmeta)
			cfg->meta[cfg->nmeta++] = (uint32_t)i;
	}
	if (ret)
		rpfs_config_free(cfg);
	return ret;
}

/* A TCP socket bound to addr:port (0: any), or -errno. A given port is
 * bound with SO_REUSEADDR, as rpfsd's listener is: connections of servers
 * just stopped linger in TIME-WAIT for a minute and must not make their
 * port look taken, while a socket that listens on it still does. The
 * kernel's choice (port 0) is made without it, so that it never hands out
 * a port some other socket holds. */
static int bound(const char *addr, int port, int *got)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	socklen_t len = sizeof(a);
	int fd, one = 1;

	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1)
		return -EINVAL;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -errno;
	if ((port && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one))) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &len)) {
		int err = -errno;

		close(fd);
		return err;
	}
	*got = ntohs(a.sin_port);
	return fd;
}

bool rpfsc_port_free(const char *addr, int port)
{
	int got, fd = bound(addr, port, &got);

	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* Distinct ports the kernel picks: all sockets are held bound at once so
 * that it cannot hand out the same port twice. */
static int any_ports(struct rpfs_config *cfg, const char *addr)
{
	int n = (int)cfg->nservers, fds[n], ret = 0;

	for (int i = 0; i < n; i++) {
		int port = 0;

		fds[i] = ret ? -1 : bound(addr, 0, &port);
		if (fds[i] < 0 && !ret)
			ret = fds[i];
		snprintf(cfg->servers[i].port, sizeof(cfg->servers[i].port), "%d", port);
	}
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (ret)
		rpfsc_err_set("finding free ports on %s: %s", addr, strerror(-ret));
	return ret;
}

/* The first of n consecutive free ports from *from, or -EADDRINUSE. */
static int scan_ports(const char *addr, int n, int from)
{
	for (int p = from; p + n <= PORT_FIRST + PORT_SCAN; p++) {
		int i;

		for (i = 0; i < n && rpfsc_port_free(addr, p + i); i++)
			;
		if (i == n)
			return p;
		p += i; /* skip past the busy one */
	}
	rpfsc_err_set("no %d consecutive free ports in %d..%d (give --port)", n,
		      PORT_FIRST, PORT_FIRST + PORT_SCAN);
	return -EADDRINUSE;
}

int rpfsc_launch_ports(struct rpfs_config *cfg, int port, int *from)
{
	const char *addr = cfg->servers[0].address;
	int n = (int)cfg->nservers, p0 = port;
	struct in_addr a;

	if (inet_pton(AF_INET, addr, &a) != 1) {
		rpfsc_err_set("'%s' is not an IPv4 address", addr);
		return -EINVAL;
	}
	if (port == RPFS_LAUNCH_ANY_PORTS)
		return any_ports(cfg, addr);
	if (port > 0) {
		for (int i = 0; i < n; i++)
			if (!rpfsc_port_free(addr, port + i)) {
				rpfsc_err_set(
					"port %d on %s is in use (asked for %d..%d)",
					port + i, addr, port, port + n - 1);
				return -EADDRINUSE;
			}
	} else {
		p0 = scan_ports(addr, n, *from < PORT_FIRST ? PORT_FIRST : *from);
		if (p0 < 0)
			return p0;
		*from = p0 + n; /* a retry: a run past this one */
	}
	for (int i = 0; i < n; i++)
		snprintf(cfg->servers[i].port, sizeof(cfg->servers[i].port), "%d",
			 p0 + i);
	return 0;
}

int rpfsc_launch_write(const struct rpfs_config *cfg, bool new_key)
{
	int ret;

	for (uint32_t i = 0; i < cfg->nservers; i++) {
		const char *d = cfg->servers[i].dir;

		if (mkdir(d, 0700) && errno != EEXIST) {
			ret = -errno;
			rpfsc_err_set("mkdir %s: %s", d, strerror(-ret));
			return ret;
		}
	}
	if (new_key) {
		unlink(cfg->key_file);
		ret = auth_key_create(cfg->key_file);
		if (ret) {
			rpfsc_err_set("writing the cluster key %s: %s", cfg->key_file,
				      strerror(-ret));
			return ret;
		}
	}
	ret = rpfs_config_write(cfg, cfg->path);
	if (ret)
		rpfsc_err_set("writing %s: %s", cfg->path, strerror(-ret));
	return ret;
}

/* ---- a cluster already in the directory --------------------------------- */

/* Whether name is "s" and digits: a server's storage as launchers make it. */
static bool storage_name(const char *name)
{
	if (name[0] != 's' || !name[1])
		return false;
	for (const char *p = name + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* Whether name is "rpfsd.X.log" or "rpfsd.X.pid". */
static bool server_file_name(const char *name)
{
	size_t l = strlen(name);

	return l > 10 && !strncmp(name, "rpfsd.", 6) &&
	       (!strcmp(name + l - 4, ".log") || !strcmp(name + l - 4, ".pid"));
}

/* The first storage directory dir/sN into out (""; none). */
static void find_storage(const char *dir, char *out, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	out[0] = 0;
	while (d && !out[0] && (e = readdir(d))) {
		struct stat st;

		if (storage_name(e->d_name) &&
		    snprintf(out, len, "%s/%s", dir, e->d_name) < (int)len &&
		    (stat(out, &st) || !S_ISDIR(st.st_mode)))
			out[0] = 0;
	}
	if (d)
		closedir(d);
}

/* "the cluster in D has 4 servers, not 2 as asked" */
static int differs(const char *dir, const char *what, const char *have, const char *asked)
{
	rpfsc_err_set("the cluster in %s has %s%s, not %s as asked", dir, what, have,
		      asked);
	return -ENOTEMPTY;
}

/* Each transport setting asked for must be the config's (unless the
 * environment overrules the config's: its value is not the file's). */
static int compare_settings(const struct rpfs_config *cfg,
			    const struct rpfs_launch_opts *o, const char *dir)
{
	for (int i = 0; i < o->nsettings; i++) {
		const struct rpfs_opt *set = &o->settings[i];
		const struct xp_setting *s = set->key ? xp_setting_find(set->key) : NULL;
		struct xp_params asked;
		char have[64], want[64], what[80];
		int k = 0;

		xp_params_default(&asked);
		if (!s || !set->value || xp_params_set(&asked, set->key, set->value)) {
			rpfsc_err_set("bad setting %s = '%s'",
				      set->key ? set->key : "(null)",
				      set->value ? set->value : "(null)");
			return -EINVAL;
		}
		while (xp_setting_at(k) != s)
			k++;
		if (cfg->xport.source[k] == XP_SRC_ENV)
			continue;
		xp_setting_format(&cfg->xport, s, have, sizeof(have));
		xp_setting_format(&asked, s, want, sizeof(want));
		snprintf(what, sizeof(what), "[transport] %s = ", s->name);
		if (strcmp(have, want))
			return differs(dir, what, *have ? have : "(not set)", want);
	}
	return 0;
}

/* What o asks for (0 and NULL: nothing) against the cluster's config. */
static int compare(const struct rpfs_config *cfg, const struct rpfs_launch_opts *o,
		   const char *dir)
{
	char have[300], want[300], what[100];

	if (o->nservers > 0 && (uint32_t)o->nservers != cfg->nservers) {
		snprintf(have, sizeof(have), "%u servers", cfg->nservers);
		snprintf(want, sizeof(want), "%d", o->nservers);
		return differs(dir, "", have, want);
	}
	if (o->nmeta > 0 && (uint32_t)o->nmeta != cfg->nmeta) {
		snprintf(have, sizeof(have), "%u metadata servers", cfg->nmeta);
		snprintf(want, sizeof(want), "%d", o->nmeta);
		return differs(dir, "", have, want);
	}
	if (o->stripe_unit && o->stripe_unit != cfg->stripe_unit) {
		snprintf(have, sizeof(have), "%llu",
			 (unsigned long long)cfg->stripe_unit);
		snprintf(want, sizeof(want), "%llu", (unsigned long long)o->stripe_unit);
		return differs(dir, "stripe_unit ", have, want);
	}
	if (o->redundancy) {
		struct red_spec r;
		char rhave[RED_TEXT_MAX], rwant[RED_TEXT_MAX];

		if (rpfsc_cluster_redundancy(o->redundancy, "launch: redundancy ", &r))
			return -EINVAL;
		red_format(&cfg->redundancy, rhave, sizeof(rhave));
		red_format(&r, rwant, sizeof(rwant));
		if (strcmp(rhave, rwant))
			return differs(dir, "redundancy ", rhave, rwant);
	}
	for (uint32_t i = 0; i < cfg->nservers; i++) {
		const struct rpfs_server_cfg *s = &cfg->servers[i];

		snprintf(what, sizeof(what), "server.%s at ", s->name);
		if (o->address && strcmp(o->address, s->address))
			return differs(dir, what, s->address, o->address);
		snprintf(want, sizeof(want), "port %d", o->port + (int)i);
		snprintf(have, sizeof(have), "port %s", s->port);
		if (o->port > 0 && strcmp(have, want))
			return differs(dir, what, have, want);
	}
	return compare_settings(cfg, o, dir);
}

int rpfsc_launch_existing(struct rpfs_config *cfg, const struct rpfs_launch_opts *o,
			  const char *dir)
{
	char path[PATH_MAX], store[PATH_MAX], why[1200] = "";
	struct auth_key key;
	int ret = put(path, sizeof(path), "path", "%s/rpfs.conf", dir, 0);

	memset(cfg, 0, sizeof(*cfg));
	if (ret)
		return ret;
	if (access(path, F_OK)) {
		find_storage(dir, store, sizeof(store));
		if (!store[0])
			return 0;
		rpfsc_err_set("%s holds server storage (%s) but no config %s", dir, store,
			      path);
		return -ENOTEMPTY;
	}
	ret = rpfs_config_load(path, cfg, why, sizeof(why));
	if (!ret) {
		ret = rpfs_config_key(cfg, &key, why, sizeof(why));
		memset(&key, 0, sizeof(key));
	}
	if (!ret)
		ret = compare(cfg, o, dir);
	else
		rpfsc_err_set("the cluster in %s can't be started: %s", dir,
			      why[0] ? why : strerror(-ret));
	if (ret) {
		rpfs_config_free(cfg);
		return ret == -EINVAL ? ret : -ENOTEMPTY;
	}
	return 1;
}

/* nftw's callback: errno (> 0) stops the walk. */
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	if (!remove(path))
		return 0;
	rpfsc_err_set("removing %s: %s", path, strerror(errno));
	return errno;
}

int rpfsc_launch_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int ret = 0;

	if (!d) {
		ret = -errno;
		rpfsc_err_set("%s: %s", dir, strerror(-ret));
		return ret == -ENOENT ? 0 : ret;
	}
	while (!ret && (e = readdir(d))) {
		char path[PATH_MAX];
		const char *n = e->d_name;

		if (strcmp(n, "rpfs.conf") && strcmp(n, "cluster.key") &&
		    !server_file_name(n) && !storage_name(n))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, n) >= (int)sizeof(path)) {
			rpfsc_err_set("path too long: %s/%s", dir, n);
			ret = -ENAMETOOLONG;
		} else if ((ret = nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS)) ==
			   -1) {
			ret = -errno;
			rpfsc_err_set("removing %s: %s", path, strerror(-ret));
		} else {
			ret = -ret; /* remove_entry's errno, message set */
		}
	}
	closedir(d);
	return ret;
}
