// docs/RELIABILITY.md's bad-input table, one test per row (BadInput.<Row>).
// Each asserts the documented outcome: a clear error code, or behaviour that
// loses nothing - never a crash, a hang or an early fire.
#include <ktimer/epoll.h>
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "lib/testing/time_source.h"
#include "tests/support/harness.h"

using kt_test::Fire;
using kt_test::Logged;
using kt_test::ManualBase;

TEST(BadInput, InvalidResolution) {
	for (unsigned res : {3u, 6u, 17u, 32u, 100u, UINT_MAX}) {
		kt_base_config cfg{res, KT_CLOCK_MANUAL, 0};
		errno = 0;
		EXPECT_EQ(kt_base_new(&cfg), nullptr);
		EXPECT_EQ(errno, EINVAL);
	}
}

TEST(BadInput, ExpiryInThePast) {
	ManualBase b(16, 5000);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	EXPECT_EQ(kt_mod_timer(&t.timer, 0), 0);
	EXPECT_EQ(kt_base_run(b), 0u); // never inline, never in the same turn
	kt_base_advance(b, KT_MILLIS(16));
	ASSERT_EQ(log.size(), 1u);
	EXPECT_GT(log[0].at, 5000u);
}

TEST(BadInput, ExpiryBeyondTheWheelsReach) {
	ManualBase b(1, 0);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	uint64_t e = kt_wheel_reach_ms(1) * 2 + 7;
	kt_mod_timer(&t.timer, e);
	for (uint64_t now = 0; now < e - 1; now = kt_base_now(b))
		kt_base_advance(b, KT_MILLIS(uint32_t(std::min<uint64_t>(e - 1 - now, KT_MILLIS_MAX))));
	EXPECT_TRUE(log.empty()) << "fired early";
	kt_base_advance(b, KT_MILLIS(600000));
	ASSERT_EQ(log.size(), 1u);
	EXPECT_GE(log[0].at, e);
}

TEST(BadInput, ExpiryBeyondKtMillis) {
	ManualBase b(16, 0);
	std::vector<Fire> log;
	Logged t, u;
	t.setup(b, 1, &log);
	u.setup(b, 2, &log);
	EXPECT_EQ(kt_timer_arm(&t.timer, KT_MILLIS(KT_MILLIS_MAX)), 0); // ~49.7 days
	EXPECT_EQ(kt_mod_timer(&u.timer, UINT64_MAX), 0);               // "never"
	EXPECT_EQ(kt_timer_expires(&t.timer), uint64_t(KT_MILLIS_MAX));
	for (int i = 0; i < 60; i++)
		kt_base_advance(b, KT_MILLIS(86400000)); // 60 days
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].id, 1);
	EXPECT_GE(log[0].at, uint64_t(KT_MILLIS_MAX));
	EXPECT_TRUE(kt_timer_pending(&u.timer));
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(BadInput, NegativeAndOverflowingConversions) {
	EXPECT_EQ(kt_millis_checked_new(-1).ms, 0u);
	EXPECT_EQ(kt_millis_checked_new(INT64_MAX).ms, KT_MILLIS_MAX);
	EXPECT_EQ(kt_seconds_checked_new(-1).s, 0u);
	EXPECT_EQ(kt_seconds_checked_new(INT64_MAX).s, KT_SECONDS_MAX);
	EXPECT_EQ(kt_millis_from_timespec(timespec{-5, 0}).ms, 0u);
	EXPECT_EQ(kt_millis_from_timespec(timespec{LONG_MAX, 999999999}).ms, KT_MILLIS_MAX);
	EXPECT_EQ(kt_millis_from_ns(UINT64_MAX).ms, KT_MILLIS_MAX);
	EXPECT_EQ(kt_millis_add(KT_MILLIS(KT_MILLIS_MAX), KT_MILLIS(KT_MILLIS_MAX)).ms, KT_MILLIS_MAX);
	EXPECT_EQ(kt_millis_sub(KT_MILLIS(0), KT_MILLIS(1)).ms, 0u);
}

TEST(BadInput, NullCallback) {
	ManualBase b;
	kt_timer t;
	EXPECT_EQ(kt_timer_setup(&t, b, nullptr, 0), -EINVAL);
	EXPECT_EQ(kt_timer_arm(&t, KT_MILLIS(1)), -EINVAL); // refuses, no crash later
	EXPECT_EQ(kt_base_pending_count(b), 0u);
	kt_hrtimer h;
	EXPECT_EQ(kt_hrtimer_setup(&h, b, nullptr), -EINVAL);
	EXPECT_EQ(kt_hrtimer_start(&h, 1), -EINVAL);
	kt_interval iv;
	EXPECT_EQ(kt_interval_setup(&iv, b, KT_MILLIS(10), nullptr), -EINVAL);
}

