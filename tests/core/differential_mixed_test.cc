// tests/core/differential_mixed_test.cc: the mixed differential run, one
// randomized run that mixes every kind of timer a worker has, driven the way
// a worker drives them, against a model written from the documented
// guarantees (not from the library's code; the world and its model are
// tests/core/differential_mixed.h):
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
//   let a little more time pass, run the timers), other orders (run only,
//   update twice), on a manual clock (kt_base_advance(), precise deadlines
//   exact) or on a fake monotonic clock (kt_base_run());
//
// and checks, as it goes: never early; bounded lateness (a wheel timer or
// call by one granularity of the level it lands on; a precise timer exact
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
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/core/differential.h"
#include "tests/core/differential_mixed.h"

using kt_diff::ops;

namespace mixed {

// ---- callbacks -----------------------------------------------------------

void World::on_wheel(kt_timer *t) {
	WNode *p = kt_container_of(t, WNode, timer);
	p->w->wheel_fired(p->slot, p);
}

// Every timer callback of a kt_base_run(): the run limit's promises.
void World::limit_check(const char *what) {
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
void World::order_check(int s, bool wheel_timer, bool due_later) {
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

void World::wheel_fired(int s, WNode *p) {
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

void World::on_hr(kt_hrtimer *t) {
	HNode *p = kt_container_of(t, HNode, timer);
	p->w->hr_fired(p->slot, p);
}

void World::hr_fired(int s, HNode *p) {
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

void World::on_call(void *arg) {
	auto *a = static_cast<CallArg *>(arg);
	World *self = a->w;
	int slot = a->slot;
	uint64_t serial = a->serial;
	delete a;
	self->call_fired(slot, serial);
}

void World::call_fired(int c, uint64_t serial) {
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
void World::reenter(int self_w, int self_h) {
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

void World::check_inside() {
	int c = kt_base_check(base);
	if (c != KT_CHECK_OK)
		fail(std::string("kt_base_check inside a callback: ") + kt_base_check_str(c));
}

size_t World::model_pending() const {
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
uint64_t World::must_wake_by_ns(uint64_t *precise_min) const {
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
uint64_t World::cannot_wake_before_ns() const {
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

void World::check_between() {
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

void World::check_next_timeout() {
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

void World::check_plan() {
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
void World::check_nothing_lost(bool run_turn) {
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

void World::spot_check() {
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

void World::check_dump() {
	if (!devnull)
		return;
	int listed = kt_base_dump(base, devnull);
	if (listed != int(model_pending()))
		fail("kt_base_dump listed " + std::to_string(listed) + ", model " + std::to_string(model_pending()));
}

// ---- turns -----------------------------------------------------------------

size_t World::run_turn() {
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

void World::advance_turn(uint64_t by) {
	turn++;
	leftover.clear(); // kt_base_advance() is not limited: it fires them first
	gathered = false;
	long fired = kt_base_advance(base, KT_MILLIS(by));
	if (fired < 0)
		fail("kt_base_advance returned " + std::to_string(fired));
	check_nothing_lost(false);
}

uint64_t World::step_ms() {
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

void World::update_time() {
	expect_ret("kt_base_update_time", kt_base_update_time(base), 0);
	gathered = true;
}

// A burst of "I/O": what handle_io() does between the update and the run.
void World::io(int k) {
	for (int i = 0; i < k && !failed; i++)
		one_op();
}

void World::set_limit() {
	static const uint32_t calls_choice[] = {0, 0, 1, 2, 3, 8, 64};
	lim_calls = calls_choice[r(7)];
	lim_us = clock == Clock::kRun && r(3) == 0 ? uint32_t(1 + r(3000)) : 0;
	expect_ret("kt_base_set_run_limit", kt_base_set_run_limit(base, lim_calls, lim_us), 0);
}

void World::turn_once() {
	in_turn = true;
	if (r(16) == 0)
		set_limit();
	if (r(2) == 0)
		check_plan();
	uint64_t step = step_ms();
	if (clock == Clock::kRun) {
		fake_now += step;
		switch (r(6)) {
		case 0: // run only, no update first
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
void World::one_op() {
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

void World::run(uint64_t nops) {
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
	uint64_t seed = kt_diff::seed_from_env(1000 + res * 2 + (clock == mixed::Clock::kRun));
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
