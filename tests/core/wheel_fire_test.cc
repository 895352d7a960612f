// tests/core/wheel_fire_test.cc: the wheel firing its timers - buckets in
// due-time order, callbacks with their timer detached and free to delete,
// re-arm or free any timer of the batch, a late run that fires every due
// bucket, self-re-arming callbacks that cannot spin - and deferrable timers.
// Arming and placement are in wheel_test.cc. Manual or fake clocks only;
// nothing here sleeps.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "tests/support/harness.h"

using kt_test::drain;
using kt_test::FakeClockBase;
using kt_test::Fire;
using kt_test::kResolutions;
using kt_test::Logged;
using kt_test::ManualBase;

namespace {

// One manual base with one logged timer (id 1). Members are destroyed timer
// first, then the base.
struct OneTimer {
	ManualBase b;
	std::vector<Fire> log;
	Logged t;
	explicit OneTimer(unsigned res = 16, uint64_t start = 0) : b(res, start) { t.setup(b, 1, &log); }
};

} // namespace

// ---- firing ---------------------------------------------------------------

TEST(Fire, DeadlineOrderAcrossLevels) {
	ManualBase b(16, 0);
	std::vector<Fire> log;
	const uint64_t d[] = {70000, 100, 5000, 1000, 20, 600000, 33};
	Logged t[7];
	for (int i = 0; i < 7; i++) {
		t[i].setup(b, i, &log);
		kt_mod_timer(&t[i].timer, d[i]);
	}
	drain(b, 1000000);
	ASSERT_EQ(log.size(), 7u);
	for (size_t i = 1; i < log.size(); i++) {
		EXPECT_LE(log[i - 1].at, log[i].at);
		EXPECT_LT(d[log[i - 1].id], d[log[i].id]);
	}
}

TEST(Fire, CallbackSeesBucketDueTimeDuringAdvance) {
	OneTimer one(16, 0);
	auto &[b, log, t] = one;
	kt_mod_timer(&t.timer, 100);
	kt_base_advance(b, KT_MILLIS(5000));
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].at, 112u); // bucket due time, not 5000
	EXPECT_EQ(kt_base_now(b), 5000u);
}

TEST(Fire, LateWakeDoesNotShiftLaterTimers) {
	FakeClockBase b(16, 0);
	std::vector<Fire> log;
	Logged a, c;
	a.setup(b, 1, &log);
	c.setup(b, 2, &log);
	kt_mod_timer(&a.timer, 100);
	kt_mod_timer(&c.timer, 200);
	EXPECT_EQ(b.run_at(150), 1u); // woke 38 ms late for a
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].at, 150u); // run: callbacks see the turn's now
	EXPECT_EQ(kt_base_next_timeout(b), 208 - 150); // c keeps its slot
	EXPECT_EQ(b.run_at(208), 1u);
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(Fire, OneLateRunFiresEveryDueBucketInOrder) {
	FakeClockBase b(1, 0);
	std::vector<Fire> log;
	std::vector<Logged> t(100);
	for (int i = 0; i < 100; i++) {
		t[size_t(i)].setup(b, i, &log);
		kt_mod_timer(&t[size_t(i)].timer, uint64_t(1000 - i * 7));
	}
	EXPECT_EQ(b.run_at(5000), 100u);
	ASSERT_EQ(log.size(), 100u);
	// Earliest bucket first. Timers that share a bucket (at most one level
	// granularity apart) fire in no particular order.
	auto expires = [](int id) { return uint64_t(1000 - id * 7); };
	auto gran = [](uint64_t delay) {
		kt_level_info li{};
		for (unsigned lvl = 0; lvl < KT_WHEEL_LEVELS; lvl++)
			if (kt_wheel_level_info(1, lvl, &li) == 0 && delay <= li.max_delay_ms)
				break;
		return li.granularity_ms;
	};
	for (size_t i = 1; i < log.size(); i++) {
		uint64_t a = expires(log[i - 1].id), c = expires(log[i].id);
		EXPECT_LT(a, c + std::max(gran(a), gran(c))) << log[i - 1].id << " before " << log[i].id;
	}
}

namespace {

struct SelfRearm {
	kt_base *base;
	kt_timer timer;
	int runs = 0;
	static void cb(kt_timer *t) {
		SelfRearm *s = kt_container_of(t, SelfRearm, timer);
		s->runs++;
		kt_timer_arm(&s->timer, KT_MILLIS(0)); // due at once: must wait a turn
	}
};

} // namespace

