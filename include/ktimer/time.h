/* SPDX-License-Identifier: MIT */
/*
 * ktimer/time.h - compact durations for timeouts and configuration.
 *
 * Network deadlines need neither nanoseconds nor centuries. kt_millis is four
 * bytes (about 49.7 days), kt_seconds two bytes (about 18.2 hours), so they
 * fit in connection structs and configuration records without padding.
 *
 * Every conversion saturates instead of wrapping, and any positive
 * sub-millisecond part is rounded up: a short positive timeout stays enabled
 * and never fires early. Zero is the one value that usually means "disabled"
 * (see kt_millis_is_zero() and the deadline helpers of the worker loop).
 * There is deliberately no conversion from nanoseconds to kt_seconds: it would
 * drop the sub-second part.
 */
#ifndef KTIMER_TIME_H
#define KTIMER_TIME_H

#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * struct timespec has two layouts on a 32-bit glibc target: a 32-bit
 * time_t by default, a 64-bit one when the program is built with
 * -D_TIME_BITS=64. The library exports a function for each,
 * kt_millis_from_timespec() and kt_millis_to_timespec() for the default
 * layout, kt_millis_from_timespec64() and kt_millis_to_timespec64() for the
 * 64-bit one, and in a caller built with _TIME_BITS=64 the first two names
 * are bound here to the second two (as glibc binds its own functions), so a
 * caller of either kind gets its own layout's conversion from the same
 * library. Where time_t is 64 bits whatever the options (LP64, musl),
 * both pairs are the same conversion. The *64 names are declared only where
 * the caller's struct timespec is known to be the 64-bit one (LP64, or
 * glibc with a 64-bit time_t); kt_to_millis() and the unsuffixed names
 * suit every caller.
 */
/*
 * glibc says when a 32-bit target has the 64-bit layout: __USE_TIME_BITS64
 * (2.34 on), __USE_TIME64_REDIRECTS (2.39 on, where __USE_TIME_BITS64 is
 * also set on 64-bit targets).
 */
#if (defined(__TIMESIZE) && __TIMESIZE == 64) || (defined(__SIZEOF_LONG__) && __SIZEOF_LONG__ == 8)
#define KT__TIMESPEC64 1
#elif defined(__USE_TIME64_REDIRECTS) || (defined(__USE_TIME_BITS64) && defined(__TIMESIZE) && __TIMESIZE == 32)
#define KT__TIMESPEC64 1
#ifndef KT__TIME64_IMPL
#define KT__TIME64_REDIRECT 1
#endif
#endif
#ifdef KT__TIME64_REDIRECT
#define KT__TIME64_ASM(name) __asm__(#name)
#else
#define KT__TIME64_ASM(name)
#endif

/** struct kt_millis - a duration in milliseconds, 0 .. UINT32_MAX. */
typedef struct kt_millis {
	uint32_t ms;
} kt_millis;

/** struct kt_seconds - a duration in seconds, 0 .. UINT16_MAX. */
typedef struct kt_seconds {
	uint16_t s;
} kt_seconds;

/*
 * KT_MILLIS_MAX, KT_SECONDS_MAX - the longest kt_millis and kt_seconds.
 *
 * UINT32_MAX milliseconds (about 49.7 days) and UINT16_MAX seconds (about
 * 18.2 hours): where the saturating conversions and kt_millis_add() stop
 * instead of wrapping. Arming a timer for KT_MILLIS_MAX is arming it for
 * that long, not "never": by convention a duration of 0 means disabled
 * (kt_millis_is_zero()).
 */
#define KT_MILLIS_MAX UINT32_MAX
#define KT_SECONDS_MAX UINT16_MAX

/*
 * KT_MILLIS(n), KT_SECONDS(n) - a kt_millis or kt_seconds from a number.
 * KT_MILLIS(n) is the kt_millis of n milliseconds, KT_SECONDS(n) the
 * kt_seconds of n seconds. n is converted like an
 * assignment to the field, uint32_t ms or uint16_t s: an integer beyond
 * KT_MILLIS_MAX or KT_SECONDS_MAX wraps, with no saturation and no error.
 * For values from outside the program use the checked constructors,
 * kt_millis_checked_new() and kt_seconds_checked_new().
 */
#ifdef __cplusplus
#define KT_MILLIS(n) (kt_millis{static_cast<uint32_t>(n)})
#define KT_SECONDS(n) (kt_seconds{static_cast<uint16_t>(n)})
#else
#define KT_MILLIS(n) ((kt_millis){(uint32_t)(n)})
#define KT_SECONDS(n) ((kt_seconds){(uint16_t)(n)})
#endif

/**
 * kt_millis_from_ns() - milliseconds from nanoseconds.
 * @ns: the duration in nanoseconds.
 *
 * Return: @ns rounded up to the next millisecond (only 0 stays 0), saturated
 * at KT_MILLIS_MAX.
 */
kt_millis kt_millis_from_ns(uint64_t ns);

/**
 * kt_millis_from_timespec() - milliseconds from a struct timespec.
 * @ts: the duration; tv_nsec may be outside [0, 1e9), the sum is what counts.
 *
 * On a 32-bit glibc target a caller built with _TIME_BITS=64 calls
 * kt_millis_from_timespec64() under this name, which reads its 64-bit
 * time_t: every caller gets the conversion of its own struct timespec.
 *
 * Return: the duration rounded up to the next millisecond, 0 for zero or
 * negative durations, saturated at KT_MILLIS_MAX.
 */
