// The base: lifecycle, clocks, the turn, the wait plan. One edge case per
// test name. Manual or fake clocks only; nothing here sleeps.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/harness.h"

using kt_test::FakeClockBase;
using kt_test::Fire;
using kt_test::Logged;
using kt_test::ManualBase;

TEST(Base, NullConfigIs16msMonotonic) {
	kt_base *b = kt_base_new(nullptr);
	ASSERT_NE(b, nullptr);
	EXPECT_EQ(kt_base_resolution(b), 16u);
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(1)), -EINVAL); // not manual
	kt_base_free(b);
}

TEST(Base, ZeroResolutionMeans16) {
	kt_base_config cfg{0, KT_CLOCK_MANUAL, 0};
	kt_base *b = kt_base_new(&cfg);
	ASSERT_NE(b, nullptr);
	EXPECT_EQ(kt_base_resolution(b), 16u);
	kt_base_free(b);
}

TEST(Base, EveryPowerOfTwoResolution) {
	for (unsigned res : {1u, 2u, 4u, 8u, 16u}) {
		kt_base_config cfg{res, KT_CLOCK_MANUAL, 0};
		kt_base *b = kt_base_new(&cfg);
		ASSERT_NE(b, nullptr) << res;
		EXPECT_EQ(kt_base_resolution(b), res);
		EXPECT_TRUE(kt_test::CheckOk(b));
		kt_base_free(b);
	}
}

TEST(Base, InvalidResolutionIsEinval) {
	for (unsigned res : {3u, 5u, 6u, 7u, 12u, 15u, 17u, 32u, 1000u, ~0u}) {
		kt_base_config cfg{res, KT_CLOCK_MONOTONIC, 0};
		errno = 0;
		EXPECT_EQ(kt_base_new(&cfg), nullptr) << res;
		EXPECT_EQ(errno, EINVAL) << res;
	}
}

TEST(Base, UnknownClockIsEinval) {
	kt_base_config cfg{16, static_cast<kt_clock_kind>(7), 0};
	errno = 0;
	EXPECT_EQ(kt_base_new(&cfg), nullptr);
	EXPECT_EQ(errno, EINVAL);
}

TEST(Base, ManualStartBeyondLimitIsEinval) {
	kt_base_config cfg{16, KT_CLOCK_MANUAL, UINT64_MAX};
	errno = 0;
	EXPECT_EQ(kt_base_new(&cfg), nullptr);
	EXPECT_EQ(errno, EINVAL);
}

TEST(Base, ManualClockStartsAtStartAndOnlyMovesOnAdvance) {
	ManualBase b(16, 12345);
	EXPECT_EQ(kt_base_now(b), 12345u);
	kt_base_run(b);
	EXPECT_EQ(kt_base_now(b), 12345u);
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(55)), 0);
	EXPECT_EQ(kt_base_now(b), 12400u);
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(0)), 0);
	EXPECT_EQ(kt_base_now(b), 12400u);
}

TEST(Base, MonotonicRunNeverGoesBackwards) {
	FakeClockBase b(16, 5000);
	EXPECT_EQ(kt_base_now(b), 5000u);
	b.run_at(4000); // a clock that stepped back is ignored
	EXPECT_EQ(kt_base_now(b), 5000u);
	b.run_at(5100);
	EXPECT_EQ(kt_base_now(b), 5100u);
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(Base, RealMonotonicClockMoves) {
	kt_base *b = kt_base_new(nullptr);
	uint64_t a = kt_base_now(b);
	kt_base_run(b);
	EXPECT_GE(kt_base_now(b), a);
	EXPECT_GT(kt_base_system_time(b), UINT64_C(1600000000000)); // after 2020
	kt_base_free(b);
}

TEST(Base, SystemTimeIsCachedFor100ms) {
	ManualBase b(1, 0);
	uint64_t t0 = kt_base_system_time(b);
	kt_base_advance(b, KT_MILLIS(99));
	EXPECT_EQ(kt_base_system_time(b), t0); // not re-read yet
	kt_base_advance(b, KT_MILLIS(1));
	EXPECT_EQ(kt_base_system_time(b), t0 + 100);
	kt_base_advance(b, KT_MILLIS(250));
	EXPECT_EQ(kt_base_system_time(b), t0 + 350);
}

TEST(Base, NextTimeoutEmptyIsMinusOne) {
	ManualBase b;
	EXPECT_EQ(kt_base_next_timeout(b), -1);
	EXPECT_EQ(kt_base_pending_count(b), 0u);
}

TEST(Base, NextTimeoutIsBucketDueTime) {
	ManualBase b(16, 0);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	kt_timer_arm(&t.timer, KT_MILLIS(100)); // level 0: rounded up to 112
	EXPECT_EQ(kt_base_next_timeout(b), 112);
	kt_base_advance(b, KT_MILLIS(100));
	EXPECT_EQ(kt_base_next_timeout(b), 12);
	kt_timer_arm(&t.timer, KT_MILLIS(30000)); // level 2, 1024 ms buckets
	int64_t next = kt_base_next_timeout(b);
	EXPECT_GE(next, 30000);
	EXPECT_LT(next, 30000 + 1024 + 16);
}

TEST(Base, CurrentIsPerThreadAndClearedOnFree) {
	EXPECT_EQ(kt_base_current(), nullptr);
	kt_base *b = kt_base_new(nullptr);
	kt_base_set_current(b);
	EXPECT_EQ(kt_base_current(), b);
	kt_base_free(b);
	EXPECT_EQ(kt_base_current(), nullptr);
}

TEST(Base, FreeWithPendingDetachesWithoutFiring) {
	std::vector<Fire> log;
	Logged t[3];
	{
		ManualBase b;
		for (int i = 0; i < 3; i++) {
			t[i].setup(b, i, &log, i == 2 ? KT_TIMER_DEFERRABLE : 0);
			kt_timer_arm(&t[i].timer, KT_MILLIS(1000 * (i + 1)));
			EXPECT_TRUE(kt_timer_pending(&t[i].timer));
		}
	}
	for (auto &x : t)
		EXPECT_FALSE(kt_timer_pending(&x.timer));
	EXPECT_TRUE(log.empty());
}

TEST(Base, FreeNullIsHarmless) { kt_base_free(nullptr); }

TEST(Base, LevelInfoRejectsBadInput) {
	kt_level_info info;
	EXPECT_EQ(kt_wheel_level_info(3, 0, &info), -EINVAL);
	EXPECT_EQ(kt_wheel_level_info(16, 8, &info), -EINVAL);
	EXPECT_EQ(kt_wheel_level_info(16, 0, nullptr), -EINVAL);
	EXPECT_EQ(kt_wheel_reach_ms(0), 0u);
	EXPECT_EQ(kt_wheel_reach_ms(16), UINT64_C(63) * (UINT64_C(1) << 21) * 16);
}

// ---- the wait plan ---------------------------------------------------------

TEST(WaitPlan, IndefiniteWhenNothingPending) {
	FakeClockBase b;
	kt_wait_plan p = kt_base_prepare_wait(b);
	EXPECT_EQ(p.kind, KT_WAIT_INDEFINITE);
	EXPECT_EQ(kt_wait_plan_timeout_ms(b, &p), -1);
}

TEST(WaitPlan, UntilTheEarliestBucket) {
	FakeClockBase b(16, 1000);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	kt_timer_arm(&t.timer, KT_MILLIS(100)); // bucket due at 1104
	kt_wait_plan p = kt_base_prepare_wait(b);
	EXPECT_EQ(p.kind, KT_WAIT_UNTIL);
	EXPECT_EQ(p.precise, 0);
	EXPECT_EQ(p.deadline_ns, 1104u * 1000000u);
	EXPECT_EQ(kt_wait_plan_timeout_ms(b, &p), 104);
}

TEST(WaitPlan, DeferrableTimersDoNotSetADeadline) {
	FakeClockBase b;
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log, KT_TIMER_DEFERRABLE);
	kt_timer_arm(&t.timer, KT_MILLIS(100));
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_INDEFINITE);
}

TEST(WaitPlan, TimeoutRoundsUpNeverZeroBeforeDeadline) {
	FakeClockBase b(1, 1000);
	kt_wait_plan p{KT_WAIT_UNTIL, 1, 1000u * 1000000u + 1}; // 1 ns ahead
	EXPECT_EQ(kt_wait_plan_timeout_ms(b, &p), 1);
	p.deadline_ns = 1000u * 1000000u + 1500000u; // 1.5 ms ahead
	EXPECT_EQ(kt_wait_plan_timeout_ms(b, &p), 2);
	p.deadline_ns = 999u * 1000000u; // passed
	EXPECT_EQ(kt_wait_plan_timeout_ms(b, &p), 0);
	p.deadline_ns = UINT64_MAX; // absurdly far
	EXPECT_EQ(kt_wait_plan_timeout_ms(b, &p), INT_MAX);
	kt_wait_plan imm{KT_WAIT_IMMEDIATE, 0, 0};
	EXPECT_EQ(kt_wait_plan_timeout_ms(b, &imm), 0);
}

TEST(WaitPlan, ImmediateWhileRemoteWorkIsQueued) {
	FakeClockBase b;
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	ASSERT_EQ(kt_remote_arm(&t.timer, KT_MILLIS(50), nullptr, nullptr), 0);
	EXPECT_EQ(kt_base_remote_queued(b), 1u);
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	b.run_at(1000);
	EXPECT_TRUE(kt_timer_pending(&t.timer));
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_UNTIL);
}

// ---- the invariant walker --------------------------------------------------

TEST(Check, EveryResultHasItsOwnName) {
	std::set<std::string> names;
	for (int r = KT_CHECK_OK; r >= KT_CHECK_HR_HEAP; r--) {
		std::string n = kt_base_check_str(r);
		EXPECT_EQ(n.find("unknown"), std::string::npos) << r;
		EXPECT_TRUE(names.insert(n).second) << "duplicate name for " << r;
	}
	EXPECT_STREQ(kt_base_check_str(KT_CHECK_OK), "ok");
	EXPECT_NE(std::string(kt_base_check_str(1)).find("unknown"), std::string::npos);
	EXPECT_NE(std::string(kt_base_check_str(-11)).find("unknown"), std::string::npos);
}

TEST(Check, NamesTheInvariantABrokenNodeViolates) {
	// Corrupt a pending node's private fields by hand, as a bug would, and
	// check that the walker names what broke - then put it back.
	ManualBase b(16, 0);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	ASSERT_EQ(kt_mod_timer(&t.timer, 500), 0);
	ASSERT_TRUE(kt_test::CheckOk(b));

	uint64_t expires = t.timer.kt__expires;
	t.timer.kt__expires = 5000; // later than its bucket: would fire early
	EXPECT_EQ(kt_base_check(b), KT_CHECK_EARLY);
	t.timer.kt__expires = expires;

	uint32_t idx = t.timer.kt__idx;
	t.timer.kt__idx = idx + 1; // the node no longer knows its bucket
	EXPECT_EQ(kt_base_check(b), KT_CHECK_NODE);
	t.timer.kt__idx = idx;

	t.timer.kt__flags ^= KT_TIMER_DEFERRABLE; // on the wrong wheel
	EXPECT_EQ(kt_base_check(b), KT_CHECK_WRONG_WHEEL);
	t.timer.kt__flags ^= KT_TIMER_DEFERRABLE;

	EXPECT_TRUE(kt_test::CheckOk(b));
	EXPECT_EQ(kt_timer_delete(&t.timer), 1);
}

