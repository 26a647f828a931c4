/* A config for servers on several hosts (rpfs_admin.h, `rpfs genconfig`):
 * one [server.NAME] per host with a stable id, the stripe and redundancy
 * defaults, the transport settings, and a new cluster key beside it.
 *
 * The file is written by the same writer as a launcher's (config.c) and
 * loaded back before it is kept, so what genconfig writes is what rpfsd
 * and the clients read. The key is named relatively ("rpfs.key"): the two
 * files are copied together, to /etc/rpfs/ say, and still find each other. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin_priv.h"

#define GEN_PORT    7100
#define GEN_DIR	    "/var/lib/rpfs"
#define GEN_KEYNAME "rpfs.key"

/* "meta", "io" (one role) -> its bit, else 0. */
static unsigned role_bit(const char *s, size_t n)
{
	if (n == 4 && !strncmp(s, "meta", 4))
		return RPFS_ADMIN_ROLE_META;
	if (n == 2 && !strncmp(s, "io", 2))
		return RPFS_ADMIN_ROLE_IO;
	return 0;
}

/* ADDR, [ADDR] (IPv6), ADDR:PORT or [ADDR]:PORT. */
static int parse_addr(const char *spec, size_t n, struct rpfs_genconfig_host *h)
{
	char buf[300], *a = buf, *port = NULL, *end;
	long p;

	if (!n || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, spec, n);
	buf[n] = 0;
	if (buf[0] == '[') {
		a = buf + 1;
		end = strchr(a, ']');
		if (!end || (end[1] && end[1] != ':'))
			return -EINVAL;
		*end = 0;
		port = end[1] ? end + 1 : NULL;
	} else if ((port = strchr(buf, ':')) && strchr(port + 1, ':')) {
		port = NULL; /* a bare IPv6 address */
	}
	if (port)
		*port++ = 0;
	if (!*a || strlen(a) >= sizeof(h->address))
		return -EINVAL;
	strcpy(h->address, a);
	if (port) {
		p = strtol(port, &end, 10);
		if (end == port || *end || p < 1 || p > 65535)
			return -EINVAL;
		h->port = (int)p;
	}
	return 0;
}

int rpfs_admin_genconfig_host(const char *spec, struct rpfs_genconfig_host *out)
{
	const char *p = spec, *key = NULL;
	size_t n;

	memset(out, 0, sizeof(*out));
	n = strcspn(p, ",");
	if (parse_addr(p, n, out)) {
		rpfsc_err_set("--host %s: want ADDR[:PORT] first", spec);
		return -EINVAL;
	}
	/* Then name=, roles= (meta, io, meta+io or meta,io), dir=. */
	for (p += n; *p == ','; p += n) {
		const char *eq, *v;
		size_t vlen;

		p++;
		n = strcspn(p, ",");
		eq = memchr(p, '=', n);
		if (eq) {
			key = p;
			v = eq + 1;
		} else if (key && !strncmp(key, "roles=", 6)) {
			v = p; /* roles=meta,io: the list goes on */
		} else {
			rpfsc_err_set("--host %s: '%.*s' is not KEY=VALUE", spec, (int)n,
				      p);
			return -EINVAL;
		}
		vlen = (size_t)(p + n - v);
		if (!strncmp(key, "roles=", 6)) {
			for (const char *r = v; r < v + vlen;) {
				size_t rl = strcspn(r, "+,");
				unsigned bit = role_bit(r, rl < vlen ? rl : vlen);

				if (!bit) {
					rpfsc_err_set(
						"--host %s: unknown role '%.*s' (meta, io)",
						spec, (int)rl, r);
					return -EINVAL;
				}
				out->roles |= bit;
				r += rl + (r[rl] == '+');
			}
		} else if (!strncmp(key, "dir=", 4) && vlen && vlen < sizeof(out->dir)) {
			memcpy(out->dir, v, vlen);
		} else if (!strncmp(key, "name=", 5) && vlen &&
			   vlen < sizeof(out->name)) {
			memcpy(out->name, v, vlen);
		} else {
			rpfsc_err_set("--host %s: bad '%.*s' (name=, roles=, dir=)", spec,
				      (int)n, p);
			return -EINVAL;
		}
	}
	return 0;
}

