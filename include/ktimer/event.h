/* SPDX-License-Identifier: MIT */
/*
 * ktimer/event.h - a ktimer base driven by a libevent event_base
 * (//:ktimer_event; libevent 2.1).
 *
 * One struct event does it all: it reads an eventfd (producers on other
 * threads write it: the base's waker) and carries a timeout aimed at the
 * base's next expiry. Its callback is the ktimer turn: kt_base_run() (queued
 * cross-thread operations, then every due ktimer callback), then
 * kt_base_prepare_wait() and the new aim.
 *
 * Where the turn runs. libevent first waits and activates what is ready,
 * then runs the active callbacks, priority by priority, each priority first
 * in, first out; the adapter's event has libevent's default priority. A
 * turn runs when the aim is reached, when a producer wakes the loop, and -
 * at the end of the iteration's callbacks of that priority - whenever a
 * callback called kt_event_update_time(). libevent 2.1 has no prepare or
 * check hook, so that call is how the adapter learns that a callback armed
 * something, possibly earlier than the current aim:
 *
 *	call kt_event_update_time() at the top of every libevent callback (and
 *	before the loop starts) that arms, pushes back or touches ktimer timers.
 *
 * Each call reads the clock (kt_base_update_time(): the base's cached clock
 * is otherwise the one of the last turn, from before the wait, and a
 * callback may start long after the one before it), tens of nanoseconds;
 * the first call after a turn also queues the next one, after the
 * iteration's callbacks of the adapter's priority. Deleting a timer needs
 * no call.
 *
 * What a ktimer callback may free: anything of the caller's, its timer's
 * container included (the event of a freed connection must be
 * event_del()eted or event_free()d first, which libevent allows from any
 * callback).
 *
 * Closing from a callback. kt_event_close() may be called from any
 * callback, a ktimer callback of the turn included (a shutdown timer): it
 * takes effect at once, and the turn ends without touching the adapter's
 * event again. The struct kt_event itself must stay valid until the
 * libevent call running the loop (event_base_dispatch(), event_base_loop(),
 * kt_event_dispatch()) has returned; free it after. The same rule holds for
 * every loop adapter (kt_epoll, kt_uring, kt_uv).
 *
 * fork(). libevent's rule is that a child of fork() calls event_reinit()
 * on the event_base before using it: it gives the child a backend of its
 * own and puts the adapter's event on it, but that event still reads the
 * eventfd the parent's producers write. So after event_reinit() the child
 * calls kt_event_fork(), which gives it an eventfd of its own and keeps its
 * timers. Until then the adapter's turn does nothing but take its event out
 * of the child's loop: no ktimer callback runs there and the parent's
 * wake-ups stay the parent's; kt_event_dispatch() fails with -EBADFD. A
 * child that only calls exec() or exits needs nothing (the eventfd is
 * close-on-exec).
 *
 * The clock is the base's own: CLOCK_MONOTONIC in nanoseconds. libevent's
 * timeouts are relative and, unless the event_base was made with
 * EVENT_BASE_FLAG_PRECISE_TIMER, measured on CLOCK_MONOTONIC_COARSE (a
 * tick of 1-10 ms): its timeout may end a little before ktimer's deadline.
 * That costs an empty turn and a re-aim, never an early callback: ktimer
 * decides what is due from its own clock. Precise timers (kt_hrtimer) get
 * epoll's millisecond, or a timerfd with EVENT_BASE_FLAG_PRECISE_TIMER.
 *
 * The loop ends: event_base_dispatch() keeps running while the adapter is
 * open (its event stays pending). kt_event_dispatch() returns when nothing
 * but the adapter's event remains, pending ktimer timers notwithstanding.
 */
#ifndef KTIMER_EVENT_H
#define KTIMER_EVENT_H

#include <stdint.h>

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

struct event;
struct event_base;

/**
 * struct kt_event - a base on a libevent event_base; embed or allocate it.
 * @evbase: the event_base.
 * @base: the ktimer base.
 * @ev: the adapter's event: eventfd readable, or the aim's timeout.
 * @wakefd: the eventfd producers write.
 * @queued: a turn is queued for the end of this iteration's callbacks.
 * @in_turn: the turn (and so a ktimer callback) is running.
 * @aimed_ns: the deadline the timeout is aimed at (absolute, on the base's
 *            clock), UINT64_MAX while there is none.
 * @turns: turns so far.
 * @fired: ktimer callbacks run so far.
 * @empty_turns: turns that ran no ktimer callback (a wake-up that only
 *               applied queued operations, a queued turn with nothing due,
 *               or libevent's timeout ending before ktimer's deadline).
 *
 * The fields are readable (the counters are for tests and statistics);
 * none is to be written.
 */
