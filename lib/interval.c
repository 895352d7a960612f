// SPDX-License-Identifier: MIT
/*
 * lib/interval.c - periodic callbacks on the wheel.
 *
 * The schedule lives in the interval (kt__next), not in the timer: the timer
 * is only how we get woken. So a tick that fires late, because the wheel
 * rounded up or the worker was busy, never moves the schedule unless the
 * missed-tick behaviour says so (DELAY). The next tick is armed before the
 * callback runs, so the callback may stop, reset or free the interval.
 */
#include <errno.h>

#include "ktimer/interval.h"
#include "lib/internal.h"

static void on_tick(struct kt_timer *t)
{
	struct kt_interval *iv = kt_container_of(t, struct kt_interval, kt__timer);
	struct kt_base *b = kt__timer_base(t);
	uint64_t now = kt_base_now(b);
	uint64_t due = iv->kt__next;
	uint64_t period = iv->kt__period;

	/*
	 * A tick is missed when it is seen at or after the next one was due.
	 * Ordinary lateness (the wheel's rounding, a short stall) is not a miss,
	 * so an on-time interval keeps its schedule whatever its behaviour.
	 * BURST keeps it too: one tick per turn until back on schedule.
	 */
	if (now < due + period || iv->kt__behavior == KT_MISSED_BURST)
		iv->kt__next = due + period;
	else if (iv->kt__behavior == KT_MISSED_DELAY)
		iv->kt__next = now + period;
	else /* SKIP: the first point of the original schedule after now */
		iv->kt__next = due + period * ((now - due) / period + 1);
	kt_mod_timer(&iv->kt__timer, iv->kt__next);
	iv->kt__fn(iv, due);
}

int kt_interval_setup(struct kt_interval *iv, struct kt_base *b, kt_millis period, kt_interval_fn fn)
{
	if (!iv || !b || !fn || period.ms == 0)
		return -EINVAL;
	kt_timer_setup(&iv->kt__timer, b, on_tick, 0);
	iv->kt__next = 0;
	iv->kt__fn = fn;
	iv->kt__period = period.ms;
	iv->kt__behavior = KT_MISSED_BURST;
	return 0;
}

int kt_interval_start_at(struct kt_interval *iv, uint64_t start_ms)
{
	if (!iv->kt__fn || !iv->kt__period)
		return -EINVAL;
	iv->kt__next = start_ms;
	return kt_mod_timer(&iv->kt__timer, start_ms) < 0 ? -EINVAL : 0;
}

int kt_interval_start(struct kt_interval *iv)
{
	if (!iv->kt__fn || !iv->kt__period)
		return -EINVAL;
	return kt_interval_start_at(iv, kt_base_now(kt__timer_base(&iv->kt__timer)));
}

int kt_interval_reset(struct kt_interval *iv)
{
	if (!iv->kt__fn || !iv->kt__period)
		return -EINVAL;
	return kt_interval_start_at(iv, kt_base_now(kt__timer_base(&iv->kt__timer)) + iv->kt__period);
}

int kt_interval_stop(struct kt_interval *iv) { return kt_timer_delete(&iv->kt__timer); }

int kt_interval_set_missed_tick(struct kt_interval *iv, enum kt_missed_tick behavior)
{
	if (behavior != KT_MISSED_BURST && behavior != KT_MISSED_DELAY && behavior != KT_MISSED_SKIP)
		return -EINVAL;
	iv->kt__behavior = (uint32_t)behavior;
	return 0;
}

kt_millis kt_interval_period(const struct kt_interval *iv)
{
	kt_millis m = {iv->kt__period};

	return m;
}

uint64_t kt_interval_next(const struct kt_interval *iv) { return iv->kt__next; }
