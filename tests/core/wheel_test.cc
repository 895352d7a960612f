// The wheel and the kt_timer API: arming, re-arming, firing, deferrable
// timers, one edge case per test name. Lazy timers are in wheel_lazy_test.cc,
// the thread's hot base (kt_mod_timer()'s shortcut) in wheel_hotbase_test.cc.
// Manual or fake clocks only; nothing here sleeps.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/harness.h"

using kt_test::drain;
using kt_test::FakeClockBase;
using kt_test::Fire;
using kt_test::kResolutions;
using kt_test::Logged;
using kt_test::ManualBase;
using kt_test::lateness_bound;

namespace {

// One manual base with one logged timer (id 1): the setup most tests here
// share. Members are destroyed timer first, then the base.
struct OneTimer {
	ManualBase b;
	std::vector<Fire> log;
	Logged t;
	explicit OneTimer(unsigned res = 16, uint64_t start = 0) : b(res, start) { t.setup(b, 1, &log); }
};

} // namespace

// ---- arming ---------------------------------------------------------------

TEST(Timer, NodeIsAtMost48Bytes) { EXPECT_LE(sizeof(kt_timer), 48u); }

TEST(Timer, SetupRejectsNullAndUnknownFlags) {
	ManualBase b;
	kt_timer t;
	EXPECT_EQ(kt_timer_setup(nullptr, b, Logged::cb, 0), -EINVAL);
	EXPECT_EQ(kt_timer_setup(&t, nullptr, Logged::cb, 0), -EINVAL);
	EXPECT_EQ(kt_mod_timer(&t, 100), -EINVAL);
	EXPECT_EQ(kt_timer_setup(&t, b, nullptr, 0), -EINVAL);
	EXPECT_EQ(kt_timer_arm(&t, KT_MILLIS(5)), -EINVAL);
	EXPECT_EQ(kt_add_timer(&t, 5), -EINVAL);
	EXPECT_EQ(kt_timer_setup(&t, b, Logged::cb, 0x80), -EINVAL);
	EXPECT_EQ(kt_timer_reduce(&t, 5), -EINVAL);
	EXPECT_FALSE(kt_timer_pending(&t));
	EXPECT_EQ(kt_base_pending_count(b), 0u);
}

TEST(Timer, ZeroFilledTimerRefusesToArm) {
	kt_timer t{};
	EXPECT_EQ(kt_mod_timer(&t, 100), -EINVAL);
	EXPECT_EQ(kt_timer_arm(&t, KT_MILLIS(1)), -EINVAL);
	EXPECT_EQ(kt_timer_delete(&t), 0);
	EXPECT_FALSE(kt_timer_pending(&t));
}

TEST(Timer, ModReturnsWhetherItWasPending) {
	OneTimer one;
	auto &[b, log, t] = one;
	EXPECT_EQ(kt_mod_timer(&t.timer, 500), 0);
	EXPECT_EQ(kt_mod_timer(&t.timer, 600), 1);
	EXPECT_EQ(kt_timer_expires(&t.timer), 600u);
	EXPECT_EQ(kt_timer_delete(&t.timer), 1);
	EXPECT_EQ(kt_timer_delete(&t.timer), 0); // deleting an idle timer
	EXPECT_EQ(kt_mod_timer(&t.timer, 600), 0);
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(Timer, ZeroDelayFiresOnNextTickNotInline) {
	for (unsigned res : kResolutions) {
		OneTimer one(res, 1000);
		auto &[b, log, t] = one;
		kt_timer_arm(&t.timer, KT_MILLIS(0));
		EXPECT_TRUE(log.empty());
		EXPECT_EQ(kt_base_run(b), 0u); // nothing due at the same instant
		EXPECT_EQ(kt_base_next_timeout(b), int64_t(res) - int64_t(1000 % res));
		kt_base_advance(b, KT_MILLIS(res));
		ASSERT_EQ(log.size(), 1u) << res;
		EXPECT_EQ(log[0].at, (1000 / res + 1) * res);
	}
}

TEST(Timer, PastExpiryFiresOnNextTick) {
	OneTimer one(16, 100000);
	auto &[b, log, t] = one;
	kt_mod_timer(&t.timer, 5); // long ago
	EXPECT_EQ(kt_base_next_timeout(b), 16 - int64_t(100000 % 16));
	kt_base_advance(b, KT_MILLIS(16));
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].at, (100000 / 16 + 1) * 16);
}

