// SPDX-License-Identifier: MIT
/*
 * lib/event.c - a ktimer base driven by a libevent event_base.
 *
 * One persistent event reads the waker's eventfd and carries the aim as its
 * timeout. libevent re-schedules a persistent event's timeout by itself
 * whenever the event runs, so the turn re-aims every time it runs, rather
 * than only when the deadline changed; that is one heap update in libevent
 * per turn, not per timer operation.
 *
 * Cross-thread wake-ups use an eventfd rather than event_active() from the
 * producer's thread: that would need libevent's locking (evthread), which
 * the caller's event_base may not have.
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ktimer/base.h"
#include "ktimer/event.h"
#include "ktimer/remote.h"

#define NOT_AIMED UINT64_MAX

static void wake(void *arg)
{
	struct kt_event *ke = arg;
	uint64_t one = 1;

	/* EAGAIN: the counter is already non-zero, the loop will wake anyway. */
	while (write(ke->wakefd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

/* Aim the event's timeout at the plan's deadline, or remove it. */
static void aim(struct kt_event *ke)
{
	struct kt_wait_plan plan = kt_base_prepare_wait(ke->base);
	struct timeval tv = {0, 0};
	struct timespec ts;
	uint64_t now, left;

	if (plan.kind == KT_WAIT_INDEFINITE) {
		event_remove_timer(ke->ev);
		ke->aimed_ns = NOT_AIMED;
		return;
	}
	if (plan.kind == KT_WAIT_UNTIL) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		left = plan.deadline_ns > now ? plan.deadline_ns - now : 0;
		left = (left + 999) / 1000; /* microseconds, rounded up */
		tv.tv_sec = (time_t)(left / 1000000);
		tv.tv_usec = (suseconds_t)(left % 1000000);
	}
	event_add(ke->ev, &tv); /* IMMEDIATE: a zero timeout, due at once */
	ke->aimed_ns = plan.kind == KT_WAIT_UNTIL ? plan.deadline_ns : 0;
}

static void turn(evutil_socket_t fd, short what, void *arg)
{
	struct kt_event *ke = arg;
	uint64_t v;
	size_t fired;

	/*
	 * A child of fork() before kt_event_fork(): the eventfd is the
	 * parent's, and reading it would take the parent's wake-up. Leave it,
	 * and take the event out of the child's loop (event_reinit() gave the
	 * child a backend of its own), so that it neither steals nor spins.
	 */
	if (kt_base_forked(ke->base)) {
		event_del(ke->ev);
		return;
	}
	if (what & EV_READ)
		while (read(fd, &v, sizeof(v)) < 0 && errno == EINTR)
			;
	ke->queued = 0;
	ke->in_turn = 1;
	fired = kt_base_run(ke->base);
	ke->in_turn = 0;
	ke->turns++;
	ke->fired += fired;
	ke->empty_turns += fired == 0;
	/* A callback closed @ke (kt_event_close()): its event is gone. */
	if (ke->ev)
		aim(ke);
}

int kt_event_init(struct kt_event *ke, struct event_base *evbase, struct kt_base *base)
{
	int err;

	if (!ke)
		return -EINVAL;
	/* Closed-looking before anything can fail: no event is kt_event_close()'s mark. */
	ke->ev = NULL;
	ke->wakefd = -1;
	ke->base = NULL;
	if (!evbase || !base || kt_base_clock(base) != KT_CLOCK_MONOTONIC)
		return -EINVAL;
	ke->evbase = evbase;
	ke->base = base;
	ke->queued = ke->in_turn = 0;
	ke->turns = ke->fired = ke->empty_turns = 0;
	ke->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ke->wakefd < 0)
		return -errno;
	ke->ev = event_new(evbase, ke->wakefd, EV_READ | EV_PERSIST, turn, ke);
	if (!ke->ev || event_add(ke->ev, NULL) < 0) {
		err = -ENOMEM;
		goto fail;
	}
	aim(ke);
	kt_base_set_waker(base, wake, ke);
	return 0;
fail:
	if (ke->ev)
		event_free(ke->ev);
	close(ke->wakefd);
	ke->ev = NULL;
	ke->wakefd = -1;
	ke->base = NULL;
	return err;
}

