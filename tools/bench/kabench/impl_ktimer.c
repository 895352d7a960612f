// SPDX-License-Identifier: MIT
/* kabench: ktimer's wheel (kt_mod_timer), its idle tracker, and the server's slot ring (net/). */
#include <stdlib.h>

#include <ktimer/ktimer.h>

#include "net/slots.h"
#include "tools/bench/kabench/kabench.h"

/*
 * tools/bench/kabench/ab builds these sources against a library from an older
 * revision too: there the lazy row is a plain timer and the prefetch a bare
 * builtin (read only the "ktimer" row of such an A/B).
 */
#ifndef KT_TIMER_LAZY
#define KT_TIMER_LAZY 0u
#define kt_timer_prefetch(t) __builtin_prefetch((t), 1, 3)
#endif

struct kctx {
	struct kt_base *base; /* first: the kab_kt_* functions read it (kabench.h) */
	struct slot_ring ring;
	int ring_on;
};

static void *create(size_t n, uint64_t now)
{
	struct kctx *k = calloc(1, sizeof(*k));
	struct kt_base_config cfg = {16, KT_CLOCK_MANUAL, now};

	(void)n;
	k->base = kt_base_new(&cfg);
	return k;
}

static void destroy(void *ctx)
{
	struct kctx *k = ctx;

	if (k->ring_on)
		slot_ring_destroy(&k->ring);
	kt_base_free(k->base);
	free(k);
}

static void on_timer(struct kt_timer *t)
{
	kab_fired(kt_container_of((unsigned char *)t, struct kab_conn, node));
}

void kab_kt_init(void *ctx, struct kab_conn *c)
{
	kt_timer_setup((struct kt_timer *)c->node, *(struct kt_base **)ctx, on_timer, 0);
}

void kab_kt_arm(void *ctx, struct kab_conn *c, uint64_t expires)
{
	(void)ctx;
	kt_mod_timer((struct kt_timer *)c->node, expires);
}

void kab_kt_cancel(void *ctx, struct kab_conn *c)
{
	(void)ctx;
	kt_timer_delete((struct kt_timer *)c->node);
}

static size_t advance(void *ctx, uint64_t now)
{
	struct kctx *k = ctx;
	uint64_t cur = kt_base_now(k->base);
	size_t fired = 0;

	while (cur < now) {
		uint64_t step = now - cur > KT_MILLIS_MAX ? KT_MILLIS_MAX : now - cur;

		fired += (size_t)kt_base_advance(k->base, KT_MILLIS((uint32_t)step));
		cur = kt_base_now(k->base);
	}
	return fired;
}

int64_t kab_kt_next_timeout(void *ctx, uint64_t now)
{
	(void)now;
	return kt_base_next_timeout(*(struct kt_base **)ctx);
}

/*
 * Built against a library from before kt_base_set_op_counting() too
 * (tools/bench/kabench/ab), whose operation counters always count: there the
 * declaration is weak and the call skipped.
 */
#pragma weak kt_base_set_op_counting
int kt_base_set_op_counting(struct kt_base *base, int on);

void kab_kt_count_ops(void *ctx)
{
	if (kt_base_set_op_counting)
		kt_base_set_op_counting(*(struct kt_base **)ctx, 1);
}

uint64_t kab_kt_ops(void *ctx)
{
	struct kt_base_stats st;

	kt_base_get_stats(*(struct kt_base **)ctx, &st);
	return st.enqueued + st.removed;
}

const struct kab_impl kab_ktimer = {
	"ktimer", "kt_mod_timer on every request", sizeof(struct kt_timer), 0, 0, 1, 0,
	create, destroy, kab_kt_init, kab_kt_arm, kab_kt_cancel, advance, kab_kt_next_timeout, kab_kt_ops, NULL,
	kab_kt_count_ops,
};

/* The same, with the node of the request --prefetch-distance ahead prefetched. */
static void prefetch(void *ctx, struct kab_conn *c)
{
	(void)ctx;
	kt_timer_prefetch((const struct kt_timer *)c->node);
}