// ---- the turn: update the time, handle I/O, run the timers -----------------

TEST(Turn, UpdateTimeGathersWithoutFiring) {
	FakeClockBase b(16, 1000);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	kt_timer_arm(&t.timer, KT_MILLIS(100));
	b.now = 1500;
	EXPECT_EQ(kt_base_update_time(b), 0);
	EXPECT_EQ(kt_base_now(b), 1500u);
	EXPECT_TRUE(log.empty());                 // nothing fired
	EXPECT_TRUE(kt_timer_pending(&t.timer));  // gathered, still pending
	EXPECT_EQ(kt_base_next_timeout(b), 0);    // due now
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_TRUE(kt_test::CheckOk(b));
	EXPECT_EQ(kt_base_run(b), 1u);
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].at, 1500u);
	EXPECT_TRUE(kt_test::CheckOk(b));
}

// The point of the order: a deadline that came due while the worker slept is
// pushed back by this turn's I/O before the timers run, so it does not fire.
TEST(Turn, IoAfterUpdateTimePushesBackAGatheredDeadline) {
	FakeClockBase b(16, 1000);
	std::vector<Fire> log;
	Logged idle, other;
	idle.setup(b, 1, &log);
	other.setup(b, 2, &log);
	kt_timer_arm(&idle.timer, KT_MILLIS(5000));
	kt_timer_arm(&other.timer, KT_MILLIS(5000)); // same bucket
	b.now = 1000 + 5000 + 40;                    // a slow wait
	kt_base_update_time(b);
	kt_timer_arm(&idle.timer, KT_MILLIS(5000));  // the client spoke: push back
	EXPECT_EQ(kt_timer_expires(&idle.timer), 6040u + 5000u); // from the fresh clock
	EXPECT_EQ(kt_base_run(b), 1u);
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].id, 2); // only the silent one
	EXPECT_TRUE(kt_timer_pending(&idle.timer));
	EXPECT_TRUE(kt_test::CheckOk(b));
}

// kt_base_update_time() called turn after turn without kt_base_run(), with
// I/O arming timers in between: the gatherings add up past the batch's room
// for one (every list once). What does not fit stays in the wheel, due, and
// fires on the following runs - none lost, none twice, none early - and the
// wait in between is immediate. (It used to write past the batch's arrays.)
TEST(Turn, RepeatedUpdateTimeBeyondTheBatchLosesNothing) {
	constexpr int kRounds = 40, kPerRound = 64; // 2,560 level-0 buckets
	FakeClockBase b(1, 1000);
	std::vector<Fire> log;
	std::unique_ptr<Logged[]> t(new Logged[kRounds * kPerRound]);
	std::vector<uint64_t> expires(kRounds * kPerRound);
	for (int r = 0; r < kRounds; r++) {
		for (int i = 0; i < kPerRound; i++) {
			Logged &x = t[r * kPerRound + i];
			x.setup(b, r * kPerRound + i, &log);
			ASSERT_EQ(kt_timer_arm(&x.timer, KT_MILLIS(uint32_t(i + 1))), 0);
			expires[size_t(r * kPerRound + i)] = kt_timer_expires(&x.timer);
		}
		b.now += 70;
		ASSERT_EQ(kt_base_update_time(b), 0);
		ASSERT_TRUE(kt_test::CheckOk(b));
	}
	// The first run fires what the batch held; what was left due fires on
	// the next turn, which starts at once. Timers armed while the wheel clock
	// was held back sit on coarser levels: they may come due a little later
	// (the loop waits for them), never earlier.
	EXPECT_EQ(kt_base_next_timeout(b), 0);
	EXPECT_EQ(kt_base_run(b), 1024u); // the batch holds 1,024 buckets (one timer each here)
	EXPECT_EQ(kt_base_next_timeout(b), 0);       // more is due: no sleep
	EXPECT_NE(kt_base_prepare_wait(b).kind, KT_WAIT_INDEFINITE);
	for (int turn = 0; turn < 20 && log.size() < expires.size(); turn++) {
		int64_t wait = kt_base_next_timeout(b);
		ASSERT_GE(wait, 0) << "turn " << turn;
		ASSERT_LE(wait, 64) << "turn " << turn; // level 2's granularity at 1 ms
		b.now += uint64_t(wait);
		kt_base_run(b);
		ASSERT_TRUE(kt_test::CheckOk(b));
	}
	ASSERT_EQ(log.size(), expires.size());
	std::set<int> seen;
	for (const Fire &f : log) {
		EXPECT_TRUE(seen.insert(f.id).second) << "fired twice: " << f.id;
		EXPECT_GE(f.at, expires[size_t(f.id)]) << "early: " << f.id;
	}
	EXPECT_EQ(kt_base_next_timeout(b), -1);
}

// After a run that left due buckets behind (the clock held back), I/O
// deletes or pushes back what was left: the base is consistent (the held
// clock is not mistaken for a stale one), and the next turn moves the clock
// on with nothing fired.
TEST(Turn, HeldBackClockWhoseLeftoversAreDeletedChecksOk) {
	constexpr int kN = 40 * 64;
	FakeClockBase b(1, 1000);
	std::vector<Fire> log;
	std::unique_ptr<Logged[]> t(new Logged[kN]);
	for (int i = 0; i < kN; i++) {
		t[i].setup(b, i, &log);
		ASSERT_EQ(kt_timer_arm(&t[i].timer, KT_MILLIS(uint32_t(i % 64 + 1))), 0);
		if (i % 64 == 63) {
			b.now += 70;
			ASSERT_EQ(kt_base_update_time(b), 0);
		}
	}
	ASSERT_EQ(kt_base_run(b), 1024u);
	for (int i = 0; i < kN; i++)
		if (i % 2)
			kt_timer_delete(&t[i].timer);
		else if (kt_timer_pending(&t[i].timer))
			kt_timer_arm(&t[i].timer, KT_MILLIS(30000));
	EXPECT_TRUE(kt_test::CheckOk(b));
	log.clear();
	EXPECT_EQ(b.run_at(b.now + 1), 0u);
	EXPECT_TRUE(log.empty());
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(Turn, DeleteAfterUpdateTimeWins) {
	FakeClockBase b(1, 1000);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	kt_timer_arm(&t.timer, KT_MILLIS(10));
	b.now = 1100;
	kt_base_update_time(b);
	EXPECT_EQ(kt_timer_delete(&t.timer), 1);
	EXPECT_EQ(kt_base_run(b), 0u);
	EXPECT_TRUE(log.empty());
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(Turn, ArmedForNowAfterUpdateTimeWaitsForTheNextTick) {
	FakeClockBase b(16, 1000);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	b.now = 2000;
	kt_base_update_time(b);
	kt_timer_arm(&t.timer, KT_MILLIS(0));
	EXPECT_EQ(kt_base_run(b), 0u); // not in this turn's batch
	EXPECT_EQ(b.run_at(2016), 1u);
}

namespace {

struct FreesItsBase {
	kt_timer t;
	kt_base *base;
	int result = 1;
	static void cb(kt_timer *t) {
		FreesItsBase *f = kt_container_of(t, FreesItsBase, t);
		f->result = kt_base_free(f->base);
	}
};

} // namespace

TEST(Base, FreeFromItsOwnCallbackIsRefused) {
	kt_base_config cfg{16, KT_CLOCK_MANUAL, 0};
	kt_base *b = kt_base_new(&cfg);
	FreesItsBase f;
	f.base = b;
	kt_timer_setup(&f.t, b, FreesItsBase::cb, 0);
	kt_timer_arm(&f.t, KT_MILLIS(10));
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(100)), 1);
	EXPECT_EQ(f.result, -EBUSY);
	EXPECT_TRUE(kt_test::CheckOk(b)); // still alive and whole
	EXPECT_EQ(kt_base_update_time(b), 0);
	EXPECT_EQ(kt_base_free(b), 0);
}

TEST(Base, UpdateTimeFromACallbackIsRefused) {
	struct U {
		kt_timer t;
		kt_base *b;
		int r = 1;
		static void cb(kt_timer *t) {
			U *u = kt_container_of(t, U, t);
			u->r = kt_base_update_time(u->b);
		}
	} u;
	ManualBase b;
	u.b = b;
	kt_timer_setup(&u.t, b, U::cb, 0);
	kt_timer_arm(&u.t, KT_MILLIS(1));
	kt_base_advance(b, KT_MILLIS(100));
	EXPECT_EQ(u.r, -EBUSY);
}

// Debug builds (--config=asan defines KT_DEBUG) report a base used from a
// thread that does not own it; production builds do not pay for the check.
TEST(Base, UseFromAnotherThreadIsReportedInDebugBuilds) {
#ifdef KT_DEBUG
	GTEST_FLAG_SET(death_test_style, "threadsafe");
	EXPECT_DEATH(
		{
			kt_base *b = kt_base_new(nullptr);
			kt_timer t{};
			kt_timer_setup(&t, b, [](kt_timer *) {}, 0);
			kt_base_run(b); // this thread owns it now
			std::thread other([&] { kt_timer_arm(&t, KT_MILLIS(10)); });
			other.join();
		},
		"kt_timer_arm\\(\\) on base .* from a thread that does not own it");
#else
	GTEST_SKIP() << "the owner check is compiled in debug builds only (KT_DEBUG)";
#endif
}

// The abort names the function the user called, not the internal one it
// reached (kt_timer_arm() and kt_interval_start() both end in kt_mod_timer()).
// kt_base_next_timeout() and kt_base_get_stats() read and write what the
// owner writes: a monitoring thread is reported too.
TEST(Base, MisuseFromAnotherThreadNamesTheEntryPointInDebugBuilds) {
#ifdef KT_DEBUG
	GTEST_FLAG_SET(death_test_style, "threadsafe");
	struct Case {
		const char *name;
		void (*call)(kt_base *b, kt_timer *t, kt_interval *iv);
	};
	const Case cases[] = {
		{"kt_interval_start", [](kt_base *, kt_timer *, kt_interval *iv) { kt_interval_start(iv); }},
		{"kt_call_after", [](kt_base *b, kt_timer *, kt_interval *) {
			 kt_call_after(b, KT_MILLIS(5), [](void *) {}, nullptr);
		 }},
		{"kt_deadline_arm", [](kt_base *, kt_timer *t, kt_interval *) { kt_deadline_arm(t, KT_MILLIS(5)); }},
		{"kt_timer_reduce", [](kt_base *, kt_timer *t, kt_interval *) { kt_timer_reduce(t, 5); }},
		{"kt_base_next_timeout", [](kt_base *b, kt_timer *, kt_interval *) { kt_base_next_timeout(b); }},
		{"kt_base_get_stats", [](kt_base *b, kt_timer *, kt_interval *) {
			 kt_base_stats st;
			 kt_base_get_stats(b, &st);
		 }},
		{"kt_base_set_run_limit", [](kt_base *b, kt_timer *, kt_interval *) { kt_base_set_run_limit(b, 1, 0); }},
	};
	for (const Case &c : cases) {
		std::string re = std::string(c.name) + "\\(\\) on base .* from a thread that does not own it";
		EXPECT_DEATH(
			{
				kt_base *b = kt_base_new(nullptr);
				kt_timer t{};
				kt_interval iv{};
				kt_timer_setup(&t, b, [](kt_timer *) {}, 0);
				kt_interval_setup(&iv, b, KT_MILLIS(10), [](kt_interval *, uint64_t) {});
				kt_base_run(b); // this thread owns it now
				std::thread other([&] { c.call(b, &t, &iv); });
				other.join();
			},
			re)
			<< c.name;
	}
#else
	GTEST_SKIP() << "the owner check is compiled in debug builds only (KT_DEBUG)";
#endif
}

