// SPDX-License-Identifier: MIT
/*
 * lib/interval.c - periodic callbacks on the wheel.
 *
 * The schedule lives in the interval (kt__next), not in the timer: the timer
 * is only how we get woken. So a tick that fires late, because the wheel
 * rounded up or the worker was busy, never moves the schedule unless the
 * missed-tick behaviour says so (DELAY). The next tick is armed before the
 * callback runs, so the callback may stop, reset or free the interval.
 *
 * Why several ticks per callback of the timer: the wheel fires a timer armed
 * for a time already due on the next tick, not at once (a callback that
 * re-arms for "now" must not spin). An interval that delivered one tick per
 * wheel tick could never catch up when its period is at most one unit: a
 * 1 ms interval on a 16 ms base would fall 15 ms further behind every turn.
 * So a BURST interval delivers every tick that is due, in order, up to
 * KT_INTERVAL_BURST_MAX per turn. Between two deliveries it must know whether
 * the callback stopped, reset or freed (after stopping) the interval; the
 * callback cannot be asked, so the interval points at a flag on this frame's
 * stack that those calls clear.
 */
#include <errno.h>

#include "ktimer/interval.h"
#include "lib/internal.h"

/*
 * kt__behavior holds the missed-tick behaviour in its low byte and, while an
 * interval is started but has not ticked yet, IV_FIRST: then there is no
 * "last tick" for kt_interval_set_period() to keep, and the start stays.
 */
#define IV_FIRST 0x100u
#define IV_BEHAVIOR(iv) ((iv)->kt__behavior & 0xffu)

/* Stop any burst in progress: the schedule was changed from the callback. */
static void end_burst(struct kt_interval *iv)
{
	if (iv->kt__live) {
		*iv->kt__live = 0;
		iv->kt__live = NULL;
	}
}

/* The tick after @due, by the missed-tick behaviour, seen at @now. */
static uint64_t next_tick(const struct kt_interval *iv, uint64_t due, uint64_t now)
{
	uint64_t period = iv->kt__period;

	/*
	 * A tick is missed when it is seen at or after the next one was due.
	 * Ordinary lateness (the wheel's rounding, a short stall) is not a miss,
	 * so an on-time interval keeps its schedule whatever its behaviour.
	 * BURST keeps it too, delivering the missed ticks.
	 */
	if (now < due + period || IV_BEHAVIOR(iv) == KT_MISSED_BURST)
		return due + period;
	if (IV_BEHAVIOR(iv) == KT_MISSED_DELAY)
		return now + period;
	/* SKIP: the first point of the original schedule after now */
	return due + period * ((now - due) / period + 1);
}

static void on_tick(struct kt_timer *t)
{
	struct kt_interval *iv = kt_container_of(t, struct kt_interval, kt__timer);
	uint64_t now = kt_base_now(kt__timer_base(t));
	int live = 1;

	iv->kt__live = &live;
	iv->kt__behavior &= ~IV_FIRST;
	for (unsigned n = 1;; n++) {
		uint64_t due = iv->kt__next;
		uint64_t next = next_tick(iv, due, now);

		iv->kt__next = next;
		kt_mod_timer(&iv->kt__timer, next);
		iv->kt__fn(iv, due);
		if (!live)
			return; /* stopped, reset or re-timed: iv may even be freed */
		/* Only BURST can leave the next tick due already. */
		if (next > now || n >= KT_INTERVAL_BURST_MAX)
			break;
	}
	iv->kt__live = NULL;
}

/* Set up, and its base not freed: only then may the base be read. */
static bool usable(const struct kt_interval *iv)
{
	return iv && iv->kt__fn && iv->kt__period && kt__timer_armable(&iv->kt__timer);
}

