/* Process-wide memory hooks that keep the registration caches correct.
 *
 * A cached registration names virtual addresses, but the NIC holds the
 * physical pages that were behind them at registration time. When the
 * application frees or unmaps a buffer and later gets the same addresses
 * back, a stale cache hit would make RDMA read or write the old pages. So
 * this library defines the public symbols free, realloc, munmap, mremap and
 * madvise; being linked before libc, its definitions win symbol lookup and
 * see every such call made through the PLT. Each hook invalidates the
 * affected range in every live cache, then calls the real function found
 * with dlsym(RTLD_NEXT).
 *
 * The registry of caches is a global because the hooks are process-wide:
 * they get no context argument. It is an intrusive list (no allocation)
 * under a writer-preferring rwlock, so concurrent frees only share it.
 *
 * Rules every hook obeys:
 *  - no allocation and no dlsym on the normal path: free may be called
 *    anywhere, and munmap from signal handlers;
 *  - one relaxed atomic load is the whole cost while no cache holds a
 *    region;
 *  - a thread-local depth counter (rcache_hooks_enter) marks threads inside
 *    a cache or its reg/dereg callbacks; hooks in such a thread do nothing,
 *    since re-entering the cache would self-deadlock and those frees never
 *    release cached user buffers. A signal handler interrupting the cache
 *    therefore skips invalidation rather than deadlocking.
 *
 * Calls that bypass the PLT are not seen: glibc-internal frees and unmaps
 * (malloc trimming, stdio, thread stacks), reallocarray, and direct
 * syscalls. The free and realloc hooks cover what glibc's allocator does
 * internally, because it only returns pages to the kernel from chunks that
 * were freed (or reallocated) through them.
 *
 * Under AddressSanitizer the sanitizer runtime is first in lookup order and
 * owns malloc/free: our free never runs (its allocator unmaps with raw
 * syscalls), but its munmap interceptor forwards to the next munmap, ours.
 * Valgrind (3.19) likewise redirects free and realloc in every object,
 * ours included, while munmap, mremap and madvise still reach us. In both
 * cases rcache_hooks_active() reports 0 and freed heap buffers can stay
 * cached: see regcache.c for what the cache does about it. */
#define _GNU_SOURCE
#include "memhooks.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* glibc's own free, exported for exactly this purpose: a free interposer
 * that has not resolved the next free yet (dlsym itself frees). */
extern void __libc_free(void *ptr);
extern void *__libc_realloc(void *ptr, size_t size);

typedef void (*free_fn)(void *);
typedef void *(*realloc_fn)(void *, size_t);
typedef int (*munmap_fn)(void *, size_t);
typedef void *(*mremap_fn)(void *, size_t, size_t, int, ...);
typedef int (*madvise_fn)(void *, size_t, int);

/* Written once by resolve_real, read by hooks in any thread. */
static _Atomic(free_fn) real_free;
static _Atomic(realloc_fn) real_realloc;
static _Atomic(munmap_fn) real_munmap;
static _Atomic(mremap_fn) real_mremap;
static _Atomic(madvise_fn) real_madvise;

/* initial-exec: no __tls_get_addr, hence no allocation on first access. */
static __thread unsigned hooks_busy __attribute__((tls_model("initial-exec")));
static __thread int resolving __attribute__((tls_model("initial-exec")));
/* rcache_hooks_active's probe: which hooks its calls reached. */
static __thread int probing __attribute__((tls_model("initial-exec")));
static __thread int probe_seen __attribute__((tls_model("initial-exec")));

static atomic_long nregions;
static atomic_int hooks_active = -1;
static atomic_int forced_inactive;

static struct list_node registry = {&registry, &registry};
#ifdef PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
/* Frees never stop in a busy process: with readers preferred, rcache_destroy
 * could wait for ever. Hooks never take the lock recursively (hooks_busy). */
static pthread_rwlock_t registry_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
#else
static pthread_rwlock_t registry_lock = PTHREAD_RWLOCK_INITIALIZER;
#endif