TEST(Fire, SelfReArmForDueTimeRunsNextTurnNotSpin) {
	SelfRearm s; // first: kt_base_free() detaches it, still pending
	FakeClockBase b(16, 0);
	s.base = b;
	kt_timer_setup(&s.timer, b, SelfRearm::cb, 0);
	kt_timer_arm(&s.timer, KT_MILLIS(0));
	EXPECT_EQ(b.run_at(10000), 1u); // one run, one call, however late
	EXPECT_EQ(s.runs, 1);
	EXPECT_TRUE(kt_timer_pending(&s.timer));
	EXPECT_EQ(b.run_at(10000), 0u); // not due until the next tick
	EXPECT_EQ(b.run_at(10016), 1u);
	EXPECT_EQ(s.runs, 2);
}

// While callbacks run the same-level fast path is off, for every expiry: a
// level range measured from 2^63 ms would pass expiries just above 2^63 and
// place them by their low bits, so that a callback pushing a timer out to
// "never" would see it fire within a minute. Every expiry from 2^63 up, from
// a callback, must wait like UINT64_MAX.
struct PushOut {
	kt_timer trigger{}, victim{};
	uint64_t to = 0;
	int victim_runs = 0;
	static void on_trigger(kt_timer *t) {
		PushOut *p = kt_container_of(t, PushOut, trigger);
		kt_mod_timer(&p->victim, p->to);
	}
	static void on_victim(kt_timer *t) { kt_container_of(t, PushOut, victim)->victim_runs++; }
};

TEST(Fire, HugeExpiryFromACallbackNeverFires) {
	const uint64_t huge[] = {UINT64_C(1) << 63, (UINT64_C(1) << 63) + 1, (UINT64_C(1) << 63) + 40000,
				 (UINT64_C(1) << 63) + 3000000, (UINT64_C(1) << 63) + (UINT64_C(1) << 40),
				 UINT64_MAX - 1};
	for (unsigned res : kResolutions) {
		for (uint64_t to : huge) {
			ManualBase b(res, 0);
			PushOut p;
			p.to = to;
			kt_timer_setup(&p.trigger, b, PushOut::on_trigger, 0);
			kt_timer_setup(&p.victim, b, PushOut::on_victim, 0);
			kt_mod_timer(&p.victim, 30000); // level 1 or 2: some level's range
			kt_mod_timer(&p.trigger, 100);
			drain(b, 1000);
			ASSERT_TRUE(kt_timer_pending(&p.victim));
			EXPECT_EQ(kt_timer_expires(&p.victim), to);
			EXPECT_TRUE(kt_test::CheckOk(b));
			drain(b, 10ull * 86400 * 1000); // ten days
			EXPECT_EQ(p.victim_runs, 0) << "res " << res << ": pushed out to " << to << " fired";
			kt_timer_delete(&p.victim);
		}
	}
}

TEST(Fire, SelfReArmDuringAdvanceFiresOncePerTick) {
	SelfRearm s; // first: kt_base_free() detaches it, still pending
	ManualBase b(16, 0);
	s.base = b;
	kt_timer_setup(&s.timer, b, SelfRearm::cb, 0);
	kt_timer_arm(&s.timer, KT_MILLIS(0));
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(160)), 10);
	EXPECT_EQ(s.runs, 10);
}

namespace {

struct Pair {
	kt_timer a, c;
	int a_runs = 0, c_runs = 0;
	int mode = 0; // 0: a deletes c; 1: a re-arms c later; 2: a shuts c down
	static void on_a(kt_timer *t) {
		Pair *p = kt_container_of(t, Pair, a);
		p->a_runs++;
		if (p->mode == 0)
			EXPECT_EQ(kt_timer_delete(&p->c), 1);
		else if (p->mode == 1)
			EXPECT_EQ(kt_mod_timer(&p->c, kt_timer_expires(&p->c) + 16), 1);
		else
			EXPECT_EQ(kt_timer_shutdown(&p->c), 1);
	}
	static void on_c(kt_timer *t) { kt_container_of(t, Pair, c)->c_runs++; }
};

} // namespace

TEST(Fire, TimerDeletedEarlierInBatchDoesNotRun) {
	for (int mode = 0; mode < 3; mode++) {
		FakeClockBase b(16, 0);
		Pair p;
		p.mode = mode;
		kt_timer_setup(&p.a, b, Pair::on_a, 0);
		kt_timer_setup(&p.c, b, Pair::on_c, 0);
		// a's bucket is due before c's; both are due in one run, so both
		// are in the batch when a runs.
		kt_mod_timer(&p.c, 100);
		kt_mod_timer(&p.a, 90);
		b.run_at(112); // c's bucket's due time
		EXPECT_EQ(p.a_runs, 1) << mode;
		EXPECT_EQ(p.c_runs, 0) << mode;
		EXPECT_EQ(kt_timer_pending(&p.c), mode == 1) << mode;
		EXPECT_TRUE(kt_test::CheckOk(b));
		b.run_at(300);
		EXPECT_EQ(p.c_runs, mode == 1 ? 1 : 0) << mode;
	}
}

