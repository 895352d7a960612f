// SPDX-License-Identifier: MIT
/*
 * kabench: the textbook baseline - a binary min-heap of node pointers with a
 * position index in each node (the seed lesson's TimerHeap, made
 * cancellable), and the floor - the same intrusive nodes unlinked and
 * relinked between 64 doubly linked lists with no timer logic at all.
 */
#include <stdlib.h>

#include "tools/bench/kabench/kabench.h"

/* ---- heap -------------------------------------------------------------- */

struct hnode {
	uint64_t expires;
	uint32_t pos; /* slot + 1; 0 = idle */
};

struct heap {
	struct hnode **a;
	size_t n, cap;
	uint64_t now, ops;
};

static inline struct hnode *hn(struct kab_conn *c) { return (struct hnode *)c->node; }

static inline struct kab_conn *hconn(struct hnode *h)
{
	return (struct kab_conn *)((unsigned char *)h - offsetof(struct kab_conn, node));
}

static inline void put(struct heap *h, struct hnode *x, size_t i)
{
	h->a[i] = x;
	x->pos = (uint32_t)i + 1;
}

static void up(struct heap *h, size_t i)
{
	struct hnode *x = h->a[i];

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (h->a[p]->expires <= x->expires)
			break;
		put(h, h->a[p], i);
		i = p;
		h->ops++;
	}
	put(h, x, i);
}

static void down(struct heap *h, size_t i)
{
	struct hnode *x = h->a[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->a[c + 1]->expires < h->a[c]->expires)
			c++;
		if (h->a[c]->expires >= x->expires)
			break;
		put(h, h->a[c], i);
		i = c;
		h->ops++;
	}
	put(h, x, i);
}

static void *hcreate(size_t n, uint64_t now)
{
	struct heap *h = calloc(1, sizeof(*h));

	h->cap = n ? n : 16;
	h->a = malloc(h->cap * sizeof(*h->a));
	h->now = now;
	return h;
}

static void hdestroy(void *ctx)
{
	struct heap *h = ctx;

	free(h->a);
	free(h);
}

static void hinit(void *ctx, struct kab_conn *c)
{
	(void)ctx;
	hn(c)->pos = 0;
}

static void hremove(struct heap *h, struct hnode *x)
{
	size_t i = x->pos - 1;
	struct hnode *last = h->a[--h->n];

	x->pos = 0;
	h->ops++;
	if (last == x)
		return;
	put(h, last, i);
	if (i > 0 && h->a[(i - 1) / 2]->expires > last->expires)
		up(h, i);
	else
		down(h, i);
}

static void harm(void *ctx, struct kab_conn *c, uint64_t expires)
{
	struct heap *h = ctx;
	struct hnode *x = hn(c);

	h->ops++;
	if (x->pos) {
		uint64_t old = x->expires;

		x->expires = expires;
		if (expires < old)
			up(h, x->pos - 1);
		else
			down(h, x->pos - 1);
		return;
	}
	if (h->n == h->cap) {
		h->cap *= 2;
		h->a = realloc(h->a, h->cap * sizeof(*h->a));
	}
	x->expires = expires;
	h->a[h->n] = x;
	x->pos = (uint32_t)++h->n;
	up(h, h->n - 1);
}

static void hcancel(void *ctx, struct kab_conn *c)
{
	if (hn(c)->pos)
		hremove(ctx, hn(c));
}

static size_t hadvance(void *ctx, uint64_t now)
{
	struct heap *h = ctx;
	size_t fired = 0;

	if (now > h->now)
		h->now = now;
	while (h->n && h->a[0]->expires <= h->now) {
		struct hnode *x = h->a[0];

		hremove(h, x);
		fired++;
		kab_fired(hconn(x));
	}
	return fired;
}

static int64_t hnext(void *ctx, uint64_t now)
{
	struct heap *h = ctx;

	if (!h->n)
		return -1;
	return h->a[0]->expires > now ? (int64_t)(h->a[0]->expires - now) : 0;
}

static uint64_t hops(void *ctx) { return ((struct heap *)ctx)->ops; }

const struct kab_impl kab_heap = {
	"binary heap", "in-tree min-heap with position index", sizeof(struct hnode), sizeof(void *), 0, 1, 0,
	hcreate, hdestroy, hinit, harm, hcancel, hadvance, hnext, hops, NULL,
	NULL,
};

/* ---- floor: 64 lists, no timer logic ----------------------------------- */

struct lnode {
	struct lnode *next, *prev;
};

struct lists {
	struct lnode head[64];
	uint64_t ops;
};

