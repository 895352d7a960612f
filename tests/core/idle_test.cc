// The idle tracker: touch is a store, the wheel is touched at most twice per
// timeout, the callback runs between T and T + one granularity of idleness.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include "tests/support/harness.h"

using kt_test::ManualBase;

namespace {

struct Conn {
	kt_idle idle;
	kt_base *base;
	int idle_calls = 0;
	uint64_t idle_at = 0;
	static void cb(kt_idle *i) {
		Conn *c = kt_container_of(i, Conn, idle);
		c->idle_calls++;
		c->idle_at = kt_base_now(c->base);
	}
};

} // namespace

TEST(Idle, ThousandTouchesCostAtMostTwoWheelOperations) {
	Conn c; // first: kt_base_free() detaches it, still pending
	ManualBase b(16, 0);
	c.base = b;
	ASSERT_EQ(kt_idle_setup(&c.idle, b, KT_MILLIS(30000), Conn::cb), 0);
	kt_base_stats before, after;
	ASSERT_EQ(kt_base_set_op_counting(b, 1), 0); // the stats count every operation
	kt_base_get_stats(b, &before);
	kt_idle_start(&c.idle);
	// Three timeouts' worth of traffic: a request every 30 ms for 90 s.
	for (int window = 1; window <= 3; window++) {
		for (int i = 0; i < 1000; i++) {
			kt_base_advance(b, KT_MILLIS(30));
			kt_idle_touch(&c.idle);
		}
		kt_base_get_stats(b, &after);
		// The start, then one lazy re-arm per timeout that passed.
		EXPECT_LE(after.enqueued - before.enqueued, uint64_t(window) + 1) << window;
		EXPECT_EQ(after.removed - before.removed, 0u); // never an unlink
		EXPECT_EQ(after.same_bucket - before.same_bucket, 0u);
	}
	EXPECT_EQ(c.idle_calls, 0);
	EXPECT_GE(kt_idle_rearms(&c.idle), 2u); // the lazy path really ran
}

TEST(Idle, FiresBetweenTAndTPlusGranularityAfterLastTouch) {
	ManualBase b(16, 0);
	Conn c;
	c.base = b;
	kt_idle_setup(&c.idle, b, KT_MILLIS(5000), Conn::cb);
	kt_idle_start(&c.idle);
	kt_base_advance(b, KT_MILLIS(3000));
	kt_idle_touch(&c.idle); // last activity at 3000
	kt_base_advance(b, KT_MILLIS(20000));
	ASSERT_EQ(c.idle_calls, 1);
	EXPECT_GE(c.idle_at, 3000u + 5000u);
	EXPECT_LE(c.idle_at, 3000u + 5000u + 128u + 16u); // level 1 bucket + a unit
	EXPECT_EQ(kt_idle_deadline(&c.idle), 8000u);
}

TEST(Idle, ZeroTimeoutDisables) {
	ManualBase b;
	Conn c;
	c.base = b;
	kt_idle_setup(&c.idle, b, KT_MILLIS(0), Conn::cb);
	kt_idle_start(&c.idle);
	kt_base_advance(b, KT_MILLIS(100000));
	EXPECT_EQ(c.idle_calls, 0);
	EXPECT_EQ(kt_idle_deadline(&c.idle), UINT64_MAX);
	EXPECT_EQ(kt_base_pending_count(b), 0u);
}

TEST(Idle, ShorterTimeoutTakesEffectAtOnce) {
	ManualBase b(16, 0);
	Conn c;
	c.base = b;
	kt_idle_setup(&c.idle, b, KT_MILLIS(60000), Conn::cb);
	kt_idle_start(&c.idle);
	kt_idle_set_timeout(&c.idle, KT_MILLIS(1000));
	kt_base_advance(b, KT_MILLIS(2000));
	EXPECT_EQ(c.idle_calls, 1);
}

TEST(Idle, SetTimeoutDoesNotRestartAStoppedTracker) {
	ManualBase b;
	Conn c;
	c.base = b;
	kt_idle_setup(&c.idle, b, KT_MILLIS(100), Conn::cb);
	kt_idle_start(&c.idle);
	kt_idle_stop(&c.idle);
	EXPECT_EQ(kt_idle_set_timeout(&c.idle, KT_MILLIS(50)), 0);
	EXPECT_FALSE(kt_idle_pending(&c.idle));
	kt_base_advance(b, KT_MILLIS(1000));
	EXPECT_EQ(c.idle_calls, 0);
	kt_idle_start(&c.idle); // the new timeout applies from here
	kt_base_advance(b, KT_MILLIS(1000));
	EXPECT_EQ(c.idle_calls, 1);
}

TEST(Idle, StopPreventsTheCallback) {
	ManualBase b;
	Conn c;
	c.base = b;
	kt_idle_setup(&c.idle, b, KT_MILLIS(100), Conn::cb);
	kt_idle_start(&c.idle);
	EXPECT_EQ(kt_idle_stop(&c.idle), 1);
	kt_base_advance(b, KT_MILLIS(1000));
	EXPECT_EQ(c.idle_calls, 0);
}

TEST(Idle, BadArgumentsAreEinval) {
	ManualBase b;
	kt_idle i;
	EXPECT_EQ(kt_idle_setup(&i, nullptr, KT_MILLIS(1), Conn::cb), -EINVAL);
	EXPECT_EQ(kt_idle_setup(&i, b, KT_MILLIS(1), nullptr), -EINVAL);
}
