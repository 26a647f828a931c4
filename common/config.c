/* Cluster configuration (config.h): loading, checking and writing the INI
 * file that servers, clients and `rpfs up` share.
 *
 * Parsing is libinih's, driven through ini_parse_stream() with our own line
 * reader, for three things libinih does not tell its handler: the line number
 * (for error messages), section headers with no keys (an empty [server.x]
 * must be reported, not silently dropped) and lines longer than libinih's
 * buffer (which it would otherwise split into two bogus lines). The reader
 * therefore sees every line first and tracks the current section; the
 * handler only ever sees key = value pairs of that section.
 *
 * The rules a loaded config satisfies: every server has an address, a port
 * in 1..65535, at least one role and a storage directory; names are unique;
 * there is at least one I/O and one metadata server; stripe_count is at most
 * the number of I/O servers; redundancy is none or mirror:N with N at most
 * the number of I/O servers (ec:K+P is refused: not supported yet); the transport
 * settings pass xp_params_check(). Anything else is -EINVAL with a message naming the
 * file, the line or section and the cause.
 *
 * Why one file of ~880 lines: one concern, the config file, which is
 * searched for, read, checked and written (by `rpfs up` and genconfig)
 * under the same keys and rules; apart, the writer could write what the
 * reader refuses. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_STRIPE_UNIT ((uint64_t)1 << 20)

/* Keys of a [server.NAME] section, as bits of struct cfg_parse.seen. */
enum {
	KEY_ADDRESS = 1,
	KEY_PORT = 2,
	KEY_ROLES = 4,
	KEY_DIR = 8,
	KEY_STRIPE_UNIT = 16,
	KEY_STRIPE_COUNT = 32,
	KEY_KEY_FILE = 64,
	KEY_CLUSTER_ID = 128,
	KEY_ID = 256,
	KEY_LOG_FILE = 512,
	KEY_REDUNDANCY = 1024,
};

/* The keys each section accepts: a key is known if and only if it is
 * listed here, and the message for an unknown key names them all, which is
 * how test/build/conf-doc.sh checks that rpfs.conf(5) documents each. */
static const char *const cluster_keys[] = {
	"stripe_unit", "stripe_count", "redundancy", "key_file", "id", NULL,
};
static const char *const server_keys[] = {
	"address", "port", "roles", "dir", "id", "log_file", NULL,
};

enum cfg_section { SEC_NONE, SEC_CLUSTER, SEC_SERVER, SEC_TRANSPORT };

struct cfg_parse {
	struct rpfs_config *cfg;
	const char *path;
	FILE *f;
	int line; /* line being parsed, from 1 */
	enum cfg_section sec;
	char secname[256]; /* for messages */
	unsigned seen;	   /* KEY_* seen in the current section */
	int had_cluster, had_transport;
	uint32_t with_id;	      /* servers with an id key */
	int *server_line;	      /* line of each [server.NAME] header */
	uint32_t cap;		      /* room in cfg->servers and server_line */
	const struct xp_option *opts; /* a program's, applied before RPFS_* */
	int nopts;
	char *why;
	size_t whylen;
	int err;
};

/* Record the first error; later ones are consequences of it. */
static void __attribute__((format(printf, 2, 3)))
cfg_fail(struct cfg_parse *c, const char *fmt, ...)
{
	va_list ap;

	if (c->err)
		return;
	c->err = -EINVAL;
	if (!c->why || !c->whylen)
		return;
	va_start(ap, fmt);
	vsnprintf(c->why, c->whylen, fmt, ap);
	va_end(ap);
}

/* Decimal, digits only: "0x10", "-1" or " 5" in a config are mistakes. */
static int parse_u32(const char *s, uint32_t *out)
{
	unsigned long long v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		v = v * 10 + (unsigned)(*s - '0');
		if (v > UINT32_MAX)
			return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

static int name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= sizeof(((struct rpfs_server_cfg *)0)->name))
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_-.", *s))
			return 0;
	return 1;
}

