// SPDX-License-Identifier: MIT
/*
 * lib/epoll.c - one worker-loop turn on epoll.
 *
 * Wheel deadlines ride on epoll_wait()'s millisecond timeout: free. A precise
 * deadline needs better than a millisecond, so while a kt_hrtimer is the
 * base's earliest deadline an absolute CLOCK_MONOTONIC timerfd is armed for
 * it and epoll_wait() blocks on that instead. The timerfd is re-armed only
 * when that deadline changes (one timerfd_settime() each time) and disarmed
 * lazily: a stale expiry just causes one early turn that finds nothing due.
 *
 * The turn is nginx's: wait, update the cached time, hand the I/O events to
 * the caller, and run the timers after the caller has handled them - at the
 * start of the next kt_epoll_wait(). So no event of a turn can point at an
 * object a timer callback of that turn freed, and a connection served in a
 * turn has pushed its deadline back before that turn's timers are looked at.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "ktimer/base.h"
#include "ktimer/epoll.h"
#include "ktimer/remote.h"

static void wake_eventfd(void *arg)
{
	struct kt_epoll *ep = arg;
	uint64_t one = 1;

	/* EAGAIN means the counter is already non-zero: the worker will wake. */
	while (write(ep->wakefd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

static void close_fds(struct kt_epoll *ep)
{
	if (ep->epfd >= 0)
		close(ep->epfd);
	if (ep->wakefd >= 0)
		close(ep->wakefd);
	if (ep->timerfd >= 0)
		close(ep->timerfd);
	ep->epfd = ep->wakefd = ep->timerfd = -1;
}

int kt_epoll_init(struct kt_epoll *ep, struct kt_base *base)
{
	struct epoll_event ev;
	int err;

	if (!ep)
		return -EINVAL;
	/* Closed-looking before anything can fail (no base, no descriptor). */
	memset(ep, 0, sizeof(*ep));
	ep->epfd = ep->wakefd = ep->timerfd = -1;
	if (!base || kt_base_clock(base) != KT_CLOCK_MONOTONIC)
		return -EINVAL;
	ep->base = base;
	ep->epfd = epoll_create1(EPOLL_CLOEXEC);
	ep->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ep->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (ep->epfd < 0 || ep->wakefd < 0 || ep->timerfd < 0)
		goto fail;
	ev.events = EPOLLIN;
	ev.data.u64 = KT_EPOLL_TAG_WAKE;
	if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->wakefd, &ev) < 0)
		goto fail;
	ev.data.u64 = KT_EPOLL_TAG_TIMER;
	if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->timerfd, &ev) < 0)
		goto fail;
	kt_base_set_waker(base, wake_eventfd, ep);
	return 0;
fail:
	err = -errno;
	/* No waker was installed: close what was opened, leave base NULL. */
	close_fds(ep);
	ep->base = NULL;
	return err;
}

