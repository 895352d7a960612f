// SPDX-License-Identifier: MIT
/*
 * lib/idle.c - idle tracking with lazy re-arm.
 *
 * touch() is inline in the header and only stores the base's cached now. The
 * timer is armed for last-activity + timeout when the tracker starts; when it
 * fires, the deadline is recomputed from the latest touch: passed means idle,
 * otherwise the timer re-arms for the time that remains. Between two firings
 * the wheel is not touched at all, however busy the connection is.
 */
#include <errno.h>

#include "ktimer/idle.h"
#include "lib/internal.h"

static void on_timer(struct kt_timer *t)
{
	struct kt_idle *idle = kt_container_of(t, struct kt_idle, kt__timer);
	uint64_t deadline = idle->kt__last + idle->kt__timeout;

	if (deadline <= kt_base_now(kt__timer_base(t))) {
		idle->kt__fn(idle);
		return;
	}
	idle->kt__rearms++;
	kt_mod_timer(t, deadline);
}

int kt_idle_setup(struct kt_idle *idle, struct kt_base *b, kt_millis timeout, kt_idle_fn fn)
{
	int err;

	if (!idle || !b || !fn)
		return -EINVAL;
	/* Armed: re-initializing would corrupt its bucket. */
	if (kt__timer_linked(&idle->kt__timer, b))
		return -EBUSY;
	err = kt_timer_setup(&idle->kt__timer, b, on_timer, 0);
	if (err)
		return err;
	idle->kt__now = kt__base_now_ptr(b);
	idle->kt__last = *idle->kt__now;
	idle->kt__fn = fn;
	idle->kt__timeout = timeout.ms;
	idle->kt__rearms = 0;
	return 0;
}

/* Set up, and its base not freed: only then may kt__now be read. */
static bool usable(const struct kt_idle *idle)
{
	return idle && idle->kt__fn && kt__timer_armable(&idle->kt__timer);
}

int kt_idle_start(struct kt_idle *idle)
{
	if (!usable(idle))
		return -EINVAL;
	KT__OWNER_CHECK_TIMER(&idle->kt__timer);
	idle->kt__last = *idle->kt__now;
	if (!idle->kt__timeout) {
		kt_timer_delete(&idle->kt__timer);
		return 0;
	}
	return kt_mod_timer(&idle->kt__timer, idle->kt__last + idle->kt__timeout) < 0 ? -EINVAL : 0;
}

int kt_idle_stop(struct kt_idle *idle)
{
	if (!idle)
		return -EINVAL;
	KT__OWNER_CHECK_TIMER(&idle->kt__timer);
	return kt_timer_delete(&idle->kt__timer);
}

int kt_idle_pending(const struct kt_idle *idle) { return idle && kt_timer_pending(&idle->kt__timer); }

int kt_idle_set_timeout(struct kt_idle *idle, kt_millis timeout)
{
	if (!usable(idle))
		return -EINVAL;
	KT__OWNER_CHECK_TIMER(&idle->kt__timer);
	idle->kt__timeout = timeout.ms;
	if (!timeout.ms) {
		kt_timer_delete(&idle->kt__timer);
		return 0;
	}
	/* A stopped tracker stays stopped; kt_idle_start() uses the new value. */
	if (!kt_timer_pending(&idle->kt__timer))
		return 0;
	/* Shorter timeouts must take effect now; longer ones lazily. */
	return kt_timer_reduce(&idle->kt__timer, idle->kt__last + timeout.ms) < 0 ? -EINVAL : 0;
}

uint64_t kt_idle_deadline(const struct kt_idle *idle)
{
	return idle && idle->kt__timeout ? idle->kt__last + idle->kt__timeout : UINT64_MAX;
}

uint32_t kt_idle_rearms(const struct kt_idle *idle) { return idle ? idle->kt__rearms : 0; }
