// kt_epoll on real descriptors: a producer thread wakes a blocked worker,
// precise timers use the timerfd and are never early, caller events pass
// through. Real time, but nothing asserts on how long anything took except
// "not before the deadline".
#include <ktimer/epoll.h>
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include "tests/adapters/loop_fixture.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <thread>
#include <vector>

#include "tests/support/harness.h"

namespace {

using kt_test::MonoNs;

struct Flag {
	kt_timer t;
	std::atomic<int> fired{0};
	static void cb(kt_timer *t) { kt_container_of(t, Flag, t)->fired++; }
};

struct Precise {
	kt_hrtimer t;
	uint64_t fired_at = 0;
	static void cb(kt_hrtimer *t) { kt_container_of(t, Precise, t)->fired_at = MonoNs(); }
};

} // namespace

TEST(Epoll, RemoteArmWakesABlockedWorker) {
	kt_base *b = kt_base_new(nullptr);
	kt_epoll ep;
	ASSERT_EQ(kt_epoll_init(&ep, b), 0);
	Flag f;
	kt_timer_setup(&f.t, b, Flag::cb, 0);
	// Nothing pending: the worker would block forever without the waker.
	std::thread producer([&] { kt_remote_arm(&f.t, KT_MILLIS(0), nullptr, nullptr); });
	epoll_event ev[4];
	while (!f.fired)
		ASSERT_GE(kt_epoll_wait(&ep, ev, 4), 0);
	producer.join();
	EXPECT_EQ(f.fired, 1);
	kt_epoll_close(&ep);
	kt_base_free(b);
}

TEST(Epoll, PreciseTimerUsesTimerfdAndIsNeverEarly) {
	kt_base *b = kt_base_new(nullptr);
	kt_epoll ep;
	ASSERT_EQ(kt_epoll_init(&ep, b), 0);
	Precise p;
	kt_hrtimer_setup(&p.t, b, Precise::cb);
	epoll_event ev[4];
	for (int i = 0; i < 20; i++) {
		p.fired_at = 0;
		uint64_t deadline = MonoNs() + 2000000; // 2 ms: far enough that the plan sees it ahead
		kt_hrtimer_start(&p.t, deadline);
		while (!p.fired_at)
			ASSERT_GE(kt_epoll_wait(&ep, ev, 4), 0);
		EXPECT_GE(p.fired_at, deadline);
	}
	// Each wait that blocked on a precise deadline armed the timerfd; a slow
	// run (sanitizers, a busy machine) may find some deadlines passed before
	// it waits, and those need no timer at all.
	EXPECT_GE(ep.timerfd_arms, 1u);
	EXPECT_LE(ep.timerfd_arms, 20u);
	kt_epoll_close(&ep);
	kt_base_free(b);
}

TEST(Epoll, CallerEventsPassThroughAndWheelTimersCostNoTimerfd) {
	kt_base *b = kt_base_new(nullptr);
	kt_epoll ep;
	ASSERT_EQ(kt_epoll_init(&ep, b), 0);
	int efd = eventfd(1, EFD_NONBLOCK);
	epoll_event reg{};
	reg.events = EPOLLIN;
	reg.data.u64 = 42;
	ASSERT_EQ(epoll_ctl(ep.epfd, EPOLL_CTL_ADD, efd, &reg), 0);
	epoll_event ev[4];
	int n = kt_epoll_wait(&ep, ev, 4);
	ASSERT_EQ(n, 1);
	const uint64_t data = ev[0].data.u64; // a copy: epoll_event is packed, EXPECT_EQ binds a reference
	EXPECT_EQ(data, 42u);
	uint64_t v;
	ASSERT_EQ(read(efd, &v, sizeof(v)), ssize_t(sizeof(v)));
	Flag f;
	kt_timer_setup(&f.t, b, Flag::cb, 0);
	uint64_t armed = kt_base_now_ns(b); // delays count from the turn's instant
	kt_timer_arm(&f.t, KT_MILLIS(20));
	while (!f.fired)
		ASSERT_GE(kt_epoll_wait(&ep, ev, 4), 0);
	EXPECT_GE(MonoNs() - armed, 20000000u);
	EXPECT_EQ(ep.timerfd_arms, 0u); // the wheel rode on epoll's timeout
	close(efd);
	kt_epoll_close(&ep);
	kt_base_free(b);
}