/* "meta,io", spaces allowed around the names. */
static int parse_roles(const char *s, unsigned *out, char *bad, size_t badlen)
{
	unsigned roles = 0;

	for (;;) {
		const char *e;
		size_t n;

		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strcspn(s, ",");
		n = (size_t)(e - s);
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (n == 4 && !strncmp(s, "meta", 4)) {
			roles |= RPFS_ROLE_META;
		} else if (n == 2 && !strncmp(s, "io", 2)) {
			roles |= RPFS_ROLE_IO;
		} else {
			snprintf(bad, badlen, "%.*s", (int)(n > 40 ? 40 : n), s);
			return -EINVAL;
		}
		if (!*e)
			break;
		s = e + 1;
	}
	*out = roles;
	return 0;
}

static int copy_value(char *dst, size_t len, const char *v)
{
	if (!*v || strlen(v) >= len)
		return -EINVAL;
	strcpy(dst, v);
	return 0;
}

static void begin_server(struct cfg_parse *c, const char *name)
{
	struct rpfs_config *cfg = c->cfg;
	struct rpfs_server_cfg *sv;

	if (!name_ok(name)) {
		cfg_fail(
			c,
			"%s:%d: [server.%s]: bad server name (1-63 of A-Z a-z 0-9 _ - .)",
			c->path, c->line, name);
		return;
	}
	for (uint32_t i = 0; i < cfg->nservers; i++) {
		if (!strcmp(cfg->servers[i].name, name)) {
			cfg_fail(
				c,
				"%s:%d: [server.%s]: duplicate server name (first on line %d)",
				c->path, c->line, name, c->server_line[i]);
			return;
		}
	}
	if (cfg->nservers == RPFS_MAX_SERVERS) {
		cfg_fail(c, "%s:%d: [server.%s]: too many servers (at most %d)", c->path,
			 c->line, name, RPFS_MAX_SERVERS);
		return;
	}
	if (cfg->nservers == c->cap) {
		uint32_t cap = c->cap ? 2 * c->cap : 8;
		struct rpfs_server_cfg *s = realloc(cfg->servers, cap * sizeof(*s));
		int *l;

		if (!s) {
			c->err = -ENOMEM;
			return;
		}
		cfg->servers = s;
		l = realloc(c->server_line, cap * sizeof(*l));
		if (!l) {
			c->err = -ENOMEM;
			return;
		}
		c->server_line = l;
		c->cap = cap;
	}
	sv = &cfg->servers[cfg->nservers];
	memset(sv, 0, sizeof(*sv));
	strcpy(sv->name, name);
	sv->id = cfg->nservers;
	sv->io_index = -1;
	sv->meta_index = -1;
	c->server_line[cfg->nservers++] = c->line;
}

/* A section header: switch the current section (libinih would only tell us
 * on the section's first key). */
static void begin_section(struct cfg_parse *c, const char *name)
{
	snprintf(c->secname, sizeof(c->secname), "%s", name);
	c->seen = 0;
	if (!strcmp(name, "cluster")) {
		if (c->had_cluster++)
			cfg_fail(c, "%s:%d: duplicate section [cluster]", c->path,
				 c->line);
		c->sec = SEC_CLUSTER;
	} else if (!strcmp(name, "transport")) {
		if (c->had_transport++)
			cfg_fail(c, "%s:%d: duplicate section [transport]", c->path,
				 c->line);
		c->sec = SEC_TRANSPORT;
	} else if (!strncmp(name, "server.", 7)) {
		begin_server(c, name + 7);
		c->sec = SEC_SERVER;
	} else {
		cfg_fail(
			c,
			"%s:%d: unknown section [%s] (expected cluster, server.NAME, transport)",
			c->path, c->line, name);
	}
}

/* ini_reader: fgets that counts lines, spots section headers and refuses
 * lines too long for libinih's buffer. Returning NULL ends the parse. */
