// Randomized differential test: the wheel and a simple reference model are
// driven by the same stream of operations; every firing is checked.
//
// The model is a map from timer id to (pending, expires, latest allowed fire
// time), written from the guarantees, not from the wheel's code: a timer
// fires at most once per arming, never before its expiry, never after
// max(expiry, arm time) + one granularity of the level it lands on, and never
// after it was deleted. After every step the model's earliest "latest allowed
// fire time" must be in the future: otherwise a timer was lost.
//
// The mixed run (every kind of timer, turns in nginx's order) is
// differential_mixed_test.cc.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/core/differential.h"
#include "tests/support/harness.h"

using kt_diff::ops;
using kt_diff::seed_from_env;

namespace {

enum class Mode { kAdvance, kRun };

struct Model {
	bool pending = false;
	uint64_t expires = 0;
	uint64_t latest = 0;
};

struct Harness;

struct Node {
	Harness *h;
	int id;
	kt_timer timer;
};

struct Harness {
	unsigned res;
	Mode mode;
	kt_base *base = nullptr;
	kt_test::FakeClockBase *fake = nullptr;
	kt_test::ManualBase *manual = nullptr;
	kt_test::ManualBase other{16, 0}; // claims the thread now and then (run())
	std::mt19937_64 rng;
	std::vector<Node> nodes;
	std::vector<Model> model;
	std::set<std::pair<uint64_t, int>> deadlines; // (latest, id) of pending
	uint64_t fired = 0, ops = 0;
	uint64_t prev_turn = 0; // run mode: the clock of the turn before this one
	bool failed = false;

	Harness(unsigned r, Mode m, uint64_t seed, int n) : res(r), mode(m), rng(seed), nodes(size_t(n)), model(size_t(n)) {
		if (mode == Mode::kRun) {
			fake = new kt_test::FakeClockBase(res, 1000000);
			base = fake->b;
		} else {
			manual = new kt_test::ManualBase(res, 1000000);
			base = manual->b;
		}
		for (int i = 0; i < n; i++) {
			nodes[size_t(i)].h = this;
			nodes[size_t(i)].id = i;
			kt_timer_setup(&nodes[size_t(i)].timer, base, &Harness::on_fire, 0);
		}
	}
	~Harness() {
		delete fake;
		delete manual;
	}

	uint64_t now() const { return kt_base_now(base); }

	void forget(int id) {
		Model &m = model[size_t(id)];
		if (m.pending)
			deadlines.erase({m.latest, id});
		m.pending = false;
	}

	// Arm in both; checks the return value against the model.
	void arm(int id, uint64_t expires) {
		Model &m = model[size_t(id)];
		int want = m.pending ? 1 : 0;
		int got = kt_mod_timer(&nodes[size_t(id)].timer, expires);
		if (got != want) {
			ADD_FAILURE() << "mod_timer returned " << got << " for id " << id;
			failed = true;
		}
		bool same = m.pending && m.expires == expires;
		forget(id);
		m.pending = true;
		if (!same || m.latest == 0) {
			uint64_t start = expires > now() ? expires : now();
			m.latest = start + kt_test::lateness_bound(res, now(), expires);
		}
		m.expires = expires;
		deadlines.insert({m.latest, id});
	}

	void del(int id) {
		int want = model[size_t(id)].pending ? 1 : 0;
		int got = kt_timer_delete(&nodes[size_t(id)].timer);
		if (got != want) {
			ADD_FAILURE() << "delete returned " << got << " for id " << id;
			failed = true;
		}
		forget(id);
	}

	uint64_t random_delay() {
		switch (rng() % 10) {
		case 0:
			return 0;
		case 1: // around the level boundaries
		{
			kt_level_info info;
			kt_wheel_level_info(res, unsigned(rng() % KT_WHEEL_LEVELS), &info);
			return info.min_delay_ms + (rng() % (3 * res)) - res;
		}
		case 2:
			return rng() % 100000000; // up to ~28 hours
		case 3:
			return kt_wheel_reach_ms(res) + rng() % 1000000000; // beyond reach
		default:
			return rng() % 5000;
		}
	}

	static void on_fire(kt_timer *t) {
		Node *n = kt_container_of(t, Node, timer);
		n->h->fire(n->id);
	}

	void fire(int id) {
		Model &m = model[size_t(id)];
		uint64_t at = now();
		fired++;
		if (!m.pending) {
			ADD_FAILURE() << "timer " << id << " fired while not pending (doubled or deleted)";
			failed = true;
			return;
		}
		if (at < m.expires) {
			ADD_FAILURE() << "timer " << id << " fired early: now " << at << " expires " << m.expires;
			failed = true;
		}
		// Advance stands the clock on each bucket's due time; a run fires
		// what is due at the turn's now, so there the question is whether
		// the previous turn should already have fired it.
		uint64_t judged = mode == Mode::kAdvance ? at : prev_turn;
		if (mode == Mode::kRun ? judged >= m.latest : judged > m.latest) {
			ADD_FAILURE() << "timer " << id << " fired late: now " << at << " latest " << m.latest;
			failed = true;
		}
		if (kt_timer_pending(&nodes[size_t(id)].timer)) {
			ADD_FAILURE() << "timer " << id << " still pending in its callback";
			failed = true;
		}
		forget(id);
		// Re-entrancy: re-arm itself, delete or re-arm another timer.
		switch (rng() % 8) {
		case 0:
			arm(id, now() + random_delay());
			break;
		case 1:
			del(int(rng() % nodes.size()));
			break;
		case 2:
			arm(int(rng() % nodes.size()), now() + random_delay());
			break;
		default:
			break;
		}
	}

