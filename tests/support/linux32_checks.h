/* SPDX-License-Identifier: MIT */
/*
 * tests/support/linux32_checks.h - the body of tests/core/linux32_c_test.c
 * and tests/core/linux32_initial_c_test.c: <ktimer/linux.h> and the
 * struct timespec conversions as a 32-bit (ILP32) caller sees them, and as
 * a 64-bit one does - jiffies in unsigned long across the 32-bit wrap, one
 * clamp rule for the *_to_jiffies() conversions, and a caller built with
 * _TIME_BITS=64 against a library built with the target's default time_t.
 * tools/check/cross_test runs both on i686, where the wrap and the two
 * time_t layouts are real; on LP64 they check the same contract.
 *
 * The including file may define KT_LINUX_INITIAL_JIFFIES first: then
 * jiffies starts five minutes before the 32-bit wrap, as in the kernel, and
 * every check runs with that offset. Either way the manual clock's start
 * puts jiffies near the wrap. One program, one translation unit (the
 * counters of c_check.h are static).
 */
#ifndef KT_TEST_LINUX32_CHECKS_H
#define KT_TEST_LINUX32_CHECKS_H

/* A caller built with a 64-bit time_t; the library has the default one. */
#define _FILE_OFFSET_BITS 64
#define _TIME_BITS 64

#include <ktimer/ktimer.h>
#include <ktimer/linux.h>

#include <stdint.h>
#include <time.h>

#include "tests/support/c_check.h"

struct dev {
	struct timer_list watchdog;
	unsigned long next; /* the kernel idiom: an expiry kept in unsigned long */
	int fired, early;
};

static void on_watchdog(struct timer_list *t)
{
	struct dev *d = from_timer(d, t, watchdog);

	d->fired++;
	if (time_before(jiffies, d->next))
		d->early++;
	d->next = jiffies + HZ;
	mod_timer(&d->watchdog, d->next);
}

/* Where jiffies is when the base's clock reads 0. */
#ifdef KT_LINUX_INITIAL_JIFFIES
#define JIFFIES_AT_0 UINT64_C(0xfffb6c20)
#else
#define JIFFIES_AT_0 UINT64_C(0)
#endif

static struct kt_base *manual_base(uint64_t start_ms)
{
	struct kt_base_config cfg = {1, KT_CLOCK_MANUAL, start_ms};
	struct kt_base *b = kt_base_new(&cfg);

	kt_base_set_current(b);
	return b;
}

/* A manual base whose get_jiffies_64() starts at @j (not below JIFFIES_AT_0). */
static struct kt_base *base_at_jiffies(uint64_t j) { return manual_base(j - JIFFIES_AT_0); }

/* Advance by @ms in steps a kt_millis holds. */
static void advance(struct kt_base *b, uint64_t ms)
{
	while (ms > 0) {
		uint64_t step = ms > 1000000u ? 1000000u : ms;

		kt_base_advance(b, KT_MILLIS((uint32_t)step));
		ms -= step;
	}
}

/* The comparisons on unsigned long, as the kernel's, whatever jiffies is. */
static void comparisons(void)
{
	unsigned long a = 0UL - 100, c = a + 200;

	CHECK(time_after(c, a));
	CHECK(time_before(a, c));
	CHECK(time_after_eq(c, a));
	CHECK(time_before_eq(a, c));
	CHECK(!time_after(a, c));
	CHECK(!time_before(c, a));
	CHECK(time_after_eq(a, a) && time_before_eq(a, a) && !time_after(a, a));
	/* Half the range away is still after; more is before (it wrapped). */
	CHECK(time_after(a + (~0UL >> 1), a));
	CHECK(time_before(a + (~0UL >> 1) + 2, a));

	uint64_t x = UINT64_MAX - 99, y = x + 200;

	CHECK(time_after64(y, x) && time_before64(x, y));
	CHECK(time_after_eq64(y, x) && time_before_eq64(x, y));
	CHECK(!time_after64(x, y) && !time_before64(y, x));
}

/*
 * The kernel idiom, with jiffies @ms_before_wrap short of the 32-bit wrap:
 * a 2 s timeout is not due at once and fires after 2 s, not before.
 */