static char *cfg_read_line(char *str, int num, void *stream)
{
	struct cfg_parse *c = stream;
	char *s, *p, *end;
	size_t len;

	if (c->err)
		return NULL;
	s = fgets(str, num, c->f);
	if (!s)
		return NULL;
	c->line++;
	len = strlen(s);
	if (len && s[len - 1] != '\n' && !feof(c->f)) {
		cfg_fail(c, "%s:%d: line too long (at most %d characters)", c->path,
			 c->line, num - 3);
		return NULL;
	}
	p = s;
	if (c->line == 1 && !strncmp(p, "\xEF\xBB\xBF", 3))
		p += 3;
	while (isspace((unsigned char)*p))
		p++;
	/* Without ']' this is a syntax error that libinih reports itself. */
	if (*p == '[' && (end = strchr(p, ']'))) {
		char name[256];

		snprintf(name, sizeof(name), "%.*s", (int)(end - p - 1), p + 1);
		begin_section(c, name);
		if (c->err)
			return NULL;
	}
	return s;
}

/* 1 if name is one of keys (NULL-terminated); else the error, naming the
 * keys the section takes. */
static int known_key(struct cfg_parse *c, const char *const *keys, const char *name)
{
	char list[256] = "";
	size_t len = 0;

	for (const char *const *k = keys; *k; k++) {
		if (!strcmp(*k, name))
			return 1;
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
					k == keys ? "" : ", ", *k);
		if (len >= sizeof(list))
			len = sizeof(list) - 1;
	}
	cfg_fail(c, "%s:%d: [%s] %s: unknown key (%s)", c->path, c->line, c->secname,
		 name, list);
	return 0;
}

/* Marks key as seen in the current section; 0 if it was already. */
static int first_time(struct cfg_parse *c, unsigned key, const char *name)
{
	if (c->seen & key) {
		cfg_fail(c, "%s:%d: [%s] %s: duplicate key", c->path, c->line, c->secname,
			 name);
		return 0;
	}
	c->seen |= key;
	return 1;
}

static int parse_hex(const char *v, uint8_t *out, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned x;

		if (!isxdigit((unsigned char)v[2 * i]) ||
		    !isxdigit((unsigned char)v[2 * i + 1]) ||
		    sscanf(v + 2 * i, "%2x", &x) != 1)
			return -EINVAL;
		out[i] = (uint8_t)x;
	}
	return v[2 * len] ? -EINVAL : 0;
}

void rpfs_hex(const uint8_t *b, size_t len, char *out)
{
	for (size_t i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * len] = 0;
}

static void cluster_key(struct cfg_parse *c, const char *name, const char *value)
{
	struct rpfs_config *cfg = c->cfg;
	size_t su;

	if (!known_key(c, cluster_keys, name))
		return;
	if (!strcmp(name, "stripe_unit")) {
		if (!first_time(c, KEY_STRIPE_UNIT, name))
			return;
		if (xp_parse_size(value, &su) || !su)
			cfg_fail(
				c,
				"%s:%d: [cluster] stripe_unit = %s: bad number (a size > 0 such as 65536, 64K, 1M)",
				c->path, c->line, value);
		else
			cfg->stripe_unit = su;
	} else if (!strcmp(name, "stripe_count")) {
		if (!first_time(c, KEY_STRIPE_COUNT, name))
			return;
		if (parse_u32(value, &cfg->stripe_count))
			cfg_fail(c, "%s:%d: [cluster] stripe_count = %s: bad number",
				 c->path, c->line, value);
	} else if (!strcmp(name, "redundancy")) {
		char why[128];

		if (!first_time(c, KEY_REDUNDANCY, name))
			return;
		if (red_parse(value, &cfg->redundancy, why, sizeof(why)))
			cfg_fail(c, "%s:%d: [cluster] redundancy = %s", c->path, c->line,
				 why);
		else if (cfg->redundancy.kind == RPFS_LAYOUT_EC)
			cfg_fail(
				c,
				"%s:%d: [cluster] redundancy = %s: ec:K+P is not supported yet",
				c->path, c->line, value);
		else if (cfg->redundancy.kind == RED_DEFAULT)
			cfg_fail(
				c,
				"%s:%d: [cluster] redundancy = %s: want none or mirror:N",
				c->path, c->line, value);
	} else if (!strcmp(name, "key_file")) {
		if (!first_time(c, KEY_KEY_FILE, name))
			return;
		if (copy_value(cfg->key_file, sizeof(cfg->key_file), value))
			cfg_fail(c, "%s:%d: [cluster] key_file: empty or too long",
				 c->path, c->line);
	} else if (!strcmp(name, "id")) {
		if (!first_time(c, KEY_CLUSTER_ID, name))
			return;
		if (parse_hex(value, cfg->cluster_id, sizeof(cfg->cluster_id)))
			cfg_fail(c, "%s:%d: [cluster] id = %s: want %d hex digits",
				 c->path, c->line, value, 2 * RPFS_CLUSTER_ID_SIZE);
	} else {
		cfg_fail(c, "%s:%d: [cluster] %s: listed but not handled", c->path,
			 c->line, name);
	}
}

