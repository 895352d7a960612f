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
 * Return: the number of caller events (0 on a callback or wake-up turn),
 * -EINVAL for bad arguments or a closed @ep, or -errno if epoll_wait()
 * failed with anything but EINTR.
 */
int kt_epoll_wait(struct kt_epoll *ep, struct epoll_event *events, int max);

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
 * without waking anyone until a new waker is set).
 */
void kt_epoll_close(struct kt_epoll *ep);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_EPOLL_H */
