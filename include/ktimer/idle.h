/* SPDX-License-Identifier: MIT */
/*
 * ktimer/idle.h - idle tracking with lazy re-arm (ntex's KeepAlive pattern).
 *
 * On a busy connection most activity only pushes the idle deadline further
 * away. Instead of re-arming a timer on every request, kt_idle_touch() stores
 * the turn's cached now in the tracker - one load and one store, no wheel
 * operation. When the tracker's timer fires it compares the deadline
 * (last activity + timeout) with now: if it has passed, the connection is
 * idle and the callback runs; otherwise the timer re-arms itself for the
 * remaining time. A thousand touches within one timeout cost a thousand
 * stores and at most two wheel operations.
 *
 * The price: the idle callback runs up to one wheel granularity after the
 * true deadline (the same bound as a plain timer armed at the last touch).
 */
#ifndef KTIMER_IDLE_H
#define KTIMER_IDLE_H

#include <stdint.h>

#include "base.h"
#include "time.h"
#include "timer.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kt_idle;

/** kt_idle_fn - the tracker saw no activity for its timeout. */
typedef void (*kt_idle_fn)(struct kt_idle *idle);

/** struct kt_idle - embeddable idle tracker; every field is private. */
struct kt_idle {
	struct kt_timer kt__timer;
	const uint64_t *kt__now; /* the base's cached now, for touch() */
	uint64_t kt__last;       /* last activity, ms */
	kt_idle_fn kt__fn;
	uint32_t kt__timeout; /* ms; 0 = disabled */
	uint32_t kt__rearms;  /* lazy re-arms done (for tests and stats) */
};

/**
 * kt_idle_setup() - prepare a tracker (not started).
 * @idle: the tracker.
 * @base: the owner's base.
 * @timeout: idle time that counts as idle; zero disables the tracker.
 * @fn: the callback.
 *
 * Return: 0, -EINVAL for a NULL argument, or -EBUSY if @idle is armed on
 * @base (nothing changed; stop it first). Setting up a tracker armed on
 * another base is undefined, as for kt_timer_setup().
 */
int kt_idle_setup(struct kt_idle *idle, struct kt_base *base, kt_millis timeout, kt_idle_fn fn);

/**
 * kt_idle_start() - record activity now and arm the tracker.
 * @idle: a set-up tracker.
 *
 * A zero timeout leaves it disarmed (disabled).
 *
 * Return: 0, or -EINVAL if NULL, not set up, or its base was freed.
 */
int kt_idle_start(struct kt_idle *idle);

/**
 * kt_idle_touch() - record activity: a store of the cached now.
 * @idle: a started tracker.
 */
static inline void kt_idle_touch(struct kt_idle *idle) { idle->kt__last = *idle->kt__now; }

/**
 * kt_idle_stop() - disarm the tracker.
 * @idle: the tracker.
 *
 * Return: 1 if it was armed, 0 otherwise, -EINVAL for NULL.
 */
int kt_idle_stop(struct kt_idle *idle);

/**
 * kt_idle_pending() - whether the tracker is armed.
 * @idle: the tracker.
 *
 * Return: 1 if armed (started, not stopped, not yet reported idle), 0
 * otherwise (also for NULL).
 */
int kt_idle_pending(const struct kt_idle *idle);

/**
 * kt_idle_set_timeout() - change the timeout; zero disables.
 * @idle: the tracker.
 * @timeout: the new timeout, counted from the last activity. An armed
 *           tracker applies a shorter one at once, a longer one lazily; a
 *           stopped tracker stays stopped until kt_idle_start().
 *
 * Return: 0, or -EINVAL if NULL, not set up, or its base was freed.
 */
int kt_idle_set_timeout(struct kt_idle *idle, kt_millis timeout);

/**
 * kt_idle_deadline() - when the tracker will call its callback, if untouched.
 * @idle: the tracker.
 *
 * Return: last activity + timeout in ms, or UINT64_MAX if disabled (or NULL).
 */
uint64_t kt_idle_deadline(const struct kt_idle *idle);

/**
 * kt_idle_rearms() - lazy re-arms performed so far.
 * @idle: the tracker.
 *
 * Return: how many times the timer fired early and re-armed itself (0 for
 * NULL).
 */
uint32_t kt_idle_rearms(const struct kt_idle *idle);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_IDLE_H */
