// tests/core/base_run_limit_test.cc: bounded runs (kt_base_set_run_limit()):
// a run fires at most the limit's callbacks, or stops once its time is
// spent, and leaves the rest due for the next runs, in order, none lost,
// doubled or early; the budget goes to callbacks only. Fake clocks only;
// nothing here sleeps.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <vector>

#include "tests/support/harness.h"

using kt_test::FakeClockBase;
using kt_test::Fire;
using kt_test::Logged;
using kt_test::ManualBase;

// ---- bounded runs: kt_base_set_run_limit() ----

namespace {

// A connection-like node that counts its fires and checks them against the
// expiry it was last armed for (never early).
struct Counted {
	kt_timer timer{};
	uint64_t expires = 0;
	int fires = 0;
	int early = 0;
	int group = 0;
	std::vector<int> *order = nullptr;
	static void cb(kt_timer *t) {
		Counted *c = kt_container_of(t, Counted, timer);
		c->fires++;
		if (kt_base_now(kt_test_base) < c->expires)
			c->early++;
		if (c->order)
			c->order->push_back(c->group);
	}
	static kt_base *kt_test_base;
};
kt_base *Counted::kt_test_base = nullptr;

} // namespace

TEST(RunLimit, BadArgumentsAreRefused) {
	EXPECT_EQ(kt_base_set_run_limit(nullptr, 1, 1), -EINVAL);
	ManualBase b;
	EXPECT_EQ(kt_base_set_run_limit(b, 0, 0), 0);
	EXPECT_EQ(kt_base_set_run_limit(b, UINT32_MAX, UINT32_MAX), 0);
}

TEST(RunLimit, SetFromACallbackIsEbusyAndKeepsTheRunsLimit) {
	std::vector<kt_timer> ts(5);
	FakeClockBase b;
	static int got;
	static kt_base *base;
	base = b;
	got = 1;
	for (auto &t : ts) {
		kt_timer_setup(&t, b, [](kt_timer *) { got = kt_base_set_run_limit(base, 0, 0); }, 0);
		kt_timer_arm(&t, KT_MILLIS(10));
	}
	ASSERT_EQ(kt_base_set_run_limit(b, 2, 0), 0);
	EXPECT_EQ(b.run_at(b.now + 100), 2u); // the callbacks' attempts to lift it failed
	EXPECT_EQ(got, -EBUSY);
}

// An expiry storm: 100,000 timers due in one bucket, 1,000 in the next,
// a limit of 1,000 callbacks per run.
TEST(RunLimit, HundredThousandInOneBucketDrainInOrderAtMostTheLimitPerRun) {
	const int kFirst = 100000, kSecond = 1000;
	std::vector<Counted> cs(kFirst + kSecond);
	FakeClockBase b(16, 1000);
	Counted::kt_test_base = b;
	std::vector<int> order;
	order.reserve(cs.size());
	// Level 2 at 16 ms (8064..64511 ms ahead): buckets 1024 ms wide. The
	// first group spans 1000 ms of one bucket, the second the next bucket.
	const uint64_t a = ((1000 + 20000) / 1024 + 1) * 1024; // a bucket boundary
	for (int i = 0; i < kFirst + kSecond; i++) {
		Counted &c = cs[i];
		c.group = i < kFirst ? 0 : 1;
		c.order = &order;
		c.expires = i < kFirst ? a + 1 + (uint64_t)(i % 1000) : a + 1024 + 1 + (uint64_t)(i % 1000);
		ASSERT_EQ(kt_timer_setup(&c.timer, b, Counted::cb, 0), 0);
		ASSERT_EQ(kt_mod_timer(&c.timer, c.expires), 0);
	}
	ASSERT_EQ(kt_base_set_run_limit(b, 1000, 0), 0);
	kt_base_stats st0{};
	ASSERT_EQ(kt_base_get_stats(b, &st0), 0);

	// Jump past both buckets: both are gathered by the first run.
	b.now = a + 4096;
	size_t total = 0;
	int runs = 0, deleted = 0, pushed = 0;
	std::vector<Counted *> pushed_back;
	for (; runs < 1000 && total < cs.size(); runs++) {
		size_t n = kt_base_run(b);
		ASSERT_LE(n, 1000u) << "run " << runs;
		ASSERT_GE(n, 1u) << "run " << runs; // never a run without progress
		total += n;
		ASSERT_TRUE(kt_test::CheckOk(b)) << "run " << runs;
		if (total - (size_t)deleted - (size_t)pushed < cs.size() && kt_base_next_timeout(b) != 0)
			break; // reported below: a left-over must make the wait immediate
		if (runs == 3) {
			// The turn's I/O: delete 10 left-overs, push 10 others back.
			for (int i = kFirst - 1; deleted < 10; i -= 7) {
				if (cs[i].fires == 0 && kt_timer_delete(&cs[i].timer) == 1)
					deleted++;
			}
			for (int i = kFirst - 2; pushed < 10; i -= 11) {
				if (cs[i].fires == 0 && kt_timer_pending(&cs[i].timer)) {
					cs[i].expires = b.now + 5000;
					ASSERT_EQ(kt_mod_timer(&cs[i].timer, cs[i].expires), 1);
					pushed_back.push_back(&cs[i]);
					pushed++;
				}
			}
		}
		if (total + (size_t)deleted + (size_t)pushed == cs.size())
			break;
		kt_wait_plan p = kt_base_prepare_wait(b);
		ASSERT_EQ(p.kind, KT_WAIT_IMMEDIATE) << "run " << runs << ", " << total << " fired";
	}
	EXPECT_EQ(total, cs.size() - 20u);
	EXPECT_GE(runs, 100); // 101,000 - 20 at 1,000 a run
	// The earlier bucket drained before the later one fired.
	ASSERT_EQ(order.size(), total);
	for (size_t i = 1; i < order.size(); i++)
		ASSERT_LE(order[i - 1], order[i]) << "fire " << i;
	// Drained: the wait is no longer immediate; the pushed-back ones wait.
	EXPECT_GT(kt_base_next_timeout(b), 0);
	for (Counted *c : pushed_back)
		EXPECT_EQ(c->fires, 0);
	b.run_at(b.now + 4000); // before their new time
	for (Counted *c : pushed_back)
		EXPECT_EQ(c->fires, 0);
	for (int i = 0; i < 20 && kt_base_pending_count(b) > 0; i++)
		b.run_at(b.now + 1000);
	for (Counted *c : pushed_back)
		EXPECT_EQ(c->fires, 1);
	int never = 0, twice = 0, early = 0;
	for (const Counted &c : cs) {
		never += c.fires == 0;
		twice += c.fires > 1;
		early += c.early;
	}
	EXPECT_EQ(never, 10); // exactly the deleted ones
	EXPECT_EQ(twice, 0);
	EXPECT_EQ(early, 0);
	kt_base_stats st{};
	ASSERT_EQ(kt_base_get_stats(b, &st), 0);
	EXPECT_GE(st.limited_runs - st0.limited_runs, 100u);
	EXPECT_EQ(st.fired - st0.fired, cs.size() - 10u);
}

