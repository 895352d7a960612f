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

#ifdef __cplusplus
}
#endif

#endif