void kt_event_update_time(struct kt_event *ke)
{
	/* Inside the turn there is nothing to do: the turn re-aims after it. */
	if (ke->in_turn || !ke->ev || kt_base_forked(ke->base))
		return;
	/*
	 * Every call reads the clock, a turn queued or not. The call that
	 * queued it may have come before a wait - the program's own call
	 * before the loop started, or an iteration whose callbacks of a
	 * higher priority kept the turn waiting (libevent runs one priority
	 * per iteration) - or before a long callback: no hook tells. One vDSO
	 * read and a gathering per callback that arms, tens of nanoseconds.
	 */
	kt_base_update_time(ke->base);
	if (ke->queued)
		return;
	ke->queued = 1;
	/* Runs after the callbacks already active at this priority. */
	event_active(ke->ev, 0, 0);
}

/*
 * Only the adapter's own event is added, and nothing is active: the
 * caller's events are gone. libevent 2.1 counts an event once for its
 * descriptor and once more while it has a timeout.
 */
static bool only_ours(const struct kt_event *ke)
{
	int ours = 1 + (event_pending(ke->ev, EV_TIMEOUT, NULL) != 0);

	return event_base_get_num_events(ke->evbase, EVENT_BASE_COUNT_ADDED) <= ours &&
	       event_base_get_num_events(ke->evbase, EVENT_BASE_COUNT_ACTIVE) == 0;
}

int kt_event_dispatch(struct kt_event *ke)
{
	if (!ke || !ke->ev)
		return -EINVAL;
	if (kt_base_forked(ke->base))
		return -EBADFD;
	/*
	 * Asked before every iteration, the first included: with none of the
	 * caller's events there is nothing to wait for, and an iteration would
	 * block until the next ktimer deadline or a producer's wake-up.
	 */
	while (!only_ours(ke)) {
		int r = event_base_loop(ke->evbase, EVLOOP_ONCE);

		if (r != 0)
			return r;
		/* Closed from a callback, or the loop was told to stop. */
		if (!ke->ev || event_base_got_break(ke->evbase) || event_base_got_exit(ke->evbase))
			return 0;
	}
	return 1;
}

/*
 * fork(): after event_reinit() the child's event_base has a backend of its
 * own, with the adapter's event on it - but on the eventfd both processes
 * share. The child gets a new eventfd on the old one's number and a new
 * event for it; the parent's eventfd is never read here.
 */
int kt_event_fork(struct kt_event *ke)
{
	int fd, err = 0;

	if (!ke || !ke->ev)
		return -EINVAL;
	if (!kt_base_forked(ke->base))
		return 0; /* the parent, or a child that called already */
	/*
	 * No waker until the child's own objects are there. Refused (-EBUSY),
	 * with nothing touched, for a base the child inherited in the middle
	 * of another thread's turn, which it cannot use (kt_base_fork()).
	 */
	err = kt_base_fork(ke->base, NULL, NULL);
	if (err)
		return err;
	event_free(ke->ev);
	ke->ev = NULL;
	fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fd < 0 || dup3(fd, ke->wakefd, O_CLOEXEC) < 0)
		err = -errno;
	if (fd >= 0)
		close(fd);
	if (!err) {
		ke->ev = event_new(ke->evbase, ke->wakefd, EV_READ | EV_PERSIST, turn, ke);
		if (!ke->ev || event_add(ke->ev, NULL) < 0)
			err = -ENOMEM;
	}
	if (err) {
		/* Closed, and the base keeps no waker. */
		if (ke->ev)
			event_free(ke->ev);
		ke->ev = NULL;
		close(ke->wakefd);
		ke->wakefd = -1;
		ke->base = NULL;
		return err;
	}
	ke->queued = 0;
	kt_base_fork(ke->base, wake, ke);
	aim(ke);
	return 0;
}

int kt_event_close(struct kt_event *ke)
{
	if (!ke || !ke->ev)
		return 0;
	/*
	 * Also from a callback of the turn: libevent lets a callback free the
	 * event it runs for, and turn() looks at nothing of the adapter's but
	 * @ke after kt_base_run() (see there).
	 */
	/* No producer is inside wake() after this, and none will enter it. */
	kt_base_set_waker(ke->base, NULL, NULL);
	event_free(ke->ev);
	close(ke->wakefd);
	ke->ev = NULL; /* closed: a second close does nothing */
	ke->wakefd = -1;
	return 0;
}
