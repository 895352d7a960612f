// tests/core/wheel_hotbase_test.cc: the thread's hot base. kt_mod_timer()
// takes a shortcut for timers of the base that ran the thread's last turn
// (or was created there last); every scenario here is played on both paths,
// which must give the same returns, counters and firing times. Manual or
// fake clocks only; nothing here sleeps.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/harness.h"

using kt_test::drain;
using kt_test::FakeClockBase;
using kt_test::Fire;
using kt_test::kResolutions;
using kt_test::Logged;
using kt_test::ManualBase;
using kt_test::lateness_bound;

// ---- the thread's hot base --------------------------------------------------
//
// kt_mod_timer() takes a shortcut for timers of the thread's hot base (the
// base that ran the last turn on the thread, or was created there last): it
// computes the new bucket before the node is read. Timers of any other base
// take the general path. Both must give the same result.

namespace {

struct PathResult {
	std::vector<Fire> log;
	uint64_t enqueued = 0, removed = 0, same = 0;
	std::vector<int> returns;
};

// One sequence of re-arms - idle, same bucket, another bucket, other levels,
// earlier, beyond the reach, back, lazy pushes - on a plain, a deferrable and
// a lazy timer of base `a`, with `a` the hot base or not.
PathResult play_rearms(bool a_is_hot) {
	PathResult r;
	ManualBase a(16, 0);
	ManualBase other(16, 0);
	Logged plain, deferrable, lazy;
	plain.setup(a, 1, &r.log);
	deferrable.setup(a, 2, &r.log, KT_TIMER_DEFERRABLE);
	lazy.setup(a, 3, &r.log, KT_TIMER_LAZY);
	kt_base_advance(a_is_hot ? a.b : other.b, KT_MILLIS(0)); // claims the thread
	kt_base_stats before, after;
	kt_base_set_op_counting(a, 1); // the stats count every operation
	kt_base_get_stats(a, &before);
	const uint64_t reach = kt_wheel_reach_ms(16);
	const uint64_t seq[] = {30000, 30100, 30700, 35000, 29000, 500,	  510,	   900000, 30000, reach + 5000,
				40000, 40001, 39000, 64,    3000,  70000, 71000, 70500,	   20,	  44500,
				45100}; // the last two: adjacent level-2 buckets (44 and 45)
	for (Logged *t : {&plain, &deferrable, &lazy})
		for (uint64_t e : seq)
			r.returns.push_back(kt_mod_timer(&t->timer, e));
	kt_base_get_stats(a, &after);
	r.enqueued = after.enqueued - before.enqueued;
	r.removed = after.removed - before.removed;
	r.same = after.same_bucket - before.same_bucket;
	EXPECT_TRUE(kt_test::CheckOk(a));
	drain(a, 60000);
	return r;
}

} // namespace

TEST(HotBase, BothPathsGiveTheSameReturnsCountsAndFiringTimes) {
	PathResult hot = play_rearms(true), cold = play_rearms(false);
	EXPECT_EQ(hot.returns, cold.returns);
	EXPECT_EQ(hot.enqueued, cold.enqueued);
	EXPECT_EQ(hot.removed, cold.removed);
	EXPECT_EQ(hot.same, cold.same);
	EXPECT_GT(hot.same, 0u); // the sequence has same-bucket re-arms
	ASSERT_EQ(hot.log.size(), 3u);
	ASSERT_EQ(cold.log.size(), 3u);
	for (size_t i = 0; i < 3; i++) {
		EXPECT_EQ(hot.log[i].id, cold.log[i].id);
		EXPECT_EQ(hot.log[i].at, cold.log[i].at) << "timer " << hot.log[i].id;
		EXPECT_GE(hot.log[i].at, 45100u); // never early
		EXPECT_LE(hot.log[i].at - 45100u, lateness_bound(16, 0, 45100));
	}
}

// Timers of two bases re-armed on one thread, the hot base switching with
// every turn: every timer fires once, never early, within its bound.
TEST(HotBase, TwoBasesOnOneThreadEachFireOnTime) {
	const int kN = 512;
	ManualBase a(16, 0), b(16, 0);
	std::vector<Fire> log_a, log_b;
	std::vector<std::unique_ptr<Logged>> ta, tb;
	std::vector<uint64_t> exp_a(kN), exp_b(kN);
	for (int i = 0; i < kN; i++) {
		ta.push_back(std::make_unique<Logged>());
		tb.push_back(std::make_unique<Logged>());
		ta.back()->setup(a, i, &log_a, i % 3 == 0 ? KT_TIMER_LAZY : 0);
		tb.back()->setup(b, i, &log_b, i % 3 == 0 ? KT_TIMER_LAZY : 0);
	}
	uint64_t x = 12345;
	auto rnd = [&x] { return x = x * 6364136223846793005ull + 1442695040888963407ull, x >> 33; };
	for (int turn = 0; turn < 40; turn++) {
		kt_base *hot = turn % 2 ? a.b : b.b;
		kt_base_advance(hot, KT_MILLIS(0));
		for (int i = 0; i < kN; i++) {
			exp_a[size_t(i)] = kt_base_now(a) + 20000 + rnd() % 20000;
			exp_b[size_t(i)] = kt_base_now(b) + 20000 + rnd() % 20000;
			kt_mod_timer(&ta[size_t(i)]->timer, exp_a[size_t(i)]);
			kt_mod_timer(&tb[size_t(i)]->timer, exp_b[size_t(i)]);
		}
		kt_base_advance(a, KT_MILLIS(100));
		kt_base_advance(b, KT_MILLIS(100));
	}
	EXPECT_TRUE(log_a.empty());
	EXPECT_TRUE(log_b.empty());
	EXPECT_TRUE(kt_test::CheckOk(a));
	EXPECT_TRUE(kt_test::CheckOk(b));
	uint64_t armed_at = kt_base_now(a) - 100;
	drain(a, armed_at + 50000);
	drain(b, armed_at + 50000);
	for (auto [log, exp] : {std::pair{&log_a, &exp_a}, std::pair{&log_b, &exp_b}}) {
		ASSERT_EQ(log->size(), size_t(kN));
		std::vector<int> seen(kN);
		for (const Fire &f : *log) {
			seen[size_t(f.id)]++;
			uint64_t e = (*exp)[size_t(f.id)];
			EXPECT_GE(f.at, e) << "timer " << f.id << " early";
			EXPECT_LE(f.at - e, lateness_bound(16, armed_at, e)) << "timer " << f.id << " late";
		}
		EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), kN);
	}
}