// ---- kt_epoll_wait()'s order --------------------------------------------------

namespace {

// A clock that moves 16 ms (one unit) at every reading: kt_epoll_wait() reads it at its
// kt_base_run() and again at its kt_base_update_time(), so a turn's I/O
// always sees timers gathered by the update, and the next run gathers more.
struct SteppingClock {
	uint64_t now = 1000;
	static uint64_t read(void *self) {
		auto *c = static_cast<SteppingClock *>(self);
		uint64_t t = c->now;
		c->now += 16;
		return t;
	}
};

// A connection: freed by its idle timeout, or by the I/O handler.
struct Conn {
	kt_timer idle;
	int *closed_by_timer;
	static void on_idle(kt_timer *t) {
		Conn *c = kt_container_of(t, Conn, idle);
		++*c->closed_by_timer;
		delete c;
	}
};

} // namespace

// The connection that times out and sends data in the same turn, through
// kt_epoll. Turn 1's kt_base_update_time() gathers the connections whose
// idle deadline passed during the wait; each also has data, and the I/O
// handler closes and frees it (deleting its timer first, as documented).
// Every other connection must be closed by its timer, exactly once: the
// delete moves the batch's tail off the freed connection, so the next
// kt_epoll_wait()'s kt_base_run() appends the next due bucket to the batch,
// not into freed memory (ASan would report a heap-use-after-free write in
// kt__wheel_collect(); without ASan that bucket's connections would never
// close). The same turn without the adapter is
// Turn.DeletingTheLastGatheredTimerKeepsLaterBucketsFiring.
TEST(Epoll, ConnectionClosedByIoAfterItsDeadlineWasGatheredIsNeverTouchedAgain) {
	kt_base *b = kt_base_new(nullptr);
	SteppingClock clock;
	kt__base_set_time_source(b, SteppingClock::read, &clock);
	kt_epoll ep;
	ASSERT_EQ(kt_epoll_init(&ep, b), 0);
	int efd = eventfd(1, EFD_NONBLOCK); // always readable: epoll never blocks
	epoll_event reg{};
	reg.events = EPOLLIN;
	reg.data.u64 = 42;
	ASSERT_EQ(epoll_ctl(ep.epfd, EPOLL_CTL_ADD, efd, &reg), 0);

	const int kConns = 200;
	int closed_by_timer = 0, closed_by_io = 0;
	std::vector<Conn *> conns;
	uint64_t start = kt_base_now(b);
	for (int i = 0; i < kConns; i++) {
		Conn *c = new Conn{{}, &closed_by_timer};
		kt_timer_setup(&c->idle, b, Conn::on_idle, 0);
		kt_mod_timer(&c->idle, start + 20 + 4 * uint64_t(i)); // every bucket
		conns.push_back(c);
	}
#if defined(__SANITIZE_ADDRESS__)
	const bool really_free = true; // ASan quarantines: it reports the write
#else
	const bool really_free = false; // the write would corrupt malloc's lists
#endif
	std::vector<Conn *> kept;
	epoll_event ev[4];
	// The wait returns with data for every connection (one event stands for
	// all); the clock has passed some deadlines, gathered by the update.
	for (int turn = 0; turn < 10 && closed_by_io == 0; turn++) {
		int n = kt_epoll_wait(&ep, ev, 4);
		ASSERT_GE(n, 0);
		if (n == 0)
			continue; // a timer turn
		for (Conn *&c : conns) {
			if (c && kt_timer_pending(&c->idle) && kt_timer_expires(&c->idle) <= kt_base_now(b)) {
				kt_timer_delete(&c->idle);
				closed_by_io++;
				if (really_free)
					delete c;
				else
					kept.push_back(c);
				c = nullptr;
			}
		}
	}
	ASSERT_GT(closed_by_io, 0) << "turn 1 gathered nothing: the test lost its point";
	for (int turn = 0; turn < 1000 && closed_by_timer + closed_by_io < kConns; turn++)
		ASSERT_GE(kt_epoll_wait(&ep, ev, 4), 0);
	EXPECT_EQ(closed_by_timer + closed_by_io, kConns);
	EXPECT_EQ(kt_base_pending_count(b), 0u);
	for (Conn *c : kept)
		delete c;
	close(efd);
	kt_epoll_close(&ep);
	kt_base_free(b); // on failure, lost connections stay allocated (a leak)
}

