// The wheel and the kt_timer API: arming and re-arming, one edge case per
// test name, and where timers land - the level and bucket of lib/wheel.c's
// design rule, and the same-bucket re-arm - observed as when they fire.
// Firing and deferrable timers are in wheel_fire_test.cc, lazy timers in
// wheel_lazy_test.cc, the thread's hot base (kt_mod_timer()'s shortcut) in
// wheel_hotbase_test.cc. Manual or fake clocks only; nothing here sleeps.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
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
	ASSERT_EQ(kt_base_set_op_counting(b, 1), 0); // the stats count every operation
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
	ASSERT_EQ(kt_base_set_op_counting(b, 1), 0); // the stats count every operation
	kt_base_get_stats(b, &before);
	EXPECT_EQ(kt_mod_timer(&t.timer, 30100), 1);
	EXPECT_EQ(kt_timer_expires(&t.timer), 30100u) << "kt_mod_timer() did not store the new expiry";
	EXPECT_EQ(kt_mod_timer(&t.timer, 30700), 1);
	EXPECT_EQ(kt_timer_expires(&t.timer), 30700u) << "kt_mod_timer() did not store the new expiry";
	EXPECT_EQ(kt_base_next_timeout(b), 30720) << "the timer left its bucket";
	kt_base_get_stats(b, &after);
	EXPECT_EQ(after.same_bucket - before.same_bucket, 2u);
	EXPECT_EQ(after.enqueued, before.enqueued);
	EXPECT_TRUE(kt_test::CheckOk(b));
	drain(b, 40000);
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].at, 30720u); // its bucket's due time
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
	ASSERT_EQ(kt_base_set_op_counting(b, 1), 0); // the stats count every operation
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

// ---- where a timer lands: the design rule -------------------------------------
//
// Where a timer lands is observed through the public API only: the due time
// of the bucket it waits in (kt_base_next_timeout() with it alone on the
// base) and when it fires (kt_base_advance(): a callback sees its bucket's
// due time). Both are compared with kt_test::design_place(), the rule of
// lib/wheel.c's essay computed here, not with kt_wheel_level_info() or
// kt_base_max_lateness(), which share the wheel's own arithmetic: a level
// one unit too wide moves all three together. The messages say which side
// is wrong.

