// One-shot calls (ktimer/call.h): run once, never early, cancellable by a
// handle that stays safe after the call ran. Manual clock; nothing sleeps.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "tests/support/harness.h"

using kt_test::ManualBase;

namespace {

struct Log {
	kt_base *base;
	std::vector<std::pair<int, uint64_t>> runs;
};

struct Arg {
	Log *log;
	int id;
	static void fn(void *p) {
		Arg *a = static_cast<Arg *>(p);
		a->log->runs.push_back({a->id, kt_base_now(a->log->base)});
	}
};

} // namespace

TEST(Call, RunsOnceNeverEarly) {
	ManualBase b(1, 1000);
	Log log{b, {}};
	Arg a{&log, 1};
	kt_call h = kt_call_after(b, KT_MILLIS(200), Arg::fn, &a);
	ASSERT_FALSE(kt_call_failed(h));
	EXPECT_TRUE(kt_call_pending(h));
	kt_base_advance(b, KT_MILLIS(199));
	EXPECT_TRUE(log.runs.empty());
	kt_base_advance(b, KT_MILLIS(1000));
	ASSERT_EQ(log.runs.size(), 1u);
	EXPECT_EQ(log.runs[0].second, 1200u);
	EXPECT_FALSE(kt_call_pending(h));
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(Call, CancelBeforeItRuns) {
	ManualBase b(16, 0);
	Log log{b, {}};
	Arg a{&log, 1};
	kt_call h = kt_call_after(b, KT_MILLIS(50), Arg::fn, &a);
	EXPECT_EQ(kt_call_cancel(h), 1);
	EXPECT_EQ(kt_call_cancel(h), 0); // twice: nothing
	kt_base_advance(b, KT_MILLIS(1000));
	EXPECT_TRUE(log.runs.empty());
	EXPECT_EQ(kt_base_pending_count(b), 0u);
}

TEST(Call, StaleHandleDoesNotCancelTheNodesNextCall) {
	// The node of a call that ran is reused by the next call; the old handle
	// must not cancel the new one.
	ManualBase b(1, 0);
	Log log{b, {}};
	Arg a1{&log, 1}, a2{&log, 2};
	kt_call h1 = kt_call_after(b, KT_MILLIS(10), Arg::fn, &a1);
	kt_base_advance(b, KT_MILLIS(20));
	kt_call h2 = kt_call_after(b, KT_MILLIS(10), Arg::fn, &a2);
	EXPECT_EQ(h1.kt__node, h2.kt__node); // the same node, reused
	EXPECT_EQ(kt_call_cancel(h1), 0);
	EXPECT_TRUE(kt_call_pending(h2));
	kt_base_advance(b, KT_MILLIS(20));
	ASSERT_EQ(log.runs.size(), 2u);
	EXPECT_EQ(log.runs[1].first, 2);
}

namespace {

struct Chain {
	kt_base *base;
	int runs = 0;
	kt_call self{};
	static void fn(void *p) {
		Chain *c = static_cast<Chain *>(p);
		EXPECT_EQ(kt_call_cancel(c->self), 0); // its own handle: already ran
		if (++c->runs < 5)
			c->self = kt_call_after(c->base, KT_MILLIS(10), fn, c);
	}
};

} // namespace

TEST(Call, ARunningCallMayScheduleAnother) {
	ManualBase b(1, 0);
	Chain c;
	c.base = b;
	c.self = kt_call_after(b, KT_MILLIS(10), Chain::fn, &c);
	kt_base_advance(b, KT_MILLIS(1000));
	EXPECT_EQ(c.runs, 5);
}

TEST(Call, ManyCallsGrowThePoolAndFreeingTheBaseReturnsIt) {
	// Run under valgrind memcheck in tools/run test: nothing leaks.
	kt_base_config cfg{16, KT_CLOCK_MANUAL, 0};
	kt_base *b = kt_base_new(&cfg);
	Log log{b, {}};
	std::vector<Arg> args(1000);
	for (int i = 0; i < 1000; i++) {
		args[size_t(i)] = Arg{&log, i};
		ASSERT_FALSE(kt_call_failed(kt_call_after(b, KT_MILLIS(uint32_t(i)), Arg::fn, &args[size_t(i)])));
	}
	EXPECT_EQ(kt_base_pending_count(b), 1000u);
	kt_base_advance(b, KT_MILLIS(500));
	EXPECT_GT(log.runs.size(), 400u);
	EXPECT_TRUE(kt_test::CheckOk(b));
	kt_base_free(b); // the rest never run; the pool goes back to malloc
	EXPECT_LT(log.runs.size(), 1000u);
}

TEST(Call, BadArguments) {
	ManualBase b;
	errno = 0;
	kt_call h = kt_call_after(nullptr, KT_MILLIS(1), Arg::fn, nullptr);
	EXPECT_TRUE(kt_call_failed(h));
	EXPECT_EQ(errno, EINVAL);
	h = kt_call_after(b, KT_MILLIS(1), nullptr, nullptr);
	EXPECT_TRUE(kt_call_failed(h));
	EXPECT_EQ(kt_call_cancel(h), 0);
	EXPECT_EQ(kt_call_pending(h), 0);
}