TEST(RunLimit, LeftOversFireBeforeBucketsThatComeDueLater) {
	std::vector<Counted> cs(30);
	FakeClockBase b(16, 1000);
	Counted::kt_test_base = b;
	std::vector<int> order;
	for (int i = 0; i < 30; i++) {
		cs[i].group = i < 20 ? 0 : 1;
		cs[i].order = &order;
		cs[i].expires = i < 20 ? 1100 : 1300;
		kt_timer_setup(&cs[i].timer, b, Counted::cb, 0);
		kt_mod_timer(&cs[i].timer, cs[i].expires);
	}
	kt_base_set_run_limit(b, 8, 0);
	EXPECT_EQ(b.run_at(1200), 8u); // only the first bucket is due
	EXPECT_EQ(b.run_at(1400), 8u); // the second is now due too: left-overs first
	EXPECT_EQ(b.run_at(1400), 8u);
	EXPECT_EQ(b.run_at(1400), 6u);
	ASSERT_EQ(order.size(), 30u);
	for (size_t i = 0; i < order.size(); i++)
		EXPECT_EQ(order[i], i < 20 ? 0 : 1) << i;
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(RunLimit, GatheredByUpdateTimeThenLimitedLosesNothing) {
	std::vector<Counted> cs(50);
	FakeClockBase b(16, 1000);
	Counted::kt_test_base = b;
	for (int i = 0; i < 50; i++) {
		cs[i].expires = 1050 + (uint64_t)i * 20;
		kt_timer_setup(&cs[i].timer, b, Counted::cb, 0);
		kt_mod_timer(&cs[i].timer, cs[i].expires);
	}
	kt_base_set_run_limit(b, 7, 0);
	size_t total = 0;
	for (int turn = 0; turn < 300 && total < 50; turn++) {
		b.now += 10;
		kt_base_update_time(b); // the loop's "update the time" step
		total += kt_base_run(b);
		ASSERT_TRUE(kt_test::CheckOk(b)) << turn;
	}
	EXPECT_EQ(total, 50u);
	for (const Counted &c : cs) {
		EXPECT_EQ(c.fires, 1);
		EXPECT_EQ(c.early, 0);
	}
}

TEST(RunLimit, TimeLimitStopsBetweenSlowCallbacks) {
	std::vector<kt_timer> ts(20);
	FakeClockBase b(16, 1000);
	static FakeClockBase *clock;
	clock = &b;
	static int ran;
	ran = 0;
	for (auto &t : ts) {
		// Each callback takes 1 ms of the base's monotonic clock.
		kt_timer_setup(&t, b, [](kt_timer *) { ran++; clock->now += 1; }, 0);
		kt_timer_arm(&t, KT_MILLIS(10));
	}
	ASSERT_EQ(kt_base_set_run_limit(b, 0, 5000), 0); // 5 ms
	b.now = 1100;
	EXPECT_EQ(kt_base_run(b), 5u); // stopped between callbacks, not within one
	EXPECT_EQ(ran, 5);
	EXPECT_EQ(kt_base_next_timeout(b), 0);
	EXPECT_EQ(kt_base_run(b), 5u);
	EXPECT_EQ(kt_base_run(b), 5u);
	EXPECT_EQ(kt_base_run(b), 5u);
	EXPECT_EQ(ran, 20);
	EXPECT_NE(kt_base_next_timeout(b), 0);
}

TEST(RunLimit, ASlowFirstCallbackStillRunsOnePerCall) {
	std::vector<kt_timer> ts(3);
	FakeClockBase b(16, 1000);
	static FakeClockBase *clock;
	clock = &b;
	for (auto &t : ts) {
		kt_timer_setup(&t, b, [](kt_timer *) { clock->now += 50; }, 0); // 10x the limit
		kt_timer_arm(&t, KT_MILLIS(10));
	}
	kt_base_set_run_limit(b, 0, 5000);
	b.now = 1100;
	EXPECT_EQ(kt_base_run(b), 1u);
	EXPECT_EQ(kt_base_run(b), 1u);
	EXPECT_EQ(kt_base_run(b), 1u);
	EXPECT_EQ(kt_base_pending_count(b), 0u);
}

TEST(RunLimit, PreciseTimersCountTowardTheLimit) {
	std::vector<kt_hrtimer> hs(6);
	std::vector<kt_timer> ts(6);
	FakeClockBase b(16, 1000);
	static int hr, wheel;
	hr = wheel = 0;
	for (auto &h : hs) {
		kt_hrtimer_setup(&h, b, [](kt_hrtimer *) { hr++; });
		kt_hrtimer_start(&h, 1010 * UINT64_C(1000000));
	}
	for (auto &t : ts) {
		kt_timer_setup(&t, b, [](kt_timer *) { wheel++; }, 0);
		kt_timer_arm(&t, KT_MILLIS(10));
	}
	kt_base_set_run_limit(b, 4, 0);
	EXPECT_EQ(b.run_at(1100), 4u);
	EXPECT_EQ(hr, 4);
	EXPECT_EQ(wheel, 0);
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_EQ(kt_base_run(b), 4u);
	EXPECT_EQ(hr, 6);
	EXPECT_EQ(wheel, 2);
	EXPECT_EQ(kt_base_run(b), 4u);
	EXPECT_EQ(wheel, 6);
	EXPECT_EQ(kt_base_run(b), 0u);
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_INDEFINITE);
}

