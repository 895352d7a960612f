// tests/core/wheel_lazy_test.cc: lazy timers (KT_TIMER_LAZY): a push-back
// only stores the new expiry, and the old bucket requeues the timer when it
// comes due; never early, within the bound of the last arm, on the manual
// clock and on the worker's path. Also kt_timer_prefetch(), a hint that
// changes nothing but speed. Manual or fake clocks only; nothing here sleeps.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/harness.h"

using kt_test::drain;
using kt_test::FakeClockBase;
using kt_test::Fire;
using kt_test::kResolutions;
using kt_test::Logged;
using kt_test::ManualBase;
using kt_test::lateness_bound;

namespace {
uint64_t Moves(kt_base *b) {
	kt_base_stats st{};
	kt_base_get_stats(b, &st);
	return st.enqueued;
}
} // namespace

TEST(Lazy, PushedLaterStaysInItsBucketAndFiresAtTheNewTime) {
	std::vector<Fire> log;
	Logged t;
	ManualBase b(16, 0);
	t.setup(b, 1, &log, KT_TIMER_LAZY);
	ASSERT_EQ(kt_base_set_op_counting(b, 1), 0); // the stats count every operation
	ASSERT_EQ(kt_mod_timer(&t.timer, 5000), 0);
	uint64_t links = Moves(b);
	// A keep-alive pushed back by every request: 50 ms apart, up to 9 s.
	for (uint64_t e = 5050; e <= 9000; e += 50)
		ASSERT_EQ(kt_mod_timer(&t.timer, e), 1);
	EXPECT_EQ(Moves(b), links) << "a lazy push-back moved the node";
	EXPECT_EQ(kt_timer_expires(&t.timer), 9000u); // the stored expiry
	EXPECT_TRUE(kt_test::CheckOk(b));
	drain(b, 8999);
	EXPECT_TRUE(log.empty()); // its old bucket came due: requeued, not fired
	EXPECT_TRUE(kt_timer_pending(&t.timer));
	EXPECT_EQ(kt_timer_expires(&t.timer), 9000u);
	EXPECT_TRUE(kt_test::CheckOk(b));
	drain(b, 9000 + lateness_bound(16, 0, 9000));
	ASSERT_EQ(log.size(), 1u);
	EXPECT_GE(log[0].at, 9000u);
}

// Pulled earlier than its stored expiry but not before the bucket it waits
// in (armed for 5 s, pushed to 9 s, pulled to 6 s): the bucket still comes
// first and requeues it for the time left, so only the expiry is stored.
TEST(Lazy, PulledEarlierButNotBeforeItsBucketStays) {
	for (unsigned res : kResolutions) {
		std::vector<Fire> log;
		Logged t;
		ManualBase b(res, 0);
		t.setup(b, 1, &log, KT_TIMER_LAZY);
		ASSERT_EQ(kt_base_set_op_counting(b, 1), 0);
		ASSERT_EQ(kt_mod_timer(&t.timer, 5000), 0);
		ASSERT_EQ(kt_mod_timer(&t.timer, 9000), 1);
		uint64_t links = Moves(b);
		ASSERT_EQ(kt_mod_timer(&t.timer, 6000), 1);
		EXPECT_EQ(Moves(b), links) << res << " ms: pulled to 6 s, after its 5 s bucket, the node moved";
		EXPECT_EQ(kt_timer_expires(&t.timer), 6000u) << res;
		EXPECT_TRUE(kt_test::CheckOk(b)) << res;
		drain(b, 5999);
		EXPECT_TRUE(log.empty()) << res;
		drain(b, 6000 + lateness_bound(res, 0, 6000));
		ASSERT_EQ(log.size(), 1u) << res;
		EXPECT_GE(log[0].at, 6000u) << res;
		EXPECT_LE(log[0].at, 6000 + lateness_bound(res, 0, 6000)) << res;
	}
}