TEST(Timer, NeverEarlyEveryDelayEveryResolution) {
	// Every delay up to 2 s, from several clock phases, on every resolution.
	for (unsigned res : kResolutions) {
		for (uint64_t start : {uint64_t(0), uint64_t(1), uint64_t(res - 1), uint64_t(777777)}) {
			ManualBase b(res, start);
			std::vector<Fire> log;
			const int n = 2048;
			std::vector<Logged> t(n);
			for (int i = 0; i < n; i++) {
				t[i].setup(b, i, &log);
				kt_timer_arm(&t[i].timer, KT_MILLIS(i));
			}
			ASSERT_TRUE(kt_test::CheckOk(b));
			drain(b, start + 4000);
			ASSERT_EQ(log.size(), size_t(n));
			for (const Fire &f : log) {
				uint64_t expires = start + uint64_t(f.id);
				EXPECT_GE(f.at, expires) << "early: res " << res << " delay " << f.id;
				EXPECT_LE(f.at - expires, lateness_bound(res, start, expires))
				    << "late: res " << res << " delay " << f.id;
			}
		}
	}
}

TEST(Timer, EveryLevelBoundaryEveryResolution) {
	// Delays at, just below and just above each level's first delay.
	for (unsigned res : kResolutions) {
		ManualBase b(res, 0);
		std::vector<Fire> log;
		std::vector<uint64_t> delays;
		for (unsigned lvl = 1; lvl < KT_WHEEL_LEVELS; lvl++) {
			kt_level_info info;
			ASSERT_EQ(kt_wheel_level_info(res, lvl, &info), 0);
			for (int64_t d : {-int64_t(res) - 1, int64_t(-1), int64_t(0), int64_t(1), int64_t(res), int64_t(res) + 1})
				delays.push_back(uint64_t(int64_t(info.min_delay_ms) + d));
		}
		std::vector<Logged> t(delays.size());
		for (size_t i = 0; i < delays.size(); i++) {
			t[i].setup(b, int(i), &log);
			kt_mod_timer(&t[i].timer, delays[i]);
		}
		ASSERT_TRUE(kt_test::CheckOk(b));
		drain(b, kt_wheel_reach_ms(res) + kt_wheel_reach_ms(res) / 4);
		ASSERT_EQ(log.size(), delays.size()) << res;
		for (const Fire &f : log) {
			uint64_t e = delays[size_t(f.id)];
			EXPECT_GE(f.at, e) << "res " << res << " delay " << e;
			EXPECT_LE(f.at - e, lateness_bound(res, 0, e)) << "res " << res << " delay " << e;
		}
	}
}

TEST(Timer, LatenessUnder13PercentFromOneSecond) {
	ManualBase b(16, 0);
	std::vector<Fire> log;
	std::vector<uint64_t> delays;
	for (uint64_t d = 1000; d < 30ull * 86400 * 1000; d = d * 9 / 8 + 7)
		delays.push_back(d);
	std::vector<Logged> t(delays.size());
	for (size_t i = 0; i < delays.size(); i++) {
		t[i].setup(b, int(i), &log);
		kt_mod_timer(&t[i].timer, delays[i]);
	}
	drain(b, 40ull * 86400 * 1000);
	ASSERT_EQ(log.size(), delays.size());
	for (const Fire &f : log) {
		uint64_t d = delays[size_t(f.id)];
		EXPECT_GE(f.at, d);
		// At most one granularity of the level it lands on, which is
		// under 1/7.875 of the delay.
		EXPECT_LE(double(f.at - d), 0.127 * double(d)) << d;
	}
}

TEST(Timer, HugeTimeoutBeyondReachNeverEarly) {
	for (unsigned res : {1u, 16u}) {
		OneTimer one(res, 0);
		auto &[b, log, t] = one;
		uint64_t reach = kt_wheel_reach_ms(res);
		uint64_t expires = reach * 3 + 12345; // three wheels away
		kt_mod_timer(&t.timer, expires);
		EXPECT_TRUE(kt_test::CheckOk(b));
		drain(b, expires - 1);
		EXPECT_TRUE(log.empty()) << "fired early at res " << res;
		EXPECT_TRUE(kt_timer_pending(&t.timer));
		EXPECT_TRUE(kt_test::CheckOk(b));
		drain(b, expires + (uint64_t(1) << 21) * res + res);
		ASSERT_EQ(log.size(), 1u);
		EXPECT_GE(log[0].at, expires);
	}
}