namespace {

// A timer that records when it fired and the expiry it had then.
struct Probe {
	kt_timer timer{};
	kt_base *base = nullptr;
	uint64_t fired_at = 0, expires_seen = 0;
	int fires = 0;
	Probe() = default;
	Probe(const Probe &) = delete;
	Probe &operator=(const Probe &) = delete;
	~Probe() { kt_timer_delete(&timer); }
	static void cb(kt_timer *t) {
		Probe *p = kt_container_of(t, Probe, timer);
		p->fired_at = kt_base_now(p->base);
		p->expires_seen = kt_timer_expires(t);
		p->fires++;
	}
	void setup(kt_base *b, unsigned flags = 0) {
		base = b;
		ASSERT_EQ(kt_timer_setup(&timer, b, cb, flags), 0);
	}
};

const char kRule[] = "the design rule (lib/wheel.c's essay: level n holds delays from the next tick below "
		     "63*8^n units; the bucket is the first multiple of 8^n units at or after the expiry)";

std::string level_name(unsigned lvl) { return lvl < 8 ? "level " + std::to_string(lvl) : "the far bucket"; }

// The row of the granularity table (kt_wheel_level_info()) that holds
// expires - F, F the first millisecond after the start of now's tick (the
// table's own definition); 8 past its last row.
unsigned table_level(unsigned res, uint64_t now, uint64_t expires) {
	uint64_t f = now - now % res + 1;
	for (unsigned lvl = 0; expires >= f && lvl < KT_WHEEL_LEVELS; lvl++) {
		kt_level_info li{};
		if (kt_wheel_level_info(res, lvl, &li) == 0 && expires - f <= li.max_delay_ms)
			return lvl;
	}
	return expires < f ? 0 : 8;
}

// "level 0" if a bucket due at `at` is where level 0 would put the expiry.
std::string levels_due_at(unsigned res, uint64_t now, uint64_t expires, uint64_t at) {
	std::string s;
	uint64_t clk = now / res + 1, u = expires / res + (expires % res != 0);
	for (unsigned lvl = 0; lvl < KT_WHEEL_LEVELS; lvl++)
		if (kt_test::design_bucket_unit(clk, u, lvl) * res == at)
			s += (s.empty() ? "level " : " or ") + std::to_string(lvl);
	return s.empty() ? "no level's bucket for this expiry" : "where " + s + " would put it";
}

// What is wrong when a timer armed at `now` for `expires` waited in a bucket
// due at `woke` (kNotSeen: not looked at) and fired at `fired` where the
// design says `want`.
constexpr uint64_t kNotSeen = UINT64_MAX;

std::string misplaced(unsigned res, uint64_t now, uint64_t expires, uint64_t woke, uint64_t fired,
		      const kt_test::DesignPlace &want) {
	std::ostringstream m;
	const uint64_t f = now - now % res + 1;
	const unsigned tl = table_level(res, now, expires);
	m << "res " << res << " ms: a timer armed at " << now << " ms for " << expires << " ms (delay "
	  << expires - now << " ms, " << expires - f << " ms from the tick's first ms, " << f << ")";
	if (woke != kNotSeen && woke != want.wake_ms && woke == fired)
		m << " waited in a bucket due at " << woke << " ms and fired there, "
		  << levels_due_at(res, now, expires, fired) << ";";
	else if (woke != kNotSeen && woke != want.wake_ms)
		m << " waited in a bucket due at " << woke << " ms, " << levels_due_at(res, now, expires, woke)
		  << (fired != want.fire_ms ? "," : ";");
	if (fired != want.fire_ms && woke != fired)
		m << " fired at " << fired << " ms, " << levels_due_at(res, now, expires, fired) << ";";
	m << " " << kRule;
	if (want.level < 8)
		m << " puts it on level " << want.level << ", due at " << want.wake_ms << " ms";
	else
		m << " parks it in the far bucket, due at " << want.wake_ms << " ms, to fire at " << want.fire_ms << " ms";
	kt_level_info li{};
	if (tl == want.level && kt_wheel_level_info(res, tl < 8 ? tl : 7, &li) == 0)
		m << ", and so does the granularity table (" << expires - f << " ms from the tick's first ms is "
		  << (tl < 8 ? "in" : "past") << " kt_wheel_level_info(" << res << ", " << (tl < 8 ? tl : 7)
		  << ")'s " << li.min_delay_ms << " .. " << li.max_delay_ms
		  << "): the wheel's placement is wrong (lib/wheel.c: the level spans or the bucket rounding), "
		     "not the table";
	else
		m << ", but the granularity table (kt_wheel_level_info()) says " << level_name(tl)
		  << ": the table and the placement share a mistake (lib/wheel.c: LVL_START or the spans); "
		     "the essay's rule is the reference";
	return m.str();
}

std::string dump_of(kt_base *b) {
	char *buf = nullptr;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return "(no dump)";
	kt_base_dump(b, f);
	fclose(f);
	std::string s(buf, len);
	free(buf);
	return s;
}

// Arms one timer per expiry on `b` at its current instant: each alone first
// (its bucket's due time is kt_base_next_timeout() then), then all of them;
// fires them and checks each against the rule. Half go through
// kt_timer_arm() (a delay), half through kt_mod_timer() (an expiry). The
// first few misplaced timers are reported, the lowest expiries first.
void expect_placed_by_the_rule(kt_base *b, const std::vector<uint64_t> &expiries, bool check_wake = true) {
	const unsigned res = kt_base_resolution(b);
	const uint64_t now = kt_base_now(b);
	std::vector<Probe> p(expiries.size());
	std::vector<kt_test::DesignPlace> want(expiries.size());
	std::vector<uint64_t> woke(expiries.size(), kNotSeen);
	std::vector<std::string> dump(expiries.size());
	uint64_t last = now;
	for (size_t i = 0; i < p.size(); i++) {
		p[i].setup(b);
		want[i] = kt_test::design_place(res, now, expiries[i]);
		last = std::max(last, want[i].fire_ms);
		if (!check_wake)
			continue;
		ASSERT_EQ(kt_mod_timer(&p[i].timer, expiries[i]), 0);
		int64_t wait = kt_base_next_timeout(b);
		woke[i] = wait < 0 ? kNotSeen - 1 : now + uint64_t(wait);
		if (woke[i] != want[i].wake_ms)
			dump[i] = "\nkt_base_dump() of the timer alone:\n" + dump_of(b);
		kt_timer_delete(&p[i].timer);
	}
	for (size_t i = 0; i < p.size(); i++)
		ASSERT_EQ(i % 2 ? kt_mod_timer(&p[i].timer, expiries[i])
				: kt_timer_arm(&p[i].timer, KT_MILLIS(uint32_t(expiries[i] - now))),
			  0);
	ASSERT_TRUE(kt_test::CheckOk(b));
	drain(b, last);
	drain(b, last + (last - now) + (uint64_t(res) << 21)); // to see how late a misplaced one is
	size_t wrong = 0;
	for (size_t i = 0; i < p.size(); i++) {
		if (p[i].fires == 1 && p[i].fired_at == want[i].fire_ms && (woke[i] == kNotSeen || woke[i] == want[i].wake_ms))
			continue;
		if (wrong++ < 3)
			ADD_FAILURE() << (p[i].fires != 1 ? "fired " + std::to_string(p[i].fires) + " times: " : "")
				      << (p[i].fires && p[i].fired_at < expiries[i] ? "EARLY: " : "")
				      << misplaced(res, now, expiries[i], woke[i], p[i].fired_at, want[i]) << dump[i];
	}
	EXPECT_EQ(wrong, 0u) << "timers off the rule's bucket at res " << res << " ms, armed at " << now
			     << " ms (the first 3 are reported above)";
}

// The first millisecond after the start of now's tick, and the ms a level
// ends on (from it), per the rule: the expiries either side of each edge.
std::vector<uint64_t> edge_expiries(unsigned res, uint64_t now) {
	std::vector<uint64_t> e;
	const uint64_t f = now - now % res + 1;
	for (unsigned lvl = 0; lvl < KT_WHEEL_LEVELS; lvl++) {
		const uint64_t last = f + (uint64_t(63) << (3 * lvl)) * res - 1; // the last ms on lvl
		for (uint64_t x : {last - res, last - 1, last, last + 1, last + 2, last + res + 1})
			if (x >= now)
				e.push_back(x);
	}
	return e;
}

// Instants across a tick: its start, 1 ms in, its middle, its last ms.
std::vector<uint64_t> phases_of_a_tick(unsigned res) {
	std::vector<uint64_t> v = {0, 1, res / 2, res - 1};
	std::sort(v.begin(), v.end());
	v.erase(std::unique(v.begin(), v.end()), v.end());
	return v;
}

} // namespace

