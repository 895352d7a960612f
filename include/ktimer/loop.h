/* SPDX-License-Identifier: MIT */
/*
 * ktimer/loop.h - driving a base from a worker loop, and arming its timers
 * from other threads.
 *
 * The wait protocol. After a turn (kt_base_run() plus the I/O it unblocked),
 * the owner calls kt_base_prepare_wait() exactly once and does what the plan
 * says:
 *
 *	KT_WAIT_IMMEDIATE   work is queued: poll I/O without blocking, turn again
 *	KT_WAIT_UNTIL       block until plan.deadline_ns, I/O, or the waker
 *	KT_WAIT_INDEFINITE  nothing pending: block until I/O or the waker
 *
 * The plan is chosen under the lock that producers on other threads take to
 * queue operations. A producer that races with prepare_wait() therefore
 * either queues before it (the plan is IMMEDIATE) or after it (the owner is
 * marked waiting, and the producer calls the waker). There is no third order,
 * so a lost wake-up cannot be expressed through this API. The owner stops
 * being "waiting" at the start of its next kt_base_run().
 *
 * Cross-thread operations. Timers belong to the base they were set up on;
 * only its thread touches the wheel. Other threads use kt_remote_*(): each
 * appends an operation to the base's queue (a mutex-protected array: the
 * owner's timer operations never take that lock) and calls the waker only on
 * the empty-to-non-empty transition while the owner waits. The owner applies
 * queued operations at the start of each kt_base_run(), in the order they
 * were queued, at most KT_REMOTE_BATCH per turn (the plan stays IMMEDIATE
 * while more remain).
 *
 * A remote delete racing with expiry has one defined outcome: the operations
 * of a turn are applied after the clock is refreshed and before anything
 * fires. If the owner drains the delete in or before the turn in which the
 * timer would fire, the timer does not fire and the delete reports 1. If the
 * timer fired in an earlier turn, its callback ran exactly once and the
 * delete reports 0. Never both, never neither.
 */
#ifndef KTIMER_LOOP_H
#define KTIMER_LOOP_H

#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "time.h"
#include "timer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Remote operations applied per turn at most. */
#define KT_REMOTE_BATCH 256u

/** enum kt_wait_kind - what the owner should do next. */
enum kt_wait_kind {
	KT_WAIT_IMMEDIATE = 0,
	KT_WAIT_UNTIL = 1,
	KT_WAIT_INDEFINITE = 2,
};

/**
 * struct kt_wait_plan - the result of kt_base_prepare_wait().
 * @kind: see enum kt_wait_kind.
 * @precise: for KT_WAIT_UNTIL, 1 if the deadline is a kt_hrtimer's (wait with
 *           a nanosecond timer such as a timerfd), 0 if it is the wheel's.
 * @deadline_ns: for KT_WAIT_UNTIL, the absolute deadline in nanoseconds on
 *               the base's clock (kt_base_now_ns()).
 */
struct kt_wait_plan {
	enum kt_wait_kind kind;
	int precise;
	uint64_t deadline_ns;
};

/** kt_waker_fn - wakes the owner's blocking wait; called on a producer thread. */
typedef void (*kt_waker_fn)(void *arg);

/**
 * kt_base_set_waker() - how producers wake the owner (e.g. write an eventfd).
 * @base: the base.
 * @wake: the function, or NULL for none (producers then never wake anyone).
 * @arg: its argument.
 *
 * Call it on the owner thread before other threads use kt_remote_*().
 */
void kt_base_set_waker(struct kt_base *base, kt_waker_fn wake, void *arg);

/**
 * kt_base_prepare_wait() - choose how the owner waits, race-free.
 * @base: the base.
 *
 * Deferrable timers never set the deadline. A deadline already in the past is
 * still KT_WAIT_UNTIL; kt_wait_plan_timeout_ms() turns it into 0.
 *
 * Return: the plan (see the top of this header).
 */
struct kt_wait_plan kt_base_prepare_wait(struct kt_base *base);

/**
 * kt_wait_plan_timeout_ms() - a plan as an epoll_wait()/poll() timeout.
 * @base: the base the plan came from.
 * @plan: the plan.
 *
 * Measured from a fresh clock reading (not the turn's cached now), rounded up
 * to whole milliseconds, so the wait never ends before the deadline and is
 * never 0 while the deadline is in the future. Clamped to INT_MAX.
 *
 * Return: 0 for KT_WAIT_IMMEDIATE or a past deadline, -1 for
 * KT_WAIT_INDEFINITE, otherwise the milliseconds to wait.
 */
int kt_wait_plan_timeout_ms(const struct kt_base *base, const struct kt_wait_plan *plan);

/**
 * kt_base_now_ns() - the turn's cached monotonic time in nanoseconds.
 * @base: the base.
 *
 * Return: nanoseconds on the base's clock; kt_base_now() is this / 10^6.
 */
uint64_t kt_base_now_ns(const struct kt_base *base);

/**
 * kt_remote_done_fn - reports a remote operation's result, on the owner thread.
 * @timer: the timer the operation was for.
 * @result: what the owner-side call returned (kt_mod_timer() or
 *          kt_timer_delete() semantics: 1 pending, 0 idle, negative error).
 * @arg: the caller's argument.
 */
typedef void (*kt_remote_done_fn)(struct kt_timer *timer, int result, void *arg);

/**
 * kt_remote_mod() - kt_mod_timer() from any thread.
 * @timer: a timer set up on its owner's base.
 * @expires: absolute expiry in ms on the owner's clock.
 * @done: called on the owner thread once applied, or NULL.
 * @arg: argument for @done.
 *
 * Return: 0 once queued, -EINVAL for a timer never set up, -ENOMEM if the
 * queue could not grow (nothing queued).
 */
int kt_remote_mod(struct kt_timer *timer, uint64_t expires, kt_remote_done_fn done, void *arg);

/**
 * kt_remote_arm() - kt_timer_arm() from any thread.
 * @timer: a timer set up on its owner's base.
 * @delay: delay from the owner's cached now when the owner applies it (so the
 *         timer can only be later than the caller's own clock says, never
 *         earlier).
 * @done: called on the owner thread once applied, or NULL.
 * @arg: argument for @done.
 *
 * Return: as kt_remote_mod().
 */
int kt_remote_arm(struct kt_timer *timer, kt_millis delay, kt_remote_done_fn done, void *arg);

/**
 * kt_remote_delete() - kt_timer_delete() from any thread.
 * @timer: a timer set up on its owner's base.
 * @done: called on the owner thread with 1 if the delete removed a pending
 *        timer (it will not fire), 0 if the timer was idle (it had fired, or
 *        was never armed), or NULL.
 * @arg: argument for @done.
 *
 * Return: as kt_remote_mod().
 */
int kt_remote_delete(struct kt_timer *timer, kt_remote_done_fn done, void *arg);

/**
 * kt_remote_forget() - drop queued operations for a timer (owner thread).
 * @timer: the timer.
 *
 * Call before freeing a timer that other threads may have queued operations
 * for; their @done callbacks are not called.
 *
 * Return: the number of operations dropped.
 */
size_t kt_remote_forget(struct kt_timer *timer);

/**
 * kt_base_remote_queued() - operations waiting for the owner.
 * @base: the base.
 *
 * Return: the queue's length at the time of the call (any thread).
 */
size_t kt_base_remote_queued(struct kt_base *base);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_LOOP_H */
