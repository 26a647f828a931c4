/* Remote addressing of registered memory, in both libfabric MR modes.
 *
 * With FI_MR_VIRT_ADDR (verbs, shm) an RMA target address is the virtual
 * address in the target process; without it (tcp: mr_mode 0) it is an offset
 * from the start of the registered region. With FI_MR_PROV_KEY the provider
 * picks keys (read with fi_mr_key); without it the caller must pick a key
 * unique in the domain. tcp accepts either way, so these helpers carry the
 * rules and have unit tests in both modes (test/unit/test_mraddr.c). */
#ifndef RPFS_MRADDR_H
#define RPFS_MRADDR_H

#include <stdint.h>

/* What a peer needs to name ptr (inside a region registered at base). */
static inline uint64_t xp_remote_addr(int virt_addr, const void *base, const void *ptr)
{
	return virt_addr ? (uint64_t)(uintptr_t)ptr
			 : (uint64_t)((const char *)ptr - (const char *)base);
}

/* Target address of byte off of a remote area announced as addr: the same
 * arithmetic in both modes, because an announced address already is a VA or
 * an offset. Returns 0 and sets *out, or -1 if the sum would wrap. */
static inline int xp_remote_target(uint64_t addr, uint64_t off, uint64_t *out)
{
	if (addr + off < addr)
		return -1;
	*out = addr + off;
	return 0;
}

/* Key to request at registration: with provider keys, 0 (ignored); else a
 * domain-unique key from the caller's counter. Atomic: threads register
 * at once (a post's cache miss, the progress thread's bulk calls) and
 * without the fabric's lock, and a repeated key fails the registration. */
static inline uint64_t xp_requested_key(int prov_key, uint64_t *counter)
{
	return prov_key ? 0 : __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

/* Does [off, off + len) lie inside a remote area of area_len bytes? */
static inline int xp_range_ok(uint64_t off, uint64_t len, uint64_t area_len)
{
	return off <= area_len && len <= area_len - off;
}

#endif