TEST(Base, AdoptHandsABaseBackAfterJoin) {
	// The worker ran a turn (and owns the base in debug builds); after it is
	// joined, the main thread adopts the base and tears the timers down.
	kt_base *b = kt_base_new(nullptr);
	kt_timer t{};
	kt_timer_setup(&t, b, [](kt_timer *) {}, 0);
	std::thread worker([&] {
		kt_base_run(b);
		kt_timer_arm(&t, KT_MILLIS(1000));
	});
	worker.join();
	EXPECT_EQ(kt_base_adopt(b), 0);
	EXPECT_EQ(kt_timer_delete(&t), 1); // would abort under KT_DEBUG without the adopt
	EXPECT_EQ(kt_base_adopt(nullptr), -EINVAL);
	EXPECT_EQ(kt_base_free(b), 0);
}

TEST(Base, SetUpOnOneThreadRunOnAnother) {
	// A main thread may build a worker's base and timers before the worker's
	// first turn; the first turn's thread owns it from then on.
	kt_base *b = kt_base_new(nullptr);
	kt_timer t{};
	kt_timer_setup(&t, b, [](kt_timer *) {}, 0);
	kt_timer_arm(&t, KT_MILLIS(10));
	std::thread worker([&] {
		kt_base_run(b);
		kt_timer_delete(&t);
	});
	worker.join();
	EXPECT_FALSE(kt_timer_pending(&t));
	EXPECT_EQ(kt_base_free(b), 0);
}

// ---- debugging ---------------------------------------------------------------

extern "C" void base_test_named_callback(kt_timer *) {}

// kt_base_dump()'s text; *listed gets its return value.
static std::string dump(kt_base *b, int *listed) {
	char *buf = nullptr;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	*listed = kt_base_dump(b, f);
	fclose(f);
	std::string out(buf, len);
	free(buf);
	return out;
}

TEST(Dump, ListsEveryPendingTimerWithItsBucketAndCallback) {
	ManualBase b(16, 0);
	std::vector<Fire> log;
	Logged t[3];
	t[0].setup(b, 0, &log);
	t[1].setup(b, 1, &log, KT_TIMER_DEFERRABLE);
	t[2].setup(b, 2, &log);
	kt_timer_arm(&t[0].timer, KT_MILLIS(100));     // level 0
	kt_timer_arm(&t[1].timer, KT_MILLIS(5000));    // deferrable, level 1
	kt_timer_arm(&t[2].timer, KT_MILLIS(3600000)); // an hour: level 4
	kt_timer named{};
	kt_timer_setup(&named, b, base_test_named_callback, 0);
	kt_timer_arm(&named, KT_MILLIS(20000));
	kt_hrtimer hr{};
	kt_hrtimer_setup(&hr, b, [](kt_hrtimer *) {});
	kt_hrtimer_start(&hr, 123456789);
	int listed = 0;
	std::string out = dump(b, &listed);
	ASSERT_EQ(listed, 5);
	EXPECT_NE(out.find("resolution 16 ms"), std::string::npos) << out;
	EXPECT_NE(out.find("pending 5 (wheel 4, precise 1)"), std::string::npos) << out;
	EXPECT_NE(out.find("expires 100 ms (in 100 ms) level 0 bucket 7 due 112 ms"), std::string::npos) << out;
	EXPECT_NE(out.find("level 0"), std::string::npos) << out;
	EXPECT_NE(out.find("level 4"), std::string::npos) << out;
	EXPECT_NE(out.find("deferrable"), std::string::npos) << out;
	EXPECT_NE(out.find("precise    expires 123456789 ns"), std::string::npos) << out;
	EXPECT_NE(out.find("base_test_named_callback"), std::string::npos) << out;
	EXPECT_EQ(kt_base_dump(nullptr, stderr), -EINVAL);
	EXPECT_EQ(kt_base_dump(b, nullptr), -EINVAL);
	kt_timer_delete(&named);
	kt_hrtimer_cancel(&hr);
}

// ---- review of issues 10 and 12: the gathered batch ---------------------------

// The README turn: kt_base_update_time() gathers A, this turn's I/O deletes A
// (the connection closed), and the clock moves on before kt_base_run() (the
// I/O took a while), so the run gathers another bucket. The bug it pins (fixed): the
// delete unlinks A from the batch but leaves the batch's tail pointing at
// A's link, so the run appends C's bucket to A instead of to the batch - C
// never fires (it is pending forever, kt_base_check reports BATCH, then
// COUNT), and if A's memory was freed the append writes into freed memory.
// Fix: in wheel.c detach(), when a timer of the batch (IDX_EXPIRING) that is
// its last node is unlinked, move b->expiring_tail back to its pprev.
TEST(Turn, DeletingTheLastGatheredTimerKeepsLaterBucketsFiring) {
	FakeClockBase b(16, 1000);
	std::vector<Fire> log;
	Logged a, c;
	a.setup(b, 1, &log);
	c.setup(b, 2, &log);
	kt_timer_arm(&a.timer, KT_MILLIS(10));  // due in the first wait
	kt_timer_arm(&c.timer, KT_MILLIS(200)); // due a little later
	b.now = 1100;
	ASSERT_EQ(kt_base_update_time(b), 0);   // gathers a
	EXPECT_EQ(kt_timer_delete(&a.timer), 1); // I/O: the connection closed
	EXPECT_TRUE(kt_test::CheckOk(b)) << "right after the delete";
	b.now = 1300;                            // the I/O took a while
	EXPECT_EQ(kt_base_run(b), 1u);           // c is due and gathered now
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].id, 2);
	EXPECT_FALSE(kt_timer_pending(&c.timer));
	EXPECT_EQ(kt_base_pending_count(b), 0u);
	EXPECT_TRUE(kt_test::CheckOk(b));
}

// The same with the push-back that the turn order exists for: the gathered
// timer is re-armed into a bucket, then the run appends the next due bucket
// to its bucket list. The bug it pins (fixed): c is spliced behind a in a's new
// bucket (not in the batch), so it fires with a, seconds late.
TEST(Turn, PushingBackTheLastGatheredTimerKeepsItsBucketWhole) {
	FakeClockBase b(16, 1000);
	std::vector<Fire> log;
	Logged a, c;
	a.setup(b, 1, &log);
	c.setup(b, 2, &log);
	kt_timer_arm(&a.timer, KT_MILLIS(10));
	kt_timer_arm(&c.timer, KT_MILLIS(200));
	b.now = 1100;
	kt_base_update_time(b);
	EXPECT_EQ(kt_timer_arm(&a.timer, KT_MILLIS(5000)), 1); // the client spoke
	b.now = 1300;
	kt_base_run(b);
	EXPECT_FALSE(kt_timer_pending(&c.timer)) << "c was due at 1200";
	EXPECT_TRUE(kt_test::CheckOk(b));
	for (int turn = 0; turn < 20 && kt_timer_pending(&a.timer); turn++)
		b.run_at(b.now + 1000);
	EXPECT_TRUE(kt_test::CheckOk(b));
	ASSERT_EQ(log.size(), 2u);
	EXPECT_EQ(log[0].id, 2);
	EXPECT_LE(log[0].at, 1300u);
	EXPECT_EQ(log[1].id, 1);
	EXPECT_GE(log[1].at, 1100u + 5000u);
}

// The same for a one-shot call: cancelling a gathered call returns its node
// to the pool while the batch's tail still points into it. The bug it pins (fixed):
// the next call made with that node is corrupted by the run's append.
TEST(Turn, CancellingAGatheredCallKeepsLaterBucketsFiring) {
	FakeClockBase b(16, 1000);
	int ran[3] = {0, 0, 0};
	auto fn = [](void *p) { ++*static_cast<int *>(p); };
	kt_call first = kt_call_after(b, KT_MILLIS(10), fn, &ran[0]);
	kt_call_after(b, KT_MILLIS(200), fn, &ran[1]);
	b.now = 1100;
	kt_base_update_time(b);
	EXPECT_EQ(kt_call_cancel(first), 1);
	kt_call_after(b, KT_MILLIS(5000), fn, &ran[2]); // reuses first's node
	b.now = 1300;
	kt_base_run(b);
	EXPECT_EQ(ran[1], 1) << "the call due at 1200";
	EXPECT_EQ(ran[2], 0) << "the call due at 6100";
	EXPECT_TRUE(kt_test::CheckOk(b));
	b.run_at(7000);
	EXPECT_EQ(ran[0], 0);
	EXPECT_EQ(ran[1], 1);
	EXPECT_EQ(ran[2], 1);
	EXPECT_EQ(kt_base_pending_count(b), 0u);
}

namespace {

struct Checks {
	kt_timer t{};
	kt_base *base = nullptr;
	int bad = 0;
	std::string what;
	static void cb(kt_timer *t) {
		Checks *c = kt_container_of(t, Checks, t);
		::testing::AssertionResult r = kt_test::CheckOk(c->base);
		if (!r) {
			c->bad++;
			c->what = r.message();
		}
	}
};

} // namespace

// kt_base_check() is the tests' and debug builds' view of the wheel; it must
// hold inside callbacks too, where re-entrant operations are exercised.
// The bug it pins (fixed): kt__wheel_fire() pops the batch's last timer but leaves
// expiring_tail pointing at that timer's link, so a check from the last
// callback of a batch reports KT_CHECK_BATCH. Fix: when the popped timer
// was the last, reset expiring_tail to &b->expiring before its callback.
TEST(Check, HoldsInsideTheLastCallbackOfABatch) {
	ManualBase b(16, 0);
	Checks x, y;
	x.base = y.base = b;
	kt_timer_setup(&x.t, b, Checks::cb, 0);
	kt_timer_setup(&y.t, b, Checks::cb, 0);
	kt_timer_arm(&x.t, KT_MILLIS(100)); // one bucket: one batch of two
	kt_timer_arm(&y.t, KT_MILLIS(100));
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(200)), 2);
	EXPECT_EQ(x.bad + y.bad, 0) << x.what << y.what;
}

