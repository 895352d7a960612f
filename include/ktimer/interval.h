/* SPDX-License-Identifier: MIT */
/*
 * ktimer/interval.h - periodic callbacks on the wheel.
 *
 * Ticks are counted from the schedule (start, start + period, ...), so a late
 * wake-up does not push later ticks back. A tick is missed when the worker
 * sees it at or after the time the next tick was due; what happens then is
 * the interval's missed-tick behaviour, as in nuclei:
 *
 *	KT_MISSED_BURST  (default) every missed tick fires, each with its own
 *	                 scheduled @due, up to KT_INTERVAL_BURST_MAX in one
 *	                 turn, until the interval is back on schedule
 *	KT_MISSED_DELAY  the next tick comes one period after the late one: the
 *	                 schedule moves
 *	KT_MISSED_SKIP   missed ticks are dropped: the next tick is the next one
 *	                 on the original schedule after now
 *
 * Ticks fire on the wheel, so each is up to one bucket late (one unit for
 * periods under a level-0 span); the schedule itself never drifts. With
 * BURST, a period shorter than the base's unit (a 1 ms period on a 16 ms
 * base) is kept by delivering the ticks due in a turn together, in schedule
 * order: every tick is delivered, none early, and the interval does not fall
 * behind (one more than KT_INTERVAL_BURST_MAX ticks behind catches up over
 * several turns). With DELAY or SKIP such an interval ticks once per unit,
 * as those behaviours say. For microsecond pacing use kt_hrtimer instead.
 *
 * The callback may stop the interval, reset it, change its period or its
 * behaviour; stop it before freeing its memory (a callback that stops its
 * interval and frees it is fine). Setting up an active interval again is
 * refused: change the period with kt_interval_set_period().
 */
#ifndef KTIMER_INTERVAL_H
#define KTIMER_INTERVAL_H

#include <stdint.h>

#include "base.h"
#include "time.h"
#include "timer.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kt_interval;

/** kt_interval_fn - one tick; @due is the scheduled time of the tick (ms). */
typedef void (*kt_interval_fn)(struct kt_interval *interval, uint64_t due);

/** enum kt_missed_tick - see the top of this header. */
enum kt_missed_tick {
	KT_MISSED_BURST = 0,
	KT_MISSED_DELAY = 1,
	KT_MISSED_SKIP = 2,
};

/*
 * KT_INTERVAL_BURST_MAX - the most ticks one interval delivers in one turn.
 *
 * An interval with KT_MISSED_BURST that fell behind catches up at most this
 * many ticks per turn (64), so one late interval cannot hold a worker for
 * an unbounded number of callbacks; the rest follow on the next turns.
 */
#define KT_INTERVAL_BURST_MAX 64u

/** struct kt_interval - embeddable periodic timer; every field is private. */
struct kt_interval {
	struct kt_timer kt__timer;
	uint64_t kt__next; /* scheduled time of the next tick, ms */
	kt_interval_fn kt__fn;
	int *kt__live; /* while ticking: cleared when the callback stops or resets it */
	uint32_t kt__period; /* ms, never 0 */
	uint32_t kt__behavior;
};

/**
 * kt_interval_setup() - prepare an interval (not started).
 * @iv: the interval.
 * @base: the owner's base.
 * @period: time between ticks; zero is refused (it would be a busy loop).
 * @fn: the callback.
 *
 * Return: 0, -EINVAL for a zero period or a NULL argument, or -EBUSY if @iv
 * is active on @base (started and not stopped; nothing changed: use
 * kt_interval_set_period() to change the period). Setting up an interval
 * active on another base is undefined, as for kt_timer_setup().
 */
int kt_interval_setup(struct kt_interval *iv, struct kt_base *base, kt_millis period, kt_interval_fn fn);

/**
 * kt_interval_start() - start ticking; the first tick is at once.
 * @iv: a set-up interval.
 *
 * "At once" is the next turn of the loop (the wheel never runs a callback
 * inline); its @due is the base's now at this call.
 *
 * Return: 0, or -EINVAL if NULL, not set up, or its base was freed.
 */
int kt_interval_start(struct kt_interval *iv);

/**
 * kt_interval_start_at() - start ticking with the first tick at @start_ms.
 * @iv: a set-up interval.
 * @start_ms: absolute time of the first tick on the base's clock.
 *
 * Return: 0, or -EINVAL if NULL, not set up, or its base was freed.
 */
int kt_interval_start_at(struct kt_interval *iv, uint64_t start_ms);

/**
 * kt_interval_reset() - the next tick is one period from now.
 * @iv: a set-up interval (started or not; it is started).
 *
 * Return: 0, or -EINVAL if NULL, not set up, or its base was freed.
 */
int kt_interval_reset(struct kt_interval *iv);

/**
 * kt_interval_stop() - stop ticking.
 * @iv: the interval.
 *
 * From the interval's own callback it also ends a burst: no further tick of
 * this turn is delivered.
 *
 * Return: 1 if a tick was pending, 0 otherwise, -EINVAL for NULL.
 */
int kt_interval_stop(struct kt_interval *iv);

/**
 * kt_interval_set_period() - change the period.
 * @iv: a set-up interval, started or not (also from its own callback).
 * @period: the new period; zero is refused.
 *
 * An active interval keeps its last scheduled tick and moves the next one to
 * that tick plus the new period (never earlier than the next turn); one
 * started but not yet ticked keeps its first tick; a stopped interval uses
 * the new period when started. The rule holds for any sequence of calls:
 * after an earlier kt_interval_set_period() the last tick is still the one
 * before it, and after kt_interval_reset() the reset's instant counts as the
 * last tick (the next is one new period from it).
 *
 * Return: 0, or -EINVAL for NULL, a zero period, an interval not set up or
 * one whose base was freed.
 */
int kt_interval_set_period(struct kt_interval *iv, kt_millis period);

/**
 * kt_interval_set_missed_tick() - choose the missed-tick behaviour.
 * @iv: the interval.
 * @behavior: KT_MISSED_BURST, KT_MISSED_DELAY or KT_MISSED_SKIP.
 *
 * Return: 0, or -EINVAL for NULL or an unknown behaviour.
 */
int kt_interval_set_missed_tick(struct kt_interval *iv, enum kt_missed_tick behavior);

/**
 * kt_interval_period() - the period.
 * @iv: the interval.
 *
 * Return: the period (0 for NULL).
 */
kt_millis kt_interval_period(const struct kt_interval *iv);

/**
 * kt_interval_next() - when the next tick is scheduled.
 * @iv: the interval.
 *
 * Return: absolute ms of the next scheduled tick (meaningful while started;
 * 0 for NULL).
 */
uint64_t kt_interval_next(const struct kt_interval *iv);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_INTERVAL_H */
