// Randomized differential test: the wheel and a simple reference model are
// driven by the same stream of operations; every firing is checked.
//
// The model is a map from timer id to (pending, expires, latest allowed fire
// time), written from the guarantees, not from the wheel's code: a timer
// fires at most once per arming, never before its expiry, never after
// max(expiry, arm time) + one granularity of its level + one unit, and never
// after it was deleted. After every step the model's earliest "latest allowed
// fire time" must be in the future: otherwise a timer was lost.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/support/harness.h"

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

uint64_t seed_from_env(uint64_t dflt) {
	const char *s = getenv("KT_DIFF_SEED");
	return s ? strtoull(s, nullptr, 0) : dflt;
}

// KT_DIFF_SCALE=k divides the operation counts (valgrind runs use it).
uint64_t ops(uint64_t n) {
	const char *s = getenv("KT_DIFF_SCALE");
	uint64_t k = s ? strtoull(s, nullptr, 0) : 1;
	return n / (k ? k : 1);
}

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

// ---- the mixed run: wheel, precise, cross-thread and one-shot timers --------
//
// One randomized run that mixes every kind of timer
// a worker has, driven the way a worker drives them, against a model written
// from the documented guarantees (not from the library's code):
//
// - wheel timers (mod, arm, add, push back, reduce, mod_pending, delete,
//   shutdown, re-setup, deferrable ones), precise timers (start, start_after,
//   restart, cancel, equal deadlines), one-shot calls (kt_call_after, cancel
//   with live and stale handles), and cross-thread operations (kt_remote_mod,
//   _arm, _delete, from this thread or a real second thread, with and without
//   done callbacks, forget, bursts past KT_REMOTE_BATCH);
// - callbacks of every kind (wheel, precise, call, done) that re-arm, delete,
//   cancel, free and re-create timers (the documented forget-then-free
//   protocol), start timers of the other kind, queue remote operations and
//   check the wheel;
// - turns in nginx's order (prepare the wait, let time pass, update the time,
//   handle "I/O" - any of the operations above, also on the gathered timers -
//   let a little more time pass, run the timers), older orders (run only,
//   update twice), on a manual clock (kt_base_advance(), precise deadlines
//   exact) or on a fake monotonic clock (kt_base_run());
//
// and checks, as it goes: never early; bounded lateness (a wheel timer or
// call by one granularity of its level plus one unit; a precise timer exact
// in advance mode, within one unit if it was armed for a time already due;
// in run mode, everything due at a turn's gather fires in that turn); nothing
// lost, nothing doubled; every return value; each done callback once, in
// queue order, with the result the owner-side call gives (-ECANCELED for
// forgotten ones, and for those still queued when the base is freed); the
// waker called exactly when the owner waits and the queue turns non-empty;
// equal precise deadlines first in, first out; kt_base_next_timeout() and
// kt_base_prepare_wait() never later than the earliest pending
// non-deferrable deadline (checked against every pending timer) and never
// "nothing pending" while something is; pending counts, kt_timer_remaining(),
// kt_base_dump()'s count; and kt_base_check() between turns and from inside
// callbacks. Run limits (kt_base_set_run_limit(), by count, and by time with
// callbacks that let the clock move) change now and then: no run starts a
// callback past its limit, a stopped run's left-overs count as gathered (the
// wait is immediate) and fire in the next run before anything that was not
// due when it stopped, and nothing is lost once a run ends unstopped.
// A failure names the seed (KT_DIFF_SEED reruns it).
namespace mixed {

constexpr uint64_t kNs = 1000000;
uint64_t ceil_ms(uint64_t ns) { return ns / kNs + (ns % kNs != 0); }

enum class Clock { kAdvance, kRun };
void PrintTo(Clock c, std::ostream *os) { *os << (c == Clock::kAdvance ? "advance" : "run"); }

struct World;

struct WNode {
	World *w;
	int slot;
	kt_timer timer;
};
struct HNode {
	World *w;
	int slot;
	kt_hrtimer timer;
};
struct CallArg {
	World *w;
	int slot;
	uint64_t serial;
};
struct DoneArg {
	World *w;
	uint64_t token;
};

struct WModel {
	bool pending = false, shutdown = false, deferrable = false, lazy = false;
	uint64_t expires = 0, latest = 0, armed_turn = 0, armed_ms = 0;
	// A lazy timer's node may sit in a bucket placed by an earlier, smaller
	// expiry: the earliest expiry and arm time since it was last idle.
	uint64_t wake_lb = 0, armed_lb = 0;
	uint64_t gen = 0; // bumped by every arm and delete (the run-limit order check)
	// A remote arm or mod applied for a time already due: the turn and the
	// arm generation; it must fire in that turn (unless the run stops at its
	// limit), not on a later tick.
	uint64_t due_remote_turn = 0, due_remote_gen = 0;
};
struct HModel {
	bool pending = false, exact = false;
	uint64_t expires = 0, latest = 0, seq = 0, armed_turn = 0;
};
struct CModel {
	bool pending = false;
	uint64_t expires = 0, latest = 0, armed_turn = 0, armed_ms = 0, serial = 0;
	kt_call handle{};
	CallArg *arg = nullptr;
};

enum { kOpMod, kOpArm, kOpDelete };
struct Op {
	uint64_t token;
	int slot;
	WNode *node;
	int kind;
	uint64_t arg;
	bool has_done;
};

// A real second thread that queues remote operations. Each job runs to
// completion before run() returns, so the stream stays deterministic.
class Producer {
public:
	Producer() : th_([this] { loop(); }) {}
	~Producer() {
		{
			std::lock_guard<std::mutex> l(m_);
			quit_ = true;
		}
		cv_.notify_all();
		th_.join();
	}
	void run(std::function<void()> f) {
		std::unique_lock<std::mutex> l(m_);
		job_ = std::move(f);
		has_job_ = true;
		cv_.notify_all();
		cv_.wait(l, [this] { return !has_job_; });
	}

private:
	void loop() {
		std::unique_lock<std::mutex> l(m_);
		for (;;) {
			cv_.wait(l, [this] { return has_job_ || quit_; });
			if (has_job_) {
				std::function<void()> f = std::move(job_);
				l.unlock();
				f();
				l.lock();
				has_job_ = false;
				cv_.notify_all();
				continue;
			}
			return;
		}
	}
	std::mutex m_;
	std::condition_variable cv_;
	std::function<void()> job_;
	bool has_job_ = false, quit_ = false;
	std::thread th_; // last: starts after the rest is initialized
};

struct Counts {
	uint64_t ops = 0, turns = 0, wheel_fired = 0, hr_fired = 0, calls_fired = 0, applied = 0, cancelled = 0,
		 from_thread = 0, wakes = 0, freed = 0;
};

struct World {
	unsigned res;
	Clock clock;
	uint64_t seed;
	std::mt19937_64 rng;
	kt_base *base = nullptr;
	uint64_t fake_now = 1000000; // run mode's clock, ms
	uint64_t unit_ns;
	std::vector<WNode *> w;
	std::vector<WModel> wm;
	std::vector<HNode *> h;
	std::vector<HModel> hm;
	std::vector<CModel> calls;
	std::vector<kt_call> stale;
	std::deque<Op> queue, taken;
	std::deque<uint64_t> expect_cancel;
	uint64_t next_token = 1, call_serial = 1, hr_seq = 0, turn = 0;
	bool waiting = false;
	uint64_t expected_wakes = 0;
	std::atomic<uint64_t> wakes{0};
	int depth = 0; // inside a callback of the library
	bool gathered = false; // kt_base_update_time() since the last run
	bool in_turn = false;  // the I/O phase of a turn starts no turn of its own
	uint64_t last_hr_at = UINT64_MAX, last_hr_expires = 0, last_hr_seq = 0;
	bool failed = false;
	// kt_base_set_run_limit(): the current limit, and what the last run that
	// stopped at it left due (slot, arm generation), which the next run must
	// fire before anything that was not due then.
	uint32_t lim_calls = 0, lim_us = 0;
	bool in_run = false, new_fired = false;
	std::string new_what;
	uint64_t run_cbs = 0, stopped_runs = 0, leftover_now = 0, leftover_now_ns = 0, leftover_turn = 0;
	std::set<std::pair<int, uint64_t>> leftover;
	Counts n;
	Producer producer;
	FILE *devnull = nullptr;