// kt_base_pending_count() counts wheel timers gathered by
// kt_base_update_time() (kt_timer_pending() is true for them); a gathered
// precise timer is just as pending. The bug it pins (fixed): it counts hr_count, the
// heap only, so the gathered precise timer disappears from the count (and
// kt_base_dump() lists one timer more than the count it prints).
TEST(Turn, PendingCountIncludesGatheredPreciseTimers) {
	FakeClockBase b(16, 1000);
	kt_hrtimer hr{};
	kt_hrtimer_setup(&hr, b, [](kt_hrtimer *) {});
	std::vector<Fire> log;
	Logged w;
	w.setup(b, 1, &log);
	kt_hrtimer_start(&hr, kt_base_now_ns(b) + 5000000);
	kt_timer_arm(&w.timer, KT_MILLIS(5));
	EXPECT_EQ(kt_base_pending_count(b), 2u);
	b.now = 1100;
	kt_base_update_time(b); // gathers both
	EXPECT_TRUE(kt_timer_pending(&w.timer));
	EXPECT_TRUE(kt_hrtimer_pending(&hr));
	EXPECT_EQ(kt_base_pending_count(b), 2u);
	EXPECT_EQ(kt_base_run(b), 2u);
	EXPECT_EQ(kt_base_pending_count(b), 0u);
}

// Debug builds: the functions documented as owner-only that touch the
// base's turn state are owner-checked too. kt_remote_forget() rewrites the
// batch the owner is applying; kt_base_dump() walks bucket lists the owner
// is relinking. Before the fix neither checked the owner, so the race went
// unreported, even under --config=asan (kt_base_dump() from an admin thread
// can follow a half-unlinked node).
extern "C" void base_test_named_call(void *) {}

// A kt_call_after() timer runs call.c's trampoline; the dump names the
// function the user handed over, which is what someone reading it looks for.
TEST(Dump, NamesTheFunctionOfAOneShotCall) {
	ManualBase b(16, 0);
	int arg = 0;
	kt_call h = kt_call_after(b, KT_MILLIS(250), base_test_named_call, &arg);
	ASSERT_TRUE(kt_call_pending(h));
	int listed = 0;
	std::string out = dump(b, &listed);
	ASSERT_EQ(listed, 1);
	EXPECT_NE(out.find("kt_call_after() of base_test_named_call+0x0"), std::string::npos) << out;
	EXPECT_EQ(out.find("on_timer"), std::string::npos) << out;
	EXPECT_EQ(kt_call_cancel(h), 1);
}

TEST(Base, ForgetAndDumpFromAnotherThreadAreReportedInDebugBuilds) {
#ifdef KT_DEBUG
	GTEST_FLAG_SET(death_test_style, "threadsafe");
	EXPECT_DEATH(
		{
			kt_base *b = kt_base_new(nullptr);
			kt_timer t{};
			kt_timer_setup(&t, b, [](kt_timer *) {}, 0);
			kt_base_run(b); // this thread owns it now
			std::thread other([&] { kt_remote_forget(&t); });
			other.join();
		},
		"kt_remote_forget\\(\\) on base .* from a thread that does not own it");
	EXPECT_DEATH(
		{
			kt_base *b = kt_base_new(nullptr);
			kt_base_run(b);
			std::thread other([&] { kt_base_dump(b, stderr); });
			other.join();
		},
		"kt_base_dump\\(\\) on base .* from a thread that does not own it");
#else
	GTEST_SKIP() << "the owner check is compiled in debug builds only (KT_DEBUG)";
#endif
}

// The manual clock saturates at its limit (2^44 ms): an advance past it stops
// there, fires what is due by then, and later advances change nothing.
TEST(Advance, ManualClockStopsAtItsLimit) {
	const uint64_t kLimit = UINT64_C(1) << 44;
	kt_base_config cfg{1, KT_CLOCK_MANUAL, kLimit - 10};
	kt_base *b = kt_base_new(&cfg);
	ASSERT_NE(b, nullptr);
	std::vector<Fire> log;
	Logged near, past;
	near.setup(b, 1, &log);
	past.setup(b, 2, &log);
	ASSERT_EQ(kt_timer_arm(&near.timer, KT_MILLIS(5)), 0);
	ASSERT_EQ(kt_mod_timer(&past.timer, kLimit + 90), 0); // due after the limit
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(1000)), 1);
	EXPECT_EQ(kt_base_now(b), kLimit);
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].id, 1);
	EXPECT_EQ(log[0].at, kLimit - 5);
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(1000)), 0);
	EXPECT_EQ(kt_base_now(b), kLimit);
	EXPECT_TRUE(kt_timer_pending(&past.timer)); // never fired early
	EXPECT_TRUE(kt_test::CheckOk(b));
	kt_base_free(b);
}

// ---- the clock's limit: what is due fires, nothing else wakes the worker ----

namespace {

constexpr uint64_t kLimit = UINT64_C(1) << 44;
const unsigned kLimitRes[] = {1u, 2u, 4u, 8u, 16u};

// A timer whose callback arms it again for a time already due, each time.
struct DueAgain {
	kt_timer timer{};
	kt_base *base = nullptr;
	int runs = 0;
	static void cb(kt_timer *t) {
		DueAgain *d = kt_container_of(t, DueAgain, timer);
		d->runs++;
		EXPECT_EQ(kt_timer_arm(t, KT_MILLIS(0)), 0);
	}
};

} // namespace

// At the limit the clock never moves again, and the wheel's next tick never
// comes: a timer armed there for a time already due fires at the next turn
// all the same (the plan waits one unit for it, as for a next tick), and
// kt_base_max_lateness() says so.
TEST(Limit, ATimerArmedAtTheLimitForNowFiresAtTheNextTurn) {
	for (unsigned res : kLimitRes) {
		ManualBase b(res, kLimit);
		std::vector<Fire> log;
		Logged zero, past, run;
		zero.setup(b, 1, &log);
		past.setup(b, 2, &log);
		run.setup(b, 3, &log);
		EXPECT_EQ(kt_base_max_lateness(b, KT_MILLIS(0)), 0u) << res;
		ASSERT_EQ(kt_timer_arm(&zero.timer, KT_MILLIS(0)), 0);
		EXPECT_EQ(kt_timer_expires(&zero.timer), kLimit);
		ASSERT_EQ(kt_mod_timer(&past.timer, kLimit - 5000), 0);
		EXPECT_EQ(kt_base_next_timeout(b), int64_t(res)) << res;
		kt_wait_plan plan = kt_base_prepare_wait(b);
		EXPECT_EQ(plan.kind, KT_WAIT_UNTIL) << res;
		EXPECT_EQ(kt_wait_plan_timeout_ms(b, &plan), int(res)) << res;
		EXPECT_EQ(kt_base_advance(b, KT_MILLIS(1000)), 2) << res;
		ASSERT_EQ(log.size(), 2u) << res;
		for (const Fire &f : log)
			EXPECT_EQ(f.at, kLimit);
		EXPECT_TRUE(kt_test::CheckOk(b)) << res;
		// Fired: nothing left to wait for.
		EXPECT_EQ(kt_base_next_timeout(b), -1) << res;
		EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_INDEFINITE) << res;
		// kt_base_run() fires it as well (a monotonic loop's turn).
		ASSERT_EQ(kt_timer_arm(&run.timer, KT_MILLIS(0)), 0);
		EXPECT_EQ(kt_base_run(b), 1u) << res;
		EXPECT_EQ(log.back().id, 3);
		EXPECT_TRUE(kt_test::CheckOk(b)) << res;
	}
}

// What can never fire - due past the limit - keeps no worker awake: the plan
// is INDEFINITE and kt_base_next_timeout() -1, turns fire nothing, and the
// timers stay pending (never early), whatever level they sit on.
TEST(Limit, NothingDuePastTheLimitWakesTheWorker) {
	for (unsigned res : kLimitRes) {
		ManualBase b(res, kLimit - 100);
		std::vector<Fire> log;
		Logged t[6];
		for (int i = 0; i < 6; i++)
			t[i].setup(b, i, &log, i == 5 ? KT_TIMER_LAZY : 0);
		kt_hrtimer h;
		kt_hrtimer_setup(&h, b, [](kt_hrtimer *) { ADD_FAILURE() << "a precise timer past the limit fired"; });
		ASSERT_EQ(kt_mod_timer(&t[0].timer, kLimit + 1), 0);
		ASSERT_EQ(kt_mod_timer(&t[1].timer, kLimit + 5000), 0);
		ASSERT_EQ(kt_mod_timer(&t[2].timer, kLimit + 86400000), 0);
		ASSERT_EQ(kt_mod_timer(&t[3].timer, UINT64_MAX), 0);
		ASSERT_EQ(kt_mod_timer(&t[5].timer, kLimit + 3), 0); // lazy, pushed later: stays
		ASSERT_EQ(kt_mod_timer(&t[5].timer, kLimit + 40000), 1);
		ASSERT_EQ(kt_hrtimer_start(&h, kLimit * 1000000 + 1), 0);
		// Before the limit already: nothing the clock can reach is pending.
		EXPECT_EQ(kt_base_next_timeout(b), -1) << res;
		EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_INDEFINITE) << res;
		EXPECT_EQ(kt_base_advance(b, KT_MILLIS(1000)), 0) << res;
		EXPECT_EQ(kt_base_now(b), kLimit);
		// At the limit, also armed there, just past it (the tick after it).
		ASSERT_EQ(kt_mod_timer(&t[4].timer, kLimit + 1), 0);
		for (int turn = 0; turn < 3; turn++) {
			EXPECT_EQ(kt_base_run(b), 0u) << res;
			EXPECT_TRUE(kt_test::CheckOk(b)) << res;
			EXPECT_EQ(kt_base_next_timeout(b), -1) << res << " turn " << turn;
			kt_wait_plan plan = kt_base_prepare_wait(b);
			EXPECT_EQ(plan.kind, KT_WAIT_INDEFINITE) << res << " turn " << turn;
			EXPECT_EQ(kt_base_advance(b, KT_MILLIS(1000)), 0) << res;
		}
		EXPECT_TRUE(log.empty()) << res;
		for (Logged &x : t)
			EXPECT_TRUE(kt_timer_pending(&x.timer)) << res << " timer " << x.id;
		EXPECT_EQ(kt_base_pending_count(b), 7u);
		EXPECT_EQ(kt_base_max_lateness(b, KT_MILLIS(1)), UINT32_MAX) << res;
		kt_hrtimer_cancel(&h);
	}
}