// Freeing the hot base leaves the thread with none: timers of the other base
// re-arm (the general path) and fire. (Under ASan a read of the freed base
// would fail here.)
TEST(HotBase, FreeingTheHotBaseLeavesTheOtherBaseWorking) {
	ManualBase a(16, 0);
	std::vector<Fire> log;
	Logged t;
	t.setup(a, 1, &log);
	{
		ManualBase b(16, 0);
		kt_base_advance(b, KT_MILLIS(0)); // b is the hot base
	}
	EXPECT_EQ(kt_mod_timer(&t.timer, 30000), 0);
	EXPECT_EQ(kt_mod_timer(&t.timer, 35000), 1);
	EXPECT_EQ(kt_mod_timer(&t.timer, 35001), 1);
	drain(a, 40000);
	ASSERT_EQ(log.size(), 1u);
	EXPECT_GE(log[0].at, 35001u);
}

// ---- the hot path against the general path, scenario by scenario ------------
//
// Each scenario is played twice on fresh bases: once with the timers' base
// the thread's hot base (kt_mod_timer()'s mod_on()), once with another base
// hot (the general path). Returns, stats and firing times must agree.

namespace {

struct Twin {
	std::vector<int> returns;
	uint64_t enqueued = 0, removed = 0, same = 0;
	std::vector<Fire> log;
};

// Run `body(base, timers)` with `base` hot or not; stats are taken around body.
template <class Body>
Twin play_twin(bool hot, unsigned flags, Body body, unsigned res = 16, uint64_t start = 0) {
	Twin r;
	ManualBase a(res, start);
	ManualBase other(res, start);
	Logged t;
	t.setup(a, 1, &r.log, flags);
	kt_base_advance(hot ? a.b : other.b, KT_MILLIS(0)); // claims the thread
	kt_base_stats before{}, after{};
	kt_base_set_op_counting(a, 1); // the stats count every operation
	kt_base_get_stats(a, &before);
	body(a.b, &t.timer, r.returns);
	kt_base_get_stats(a, &after);
	r.enqueued = after.enqueued - before.enqueued;
	r.removed = after.removed - before.removed;
	r.same = after.same_bucket - before.same_bucket;
	EXPECT_TRUE(kt_test::CheckOk(a));
	drain(a, kt_base_now(a) + kt_wheel_reach_ms(res) * 2);
	return r;
}

template <class Body>
void expect_twins_agree(const char *what, unsigned flags, Body body) {
	Twin hot = play_twin(true, flags, body), cold = play_twin(false, flags, body);
	EXPECT_EQ(hot.returns, cold.returns) << what;
	EXPECT_EQ(hot.enqueued, cold.enqueued) << what << ": enqueued";
	EXPECT_EQ(hot.removed, cold.removed) << what << ": removed";
	EXPECT_EQ(hot.same, cold.same) << what << ": same_bucket";
	ASSERT_EQ(hot.log.size(), cold.log.size()) << what;
	for (size_t i = 0; i < hot.log.size(); i++)
		EXPECT_EQ(hot.log[i].at, cold.log[i].at) << what;
}

} // namespace

// A deferrable timer re-armed to its own expiry: the general path counts a
// same-bucket re-arm, and so must the hot path (move_far()'s same-expiry
// shortcut, which counts nothing, is not the hot path's answer).
TEST(HotBase, DeferrableSameExpiryCountsAsTheGeneralPath) {
	expect_twins_agree("deferrable, same expiry", KT_TIMER_DEFERRABLE, [](kt_base *, kt_timer *t, std::vector<int> &r) {
		r.push_back(kt_mod_timer(t, 30000));
		for (int i = 0; i < 4; i++)
			r.push_back(kt_mod_timer(t, 30000)); // the first sets on_level, then mod_on
		r.push_back(kt_mod_timer(t, 30001));
		r.push_back(kt_mod_timer(t, 31000));
		r.push_back(kt_mod_timer(t, 31000));
	});
}

// Also with a plain timer on the same level first, so on_level is the
// deferrable timer's level when it comes.
TEST(HotBase, DeferrableAfterPlainOnTheSameLevelCountsAsTheGeneralPath) {
	Twin hot, cold;
	for (bool h : {true, false}) {
		Twin &r = h ? hot : cold;
		ManualBase a(16, 0), other(16, 0);
		Logged p, d;
		p.setup(a, 1, &r.log);
		d.setup(a, 2, &r.log, KT_TIMER_DEFERRABLE);
		kt_base_advance(h ? a.b : other.b, KT_MILLIS(0));
		kt_base_stats before{}, after{};
		kt_base_set_op_counting(a, 1); // the stats count every operation
		kt_base_get_stats(a, &before);
		for (uint64_t e : {30000, 30010, 30500})
			r.returns.push_back(kt_mod_timer(&p.timer, e));
		for (uint64_t e : {40000, 40000, 40005, 45000, 45000})
			r.returns.push_back(kt_mod_timer(&d.timer, e));
		kt_base_get_stats(a, &after);
		r.same = after.same_bucket - before.same_bucket;
		r.enqueued = after.enqueued - before.enqueued;
		r.removed = after.removed - before.removed;
		drain(a, 60000);
	}
	EXPECT_EQ(hot.returns, cold.returns);
	EXPECT_EQ(hot.same, cold.same);
	EXPECT_EQ(hot.enqueued, cold.enqueued);
	EXPECT_EQ(hot.removed, cold.removed);
}

