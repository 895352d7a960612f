// Paused time: an idle loop jumps to the earliest timer; advance fires what
// comes due before it returns; the clock never goes backwards.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <vector>

#include "lib/testing/paused.h"
#include "lib/testing/time_source.h"
#include "tests/support/harness.h"

using kt_test::Fire;
using kt_test::Logged;
using kt_test::ManualBase;

TEST(Paused, HourLongTimeoutFinishesAtOnceAndSeesAnHour) {
	ManualBase b(16, 0);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	kt_timer_arm(&t.timer, KT_MILLIS(3600 * 1000));
	EXPECT_EQ(kt_paused_turn(b), 1u);
	ASSERT_EQ(log.size(), 1u);
	EXPECT_GE(kt_base_now(b), 3600u * 1000u);
	EXPECT_LE(kt_base_now(b), 3600u * 1000u + 65536u); // one level-4 bucket
}

TEST(Paused, RunUntilIdleStopsWhenNothingIsArmed) {
	ManualBase b(16, 0);
	std::vector<Fire> log;
	Logged t[3];
	for (int i = 0; i < 3; i++) {
		t[i].setup(b, i, &log);
		kt_timer_arm(&t[i].timer, KT_MILLIS(1000u * unsigned(i + 1)));
	}
	EXPECT_EQ(kt_paused_run_until_idle(b, 100), 3u);
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_INDEFINITE);
}

TEST(Paused, DeferrableTimersDoNotKeepTheLoopBusy) {
	ManualBase b(16, 0);
	std::vector<Fire> log;
	Logged d;
	d.setup(b, 1, &log, KT_TIMER_DEFERRABLE);
	kt_timer_arm(&d.timer, KT_MILLIS(1000));
	EXPECT_EQ(kt_paused_run_until_idle(b, 100), 0u);
	EXPECT_EQ(kt_base_now(b), 0u); // nothing to jump to
}

TEST(Paused, SleepFiresEverythingDueBeforeReturning) {
	ManualBase b(1, 0);
	std::vector<Fire> log;
	Logged t[2];
	t[0].setup(b, 0, &log);
	t[1].setup(b, 1, &log);
	kt_timer_arm(&t[0].timer, KT_MILLIS(10));
	kt_timer_arm(&t[1].timer, KT_MILLIS(10000));
	EXPECT_EQ(kt_paused_sleep(b, KT_MILLIS(10)), 1u);
	EXPECT_EQ(log[0].at, 10u);
	EXPECT_EQ(kt_base_now(b), 10u);
}

TEST(Paused, ClockNeverGoesBackwards) {
	ManualBase b(1, 5000);
	EXPECT_EQ(kt__base_advance_to_ns(b, 1000), 0); // in the past: no move
	EXPECT_EQ(kt_base_now(b), 5000u);
	kt_base_run(b);
	EXPECT_EQ(kt_base_now(b), 5000u);
	kt_paused_turn(b);
	EXPECT_EQ(kt_base_now(b), 5000u);
	kt_base_advance(b, KT_MILLIS(1));
	EXPECT_EQ(kt_base_now(b), 5001u);
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(Paused, RemoteWorkIsDrainedByTheDriver) {
	ManualBase b(16, 0);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	kt_remote_arm(&t.timer, KT_MILLIS(500), nullptr, nullptr);
	kt_paused_run_until_idle(b, 10);
	EXPECT_EQ(log.size(), 1u);
	EXPECT_GE(log[0].at, 500u);
}
