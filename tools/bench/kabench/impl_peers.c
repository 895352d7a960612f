// SPDX-License-Identifier: MIT
/*
 * kabench: the peers a server would otherwise pick - libevent 2.1 (its
 * min-heap, and its common-timeout queues) and libuv 1.44 (its heap). Their
 * clocks cannot be set, so the in-time phases (expire at a chosen time, the
 * keep-alive simulation) are not run for them; their expire phase arms every
 * timer with a zero timeout and fires them in one non-blocking loop pass.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/event_struct.h>
#include <uv.h>

#include "tools/bench/kabench/kabench.h"

static inline struct kab_conn *conn_of(void *node)
{
	return (struct kab_conn *)((unsigned char *)node - offsetof(struct kab_conn, node));
}

/* ---- libevent ---------------------------------------------------------- */

struct lectx {
	struct event_base *base;
	const struct timeval *common;
	uint64_t now, ops;
	int use_common;
};

static void le_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	kab_fired(conn_of(arg));
}

static void *le_create_any(uint64_t now, int common)
{
	struct lectx *l = calloc(1, sizeof(*l));
	struct event_config *cfg = event_config_new();
	struct timeval ka = {KAB_KEEPALIVE_MS / 1000, 0};

	/* No backend descriptors needed: a timer-only base. */
	l->base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	l->now = now;
	l->use_common = common;
	if (common)
		l->common = event_base_init_common_timeout(l->base, &ka);
	return l;
}

static void *le_create(size_t n, uint64_t now)
{
	(void)n;
	return le_create_any(now, 0);
}

static void *lec_create(size_t n, uint64_t now)
{
	(void)n;
	return le_create_any(now, 1);
}

static void le_destroy(void *ctx)
{
	struct lectx *l = ctx;

	event_base_free(l->base);
	free(l);
}

static void le_init(void *ctx, struct kab_conn *c)
{
	struct event *ev = (struct event *)c->node;

	evtimer_assign(ev, ((struct lectx *)ctx)->base, le_cb, ev);
}

static void le_arm(void *ctx, struct kab_conn *c, uint64_t expires)
{
	struct lectx *l = ctx;
	uint64_t d = expires > l->now ? expires - l->now : 0;
	struct timeval tv = {(time_t)(d / 1000), (suseconds_t)(d % 1000) * 1000};

	l->ops++;
	evtimer_add((struct event *)c->node, l->use_common && d ? l->common : &tv);
}

static void le_cancel(void *ctx, struct kab_conn *c)
{
	((struct lectx *)ctx)->ops++;
	evtimer_del((struct event *)c->node);
}

static size_t le_advance(void *ctx, uint64_t now)
{
	(void)now;
	event_base_loop(((struct lectx *)ctx)->base, EVLOOP_NONBLOCK);
	return 0; /* counted through kab_fired */
}

static int64_t le_next(void *ctx, uint64_t now)
{
	(void)ctx;
	(void)now;
	return -1;
}

static uint64_t le_ops(void *ctx) { return ((struct lectx *)ctx)->ops; }

const struct kab_impl kab_libevent = {
	"libevent heap", "evtimer_add on a pending event (min-heap)", sizeof(struct event), sizeof(void *), 0, 0,
	0, le_create, le_destroy, le_init, le_arm, le_cancel, le_advance, le_next, le_ops, NULL,
	NULL,
};

const struct kab_impl kab_libevent_common = {
	"libevent common", "evtimer_add with the 30 s common timeout (FIFO queue)", sizeof(struct event), 0, 0, 0,
	1, lec_create, le_destroy, le_init, le_arm, le_cancel, le_advance, le_next, le_ops, NULL,
	NULL,
};

/* ---- libuv ------------------------------------------------------------- */

struct uvctx {
	uv_loop_t loop;
	uint64_t now, ops;
};

static void luv_cb(uv_timer_t *t) { kab_fired(conn_of(t)); }

static void *luv_create(size_t n, uint64_t now)
{
	struct uvctx *u = calloc(1, sizeof(*u));

	(void)n;
	uv_loop_init(&u->loop);
	u->now = now;
	return u;
}

static void luv_destroy(void *ctx)
{
	struct uvctx *u = ctx;

	uv_loop_close(&u->loop);
	free(u);
}

static void luv_init(void *ctx, struct kab_conn *c)
{
	uv_timer_init(&((struct uvctx *)ctx)->loop, (uv_timer_t *)c->node);
}

static void luv_arm(void *ctx, struct kab_conn *c, uint64_t expires)
{
	struct uvctx *u = ctx;

	u->ops++;
	uv_timer_start((uv_timer_t *)c->node, luv_cb, expires > u->now ? expires - u->now : 0, 0);
}

static void luv_cancel(void *ctx, struct kab_conn *c)
{
	((struct uvctx *)ctx)->ops++;
	uv_timer_stop((uv_timer_t *)c->node);
}

static size_t luv_advance(void *ctx, uint64_t now)
{
	(void)now;
	uv_run(&((struct uvctx *)ctx)->loop, UV_RUN_NOWAIT);
	return 0;
}

static int64_t luv_next(void *ctx, uint64_t now)
{
	(void)ctx;
	(void)now;
	return -1;
}

static uint64_t luv_ops(void *ctx) { return ((struct uvctx *)ctx)->ops; }

const struct kab_impl kab_libuv = {
	"libuv", "uv_timer_start on an active timer (min-heap)", sizeof(uv_timer_t), 0, 0, 0, 0,
	luv_create, luv_destroy, luv_init, luv_arm, luv_cancel, luv_advance, luv_next, luv_ops, NULL,
	NULL,
};
