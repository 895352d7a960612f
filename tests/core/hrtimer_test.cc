// Precise timers: exact deadlines on the paused clock, no drift for a pacer,
// heap order against a sorted model, cancel from callbacks, wait-plan merge.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "lib/testing/paused.h"
#include "lib/testing/time_source.h"
#include "tests/support/harness.h"

using kt_test::FakeClockBase;
using kt_test::ManualBase;

namespace {

struct Hr {
	kt_hrtimer t;
	kt_base *base;
	int id = 0;
	std::vector<std::pair<int, uint64_t>> *log = nullptr;
	static void cb(kt_hrtimer *t) {
		Hr *h = kt_container_of(t, Hr, t);
		h->log->push_back({h->id, kt_base_now_ns(h->base)});
	}
};

struct Pacer {
	kt_hrtimer t;
	kt_base *base;
	uint64_t next;
	int steps = 0;
	std::vector<uint64_t> at;
	static void cb(kt_hrtimer *t) {
		Pacer *p = kt_container_of(t, Pacer, t);
		p->at.push_back(kt_base_now_ns(p->base));
		if (++p->steps < 10) {
			p->next += 100000; // from the previous deadline, not from now
			kt_hrtimer_start(&p->t, p->next);
		}
	}
};

} // namespace

TEST(HrTimer, SetupRejectsNull) {
	ManualBase b;
	kt_hrtimer t;
	EXPECT_EQ(kt_hrtimer_setup(&t, nullptr, Hr::cb), -EINVAL);
	EXPECT_EQ(kt_hrtimer_start(&t, 5), -EINVAL);
	EXPECT_EQ(kt_hrtimer_setup(&t, b, nullptr), -EINVAL);
	EXPECT_EQ(kt_hrtimer_start_after(&t, 5), -EINVAL);
}

TEST(HrTimer, PacerOfTenHundredMicrosecondStepsDoesNotDrift) {
	ManualBase b(16, 1000);
	Pacer p;
	p.base = b;
	kt_hrtimer_setup(&p.t, b, Pacer::cb);
	uint64_t begin = kt_base_now_ns(b);
	p.next = begin + 100000;
	kt_hrtimer_start(&p.t, p.next);
	kt_paused_run_until_idle(b, 100);
	ASSERT_EQ(p.at.size(), 10u);
	for (size_t i = 0; i < 10; i++)
		EXPECT_EQ(p.at[i], begin + (i + 1) * 100000) << i; // to the nanosecond
	EXPECT_EQ(kt_base_now_ns(b), begin + 1000000);
}

TEST(HrTimer, LatePacerCatchesUpOnSchedule) {
	// A real loop that wakes late: deadlines stay on the schedule.
	FakeClockBase b(1, 0);
	Pacer p;
	p.base = b;
	kt_hrtimer_setup(&p.t, b, Pacer::cb);
	p.next = 100000;
	kt_hrtimer_start(&p.t, p.next);
	for (uint64_t ms = 1; p.steps < 10 && ms < 100; ms++)
		b.run_at(ms); // 1 ms turns: each turn fires at most one step
	EXPECT_EQ(p.steps, 10);
	EXPECT_EQ(kt_hrtimer_expires(&p.t), 1000000u); // 10 x 100 us, no drift
}

TEST(HrTimer, FiresInDeadlineOrderNeverEarly) {
	ManualBase b(1, 0);
	std::vector<std::pair<int, uint64_t>> log;
	std::mt19937_64 rng(7);
	std::vector<Hr> h(500);
	std::vector<uint64_t> when(h.size());
	for (size_t i = 0; i < h.size(); i++) {
		h[i].base = b;
		h[i].id = int(i);
		h[i].log = &log;
		kt_hrtimer_setup(&h[i].t, b, Hr::cb);
		when[i] = rng() % 50000000; // within 50 ms
		EXPECT_EQ(kt_hrtimer_start(&h[i].t, when[i]), 0);
	}
	// Re-arm some, cancel some.
	for (size_t i = 0; i < h.size(); i += 7) {
		when[i] = rng() % 50000000;
		EXPECT_EQ(kt_hrtimer_start(&h[i].t, when[i]), 1);
	}
	size_t cancelled = 0;
	for (size_t i = 3; i < h.size(); i += 11, cancelled++)
		EXPECT_EQ(kt_hrtimer_cancel(&h[i].t), 1);
	EXPECT_TRUE(kt_test::CheckOk(b));
	kt_paused_run_until_idle(b, 100000);
	ASSERT_EQ(log.size(), h.size() - cancelled);
	for (size_t i = 0; i < log.size(); i++) {
		EXPECT_EQ(log[i].second, when[size_t(log[i].first)]); // exactly at its deadline
		if (i) {
			EXPECT_LE(log[i - 1].second, log[i].second);
		}
	}
}

