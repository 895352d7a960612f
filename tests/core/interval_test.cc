// Intervals: first tick at once, ticks counted from the schedule, the three
// missed-tick behaviours, reset, zero period refused. Manual/fake clocks.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "tests/support/harness.h"

using kt_test::FakeClockBase;
using kt_test::ManualBase;

namespace {

struct Ticks {
	kt_interval iv;
	kt_base *base;
	std::vector<uint64_t> due, at;
	int stop_after = -1;
	static void cb(kt_interval *iv, uint64_t due) {
		Ticks *t = kt_container_of(iv, Ticks, iv);
		t->due.push_back(due);
		t->at.push_back(kt_base_now(t->base));
		if (t->stop_after >= 0 && int(t->due.size()) >= t->stop_after)
			kt_interval_stop(iv);
	}
};

} // namespace

TEST(Interval, ZeroPeriodIsEinval) {
	ManualBase b;
	Ticks t;
	EXPECT_EQ(kt_interval_setup(&t.iv, b, KT_MILLIS(0), Ticks::cb), -EINVAL);
	EXPECT_EQ(kt_interval_setup(&t.iv, nullptr, KT_MILLIS(10), Ticks::cb), -EINVAL);
	EXPECT_EQ(kt_interval_setup(&t.iv, b, KT_MILLIS(10), nullptr), -EINVAL);
}

TEST(Interval, FirstTickAtOnceThenEveryPeriodWithoutDrift) {
	Ticks t; // first: kt_base_free() detaches it, still pending
	ManualBase b(16, 0);
	t.base = b;
	ASSERT_EQ(kt_interval_setup(&t.iv, b, KT_MILLIS(1000), Ticks::cb), 0);
	ASSERT_EQ(kt_interval_start(&t.iv), 0);
	EXPECT_EQ(kt_interval_period(&t.iv).ms, 1000u);
	kt_base_advance(b, KT_MILLIS(10 * 1000 + 500));
	ASSERT_EQ(t.due.size(), 11u);
	for (size_t i = 0; i < t.due.size(); i++) {
		EXPECT_EQ(t.due[i], i * 1000) << i; // the schedule, exactly
		EXPECT_GE(t.at[i], t.due[i]);
		EXPECT_LT(t.at[i], t.due[i] + 32) << i; // one bucket of level 1 at most
	}
}

TEST(Interval, StartAtGivenTime) {
	Ticks t; // first: kt_base_free() detaches it, still pending
	ManualBase b(1, 0);
	t.base = b;
	kt_interval_setup(&t.iv, b, KT_MILLIS(100), Ticks::cb);
	kt_interval_start_at(&t.iv, 250);
	kt_base_advance(b, KT_MILLIS(500));
	EXPECT_EQ(t.due, (std::vector<uint64_t>{250, 350, 450}));
}

TEST(Interval, BurstFiresEachMissedTickOnePerTurn) {
	Ticks t; // first: kt_base_free() detaches it, still pending
	FakeClockBase b(1, 0);
	t.base = b;
	kt_interval_setup(&t.iv, b, KT_MILLIS(100), Ticks::cb);
	kt_interval_start(&t.iv);
	b.run_at(1);
	ASSERT_EQ(t.due.size(), 1u);
	b.run_at(550); // ticks at 100..500 were missed
	b.run_at(550);
	b.run_at(551);
	b.run_at(552);
	b.run_at(553);
	b.run_at(554);
	EXPECT_EQ(t.due, (std::vector<uint64_t>{0, 100, 200, 300, 400, 500}));
	b.run_at(600);
	EXPECT_EQ(t.due.back(), 600u); // back on the original schedule
}

TEST(Interval, DelayMovesTheSchedule) {
	Ticks t; // first: kt_base_free() detaches it, still pending
	FakeClockBase b(1, 0);
	t.base = b;
	kt_interval_setup(&t.iv, b, KT_MILLIS(100), Ticks::cb);
	ASSERT_EQ(kt_interval_set_missed_tick(&t.iv, KT_MISSED_DELAY), 0);
	kt_interval_start(&t.iv);
	b.run_at(1);
	b.run_at(350); // tick 100 seen late at 350
	EXPECT_EQ(kt_interval_next(&t.iv), 450u);
	b.run_at(449);
	EXPECT_EQ(t.due.size(), 2u); // never before the moved schedule
	b.run_at(456);               // 450 sits in a level-1 (8 ms) bucket
	EXPECT_EQ(t.due, (std::vector<uint64_t>{0, 100, 450}));
}

