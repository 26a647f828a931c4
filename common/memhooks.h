/* Private interface between the registration cache (regcache.c) and the
 * process-wide memory hooks (memhooks.c). Not installed; the cache, the
 * transport (whether the hooks work) and the tests include it. */
#ifndef RPFS_MEMHOOKS_H
#define RPFS_MEMHOOKS_H

#include <stddef.h>

#include "list.h"

/* A cache's entry in the hooks' registry of live caches. Embedded in the
 * cache, so registering never allocates. The hooks call invalidate for a
 * range being freed or unmapped; they know nothing else of the cache, so
 * the calls go one way (regcache.c -> memhooks.c). */
struct rcache_hooknode {
	struct list_node link; /* in the registry */
	void (*invalidate)(struct rcache_hooknode *n, const void *addr, size_t len);
};

/* rcache_create/rcache_destroy: add or remove a cache from the set that the
 * hooks invalidate. Unregistering waits for hooks running on that cache. */
void rcache_hooks_register(struct rcache_hooknode *n);
void rcache_hooks_unregister(struct rcache_hooknode *n);

/* Regions (indexed or being registered) over all caches; the hooks skip all
 * work while it is 0. */
void rcache_hooks_regions_add(long delta);

/* The calling thread is inside the cache or one of its reg/dereg callbacks:
 * hooks fired meanwhile must not re-enter the cache (self-deadlock), and
 * those frees and unmaps never concern cached user buffers. Nests. */
void rcache_hooks_enter(void);
void rcache_hooks_exit(void);

/* 1 when this process's free/munmap/mremap/madvise calls reach memhooks.c. */
int rcache_hooks_active(void);

/* Tests only: make rcache_hooks_active() report 0 (on != 0) as when another
 * library's free/munmap wins symbol lookup. Caches read it at creation. */
void rcache_hooks_force_inactive(int on);

#endif