TEST(Timer, MaxExpiryStaysPendingAndNeverFires) {
	OneTimer one(16, 0);
	auto &[b, log, t] = one;
	kt_mod_timer(&t.timer, UINT64_MAX);
	drain(b, 200ull * 86400 * 1000); // 200 days
	EXPECT_TRUE(log.empty());
	EXPECT_TRUE(kt_timer_pending(&t.timer));
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(Timer, ArmAfterLongIdleUsesFreshWheelClock) {
	// ntex's wheel would put this 100 ms timer on a coarse level.
	OneTimer one(16, 0);
	auto &[b, log, t] = one;
	kt_base_advance(b, KT_MILLIS(30 * 60 * 1000));
	uint64_t armed = kt_base_now(b);
	kt_timer_arm(&t.timer, KT_MILLIS(100));
	drain(b, armed + 1000);
	ASSERT_EQ(log.size(), 1u);
	EXPECT_GE(log[0].at - armed, 100u);
	EXPECT_LE(log[0].at - armed, 132u);
}

TEST(Timer, ArmAfterLongIdleWithRealRun) {
	FakeClockBase b(16, 1000);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	b.run_at(1000 + 30 * 60 * 1000);
	uint64_t armed = kt_base_now(b);
	kt_timer_arm(&t.timer, KT_MILLIS(100));
	int64_t next = kt_base_next_timeout(b);
	EXPECT_GE(next, 100);
	EXPECT_LE(next, 116);
	b.run_at(armed + uint64_t(next));
	ASSERT_EQ(log.size(), 1u);
}

TEST(Timer, SameExpiryReArmDoesNothing) {
	OneTimer one;
	auto &[b, log, t] = one;
	kt_mod_timer(&t.timer, 30000);
	kt_base_stats before, after;
	kt_base_get_stats(b, &before);
	EXPECT_EQ(kt_mod_timer(&t.timer, 30000), 1);
	kt_base_get_stats(b, &after);
	EXPECT_EQ(after.enqueued, before.enqueued); // no list was touched
	EXPECT_EQ(after.removed, before.removed);
	EXPECT_EQ(after.same_bucket, before.same_bucket + 1); // the same-bucket path
	EXPECT_EQ(kt_timer_expires(&t.timer), 30000u);
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(Timer, SameBucketReArmOnlyUpdatesExpiry) {
	OneTimer one(16, 0);
	auto &[b, log, t] = one;
	kt_mod_timer(&t.timer, 30000); // level 2: 1024 ms buckets, due at 30720
	kt_base_stats before, after;
	kt_base_get_stats(b, &before);
	EXPECT_EQ(kt_mod_timer(&t.timer, 30100), 1);
	EXPECT_EQ(kt_mod_timer(&t.timer, 30700), 1);
	kt_base_get_stats(b, &after);
	EXPECT_EQ(after.same_bucket - before.same_bucket, 2u);
	EXPECT_EQ(after.enqueued, before.enqueued);
	EXPECT_TRUE(kt_test::CheckOk(b));
	drain(b, 40000);
	ASSERT_EQ(log.size(), 1u);
	EXPECT_GE(log[0].at, 30700u);
}

// A parked timer (beyond the reach) sits in a bucket its expiry does not
// name. Once the clock has come close enough for its expiry to fall on the
// last level, a re-arm must still fire on time: never early, within the
// level's bound.
TEST(Timer, ParkedTimerReArmedOnceInReachNeverEarly) {
	for (unsigned res : {1u, 16u}) {
		OneTimer one(res, 0);
		auto &[b, log, t] = one;
		uint64_t reach = kt_wheel_reach_ms(res);
		uint64_t parked = reach + reach / 2; // beyond the reach: parked
		kt_mod_timer(&t.timer, parked);
		drain(b, reach); // now the expiry is half a reach away: level 7
		ASSERT_TRUE(log.empty());
		uint64_t armed_at = kt_base_now(b), expires = parked + 1;
		EXPECT_EQ(kt_mod_timer(&t.timer, expires), 1);
		EXPECT_TRUE(kt_test::CheckOk(b));
		drain(b, expires - 1);
		EXPECT_TRUE(log.empty()) << "fired early at res " << res;
		drain(b, expires + lateness_bound(res, armed_at, expires));
		ASSERT_EQ(log.size(), 1u) << "res " << res;
		EXPECT_GE(log[0].at, expires);
		EXPECT_LE(log[0].at - expires, lateness_bound(res, armed_at, expires));
	}
}

// The same re-arm seen from the wait: once in reach, a timer is in a bucket
// due at or after its expiry (kt_base_check() lets only a parked timer be
// early), so kt_base_next_timeout() must not wake the worker before it. The
// old expiry is no witness for a parked timer's bucket: parked at 0 for
// 64 * gran7 (quotient 64 by level 7's granularity), it waits in the park
// bucket, due at 63 * gran7. Re-armed half a reach later for 64 * gran7 - 1
// (in reach, the same quotient), a same-bucket test that trusted the old
// expiry on level 7 would keep it there and wake the worker a level-7
// granularity early (9.3 h at 16 ms) for nothing; so level 7 takes the exact
// path. The differential test's rule (nothing wakes before min(expiry, arm
// time + half the reach)) says the same.
TEST(Timer, ParkedTimerReArmedInReachDoesNotWakeEarly) {
	for (unsigned res : kResolutions) {
		OneTimer one(res, 0);
		auto &[b, log, t] = one;
		uint64_t gran7 = uint64_t(res) << 21, reach = kt_wheel_reach_ms(res);
		ASSERT_EQ(reach, 63 * gran7);
		ASSERT_EQ(kt_mod_timer(&t.timer, 64 * gran7), 0); // beyond the reach: parked
		drain(b, reach / 2 + gran7);
		ASSERT_TRUE(log.empty());
		uint64_t armed_at = kt_base_now(b), expires = 64 * gran7 - 1;
		ASSERT_GT(armed_at + reach / 2, 63 * gran7); // not a far timer any more
		EXPECT_EQ(kt_mod_timer(&t.timer, expires), 1);
		EXPECT_TRUE(kt_test::CheckOk(b));
		int64_t wait = kt_base_next_timeout(b);
		ASSERT_GE(wait, 0);
		EXPECT_GE(armed_at + uint64_t(wait), expires)
		    << "res " << res << ": wakes at " << armed_at + uint64_t(wait) << ", the only timer is due at "
		    << expires;
		drain(b, expires + lateness_bound(res, armed_at, expires));
		ASSERT_EQ(log.size(), 1u) << "res " << res;
		EXPECT_GE(log[0].at, expires);
	}
}

// An overdue timer waits in the next tick's bucket. Pushed back before that
// tick, it must leave it: its old expiry's quotient is below every quotient
// of level 0's range, so the same-bucket test can never keep it there.
TEST(Timer, OverdueTimerPushedBackLeavesTheNextTick) {
	for (unsigned res : kResolutions) {
		OneTimer one(res, 0);
		auto &[b, log, t] = one;
		kt_base_advance(b, KT_MILLIS(10000));
		uint64_t now = kt_base_now(b);
		kt_mod_timer(&t.timer, now - 5); // overdue: the next tick
		for (uint64_t later : {now + 1, now + res, now + 3 * res}) {
			EXPECT_EQ(kt_mod_timer(&t.timer, later), 1);
			EXPECT_TRUE(kt_test::CheckOk(b));
			kt_base_advance(b, KT_MILLIS(0));
			EXPECT_TRUE(log.empty()) << "res " << res << ": fired before " << later;
			kt_mod_timer(&t.timer, now - 5);
		}
		kt_mod_timer(&t.timer, now + 40 * res);
		drain(b, now + 40 * res - 1);
		EXPECT_TRUE(log.empty()) << "res " << res;
		drain(b, now + 40 * res + lateness_bound(res, now, now + 40 * res));
		ASSERT_EQ(log.size(), 1u) << "res " << res;
		EXPECT_GE(log[0].at, now + 40 * res);
	}
}

TEST(Timer, ReArmToAnotherBucketMoves) {
	OneTimer one(16, 0);
	auto &[b, log, t] = one;
	kt_mod_timer(&t.timer, 30000);
	kt_base_stats before, after;
	kt_base_get_stats(b, &before);
	kt_mod_timer(&t.timer, 35000);
	kt_base_get_stats(b, &after);
	EXPECT_EQ(after.removed - before.removed, 1u);
	EXPECT_EQ(after.enqueued - before.enqueued, 1u);
	drain(b, 34000);
	EXPECT_TRUE(log.empty());
	drain(b, 40000);
	ASSERT_EQ(log.size(), 1u);
	EXPECT_GE(log[0].at, 35000u);
}

TEST(Timer, ReArmEarlierMovesToEarlierBucket) {
	OneTimer one(16, 0);
	auto &[b, log, t] = one;
	kt_mod_timer(&t.timer, 60000);
	kt_mod_timer(&t.timer, 50);
	drain(b, 100);
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].at, 64u);
}

