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
 * their microseconds here. A ktimer callback may free anything of the
 * caller's: no completion still to be handled can point at it. A turn whose
 * callbacks ran does not block, so the caller's loop sees what they changed.
 *
 * Setup flags. kt_uring_init() accepts the IORING_SETUP_* flags under
 * which the turn still sleeps in the kernel until a completion, the
 * deadline or a wake-up: SQPOLL, CLAMP, SUBMIT_ALL, COOP_TASKRUN,
 * TASKRUN_FLAG, SQE128, SINGLE_ISSUER and DEFER_TASKRUN. It refuses with
 * -EINVAL IOPOLL (completions are busy-polled: the loop would never
 * sleep), CQE32, the flags that need a parameter it does not take (CQSIZE,
 * SQ_AFF, ATTACH_WQ), R_DISABLED, and any bit it does not know.
 *
 * Closing from a callback. kt_uring_close() may be called from any
 * callback, a ktimer callback of the turn included (a shutdown timer): it
 * takes effect at once (the ring and the eventfd are gone), and
 * kt_uring_wait() ends that turn without touching them, returning 0. The
 * struct kt_uring itself must stay valid until that kt_uring_wait() has
 * returned; free it after. The same rule holds for every loop adapter
 * (kt_epoll, kt_event, kt_uv).
 *
 * fork(). The ring's queues are memory the kernel shares with every
 * process that maps them, so a child of fork() holds the parent's ring,
 * not a copy, and the parent's eventfd. Before its first turn the child
 * calls kt_uring_fork(): a ring of its own of the same size and flags, and
 * an eventfd, with its timers kept. Requests in flight are the parent's
 * (their completions reach the parent), and what was prepared but not
 * submitted is dropped with the shared ring; registered files and buffers
 * are registered again on the new ring. Until then kt_uring_wait() fails
 * with -EBADFD and touches nothing; a callback that forks may call
 * kt_uring_fork() in the child itself, or else the turn that ran it ends
 * there in the child (returning 0) without touching the ring. A child
 * that only calls exec() or exits needs nothing (the descriptors are
 * close-on-exec).
 *
 * Producers on other threads (kt_remote_*()) write the eventfd; the ring
 * keeps a poll request on it (user_data KT_URING_TAG_WAKE, handled inside
 * kt_uring_wait(), never returned).
 *
 * The loop ends when the caller's loop condition says so; kt_uring_alive()
 * is the one that ends with the caller's own requests, pending ktimer timers
 * notwithstanding: it counts the requests the caller prepared on the ring
 * and the final completions returned (those without IORING_CQE_F_MORE). It
 * cannot count requests flagged IOSQE_CQE_SKIP_SUCCESS, and a completion
 * the ring receives without a request of its own (another ring's
 * IORING_OP_MSG_RING) counts as one of the caller's: the count never goes
 * below zero, but it can reach zero with a request still in flight.
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
 * @flags: IORING_SETUP_* flags, or 0. Accepted: IORING_SETUP_SQPOLL,
 *         IORING_SETUP_CLAMP, IORING_SETUP_SUBMIT_ALL,
 *         IORING_SETUP_COOP_TASKRUN, IORING_SETUP_TASKRUN_FLAG,
 *         IORING_SETUP_SQE128, IORING_SETUP_SINGLE_ISSUER and
 *         IORING_SETUP_DEFER_TASKRUN (with these two, call this on the
 *         thread that runs kt_uring_wait(): the kernel lets only the ring's
 *         creator submit). Refused: IORING_SETUP_IOPOLL (completions are
 *         polled, so a wait would never sleep), IORING_SETUP_CQE32 (the
 *         completions are returned as struct io_uring_cqe),
 *         IORING_SETUP_CQSIZE, IORING_SETUP_SQ_AFF and
 *         IORING_SETUP_ATTACH_WQ (they need parameters this call does not
 *         take), IORING_SETUP_R_DISABLED (nothing could be submitted), and
 *         any other bit.
 *
 * Return: 0; -EINVAL for a NULL argument, a manual-clock base or a refused
 * flag; -errno from
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
 * timers or took a wake-up, on the turn whose callback closed @ku, and in
 * the child of a fork() that a callback of the turn made without
 * calling kt_uring_fork(): the turn ends there, the ring untouched),
 * -EINVAL for bad arguments or a closed @ku, -EBADFD in a child of fork()
 * that has not called kt_uring_fork() (nothing is run or touched), or the
 * -errno of a failed io_uring_enter() other than -ETIME and -EINTR.
 */
int kt_uring_wait(struct kt_uring *ku, struct io_uring_cqe *cqes, unsigned max);

/**
 * kt_uring_fork() - give a child of fork() a ring of its own.
 * @ku: the state, inherited across fork().
 *
 * Call it in the child before its first kt_uring_wait(). It unmaps the
 * child's view of the parent's ring and closes the child's copies of its
 * descriptors (the parent's ring, requests and eventfd are untouched), sets
 * up a ring with the same number of entries and the same flags and a new
 * eventfd, and installs the waker on the base (kt_base_fork()). The base
 * keeps its timers, precise timers and queued operations; the caller's
 * requests in flight stay the parent's, so kt_uring_alive() counts none.
 * Calling it in the parent, or again, does nothing.
 *
 * Return: 0; -EINVAL for NULL or a closed @ku; -EBUSY, nothing touched,
 * for a base the child inherited in the middle of another thread's turn,
 * which it cannot use (kt_base_fork()); or -errno from eventfd(),
 * dup3() or io_uring_queue_init(), and then @ku is closed (kt_uring_close()
 * on it does nothing) and the base has no waker.
 */
int kt_uring_fork(struct kt_uring *ku);

/**
 * kt_uring_alive() - whether the caller still has requests on the ring.
 * @ku: the state.
 *
 * Return: 1 while a request the caller prepared (io_uring_get_sqe(), even
 * if not submitted yet) has not had its final completion returned by
 * kt_uring_wait(), 0 otherwise (also for NULL, and for a closed @ku: the
 * kernel cancelled what was in flight, and no completion is returned
 * after kt_uring_close(), so a loop on this call ends when a callback
 * closes the ring).
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
 * timers stay pending on the base, which stays the caller's. From a
 * callback of the turn, free @ku only after the kt_uring_wait() running
 * that turn has returned. In a child of fork() it unmaps and closes only
 * the child's copies; the parent's ring goes on.
 */
void kt_uring_close(struct kt_uring *ku);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_URING_H */