TEST(HrTimer, CallbackCancelsAnotherDueInTheSameBatch) {
	FakeClockBase b(1, 0);
	struct Two {
		kt_hrtimer a, c;
		int c_runs = 0;
		static void on_a(kt_hrtimer *t) {
			Two *s = kt_container_of(t, Two, a);
			EXPECT_EQ(kt_hrtimer_cancel(&s->c), 1);
		}
		static void on_c(kt_hrtimer *t) { kt_container_of(t, Two, c)->c_runs++; }
	} s;
	kt_hrtimer_setup(&s.a, b, Two::on_a);
	kt_hrtimer_setup(&s.c, b, Two::on_c);
	kt_hrtimer_start(&s.a, 1000000);
	kt_hrtimer_start(&s.c, 1000001);
	b.run_at(5);
	EXPECT_EQ(s.c_runs, 0);
	EXPECT_FALSE(kt_hrtimer_pending(&s.c));
}

TEST(HrTimer, PreciseDeadlineLeadsTheWaitPlan) {
	FakeClockBase b(16, 1000);
	std::vector<std::pair<int, uint64_t>> log;
	Hr h;
	h.base = b;
	h.log = &log;
	kt_hrtimer_setup(&h.t, b, Hr::cb);
	kt_test::Logged w;
	std::vector<kt_test::Fire> wlog;
	w.setup(b, 1, &wlog);
	kt_timer_arm(&w.timer, KT_MILLIS(100));
	kt_hrtimer_start(&h.t, 1000u * 1000000u + 250000u); // 250 us from now
	kt_wait_plan p = kt_base_prepare_wait(b);
	EXPECT_EQ(p.kind, KT_WAIT_UNTIL);
	EXPECT_EQ(p.precise, 1);
	EXPECT_EQ(p.deadline_ns, 1000u * 1000000u + 250000u);
	EXPECT_EQ(kt_wait_plan_timeout_ms(b, &p), 1);
	EXPECT_EQ(kt_base_next_timeout(b), 1);
	kt_hrtimer_cancel(&h.t);
	p = kt_base_prepare_wait(b);
	EXPECT_EQ(p.precise, 0); // the wheel's deadline again
}

TEST(HrTimer, FreeBaseDetachesPreciseTimers) {
	Hr h;
	std::vector<std::pair<int, uint64_t>> log;
	{
		ManualBase b;
		h.base = b;
		h.log = &log;
		kt_hrtimer_setup(&h.t, b, Hr::cb);
		kt_hrtimer_start(&h.t, 5);
	}
	EXPECT_FALSE(kt_hrtimer_pending(&h.t));
	EXPECT_TRUE(log.empty());
}

namespace {

// A precise timer whose callback arms a wheel timer for "now", and a wheel
// timer whose callback arms a precise timer for "now": neither may fire in
// the turn that armed it.
struct Cross {
	kt_hrtimer h;
	kt_timer w;
	kt_base *b;
	int h_runs = 0, w_runs = 0;
	bool chain = true;
	static void on_h(kt_hrtimer *t) {
		Cross *c = kt_container_of(t, Cross, h);
		c->h_runs++;
		if (c->chain)
			kt_mod_timer(&c->w, kt_base_now(c->b));
	}
	static void on_w(kt_timer *t) {
		Cross *c = kt_container_of(t, Cross, w);
		c->w_runs++;
		if (c->chain)
			kt_hrtimer_start(&c->h, kt_base_now_ns(c->b));
	}
};

} // namespace

TEST(HrTimer, TimersArmedAcrossKindsFromCallbacksWaitForTheNextTurn) {
	FakeClockBase b(16, 1000);
	Cross c;
	c.b = b;
	kt_hrtimer_setup(&c.h, b, Cross::on_h);
	kt_timer_setup(&c.w, b, Cross::on_w, 0);
	b.run_at(4992); // the wheel clock now stands at the tick of 5008 ms
	kt_hrtimer_start(&c.h, 4993u * 1000000u + 500000u);
	// One turn at 5008: the precise timer fires and arms the wheel timer
	// for 5008, a time already due in this very turn. It must wait.
	EXPECT_EQ(b.run_at(5008), 1u);
	EXPECT_EQ(c.h_runs, 1);
	EXPECT_EQ(c.w_runs, 0);
	EXPECT_TRUE(kt_timer_pending(&c.w));
	EXPECT_EQ(b.run_at(5024), 1u); // the wheel timer, on the next tick
	EXPECT_EQ(c.w_runs, 1);
	EXPECT_TRUE(kt_hrtimer_pending(&c.h)); // armed for "now": next turn
	c.chain = false;
	EXPECT_EQ(b.run_at(5024), 1u);
	EXPECT_EQ(c.h_runs, 2);
}