TEST(Interval, SkipDropsMissedTicks) {
	Ticks t; // first: kt_base_free() detaches it, still pending
	FakeClockBase b(1, 0);
	t.base = b;
	kt_interval_setup(&t.iv, b, KT_MILLIS(100), Ticks::cb);
	kt_interval_set_missed_tick(&t.iv, KT_MISSED_SKIP);
	kt_interval_start(&t.iv);
	b.run_at(1);
	b.run_at(350); // 100 fires late; 200 and 300 are skipped
	EXPECT_EQ(kt_interval_next(&t.iv), 400u);
	b.run_at(400);
	EXPECT_EQ(t.due, (std::vector<uint64_t>{0, 100, 400}));
}

TEST(Interval, UnknownBehaviourIsEinval) {
	ManualBase b;
	Ticks t;
	kt_interval_setup(&t.iv, b, KT_MILLIS(10), Ticks::cb);
	EXPECT_EQ(kt_interval_set_missed_tick(&t.iv, static_cast<kt_missed_tick>(9)), -EINVAL);
}

TEST(Interval, ResetMakesNextTickOnePeriodFromNow) {
	Ticks t; // first: kt_base_free() detaches it, still pending
	ManualBase b(1, 0);
	t.base = b;
	kt_interval_setup(&t.iv, b, KT_MILLIS(100), Ticks::cb);
	kt_interval_start(&t.iv);
	kt_base_advance(b, KT_MILLIS(130));
	kt_interval_reset(&t.iv);
	EXPECT_EQ(kt_interval_next(&t.iv), 230u);
	kt_base_advance(b, KT_MILLIS(210)); // 330 sits in a level-1 (8 ms) bucket
	EXPECT_EQ(t.due, (std::vector<uint64_t>{0, 100, 230, 330}));
}

TEST(Interval, CallbackMayStopIt) {
	ManualBase b(1, 0);
	Ticks t;
	t.base = b;
	t.stop_after = 3;
	kt_interval_setup(&t.iv, b, KT_MILLIS(10), Ticks::cb);
	kt_interval_start(&t.iv);
	kt_base_advance(b, KT_MILLIS(1000));
	EXPECT_EQ(t.due.size(), 3u);
	EXPECT_EQ(kt_base_pending_count(b), 0u);
}

TEST(Interval, PeriodShorterThanResolutionDoesNotSpin) {
	// 1 ms period on a 16 ms wheel: every turn is late; BURST fires one per
	// turn, so a run never loops.
	Ticks t; // first: kt_base_free() detaches it, still pending
	FakeClockBase b(16, 0);
	t.base = b;
	kt_interval_setup(&t.iv, b, KT_MILLIS(1), Ticks::cb);
	kt_interval_start(&t.iv);
	for (int i = 1; i <= 10; i++)
		EXPECT_LE(b.run_at(uint64_t(i) * 16), 1u);
}

// ---- periods below the unit, catching up, changes from the tick ----------------

// A 1 ms BURST interval on a 16 ms base: the wheel fires at most once per
// unit, so the interval delivers the ticks due in a turn together. After 10 s
// it is on schedule: every tick delivered once, in order, none early.
TEST(Interval, PeriodBelowTheUnitKeepsItsSchedule) {
	FakeClockBase b(16, 0);
	Ticks t;
	t.base = b;
	ASSERT_EQ(kt_interval_setup(&t.iv, b, KT_MILLIS(1), Ticks::cb), 0);
	ASSERT_EQ(kt_interval_start(&t.iv), 0);
	for (int turn = 0; turn < 2000 && b.now < 10000; turn++) {
		int64_t ms = kt_base_next_timeout(b);
		ASSERT_GE(ms, 0);
		b.run_at(b.now + uint64_t(ms > 0 ? ms : 1));
	}
	ASSERT_GE(b.now, 10000u);
	ASSERT_FALSE(t.due.empty());
	for (size_t i = 0; i < t.due.size(); i++) {
		EXPECT_EQ(t.due[i], i) << "every tick once, in order";
		EXPECT_GE(t.at[i], t.due[i]) << "never early";
	}
	// Behind by less than two units, not by seconds.
	EXPECT_GE(t.due.back() + 32, b.now);
	kt_interval_stop(&t.iv);
}