// The same-bucket witness differs: mod_on() compares the node's list index,
// the general path the stored expiry. Both are correct (never early, same
// firing), but where the node's stored expiry does not name its bucket the
// counters differ. These cases check the firing and the returns, and record
// the counters.
TEST(HotBase, OverdueTimerReArmedForTheNextTickFiresTheSame) {
	auto body = [](kt_base *b, kt_timer *t, std::vector<int> &r) {
		kt_base_advance(b, KT_MILLIS(1000));                  // now 1000, clk 63
		r.push_back(kt_mod_timer(t, 500));                    // overdue: the next tick
		r.push_back(kt_mod_timer(t, 1001));                   // the same bucket, by index
		r.push_back(kt_mod_timer(t, 1008));                   // still unit 63
	};
	// After kt_base_advance(a) in the body, a is hot in both runs: make the
	// cold run cold again inside the body instead.
	Twin hot = play_twin(true, 0, body);
	Twin cold = play_twin(false, 0, [&](kt_base *b, kt_timer *t, std::vector<int> &r) {
		ManualBase other(16, 0);
		kt_base_advance(b, KT_MILLIS(1000));
		kt_base_advance(other.b, KT_MILLIS(0)); // other is hot: a takes the general path
		r.push_back(kt_mod_timer(t, 500));
		r.push_back(kt_mod_timer(t, 1001));
		r.push_back(kt_mod_timer(t, 1008));
	});
	EXPECT_EQ(hot.returns, cold.returns);
	ASSERT_EQ(hot.log.size(), 1u);
	ASSERT_EQ(cold.log.size(), 1u);
	EXPECT_EQ(hot.log[0].at, cold.log[0].at);
	EXPECT_GE(hot.log[0].at, 1008u);
	EXPECT_EQ(hot.same, cold.same);
	EXPECT_EQ(hot.enqueued, cold.enqueued);
	EXPECT_EQ(hot.removed, cold.removed);
}

TEST(HotBase, LazyKeptInAnEarlierBucketNeverEarlyOnEitherPath) {
	// Level 2 at 16 ms (1024 ms buckets). Armed at 30000 (bucket 30), pushed
	// to 40000 (stays in bucket 30), then re-armed earlier than the stored
	// expiry: into its own bucket (30100), or into the stored expiry's
	// bucket (39950).
	for (uint64_t last : {uint64_t(30100), uint64_t(39950), uint64_t(40100), uint64_t(35000)}) {
		auto body = [last](kt_base *, kt_timer *t, std::vector<int> &r) {
			r.push_back(kt_mod_timer(t, 30000));
			r.push_back(kt_mod_timer(t, 40000));
			r.push_back(kt_mod_timer(t, last));
		};
		Twin hot = play_twin(true, KT_TIMER_LAZY, body), cold = play_twin(false, KT_TIMER_LAZY, body);
		EXPECT_EQ(hot.returns, cold.returns) << last;
		for (const Twin *x : {&hot, &cold}) {
			ASSERT_EQ(x->log.size(), 1u) << last;
			EXPECT_GE(x->log[0].at, last);
			EXPECT_LE(x->log[0].at - last, lateness_bound(16, 0, last)) << last;
		}
		EXPECT_EQ(hot.log[0].at, cold.log[0].at) << last;
		EXPECT_EQ(hot.same, cold.same) << last;
		EXPECT_EQ(hot.removed, cold.removed) << last;
	}
}

// kt_base_update_time() gathers due buckets into the batch and leaves the
// fast path on: a node of the batch keeps the index of the bucket it was
// collected from, which a new expiry one level-0 lap (64 units) later
// names again. It is not the same bucket: on either path the node moves
// out of the batch (one unlink, one link), and fires at its new time.
TEST(HotBase, BatchNodeReArmedToTheAliasOfItsOldBucketIsNeverEarly) {
	for (bool h : {true, false}) {
		FakeClockBase a(16, 1000);
		ManualBase other(16, 0);
		std::vector<Fire> log;
		Logged t;
		t.setup(a, 1, &log);
		EXPECT_EQ(kt_mod_timer(&t.timer, 1100), 0); // unit 69, level 0 index 5
		a.now = 1180;                               // unit 73: bucket 69 is due
		ASSERT_EQ(kt_base_update_time(a), 0);       // gathered into the batch
		if (!h)
			kt_base_advance(other.b, KT_MILLIS(0));
		kt_base_stats before{}, after{};
		kt_base_set_op_counting(a, 1); // the stats count every operation
		kt_base_get_stats(a, &before);
		// Unit 133 = 69 + 64: level 0 index 5 again.
		EXPECT_EQ(kt_mod_timer(&t.timer, 2128), 1);
		kt_base_get_stats(a, &after);
		EXPECT_TRUE(kt_test::CheckOk(a));
		a.run_at(1180);
		EXPECT_TRUE(log.empty()) << (h ? "hot" : "cold") << ": fired at " << (log.empty() ? 0 : log[0].at);
		EXPECT_TRUE(kt_timer_pending(&t.timer));
		for (uint64_t now = 1180; now <= 2128 + 32 && log.empty(); now += 16) {
			a.run_at(now);
			ASSERT_TRUE(log.empty() || now >= 2128) << now;
		}
		ASSERT_EQ(log.size(), 1u);
		EXPECT_GE(log[0].at, 2128u);
		EXPECT_LE(log[0].at - 2128, lateness_bound(16, 1180, 2128));
		EXPECT_EQ(after.same_bucket - before.same_bucket, 0u) << (h ? "hot" : "cold");
		EXPECT_EQ(after.enqueued - before.enqueued, 1u) << (h ? "hot" : "cold");
		EXPECT_EQ(after.removed - before.removed, 1u) << (h ? "hot" : "cold");
	}
}