TEST(Lazy, PulledBeforeItsBucketMovesAtOnce) {
	std::vector<Fire> log;
	Logged t;
	ManualBase b(16, 0);
	t.setup(b, 1, &log, KT_TIMER_LAZY);
	kt_mod_timer(&t.timer, 60000);
	ASSERT_EQ(kt_mod_timer(&t.timer, 100), 1);
	EXPECT_EQ(kt_base_next_timeout(b), 112); // the 100 ms bucket, not the 60 s one
	drain(b, 100 + lateness_bound(16, 0, 100));
	ASSERT_EQ(log.size(), 1u);
	EXPECT_GE(log[0].at, 100u);
}

// The delay of a push can shrink to a finer level than the node's (a timer
// armed long ago for 5 s, pushed at 4.99 s to 5.01 s): it must move, or it
// would fire a coarse granularity late.
TEST(Lazy, APushToAFinerLevelMovesWhenTheOldBucketIsLater) {
	for (unsigned res : kResolutions) {
		std::vector<Fire> log;
		Logged t;
		ManualBase b(res, 0);
		t.setup(b, 1, &log, KT_TIMER_LAZY);
		kt_mod_timer(&t.timer, 5000);
		drain(b, 4990);
		ASSERT_TRUE(log.empty());
		ASSERT_EQ(kt_mod_timer(&t.timer, 5010), 1);
		drain(b, 5010 + lateness_bound(res, 4990, 5010));
		ASSERT_EQ(log.size(), 1u) << res;
		EXPECT_GE(log[0].at, 5010u) << res;
		EXPECT_LE(log[0].at, 5010 + lateness_bound(res, 4990, 5010)) << res;
	}
}

TEST(Lazy, DeletedAfterAPushBackNeverFires) {
	std::vector<Fire> log;
	Logged t;
	ManualBase b(16, 0);
	t.setup(b, 1, &log, KT_TIMER_LAZY);
	kt_mod_timer(&t.timer, 1000);
	kt_mod_timer(&t.timer, 20000);
	EXPECT_EQ(kt_timer_delete(&t.timer), 1);
	EXPECT_FALSE(kt_timer_pending(&t.timer));
	drain(b, 60000);
	EXPECT_TRUE(log.empty());
	EXPECT_EQ(kt_base_pending_count(b), 0u);
	EXPECT_TRUE(kt_test::CheckOk(b));
}

namespace {
struct LazySelfRearm {
	kt_timer t{};
	kt_base *base = nullptr;
	std::vector<uint64_t> at;
	static void cb(kt_timer *t) {
		LazySelfRearm *s = kt_container_of(t, LazySelfRearm, t);
		s->at.push_back(kt_base_now(s->base));
		if (s->at.size() < 3)
			kt_timer_arm(t, KT_MILLIS(1000));
	}
};
} // namespace

TEST(Lazy, ReArmedFromItsOwnCallbackFiresAgain) {
	LazySelfRearm s;
	ManualBase b(16, 0);
	s.base = b;
	kt_timer_setup(&s.t, b, LazySelfRearm::cb, KT_TIMER_LAZY);
	kt_timer_arm(&s.t, KT_MILLIS(1000));
	kt_mod_timer(&s.t, 1500); // pushed later: requeued once
	drain(b, 10000);
	ASSERT_EQ(s.at.size(), 3u);
	EXPECT_GE(s.at[0], 1500u);
	EXPECT_GE(s.at[1], s.at[0] + 1000);
	EXPECT_GE(s.at[2], s.at[1] + 1000);
	kt_timer_delete(&s.t);
}

// kt_base_run() on a real-looking clock: the turn at the old bucket's time
// fires nothing, keeps the timer pending with its stored expiry, and the wait
// after it points at the new time.
TEST(Lazy, RequeuedAtItsOldDueTimeWithoutFiring) {
	std::vector<Fire> log;
	Logged t;
	FakeClockBase b(16, 1000);
	t.setup(b, 1, &log, KT_TIMER_LAZY);
	kt_mod_timer(&t.timer, 1500);
	kt_mod_timer(&t.timer, 3000);
	EXPECT_EQ(b.run_at(1600), 0u);
	EXPECT_TRUE(log.empty());
	EXPECT_TRUE(kt_timer_pending(&t.timer));
	EXPECT_EQ(kt_timer_remaining(&t.timer), 1400u);
	int64_t next = kt_base_next_timeout(b);
	EXPECT_GE(1600 + next, 3000);
	EXPECT_TRUE(kt_test::CheckOk(b));
	EXPECT_EQ(b.run_at(2999), 0u);
	EXPECT_EQ(b.run_at(3000 + lateness_bound(16, 1600, 3000)), 1u);
	ASSERT_EQ(log.size(), 1u);
	EXPECT_GE(log[0].at, 3000u);
}

