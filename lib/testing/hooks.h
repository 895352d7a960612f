/* SPDX-License-Identifier: MIT */
/*
 * lib/testing/hooks.h - the producer hook of the cross-thread queue
 * (testonly). Exists only in //lib:ktimer_testing, the library compiled with
 * KT_TESTING; the production and installed libraries do not have it.
 */
#ifndef KTIMER_LIB_TESTING_HOOKS_H
#define KTIMER_LIB_TESTING_HOOKS_H

#include <stddef.h>

#include "ktimer/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * When set, called by producers (kt_remote_*) at KT__HOOK_QUEUED - after the
 * operation is queued and the lock released, before the waker is called -
 * so a test can hold a producer at the critical point and run the owner's
 * kt_base_prepare_wait() there; and at KT__HOOK_LOCKED, with the queue's
 * lock held, so a test can fork() while a producer holds it.
 */
enum { KT__HOOK_QUEUED = 1, KT__HOOK_LOCKED = 2 };
extern void (*kt__remote_test_hook)(int point, struct kt_base *base);

/*
 * Queued operations copied while kt_remote_forget() drops some (each pass
 * copies the queue once): lets a test see that dropping is linear without
 * timing it.
 */
extern size_t kt__remote_moved;

#ifdef __cplusplus
}
#endif

#endif
