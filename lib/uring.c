// SPDX-License-Identifier: MIT
/*
 * lib/uring.c - one worker-loop turn on io_uring.
 *
 * Submitting and waiting are one io_uring_enter(): the caller's requests go
 * out with the wait, and the wait's timeout is the base's next deadline,
 * relative, in nanoseconds, measured by the kernel on CLOCK_MONOTONIC - the
 * base's clock - from a moment after our clock read, so the wait cannot end
 * before the deadline. (IORING_FEAT_EXT_ARG, Linux 5.11, passes it without
 * a timeout request; liburing falls back to one on older kernels.)
 *
 * The waker writes an eventfd on which the ring keeps a one-shot poll
 * request: it carries no buffer, so tearing the ring down with the request
 * in flight leaves nothing of ours for the kernel to write to.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "ktimer/base.h"
#include "ktimer/remote.h"
#include "ktimer/uring.h"

static void wake(void *arg)
{
	struct kt_uring *ku = arg;
	uint64_t one = 1;

	/* EAGAIN: the counter is already non-zero, the worker will wake. */
	while (write(ku->wakefd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

/*
 * The setup flags a ring may have here. The turn blocks in io_uring_enter()
 * for a completion or the deadline, and copies struct io_uring_cqe out; a
 * flag is accepted only if that holds under it and kt_uring_init()'s two
 * arguments can express it. Refused: IOPOLL (completions are busy-polled,
 * the wait never sleeps: a 300 ms timer would take hundreds of thousands of
 * turns), CQE32 (larger completions), CQSIZE, SQ_AFF and ATTACH_WQ (each
 * needs a parameter these arguments do not carry), R_DISABLED (nothing can
 * be submitted until the caller enables the ring), and every flag this
 * file does not know.
 */
#define ACCEPTED_FLAGS                                                                                       \
	(IORING_SETUP_SQPOLL | IORING_SETUP_CLAMP | IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN |    \
	 IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN)

int kt_uring_init(struct kt_uring *ku, struct kt_base *base, unsigned entries, unsigned flags)
{
	int err;

	if (!ku)
		return -EINVAL;
	/*
	 * Closed-looking before anything can fail: kt_uring_close() after a
	 * failed init must find nothing to close. A NULL base is that mark (a
	 * zero-filled struct has it too; its wakefd, 0, could be stdin).
	 */
	memset(ku, 0, sizeof(*ku));
	ku->wakefd = -1;
	if (!base || kt_base_clock(base) != KT_CLOCK_MONOTONIC || (flags & ~ACCEPTED_FLAGS))
		return -EINVAL;
	ku->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ku->wakefd < 0)
		return -errno;
	err = io_uring_queue_init(entries, &ku->ring, flags);
	if (err < 0) {
		close(ku->wakefd);
		ku->wakefd = -1;
		return err;
	}
	ku->base = base;
	ku->seen_tail = ku->ring.sq.sqe_tail;
	kt_base_set_waker(base, wake, ku);
	return 0;
}

/* Keep a poll request on the eventfd; 0, or -EBUSY if the ring is full. */
static int arm_wake(struct kt_uring *ku)
{
	struct io_uring_sqe *sqe;

	if (ku->wake_armed)
		return 0;
	sqe = io_uring_get_sqe(&ku->ring);
	if (!sqe) {
		/* The caller filled the queue: send it on its way to make room. */
		io_uring_submit(&ku->ring);
		sqe = io_uring_get_sqe(&ku->ring);
		if (!sqe)
			return -EBUSY;
	}
	io_uring_prep_poll_add(sqe, ku->wakefd, POLLIN);
	io_uring_sqe_set_data64(sqe, KT_URING_TAG_WAKE);
	ku->wake_armed = 1;
	ku->seen_tail++; /* ours: not one of the caller's requests */
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Submit without waiting. Under IORING_SETUP_DEFER_TASKRUN the kernel
 * posts completions only when the ring's task asks for events, so a turn
 * that does not block asks (one io_uring_enter()); otherwise a submit with
 * nothing prepared is no system call at all.
 */
static int submit_only(struct kt_uring *ku)
{
	int r = (ku->ring.flags & IORING_SETUP_DEFER_TASKRUN) ? io_uring_submit_and_get_events(&ku->ring)
							      : io_uring_submit(&ku->ring);

	return r < 0 ? r : 0;
}

/* Submit what is prepared and wait as the plan says; 0 or -errno. */
static int submit_and_wait(struct kt_uring *ku, const struct kt_wait_plan *plan, int block)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts;
	uint64_t now;
	int r;

	if (!block || plan->kind == KT_WAIT_IMMEDIATE || io_uring_cq_ready(&ku->ring))
		return submit_only(ku);
	if (plan->kind == KT_WAIT_UNTIL) {
		now = mono_ns();
		if (plan->deadline_ns <= now)
			return submit_only(ku);
		ts.tv_sec = (long long)((plan->deadline_ns - now) / 1000000000u);
		ts.tv_nsec = (long long)((plan->deadline_ns - now) % 1000000000u);
		r = io_uring_submit_and_wait_timeout(&ku->ring, &cqe, 1, &ts, NULL);
	} else {
		r = io_uring_submit_and_wait(&ku->ring, 1);
	}
	ku->waits++;
	return r == -ETIME || r == -EINTR || r >= 0 ? 0 : r;
}

int kt_uring_wait(struct kt_uring *ku, struct io_uring_cqe *cqes, unsigned max)
{
	struct io_uring_cqe *cqe;
	struct kt_wait_plan plan;
	unsigned head, seen = 0, out = 0;
	size_t fired;
	bool ran;
	int r;

	if (!ku || !cqes || max < 1 || !ku->base)
		return -EINVAL;
	/*
	 * A child of fork() before kt_uring_fork(): the ring's memory is the
	 * parent's (shared mappings), and so is the eventfd. Touch neither.
	 */
	if (kt_base_forked(ku->base))
		return -EBADFD;
	/* The previous turn's timers, now that its completions were handled. */
	fired = kt_base_run(ku->base);
	ku->fired += fired;
	/*
	 * A callback closed @ku (kt_uring_close()): the ring is gone, the turn
	 * ends. So it does in the child of a fork() a callback made, unless
	 * the callback called kt_uring_fork(): the ring is the parent's (its
	 * completions would be taken from the queue both processes map).
	 */
	if (!ku->base || kt_base_forked(ku->base))
		return 0;
	/*
	 * A callback that ran (a timer's, or a remote operation's done callback)
	 * may have changed what the caller's loop tests: do not block.
	 */
	ran = fired > 0 || kt_base_run_done_calls(ku->base) > 0;
	plan = kt_base_prepare_wait(ku->base);
	/* Requests the caller prepared since the last turn (ours are skipped). */
	ku->inflight += ku->ring.sq.sqe_tail - ku->seen_tail;
	ku->seen_tail = ku->ring.sq.sqe_tail;
	r = arm_wake(ku);
	if (r == 0)
		r = submit_and_wait(ku, &plan, !ran);
	kt_base_update_time(ku->base);
	io_uring_for_each_cqe(&ku->ring, head, cqe) {
		if (cqe->user_data == KT_URING_TAG_WAKE) {
			uint64_t v;

			while (read(ku->wakefd, &v, sizeof(v)) < 0 && errno == EINTR)
				;
			ku->wake_armed = 0; /* re-armed by the next turn */
		} else {
			if (out == max)
				break;
			cqes[out++] = *cqe;
			/* One the caller did not prepare (another ring's
			 * IORING_OP_MSG_RING) cannot take the count below 0. */
			if (!(cqe->flags & IORING_CQE_F_MORE) && ku->inflight > 0)
				ku->inflight--;
		}
		seen++;
	}
	io_uring_cq_advance(&ku->ring, seen);
	return r < 0 && out == 0 ? r : (int)out;
}

int kt_uring_alive(const struct kt_uring *ku)
{
	/*
	 * Prepared since the last turn, or submitted and not yet complete. A
	 * closed ring has none: the kernel cancelled what was in flight, and
	 * no kt_uring_wait() returns a completion again (a loop on this call
	 * whose callback closed the ring must end).
	 */
	return ku && ku->base && (ku->inflight > 0 || ku->ring.sq.sqe_tail != ku->seen_tail);
}

/*
 * fork(): the child's ring is mapped from the parent's memory and its
 * eventfd is the parent's. The child drops its mappings and descriptor
 * (the parent's ring is untouched: it keeps its own mappings, descriptor
 * and requests) and sets up a ring of the same size and flags, and a new
 * eventfd on the old one's number.
 */
int kt_uring_fork(struct kt_uring *ku)
{
	unsigned entries, flags;
	int fd, err = 0;

	if (!ku || !ku->base)
		return -EINVAL;
	if (!kt_base_forked(ku->base))
		return 0; /* the parent, or a child that called already */
	/*
	 * No waker until the child's own objects are there. Refused (-EBUSY),
	 * with nothing touched, for a base the child inherited in the middle
	 * of another thread's turn, which it cannot use (kt_base_fork()).
	 */
	err = kt_base_fork(ku->base, NULL, NULL);
	if (err)
		return err;
	entries = ku->ring.sq.ring_entries;
	flags = ku->ring.flags;
	io_uring_queue_exit(&ku->ring);
	fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fd < 0 || dup3(fd, ku->wakefd, O_CLOEXEC) < 0)
		err = -errno;
	if (fd >= 0)
		close(fd);
	if (!err)
		err = io_uring_queue_init(entries, &ku->ring, flags);
	if (err < 0) {
		/* Closed (its ring is gone), and the base keeps no waker. */
		close(ku->wakefd);
		ku->wakefd = -1;
		ku->base = NULL;
		return err;
	}
	/* The parent's requests stay the parent's; none is in this ring. */
	ku->inflight = 0;
	ku->wake_armed = 0;
	ku->seen_tail = ku->ring.sq.sqe_tail;
	kt_base_fork(ku->base, wake, ku);
	return 0;
}

void kt_uring_close(struct kt_uring *ku)
{
	/* Never initialized (zero-filled), init failed, or closed already. */
	if (!ku || !ku->base)
		return;
	/* No producer is inside wake() after this, and none will enter it. */
	kt_base_set_waker(ku->base, NULL, NULL);
	io_uring_queue_exit(&ku->ring);
	close(ku->wakefd);
	ku->wakefd = -1;
	ku->base = NULL;
}