// A period of exactly one unit catches up after a stall, as longer ones do.
TEST(Interval, BurstCatchesUpAfterAStallWithAOneUnitPeriod) {
	FakeClockBase b(16, 0);
	Ticks t;
	t.base = b;
	kt_interval_setup(&t.iv, b, KT_MILLIS(16), Ticks::cb);
	kt_interval_start(&t.iv);
	b.run_at(0);
	b.run_at(1600); // a 1.6 s stall: 100 ticks missed
	for (int turn = 0; turn < 10; turn++)
		b.run_at(b.now + 16);
	EXPECT_EQ(t.due.size(), size_t(b.now / 16 + 1)); // caught up: every tick delivered
	EXPECT_EQ(t.due.back(), b.now / 16 * 16);
	kt_interval_stop(&t.iv);
}

namespace {

struct Retimed {
	kt_interval iv;
	int ticks = 0;
	int setup_result = 1, period_result = 1;
	static void re_setup(kt_interval *iv, uint64_t) {
		Retimed *r = kt_container_of(iv, Retimed, iv);
		if (++r->ticks == 1) // the natural way to change a period - refused
			r->setup_result = kt_interval_setup(iv, kt_base_current(), KT_MILLIS(50), re_setup);
	}
	static void set_period(kt_interval *iv, uint64_t) {
		Retimed *r = kt_container_of(iv, Retimed, iv);
		if (++r->ticks == 1)
			r->period_result = kt_interval_set_period(iv, KT_MILLIS(100));
	}
};

} // namespace

TEST(Interval, SetupFromItsOwnTickIsRefusedAndDoesNotDouble) {
	ManualBase b(1, 0);
	kt_base_set_current(b);
	Retimed r;
	ASSERT_EQ(kt_interval_setup(&r.iv, b, KT_MILLIS(50), Retimed::re_setup), 0);
	kt_interval_start(&r.iv);
	kt_base_advance(b, KT_MILLIS(1000));
	EXPECT_EQ(r.setup_result, -EBUSY);
	EXPECT_EQ(r.ticks, 21); // 0, 50, ..., 1000: not 58
	EXPECT_TRUE(kt_test::CheckOk(b));
	kt_interval_stop(&r.iv);
	kt_base_set_current(nullptr);
}

TEST(Interval, SetPeriodFromItsOwnTick) {
	ManualBase b(1, 0);
	Retimed r;
	ASSERT_EQ(kt_interval_setup(&r.iv, b, KT_MILLIS(50), Retimed::set_period), 0);
	kt_interval_start(&r.iv);
	kt_base_advance(b, KT_MILLIS(1000));
	EXPECT_EQ(r.period_result, 0);
	EXPECT_EQ(r.ticks, 11); // 0, then 100, 200, ..., 1000
	EXPECT_EQ(kt_interval_period(&r.iv).ms, 100u);
	EXPECT_EQ(kt_interval_next(&r.iv), 1100u);
	EXPECT_TRUE(kt_test::CheckOk(b));
	kt_interval_stop(&r.iv);
}

TEST(Interval, SetPeriodWhileStoppedAppliesAtStart) {
	ManualBase b(1, 0);
	Ticks t;
	t.base = b;
	kt_interval_setup(&t.iv, b, KT_MILLIS(10), Ticks::cb);
	EXPECT_EQ(kt_interval_set_period(&t.iv, KT_MILLIS(0)), -EINVAL);
	EXPECT_EQ(kt_interval_set_period(&t.iv, KT_MILLIS(25)), 0);
	EXPECT_FALSE(kt_timer_pending(&t.iv.kt__timer));
	kt_interval_start(&t.iv);
	kt_base_advance(b, KT_MILLIS(100));
	EXPECT_EQ(t.due, (std::vector<uint64_t>{0, 25, 50, 75, 100}));
	kt_interval_stop(&t.iv);
}