static void server_key(struct cfg_parse *c, const char *name, const char *value)
{
	struct rpfs_server_cfg *sv = &c->cfg->servers[c->cfg->nservers - 1];
	uint32_t port;
	char bad[48];

	if (!known_key(c, server_keys, name))
		return;
	if (!strcmp(name, "address")) {
		if (first_time(c, KEY_ADDRESS, name) &&
		    copy_value(sv->address, sizeof(sv->address), value))
			cfg_fail(c, "%s:%d: [%s] address: empty or too long", c->path,
				 c->line, c->secname);
	} else if (!strcmp(name, "port")) {
		if (!first_time(c, KEY_PORT, name))
			return;
		if (parse_u32(value, &port) || !port || port > 65535)
			cfg_fail(c, "%s:%d: [%s] port = %s: bad number (1..65535)",
				 c->path, c->line, c->secname, value);
		else
			snprintf(sv->port, sizeof(sv->port), "%u", port);
	} else if (!strcmp(name, "roles")) {
		if (!first_time(c, KEY_ROLES, name))
			return;
		if (parse_roles(value, &sv->roles, bad, sizeof(bad)))
			cfg_fail(
				c,
				"%s:%d: [%s] roles: unknown role '%s' (a comma list of meta, io)",
				c->path, c->line, c->secname, bad);
	} else if (!strcmp(name, "dir")) {
		if (first_time(c, KEY_DIR, name) &&
		    copy_value(sv->dir, sizeof(sv->dir), value))
			cfg_fail(c, "%s:%d: [%s] dir: empty or too long", c->path,
				 c->line, c->secname);
	} else if (!strcmp(name, "id")) {
		if (!first_time(c, KEY_ID, name))
			return;
		c->with_id++;
		if (parse_u32(value, &sv->id) || sv->id >= 1000000)
			cfg_fail(c, "%s:%d: [%s] id = %s: bad number (0..999999)",
				 c->path, c->line, c->secname, value);
	} else if (!strcmp(name, "log_file")) {
		if (first_time(c, KEY_LOG_FILE, name) &&
		    copy_value(sv->log_file, sizeof(sv->log_file), value))
			cfg_fail(c, "%s:%d: [%s] log_file: empty or too long", c->path,
				 c->line, c->secname);
	} else {
		cfg_fail(c, "%s:%d: [%s] %s: listed but not handled", c->path, c->line,
			 c->secname, name);
	}
}

static int cfg_ini_line(void *user, const char *section, const char *name,
			const char *value)
{
	struct cfg_parse *c = user;
	int ret;

	(void)section; /* the reader's view is authoritative (and not truncated) */
	if (c->err)
		return 0;
	switch (c->sec) {
	case SEC_NONE:
		cfg_fail(c, "%s:%d: %s: key outside any section", c->path, c->line, name);
		break;
	case SEC_CLUSTER:
		cluster_key(c, name, value);
		break;
	case SEC_SERVER:
		server_key(c, name, value);
		break;
	case SEC_TRANSPORT:
		ret = xp_params_set_from(&c->cfg->xport, name, value, XP_SRC_CONFIG);
		if (ret == -ENOENT) {
			cfg_fail(c, "%s:%d: [transport] %s: unknown key", c->path,
				 c->line, name);
		} else if (ret) {
			const struct xp_setting *st = xp_setting_find(name);

			cfg_fail(c, "%s:%d: [transport] %s = %s: bad value (%s)", c->path,
				 c->line, name, value, st->help);
		}
		break;
	}
	return !c->err;
}