// A delay that ends past the limit would never end: kt_timer_arm() and the
// calls built on it refuse it with -ERANGE and change nothing; a delay that
// ends at the limit is taken and fires there.
TEST(Limit, ADelayEndingPastTheLimitIsRefused) {
	for (unsigned res : kLimitRes) {
		ManualBase b(res, kLimit - 10);
		std::vector<Fire> log;
		Logged at, over, pending;
		at.setup(b, 1, &log);
		over.setup(b, 2, &log);
		pending.setup(b, 3, &log);
		EXPECT_EQ(kt_base_max_lateness(b, KT_MILLIS(10)), 0u) << res;
		EXPECT_EQ(kt_base_max_lateness(b, KT_MILLIS(11)), UINT32_MAX) << res;
		ASSERT_EQ(kt_timer_arm(&at.timer, KT_MILLIS(10)), 0);
		EXPECT_EQ(kt_timer_arm(&over.timer, KT_MILLIS(11)), -ERANGE);
		EXPECT_FALSE(kt_timer_pending(&over.timer));
		EXPECT_EQ(kt_deadline_arm(&over.timer, KT_MILLIS(60000)), -ERANGE);
		EXPECT_FALSE(kt_timer_pending(&over.timer));
		ASSERT_EQ(kt_mod_timer(&pending.timer, kLimit - 5), 0);
		EXPECT_EQ(kt_timer_arm(&pending.timer, KT_MILLIS(30000)), -ERANGE);
		EXPECT_EQ(kt_timer_expires(&pending.timer), kLimit - 5); // unchanged
		errno = 0;
		kt_call c = kt_call_after(b, KT_MILLIS(11), [](void *) { ADD_FAILURE() << "called"; }, nullptr);
		EXPECT_TRUE(kt_call_failed(c));
		EXPECT_EQ(errno, ERANGE);
		EXPECT_EQ(kt_base_pending_count(b), 2u);
		EXPECT_EQ(kt_base_advance(b, KT_MILLIS(1000)), 2) << res;
		ASSERT_EQ(log.size(), 2u);
		for (const Fire &f : log) // at its unit; one bucket for both at 8 and 16 ms
			EXPECT_EQ(f.at, f.id == 1 ? kLimit : (kLimit - 5 + res - 1) / res * res) << res << " timer " << f.id;
		EXPECT_TRUE(kt_test::CheckOk(b)) << res;
	}
}

// A callback that re-arms for a time already due fires once per turn at the
// limit, as once per tick before it: no turn spins, and the plan waits one
// unit between them.
TEST(Limit, SelfReArmForNowFiresOncePerTurn) {
	for (unsigned res : kLimitRes) {
		ManualBase b(res, kLimit);
		DueAgain d;
		d.base = b;
		kt_timer_setup(&d.timer, b, DueAgain::cb, 0);
		ASSERT_EQ(kt_timer_arm(&d.timer, KT_MILLIS(0)), 0);
		for (int turn = 1; turn <= 3; turn++) {
			EXPECT_EQ(kt_base_run(b), 1u) << res;
			EXPECT_EQ(d.runs, 2 * turn - 1);
			kt_wait_plan plan = kt_base_prepare_wait(b);
			EXPECT_EQ(plan.kind, KT_WAIT_UNTIL) << res;
			EXPECT_EQ(kt_wait_plan_timeout_ms(b, &plan), int(res)) << res;
			EXPECT_EQ(kt_base_advance(b, KT_MILLIS(1000)), 1) << res;
			EXPECT_EQ(d.runs, 2 * turn);
			EXPECT_TRUE(kt_test::CheckOk(b)) << res;
		}
		kt_timer_delete(&d.timer);
	}
}

// ---- bounded runs: kt_base_set_run_limit() ----

namespace {

// A connection-like node that counts its fires and checks them against the
// expiry it was last armed for (never early).
struct Counted {
	kt_timer timer{};
	uint64_t expires = 0;
	int fires = 0;
	int early = 0;
	int group = 0;
	std::vector<int> *order = nullptr;
	static void cb(kt_timer *t) {
		Counted *c = kt_container_of(t, Counted, timer);
		c->fires++;
		if (kt_base_now(kt_test_base) < c->expires)
			c->early++;
		if (c->order)
			c->order->push_back(c->group);
	}
	static kt_base *kt_test_base;
};
kt_base *Counted::kt_test_base = nullptr;

} // namespace

TEST(RunLimit, BadArgumentsAreRefused) {
	EXPECT_EQ(kt_base_set_run_limit(nullptr, 1, 1), -EINVAL);
	ManualBase b;
	EXPECT_EQ(kt_base_set_run_limit(b, 0, 0), 0);
	EXPECT_EQ(kt_base_set_run_limit(b, UINT32_MAX, UINT32_MAX), 0);
}

TEST(RunLimit, SetFromACallbackIsEbusyAndKeepsTheRunsLimit) {
	std::vector<kt_timer> ts(5);
	FakeClockBase b;
	static int got;
	static kt_base *base;
	base = b;
	got = 1;
	for (auto &t : ts) {
		kt_timer_setup(&t, b, [](kt_timer *) { got = kt_base_set_run_limit(base, 0, 0); }, 0);
		kt_timer_arm(&t, KT_MILLIS(10));
	}
	ASSERT_EQ(kt_base_set_run_limit(b, 2, 0), 0);
	EXPECT_EQ(b.run_at(b.now + 100), 2u); // the callbacks' attempts to lift it failed
	EXPECT_EQ(got, -EBUSY);
}

// An expiry storm: 100,000 timers due in one bucket, 1,000 in the next,
// a limit of 1,000 callbacks per run.
TEST(RunLimit, HundredThousandInOneBucketDrainInOrderAtMostTheLimitPerRun) {
	const int kFirst = 100000, kSecond = 1000;
	std::vector<Counted> cs(kFirst + kSecond);
	FakeClockBase b(16, 1000);
	Counted::kt_test_base = b;
	std::vector<int> order;
	order.reserve(cs.size());
	// Level 2 at 16 ms (8064..64511 ms ahead): buckets 1024 ms wide. The
	// first group spans 1000 ms of one bucket, the second the next bucket.
	const uint64_t a = ((1000 + 20000) / 1024 + 1) * 1024; // a bucket boundary
	for (int i = 0; i < kFirst + kSecond; i++) {
		Counted &c = cs[i];
		c.group = i < kFirst ? 0 : 1;
		c.order = &order;
		c.expires = i < kFirst ? a + 1 + (uint64_t)(i % 1000) : a + 1024 + 1 + (uint64_t)(i % 1000);
		ASSERT_EQ(kt_timer_setup(&c.timer, b, Counted::cb, 0), 0);
		ASSERT_EQ(kt_mod_timer(&c.timer, c.expires), 0);
	}
	ASSERT_EQ(kt_base_set_run_limit(b, 1000, 0), 0);
	kt_base_stats st0{};
	ASSERT_EQ(kt_base_get_stats(b, &st0), 0);

	// Jump past both buckets: both are gathered by the first run.
	b.now = a + 4096;
	size_t total = 0;
	int runs = 0, deleted = 0, pushed = 0;
	std::vector<Counted *> pushed_back;
	for (; runs < 1000 && total < cs.size(); runs++) {
		size_t n = kt_base_run(b);
		ASSERT_LE(n, 1000u) << "run " << runs;
		ASSERT_GE(n, 1u) << "run " << runs; // never a run without progress
		total += n;
		ASSERT_TRUE(kt_test::CheckOk(b)) << "run " << runs;
		if (total - (size_t)deleted - (size_t)pushed < cs.size() && kt_base_next_timeout(b) != 0)
			break; // reported below: a left-over must make the wait immediate
		if (runs == 3) {
			// The turn's I/O: delete 10 left-overs, push 10 others back.
			for (int i = kFirst - 1; deleted < 10; i -= 7) {
				if (cs[i].fires == 0 && kt_timer_delete(&cs[i].timer) == 1)
					deleted++;
			}
			for (int i = kFirst - 2; pushed < 10; i -= 11) {
				if (cs[i].fires == 0 && kt_timer_pending(&cs[i].timer)) {
					cs[i].expires = b.now + 5000;
					ASSERT_EQ(kt_mod_timer(&cs[i].timer, cs[i].expires), 1);
					pushed_back.push_back(&cs[i]);
					pushed++;
				}
			}
		}
		if (total + (size_t)deleted + (size_t)pushed == cs.size())
			break;
		kt_wait_plan p = kt_base_prepare_wait(b);
		ASSERT_EQ(p.kind, KT_WAIT_IMMEDIATE) << "run " << runs << ", " << total << " fired";
	}
	EXPECT_EQ(total, cs.size() - 20u);
	EXPECT_GE(runs, 100); // 101,000 - 20 at 1,000 a run
	// The earlier bucket drained before the later one fired.
	ASSERT_EQ(order.size(), total);
	for (size_t i = 1; i < order.size(); i++)
		ASSERT_LE(order[i - 1], order[i]) << "fire " << i;
	// Drained: the wait is no longer immediate; the pushed-back ones wait.
	EXPECT_GT(kt_base_next_timeout(b), 0);
	for (Counted *c : pushed_back)
		EXPECT_EQ(c->fires, 0);
	b.run_at(b.now + 4000); // before their new time
	for (Counted *c : pushed_back)
		EXPECT_EQ(c->fires, 0);
	for (int i = 0; i < 20 && kt_base_pending_count(b) > 0; i++)
		b.run_at(b.now + 1000);
	for (Counted *c : pushed_back)
		EXPECT_EQ(c->fires, 1);
	int never = 0, twice = 0, early = 0;
	for (const Counted &c : cs) {
		never += c.fires == 0;
		twice += c.fires > 1;
		early += c.early;
	}
	EXPECT_EQ(never, 10); // exactly the deleted ones
	EXPECT_EQ(twice, 0);
	EXPECT_EQ(early, 0);
	kt_base_stats st{};
	ASSERT_EQ(kt_base_get_stats(b, &st), 0);
	EXPECT_GE(st.limited_runs - st0.limited_runs, 100u);
	EXPECT_EQ(st.fired - st0.fired, cs.size() - 10u);
}

