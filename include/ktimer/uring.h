/* SPDX-License-Identifier: MIT */
/*
 * ktimer/uring.h - a worker loop turn on io_uring (//:ktimer_uring, liburing).
 *
 * kt_uring owns an io_uring and an eventfd. The caller prepares its own
 * requests on kt_uring.ring (io_uring_get_sqe()) with any user_data but
 * KT_URING_TAG_WAKE, and calls kt_uring_wait() in a loop, handling the
 * completions it returns before calling it again:
 *
 *	for (;;) {
 *		int n = kt_uring_wait(&ku, cqe, 64);
 *		for (int i = 0; i < n; i++)
 *			handle(&cqe[i]);   // arm, push back, delete, close, free
 *	}
 *
 * One call is one turn in nginx's order (docs/API.md, "The worker loop"):
 * run the timers of the previous turn (its completions have been handled),
 * plan the wait, submit the caller's requests and wait in the same system
 * call - for a completion, the base's next deadline, or a producer's
 * wake-up - then update the base's cached clock and return the
 * completions. The wait's timeout is io_uring's own (nanoseconds, on
 * CLOCK_MONOTONIC, the base's clock), so precise timers (kt_hrtimer) keep
 * their microseconds here. A ktimer callback may free anything: no
 * completion still to be handled can point at it. A turn whose callbacks
 * ran does not block, so the caller's loop sees what they changed.
 *
 * Producers on other threads (kt_remote_*()) write the eventfd; the ring
 * keeps a poll request on it (user_data KT_URING_TAG_WAKE, handled inside
 * kt_uring_wait(), never returned).
 *
 * The loop ends when the caller's loop condition says so; kt_uring_alive()
 * is the one that ends with the caller's own requests, pending ktimer timers
 * notwithstanding: it counts the requests the caller prepared on the ring
 * and the final completions returned (those without IORING_CQE_F_MORE). It
 * cannot count requests flagged IOSQE_CQE_SKIP_SUCCESS.
 */
#ifndef KTIMER_URING_H
#define KTIMER_URING_H

#include <liburing.h>
#include <stdint.h>

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * KT_URING_TAG_WAKE - the user_data the adapter's own requests carry.
 *
 * The adapter polls its eventfd with this user_data (all ones); completions
 * that carry it are the adapter's and never reach the caller's handler, so
 * a program must not use it as the user_data of its own requests.
 */
#define KT_URING_TAG_WAKE UINT64_C(0xFFFFFFFFFFFFFFFF)

/**
 * struct kt_uring - one worker's io_uring loop state.
 * @ring: the ring; prepare your requests here.
 * @base: the worker's base.
 * @wakefd: the eventfd producers write (the base's waker).
 * @wake_armed: the poll request on @wakefd is in flight.
 * @seen_tail: the ring's SQE count already accounted for.
 * @inflight: the caller's requests whose final completion is still to come.
 * @waits: io_uring_enter() calls that blocked (turns that waited).
 * @fired: ktimer callbacks run so far.
 */
struct kt_uring {
	struct io_uring ring;
	struct kt_base *base;
	int wakefd;
	int wake_armed;
	unsigned seen_tail;
	uint64_t inflight;
	uint64_t waits;
	uint64_t fired;
};

/**
 * kt_uring_init() - set up the ring and the eventfd, become the base's waker.
 * @ku: the state to fill.
 * @base: the worker's base (monotonic clock).
 * @entries: the ring's submission queue size (io_uring_queue_init()).
 * @flags: IORING_SETUP_* flags, or 0. IORING_SETUP_CQE32 is refused (the
 *         completions are returned as struct io_uring_cqe).
 *
 * Return: 0; -EINVAL for a NULL argument, a manual-clock base or IORING_SETUP_CQE32; -errno from
 * eventfd(); or what io_uring_queue_init() reports, the kernel's refusal
 * when io_uring is unavailable among them: -ENOSYS (a kernel built without
 * io_uring), -EPERM (disabled by the kernel.io_uring_disabled sysctl or a
 * seccomp filter, as in many containers), -ENOMEM (locked memory limit).
 * Nothing is left open on failure, and @ku (if not NULL) is left closed:
 * kt_uring_close() on it does nothing.
 */
int kt_uring_init(struct kt_uring *ku, struct kt_base *base, unsigned entries, unsigned flags);

/**
 * kt_uring_wait() - one loop turn.
 * @ku: the state.
 * @cqes: where the caller's completions are copied.
 * @max: capacity of @cqes (at least 1); more stay in the ring for the next
 *       call, which then does not block.
 *
 * Runs the base (kt_base_run()); plans the wait (kt_base_prepare_wait());
 * submits every prepared request and, unless a callback ran (a timer's, or
 * a kt_remote_*() done callback, which kt_base_run() applied), a request was
 * already complete or the plan says otherwise, waits for one completion at
 * most until the base's next deadline; refreshes the base's cached clock
 * (kt_base_update_time()); copies the caller's completions out and marks
 * them seen.
 *
 * Return: the number of completions copied (0 on a turn that only ran
 * timers or took a wake-up), -EINVAL for bad arguments or a closed @ku, or
 * the -errno of a failed io_uring_enter() other than -ETIME and -EINTR.
 */
int kt_uring_wait(struct kt_uring *ku, struct io_uring_cqe *cqes, unsigned max);

/**
 * kt_uring_alive() - whether the caller still has requests on the ring.
 * @ku: the state.
 *
 * Return: 1 while a request the caller prepared (io_uring_get_sqe(), even
 * if not submitted yet) has not had its final completion returned by
 * kt_uring_wait(), 0 otherwise (also for NULL).
 */
int kt_uring_alive(const struct kt_uring *ku);

/**
 * kt_uring_close() - remove the base's waker, tear down the ring and eventfd.
 * @ku: the state. NULL, a zero-filled struct never initialized, one whose
 *      kt_uring_init() failed and one already closed are ignored (closing
 *      twice is safe).
 *
 * Waits for any producer thread inside the waker (kt_base_set_waker()), so
 * @ku may be freed afterwards. The kernel cancels requests still in flight
 * as the ring goes away; a buffer a request may still write to is the
 * caller's to keep until its completion (or to cancel first). Pending
 * timers stay pending on the base, which stays the caller's.
 */
void kt_uring_close(struct kt_uring *ku);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_URING_H */