// Random pushes later and earlier, deletes and re-arms on 200 lazy and 200
// plain timers, time advancing: never early, within the bound of the last
// arm, nothing lost or doubled, and fewer node moves for the lazy ones.
TEST(Lazy, RandomPushesNeverEarlyWithinTheBoundOfTheLastArm) {
	for (unsigned res : kResolutions) {
		struct Node {
			Logged l;
			uint64_t expires = 0, latest = 0;
			bool pending = false;
		};
		std::vector<Fire> log;
		std::vector<Node> ns(400);
		ManualBase b(res, 0);
		for (int i = 0; i < 400; i++)
			ns[size_t(i)].l.setup(b, i, &log, i % 2 ? KT_TIMER_LAZY : 0);
		uint64_t seed = 88172645463325252ull + res;
		auto rnd = [&](uint64_t m) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			return seed % m;
		};
		for (int step = 0; step < 3000; step++) {
			for (int k = 0; k < 20; k++) {
				Node &n = ns[rnd(400)];
				uint64_t now = kt_base_now(b);
				if (rnd(10) == 0) {
					kt_timer_delete(&n.l.timer);
					n.pending = false;
					continue;
				}
				uint64_t e = now + (rnd(4) == 0 ? rnd(100) : 2000 + rnd(3000));
				kt_mod_timer(&n.l.timer, e);
				n.expires = e;
				n.latest = std::max(e, now) + lateness_bound(res, now, e);
				n.pending = true;
			}
			size_t before = log.size();
			kt_base_advance(b, KT_MILLIS(1 + rnd(40)));
			for (size_t f = before; f < log.size(); f++) {
				Node &n = ns[size_t(log[f].id)];
				ASSERT_TRUE(n.pending) << "fired twice or after delete, res " << res;
				ASSERT_GE(log[f].at, n.expires) << "early, res " << res;
				ASSERT_LE(log[f].at, n.latest) << "late, res " << res << " id " << log[f].id;
				n.pending = false;
			}
			if (step % 100 == 0)
				ASSERT_TRUE(kt_test::CheckOk(b)) << res;
		}
		for (Node &n : ns)
			EXPECT_EQ(kt_timer_pending(&n.l.timer) != 0, n.pending);
	}
}

TEST(Lazy, UnknownFlagsAreStillRefused) {
	ManualBase b;
	kt_timer t;
	EXPECT_EQ(kt_timer_setup(&t, b, [](kt_timer *) {}, KT_TIMER_LAZY | KT_TIMER_DEFERRABLE), 0);
	EXPECT_EQ(kt_timer_setup(&t, b, [](kt_timer *) {}, 0x4u), -EINVAL);
}