int kt_interval_setup(struct kt_interval *iv, struct kt_base *b, kt_millis period, kt_interval_fn fn)
{
	int err;

	if (!iv || !b || !fn || period.ms == 0)
		return -EINVAL;
	/* Active (its tick armed; also inside its own callback): refuse. */
	if (kt__timer_linked(&iv->kt__timer, b))
		return -EBUSY;
	err = kt_timer_setup(&iv->kt__timer, b, on_tick, 0);
	if (err)
		return err;
	iv->kt__next = 0;
	iv->kt__fn = fn;
	iv->kt__live = NULL;
	iv->kt__period = period.ms;
	iv->kt__behavior = KT_MISSED_BURST;
	return 0;
}

/*
 * Make @next the next tick. @first: it is a first tick, with no tick before
 * it (start, start_at). Otherwise (reset, set_period) kt__next - kt__period
 * stays the last tick, which the next set_period() keeps: setting IV_FIRST
 * there would make every later set_period() keep a "start" that is not one.
 */
static int schedule(struct kt_interval *iv, uint64_t next, bool first)
{
	end_burst(iv);
	iv->kt__next = next;
	if (first)
		iv->kt__behavior |= IV_FIRST;
	else
		iv->kt__behavior &= ~IV_FIRST;
	return kt_mod_timer(&iv->kt__timer, next) < 0 ? -EINVAL : 0;
}

int kt_interval_start_at(struct kt_interval *iv, uint64_t start_ms)
{
	if (!usable(iv))
		return -EINVAL;
	KT__OWNER_CHECK_TIMER(&iv->kt__timer);
	return schedule(iv, start_ms, true);
}

int kt_interval_start(struct kt_interval *iv)
{
	if (!usable(iv))
		return -EINVAL;
	KT__OWNER_CHECK_TIMER(&iv->kt__timer);
	return kt_interval_start_at(iv, kt_base_now(kt__timer_base(&iv->kt__timer)));
}

int kt_interval_reset(struct kt_interval *iv)
{
	if (!usable(iv))
		return -EINVAL;
	KT__OWNER_CHECK_TIMER(&iv->kt__timer);
	/* Now stands for the last tick: a later set_period() counts from it. */
	return schedule(iv, kt_base_now(kt__timer_base(&iv->kt__timer)) + iv->kt__period, false);
}

int kt_interval_stop(struct kt_interval *iv)
{
	if (!iv)
		return -EINVAL;
	KT__OWNER_CHECK_TIMER(&iv->kt__timer);
	end_burst(iv);
	return kt_timer_delete(&iv->kt__timer);
}

int kt_interval_set_period(struct kt_interval *iv, kt_millis period)
{
	uint64_t last;

	if (!usable(iv) || period.ms == 0)
		return -EINVAL;
	KT__OWNER_CHECK_TIMER(&iv->kt__timer);
	if (!kt_timer_pending(&iv->kt__timer) && !iv->kt__live) {
		iv->kt__period = period.ms; /* stopped: used at the next start */
		return 0;
	}
	if (iv->kt__behavior & IV_FIRST) {
		iv->kt__period = period.ms; /* no tick yet: the start stays */
		return 0;
	}
	/* The tick last scheduled stays; the next one follows the new period. */
	last = iv->kt__next - iv->kt__period;
	iv->kt__period = period.ms;
	return schedule(iv, last + period.ms, false);
}

int kt_interval_set_missed_tick(struct kt_interval *iv, enum kt_missed_tick behavior)
{
	if (!iv || (behavior != KT_MISSED_BURST && behavior != KT_MISSED_DELAY && behavior != KT_MISSED_SKIP))
		return -EINVAL;
	iv->kt__behavior = (iv->kt__behavior & IV_FIRST) | (uint32_t)behavior;
	return 0;
}

kt_millis kt_interval_period(const struct kt_interval *iv)
{
	kt_millis m = {iv ? iv->kt__period : 0};

	return m;
}

uint64_t kt_interval_next(const struct kt_interval *iv) { return iv ? iv->kt__next : 0; }
