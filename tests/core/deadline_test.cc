// Zero means "disabled" for configuration deadlines, "next tick" for the wheel.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <vector>

#include "tests/support/harness.h"

using kt_test::Fire;
using kt_test::Logged;
using kt_test::ManualBase;

TEST(Deadline, ZeroDisarmsInsteadOfFiring) {
	ManualBase b;
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	EXPECT_EQ(kt_deadline_arm(&t.timer, KT_MILLIS(0)), 0); // idle stays idle
	EXPECT_FALSE(kt_timer_pending(&t.timer));
	kt_base_advance(b, KT_MILLIS(1000));
	EXPECT_TRUE(log.empty());
}

TEST(Deadline, ZeroDisarmsAPendingDeadline) {
	ManualBase b;
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	EXPECT_EQ(kt_deadline_arm_s(&t.timer, KT_SECONDS(5)), 0);
	EXPECT_TRUE(kt_timer_pending(&t.timer));
	EXPECT_EQ(kt_deadline_arm_s(&t.timer, KT_SECONDS(0)), 1); // was pending
	EXPECT_FALSE(kt_timer_pending(&t.timer));
	kt_base_advance(b, KT_MILLIS(10000));
	EXPECT_TRUE(log.empty());
}

TEST(Deadline, NonZeroArmsLikeTimerArm) {
	ManualBase b(16, 0);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	kt_deadline_arm(&t.timer, KT_MILLIS(100));
	kt_base_advance(b, KT_MILLIS(200));
	ASSERT_EQ(log.size(), 1u);
	EXPECT_GE(log[0].at, 100u);
}

TEST(Deadline, WheelZeroMeansNextTick) {
	ManualBase b(16, 0);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	kt_timer_arm(&t.timer, KT_MILLIS(0));
	kt_base_advance(b, KT_MILLIS(16));
	EXPECT_EQ(log.size(), 1u);
}

TEST(Deadline, OrFallsBackOnlyForZero) {
	EXPECT_EQ(kt_deadline_or(KT_MILLIS(0), KT_MILLIS(5000)).ms, 5000u);
	EXPECT_EQ(kt_deadline_or(KT_MILLIS(7), KT_MILLIS(5000)).ms, 7u);
}
