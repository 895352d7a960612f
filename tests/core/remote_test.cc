// Cross-thread operations and their wake-ups, deterministically: fake clocks,
// a test hook that holds a producer at the critical point, no sleeping.
#include <ktimer/epoll.h>
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "lib/testing/hooks.h"
#include "tests/support/fork_child.h"
#include "tests/support/harness.h"

using kt_test::FakeClockBase;
using kt_test::InChild;
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

// ---- the turn order, lifetimes, shutdown ------------------------------------

// A remote arm is placed against the wheel clock of the turn that applies it,
// not the previous turn's: after 30 idle minutes, 100 ms still means 100 ms.
TEST(Remote, ArmAfterLongIdleCountsFromTheApplyingTurn) {
	for (unsigned res : {1u, 16u}) {
		FakeClockBase b(res, 1000);
		std::vector<Fire> log;
		Logged t;
		t.setup(b, 1, &log);
		uint64_t applied = 1000 + 30 * 60 * 1000; // the worker idled 30 min
		ASSERT_EQ(kt_remote_arm(&t.timer, KT_MILLIS(100), nullptr, nullptr), 0);
		b.run_at(applied);
		ASSERT_TRUE(kt_timer_pending(&t.timer));
		EXPECT_TRUE(kt_test::CheckOk(b));
		// Sleep as the loop would, bounded, until it fires.
		for (int turn = 0; turn < 10 && log.empty(); turn++) {
			int64_t ms = kt_base_next_timeout(b);
			ASSERT_GE(ms, 0);
			b.run_at(b.now + uint64_t(ms));
		}
		ASSERT_EQ(log.size(), 1u) << res;
		EXPECT_GE(log[0].at - applied, 100u) << res;
		// At most one granularity of the level 100 ms lands on: level 1's
		// 8 ms at 1 ms resolution, level 0's 16 ms at 16 ms.
		EXPECT_LE(log[0].at - applied, 100u + (res == 1 ? 8u : 16u)) << res;
	}
}

namespace {

// A done callback that forgets its timer and frees the object holding it -
// the documented protocol - while more operations for it sit in the batch.
struct Owned {
	kt_timer timer{};
	static void fn(kt_timer *) {}
};

struct ForgetAndFree {
	std::vector<int> results;
	int freed = 0;
	static void done(kt_timer *t, int result, void *self) {
		auto *f = static_cast<ForgetAndFree *>(self);
		f->results.push_back(result);
		if (result >= 0 && !f->freed) {
			kt_remote_forget(t); // drops the operations still ahead, reporting them
			kt_timer_delete(t);
			delete kt_container_of(t, Owned, timer);
			f->freed = 1;
		}
	}
};

} // namespace

TEST(Remote, ForgetFromDoneDropsTheRestOfTheTakenBatch) {
	FakeClockBase b;
	auto *o = new Owned;
	kt_timer_setup(&o->timer, b, Owned::fn, 0);
	ForgetAndFree f;
	// Three operations for the same timer, all taken in one turn.
	kt_remote_arm(&o->timer, KT_MILLIS(10), ForgetAndFree::done, &f);
	kt_remote_arm(&o->timer, KT_MILLIS(20), ForgetAndFree::done, &f);
	kt_remote_delete(&o->timer, ForgetAndFree::done, &f);
	b.run_at(1000); // the 2nd and 3rd would touch freed memory (ASan)
	EXPECT_EQ(f.results, (std::vector<int>{0, -ECANCELED, -ECANCELED}));
	EXPECT_EQ(kt_base_pending_count(b), 0u);
	EXPECT_TRUE(kt_test::CheckOk(b));
}

namespace {

// The shutdown window: a producer has decided to wake the owner and released
// the lock, but has not called the waker yet. The owner tears the waker down
// right there. kt_base_set_waker() must wait for the producer, so the waker
// never runs on a torn-down argument.
struct TornDown {
	static kt_base *base;
	static std::atomic<bool> closed;
	static std::atomic<bool> closer_started;
	static std::atomic<int> wakes_after_close;
	static std::thread closer;
	static void waker(void *) {
		if (closed)
			wakes_after_close++;
	}
	static void hook(int point, kt_base *b) {
		if (point != KT__HOOK_QUEUED || b != base)
			return;
		kt__remote_test_hook = nullptr;
		closer = std::thread([] {
			closer_started = true;
			kt_base_set_waker(base, nullptr, nullptr); // the owner's teardown
			closed = true;                              // "free the eventfd"
		});
		// Give a teardown that does not wait every chance to finish first
		// (bounded: 2 s); one that waits never sets `closed` here.
		for (int i = 0; i < 2000 && !closed; i++)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		EXPECT_TRUE(closer_started);
	}
};
kt_base *TornDown::base;
std::atomic<bool> TornDown::closed;
std::atomic<bool> TornDown::closer_started;
std::atomic<int> TornDown::wakes_after_close;
std::thread TornDown::closer;

} // namespace

TEST(Remote, SetWakerWaitsForAProducerAboutToWake) {
	FakeClockBase b;
	std::vector<Fire> log;
	Logged t;
	t.setup(b, 1, &log);
	kt_base_set_waker(b, TornDown::waker, nullptr);
	ASSERT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_INDEFINITE); // the owner waits
	TornDown::base = b;
	kt__remote_test_hook = TornDown::hook;
	ASSERT_EQ(kt_remote_arm(&t.timer, KT_MILLIS(10), nullptr, nullptr), 0); // this thread produces
	TornDown::closer.join();
	EXPECT_TRUE(TornDown::closed);
	EXPECT_EQ(TornDown::wakes_after_close, 0); // the waker ran before teardown finished
}

