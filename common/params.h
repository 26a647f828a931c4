/* Transport run-time settings: defaults, environment, config file.
 *
 * Every threshold of the data paths is a setting, so that a cluster can tune
 * them to its fabric; the defaults come from rpfs-xport-bench on loopback tcp
 * and from the paper's InfiniBand measurements (see README, design notes).
 *
 * Sources, later ones win: built-in defaults, the [transport] section of the
 * cluster config file, environment variables RPFS_<KEY> (key upper-cased). */
#ifndef RPFS_PARAMS_H
#define RPFS_PARAMS_H

#include <stddef.h>
#include <stdint.h>

enum xp_path {
	XP_PATH_AUTO = 0,
	XP_PATH_INLINE = 1, /* data rides in the request or reply message */
	XP_PATH_FAST = 2,   /* RDMA write into the peer's Fast RDMA buffer slot */
	XP_PATH_BULK = 3,   /* server-driven pipelined RDMA from/to client memory */
};

struct xp_params {
	char provider[32];	 /* "" = verbs if present, else tcp */
	size_t inline_max;	 /* largest inline payload */
	size_t fast_max;	 /* largest Fast RDMA Write payload */
	uint32_t fast_slots;	 /* Fast RDMA buffer slots per connection and side */
	uint32_t credits;	 /* receive buffers a server posts per connection */
	size_t chunk_size;	 /* bulk pipeline chunk */
	uint32_t pipeline_depth; /* bulk chunks in flight per request */
	size_t rcache_max_entries;
	size_t rcache_max_bytes;
	uint32_t rcache_batch;
	size_t pool_zone_bytes; /* server buffer pool: bytes per zone */
	int timeout_ms;		/* an operation with no progress fails after this */
	uint32_t spin_us; /* keep polling this long after activity before sleeping */
	int force_path;	  /* enum xp_path; AUTO except in tests and benchmarks */
};

void xp_params_default(struct xp_params *p);
/* Set one key ("inline_max", "fast_max", ...; sizes accept K/M/G suffixes).
 * Returns 0, -ENOENT for an unknown key, -EINVAL for a bad value. */
int xp_params_set(struct xp_params *p, const char *key, const char *value);
/* Apply RPFS_<KEY> variables. Returns 0 or the first error (and logs it). */
int xp_params_from_env(struct xp_params *p);
/* Apply the [transport] section of an INI file. 0, -errno, or -EINVAL. */
int xp_params_from_file(struct xp_params *p, const char *path);
/* Check consistency (inline_max < fast_max, power-of-two chunks, ...). */
int xp_params_check(const struct xp_params *p, char *why, size_t whylen);

/* Parse "64K", "1M", "4096". Returns 0 or -EINVAL. */
int xp_parse_size(const char *s, size_t *out);
const char *xp_path_name(int path);

#endif
