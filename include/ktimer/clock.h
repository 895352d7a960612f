/* SPDX-License-Identifier: MIT */
/*
 * ktimer/clock.h - a base that reads the server's own cached clock.
 *
 * A server that already keeps a cached millisecond clock (nginx's
 * ngx_current_msec, refreshed once per event-loop iteration) wants its timers
 * to fire by that clock: a timer armed for "cached now + 5000" fires on the
 * first turn whose cached now has reached it, exactly when the server's own
 * timer code would have fired it, not a few hundred microseconds sooner by a
 * fresher CLOCK_MONOTONIC reading. A KT_CLOCK_MANUAL base could be advanced
 * to that clock, but kt_base_advance() fires everything due in one call;
 * a base with a clock source is a KT_CLOCK_MONOTONIC base in every other
 * respect (kt_base_run(), kt_base_update_time(), the wait plan).
 */
#ifndef KTIMER_CLOCK_H
#define KTIMER_CLOCK_H

#include <stdint.h>

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * kt_clock_source_fn - a monotonic millisecond clock the caller keeps.
 * @arg: the argument given to kt_base_set_clock_source().
 */
typedef uint64_t (*kt_clock_source_fn)(void *arg);

/**
 * kt_base_set_clock_source() - read the caller's clock instead of
 * CLOCK_MONOTONIC.
 * @base: a KT_CLOCK_MONOTONIC base with no pending timers.
 * @read_ms: called wherever the base would read CLOCK_MONOTONIC (each
 *           kt_base_run() and kt_base_update_time(), kt_wait_plan_timeout_ms(),
 *           precise-timer arming), or NULL to go back to CLOCK_MONOTONIC.
 * @arg: passed to @read_ms.
 *
 * The base adopts the source's first reading at once, even if it is earlier
 * than its cached now (nothing is pending, so nothing can fire early by it).
 * Later readings must not decrease; a smaller one is ignored wherever the
 * base reads the source (a precise timer armed then counts from the cached
 * now, a wait plan is measured from it). A reading past 2^44 ms (557 years)
 * is taken as 2^44 ms - a source in nanoseconds or a negative value cast to
 * unsigned, by mistake - and the base then stands at its clock's limit for
 * good: it fires what is due by then and waits for nothing later (see "The
 * clock's limit" in <ktimer/base.h>). Readings are whole milliseconds, so precise timers
 * on such a base fire by the millisecond. A source that stands still (a
 * server that refreshes its clock once per loop iteration) holds every
 * expiry with it: nothing fires until the source moves past it. So does a
 * run limit's @max_us (kt_base_set_run_limit()), measured on this clock: a
 * source that stands still during kt_base_run() never ends it by time;
 * bound such a run by @max_callbacks.
 *
 * Return: 0; -EINVAL if @base is NULL or has a manual clock (it is driven by
 * kt_base_advance()); -EBUSY if timers are pending on it (their placement
 * depends on the old clock), operations queued for it by other threads
 * (kt_remote_mod()'s expiry is on the old clock) wait for its next turn, or
 * the call comes from one of its callbacks (nothing is changed).
 */
int kt_base_set_clock_source(struct kt_base *base, kt_clock_source_fn read_ms, void *arg);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_CLOCK_H */