namespace {

// The same window with the real waker: kt_epoll_close() and then freeing the
// kt_epoll while a producer is about to write its eventfd. Under ASan a
// teardown that does not wait is a heap use-after-free.
struct EpollTornDown {
	static kt_base *base;
	static kt_epoll *ep;
	static std::atomic<bool> freed;
	static std::thread closer;
	static void hook(int point, kt_base *b) {
		if (point != KT__HOOK_QUEUED || b != base)
			return;
		kt__remote_test_hook = nullptr;
		closer = std::thread([] {
			kt_epoll_close(ep);
			delete ep;
			freed = true;
		});
		for (int i = 0; i < 2000 && !freed; i++)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
};
kt_base *EpollTornDown::base;
kt_epoll *EpollTornDown::ep;
std::atomic<bool> EpollTornDown::freed;
std::thread EpollTornDown::closer;

} // namespace

TEST(Remote, EpollCloseWaitsForAProducerAboutToWake) {
	kt_base *b = kt_base_new(nullptr);
	auto *ep = new kt_epoll;
	ASSERT_EQ(kt_epoll_init(ep, b), 0);
	kt_timer t{};
	kt_timer_setup(&t, b, [](kt_timer *) {}, 0);
	ASSERT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_INDEFINITE);
	EpollTornDown::base = b;
	EpollTornDown::ep = ep;
	kt__remote_test_hook = EpollTornDown::hook;
	ASSERT_EQ(kt_remote_arm(&t, KT_MILLIS(10), nullptr, nullptr), 0);
	EpollTornDown::closer.join();
	EXPECT_TRUE(EpollTornDown::freed);
	kt_base_run(b); // the queued arm still applies
	EXPECT_TRUE(kt_timer_pending(&t));
	kt_timer_delete(&t);
	kt_base_free(b);
}

// kt_base_run() counts timer callbacks; the done callbacks of remote
// operations are counted apart, per run, so a loop knows not to block.
TEST(Remote, DoneCallsOfTheLastRunAreCounted) {
	FakeClockBase b;
	std::vector<Fire> log;
	Logged t[2];
	for (int i = 0; i < 2; i++)
		t[i].setup(b, i, &log);
	int dones = 0;
	auto done = [](kt_timer *, int, void *arg) { ++*static_cast<int *>(arg); };
	EXPECT_EQ(kt_base_run_done_calls(nullptr), 0u);
	EXPECT_EQ(kt_base_run_done_calls(b), 0u);
	ASSERT_EQ(kt_remote_arm(&t[0].timer, KT_MILLIS(10), done, &dones), 0);
	ASSERT_EQ(kt_remote_arm(&t[1].timer, KT_MILLIS(10), nullptr, nullptr), 0);
	ASSERT_EQ(kt_remote_delete(&t[1].timer, done, &dones), 0);
	EXPECT_EQ(b.run_at(1000), 0u); // no timer fired...
	EXPECT_EQ(dones, 2);
	EXPECT_EQ(kt_base_run_done_calls(b), 2u); // ...but two done callbacks ran
	EXPECT_EQ(b.run_at(1001), 0u);
	EXPECT_EQ(kt_base_run_done_calls(b), 0u); // per run
}

// ---- the owner's take: the lock only when something may be queued ------------

// Between two runs, with no wait planned in between, a push from another
// thread is applied by the next run - each time, also after a run that took
// a full batch and after one whose queue kt_remote_forget() emptied.
TEST(Remote, PushBetweenRunsIsTakenByTheNextRun) {
	FakeClockBase b(16, 1000);
	std::vector<Fire> log;
	std::vector<Logged> t(KT_REMOTE_BATCH + 3);
	for (size_t i = 0; i < t.size(); i++)
		t[i].setup(b, int(i), &log);
	b.run_at(1000); // the queue seen empty
	for (int round = 0; round < 3; round++) {
		std::thread producer([&] { kt_remote_arm(&t[0].timer, KT_MILLIS(100 + round), nullptr, nullptr); });
		producer.join();
		b.run_at(1000 + round);
		EXPECT_EQ(kt_timer_expires(&t[0].timer), 1100u + 2u * (unsigned)round) << "round " << round;
		EXPECT_EQ(kt_base_remote_queued(b), 0u);
	}
	// More than a batch: the rest is taken by the runs after, without a wait.
	for (size_t i = 1; i < t.size(); i++)
		ASSERT_EQ(kt_remote_arm(&t[i].timer, KT_MILLIS(500), nullptr, nullptr), 0);
	b.run_at(1010);
	EXPECT_EQ(kt_base_remote_queued(b), t.size() - 1 - KT_REMOTE_BATCH);
	b.run_at(1010);
	EXPECT_EQ(kt_base_remote_queued(b), 0u);
	for (size_t i = 1; i < t.size(); i++)
		EXPECT_TRUE(kt_timer_pending(&t[i].timer)) << i;
	// A queue emptied by forget, then a new push: still taken.
	ASSERT_EQ(kt_remote_delete(&t[1].timer, nullptr, nullptr), 0);
	kt_remote_forget(&t[1].timer);
	EXPECT_EQ(kt_base_remote_queued(b), 0u);
	b.run_at(1011);
	ASSERT_EQ(kt_remote_delete(&t[2].timer, nullptr, nullptr), 0);
	b.run_at(1012);
	EXPECT_FALSE(kt_timer_pending(&t[2].timer));
	EXPECT_TRUE(kt_timer_pending(&t[1].timer)); // its delete was forgotten
}

