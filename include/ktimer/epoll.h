/* SPDX-License-Identifier: MIT */
/*
 * ktimer/epoll.h - a worker loop turn on Linux epoll, done right once.
 *
 * kt_epoll owns an epoll instance plus two internal descriptors: an eventfd
 * that producers on other threads write to wake the worker (installed as the
 * base's waker), and a timerfd that is armed only while a precise timer
 * (kt_hrtimer) is the base's earliest deadline. Wheel deadlines use
 * epoll_wait()'s millisecond timeout and cost no extra system call.
 *
 * The caller registers its own descriptors on kt_epoll.epfd with any
 * epoll_data except the two reserved tags, KT_EPOLL_TAG_WAKE and
 * KT_EPOLL_TAG_TIMER, and calls kt_epoll_wait() in
 * a loop, handling the events it returns before calling it again:
 *
 *	for (;;) {
 *		int n = kt_epoll_wait(&ep, ev, 64);
 *		for (int i = 0; i < n; i++)
 *			handle(&ev[i]);   // arm, push back, delete, close, free
 *	}
 *
 * Each call runs the timers of the previous turn (after its I/O was
 * handled: nginx's order, see docs/API.md "The worker loop") and returns
 * 0 at once if any callback ran (timer or remote done callback), so the
 * loop sees what they changed; otherwise it
 * plans the wait, waits, updates the cached clocks, and returns the caller's
 * events. When the run stopped at the base's run limit
 * (kt_base_set_run_limit()) with due timers left, it polls without blocking
 * and returns the caller's events instead, so a burst of expiries is spread
 * over turns with the I/O served in between. A timer callback may therefore free an object: no event still to
 * be handled can point at it.
 *
 * Closing from a callback. kt_epoll_close() may be called from any
 * callback, a ktimer callback of the turn included (a shutdown timer): it
 * takes effect at once, and kt_epoll_wait() ends that turn without touching
 * the closed descriptors, returning 0. The struct kt_epoll itself must stay
 * valid until that kt_epoll_wait() has returned; free it after. The same
 * rule holds for every loop adapter (kt_uring, kt_event, kt_uv).
 *
 * fork(). A child of fork() inherits the epoll instance, the eventfd and
 * the timerfd: kernel objects it shares with the parent. Before its first
 * turn the child calls kt_epoll_fork(), which gives it its own (the epoll
 * instance keeps its descriptor number) and keeps its timers; it then
 * registers again, on kt_epoll.epfd, the descriptors it serves (the
 * inherited instance's registrations stay the parent's). Until then
 * kt_epoll_wait() fails with -EBADFD and touches nothing, so the parent's
 * timers and wake-ups stay the parent's. A callback that forks may call
 * kt_epoll_fork() in the child itself, or else the turn that ran it ends
 * there in the child (returning 0) without polling. A child that only
 * calls exec() or exits needs nothing (the descriptors are close-on-exec).
 */
#ifndef KTIMER_EPOLL_H
#define KTIMER_EPOLL_H

#include <stdint.h>
#include <sys/epoll.h>

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * KT_EPOLL_TAG_WAKE, KT_EPOLL_TAG_TIMER - the epoll_data.u64 values of the
 * internal eventfd and timerfd. An event the caller registers on
 * kt_epoll.epfd with either value in epoll_data.u64 (or a pointer or fd in
 * epoll_data whose bits are these) is taken for the internal descriptor's
 * and never returned to the caller.
 */
#define KT_EPOLL_TAG_WAKE UINT64_C(0xFFFFFFFFFFFFFFFF)
#define KT_EPOLL_TAG_TIMER UINT64_C(0xFFFFFFFFFFFFFFFE)

/**
 * struct kt_epoll - one worker's epoll loop state.
 * @epfd: the epoll instance; register your descriptors here, with any
 *        epoll_data but KT_EPOLL_TAG_WAKE and KT_EPOLL_TAG_TIMER.
 * @wakefd: internal eventfd.
 * @timerfd: internal timerfd (CLOCK_MONOTONIC, absolute).
 * @timer_armed_ns: the deadline the timerfd is armed for, 0 if disarmed.
 * @base: the worker's base.
 * @wakeups: epoll_wait() returns so far (turns that blocked or polled).
 * @timerfd_arms: timerfd_settime() calls so far (precise deadlines only).
 */