	World(unsigned r, Clock c, uint64_t s, int nw, int nh, int nc)
	    : res(r), clock(c), seed(s), rng(s), unit_ns(uint64_t(r) * kNs), wm(size_t(nw)), hm(size_t(nh)),
	      calls(size_t(nc)) {
		if (clock == Clock::kAdvance) {
			kt_base_config cfg{res, KT_CLOCK_MANUAL, 1000000};
			base = kt_base_new(&cfg);
		} else {
			kt_base_config cfg{res, KT_CLOCK_MONOTONIC, 0};
			base = kt_base_new(&cfg);
			kt__base_set_time_source(base, &World::read_clock, this);
		}
		kt_base_set_waker(base, &World::waker, this);
		devnull = fopen("/dev/null", "w");
		for (int i = 0; i < nw; i++) {
			w.push_back(nullptr);
			new_wheel(i);
		}
		for (int i = 0; i < nh; i++) {
			h.push_back(nullptr);
			new_hr(i);
		}
	}

	~World() {
		// Tear down in the documented order: no producer touches the base
		// any more (its jobs are done), then free the base: queued
		// operations are reported -ECANCELED, pending timers detached.
		for (const Op &op : queue)
			if (op.has_done)
				expect_cancel.push_back(op.token);
		queue.clear();
		kt_base_free(base);
		base = nullptr; // where() must not read it
		if (!expect_cancel.empty())
			fail("kt_base_free() did not report " + std::to_string(expect_cancel.size()) +
			     " queued operations");
		for (WNode *p : w)
			delete p;
		for (HNode *p : h)
			delete p;
		for (CModel &c : calls)
			delete c.arg; // never called: the argument stays ours
		if (devnull)
			fclose(devnull);
	}

	static uint64_t read_clock(void *self) { return static_cast<World *>(self)->fake_now; }
	static void waker(void *self) { static_cast<World *>(self)->wakes++; }

	std::string where() const {
		return "seed " + std::to_string(seed) + " (KT_DIFF_SEED), res " + std::to_string(res) +
		       (clock == Clock::kAdvance ? " advance" : " run") + ", op " + std::to_string(n.ops) + ", turn " +
		       std::to_string(turn) + ", now " + std::to_string(now_ns()) + " ns";
	}
	void fail(const std::string &msg) {
		if (!failed)
			ADD_FAILURE() << msg << " [" << where() << "]";
		failed = true;
	}
	void expect_ret(const char *what, int got, int want) {
		if (got != want)
			fail(std::string(what) + " returned " + std::to_string(got) + ", want " + std::to_string(want));
	}

	uint64_t now_ms() const { return kt_base_now(base); }
	uint64_t now_ns() const { return kt_base_now_ns(base); }
	// What kt_hrtimer_start_after() reads: the clock itself, not the turn's.
	uint64_t fresh_ns() const { return clock == Clock::kRun ? fake_now * kNs : now_ns(); }
	uint64_t r(uint64_t m) { return rng() % m; }

	// ---- nodes -----------------------------------------------------------

	void new_wheel(int s) {
		WNode *p = new WNode{this, s, {}};
		unsigned flags = wheel_flags();
		expect_ret("kt_timer_setup", kt_timer_setup(&p->timer, base, &World::on_wheel, flags), 0);
		w[size_t(s)] = p;
		uint64_t g = wm[size_t(s)].gen + 1;
		wm[size_t(s)] = WModel{};
		wm[size_t(s)].gen = g;
		wm[size_t(s)].deferrable = (flags & KT_TIMER_DEFERRABLE) != 0;
		wm[size_t(s)].lazy = (flags & KT_TIMER_LAZY) != 0;
	}
	void new_hr(int s) {
		HNode *p = new HNode{this, s, {}};
		expect_ret("kt_hrtimer_setup", kt_hrtimer_setup(&p->timer, base, &World::on_hr), 0);
		h[size_t(s)] = p;
		hm[size_t(s)] = HModel{};
	}

	// The documented way to free a timer other threads may have queued
	// operations for: forget them (each reported -ECANCELED), delete, free.
	void free_wheel(int s) {
		forget(s);
		expect_ret("kt_timer_delete", kt_timer_delete(&w[size_t(s)]->timer), wm[size_t(s)].pending ? 1 : 0);
		delete w[size_t(s)];
		n.freed++;
		new_wheel(s);
	}
	void free_hr(int s) {
		expect_ret("kt_hrtimer_cancel", kt_hrtimer_cancel(&h[size_t(s)]->timer), hm[size_t(s)].pending ? 1 : 0);
		delete h[size_t(s)];
		n.freed++;
		new_hr(s);
	}

	// ---- wheel timers: the library call and the model side by side ----------

	void model_arm(int s, uint64_t e) {
		WModel &m = wm[size_t(s)];
		bool same = m.pending && m.expires == e;
		m.gen++;
		if (!same) {
			uint64_t a = now_ms();
			m.latest = std::max(e, a) + kt_test::lateness_bound(res, a, e);
			m.armed_turn = turn;
			m.armed_ms = a;
			if (!m.pending) {
				m.wake_lb = e;
				m.armed_lb = a;
			} else {
				m.wake_lb = std::min(m.wake_lb, e);
			}
		}
		m.pending = true;
		m.expires = e;
	}
	int want_arm(int s) const { return wm[size_t(s)].shutdown ? -ESHUTDOWN : wm[size_t(s)].pending ? 1 : 0; }