TEST(Placement, EveryLevelEdgeLandsWhereTheDesignRuleSays) {
	// Two epochs: an unaligned one, and 0 (wheel clock 1, where the far
	// bucket and level 7's edge differ); instants across a tick, reached by
	// kt_base_advance() in 1 ms steps (the wheel clock follows the turns).
	for (unsigned res : kResolutions)
		for (uint64_t epoch : {uint64_t(987654321) / res * res, uint64_t(0)})
			for (uint64_t phase : phases_of_a_tick(res)) {
				ManualBase b(res, epoch ? epoch - 2 * res - 3 : 0);
				while (kt_base_now(b) < epoch + phase)
					ASSERT_EQ(kt_base_advance(b, KT_MILLIS(1)), 0);
				expect_placed_by_the_rule(b, edge_expiries(res, epoch + phase));
				if (HasFailure())
					return; // one instant's messages say it all
			}
}

TEST(Placement, EveryUnitOfLevelsZeroToTwoLandsWhereTheDesignRuleSays) {
	// Every unit from the next tick to past level 2's end (4032 units), at a
	// millisecond that moves through the unit, from instants across a tick.
	for (unsigned res : kResolutions)
		for (uint64_t phase : phases_of_a_tick(res)) {
			const uint64_t now = 5 * 4096 * 16 + phase; // a tick's start at every resolution, + phase
			ManualBase b(res, now);
			std::vector<uint64_t> e;
			for (uint64_t k = 0; k < 4032 + 80; k++) // k units past the next tick
				e.push_back(std::max(now, (now / res + k) * res + (k * 7) % res + 1));
			expect_placed_by_the_rule(b, e, false);
			if (HasFailure())
				return;
		}
}

// ---- re-arms: the same bucket and its neighbours ------------------------------
//
// A re-arm whose new expiry maps to the bucket the timer is in only stores
// the expiry; one to any other bucket moves it - also to the bucket next to
// it, whose list index differs from its own in one bit. Each is checked on
// both of kt_mod_timer()'s paths: the thread's hot base (the fast path) and
// a base that is not the thread's (the exact path).