// ---- changing the period around the first tick --------------------------------

// kt_interval_set_period() before the first tick. The interval was told to
// start at 5000; changing its period must not move that first tick earlier.
// It fails if set_period() takes "the last scheduled tick" as kt__next -
// old period when no tick has happened: the first tick would move to
// 5000 - 1000 + 100 = 4100, 900 ms before the start it was given. Before
// the first tick set_period() keeps kt__next (the start) and only changes
// the period.
TEST(Interval, SetPeriodBeforeTheFirstTickKeepsTheStart) {
	ManualBase b(16, 1000);
	Ticks t;
	t.base = b;
	ASSERT_EQ(kt_interval_setup(&t.iv, b, KT_MILLIS(1000), Ticks::cb), 0);
	ASSERT_EQ(kt_interval_start_at(&t.iv, 5000), 0);
	ASSERT_EQ(kt_interval_set_period(&t.iv, KT_MILLIS(100)), 0);
	kt_base_advance(b, KT_MILLIS(4300));
	ASSERT_FALSE(t.due.empty());
	EXPECT_EQ(t.due[0], 5000u);
	for (size_t i = 0; i < t.at.size(); i++)
		EXPECT_GE(t.at[i], 5000u) << "tick " << i << " before the start";
	kt_interval_stop(&t.iv);
}

// The same near the clock's origin, where 50 - 100 would wrap: the next tick
// would be scheduled at 2^64 - 40 ms (parked forever) and the interval,
// started and reported active, would never tick.
TEST(Interval, SetPeriodBeforeTheFirstTickNearTimeZeroStillTicks) {
	ManualBase b(16, 0);
	Ticks t;
	t.base = b;
	ASSERT_EQ(kt_interval_setup(&t.iv, b, KT_MILLIS(100), Ticks::cb), 0);
	ASSERT_EQ(kt_interval_start_at(&t.iv, 50), 0);
	ASSERT_EQ(kt_interval_set_period(&t.iv, KT_MILLIS(10)), 0);
	EXPECT_LE(kt_interval_next(&t.iv), 50u);
	kt_base_advance(b, KT_MILLIS(1000));
	EXPECT_GE(t.due.size(), 90u);
	kt_interval_stop(&t.iv);
}

// ---- set_period in sequences -------------------------------------------------

// The documented rule (last tick kept, next = last + new period) for a second
// and third kt_interval_set_period(). It fails if set_period() marks the
// interval "not yet ticked" (as kt_interval_start_at() does): the next
// set_period() would keep the moved tick as if it were a start (100 ms
// period, ticks at 0/100/200, set 1000 -> 1200, right, then set 10 -> 1200).
TEST(Interval, SecondSetPeriodCountsFromTheLastTick) {
	ManualBase b(1, 0);
	Ticks t;
	t.base = b;
	ASSERT_EQ(kt_interval_setup(&t.iv, b, KT_MILLIS(100), Ticks::cb), 0);
	ASSERT_EQ(kt_interval_start(&t.iv), 0);
	kt_base_advance(b, KT_MILLIS(250));
	ASSERT_EQ(t.due, (std::vector<uint64_t>{0, 100, 200}));
	ASSERT_EQ(kt_interval_set_period(&t.iv, KT_MILLIS(1000)), 0);
	EXPECT_EQ(kt_interval_next(&t.iv), 1200u);
	ASSERT_EQ(kt_interval_set_period(&t.iv, KT_MILLIS(10)), 0);
	EXPECT_EQ(kt_interval_next(&t.iv), 210u);
	ASSERT_EQ(kt_interval_set_period(&t.iv, KT_MILLIS(30)), 0);
	EXPECT_EQ(kt_interval_next(&t.iv), 230u);
	ASSERT_EQ(kt_interval_set_period(&t.iv, KT_MILLIS(10)), 0);
	EXPECT_EQ(kt_interval_next(&t.iv), 210u);
	t.due.clear();
	t.at.clear();
	kt_base_advance(b, KT_MILLIS(100)); // to 350: 210, 220, ..., 350
	ASSERT_EQ(t.due.size(), 15u);
	for (size_t i = 0; i < t.due.size(); i++) {
		EXPECT_EQ(t.due[i], 210u + 10 * i);
		EXPECT_GE(t.at[i], t.due[i]) << "tick " << i << " early";
	}
	EXPECT_TRUE(kt_test::CheckOk(b));
	kt_interval_stop(&t.iv);
}