// A run stopped by its limit leaves groups in the batch with the fast path
// on; re-arming them from the hot base, to aliases of their old buckets and
// elsewhere, never fires one early and fires each once.
TEST(HotBase, LimitedRunLeftOversReArmedFireOnceNeverEarly) {
	FakeClockBase a(16, 1000);
	std::vector<Fire> log;
	const int kN = 200;
	std::vector<std::unique_ptr<Logged>> ts;
	std::map<int, uint64_t> want;
	for (int i = 0; i < kN; i++) {
		ts.push_back(std::make_unique<Logged>());
		ts.back()->setup(a, i, &log);
		kt_mod_timer(&ts.back()->timer, 1100 + uint64_t(i % 10) * 16); // units 69..78
		want[i] = 1100 + uint64_t(i % 10) * 16;
	}
	ASSERT_EQ(kt_base_set_run_limit(a, 7, 0), 0);
	a.run_at(1300); // unit 81: all due, 7 run
	ASSERT_EQ(log.size(), 7u);
	for (const Fire &f : log)
		want.erase(f.id);
	log.clear();
	// a is hot (its run claimed the thread). Re-arm every left-over: 64 units
	// after its old bucket (the same index), or 1 unit after.
	uint64_t now = 1300;
	for (auto &[id, e] : want) {
		uint64_t old_u = (e + 15) / 16;
		uint64_t ne = (id % 2 ? old_u + 64 : old_u + 13) * 16 - uint64_t(id % 3);
		EXPECT_EQ(kt_mod_timer(&ts[size_t(id)]->timer, ne), 1);
		e = ne;
	}
	EXPECT_TRUE(kt_test::CheckOk(a));
	ASSERT_EQ(kt_base_set_run_limit(a, 0, 0), 0);
	for (; now < 3000; now += 5) {
		a.run_at(now);
		for (const Fire &f : log) {
			ASSERT_TRUE(want.count(f.id)) << "timer " << f.id << " fired twice or unexpectedly";
			EXPECT_GE(f.at, want[f.id]) << "timer " << f.id << " early";
			EXPECT_LE(f.at - want[f.id], lateness_bound(16, 1300, want[f.id]) + 5) << "timer " << f.id;
			want.erase(f.id);
		}
		log.clear();
	}
	EXPECT_TRUE(want.empty()) << want.size() << " lost";
}

// A callback of the hot base re-arms its own timer for a due time, and
// re-arms a timer of the same batch for later: neither fires in this turn.
TEST(HotBase, CallbackReArmsInsideTheTurnOfTheHotBase) {
	ManualBase a(16, 0);
	struct Ctx {
		kt_timer self, peer;
		int self_runs = 0, peer_runs = 0;
		uint64_t self_at = 0, peer_at = 0, peer_exp = 0;
		kt_base *b = nullptr;
	} c;
	c.b = a;
	kt_timer_setup(
		&c.self, a,
		[](kt_timer *t) {
			Ctx *x = kt_container_of(t, Ctx, self);
			x->self_runs++;
			x->self_at = kt_base_now(x->b);
			if (x->self_runs == 1) {
				kt_mod_timer(&x->self, kt_base_now(x->b)); // due now: the next tick
				x->peer_exp = kt_base_now(x->b) + 64 * 16; // the alias of its bucket
				kt_mod_timer(&x->peer, x->peer_exp);
			}
		},
		0);
	kt_timer_setup(
		&c.peer, a,
		[](kt_timer *t) {
			Ctx *x = kt_container_of(t, Ctx, peer);
			x->peer_runs++;
			x->peer_at = kt_base_now(x->b);
		},
		0);
	kt_base_advance(a, KT_MILLIS(0)); // hot
	// Same bucket: self first (list head order is LIFO: arm peer first).
	kt_mod_timer(&c.peer, 100);
	kt_mod_timer(&c.self, 100);
	kt_base_advance(a, KT_MILLIS(112)); // unit 7 due
	EXPECT_EQ(c.self_runs, 1);
	EXPECT_EQ(c.peer_runs, 0); // moved out of the batch by self's callback
	kt_base_advance(a, KT_MILLIS(16));
	EXPECT_EQ(c.self_runs, 2);
	drain(a, c.peer_exp + 200);
	EXPECT_EQ(c.peer_runs, 1);
	EXPECT_GE(c.peer_at, c.peer_exp);
	EXPECT_TRUE(kt_test::CheckOk(a));
}

// A base created here, run and freed by another thread: this thread's hot
// base is then a dangling pointer, never read (ASan), and this thread's own
// base keeps working; a new base (maybe at the same address) too.
TEST(HotBase, HotBaseFreedByAnotherThread) {
	ManualBase m(16, 0);
	std::vector<Fire> log;
	Logged tm;
	tm.setup(m, 1, &log);
	kt_base_config cfg{16, KT_CLOCK_MANUAL, 0};
	kt_base *x = kt_base_new(&cfg); // hot here
	std::thread w([x] {
		kt_base_adopt(x);
		std::vector<Fire> wl;
		Logged tx;
		tx.setup(x, 9, &wl);
		kt_mod_timer(&tx.timer, 500);
		kt_mod_timer(&tx.timer, 600);
		kt_base_advance(x, KT_MILLIS(1000));
		EXPECT_EQ(wl.size(), 1u);
		kt_base_free(x);
	});
	w.join();
	EXPECT_EQ(kt_mod_timer(&tm.timer, 30000), 0);
	EXPECT_EQ(kt_mod_timer(&tm.timer, 30100), 1);
	ManualBase y(16, 0); // hot here now; perhaps at x's address
	Logged ty;
	ty.setup(y, 2, &log);
	EXPECT_EQ(kt_mod_timer(&ty.timer, 30000), 0);
	EXPECT_EQ(kt_mod_timer(&ty.timer, 30100), 1);
	EXPECT_EQ(kt_mod_timer(&tm.timer, 30200), 1);
	drain(m, 40000);
	drain(y, 40000);
	ASSERT_EQ(log.size(), 2u);
	EXPECT_TRUE(kt_test::CheckOk(m));
	EXPECT_TRUE(kt_test::CheckOk(y));
}