TEST(RunLimit, RemoteDoneCallbacksAreNotLimited) {
	std::vector<kt_timer> ts(10);
	FakeClockBase b(16, 1000);
	static int done;
	done = 0;
	for (auto &t : ts) {
		kt_timer_setup(&t, b, [](kt_timer *) {}, 0);
		ASSERT_EQ(kt_remote_arm(&t, KT_MILLIS(1000), [](kt_timer *, int, void *) { done++; }, nullptr), 0);
	}
	kt_base_set_run_limit(b, 1, 0);
	EXPECT_EQ(kt_base_run(b), 0u);
	EXPECT_EQ(done, 10);
	EXPECT_EQ(kt_base_run_done_calls(b), 10u);
	kt_base_stats st{};
	kt_base_get_stats(b, &st);
	EXPECT_EQ(st.limited_runs, 0u);
}

TEST(RunLimit, AdvanceOfTheManualClockIsNotLimited) {
	std::vector<kt_timer> ts(100);
	ManualBase b;
	static int n;
	n = 0;
	for (auto &t : ts) {
		kt_timer_setup(&t, b, [](kt_timer *) { n++; }, 0);
		kt_timer_arm(&t, KT_MILLIS(100));
	}
	kt_base_set_run_limit(b, 10, 1);
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(1000)), 100);
	EXPECT_EQ(n, 100);
}

TEST(RunLimit, LeftOverReArmedFromItsOwnBucketForLaterIsNotFiredEarly) {
	std::vector<Counted> cs(10);
	FakeClockBase b(16, 1000);
	Counted::kt_test_base = b;
	for (auto &c : cs) {
		c.expires = 1040;
		kt_timer_setup(&c.timer, b, Counted::cb, 0);
		kt_mod_timer(&c.timer, c.expires);
	}
	kt_base_set_run_limit(b, 2, 0);
	EXPECT_EQ(b.run_at(1050), 2u);
	// Within the same 16 ms unit as before, but later than now: the
	// same-bucket shortcut may keep it in the batch; it must still wait.
	for (auto &c : cs)
		if (!c.fires) {
			c.expires = 1052;
			kt_mod_timer(&c.timer, c.expires);
		}
	size_t total = 2;
	for (int i = 0; i < 10 && total < 10; i++)
		total += kt_base_run(b); // still at 1050
	EXPECT_EQ(total, 2u);
	for (int i = 0; i < 10 && total < 10; i++)
		total += b.run_at(1052 + (uint64_t)i);
	EXPECT_EQ(total, 10u);
	for (auto &c : cs) {
		EXPECT_EQ(c.fires, 1);
		EXPECT_EQ(c.early, 0);
	}
}

TEST(RunLimit, FreeWithLeftOversDetachesThem) {
	kt_base_config cfg{16, KT_CLOCK_MONOTONIC, 0};
	kt_base *b = kt_base_new(&cfg);
	static uint64_t now;
	now = 1000;
	kt__base_set_time_source(b, [](void *) { return now; }, nullptr);
	kt_base_run(b);
	std::vector<kt_timer> ts(10);
	for (auto &t : ts) {
		kt_timer_setup(&t, b, [](kt_timer *) {}, 0);
		kt_timer_arm(&t, KT_MILLIS(10));
	}
	kt_base_set_run_limit(b, 3, 0);
	now = 1100;
	EXPECT_EQ(kt_base_run(b), 3u);
	kt_base_free(b);
	for (auto &t : ts)
		EXPECT_FALSE(kt_timer_pending(&t));
}

