// The base: lifecycle, clocks, the wait plan, the invariant walker, the
// owner thread, kt_base_dump(), the clock's limit. One edge case per test
// name. The turn (kt_base_update_time(), I/O, kt_base_run()) is in
// base_turn_test.cc, bounded runs in base_run_limit_test.cc. Manual or fake
// clocks only; nothing here sleeps.
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
	for (int r = KT_CHECK_OK; r >= KT_CHECK_FAST_PATH; r--) {
		std::string n = kt_base_check_str(r);
		EXPECT_EQ(n.find("unknown"), std::string::npos) << r;
		EXPECT_TRUE(names.insert(n).second) << "duplicate name for " << r;
	}
	EXPECT_STREQ(kt_base_check_str(KT_CHECK_OK), "ok");
	EXPECT_NE(std::string(kt_base_check_str(1)).find("unknown"), std::string::npos);
	EXPECT_NE(std::string(kt_base_check_str(-12)).find("unknown"), std::string::npos);
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

	uint64_t word = t.timer.kt__word;
	t.timer.kt__word = word + 1; // the node no longer knows its bucket (the list index's low bits)
	EXPECT_EQ(kt_base_check(b), KT_CHECK_NODE);
	t.timer.kt__word = word;

	t.timer.kt__word ^= uint64_t(1) << 15; // KT__W_DEFERRABLE (lib/internal.h): on the wrong wheel
	EXPECT_EQ(kt_base_check(b), KT_CHECK_WRONG_WHEEL);
	t.timer.kt__word = word;

	EXPECT_TRUE(kt_test::CheckOk(b));
	EXPECT_EQ(kt_timer_delete(&t.timer), 1);
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
// Debug builds: the functions documented as owner-only that touch the
// base's turn state are owner-checked too. kt_remote_forget() rewrites the
// batch the owner is applying; kt_base_dump() walks bucket lists the owner
// is relinking. Unchecked, such a race would go unreported, even under
// --config=asan (kt_base_dump() from an admin thread can follow a
// half-unlinked node).
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