TEST(RunLimit, LeftOversFireBeforeBucketsThatComeDueLater) {
	std::vector<Counted> cs(30);
	FakeClockBase b(16, 1000);
	Counted::kt_test_base = b;
	std::vector<int> order;
	for (int i = 0; i < 30; i++) {
		cs[i].group = i < 20 ? 0 : 1;
		cs[i].order = &order;
		cs[i].expires = i < 20 ? 1100 : 1300;
		kt_timer_setup(&cs[i].timer, b, Counted::cb, 0);
		kt_mod_timer(&cs[i].timer, cs[i].expires);
	}
	kt_base_set_run_limit(b, 8, 0);
	EXPECT_EQ(b.run_at(1200), 8u); // only the first bucket is due
	EXPECT_EQ(b.run_at(1400), 8u); // the second is now due too: left-overs first
	EXPECT_EQ(b.run_at(1400), 8u);
	EXPECT_EQ(b.run_at(1400), 6u);
	ASSERT_EQ(order.size(), 30u);
	for (size_t i = 0; i < order.size(); i++)
		EXPECT_EQ(order[i], i < 20 ? 0 : 1) << i;
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(RunLimit, GatheredByUpdateTimeThenLimitedLosesNothing) {
	std::vector<Counted> cs(50);
	FakeClockBase b(16, 1000);
	Counted::kt_test_base = b;
	for (int i = 0; i < 50; i++) {
		cs[i].expires = 1050 + (uint64_t)i * 20;
		kt_timer_setup(&cs[i].timer, b, Counted::cb, 0);
		kt_mod_timer(&cs[i].timer, cs[i].expires);
	}
	kt_base_set_run_limit(b, 7, 0);
	size_t total = 0;
	for (int turn = 0; turn < 300 && total < 50; turn++) {
		b.now += 10;
		kt_base_update_time(b); // the loop's "update the time" step
		total += kt_base_run(b);
		ASSERT_TRUE(kt_test::CheckOk(b)) << turn;
	}
	EXPECT_EQ(total, 50u);
	for (const Counted &c : cs) {
		EXPECT_EQ(c.fires, 1);
		EXPECT_EQ(c.early, 0);
	}
}

TEST(RunLimit, TimeLimitStopsBetweenSlowCallbacks) {
	std::vector<kt_timer> ts(20);
	FakeClockBase b(16, 1000);
	static FakeClockBase *clock;
	clock = &b;
	static int ran;
	ran = 0;
	for (auto &t : ts) {
		// Each callback takes 1 ms of the base's monotonic clock.
		kt_timer_setup(&t, b, [](kt_timer *) { ran++; clock->now += 1; }, 0);
		kt_timer_arm(&t, KT_MILLIS(10));
	}
	ASSERT_EQ(kt_base_set_run_limit(b, 0, 5000), 0); // 5 ms
	b.now = 1100;
	EXPECT_EQ(kt_base_run(b), 5u); // stopped between callbacks, not within one
	EXPECT_EQ(ran, 5);
	EXPECT_EQ(kt_base_next_timeout(b), 0);
	EXPECT_EQ(kt_base_run(b), 5u);
	EXPECT_EQ(kt_base_run(b), 5u);
	EXPECT_EQ(kt_base_run(b), 5u);
	EXPECT_EQ(ran, 20);
	EXPECT_NE(kt_base_next_timeout(b), 0);
}

TEST(RunLimit, ASlowFirstCallbackStillRunsOnePerCall) {
	std::vector<kt_timer> ts(3);
	FakeClockBase b(16, 1000);
	static FakeClockBase *clock;
	clock = &b;
	for (auto &t : ts) {
		kt_timer_setup(&t, b, [](kt_timer *) { clock->now += 50; }, 0); // 10x the limit
		kt_timer_arm(&t, KT_MILLIS(10));
	}
	kt_base_set_run_limit(b, 0, 5000);
	b.now = 1100;
	EXPECT_EQ(kt_base_run(b), 1u);
	EXPECT_EQ(kt_base_run(b), 1u);
	EXPECT_EQ(kt_base_run(b), 1u);
	EXPECT_EQ(kt_base_pending_count(b), 0u);
}

TEST(RunLimit, PreciseTimersCountTowardTheLimit) {
	std::vector<kt_hrtimer> hs(6);
	std::vector<kt_timer> ts(6);
	FakeClockBase b(16, 1000);
	static int hr, wheel;
	hr = wheel = 0;
	for (auto &h : hs) {
		kt_hrtimer_setup(&h, b, [](kt_hrtimer *) { hr++; });
		kt_hrtimer_start(&h, 1010 * UINT64_C(1000000));
	}
	for (auto &t : ts) {
		kt_timer_setup(&t, b, [](kt_timer *) { wheel++; }, 0);
		kt_timer_arm(&t, KT_MILLIS(10));
	}
	kt_base_set_run_limit(b, 4, 0);
	EXPECT_EQ(b.run_at(1100), 4u);
	EXPECT_EQ(hr, 4);
	EXPECT_EQ(wheel, 0);
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_EQ(kt_base_run(b), 4u);
	EXPECT_EQ(hr, 6);
	EXPECT_EQ(wheel, 2);
	EXPECT_EQ(kt_base_run(b), 4u);
	EXPECT_EQ(wheel, 6);
	EXPECT_EQ(kt_base_run(b), 0u);
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_INDEFINITE);
}

TEST(RunLimit, RemoteDoneCallbacksAreNotLimited) {
	std::vector<kt_timer> ts(10);
	FakeClockBase b(16, 1000);
	static int done;
	done = 0;
	for (auto &t : ts) {
		kt_timer_setup(&t, b, [](kt_timer *) {}, 0);
		ASSERT_EQ(kt_remote_arm(&t, KT_MILLIS(1000), [](kt_timer *, int, void *) { done++; }, nullptr), 0);
	}
	kt_base_set_run_limit(b, 1, 0);
	EXPECT_EQ(kt_base_run(b), 0u);
	EXPECT_EQ(done, 10);
	EXPECT_EQ(kt_base_run_done_calls(b), 10u);
	kt_base_stats st{};
	kt_base_get_stats(b, &st);
	EXPECT_EQ(st.limited_runs, 0u);
}

TEST(RunLimit, AdvanceOfTheManualClockIsNotLimited) {
	std::vector<kt_timer> ts(100);
	ManualBase b;
	static int n;
	n = 0;
	for (auto &t : ts) {
		kt_timer_setup(&t, b, [](kt_timer *) { n++; }, 0);
		kt_timer_arm(&t, KT_MILLIS(100));
	}
	kt_base_set_run_limit(b, 10, 1);
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(1000)), 100);
	EXPECT_EQ(n, 100);
}

TEST(RunLimit, LeftOverReArmedFromItsOwnBucketForLaterIsNotFiredEarly) {
	std::vector<Counted> cs(10);
	FakeClockBase b(16, 1000);
	Counted::kt_test_base = b;
	for (auto &c : cs) {
		c.expires = 1040;
		kt_timer_setup(&c.timer, b, Counted::cb, 0);
		kt_mod_timer(&c.timer, c.expires);
	}
	kt_base_set_run_limit(b, 2, 0);
	EXPECT_EQ(b.run_at(1050), 2u);
	// Within the same 16 ms unit as before, but later than now: the
	// same-bucket shortcut may keep it in the batch; it must still wait.
	for (auto &c : cs)
		if (!c.fires) {
			c.expires = 1052;
			kt_mod_timer(&c.timer, c.expires);
		}
	size_t total = 2;
	for (int i = 0; i < 10 && total < 10; i++)
		total += kt_base_run(b); // still at 1050
	EXPECT_EQ(total, 2u);
	for (int i = 0; i < 10 && total < 10; i++)
		total += b.run_at(1052 + (uint64_t)i);
	EXPECT_EQ(total, 10u);
	for (auto &c : cs) {
		EXPECT_EQ(c.fires, 1);
		EXPECT_EQ(c.early, 0);
	}
}

TEST(RunLimit, FreeWithLeftOversDetachesThem) {
	kt_base_config cfg{16, KT_CLOCK_MONOTONIC, 0};
	kt_base *b = kt_base_new(&cfg);
	static uint64_t now;
	now = 1000;
	kt__base_set_time_source(b, [](void *) { return now; }, nullptr);
	kt_base_run(b);
	std::vector<kt_timer> ts(10);
	for (auto &t : ts) {
		kt_timer_setup(&t, b, [](kt_timer *) {}, 0);
		kt_timer_arm(&t, KT_MILLIS(10));
	}
	kt_base_set_run_limit(b, 3, 0);
	now = 1100;
	EXPECT_EQ(kt_base_run(b), 3u);
	kt_base_free(b);
	for (auto &t : ts)
		EXPECT_FALSE(kt_timer_pending(&t));
}

// The worker loop of base.h (update the time, handle I/O, run): a precise
// timer gathered by kt_base_update_time() is due later than a stopped run's
// wheel left-overs and must not go before them. It did, and with a pacer due
// at every turn and a limit of 1 the left-overs never fired at all.
TEST(RunLimit, PreciseTimerGatheredByUpdateTimeDoesNotStarveWheelLeftOvers) {
	static FakeClockBase *fb;
	static kt_hrtimer pacer;
	static int wheel, paced;
	FakeClockBase b(1, 1000);
	fb = &b;
	wheel = paced = 0;
	kt_hrtimer_setup(&pacer, b, [](kt_hrtimer *h) {
		paced++;
		kt_hrtimer_start(h, (fb->now + 1) * UINT64_C(1000000)); // due at every turn
	});
	kt_hrtimer_start(&pacer, 1005 * UINT64_C(1000000));
	std::vector<kt_timer> ts(2);
	for (auto &t : ts) {
		kt_timer_setup(&t, b, [](kt_timer *) { wheel++; }, 0);
		kt_timer_arm(&t, KT_MILLIS(5));
	}
	ASSERT_EQ(kt_base_set_run_limit(b, 1, 0), 0);
	for (int turn = 0; turn < 40; turn++) {
		b.now++;
		ASSERT_EQ(kt_base_update_time(b), 0);
		EXPECT_LE(kt_base_run(b), 1u);
		EXPECT_TRUE(CheckOk(b));
	}
	EXPECT_EQ(wheel, 2); // due at 1005: 35 turns is plenty at one per turn
	EXPECT_GT(paced, 10);
	kt_hrtimer_cancel(&pacer);
}

// A left-over's callback that cancels another left-over: the precise timer
// gathered later must still wait for the wheel's left-overs (the run used to
// count the precise left-overs at its start and fire that many).
TEST(RunLimit, LeftOverCancelledByALeftOversCallbackLetsNothingLaterJumpTheQueue) {
	static kt_hrtimer hs[5];
	static std::vector<int> order;
	FakeClockBase b(1, 1000);
	order.clear();
	for (int i = 0; i < 5; i++) {
		kt_hrtimer_setup(&hs[i], b, [](kt_hrtimer *h) {
			int id = int(h - hs);
			order.push_back(id);
			if (id == 2)
				kt_hrtimer_cancel(&hs[3]);
		});
		kt_hrtimer_start(&hs[i], (i < 4 ? 1005 : 1012) * UINT64_C(1000000));
	}
	kt_timer w;
	kt_timer_setup(&w, b, [](kt_timer *) { order.push_back(100); }, 0);
	kt_mod_timer(&w, 1005);
	ASSERT_EQ(kt_base_set_run_limit(b, 2, 0), 0);
	EXPECT_EQ(b.run_at(1010), 2u); // hs[0], hs[1]; left: hs[2], hs[3], w
	EXPECT_EQ(b.run_at(1015), 2u); // hs[2] (cancels hs[3]), then w - not hs[4], due later
	EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 100}));
	EXPECT_EQ(b.run_at(1016), 1u);
	EXPECT_EQ(order.back(), 4);
	EXPECT_TRUE(CheckOk(b));
}