struct kt_event {
	struct event_base *evbase;
	struct kt_base *base;
	struct event *ev;
	int wakefd;
	int queued;
	int in_turn;
	uint64_t aimed_ns;
	uint64_t turns;
	uint64_t fired;
	uint64_t empty_turns;
};

/**
 * kt_event_init() - drive @base from @evbase.
 * @ke: the adapter state to fill.
 * @evbase: the event_base; it runs on the thread that owns @base.
 * @base: the worker's base (monotonic clock); @ke becomes its waker.
 *
 * Aims at what is pending now. Call kt_event_update_time() after arming
 * more before the loop starts.
 *
 * Return: 0, -EINVAL for a NULL argument or a manual-clock base, -errno from eventfd(), or -ENOMEM
 * if libevent could not make or add the event (nothing is left open on
 * failure, and @ke, if not NULL, is left closed: kt_event_close() on it
 * does nothing).
 */
int kt_event_init(struct kt_event *ke, struct event_base *evbase, struct kt_base *base);

/**
 * kt_event_update_time() - a callback is about to arm ktimer timers.
 * @ke: the adapter.
 *
 * Refreshes the base's cached clock (kt_base_update_time()) at every call:
 * the call before it may have come before a wait (a call before the loop
 * started, or an iteration whose callbacks of a higher priority kept the
 * adapter's turn waiting: libevent runs one priority per iteration) or
 * before a long callback. The first call after a turn also queues a turn
 * for the end of the iteration's callbacks of the adapter's priority
 * (event_active()). Inside a ktimer callback it does nothing (the turn
 * keeps its clock and re-aims after it). Owner thread only.
 */
void kt_event_update_time(struct kt_event *ke);

/**
 * kt_event_dispatch() - event_base_dispatch() that ends with the caller's events.
 * @ke: the adapter.
 *
 * Runs the loop one iteration at a time (EVLOOP_ONCE) and returns when
 * nothing but the adapter's event is pending or active: the caller's own
 * events are gone. This is asked before every iteration, the first
 * included: called with none of the caller's events, it returns at once.
 * Pending ktimer timers do not keep it running.
 *
 * Return: 1 when only the adapter's event remained, 0 after
 * event_base_loopbreak(), event_base_loopexit() or a kt_event_close() from
 * a callback, -1 if libevent failed, -EINVAL for NULL or a closed adapter,
 * -EBADFD in a child of fork() that has not called kt_event_fork()
 * (nothing is run).
 */
int kt_event_dispatch(struct kt_event *ke);

/**
 * kt_event_close() - stop driving the base; free the event and the eventfd.
 * @ke: the adapter. NULL, a zero-filled struct never initialized, one whose
 *      kt_event_init() failed and one already closed are ignored (return 0;
 *      closing twice is safe).
 *
 * Removes the base's waker first, waiting for any producer thread inside it
 * (kt_base_set_waker()), so @ke may be freed when this returns - or, from a
 * callback of the adapter's turn (a ktimer callback), once the libevent
 * call running the loop has returned. Pending timers stay pending on the
 * base, which stays the caller's. In a child of fork(), call
 * event_reinit() first (libevent's rule): the event is deleted from the
 * event_base's backend.
 *
 * Return: 0.
 */
int kt_event_close(struct kt_event *ke);

/**
 * kt_event_fork() - give a child of fork() an eventfd of its own.
 * @ke: the adapter, inherited across fork().
 *
 * Call it in the child after event_reinit(@ke->evbase) and before running
 * the loop. It frees the adapter's event, closes the child's copy of the
 * parent's eventfd (the parent's is untouched), makes a new eventfd and
 * event, aims it at the base's next expiry and installs the waker on the
 * base (kt_base_fork()). The base keeps its timers, precise timers and
 * queued operations. Calling it in the parent, or again, does nothing.
 *
 * Return: 0; -EINVAL for NULL or a closed adapter; -EBUSY, nothing
 * touched, for a base the child inherited in the middle of another
 * thread's turn, which it cannot use (kt_base_fork()); or -errno from eventfd()
 * or dup3(), or -ENOMEM if libevent could not make or add the event, and
 * then @ke is closed (kt_event_close() on it does nothing) and the base
 * has no waker.
 */
int kt_event_fork(struct kt_event *ke);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_EVENT_H */
