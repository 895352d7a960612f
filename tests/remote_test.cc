// Cross-thread operations and their wake-ups, deterministically: fake clocks,
// a test hook that holds a producer at the critical point, no sleeping.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <thread>
#include <vector>

#include "lib/testing/hooks.h"
#include "tests/support/harness.h"

using kt_test::FakeClockBase;
using kt_test::Fire;
using kt_test::Logged;
using kt_test::ManualBase;

namespace {

struct WakeCounter {
	std::atomic<int> wakes{0};
	static void wake(void *self) { static_cast<WakeCounter *>(self)->wakes++; }
};

struct Done {
	std::vector<int> results;
	static void cb(kt_timer *, int result, void *self) { static_cast<Done *>(self)->results.push_back(result); }
};

} // namespace

TEST(Remote, WakerCalledOnlyOnEmptyToNonEmptyWhileWaiting) {
	FakeClockBase b;
	WakeCounter w;
	kt_base_set_waker(b, WakeCounter::wake, &w);
	std::vector<Fire> log;
	Logged t[3];
	for (int i = 0; i < 3; i++)
		t[i].setup(b, i, &log);
	// Owner is running (not waiting): producers need not wake it.
	kt_remote_arm(&t[0].timer, KT_MILLIS(10), nullptr, nullptr);
	EXPECT_EQ(w.wakes, 0);
	b.run_at(1000);
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_UNTIL); // now waiting
	kt_remote_arm(&t[1].timer, KT_MILLIS(10), nullptr, nullptr);
	EXPECT_EQ(w.wakes, 1);
	kt_remote_arm(&t[2].timer, KT_MILLIS(10), nullptr, nullptr); // not empty any more
	EXPECT_EQ(w.wakes, 1);
	b.run_at(1001);
	EXPECT_EQ(kt_base_remote_queued(b), 0u);
}

namespace {

// The race, made deterministic: a producer is held right after it queued and
// released the lock, before it calls the waker; the owner prepares its wait
// exactly there. The plan must be IMMEDIATE (the work is visible).
struct HoldAfterQueue {
	static kt_base *base;
	static kt_wait_plan plan_seen;
	static void hook(int point, kt_base *b) {
		if (point == KT__HOOK_QUEUED && b == base) {
			plan_seen = kt_base_prepare_wait(b); // the owner runs "here"
			kt__remote_test_hook = nullptr;
		}
	}
};
kt_base *HoldAfterQueue::base;
kt_wait_plan HoldAfterQueue::plan_seen;

} // namespace

TEST(Remote, RacingProducerMakesPlanImmediate) {
	FakeClockBase b;
	WakeCounter w;
	kt_base_set_waker(b, WakeCounter::wake, &w);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	HoldAfterQueue::base = b;
	kt__remote_test_hook = HoldAfterQueue::hook;
	kt_remote_arm(&t.timer, KT_MILLIS(10), nullptr, nullptr);
	EXPECT_EQ(HoldAfterQueue::plan_seen.kind, KT_WAIT_IMMEDIATE);
	EXPECT_EQ(w.wakes, 0); // not needed: the owner saw the work
}

TEST(Remote, ProducerAfterPlanWakesTheWaiter) {
	// The other order: the owner planned first (and is marked waiting); a
	// producer on another thread then queues and must call the waker.
	FakeClockBase b;
	WakeCounter w;
	kt_base_set_waker(b, WakeCounter::wake, &w);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_INDEFINITE);
	std::thread producer([&] { kt_remote_arm(&t.timer, KT_MILLIS(10), nullptr, nullptr); });
	producer.join();
	EXPECT_EQ(w.wakes, 1);
	b.run_at(1001);
	EXPECT_TRUE(kt_timer_pending(&t.timer));
}

