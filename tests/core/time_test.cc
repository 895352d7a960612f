// kt_millis / kt_seconds: saturation, rounding up, zero means disabled.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>

TEST(Time, SizesAreCompact) {
	EXPECT_EQ(sizeof(kt_millis), 4u);
	EXPECT_EQ(sizeof(kt_seconds), 2u);
}

TEST(Time, ConstructorsInCxx) {
	constexpr kt_millis m = KT_MILLIS(5000);
	constexpr kt_seconds s = KT_SECONDS(30);
	EXPECT_EQ(m.ms, 5000u);
	EXPECT_EQ(s.s, 30u);
}

TEST(Time, FromNsRoundsUpOnlyZeroStaysZero) {
	EXPECT_EQ(kt_millis_from_ns(0).ms, 0u);
	EXPECT_EQ(kt_millis_from_ns(1).ms, 1u);
	EXPECT_EQ(kt_millis_from_ns(500000).ms, 1u);
	EXPECT_EQ(kt_millis_from_ns(1000000).ms, 1u);
	EXPECT_EQ(kt_millis_from_ns(1000001).ms, 2u);
	EXPECT_EQ(kt_millis_from_ns(1500000).ms, 2u);
}

TEST(Time, FromNsSaturates) {
	EXPECT_EQ(kt_millis_from_ns(UINT64_MAX).ms, KT_MILLIS_MAX);
	EXPECT_EQ(kt_millis_from_ns(uint64_t(KT_MILLIS_MAX) * 1000000u).ms, KT_MILLIS_MAX);
	EXPECT_EQ(kt_millis_from_ns(uint64_t(KT_MILLIS_MAX) * 1000000u + 1).ms, KT_MILLIS_MAX);
	EXPECT_EQ(kt_millis_from_ns(uint64_t(KT_MILLIS_MAX - 1) * 1000000u).ms, KT_MILLIS_MAX - 1);
}

TEST(Time, FromTimespecRoundsUp) {
	EXPECT_EQ(kt_millis_from_timespec(timespec{0, 0}).ms, 0u);
	EXPECT_EQ(kt_millis_from_timespec(timespec{0, 1}).ms, 1u);
	EXPECT_EQ(kt_millis_from_timespec(timespec{1, 500000}).ms, 1001u);
	EXPECT_EQ(kt_millis_from_timespec(timespec{2, 0}).ms, 2000u);
}

TEST(Time, FromTimespecNegativeIsZero) {
	EXPECT_EQ(kt_millis_from_timespec(timespec{-1, 0}).ms, 0u);
	EXPECT_EQ(kt_millis_from_timespec(timespec{-1, 999999999}).ms, 0u);
	EXPECT_EQ(kt_millis_from_timespec(timespec{0, -5}).ms, 0u);
	EXPECT_EQ(kt_millis_from_timespec(timespec{LONG_MIN, 0}).ms, 0u);
}

TEST(Time, FromTimespecUnnormalizedNsec) {
	// tv_nsec outside [0, 1e9): the sum is what counts.
	EXPECT_EQ(kt_millis_from_timespec(timespec{1, 1500000000L}).ms, 2500u);
	EXPECT_EQ(kt_millis_from_timespec(timespec{2, -500000000L}).ms, 1500u);
	EXPECT_EQ(kt_millis_from_timespec(timespec{LONG_MAX, 999999999L * 2}).ms, KT_MILLIS_MAX);
}

TEST(Time, FromTimespecSaturates) {
	EXPECT_EQ(kt_millis_from_timespec(timespec{LONG_MAX, 999999999}).ms, KT_MILLIS_MAX);
	EXPECT_EQ(kt_millis_from_timespec(timespec{4294968, 0}).ms, KT_MILLIS_MAX);
	EXPECT_EQ(kt_millis_from_timespec(timespec{4294967, 295000000}).ms, KT_MILLIS_MAX);
	EXPECT_EQ(kt_millis_from_timespec(timespec{4294967, 294000000}).ms, KT_MILLIS_MAX - 1);
}

TEST(Time, CheckedNewClamps) {
	EXPECT_EQ(kt_millis_checked_new(-1).ms, 0u);
	EXPECT_EQ(kt_millis_checked_new(INT64_MIN).ms, 0u);
	EXPECT_EQ(kt_millis_checked_new(42).ms, 42u);
	EXPECT_EQ(kt_millis_checked_new(INT64_MAX).ms, KT_MILLIS_MAX);
	EXPECT_EQ(kt_seconds_checked_new(-7).s, 0u);
	EXPECT_EQ(kt_seconds_checked_new(100000).s, KT_SECONDS_MAX);
	EXPECT_EQ(kt_seconds_checked_new(65535).s, 65535u);
	EXPECT_EQ(kt_seconds_checked_new(30).s, 30u);
}

TEST(Time, FromSecondsWidensEveryValue) {
	EXPECT_EQ(kt_millis_from_seconds(KT_SECONDS(2)).ms, 2000u);
	EXPECT_EQ(kt_millis_from_seconds(KT_SECONDS(KT_SECONDS_MAX)).ms, 65535000u);
}

TEST(Time, AddSubSaturate) {
	EXPECT_EQ(kt_millis_add(KT_MILLIS(KT_MILLIS_MAX), KT_MILLIS(1)).ms, KT_MILLIS_MAX);
	EXPECT_EQ(kt_millis_add(KT_MILLIS(250), kt_millis_from_seconds(KT_SECONDS(1))).ms, 1250u);
	EXPECT_EQ(kt_millis_sub(KT_MILLIS(5), KT_MILLIS(7)).ms, 0u);
	EXPECT_EQ(kt_millis_sub(KT_MILLIS(7), KT_MILLIS(5)).ms, 2u);
}

TEST(Time, ZeroMeansDisabled) {
	EXPECT_TRUE(kt_millis_is_zero(KT_MILLIS(0)));
	EXPECT_FALSE(kt_millis_is_zero(KT_MILLIS(1)));
	EXPECT_TRUE(kt_seconds_is_zero(KT_SECONDS(0)));
	EXPECT_FALSE(kt_seconds_is_zero(KT_SECONDS(1)));
}

TEST(Time, ToNsAndTimespec) {
	EXPECT_EQ(kt_millis_to_ns(KT_MILLIS(KT_MILLIS_MAX)), uint64_t(KT_MILLIS_MAX) * 1000000u);
	timespec ts = kt_millis_to_timespec(KT_MILLIS(1500));
	EXPECT_EQ(ts.tv_sec, 1);
	EXPECT_EQ(ts.tv_nsec, 500000000L);
	// Round trip for every value that matters at a boundary.
	for (uint32_t v : {0u, 1u, 999u, 1000u, 1001u, KT_MILLIS_MAX}) {
		EXPECT_EQ(kt_millis_from_timespec(kt_millis_to_timespec(KT_MILLIS(v))).ms, v);
		EXPECT_EQ(kt_millis_from_ns(kt_millis_to_ns(KT_MILLIS(v))).ms, v);
	}
}

TEST(Time, ToMillisOverloads) {
	EXPECT_EQ(kt_to_millis(KT_MILLIS(7)).ms, 7u);
	EXPECT_EQ(kt_to_millis(KT_SECONDS(3)).ms, 3000u);
	EXPECT_EQ(kt_to_millis(timespec{0, 1}).ms, 1u);
}