// ---- precise and wheel timers in one turn; equal deadlines -------------------

namespace {

struct ArmsWheel {
	kt_hrtimer hr;
	kt_timer wheel;
	kt_base *base;
	uint64_t armed_at = 0, fired_at = 0;
	static void on_hr(kt_hrtimer *t) {
		ArmsWheel *a = kt_container_of(t, ArmsWheel, hr);
		a->armed_at = kt_base_now(a->base);
		kt_timer_arm(&a->wheel, KT_MILLIS(100));
	}
	static void on_wheel(kt_timer *t) {
		ArmsWheel *a = kt_container_of(t, ArmsWheel, wheel);
		a->fired_at = kt_base_now(a->base);
	}
};

} // namespace

// Time moved to the precise deadline without a wheel bucket on the way: the
// wheel clock must have moved with it, or the 100 ms timer lands on a level
// chosen from an hour-old clock and fires seconds late.
TEST(HrTimer, WheelTimerArmedFromPreciseCallbackUsesTheFreshWheelClock) {
	for (unsigned res : {1u, 16u}) {
		ManualBase b(res, 0);
		ArmsWheel a;
		a.base = b;
		kt_hrtimer_setup(&a.hr, b, ArmsWheel::on_hr);
		kt_timer_setup(&a.wheel, b, ArmsWheel::on_wheel, 0);
		kt_hrtimer_start(&a.hr, uint64_t(3600) * 1000 * 1000000); // 1 h
		kt_base_advance(b, KT_MILLIS(2 * 3600 * 1000));
		ASSERT_EQ(a.armed_at, 3600u * 1000) << res;
		ASSERT_NE(a.fired_at, 0u) << res;
		EXPECT_GE(a.fired_at - a.armed_at, 100u) << res;
		EXPECT_LE(a.fired_at - (a.armed_at + 100), kt_test::lateness_bound(res, a.armed_at, a.armed_at + 100)) << res;
		EXPECT_TRUE(kt_test::CheckOk(b));
	}
}

// Linux's hrtimers: equal deadlines fire first in, first out - also after a
// restart, which goes behind the others.
TEST(HrTimer, EqualDeadlinesFireInStartOrder) {
	ManualBase b(1, 0);
	std::vector<std::pair<int, uint64_t>> log;
	std::vector<Hr> h(8);
	for (int i = 0; i < 8; i++) {
		h[i].base = b;
		h[i].id = i;
		h[i].log = &log;
		kt_hrtimer_setup(&h[i].t, b, Hr::cb);
		kt_hrtimer_start(&h[i].t, 5000000); // all at 5 ms
	}
	kt_hrtimer_start(&h[2].t, 5000000); // restarted: now last
	kt_base_advance(b, KT_MILLIS(10));
	ASSERT_EQ(log.size(), 8u);
	std::vector<int> order;
	for (auto &e : log)
		order.push_back(e.first);
	EXPECT_EQ(order, (std::vector<int>{0, 1, 3, 4, 5, 6, 7, 2}));
}

// ---- review of issues 10 and 12 --------------------------------------------

namespace {

struct ReArmsForNow {
	kt_hrtimer t;
	kt_base *base;
	int rearms = 1;
	std::vector<uint64_t> at;
	static void cb(kt_hrtimer *t) {
		ReArmsForNow *r = kt_container_of(t, ReArmsForNow, t);
		r->at.push_back(kt_base_now_ns(r->base));
		if (r->rearms-- > 0)
			kt_hrtimer_start(t, kt_base_now_ns(r->base)); // "already due"
	}
};

} // namespace

// The paused clock stands on each precise deadline exactly. A callback that
// re-arms its timer for "now" is delayed one wheel unit so time keeps
// moving - but only that timer. It fails if advance_to_ns() steps to the
// re-armed timer's last_hr + unit while another deadline (the heap's next)
// comes first: every precise timer due in between (here 5 ms later) would
// fire 11 ms late.
TEST(HrTimer, ATimerReArmedForNowDoesNotDelayTheNextInAdvance) {
	ManualBase b(16, 0);
	ReArmsForNow a;
	a.base = b;
	std::vector<std::pair<int, uint64_t>> log;
	Hr other{{}, b, 2, &log};
	kt_hrtimer_setup(&a.t, b, ReArmsForNow::cb);
	kt_hrtimer_setup(&other.t, b, Hr::cb);
	kt_hrtimer_start(&a.t, 1000000000);     // 1 s
	kt_hrtimer_start(&other.t, 1005000000); // 1.005 s
	kt_base_advance(b, KT_MILLIS(2000));
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].second, 1005000000u); // exact, like every precise deadline
	ASSERT_EQ(a.at.size(), 2u);
	EXPECT_EQ(a.at[0], 1000000000u);
	EXPECT_GE(a.at[1], a.at[0]);
	EXPECT_LE(a.at[1], a.at[0] + 16000000u); // at most one unit later
}