// A base handed from one thread to another, which runs its turns, while
// the first re-arms the timers of its next base before a turn there: the
// first thread's hot base is the base the second is changing, and is not
// read (ThreadSanitizer reports a read there as a data race).
TEST(HotBase, ABaseRunByAnotherThreadIsNotReadByTheThreadThatRanItFirst) {
	kt_base_config cfg{16, KT_CLOCK_MANUAL, 0};
	kt_base *next = kt_base_new(&cfg), *handed = nullptr;
	std::promise<kt_base *> handover;
	std::future<kt_base *> handover_f = handover.get_future();
	std::vector<Fire> log, hlog;
	Logged t;
	t.setup(next, 1, &log);
	std::thread second([&] {
		kt_base *b = handover_f.get();
		kt_base_adopt(b);
		Logged h;
		h.setup(b, 2, &hlog);
		for (int i = 0; i < 20000; i++) {
			kt_mod_timer(&h.timer, kt_base_now(b) + 30000 + uint64_t(i % 1000));
			kt_base_advance(b, KT_MILLIS(1));
		}
		kt_timer_delete(&h.timer);
	});
	std::thread first([&] {
		handed = kt_base_new(&cfg); // the first thread's hot base ...
		handover.set_value(handed);  // ... now the second's
		for (int i = 0; i < 20000; i++)
			EXPECT_EQ(kt_mod_timer(&t.timer, 30000 + uint64_t(i % 1000)), i > 0 ? 1 : 0);
	});
	first.join();
	second.join();
	EXPECT_TRUE(hlog.empty());
	EXPECT_TRUE(kt_test::CheckOk(next));
	drain(next, 40000);
	ASSERT_EQ(log.size(), 1u);
	EXPECT_GE(log[0].at, 30000 + uint64_t(19999 % 1000));
	kt_base_adopt(handed);
	kt_base_free(handed);
	kt_base_free(next);
}

// Remote re-arms are applied inside the turn (running): the general path;
// with the base hot, the timers fire at their new times.
TEST(HotBase, RemoteModsAppliedInTheTurnOfTheHotBase) {
	FakeClockBase a(16, 1000);
	std::vector<Fire> log;
	const int kN = 64;
	std::vector<std::unique_ptr<Logged>> ts;
	for (int i = 0; i < kN; i++) {
		ts.push_back(std::make_unique<Logged>());
		ts.back()->setup(a, i, &log, i % 4 == 0 ? KT_TIMER_LAZY : 0);
		kt_mod_timer(&ts.back()->timer, 30000);
	}
	std::thread w([&] {
		for (int i = 0; i < kN; i++)
			EXPECT_EQ(kt_remote_mod(&ts[size_t(i)]->timer, 20000 + uint64_t(i) * 100, nullptr, nullptr), 0);
	});
	w.join();
	a.run_at(1000);
	for (int i = 0; i < kN; i++)
		EXPECT_EQ(kt_timer_expires(&ts[size_t(i)]->timer), 20000 + uint64_t(i) * 100);
	for (uint64_t now = 1000; now < 40000; now += 16)
		a.run_at(now);
	ASSERT_EQ(log.size(), size_t(kN));
	for (const Fire &f : log) {
		uint64_t e = 20000 + uint64_t(f.id) * 100;
		EXPECT_GE(f.at, e) << f.id;
		EXPECT_LE(f.at - e, lateness_bound(16, 1000, e) + 16) << f.id;
	}
}