static void idiom_at(unsigned long ms_before_wrap)
{
	struct kt_base *b = base_at_jiffies(UINT64_C(0x100000000) - ms_before_wrap);
	struct dev d = {.fired = 0};

	CHECK(b != NULL);
	if (!b)
		return;
	CHECK(jiffies == (unsigned long)(UINT64_C(0x100000000) - ms_before_wrap));
	CHECK(get_jiffies_64() == UINT64_C(0x100000000) - ms_before_wrap);
	CHECK(jiffies == (unsigned long)get_jiffies_64());

	unsigned long timeout = jiffies + 2000;

	CHECK(!time_after(jiffies, timeout));
	CHECK(time_before(jiffies, timeout));
	CHECK(timer_setup(&d.watchdog, on_watchdog, 0) == 0);
	d.next = timeout;
	uint32_t late = kt_base_max_lateness(b, KT_MILLIS(2000));

	CHECK(mod_timer(&d.watchdog, timeout) == 0);
	advance(b, 1);
	CHECK(d.fired == 0); // not after 1 ms
	advance(b, 1998);
	CHECK(d.fired == 0); // nor after 1.999 s
	advance(b, 1 + late);
	CHECK(d.fired == 1);
	CHECK(!time_before(jiffies, timeout));
	/*
	 * A second a time (and the wheel's lateness) for ten minutes, across
	 * the wrap: none early, none lost, no storm of fires at the wrap.
	 */
	uint32_t late1 = kt_base_max_lateness(b, KT_MILLIS(1000));
	int first = d.fired;

	advance(b, 600000);
	CHECK(d.fired - first >= 600000 / (1000 + (int)late1) - 1);
	CHECK(d.fired - first <= 600);
	CHECK(d.early == 0);
	/* An expiry already passed comes due at the next turn, not in 49 days. */
	CHECK(mod_timer(&d.watchdog, jiffies - 5) == 1);
	d.next = jiffies - 5;
	{
		int before = d.fired;

		advance(b, 1 + kt_base_max_lateness(b, KT_MILLIS(1)));
		CHECK(d.fired == before + 1);
	}
	/* Rounded to a whole second, still in the future, across the wrap. */
	{
		unsigned long r = round_jiffies_up(jiffies + 10);

		CHECK(time_after(r, jiffies));
		CHECK(r % HZ == 0);
	}
	del_timer(&d.watchdog);
	kt_base_free(b);
	kt_base_set_current(NULL);
}

/*
 * With KT_LINUX_INITIAL_JIFFIES, jiffies starts at INITIAL_JIFFIES, five
 * minutes before the 32-bit wrap, when the base's clock reads 0; without
 * it, jiffies is the base's clock.
 */
static void initial_jiffies(void)
{
	struct kt_base *b = manual_base(0);

	CHECK(INITIAL_JIFFIES == 0xfffb6c20UL);
	CHECK(get_jiffies_64() == JIFFIES_AT_0);
	CHECK(jiffies == (unsigned long)JIFFIES_AT_0);
	advance(b, 300000);
	CHECK(get_jiffies_64() == JIFFIES_AT_0 + 300000);
	CHECK(kt_base_now(b) == 300000);
	kt_base_free(b);
	kt_base_set_current(NULL);
}

/* One rule for every *_to_jiffies(): negative or 2^31 ms and up is MAX_JIFFY_OFFSET. */
static unsigned long expect_ms(uint64_t ms)
{
	return ms >= UINT64_C(0x80000000) || ms > MAX_JIFFY_OFFSET ? MAX_JIFFY_OFFSET : (unsigned long)ms;
}