// kt_epoll_wake() is documented "from any thread", and the natural stop
// path is `stop = 1; kt_epoll_wake(&ep);` on a control thread while the
// worker, seeing `stop`, calls kt_epoll_close() and frees `ep`. The shutdown
// protocol covers producers (kt_epoll_close() waits for a producer inside
// the waker), and kt_epoll_wake() goes through it too: it calls
// kt_base_wake(), which counts itself in the base's wakers_busy like a
// producer's wake-up, so close waits for it. A wake outside the protocol
// would read ep->wakefd while close writes it, and could write 8 bytes into
// a descriptor number that close just released and another thread reused
// (--config=tsan reports the race on kt_epoll.wakefd).
TEST(Epoll, WakeFromAControlThreadRacingCloseIsWaitedFor) {
	kt_base *b = kt_base_new(nullptr);
	auto *ep = new kt_epoll;
	ASSERT_EQ(kt_epoll_init(ep, b), 0);
	std::atomic<bool> stop{false};
	std::thread control([&] {
		stop = true;         // "please stop"
		kt_epoll_wake(ep);   // and wake the worker to see it
	});
	epoll_event ev[4];
	for (int turn = 0; turn < 1000 && !stop; turn++)
		ASSERT_GE(kt_epoll_wait(ep, ev, 4), 0); // the worker's loop
	kt_epoll_close(ep); // the worker's stop path
	delete ep;
	control.join();
	kt_base_free(b);
}

// Setup of garbage memory, the cleanup-label way: a zero-filled kt_epoll
// (static, or `= {0}` before an init that was never reached) handed to
// kt_epoll_close() on an error path. Its descriptors read as 0, 0, 0, but a
// kt_epoll with no base is one never initialized, which owns no descriptor:
// the close leaves descriptor 0 open (closing it would lose stdin and hand
// descriptor 0 to the next open()).
TEST(Epoll, CloseOfAZeroFilledEpollDoesNotCloseDescriptorZero) {
	kt_test::StdinWatch in;
	ASSERT_GE(in.saved, 0);
	kt_epoll never_initialized{};
	kt_epoll_close(&never_initialized);
	in.check();
	EXPECT_FALSE(in.closed) << "kt_epoll_close() closed descriptor 0";
}

namespace {

// A remote operation's done callback that sets the caller's loop stop flag.
struct StopOnDone {
	int stop = 0;
	const kt_epoll *ep = nullptr;
	uint64_t wakeups_at_done = 0; // epoll_wait() calls when the callback ran
	static void done(kt_timer *, int, void *arg) {
		StopOnDone *s = static_cast<StopOnDone *>(arg);
		s->stop = 1;
		if (s->ep)
			s->wakeups_at_done = s->ep->wakeups;
	}
};

} // namespace