	void w_mod(int s, uint64_t e) {
		int want = want_arm(s);
		expect_ret("kt_mod_timer", kt_mod_timer(&w[size_t(s)]->timer, e), want);
		if (want >= 0)
			model_arm(s, e);
	}
	void w_arm(int s, uint32_t d) {
		int want = want_arm(s);
		uint64_t e = ceil_ms(now_ns()) + d; // from the turn's instant, rounded up
		expect_ret("kt_timer_arm", kt_timer_arm(&w[size_t(s)]->timer, KT_MILLIS(d)), want);
		if (want >= 0)
			model_arm(s, e);
	}
	void w_add(int s, uint64_t e) {
		WModel &m = wm[size_t(s)];
		int want = m.shutdown ? -ESHUTDOWN : m.pending ? -EBUSY : 0;
		expect_ret("kt_add_timer", kt_add_timer(&w[size_t(s)]->timer, e), want);
		if (want == 0)
			model_arm(s, e);
	}
	void w_reduce(int s, uint64_t e) {
		WModel &m = wm[size_t(s)];
		int want = want_arm(s);
		expect_ret("kt_timer_reduce", kt_timer_reduce(&w[size_t(s)]->timer, e), want);
		if (want >= 0 && !(m.pending && e >= m.expires))
			model_arm(s, e);
	}
	void w_mod_pending(int s, uint64_t e) {
		WModel &m = wm[size_t(s)];
		int want = m.shutdown ? -ESHUTDOWN : m.pending ? 1 : 0;
		expect_ret("kt_mod_timer_pending", kt_mod_timer_pending(&w[size_t(s)]->timer, e), want);
		if (want == 1)
			model_arm(s, e);
	}
	void w_delete(int s) {
		expect_ret("kt_timer_delete", kt_timer_delete(&w[size_t(s)]->timer), wm[size_t(s)].pending ? 1 : 0);
		wm[size_t(s)].pending = false;
		wm[size_t(s)].gen++;
	}
	void w_shutdown(int s) {
		expect_ret("kt_timer_shutdown", kt_timer_shutdown(&w[size_t(s)]->timer), wm[size_t(s)].pending ? 1 : 0);
		wm[size_t(s)].pending = false;
		wm[size_t(s)].gen++;
		wm[size_t(s)].shutdown = true;
	}
	void w_setup(int s) {
		WModel &m = wm[size_t(s)];
		unsigned flags = wheel_flags();
		if (m.pending) { // refused, nothing changed
			expect_ret("kt_timer_setup (pending)", kt_timer_setup(&w[size_t(s)]->timer, base, &World::on_wheel, flags),
				   -EBUSY);
			return;
		}
		expect_ret("kt_timer_setup", kt_timer_setup(&w[size_t(s)]->timer, base, &World::on_wheel, flags), 0);
		m.shutdown = false;
		m.deferrable = (flags & KT_TIMER_DEFERRABLE) != 0;
		m.lazy = (flags & KT_TIMER_LAZY) != 0;
	}
	// One timer in five deferrable, one in three lazy (KT_TIMER_LAZY: pushed
	// later in place, requeued when its bucket comes due). A lazy timer is
	// held to the same model as a plain one: never early, and within the
	// bound of its last arm.
	unsigned wheel_flags() {
		unsigned flags = r(5) == 0 ? KT_TIMER_DEFERRABLE : 0;
		return flags | (r(3) == 0 ? KT_TIMER_LAZY : 0);
	}

	uint64_t wheel_delay() {
		switch (r(12)) {
		case 0:
			return 0;
		case 1: { // around the level boundaries
			kt_level_info info;
			kt_wheel_level_info(res, unsigned(r(KT_WHEEL_LEVELS)), &info);
			return info.min_delay_ms + r(3 * res) - std::min<uint64_t>(info.min_delay_ms, res);
		}
		case 2:
			return r(100000000); // up to ~28 hours
		case 3:
			if (r(4) == 0)
				return kt_wheel_reach_ms(res) + r(1000000000); // beyond the reach
			return r(20000);
		case 4:
		case 5:
			return r(4 * res);
		default:
			return r(3000);
		}
	}

	// ---- precise timers ----------------------------------------------------

	void model_start(int s, uint64_t e) {
		HModel &m = hm[size_t(s)];
		uint64_t a = now_ns();
		m.pending = true;
		m.expires = e;
		m.seq = hr_seq++;
		m.armed_turn = turn;
		if (clock == Clock::kAdvance) {
			// The paused clock stands on every precise deadline; one armed
			// for a time already due fires within one unit.
			m.exact = e > a;
			m.latest = m.exact ? e : a + unit_ns;
		} else {
			m.exact = false;
			m.latest = e; // due at the first gather at or after e
		}
	}
	void h_start(int s, uint64_t e) {
		expect_ret("kt_hrtimer_start", kt_hrtimer_start(&h[size_t(s)]->timer, e), hm[size_t(s)].pending ? 1 : 0);
		model_start(s, e);
	}
	void h_start_after(int s, uint64_t d) {
		uint64_t e = fresh_ns() + d;
		expect_ret("kt_hrtimer_start_after", kt_hrtimer_start_after(&h[size_t(s)]->timer, d),
			   hm[size_t(s)].pending ? 1 : 0);
		model_start(s, e);
	}
	void h_cancel(int s) {
		expect_ret("kt_hrtimer_cancel", kt_hrtimer_cancel(&h[size_t(s)]->timer), hm[size_t(s)].pending ? 1 : 0);
		hm[size_t(s)].pending = false;
	}
	uint64_t hr_deadline() {
		uint64_t now = now_ns();
		switch (r(10)) {
		case 0: // already due
			return now - std::min<uint64_t>(now, r(5 * kNs));
		case 1: // exactly now
			return now;
		case 2: { // the same deadline as another pending one: first in, first out
			int o = int(r(h.size()));
			if (hm[size_t(o)].pending && hm[size_t(o)].expires >= now)
				return hm[size_t(o)].expires;
			return now + r(1000) * 1000;
		}
		case 3:
			return now + r(3000) * kNs + r(kNs);
		case 4:
			return now + r(100000) * kNs;
		default: // sub-millisecond to a few units
			return now + r(4 * unit_ns) + 1;
		}
	}

	// ---- one-shot calls ----------------------------------------------------