static void resolve_real(void)
{
	/* dlsym may call free (error strings): that free must not recurse
	 * here, it takes the __libc_free fallback instead. */
	if (resolving)
		return;
	resolving = 1;
	atomic_store_explicit(&real_free, (free_fn)dlsym(RTLD_NEXT, "free"),
			      memory_order_release);
	atomic_store_explicit(&real_realloc, (realloc_fn)dlsym(RTLD_NEXT, "realloc"),
			      memory_order_release);
	atomic_store_explicit(&real_munmap, (munmap_fn)dlsym(RTLD_NEXT, "munmap"),
			      memory_order_release);
	atomic_store_explicit(&real_mremap, (mremap_fn)dlsym(RTLD_NEXT, "mremap"),
			      memory_order_release);
	atomic_store_explicit(&real_madvise, (madvise_fn)dlsym(RTLD_NEXT, "madvise"),
			      memory_order_release);
	resolving = 0;
}

__attribute__((constructor)) static void memhooks_init(void)
{
	resolve_real();
}

/* Invalidate [addr, addr + len) in every live cache. */
static void invalidate_all(const void *addr, size_t len)
{
	struct rcache_hooknode *n;
	struct list_node *l;
	int saved_errno;

	saved_errno = errno;
	hooks_busy++;
	pthread_rwlock_rdlock(&registry_lock);
	list_foreach(&registry, l) {
		n = list_entry(l, struct rcache_hooknode, link);
		n->invalidate(n, addr, len);
	}
	pthread_rwlock_unlock(&registry_lock);
	hooks_busy--;
	/* Callers of free and munmap look at errno after the real call only,
	 * but locks and callbacks must not leak an errno into it. */
	errno = saved_errno;
}

/* The fast path: one relaxed load while no cache holds a region. Relaxed is
 * enough: a buffer being freed was cached by a get that happens-before the
 * free in any correct program, so its count increment is visible. */
static inline int hooks_wanted(void)
{
	return atomic_load_explicit(&nregions, memory_order_relaxed) && !hooks_busy;
}

static free_fn get_real_free(void)
{
	free_fn f = atomic_load_explicit(&real_free, memory_order_acquire);

	/* Before our constructor ran (frees from ld.so and earlier
	 * constructors) resolve now, unless this is dlsym freeing. */
	if (!f) {
		resolve_real();
		f = atomic_load_explicit(&real_free, memory_order_acquire);
	}
	return f ? f : __libc_free;
}

static void hook_free(void *ptr)
{
	if (!ptr)
		probe_seen |= probing;
	else if (hooks_wanted())
		invalidate_all(ptr, malloc_usable_size(ptr));
	get_real_free()(ptr);
}

/* realloc releases or moves the old chunk inside glibc, out of our sight. */
static void *hook_realloc(void *ptr, size_t size)
{
	realloc_fn f;

	if (ptr && hooks_wanted())
		invalidate_all(ptr, malloc_usable_size(ptr));
	f = atomic_load_explicit(&real_realloc, memory_order_acquire);
	if (!f) {
		resolve_real();
		f = atomic_load_explicit(&real_realloc, memory_order_acquire);
	}
	return f ? f(ptr, size) : __libc_realloc(ptr, size);
}

static int hook_munmap(void *addr, size_t len)
{
	munmap_fn f;

	if (!len)
		probe_seen |= probing << 1;
	else if (hooks_wanted())
		invalidate_all(addr, len);
	f = atomic_load_explicit(&real_munmap, memory_order_acquire);
	if (f)
		return f(addr, len);
	return (int)syscall(SYS_munmap, addr, len);
}