static void conversions(void)
{
	static const uint64_t ms[] = {
		0, 1, 999, 1000, 1000000, 0x3ffffffeu, 0x3fffffffu, 0x40000000u, 2147483000u, 0x7fffffffu, 0x80000000u,
		0xffffffffu,
	};
	static const int64_t secs[] = {0, 1, 3, 1073741, 1073742, 2147483, 2147484, 3000000, -1, INT64_MIN};

	CHECK(MAX_JIFFY_OFFSET == (~0UL >> 2) - 1);
	for (unsigned i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
		CHECK(msecs_to_jiffies(ms[i]) == expect_ms(ms[i]));
		CHECK(usecs_to_jiffies(ms[i] * 1000u) == expect_ms(ms[i]));
		/* A microsecond more is one more jiffy: rounded up, then the rule. */
		CHECK(usecs_to_jiffies(ms[i] * 1000u + 1u) == expect_ms(ms[i] + 1u));
	}
	for (unsigned i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
		unsigned long want = secs[i] < 0 ? MAX_JIFFY_OFFSET : expect_ms((uint64_t)secs[i] * 1000u);

		CHECK(secs_to_jiffies(secs[i]) == want);
	}
	CHECK(secs_to_jiffies(-1) == MAX_JIFFY_OFFSET);
	CHECK(msecs_to_jiffies(-1) == MAX_JIFFY_OFFSET);
	CHECK(usecs_to_jiffies(-1) == MAX_JIFFY_OFFSET);
	CHECK(secs_to_jiffies(3000000) == MAX_JIFFY_OFFSET);
	CHECK(usecs_to_jiffies(UINT64_C(0x80000000) * 1000u) == MAX_JIFFY_OFFSET);
	CHECK(msecs_to_jiffies(0x80000000u) == MAX_JIFFY_OFFSET);
	CHECK(secs_to_jiffies(3) == 3000u);

	/* "Forever" stays in the future and does not fire. */
	struct kt_base *b = base_at_jiffies(UINT64_C(0x100000000) - 1000);
	struct dev d = {.fired = 0};

	CHECK(time_after(jiffies + secs_to_jiffies(-1), jiffies));
	CHECK(time_after(jiffies + MAX_JIFFY_OFFSET, jiffies));
	CHECK(timer_setup(&d.watchdog, on_watchdog, 0) == 0);
	d.next = jiffies + secs_to_jiffies(-1);
	CHECK(mod_timer(&d.watchdog, d.next) == 0);
	advance(b, 86400000u); // a day
	CHECK(d.fired == 0);
	CHECK(timer_pending(&d.watchdog) == 1);
	del_timer(&d.watchdog);
	kt_base_free(b);
	kt_base_set_current(NULL);
}

/* Built with _TIME_BITS=64: the conversions read and write this layout. */
static void timespec64(void)
{
	struct timespec ts = {5, 250000000};

	CHECK(sizeof(time_t) == 8);
	CHECK(kt_millis_from_timespec(ts).ms == 5250);
	CHECK(kt_to_millis(ts).ms == 5250);
	ts.tv_sec = 0;
	ts.tv_nsec = 1;
	CHECK(kt_millis_from_timespec(ts).ms == 1);
	ts.tv_sec = -1;
	ts.tv_nsec = 0;
	CHECK(kt_millis_from_timespec(ts).ms == 0);
	ts.tv_sec = (time_t)1 << 33; // no 32-bit time_t holds it
	CHECK(kt_millis_from_timespec(ts).ms == KT_MILLIS_MAX);
	ts.tv_sec = 4294967;
	ts.tv_nsec = 295000000;
	CHECK(kt_millis_from_timespec(ts).ms == KT_MILLIS_MAX);

	struct timespec out = kt_millis_to_timespec(KT_MILLIS(1500));

	CHECK(out.tv_sec == 1 && out.tv_nsec == 500000000);
	out = kt_millis_to_timespec(KT_MILLIS(KT_MILLIS_MAX));
	CHECK(out.tv_sec == 4294967 && out.tv_nsec == 295000000);
#ifdef KT__TIMESPEC64
	/* Where the header declares the *64 names for this layout, they agree. */
	CHECK(kt_millis_from_timespec64(out).ms == KT_MILLIS_MAX);
	out = kt_millis_to_timespec64(KT_MILLIS(2001));
	CHECK(out.tv_sec == 2 && out.tv_nsec == 1000000);
#endif
}

static int run_linux32_checks(void)
{
	comparisons();
	initial_jiffies();
	idiom_at(1000);       // 2^32 - 1000: a second short of the wrap
	idiom_at(300000);     // INITIAL_JIFFIES, where the kernel starts
	idiom_at(1);          // just short of the wrap
	conversions();
	timespec64();
	printf("unsigned long %u bits, time_t %u bits\n", (unsigned)sizeof(unsigned long) * 8,
	       (unsigned)sizeof(time_t) * 8);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}

#endif /* KT_TEST_LINUX32_CHECKS_H */
