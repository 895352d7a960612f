/* SPDX-License-Identifier: MIT */
/*
 * ktimer/remote.h - arming a worker's timers from other threads.
 *
 * Cross-thread operations. Timers belong to the base they were set up on;
 * only its thread touches the wheel. Other threads use kt_remote_*(): each
 * appends an operation to the base's queue (a mutex-protected array: the
 * owner's timer operations never take that lock) and calls the waker only on
 * the empty-to-non-empty transition while the owner waits. Each
 * kt_base_run() takes at most KT_REMOTE_BATCH queued operations (the plan
 * stays IMMEDIATE while more remain) and applies them in the order they were
 * queued, after the clock is refreshed and the wheel clock has moved past
 * now, before any callback runs. So a relative kt_remote_arm() counts from
 * the turn that applies it, even after a long idle sleep.
 *
 * A remote delete racing with expiry has one defined outcome. If the owner
 * applies the delete in or before the turn in which the timer would fire,
 * the timer does not fire and the delete reports 1. If the timer fired in an
 * earlier turn, its callback ran exactly once and the delete reports 0.
 * Never both, never neither.
 */
#ifndef KTIMER_REMOTE_H
#define KTIMER_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "time.h"
#include "timer.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * KT_REMOTE_BATCH - the most cross-thread operations one turn applies.
 *
 * kt_base_run() applies at most this many queued kt_remote_*() operations
 * (256); more stay queued in order, and the wait plan is immediate until
 * they are all applied.
 */
#define KT_REMOTE_BATCH 256u

/** kt_waker_fn - wakes the owner's blocking wait; called on a producer thread. */
typedef void (*kt_waker_fn)(void *arg);

/**
 * kt_base_set_waker() - how producers wake the owner (e.g. write an eventfd).
 * @base: the base.
 * @wake: the function, or NULL for none (producers then never wake anyone).
 * @arg: its argument.
 *
 * Call it on the owner thread before other threads use kt_remote_*(). A
 * waker runs on a producer's thread, outside the base's lock; it may call
 * kt_remote_*() but not kt_base_set_waker() or kt_base_free().
 *
 * The shutdown protocol: this call waits until no producer is inside the old
 * waker, so once it returns (with NULL or a new waker) the old waker's
 * argument may be freed. kt_base_free() waits the same way. Tear down in this
 * order: kt_base_set_waker(base, NULL, NULL) (kt_epoll_close() does it),
 * free what the waker used, stop and join the producers or make sure they
 * no longer touch the base, then kt_base_free().
 *
 * Return: 0, or -EINVAL for a NULL @base.
 */
int kt_base_set_waker(struct kt_base *base, kt_waker_fn wake, void *arg);

/**
 * kt_base_wake() - call the base's waker now, from any thread.
 * @base: the base.
 *
 * For "set a flag, then wake the worker" (a stop request): the owner's next
 * wait, or the one it is in, returns. Safe against teardown: it is counted
 * like a producer's wake-up, so kt_base_set_waker() (and kt_epoll_close())
 * waits for it, and once the waker is removed it does nothing.
 *
 * Return: 1 if a waker was called, 0 if none is set, -EINVAL for NULL.
 */
int kt_base_wake(struct kt_base *base);

/**
 * kt_remote_done_fn - reports a remote operation's result, on the owner thread.
 * @timer: the timer the operation was for.
 * @result: what the owner-side call returned (kt_mod_timer() or
 *          kt_timer_delete() semantics: 1 pending, 0 idle, negative error),
 *          or -ECANCELED if the operation was dropped by kt_remote_forget()
 *          or kt_base_free() (the timer may be about to be freed: use only
 *          @arg then).
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
 * Return: 0 once queued, -EINVAL for NULL, a timer never set up or one
 * whose base was freed, -ENOMEM if the queue could not grow (nothing
 * queued).
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
 * for, including from a @done callback of that timer: operations already
 * taken for the current turn are dropped too. Each dropped operation's @done
 * is called, before this returns, with -ECANCELED, so whatever its argument
 * owns can be reclaimed.
 *
 * Return: the number of operations dropped (0 for NULL or a timer never set
 * up).
 */
size_t kt_remote_forget(struct kt_timer *timer);

/**
 * kt_base_remote_queued() - operations waiting for the owner.
 * @base: the base.
 *
 * Return: the queue's length at the time of the call (any thread); 0 for
 * NULL.
 */
size_t kt_base_remote_queued(struct kt_base *base);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_REMOTE_H */
