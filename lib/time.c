// SPDX-License-Identifier: MIT
/*
 * lib/time.c - kt_millis and kt_seconds conversions.
 *
 * The rules, from the ntex types these mirror: every conversion saturates,
 * any positive sub-millisecond remainder rounds up (a 1 ns timeout is 1 ms,
 * not 0, because 0 means "disabled" to most callers), negatives become 0.
 */
#include "ktimer/time.h"

#define NS_PER_MS UINT64_C(1000000)
#define NS_PER_S INT64_C(1000000000)

kt_millis kt_millis_from_ns(uint64_t ns)
{
	uint64_t ms = ns / NS_PER_MS + (ns % NS_PER_MS != 0);
	kt_millis m = {ms > KT_MILLIS_MAX ? KT_MILLIS_MAX : (uint32_t)ms};

	return m;
}

kt_millis kt_millis_from_timespec(struct timespec ts)
{
	int64_t sec = (int64_t)ts.tv_sec;
	int64_t nsec = (int64_t)ts.tv_nsec;
	kt_millis zero = {0}, max = {KT_MILLIS_MAX};

	/* Fold any out-of-range tv_nsec into the seconds, without overflow. */
	if (nsec >= NS_PER_S || nsec < 0) {
		int64_t carry = nsec / NS_PER_S;

		nsec %= NS_PER_S;
		if (nsec < 0) {
			nsec += NS_PER_S;
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

kt_millis kt_millis_checked_new(int64_t ms)
{
	kt_millis m = {ms <= 0 ? 0u : ms >= (int64_t)KT_MILLIS_MAX ? KT_MILLIS_MAX : (uint32_t)ms};

	return m;
}

kt_millis kt_millis_from_seconds(kt_seconds s)
{
	kt_millis m = {(uint32_t)s.s * 1000u};

	return m;
}

kt_millis kt_millis_add(kt_millis a, kt_millis b)
{
	kt_millis m = {a.ms > KT_MILLIS_MAX - b.ms ? KT_MILLIS_MAX : a.ms + b.ms};

	return m;
}

kt_millis kt_millis_sub(kt_millis a, kt_millis b)
{
	kt_millis m = {a.ms > b.ms ? a.ms - b.ms : 0u};

	return m;
}

kt_seconds kt_seconds_checked_new(int64_t s)
{
	kt_seconds r = {s <= 0 ? (uint16_t)0 : s >= KT_SECONDS_MAX ? (uint16_t)KT_SECONDS_MAX : (uint16_t)s};

	return r;
}

int kt_millis_is_zero(kt_millis m) { return m.ms == 0; }

int kt_seconds_is_zero(kt_seconds s) { return s.s == 0; }

uint64_t kt_millis_to_ns(kt_millis m) { return (uint64_t)m.ms * NS_PER_MS; }

struct timespec kt_millis_to_timespec(kt_millis m)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(m.ms / 1000u);
	ts.tv_nsec = (long)(m.ms % 1000u) * 1000000L;
	return ts;
}
