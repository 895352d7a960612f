/* SPDX-License-Identifier: MIT */
/*
 * lib/testing/time_source.h - replace a monotonic base's clock (tests only).
 *
 * A KT_CLOCK_MANUAL base steps through due buckets one at a time in
 * kt_base_advance(). To test what kt_base_run() does on a real worker - one
 * late wake-up firing several buckets in one batch, callbacks seeing the
 * turn's now - tests give a KT_CLOCK_MONOTONIC base a clock they control.
 * Unit tests never sleep.
 */
#ifndef KTIMER_LIB_TESTING_TIME_SOURCE_H
#define KTIMER_LIB_TESTING_TIME_SOURCE_H

#include <stdint.h>

#include "ktimer/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * kt__base_set_time_source() - read @source(@arg) instead of CLOCK_MONOTONIC
 * in kt_base_run(). The base adopts the source's reading at once, so call it
 * on a base with no pending timers. Later readings must not decrease (the
 * base ignores a smaller one). NULL restores the system clock.
 */
void kt__base_set_time_source(struct kt_base *base, uint64_t (*source)(void *), void *arg);

/*
 * kt__base_advance_to_ns() - move a manual clock to an absolute time in ns,
 * firing what comes due on the way, each at its due time (precise deadlines
 * exactly). A time in the past leaves the clock where it is.
 * Return: callbacks run, or -EINVAL for a monotonic base or from a callback.
 */
long kt__base_advance_to_ns(struct kt_base *base, uint64_t target_ns);

/*
 * Test hook for the cross-thread protocol: when set, called by producers
 * (kt_remote_*) at KT__HOOK_QUEUED - after the operation is queued and the
 * lock released, before the waker is called - so a test can hold a producer
 * at the critical point and run the owner's prepare_wait() there.
 */
enum { KT__HOOK_QUEUED = 1 };
extern void (*kt__remote_test_hook)(int point, struct kt_base *base);

#ifdef __cplusplus
}
#endif

#endif