// A done callback runs on the owner inside kt_base_run() like a timer
// callback, and may change what the caller's loop tests: the turn ends
// without waiting, as after a timer callback (a turn that planned an
// indefinite wait would block with the stop flag set, forever with nothing
// pending). Here a safety timer bounds the wait; the counter of
// epoll_wait() calls says whether the turn waited.
TEST(Epoll, ARemoteDoneCallbackEndsTheTurnWithoutWaiting) {
	kt_base *b = kt_base_new(nullptr);
	kt_epoll ep;
	ASSERT_EQ(kt_epoll_init(&ep, b), 0);
	Flag f, safety;
	kt_timer_setup(&f.t, b, Flag::cb, 0);
	kt_timer_setup(&safety.t, b, Flag::cb, 0);
	kt_timer_arm(&safety.t, KT_MILLIS(300)); // bounds the buggy wait
	StopOnDone s;
	ASSERT_EQ(kt_remote_delete(&f.t, StopOnDone::done, &s), 0);
	epoll_event ev[4];
	uint64_t waits = ep.wakeups;
	EXPECT_EQ(kt_epoll_wait(&ep, ev, 4), 0);
	EXPECT_EQ(s.stop, 1);
	EXPECT_EQ(ep.wakeups, waits) << "kt_epoll_wait() waited after a done callback ran";
	EXPECT_EQ(safety.fired, 0);
	kt_timer_delete(&safety.t);
	kt_epoll_close(&ep);
	kt_base_free(b);
}

// The same from another thread while the worker blocks:
// the loop ends on the turn the done callback ran in.
TEST(Epoll, ARemoteDoneCallbackFromAnotherThreadStopsTheLoop) {
	kt_base *b = kt_base_new(nullptr);
	kt_epoll ep;
	ASSERT_EQ(kt_epoll_init(&ep, b), 0);
	Flag f, safety;
	kt_timer_setup(&f.t, b, Flag::cb, 0);
	kt_timer_setup(&safety.t, b, Flag::cb, 0);
	StopOnDone s;
	s.ep = &ep;
	std::thread producer([&] { kt_remote_delete(&f.t, StopOnDone::done, &s); });
	epoll_event ev[4];
	int turns = 0;
	while (!s.stop && turns < 1000) { // bounded: the safety timer ends any wait
		kt_timer_arm(&safety.t, KT_MILLIS(300));
		ASSERT_GE(kt_epoll_wait(&ep, ev, 4), 0);
		turns++;
	}
	producer.join();
	EXPECT_EQ(s.stop, 1);
	EXPECT_EQ(ep.wakeups, s.wakeups_at_done) << "the loop waited after the done callback set its stop flag";
	kt_timer_delete(&safety.t);
	kt_epoll_close(&ep);
	kt_base_free(b);
}

// Closing after a failed init and closing twice are no-ops (a struct of
// garbage whose init failed included: init marks it closed before it can
// fail): a garbage-filled kt_epoll whose init failed with -EINVAL has no
// garbage descriptor closed, and a second close leaves alone the waker of a
// base that may be gone.
TEST(Epoll, CloseAfterAFailedInitOrTwiceClosesNothing) {
	kt_base_config cfg{1, KT_CLOCK_MANUAL, 0};
	kt_base *manual = kt_base_new(&cfg);
	kt_test::StdinWatch in;
	ASSERT_GE(in.saved, 0);
	kt_epoll garbage;
	memset(&garbage, 0, sizeof(garbage));
	garbage.base = manual; // stale: as left by an earlier, closed use
	EXPECT_EQ(kt_epoll_init(&garbage, manual), -EINVAL);
	kt_epoll_close(&garbage);
	epoll_event ev[1];
	EXPECT_EQ(kt_epoll_wait(&garbage, ev, 1), -EINVAL);
	kt_base *mono = kt_base_new(nullptr);
	kt_epoll ok;
	ASSERT_EQ(kt_epoll_init(&ok, mono), 0);
	kt_epoll_close(&ok);
	EXPECT_EQ(ok.base, nullptr);
	kt_epoll_close(&ok);
	in.check();
	EXPECT_FALSE(in.closed) << "kt_epoll_close() closed descriptor 0";
	kt_base_free(mono);
	kt_base_free(manual);
}

