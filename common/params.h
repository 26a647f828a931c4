/* Run-time settings of the transport and the connection handshake.
 *
 * Every setting is declared once, in the table in params.c (name, type,
 * default, range, whether a client may set it, help): that table drives the
 * defaults, parsing of the [transport] section of the cluster config, the
 * RPFS_<NAME> environment variables, the config writer, the options of
 * rpfs_init_opts and so the rpfs_<name> MPI hints, `rpfs settings` /
 * `rpfsd --list-settings`, and the table in docs/settings.md (test_settings_doc checks
 * that it is this table's).
 *
 * Sources, later ones win: built-in defaults, the [transport] section of the
 * cluster config file, options a program passes to rpfs_init_opts (MPI
 * hints), then environment variables RPFS_<NAME> (name upper-cased). The
 * environment comes last on purpose: as with ROMIO's hints, what a program
 * asks for is advice, and the user running it can overrule it without a
 * rebuild. Options are still checked when the environment overrules them,
 * so a bad one is an error either way. Each setting remembers which source
 * set it. */
#ifndef RPFS_PARAMS_H
#define RPFS_PARAMS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum xp_path {
	XP_PATH_AUTO = 0,
	XP_PATH_INLINE = 1, /* data rides in the request or reply message */
	XP_PATH_FAST = 2,   /* RDMA write into the peer's Fast RDMA buffer slot */
	XP_PATH_BULK = 3,   /* server-driven pipelined RDMA from/to client memory */
};

/* In the order of precedence, lowest first. */
enum xp_source {
	XP_SRC_DEFAULT = 0,
	XP_SRC_CONFIG, /* [transport] of the cluster config */
	XP_SRC_OPTION, /* rpfs_init_opts: a program's own choice (MPI hints) */
	XP_SRC_ENV,    /* RPFS_<NAME>: the user's, over the program's */
};

#define XP_MAX_SETTINGS 32
/* The most worker threads a server runs (server_workers). */
#define XP_SERVER_WORKERS_MAX 64

struct xp_params {
	char provider[32];	 /* "" = verbs if present, else tcp */
	size_t inline_max;	 /* largest inline payload */
	size_t fast_max;	 /* largest Fast RDMA Write payload */
	uint32_t fast_slots;	 /* Fast RDMA buffer slots per connection and side */
	uint32_t credits;	 /* receive buffers a server posts per connection */
	size_t chunk_size;	 /* bulk pipeline chunk */
	uint32_t pipeline_depth; /* bulk chunks in flight per request */
	uint32_t rcache_max_entries;
	size_t rcache_max_bytes;
	uint32_t rcache_batch;
	size_t pool_zone_bytes;	      /* server buffer pool: bytes per zone */
	int timeout_ms;		      /* an operation with no progress fails after this */
	uint32_t retry_unanswered_ms; /* client: a silent server waits this long */
	uint32_t spin_us; /* keep polling this long after activity before sleeping */
	uint32_t progress_thread; /* client: a thread drives progress (0 or 1) */
	char progress_cpus[64];	  /* client: where it runs ("": the process's cpus) */
	int force_path;		  /* enum xp_path; AUTO except in tests and benchmarks */
	uint32_t auth_window_s;	  /* clocks of a cluster agree to within this */
	uint32_t max_conns;	  /* server: connections at once */
	uint32_t handshake_ms;	  /* server: a connection must finish its handshake */
	uint32_t idle_timeout_s;  /* server: drop connections idle this long (0: never) */
	uint32_t cap_lifetime_s;  /* metadata server: capabilities last this long */
	uint32_t server_workers;  /* server: worker threads */
	uint32_t server_bulk_per_conn; /* server: bulk transfers a connection runs */
	uint32_t heartbeat_ms;	       /* metadata server: I/O server ping period */
	uint32_t heartbeat_timeout_ms; /* ... unanswered this long: unreachable */
	uint32_t io_offline_s;	       /* ... unreachable this long: offline */
	uint32_t resync_mbps; /* I/O server: resyncs and rebuilds from it, MB/s in all */
	uint32_t scrub_mbps;  /* I/O server: the scrub's pace, MB/s (0: none) */
	uint32_t ec_preview;  /* metadata server: 1 lets new files be ec:K+P */
	uint8_t source[XP_MAX_SETTINGS]; /* enum xp_source, by table index */
};

