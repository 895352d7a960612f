/* SPDX-License-Identifier: MIT */
/*
 * lib/testing/time_source.h - test seams for a base's clock (testonly).
 *
 * A KT_CLOCK_MANUAL base steps through due buckets one at a time in
 * kt_base_advance(). To test what kt_base_run() does on a real worker - one
 * late wake-up firing several buckets in one batch, callbacks seeing the
 * turn's now - tests give a KT_CLOCK_MONOTONIC base a clock they control.
 * Unit tests never sleep.
 *
 * Not part of the library users get: //lib:testing is testonly, and the
 * installed library exports kt_ names only.
 */
#ifndef KTIMER_LIB_TESTING_TIME_SOURCE_H
#define KTIMER_LIB_TESTING_TIME_SOURCE_H

#include <stdint.h>

#include "ktimer/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * kt__base_set_time_source() - read @source(@arg) (milliseconds) instead of
 * CLOCK_MONOTONIC. The base adopts the source's reading at once, so call it
 * on a base with no pending timers. Later readings must not decrease (the
 * base ignores a smaller one). NULL restores the system clock.
 */
void kt__base_set_time_source(struct kt_base *base, uint64_t (*source)(void *), void *arg);

/*
 * kt__base_advance_to_ns() - move a manual clock to an absolute time in ns,
 * firing what comes due on the way, each at its due time (precise deadlines
 * exactly). A time in the past leaves the clock where it is. (The library's
 * own kt_base_advance() is this with a relative delay.)
 * Return: callbacks run, or -EINVAL for a monotonic base or from a callback.
 */
long kt__base_advance_to_ns(struct kt_base *base, uint64_t target_ns);

#ifdef __cplusplus
}
#endif

#endif
