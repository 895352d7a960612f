/* SPDX-License-Identifier: MIT */
/*
 * ktimer/remote.h - arming a worker's timers from other threads.
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

/* Remote operations applied per turn at most. */
#define KT_REMOTE_BATCH 256u

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

#endif /* KTIMER_REMOTE_H */
