// Test helpers for the loop adapters (epoll, libuv, libevent, io_uring): a
// real monotonic clock and a wheel timer that records when it fired.
#ifndef KTIMER_TESTS_SUPPORT_LOOP_TIMER_H
#define KTIMER_TESTS_SUPPORT_LOOP_TIMER_H

#include <ktimer/ktimer.h>

#include <cstdint>
#include <ctime>

namespace kt_test {

// CLOCK_MONOTONIC in ns: the clock a real-clock base reads, so "never early"
// compares like with like.
inline uint64_t MonoNs() {
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// A wheel timer that counts its firings and records when the last one ran,
// on the real clock and on the base's cached clock. on_fire, when set, runs
// after the record: the tests use it to stop the loop that drives the base.
struct LoopTimer {
	kt_timer t{};
	kt_base *base = nullptr;
	int fired = 0;
	uint64_t fired_mono_ns = 0, fired_base_ms = 0;
	void (*on_fire)(void *arg) = nullptr;
	void *on_fire_arg = nullptr;

	static void cb(kt_timer *t) {
		LoopTimer *s = kt_container_of(t, LoopTimer, t);
		s->fired++;
		s->fired_mono_ns = MonoNs();
		s->fired_base_ms = kt_base_now(s->base);
		if (s->on_fire)
			s->on_fire(s->on_fire_arg);
	}
	void setup(kt_base *b) {
		base = b;
		kt_timer_setup(&t, b, cb, 0);
	}
};

} // namespace kt_test

#endif