// Random re-arms, deletes and turns on twin bases, one hot, one not, at
// every resolution, with expiries at the levels' edges, overdue, beyond the
// reach, lazy and deferrable timers, and enough timers to cross the
// sub-list threshold: the plain and deferrable timers fire at the same
// times on both; every timer fires once per arm, never early, within the
// bound of its last arm.
TEST(HotBase, RandomTwinsEveryResolutionAgree) {
	for (unsigned res : kResolutions) {
		for (int n : {48, 5000}) {
			ManualBase hb(res, 777777), cb(res, 777777), other(res, 0);
			struct Side {
				kt_base *b;
				std::vector<Fire> log;
				std::vector<std::unique_ptr<Logged>> t;
				std::vector<uint64_t> exp, armed_at;
				std::vector<char> pending;
			} side[2];
			side[0].b = hb;
			side[1].b = cb;
			for (Side &s : side) {
				s.exp.assign(size_t(n), 0);
				s.armed_at.assign(size_t(n), 0);
				s.pending.assign(size_t(n), 0);
				for (int i = 0; i < n; i++) {
					s.t.push_back(std::make_unique<Logged>());
					unsigned f = i % 5 == 0 ? KT_TIMER_DEFERRABLE : i % 5 == 1 ? KT_TIMER_LAZY
										 : i % 11 == 2 ? KT_TIMER_LAZY | KT_TIMER_DEFERRABLE
											       : 0;
					s.t.back()->setup(s.b, i, &s.log, f);
				}
			}
			auto lazy = [](int i) { return i % 5 == 1 || i % 11 == 2; };
			std::vector<uint64_t> edges;
			for (unsigned l = 0; l < KT_WHEEL_LEVELS; l++) {
				kt_level_info li{};
				kt_wheel_level_info(res, l, &li);
				edges.push_back(li.min_delay_ms);
				edges.push_back(li.max_delay_ms);
			}
			edges.push_back(kt_wheel_reach_ms(res));
			uint64_t x = 0x9e3779b97f4a7c15ull ^ res ^ uint64_t(n);
			auto rnd = [&x] {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				return x;
			};
			kt_base_advance(cb, KT_MILLIS(0));
			kt_base_advance(hb, KT_MILLIS(0)); // hb hot
			auto check_fires = [&](Side &s, const char *name) {
				for (const Fire &f : s.log) {
					size_t i = size_t(f.id);
					ASSERT_TRUE(s.pending[i]) << name << " res " << res << " timer " << f.id << " fired idle";
					uint64_t eff = std::max(s.exp[i], s.armed_at[i]); // overdue: from the arm
					EXPECT_GE(f.at, s.exp[i]) << name << " res " << res << " timer " << f.id << " early";
					EXPECT_LE(f.at - eff, lateness_bound(res, s.armed_at[i], eff))
						<< name << " res " << res << " timer " << f.id << " late, expiry " << s.exp[i]
						<< " armed at " << s.armed_at[i] << " fired " << f.at;
					s.pending[i] = 0;
				}
			};
			const int steps = n > 1000 ? 40000 : 20000;
			for (int step = 0; step < steps && !HasFatalFailure(); step++) {
				uint64_t now = kt_base_now(hb);
				ASSERT_EQ(now, kt_base_now(cb));
				unsigned op = unsigned(rnd() % 100);
				int i = int(rnd() % uint64_t(n));
				if (op < 3) {
					uint64_t d;
					switch (rnd() % 4) {
					case 0: d = rnd() % (4 * res); break;
					case 1: d = rnd() % 3000; break;
					case 2: d = rnd() % 200000; break;
					default: d = rnd() % 20000000; break;
					}
					kt_base_advance(cb, KT_MILLIS(uint32_t(d)));
					kt_base_advance(hb, KT_MILLIS(uint32_t(d))); // hb hot again
					// Fires of the plain and deferrable timers: the same.
					auto strip = [&](const std::vector<Fire> &l) {
						std::vector<std::pair<int, uint64_t>> v;
						for (const Fire &f : l)
							if (!lazy(f.id))
								v.push_back({f.id, f.at});
						std::sort(v.begin(), v.end());
						return v;
					};
					EXPECT_EQ(strip(side[0].log), strip(side[1].log)) << "res " << res << " step " << step;
					check_fires(side[0], "hot");
					check_fires(side[1], "cold");
					side[0].log.clear();
					side[1].log.clear();
					continue;
				}
				if (op < 10) {
					int r0 = kt_timer_delete(&side[0].t[size_t(i)]->timer);
					int r1 = kt_timer_delete(&side[1].t[size_t(i)]->timer);
					EXPECT_EQ(r0, side[0].pending[size_t(i)] ? 1 : 0);
					EXPECT_EQ(r1, side[1].pending[size_t(i)] ? 1 : 0);
					side[0].pending[size_t(i)] = side[1].pending[size_t(i)] = 0;
					continue;
				}
				uint64_t e;
				switch (rnd() % 8) {
				case 0: // a level's edge, +-3 ms, from the next tick's phase
					e = now + edges[rnd() % edges.size()] + (rnd() % 7) - 3;
					break;
				case 1: // overdue
					e = now - rnd() % 5000;
					break;
				case 2: // the same expiry, or a few ms either way
					e = side[0].exp[size_t(i)] + (rnd() % 5) - 2;
					if (!e || e > now + kt_wheel_reach_ms(res) * 3)
						e = now;
					break;
				case 3: // pushed back by about a timeout
					e = now + 30000 + rnd() % 500;
					break;
				case 4: // one level-0 lap (64 units) on
					e = side[0].exp[size_t(i)] + 64 * res;
					break;
				default:
					e = now + rnd() % (uint64_t(1) << (rnd() % 28));
					break;
				}
				int r0 = kt_mod_timer(&side[0].t[size_t(i)]->timer, e);
				int r1 = kt_mod_timer(&side[1].t[size_t(i)]->timer, e);
				EXPECT_EQ(r0, side[0].pending[size_t(i)] ? 1 : 0) << "res " << res << " step " << step;
				EXPECT_EQ(r1, side[1].pending[size_t(i)] ? 1 : 0) << "res " << res << " step " << step;
				if (!lazy(i))
					EXPECT_EQ(r0, r1);
				for (Side &s : side) {
					// Re-arming a pending timer to its expiry does nothing
					// (timer.h): its bound stays the one of the arm before.
					if (!(s.pending[size_t(i)] && s.exp[size_t(i)] == e))
						s.armed_at[size_t(i)] = now;
					s.pending[size_t(i)] = 1;
					s.exp[size_t(i)] = e;
				}
				if (step % 4096 == 0) {
					EXPECT_TRUE(kt_test::CheckOk(hb));
					EXPECT_TRUE(kt_test::CheckOk(cb));
				}
			}
			for (Side &s : side) {
				uint64_t far = 0;
				for (int i = 0; i < n; i++)
					if (s.pending[size_t(i)])
						far = std::max(far, s.exp[size_t(i)]);
				drain(s.b, far + kt_wheel_reach_ms(res));
				check_fires(s, &s == &side[0] ? "hot" : "cold");
				EXPECT_EQ(std::count(s.pending.begin(), s.pending.end(), 1), 0) << "lost, res " << res;
				EXPECT_EQ(kt_base_pending_count(s.b), 0u);
				s.log.clear();
			}
		}
	}
}

// ---- both re-arm paths on a gathered batch ----
//
// While a batch is gathered (kt_base_update_time(), or left by a limited
// run), a node's list index does not tell whether it is in the batch. A
// re-arm to the expiry a node already has changes nothing on the exact
// path (move_far()) and counts "same"; the fast path must not move the node
// and count a move instead. Both must agree, as everywhere else.