// A push made while the owner is inside kt_base_run() - after the run took
// the queue, from a callback's thread or from another thread - is applied by
// the very next run, with no wait planned in between; and the owner, awake,
// is never woken for it.
TEST(Remote, PushDuringARunIsTakenByTheNextRun) {
	FakeClockBase b(16, 1000);
	WakeCounter w;
	kt_base_set_waker(b, WakeCounter::wake, &w);
	static std::vector<Fire> log;
	log.clear();
	static Logged target, other, doomed;
	target.setup(b, 1, &log);
	other.setup(b, 2, &log);
	doomed.setup(b, 3, &log);
	ASSERT_EQ(kt_mod_timer(&doomed.timer, 100000), 0);
	static kt_timer pusher;
	kt_timer_setup(
		&pusher, b,
		[](kt_timer *) {
			// From the callback's own thread, and from another one.
			EXPECT_EQ(kt_remote_delete(&doomed.timer, nullptr, nullptr), 0);
			std::thread producer([] { EXPECT_EQ(kt_remote_arm(&target.timer, KT_MILLIS(500), nullptr, nullptr), 0); });
			producer.join();
		},
		0);
	ASSERT_EQ(kt_mod_timer(&pusher, 1050), 0);
	ASSERT_EQ(kt_remote_arm(&other.timer, KT_MILLIS(300), nullptr, nullptr), 0);
	EXPECT_EQ(b.run_at(1100), 1u); // takes "other", then the callback pushes two more
	EXPECT_TRUE(kt_timer_pending(&other.timer));
	EXPECT_FALSE(kt_timer_pending(&target.timer));
	EXPECT_EQ(kt_base_remote_queued(b), 2u);
	b.run_at(1100); // no plan in between
	EXPECT_EQ(kt_base_remote_queued(b), 0u);
	EXPECT_TRUE(kt_timer_pending(&target.timer));
	EXPECT_EQ(kt_timer_expires(&target.timer), 1600u);
	EXPECT_FALSE(kt_timer_pending(&doomed.timer));
	EXPECT_EQ(w.wakes, 0);
	kt_timer_delete(&target.timer);
	kt_timer_delete(&other.timer);
}

