/* SPDX-License-Identifier: MIT */
/*
 * lib/testing/paused.h - paused time for tests (testonly).
 *
 * A manual-clock base stands still. This driver turns it the way a worker
 * loop would, except that where a real loop would block until the plan's
 * deadline, the driver jumps the clock straight to it: a test of an hour-long
 * timeout finishes at once and still sees an hour on the clock. The clock
 * never goes backwards, whatever is called.
 */
#ifndef KTIMER_LIB_TESTING_PAUSED_H
#define KTIMER_LIB_TESTING_PAUSED_H

#include <stddef.h>
#include <stdint.h>

#include "ktimer/base.h"
#include "ktimer/time.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * kt_paused_turn() - one loop turn on a manual base: run (remote operations,
 * due timers); then, if nothing is queued and a timer is armed, jump the
 * clock to the earliest deadline and fire it.
 * Return: callbacks run; 0 with nothing armed means the loop is idle.
 */
size_t kt_paused_turn(struct kt_base *base);

/*
 * kt_paused_run_until_idle() - turn until nothing is queued or armed
 * (deferrable timers do not count), at most @max_turns turns.
 * Return: callbacks run.
 */
size_t kt_paused_run_until_idle(struct kt_base *base, size_t max_turns);

/*
 * kt_paused_sleep() - let @d pass on a paused clock: every timer due within
 * it fires, at its own due time, before this returns.
 * Return: callbacks run.
 */
size_t kt_paused_sleep(struct kt_base *base, kt_millis d);

#ifdef __cplusplus
}
#endif

#endif