// The worker loop of base.h (update the time, handle I/O, run): a precise
// timer gathered by kt_base_update_time() is due later than a stopped run's
// wheel left-overs and must not go before them. It did, and with a pacer due
// at every turn and a limit of 1 the left-overs never fired at all.
TEST(RunLimit, PreciseTimerGatheredByUpdateTimeDoesNotStarveWheelLeftOvers) {
	static FakeClockBase *fb;
	static kt_hrtimer pacer;
	static int wheel, paced;
	FakeClockBase b(1, 1000);
	fb = &b;
	wheel = paced = 0;
	kt_hrtimer_setup(&pacer, b, [](kt_hrtimer *h) {
		paced++;
		kt_hrtimer_start(h, (fb->now + 1) * UINT64_C(1000000)); // due at every turn
	});
	kt_hrtimer_start(&pacer, 1005 * UINT64_C(1000000));
	std::vector<kt_timer> ts(2);
	for (auto &t : ts) {
		kt_timer_setup(&t, b, [](kt_timer *) { wheel++; }, 0);
		kt_timer_arm(&t, KT_MILLIS(5));
	}
	ASSERT_EQ(kt_base_set_run_limit(b, 1, 0), 0);
	for (int turn = 0; turn < 40; turn++) {
		b.now++;
		ASSERT_EQ(kt_base_update_time(b), 0);
		EXPECT_LE(kt_base_run(b), 1u);
		EXPECT_TRUE(CheckOk(b));
	}
	EXPECT_EQ(wheel, 2); // due at 1005: 35 turns is plenty at one per turn
	EXPECT_GT(paced, 10);
	kt_hrtimer_cancel(&pacer);
}

// A left-over's callback that cancels another left-over: the precise timer
// gathered later must still wait for the wheel's left-overs (a run that
// counted the precise left-overs at its start and fired that many would let
// it jump the queue).
TEST(RunLimit, LeftOverCancelledByALeftOversCallbackLetsNothingLaterJumpTheQueue) {
	static kt_hrtimer hs[5];
	static std::vector<int> order;
	FakeClockBase b(1, 1000);
	order.clear();
	for (int i = 0; i < 5; i++) {
		kt_hrtimer_setup(&hs[i], b, [](kt_hrtimer *h) {
			int id = int(h - hs);
			order.push_back(id);
			if (id == 2)
				kt_hrtimer_cancel(&hs[3]);
		});
		kt_hrtimer_start(&hs[i], (i < 4 ? 1005 : 1012) * UINT64_C(1000000));
	}
	kt_timer w;
	kt_timer_setup(&w, b, [](kt_timer *) { order.push_back(100); }, 0);
	kt_mod_timer(&w, 1005);
	ASSERT_EQ(kt_base_set_run_limit(b, 2, 0), 0);
	EXPECT_EQ(b.run_at(1010), 2u); // hs[0], hs[1]; left: hs[2], hs[3], w
	EXPECT_EQ(b.run_at(1015), 2u); // hs[2] (cancels hs[3]), then w - not hs[4], due later
	EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 100}));
	EXPECT_EQ(b.run_at(1016), 1u);
	EXPECT_EQ(order.back(), 4);
	EXPECT_TRUE(CheckOk(b));
}

// A backlog that outgrows the batch: at a limit of 1, two one-timer buckets
// come due per turn, so left-over buckets pile up past the batch's 1,024
// groups and the wheel clock is held back. Nothing fires early, nothing is
// lost or doubled, the base checks out at every turn, and once the arming
// stops the backlog drains.
TEST(RunLimit, BacklogPastTheBatchsRoomHoldsTheClockAndLosesNothing) {
	struct T {
		kt_timer timer;
		uint64_t expires;
		int fires;
	};
	static std::vector<T> ts;
	static FakeClockBase *fb;
	static uint64_t last_expires;
	static int early;
	static uint64_t inversion;
	FakeClockBase b(1, 1000);
	fb = &b;
	ts.assign(3000, T{});
	early = 0;
	last_expires = inversion = 0;
	ASSERT_EQ(kt_base_set_run_limit(b, 1, 0), 0);
	size_t armed = 0, fired = 0;
	auto cb = [](kt_timer *t) {
		T *x = kt_container_of(t, T, timer);
		x->fires++;
		early += kt_base_now(fb->b) < x->expires;
		if (x->expires < last_expires)
			inversion = std::max(inversion, last_expires - x->expires);
		last_expires = std::max(last_expires, x->expires);
	};
	bool held = false;
	for (int turn = 0; turn < 20000 && fired < ts.size(); turn++) {
		b.now += 2;
		ASSERT_EQ(kt_base_update_time(b), 0);
		// Two timers due 10 ms from now, in distinct 1 ms buckets.
		for (int k = 0; k < 2 && armed < ts.size(); k++, armed++) {
			T &x = ts[armed];
			x.expires = kt_base_now(b) + 10 + uint64_t(k);
			kt_timer_setup(&x.timer, b, cb, 0);
			kt_mod_timer(&x.timer, x.expires);
		}
		size_t n = kt_base_run(b);
		EXPECT_LE(n, 1u);
		fired += n;
		ASSERT_TRUE(CheckOk(b)) << "turn " << turn;
		held |= kt_base_next_timeout(b) == 0 && kt_base_pending_count(b) > 1024;
	}
	EXPECT_TRUE(held);
	EXPECT_EQ(fired, ts.size());
	EXPECT_EQ(early, 0);
	// Timers armed while the clock is held back land on coarser levels
	// (base.h): out of expiry order by at most such a bucket, never by more.
	EXPECT_LT(inversion, 512u) << "max inversion " << inversion;
	for (auto &x : ts)
		EXPECT_EQ(x.fires, 1);
}