namespace {

enum class Path { kHot, kCold };

const char *path_name(Path p) {
	return p == Path::kHot ? "on the thread's hot base (kt_mod_timer()'s fast path)"
			       : "on a base that is not the thread's (the exact path)";
}

// Bucket number k of level `lvl` (due at k * 8^lvl units), as its first and
// last ms (the last is its due time).
struct Bucket {
	uint64_t lo, hi;
};

Bucket bucket_ms(unsigned res, unsigned lvl, uint64_t k) {
	uint64_t g = uint64_t(res) << (3 * lvl);
	return {(k - 1) * g + 1, k * g};
}

// A bucket number in the middle of level `lvl` seen from `now`, of the
// parity asked for: its buckets up to 17 later and 1 earlier are on the
// level too (about 32 to 50 granularities past the next tick).
uint64_t middle_bucket(unsigned res, uint64_t now, unsigned lvl, bool odd) {
	uint64_t g = uint64_t(1) << (3 * lvl), k = (now / res + 1 + 32 * g + g - 1) / g;
	return (k & 1) == odd ? k : k + 1;
}

// What the documented behaviour gives for a timer's bucket after a re-arm
// from (bucket due at `due`, expiry `had`) to `to`: a re-arm to the expiry it
// has changes nothing; a KT_TIMER_LAZY timer pushed later keeps its bucket
// when that comes due no later than the new one; anything else goes to the
// rule's bucket.
uint64_t bucket_after(unsigned res, uint64_t now, unsigned flags, uint64_t due, uint64_t had, uint64_t to) {
	uint64_t w = kt_test::design_place(res, now, to).wake_ms;
	if (to == had || ((flags & KT_TIMER_LAZY) && to > had && due <= w))
		return due;
	return w;
}

// When a timer waiting in the bucket due at `due` with expiry `e` fires: in
// it, or requeued from it for the time left.
uint64_t fire_from(unsigned res, uint64_t due, uint64_t e) {
	return due >= e ? due : kt_test::design_place(res, due, e).fire_ms;
}

// One timer on `b` (at its instant), armed for `first`, re-armed to each of
// `to` in turn; after each, kt_timer_expires(), kt_timer_remaining() and
// the wheel's wake-up (kt_base_next_timeout()) are checked against the
// documented behaviour, then the timer is fired. Before the re-arms `b` is
// made the thread's hot base, or `cold` is if given. `what` names the
// scenario.
void expect_rearms(kt_base *b, kt_base *cold, unsigned flags, uint64_t first, const std::vector<uint64_t> &to,
		   const std::string &what) {
	const unsigned res = kt_base_resolution(b);
	const uint64_t now = kt_base_now(b);
	Probe p;
	p.setup(b, flags);
	ASSERT_EQ(kt_mod_timer(&p.timer, first), 0);
	uint64_t due = kt_test::design_place(res, now, first).wake_ms, had = first;
	ASSERT_EQ(kt_base_advance(cold ? cold : b, KT_MILLIS(0)), 0); // the thread's hot base now
	for (uint64_t x : to) {
		const uint64_t was_due = due;
		due = bucket_after(res, now, flags, due, had, x);
		ASSERT_EQ(kt_mod_timer(&p.timer, x), 1) << what;
		if (kt_timer_expires(&p.timer) != x)
			ADD_FAILURE() << what << ": re-armed from " << had << " to " << x
				      << " ms, kt_timer_expires() says " << kt_timer_expires(&p.timer)
				      << ": kt_mod_timer() kept the timer in its bucket (due at " << was_due
				      << " ms) but did not store the new expiry (lib/wheel.c, the same-bucket re-arm)";
		EXPECT_EQ(kt_timer_remaining(&p.timer), x - now) << what << ": re-armed to " << x;
		int64_t wait = kt_base_next_timeout(b);
		if (wait < 0 || now + uint64_t(wait) != due)
			ADD_FAILURE() << what << ": re-armed from " << had << " ms (in the bucket due at " << was_due
				      << " ms) to " << x << " ms, the wheel waits for a bucket due at "
				      << now + uint64_t(wait) << " ms, not " << due << " ms"
				      << (now + uint64_t(wait) == was_due
					      ? ": the timer stayed in its old bucket - kt_mod_timer()'s same-bucket test "
						"took another bucket for its own (lib/wheel.c)"
					      : ": kt_mod_timer() put it in the wrong bucket (lib/wheel.c)");
		EXPECT_TRUE(kt_test::CheckOk(b)) << what << ": re-armed from " << had << " to " << x
						 << " ms: kt_mod_timer() left the wheel inconsistent (lib/wheel.c)";
		had = x;
	}
	const uint64_t want = fire_from(res, due, had);
	drain(b, want + 2 * (want - now) + res);
	ASSERT_EQ(p.fires, 1) << what << ": fired " << p.fires << " times; it was due at " << want << " ms";
	EXPECT_GE(p.fired_at, had) << what << ": fired early";
	if (p.fired_at != want)
		ADD_FAILURE() << what << ": last re-armed to " << had << " ms, fired at " << p.fired_at << " ms, not at "
			      << want << " ms" << (want == due ? ", when its bucket is due" : ", requeued from its bucket")
			      << (p.expires_seen != had ? ": it fired with the expiry of an earlier arm, " +
							      std::to_string(p.expires_seen) +
							      " ms - kt_mod_timer() kept the timer in its bucket but "
							      "not the new expiry (lib/wheel.c)"
							: std::string(": kt_mod_timer() misplaced it (lib/wheel.c)"));
	EXPECT_EQ(p.expires_seen, had) << what << ": the callback saw kt_timer_expires() of an earlier arm";
}

std::string scenario(unsigned res, unsigned lvl, unsigned flags, Path path) {
	return "res " + std::to_string(res) + " ms, level " + std::to_string(lvl) +
	       (flags & KT_TIMER_LAZY ? ", KT_TIMER_LAZY, " : ", ") + path_name(path);
}

} // namespace