	void call_make(int c) {
		CModel &m = calls[size_t(c)];
		if (m.pending)
			return;
		uint32_t d = uint32_t(r(3) == 0 ? wheel_delay() % 4000000000u : r(3000));
		uint64_t e = ceil_ms(now_ns()) + d;
		auto *arg = new CallArg{this, c, call_serial++};
		kt_call hd = kt_call_after(base, KT_MILLIS(d), &World::on_call, arg);
		if (kt_call_failed(hd)) {
			fail("kt_call_after failed");
			delete arg;
			return;
		}
		uint64_t a = now_ms();
		m = CModel{true, e, std::max(e, a) + kt_test::lateness_bound(res, a, e), turn, a, arg->serial, hd, arg};
	}
	void call_cancel(int c) {
		CModel &m = calls[size_t(c)];
		if (!m.pending)
			return;
		expect_ret("kt_call_cancel", kt_call_cancel(m.handle), 1);
		expect_ret("kt_call_pending (cancelled)", kt_call_pending(m.handle), 0);
		delete m.arg; // never called: ours to free
		m.arg = nullptr;
		m.pending = false;
		remember_stale(m.handle);
	}
	void remember_stale(kt_call hd) {
		if (stale.size() < 256)
			stale.push_back(hd);
		else
			stale[size_t(r(stale.size()))] = hd;
	}
	void cancel_stale() {
		if (stale.empty())
			return;
		kt_call hd = stale[size_t(r(stale.size()))];
		// Its node may carry a newer call by now: that one must survive.
		expect_ret("kt_call_pending (stale)", kt_call_pending(hd), 0);
		expect_ret("kt_call_cancel (stale)", kt_call_cancel(hd), 0);
	}

	// ---- cross-thread operations ------------------------------------------

	void push(int s, int kind, uint64_t arg, bool has_done, bool from_thread) {
		WNode *node = w[size_t(s)];
		uint64_t token = next_token++;
		DoneArg *d = has_done ? new DoneArg{this, token} : nullptr;
		kt_remote_done_fn fn = has_done ? &World::on_done : nullptr;
		int ret = 0;
		auto job = [&] {
			switch (kind) {
			case kOpMod:
				ret = kt_remote_mod(&node->timer, arg, fn, d);
				break;
			case kOpArm:
				ret = kt_remote_arm(&node->timer, KT_MILLIS(uint32_t(arg)), fn, d);
				break;
			default:
				ret = kt_remote_delete(&node->timer, fn, d);
				break;
			}
		};
		if (from_thread) {
			producer.run(job);
			n.from_thread++;
		} else {
			job();
		}
		expect_ret("kt_remote_*", ret, 0);
		if (ret != 0) {
			delete d;
			return;
		}
		queue.push_back(Op{token, s, node, kind, arg, has_done});
		if (queue.size() == 1 && waiting) { // empty to non-empty while waiting
			expected_wakes++;
			waiting = false;
		}
		if (wakes.load() != expected_wakes)
			fail("waker called " + std::to_string(wakes.load()) + " times, want " + std::to_string(expected_wakes));
	}
	void random_push(bool from_thread) {
		int s = int(r(w.size()));
		int kind = int(r(3));
		uint64_t arg = kind == kOpMod ? now_ms() + wheel_delay() : kind == kOpArm ? wheel_delay() % 100000000 : 0;
		push(s, kind, arg, r(4) != 0, from_thread);
	}

	// The owner-side result of an operation, applied to the model.
	int model_apply(const Op &op) {
		WModel &m = wm[size_t(op.slot)];
		if (w[size_t(op.slot)] != op.node) {
			fail("an operation for a freed timer was applied (forget missed it)");
			return 0;
		}
		n.applied++;
		switch (op.kind) {
		case kOpArm:
		case kOpMod: {
			int want = want_arm(op.slot);
			// A remote arm's delay counts from the turn's instant rounded up,
			// as kt_timer_arm(); no delay is the turn's own millisecond (due).
			uint64_t e = op.kind == kOpMod ? op.arg : op.arg ? ceil_ms(now_ns()) + op.arg : now_ms();
			if (want >= 0) {
				bool same = m.pending && m.expires == e; // places nothing
				model_arm(op.slot, e);
				if (e <= now_ms() && !same) {
					m.due_remote_turn = turn;
					m.due_remote_gen = m.gen;
				}
			}
			return want;
		}
		default: {
			int want = m.pending ? 1 : 0;
			m.pending = false;
			m.gen++;
			return want;
		}
		}
	}
	// Operations without a done callback apply silently; catch up the model
	// to the point the library has reached (before @token, or all).
	void flush_taken(uint64_t token) {
		while (!taken.empty() && taken.front().token != token) {
			if (taken.front().has_done) {
				fail("done callback for token " + std::to_string(taken.front().token) +
				     " skipped (out of order or missing)");
				taken.pop_front();
				continue;
			}
			model_apply(taken.front());
			taken.pop_front();
		}
	}
	void forget(int s) {
		WNode *node = w[size_t(s)];
		size_t want = 0;
		std::deque<uint64_t> cancels;
		for (auto *q : {&taken, &queue}) { // the taken batch first, then the queue
			for (auto it = q->begin(); it != q->end();) {
				if (it->node == node) {
					want++;
					if (it->has_done)
						cancels.push_back(it->token);
					it = q->erase(it);
				} else {
					++it;
				}
			}
		}
		if (!expect_cancel.empty())
			fail("nested forget");
		expect_cancel = cancels;
		size_t got = kt_remote_forget(&node->timer);
		if (got != want)
			fail("kt_remote_forget dropped " + std::to_string(got) + ", want " + std::to_string(want));
		if (!expect_cancel.empty())
			fail("kt_remote_forget did not report every dropped operation");
		expect_cancel.clear();
		n.cancelled += want;
	}

	static void on_done(kt_timer *t, int result, void *arg) {
		auto *d = static_cast<DoneArg *>(arg);
		World *self = d->w;
		uint64_t token = d->token;
		delete d; // what done_arg owns is reclaimed here, also for -ECANCELED
		self->done(t, result, token);
	}
	void done(kt_timer *t, int result, uint64_t token) {
		if (result == -ECANCELED) {
			if (expect_cancel.empty() || expect_cancel.front() != token)
				fail("unexpected -ECANCELED for token " + std::to_string(token));
			else
				expect_cancel.pop_front();
			return; // the timer may be gone: only the argument is ours
		}
		depth++;
		flush_taken(token);
		if (taken.empty()) {
			fail("done callback for token " + std::to_string(token) + " that was not taken");
			depth--;
			return;
		}
		Op op = taken.front();
		taken.pop_front();
		if (t != &op.node->timer)
			fail("done callback got another timer");
		int want = model_apply(op);
		if (result != want)
			fail("remote op " + std::to_string(op.kind) + " on slot " + std::to_string(op.slot) + " reported " +
			     std::to_string(result) + ", want " + std::to_string(want));
		if (r(3) == 0)
			reenter(-1, -1);
		if (r(16) == 0 && w[size_t(op.slot)] == op.node)
			free_wheel(op.slot); // the documented protocol, from the done callback
		depth--;
	}

	// ---- callbacks -----------------------------------------------------------

