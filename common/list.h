/* Intrusive doubly linked list: the one list rpfs's LRUs and registries are
 * made of (the descriptor cache, server/io.c; the registration cache,
 * regcache.c; ...).
 *
 * A list is a head node linked in a circle with its members, so no insert
 * or removal has a special case for the ends. A node embeds in the object
 * it lists and list_entry gets back from it; a node on no list points to
 * itself, so removing it again, or removing one never added (after
 * list_init), is harmless.
 *
 * No locking here: whoever owns a list holds their own lock around every
 * call, iterations included. */
#ifndef RPFS_LIST_H
#define RPFS_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list_node {
	struct list_node *prev, *next;
};

#ifndef container_of
#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#endif

/* The object of type holding node n as its member. */
#define list_entry(n, type, member) container_of(n, type, member)

/* An empty head, or a node on no list. */
static inline void list_init(struct list_node *n)
{
	n->prev = n->next = n;
}

static inline bool list_empty(const struct list_node *head)
{
	return head->next == head;
}

static inline void list_link_(struct list_node *n, struct list_node *prev,
			      struct list_node *next)
{
	n->prev = prev;
	n->next = next;
	prev->next = n;
	next->prev = n;
}

static inline void list_push_front(struct list_node *head, struct list_node *n)
{
	list_link_(n, head, head->next);
}

static inline void list_push_back(struct list_node *head, struct list_node *n)
{
	list_link_(n, head->prev, head);
}

static inline void list_remove(struct list_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	list_init(n);
}

/* LRU use: the most recent at the front, the victim at the back. */
static inline void list_move_front(struct list_node *head, struct list_node *n)
{
	list_remove(n);
	list_push_front(head, n);
}

/* NULL when the list is empty. */
static inline struct list_node *list_first(const struct list_node *head)
{
	return list_empty(head) ? NULL : head->next;
}

static inline struct list_node *list_last(const struct list_node *head)
{
	return list_empty(head) ? NULL : head->prev;
}

/* Front to back; the body must not change the list. */
#define list_foreach(head, n) for (n = (head)->next; n != (head); n = n->next)
/* The body may remove (and free) n, but no other member. */
#define list_foreach_safe(head, n, tmp)                                                  \
	for (n = (head)->next, tmp = n->next; n != (head); n = tmp, tmp = n->next)
#define list_foreach_reverse_safe(head, n, tmp)                                          \
	for (n = (head)->prev, tmp = n->prev; n != (head); n = tmp, tmp = n->prev)

#endif