namespace {

// `a` gathers a batch at `gather_at`, then `body` re-arms; hot or not.
template <class Arm, class Body>
Twin play_gathered(bool hot, Arm arm, uint64_t gather_at, Body body) {
	Twin r;
	FakeClockBase a(16, 1000);
	ManualBase other(16, 0);
	Logged plain, lazy, due;
	plain.setup(a, 1, &r.log);
	lazy.setup(a, 2, &r.log, KT_TIMER_LAZY);
	due.setup(a, 3, &r.log);
	arm(&plain.timer, &lazy.timer, &due.timer);
	a.now = gather_at;
	EXPECT_EQ(kt_base_update_time(a), 0); // a is the hot base now
	if (!hot)
		kt_base_adopt(other); // claims the thread: a takes the general path
	kt_base_stats before{}, after{};
	kt_base_set_op_counting(a, 1); // the stats count every operation
	kt_base_get_stats(a, &before);
	body(&plain.timer, &lazy.timer, r.returns);
	kt_base_get_stats(a, &after);
	r.enqueued = after.enqueued - before.enqueued;
	r.removed = after.removed - before.removed;
	r.same = after.same_bucket - before.same_bucket;
	EXPECT_TRUE(kt_test::CheckOk(a));
	for (int i = 0; i < 200 && kt_base_pending_count(a) > 0; i++)
		a.run_at(a.now + 500);
	return r;
}

template <class Arm, class Body>
void expect_gathered_twins_agree(const char *what, Arm arm, uint64_t gather_at, Body body) {
	Twin hot = play_gathered(true, arm, gather_at, body), cold = play_gathered(false, arm, gather_at, body);
	EXPECT_EQ(hot.returns, cold.returns) << what;
	EXPECT_EQ(hot.enqueued, cold.enqueued) << what << ": enqueued";
	EXPECT_EQ(hot.removed, cold.removed) << what << ": removed";
	EXPECT_EQ(hot.same, cold.same) << what << ": same_bucket";
	ASSERT_EQ(hot.log.size(), cold.log.size()) << what;
	for (size_t i = 0; i < hot.log.size(); i++) {
		EXPECT_EQ(hot.log[i].id, cold.log[i].id) << what;
		EXPECT_EQ(hot.log[i].at, cold.log[i].at) << what;
	}
}

} // namespace

// A lazy timer of the batch (armed for 30000 - the level-2 bucket due at
// 30720 - pushed to 40000, still there, gathered at 30800 while not due)
// re-armed to the 40000 it has: on the same level as its bucket, so the fast
// path takes it, and must leave it where it is.
TEST(HotBase, LazyNodeOfAGatheredBatchReArmedToItsExpiryCountsTheSameOnBothPaths) {
	auto arm = [](kt_timer *, kt_timer *lazy, kt_timer *) {
		kt_mod_timer(lazy, 30000);
		kt_mod_timer(lazy, 40000);
	};
	auto body = [](kt_timer *, kt_timer *lazy, std::vector<int> &r) {
		r.push_back(kt_mod_timer(lazy, 40000));
		r.push_back(kt_mod_timer(lazy, 40000));
	};
	expect_gathered_twins_agree("lazy batch node, same expiry", arm, 30800, body);
	Twin hot = play_gathered(true, arm, 30800, body);
	EXPECT_EQ(hot.same, 2u); // changes nothing, as the exact path says
	EXPECT_EQ(hot.enqueued, 0u);
	ASSERT_EQ(hot.log.size(), 1u);
	EXPECT_GE(hot.log[0].at, 40000u); // requeued when taken, fired at its time
}

// A plain timer in its bucket, not in the batch, while another timer's batch
// is gathered: the fast path's same-bucket test holds, and with a batch
// gathered it must still count a same-bucket re-arm, not a move.
TEST(HotBase, WheelNodeReArmedToItsExpiryWhileABatchIsGatheredCountsTheSameOnBothPaths) {
	auto arm = [](kt_timer *plain, kt_timer *, kt_timer *due) {
		kt_mod_timer(plain, 30000);
		kt_mod_timer(due, 1100);
	};
	auto body = [](kt_timer *plain, kt_timer *, std::vector<int> &r) {
		r.push_back(kt_mod_timer(plain, 30000)); // its own expiry
		r.push_back(kt_mod_timer(plain, 30001)); // the same bucket
		r.push_back(kt_mod_timer(plain, 35000)); // another bucket
	};
	expect_gathered_twins_agree("wheel node, batch gathered", arm, 1200, body);
}

// ---- what kt_mod_timer() caches of the base ---------------------------------
//
// The fast path answers from one cache line of the base: one level's range
// (absolute: it moves with the clock), its rounding and lists, and the word
// a timer pending there has (with a bit set while a batch is gathered).
// Each case below fails when one of those goes stale: a clock move, a level
// switch, a batch gathered by a remote "fire now", a callback's re-arm. Each
// also asks kt_base_check(), which compares the cache with the base
// (KT_CHECK_FAST_PATH).

namespace {

// A delay in the middle of `level` at `res`.
uint64_t MidLevel(unsigned res, unsigned level) {
	kt_level_info li{};
	EXPECT_EQ(kt_wheel_level_info(res, level, &li), 0);
	return (li.min_delay_ms + li.max_delay_ms) / 2;
}

// Runs the manual clock to `until` and checks that each of `want` (id ->
// expiry, bound) fired once, never early, within its bound.
void ExpectEachOnTime(kt_base *b, std::vector<Fire> &log, std::map<int, std::pair<uint64_t, uint32_t>> want,
		      uint64_t until, const std::string &what) {
	kt_base_advance(b, KT_MILLIS(uint32_t(until - kt_base_now(b))));
	for (const Fire &f : log) {
		auto it = want.find(f.id);
		ASSERT_NE(it, want.end()) << what << ": timer " << f.id << " fired twice or unexpectedly";
		EXPECT_GE(f.at, it->second.first) << what << ": timer " << f.id << " early";
		EXPECT_LE(f.at - it->second.first, it->second.second)
			<< what << ": timer " << f.id << " later than its bound: placed on a stale level";
		want.erase(it);
	}
	EXPECT_TRUE(want.empty()) << what << ": " << want.size() << " lost";
}

} // namespace