static void *hook_mremap(void *old_addr, size_t old_len, size_t new_len, int flags, ...)
{
	void *new_addr = NULL;
	mremap_fn f;
	va_list ap;

	/* The fifth argument exists only with MREMAP_FIXED. */
	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	if (hooks_wanted()) {
		/* The old range moves, shrinks or (MREMAP_DONTUNMAP) loses its
		 * pages; a fixed target replaces whatever was mapped there. */
		if (old_len)
			invalidate_all(old_addr, old_len);
		if ((flags & MREMAP_FIXED) && new_len)
			invalidate_all(new_addr, new_len);
	}
	f = atomic_load_explicit(&real_mremap, memory_order_acquire);
	if (f)
		return f(old_addr, old_len, new_len, flags, new_addr);
	/* syscall() returns -1 on error, which is MAP_FAILED. */
	return (void *)syscall(SYS_mremap, old_addr, old_len, new_len, flags, new_addr);
}

/* Advice that replaces the pages behind a range (later reads see zeroes or
 * fresh pages); other advice leaves registrations valid. */
static int advice_drops_pages(int advice)
{
	switch (advice) {
	case MADV_DONTNEED:
#ifdef MADV_FREE
	case MADV_FREE:
#endif
#ifdef MADV_REMOVE
	case MADV_REMOVE:
#endif
		return 1;
	default:
		return 0;
	}
}

static int hook_madvise(void *addr, size_t len, int advice)
{
	madvise_fn f;

	if (len && advice_drops_pages(advice) && hooks_wanted())
		invalidate_all(addr, len);
	f = atomic_load_explicit(&real_madvise, memory_order_acquire);
	if (f)
		return f(addr, len, advice);
	return (int)syscall(SYS_madvise, addr, len, advice);
}

/* The public names are aliases, so hook_* are their addresses in this
 * object: rcache_hooks_active compares those with what lookup finds. */
void free(void *ptr) __attribute__((alias("hook_free")));
void *realloc(void *ptr, size_t size) __attribute__((alias("hook_realloc")));
int munmap(void *addr, size_t len) __attribute__((alias("hook_munmap")));
void *mremap(void *old_addr, size_t old_len, size_t new_len, int flags, ...)
	__attribute__((alias("hook_mremap")));
int madvise(void *addr, size_t len, int advice) __attribute__((alias("hook_madvise")));

/* Our free and munmap are what symbol lookup finds, and calling them really
 * runs them: a tool that redirects code addresses (valgrind) defeats the
 * first test alone. free(NULL) and munmap(NULL, 0) are harmless probes. */
static int hooks_reached(void)
{
	free_fn f = (free_fn)dlsym(RTLD_DEFAULT, "free");
	munmap_fn m = (munmap_fn)dlsym(RTLD_DEFAULT, "munmap");
	int saved_errno = errno, seen;

	if (f != hook_free || m != hook_munmap)
		return 0;
	probing = 1;
	probe_seen = 0;
	f(NULL);
	m(NULL, 0);
	seen = probe_seen;
	probing = 0;
	errno = saved_errno;
	return seen == 3;
}

int rcache_hooks_active(void)
{
	int v;

	if (atomic_load(&forced_inactive))
		return 0;
	v = atomic_load(&hooks_active);
	if (v < 0) {
		/* Symbol lookup order is fixed once the process is loaded, so
		 * the answer can be cached; racing threads compute the same. */
		v = hooks_reached();
		atomic_store(&hooks_active, v);
	}
	return v;
}

void rcache_hooks_force_inactive(int on)
{
	atomic_store(&forced_inactive, on != 0);
}

void rcache_hooks_register(struct rcache_hooknode *n)
{
	pthread_rwlock_wrlock(&registry_lock);
	list_push_back(&registry, &n->link);
	pthread_rwlock_unlock(&registry_lock);
}

void rcache_hooks_unregister(struct rcache_hooknode *n)
{
	/* Taking the write lock also waits for hooks still inside n->rc. */
	pthread_rwlock_wrlock(&registry_lock);
	list_remove(&n->link);
	pthread_rwlock_unlock(&registry_lock);
}

void rcache_hooks_regions_add(long delta)
{
	atomic_fetch_add_explicit(&nregions, delta, memory_order_relaxed);
}

void rcache_hooks_enter(void)
{
	hooks_busy++;
}

void rcache_hooks_exit(void)
{
	hooks_busy--;
}