// Within its bucket, later and earlier by a millisecond or more: the timer
// keeps its bucket and the new expiry (kt_timer_expires(), the callback's
// view, and a lazy timer that is requeued by it). Then out to the next
// bucket and back: a lazy timer stays put and must keep the expiry it is
// pulled back to.
TEST(SameBucket, ReArmWithinTheBucketKeepsTheNewExpiry) {
	for (unsigned res : kResolutions)
		for (unsigned lvl = 0; lvl + 1 < KT_WHEEL_LEVELS; lvl++)
			for (unsigned flags : {0u, unsigned(KT_TIMER_LAZY)})
				for (Path path : {Path::kHot, Path::kCold}) {
					ManualBase b(res, 777777 + 3 * res / 4);
					ManualBase other(res, 0);
					const uint64_t now = kt_base_now(b), k = middle_bucket(res, now, lvl, false);
					const Bucket in = bucket_ms(res, lvl, k), next = bucket_ms(res, lvl, k + 1);
					for (uint64_t x : {in.lo, in.hi, next.lo, next.hi})
						ASSERT_EQ(kt_test::design_place(res, now, x).level, lvl)
						    << "the test's own arithmetic: " << x << " ms is not on level " << lvl;
					expect_rearms(b, path == Path::kCold ? other.b : nullptr, flags, in.lo + (in.hi - in.lo) / 3,
						      {in.hi, in.lo, (next.lo + next.hi) / 2, in.lo + (in.hi - in.lo) / 2},
						      scenario(res, lvl, flags, path));
					if (HasFailure())
						return;
				}
}

// To the bucket next to it, both ways, from a bucket of either parity (whose
// list index differs from the neighbour's in its lowest bit, or in more),
// at the edge nearest and farthest: it moves (a lazy timer pushed later
// keeps its bucket and is requeued from it, as documented).
TEST(SameBucket, ReArmToANeighbouringBucketMoves) {
	for (unsigned res : kResolutions)
		for (unsigned lvl = 0; lvl + 1 < KT_WHEEL_LEVELS; lvl++)
			for (bool odd : {false, true})
				for (unsigned flags : {0u, unsigned(KT_TIMER_LAZY)})
					for (Path path : {Path::kHot, Path::kCold}) {
						ManualBase other(res, 0);
						const uint64_t now = 1234567 + res / 2, k = middle_bucket(res, now, lvl, odd);
						const Bucket in = bucket_ms(res, lvl, k);
						const uint64_t g = in.hi - in.lo + 1;
						for (uint64_t to : {in.hi + 1, in.hi + g, in.lo - 1, in.lo - g}) {
							ManualBase fresh(res, now);
							ASSERT_EQ(kt_test::design_place(res, now, to).level, lvl)
							    << "the test's own arithmetic: " << to << " ms is not on level " << lvl;
							std::string what = scenario(res, lvl, flags, path) + ", from the " +
									   (odd ? "odd" : "even") + " bucket due at " +
									   std::to_string(in.hi) + " ms";
							expect_rearms(fresh, path == Path::kCold ? other.b : nullptr, flags,
								      (in.lo + in.hi) / 2, {to}, what);
							if (HasFailure())
								return;
						}
					}
}