// A burst of expiries under a run limit is spread over turns, and the I/O
// that is ready meanwhile is returned between two slices of it, not after
// the whole burst (counts and order, not time).
TEST(Epoll, ALimitedRunPollsIoBetweenSlicesOfABurst) {
	kt_test::Burst burst;
	kt_base *b = kt_base_new(nullptr);
	kt_epoll ep;
	ASSERT_EQ(kt_epoll_init(&ep, b), 0);
	burst.arm(b);
	// A client's request, ready before the burst comes due.
	int efd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_GE(efd, 0);
	epoll_event reg{};
	reg.events = EPOLLIN;
	reg.data.u64 = 7;
	ASSERT_EQ(epoll_ctl(ep.epfd, EPOLL_CTL_ADD, efd, &reg), 0);
	epoll_event ev[8];
	int io_seen_at = -1, turns = 0;
	// Bounded: 1,000 timers at 100 a turn is 10 firing turns, but the burst
	// comes due only at the base's next 16 ms tick, up to 17 ms away, and
	// until then every turn returns at once (the descriptor is kept ready):
	// at 1 us a turn, 10,000 turns can end before the burst. So bounded by a
	// count no machine spins through in that time, and by 5 s of real time
	// (a bound, not an assertion).
	timespec t0{}, t1{};
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (; turns < 10000000 && !burst.done(); turns++) {
		if (turns % 1024 == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (t1.tv_sec - t0.tv_sec > 5)
				break;
		}
		int n = kt_epoll_wait(&ep, ev, 8);
		ASSERT_GE(n, 0);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u64 == 7) {
				uint64_t v;
				ASSERT_EQ(read(efd, &v, sizeof(v)), (ssize_t)sizeof(v));
				if (io_seen_at < 0 && burst.fired_total > 0)
					io_seen_at = burst.fired_total;
			}
		}
		if (io_seen_at < 0 && burst.fired_total == 0 && n > 0)
			io_seen_at = 0; // read before the burst came due: try again
		if (io_seen_at == 0) {
			uint64_t one = 1;
			ASSERT_EQ(write(efd, &one, sizeof(one)), (ssize_t)sizeof(one));
			io_seen_at = -1;
		}
	}
	burst.expect_each_fired_once();
	EXPECT_GT(io_seen_at, 0);
	EXPECT_LT(io_seen_at, 1000) << "the ready descriptor waited for the whole burst";
	kt_base_stats st{};
	kt_base_get_stats(b, &st);
	EXPECT_GE(st.limited_runs, 9u);
	close(efd);
	kt_epoll_close(&ep);
	kt_base_free(b);
}

// A shutdown timer closes the adapter from inside the turn: the close takes
// effect at once, kt_epoll_wait() ends that turn without touching the
// closed descriptors (ASan and valgrind would see it) and returns 0; the
// next call is refused; what was pending stays pending on the base.
TEST(Epoll, ATimerCallbackMayCloseTheAdapter) {
	kt_base *b = kt_base_new(nullptr);
	kt_epoll ep;
	ASSERT_EQ(kt_epoll_init(&ep, b), 0);
	kt_test::StdinWatch in;
	kt_test::ShutdownTimer st([&ep] { kt_epoll_close(&ep); });
	st.arm(b);
	epoll_event ev[4];
	int r = 0;
	for (int i = 0; i < 1000 && !st.closed(); i++) {
		r = kt_epoll_wait(&ep, ev, 4);
		ASSERT_GE(r, 0);
	}
	EXPECT_EQ(r, 0);
	st.expect_closed_later_pending();
	EXPECT_EQ(ep.epfd, -1);
	EXPECT_EQ(kt_epoll_wait(&ep, ev, 4), -EINVAL);
	kt_epoll_close(&ep); // closed already: nothing
	in.check();
	EXPECT_FALSE(in.closed);
	EXPECT_EQ(kt_base_free(b), 0);
}