// A backlog that outgrows the batch: at a limit of 1, two one-timer buckets
// come due per turn, so left-over buckets pile up past the batch's 1,024
// groups and the wheel clock is held back. Nothing fires early, nothing is
// lost or doubled, the base checks out at every turn, and once the arming
// stops the backlog drains.
TEST(RunLimit, BacklogPastTheBatchsRoomHoldsTheClockAndLosesNothing) {
	struct T {
		kt_timer timer;
		uint64_t expires;
		int fires;
	};
	static std::vector<T> ts;
	static FakeClockBase *fb;
	static uint64_t last_expires;
	static int early;
	static uint64_t inversion;
	FakeClockBase b(1, 1000);
	fb = &b;
	ts.assign(3000, T{});
	early = 0;
	last_expires = inversion = 0;
	ASSERT_EQ(kt_base_set_run_limit(b, 1, 0), 0);
	size_t armed = 0, fired = 0;
	auto cb = [](kt_timer *t) {
		T *x = kt_container_of(t, T, timer);
		x->fires++;
		early += kt_base_now(fb->b) < x->expires;
		if (x->expires < last_expires)
			inversion = std::max(inversion, last_expires - x->expires);
		last_expires = std::max(last_expires, x->expires);
	};
	bool held = false;
	for (int turn = 0; turn < 20000 && fired < ts.size(); turn++) {
		b.now += 2;
		ASSERT_EQ(kt_base_update_time(b), 0);
		// Two timers due 10 ms from now, in distinct 1 ms buckets.
		for (int k = 0; k < 2 && armed < ts.size(); k++, armed++) {
			T &x = ts[armed];
			x.expires = kt_base_now(b) + 10 + uint64_t(k);
			kt_timer_setup(&x.timer, b, cb, 0);
			kt_mod_timer(&x.timer, x.expires);
		}
		size_t n = kt_base_run(b);
		EXPECT_LE(n, 1u);
		fired += n;
		ASSERT_TRUE(CheckOk(b)) << "turn " << turn;
		held |= kt_base_next_timeout(b) == 0 && kt_base_pending_count(b) > 1024;
	}
	EXPECT_TRUE(held);
	EXPECT_EQ(fired, ts.size());
	EXPECT_EQ(early, 0);
	// Timers armed while the clock is held back land on coarser levels
	// (base.h): out of expiry order by at most such a bucket, never by more.
	EXPECT_LT(inversion, 512u) << "max inversion " << inversion;
	for (auto &x : ts)
		EXPECT_EQ(x.fires, 1);
}

// ---- a limited run spends its budget on callbacks only ----

namespace {

int budget_fires = 0;
void budget_cb(kt_timer *) { budget_fires++; }

} // namespace

// Limit 3: three due timers, then a lazy one pushed later (in the batch, but
// only requeued when taken, no callback). The run must not stop in front of
// it: nothing due is left, so the run is not limited and the next wait is
// not immediate (it was: "limit 3, ran 3, the batch left holds 1 wheel
// timer, not due", counted as a limited run).
TEST(RunLimit, ALazyTimerThatIsOnlyRequeuedCostsNoBudgetAndIsNoReasonToStop) {
	FakeClockBase b(16, 1000);
	std::vector<kt_timer> plain(3);
	kt_timer lazy{};
	budget_fires = 0;
	for (kt_timer &t : plain) {
		ASSERT_EQ(kt_timer_setup(&t, b, budget_cb, 0), 0);
		ASSERT_EQ(kt_mod_timer(&t, 1100), 0); // the bucket of unit 69 (1104 ms)
	}
	ASSERT_EQ(kt_timer_setup(&lazy, b, budget_cb, KT_TIMER_LAZY), 0);
	ASSERT_EQ(kt_mod_timer(&lazy, 1150), 0); // unit 72: a later group of the batch
	ASSERT_EQ(kt_mod_timer(&lazy, 5000), 1); // pushed later: stays in unit 72's bucket
	ASSERT_EQ(kt_base_set_run_limit(b, 3, 0), 0);
	kt_base_stats st0{}, st{};
	ASSERT_EQ(kt_base_get_stats(b, &st0), 0);
	EXPECT_EQ(b.run_at(1200), 3u); // both buckets gathered: 3 callbacks, the lazy requeued
	ASSERT_EQ(kt_base_get_stats(b, &st), 0);
	EXPECT_EQ(st.limited_runs - st0.limited_runs, 0u) << "no due timer was left";
	EXPECT_TRUE(CheckOk(b));
	kt_wait_plan p = kt_base_prepare_wait(b);
	EXPECT_EQ(p.kind, KT_WAIT_UNTIL) << "an immediate plan with nothing due";
	EXPECT_GT(kt_base_next_timeout(b), 0);
	EXPECT_TRUE(kt_timer_pending(&lazy));
	EXPECT_EQ(budget_fires, 3);
	// And it fires at its time, never early.
	EXPECT_EQ(b.run_at(4999), 0u);
	for (int i = 0; i < 10 && kt_timer_pending(&lazy); i++)
		b.run_at(5000 + 200 * uint64_t(i));
	EXPECT_FALSE(kt_timer_pending(&lazy));
	EXPECT_EQ(budget_fires, 4);
}

// The same with a due timer behind the lazy one: the run stops in front of
// the due one (it would fire), counts as limited, and that timer is what the
// next run fires.
TEST(RunLimit, ALimitedRunStopsOnlyInFrontOfATimerThatWillFire) {
	// First: kt_base_free() detaches lazy, still pending.
	std::vector<kt_timer> plain(3);
	kt_timer lazy{}, last{};
	FakeClockBase b(16, 1000);
	budget_fires = 0;
	for (kt_timer &t : plain) {
		ASSERT_EQ(kt_timer_setup(&t, b, budget_cb, 0), 0);
		ASSERT_EQ(kt_mod_timer(&t, 1100), 0);
	}
	ASSERT_EQ(kt_timer_setup(&lazy, b, budget_cb, KT_TIMER_LAZY), 0);
	ASSERT_EQ(kt_mod_timer(&lazy, 1150), 0);
	ASSERT_EQ(kt_mod_timer(&lazy, 5000), 1);
	ASSERT_EQ(kt_timer_setup(&last, b, budget_cb, 0), 0);
	ASSERT_EQ(kt_mod_timer(&last, 1180), 0); // unit 74: behind the lazy one
	ASSERT_EQ(kt_base_set_run_limit(b, 3, 0), 0);
	kt_base_stats st0{}, st{};
	ASSERT_EQ(kt_base_get_stats(b, &st0), 0);
	EXPECT_EQ(b.run_at(1200), 3u);
	ASSERT_EQ(kt_base_get_stats(b, &st), 0);
	EXPECT_EQ(st.limited_runs - st0.limited_runs, 1u);
	EXPECT_TRUE(kt_timer_pending(&last));
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE); // a due timer is left
	EXPECT_EQ(b.run_at(1200), 1u);
	EXPECT_FALSE(kt_timer_pending(&last));
	ASSERT_EQ(kt_base_get_stats(b, &st), 0);
	EXPECT_EQ(st.limited_runs - st0.limited_runs, 1u); // the second run was not stopped
	EXPECT_TRUE(kt_timer_pending(&lazy));
	EXPECT_NE(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_EQ(budget_fires, 4);
	EXPECT_TRUE(CheckOk(b));
}

