/* The chained hash table of hashtab.h.
 *
 * Buckets are picked by FNV-1a over the key's bytes (hash.h) under a
 * power-of-two mask: handles counting up under a server index, and heap
 * addresses with their alignment and allocation strides, both spread evenly
 * over the buckets, where taking the key's low bits would not. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "hash.h"
#include "hashtab.h"

static size_t bucket_of(const struct hashtab *t, uint64_t key)
{
	return (size_t)rpfs_fnv1a64(&key, sizeof(key)) & t->mask;
}

int hashtab_init(struct hashtab *t, size_t nbuckets)
{
	assert(nbuckets && !(nbuckets & (nbuckets - 1)));
	t->buckets = calloc(nbuckets, sizeof(*t->buckets));
	if (!t->buckets)
		return -ENOMEM;
	t->mask = nbuckets - 1;
	t->count = 0;
	return 0;
}

void hashtab_fini(struct hashtab *t)
{
	free(t->buckets);
	t->buckets = NULL;
	t->count = 0;
}

void hashtab_insert(struct hashtab *t, struct hnode *n, uint64_t key)
{
	struct hnode **b = &t->buckets[bucket_of(t, key)];

	n->key = key;
	n->next = *b;
	*b = n;
	t->count++;
}

bool hashtab_remove(struct hashtab *t, struct hnode *n)
{
	struct hnode **pp = &t->buckets[bucket_of(t, n->key)];

	while (*pp && *pp != n)
		pp = &(*pp)->next;
	if (!*pp)
		return false;
	*pp = n->next;
	n->next = NULL;
	t->count--;
	return true;
}

static struct hnode *same_key(struct hnode *n, uint64_t key)
{
	while (n && n->key != key)
		n = n->next;
	return n;
}

struct hnode *hashtab_lookup(const struct hashtab *t, uint64_t key)
{
	return same_key(t->buckets[bucket_of(t, key)], key);
}

struct hnode *hashtab_next_dup(const struct hnode *n)
{
	return same_key(n->next, n->key);
}

/* The first node in bucket b or after it. */
static struct hnode *from_bucket(const struct hashtab *t, size_t b)
{
	for (; b <= t->mask; b++)
		if (t->buckets[b])
			return t->buckets[b];
	return NULL;
}

struct hnode *hashtab_first(const struct hashtab *t)
{
	return t->count ? from_bucket(t, 0) : NULL;
}

struct hnode *hashtab_next(const struct hashtab *t, const struct hnode *n)
{
	if (n->next)
		return n->next;
	return from_bucket(t, bucket_of(t, n->key) + 1);
}