kt_millis kt_millis_from_timespec(struct timespec ts) KT__TIME64_ASM(kt_millis_from_timespec64);

/**
 * kt_millis_checked_new() - milliseconds from a signed integer.
 * @ms: a count of milliseconds, perhaps read from configuration.
 *
 * Return: @ms clamped to [0, KT_MILLIS_MAX]; negative input gives 0
 * (disabled), never a huge value.
 */
kt_millis kt_millis_checked_new(int64_t ms);

/**
 * kt_millis_from_seconds() - widen seconds to milliseconds.
 * @s: the duration. Every kt_seconds value fits.
 *
 * Return: @s * 1000 milliseconds.
 */
kt_millis kt_millis_from_seconds(kt_seconds s);

/**
 * kt_millis_add() - saturating sum.
 * @a: first term.
 * @b: second term.
 *
 * Return: @a + @b, or KT_MILLIS_MAX if that does not fit.
 */
kt_millis kt_millis_add(kt_millis a, kt_millis b);

/**
 * kt_millis_sub() - saturating difference.
 * @a: minuend.
 * @b: subtrahend.
 *
 * Return: @a - @b, or 0 if @b is larger.
 */
kt_millis kt_millis_sub(kt_millis a, kt_millis b);

/**
 * kt_seconds_checked_new() - seconds from a signed integer.
 * @s: a count of seconds.
 *
 * Return: @s clamped to [0, KT_SECONDS_MAX].
 */
kt_seconds kt_seconds_checked_new(int64_t s);

/**
 * kt_millis_is_zero() - whether a duration is zero ("disabled").
 * @m: the duration.
 *
 * Return: 1 if @m is zero, 0 otherwise.
 */
int kt_millis_is_zero(kt_millis m);

/**
 * kt_seconds_is_zero() - whether a duration is zero ("disabled").
 * @s: the duration.
 *
 * Return: 1 if @s is zero, 0 otherwise.
 */
int kt_seconds_is_zero(kt_seconds s);

/**
 * kt_millis_to_ns() - nanoseconds in a duration.
 * @m: the duration.
 *
 * Return: @m in nanoseconds (always fits in 64 bits).
 */
uint64_t kt_millis_to_ns(kt_millis m);

/**
 * kt_millis_to_timespec() - a duration as struct timespec.
 * @m: the duration.
 *
 * On a 32-bit glibc target a caller built with _TIME_BITS=64 calls
 * kt_millis_to_timespec64() under this name, which writes its 64-bit
 * time_t: every caller gets its own struct timespec.
 *
 * Return: a normalized timespec (0 <= tv_nsec < 1e9).
 */
struct timespec kt_millis_to_timespec(kt_millis m) KT__TIME64_ASM(kt_millis_to_timespec64);

#ifdef KT__TIMESPEC64
/**
 * kt_millis_from_timespec64() - kt_millis_from_timespec() of a 64-bit time_t.
 * @ts: the duration, a struct timespec with a 64-bit tv_sec.
 *
 * The function a caller's kt_millis_from_timespec() calls on a 32-bit glibc
 * target when the caller is built with _TIME_BITS=64; where time_t is
 * always 64 bits, the same conversion. Declared only where struct timespec
 * has a 64-bit time_t.
 *
 * Return: as kt_millis_from_timespec().
 */
kt_millis kt_millis_from_timespec64(struct timespec ts);

/**
 * kt_millis_to_timespec64() - kt_millis_to_timespec() of a 64-bit time_t.
 * @m: the duration.
 *
 * The function a caller's kt_millis_to_timespec() calls on a 32-bit glibc
 * target when the caller is built with _TIME_BITS=64; where time_t is
 * always 64 bits, the same conversion. Declared only where struct timespec
 * has a 64-bit time_t.
 *
 * Return: a normalized timespec (0 <= tv_nsec < 1e9) with a 64-bit tv_sec.
 */
struct timespec kt_millis_to_timespec64(kt_millis m);
#endif


#ifdef __cplusplus
} /* extern "C" */

/* C++ has no _Generic: overloads give kt_to_millis() the same meaning. */
static inline kt_millis kt_to_millis(kt_millis m) { return m; }
static inline kt_millis kt_to_millis(kt_seconds s) { return kt_millis_from_seconds(s); }
static inline kt_millis kt_to_millis(struct timespec ts) { return kt_millis_from_timespec(ts); }
#else
/*
 * kt_to_millis()'s kt_millis case. Inline in the header: the installed
 * library exports only kt_ names, so a kt__ function the macro expands to
 * would not link from outside.
 */
static inline kt_millis kt__millis_identity(kt_millis m) { return m; }

/**
 * kt_to_millis() - any supported duration as kt_millis.
 * @x: a kt_millis, kt_seconds or struct timespec.
 *
 * Return: the duration in milliseconds, rounded up and saturated. Any other
 * type is a compile-time error.
 */
#define kt_to_millis(x)                                                        \
	_Generic((x),                                                          \
		kt_millis: kt__millis_identity,                                \
		kt_seconds: kt_millis_from_seconds,                            \
		struct timespec: kt_millis_from_timespec)(x)
#endif

#endif /* KTIMER_TIME_H */