TEST(BadInput, ArmingAShutDownTimer) {
	ManualBase b;
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	kt_timer_arm(&t.timer, KT_MILLIS(10));
	kt_timer_shutdown(&t.timer);
	EXPECT_EQ(kt_timer_arm(&t.timer, KT_MILLIS(10)), -ESHUTDOWN);
	EXPECT_EQ(kt_remote_arm(&t.timer, KT_MILLIS(10), nullptr, nullptr), 0); // queued...
	kt_base_run(b);                                                         // ...and refused
	kt_base_advance(b, KT_MILLIS(1000));
	EXPECT_TRUE(log.empty());
}

TEST(BadInput, DeletingAnIdleTimer) {
	ManualBase b;
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	EXPECT_EQ(kt_timer_delete(&t.timer), 0);
	EXPECT_EQ(kt_timer_delete(&t.timer), 0);
	kt_timer z{};
	EXPECT_EQ(kt_timer_delete(&z), 0); // never set up
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(BadInput, ArmingAPendingTimerOfAFreedBaseIsRefused) {
	std::vector<Fire> log;
	Logged t;
	kt_base_config cfg{16, KT_CLOCK_MANUAL, 0};
	kt_base *b = kt_base_new(&cfg);
	t.setup(b, 1, &log);
	kt_timer_arm(&t.timer, KT_MILLIS(100));
	kt_base_free(b);
	EXPECT_FALSE(kt_timer_pending(&t.timer));
	EXPECT_EQ(kt_timer_arm(&t.timer, KT_MILLIS(100)), -EINVAL); // not a write into freed memory
	EXPECT_EQ(kt_mod_timer(&t.timer, 5), -EINVAL);
}

#if defined(__SANITIZE_ADDRESS__)
namespace {
void arm_idle_timer_of_freed_base() {
	std::vector<Fire> log;
	Logged t;
	kt_base_config cfg{16, KT_CLOCK_MANUAL, 0};
	kt_base *b = kt_base_new(&cfg);
	t.setup(b, 1, &log);
	kt_base_free(b);
	kt_timer_arm(&t.timer, KT_MILLIS(100));
}
} // namespace

TEST(BadInput, ArmingAnIdleTimerOfAFreedBaseIsCaughtByASan) {
	// Undefined behaviour by contract (the base is gone); a debug build with
	// ASan reports it instead of corrupting memory.
	EXPECT_DEATH(arm_idle_timer_of_freed_base(), "heap-use-after-free");
}
#endif

TEST(BadInput, FreeingABaseWithPendingTimers) {
	std::vector<Fire> log;
	std::vector<Logged> t(100);
	{
		ManualBase b(16, 0);
		for (int i = 0; i < 100; i++) {
			t[size_t(i)].setup(b, i, &log, i % 3 == 0 ? KT_TIMER_DEFERRABLE : 0);
			kt_timer_arm(&t[size_t(i)].timer, KT_MILLIS(uint32_t(i) * 1000u));
		}
	}
	for (auto &x : t)
		EXPECT_FALSE(kt_timer_pending(&x.timer));
	EXPECT_TRUE(log.empty()); // no callback ran
}

namespace {

struct SelfFree {
	kt_timer t;
	static int freed;
	static void cb(kt_timer *t) {
		free(kt_container_of(t, SelfFree, t));
		freed++;
	}
};
int SelfFree::freed = 0;

struct SelfRearm {
	kt_timer t;
	int runs = 0;
	static void cb(kt_timer *t) {
		SelfRearm *s = kt_container_of(t, SelfRearm, t);
		s->runs++;
		kt_timer_arm(&s->t, KT_MILLIS(0));
	}
};

} // namespace

TEST(BadInput, ACallbackThatFreesItsOwnContainer) {
	ManualBase b(1, 0);
	for (int i = 0; i < 10; i++) {
		auto *s = static_cast<SelfFree *>(malloc(sizeof(SelfFree)));
		kt_timer_setup(&s->t, b, SelfFree::cb, 0);
		kt_timer_arm(&s->t, KT_MILLIS(3));
	}
	kt_base_advance(b, KT_MILLIS(10));
	EXPECT_EQ(SelfFree::freed, 10); // and ASan sees no use after free
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(BadInput, ACallbackThatReArmsItselfForADueTime) {
	SelfRearm s; // first: kt_base_free() detaches it, still pending
	kt_test::FakeClockBase b(16, 0);
	kt_timer_setup(&s.t, b, SelfRearm::cb, 0);
	kt_timer_arm(&s.t, KT_MILLIS(0));
	EXPECT_EQ(b.run_at(100000), 1u); // once per turn: no spin, no hang
	EXPECT_EQ(b.run_at(100000), 0u);
	EXPECT_EQ(s.runs, 1);
}

TEST(BadInput, TheManualClockAskedToGoBackwards) {
	ManualBase b(1, 5000);
	EXPECT_EQ(kt__base_advance_to_ns(b, 0), 0);
	EXPECT_EQ(kt_base_now(b), 5000u);
	kt_base_config mono{16, KT_CLOCK_MONOTONIC, 0};
	kt_base *m = kt_base_new(&mono);
	EXPECT_EQ(kt_base_advance(m, KT_MILLIS(1)), -EINVAL); // not a manual clock
	EXPECT_EQ(kt__base_advance_to_ns(m, 1), -EINVAL);
	kt_base_free(m);
	kt_base_config huge{16, KT_CLOCK_MANUAL, UINT64_MAX};
	errno = 0;
	EXPECT_EQ(kt_base_new(&huge), nullptr); // a start the clock cannot represent
	EXPECT_EQ(errno, EINVAL);
}

TEST(BadInput, ZeroIntervalPeriod) {
	ManualBase b;
	kt_interval iv;
	EXPECT_EQ(kt_interval_setup(&iv, b, KT_MILLIS(0), [](kt_interval *, uint64_t) {}), -EINVAL);
}

// ---- misuse that must get an error, not corruption -------------------------

namespace {

struct Kinds {
	kt_timer wheel{};
	kt_hrtimer precise{};
	kt_interval iv{};
	kt_idle idle{};
	static void on_wheel(kt_timer *) {}
	static void on_precise(kt_hrtimer *) {}
	static void on_tick(kt_interval *, uint64_t) {}
	static void on_idle(kt_idle *) {}
	void setup(kt_base *b) {
		ASSERT_EQ(kt_timer_setup(&wheel, b, on_wheel, 0), 0);
		ASSERT_EQ(kt_hrtimer_setup(&precise, b, on_precise), 0);
		ASSERT_EQ(kt_interval_setup(&iv, b, KT_MILLIS(50), on_tick), 0);
		ASSERT_EQ(kt_idle_setup(&idle, b, KT_MILLIS(1000), on_idle), 0);
	}
	void start() {
		ASSERT_EQ(kt_timer_arm(&wheel, KT_MILLIS(100)), 0);
		ASSERT_EQ(kt_hrtimer_start(&precise, 5000000000u), 0);
		ASSERT_EQ(kt_interval_start(&iv), 0);
		ASSERT_EQ(kt_idle_start(&idle), 0);
	}
};

} // namespace

// Every arming entry point refuses a timer its freed base had pending:
// -EINVAL, never a read or write of the freed base (ASan would report one).
TEST(BadInput, ArmingAnyKindOfTimerOfAFreedBase) {
	Kinds k;
	kt_base_config cfg{16, KT_CLOCK_MANUAL, 0};
	kt_base *b = kt_base_new(&cfg);
	k.setup(b);
	k.start();
	kt_base_free(b);
	EXPECT_EQ(kt_timer_arm(&k.wheel, KT_MILLIS(1)), -EINVAL);
	EXPECT_EQ(kt_remote_arm(&k.wheel, KT_MILLIS(1), nullptr, nullptr), -EINVAL);
	EXPECT_EQ(kt_remote_mod(&k.wheel, 5, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(kt_remote_delete(&k.wheel, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(kt_remote_forget(&k.wheel), 0u);
	EXPECT_EQ(kt_hrtimer_start(&k.precise, 1), -EINVAL);
	EXPECT_EQ(kt_hrtimer_start_after(&k.precise, 1), -EINVAL);
	EXPECT_EQ(kt_interval_reset(&k.iv), -EINVAL);
	EXPECT_EQ(kt_interval_start(&k.iv), -EINVAL);
	EXPECT_EQ(kt_interval_set_period(&k.iv, KT_MILLIS(5)), -EINVAL);
	EXPECT_EQ(kt_idle_start(&k.idle), -EINVAL);
	EXPECT_EQ(kt_idle_set_timeout(&k.idle, KT_MILLIS(5)), -EINVAL);
	EXPECT_FALSE(kt_timer_pending(&k.wheel));
	EXPECT_FALSE(kt_hrtimer_pending(&k.precise));
	EXPECT_FALSE(kt_idle_pending(&k.idle));
	// Set up again on a new base, each works.
	ManualBase b2;
	k.setup(b2);
	k.start();
	EXPECT_TRUE(kt_test::CheckOk(b2));
	kt_timer_delete(&k.wheel);
	kt_hrtimer_cancel(&k.precise);
	kt_interval_stop(&k.iv);
	kt_idle_stop(&k.idle);
}

// Setting up an armed object again would zero its links while its bucket
// still points at it: the next re-arm would make a self-loop and hang
// advance(). Setup refuses an armed object instead.
TEST(BadInput, SettingUpAnArmedTimerIsRefused) {
	ManualBase b(16, 0);
	Kinds k;
	k.setup(b);
	k.start();
	EXPECT_EQ(kt_timer_setup(&k.wheel, b, Kinds::on_wheel, 0), -EBUSY);
	EXPECT_EQ(kt_hrtimer_setup(&k.precise, b, Kinds::on_precise), -EBUSY);
	EXPECT_EQ(kt_interval_setup(&k.iv, b, KT_MILLIS(10), Kinds::on_tick), -EBUSY);
	EXPECT_EQ(kt_idle_setup(&k.idle, b, KT_MILLIS(10), Kinds::on_idle), -EBUSY);
	// Nothing changed: still armed, the wheel whole, re-arms work, time moves.
	EXPECT_TRUE(kt_timer_pending(&k.wheel));
	EXPECT_EQ(kt_timer_expires(&k.wheel), 100u);
	EXPECT_EQ(kt_interval_period(&k.iv).ms, 50u);
	EXPECT_EQ(kt_mod_timer(&k.wheel, 700), 1);
	EXPECT_TRUE(kt_test::CheckOk(b));
	EXPECT_GE(kt_base_advance(b, KT_MILLIS(10000)), 1);
	EXPECT_TRUE(kt_test::CheckOk(b));
	// Idle again, setup is fine.
	kt_interval_stop(&k.iv);
	kt_idle_stop(&k.idle);
	EXPECT_EQ(kt_timer_setup(&k.wheel, b, Kinds::on_wheel, 0), 0);
	EXPECT_EQ(kt_hrtimer_setup(&k.precise, b, Kinds::on_precise), 0);
	EXPECT_EQ(kt_interval_setup(&k.iv, b, KT_MILLIS(10), Kinds::on_tick), 0);
	EXPECT_EQ(kt_idle_setup(&k.idle, b, KT_MILLIS(10), Kinds::on_idle), 0);
}

TEST(BadInput, SettingUpUninitializedMemory) {
	// Setup's contract covers memory straight from malloc: garbage that
	// merely looks armed is not mistaken for a pending timer.
	ManualBase b(16, 0);
	for (int fill : {0x00, 0xff, 0xa5}) {
		auto *k = static_cast<Kinds *>(malloc(sizeof(Kinds)));
		memset(static_cast<void *>(k), fill, sizeof(Kinds));
		EXPECT_EQ(kt_timer_setup(&k->wheel, b, Kinds::on_wheel, 0), 0) << fill;
		EXPECT_EQ(kt_hrtimer_setup(&k->precise, b, Kinds::on_precise), 0) << fill;
		EXPECT_EQ(kt_interval_setup(&k->iv, b, KT_MILLIS(10), Kinds::on_tick), 0) << fill;
		EXPECT_EQ(kt_idle_setup(&k->idle, b, KT_MILLIS(10), Kinds::on_idle), 0) << fill;
		free(k);
	}
	EXPECT_TRUE(kt_test::CheckOk(b));
}

// NULL where a timer or a base belongs: -EINVAL (or the documented neutral
// value for calls that return no error), never a crash.
TEST(BadInput, NullArguments) {
	kt_base_stats st;
	EXPECT_EQ(kt_mod_timer(nullptr, 1), -EINVAL);
	EXPECT_EQ(kt_add_timer(nullptr, 1), -EINVAL);
	EXPECT_EQ(kt_mod_timer_pending(nullptr, 1), -EINVAL);
	EXPECT_EQ(kt_timer_reduce(nullptr, 1), -EINVAL);
	EXPECT_EQ(kt_timer_arm(nullptr, KT_MILLIS(1)), -EINVAL);
	EXPECT_EQ(kt_timer_delete(nullptr), -EINVAL);
	EXPECT_EQ(kt_timer_shutdown(nullptr), -EINVAL);
	EXPECT_EQ(kt_timer_setup(nullptr, nullptr, nullptr, 0), -EINVAL);
	EXPECT_EQ(kt_deadline_arm(nullptr, KT_MILLIS(1)), -EINVAL);
	EXPECT_EQ(kt_deadline_arm(nullptr, KT_MILLIS(0)), -EINVAL);
	EXPECT_EQ(kt_hrtimer_start(nullptr, 1), -EINVAL);
	EXPECT_EQ(kt_hrtimer_start_after(nullptr, 1), -EINVAL);
	EXPECT_EQ(kt_hrtimer_cancel(nullptr), -EINVAL);
	EXPECT_EQ(kt_hrtimer_pending(nullptr), 0);
	EXPECT_EQ(kt_remote_arm(nullptr, KT_MILLIS(1), nullptr, nullptr), -EINVAL);
	EXPECT_EQ(kt_remote_mod(nullptr, 1, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(kt_remote_delete(nullptr, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(kt_remote_forget(nullptr), 0u);
	EXPECT_EQ(kt_interval_start(nullptr), -EINVAL);
	EXPECT_EQ(kt_interval_start_at(nullptr, 1), -EINVAL);
	EXPECT_EQ(kt_interval_reset(nullptr), -EINVAL);
	EXPECT_EQ(kt_interval_stop(nullptr), -EINVAL);
	EXPECT_EQ(kt_interval_set_period(nullptr, KT_MILLIS(1)), -EINVAL);
	EXPECT_EQ(kt_interval_set_missed_tick(nullptr, KT_MISSED_SKIP), -EINVAL);
	EXPECT_EQ(kt_idle_start(nullptr), -EINVAL);
	EXPECT_EQ(kt_idle_stop(nullptr), -EINVAL);
	EXPECT_EQ(kt_idle_set_timeout(nullptr, KT_MILLIS(1)), -EINVAL);
	EXPECT_EQ(kt_idle_pending(nullptr), 0);
	EXPECT_EQ(kt_base_run(nullptr), 0u);
	EXPECT_EQ(kt_base_update_time(nullptr), -EINVAL);
	EXPECT_EQ(kt_base_advance(nullptr, KT_MILLIS(1)), -EINVAL);
	EXPECT_EQ(kt_base_next_timeout(nullptr), -EINVAL);
	EXPECT_EQ(kt_base_prepare_wait(nullptr).kind, KT_WAIT_IMMEDIATE);
	EXPECT_EQ(kt_wait_plan_timeout_ms(nullptr, nullptr), -EINVAL);
	EXPECT_EQ(kt_base_get_stats(nullptr, &st), -EINVAL);
	EXPECT_EQ(kt_base_check(nullptr), -EINVAL);
	EXPECT_EQ(kt_base_set_waker(nullptr, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(kt_base_pending_count(nullptr), 0u);
	EXPECT_EQ(kt_base_remote_queued(nullptr), 0u);
	EXPECT_EQ(kt_base_free(nullptr), 0);
	EXPECT_EQ(kt_epoll_init(nullptr, nullptr), -EINVAL);
	EXPECT_EQ(kt_epoll_wait(nullptr, nullptr, 1), -EINVAL);
	kt_epoll_close(nullptr);
	kt_epoll_wake(nullptr);
	ManualBase b;
	EXPECT_EQ(kt_base_get_stats(b, nullptr), -EINVAL);
	kt_wait_plan p = kt_base_prepare_wait(b);
	EXPECT_EQ(kt_wait_plan_timeout_ms(b, nullptr), -EINVAL);
	EXPECT_EQ(kt_wait_plan_timeout_ms(nullptr, &p), -EINVAL);
}

// A real loop's waits never move a manual clock: loop drivers refuse it.
TEST(BadInput, ManualClockBaseOnARealLoop) {
	ManualBase b;
	EXPECT_EQ(kt_base_clock(b), KT_CLOCK_MANUAL);
	kt_epoll ep;
	EXPECT_EQ(kt_epoll_init(&ep, b), -EINVAL);
	kt_base *m = kt_base_new(nullptr);
	EXPECT_EQ(kt_base_clock(m), KT_CLOCK_MONOTONIC);
	kt_base_free(m);
}
