// SPDX-License-Identifier: MIT
/*
 * lib/uv.c - a ktimer base driven by a libuv loop.
 *
 * libuv's poll timeout is the earliest of its timers, so ktimer gets one
 * uv_timer_t aimed at the base's next expiry, as an absolute millisecond on
 * libuv's clock (the same CLOCK_MONOTONIC origin as the base's): libuv
 * computes the due time as uv_now() plus the timeout, so aiming at
 * "deadline - uv_now()" makes it due exactly at the deadline however stale
 * uv_now() is. The aim only changes when the deadline does: a busy server
 * pushing deadlines back costs libuv's timer heap nothing.
 *
 * The turn is split over two phases: the prepare phase plans the wait just
 * before libuv polls (which marks the owner waiting, so kt_remote_*() from
 * now on sends the uv_async_t), and the check phase, right after the poll's
 * I/O callbacks, runs the base. The uv_timer_t's own callback has nothing
 * to do: it only ends the wait, and the check phase of that same iteration
 * has already run the timers when it is called.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <uv.h>

#include "ktimer/base.h"
#include "ktimer/remote.h"
#include "ktimer/uv.h"

#define NOT_AIMED UINT64_MAX

static void wake(void *arg)
{
	struct kt_uv *ku = arg;

	/* Thread-safe and coalescing; kt_uv_close() waits for us to return. */
	uv_async_send(&ku->async);
}

static void on_async(uv_async_t *h)
{
	(void)h; /* the check phase of this iteration applies what was queued */
}

static void on_timer(uv_timer_t *h)
{
	struct kt_uv *ku = h->data;

	ku->aimed_ms = NOT_AIMED; /* it fired: a non-repeating timer stops */
}

static void aim(struct kt_uv *ku, const struct kt_wait_plan *plan)
{
	uint64_t due, now;

	if (plan->kind == KT_WAIT_INDEFINITE) {
		if (ku->aimed_ms != NOT_AIMED)
			uv_timer_stop(&ku->timer);
		ku->aimed_ms = NOT_AIMED;
		return;
	}
	/* Rounded up: libuv's millisecond must not come before the deadline. */
	due = plan->kind == KT_WAIT_IMMEDIATE
		      ? 0
		      : plan->deadline_ns / 1000000 + (plan->deadline_ns % 1000000 != 0); /* no wrap near 2^64 */
	if (due == ku->aimed_ms)
		return;
	now = uv_now(ku->loop);
	uv_timer_start(&ku->timer, on_timer, due > now ? due - now : 0, 0);
	ku->aimed_ms = due;
	ku->aims++;
}

static void on_prepare(uv_prepare_t *h)
{
	struct kt_uv *ku = h->data;
	struct kt_wait_plan plan = kt_base_prepare_wait(ku->base);

	aim(ku, &plan);
	ku->stale = 1; /* the base's clock predates the wait from here on */
}

int kt_uv_fork(struct kt_uv *ku)
{
	if (!ku || !ku->base)
		return -EINVAL;
	if (!kt_base_forked(ku->base))
		return 0; /* the parent, or a child that called already */
	/*
	 * uv_loop_fork() has given the loop, and the async handle the waker
	 * sends, kernel objects of the child's own: the waker may be called
	 * again.
	 */
	return kt_base_fork(ku->base, wake, ku);
}

static void on_check(uv_check_t *h)
{
	struct kt_uv *ku = h->data;

	ku->turns++;
	ku->fired += kt_base_run(ku->base);
	/*
	 * The run read the clock, but what comes next may start much later:
	 * the closing phase, the program's own code after a uv_run() that
	 * returned (UV_RUN_NOWAIT, UV_RUN_ONCE), and the next uv_run()'s timer,
	 * pending and idle callbacks, which run before any prepare phase. No
	 * hook tells these apart, and time outside the loop may pass between
	 * any two of them (the program's own call, then its work, then the
	 * next uv_run()): until the next prepare phase, every
	 * kt_uv_update_time() reads the clock.
	 */
	ku->stale = 2;
}

