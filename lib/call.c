// SPDX-License-Identifier: MIT
/*
 * lib/call.c - one-shot calls without embedding (see ktimer/call.h).
 *
 * A call is a kt_timer in a pooled node. Nodes come in chunks of 64 from
 * malloc and go back to the base's free list, never to malloc, until
 * kt_base_free() (which calls kt__calls_free()). Because a node's memory
 * outlives every call made with it, a handle can carry (node, generation)
 * and kt_call_cancel() can look at a node whose call already ran: the
 * generation moved on when it ran, so the stale handle matches nothing.
 */
#include <errno.h>
#include <stdlib.h>

#include "ktimer/call.h"
#include "ktimer/timer.h"
#include "lib/internal.h"

#define CHUNK 64u

struct kt__call {
	struct kt_timer timer;
	kt_call_fn fn;
	void *arg;
	uint64_t gen;            /* odd while pending */
	struct kt__call *next;   /* free list */
};

struct kt__call_chunk {
	struct kt__call_chunk *next;
	struct kt__call node[CHUNK];
};

static void release(struct kt_base *b, struct kt__call *c)
{
	c->gen++; /* even: not pending; every old handle is stale now */
	c->next = b->call_free;
	b->call_free = c;
}

static void on_timer(struct kt_timer *t)
{
	struct kt__call *c = kt_container_of(t, struct kt__call, timer);
	kt_call_fn fn = c->fn;
	void *arg = c->arg;

	/* Back to the pool first: fn may make new calls and reuse this node. */
	release(kt__timer_base(t), c);
	fn(arg);
}

static struct kt__call *take(struct kt_base *b)
{
	struct kt__call *c = b->call_free;

	if (!c) {
		struct kt__call_chunk *chunk = calloc(1, sizeof(*chunk));

		if (!chunk)
			return NULL;
		chunk->next = b->call_chunks;
		b->call_chunks = chunk;
		for (unsigned i = CHUNK; i-- > 0;) {
			chunk->node[i].next = b->call_free;
			b->call_free = &chunk->node[i];
		}
		c = b->call_free;
	}
	b->call_free = c->next;
	c->next = NULL;
	return c;
}

struct kt_call kt_call_after(struct kt_base *b, kt_millis delay, kt_call_fn fn, void *arg)
{
	struct kt_call h = {NULL, 0};
	struct kt__call *c;

	if (!b || !fn) {
		errno = EINVAL;
		return h;
	}
	KT__OWNER_CHECK(b);
	c = take(b);
	if (!c) {
		errno = ENOMEM;
		return h;
	}
	kt_timer_setup(&c->timer, b, on_timer, 0);
	c->fn = fn;
	c->arg = arg;
	c->gen++; /* odd: pending */
	if (kt_timer_arm(&c->timer, delay) < 0) {
		/* Only a delay past the clock's limit (the node is set up): it
		 * would never run. */
		release(b, c);
		errno = ERANGE;
		return h;
	}
	h.kt__node = c;
	h.kt__gen = c->gen;
	return h;
}

static struct kt__call *live(struct kt_call h)
{
	struct kt__call *c = h.kt__node;

	return c && c->gen == h.kt__gen && (c->gen & 1) ? c : NULL;
}

int kt_call_cancel(struct kt_call h)
{
	struct kt__call *c = live(h);

	if (!c)
		return 0;
	KT__OWNER_CHECK_TIMER(&c->timer);
	kt_timer_delete(&c->timer);
	release(kt__timer_base(&c->timer), c);
	return 1;
}

int kt_call_pending(struct kt_call h) { return live(h) != NULL; }

const void *kt__call_user_fn(const struct kt_timer *t)
{
	if (t->kt__fn != on_timer)
		return NULL;
	return (const void *)(uintptr_t)kt_container_of(t, struct kt__call, timer)->fn;
}

void kt__calls_free(struct kt_base *b)
{
	struct kt__call_chunk *chunk = b->call_chunks;

	while (chunk) {
		struct kt__call_chunk *next = chunk->next;

		free(chunk);
		chunk = next;
	}
	b->call_chunks = NULL;
	b->call_free = NULL;
}