// A remote operation's done callback closes the adapter: the same.
TEST(Epoll, ADoneCallbackMayCloseTheAdapter) {
	kt_base *b = kt_base_new(nullptr);
	kt_epoll ep;
	ASSERT_EQ(kt_epoll_init(&ep, b), 0);
	Flag f;
	kt_timer_setup(&f.t, b, Flag::cb, 0);
	ASSERT_EQ(kt_remote_arm(&f.t, KT_MILLIS(10000), [](kt_timer *, int, void *a) {
		kt_epoll_close(static_cast<kt_epoll *>(a));
	}, &ep), 0);
	epoll_event ev[4];
	EXPECT_EQ(kt_epoll_wait(&ep, ev, 4), 0);
	EXPECT_EQ(ep.base, nullptr);
	EXPECT_EQ(kt_epoll_wait(&ep, ev, 4), -EINVAL);
	EXPECT_TRUE(kt_timer_pending(&f.t));
	EXPECT_EQ(kt_base_free(b), 0);
}

namespace {

// The parent's loop after a fork: turns until both its timers fired, for
// at most 5 s - a descriptor of its own that becomes readable then ends a
// wait that a stolen timerfd expiry would leave blocked for good.
void TurnUntilFired(kt_epoll *ep, const kt_test::ForkTimers &ft) {
	epoll_event ev[4], reg{};
	int bound = kt_test::ReadableInMs(5000);
	ASSERT_GE(bound, 0);
	reg.events = EPOLLIN;
	reg.data.u64 = 1;
	ASSERT_EQ(epoll_ctl(ep->epfd, EPOLL_CTL_ADD, bound, &reg), 0);
	uint64_t until = MonoNs() + 5000000000u;
	while (!ft.fired() && MonoNs() < until)
		ASSERT_GE(kt_epoll_wait(ep, ev, 4), 0);
	close(bound);
}

} // namespace

// A child of fork() that forgets kt_epoll_fork() and runs its loop anyway:
// every turn is refused with -EBADFD and touches nothing - the epoll
// instance, eventfd and timerfd are the parent's - so no timer of the
// child's fires, and the parent's precise timer (whose timerfd both share)
// and wheel timer fire in the parent, never early.
TEST(Epoll, AForkedChildThatForgetsKtEpollForkLeavesTheParentsTimersAlone) {
	kt_base *b = kt_base_new(nullptr);
	kt_epoll ep;
	ASSERT_EQ(kt_epoll_init(&ep, b), 0);
	kt_test::ForkTimers ft;
	ft.arm(b);
	pid_t child = kt_test::StartChild([&]() -> int {
		epoll_event ev[4];
		int refused = 0, turns = 0;
		for (uint64_t until = MonoNs() + 300000000; MonoNs() < until; turns++) {
			int n = kt_epoll_wait(&ep, ev, 4);
			refused += n == -EBADFD;
			if (n == -EBADFD)
				usleep(1000);
		}
		if (refused != turns)
			return 1; // a turn ran on the parent's descriptors
		if (ft.any_fired())
			return 2;
		kt_epoll_close(&ep); // only the child's copies
		return 0;
	});
	TurnUntilFired(&ep, ft);
	EXPECT_EQ(ft.check(), 0) << "the parent's timers";
	EXPECT_EQ(kt_test::WaitChild(child), 0) << "the child's check that failed";
	kt_epoll_close(&ep);
	kt_base_free(b);
}

