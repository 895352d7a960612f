// tests/adapters/loop_fixture.h: what the loop adapters' suites (epoll,
// libuv, libevent, io_uring) share: a real monotonic clock, a wheel timer
// that records when it fired, and the scenarios every adapter runs - timers
// over a range of delays, remote arms from two threads, what a close leaves
// pending, a burst under a run limit, descriptor 0 across a close of garbage,
// I/O in the middle of a wait, timers pending across a fork(), a timer
// that closes the adapter, a timer that forks.
// Each suite drives them with its own loop.
#ifndef KTIMER_TESTS_ADAPTERS_LOOP_FIXTURE_H
#define KTIMER_TESTS_ADAPTERS_LOOP_FIXTURE_H

#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "tests/support/fork_child.h"

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

	// A timer still pending when the test ends leaves its base's list
	// before its memory goes (harmless when idle, or when the base was
	// freed first: that detached it).
	~LoopTimer() { kt_timer_delete(&t); }
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

// I/O that arrives in the middle of an idle wait, for a loop whose base's
// clock is the one from before the wait until the adapter's update_time: a
// descriptor readable 100 ms in. The test's I/O callback calls
// on_readable() with that update; it reads the descriptor, notes how stale
// the clock was, updates it and arms `timer` for 50 ms from the present.
struct LateIo {
	int fd = ReadableInMs(100);
	LoopTimer timer;
	uint64_t stale_by_ms = 0, armed_mono_ns = 0;

	LateIo() = default;
	LateIo(const LateIo &) = delete;
	LateIo &operator=(const LateIo &) = delete;
	~LateIo() {
		if (fd >= 0)
			close(fd);
	}
	template <class Update> void on_readable(Update update_time) {
		uint64_t v;
		(void)!read(fd, &v, sizeof(v));
		stale_by_ms = MonoNs() / 1000000 - kt_base_now(timer.base);
		update_time();
		armed_mono_ns = MonoNs();
		kt_timer_arm(&timer.t, KT_MILLIS(50));
	}
	// The clock was stale by half the wait at least (why the update is
	// needed), and the timer fired once, 50 ms from the update or later.
	void expect_armed_from_the_present() const {
		EXPECT_GE(stale_by_ms, 50u);
		ASSERT_EQ(timer.fired, 1);
		EXPECT_GE(timer.fired_mono_ns, armed_mono_ns + 50000000);
	}
};

// One timer per delay, 0 to 250 ms (the same tick, the next ones, either
// side of a 16 ms unit, a few units), armed for absolute expiries on the
// base's clock; last() expires last.
struct DelayedTimers {
	static constexpr uint32_t kDelays[] = {0, 1, 3, 7, 16, 17, 33, 64, 100, 250};
	static constexpr int kN = int(sizeof(kDelays) / sizeof(kDelays[0]));
	LoopTimer t[kN];
	uint64_t expires[kN] = {};

	void arm(kt_base *b) {
		for (int i = 0; i < kN; i++) {
			t[i].setup(b);
			expires[i] = MonoNs() / 1000000 + kDelays[i]; // absolute, on the base's clock
			kt_mod_timer(&t[i].t, expires[i]);
		}
	}
	LoopTimer &last() { return t[kN - 1]; }
	// Each fired once, and never before its expiry, by the real clock or by
	// the base's.
	void expect_each_fired_once_never_early() const {
		for (int i = 0; i < kN; i++) {
			EXPECT_EQ(t[i].fired, 1) << i;
			EXPECT_GE(t[i].fired_mono_ns, expires[i] * 1000000) << "early: " << kDelays[i] << " ms";
			EXPECT_GE(t[i].fired_base_ms, expires[i]) << kDelays[i];
		}
	}
};

// kN timers of one base, armed from two producer threads at once
// (kt_remote_arm(), every other timer each, 0 to 6 ms), each operation with
// a done callback that counts it. The test turns its loop until
// all_fired(), then join()s.
struct TwoProducers {
	static constexpr int kN = 400;
	std::vector<LoopTimer> t;
	std::atomic<int> applied{0};
	std::thread p1, p2;

