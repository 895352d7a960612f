// Test helpers: bases on a clock the test controls, and timers that log.
#ifndef KTIMER_TESTS_SUPPORT_HARNESS_H
#define KTIMER_TESTS_SUPPORT_HARNESS_H

#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "lib/testing/time_source.h"

namespace kt_test {

// kt_base_check() by name: a failure says which invariant broke, e.g.
// EXPECT_TRUE(CheckOk(b)) -> "kt_base_check: -7 (a timer's bucket is due
// before the timer (it would fire early))".
inline ::testing::AssertionResult CheckOk(const kt_base *b) {
	int r = kt_base_check(b);
	if (r == KT_CHECK_OK)
		return ::testing::AssertionSuccess();
	return ::testing::AssertionFailure() << "kt_base_check: " << r << " (" << kt_base_check_str(r) << ")";
}

// A manual-clock base (kt_base_advance steps through due buckets).
struct ManualBase {
	explicit ManualBase(unsigned res = 16, uint64_t start = 0) {
		kt_base_config cfg{res, KT_CLOCK_MANUAL, start};
		b = kt_base_new(&cfg);
	}
	~ManualBase() { kt_base_free(b); }
	ManualBase(const ManualBase &) = delete;
	ManualBase &operator=(const ManualBase &) = delete;
	operator kt_base *() const { return b; }
	kt_base *b;
};

// A monotonic base whose clock is a variable: kt_base_run() reads `now`.
struct FakeClockBase {
	explicit FakeClockBase(unsigned res = 16, uint64_t start = 1000) : now(start) {
		kt_base_config cfg{res, KT_CLOCK_MONOTONIC, 0};
		b = kt_base_new(&cfg);
		kt__base_set_time_source(b, &FakeClockBase::read, this);
		kt_base_run(b); // adopt the fake clock
	}
	~FakeClockBase() { kt_base_free(b); }
	FakeClockBase(const FakeClockBase &) = delete;
	FakeClockBase &operator=(const FakeClockBase &) = delete;
	// Move the clock to `t` and run one turn; returns callbacks run.
	size_t run_at(uint64_t t) {
		now = t;
		return kt_base_run(b);
	}
	operator kt_base *() const { return b; }
	static uint64_t read(void *self) { return static_cast<FakeClockBase *>(self)->now; }
	kt_base *b;
	uint64_t now;
};

struct Fire {
	int id;
	uint64_t at;
};

// A connection-like struct with an embedded timer that logs its firings.
struct Logged {
	int id = 0;
	std::vector<Fire> *log = nullptr;
	kt_base *base = nullptr;
	kt_timer timer{};
	Logged() = default;
	Logged(const Logged &) = delete;
	Logged &operator=(const Logged &) = delete;
	// Deleting is safe in either destruction order: a base freed first has
	// already detached the timer, and delete of an idle timer reads only it.
	~Logged() { kt_timer_delete(&timer); }
	static void cb(kt_timer *t) {
		Logged *self = kt_container_of(t, Logged, timer);
		self->log->push_back(Fire{self->id, kt_base_now(self->base)});
	}
	void setup(kt_base *b, int ident, std::vector<Fire> *l, unsigned flags = 0) {
		id = ident;
		log = l;
		base = b;
		kt_timer_setup(&timer, b, &Logged::cb, flags);
	}
};

// Every resolution a base accepts (kt_base_config.resolution_ms).
constexpr unsigned kResolutions[] = {1, 2, 4, 8, 16};

// Advance a manual base to `until_ms` (in steps of at most KT_MILLIS_MAX), so
// that everything due by then fires; a time already passed does nothing.
inline void drain(kt_base *b, uint64_t until_ms) {
	uint64_t now = kt_base_now(b);
	if (until_ms > now) {
		while (until_ms - now > KT_MILLIS_MAX) {
			kt_base_advance(b, KT_MILLIS(KT_MILLIS_MAX));
			now = kt_base_now(b);
		}
		kt_base_advance(b, KT_MILLIS(until_ms - now));
	}
}

// The lateness the wheel promises for a timer armed at `now` for `expires`:
// at most one granularity of the level it lands on. Written from the design
// (level n holds deltas below 63 * 8^n units past the next tick), not from
// the library's code.
inline uint64_t lateness_bound(unsigned res, uint64_t now, uint64_t expires) {
	uint64_t next_tick = now / res + 1;
	uint64_t u = (expires + res - 1) / res;
	uint64_t delta = u > next_tick ? u - next_tick : 0;
	uint64_t limit = 63, gran = 1;
	for (int lvl = 0; lvl < 7 && delta >= limit; lvl++) {
		limit *= 8;
		gran *= 8;
	}
	return gran * res;
}

// Where the design puts a timer armed at `now` (whole ms, the manual clock)
// for `expires`, written from lib/wheel.c's essay and not from its code, so
// that a mistake the library's placement shares with its own tables
// (kt_wheel_level_info(), kt_base_max_lateness()) cannot hide: the wheel
// clock is the next tick, clk = now / res + 1 (units); the expiry's unit is
// u = ceil(expires / res); level n is the lowest with u - clk < 63 * 8^n; the
// bucket is the first multiple of 8^n units at or after u. An expiry before
// clk goes on the next tick. Beyond level 7 (the reach) the timer waits in
// the wheel's far bucket - the one of the farthest delay it holds,
// 63 * 8^7 - 1 units - and when that comes due it fires if due, or is
// placed again from the clock one unit past it.
struct DesignPlace {
	unsigned level;   // 0..7, or 8: beyond the reach, parked
	uint64_t wake_ms; // the due time of the bucket it is placed in
	uint64_t fire_ms; // when it fires: wake_ms, or after parking
};

// The due unit of `u` on level `lvl` (0..7) with the wheel clock at `clk`.
inline uint64_t design_bucket_unit(uint64_t clk, uint64_t u, unsigned lvl) {
	uint64_t gran = uint64_t(1) << (3 * lvl);
	uint64_t from = u < clk ? clk : u;
	return (from + gran - 1) / gran * gran;
}

// The level the design puts a unit `delta` past the wheel clock on (8: parked).
inline unsigned design_level(uint64_t delta) {
	unsigned lvl = 0;
	for (uint64_t limit = 63; lvl < 8 && delta >= limit; limit *= 8)
		lvl++;
	return lvl;
}

inline DesignPlace design_place(unsigned res, uint64_t now, uint64_t expires) {
	const uint64_t far = (uint64_t(63) << 21) - 1, gran7 = uint64_t(1) << 21;
	uint64_t clk = now / res + 1, u = expires / res + (expires % res != 0);
	DesignPlace p{0, 0, 0};
	for (bool first = true;; first = false) {
		unsigned lvl = design_level(u < clk ? 0 : u - clk);
		uint64_t due = lvl < 8 ? design_bucket_unit(clk, u, lvl) : (clk + far + gran7 - 1) / gran7 * gran7;
		if (first) {
			p.level = lvl;
			p.wake_ms = due * res;
		}
		if (lvl < 8 || u <= due) {
			p.fire_ms = due * res;
			return p;
		}
		clk = due + 1; // parked, not due: placed again when its bucket fires
	}
}

} // namespace kt_test

#endif