	static void on_wheel(kt_timer *t) {
		WNode *p = kt_container_of(t, WNode, timer);
		p->w->wheel_fired(p->slot, p);
	}
	// Every timer callback of a kt_base_run(): the run limit's promises.
	void limit_check(const char *what) {
		if (!in_run)
			return;
		if (lim_calls && run_cbs >= lim_calls)
			fail(std::string(what) + " callback " + std::to_string(run_cbs + 1) + " of a run limited to " +
			     std::to_string(lim_calls));
		if (lim_us && run_cbs > 0 && fake_now * kNs >= now_ns() + uint64_t(lim_us) * 1000)
			fail(std::string(what) + " callback started " + std::to_string(fake_now * kNs - now_ns()) +
			     " ns into a run limited to " + std::to_string(lim_us) + " us");
		run_cbs++;
		// A slow callback (the time limit's case): the clock moves on.
		if (clock == Clock::kRun && lim_us && r(3) == 0)
			fake_now += r(3);
	}
	// The left-overs of a stopped run fire before anything not due then.
	void order_check(int s, bool wheel_timer, bool due_later) {
		if (!in_run || leftover.empty())
			return;
		if (wheel_timer && leftover.count({s, wm[size_t(s)].gen}))
			if (new_fired)
				fail("left-over wheel timer " + std::to_string(s) + " (expires " +
				     std::to_string(wm[size_t(s)].expires) + ", left at " + std::to_string(leftover_now) +
				     ") fired after a timer that was not due then: " + new_what);
		if (due_later)
			for (const auto &lo : leftover)
				if (wm[size_t(lo.first)].pending && wm[size_t(lo.first)].gen == lo.second &&
				    !(wheel_timer && lo.first == s) && !new_fired) {
					new_fired = true;
					new_what = std::string(wheel_timer ? "wheel " : s < 0 ? "precise/call " : "") +
						   std::to_string(s) + " at callback " + std::to_string(run_cbs);
				}
	}
	void wheel_fired(int s, WNode *p) {
		depth++;
		flush_taken(0);
		WModel &m = wm[size_t(s)];
		uint64_t at = now_ms();
		n.wheel_fired++;
		limit_check("wheel");
		if (m.pending)
			order_check(s, true, m.expires > leftover_now && m.armed_turn < leftover_turn && !m.lazy);
		if (w[size_t(s)] != p)
			fail("a freed wheel timer fired");
		else if (!m.pending)
			fail("wheel timer " + std::to_string(s) + " fired while not pending (doubled or deleted)");
		else if (at < m.expires)
			fail("wheel timer " + std::to_string(s) + " fired early: now " + std::to_string(at) + " expires " +
			     std::to_string(m.expires));
		else if (clock == Clock::kAdvance && at > m.latest)
			fail("wheel timer " + std::to_string(s) + " fired late: now " + std::to_string(at) + " latest " +
			     std::to_string(m.latest));
		if (kt_timer_pending(&p->timer))
			fail("wheel timer still pending in its callback");
		m.pending = false;
		switch (r(10)) {
		case 0:
			w_mod(s, now_ms() + wheel_delay()); // re-arm itself
			break;
		case 1:
			free_wheel(s); // free itself (p is gone after this)
			break;
		case 2:
		case 3:
		case 4:
			reenter(s, -1);
			break;
		default:
			break;
		}
		if (r(16) == 0)
			check_inside();
		depth--;
	}

	static void on_hr(kt_hrtimer *t) {
		HNode *p = kt_container_of(t, HNode, timer);
		p->w->hr_fired(p->slot, p);
	}
	void hr_fired(int s, HNode *p) {
		depth++;
		flush_taken(0);
		HModel &m = hm[size_t(s)];
		uint64_t at = now_ns();
		n.hr_fired++;
		limit_check("precise");
		if (m.pending)
			order_check(-2, false, m.expires > leftover_now_ns && m.armed_turn < leftover_turn);
		if (h[size_t(s)] != p)
			fail("a freed precise timer fired");
		else if (!m.pending)
			fail("precise timer " + std::to_string(s) + " fired while not pending (doubled or cancelled)");
		else if (at < m.expires)
			fail("precise timer " + std::to_string(s) + " fired early: now " + std::to_string(at) + " expires " +
			     std::to_string(m.expires));
		else if (clock == Clock::kAdvance && (m.exact ? at != m.expires : at > m.latest))
			fail("precise timer " + std::to_string(s) + " fired at " + std::to_string(at) + ", want " +
			     (m.exact ? "exactly " + std::to_string(m.expires) : "by " + std::to_string(m.latest)));
		if (at == last_hr_at && m.expires == last_hr_expires && m.seq < last_hr_seq)
			fail("equal precise deadlines fired out of start order");
		last_hr_at = at;
		last_hr_expires = m.expires;
		last_hr_seq = m.seq;
		if (kt_hrtimer_pending(&p->timer))
			fail("precise timer still pending in its callback");
		m.pending = false;
		switch (r(10)) {
		case 0: // a pacer: the next step, sometimes already due
			h_start(s, r(4) == 0 ? now_ns() : m.expires + r(3 * unit_ns) + 1);
			break;
		case 1:
			free_hr(s);
			break;
		case 2:
		case 3:
		case 4:
			reenter(-1, s);
			break;
		default:
			break;
		}
		if (r(16) == 0)
			check_inside();
		depth--;
	}

	static void on_call(void *arg) {
		auto *a = static_cast<CallArg *>(arg);
		World *self = a->w;
		int slot = a->slot;
		uint64_t serial = a->serial;
		delete a;
		self->call_fired(slot, serial);
	}
	void call_fired(int c, uint64_t serial) {
		depth++;
		flush_taken(0);
		CModel &m = calls[size_t(c)];
		uint64_t at = now_ms();
		n.calls_fired++;
		limit_check("call");
		if (m.pending && m.serial == serial)
			order_check(-1, false, m.expires > leftover_now && m.armed_turn < leftover_turn);
		if (!m.pending || m.serial != serial)
			fail("call " + std::to_string(serial) + " ran while not pending (doubled or cancelled)");
		else if (at < m.expires)
			fail("call fired early: now " + std::to_string(at) + " expires " + std::to_string(m.expires));
		else if (clock == Clock::kAdvance && at > m.latest)
			fail("call fired late: now " + std::to_string(at) + " latest " + std::to_string(m.latest));
		if (m.pending && m.serial == serial) {
			if (kt_call_pending(m.handle))
				fail("call still pending in its function");
			if (kt_call_cancel(m.handle) != 0)
				fail("a running call could be cancelled");
			m.pending = false;
			m.arg = nullptr; // freed above
			remember_stale(m.handle);
		}
		if (r(3) == 0)
			call_make(c); // a call that schedules another (may reuse its node)
		if (r(3) == 0)
			reenter(-1, -1);
		depth--;
	}

