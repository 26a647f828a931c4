/* FNV-1a, 64 bits: stable across builds and hosts, which is what matters
 * where every client and server must agree (the owner of a path,
 * place_meta_of_path) or a store must read back what it wrote (the
 * metadata store's keys, server/meta.h). Not for untrusted-keyed tables. */
#ifndef RPFS_HASH_H
#define RPFS_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t rpfs_fnv1a64(const void *data, size_t n)
{
	const uint8_t *p = data;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#endif