TEST(Timer, ModPendingLeavesIdleTimerIdle) {
	OneTimer one;
	auto &[b, log, t] = one;
	EXPECT_EQ(kt_mod_timer_pending(&t.timer, 100), 0);
	EXPECT_FALSE(kt_timer_pending(&t.timer));
	kt_mod_timer(&t.timer, 100);
	EXPECT_EQ(kt_mod_timer_pending(&t.timer, 5000), 1);
	EXPECT_EQ(kt_timer_expires(&t.timer), 5000u);
}

TEST(Timer, ReduceOnlyMovesEarlier) {
	OneTimer one;
	auto &[b, log, t] = one;
	EXPECT_EQ(kt_timer_reduce(&t.timer, 5000), 0); // idle: arms
	EXPECT_TRUE(kt_timer_pending(&t.timer));
	EXPECT_EQ(kt_timer_reduce(&t.timer, 9000), 1); // later: ignored
	EXPECT_EQ(kt_timer_expires(&t.timer), 5000u);
	EXPECT_EQ(kt_timer_reduce(&t.timer, 2000), 1); // earlier: taken
	EXPECT_EQ(kt_timer_expires(&t.timer), 2000u);
	drain(b, 3000);
	ASSERT_EQ(log.size(), 1u);
}

TEST(Timer, AddOnPendingIsEbusyAndChangesNothing) {
	OneTimer one;
	auto &[b, log, t] = one;
	EXPECT_EQ(kt_add_timer(&t.timer, 700), 0);
	EXPECT_EQ(kt_add_timer(&t.timer, 100), -EBUSY);
	EXPECT_EQ(kt_timer_expires(&t.timer), 700u);
}