	// Re-entrant operations from any callback. @self_w/@self_h: the firing
	// timer (already idle) - operations on it are fine, it is not freed here.
	void reenter(int self_w, int self_h) {
		int s = int(r(w.size()));
		int hs = int(r(h.size()));
		if (r(32) == 0)
			expect_ret("kt_base_set_run_limit (inside a callback)", kt_base_set_run_limit(base, 5, 0), -EBUSY);
		switch (r(12)) {
		case 0:
			w_mod(s, now_ms() + wheel_delay());
			break;
		case 1:
			w_arm(s, uint32_t(r(3000)));
			break;
		case 2:
			w_delete(s);
			break;
		case 3:
			h_start(hs, hr_deadline());
			break;
		case 4:
			h_cancel(hs);
			break;
		case 5:
			if (s != self_w)
				free_wheel(s);
			break;
		case 6:
			if (hs != self_h)
				free_hr(hs);
			break;
		case 7:
			call_make(int(r(calls.size())));
			break;
		case 8:
			call_cancel(int(r(calls.size())));
			break;
		case 9:
			random_push(false); // the owner queues for a later turn
			break;
		case 10:
			forget(s);
			break;
		default:
			w_reduce(s, now_ms() + wheel_delay());
			break;
		}
	}

	// ---- checks ----------------------------------------------------------------

	void check_inside() {
		int c = kt_base_check(base);
		if (c != KT_CHECK_OK)
			fail(std::string("kt_base_check inside a callback: ") + kt_base_check_str(c));
	}

	size_t model_pending() const {
		size_t k = 0;
		for (const WModel &m : wm)
			k += m.pending;
		for (const HModel &m : hm)
			k += m.pending;
		for (const CModel &m : calls)
			k += m.pending;
		return k;
	}

	// The earliest time by which something non-deferrable must fire, in ns;
	// UINT64_MAX if nothing non-deferrable is pending. Wheel timers and
	// calls by their latest allowed time, precise ones by their deadline
	// (kt_base_next_timeout() rounds those up to the millisecond).
	uint64_t must_wake_by_ns(uint64_t *precise_min) const {
		uint64_t by = UINT64_MAX, pmin = UINT64_MAX;
		for (const WModel &m : wm)
			if (m.pending && !m.deferrable)
				by = std::min(by, m.latest * kNs);
		for (const CModel &m : calls)
			if (m.pending)
				by = std::min(by, m.latest * kNs);
		for (const HModel &m : hm)
			if (m.pending)
				pmin = std::min(pmin, m.expires);
		if (precise_min)
			*precise_min = pmin;
		return std::min(by, pmin);
	}

	// The earliest time anything non-deferrable can be due, in ns: no wait
	// plan may end before it (deferrable timers never wake the worker, and
	// no bucket is due before its timers). A timer beyond the wheel's reach
	// waits in a far bucket, due at least half the reach after it was armed.
	uint64_t cannot_wake_before_ns() const {
		uint64_t lb = UINT64_MAX, half_reach = kt_wheel_reach_ms(res) / 2;
		for (const WModel &m : wm)
			if (m.pending && !m.deferrable)
				lb = std::min(lb, m.lazy ? std::min(m.wake_lb, m.armed_lb + half_reach) * kNs
							 : std::min(m.expires, m.armed_ms + half_reach) * kNs);
		for (const CModel &m : calls)
			if (m.pending)
				lb = std::min(lb, std::min(m.expires, m.armed_ms + half_reach) * kNs);
		for (const HModel &m : hm)
			if (m.pending)
				lb = std::min(lb, m.expires);
		return lb;
	}

	void check_between() {
		int c = kt_base_check(base);
		if (c != KT_CHECK_OK)
			fail(std::string("kt_base_check: ") + kt_base_check_str(c));
		size_t want = model_pending();
		if (kt_base_pending_count(base) != want)
			fail("kt_base_pending_count " + std::to_string(kt_base_pending_count(base)) + ", model " +
			     std::to_string(want));
		if (kt_base_remote_queued(base) != queue.size())
			fail("kt_base_remote_queued " + std::to_string(kt_base_remote_queued(base)) + ", model " +
			     std::to_string(queue.size()));
		check_next_timeout();
	}

	void check_next_timeout() {
		uint64_t pmin;
		uint64_t by = must_wake_by_ns(&pmin);
		int64_t t = kt_base_next_timeout(base);
		uint64_t now = now_ms();
		if (by != UINT64_MAX) {
			// Precise deadlines count rounded up to the millisecond here.
			uint64_t by_ms = std::min(by == pmin ? ceil_ms(by) : by / kNs, ceil_ms(pmin));
			if (t < 0)
				fail("kt_base_next_timeout says nothing is pending; model: due by " + std::to_string(by_ms));
			else if (now + uint64_t(t) > std::max(by_ms, now))
				fail("kt_base_next_timeout " + std::to_string(t) + " sleeps past " + std::to_string(by_ms) +
				     " (now " + std::to_string(now) + ")");
			else if (!gathered && now + uint64_t(t) < cannot_wake_before_ns() / kNs)
				fail("kt_base_next_timeout " + std::to_string(t) + " wakes before anything non-deferrable is due (" +
				     std::to_string(cannot_wake_before_ns()) + " ns)");
		} else if ((model_pending() == 0 || !gathered) && t != -1) {
			// Deferrable timers never ask for a wake-up (a batch gathered
			// by kt_base_update_time() is due now: 0 is right then).
			fail("kt_base_next_timeout " + std::to_string(t) + " with nothing non-deferrable pending");
		}
	}

	void check_plan() {
		uint64_t pmin;
		uint64_t by = must_wake_by_ns(&pmin);
		kt_wait_plan p = kt_base_prepare_wait(base);
		if (!queue.empty()) {
			if (p.kind != KT_WAIT_IMMEDIATE)
				fail("the plan ignores queued remote operations");
			return;
		}
		if (gathered && p.kind == KT_WAIT_IMMEDIATE)
			return; // a gathered batch, or a stopped run's left-overs: due now
		waiting = true; // producers must wake the owner from now on
		if (by != UINT64_MAX) {
			if (p.kind != KT_WAIT_UNTIL)
				fail("the plan does not wait for the pending deadline " + std::to_string(by));
			else if (p.deadline_ns > std::max(by, now_ns()))
				fail("the plan sleeps until " + std::to_string(p.deadline_ns) + " past " + std::to_string(by));
			else if (p.precise && p.deadline_ns != pmin)
				fail("a precise plan is not the earliest precise deadline");
			else if (!gathered && p.deadline_ns < cannot_wake_before_ns() && p.deadline_ns > now_ns())
				fail("the plan ends at " + std::to_string(p.deadline_ns) + ", before anything non-deferrable is due (" +
				     std::to_string(cannot_wake_before_ns()) + ")");
		} else if ((model_pending() == 0 || !gathered) && p.kind != KT_WAIT_INDEFINITE) {
			fail("the plan waits with nothing non-deferrable pending");
		}
	}