// A run stopped by its limit leaves its left-overs where they are in the
// batch: moving them to its front after every stopped run touched each
// left-over list's first node (a likely cache miss), which made a limit of
// 256 cost 1.17x per fired timer at 100k pending. A left-over's link into
// the batch (private, read here only for this) must not change.
TEST(RunLimit, AStoppedRunDoesNotMoveItsLeftOvers) {
	FakeClockBase b(16, 1000);
	std::vector<kt_timer> ts(8);
	budget_fires = 0;
	for (size_t i = 0; i < ts.size(); i++) {
		ASSERT_EQ(kt_timer_setup(&ts[i], b, budget_cb, 0), 0);
		ASSERT_EQ(kt_mod_timer(&ts[i], 1050 + 16 * i), 0); // one bucket (group) each
	}
	ASSERT_EQ(kt_base_set_run_limit(b, 3, 0), 0);
	b.now = 1300;
	ASSERT_EQ(kt_base_update_time(b), 0); // gathered: each timer heads a batch entry
	std::vector<kt_timer **> where(ts.size());
	for (size_t i = 0; i < ts.size(); i++)
		where[i] = ts[i].kt__pprev;
	EXPECT_EQ(kt_base_run(b), 3u);
	size_t left = 0;
	for (size_t i = 0; i < ts.size(); i++)
		if (kt_timer_pending(&ts[i])) {
			left++;
			EXPECT_EQ(ts[i].kt__pprev, where[i]) << "left-over " << i << " was moved";
		}
	EXPECT_EQ(left, 5u);
	EXPECT_TRUE(CheckOk(b));
	EXPECT_EQ(kt_base_run(b), 3u);
	EXPECT_TRUE(CheckOk(b));
	EXPECT_EQ(kt_base_run(b), 2u);
	EXPECT_EQ(budget_fires, 8);
	EXPECT_NE(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_TRUE(CheckOk(b));
}

// ---- a limited run's countdown: the count, the clock, and the phases ----

namespace {

// Callbacks that cost the fake clock `cost_ms` each, or `slow_ms` for the
// callback numbered `slow_at` (counted over the whole test from 1).
struct Costly {
	static FakeClockBase *clock;
	static uint64_t cost_ms, slow_ms;
	static int ran, slow_at;
	static void cb(kt_timer *) {
		ran++;
		clock->now += ran == slow_at ? slow_ms : cost_ms;
	}
	static void reset(FakeClockBase *b) {
		clock = b;
		cost_ms = slow_ms = 0;
		ran = slow_at = 0;
	}
};
FakeClockBase *Costly::clock;
uint64_t Costly::cost_ms, Costly::slow_ms;
int Costly::ran, Costly::slow_at;

uint64_t limited_runs(kt_base *b) {
	kt_base_stats st{};
	EXPECT_EQ(kt_base_get_stats(b, &st), 0);
	return st.limited_runs;
}

} // namespace

// A count and a time limit together: whichever is reached first stops the
// run, never one callback later; each stopped run with due timers left
// counts as limited, the last (nothing left) does not.
TEST(RunLimit, CountAndTimeLimitsTogetherStopAtWhicheverComesFirst) {
	FakeClockBase b(16, 1000);
	Costly::reset(&b);
	std::vector<kt_timer> ts(10);
	for (kt_timer &t : ts)
		ASSERT_EQ(kt_timer_setup(&t, b, Costly::cb, 0), 0);
	auto arm_all = [&] {
		for (kt_timer &t : ts)
			ASSERT_EQ(kt_timer_arm(&t, KT_MILLIS(10)), 0);
	};
	auto runs_until_drained = [&] {
		std::vector<size_t> got;
		for (int i = 0; i < 20 && kt_base_pending_count(b) > 0; i++)
			got.push_back(kt_base_run(b));
		return got;
	};
	uint64_t lim0 = limited_runs(b);

	// The count first: free callbacks, 10 ms allowed.
	arm_all();
	ASSERT_EQ(kt_base_set_run_limit(b, 3, 10000), 0);
	b.now += 100;
	EXPECT_EQ(runs_until_drained(), (std::vector<size_t>{3, 3, 3, 1}));
	EXPECT_EQ(limited_runs(b) - lim0, 3u);

	// The time first: 1 ms a callback, 4 ms allowed, 10 callbacks allowed.
	arm_all();
	Costly::cost_ms = 1;
	ASSERT_EQ(kt_base_set_run_limit(b, 10, 4000), 0);
	b.now += 100;
	EXPECT_EQ(runs_until_drained(), (std::vector<size_t>{4, 4, 2}));
	EXPECT_EQ(limited_runs(b) - lim0, 5u);

	// The count first again, with the clock moving: 2 a run.
	arm_all();
	ASSERT_EQ(kt_base_set_run_limit(b, 2, 4000), 0);
	b.now += 100;
	EXPECT_EQ(runs_until_drained(), (std::vector<size_t>{2, 2, 2, 2, 2}));
	EXPECT_EQ(limited_runs(b) - lim0, 9u);
	EXPECT_EQ(Costly::ran, 30);
	EXPECT_TRUE(CheckOk(b));
}

// A time limit is read before every callback after the first, not every
// few: the run stops right behind whichever callback used the time up.
TEST(RunLimit, ATimeLimitIsReadBeforeEveryCallbackAfterTheFirst) {
	FakeClockBase b(16, 1000);
	Costly::reset(&b);
	std::vector<kt_timer> ts(20);
	for (kt_timer &t : ts) {
		ASSERT_EQ(kt_timer_setup(&t, b, Costly::cb, 0), 0);
		ASSERT_EQ(kt_timer_arm(&t, KT_MILLIS(10)), 0);
	}
	ASSERT_EQ(kt_base_set_run_limit(b, 0, 5000), 0);
	Costly::slow_ms = 10;
	b.now = 1100;
	size_t total = 0;
	for (int k = 2; k <= 5; k++) {
		Costly::slow_at = int(total) + k; // the k-th callback of this run is slow
		EXPECT_EQ(kt_base_run(b), size_t(k)) << "slow callback " << k << " of the run";
		total += size_t(k);
	}
	EXPECT_EQ(total, 14u);
	EXPECT_EQ(kt_base_run(b), 6u); // none slow: the rest in one run
	EXPECT_EQ(Costly::ran, 20);
	EXPECT_EQ(kt_base_pending_count(b), 0u);
}

// The time runs out in front of a node that is only requeued (a lazy timer
// pushed later): no stop there, but the clock is read again in front of
// the next node, a due one, and the run stops there - limited.
TEST(RunLimit, ATimeLimitSpentInFrontOfARequeueStopsBeforeTheNextDueTimer) {
	FakeClockBase b(16, 1000);
	Costly::reset(&b);
	kt_timer slow{}, lazy{}, p1{}, p2{};
	ASSERT_EQ(kt_timer_setup(&slow, b, Costly::cb, 0), 0);
	ASSERT_EQ(kt_timer_setup(&lazy, b, Costly::cb, KT_TIMER_LAZY), 0);
	ASSERT_EQ(kt_timer_setup(&p1, b, Costly::cb, 0), 0);
	ASSERT_EQ(kt_timer_setup(&p2, b, Costly::cb, 0), 0);
	ASSERT_EQ(kt_mod_timer(&slow, 1100), 0); // unit 69
	ASSERT_EQ(kt_mod_timer(&lazy, 1120), 0); // unit 70 ...
	ASSERT_EQ(kt_mod_timer(&lazy, 5000), 1); // ... pushed later, stays there
	ASSERT_EQ(kt_mod_timer(&p1, 1150), 0);   // unit 72
	ASSERT_EQ(kt_mod_timer(&p2, 1150), 0);
	ASSERT_EQ(kt_base_set_run_limit(b, 0, 5000), 0);
	Costly::slow_at = 1;
	Costly::slow_ms = 10;
	uint64_t lim0 = limited_runs(b);
	EXPECT_EQ(b.run_at(1200), 1u); // slow; the lazy one requeued; stopped in front of p1
	EXPECT_EQ(limited_runs(b) - lim0, 1u);
	EXPECT_TRUE(kt_timer_pending(&p1));
	EXPECT_TRUE(kt_timer_pending(&p2));
	EXPECT_TRUE(kt_timer_pending(&lazy));
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_TRUE(CheckOk(b));
	EXPECT_EQ(kt_base_run(b), 2u); // p1, p2: the clock did not move
	EXPECT_EQ(limited_runs(b) - lim0, 1u);
	EXPECT_NE(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_EQ(b.run_at(4999), 0u);
	for (int i = 0; i < 10 && kt_timer_pending(&lazy); i++)
		b.run_at(5000 + 200 * uint64_t(i));
	EXPECT_FALSE(kt_timer_pending(&lazy));
	EXPECT_EQ(Costly::ran, 4);
	EXPECT_TRUE(CheckOk(b));
}

// The left-overs of a stopped run use up the whole count limit, and what
// the turn gathered behind them is only a lazy timer pushed later: the run
// is not stopped (nothing due is left), so not limited, and the next wait
// is not immediate.
TEST(RunLimit, LeftOversThatSpendTheWholeLimitBeforeOnlyARequeueAreNoStop) {
	FakeClockBase b(16, 1000);
	std::vector<kt_timer> plain(8);
	kt_timer lazy{};
	budget_fires = 0;
	for (kt_timer &t : plain) {
		ASSERT_EQ(kt_timer_setup(&t, b, budget_cb, 0), 0);
		ASSERT_EQ(kt_mod_timer(&t, 1100), 0); // unit 69
	}
	ASSERT_EQ(kt_base_set_run_limit(b, 4, 0), 0);
	uint64_t lim0 = limited_runs(b);
	EXPECT_EQ(b.run_at(1110), 4u);
	EXPECT_EQ(limited_runs(b) - lim0, 1u);
	ASSERT_EQ(kt_timer_setup(&lazy, b, budget_cb, KT_TIMER_LAZY), 0);
	ASSERT_EQ(kt_mod_timer(&lazy, 1130), 0); // unit 71 ...
	ASSERT_EQ(kt_mod_timer(&lazy, 5000), 1); // ... pushed later, stays there
	EXPECT_EQ(b.run_at(1140), 4u);           // the 4 left-overs, the lazy one requeued
	EXPECT_EQ(limited_runs(b) - lim0, 1u) << "no due timer was left";
	EXPECT_NE(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_TRUE(kt_timer_pending(&lazy));
	EXPECT_EQ(budget_fires, 8);
	EXPECT_TRUE(CheckOk(b));
	for (int i = 0; i < 10 && kt_timer_pending(&lazy); i++)
		b.run_at(5000 + 200 * uint64_t(i));
	EXPECT_EQ(budget_fires, 9);
}

// Set up every node of @cs, group 0 (the first @first, due at @t0, armed)
// and group 1 (the rest, due at @t1, armed later by the test).
static void SetUpTwoGroups(FakeClockBase &b, std::vector<Counted> &cs, std::vector<int> &order, size_t first,
			   uint64_t t0, uint64_t t1) {
	Counted::kt_test_base = b;
	for (size_t i = 0; i < cs.size(); i++) {
		cs[i].order = &order;
		cs[i].group = i < first ? 0 : 1;
		cs[i].expires = i < first ? t0 : t1;
		ASSERT_EQ(kt_timer_setup(&cs[i].timer, b, Counted::cb, 0), 0);
		if (i < first)
			ASSERT_EQ(kt_mod_timer(&cs[i].timer, cs[i].expires), 0);
	}
}

// A run whose left-overs alone exceed its limit stops among them and does
// not touch what the turn gathered behind them (a lazy timer pushed later
// and a due timer); the next runs go on in order: the rest of the
// left-overs, then the lazy timer requeued (no budget), then the due timer
// - which the limit leaves for a third run. Each fires once, the lazy one
// at its time.
TEST(RunLimit, AStoppedRunLeavesWhatWasGatheredBehindItsLeftOversForTheNextRuns) {
	FakeClockBase b(16, 1000);
	std::vector<Counted> cs(13);
	std::vector<int> order;
	kt_timer lazy{};
	budget_fires = 0;
	SetUpTwoGroups(b, cs, order, 12, 1100, 1150); // units 69 and 72
	ASSERT_EQ(kt_base_set_run_limit(b, 4, 0), 0);
	uint64_t lim0 = limited_runs(b);
	EXPECT_EQ(b.run_at(1110), 4u);
	ASSERT_EQ(kt_timer_setup(&lazy, b, budget_cb, KT_TIMER_LAZY), 0);
	ASSERT_EQ(kt_mod_timer(&lazy, 1130), 0); // unit 71 ...
	ASSERT_EQ(kt_mod_timer(&lazy, 5000), 1); // ... pushed later
	ASSERT_EQ(kt_mod_timer(&cs[12].timer, cs[12].expires), 0);
	EXPECT_EQ(b.run_at(1160), 4u); // left-overs only: 4 of the 8
	EXPECT_EQ(cs[12].fires, 0);
	EXPECT_TRUE(CheckOk(b));
	EXPECT_EQ(kt_base_run(b), 4u); // the last 4; the lazy one requeued; stopped in front of cs[12]
	EXPECT_EQ(cs[12].fires, 0);
	EXPECT_EQ(limited_runs(b) - lim0, 3u);
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_EQ(kt_base_run(b), 1u);
	EXPECT_EQ(limited_runs(b) - lim0, 3u);
	EXPECT_NE(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	ASSERT_EQ(order.size(), 13u);
	for (size_t i = 0; i < order.size(); i++)
		EXPECT_EQ(order[i], i < 12 ? 0 : 1) << i;
	EXPECT_EQ(budget_fires, 0);
	EXPECT_TRUE(kt_timer_pending(&lazy));
	EXPECT_EQ(b.run_at(4999), 0u);
	for (int i = 0; i < 10 && kt_timer_pending(&lazy); i++)
		b.run_at(5000 + 200 * uint64_t(i));
	EXPECT_EQ(budget_fires, 1);
	for (const Counted &c : cs) {
		EXPECT_EQ(c.fires, 1);
		EXPECT_EQ(c.early, 0);
	}
	EXPECT_TRUE(CheckOk(b));
}

// The left-overs use up the whole count limit exactly, and a due timer was
// gathered behind them: the run stops in front of it (limited), never one
// callback past the limit, and the next run fires it.
TEST(RunLimit, LeftOversThatSpendTheWholeLimitStopInFrontOfTheNextDueTimer) {
	FakeClockBase b(16, 1000);
	std::vector<Counted> cs(9);
	std::vector<int> order;
	SetUpTwoGroups(b, cs, order, 8, 1100, 1130); // units 69 and 71
	ASSERT_EQ(kt_base_set_run_limit(b, 4, 0), 0);
	uint64_t lim0 = limited_runs(b);
	EXPECT_EQ(b.run_at(1110), 4u);
	ASSERT_EQ(kt_mod_timer(&cs[8].timer, cs[8].expires), 0);
	EXPECT_EQ(b.run_at(1140), 4u); // the 4 left-overs, not the one behind them
	EXPECT_EQ(cs[8].fires, 0);
	EXPECT_EQ(limited_runs(b) - lim0, 2u);
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_EQ(kt_base_run(b), 1u);
	EXPECT_EQ(limited_runs(b) - lim0, 2u);
	EXPECT_EQ(order, (std::vector<int>{0, 0, 0, 0, 0, 0, 0, 0, 1}));
	for (const Counted &c : cs) {
		EXPECT_EQ(c.fires, 1);
		EXPECT_EQ(c.early, 0);
	}
	EXPECT_TRUE(CheckOk(b));
}