// Wait, wake, take, and again: each plan after a run that took work marks
// the owner waiting anew, so the next producer wakes it again; a run in
// between with nothing queued still ends the wait.
TEST(Remote, EveryWaitAfterATakeIsWokenAgain) {
	FakeClockBase b(16, 1000);
	WakeCounter w;
	kt_base_set_waker(b, WakeCounter::wake, &w);
	std::vector<Fire> log;
	std::vector<Logged> t(6);
	for (size_t i = 0; i < t.size(); i++)
		t[i].setup(b, int(i), &log);
	for (int round = 0; round < 3; round++) {
		EXPECT_NE(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE) << round;
		std::thread producer([&] { kt_remote_arm(&t[size_t(round)].timer, KT_MILLIS(1000), nullptr, nullptr); });
		producer.join();
		EXPECT_EQ(w.wakes, round + 1) << round;
		EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE) << round; // queued: no block
		b.run_at(1000 + uint64_t(round));
		EXPECT_TRUE(kt_timer_pending(&t[size_t(round)].timer)) << round;
	}
	// Awake and between runs: no wake-up, but the next run takes it.
	kt_remote_arm(&t[3].timer, KT_MILLIS(1000), nullptr, nullptr);
	EXPECT_EQ(w.wakes, 3);
	b.run_at(1010);
	EXPECT_TRUE(kt_timer_pending(&t[3].timer));
	// Marked, then a run with nothing queued (woken by I/O), then a push.
	EXPECT_NE(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	b.run_at(1011);
	kt_remote_arm(&t[4].timer, KT_MILLIS(1000), nullptr, nullptr);
	EXPECT_EQ(w.wakes, 3);
	b.run_at(1012);
	EXPECT_TRUE(kt_timer_pending(&t[4].timer));
	// And marked again after that.
	EXPECT_NE(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	kt_remote_arm(&t[5].timer, KT_MILLIS(1000), nullptr, nullptr);
	EXPECT_EQ(w.wakes, 4);
	b.run_at(1013);
	EXPECT_TRUE(kt_timer_pending(&t[5].timer));
}

// ---- dropping many queued operations is linear -------------------------------

namespace {
struct Ordered {
	std::vector<uintptr_t> args;
	static void cb(kt_timer *, int result, void *arg) {
		static_cast<Ordered *>(kt_base_current_test_sink)->args.push_back(result == -ECANCELED ? (uintptr_t)arg : 0);
	}
	static void *kt_base_current_test_sink;
};
void *Ordered::kt_base_current_test_sink = nullptr;
} // namespace

// Forgetting one timer's 100,000 operations among another's 100,000 copies
// the queue once, not once per dropped operation (which took seconds), and
// leaves the other timer's operations queued, in order.
TEST(Remote, ForgetOfManyQueuedOperationsIsOnePass) {
	FakeClockBase b;
	std::vector<Fire> log;
	Logged t, u;
	t.setup(b, 1, &log);
	u.setup(b, 2, &log);
	Ordered o;
	Ordered::kt_base_current_test_sink = &o;
	const uintptr_t kN = 100000;
	for (uintptr_t i = 1; i <= kN; i++) {
		ASSERT_EQ(kt_remote_arm(&t.timer, KT_MILLIS(10), Ordered::cb, (void *)i), 0);
		ASSERT_EQ(kt_remote_arm(&u.timer, KT_MILLIS(10), nullptr, nullptr), 0);
	}
	kt__remote_moved = 0;
	EXPECT_EQ(kt_remote_forget(&t.timer), kN);
	EXPECT_LE(kt__remote_moved, 2 * kN) << "forget copied the queue once per dropped operation";
	// Each dropped operation reported once, in queue order.
	ASSERT_EQ(o.args.size(), kN);
	for (uintptr_t i = 0; i < kN; i++)
		ASSERT_EQ(o.args[i], i + 1);
	EXPECT_EQ(kt_base_remote_queued(b), kN); // u's operations stay
	EXPECT_EQ(kt_remote_forget(&t.timer), 0u);
}

// kt_base_free() with 400,000 queued operations reports each once, in order.
TEST(Remote, FreeWithManyQueuedOperationsReportsEachOnceInOrder) {
	std::vector<Fire> log;
	Logged t;
	Ordered o;
	Ordered::kt_base_current_test_sink = &o;
	const uintptr_t kN = 400000;
	{
		FakeClockBase b;
		t.setup(b, 1, &log);
		for (uintptr_t i = 1; i <= kN; i++)
			ASSERT_EQ(kt_remote_arm(&t.timer, KT_MILLIS(10), Ordered::cb, (void *)i), 0);
	}
	ASSERT_EQ(o.args.size(), kN);
	for (uintptr_t i = 0; i < kN; i++)
		ASSERT_EQ(o.args[i], i + 1);
}

// A done callback that queues again while the base is freed: reported too.
TEST(Remote, FreeReportsWhatADoneCallbackQueuesMeanwhile) {
	std::vector<Fire> log;
	static Logged t;
	static int reports;
	reports = 0;
	{
		FakeClockBase b;
		t.setup(b, 1, &log);
		auto requeue = [](kt_timer *tm, int result, void *) {
			reports++;
			if (result == -ECANCELED && reports == 1)
				kt_remote_delete(tm, [](kt_timer *, int, void *) { reports++; }, nullptr);
		};
		ASSERT_EQ(kt_remote_arm(&t.timer, KT_MILLIS(10), requeue, nullptr), 0);
	}
	EXPECT_EQ(reports, 2);
}

// A timer whose setup failed is refused at once, as kt_timer_arm() refuses
// it, not accepted and reported -EINVAL a turn later.
TEST(Remote, ArmOrModOfATimerWhoseSetupFailedIsEinvalAtOnce) {
	FakeClockBase b;
	kt_timer t;
	ASSERT_EQ(kt_timer_setup(&t, b, [](kt_timer *) {}, 0x8000u), -EINVAL); // unknown flag
	EXPECT_EQ(kt_timer_arm(&t, KT_MILLIS(10)), -EINVAL);
	EXPECT_EQ(kt_remote_arm(&t, KT_MILLIS(10), nullptr, nullptr), -EINVAL);
	EXPECT_EQ(kt_remote_mod(&t, 5000, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(kt_base_remote_queued(b), 0u);
}

// ---- a remote "fire now": due in the turn that takes it ---------------------

namespace {

// What a turn did, in order: the test's I/O phase and the timer callbacks.
struct Turn {
	std::vector<std::string> order;
	std::vector<uint64_t> fired_at;
	kt_base *base = nullptr;
};

struct Traced {
	kt_timer timer{};
	Turn *turn = nullptr;
	int runs = 0;
	static void cb(kt_timer *t) {
		Traced *x = kt_container_of(t, Traced, timer);
		x->runs++;
		x->turn->order.push_back("timer");
		x->turn->fired_at.push_back(kt_base_now(x->turn->base));
		// Never early: due by the clock of the turn that fires it.
		EXPECT_GE(kt_base_now(x->turn->base), kt_timer_expires(t));
	}
	void setup(kt_base *b, Turn *tr) {
		turn = tr;
		tr->base = b;
		kt_timer_setup(&timer, b, &Traced::cb, 0);
	}
};

} // namespace

// kt_remote_arm(t, 0) and kt_remote_mod(t, past) from another thread, to a
// worker asleep with nothing pending: the waker is called, and the turn it
// starts - update the time, handle its I/O, run - fires the timer in its run,
// after the I/O, not on the wheel's next tick (up to a unit later). The clock
// stands mid-millisecond, off the unit: a delay of 0 is the turn's own
// millisecond, due at once, while an owner-side kt_timer_arm(0) in the same
// turn still goes on the next tick. A remote arm not due yet is never early.
TEST(Remote, DueArmFiresInTheTurnThatTakesItAfterItsIo) {
	for (unsigned res : {1u, 4u, 16u}) {
		ManualBase b(res, 1000);
		ASSERT_EQ(kt__base_advance_to_ns(b, UINT64_C(1003400000)), 0); // 1003.4 ms
		WakeCounter w;
		kt_base_set_waker(b, WakeCounter::wake, &w);
		Turn tr;
		Traced t, own;
		t.setup(b, &tr);
		own.setup(b, &tr);
		Done d;
		for (int call = 0; call < 2; call++) {
			tr.order.clear();
			tr.fired_at.clear();
			ASSERT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_INDEFINITE); // asleep
			std::thread producer([&] {
				if (call == 0)
					EXPECT_EQ(kt_remote_arm(&t.timer, KT_MILLIS(0), Done::cb, &d), 0);
				else
					EXPECT_EQ(kt_remote_mod(&t.timer, 500, Done::cb, &d), 0);
			});
			producer.join();
			EXPECT_EQ(w.wakes, call + 1) << res;
			// The turn.
			ASSERT_EQ(kt_base_update_time(b), 0);
			EXPECT_TRUE(tr.order.empty()); // nothing fires before the run
			tr.order.push_back("io");
			if (call == 0)
				ASSERT_EQ(kt_timer_arm(&own.timer, KT_MILLIS(0)), 0); // the owner's: next tick
			EXPECT_EQ(kt_base_run(b), 1u) << res << " call " << call;
			EXPECT_EQ(tr.order, (std::vector<std::string>{"io", "timer"})) << res << " call " << call;
			EXPECT_EQ(tr.fired_at, std::vector<uint64_t>{kt_base_now(b)}) << res;
			EXPECT_EQ(kt_timer_expires(&t.timer), call == 0 ? 1003u : 500u);
			EXPECT_FALSE(kt_timer_pending(&t.timer));
			EXPECT_TRUE(kt_test::CheckOk(b));
			if (call == 0) {
				EXPECT_TRUE(kt_timer_pending(&own.timer));
				EXPECT_EQ(kt_base_advance(b, KT_MILLIS(res)), 1); // the next tick
				EXPECT_EQ(own.runs, 1);
			}
		}
		EXPECT_EQ(d.results, (std::vector<int>{0, 0}));
		EXPECT_EQ(t.runs, 2);
		// Not due yet: placed as kt_timer_arm()/kt_mod_timer() place it, fired
		// when its time comes, never before.
		uint64_t now = kt_base_now(b), now_ceil = (kt_base_now_ns(b) + 999999) / 1000000;
		ASSERT_GT(now_ceil, now); // still mid-millisecond
		ASSERT_EQ(kt_remote_arm(&t.timer, KT_MILLIS(1), nullptr, nullptr), 0);
		ASSERT_EQ(kt_remote_mod(&own.timer, now + 1, nullptr, nullptr), 0);
		EXPECT_EQ(kt_base_run(b), 0u) << res;
		EXPECT_EQ(kt_timer_expires(&t.timer), now_ceil + 1); // as kt_timer_arm()
		EXPECT_EQ(kt_timer_expires(&own.timer), now + 1);
		EXPECT_TRUE(kt_timer_pending(&t.timer));
		EXPECT_TRUE(kt_timer_pending(&own.timer));
		tr.fired_at.clear();
		EXPECT_EQ(kt_base_advance(b, KT_MILLIS(res + 1)), 2) << res;
		ASSERT_EQ(tr.fired_at.size(), 2u);
		for (uint64_t at : tr.fired_at) // each at or after its expiry (checked in Traced::cb)
			EXPECT_GE(at, now + 1) << res;
		kt_base_set_waker(b, nullptr, nullptr);
	}
}

// On a clock that reads whole milliseconds, the owner's own kt_timer_arm(t,
// 0) gives the timer the turn's millisecond as its expiry and puts it on the
// next tick. A kt_remote_arm(t, 0) that the next turn applies in that same
// millisecond asks for the same expiry, yet its contract is "fires in the
// turn that applies it": the timer leaves the next tick and fires in that
// run, once, never early. (kt_remote_mod() to the expiry the timer has
// changes nothing, as kt_mod_timer(): it fires from where it is.)
TEST(Remote, DueArmInTheMillisecondOfTheOwnersOwnArmStillFiresInThatTurn) {
	for (unsigned res : {1u, 4u, 16u}) {
		FakeClockBase b(res, 1000);
		Turn tr;
		Traced t, same;
		t.setup(b, &tr);
		same.setup(b, &tr);
		b.now = 1003;
		ASSERT_EQ(kt_base_update_time(b), 0);
		ASSERT_EQ(kt_timer_arm(&t.timer, KT_MILLIS(0)), 0);    // expires 1003, on the next tick
		ASSERT_EQ(kt_timer_arm(&same.timer, KT_MILLIS(0)), 0); // the same, for kt_remote_mod()
		ASSERT_EQ(kt_timer_expires(&t.timer), 1003u);
		Done d;
		ASSERT_EQ(kt_remote_arm(&t.timer, KT_MILLIS(0), Done::cb, &d), 0);
		ASSERT_EQ(kt_remote_mod(&same.timer, 1003, Done::cb, &d), 0);
		EXPECT_EQ(kt_base_run(b), 1u) << res; // still 1003 ms: the remote arm's timer fires
		EXPECT_EQ(d.results, (std::vector<int>{1, 1})) << res;
		EXPECT_EQ(t.runs, 1) << "kt_remote_arm(t, 0) waited for the next tick at " << res << " ms";
		EXPECT_EQ(same.runs, 0) << res;
		EXPECT_TRUE(kt_timer_pending(&same.timer));
		EXPECT_TRUE(kt_test::CheckOk(b));
		b.run_at(1003 + res); // the next tick: "same" fires there, "t" not again
		EXPECT_EQ(t.runs, 1) << res;
		EXPECT_EQ(same.runs, 1) << res;
		EXPECT_EQ(kt_base_pending_count(b), 0u);
	}
}

// The timer may be anywhere when the due operation comes: pending far out on
// a coarse level, gathered in this turn's batch, or idle; it fires once, in
// that turn. Later operations of the same batch still win - a re-arm for
// later moves it out again, a delete (also from a done callback) cancels it
// - and the wheel is consistent throughout, also from a done callback.
TEST(Remote, DueArmOfATimerAnywhereFiresOnceInThatTurn) {
	FakeClockBase b(16, 1000);
	Turn tr;
	Traced far, gathered, later, deleted, from_done;
	for (Traced *x : {&far, &gathered, &later, &deleted, &from_done})
		x->setup(b, &tr);
	ASSERT_EQ(kt_mod_timer(&far.timer, 1000 + 60000), 0); // level 2 at 16 ms: 1 s buckets
	ASSERT_EQ(kt_mod_timer(&gathered.timer, 1010), 0);
	b.now = 1030;
	ASSERT_EQ(kt_base_update_time(b), 0); // gathers "gathered" (due at 1024)
	Done d;
	static int checks_failed;
	static kt_base *check_base;
	checks_failed = 0;
	check_base = b;
	kt_remote_done_fn check = [](kt_timer *, int, void *) { checks_failed += kt_base_check(check_base) != 0; };
	kt_remote_mod(&far.timer, 900, check, nullptr);
	kt_remote_mod(&gathered.timer, 1020, Done::cb, &d);
	kt_remote_arm(&later.timer, KT_MILLIS(0), nullptr, nullptr);
	kt_remote_arm(&later.timer, KT_MILLIS(100), nullptr, nullptr);
	kt_remote_arm(&deleted.timer, KT_MILLIS(0), nullptr, nullptr);
	kt_remote_delete(&deleted.timer, Done::cb, &d);
	kt_remote_arm(&from_done.timer, KT_MILLIS(0),
		      [](kt_timer *t, int r, void *) {
			      EXPECT_EQ(r, 0);
			      EXPECT_EQ(kt_timer_delete(t), 1); // out of the batch: it will not fire
		      },
		      nullptr);
	EXPECT_EQ(kt_base_run(b), 2u);
	EXPECT_EQ(checks_failed, 0);
	EXPECT_EQ(d.results, (std::vector<int>{1, 1}));
	EXPECT_EQ(far.runs, 1);
	EXPECT_EQ(gathered.runs, 1);
	EXPECT_EQ(later.runs, 0);
	EXPECT_EQ(deleted.runs, 0);
	EXPECT_EQ(from_done.runs, 0);
	EXPECT_TRUE(kt_timer_pending(&later.timer));
	EXPECT_EQ(kt_timer_expires(&later.timer), 1130u);
	EXPECT_TRUE(kt_test::CheckOk(b));
	// Nothing fires twice, and "later" only when due.
	for (uint64_t at = 1040; at <= 1000 + 70000; at += 16)
		b.run_at(at);
	EXPECT_EQ(far.runs, 1);
	EXPECT_EQ(gathered.runs, 1);
	EXPECT_EQ(later.runs, 1);
	EXPECT_EQ(deleted.runs + from_done.runs, 0);
	EXPECT_EQ(kt_base_pending_count(b), 0u);
}

// A batch of due remote arms - a whole KT_REMOTE_BATCH of them - fires in
// the run that applies it; with a run limit, the run stops at it and the
// next runs fire the rest (the plan immediate meanwhile), nothing lost.
TEST(Remote, ABatchOfDueArmsFiresInItsTurnAlsoUnderARunLimit) {
	for (uint32_t limit : {0u, 100u}) {
		FakeClockBase b(4, 1000);
		Turn tr;
		std::vector<Traced> t(KT_REMOTE_BATCH);
		for (Traced &x : t) {
			x.setup(b, &tr);
			ASSERT_EQ(kt_remote_arm(&x.timer, KT_MILLIS(0), nullptr, nullptr), 0);
		}
		ASSERT_EQ(kt_base_set_run_limit(b, limit, 0), 0);
		size_t fired = b.run_at(1001);
		EXPECT_EQ(fired, limit ? size_t(limit) : t.size());
		while (fired < t.size()) {
			ASSERT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
			size_t n = kt_base_run(b);
			ASSERT_GT(n, 0u);
			fired += n;
		}
		EXPECT_EQ(fired, t.size());
		for (const Traced &x : t)
			EXPECT_EQ(x.runs, 1);
		for (uint64_t at : tr.fired_at)
			EXPECT_EQ(at, 1001u);
		EXPECT_TRUE(kt_test::CheckOk(b));
	}
}

// At the clock's limit a remote arm for no delay fires in the turn that
// takes it, as anywhere; one whose delay ends past the limit is refused, and
// its done callback says so.
TEST(Remote, DueArmAtTheClockLimitFiresAndALaterOneIsRefused) {
	ManualBase b(16, UINT64_C(1) << 44);
	Turn tr;
	Traced now, later;
	now.setup(b, &tr);
	later.setup(b, &tr);
	Done d;
	ASSERT_EQ(kt_remote_arm(&now.timer, KT_MILLIS(0), Done::cb, &d), 0);
	ASSERT_EQ(kt_remote_arm(&later.timer, KT_MILLIS(5), Done::cb, &d), 0);
	EXPECT_EQ(kt_base_run(b), 1u);
	EXPECT_EQ(now.runs, 1);
	EXPECT_EQ(d.results, (std::vector<int>{0, -ERANGE}));
	EXPECT_FALSE(kt_timer_pending(&later.timer));
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_INDEFINITE);
}

// ---- fork(): a child's copy of a base --------------------------------------

namespace {

// A waker that writes a byte to a pipe: what it writes is seen by every
// process that shares the pipe, as a parent and its child share an eventfd.
struct PipeWaker {
	int fds[2] = {-1, -1};
	PipeWaker() { EXPECT_EQ(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0); }
	~PipeWaker() {
		close(fds[0]);
		close(fds[1]);
	}
	static void wake(void *self) { (void)!write(static_cast<PipeWaker *>(self)->fds[1], "w", 1); }
	// Bytes written so far and not yet read.
	int drain() const {
		char buf[64];
		int n = 0;
		ssize_t r;
		while ((r = read(fds[0], buf, sizeof(buf))) > 0)
			n += int(r);
		return n;
	}
};

} // namespace

// A child of fork() gets a copy of the base: its timers and its queued
// operations, which fire and apply there as in the parent, never early. The
// waker it inherited writes the parent's object (here a pipe both share):
// the child never calls it - not from kt_remote_*() on a waiting owner, not
// from kt_base_wake() - until it installs its own with kt_base_fork(),
// which kt_base_forked() tells apart. The parent is not affected at all.
TEST(Remote, ForkedChildKeepsItsTimersAndNeverCallsTheParentsWaker) {
	ManualBase b(16, 1000);
	PipeWaker parents;
	ASSERT_EQ(kt_base_set_waker(b, PipeWaker::wake, &parents), 0);
	std::vector<Fire> log;
	Logged t[3];
	for (int i = 0; i < 3; i++) {
		t[i].id = i;
		t[i].log = &log;
		t[i].base = b;
		ASSERT_EQ(kt_timer_setup(&t[i].timer, b, Logged::cb, 0), 0);
	}
	ASSERT_EQ(kt_mod_timer(&t[0].timer, 1100), 0);
	ASSERT_EQ(kt_mod_timer(&t[1].timer, 1200), 0);
	ASSERT_EQ(kt_remote_arm(&t[2].timer, KT_MILLIS(50), nullptr, nullptr), 0); // queued across the fork
	EXPECT_EQ(kt_base_forked(b), 0);
	int st = InChild([&]() -> int {
		if (kt_base_forked(b) != 1)
			return 1;
		if (kt_base_prepare_wait(b).kind != KT_WAIT_IMMEDIATE) // the queued arm
			return 2;
		kt_base_run(b); // applies it: 1050
		if (kt_base_prepare_wait(b).kind != KT_WAIT_UNTIL) // marked waiting, for 1050
			return 3;
		kt_timer x{};
		kt_timer_setup(&x, b, [](kt_timer *) {}, 0);
		if (kt_remote_arm(&x, KT_MILLIS(10), nullptr, nullptr) != 0 || kt_base_wake(b) != 0)
			return 4;
		if (parents.drain() != 0) // the parent's waker was never called from here
			return 5;
		kt_base_run(b); // applies the child's own arm: 10 ms
		if (kt_base_advance(b, KT_MILLIS(300)) != 4 || log.size() != 3)
			return 6;
		for (const Fire &f : log)
			if (f.at < kt_timer_expires(&t[f.id].timer))
				return 7; // early
		WakeCounter own;
		if (kt_base_fork(b, WakeCounter::wake, &own) != 0 || kt_base_forked(b) != 0)
			return 8;
		kt_base_prepare_wait(b);
		if (kt_remote_arm(&x, KT_MILLIS(10), nullptr, nullptr) != 0 || own.wakes != 1 || kt_base_wake(b) != 1 ||
		    own.wakes != 2)
			return 9;
		kt_base_set_waker(b, nullptr, nullptr);
		return 0;
	});
	EXPECT_EQ(st, 0) << "the child's check that failed";
	// The parent: nothing of the child's reached its waker, its base is its
	// own, and its timers fire where they were, once each.
	EXPECT_EQ(parents.drain(), 0);
	EXPECT_EQ(kt_base_forked(b), 0);
	EXPECT_EQ(kt_base_run(b), 0u); // applies the queued arm here too
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(300)), 3);
	ASSERT_EQ(log.size(), 3u);
	for (const Fire &f : log)
		EXPECT_GE(f.at, kt_timer_expires(&t[f.id].timer)) << f.id;
	kt_base_prepare_wait(b);
	ASSERT_EQ(kt_remote_arm(&t[0].timer, KT_MILLIS(10), nullptr, nullptr), 0);
	EXPECT_EQ(parents.drain(), 1); // the parent's waker still works in the parent
	EXPECT_EQ(kt_base_fork(b, PipeWaker::wake, &parents), 0); // in the parent: kt_base_set_waker()
	kt_base_set_waker(b, nullptr, nullptr);
}