	// After a turn: whatever had to fire by now did.
	void check_nothing_lost(bool run_turn) {
		uint64_t ms = now_ms(), ns = now_ns();
		for (size_t s = 0; s < wm.size(); s++) {
			const WModel &m = wm[s];
			if (m.pending && (!run_turn || m.armed_turn < turn) && m.latest <= ms)
				fail("wheel timer " + std::to_string(s) + " lost: expires " + std::to_string(m.expires) +
				     " latest " + std::to_string(m.latest) + (m.deferrable ? " (deferrable)" : ""));
		}
		for (size_t c = 0; c < calls.size(); c++) {
			const CModel &m = calls[c];
			if (m.pending && (!run_turn || m.armed_turn < turn) && m.latest <= ms)
				fail("call " + std::to_string(m.serial) + " lost: latest " + std::to_string(m.latest));
		}
		for (size_t s = 0; s < hm.size(); s++) {
			const HModel &m = hm[s];
			if (m.pending && (!run_turn || m.armed_turn < turn) && m.latest <= ns)
				fail("precise timer " + std::to_string(s) + " lost: expires " + std::to_string(m.expires) +
				     " latest " + std::to_string(m.latest));
		}
	}

	void spot_check() {
		int s = int(r(w.size()));
		const WModel &m = wm[size_t(s)];
		const kt_timer *t = &w[size_t(s)]->timer;
		if (kt_timer_pending(t) != int(m.pending))
			fail("kt_timer_pending disagrees with the model for slot " + std::to_string(s));
		if (m.pending) {
			uint64_t now = now_ms();
			if (kt_timer_expires(t) != m.expires)
				fail("kt_timer_expires " + std::to_string(kt_timer_expires(t)));
			if (kt_timer_remaining(t) != (m.expires > now ? m.expires - now : 0))
				fail("kt_timer_remaining " + std::to_string(kt_timer_remaining(t)));
		}
		int hs = int(r(h.size()));
		if (kt_hrtimer_pending(&h[size_t(hs)]->timer) != int(hm[size_t(hs)].pending))
			fail("kt_hrtimer_pending disagrees with the model");
		if (hm[size_t(hs)].pending && kt_hrtimer_expires(&h[size_t(hs)]->timer) != hm[size_t(hs)].expires)
			fail("kt_hrtimer_expires disagrees with the model");
		const CModel &cm = calls[size_t(r(calls.size()))];
		if (cm.handle.kt__node && kt_call_pending(cm.handle) != int(cm.pending))
			fail("kt_call_pending disagrees with the model");
	}

	void check_dump() {
		if (!devnull)
			return;
		int listed = kt_base_dump(base, devnull);
		if (listed != int(model_pending()))
			fail("kt_base_dump listed " + std::to_string(listed) + ", model " + std::to_string(model_pending()));
	}

	// ---- turns -----------------------------------------------------------------

	size_t run_turn() {
		turn++;
		size_t k = std::min<size_t>(queue.size(), KT_REMOTE_BATCH);
		for (size_t i = 0; i < k; i++) {
			taken.push_back(queue.front());
			queue.pop_front();
		}
		waiting = false; // the take ends the owner's waiting
		in_run = true;
		run_cbs = 0;
		new_fired = false;
		size_t fired = kt_base_run(base);
		in_run = false;
		kt_base_stats st{};
		expect_ret("kt_base_get_stats", kt_base_get_stats(base, &st), 0);
		bool stopped = st.limited_runs != stopped_runs;
		stopped_runs = st.limited_runs;
		if (fired != run_cbs)
			fail("kt_base_run returned " + std::to_string(fired) + ", callbacks ran " + std::to_string(run_cbs));
		if (stopped && !lim_calls && !lim_us)
			fail("a run without a limit stopped");
		flush_taken(0);
		leftover.clear();
		// A run that stopped at its limit leaves due timers for the next:
		// they count as gathered (the wait is immediate), nothing is lost
		// yet, and the next run fires them first.
		gathered = stopped;
		if (stopped) {
			leftover_now = now_ms();
			leftover_now_ns = now_ns();
			leftover_turn = turn;
			for (size_t s = 0; s < wm.size(); s++)
				if (wm[s].pending && wm[s].armed_turn < turn && wm[s].latest <= leftover_now)
					leftover.insert({int(s), wm[s].gen});
		} else {
			check_nothing_lost(clock == Clock::kRun);
			for (size_t s = 0; s < wm.size(); s++)
				if (wm[s].pending && wm[s].due_remote_turn == turn && wm[s].due_remote_gen == wm[s].gen)
					fail("wheel timer " + std::to_string(s) + ": a remote arm for a due time (" +
					     std::to_string(wm[s].expires) + ", now " + std::to_string(now_ms()) +
					     ") did not fire in the turn that applied it");
		}
		return fired;
	}

	void advance_turn(uint64_t by) {
		turn++;
		leftover.clear(); // kt_base_advance() is not limited: it fires them first
		gathered = false;
		long fired = kt_base_advance(base, KT_MILLIS(by));
		if (fired < 0)
			fail("kt_base_advance returned " + std::to_string(fired));
		check_nothing_lost(false);
	}

	uint64_t step_ms() {
		switch (r(16)) {
		case 0:
		case 1:
		case 2: { // sleep as the plan says (the worker's normal wait)
			int64_t t = kt_base_next_timeout(base);
			return t >= 0 ? uint64_t(t) : r(1000);
		}
		case 3:
			return r(3000);
		case 4:
			return r(64) == 0 ? r(200000000) : r(20000); // rarely days of idle
		case 5:
			return 0;
		default:
			return r(4 * res);
		}
	}

	void update_time() {
		expect_ret("kt_base_update_time", kt_base_update_time(base), 0);
		gathered = true;
	}

	// A burst of "I/O": what handle_io() does between the update and the run.
	void io(int k) {
		for (int i = 0; i < k && !failed; i++)
			one_op();
	}

	void set_limit() {
		static const uint32_t calls_choice[] = {0, 0, 1, 2, 3, 8, 64};
		lim_calls = calls_choice[r(7)];
		lim_us = clock == Clock::kRun && r(3) == 0 ? uint32_t(1 + r(3000)) : 0;
		expect_ret("kt_base_set_run_limit", kt_base_set_run_limit(base, lim_calls, lim_us), 0);
	}

	void turn_once() {
		in_turn = true;
		if (r(16) == 0)
			set_limit();
		if (r(2) == 0)
			check_plan();
		uint64_t step = step_ms();
		if (clock == Clock::kRun) {
			fake_now += step;
			switch (r(6)) {
			case 0: // the old order: run only
				break;
			case 1: // update twice (two waits without a run)
				update_time();
				io(int(r(4)));
				fake_now += r(2 * res);
				update_time();
				io(int(r(4)));
				break;
			default: // nginx's order: update, I/O (the run may see a later clock)
				update_time();
				io(int(r(8)));
				if (!failed)
					check_between();
				if (r(2) == 0)
					fake_now += r(3 * res);
				break;
			}
			run_turn();
		} else {
			switch (r(6)) {
			case 0: // apply remote operations, fire what is already due
				run_turn();
				break;
			case 1: // the README turn on a paused clock
				update_time();
				io(int(r(6)));
				run_turn();
				advance_turn(step);
				break;
			default:
				if (r(4) == 0)
					update_time(); // the clock does not move
				advance_turn(step);
				if (r(3) == 0)
					run_turn();
				break;
			}
		}
		n.turns++;
		in_turn = false;
		if (!failed)
			check_between();
	}