const struct kab_impl kab_ktimer_prefetch = {
	"ktimer prefetch", "kt_mod_timer, kt_timer_prefetch() on the request --prefetch-distance ahead",
	sizeof(struct kt_timer), 0, 0, 1, 0, create, destroy, kab_kt_init, kab_kt_arm, kab_kt_cancel, advance,
	kab_kt_next_timeout, kab_kt_ops, prefetch, kab_kt_count_ops,
};

/* ---- lazy: KT_TIMER_LAZY, a later push-back only stores the expiry ------- */

static void lazy_init(void *ctx, struct kab_conn *c)
{
	kt_timer_setup((struct kt_timer *)c->node, ((struct kctx *)ctx)->base, on_timer, KT_TIMER_LAZY);
}

const struct kab_impl kab_ktimer_lazy = {
	"ktimer lazy", "kt_mod_timer on a KT_TIMER_LAZY timer (later: store; requeued when its bucket is due)",
	sizeof(struct kt_timer), 0, 0, 1, 0, create, destroy, lazy_init, kab_kt_arm, kab_kt_cancel, advance,
	kab_kt_next_timeout, kab_kt_ops, NULL, kab_kt_count_ops,
};

/* ---- idle tracker: touch on every request, fixed 30 s timeout ---------- */

static void on_idle(struct kt_idle *i)
{
	kab_fired(kt_container_of((unsigned char *)i, struct kab_conn, node));
}

static void idle_init(void *ctx, struct kab_conn *c)
{
	kt_idle_setup((struct kt_idle *)c->node, ((struct kctx *)ctx)->base, KT_MILLIS(KAB_KEEPALIVE_MS), on_idle);
}

static void idle_arm(void *ctx, struct kab_conn *c, uint64_t expires)
{
	struct kt_idle *i = (struct kt_idle *)c->node;

	(void)ctx;
	(void)expires;
	if (!kt_idle_pending(i))
		kt_idle_start(i);
	else
		kt_idle_touch(i);
}

static void idle_cancel(void *ctx, struct kab_conn *c)
{
	(void)ctx;
	kt_idle_stop((struct kt_idle *)c->node);
}

const struct kab_impl kab_ktimer_idle = {
	"ktimer idle", "kt_idle_touch (a store) on every request; fixed 30 s timeout", sizeof(struct kt_idle), 0, 0,
	1, 1, create, destroy, idle_init, idle_arm, idle_cancel, advance, kab_kt_next_timeout, kab_kt_ops, NULL,
	kab_kt_count_ops,
};

/* ---- the server's one-second slot ring (net/slots.c) ------------------- */

static int ring_expire(struct slot_ring *r, struct slot_node *n)
{
	(void)r;
	kab_fired(kt_container_of((unsigned char *)n, struct kab_conn, node));
	return 0;
}

static void *ring_create(size_t n, uint64_t now)
{
	struct kctx *k = create(n, now);

	slot_ring_init(&k->ring, k->base, KT_SECONDS(KAB_KEEPALIVE_MS / 1000), ring_expire);
	k->ring_on = 1;
	return k;
}

static void ring_init(void *ctx, struct kab_conn *c)
{
	(void)ctx;
	*(struct slot_node *)c->node = (struct slot_node){NULL, NULL, 0, 0};
}

static void ring_arm(void *ctx, struct kab_conn *c, uint64_t expires)
{
	(void)expires;
	slot_touch(&((struct kctx *)ctx)->ring, (struct slot_node *)c->node);
}

static void ring_cancel(void *ctx, struct kab_conn *c)
{
	slot_remove(&((struct kctx *)ctx)->ring, (struct slot_node *)c->node);
}

static uint64_t ring_ops(void *ctx)
{
	struct kctx *k = ctx;

	return k->ring.stats.moves + kab_kt_ops(ctx);
}

const struct kab_impl kab_slots = {
	"slot ring", "the server's ring (net/slots.c): slot_touch per request; one timer; 30 s", sizeof(struct slot_node),
	0, 0, 1, 1, ring_create, destroy, ring_init, ring_arm, ring_cancel, advance, kab_kt_next_timeout, ring_ops, NULL,
	kab_kt_count_ops,
};