// kt_base_update_time() on a manual base gathers a precise timer that is
// already due (the clock does not move, but the gather does). The next
// kt_base_advance() must fire it. It fails if advance_to_ns() looks only at
// the heap (kt__hr_earliest()): the gathered timer would wait until some
// other precise timer is due or a kt_base_run(), here never firing within
// the advance, and kt_base_next_timeout() would stay 0 after it.
TEST(HrTimer, ManualAdvanceFiresAPreciseTimerGatheredByUpdateTime) {
	std::vector<std::pair<int, uint64_t>> log;
	Hr h{{}, nullptr, 1, &log}; // outlives the base, which may detach it
	ManualBase b(16, 1000);
	h.base = b;
	kt_hrtimer_setup(&h.t, b, Hr::cb);
	kt_hrtimer_start(&h.t, kt_base_now_ns(b)); // due now
	ASSERT_EQ(kt_base_update_time(b), 0);
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(1000)), 1);
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].second, 1000u * 1000000u); // at once, not a second later
	EXPECT_EQ(kt_base_next_timeout(b), -1);
}

// hrtimer.h: "-EBUSY if @timer is pending (nothing changed)". It fails if
// a setup re-initializes (returns 0 for) a timer pending on the base it is
// set up on while that base's heap still holds it: the heap would be
// corrupt (its slot says position 0, and the next heap_remove() indexes
// slot UINT32_MAX).
TEST(HrTimer, SetupOnItsOwnBaseWhilePendingIsRefused) {
	// Across bases the node's old base is not looked at (it may be garbage):
	// documented as undefined in hrtimer.h. On its own base, refused.
	std::vector<std::pair<int, uint64_t>> log;
	Hr h{{}, nullptr, 1, &log};
	ManualBase b1(16, 0);
	h.base = b1;
	kt_hrtimer_setup(&h.t, b1, Hr::cb);
	kt_hrtimer_start(&h.t, 5000000);
	EXPECT_EQ(kt_hrtimer_setup(&h.t, b1, Hr::cb), -EBUSY);
	EXPECT_TRUE(kt_hrtimer_pending(&h.t));
	EXPECT_TRUE(kt_test::CheckOk(b1));
	kt_hrtimer_cancel(&h.t);
}

// A delay that would carry the deadline past 2^64 ns saturates to "never"
// (UINT64_MAX) instead of wrapping to a deadline in the past.
TEST(HrTimer, StartAfterAHugeDelaySaturatesAndNeverFires) {
	ManualBase b(1, 1000);
	std::vector<std::pair<int, uint64_t>> log;
	Hr h;
	h.base = b;
	h.log = &log;
	ASSERT_EQ(kt_hrtimer_setup(&h.t, b, Hr::cb), 0);
	EXPECT_EQ(kt_hrtimer_start_after(&h.t, UINT64_MAX), 0);
	EXPECT_EQ(kt_hrtimer_expires(&h.t), UINT64_MAX);
	EXPECT_EQ(kt_hrtimer_pending(&h.t), 1);
	EXPECT_EQ(kt_base_next_timeout(b), -1); // no wake-up planned for "never"
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(1)), 0);
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(KT_MILLIS_MAX)), 0);
	EXPECT_TRUE(log.empty());

	FakeClockBase m(1, 5000);
	Hr h2;
	h2.base = m;
	h2.log = &log;
	ASSERT_EQ(kt_hrtimer_setup(&h2.t, m, Hr::cb), 0);
	EXPECT_EQ(kt_hrtimer_start_after(&h2.t, UINT64_MAX - 5), 0);
	EXPECT_EQ(kt_hrtimer_expires(&h2.t), UINT64_MAX);
	EXPECT_EQ(m.run_at(6000), 0u);
	EXPECT_TRUE(log.empty());
	// The largest delay that fits is kept as given.
	const uint64_t now_ns = kt_base_now_ns(m); // the source does not move
	EXPECT_EQ(kt_hrtimer_start_after(&h2.t, UINT64_MAX - now_ns - 1), 1);
	EXPECT_EQ(kt_hrtimer_expires(&h2.t), UINT64_MAX - 1);
	EXPECT_EQ(kt_hrtimer_cancel(&h.t), 1);
	EXPECT_EQ(kt_hrtimer_cancel(&h2.t), 1);
}
