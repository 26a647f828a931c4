/* Transport settings: see params.h. */
#define _GNU_SOURCE /* cpu_set_t (cpulist.h) */
#include "params.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
#include "log.h"

#define KIB    ((uint64_t)1 << 10)
#define MIB    ((uint64_t)1 << 20)
#define GIB    ((uint64_t)1 << 30)
#define OFF(f) offsetof(struct xp_params, f)

/* Every setting, once. Ranges are checked when a value is set and again by
 * xp_params_check (for code that fills the struct directly). CLIENT marks
 * the settings a client process uses for itself (params.h); inline_max and
 * fast_max are checked by servers too, so a client may lower them only. */
#define CLIENT XP_SCOPE_CLIENT
#define SERVER XP_SCOPE_SERVER
static const struct xp_setting settings[] = {
	{"provider", XP_SET_STR, CLIENT, OFF(provider), "", 0, 0,
	 "libfabric provider: verbs on InfiniBand/RoCE, tcp elsewhere (empty: verbs if a device exists, else tcp)"},
	{"inline_max", XP_SET_SIZE, CLIENT, OFF(inline_max), "4K", 64, MIB,
	 "largest payload carried inside a request or reply message (a client's at most the servers')"},
	{"fast_max", XP_SET_SIZE, CLIENT, OFF(fast_max), "64K", 64, 16 * MIB,
	 "largest payload sent by Fast RDMA Write, at least inline_max (a client's at most the servers')"},
	{"fast_slots", XP_SET_U32, CLIENT, OFF(fast_slots), "16", 1, 1024,
	 "Fast RDMA buffer slots per connection and side"},
	{"credits", XP_SET_U32, SERVER, OFF(credits), "32", 2, 1024,
	 "receives a server posts per connection (requests in flight)"},
	{"chunk_size", XP_SET_SIZE, SERVER, OFF(chunk_size), "1M", 4 * KIB, 64 * MIB,
	 "bulk pipeline chunk, a power of two (at most half the transfer)"},
	{"pipeline_depth", XP_SET_U32, SERVER, OFF(pipeline_depth), "2", 1, 64,
	 "bulk chunks in flight per request (2: double buffering)"},
	{"rcache_max_entries", XP_SET_U32, CLIENT, OFF(rcache_max_entries), "1024", 1,
	 1u << 24, "registration cache: regions kept"},
	{"rcache_max_bytes", XP_SET_SIZE, CLIENT, OFF(rcache_max_bytes), "1G", MIB,
	 1024 * GIB, "registration cache: bytes kept registered"},
	{"rcache_batch", XP_SET_U32, CLIENT, OFF(rcache_batch), "32", 1, 65536,
	 "registration cache: unused regions that trigger a batch deregistration"},
	{"pool_zone_bytes", XP_SET_SIZE, SERVER, OFF(pool_zone_bytes), "8M", 2 * MIB,
	 16 * GIB, "server buffer pool: bytes per zone"},
	{"timeout_ms", XP_SET_INT, CLIENT, OFF(timeout_ms), "30000", 1, 3600 * 1000,
	 "a connection whose peer answers nothing this long while calls wait fails"},
	{"retry_unanswered_ms", XP_SET_U32, CLIENT, OFF(retry_unanswered_ms), "10000", 0,
	 3600 * 1000,
	 "a server that let a call or connect go unanswered for timeout_ms fails calls at once for this long before it is tried again (0: always try)"},
	{"spin_us", XP_SET_U32, CLIENT, OFF(spin_us), "200", 0, 1000000,
	 "progress keeps polling this long after activity before it sleeps"},
	{"progress_thread", XP_SET_U32, CLIENT, OFF(progress_thread), "1", 0, 1,
	 "a thread in each client process moves transfers while the program computes, asleep in the completion queue's wait fd when idle (0: only calls into librpfs move them)"},
	{"progress_cpus", XP_SET_CPUS, CLIENT, OFF(progress_cpus), "", 0, 0,
	 "CPUs the progress thread runs on: empty for the process's own (a rank bound to one core then shares it with its computation), all for any CPU the node lets the process use, or a list such as 6 or 4-7"},
	{"force_path", XP_SET_PATH, CLIENT, OFF(force_path), "auto", 0, 0,
	 "force inline, fast or bulk (tests and benchmarks)"},
	{"auth_window_s", XP_SET_U32, SERVER, OFF(auth_window_s), "300", 1, 86400,
	 "clocks of the cluster agree to within this many seconds (connection requests older or newer are refused)"},
	{"max_conns", XP_SET_U32, SERVER, OFF(max_conns), "1024", 1, 65536,
	 "server: connections at once; more are refused before anything is allocated"},
	{"handshake_ms", XP_SET_U32, SERVER, OFF(handshake_ms), "10000", 100, 600000,
	 "server: a connection that has not finished its handshake by then is dropped"},
	{"idle_timeout_s", XP_SET_U32, SERVER, OFF(idle_timeout_s), "600", 0, 7 * 86400,
	 "server: connections idle this long are dropped (0: never); clients reconnect after half of it, and keep those of open files alive"},
	{"cap_lifetime_s", XP_SET_U32, SERVER, OFF(cap_lifetime_s), "3600", 2, 7 * 86400,
	 "metadata server: capabilities it grants on files last this long; clients renew them after half of it"},
	{"server_workers", XP_SET_U32, SERVER, OFF(server_workers), "4", 1,
	 XP_SERVER_WORKERS_MAX,
	 "server: threads that run the blocking work of requests (storage reads and writes, LMDB, fdatasync, calls to other servers)"},
	{"server_bulk_per_conn", XP_SET_U32, SERVER, OFF(server_bulk_per_conn), "2", 1,
	 64,
	 "server: bulk transfers one connection may run at once; its others wait in order, so one client cannot take the whole buffer pool"},
	{"heartbeat_ms", XP_SET_U32, SERVER, OFF(heartbeat_ms), "1000", 100, 60000,
	 "metadata server: pings each I/O server this often, to place new files only on servers that answer"},
	{"heartbeat_timeout_ms", XP_SET_U32, SERVER, OFF(heartbeat_timeout_ms), "3000",
	 100, 600000,
	 "metadata server: an I/O server whose ping goes unanswered this long is unreachable (new files avoid it)"},
	{"io_offline_s", XP_SET_U32, SERVER, OFF(io_offline_s), "60", 1, 7 * 86400,
	 "metadata server: an I/O server unreachable this long is shown offline"},
	{"resync_mbps", XP_SET_U32, SERVER, OFF(resync_mbps), "400", 0, 1000000,
	 "I/O server: the resyncs and rebuilds of mirrored copies it sends, in MB/s at most, all of them together, leaving the rest of its disk and network to clients (0: no limit)"},
	{"scrub_mbps", XP_SET_U32, SERVER, OFF(scrub_mbps), "0", 0, 100000,
	 "I/O server: reads every datafile against its checksums in the background at this many MB/s, pass after pass, so damage no read touches is found (a mirrored copy's is mended from another copy); 0: no scrub"},
	{"ec_preview", XP_SET_U32, SERVER, OFF(ec_preview), "0", 0, 1,
	 "metadata server: 1 lets new files and directory defaults be ec:K+P before their degraded service exists (issue 29): writes keep the parity, but a read or write fails while a member's server is down; for trying the code path, never for data that must survive a server; 0: ec:K+P is refused"},
};
#undef CLIENT
#undef SERVER