// A child that calls kt_epoll_fork() gets descriptors of its own (the epoll
// instance on the same number) and keeps its timers: both processes' copies
// fire, each once, never early; the child's waker and its own registered
// descriptors work; a second call does nothing.
TEST(Epoll, AForkedChildWithKtEpollForkFiresItsTimersAndSoDoesTheParent) {
	kt_base *b = kt_base_new(nullptr);
	kt_epoll ep;
	ASSERT_EQ(kt_epoll_init(&ep, b), 0);
	kt_test::ForkTimers ft;
	ft.arm(b);
	pid_t child = kt_test::StartChild([&]() -> int {
		int epfd = ep.epfd;
		if (!kt_base_forked(b) || kt_epoll_fork(&ep) != 0 || kt_base_forked(b) || ep.epfd != epfd)
			return 1;
		if (kt_epoll_fork(&ep) != 0)
			return 2;
		epoll_event ev[4];
		for (uint64_t until = MonoNs() + 5000000000u; !ft.fired() && MonoNs() < until;)
			if (kt_epoll_wait(&ep, ev, 4) < 0)
				return 3;
		if (int r = ft.check())
			return r;
		// Nothing pending: a wake-up ends the wait (the alarm ends a hang).
		if (kt_base_wake(b) != 1 || kt_epoll_wait(&ep, ev, 4) != 0)
			return 4;
		int efd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
		epoll_event reg{};
		reg.events = EPOLLIN;
		reg.data.u64 = 7;
		if (efd < 0 || epoll_ctl(ep.epfd, EPOLL_CTL_ADD, efd, &reg) != 0)
			return 5;
		if (kt_epoll_wait(&ep, ev, 4) != 1 || ev[0].data.u64 != 7)
			return 6;
		close(efd);
		kt_epoll_close(&ep);
		return 0;
	});
	TurnUntilFired(&ep, ft);
	EXPECT_EQ(ft.check(), 0) << "the parent's timers";
	EXPECT_EQ(kt_test::WaitChild(child), 0) << "the child's check that failed";
	EXPECT_EQ(kt_epoll_fork(&ep), 0); // in the parent: nothing to do
	kt_epoll_close(&ep);
	kt_base_free(b);
}

// A timer callback that fork()s (a program starting a worker process from a
// timer) under a run limit that leaves due timers for the next turn: a turn
// that, after its callbacks, polls without blocking. In the child the turn
// ends when the callback returns, with 0, and polls nothing: the epoll
// instance and the eventfd are the parent's, and a poll would drain the
// wake-up the parent has pending. The child's next turn is refused.
TEST(Epoll, AChildForkedFromACallbackEndsThatTurnWithoutPolling) {
	kt_base *b = kt_base_new(nullptr);
	kt_epoll ep;
	ASSERT_EQ(kt_epoll_init(&ep, b), 0);
	ASSERT_EQ(kt_base_set_run_limit(b, 1, 0), 0);
	kt_test::ForkingTimers ft;
	ft.arm(b);
	bool wake_kept = false;
	ft.in_parent = [&] {
		uint64_t v = 0;
		wake_kept = read(ep.wakefd, &v, sizeof(v)) == ssize_t(sizeof(v)) && v == 1;
	};
	usleep(40000); // all three due
	kt_epoll_wake(&ep); // a wake-up pending for the parent
	epoll_event ev[4];
	int n = kt_epoll_wait(&ep, ev, 4);
	if (ft.in_child())
		_exit(n != 0 ? 1 : kt_epoll_wait(&ep, ev, 4) != -EBADFD ? 2 : 0);
	EXPECT_EQ(ft.child_status, 0) << "the child's check that failed (1: its turn went on, 2: not refused after)";
	EXPECT_TRUE(wake_kept) << "the child's turn polled the parent's epoll instance and took its wake-up";
	EXPECT_EQ(n, 0);
	for (int i = 0; i < 10 && ft.t[0].fired + ft.t[1].fired + ft.t[2].fired < 3; i++)
		ASSERT_GE(kt_epoll_wait(&ep, ev, 4), 0);
	EXPECT_EQ(ft.t[0].fired + ft.t[1].fired + ft.t[2].fired, 3);
	kt_epoll_close(&ep);
	kt_base_free(b);
}

