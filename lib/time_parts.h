/* SPDX-License-Identifier: MIT */
/*
 * lib/time_parts.h - a struct timespec's fields as kt_millis, shared by
 * lib/time.c (the target's default time_t) and lib/time64.c (a 64-bit
 * one): the rule is one, the layouts two.
 */
#ifndef KT_LIB_TIME_PARTS_H
#define KT_LIB_TIME_PARTS_H

#include <stdint.h>

#include "ktimer/time.h"

/*
 * Seconds and nanoseconds (tv_nsec may be outside [0, 1e9)) as kt_millis:
 * rounded up, 0 for zero or negative, saturated at KT_MILLIS_MAX.
 */
static inline kt_millis kt__millis_from_parts(int64_t sec, int64_t nsec)
{
	const int64_t ns_per_s = INT64_C(1000000000);
	kt_millis zero = {0}, max = {KT_MILLIS_MAX};

	/* Fold any out-of-range tv_nsec into the seconds, without overflow. */
	if (nsec >= ns_per_s || nsec < 0) {
		int64_t carry = nsec / ns_per_s;

		nsec %= ns_per_s;
		if (nsec < 0) {
			nsec += ns_per_s;
			carry--;
		}
		if ((carry > 0 && sec > INT64_MAX - carry) || (carry < 0 && sec < INT64_MIN - carry))
			return carry > 0 ? max : zero;
		sec += carry;
	}
	if (sec < 0)
		return zero;
	/* KT_MILLIS_MAX is about 4.3 million seconds; beyond that, saturate. */
	if ((uint64_t)sec > KT_MILLIS_MAX / 1000u + 1u)
		return max;
	return kt_millis_from_ns((uint64_t)sec * 1000000000u + (uint64_t)nsec);
}

#endif /* KT_LIB_TIME_PARTS_H */