	// One operation of the test thread (or of the I/O phase of a turn).
	void one_op() {
		int s = int(r(w.size()));
		int hs = int(r(h.size()));
		int c = int(r(calls.size()));
		WModel &m = wm[size_t(s)];
		n.ops++;
		switch (r(40)) {
		case 0:
		case 1:
		case 2:
		case 3:
			w_mod(s, now_ms() + wheel_delay());
			break;
		case 4:
		case 5:
			w_arm(s, uint32_t(wheel_delay() % 4000000000u));
			break;
		case 6:
		case 7: // push back a little: the keep-alive case (also gathered ones)
			if (m.pending)
				w_mod(s, m.expires + r(50));
			else
				w_arm(s, uint32_t(r(5000)));
			break;
		case 8:
		case 9:
			w_delete(s);
			break;
		case 10:
			w_reduce(s, now_ms() + wheel_delay());
			break;
		case 11:
			w_mod_pending(s, now_ms() + wheel_delay());
			break;
		case 12:
			w_add(s, now_ms() + wheel_delay());
			break;
		case 13:
			if (r(4) == 0)
				w_shutdown(s);
			else
				w_setup(s);
			break;
		case 14:
			free_wheel(s);
			break;
		case 15:
		case 16:
		case 17:
			h_start(hs, hr_deadline());
			break;
		case 18:
			h_start_after(hs, r(3) == 0 ? 0 : r(8 * unit_ns));
			break;
		case 19:
			h_cancel(hs);
			break;
		case 20:
			if (r(2) == 0)
				free_hr(hs);
			else if (hm[size_t(hs)].pending) // refused, nothing changed
				expect_ret("kt_hrtimer_setup (pending)", kt_hrtimer_setup(&h[size_t(hs)]->timer, base, &World::on_hr),
					   -EBUSY);
			break;
		case 21:
		case 22:
			call_make(c);
			break;
		case 23:
			call_cancel(c);
			break;
		case 24:
			cancel_stale();
			break;
		case 25:
		case 26:
		case 27:
			random_push(false);
			break;
		case 28:
		case 29:
			random_push(true);
			break;
		case 30:
			if (r(16) == 0) // a burst past one turn's batch
				for (int i = 0; i < int(KT_REMOTE_BATCH) + 40; i++)
					random_push(false);
			else
				forget(s);
			break;
		case 31:
		case 32:
			spot_check();
			break;
		case 33:
			if (r(64) == 0)
				check_dump();
			else
				check_next_timeout();
			break;
		default:
			if (depth == 0 && !in_turn)
				turn_once();
			break;
		}
	}

	void run(uint64_t nops) {
		for (uint64_t i = 0; i < nops && !failed; i++)
			one_op();
		if (!failed)
			check_between();
		// Drain: everything pending fires within bounded turns (deferrable
		// ones too: the turns happen anyway), nothing is left behind.
		for (int i = 0; i < 200 + (lim_calls || lim_us ? 4000 : 0) && !failed && (model_pending() > 0 || !queue.empty());
		     i++) {
			if (clock == Clock::kRun) {
				fake_now += 3600 * 1000;
				run_turn();
			} else {
				run_turn();
				advance_turn(3600 * 1000);
			}
		}
		if (!failed)
			check_between();
		// Leave work for kt_base_free(): pending timers of every kind and
		// queued operations, which it must report -ECANCELED (kt_base_free()'s contract).
		for (int i = 0; i < 64 && !failed; i++) {
			w_arm(int(r(w.size())), uint32_t(r(100000)));
			h_start(int(r(h.size())), hr_deadline());
			call_make(int(r(calls.size())));
			random_push(r(2) == 0);
		}
		n.wakes = wakes.load();
	}
};

uint64_t seed_or(uint64_t dflt) {
	const char *s = getenv("KT_DIFF_SEED");
	return s ? strtoull(s, nullptr, 0) : dflt;
}

void report(const World &w) {
	::testing::Test::RecordProperty("ops", std::to_string(w.n.ops));
	printf("  %s res %u: %llu ops, %llu turns; fired %llu wheel, %llu precise, %llu calls; %llu remote applied "
	       "(%llu from a second thread), %llu forgotten, %llu wakes, %llu frees\n",
	       w.clock == Clock::kAdvance ? "advance" : "run", w.res, (unsigned long long)w.n.ops,
	       (unsigned long long)w.n.turns, (unsigned long long)w.n.wheel_fired, (unsigned long long)w.n.hr_fired,
	       (unsigned long long)w.n.calls_fired, (unsigned long long)w.n.applied, (unsigned long long)w.n.from_thread,
	       (unsigned long long)w.n.cancelled, (unsigned long long)w.n.wakes, (unsigned long long)w.n.freed);
}

} // namespace mixed

class DifferentialMixed : public ::testing::TestWithParam<std::tuple<unsigned, mixed::Clock>> {};

TEST_P(DifferentialMixed, WheelPreciseCrossThreadAndCalls) {
	unsigned res = std::get<0>(GetParam());
	mixed::Clock clock = std::get<1>(GetParam());
	uint64_t seed = mixed::seed_or(1000 + res * 2 + (clock == mixed::Clock::kRun));
	SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun with KT_DIFF_SEED=" + std::to_string(seed) + ")");
	uint64_t fired;
	{
		mixed::World w(res, clock, seed, 384, 48, 64);
		w.run(ops(res == 16 ? 200000 : 60000));
		EXPECT_FALSE(w.failed);
		mixed::report(w);
		if (w.failed)
			return; // the first failure says it all
		// The stream really exercises what it claims to.
		EXPECT_GT(w.n.wheel_fired, ops(1000));
		EXPECT_GT(w.n.hr_fired, ops(300));
		EXPECT_GT(w.n.calls_fired, ops(100));
		EXPECT_GT(w.n.applied, ops(1000));
		EXPECT_GT(w.n.from_thread, ops(1000));
		EXPECT_GT(w.n.cancelled, 0u);
		EXPECT_GT(w.n.wakes, 0u);
		fired = w.n.wheel_fired;
	}
	EXPECT_GT(fired, 0u);
}

INSTANTIATE_TEST_SUITE_P(EveryResolutionBothClocks, DifferentialMixed,
			 ::testing::Combine(::testing::Values(1u, 4u, 16u),
					    ::testing::Values(mixed::Clock::kAdvance, mixed::Clock::kRun)),
			 [](const ::testing::TestParamInfo<std::tuple<unsigned, mixed::Clock>> &i) {
				 return std::string(std::get<1>(i.param) == mixed::Clock::kAdvance ? "Advance" : "Run") +
					std::to_string(std::get<0>(i.param)) + "ms";
			 });
