/* SPDX-License-Identifier: MIT */
/*
 * ktimer/hrtimer.h - precise timers beside the wheel, as the kernel keeps
 * hrtimers beside its timer wheel.
 *
 * For pacers and protocol deadlines counted in microseconds, where a wheel
 * bucket (1-16 ms) is too coarse. Deadlines are absolute nanoseconds on the
 * base's clock. They live in a per-base binary min-heap: O(log n) arm and
 * cancel, O(1) earliest. The earliest one shapes the base's wait plan (with
 * plan.precise set); on epoll, ktimer/epoll.h arms a timerfd only while a
 * precise deadline is the base's earliest, which costs one extra system call
 * per change - timers on the wheel pay nothing for it. Use the wheel for
 * anything a millisecond or more of rounding does not hurt.
 *
 * Arming may allocate (the heap array grows geometrically); the wheel's
 * no-allocation rule does not extend to precise timers.
 */
#ifndef KTIMER_HRTIMER_H
#define KTIMER_HRTIMER_H

#include <stdint.h>

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kt_hrtimer;

/** kt_hrtimer_fn - precise timer callback; the timer is idle when it runs. */
typedef void (*kt_hrtimer_fn)(struct kt_hrtimer *timer);

/** struct kt_hrtimer - embeddable precise timer; every field is private. */
struct kt_hrtimer {
	uint64_t kt__expires; /* ns */
	uint64_t kt__seq;     /* start order: equal deadlines fire first in, first out */
	kt_hrtimer_fn kt__fn;
	struct kt_base *kt__base;
	struct kt_hrtimer *kt__next; /* in the batch being fired */
	uint32_t kt__pos;            /* heap slot + 1; 0 while not in the heap */
	uint32_t kt__flags;
};

/**
 * kt_hrtimer_setup() - bind a precise timer to a base and a callback.
 * @timer: the timer.
 * @base: the owner's base.
 * @fn: the callback.
 *
 * Must not be called on a pending timer (cancel it first). A timer pending
 * on @base is refused; moving a pending timer to another base without
 * cancelling it first is undefined (its old base is not looked at: the node
 * may be uninitialized memory whose pointers cannot be trusted).
 *
 * Return: 0, -EINVAL if an argument is NULL (the timer then refuses to arm),
 * or -EBUSY if @timer is pending on @base (nothing changed).
 */
int kt_hrtimer_setup(struct kt_hrtimer *timer, struct kt_base *base, kt_hrtimer_fn fn);

/**
 * kt_hrtimer_start() - arm or re-arm at an absolute time.
 * @timer: a set-up timer.
 * @expires_ns: absolute deadline in ns on the base's clock (kt_base_now_ns()).
 *              A deadline already passed fires on the next turn; one past
 *              the clock's limit (2^44 ms) never comes: it never fires and
 *              never sets a wait plan's deadline.
 *
 * Timers with equal deadlines fire in the order they were (re)started, first
 * in first out, as Linux's hrtimers do.
 *
 * Return: 1 if it was pending, 0 if idle, -EINVAL if NULL, not set up, or
 * its base was freed, -ENOMEM if the heap could not grow (the timer is then
 * idle).
 */
int kt_hrtimer_start(struct kt_hrtimer *timer, uint64_t expires_ns);

/**
 * kt_hrtimer_start_after() - arm relative to a fresh clock reading.
 * @timer: a set-up timer.
 * @delay_ns: delay from now (read from the clock, not the cached turn time).
 *            A delay that would carry the deadline past UINT64_MAX ns is
 *            saturated to UINT64_MAX: the timer stays pending and never
 *            fires (no clock reaches it).
 *
 * Return: as kt_hrtimer_start().
 */
int kt_hrtimer_start_after(struct kt_hrtimer *timer, uint64_t delay_ns);

/**
 * kt_hrtimer_cancel() - disarm.
 * @timer: the timer.
 *
 * Return: 1 if it was pending (it will not fire), 0 if idle, -EINVAL for NULL.
 */
int kt_hrtimer_cancel(struct kt_hrtimer *timer);

/**
 * kt_hrtimer_pending() - whether armed.
 * @timer: the timer.
 *
 * Return: 1 if pending, 0 otherwise (also for NULL).
 */
int kt_hrtimer_pending(const struct kt_hrtimer *timer);

/**
 * kt_hrtimer_expires() - the deadline last set.
 * @timer: the timer.
 *
 * Return: absolute ns (0 for NULL).
 */
uint64_t kt_hrtimer_expires(const struct kt_hrtimer *timer);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_HRTIMER_H */