namespace {

struct Conn {
	int *freed;
	kt_timer timer;
	static void cb(kt_timer *t) {
		Conn *c = kt_container_of(t, Conn, timer);
		(*c->freed)++;
		free(c); // the callback frees the struct holding its own timer
	}
};

} // namespace

TEST(Fire, CallbackFreesItsOwnContainer) {
	ManualBase b(1, 0);
	int freed = 0;
	for (int i = 0; i < 50; i++) {
		Conn *c = static_cast<Conn *>(malloc(sizeof(Conn)));
		c->freed = &freed;
		kt_timer_setup(&c->timer, b, Conn::cb, 0);
		kt_timer_arm(&c->timer, KT_MILLIS(5)); // all in one bucket
	}
	EXPECT_EQ(kt_base_advance(b, KT_MILLIS(10)), 50);
	EXPECT_EQ(freed, 50);
	EXPECT_EQ(kt_base_pending_count(b), 0u);
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(Fire, RunFromInsideCallbackIsRefused) {
	struct R {
		kt_base *b;
		kt_timer t;
		size_t inner = 99;
		long adv = 0;
		static void cb(kt_timer *t) {
			R *r = kt_container_of(t, R, t);
			r->inner = kt_base_run(r->b);
			r->adv = kt_base_advance(r->b, KT_MILLIS(1));
		}
	};
	ManualBase b;
	R r;
	r.b = b;
	kt_timer_setup(&r.t, b, R::cb, 0);
	kt_timer_arm(&r.t, KT_MILLIS(1));
	kt_base_advance(b, KT_MILLIS(100));
	EXPECT_EQ(r.inner, 0u);
	EXPECT_EQ(r.adv, -EINVAL);
}

namespace {

struct SameIndex {
	kt_timer a, c;
	int c_runs = 0;
	uint64_t c_at = 0;
	kt_base *b;
	static void on_a(kt_timer *t) {
		SameIndex *s = kt_container_of(t, SameIndex, a);
		// 64 level-0 buckets after c's old one: the same bucket index.
		EXPECT_EQ(kt_mod_timer(&s->c, 71 * 16), 1);
	}
	static void on_c(kt_timer *t) {
		SameIndex *s = kt_container_of(t, SameIndex, c);
		s->c_runs++;
		s->c_at = kt_base_now(s->b);
	}
};

} // namespace

TEST(Fire, LateRunReArmIntoSameIndexLeavesTheBatch) {
	FakeClockBase b(16, 0);
	SameIndex s;
	s.b = b;
	kt_timer_setup(&s.a, b, SameIndex::on_a, 0);
	kt_timer_setup(&s.c, b, SameIndex::on_c, 0);
	kt_mod_timer(&s.c, 112);
	kt_mod_timer(&s.a, 96); // a's bucket is due first, so a runs first
	EXPECT_EQ(b.run_at(112 + 16 * 10), 1u); // ten ticks late
	EXPECT_EQ(s.c_runs, 0);
	EXPECT_TRUE(kt_timer_pending(&s.c));
	EXPECT_TRUE(kt_test::CheckOk(b));
	EXPECT_EQ(b.run_at(71 * 16 - 1), 0u);
	EXPECT_EQ(b.run_at(71 * 16), 1u);
	EXPECT_EQ(s.c_at, 71u * 16);
}

// ---- deferrable -------------------------------------------------------------

TEST(Deferrable, NeverAsksForWakeUp) {
	FakeClockBase b(16, 0);
	std::vector<Fire> log;
	Logged d, n;
	d.setup(b, 1, &log, KT_TIMER_DEFERRABLE);
	n.setup(b, 2, &log);
	kt_timer_arm(&d.timer, KT_MILLIS(100));
	EXPECT_EQ(kt_base_next_timeout(b), -1); // an idle worker stays asleep
	EXPECT_EQ(kt_base_pending_count(b), 1u);
	kt_timer_arm(&n.timer, KT_MILLIS(5000));
	EXPECT_GE(kt_base_next_timeout(b), 5000);
	// A turn that happens anyway (I/O at 3 s) fires the overdue deferrable.
	EXPECT_EQ(b.run_at(3000), 1u);
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].id, 1);
	EXPECT_TRUE(kt_test::CheckOk(b));
}

TEST(Deferrable, ReArmAndDeleteWork) {
	ManualBase b(16, 0);
	std::vector<Fire> log;
	Logged d;
	d.setup(b, 1, &log, KT_TIMER_DEFERRABLE);
	kt_timer_arm(&d.timer, KT_MILLIS(100));
	kt_timer_arm(&d.timer, KT_MILLIS(3000));
	EXPECT_TRUE(kt_test::CheckOk(b));
	drain(b, 2000);
	EXPECT_TRUE(log.empty());
	EXPECT_EQ(kt_timer_delete(&d.timer), 1);
	drain(b, 9000);
	EXPECT_TRUE(log.empty());
}