/* The table. */
enum xp_setting_type {
	XP_SET_SIZE,
	XP_SET_U32,
	XP_SET_INT,
	XP_SET_STR,  /* a provider name */
	XP_SET_PATH, /* enum xp_path by name */
	XP_SET_CPUS, /* "", "all" or a CPU list (cpulist.h) */
};

/* Who may set a setting. A client setting is one a client process uses for
 * itself: a program may pass it to rpfs_init_opts (an MPI program as hint
 * rpfs_<name>). The others describe a server or the cluster (max_conns,
 * credits, the bulk pipeline, which servers drive) and come only from the
 * config and the environment. */
enum xp_setting_scope { XP_SCOPE_SERVER, XP_SCOPE_CLIENT };

struct xp_setting {
	const char *name;
	enum xp_setting_type type;
	enum xp_setting_scope scope;
	size_t offset; /* in struct xp_params */
	const char *def;
	uint64_t min, max; /* numbers */
	const char *help;
};

/* One setting a program passes (rpfs_init_opts): name and value as text. */
struct xp_option {
	const char *key;
	const char *value;
};

/* The i-th setting, or NULL past the last. */
const struct xp_setting *xp_setting_at(int i);
/* A setting by name, or NULL. */
const struct xp_setting *xp_setting_find(const char *name);
/* The setting's current value as the config file would write it ("64K"). */
void xp_setting_format(const struct xp_params *p, const struct xp_setting *s, char *buf,
		       size_t len);
const char *xp_source_name(int source);
/* "size", "integer", "string", "choice". */
const char *xp_setting_type_name(const struct xp_setting *s);
/* The values a setting takes: "64 .. 1M", "auto, inline, fast, bulk". */
void xp_setting_range(const struct xp_setting *s, char *buf, size_t len);

/* Print the table, one setting after another: name, type, default, range,
 * whether a client may set it, help; with cur, also each setting's value in
 * cur and its source. An empty provider in cur is shown as provider, what
 * it resolves to (xp_provider_default()), with its source marked
 * "(resolved)"; provider NULL leaves it empty. Plain text for a terminal
 * (`rpfsd --list-settings`, `rpfs settings`). */
void xp_settings_print(FILE *f, const struct xp_params *cur, const char *provider);
/* The same table in Markdown, as docs/settings.md has it (without values:
 * the document must not depend on anyone's config). */
void xp_settings_markdown(FILE *f);

void xp_params_default(struct xp_params *p);
/* Set one key ("inline_max", "fast_max", ...; sizes accept K/M/G suffixes)
 * from the given source. Returns 0, -ENOENT for an unknown key, -EINVAL
 * for a bad or out-of-range value (the old value is kept). */
int xp_params_set_from(struct xp_params *p, const char *key, const char *value,
		       enum xp_source src);
int xp_params_set(struct xp_params *p, const char *key, const char *value);
/* Apply RPFS_<NAME> variables. Returns 0 or the first error (and logs it). */
int xp_params_from_env(struct xp_params *p);
/* Apply a program's options (source XP_SRC_OPTION), each checked: a client
 * setting and a good value. Returns 0, or -EINVAL with a message naming the
 * key in why (unknown key, a server setting, a bad value); then p may hold
 * the options before the bad one. */
int xp_params_from_options(struct xp_params *p, const struct xp_option *opts, int n,
			   char *why, size_t whylen);
/* Check ranges and consistency (inline_max <= fast_max, power-of-two
 * chunks, ...). Returns 0, or -EINVAL with the reason in why. */
int xp_params_check(const struct xp_params *p, char *why, size_t whylen);

/* Parse "64K", "1M", "4096". Returns 0 or -EINVAL. */
int xp_parse_size(const char *s, size_t *out);
/* The shortest exact form: 1048576 -> "1M", 1000 -> "1000". */
void xp_format_size(char *buf, size_t len, uint64_t v);
const char *xp_path_name(int path);

#endif
