/* What a launcher writes into its directory (admin_priv.h): the config of
 * a local server set, the ports in it, the cluster key, the storage
 * directories.
 *
 * Ports are free for TCP when chosen. rdmacm (verbs) has its own port space
 * that no socket shows, and another program may take a port in between:
 * a server that cannot listen exits with status 3 and launch.c comes back
 * here for other ports, keeping the cluster id and key (the servers of the
 * first attempt may have recorded the id in their storage). */
#include <arpa/inet.h>
#include <errno.h>
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
	int n = o->nservers, nmeta = o->nmeta > 0 ? o->nmeta : 1;
	int ret;

	memset(cfg, 0, sizeof(*cfg));
	cfg->stripe_unit = o->stripe_unit ? o->stripe_unit : 1u << 20;
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

/* A TCP socket bound to addr:port (0: any), or -errno. */
static int bound(const char *addr, int port, int *got)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	socklen_t len = sizeof(a);
	int fd;

	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1)
		return -EINVAL;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &len)) {
		int err = -errno;

		close(fd);
		return err;
	}
	*got = ntohs(a.sin_port);
	return fd;
}

static bool port_free(const char *addr, int port)
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

		for (i = 0; i < n && port_free(addr, p + i); i++)
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
			if (!port_free(addr, port + i)) {
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