	explicit TwoProducers(kt_base *b) : t(kN) {
		for (auto &x : t)
			x.setup(b);
	}
	TwoProducers(const TwoProducers &) = delete;
	TwoProducers &operator=(const TwoProducers &) = delete;
	~TwoProducers() { join(); }
	void start() {
		p1 = std::thread(&TwoProducers::produce, this, 0);
		p2 = std::thread(&TwoProducers::produce, this, 1);
	}
	void join() {
		if (p1.joinable())
			p1.join();
		if (p2.joinable())
			p2.join();
	}
	bool all_fired() const {
		int total = 0;
		for (auto &x : t)
			total += x.fired;
		return total >= kN;
	}
	// Every operation applied, every timer fired once.
	void expect_each_applied_and_fired_once() const {
		EXPECT_EQ(applied.load(), kN);
		for (auto &x : t)
			EXPECT_EQ(x.fired, 1);
	}

private:
	void produce(int from) {
		for (int i = from; i < kN; i += 2)
			kt_remote_arm(&t[size_t(i)].t, KT_MILLIS(uint32_t(i % 7)), [](kt_timer *, int, void *a) {
				static_cast<std::atomic<int> *>(a)->fetch_add(1);
			}, &applied);
	}
};

// What a close leaves behind: 100 wheel timers due 1 s to 11 s away and a
// precise timer due in 10 s, none of which may fire; after the close, ten
// remote arms queued from another thread, whose done callbacks the base's
// free calls with -ECANCELED (kt_base_free()'s contract).
struct PendingAtClose {
	std::vector<LoopTimer> t;
	kt_hrtimer hr{};

	explicit PendingAtClose(kt_base *b) : t(100) {
		for (size_t i = 0; i < t.size(); i++) {
			t[i].setup(b);
			kt_timer_arm(&t[i].t, KT_MILLIS(uint32_t(1000 + i * 100)));
		}
		kt_hrtimer_setup(&hr, b, [](kt_hrtimer *) { FAIL(); });
		kt_hrtimer_start_after(&hr, 10000000000u);
	}
	void queue_remote_arms_from_another_thread() {
		std::thread producer([this] {
			for (int i = 0; i < 10; i++) {
				int *owned = static_cast<int *>(malloc(sizeof(int)));
				*owned = i;
				ASSERT_EQ(kt_remote_arm(&t[size_t(i)].t, KT_MILLIS(0), [](kt_timer *, int r, void *a) {
					EXPECT_EQ(r, -ECANCELED);
					free(a);
				}, owned), 0);
			}
		});
		producer.join();
	}
	// After the base's free: nothing fired, nothing is pending.
	void expect_nothing_fired() const {
		for (auto &x : t) {
			EXPECT_EQ(x.fired, 0);
			EXPECT_FALSE(kt_timer_pending(&x.t));
		}
		EXPECT_FALSE(kt_hrtimer_pending(&hr));
	}
};

// A burst: kN timers due 1 ms from now, under a run limit of kLimit
// callbacks per run. The test's I/O callback calls saw_io(); io_during()
// counts the times it ran while the burst was under way, neither before it
// nor after.
struct Burst {
	static constexpr int kN = 1000, kLimit = 100;
	std::vector<LoopTimer> t;
	int fired_total = 0;
	std::vector<int> seen; // fired_total at each saw_io()
	void *loop = nullptr;  // for the test's I/O callback, which gets the Burst

	Burst() : t(kN) {}
	Burst(const Burst &) = delete;
	Burst &operator=(const Burst &) = delete;
	void arm(kt_base *b) {
		EXPECT_EQ(kt_base_set_run_limit(b, kLimit, 0), 0);
		for (auto &x : t) {
			x.setup(b);
			x.on_fire = [](void *a) { static_cast<Burst *>(a)->fired_total++; };
			x.on_fire_arg = this;
			kt_timer_arm(&x.t, KT_MILLIS(1));
		}
	}
	bool done() const { return fired_total == kN; }
	void saw_io() { seen.push_back(fired_total); }
	int io_during() const {
		int during = 0;
		for (int s : seen)
			during += s > 0 && s < kN;
		return during;
	}
	void expect_each_fired_once() const {
		EXPECT_EQ(fired_total, kN);
		for (auto &x : t)
			EXPECT_EQ(x.fired, 1);
	}
};

// Descriptor 0 (stdin) across what a test does to an adapter: a close that
// took garbage or a zero for a descriptor would close it. check() puts it
// back for the rest of the suite when it finds it closed, and remembers.
struct StdinWatch {
	int saved = dup(0);
	bool closed = false;

	StdinWatch() = default;
	StdinWatch(const StdinWatch &) = delete;
	StdinWatch &operator=(const StdinWatch &) = delete;
	~StdinWatch() {
		check();
		if (saved >= 0)
			close(saved);
	}
	void check() {
		if (saved >= 0 && fcntl(0, F_GETFD) == -1) {
			closed = true;
			dup2(saved, 0);
		}
	}
};