int(kt_uv_init)(struct kt_uv *ku, uv_loop_t *loop, struct kt_base *base)
{
	int err;

	if (!ku)
		return -EINVAL;
	/*
	 * No base marks an adapter with no handles: kt_uv_close() after a failed
	 * init (or on a zero-filled struct) must not hand libuv handles it never
	 * initialized.
	 */
	ku->base = NULL;
	if (!loop || !base || kt_base_clock(base) != KT_CLOCK_MONOTONIC)
		return -EINVAL;
	/* The only call that can fail, and it leaves no handle behind if it does. */
	err = uv_async_init(loop, &ku->async, on_async);
	if (err)
		return err;
	uv_timer_init(loop, &ku->timer);
	uv_prepare_init(loop, &ku->prepare);
	uv_check_init(loop, &ku->check);
	ku->timer.data = ku->prepare.data = ku->check.data = ku->async.data = ku;
	ku->loop = loop;
	ku->base = base;
	ku->aimed_ms = NOT_AIMED;
	ku->stale = 2; /* outside the loop until its first prepare phase: read at every call */
	ku->closing = 0;
	ku->close_cb = NULL;
	ku->turns = ku->fired = ku->aims = 0;
	ku->owned = 0;
	uv_prepare_start(&ku->prepare, on_prepare);
	uv_check_start(&ku->check, on_check);
	kt_base_set_waker(base, wake, ku);
	return 0;
}

static uv_handle_t *handle(struct kt_uv *ku, int i)
{
	switch (i) {
	case 0:
		return (uv_handle_t *)&ku->timer;
	case 1:
		return (uv_handle_t *)&ku->prepare;
	case 2:
		return (uv_handle_t *)&ku->check;
	default:
		return (uv_handle_t *)&ku->async;
	}
}

void kt_uv_unref(struct kt_uv *ku)
{
	for (int i = 0; ku && i < 4; i++)
		uv_unref(handle(ku, i));
}

void kt_uv_ref(struct kt_uv *ku)
{
	for (int i = 0; ku && i < 4; i++)
		uv_ref(handle(ku, i));
}

static void on_closed(uv_handle_t *h)
{
	struct kt_uv *ku = h->data;

	if (--ku->closing == 0 && ku->close_cb)
		ku->close_cb(ku); /* last touch of ku: the callback may free it */
}

int(kt_uv_close)(struct kt_uv *ku, kt_uv_close_cb cb)
{
	if (!ku || !ku->base || ku->closing || uv_is_closing((uv_handle_t *)&ku->async))
		return -EINVAL;
	/* No producer is inside wake() after this, and none will enter it. */
	kt_base_set_waker(ku->base, NULL, NULL);
	ku->base = NULL; /* closing: a second close is refused, even after the callback */
	ku->close_cb = cb;
	ku->closing = 4;
	for (int i = 0; i < 4; i++)
		uv_close(handle(ku, i), on_closed);
	return 0;
}

/* ---- the two-argument forms: an adapter the library allocates ---------- */

static void find(uv_handle_t *h, void *arg)
{
	/* Ours: an async handle whose data is a kt_uv holding this very handle. */
	struct kt_uv **out = arg;
	struct kt_uv *ku = h->data;

	if (!*out && h->type == UV_ASYNC && ku && (uv_handle_t *)&ku->async == h && !uv_is_closing(h))
		*out = ku;
}

struct kt_uv *kt_uv_of(uv_loop_t *loop)
{
	struct kt_uv *ku = NULL;

	if (loop)
		uv_walk(loop, find, &ku);
	return ku;
}

int kt_uv_open(uv_loop_t *loop, struct kt_base *base)
{
	struct kt_uv *ku;
	int err;

	if (!loop || !base || kt_uv_of(loop))
		return -EINVAL;
	ku = calloc(1, sizeof(*ku));
	if (!ku)
		return -ENOMEM;
	err = (kt_uv_init)(ku, loop, base);
	if (err)
		free(ku);
	else
		ku->owned = 1;
	return err;
}

static void free_adapter(struct kt_uv *ku) { free(ku); }

int kt_uv_close_loop(uv_loop_t *loop)
{
	struct kt_uv *ku = kt_uv_of(loop);

	/* Only what kt_uv_open() allocated is freed; an embedded one is the caller's. */
	return ku ? (kt_uv_close)(ku, ku->owned ? free_adapter : ku->close_cb) : -EINVAL;
}
