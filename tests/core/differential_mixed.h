// tests/core/differential_mixed.h: the world of the mixed differential run
// (differential_mixed_test.cc): a base with wheel, precise, cross-thread and
// one-shot timers beside a model of each, written from the documented
// guarantees; the operations, each a library call and its model side by
// side; a real second thread that queues remote operations. The world's
// callbacks, checks and turns are defined in differential_mixed_test.cc.
#ifndef KTIMER_TESTS_CORE_DIFFERENTIAL_MIXED_H
#define KTIMER_TESTS_CORE_DIFFERENTIAL_MIXED_H

#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/harness.h"

namespace mixed {

constexpr uint64_t kNs = 1000000;
inline uint64_t ceil_ms(uint64_t ns) { return ns / kNs + (ns % kNs != 0); }

enum class Clock { kAdvance, kRun };
inline void PrintTo(Clock c, std::ostream *os) { *os << (c == Clock::kAdvance ? "advance" : "run"); }

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

	// ---- callbacks (differential_mixed_test.cc)
	static void on_wheel(kt_timer *t);
	void limit_check(const char *what);
	void order_check(int s, bool wheel_timer, bool due_later);
	void wheel_fired(int s, WNode *p);
	static void on_hr(kt_hrtimer *t);
	void hr_fired(int s, HNode *p);
	static void on_call(void *arg);
	void call_fired(int c, uint64_t serial);
	void reenter(int self_w, int self_h);

	// ---- checks (differential_mixed_test.cc)
	void check_inside();
	size_t model_pending() const;
	uint64_t must_wake_by_ns(uint64_t *precise_min) const;
	uint64_t cannot_wake_before_ns() const;
	void check_between();
	void check_next_timeout();
	void check_plan();
	void check_nothing_lost(bool run_turn);
	void spot_check();
	void check_dump();

	// ---- turns (differential_mixed_test.cc)
	size_t run_turn();
	void advance_turn(uint64_t by);
	uint64_t step_ms();
	void update_time();
	void io(int k);
	void set_limit();
	void turn_once();
	void one_op();
	void run(uint64_t nops);
};

} // namespace mixed

#endif
