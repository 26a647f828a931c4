/* Transport settings: see params.h. */
#include "params.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

void xp_params_default(struct xp_params *p)
{
	memset(p, 0, sizeof(*p));
	p->inline_max = 4096;
	p->fast_max = 65536;
	p->fast_slots = 16;
	p->credits = 32;
	p->chunk_size = 1 << 20;
	p->pipeline_depth = 2;
	p->rcache_max_entries = 1024;
	p->rcache_max_bytes = (size_t)1 << 30;
	p->rcache_batch = 32;
	p->pool_zone_bytes = 8 << 20;
	p->timeout_ms = 30000;
	p->spin_us = 200;
	p->force_path = XP_PATH_AUTO;
}

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

static int parse_u32(const char *v, uint32_t *out)
{
	size_t s;

	if (xp_parse_size(v, &s) || s > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)s;
	return 0;
}

int xp_params_set(struct xp_params *p, const char *key, const char *value)
{
	size_t sz;
	uint32_t u;

	if (!strcmp(key, "provider")) {
		if (strlen(value) >= sizeof(p->provider))
			return -EINVAL;
		strcpy(p->provider, value);
		return 0;
	}
	if (!strcmp(key, "force_path"))
		return parse_path(value, &p->force_path);

#define SIZE_KEY(name)                                                                   \
	if (!strcmp(key, #name)) {                                                       \
		if (xp_parse_size(value, &sz))                                           \
			return -EINVAL;                                                  \
		p->name = sz;                                                            \
		return 0;                                                                \
	}
#define U32_KEY(name)                                                                    \
	if (!strcmp(key, #name)) {                                                       \
		if (parse_u32(value, &u))                                                \
			return -EINVAL;                                                  \
		p->name = u;                                                             \
		return 0;                                                                \
	}
	SIZE_KEY(inline_max)
	SIZE_KEY(fast_max)
	SIZE_KEY(chunk_size)
	SIZE_KEY(rcache_max_entries)
	SIZE_KEY(rcache_max_bytes)
	SIZE_KEY(pool_zone_bytes)
	U32_KEY(fast_slots)
	U32_KEY(credits)
	U32_KEY(pipeline_depth)
	U32_KEY(rcache_batch)
	U32_KEY(spin_us)
#undef SIZE_KEY
#undef U32_KEY
	if (!strcmp(key, "timeout_ms")) {
		if (parse_u32(value, &u) || u > 3600 * 1000 || u == 0)
			return -EINVAL;
		p->timeout_ms = (int)u;
		return 0;
	}
	return -ENOENT;
}

int xp_params_from_env(struct xp_params *p)
{
	static const char *const keys[] = {
		"provider",	    "force_path",      "inline_max",
		"fast_max",	    "chunk_size",      "rcache_max_entries",
		"rcache_max_bytes", "pool_zone_bytes", "fast_slots",
		"credits",	    "pipeline_depth",  "rcache_batch",
		"timeout_ms",	    "spin_us",
	};
	char name[64];

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v;
		size_t j;

		strcpy(name, "RPFS_");
		for (j = 0; keys[i][j]; j++)
			name[5 + j] = (char)toupper((unsigned char)keys[i][j]);
		name[5 + j] = 0;
		v = getenv(name);
		if (v && xp_params_set(p, keys[i], v)) {
			log_err("bad value '%s' for %s", v, name);
			return -EINVAL;
		}
	}
	return 0;
}

struct ini_ctx {
	struct xp_params *p;
	const char *path;
	int err;
};

static int params_ini_line(void *user, const char *section, const char *name,
			   const char *value)
{
	struct ini_ctx *c = user;
	int ret;

	if (strcmp(section, "transport"))
		return 1;
	ret = xp_params_set(c->p, name, value);
	if (ret) {
		log_err("%s: [transport] %s = %s: %s", c->path, name, value,
			ret == -ENOENT ? "unknown key" : "bad value");
		c->err = ret == -ENOENT ? -EINVAL : ret;
		return 0;
	}
	return 1;
}

int xp_params_from_file(struct xp_params *p, const char *path)
{
	struct ini_ctx c = {p, path, 0};
	FILE *f = fopen(path, "r");
	int line;

	if (!f)
		return -errno;
	line = ini_parse_file(f, params_ini_line, &c);
	fclose(f);
	if (c.err)
		return c.err;
	if (line) {
		log_err("%s:%d: syntax error", path, line);
		return -EINVAL;
	}
	return 0;
}

static int is_pow2(size_t v)
{
	return v && !(v & (v - 1));
}

int xp_params_check(const struct xp_params *p, char *why, size_t whylen)
{
	const char *msg = NULL;

	if (p->inline_max < 64 || p->inline_max > (1 << 20))
		msg = "inline_max must be between 64 bytes and 1 MiB";
	else if (p->fast_max < p->inline_max || p->fast_max > (16 << 20))
		msg = "fast_max must be between inline_max and 16 MiB";
	else if (p->fast_slots < 1 || p->fast_slots > 1024)
		msg = "fast_slots must be between 1 and 1024";
	else if (p->credits < 2 || p->credits > 1024)
		msg = "credits must be between 2 and 1024";
	else if (!is_pow2(p->chunk_size) || p->chunk_size < 4096 ||
		 p->chunk_size > (64 << 20))
		msg = "chunk_size must be a power of two between 4 KiB and 64 MiB";
	else if (p->pipeline_depth < 1 || p->pipeline_depth > 64)
		msg = "pipeline_depth must be between 1 and 64";
	else if (p->rcache_batch < 1)
		msg = "rcache_batch must be at least 1";
	else if (p->pool_zone_bytes < (2 << 20))
		msg = "pool_zone_bytes must be at least 2 MiB";
	else if (p->spin_us > 1000000)
		msg = "spin_us must be at most 1000000 (one second)";
	else if (p->force_path < XP_PATH_AUTO || p->force_path > XP_PATH_BULK)
		msg = "force_path must be auto, inline, fast or bulk";
	if (!msg)
		return 0;
	if (why && whylen)
		snprintf(why, whylen, "%s", msg);
	return -EINVAL;
}
