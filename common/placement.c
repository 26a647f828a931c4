/* Placement (placement.h): the metadata server of a path, and the I/O
 * servers of a new file. The handle's own arithmetic is inline in
 * placement.h. */
#include "placement.h"

#include <errno.h>
#include <string.h>

#include "config.h"
#include "hash.h"

/* Every client and server must agree on the owner of a path: a hash that
 * is stable across builds and hosts (hash.h). */
uint32_t place_meta_of_path(const struct rpfs_config *cfg, const char *path)
{
	if (!cfg->nmeta)
		return 0;
	return (uint32_t)(rpfs_fnv1a64(path, strlen(path)) % cfg->nmeta);
}

/* Are the count servers from first on (round robin) all up? */
static bool all_up(uint32_t nio, uint32_t count, uint32_t first, const bool *down)
{
	if (!down)
		return true;
	for (uint32_t i = 0; i < count; i++)
		if (down[(first + i) % nio])
			return false;
	return true;
}

int place_first_io(uint32_t nio, uint32_t count, uint64_t handle, int32_t asked,
		   const bool *down, uint32_t *first)
{
	uint32_t start;

	if (!nio)
		return -ENOSPC;
	if (!count || count > nio || asked < -1)
		return -EINVAL;
	if (asked >= 0) {
		if ((uint32_t)asked >= nio)
			return -EINVAL;
		if (!all_up(nio, count, (uint32_t)asked, down))
			return -EHOSTDOWN;
		*first = (uint32_t)asked;
		return 0;
	}
	/* Consecutive files start on consecutive servers. */
	start = (uint32_t)(place_serial(handle) % nio);
	for (uint32_t i = 0; i < nio; i++) {
		uint32_t f = (start + i) % nio;

		if (all_up(nio, count, f, down)) {
			*first = f;
			return 0;
		}
	}
	return -EHOSTDOWN;
}

uint32_t place_fit_count(uint32_t nio, uint32_t count, const bool *down)
{
	uint32_t best = 0, run = 0;

	if (!down)
		return count < nio ? count : nio;
	/* Twice around: a run may wrap past the last server. */
	for (uint32_t i = 0; i < 2 * nio && best < count; i++) {
		run = down[i % nio] ? 0 : run + 1;
		if (run > best)
			best = run;
	}
	if (best > nio)
		best = nio;
	return best < count ? best : count;
}