/* The config of o, ids 0 .. n-1 in the order given. */
static int gen_fill(struct rpfs_config *cfg, const struct rpfs_genconfig_opts *o,
		    const char *outdir)
{
	int n = o->nhosts;

	memset(cfg, 0, sizeof(*cfg));
	cfg->stripe_unit = o->stripe_unit ? o->stripe_unit : 1u << 20;
	cfg->stripe_count = o->stripe_count;
	if (o->redundancy &&
	    rpfsc_cluster_redundancy(o->redundancy, "--redundancy ", &cfg->redundancy))
		return -EINVAL;
	xp_params_default(&cfg->xport);
	rpfs_config_new_id(cfg);
	snprintf(cfg->key_file, sizeof(cfg->key_file), "%s", GEN_KEYNAME);
	if ((size_t)snprintf(cfg->path, sizeof(cfg->path), "%s/rpfs.conf", outdir) >=
	    sizeof(cfg->path)) {
		rpfsc_err_set("%s: path too long", outdir);
		return -ENAMETOOLONG;
	}
	for (int i = 0; i < o->nsettings; i++) {
		const struct rpfs_opt *s = &o->settings[i];

		if (xp_params_set(&cfg->xport, s->key, s->value)) {
			rpfsc_err_set("bad setting %s = '%s' (rpfs settings lists them)",
				      s->key, s->value);
			return -EINVAL;
		}
	}
	cfg->servers = calloc((size_t)n, sizeof(*cfg->servers));
	if (!cfg->servers) {
		rpfsc_err_set("out of memory");
		return -ENOMEM;
	}
	cfg->nservers = (uint32_t)n;
	for (int i = 0; i < n; i++) {
		const struct rpfs_genconfig_host *h = &o->hosts[i];
		struct rpfs_server_cfg *s = &cfg->servers[i];

		s->id = (uint32_t)i;
		if (h->name[0])
			snprintf(s->name, sizeof(s->name), "%s", h->name);
		else
			snprintf(s->name, sizeof(s->name), "s%d", i);
		snprintf(s->address, sizeof(s->address), "%s", h->address);
		snprintf(s->port, sizeof(s->port), "%d", h->port ? h->port : GEN_PORT);
		s->roles = h->roles ? h->roles
				    : RPFS_ROLE_IO | (i == 0 ? RPFS_ROLE_META : 0);
		if ((size_t)snprintf(s->dir, sizeof(s->dir), "%s",
				     h->dir[0] ? h->dir : GEN_DIR "/") >=
			    sizeof(s->dir) ||
		    (!h->dir[0] && strlen(s->dir) + strlen(s->name) >= sizeof(s->dir))) {
			rpfsc_err_set("--host %s: dir too long", h->address);
			return -ENAMETOOLONG;
		}
		if (!h->dir[0])
			strcat(s->dir, s->name);
		if (o->log_dir &&
		    (size_t)snprintf(s->log_file, sizeof(s->log_file), "%s/%s.log",
				     o->log_dir, s->name) >= sizeof(s->log_file)) {
			rpfsc_err_set("%s: log directory too long", o->log_dir);
			return -ENAMETOOLONG;
		}
	}
	return 0;
}

/* Two servers on one address and port cannot both listen. */
static int gen_check(const struct rpfs_config *cfg)
{
	for (uint32_t i = 0; i < cfg->nservers; i++) {
		for (uint32_t j = 0; j < i; j++) {
			const struct rpfs_server_cfg *a = &cfg->servers[j],
						     *b = &cfg->servers[i];

			if (!strcmp(a->address, b->address) &&
			    !strcmp(a->port, b->port)) {
				rpfsc_err_set("servers %s and %s both on %s port %s",
					      a->name, b->name, a->address, a->port);
				return -EINVAL;
			}
		}
	}
	return 0;
}

int rpfs_admin_genconfig(const struct rpfs_genconfig_opts *o, const char *outdir)
{
	struct rpfs_config cfg, back;
	char key[1100], why[512] = "";
	int ret;

	if (!o->nhosts || o->nhosts > 1024) {
		rpfsc_err_set("genconfig: %d hosts (want 1 .. 1024)", o->nhosts);
		return -EINVAL;
	}
	ret = gen_fill(&cfg, o, outdir);
	ret = ret ? ret : gen_check(&cfg);
	snprintf(key, sizeof(key), "%s/%s", outdir, GEN_KEYNAME);
	if (!ret && (!access(cfg.path, F_OK) || !access(key, F_OK))) {
		/* A new key for a running cluster would lock everyone out. */
		rpfsc_err_set("%s or %s exists already: remove them first", cfg.path,
			      key);
		ret = -EEXIST;
	}
	if (!ret && mkdir(outdir, 0755) && errno != EEXIST) {
		ret = -errno;
		rpfsc_err_set("mkdir %s: %s", outdir, strerror(-ret));
	}
	if (!ret && (ret = rpfs_config_write(&cfg, cfg.path)))
		rpfsc_err_set("writing %s: %s", cfg.path,
			      ret == -EINVAL ? "a value that would not load back"
					     : strerror(-ret));
	/* Loading it back checks what rpfsd will check (roles, stripe count, a
	 * mirror's copies against the I/O servers). */
	if (!ret && (ret = rpfs_config_load(cfg.path, &back, why, sizeof(why)))) {
		rpfsc_err_set("%s", why);
		unlink(cfg.path);
	} else if (!ret) {
		rpfs_config_free(&back);
		if ((ret = auth_key_create(key))) {
			rpfsc_err_set("writing the cluster key %s: %s", key,
				      strerror(-ret));
			unlink(cfg.path);
		}
	}
	rpfs_config_free(&cfg);
	return ret;
}