// A fork() while a producer holds a base's lock (held here through the
// test hook, for 50 ms, the instant the test forks): the child must not be
// left a lock held by a thread it does not have. It takes the lock (a
// queue length, a run, a waker) and exits; one that hangs is ended by its
// alarm and fails. The operation queued before the fork is the child's too.
TEST(Remote, ForkWhileAProducerHoldsTheQueueLeavesTheChildAUsableQueue) {
#if defined(__SANITIZE_THREAD__)
	GTEST_SKIP() << "ThreadSanitizer's runtime does not support fork() beside a running thread";
#endif
	FakeClockBase b(16, 1000);
	kt_timer x{};
	kt_timer_setup(&x, b, [](kt_timer *) {}, 0);
	static std::atomic<int> in_lock;
	in_lock = 0;
	kt__remote_test_hook = [](int point, kt_base *) {
		if (point != KT__HOOK_LOCKED)
			return;
		in_lock = 1;
		std::this_thread::sleep_for(std::chrono::milliseconds(50)); // the fork comes now
	};
	std::thread producer([&] { kt_remote_arm(&x, KT_MILLIS(100), nullptr, nullptr); });
	for (int i = 0; i < 5000 && !in_lock; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	ASSERT_EQ(in_lock.load(), 1);
	int st = InChild([&]() -> int {
		kt__remote_test_hook = nullptr;
		if (kt_base_remote_queued(b) != 1) // the producer's operation, queued before the fork
			return 1;
		kt_base_run(b);
		WakeCounter own;
		return kt_base_fork(b, WakeCounter::wake, &own) == 0 && kt_base_wake(b) == 1 && kt_timer_pending(&x) ? 0
															 : 2;
	}, 5);
	producer.join();
	kt__remote_test_hook = nullptr;
	EXPECT_NE(st, 128 + SIGALRM) << "the child was left the lock the producer held";
	EXPECT_EQ(st, 0);
	kt_base_run(b);
	EXPECT_TRUE(kt_timer_pending(&x));
	kt_timer_delete(&x); // x goes out of scope before b
}

// A fork() from another thread while the base's owner is in the middle of
// a turn (a callback running): that thread is not in the child, and its
// turn - part of its batch fired, the rest on its stack - never ends there,
// so the child's copy of the base would never fire a timer again. The
// child is told: kt_base_fork() refuses it with -EBUSY, and the base stays
// forked (kt_base_set_waker() does not change that), so a loop adapter's
// wait keeps refusing it (-EBADFD) rather than turning without firing.
TEST(Remote, AChildForkedInTheMiddleOfAnotherThreadsTurnIsRefusedTheBase) {
#if defined(__SANITIZE_THREAD__)
	GTEST_SKIP() << "ThreadSanitizer's runtime does not support fork() beside a running thread";
#endif
	ManualBase b(16, 1000);
	static std::atomic<int> in_cb, release;
	in_cb = 0;
	release = 0;
	kt_timer t{};
	ASSERT_EQ(kt_timer_setup(&t, b, [](kt_timer *) {
		in_cb = 1;
		for (int i = 0; i < 10000 && !release; i++)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}, 0), 0);
	ASSERT_EQ(kt_timer_arm(&t, KT_MILLIS(10)), 0);
	// A pthread, not a std::thread: the child inherits no heap block that
	// only the (absent) thread points to, which memcheck calls a leak.
	pthread_t owner;
	static kt_base *owned;
	owned = b;
	ASSERT_EQ(pthread_create(&owner, nullptr, [](void *) -> void * {
		kt_base_adopt(owned);
		kt_base_advance(owned, KT_MILLIS(100));
		return nullptr;
	}, nullptr), 0);
	for (int i = 0; i < 5000 && !in_cb; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	ASSERT_EQ(in_cb.load(), 1);
	int st = InChild([&]() -> int {
		WakeCounter own;
		if (kt_base_forked(b) != 1)
			return 1;
		if (kt_base_fork(b, WakeCounter::wake, &own) != -EBUSY)
			return 2;
		kt_base_set_waker(b, nullptr, nullptr);
		if (kt_base_forked(b) != 1 || kt_base_wake(b) != 0 || own.wakes != 0)
			return 3;
		return 0;
	}, 5);
	release = 1;
	pthread_join(owner, nullptr);
	EXPECT_EQ(st, 0) << "the child's check that failed";
	kt_base_adopt(b);
	EXPECT_EQ(kt_base_forked(b), 0);
}

// The owner itself forks from a callback: the child has the thread that
// runs the turn, which goes on there, and may take the base with
// kt_base_fork() from inside the callback; the rest of the batch fires in
// the child as in the parent.
TEST(Remote, AChildForkedFromACallbackKeepsTheTurnAndMayForkTheBase) {
	ManualBase b(16, 1000);
	struct S {
		kt_base *b;
		pid_t parent = getpid();
		int fork_result = -1, fired = 0;
		pid_t child = -1;
		WakeCounter own;
	} s;
	s.b = b;
	kt_timer t[3];
	for (auto &x : t) {
		ASSERT_EQ(kt_timer_setup(&x, b, [](kt_timer *) {}, 0), 0);
		ASSERT_EQ(kt_timer_arm(&x, KT_MILLIS(10)), 0);
	}
	kt_timer forker{};
	static S *sp;
	sp = &s;
	ASSERT_EQ(kt_timer_setup(&forker, b, [](kt_timer *) {
		sp->child = fork();
		if (sp->child == 0) {
			alarm(5);
			sp->fork_result = kt_base_fork(sp->b, WakeCounter::wake, &sp->own);
		}
	}, 0), 0);
	ASSERT_EQ(kt_timer_arm(&forker, KT_MILLIS(5)), 0); // fires first
	long fired = kt_base_advance(b, KT_MILLIS(100));
	if (getpid() != s.parent)
		_exit(s.fork_result != 0 ? 1 : fired != 4 ? 2 : kt_base_forked(b) ? 3 : kt_base_wake(b) != 1 ? 4 : 0);
	EXPECT_EQ(fired, 4);
	EXPECT_EQ(kt_test::WaitChild(s.child), 0) << "the child's check that failed";
}
