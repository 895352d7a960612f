// Test helpers for the loop adapters (epoll, libuv, libevent, io_uring): a
// real monotonic clock and a wheel timer that records when it fired.
#ifndef KTIMER_TESTS_SUPPORT_LOOP_TIMER_H
#define KTIMER_TESTS_SUPPORT_LOOP_TIMER_H

#include <ktimer/ktimer.h>

#include <cstdint>
#include <ctime>

#include <sys/timerfd.h>
#include <unistd.h>

namespace kt_test {

// CLOCK_MONOTONIC in ns: the clock a real-clock base reads, so "never early"
// compares like with like.
inline uint64_t MonoNs() {
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// A descriptor that becomes readable once, ms from now: I/O arriving in the
// middle of an idle wait. -1 if the timerfd cannot be made.
inline int ReadableInMs(unsigned ms) {
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	if (fd < 0)
		return -1;
	itimerspec its{};
	its.it_value.tv_sec = ms / 1000;
	its.it_value.tv_nsec = long(ms % 1000) * 1000000;
	if (timerfd_settime(fd, 0, &its, nullptr) != 0) {
		close(fd);
		return -1;
	}
	return fd;
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