// The same re-arms for thousands of timers at once, past the count at which
// a bucket's timers spread over several lists: each fires once, at the
// bucket its last expiry maps to, with that expiry.
TEST(SameBucket, ThousandsOfReArmsEachFireInTheirLastBucket) {
	for (unsigned res : {1u, 16u})
		for (Path path : {Path::kHot, Path::kCold}) {
			ManualBase b(res, 4242424 + res / 2);
			ManualBase other(res, 0);
			const uint64_t now = kt_base_now(b);
			const size_t n = 6000;
			std::vector<Probe> p(n);
			std::vector<uint64_t> last(n);
			uint64_t end = now;
			for (size_t i = 0; i < n; i++) {
				unsigned lvl = unsigned(i / 5 % 7);
				const Bucket in = bucket_ms(res, lvl, middle_bucket(res, now, lvl, i / 35 % 2) + i / 70 % 16);
				const uint64_t to[] = {in.hi, in.lo, in.hi + 1, in.lo - 1, (in.lo + in.hi) / 2};
				p[i].setup(b);
				ASSERT_EQ(kt_mod_timer(&p[i].timer, (in.lo + in.hi) / 2), 0);
				last[i] = to[i % 5];
				ASSERT_EQ(kt_test::design_place(res, now, last[i]).level, lvl) << "the test's own arithmetic";
				end = std::max(end, kt_test::design_place(res, now, last[i]).fire_ms);
			}
			ASSERT_EQ(kt_base_advance(path == Path::kCold ? other.b : b.b, KT_MILLIS(0)), 0); // hot now
			for (size_t i = 0; i < n; i++)
				ASSERT_EQ(kt_mod_timer(&p[i].timer, last[i]), 1);
			ASSERT_TRUE(kt_test::CheckOk(b)) << "res " << res << " ms, " << path_name(path) << ", " << n
							 << " timers re-armed within their buckets and to the buckets next "
							    "to them: kt_mod_timer() left the wheel inconsistent (lib/wheel.c)";
			drain(b, 2 * end - now);
			size_t wrong = 0;
			for (size_t i = 0; i < n; i++) {
				const uint64_t want = kt_test::design_place(res, now, last[i]).fire_ms;
				if (p[i].fires == 1 && p[i].fired_at == want && p[i].expires_seen == last[i])
					continue;
				if (wrong++ < 3)
					ADD_FAILURE() << "res " << res << " ms, " << path_name(path) << ", " << n
						      << " pending: a timer re-armed to " << last[i] << " ms (level "
						      << i / 5 % 7 << ", the rule's bucket due at " << want << " ms) fired "
						      << p[i].fires << " time(s), at " << p[i].fired_at << " ms, with expiry "
						      << p[i].expires_seen
						      << (p[i].expires_seen != last[i]
							      ? ": kt_mod_timer() did not store the new expiry (lib/wheel.c)"
							      : ": kt_mod_timer() misplaced it (lib/wheel.c)");
			}
			EXPECT_EQ(wrong, 0u) << "res " << res << " ms, " << path_name(path);
		}
}

// The base remembers the earliest occupied bucket between searches
// (kt_base_advance() and kt_base_run() search; kt_base_next_timeout() and
// the wait plan ask). Each case searches first, then changes what is
// earliest through one path of kt_mod_timer() or kt_timer_delete(), and
// asks again: the wait must name the bucket that is earliest now.
namespace {

// Milliseconds until the bucket a timer armed now for `expires` is due.
int64_t WaitFor(unsigned res, uint64_t now, uint64_t expires) {
	return int64_t(kt_test::design_place(res, now, expires).wake_ms - now);
}

// A manual base at 1 s with two logged timers, far (id 1) and near (id 2).
struct FarAndNear {
	ManualBase b;
	std::vector<Fire> log;
	Logged far, near;
	uint64_t now;
	explicit FarAndNear(unsigned res) : b(res, 1000), now(kt_base_now(b)) {
		far.setup(b, 1, &log);
		near.setup(b, 2, &log);
	}
};

} // namespace