// The clock moves on (kt_base_update_time(), with the fast path on: the
// turn of an epoll loop that refreshes its clock before handling I/O) after
// re-arms cached level 2: an expiry in the middle of level 1 from the new
// now lies inside level 2's range as it was at the old clock, but belongs on
// level 1 now.
TEST(FastPath, TheCachedRangeFollowsTheClock) {
	for (unsigned res : kResolutions) {
		FakeClockBase b(res, 1000);
		std::vector<Fire> log;
		Logged far, t;
		far.setup(b, 0, &log);
		t.setup(b, 1, &log);
		kt_level_info l2{};
		ASSERT_EQ(kt_wheel_level_info(res, 2, &l2), 0);
		ASSERT_EQ(kt_mod_timer(&far.timer, 1000 + l2.max_delay_ms * 4), 0); // never due here
		ASSERT_EQ(kt_mod_timer(&t.timer, 1000 + MidLevel(res, 2)), 0);
		ASSERT_EQ(kt_mod_timer(&t.timer, 1000 + MidLevel(res, 2) + 1), 1); // a re-arm: level 2 cached
		b.now = 1000 + l2.min_delay_ms;
		ASSERT_EQ(kt_base_update_time(b), 0); // the clock moves, the fast path stays on
		ASSERT_TRUE(kt_test::CheckOk(b)) << res;
		const uint64_t d = MidLevel(res, 1), e = kt_base_now(b) + d;
		const uint32_t bound = kt_base_max_lateness(b, KT_MILLIS(uint32_t(d)));
		ASSERT_EQ(kt_mod_timer(&t.timer, e), 1);
		ASSERT_TRUE(kt_test::CheckOk(b)) << res;
		for (uint64_t now = b.now; now <= e + l2.granularity_ms && log.empty(); now++)
			b.run_at(now);
		ASSERT_EQ(log.size(), 1u) << res;
		EXPECT_GE(log[0].at, e) << "res " << res << ": early";
		EXPECT_LE(log[0].at - e, bound) << "res " << res << ": later than its bound: placed on a stale level";
		kt_timer_delete(&far.timer);
	}
}

// Timers of different lengths take turns (a server's header, body and
// keep-alive deadlines): every re-arm switches the cached level, and each
// lands where its own level puts it - rounding, slot and list reloaded.
TEST(FastPath, ALevelSwitchReloadsTheWholeCache) {
	for (unsigned res : kResolutions) {
		ManualBase b(res, 1000);
		std::vector<Fire> log;
		std::vector<std::unique_ptr<Logged>> ts;
		std::map<int, std::pair<uint64_t, uint32_t>> want;
		const int kN = 70;
		for (int i = 0; i < kN; i++) {
			ts.push_back(std::make_unique<Logged>());
			ts.back()->setup(b, i, &log);
			ASSERT_EQ(kt_mod_timer(&ts.back()->timer, 1000 + MidLevel(res, 3)), 0);
		}
		for (int round = 0; round < 3; round++)
			for (int i = 0; i < kN; i++) {
				unsigned level = unsigned(i + round) % 7; // 0..6: each a switch
				uint64_t d = MidLevel(res, level) + uint64_t(i), e = kt_base_now(b) + d;
				ASSERT_EQ(kt_mod_timer(&ts[size_t(i)]->timer, e), 1);
				want[i] = {e, kt_base_max_lateness(b, KT_MILLIS(uint32_t(d)))};
				ASSERT_TRUE(kt_test::CheckOk(b)) << "res " << res << " level " << level;
			}
		kt_level_info l6{};
		ASSERT_EQ(kt_wheel_level_info(res, 6, &l6), 0);
		ExpectEachOnTime(b, log, want, kt_base_now(b) + l6.max_delay_ms + l6.granularity_ms,
				 "res " + std::to_string(res));
	}
}

// Remote "fire now"s open the batch in the turn that applies them (nothing
// else is due); with a run limit of one, the turn leaves one of them there.
// The owner then re-arms it for the alias of the bucket it was taken from
// (the same slot a lap later): the cached word must say a batch is
// gathered, or the fast path would keep the node in the batch and fire it
// at once, a lap early.
TEST(FastPath, ARemoteFireNowLeftInTheBatchIsNeverEarly) {
	FakeClockBase a(16, 1000);
	std::vector<Fire> log;
	Logged x, y;
	x.setup(a, 0, &log);
	y.setup(a, 1, &log);
	ASSERT_EQ(kt_mod_timer(&x.timer, 2000), 0);
	ASSERT_EQ(kt_mod_timer(&x.timer, 2016), 1); // a re-arm: level 0 cached
	ASSERT_EQ(kt_base_set_run_limit(a, 1, 0), 0);
	ASSERT_EQ(kt_remote_arm(&x.timer, KT_MILLIS(0), nullptr, nullptr), 0);
	ASSERT_EQ(kt_remote_arm(&y.timer, KT_MILLIS(0), nullptr, nullptr), 0);
	a.run_at(1001); // nothing gathered; the two remote arms open the batch; one fires
	ASSERT_EQ(log.size(), 1u);
	ASSERT_TRUE(kt_test::CheckOk(a));
	ASSERT_EQ(kt_base_prepare_wait(a).kind, KT_WAIT_IMMEDIATE); // one is left in the batch
	const int leftover = log[0].id == 0 ? 1 : 0;
	Logged &l = leftover ? y : x;
	// 64 units after the tick it joined the batch for: the same slot of level 0.
	const uint64_t alias = (kt_base_now(a) / 16 + 1 + 64) * 16;
	ASSERT_EQ(kt_mod_timer(&l.timer, alias), 1);
	ASSERT_TRUE(kt_test::CheckOk(a));
	ASSERT_EQ(kt_base_set_run_limit(a, 0, 0), 0);
	log.clear();
	for (uint64_t now = 1002; now < alias + 100; now += 4) {
		a.run_at(now);
		for (const Fire &f : log)
			EXPECT_GE(f.at, alias) << "timer " << f.id << " fired a lap early, from the batch";
		if (!log.empty())
			break;
	}
	ASSERT_EQ(log.size(), 1u);
	EXPECT_EQ(log[0].id, leftover);
}