TEST(Timer, ShutdownIgnoresLaterArmsUntilSetup) {
	OneTimer one;
	auto &[b, log, t] = one;
	kt_timer_arm(&t.timer, KT_MILLIS(100));
	EXPECT_EQ(kt_timer_shutdown(&t.timer), 1);
	EXPECT_EQ(kt_timer_arm(&t.timer, KT_MILLIS(100)), -ESHUTDOWN);
	EXPECT_EQ(kt_mod_timer(&t.timer, 100), -ESHUTDOWN);
	EXPECT_EQ(kt_add_timer(&t.timer, 100), -ESHUTDOWN);
	EXPECT_EQ(kt_timer_reduce(&t.timer, 100), -ESHUTDOWN);
	EXPECT_EQ(kt_mod_timer_pending(&t.timer, 100), -ESHUTDOWN);
	EXPECT_FALSE(kt_timer_pending(&t.timer));
	EXPECT_EQ(kt_timer_shutdown(&t.timer), 0);
	drain(b, 1000);
	EXPECT_TRUE(log.empty());
	t.setup(b, 1, &log);
	EXPECT_EQ(kt_timer_arm(&t.timer, KT_MILLIS(100)), 0);
	drain(b, 2000);
	EXPECT_EQ(log.size(), 1u);
}

TEST(Timer, PendingCountTracksEveryPath) {
	ManualBase b;
	std::vector<Fire> log;
	Logged t[4];
	for (int i = 0; i < 4; i++)
		t[i].setup(b, i, &log);
	kt_timer_arm(&t[0].timer, KT_MILLIS(10));
	kt_timer_arm(&t[1].timer, KT_MILLIS(10000));
	kt_timer_arm(&t[2].timer, KT_MILLIS(20));
	kt_timer_arm(&t[3].timer, KT_MILLIS(20));
	EXPECT_EQ(kt_base_pending_count(b), 4u);
	kt_timer_delete(&t[2].timer);
	kt_timer_shutdown(&t[3].timer);
	EXPECT_EQ(kt_base_pending_count(b), 2u);
	kt_base_advance(b, KT_MILLIS(100));
	EXPECT_EQ(kt_base_pending_count(b), 1u);
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(Timer, RelativeArmNeverEarlyInRealTimeWithinAMillisecond) {
	// The turn began at 10.9 ms. "1 ms from now" must not fire at 11.0 ms,
	// which is what counting from the floored kt_base_now() would give.
	ManualBase b(1, 10);
	kt__base_advance_to_ns(b, 10900000);
	EXPECT_EQ(kt_base_now(b), 10u);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	kt_timer_arm(&t.timer, KT_MILLIS(1));
	kt__base_advance_to_ns(b, 11900000 - 1);
	EXPECT_TRUE(log.empty());
	kt_base_advance(b, KT_MILLIS(5));
	ASSERT_EQ(log.size(), 1u);
	EXPECT_GE(log[0].at * 1000000, 11900000u);
}

// ---- firing ---------------------------------------------------------------

TEST(Fire, DeadlineOrderAcrossLevels) {
	ManualBase b(16, 0);
	std::vector<Fire> log;
	const uint64_t d[] = {70000, 100, 5000, 1000, 20, 600000, 33};
	Logged t[7];
	for (int i = 0; i < 7; i++) {
		t[i].setup(b, i, &log);
		kt_mod_timer(&t[i].timer, d[i]);
	}
	drain(b, 1000000);
	ASSERT_EQ(log.size(), 7u);
	for (size_t i = 1; i < log.size(); i++) {
		EXPECT_LE(log[i - 1].at, log[i].at);
		EXPECT_LT(d[log[i - 1].id], d[log[i].id]);
	}
}

TEST(Fire, CallbackSeesBucketDueTimeDuringAdvance) {
	OneTimer one(16, 0);
	auto &[b, log, t] = one;
	kt_mod_timer(&t.timer, 100);
	kt_base_advance(b, KT_MILLIS(5000));
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].at, 112u); // bucket due time, not 5000
	EXPECT_EQ(kt_base_now(b), 5000u);
}

