// SPDX-License-Identifier: MIT
/*
 * lib/time64.c - the struct timespec conversions for a 64-bit time_t.
 *
 * On a 32-bit glibc target struct timespec has two layouts, and a program
 * built with _TIME_BITS=64 calls these (ktimer/time.h binds its
 * kt_millis_from_timespec() and kt_millis_to_timespec() to them); lib/time.c
 * serves the default layout. This file is compiled with a 64-bit time_t
 * whatever the build's options; where time_t is always 64 bits the two
 * files give the same conversions.
 */
#undef _TIME_BITS
#undef _FILE_OFFSET_BITS
#define _FILE_OFFSET_BITS 64
#define _TIME_BITS 64
#define KT__TIME64_IMPL 1 /* declare the *64 names, bind nothing */
#define KT__TIMESPEC64 1  /* declare them whatever the target */

#include "ktimer/time.h"
#include "lib/time_parts.h"

/*
 * A glibc older than 2.34 has no 64-bit time_t on a 32-bit target: these
 * then convert its one layout, and no header binds a caller to them.
 */

kt_millis kt_millis_from_timespec64(struct timespec ts) { return kt__millis_from_parts((int64_t)ts.tv_sec, (int64_t)ts.tv_nsec); }

struct timespec kt_millis_to_timespec64(kt_millis m)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(m.ms / 1000u);
	ts.tv_nsec = (long)(m.ms % 1000u) * 1000000L;
	return ts;
}