/* Servers in the order of their ids (insertion sort: a handful of
 * servers, and stable); two with one id are an error naming both. */
static void order_by_id(struct cfg_parse *c)
{
	struct rpfs_config *cfg = c->cfg;

	if (c->with_id && c->with_id != cfg->nservers) {
		cfg_fail(
			c,
			"%s: %u of the %u servers have an id: give every server one or none",
			c->path, c->with_id, cfg->nservers);
		return;
	}
	for (uint32_t i = 1; i < cfg->nservers; i++) {
		struct rpfs_server_cfg sv = cfg->servers[i];
		int line = c->server_line[i];
		uint32_t j = i;

		for (; j > 0 && cfg->servers[j - 1].id > sv.id; j--) {
			cfg->servers[j] = cfg->servers[j - 1];
			c->server_line[j] = c->server_line[j - 1];
		}
		cfg->servers[j] = sv;
		c->server_line[j] = line;
		if (j > 0 && cfg->servers[j - 1].id == sv.id) {
			cfg_fail(c, "%s:%d: [server.%s]: id %u is taken (line %d)",
				 c->path, line, sv.name, sv.id, c->server_line[j - 1]);
			return;
		}
	}
}

/* Whole-file rules, once every line has been read. */
static void cfg_finish(struct cfg_parse *c)
{
	struct rpfs_config *cfg = c->cfg;
	static const char *const need[] = {"address", "port", "roles", "dir"};
	char why[256];

	order_by_id(c);
	if (c->err)
		return;

	for (uint32_t i = 0; i < cfg->nservers; i++) {
		struct rpfs_server_cfg *sv = &cfg->servers[i];
		const char *have[] = {sv->address, sv->port, sv->roles ? "x" : "",
				      sv->dir};

		for (size_t k = 0; k < sizeof(need) / sizeof(need[0]); k++) {
			if (!*have[k]) {
				cfg_fail(c, "%s:%d: [server.%s]: missing %s", c->path,
					 c->server_line[i], sv->name, need[k]);
				return;
			}
		}
	}
	cfg->io = malloc((cfg->nservers ? cfg->nservers : 1) * sizeof(*cfg->io));
	cfg->meta = malloc((cfg->nservers ? cfg->nservers : 1) * sizeof(*cfg->meta));
	if (!cfg->io || !cfg->meta) {
		c->err = -ENOMEM;
		return;
	}
	for (uint32_t i = 0; i < cfg->nservers; i++) {
		struct rpfs_server_cfg *sv = &cfg->servers[i];

		if (sv->roles & RPFS_ROLE_IO) {
			sv->io_index = (int)cfg->nio;
			cfg->io[cfg->nio++] = i;
		}
		if (sv->roles & RPFS_ROLE_META) {
			sv->meta_index = (int)cfg->nmeta;
			cfg->meta[cfg->nmeta++] = i;
		}
	}
	if (!cfg->nio) {
		cfg_fail(c, "%s: no io server (no [server.NAME] has roles = io)",
			 c->path);
		return;
	}
	if (!cfg->nmeta) {
		cfg_fail(c, "%s: no meta server (no [server.NAME] has roles = meta)",
			 c->path);
		return;
	}
	if (cfg->stripe_count > cfg->nio) {
		cfg_fail(c,
			 "%s: [cluster] stripe_count = %u: more than the %u io servers",
			 c->path, cfg->stripe_count, cfg->nio);
		return;
	}
	if (red_copies(&cfg->redundancy) > cfg->nio) {
		char r[RED_TEXT_MAX];

		cfg_fail(
			c,
			"%s: [cluster] redundancy = %s needs %u io servers, the cluster has %u",
			c->path, red_format(&cfg->redundancy, r, sizeof(r)),
			red_copies(&cfg->redundancy), cfg->nio);
		return;
	}
	/* A program's options win over the file, the environment over both
	 * (params.h); the whole is checked once all have been applied. */
	if (xp_params_from_options(&cfg->xport, c->opts, c->nopts, why, sizeof(why))) {
		cfg_fail(c, "%s", why);
		return;
	}
	if (xp_params_from_env(&cfg->xport)) {
		cfg_fail(c, "%s: a bad RPFS_* transport variable in the environment",
			 c->path);
		return;
	}
	if (xp_params_check(&cfg->xport, why, sizeof(why)))
		cfg_fail(c, "%s: [transport]%s: %s", c->path,
			 c->nopts ? " with the options" : "", why);
}