// kt_timer_prefetch() is a hint: the same operations with and without it
// fire the same timers at the same times, and it accepts any pointer.
TEST(Prefetch, ChangesNothingButSpeed) {
	kt_timer_prefetch(nullptr);
	std::vector<std::vector<Fire>> logs(2);
	for (int with = 0; with < 2; with++) {
		std::vector<Logged> ts(300);
		ManualBase b(16, 0);
		for (int i = 0; i < 300; i++)
			ts[size_t(i)].setup(b, i, &logs[size_t(with)], i % 3 == 0 ? KT_TIMER_LAZY : 0);
		uint64_t seed = 2463534242u;
		for (int step = 0; step < 2000; step++) {
			seed ^= seed << 13;
			seed ^= seed >> 17;
			seed ^= seed << 5;
			size_t i = seed % 300, ahead = (seed / 300) % 300;
			if (with) {
				kt_timer_prefetch(&ts[ahead].timer);
				kt_timer_prefetch(&ts[i].timer);
			}
			if (seed % 7 == 0)
				kt_timer_delete(&ts[i].timer);
			else
				kt_mod_timer(&ts[i].timer, kt_base_now(b) + 10 + seed % 5000);
			if (step % 10 == 0)
				kt_base_advance(b, KT_MILLIS(37));
		}
		ASSERT_TRUE(kt_test::CheckOk(b));
		drain(b, kt_base_now(b) + 10000);
	}
	ASSERT_EQ(logs[0].size(), logs[1].size());
	for (size_t k = 0; k < logs[0].size(); k++) {
		EXPECT_EQ(logs[0][k].id, logs[1][k].id) << k;
		EXPECT_EQ(logs[0][k].at, logs[1][k].at) << k;
	}
}

// The same on the worker's path: kt_base_run() each unit on a monotonic
// clock (requeues happen from a gathered batch, with the clock past now),
// delays across every level up to a few minutes, push-backs also from the
// callbacks of other timers, and each gathered batch sometimes pushed back
// between kt_base_update_time() and the run.
TEST(Lazy, RunTurnsPushesAcrossLevelsNeverEarlyWithinTheBoundOfTheLastArm) {
	for (unsigned res : kResolutions) {
		struct Node {
			kt_timer timer{};
			int id = 0;
			uint64_t expires = 0, latest = 0, armed = 0;
			bool pending = false;
		};
		static std::vector<Node> *nsp;
		static FakeClockBase *fbp;
		static uint64_t seed;
		static unsigned rres;
		static int bad;
		static std::string why;
		std::vector<Node> ns(300);
		FakeClockBase b(res, 1000 * res);
		nsp = &ns;
		fbp = &b;
		rres = res;
		bad = 0;
		why.clear();
		seed = 88172645463325252ull + res;
		static auto rnd = [](uint64_t m) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			return seed % m;
		};
		static auto arm = [](Node &n) {
			uint64_t now = kt_base_now(fbp->b);
			uint64_t e;
			switch (rnd(4)) {
			case 0:
				e = now + rnd(70 * rres);
				break;
			case 1:
				e = n.pending ? n.expires + rnd(40 * rres) : now + rnd(5000);
				break;
			case 2:
				e = now + rnd(300000);
				break;
			default:
				e = now + rnd(20000);
				break;
			}
			kt_mod_timer(&n.timer, e);
			if (n.pending && e == n.expires)
				return; // the same expiry changes nothing (kt_mod_timer())
			n.expires = e;
			n.latest = std::max(e, now) + lateness_bound(rres, now, e);
			n.armed = now;
			n.pending = true;
		};
		auto cb = [](kt_timer *t) {
			Node *n = kt_container_of(t, Node, timer);
			uint64_t at = kt_base_now(fbp->b);
			if (!n->pending || at < n->expires || at > n->latest) {
				if (!bad++)
					why = "id " + std::to_string(n->id) + " at " + std::to_string(at) + " expires " +
					      std::to_string(n->expires) + " latest " + std::to_string(n->latest) +
					      (n->pending ? "" : " (not pending)");
			}
			n->pending = false;
			if (rnd(3) == 0)
				arm((*nsp)[rnd(nsp->size())]); // push another (maybe in this batch)
		};
		for (int i = 0; i < 300; i++) {
			ns[size_t(i)].id = i;
			kt_timer_setup(&ns[size_t(i)].timer, b, cb, i % 4 ? KT_TIMER_LAZY : 0);
		}
		for (int turn = 0; turn < 20000 && !bad; turn++) {
			for (int k = 0; k < 3; k++) {
				Node &n = ns[rnd(ns.size())];
				if (rnd(12) == 0) {
					kt_timer_delete(&n.timer);
					n.pending = false;
				} else {
					arm(n);
				}
			}
			b.now += res;
			if (rnd(2)) {
				ASSERT_EQ(kt_base_update_time(b), 0);
				for (int k = 0; k < 3; k++) // push back gathered ones too
					arm(ns[rnd(ns.size())]);
			}
			kt_base_run(b);
			if (turn % 500 == 0)
				ASSERT_TRUE(kt_test::CheckOk(b)) << res;
			for (Node &n : ns)
				if (n.pending && n.latest < kt_base_now(b) && !bad++)
					why = "id " + std::to_string(n.id) + " lost: latest " + std::to_string(n.latest) + " expires " +
					      std::to_string(n.expires) + " now " + std::to_string(kt_base_now(b)) + " armed " +
					      std::to_string(n.armed) + " remaining " + std::to_string(kt_timer_remaining(&n.timer)) +
					      " pending " + std::to_string(kt_timer_pending(&n.timer));
		}
		EXPECT_EQ(bad, 0) << "res " << res << ": " << why;
		for (Node &n : ns)
			kt_timer_delete(&n.timer);
	}
}