// A fork() from another thread while the loop's thread is inside a timer
// callback: the child cannot use the base (the turn's thread is not there,
// and its turn never ends), so kt_epoll_fork() refuses with -EBUSY and
// touches nothing, and kt_epoll_wait() keeps refusing with -EBADFD, rather
// than a loop that turns and never fires a timer again.
TEST(Epoll, AChildForkedInTheMiddleOfAnotherThreadsTurnIsRefused) {
#if defined(__SANITIZE_THREAD__)
	GTEST_SKIP() << "ThreadSanitizer's runtime does not support fork() beside a running thread";
#endif
	kt_base *b = kt_base_new(nullptr);
	kt_epoll ep;
	ASSERT_EQ(kt_epoll_init(&ep, b), 0);
	static std::atomic<int> in_cb, release;
	in_cb = 0;
	release = 0;
	kt_timer t{};
	kt_timer_setup(&t, b, [](kt_timer *) {
		in_cb = 1;
		for (int i = 0; i < 10000 && !release; i++)
			usleep(1000);
	}, 0);
	kt_timer_arm(&t, KT_MILLIS(1));
	// A pthread, not a std::thread: the child inherits no heap block that
	// only the (absent) thread points to, which memcheck calls a leak.
	static kt_epoll *loop_ep;
	loop_ep = &ep;
	pthread_t loop;
	ASSERT_EQ(pthread_create(&loop, nullptr, [](void *) -> void * {
		kt_base_adopt(loop_ep->base);
		epoll_event ev[4];
		for (int i = 0; i < 100 && !in_cb; i++)
			kt_epoll_wait(loop_ep, ev, 4);
		return nullptr;
	}, nullptr), 0);
	for (int i = 0; i < 5000 && !in_cb; i++)
		usleep(1000);
	ASSERT_EQ(in_cb.load(), 1);
	int epfd = ep.epfd;
	int st = kt_test::InChild([&]() -> int {
		epoll_event ev[4];
		if (kt_epoll_fork(&ep) != -EBUSY)
			return 1;
		if (ep.base != b || ep.epfd != epfd) // untouched
			return 2;
		if (kt_epoll_wait(&ep, ev, 4) != -EBADFD)
			return 3;
		kt_epoll_close(&ep); // the child's copies only
		return 0;
	});
	release = 1;
	pthread_join(loop, nullptr);
	EXPECT_EQ(st, 0) << "the child's check that failed";
	kt_base_adopt(b);
	kt_epoll_close(&ep);
	kt_base_free(b);
}

// The same fork from a callback, with the child's kt_epoll_fork() made in
// the callback itself: the turn goes on in the child with its own
// descriptors - its poll takes nothing of the parent's - and its loop
// fires the timers the run limit left, each once.
TEST(Epoll, AChildForkedFromACallbackMayMakeTheForkCallThere) {
	kt_base *b = kt_base_new(nullptr);
	kt_epoll ep;
	ASSERT_EQ(kt_epoll_init(&ep, b), 0);
	ASSERT_EQ(kt_base_set_run_limit(b, 1, 0), 0);
	kt_test::ForkingTimers ft;
	ft.arm(b);
	int forked_in_callback = -1;
	ft.in_child_callback = [&] { forked_in_callback = kt_epoll_fork(&ep); };
	bool wake_kept = false;
	ft.in_parent = [&] {
		uint64_t v = 0;
		wake_kept = read(ep.wakefd, &v, sizeof(v)) == ssize_t(sizeof(v)) && v == 1;
	};
	usleep(40000); // all three due
	kt_epoll_wake(&ep); // a wake-up pending for the parent
	epoll_event ev[4];
	int n = kt_epoll_wait(&ep, ev, 4);
	if (ft.in_child()) {
		if (forked_in_callback != 0 || n < 0 || kt_base_forked(b))
			_exit(1);
		for (int i = 0; i < 10 && ft.t[0].fired + ft.t[1].fired + ft.t[2].fired < 3; i++)
			if (kt_epoll_wait(&ep, ev, 4) < 0)
				_exit(2);
		_exit(ft.t[0].fired + ft.t[1].fired + ft.t[2].fired == 3 ? 0 : 3);
	}
	EXPECT_EQ(ft.child_status, 0) << "the child's check that failed";
	EXPECT_TRUE(wake_kept) << "the child's turn took the parent's wake-up";
	kt_epoll_close(&ep);
	kt_base_free(b);
}