static void drain_fd(int fd)
{
	uint64_t v;

	while (read(fd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
}

static void arm_timerfd(struct kt_epoll *ep, uint64_t deadline_ns)
{
	struct itimerspec its;

	if (ep->timer_armed_ns == deadline_ns)
		return;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = (time_t)(deadline_ns / 1000000000u);
	its.it_value.tv_nsec = (long)(deadline_ns % 1000000000u);
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1; /* all zero would disarm */
	timerfd_settime(ep->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
	ep->timer_armed_ns = deadline_ns;
	ep->timerfd_arms++;
}

int kt_epoll_wait(struct kt_epoll *ep, struct epoll_event *events, int max)
{
	struct kt_wait_plan plan;
	int timeout, n, out = 0;
	size_t fired;

	if (!ep || !events || max < 1 || ep->epfd < 0)
		return -EINVAL;
	/* A child of fork() before kt_epoll_fork(): the descriptors are the parent's. */
	if (kt_base_forked(ep->base))
		return -EBADFD;
	/*
	 * The previous turn's timers, now that its I/O has been handled. If a
	 * callback ran - a timer's or a remote operation's done callback - return
	 * at once: it may have changed what the caller's loop tests (a stop
	 * flag), and blocking now would hide that.
	 */
	fired = kt_base_run(ep->base);
	/*
	 * A callback closed @ep (kt_epoll_close()): the turn ends here. So it
	 * does in the child of a fork() a callback made, unless the callback
	 * called kt_epoll_fork(): the descriptors are the parent's (a poll
	 * would take its wake-ups and its edge-triggered events).
	 */
	if (!ep->base || kt_base_forked(ep->base))
		return 0;
	if (fired > 0 || kt_base_run_done_calls(ep->base) > 0) {
		/*
		 * Unless the run stopped at its limit (kt_base_set_run_limit())
		 * with due timers left: then returning empty-handed would fire
		 * the rest before any I/O is read. Poll without blocking
		 * instead, so the caller serves its connections between two
		 * slices of the burst (and still looks at its flags at once).
		 */
		if (kt_base_next_timeout(ep->base) != 0)
			return 0;
		plan = (struct kt_wait_plan){KT_WAIT_IMMEDIATE, 0, 0};
	} else {
		plan = kt_base_prepare_wait(ep->base);
	}
	timeout = kt_wait_plan_timeout_ms(ep->base, &plan);

	if (plan.kind == KT_WAIT_UNTIL && plan.precise && timeout > 0) {
		arm_timerfd(ep, plan.deadline_ns);
		timeout = -1; /* the timerfd ends the wait, to the microsecond */
	}
	n = epoll_wait(ep->epfd, events, max, timeout);
	/*
	 * Interrupted (a signal; SIGSTOP/SIGCONT, a debugger): look once more
	 * without blocking. Ending the turn empty-handed would let the next
	 * call run the timers that came due meanwhile before reading the data
	 * that arrived with them - closing clients that did answer in time.
	 */
	if (n < 0 && errno == EINTR)
		n = epoll_wait(ep->epfd, events, max, 0);
	ep->wakeups++;
	if (n < 0 && errno != EINTR)
		return -errno;
	kt_base_update_time(ep->base);
	for (int i = 0; i < n; i++) {
		if (events[i].data.u64 == KT_EPOLL_TAG_WAKE) {
			drain_fd(ep->wakefd);
		} else if (events[i].data.u64 == KT_EPOLL_TAG_TIMER) {
			drain_fd(ep->timerfd);
			ep->timer_armed_ns = 0;
		} else {
			events[out++] = events[i];
		}
	}
	return out;
}

void kt_epoll_wake(struct kt_epoll *ep)
{
	/*
	 * Through the base's waker, not the eventfd directly: the base counts
	 * this call in, so kt_epoll_close() waits for it, and after the close
	 * the waker is gone and nothing is written to a closed (or reused)
	 * descriptor.
	 */
	if (ep && ep->base)
		kt_base_wake(ep->base);
}

/*
 * fork(): the child's copies of the three descriptors name the parent's
 * epoll instance, eventfd and timerfd. Touching them would steal the
 * parent's wake-ups and re-arm its timerfd, so the child gets new ones;
 * dup3() puts the new epoll instance on the old descriptor's number, which
 * a program may have copied. Registering the new eventfd and timerfd on it
 * comes after their own dup3()s: epoll keys a registration by file and
 * number.
 */
int kt_epoll_fork(struct kt_epoll *ep)
{
	struct epoll_event ev;
	int fds[3], err = 0;

	if (!ep || !ep->base || ep->epfd < 0)
		return -EINVAL;
	if (!kt_base_forked(ep->base))
		return 0; /* the parent, or a child that called already */
	/*
	 * No waker until the child's own objects are there. Refused (-EBUSY),
	 * with nothing touched, for a base the child inherited in the middle
	 * of another thread's turn, which it cannot use (kt_base_fork()).
	 */
	err = kt_base_fork(ep->base, NULL, NULL);
	if (err)
		return err;
	fds[0] = epoll_create1(EPOLL_CLOEXEC);
	fds[1] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	fds[2] = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fds[0] < 0 || fds[1] < 0 || fds[2] < 0)
		err = -errno;
	if (!err && (dup3(fds[0], ep->epfd, O_CLOEXEC) < 0 || dup3(fds[1], ep->wakefd, O_CLOEXEC) < 0 ||
		     dup3(fds[2], ep->timerfd, O_CLOEXEC) < 0))
		err = -errno;
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (!err) {
		ev.events = EPOLLIN;
		ev.data.u64 = KT_EPOLL_TAG_WAKE;
		if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->wakefd, &ev) < 0)
			err = -errno;
		ev.data.u64 = KT_EPOLL_TAG_TIMER;
		if (!err && epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->timerfd, &ev) < 0)
			err = -errno;
	}
	if (err) {
		/* Closed, and the base keeps no waker: nothing of the parent's is used. */
		close_fds(ep);
		ep->base = NULL;
		return err;
	}
	ep->timer_armed_ns = 0; /* the new timerfd is disarmed */
	kt_base_fork(ep->base, wake_eventfd, ep);
	return 0;
}

void kt_epoll_close(struct kt_epoll *ep)
{
	/* A zero-filled kt_epoll (init never reached) owns no descriptor. */
	if (!ep || !ep->base)
		return;
	/* Waits for any producer inside wake_eventfd(): see kt_base_set_waker(). */
	kt_base_set_waker(ep->base, NULL, NULL);
	close_fds(ep);
	ep->base = NULL; /* closed: a second close does nothing */
}