TEST(Fire, LateWakeDoesNotShiftLaterTimers) {
	FakeClockBase b(16, 0);
	std::vector<Fire> log;
	Logged a, c;
	a.setup(b, 1, &log);
	c.setup(b, 2, &log);
	kt_mod_timer(&a.timer, 100);
	kt_mod_timer(&c.timer, 200);
	EXPECT_EQ(b.run_at(150), 1u); // woke 38 ms late for a
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].at, 150u); // run: callbacks see the turn's now
	EXPECT_EQ(kt_base_next_timeout(b), 208 - 150); // c keeps its slot
	EXPECT_EQ(b.run_at(208), 1u);
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(Fire, OneLateRunFiresEveryDueBucketInOrder) {
	FakeClockBase b(1, 0);
	std::vector<Fire> log;
	std::vector<Logged> t(100);
	for (int i = 0; i < 100; i++) {
		t[size_t(i)].setup(b, i, &log);
		kt_mod_timer(&t[size_t(i)].timer, uint64_t(1000 - i * 7));
	}
	EXPECT_EQ(b.run_at(5000), 100u);
	ASSERT_EQ(log.size(), 100u);
	// Earliest bucket first. Timers that share a bucket (at most one level
	// granularity apart) fire in no particular order.
	auto expires = [](int id) { return uint64_t(1000 - id * 7); };
	auto gran = [](uint64_t delay) {
		kt_level_info li{};
		for (unsigned lvl = 0; lvl < KT_WHEEL_LEVELS; lvl++)
			if (kt_wheel_level_info(1, lvl, &li) == 0 && delay <= li.max_delay_ms)
				break;
		return li.granularity_ms;
	};
	for (size_t i = 1; i < log.size(); i++) {
		uint64_t a = expires(log[i - 1].id), c = expires(log[i].id);
		EXPECT_LT(a, c + std::max(gran(a), gran(c))) << log[i - 1].id << " before " << log[i].id;
	}
}

namespace {

struct SelfRearm {
	kt_base *base;
	kt_timer timer;
	int runs = 0;
	static void cb(kt_timer *t) {
		SelfRearm *s = kt_container_of(t, SelfRearm, timer);
		s->runs++;
		kt_timer_arm(&s->timer, KT_MILLIS(0)); // due at once: must wait a turn
	}
};

} // namespace

TEST(Fire, SelfReArmForDueTimeRunsNextTurnNotSpin) {
	SelfRearm s; // first: kt_base_free() detaches it, still pending
	FakeClockBase b(16, 0);
	s.base = b;
	kt_timer_setup(&s.timer, b, SelfRearm::cb, 0);
	kt_timer_arm(&s.timer, KT_MILLIS(0));
	EXPECT_EQ(b.run_at(10000), 1u); // one run, one call, however late
	EXPECT_EQ(s.runs, 1);
	EXPECT_TRUE(kt_timer_pending(&s.timer));
	EXPECT_EQ(b.run_at(10000), 0u); // not due until the next tick
	EXPECT_EQ(b.run_at(10016), 1u);
	EXPECT_EQ(s.runs, 2);
}

// While callbacks run the same-level fast path is off, for every expiry: a
// level range measured from 2^63 ms would pass expiries just above 2^63 and
// place them by their low bits, so that a callback pushing a timer out to
// "never" would see it fire within a minute. Every expiry from 2^63 up, from
// a callback, must wait like UINT64_MAX.
struct PushOut {
	kt_timer trigger{}, victim{};
	uint64_t to = 0;
	int victim_runs = 0;
	static void on_trigger(kt_timer *t) {
		PushOut *p = kt_container_of(t, PushOut, trigger);
		kt_mod_timer(&p->victim, p->to);
	}
	static void on_victim(kt_timer *t) { kt_container_of(t, PushOut, victim)->victim_runs++; }
};