/* One candidate of the search: 0 and out set if it can be read. */
static int search_try(const char *dir, const char *rest, char *out, size_t len)
{
	int n = snprintf(out, len, "%s%s", dir, rest);

	return n > 0 && (size_t)n < len && !access(out, R_OK) ? 0 : -ENOENT;
}

int rpfs_config_search(char *out, size_t len, char *why, size_t whylen)
{
	const char *env = getenv("RPFS_CONFIG");
	const char *etc = getenv("RPFS_SYSCONFDIR");
	const char *home = getenv("HOME");
	char sys[1100];

	if (env && *env) {
		/* Named: used even if missing, so the error names it. */
		if ((size_t)snprintf(out, len, "%s", env) < len)
			return 0;
		snprintf(why, whylen, "RPFS_CONFIG: path too long");
		return -ENAMETOOLONG;
	}
	if (!etc || !*etc)
		etc = RPFS_SYSCONF_DIR;
	snprintf(sys, sizeof(sys), "%s/rpfs/rpfs.conf", etc);
	if (!search_try(sys, "", out, len))
		return 0;
	if (home && *home && !search_try(home, "/.rpfs/rpfs.conf", out, len))
		return 0;
	if (why && whylen)
		snprintf(
			why, whylen,
			"no cluster config: RPFS_CONFIG is not set, and neither %s nor %s/.rpfs/rpfs.conf can be read",
			sys, home && *home ? home : "$HOME");
	return -ENOENT;
}

static bool is_dir(FILE *f)
{
	struct stat st;

	return !fstat(fileno(f), &st) && S_ISDIR(st.st_mode);
}

int rpfs_config_load(const char *path, struct rpfs_config *cfg, char *why, size_t whylen)
{
	return rpfs_config_load_opts(path, NULL, 0, cfg, why, whylen);
}

int rpfs_config_load_opts(const char *path, const struct xp_option *opts, int nopts,
			  struct rpfs_config *cfg, char *why, size_t whylen)
{
	struct cfg_parse c = {
		.cfg = cfg, .opts = opts, .nopts = nopts, .why = why, .whylen = whylen};
	char found[sizeof(cfg->path)];
	int line;

	memset(cfg, 0, sizeof(*cfg));
	if (why && whylen)
		why[0] = '\0';
	if (!path) {
		int err = rpfs_config_search(found, sizeof(found), why, whylen);

		if (err)
			return err;
		path = found;
	}
	c.path = path;
	if (strlen(path) >= sizeof(cfg->path)) {
		cfg_fail(&c, "%s: config path too long", path);
		return c.err;
	}
	strcpy(cfg->path, path);
	cfg->stripe_unit = DEFAULT_STRIPE_UNIT;
	xp_params_default(&cfg->xport);

