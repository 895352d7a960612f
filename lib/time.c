// SPDX-License-Identifier: MIT
/*
 * lib/time.c - kt_millis and kt_seconds conversions.
 *
 * The rules, from the ntex types these mirror: every conversion saturates,
 * any positive sub-millisecond remainder rounds up (a 1 ns timeout is 1 ms,
 * not 0, because 0 means "disabled" to most callers), negatives become 0.
 */
/*
 * The default struct timespec of the target: on a 32-bit glibc target a
 * 32-bit time_t whatever the build's options (lib/time64.c serves the
 * 64-bit one).
 */
#undef _TIME_BITS

#include "ktimer/time.h"
#include "lib/time_parts.h"

#define NS_PER_MS UINT64_C(1000000)

kt_millis kt_millis_from_ns(uint64_t ns)
{
	uint64_t ms = ns / NS_PER_MS + (ns % NS_PER_MS != 0);
	kt_millis m = {ms > KT_MILLIS_MAX ? KT_MILLIS_MAX : (uint32_t)ms};

	return m;
}

kt_millis kt_millis_from_timespec(struct timespec ts) { return kt__millis_from_parts((int64_t)ts.tv_sec, (int64_t)ts.tv_nsec); }

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