TEST(Fire, HugeExpiryFromACallbackNeverFires) {
	const uint64_t huge[] = {UINT64_C(1) << 63, (UINT64_C(1) << 63) + 1, (UINT64_C(1) << 63) + 40000,
				 (UINT64_C(1) << 63) + 3000000, (UINT64_C(1) << 63) + (UINT64_C(1) << 40),
				 UINT64_MAX - 1};
	for (unsigned res : kResolutions) {
		for (uint64_t to : huge) {
			ManualBase b(res, 0);
			PushOut p;
			p.to = to;
			kt_timer_setup(&p.trigger, b, PushOut::on_trigger, 0);
			kt_timer_setup(&p.victim, b, PushOut::on_victim, 0);
			kt_mod_timer(&p.victim, 30000); // level 1 or 2: some level's range
			kt_mod_timer(&p.trigger, 100);
			drain(b, 1000);
			ASSERT_TRUE(kt_timer_pending(&p.victim));
			EXPECT_EQ(kt_timer_expires(&p.victim), to);
			EXPECT_TRUE(kt_test::CheckOk(b));
			drain(b, 10ull * 86400 * 1000); // ten days
			EXPECT_EQ(p.victim_runs, 0) << "res " << res << ": pushed out to " << to << " fired";
			kt_timer_delete(&p.victim);
		}
	}
}

TEST(Fire, SelfReArmDuringAdvanceFiresOncePerTick) {
	SelfRearm s; // first: kt_base_free() detaches it, still pending
	ManualBase b(16, 0);
	s.base = b;
	kt_timer_setup(&s.timer, b, SelfRearm::cb, 0);
	kt_timer_arm(&s.timer, KT_MILLIS(0));
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(160)), 10);
	EXPECT_EQ(s.runs, 10);
}

namespace {

struct Pair {
	kt_timer a, c;
	int a_runs = 0, c_runs = 0;
	int mode = 0; // 0: a deletes c; 1: a re-arms c later; 2: a shuts c down
	static void on_a(kt_timer *t) {
		Pair *p = kt_container_of(t, Pair, a);
		p->a_runs++;
		if (p->mode == 0)
			EXPECT_EQ(kt_timer_delete(&p->c), 1);
		else if (p->mode == 1)
			EXPECT_EQ(kt_mod_timer(&p->c, kt_timer_expires(&p->c) + 16), 1);
		else
			EXPECT_EQ(kt_timer_shutdown(&p->c), 1);
	}
	static void on_c(kt_timer *t) { kt_container_of(t, Pair, c)->c_runs++; }
};

} // namespace

TEST(Fire, TimerDeletedEarlierInBatchDoesNotRun) {
	for (int mode = 0; mode < 3; mode++) {
		FakeClockBase b(16, 0);
		Pair p;
		p.mode = mode;
		kt_timer_setup(&p.a, b, Pair::on_a, 0);
		kt_timer_setup(&p.c, b, Pair::on_c, 0);
		// a's bucket is due before c's; both are due in one run, so both
		// are in the batch when a runs.
		kt_mod_timer(&p.c, 100);
		kt_mod_timer(&p.a, 90);
		b.run_at(112); // c's bucket's due time
		EXPECT_EQ(p.a_runs, 1) << mode;
		EXPECT_EQ(p.c_runs, 0) << mode;
		EXPECT_EQ(kt_timer_pending(&p.c), mode == 1) << mode;
		EXPECT_TRUE(kt_test::CheckOk(b));
		b.run_at(300);
		EXPECT_EQ(p.c_runs, mode == 1 ? 1 : 0) << mode;
	}
}

namespace {

struct Conn {
	int *freed;
	kt_timer timer;
	static void cb(kt_timer *t) {
		Conn *c = kt_container_of(t, Conn, timer);
		(*c->freed)++;
		free(c); // the callback frees the struct holding its own timer
	}
};

} // namespace

TEST(Fire, CallbackFreesItsOwnContainer) {
	ManualBase b(1, 0);
	int freed = 0;
	for (int i = 0; i < 50; i++) {
		Conn *c = static_cast<Conn *>(malloc(sizeof(Conn)));
		c->freed = &freed;
		kt_timer_setup(&c->timer, b, Conn::cb, 0);
		kt_timer_arm(&c->timer, KT_MILLIS(5)); // all in one bucket
	}
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(10)), 50);
	EXPECT_EQ(freed, 50);
	EXPECT_EQ(kt_base_pending_count(b), 0u);
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(Fire, RunFromInsideCallbackIsRefused) {
	struct R {
		kt_base *b;
		kt_timer t;
		size_t inner = 99;
		long adv = 0;
		static void cb(kt_timer *t) {
			R *r = kt_container_of(t, R, t);
			r->inner = kt_base_run(r->b);
			r->adv = kt_base_advance(r->b, KT_MILLIS(1));
		}
	};
	ManualBase b;
	R r;
	r.b = b;
	kt_timer_setup(&r.t, b, R::cb, 0);
	kt_timer_arm(&r.t, KT_MILLIS(1));
	kt_base_advance(b, KT_MILLIS(100));
	EXPECT_EQ(r.inner, 0u);
	EXPECT_EQ(r.adv, -EINVAL);
}