// Before the first tick any number of set_period() calls keep the start; after
// a reset, the reset's instant is the last tick for every later one.
TEST(Interval, SetPeriodSequencesBeforeTheFirstTickAndAfterAReset) {
	ManualBase b(1, 1000);
	Ticks t;
	t.base = b;
	ASSERT_EQ(kt_interval_setup(&t.iv, b, KT_MILLIS(100), Ticks::cb), 0);
	ASSERT_EQ(kt_interval_start_at(&t.iv, 5000), 0);
	ASSERT_EQ(kt_interval_set_period(&t.iv, KT_MILLIS(1000)), 0);
	ASSERT_EQ(kt_interval_set_period(&t.iv, KT_MILLIS(50)), 0);
	EXPECT_EQ(kt_interval_next(&t.iv), 5000u);
	kt_base_advance(b, KT_MILLIS(4060)); // to 5060
	EXPECT_EQ(t.due, (std::vector<uint64_t>{5000, 5050}));
	ASSERT_EQ(kt_interval_reset(&t.iv), 0); // next 5110; the last tick is 5060
	EXPECT_EQ(kt_interval_next(&t.iv), 5110u);
	ASSERT_EQ(kt_interval_set_period(&t.iv, KT_MILLIS(500)), 0);
	EXPECT_EQ(kt_interval_next(&t.iv), 5560u);
	ASSERT_EQ(kt_interval_set_period(&t.iv, KT_MILLIS(20)), 0);
	EXPECT_EQ(kt_interval_next(&t.iv), 5080u);
	kt_base_advance(b, KT_MILLIS(40)); // to 5100
	EXPECT_EQ(t.due, (std::vector<uint64_t>{5000, 5050, 5080, 5100}));
	kt_interval_stop(&t.iv);
}

namespace {

// Changes its period twice from one tick: 1000 then 10.
struct TwiceRetimed {
	kt_interval iv;
	std::vector<uint64_t> due;
	uint64_t next_after = 0;
	static void cb(kt_interval *iv, uint64_t due) {
		TwiceRetimed *r = kt_container_of(iv, TwiceRetimed, iv);
		r->due.push_back(due);
		if (r->due.size() == 3) {
			kt_interval_set_period(iv, KT_MILLIS(1000));
			kt_interval_set_period(iv, KT_MILLIS(10));
			r->next_after = kt_interval_next(iv);
		}
	}
};

} // namespace

TEST(Interval, SecondSetPeriodFromItsOwnTickCountsFromThatTick) {
	ManualBase b(1, 0);
	TwiceRetimed r;
	ASSERT_EQ(kt_interval_setup(&r.iv, b, KT_MILLIS(100), TwiceRetimed::cb), 0);
	ASSERT_EQ(kt_interval_start(&r.iv), 0);
	kt_base_advance(b, KT_MILLIS(230));
	EXPECT_EQ(r.next_after, 210u);
	EXPECT_EQ(r.due, (std::vector<uint64_t>{0, 100, 200, 210, 220, 230}));
	// And once more from outside, after ticks at the new period.
	ASSERT_EQ(kt_interval_set_period(&r.iv, KT_MILLIS(1000)), 0);
	ASSERT_EQ(kt_interval_set_period(&r.iv, KT_MILLIS(5)), 0);
	EXPECT_EQ(kt_interval_next(&r.iv), 235u);
	kt_interval_stop(&r.iv);
}