#define NSETTINGS ((int)(sizeof(settings) / sizeof(settings[0])))
_Static_assert(sizeof(settings) / sizeof(settings[0]) <= XP_MAX_SETTINGS,
	       "raise XP_MAX_SETTINGS");

int xp_parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	if (!s || !*s || strchr(s, '-') || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case 'G':
		shift += 10;
		/* fall through */
	case 'M':
		shift += 10;
		/* fall through */
	case 'K':
		shift += 10;
		if (v > (SIZE_MAX >> shift))
			return -EINVAL;
		v <<= shift;
		end++;
		if (toupper((unsigned char)*end) == 'I')
			end++;
		if (toupper((unsigned char)*end) == 'B')
			end++;
		break;
	default:
		break;
	}
	if (*end)
		return -EINVAL;
	*out = (size_t)v;
	return 0;
}

const char *xp_path_name(int path)
{
	switch (path) {
	case XP_PATH_INLINE:
		return "inline";
	case XP_PATH_FAST:
		return "fast";
	case XP_PATH_BULK:
		return "bulk";
	default:
		return "auto";
	}
}

static int parse_path(const char *v, int *out)
{
	static const char *const names[] = {"auto", "inline", "fast", "bulk"};

	for (int i = 0; i < 4; i++) {
		if (!strcmp(v, names[i])) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

const struct xp_setting *xp_setting_at(int i)
{
	return i >= 0 && i < NSETTINGS ? &settings[i] : NULL;
}

const struct xp_setting *xp_setting_find(const char *name)
{
	for (int i = 0; i < NSETTINGS; i++)
		if (!strcmp(settings[i].name, name))
			return &settings[i];
	return NULL;
}

const char *xp_source_name(int source)
{
	switch (source) {
	case XP_SRC_CONFIG:
		return "config";
	case XP_SRC_ENV:
		return "environment";
	case XP_SRC_OPTION:
		return "option";
	default:
		return "default";
	}
}

const char *xp_setting_type_name(const struct xp_setting *s)
{
	switch (s->type) {
	case XP_SET_SIZE:
		return "size";
	case XP_SET_STR:
		return "string";
	case XP_SET_PATH:
		return "choice";
	case XP_SET_CPUS:
		return "cpu list";
	default:
		return "integer";
	}
}

void xp_setting_range(const struct xp_setting *s, char *buf, size_t len)
{
	char lo[32], hi[32];

	switch (s->type) {
	case XP_SET_STR:
		snprintf(buf, len, "a provider name");
		break;
	case XP_SET_PATH:
		snprintf(buf, len, "auto, inline, fast, bulk");
		break;
	case XP_SET_CPUS:
		snprintf(buf, len, "\"\", all, or a list");
		break;
	case XP_SET_SIZE:
		xp_format_size(lo, sizeof(lo), s->min);
		xp_format_size(hi, sizeof(hi), s->max);
		snprintf(buf, len, "%s .. %s", lo, hi);
		break;
	default:
		snprintf(buf, len, "%llu .. %llu", (unsigned long long)s->min,
			 (unsigned long long)s->max);
		break;
	}
}

static void *field(const struct xp_params *p, const struct xp_setting *s)
{
	return (char *)p + s->offset;
}

/* The number a setting holds (STR: 0). */
static uint64_t number(const struct xp_params *p, const struct xp_setting *s)
{
	switch (s->type) {
	case XP_SET_SIZE:
		return *(size_t *)field(p, s);
	case XP_SET_U32:
		return *(uint32_t *)field(p, s);
	case XP_SET_INT:
	case XP_SET_PATH:
		return (uint64_t)(int64_t) * (int *)field(p, s);
	default:
		return 0;
	}
}

void xp_format_size(char *buf, size_t len, uint64_t v)
{
	if (v && !(v & (GIB - 1)))
		snprintf(buf, len, "%lluG", (unsigned long long)(v >> 30));
	else if (v && !(v & (MIB - 1)))
		snprintf(buf, len, "%lluM", (unsigned long long)(v >> 20));
	else if (v && !(v & (KIB - 1)))
		snprintf(buf, len, "%lluK", (unsigned long long)(v >> 10));
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
}

void xp_setting_format(const struct xp_params *p, const struct xp_setting *s, char *buf,
		       size_t len)
{
	switch (s->type) {
	case XP_SET_STR:
	case XP_SET_CPUS:
		snprintf(buf, len, "%s", (const char *)field(p, s));
		break;
	case XP_SET_PATH:
		snprintf(buf, len, "%s", xp_path_name(*(int *)field(p, s)));
		break;
	case XP_SET_SIZE:
		xp_format_size(buf, len, number(p, s));
		break;
	default:
		snprintf(buf, len, "%llu", (unsigned long long)number(p, s));
		break;
	}
}

/* Parse value for s into *v (numbers) or check it (strings). */
static int parse_value(const struct xp_setting *s, const char *value, uint64_t *v)
{
	size_t sz;
	int path;
	cpu_set_t cpus;

	switch (s->type) {
	case XP_SET_STR:
		return strlen(value) < sizeof(((struct xp_params *)0)->provider)
			       ? 0
			       : -EINVAL;
	case XP_SET_CPUS:
		if (strlen(value) >= sizeof(((struct xp_params *)0)->progress_cpus))
			return -EINVAL;
		return !value[0] || !cpulist_parse(value, &cpus) ? 0 : -EINVAL;
	case XP_SET_PATH:
		if (parse_path(value, &path))
			return -EINVAL;
		*v = (uint64_t)path;
		return 0;
	default:
		if (xp_parse_size(value, &sz))
			return -EINVAL;
		*v = sz;
		return *v < s->min || *v > s->max ? -EINVAL : 0;
	}
}

static void store(struct xp_params *p, const struct xp_setting *s, const char *value,
		  uint64_t v)
{
	switch (s->type) {
	case XP_SET_STR:
		snprintf(field(p, s), sizeof(p->provider), "%s", value);
		break;
	case XP_SET_CPUS:
		snprintf(field(p, s), sizeof(p->progress_cpus), "%s", value);
		break;
	case XP_SET_SIZE:
		*(size_t *)field(p, s) = (size_t)v;
		break;
	case XP_SET_U32:
		*(uint32_t *)field(p, s) = (uint32_t)v;
		break;
	default:
		*(int *)field(p, s) = (int)v;
		break;
	}
}

void xp_params_default(struct xp_params *p)
{
	memset(p, 0, sizeof(*p));
	for (int i = 0; i < NSETTINGS; i++) {
		uint64_t v = 0;

		/* The table's defaults parse (test_params checks it). */
		if (!parse_value(&settings[i], settings[i].def, &v))
			store(p, &settings[i], settings[i].def, v);
	}
}

int xp_params_set_from(struct xp_params *p, const char *key, const char *value,
		       enum xp_source src)
{
	const struct xp_setting *s = xp_setting_find(key);
	uint64_t v = 0;

	if (!s)
		return -ENOENT;
	if (!value || parse_value(s, value, &v))
		return -EINVAL;
	store(p, s, value, v);
	p->source[s - settings] = (uint8_t)src;
	return 0;
}

int xp_params_set(struct xp_params *p, const char *key, const char *value)
{
	return xp_params_set_from(p, key, value, XP_SRC_OPTION);
}

int xp_params_from_env(struct xp_params *p)
{
	char name[64];

	for (int i = 0; i < NSETTINGS; i++) {
		const char *v;
		size_t j;

		strcpy(name, "RPFS_");
		for (j = 0; settings[i].name[j]; j++)
			name[5 + j] = (char)toupper((unsigned char)settings[i].name[j]);
		name[5 + j] = 0;
		v = getenv(name);
		if (v && xp_params_set_from(p, settings[i].name, v, XP_SRC_ENV)) {
			log_err("bad value '%s' for %s", v, name);
			return -EINVAL;
		}
	}
	return 0;
}

int xp_params_from_options(struct xp_params *p, const struct xp_option *opts, int n,
			   char *why, size_t whylen)
{
	char range[64];

	for (int i = 0; i < n; i++) {
		const char *key = opts[i].key ? opts[i].key : "(null)";
		const struct xp_setting *s = xp_setting_find(key);

		if (!s) {
			snprintf(why, whylen,
				 "option %s: no such setting (see `rpfs settings`)", key);
			return -EINVAL;
		}
		if (s->scope != XP_SCOPE_CLIENT) {
			snprintf(why, whylen,
				 "option %s: a server setting, not a client's", key);
			return -EINVAL;
		}
		if (xp_params_set_from(p, key, opts[i].value, XP_SRC_OPTION)) {
			xp_setting_range(s, range, sizeof(range));
			snprintf(why, whylen, "option %s = %s: bad value (%s: %s)", key,
				 opts[i].value ? opts[i].value : "(null)", range,
				 s->help);
			return -EINVAL;
		}
	}
	return 0;
}

static int is_pow2(size_t v)
{
	return v && !(v & (v - 1));
}

int xp_params_check(const struct xp_params *p, char *why, size_t whylen)
{
	char msg[160] = "";

	for (int i = 0; i < NSETTINGS && !msg[0]; i++) {
		const struct xp_setting *s = &settings[i];
		uint64_t v = number(p, s);

		if (s->type == XP_SET_PATH && (v > XP_PATH_BULK))
			snprintf(msg, sizeof(msg),
				 "force_path must be auto, inline, fast or bulk");
		else if (s->type == XP_SET_CPUS && parse_value(s, field(p, s), &v))
			snprintf(msg, sizeof(msg),
				 "%s must be empty, all, or a list of CPUs such as 0-3,8",
				 s->name);
		else if ((s->type == XP_SET_SIZE || s->type == XP_SET_U32 ||
			  s->type == XP_SET_INT) &&
			 (v < s->min || v > s->max))
			snprintf(msg, sizeof(msg), "%s must be between %llu and %llu",
				 s->name, (unsigned long long)s->min,
				 (unsigned long long)s->max);
	}
	if (!msg[0] && p->fast_max < p->inline_max)
		snprintf(msg, sizeof(msg), "fast_max must be at least inline_max");
	if (!msg[0] && !is_pow2(p->chunk_size))
		snprintf(msg, sizeof(msg), "chunk_size must be a power of two");
	/* The server's pool cuts its zones into chunks: a bigger chunk failed
	 * later as "couldn't create the buffer pool: Invalid argument". */
	if (!msg[0] && p->chunk_size > p->pool_zone_bytes)
		snprintf(
			msg, sizeof(msg),
			"chunk_size (%zu) must be at most pool_zone_bytes (%zu): the server's buffer pool holds chunks in zones",
			p->chunk_size, p->pool_zone_bytes);
	if (!msg[0])
		return 0;
	if (why && whylen)
		snprintf(why, whylen, "%s", msg);
	return -EINVAL;
}

/* ---- the table for people ---------------------------------------------- */

static void format_default(const struct xp_setting *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s", s->def[0] ? s->def : "\"\"");
}

void xp_settings_print(FILE *f, const struct xp_params *cur, const char *provider)
{
	const struct xp_setting *s;
	char def[32], range[64], value[64], source[32];

	fprintf(f, "%-20s %-8s %-8s %-24s %s\n", "SETTING", "TYPE", "DEFAULT", "RANGE",
		cur ? "CLIENT VALUE    SOURCE" : "CLIENT");
	for (int i = 0; (s = xp_setting_at(i)); i++) {
		const char *client = s->scope == XP_SCOPE_CLIENT ? "yes" : "no";

		format_default(s, def, sizeof(def));
		xp_setting_range(s, range, sizeof(range));
		fprintf(f, "%-20s %-8s %-8s %-24s ", s->name, xp_setting_type_name(s),
			def, range);
		if (cur) {
			xp_setting_format(cur, s, value, sizeof(value));
			snprintf(source, sizeof(source), "%s",
				 xp_source_name(cur->source[i]));
			/* What an empty provider means here, not "". */
			if (s->type == XP_SET_STR && !value[0] && provider) {
				snprintf(value, sizeof(value), "%s", provider);
				snprintf(source, sizeof(source), "%s (resolved)",
					 xp_source_name(cur->source[i]));
			}
			fprintf(f, "%-6s %-8s %s\n", client, value[0] ? value : "\"\"",
				source);
		} else {
			fprintf(f, "%s\n", client);
		}
		fprintf(f, "    %s\n", s->help);
	}
}

void xp_settings_markdown(FILE *f)
{
	const struct xp_setting *s;
	char def[32], range[64];

	fprintf(f, "| setting | type | default | range | client | meaning |\n"
		   "|---|---|---|---|---|---|\n");
	for (int i = 0; (s = xp_setting_at(i)); i++) {
		format_default(s, def, sizeof(def));
		xp_setting_range(s, range, sizeof(range));
		fprintf(f, "| `%s` | %s | `%s` | %s | %s | %s |\n", s->name,
			xp_setting_type_name(s), def, range,
			s->scope == XP_SCOPE_CLIENT ? "yes" : "no", s->help);
	}
}