// Lazy timers re-armed within one level, for every phase of the level's
// first pending bucket mod 64 and pairs of buckets (the node's and the new
// one) on both sides of it, whose order the re-arm decides from that
// bucket: each fires once, never early, within the bound of its last arm.
TEST(Lazy, EveryPhaseOfTheLevelWithBucketsOnBothSidesOfItsFirst) {
	for (unsigned res : {1u, 16u})
		for (unsigned lvl = 0; lvl < 3; lvl++) {
			uint64_t g = uint64_t(res) << (3 * lvl);          // granularity, ms
			uint64_t lo = lvl ? (63ull << (3 * (lvl - 1))) * res + 1 : 1; // past now
			uint64_t hi = (63ull << (3 * lvl)) * res - 1;
			for (uint64_t phase = 0; phase < 64; phase++)
				for (uint64_t gap : {uint64_t(0), g / 2, g, 7 * g}) {
					ManualBase b(res, phase * g + (phase % 3) * (g / 4));
					std::vector<Fire> log;
					std::vector<std::unique_ptr<Logged>> ts;
					std::vector<uint64_t> want, bound;
					uint64_t t0 = kt_base_now(b);
					uint64_t step = std::max<uint64_t>(g, (hi - lo) / 40);
					for (uint64_t d1 = lo; d1 <= hi; d1 += step) {
						ts.emplace_back(new Logged);
						ts.back()->setup(b, int(ts.size() - 1), &log, KT_TIMER_LAZY);
						ASSERT_EQ(kt_mod_timer(&ts.back()->timer, t0 + d1), 0);
					}
					drain(b, t0 + gap);
					uint64_t t1 = kt_base_now(b);
					size_t n = ts.size(), i = 0;
					want.resize(n);
					bound.resize(n);
					for (auto &t : ts) {
						uint64_t d2 = lo + ((i * 7919 + phase * 31 + gap) % (hi - lo + 1));
						if (!kt_timer_pending(&t->timer)) { // fired during the gap
							want[i] = 0;
							i++;
							continue;
						}
						want[i] = t1 + d2;
						bound[i] = lateness_bound(res, t1, t1 + d2);
						ASSERT_EQ(kt_mod_timer(&t->timer, t1 + d2), 1);
						i++;
					}
					ASSERT_TRUE(kt_test::CheckOk(b));
					std::vector<int> fired(n, 0);
					size_t before = log.size();
					drain(b, t1 + hi + 8 * g + 100);
					for (size_t k = before; k < log.size(); k++) {
						int id = log[k].id;
						fired[size_t(id)]++;
						ASSERT_GE(log[k].at, want[size_t(id)]) << res << " " << lvl << " " << phase << " " << gap;
						ASSERT_LE(log[k].at, want[size_t(id)] + bound[size_t(id)])
						    << res << " lvl " << lvl << " phase " << phase << " gap " << gap << " id " << id;
					}
					for (size_t k = 0; k < n; k++)
						if (want[k])
							ASSERT_EQ(fired[k], 1) << k;
				}
		}
}
