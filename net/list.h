/* SPDX-License-Identifier: MIT */
/*
 * net/list.h - a circular doubly linked list with a sentinel head.
 *
 * Intrusive: the node is a member of the listed struct, so linking and
 * unlinking never allocate. An unlinked node points at itself, so removing
 * it twice is harmless.
 */
#ifndef KTIMER_NET_LIST_H
#define KTIMER_NET_LIST_H

#include <stddef.h>

struct dlist {
	struct dlist *next, *prev;
};

/* The struct of type @type whose member @member is at @node. */
#define dlist_entry(node, type, member) ((type *)(void *)((char *)(node)-offsetof(type, member)))

/* An empty list, or an unlinked node. */
static inline void dlist_init(struct dlist *head) { head->next = head->prev = head; }

static inline int dlist_empty(const struct dlist *head) { return head->next == head; }

/* Link @node before @head: at the end of the list. */
static inline void dlist_add_tail(struct dlist *head, struct dlist *node)
{
	node->next = head;
	node->prev = head->prev;
	head->prev->next = node;
	head->prev = node;
}

/* Unlink @node (from whatever list holds it); it becomes an empty list. */
static inline void dlist_del(struct dlist *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	dlist_init(node);
}

/*
 * Visit every node, @pos the current one and @tmp the next, so the body may
 * unlink @pos (but no other node).
 */
#define dlist_for_each_safe(pos, tmp, head) \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); (pos) = (tmp), (tmp) = (pos)->next)

#endif