// ---- a limited run spends its budget on callbacks only ----

namespace {

int budget_fires = 0;
void budget_cb(kt_timer *) { budget_fires++; }

} // namespace

// Limit 3: three due timers, then a lazy one pushed later (in the batch, but
// only requeued when taken, no callback). The run must not stop in front of
// it: nothing due is left, so the run is not limited and the next wait is
// not immediate ("limit 3, ran 3, the batch left holds 1 wheel timer, not
// due" is no limited run).
TEST(RunLimit, ALazyTimerThatIsOnlyRequeuedCostsNoBudgetAndIsNoReasonToStop) {
	FakeClockBase b(16, 1000);
	std::vector<kt_timer> plain(3);
	kt_timer lazy{};
	budget_fires = 0;
	for (kt_timer &t : plain) {
		ASSERT_EQ(kt_timer_setup(&t, b, budget_cb, 0), 0);
		ASSERT_EQ(kt_mod_timer(&t, 1100), 0); // the bucket of unit 69 (1104 ms)
	}
	ASSERT_EQ(kt_timer_setup(&lazy, b, budget_cb, KT_TIMER_LAZY), 0);
	ASSERT_EQ(kt_mod_timer(&lazy, 1150), 0); // unit 72: a later group of the batch
	ASSERT_EQ(kt_mod_timer(&lazy, 5000), 1); // pushed later: stays in unit 72's bucket
	ASSERT_EQ(kt_base_set_run_limit(b, 3, 0), 0);
	kt_base_stats st0{}, st{};
	ASSERT_EQ(kt_base_get_stats(b, &st0), 0);
	EXPECT_EQ(b.run_at(1200), 3u); // both buckets gathered: 3 callbacks, the lazy requeued
	ASSERT_EQ(kt_base_get_stats(b, &st), 0);
	EXPECT_EQ(st.limited_runs - st0.limited_runs, 0u) << "no due timer was left";
	EXPECT_TRUE(CheckOk(b));
	kt_wait_plan p = kt_base_prepare_wait(b);
	EXPECT_EQ(p.kind, KT_WAIT_UNTIL) << "an immediate plan with nothing due";
	EXPECT_GT(kt_base_next_timeout(b), 0);
	EXPECT_TRUE(kt_timer_pending(&lazy));
	EXPECT_EQ(budget_fires, 3);
	// And it fires at its time, never early.
	EXPECT_EQ(b.run_at(4999), 0u);
	for (int i = 0; i < 10 && kt_timer_pending(&lazy); i++)
		b.run_at(5000 + 200 * uint64_t(i));
	EXPECT_FALSE(kt_timer_pending(&lazy));
	EXPECT_EQ(budget_fires, 4);
}

// The same with a due timer behind the lazy one: the run stops in front of
// the due one (it would fire), counts as limited, and that timer is what the
// next run fires.
TEST(RunLimit, ALimitedRunStopsOnlyInFrontOfATimerThatWillFire) {
	// First: kt_base_free() detaches lazy, still pending.
	std::vector<kt_timer> plain(3);
	kt_timer lazy{}, last{};
	FakeClockBase b(16, 1000);
	budget_fires = 0;
	for (kt_timer &t : plain) {
		ASSERT_EQ(kt_timer_setup(&t, b, budget_cb, 0), 0);
		ASSERT_EQ(kt_mod_timer(&t, 1100), 0);
	}
	ASSERT_EQ(kt_timer_setup(&lazy, b, budget_cb, KT_TIMER_LAZY), 0);
	ASSERT_EQ(kt_mod_timer(&lazy, 1150), 0);
	ASSERT_EQ(kt_mod_timer(&lazy, 5000), 1);
	ASSERT_EQ(kt_timer_setup(&last, b, budget_cb, 0), 0);
	ASSERT_EQ(kt_mod_timer(&last, 1180), 0); // unit 74: behind the lazy one
	ASSERT_EQ(kt_base_set_run_limit(b, 3, 0), 0);
	kt_base_stats st0{}, st{};
	ASSERT_EQ(kt_base_get_stats(b, &st0), 0);
	EXPECT_EQ(b.run_at(1200), 3u);
	ASSERT_EQ(kt_base_get_stats(b, &st), 0);
	EXPECT_EQ(st.limited_runs - st0.limited_runs, 1u);
	EXPECT_TRUE(kt_timer_pending(&last));
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE); // a due timer is left
	EXPECT_EQ(b.run_at(1200), 1u);
	EXPECT_FALSE(kt_timer_pending(&last));
	ASSERT_EQ(kt_base_get_stats(b, &st), 0);
	EXPECT_EQ(st.limited_runs - st0.limited_runs, 1u); // the second run was not stopped
	EXPECT_TRUE(kt_timer_pending(&lazy));
	EXPECT_NE(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_EQ(budget_fires, 4);
	EXPECT_TRUE(CheckOk(b));
}