	void step_clock(uint64_t by) {
		prev_turn = now();
		if (mode == Mode::kAdvance)
			kt_base_advance(base, KT_MILLIS(by));
		else
			fake->run_at(now() + by);
	}

	void check_nothing_lost() {
		if (!deadlines.empty() && deadlines.begin()->first <= now()) {
			int id = deadlines.begin()->second;
			ADD_FAILURE() << "timer " << id << " lost: latest " << deadlines.begin()->first << " now " << now();
			failed = true;
		}
	}

	void run(uint64_t nops) {
		for (uint64_t i = 0; i < nops && !failed; i++, ops++) {
			// Now and then another base takes the thread until this one's
			// next turn: kt_mod_timer() then takes its general path.
			if (i % 509 == 0)
				kt_base_advance(other.b, KT_MILLIS(0));
			int id = int(rng() % nodes.size());
			Model &m = model[size_t(id)];
			switch (rng() % 16) {
			case 0:
			case 1:
			case 2:
			case 3:
			case 4:
				arm(id, now() + random_delay());
				break;
			case 5: // push back a pending timer a little: the keep-alive case
				if (m.pending)
					arm(id, m.expires + rng() % 50);
				break;
			case 6:
				del(id);
				break;
			case 7: { // reduce
				uint64_t e = now() + random_delay();
				int want = m.pending ? 1 : 0;
				if (!m.pending || e < m.expires) {
					// mirror the library: arm (or move earlier)
					int got = kt_timer_reduce(&nodes[size_t(id)].timer, e);
					if (got != want) {
						ADD_FAILURE() << "reduce returned " << got;
						failed = true;
					}
					forget(id);
					m.pending = true;
					m.expires = e;
					m.latest = (e > now() ? e : now()) + kt_test::lateness_bound(res, now(), e);
					deadlines.insert({m.latest, id});
				} else {
					EXPECT_EQ(kt_timer_reduce(&nodes[size_t(id)].timer, e), 1);
				}
				break;
			}
			case 8: { // mod_pending
				uint64_t e = now() + random_delay();
				if (m.pending)
					arm(id, e);
				else
					EXPECT_EQ(kt_mod_timer_pending(&nodes[size_t(id)].timer, e), 0);
				break;
			}
			case 9:
			case 10:
			case 11:
			case 12:
				step_clock(rng() % (4 * res));
				break;
			case 13:
				step_clock(rng() % 3000);
				break;
			case 14:
				if (rng() % 64 == 0)
					step_clock(rng() % 200000000); // days of idle
				break;
			default:
				if (kt_base_pending_count(base) != deadlines.size()) {
					ADD_FAILURE() << "pending " << kt_base_pending_count(base) << " model " << deadlines.size();
					failed = true;
				}
				break;
			}
			check_nothing_lost();
			if (i % 4096 == 0 && kt_base_check(base) != 0) {
				ADD_FAILURE() << kt_test::CheckOk(base).message() << " at op " << i;
				failed = true;
			}
		}
		EXPECT_TRUE(kt_test::CheckOk(base));
		EXPECT_EQ(kt_base_pending_count(base), deadlines.size());
	}
};

} // namespace

// The main run: over a million operations at the default resolution.
TEST(Differential, MillionOpsAdvance16ms) {
	Harness h(16, Mode::kAdvance, seed_from_env(1), 4096);
	h.run(ops(1200000));
	EXPECT_FALSE(h.failed);
	EXPECT_GT(h.fired, ops(10000)); // the stream really exercises firing
	RecordProperty("fired", std::to_string(h.fired));
}

TEST(Differential, MillionOpsRun16ms) {
	Harness h(16, Mode::kRun, seed_from_env(2), 4096);
	h.run(ops(1000000));
	EXPECT_FALSE(h.failed);
	EXPECT_GT(h.fired, ops(10000));
}

class DifferentialRes : public ::testing::TestWithParam<unsigned> {};

TEST_P(DifferentialRes, AdvanceAndRun) {
	for (Mode mode : {Mode::kAdvance, Mode::kRun}) {
		Harness h(GetParam(), mode, seed_from_env(100 + GetParam()), 1024);
		h.run(ops(150000));
		EXPECT_FALSE(h.failed) << "res " << GetParam();
		EXPECT_GT(h.fired, ops(1000));
	}
}

INSTANTIATE_TEST_SUITE_P(EveryResolution, DifferentialRes, ::testing::Values(1u, 2u, 4u, 8u, 16u));