	c.f = fopen(path, "r");
	if (!c.f || is_dir(c.f)) {
		/* A directory opens, and its read fails for want of a cause:
		 * say why here, as for a file that is missing. */
		int err = c.f ? -EISDIR : -errno;

		if (c.f)
			fclose(c.f);
		if (why && whylen)
			snprintf(why, whylen, "%s: can't read the cluster config: %s",
				 path, strerror(-err));
		return err;
	}
	line = ini_parse_stream(cfg_read_line, &c, cfg_ini_line, &c);
	if (!c.err && ferror(c.f))
		cfg_fail(&c, "%s: read error", path);
	fclose(c.f);
	if (!c.err && line > 0)
		cfg_fail(
			&c,
			"%s:%d: syntax error (expected [section], key = value or a comment)",
			path, line);
	else if (!c.err && line < 0)
		c.err = -ENOMEM;
	if (!c.err)
		cfg_finish(&c);
	free(c.server_line);
	if (c.err) {
		if (c.err == -ENOMEM && why && whylen)
			snprintf(why, whylen, "%s: out of memory", path);
		rpfs_config_free(cfg);
	}
	return c.err;
}

void rpfs_config_free(struct rpfs_config *cfg)
{
	free(cfg->servers);
	free(cfg->io);
	free(cfg->meta);
	cfg->servers = NULL;
	cfg->io = NULL;
	cfg->meta = NULL;
	cfg->nservers = cfg->nio = cfg->nmeta = 0;
}

int rpfs_config_find(const struct rpfs_config *cfg, const char *name)
{
	/* Exact name first: a server may itself be called "server.x". */
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			if (strncmp(name, "server.", 7))
				break;
			name += 7;
		}
		for (uint32_t i = 0; i < cfg->nservers; i++)
			if (!strcmp(cfg->servers[i].name, name))
				return (int)i;
	}
	return -1;
}

/* ---- writing ----------------------------------------------------------- */

/* A value libinih gives back unchanged: no surrounding blanks (stripped),
 * no line breaks, no inline comment (';' after a blank) and a line that
 * fits its buffer. */
static int value_ok(const char *key, const char *v)
{
	size_t n = strlen(v);

	if (!n || isspace((unsigned char)v[0]) || isspace((unsigned char)v[n - 1]))
		return 0;
	if (strpbrk(v, "\r\n") || v[0] == ';')
		return 0;
	for (size_t i = 1; i < n; i++)
		if (v[i] == ';' && isspace((unsigned char)v[i - 1]))
			return 0;
	return strlen(key) + 3 + n <= INI_MAX_LINE - 3;
}

static int put_kv(FILE *f, const char *key, const char *v)
{
	if (!value_ok(key, v))
		return -EINVAL;
	return fprintf(f, "%s = %s\n", key, v) < 0 ? -EIO : 0;
}

/* Only the settings that differ from the defaults, so that the file says
 * what was chosen on purpose. */
static int write_transport(FILE *f, const struct xp_params *p)
{
	struct xp_params d;
	const struct xp_setting *st;
	char v[64], dv[64];
	int ret = 0, header = 0;

	xp_params_default(&d);
	for (int i = 0; (st = xp_setting_at(i)) && !ret; i++) {
		xp_setting_format(p, st, v, sizeof(v));
		xp_setting_format(&d, st, dv, sizeof(dv));
		if (!strcmp(v, dv))
			continue;
		if (!header++)
			fprintf(f, "\n[transport]\n");
		ret = put_kv(f, st->name, v);
	}
	return ret;
}