struct kt_epoll {
	int epfd;
	int wakefd;
	int timerfd;
	uint64_t timer_armed_ns;
	struct kt_base *base;
	uint64_t wakeups;
	uint64_t timerfd_arms;
};

/**
 * kt_epoll_init() - create the epoll instance and internal descriptors.
 * @ep: the state to fill.
 * @base: the worker's base (monotonic clock); becomes its waker's target.
 *
 * Return: 0, -EINVAL for a NULL argument or a manual-clock base, or -errno from epoll_create1(),
 * eventfd(), timerfd_create() or epoll_ctl() (nothing is left open on
 * failure, and @ep, if not NULL, is left closed: kt_epoll_close() on it does
 * nothing).
 */
int kt_epoll_init(struct kt_epoll *ep, struct kt_base *base);

/**
 * kt_epoll_wait() - one loop turn.
 * @ep: the state.
 * @events: where the caller's ready events go.
 * @max: capacity of @events (at least 1).
 *
 * Runs the base (kt_base_run(): remote operations, then the timers due, the
 * previous turn's I/O having been handled); if a callback ran - a timer's
 * (kt_timer, kt_hrtimer, kt_interval, kt_idle, kt_call_after()) or a
 * kt_remote_*() done callback - returns 0 without waiting, unless the run
 * stopped at its limit with due timers left: then it polls without blocking.
 * Otherwise plans the wait (kt_base_prepare_wait()), waits. Either way it
 * then refreshes the cached clocks with kt_base_update_time() so the caller
 * handles I/O with a fresh clock.
 *
 * Return: the number of caller events (0 on a callback or wake-up turn,
 * on the turn whose callback closed @ep, and in the child of a fork() that
 * a callback of the turn made without calling kt_epoll_fork()), -EINVAL
 * for bad arguments or
 * a closed @ep, -EBADFD in a child of fork() that has not called
 * kt_epoll_fork() (nothing is run or touched), or -errno if epoll_wait()
 * failed with anything but EINTR.
 */
int kt_epoll_wait(struct kt_epoll *ep, struct epoll_event *events, int max);

/**
 * kt_epoll_fork() - give a child of fork() kernel objects of its own.
 * @ep: the state, inherited across fork().
 *
 * Call it in the child before its first kt_epoll_wait(). It closes the
 * child's copies of the inherited descriptors (the parent's objects are
 * untouched), makes a new epoll instance on the same descriptor number and
 * a new eventfd and timerfd, and installs the waker on the base
 * (kt_base_fork()). The base keeps its timers, precise timers and queued
 * operations; the child's own descriptors are registered again on
 * @ep->epfd by the caller. Calling it in the parent, or again, does
 * nothing.
 *
 * Return: 0; -EINVAL for NULL or a closed @ep; -EBUSY, nothing touched,
 * for a base the child inherited in the middle of another thread's turn,
 * which it cannot use (kt_base_fork()); or -errno from epoll_create1(), eventfd(), timerfd_create(), dup3() or epoll_ctl(), and
 * then @ep is closed (kt_epoll_close() on it does nothing) and the base has
 * no waker.
 */
int kt_epoll_fork(struct kt_epoll *ep);

/**
 * kt_epoll_wake() - wake the worker from any thread.
 * @ep: the state (NULL, or one never initialized, is ignored).
 *
 * Goes through kt_base_wake(): kt_epoll_close() waits for a wake in
 * progress, and a wake after the close does nothing (the base must still be
 * alive).
 */
void kt_epoll_wake(struct kt_epoll *ep);

/**
 * kt_epoll_close() - close the descriptors and remove the base's waker.
 * @ep: the state. NULL, a zero-filled struct never initialized, one whose
 *      kt_epoll_init() failed and one already closed are ignored (closing
 *      twice is safe).
 *
 * Waits for any producer thread that is inside the waker at this moment
 * (kt_base_set_waker()), so after it returns @ep may be freed even while
 * other threads still call kt_remote_*() on the base (they then queue
 * without waking anyone until a new waker is set). From a callback of
 * the turn (a ktimer callback, a remote operation's done callback), free
 * @ep only after the kt_epoll_wait() running that turn has returned; the
 * turn ends without touching the closed descriptors. In a child of fork()
 * it closes only the child's copies.
 */
void kt_epoll_close(struct kt_epoll *ep);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_EPOLL_H */
