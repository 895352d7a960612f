// SPDX-License-Identifier: MIT
/*
 * kabench: libev 4 (Debian's libev-dev), the loop behind many C servers. Its
 * timers live in a 4-ary heap (EV_USE_4HEAP, Debian's default build), and
 * its keep-alive idiom is ev_timer_again(): set the repeat value, restart
 * in place. Its own file: ev.h and libevent's headers define the same
 * macros (EV_READ, EV_TIMEOUT...). Like libevent and libuv its clock cannot
 * be set, so only the micro phases run; expire arms every timer with a zero
 * timeout and fires them in one non-blocking loop pass.
 */
#include <stdlib.h>

#include <ev.h>

#include "tools/bench/kabench/kabench.h"

struct evctx {
	struct ev_loop *loop;
	uint64_t now, ops;
};

static void on_ev_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	kab_fired((struct kab_conn *)((unsigned char *)w - offsetof(struct kab_conn, node)));
}

static void *lev_create(size_t n, uint64_t now)
{
	struct evctx *e = calloc(1, sizeof(*e));

	(void)n;
	e->loop = ev_loop_new(EVFLAG_AUTO);
	e->now = now;
	return e;
}

static void lev_destroy(void *ctx)
{
	struct evctx *e = ctx;

	ev_loop_destroy(e->loop);
	free(e);
}

static void lev_init(void *ctx, struct kab_conn *c)
{
	(void)ctx;
	ev_timer_init((ev_timer *)c->node, on_ev_timer, 0., 0.);
}

static void lev_arm(void *ctx, struct kab_conn *c, uint64_t expires)
{
	struct evctx *e = ctx;
	ev_timer *w = (ev_timer *)c->node;
	uint64_t d = expires > e->now ? expires - e->now : 0;

	e->ops++;
	if (d) {
		/* The keep-alive idiom: a repeat value, restarted in place. */
		w->repeat = (ev_tstamp)d / 1000.;
		ev_timer_again(e->loop, w);
	} else {
		/* Due at once (the expire phase): a one-shot zero timeout. */
		ev_timer_stop(e->loop, w);
		ev_timer_set(w, 0., 0.);
		ev_timer_start(e->loop, w);
	}
}

static void lev_cancel(void *ctx, struct kab_conn *c)
{
	struct evctx *e = ctx;

	e->ops++;
	ev_timer_stop(e->loop, (ev_timer *)c->node);
}

static size_t lev_advance(void *ctx, uint64_t now)
{
	(void)now;
	ev_run(((struct evctx *)ctx)->loop, EVRUN_NOWAIT);
	return 0; /* counted through kab_fired */
}

static int64_t lev_next(void *ctx, uint64_t now)
{
	(void)ctx;
	(void)now;
	return -1;
}

static uint64_t lev_ops(void *ctx) { return ((struct evctx *)ctx)->ops; }

const struct kab_impl kab_libev = {
	"libev 4-heap", "ev_timer_again on an active timer (4-ary heap)", sizeof(ev_timer), 0, 0, 0, 0,
	lev_create, lev_destroy, lev_init, lev_arm, lev_cancel, lev_advance, lev_next, lev_ops, NULL,
	NULL,
};