static int write_body(FILE *f, const struct rpfs_config *cfg)
{
	char v[64];
	int ret;

	fprintf(f,
		"; rpfs cluster configuration: see rpfs.conf(5) (man rpfs.conf)\n\n[cluster]\n");
	xp_format_size(v, sizeof(v), cfg->stripe_unit);
	ret = put_kv(f, "stripe_unit", v);
	snprintf(v, sizeof(v), "%u", cfg->stripe_count);
	ret = ret ? ret : put_kv(f, "stripe_count", v);
	if (!ret && cfg->redundancy.kind != RPFS_LAYOUT_STRIPE) {
		red_format(&cfg->redundancy, v, sizeof(v));
		ret = put_kv(f, "redundancy", v);
	}
	if (!ret && cfg->key_file[0])
		ret = put_kv(f, "key_file", cfg->key_file);
	for (size_t i = 0; i < sizeof(cfg->cluster_id); i++) {
		if (cfg->cluster_id[i]) {
			char hex[2 * RPFS_CLUSTER_ID_SIZE + 1];

			rpfs_hex(cfg->cluster_id, sizeof(cfg->cluster_id), hex);
			ret = ret ? ret : put_kv(f, "id", hex);
			break;
		}
	}
	for (uint32_t i = 0; i < cfg->nservers && !ret; i++) {
		const struct rpfs_server_cfg *sv = &cfg->servers[i];
		unsigned r = sv->roles & (RPFS_ROLE_META | RPFS_ROLE_IO);

		if (!name_ok(sv->name) || !r)
			return -EINVAL;
		fprintf(f, "\n[server.%s]\n", sv->name);
		ret = put_kv(f, "address", sv->address);
		ret = ret ? ret : put_kv(f, "port", sv->port);
		ret = ret ? ret
			  : put_kv(f, "roles",
				   r == (RPFS_ROLE_META | RPFS_ROLE_IO) ? "meta,io"
				   : r == RPFS_ROLE_META		? "meta"
									: "io");
		ret = ret ? ret : put_kv(f, "dir", sv->dir);
		snprintf(v, sizeof(v), "%u", sv->id);
		ret = ret ? ret : put_kv(f, "id", v);
		if (!ret && sv->log_file[0])
			ret = put_kv(f, "log_file", sv->log_file);
	}
	return ret ? ret : write_transport(f, &cfg->xport);
}

/* Written beside the target and renamed over it, so that a reader never sees
 * half a file. -EINVAL if a value would not load back as it is. */
int rpfs_config_write(const struct rpfs_config *cfg, const char *path)
{
	size_t n = strlen(path) + 32;
	char *tmp = malloc(n);
	FILE *f;
	int ret;

	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
	f = fopen(tmp, "w");
	if (!f) {
		ret = -errno;
		goto out;
	}
	ret = write_body(f, cfg);
	if (ferror(f) && !ret)
		ret = -EIO;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
out:
	free(tmp);
	return ret;
}

int rpfs_config_key(const struct rpfs_config *cfg, struct auth_key *key, char *why,
		    size_t whylen)
{
	char path[sizeof(cfg->path) + sizeof(cfg->key_file) + 2];
	const char *slash = strrchr(cfg->path, '/');

	if (!cfg->key_file[0]) {
		snprintf(why, whylen, "%s names no cluster key ([cluster] key_file)",
			 cfg->path);
		return -ENOKEY;
	}
	if (cfg->key_file[0] == '/' || !slash)
		snprintf(path, sizeof(path), "%s", cfg->key_file);
	else
		snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - cfg->path),
			 cfg->path, cfg->key_file);
	return auth_key_load(path, key, why, whylen);
}

void rpfs_config_new_id(struct rpfs_config *cfg)
{
	auth_random(cfg->cluster_id, sizeof(cfg->cluster_id));
}

void rpfs_config_fingerprint(const struct rpfs_config *cfg,
			     uint8_t out[RPFS_FINGERPRINT_SIZE])
{
	char hex[2 * RPFS_CLUSTER_ID_SIZE + 1], *text;
	size_t len = 0, cap = sizeof(hex) + 2;
	FILE *f;

	/* One line per server, in config order, after the cluster id. */
	f = open_memstream(&text, &cap);
	if (!f)
		abort(); /* out of memory: nothing sensible to compare */
	rpfs_hex(cfg->cluster_id, sizeof(cfg->cluster_id), hex);
	fprintf(f, "%s\n", hex);
	for (uint32_t i = 0; i < cfg->nservers; i++) {
		const struct rpfs_server_cfg *sv = &cfg->servers[i];

		fprintf(f, "%s|%s|%s|%u|%d|%d\n", sv->name, sv->address, sv->port,
			sv->roles, sv->io_index, sv->meta_index);
	}
	fclose(f);
	len = strlen(text);
	auth_digest(text, len, out, RPFS_FINGERPRINT_SIZE);
	free(text);
}
