/* SPDX-License-Identifier: MIT */
/*
 * ktimer/base.h - the per-worker timer base: one wheel, its cached clocks.
 *
 * A base belongs to one thread. Everything here except kt_base_new() and
 * kt_base_current() must be called from that thread; other threads go through
 * the cross-thread queue of the worker loop.
 *
 * The worker loop, in short:
 *
 *	for (;;) {
 *		int64_t ms = kt_base_next_timeout(base);   // -1: nothing pending
 *		epoll_wait(ep, events, n, ms < 0 ? -1 : (int)min(ms, INT_MAX));
 *		kt_base_run(base);      // refresh the cached clocks, fire what is due
 *		handle_io(events);      // arm, re-arm, delete timers freely
 *	}
 *
 * Call kt_base_run() before handling I/O: the cached clock is what timers are
 * armed against, and it is refreshed only there.
 */
#ifndef KTIMER_BASE_H
#define KTIMER_BASE_H

#include <stddef.h>
#include <stdint.h>

#include "time.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kt_base;

/** enum kt_clock_kind - where a base's time comes from. */
enum kt_clock_kind {
	/* CLOCK_MONOTONIC, read once per kt_base_run(). */
	KT_CLOCK_MONOTONIC = 0,
	/* Stands still until kt_base_advance(): for tests. */
	KT_CLOCK_MANUAL = 1,
};

/**
 * struct kt_base_config - how to build a base.
 * @resolution_ms: the wheel's unit; a power of two in 1..16, 0 means 16.
 * @clock: KT_CLOCK_MONOTONIC or KT_CLOCK_MANUAL.
 * @start_ms: the manual clock's first reading (ignored for monotonic).
 */
struct kt_base_config {
	unsigned resolution_ms;
	enum kt_clock_kind clock;
	uint64_t start_ms;
};

#define KT_DEFAULT_RESOLUTION_MS 16u
#define KT_WHEEL_LEVELS 8u
#define KT_WHEEL_LEVEL_SIZE 64u

/**
 * struct kt_base_stats - counters kept by the owner thread (plain stores).
 * @enqueued: timers linked into a bucket (arms and re-arms that moved).
 * @removed: timers unlinked from a bucket by delete or a moving re-arm.
 * @same_bucket: re-arms that only updated the expiry (the fast path).
 * @fired: callbacks run.
 * @runs: calls to kt_base_run() and kt_base_advance() (wake-ups).
 */
struct kt_base_stats {
	uint64_t enqueued;
	uint64_t removed;
	uint64_t same_bucket;
	uint64_t fired;
	uint64_t runs;
};

/**
 * struct kt_level_info - one row of the granularity table.
 * @granularity_ms: bucket width, the most a timer on this level is rounded up.
 * @min_delay_ms: the shortest delay placed on this level.
 * @max_delay_ms: the longest delay placed on this level (inclusive).
 */
struct kt_level_info {
	uint64_t granularity_ms;
	uint64_t min_delay_ms;
	uint64_t max_delay_ms;
};

/**
 * kt_base_new() - create a timer base for the calling thread.
 * @cfg: configuration, or NULL for a 16 ms monotonic base.
 *
 * Return: the base, or NULL with errno set: EINVAL if the resolution is not a
 * power of two in 1..16 (0 means 16) or the clock kind is unknown, ENOMEM if
 * allocation failed.
 */
struct kt_base *kt_base_new(const struct kt_base_config *cfg);

/**
 * kt_base_free() - destroy a base.
 * @base: the base, or NULL.
 *
 * Pending timers are detached without running: kt_timer_pending() is false
 * for each afterwards, arming one returns -EINVAL until it is set up again,
 * and their memory stays the caller's. Arming a timer that was idle when its
 * base was freed is undefined (the base is gone; ASan reports it). If @base
 * is the calling thread's current base, the current base becomes NULL.
 */
void kt_base_free(struct kt_base *base);

/**
 * kt_base_resolution() - the wheel's unit.
 * @base: the base.
 *
 * Return: the resolution in milliseconds (1, 2, 4, 8 or 16).
 */
unsigned kt_base_resolution(const struct kt_base *base);

/**
 * kt_base_now() - the cached monotonic time of this turn.
 * @base: the base.
 *
 * Return: milliseconds on the base's clock, as of the last kt_base_run() or
 * kt_base_advance(). During a callback fired by kt_base_advance() it equals
 * the due time of the callback's bucket.
 */