// fork() with timers pending: a precise timer 60 ms and a wheel timer 90 ms
// away, armed before the fork, so that the parent and its child each have
// a copy. check() says whether this process's copies fired once each and
// never early (0), or which check failed: a child's exit status.
struct ForkTimers {
	LoopTimer wheel;
	kt_hrtimer hr{};
	int hr_fired = 0;
	uint64_t hr_deadline_ns = 0, hr_fired_ns = 0, wheel_expires_ms = 0;

	ForkTimers() = default;
	~ForkTimers() { kt_hrtimer_cancel(&hr); }
	ForkTimers(const ForkTimers &) = delete;
	ForkTimers &operator=(const ForkTimers &) = delete;
	void arm(kt_base *b) {
		wheel.setup(b);
		kt_hrtimer_setup(&hr, b, [](kt_hrtimer *h) {
			ForkTimers *s = kt_container_of(h, ForkTimers, hr);
			s->hr_fired++;
			s->hr_fired_ns = MonoNs();
		});
		hr_deadline_ns = MonoNs() + 60000000;
		kt_hrtimer_start(&hr, hr_deadline_ns);
		wheel_expires_ms = MonoNs() / 1000000 + 90;
		kt_mod_timer(&wheel.t, wheel_expires_ms);
	}
	bool fired() const { return wheel.fired && hr_fired; }
	bool any_fired() const { return wheel.fired || hr_fired; }
	int check() const {
		if (wheel.fired != 1)
			return 11;
		if (hr_fired != 1)
			return 12;
		if (wheel.fired_mono_ns < wheel_expires_ms * 1000000)
			return 13; // early
		if (hr_fired_ns < hr_deadline_ns)
			return 14; // early
		return 0;
	}
};

// kN timers due at once whose first callback fork()s, as a program that
// starts a worker process from a timer does (the others do nothing: with a
// run limit of 1 the turn stops with two left). The child returns from
// the callback (after in_child_callback, if set: the adapter's fork call
// made there) into the rest of the turn and then the test's own code,
// which checks what the turn returned and _exit()s (in_child()); an alarm
// ends it after 10 s. The parent waits in the callback until the child has
// exited - so the child's rest of the turn runs while the parent's is held,
// on the kernel objects both processes share - then runs in_parent (which
// looks at what the child may have taken) and goes on with its turn.
struct ForkingTimers {
	static constexpr int kN = 3;
	LoopTimer t[kN];
	pid_t parent = getpid();
	int child_status = -1;
	std::function<void()> in_parent;
	std::function<void()> in_child_callback; // the child, in the callback, if set

	ForkingTimers() = default;
	ForkingTimers(const ForkingTimers &) = delete;
	ForkingTimers &operator=(const ForkingTimers &) = delete;
	void arm(kt_base *b) {
		for (auto &x : t) {
			x.setup(b);
			x.on_fire = [](void *a) { static_cast<ForkingTimers *>(a)->fire(); };
			x.on_fire_arg = this;
			kt_timer_arm(&x.t, KT_MILLIS(0));
		}
	}
	bool in_child() const { return getpid() != parent; }

private:
	void fire() {
		if (in_child() || child_status != -1)
			return;
		pid_t pid = fork();
		if (pid == 0) {
			alarm(10);
			if (in_child_callback)
				in_child_callback();
			return;
		}
		child_status = WaitChild(pid);
		if (in_parent)
			in_parent();
	}
};

// A shutdown timer: it fires 5 ms in and calls close(), the adapter's close
// from inside the turn; `later`, due 10 s away, stays pending. The test's
// loop turns until closed().
template <class Close> struct ShutdownTimer {
	LoopTimer shutdown, later;
	Close close_adapter;
	bool closed_it = false;

	explicit ShutdownTimer(Close c) : close_adapter(c) {}
	ShutdownTimer(const ShutdownTimer &) = delete;
	ShutdownTimer &operator=(const ShutdownTimer &) = delete;
	void arm(kt_base *b) {
		shutdown.setup(b);
		later.setup(b);
		shutdown.on_fire = [](void *a) {
			ShutdownTimer *s = static_cast<ShutdownTimer *>(a);
			s->close_adapter();
			s->closed_it = true;
		};
		shutdown.on_fire_arg = this;
		kt_timer_arm(&shutdown.t, KT_MILLIS(5));
		kt_timer_arm(&later.t, KT_MILLIS(10000));
	}
	bool closed() const { return closed_it; }
	// Closed from the callback, and what was pending stays pending.
	void expect_closed_later_pending() const {
		EXPECT_TRUE(closed_it);
		EXPECT_EQ(shutdown.fired, 1);
		EXPECT_EQ(later.fired, 0);
		EXPECT_TRUE(kt_timer_pending(&later.t));
	}
};

} // namespace kt_test

#endif