static void *fcreate(size_t n, uint64_t now)
{
	struct lists *l = calloc(1, sizeof(*l));

	(void)n;
	(void)now;
	for (int i = 0; i < 64; i++)
		l->head[i].next = l->head[i].prev = &l->head[i];
	return l;
}

static void fdestroy(void *ctx) { free(ctx); }

static void finit(void *ctx, struct kab_conn *c)
{
	(void)ctx;
	((struct lnode *)c->node)->next = NULL;
}

static inline void funlink(struct lnode *x)
{
	x->prev->next = x->next;
	x->next->prev = x->prev;
	x->next = NULL;
}

static void farm(void *ctx, struct kab_conn *c, uint64_t expires)
{
	struct lists *l = ctx;
	struct lnode *x = (struct lnode *)c->node, *h = &l->head[(expires >> 10) & 63];

	if (x->next)
		funlink(x);
	x->next = h->next;
	x->prev = h;
	h->next->prev = x;
	h->next = x;
	l->ops += 2;
}

static void fcancel(void *ctx, struct kab_conn *c)
{
	struct lnode *x = (struct lnode *)c->node;

	if (x->next) {
		funlink(x);
		((struct lists *)ctx)->ops++;
	}
}

static size_t fadvance(void *ctx, uint64_t now)
{
	(void)ctx;
	(void)now;
	return 0;
}

static int64_t fnext(void *ctx, uint64_t now)
{
	(void)ctx;
	(void)now;
	return -1;
}

static uint64_t fops(void *ctx) { return ((struct lists *)ctx)->ops; }

const struct kab_impl kab_floor = {
	"floor (64 lists)", "unlink + relink between 64 lists, no timer logic", sizeof(struct lnode), 0, 0, 0, 0,
	fcreate, fdestroy, finit, farm, fcancel, fadvance, fnext, fops, NULL,
	NULL,
};

static void fprefetch(void *ctx, struct kab_conn *c)
{
	(void)ctx;
	__builtin_prefetch(c->node, 1, 3);
}

/* The fair comparison for a prefetching re-arm: the floor prefetching too. */
const struct kab_impl kab_floor_prefetch = {
	"floor prefetch (64 lists)", "the relink floor, prefetching the node --prefetch-distance ahead",
	sizeof(struct lnode), 0, 0, 0, 0, fcreate, fdestroy, finit, farm, fcancel, fadvance, fnext, fops, fprefetch,
	NULL,
};

/* ---- the expiry floor: walk one list, unlink each node, report it ------- */

/*
 * What any expiry must at least do per fired timer: reach the node (a cache
 * miss once N is large, since nodes are armed in random order) and unlink
 * it, then tell the connection. One list: every step waits for the previous
 * node's miss. Arming pushes at the head, so the walk visits the nodes in
 * the (random) reverse order they were armed.
 */
struct walk {
	struct lnode head;
	uint64_t ops;
};

static void *wcreate(size_t n, uint64_t now)
{
	struct walk *w = calloc(1, sizeof(*w));

	(void)n;
	(void)now;
	w->head.next = w->head.prev = &w->head;
	return w;
}

static void warm(void *ctx, struct kab_conn *c, uint64_t expires)
{
	struct walk *w = ctx;
	struct lnode *x = (struct lnode *)c->node;

	(void)expires;
	if (x->next)
		funlink(x);
	x->next = w->head.next;
	x->prev = &w->head;
	w->head.next->prev = x;
	w->head.next = x;
	w->ops += 2;
}

static void wcancel(void *ctx, struct kab_conn *c)
{
	struct lnode *x = (struct lnode *)c->node;

	if (x->next) {
		funlink(x);
		((struct walk *)ctx)->ops++;
	}
}

static size_t wadvance(void *ctx, uint64_t now)
{
	struct walk *w = ctx;
	size_t n = 0;

	(void)now;
	while (w->head.next != &w->head) {
		struct lnode *x = w->head.next;

		funlink(x);
		kab_fired((struct kab_conn *)((unsigned char *)x - offsetof(struct kab_conn, node)));
		n++;
	}
	w->ops += n;
	return n;
}

static uint64_t wops(void *ctx) { return ((struct walk *)ctx)->ops; }

const struct kab_impl kab_floor_walk = {
	"floor walk (1 list)", "expiry floor: walk one list of randomly placed nodes, unlink, report", sizeof(struct lnode),
	0, 0, 0, 0, wcreate, fdestroy, finit, warm, wcancel, wadvance, fnext, wops, NULL,
	NULL,
};