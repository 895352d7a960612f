// tests/core/base_turn_test.cc: the turn - kt_base_update_time() gathers
// what is due, the turn's I/O deletes, re-arms and arms, kt_base_run() fires
// what is still due - and the gathered batch that spans it: nothing lost,
// doubled or early, kt_base_check() holding throughout. Fake clocks only;
// nothing here sleeps.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/support/harness.h"

using kt_test::FakeClockBase;
using kt_test::Fire;
using kt_test::Logged;
using kt_test::ManualBase;

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
// wait in between is immediate; the batch's arrays are never written past.
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

// ---- the gathered batch: deletes, push-backs and cancels before the run -----

// The README turn: kt_base_update_time() gathers A, this turn's I/O deletes A
// (the connection closed), and the clock moves on before kt_base_run() (the
// I/O took a while), so the run gathers another bucket. The delete unlinks
// A, the batch's last node, so the batch's tail moves back to the node
// before it (wheel.c's detach()); a tail left at A's link would have the run
// append C's bucket to A instead of to the batch - C would never fire
// (pending forever, kt_base_check() reporting BATCH, then COUNT), and with A
// freed the append would write into freed memory.
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
// to its bucket list: c must join the batch, not be spliced behind a in a's
// new bucket, where it would fire with a, seconds late.
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
// to the pool, and the next call made with that node must not be touched by
// the run's append to the batch.
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
// kt__wheel_fire() pops the batch's timer before its callback, and when it
// is the last it resets the batch's tail to the empty batch first: a tail
// left at the popped timer's link would make a check from the last callback
// of a batch report KT_CHECK_BATCH.
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
// precise timer is just as pending, and counted too: a count of the heap
// alone would lose it (and kt_base_dump() would list one timer more than
// the count it prints).
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