// A run stopped by its limit leaves its left-overs where they are in the
// batch: moving them to its front after every stopped run touched each
// left-over list's first node (a likely cache miss), which made a limit of
// 256 cost 1.17x per fired timer at 100k pending. A left-over's link into
// the batch (private, read here only for this) must not change.
TEST(RunLimit, AStoppedRunDoesNotMoveItsLeftOvers) {
	FakeClockBase b(16, 1000);
	std::vector<kt_timer> ts(8);
	budget_fires = 0;
	for (size_t i = 0; i < ts.size(); i++) {
		ASSERT_EQ(kt_timer_setup(&ts[i], b, budget_cb, 0), 0);
		ASSERT_EQ(kt_mod_timer(&ts[i], 1050 + 16 * i), 0); // one bucket (group) each
	}
	ASSERT_EQ(kt_base_set_run_limit(b, 3, 0), 0);
	b.now = 1300;
	ASSERT_EQ(kt_base_update_time(b), 0); // gathered: each timer heads a batch entry
	std::vector<kt_timer **> where(ts.size());
	for (size_t i = 0; i < ts.size(); i++)
		where[i] = ts[i].kt__pprev;
	EXPECT_EQ(kt_base_run(b), 3u);
	size_t left = 0;
	for (size_t i = 0; i < ts.size(); i++)
		if (kt_timer_pending(&ts[i])) {
			left++;
			EXPECT_EQ(ts[i].kt__pprev, where[i]) << "left-over " << i << " was moved";
		}
	EXPECT_EQ(left, 5u);
	EXPECT_TRUE(CheckOk(b));
	EXPECT_EQ(kt_base_run(b), 3u);
	EXPECT_TRUE(CheckOk(b));
	EXPECT_EQ(kt_base_run(b), 2u);
	EXPECT_EQ(budget_fires, 8);
	EXPECT_NE(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_TRUE(CheckOk(b));
}

// ---- a limited run's countdown: the count, the clock, and the phases ----

namespace {

// Callbacks that cost the fake clock `cost_ms` each, or `slow_ms` for the
// callback numbered `slow_at` (counted over the whole test from 1).
struct Costly {
	static FakeClockBase *clock;
	static uint64_t cost_ms, slow_ms;
	static int ran, slow_at;
	static void cb(kt_timer *) {
		ran++;
		clock->now += ran == slow_at ? slow_ms : cost_ms;
	}
	static void reset(FakeClockBase *b) {
		clock = b;
		cost_ms = slow_ms = 0;
		ran = slow_at = 0;
	}
};
FakeClockBase *Costly::clock;
uint64_t Costly::cost_ms, Costly::slow_ms;
int Costly::ran, Costly::slow_at;

uint64_t limited_runs(kt_base *b) {
	kt_base_stats st{};
	EXPECT_EQ(kt_base_get_stats(b, &st), 0);
	return st.limited_runs;
}

} // namespace

// A count and a time limit together: whichever is reached first stops the
// run, never one callback later; each stopped run with due timers left
// counts as limited, the last (nothing left) does not.
TEST(RunLimit, CountAndTimeLimitsTogetherStopAtWhicheverComesFirst) {
	FakeClockBase b(16, 1000);
	Costly::reset(&b);
	std::vector<kt_timer> ts(10);
	for (kt_timer &t : ts)
		ASSERT_EQ(kt_timer_setup(&t, b, Costly::cb, 0), 0);
	auto arm_all = [&] {
		for (kt_timer &t : ts)
			ASSERT_EQ(kt_timer_arm(&t, KT_MILLIS(10)), 0);
	};
	auto runs_until_drained = [&] {
		std::vector<size_t> got;
		for (int i = 0; i < 20 && kt_base_pending_count(b) > 0; i++)
			got.push_back(kt_base_run(b));
		return got;
	};
	uint64_t lim0 = limited_runs(b);

	// The count first: free callbacks, 10 ms allowed.
	arm_all();
	ASSERT_EQ(kt_base_set_run_limit(b, 3, 10000), 0);
	b.now += 100;
	EXPECT_EQ(runs_until_drained(), (std::vector<size_t>{3, 3, 3, 1}));
	EXPECT_EQ(limited_runs(b) - lim0, 3u);

	// The time first: 1 ms a callback, 4 ms allowed, 10 callbacks allowed.
	arm_all();
	Costly::cost_ms = 1;
	ASSERT_EQ(kt_base_set_run_limit(b, 10, 4000), 0);
	b.now += 100;
	EXPECT_EQ(runs_until_drained(), (std::vector<size_t>{4, 4, 2}));
	EXPECT_EQ(limited_runs(b) - lim0, 5u);

	// The count first again, with the clock moving: 2 a run.
	arm_all();
	ASSERT_EQ(kt_base_set_run_limit(b, 2, 4000), 0);
	b.now += 100;
	EXPECT_EQ(runs_until_drained(), (std::vector<size_t>{2, 2, 2, 2, 2}));
	EXPECT_EQ(limited_runs(b) - lim0, 9u);
	EXPECT_EQ(Costly::ran, 30);
	EXPECT_TRUE(CheckOk(b));
}

// A time limit is read before every callback after the first, not every
// few: the run stops right behind whichever callback used the time up.
TEST(RunLimit, ATimeLimitIsReadBeforeEveryCallbackAfterTheFirst) {
	FakeClockBase b(16, 1000);
	Costly::reset(&b);
	std::vector<kt_timer> ts(20);
	for (kt_timer &t : ts) {
		ASSERT_EQ(kt_timer_setup(&t, b, Costly::cb, 0), 0);
		ASSERT_EQ(kt_timer_arm(&t, KT_MILLIS(10)), 0);
	}
	ASSERT_EQ(kt_base_set_run_limit(b, 0, 5000), 0);
	Costly::slow_ms = 10;
	b.now = 1100;
	size_t total = 0;
	for (int k = 2; k <= 5; k++) {
		Costly::slow_at = int(total) + k; // the k-th callback of this run is slow
		EXPECT_EQ(kt_base_run(b), size_t(k)) << "slow callback " << k << " of the run";
		total += size_t(k);
	}
	EXPECT_EQ(total, 14u);
	EXPECT_EQ(kt_base_run(b), 6u); // none slow: the rest in one run
	EXPECT_EQ(Costly::ran, 20);
	EXPECT_EQ(kt_base_pending_count(b), 0u);
}

// The time runs out in front of a node that is only requeued (a lazy timer
// pushed later): no stop there, but the clock is read again in front of
// the next node, a due one, and the run stops there - limited.
TEST(RunLimit, ATimeLimitSpentInFrontOfARequeueStopsBeforeTheNextDueTimer) {
	FakeClockBase b(16, 1000);
	Costly::reset(&b);
	kt_timer slow{}, lazy{}, p1{}, p2{};
	ASSERT_EQ(kt_timer_setup(&slow, b, Costly::cb, 0), 0);
	ASSERT_EQ(kt_timer_setup(&lazy, b, Costly::cb, KT_TIMER_LAZY), 0);
	ASSERT_EQ(kt_timer_setup(&p1, b, Costly::cb, 0), 0);
	ASSERT_EQ(kt_timer_setup(&p2, b, Costly::cb, 0), 0);
	ASSERT_EQ(kt_mod_timer(&slow, 1100), 0); // unit 69
	ASSERT_EQ(kt_mod_timer(&lazy, 1120), 0); // unit 70 ...
	ASSERT_EQ(kt_mod_timer(&lazy, 5000), 1); // ... pushed later, stays there
	ASSERT_EQ(kt_mod_timer(&p1, 1150), 0);   // unit 72
	ASSERT_EQ(kt_mod_timer(&p2, 1150), 0);
	ASSERT_EQ(kt_base_set_run_limit(b, 0, 5000), 0);
	Costly::slow_at = 1;
	Costly::slow_ms = 10;
	uint64_t lim0 = limited_runs(b);
	EXPECT_EQ(b.run_at(1200), 1u); // slow; the lazy one requeued; stopped in front of p1
	EXPECT_EQ(limited_runs(b) - lim0, 1u);
	EXPECT_TRUE(kt_timer_pending(&p1));
	EXPECT_TRUE(kt_timer_pending(&p2));
	EXPECT_TRUE(kt_timer_pending(&lazy));
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_TRUE(CheckOk(b));
	EXPECT_EQ(kt_base_run(b), 2u); // p1, p2: the clock did not move
	EXPECT_EQ(limited_runs(b) - lim0, 1u);
	EXPECT_NE(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_EQ(b.run_at(4999), 0u);
	for (int i = 0; i < 10 && kt_timer_pending(&lazy); i++)
		b.run_at(5000 + 200 * uint64_t(i));
	EXPECT_FALSE(kt_timer_pending(&lazy));
	EXPECT_EQ(Costly::ran, 4);
	EXPECT_TRUE(CheckOk(b));
}

// The left-overs of a stopped run use up the whole count limit, and what
// the turn gathered behind them is only a lazy timer pushed later: the run
// is not stopped (nothing due is left), so not limited, and the next wait
// is not immediate.
TEST(RunLimit, LeftOversThatSpendTheWholeLimitBeforeOnlyARequeueAreNoStop) {
	FakeClockBase b(16, 1000);
	std::vector<kt_timer> plain(8);
	kt_timer lazy{};
	budget_fires = 0;
	for (kt_timer &t : plain) {
		ASSERT_EQ(kt_timer_setup(&t, b, budget_cb, 0), 0);
		ASSERT_EQ(kt_mod_timer(&t, 1100), 0); // unit 69
	}
	ASSERT_EQ(kt_base_set_run_limit(b, 4, 0), 0);
	uint64_t lim0 = limited_runs(b);
	EXPECT_EQ(b.run_at(1110), 4u);
	EXPECT_EQ(limited_runs(b) - lim0, 1u);
	ASSERT_EQ(kt_timer_setup(&lazy, b, budget_cb, KT_TIMER_LAZY), 0);
	ASSERT_EQ(kt_mod_timer(&lazy, 1130), 0); // unit 71 ...
	ASSERT_EQ(kt_mod_timer(&lazy, 5000), 1); // ... pushed later, stays there
	EXPECT_EQ(b.run_at(1140), 4u);           // the 4 left-overs, the lazy one requeued
	EXPECT_EQ(limited_runs(b) - lim0, 1u) << "no due timer was left";
	EXPECT_NE(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_TRUE(kt_timer_pending(&lazy));
	EXPECT_EQ(budget_fires, 8);
	EXPECT_TRUE(CheckOk(b));
	for (int i = 0; i < 10 && kt_timer_pending(&lazy); i++)
		b.run_at(5000 + 200 * uint64_t(i));
	EXPECT_EQ(budget_fires, 9);
}

// Set up every node of @cs, group 0 (the first @first, due at @t0, armed)
// and group 1 (the rest, due at @t1, armed later by the test).
static void SetUpTwoGroups(FakeClockBase &b, std::vector<Counted> &cs, std::vector<int> &order, size_t first,
			   uint64_t t0, uint64_t t1) {
	Counted::kt_test_base = b;
	for (size_t i = 0; i < cs.size(); i++) {
		cs[i].order = &order;
		cs[i].group = i < first ? 0 : 1;
		cs[i].expires = i < first ? t0 : t1;
		ASSERT_EQ(kt_timer_setup(&cs[i].timer, b, Counted::cb, 0), 0);
		if (i < first)
			ASSERT_EQ(kt_mod_timer(&cs[i].timer, cs[i].expires), 0);
	}
}

// A run whose left-overs alone exceed its limit stops among them and does
// not touch what the turn gathered behind them (a lazy timer pushed later
// and a due timer); the next runs go on in order: the rest of the
// left-overs, then the lazy timer requeued (no budget), then the due timer
// - which the limit leaves for a third run. Each fires once, the lazy one
// at its time.
TEST(RunLimit, AStoppedRunLeavesWhatWasGatheredBehindItsLeftOversForTheNextRuns) {
	FakeClockBase b(16, 1000);
	std::vector<Counted> cs(13);
	std::vector<int> order;
	kt_timer lazy{};
	budget_fires = 0;
	SetUpTwoGroups(b, cs, order, 12, 1100, 1150); // units 69 and 72
	ASSERT_EQ(kt_base_set_run_limit(b, 4, 0), 0);
	uint64_t lim0 = limited_runs(b);
	EXPECT_EQ(b.run_at(1110), 4u);
	ASSERT_EQ(kt_timer_setup(&lazy, b, budget_cb, KT_TIMER_LAZY), 0);
	ASSERT_EQ(kt_mod_timer(&lazy, 1130), 0); // unit 71 ...
	ASSERT_EQ(kt_mod_timer(&lazy, 5000), 1); // ... pushed later
	ASSERT_EQ(kt_mod_timer(&cs[12].timer, cs[12].expires), 0);
	EXPECT_EQ(b.run_at(1160), 4u); // left-overs only: 4 of the 8
	EXPECT_EQ(cs[12].fires, 0);
	EXPECT_TRUE(CheckOk(b));
	EXPECT_EQ(kt_base_run(b), 4u); // the last 4; the lazy one requeued; stopped in front of cs[12]
	EXPECT_EQ(cs[12].fires, 0);
	EXPECT_EQ(limited_runs(b) - lim0, 3u);
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_EQ(kt_base_run(b), 1u);
	EXPECT_EQ(limited_runs(b) - lim0, 3u);
	EXPECT_NE(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	ASSERT_EQ(order.size(), 13u);
	for (size_t i = 0; i < order.size(); i++)
		EXPECT_EQ(order[i], i < 12 ? 0 : 1) << i;
	EXPECT_EQ(budget_fires, 0);
	EXPECT_TRUE(kt_timer_pending(&lazy));
	EXPECT_EQ(b.run_at(4999), 0u);
	for (int i = 0; i < 10 && kt_timer_pending(&lazy); i++)
		b.run_at(5000 + 200 * uint64_t(i));
	EXPECT_EQ(budget_fires, 1);
	for (const Counted &c : cs) {
		EXPECT_EQ(c.fires, 1);
		EXPECT_EQ(c.early, 0);
	}
	EXPECT_TRUE(CheckOk(b));
}

// The left-overs use up the whole count limit exactly, and a due timer was
// gathered behind them: the run stops in front of it (limited), never one
// callback past the limit, and the next run fires it.
TEST(RunLimit, LeftOversThatSpendTheWholeLimitStopInFrontOfTheNextDueTimer) {
	FakeClockBase b(16, 1000);
	std::vector<Counted> cs(9);
	std::vector<int> order;
	SetUpTwoGroups(b, cs, order, 8, 1100, 1130); // units 69 and 71
	ASSERT_EQ(kt_base_set_run_limit(b, 4, 0), 0);
	uint64_t lim0 = limited_runs(b);
	EXPECT_EQ(b.run_at(1110), 4u);
	ASSERT_EQ(kt_mod_timer(&cs[8].timer, cs[8].expires), 0);
	EXPECT_EQ(b.run_at(1140), 4u); // the 4 left-overs, not the one behind them
	EXPECT_EQ(cs[8].fires, 0);
	EXPECT_EQ(limited_runs(b) - lim0, 2u);
	EXPECT_EQ(kt_base_prepare_wait(b).kind, KT_WAIT_IMMEDIATE);
	EXPECT_EQ(kt_base_run(b), 1u);
	EXPECT_EQ(limited_runs(b) - lim0, 2u);
	EXPECT_EQ(order, (std::vector<int>{0, 0, 0, 0, 0, 0, 0, 0, 1}));
	for (const Counted &c : cs) {
		EXPECT_EQ(c.fires, 1);
		EXPECT_EQ(c.early, 0);
	}
	EXPECT_TRUE(CheckOk(b));
}