uint64_t kt_base_now(const struct kt_base *base);

/**
 * kt_base_system_time() - the cached wall clock.
 * @base: the base.
 *
 * Refreshed by kt_base_run() at most once per 100 ms of monotonic time, so a
 * server can stamp Date headers and logs without a system call per request.
 * It never goes backwards, even if the system clock is stepped back. A manual
 * base reports the wall clock at its creation plus the manual time elapsed.
 *
 * Return: milliseconds since the Unix epoch.
 */
uint64_t kt_base_system_time(const struct kt_base *base);

/**
 * kt_base_run() - one turn: refresh the cached clocks and fire what is due.
 * @base: the base.
 *
 * Callbacks run with their timer already detached. A timer a callback arms
 * for a time that is already due fires on a later turn, never within this
 * call, so a self-re-arming callback cannot spin. A manual base's clock is not
 * moved. Calling it from inside a callback does nothing.
 *
 * Return: the number of callbacks run.
 */
size_t kt_base_run(struct kt_base *base);

/**
 * kt_base_advance() - move a manual clock forward and fire what comes due.
 * @base: a base with KT_CLOCK_MANUAL.
 * @delta: how far to move the clock.
 *
 * Buckets fire in due-time order; during each callback kt_base_now() equals
 * the bucket's due time. Timers armed by callbacks fire within this call if
 * they come due before its end. The clock never moves backwards.
 *
 * Return: the number of callbacks run, or -EINVAL if @base does not have a
 * manual clock or the call comes from inside a callback.
 */
long kt_base_advance(struct kt_base *base, kt_millis delta);

/**
 * kt_base_next_timeout() - how long the worker may sleep.
 * @base: the base.
 *
 * Computed from one occupancy bitmap per wheel level; empty buckets are never
 * scanned. Deferrable timers are ignored: they never cause a wake-up. A
 * precise timer (kt_hrtimer) counts too, its deadline rounded up to the
 * millisecond; kt_base_prepare_wait() gives its exact deadline.
 *
 * Return: milliseconds from kt_base_now() until the earliest occupied bucket
 * (or precise deadline) is due, 0 if it is due already, -1 if no
 * (non-deferrable) timer is pending.
 */
int64_t kt_base_next_timeout(const struct kt_base *base);

/**
 * kt_base_pending_count() - timers pending on the base.
 * @base: the base.
 *
 * Return: the number of pending timers, deferrable ones included.
 */
size_t kt_base_pending_count(const struct kt_base *base);

/**
 * kt_base_get_stats() - the base's counters.
 * @base: the base.
 * @out: where to store them.
 */
void kt_base_get_stats(const struct kt_base *base, struct kt_base_stats *out);

/**
 * kt_base_check() - walk the wheel and verify its invariants.
 * @base: the base.
 *
 * Checks that bitmaps match bucket occupancy, list links are consistent, each
 * timer sits in the bucket its expiry maps to, no bucket is due before the
 * wheel clock, and the pending count matches. O(pending timers): for tests and
 * debug builds.
 *
 * Return: 0 if consistent, otherwise a negative number naming the first
 * violated invariant (see lib/wheel.c).
 */
int kt_base_check(const struct kt_base *base);

/**
 * kt_base_current() - the calling thread's base.
 *
 * Return: the base last given to kt_base_set_current() on this thread, or NULL.
 */
struct kt_base *kt_base_current(void);

/**
 * kt_base_set_current() - set the calling thread's base.
 * @base: the base, or NULL.
 *
 * Used by the kernel-style names in <ktimer/linux.h>.
 */
void kt_base_set_current(struct kt_base *base);

/**
 * kt_wheel_level_info() - the granularity table, computed.
 * @resolution_ms: a valid resolution (1, 2, 4, 8, 16).
 * @level: 0 .. KT_WHEEL_LEVELS - 1.
 * @out: where to store the row.
 *
 * Return: 0, or -EINVAL for an invalid resolution or level.
 */
int kt_wheel_level_info(unsigned resolution_ms, unsigned level, struct kt_level_info *out);

/**
 * kt_wheel_reach_ms() - the longest delay the wheel holds without re-queueing.
 * @resolution_ms: a valid resolution.
 *
 * Longer timers wait at the far end of the wheel and are re-queued until due.
 *
 * Return: the reach in milliseconds, or 0 for an invalid resolution.
 */
uint64_t kt_wheel_reach_ms(unsigned resolution_ms);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_BASE_H */
