/* Intrusive chained hash table keyed by a uint64_t: the one table rpfsd
 * keeps its per-handle and per-connection state in (server/io.c, meta.c,
 * sched.c).
 *
 * A node embeds in the object it indexes and hashtab_entry gets back from
 * it, so inserting never allocates and cannot fail. The bucket count is
 * fixed at hashtab_init: the tables hold what is in use right now (open
 * descriptors, locked handles, busy connections), not what exists. Keys
 * may repeat; hashtab_lookup finds the newest and hashtab_next_dup the
 * older ones.
 *
 * No locking here: whoever owns a table holds their own lock around every
 * call, iterations included. */
#ifndef RPFS_HASHTAB_H
#define RPFS_HASHTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hnode {
	struct hnode *next; /* chain */
	uint64_t key;
};

struct hashtab {
	struct hnode **buckets;
	size_t mask;  /* bucket count - 1 */
	size_t count; /* nodes in the table */
};

#ifndef container_of
#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#endif

/* The object of type holding node n as its member. */
#define hashtab_entry(n, type, member) container_of(n, type, member)

/* nbuckets: a power of two. 0, or -ENOMEM. */
int hashtab_init(struct hashtab *t, size_t nbuckets);
/* Frees the buckets only: the nodes belong to the caller. */
void hashtab_fini(struct hashtab *t);

void hashtab_insert(struct hashtab *t, struct hnode *n, uint64_t key);
/* Whether n was in the table (and is now out of it). */
bool hashtab_remove(struct hashtab *t, struct hnode *n);
/* The node with key inserted last, or NULL. */
struct hnode *hashtab_lookup(const struct hashtab *t, uint64_t key);
/* The next older node with n's key, or NULL. */
struct hnode *hashtab_next_dup(const struct hnode *n);

/* Every node once, in no particular order. */
struct hnode *hashtab_first(const struct hashtab *t);
struct hnode *hashtab_next(const struct hashtab *t, const struct hnode *n);

/* The body may remove (and free) n, but no other node. */
#define hashtab_foreach_safe(t, n, tmp)                                                  \
	for (n = hashtab_first(t), tmp = n ? hashtab_next(t, n) : NULL; n;               \
	     n = tmp, tmp = n ? hashtab_next(t, n) : NULL)

#endif