TEST(Remote, OperationsApplyInQueueOrderWithResults) {
	FakeClockBase b(16, 1000);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	Done d;
	kt_remote_mod(&t.timer, 5000, Done::cb, &d);   // idle -> 0
	kt_remote_arm(&t.timer, KT_MILLIS(100), Done::cb, &d); // pending -> 1
	kt_remote_delete(&t.timer, Done::cb, &d);      // pending -> 1
	kt_remote_delete(&t.timer, Done::cb, &d);      // idle -> 0
	kt_remote_arm(&t.timer, KT_MILLIS(200), Done::cb, &d);
	b.run_at(1000);
	EXPECT_EQ(d.results, (std::vector<int>{0, 1, 1, 0, 0}));
	EXPECT_EQ(kt_timer_expires(&t.timer), 1200u); // relative to the owner's now
}

TEST(Remote, BadTimerIsEinval) {
	kt_timer t{};
	EXPECT_EQ(kt_remote_arm(&t, KT_MILLIS(1), nullptr, nullptr), -EINVAL);
	EXPECT_EQ(kt_remote_delete(&t, nullptr, nullptr), -EINVAL);
}

TEST(Remote, BatchesAreBoundedAndPlanStaysImmediate) {
	FakeClockBase b;
	std::vector<Fire> log;
	std::vector<Logged> t(KT_REMOTE_BATCH * 2 + 10);
	for (size_t i = 0; i < t.size(); i++) {
		t[i].setup(b, int(i), &log);
		kt_remote_arm(&t[i].timer, KT_MILLIS(1000), nullptr, nullptr);
	}
	b.run_at(1000);
	EXPECT_EQ(kt_base_pending_count(b), size_t(KT_REMOTE_BATCH));
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	b.run_at(1000);
	b.run_at(1000);
	EXPECT_EQ(kt_base_pending_count(b), t.size());
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_UNTIL);
}

TEST(Remote, ForgetDropsQueuedOperations) {
	FakeClockBase b;
	std::vector<Fire> log;
	Logged t, u;
	t.setup(b, 1, &log);
	u.setup(b, 2, &log);
	Done d;
	kt_remote_arm(&t.timer, KT_MILLIS(10), Done::cb, &d);
	kt_remote_arm(&u.timer, KT_MILLIS(10), Done::cb, &d);
	kt_remote_arm(&t.timer, KT_MILLIS(20), Done::cb, &d);
	EXPECT_EQ(kt_remote_forget(&t.timer), 2u);
	// Each dropped operation is reported, so what its argument owns is freed.
	EXPECT_EQ(d.results, (std::vector<int>{-ECANCELED, -ECANCELED}));
	b.run_at(1000);
	EXPECT_EQ(d.results.size(), 3u);
	EXPECT_EQ(d.results.back(), 0); // u's arm, applied
	EXPECT_FALSE(kt_timer_pending(&t.timer));
	EXPECT_TRUE(kt_timer_pending(&u.timer));
}

// The one defined outcome of a remote delete racing with expiry.

TEST(Remote, DeleteDrainedInTheExpiryTurnWins) {
	FakeClockBase b(16, 0);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	kt_mod_timer(&t.timer, 112);
	Done d;
	kt_remote_delete(&t.timer, Done::cb, &d); // queued before the expiry turn
	b.run_at(500);                              // the timer is due in this turn
	EXPECT_TRUE(log.empty());                   // the delete won: no callback
	EXPECT_EQ(d.results, std::vector<int>{1});
}

TEST(Remote, DeleteAfterExpiryReportsIdle) {
	FakeClockBase b(16, 0);
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	kt_mod_timer(&t.timer, 112);
	b.run_at(500);                              // fired in this turn
	Done d;
	kt_remote_delete(&t.timer, Done::cb, &d);
	b.run_at(600);
	EXPECT_EQ(log.size(), 1u);                  // ran exactly once
	EXPECT_EQ(d.results, std::vector<int>{0});  // and the delete saw it idle
}

TEST(Remote, FreeWithQueuedOperationsDropsThem) {
	std::vector<Fire> log;
	Logged t;
	Done d;
	{
		FakeClockBase b;
		t.setup(b, 1, &log);
		kt_remote_arm(&t.timer, KT_MILLIS(10), Done::cb, &d);
	}
	EXPECT_EQ(d.results, std::vector<int>{-ECANCELED}); // reported, not leaked
	EXPECT_FALSE(kt_timer_pending(&t.timer));
}