TEST(NextDue, AnArmIntoAnEmptyListAfterTheSearchIsWaitedFor) {
	for (unsigned res : kResolutions) {
		FarAndNear x(res);
		auto &[b, log, far, near, now] = x;
		ASSERT_EQ(kt_mod_timer(&far.timer, now + 30000), 0);
		ASSERT_EQ(kt_base_advance(b, KT_MILLIS(0)), 0); // the search
		EXPECT_EQ(kt_base_next_timeout(b), WaitFor(res, now, now + 30000)) << "res " << res;
		// An idle timer armed on a level the fast path loads (rearm_near()).
		ASSERT_EQ(kt_mod_timer(&near.timer, now + 200), 0);
		EXPECT_EQ(kt_base_next_timeout(b), WaitFor(res, now, now + 200))
		    << "res " << res << ": the wait still names the bucket remembered before the arm (lib/wheel.c)";
		EXPECT_TRUE(kt_test::CheckOk(b)) << "res " << res;
		ASSERT_EQ(kt_base_advance(b, KT_MILLIS(0)), 0);
		// A pending timer moved on its level into an empty list (rearm_fast()).
		ASSERT_EQ(kt_mod_timer(&near.timer, now + 100), 1);
		EXPECT_EQ(kt_base_next_timeout(b), WaitFor(res, now, now + 100))
		    << "res " << res << ": the wait still names the bucket remembered before the move (lib/wheel.c)";
		EXPECT_TRUE(kt_test::CheckOk(b)) << "res " << res;
		ASSERT_EQ(kt_base_advance(b, KT_MILLIS(0)), 0);
		// Through the slow path: out to a level neither image holds, and
		// back into an empty list (rearm_slow(), fast_level()).
		ASSERT_EQ(kt_mod_timer(&near.timer, now + 5000000), 1);
		ASSERT_EQ(kt_mod_timer(&near.timer, now + 50), 1);
		EXPECT_EQ(kt_base_next_timeout(b), WaitFor(res, now, now + 50)) << "res " << res;
		EXPECT_TRUE(kt_test::CheckOk(b)) << "res " << res;
		drain(b, 40000);
		ASSERT_EQ(log.size(), 2u) << "res " << res;
		EXPECT_GE(log[0].at, now + 50);
		EXPECT_GE(log[1].at, now + 30000);
	}
}

TEST(NextDue, TheEarliestBucketEmptiedAfterTheSearchIsNotWaitedFor) {
	for (unsigned res : kResolutions) {
		FarAndNear x(res);
		auto &[b, log, far, near, now] = x;
		ASSERT_EQ(kt_mod_timer(&far.timer, now + 30000), 0);
		ASSERT_EQ(kt_mod_timer(&near.timer, now + 200), 0);
		ASSERT_EQ(kt_base_advance(b, KT_MILLIS(0)), 0);
		ASSERT_EQ(kt_base_next_timeout(b), WaitFor(res, now, now + 200)) << "res " << res;
		ASSERT_EQ(kt_timer_delete(&near.timer), 1);
		EXPECT_EQ(kt_base_next_timeout(b), WaitFor(res, now, now + 30000))
		    << "res " << res << ": after the delete of the only timer of the earliest bucket, the wait "
		    << "still names that bucket (lib/wheel.c)";
		EXPECT_TRUE(kt_test::CheckOk(b)) << "res " << res;
		ASSERT_EQ(kt_mod_timer(&near.timer, now + 200), 0);
		ASSERT_EQ(kt_base_advance(b, KT_MILLIS(0)), 0);
		// Moved later on its level (rearm_fast()), out of the bucket it was alone in.
		ASSERT_EQ(kt_mod_timer(&near.timer, now + 900), 1);
		EXPECT_EQ(kt_base_next_timeout(b), WaitFor(res, now, now + 900))
		    << "res " << res << ": after the move of the only timer of the earliest bucket, the wait "
		    << "still names that bucket (lib/wheel.c)";
		EXPECT_TRUE(kt_test::CheckOk(b)) << "res " << res;
		drain(b, 40000);
		ASSERT_EQ(log.size(), 2u) << "res " << res;
		EXPECT_GE(log[0].at, now + 900);
	}
}