namespace {

struct SameIndex {
	kt_timer a, c;
	int c_runs = 0;
	uint64_t c_at = 0;
	kt_base *b;
	static void on_a(kt_timer *t) {
		SameIndex *s = kt_container_of(t, SameIndex, a);
		// 64 level-0 buckets after c's old one: the same bucket index.
		EXPECT_EQ(kt_mod_timer(&s->c, 71 * 16), 1);
	}
	static void on_c(kt_timer *t) {
		SameIndex *s = kt_container_of(t, SameIndex, c);
		s->c_runs++;
		s->c_at = kt_base_now(s->b);
	}
};

} // namespace

TEST(Fire, LateRunReArmIntoSameIndexLeavesTheBatch) {
	FakeClockBase b(16, 0);
	SameIndex s;
	s.b = b;
	kt_timer_setup(&s.a, b, SameIndex::on_a, 0);
	kt_timer_setup(&s.c, b, SameIndex::on_c, 0);
	kt_mod_timer(&s.c, 112);
	kt_mod_timer(&s.a, 96); // a's bucket is due first, so a runs first
	EXPECT_EQ(b.run_at(112 + 16 * 10), 1u); // ten ticks late
	EXPECT_EQ(s.c_runs, 0);
	EXPECT_TRUE(kt_timer_pending(&s.c));
	EXPECT_TRUE(kt_test::CheckOk(b));
	EXPECT_EQ(b.run_at(71 * 16 - 1), 0u);
	EXPECT_EQ(b.run_at(71 * 16), 1u);
	EXPECT_EQ(s.c_at, 71u * 16);
}

// ---- deferrable -------------------------------------------------------------

TEST(Deferrable, NeverAsksForWakeUp) {
	FakeClockBase b(16, 0);
	std::vector<Fire> log;
	Logged d, n;
	d.setup(b, 1, &log, KT_TIMER_DEFERRABLE);
	n.setup(b, 2, &log);
	kt_timer_arm(&d.timer, KT_MILLIS(100));
	EXPECT_EQ(kt_base_next_timeout(b), -1); // an idle worker stays asleep
	EXPECT_EQ(kt_base_pending_count(b), 1u);
	kt_timer_arm(&n.timer, KT_MILLIS(5000));
	EXPECT_GE(kt_base_next_timeout(b), 5000);
	// A turn that happens anyway (I/O at 3 s) fires the overdue deferrable.
	EXPECT_EQ(b.run_at(3000), 1u);
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].id, 1);
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(Deferrable, ReArmAndDeleteWork) {
	ManualBase b(16, 0);
	std::vector<Fire> log;
	Logged d;
	d.setup(b, 1, &log, KT_TIMER_DEFERRABLE);
	kt_timer_arm(&d.timer, KT_MILLIS(100));
	kt_timer_arm(&d.timer, KT_MILLIS(3000));
	EXPECT_TRUE(kt_test::CheckOk(b));
	drain(b, 2000);
	EXPECT_TRUE(log.empty());
	EXPECT_EQ(kt_timer_delete(&d.timer), 1);
	drain(b, 9000);
	EXPECT_TRUE(log.empty());
}

// ---- conveniences ------------------------------------------------------------

TEST(Timer, RemainingCountsFromTheCachedNow) {
	OneTimer one(16, 1000);
	auto &[b, log, t] = one;
	EXPECT_EQ(kt_timer_remaining(&t.timer), 0u); // not pending
	kt_timer_arm(&t.timer, KT_MILLIS(5000));
	EXPECT_EQ(kt_timer_remaining(&t.timer), 5000u);
	kt_base_advance(b, KT_MILLIS(1200));
	EXPECT_EQ(kt_timer_remaining(&t.timer), 3800u);
	kt_timer_delete(&t.timer);
	EXPECT_EQ(kt_timer_remaining(&t.timer), 0u);
	EXPECT_EQ(kt_timer_remaining(nullptr), 0u);
	EXPECT_EQ(kt_timer_pending(nullptr), 0);
}
