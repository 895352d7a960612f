// kt_event: a ktimer base driven by a real libevent event_base, in real
// time. Nothing asserts on how long anything took except "not before the
// deadline"; the lateness bound is checked through the aim (the adapter's
// timeout is aimed at the base's next expiry after every turn). Every loop
// is bounded by a watchdog event or by alarm().
#include <ktimer/event.h>
#include <ktimer/ktimer.h>

#include <event2/event.h>
#include <gtest/gtest.h>

#include "tests/adapters/loop_fixture.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <vector>

namespace {

using kt_test::MonoNs;

// Breaks the loop if a test would otherwise hang.
struct Watchdog {
	event *ev;
	bool fired = false;
	explicit Watchdog(event_base *eb, int sec = 10) {
		ev = evtimer_new(eb, [](evutil_socket_t, short, void *arg) {
			Watchdog *w = static_cast<Watchdog *>(arg);
			w->fired = true;
			event_base_loopbreak(event_get_base(w->ev));
		}, this);
		timeval tv{sec, 0};
		evtimer_add(ev, &tv);
	}
	~Watchdog() { event_free(ev); }
};

using Timer = kt_test::LoopTimer;

// Breaks the libevent loop when t fires.
void StopOnFire(Timer &t, event_base *eb) {
	t.on_fire = [](void *arg) { event_base_loopbreak(static_cast<event_base *>(arg)); };
	t.on_fire_arg = eb;
}

struct Fixture {
	event_base *eb;
	kt_base *base;
	kt_event ke;
	Fixture() : eb(event_base_new()), base(kt_base_new(nullptr)) {}
	int init() { return kt_event_init(&ke, eb, base); }
	// The base goes while the test's timers are still in scope; the
	// event_base after the test's own events (a Watchdog is declared later,
	// so it is destroyed first).
	void finish() {
		EXPECT_EQ(kt_event_close(&ke), 0);
		EXPECT_EQ(kt_base_free(base), 0);
		base = nullptr;
	}
	~Fixture() {
		kt_base_free(base);
		event_base_free(eb);
	}
};

} // namespace

TEST(Event, InitRejectsNullArguments) {
	Fixture f;
	EXPECT_EQ(kt_event_init(nullptr, f.eb, f.base), -EINVAL);
	EXPECT_EQ(kt_event_init(&f.ke, nullptr, f.base), -EINVAL);
	EXPECT_EQ(kt_event_init(&f.ke, f.eb, nullptr), -EINVAL);
	EXPECT_EQ(kt_event_close(nullptr), 0);
}

// After every loop iteration the adapter's timeout is aimed at the base's
// next expiry, exactly (or removed when nothing is pending).
TEST(Event, TimerIsAimedAtTheNextExpiryAfterEveryTurn) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(f.eb);
	Timer t[4];
	const uint32_t delays[4] = {300, 120, 40, 5};
	kt_event_update_time(&f.ke); // before the loop starts, as documented
	for (int i = 0; i < 4; i++) {
		t[i].setup(f.base);
		kt_timer_arm(&t[i].t, KT_MILLIS(delays[i]));
	}
	int iterations = 0, wrong = 0;
	while (!t[0].fired && !wd.fired && iterations < 10000) {
		event_base_loop(f.eb, EVLOOP_ONCE);
		iterations++;
		int64_t left = kt_base_next_timeout(f.base);
		uint64_t want = left < 0 ? UINT64_MAX : (kt_base_now(f.base) + uint64_t(left)) * 1000000;
		wrong += f.ke.aimed_ns != want;
	}
	ASSERT_FALSE(wd.fired);
	for (auto &x : t)
		EXPECT_EQ(x.fired, 1);
	EXPECT_EQ(wrong, 0);
	EXPECT_EQ(f.ke.aimed_ns, UINT64_MAX); // nothing pending: no timeout
	EXPECT_EQ(f.ke.fired, 4u);
	// libevent's coarse clock may end a wait a tick early: an empty turn and
	// a re-aim each time, a few per deadline at most, never a spin. (The
	// turn queued before the loop, with nothing due, is one more.)
	EXPECT_LE(f.ke.empty_turns, 1u + 4u * 4u);
	f.finish();
}

TEST(Event, TimersFireNeverEarly) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(f.eb);
	kt_test::DelayedTimers d;
	kt_event_update_time(&f.ke);
	d.arm(f.base);
	StopOnFire(d.last(), f.eb);
	event_base_dispatch(f.eb);
	ASSERT_FALSE(wd.fired);
	d.expect_each_fired_once_never_early();
	f.finish();
}

// A libevent callback arms a ktimer timer earlier than the current aim and
// says so (kt_event_update_time()); without the re-aim it would wait for the
// 60 s timer and the watchdog would end the test.
TEST(Event, ArmingEarlierThanTheAimReAimsTheTimer) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(f.eb, 5);
	Timer late, early;
	late.setup(f.base);
	early.setup(f.base);
	StopOnFire(early, f.eb);
	kt_event_update_time(&f.ke);
	kt_timer_arm(&late.t, KT_MILLIS(60000));
	event_base_loop(f.eb, EVLOOP_NONBLOCK);
	uint64_t first_aim = f.ke.aimed_ns;
	ASSERT_NE(first_aim, UINT64_MAX);
	struct Arm {
		kt_event *ke;
		Timer *early;
	} arm{&f.ke, &early};
	event *user = evtimer_new(f.eb, [](evutil_socket_t, short, void *a) {
		Arm *s = static_cast<Arm *>(a);
		kt_event_update_time(s->ke);
		kt_timer_arm(&s->early->t, KT_MILLIS(20));
	}, &arm);
	timeval tv{0, 10000};
	evtimer_add(user, &tv);
	event_base_dispatch(f.eb);
	ASSERT_FALSE(wd.fired) << "the early timer waited for the old aim";
	EXPECT_EQ(early.fired, 1);
	EXPECT_EQ(late.fired, 0);
	EXPECT_EQ(f.ke.aimed_ns, first_aim); // back to the late one
	event_free(user);
	f.finish();
}

TEST(Event, PreciseTimerIsNeverEarly) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(f.eb);
	struct P {
		kt_hrtimer t{};
		uint64_t at = 0;
	} p;
	kt_hrtimer_setup(&p.t, f.base, [](kt_hrtimer *t) { kt_container_of(t, P, t)->at = MonoNs(); });
	for (int i = 0; i < 10 && !wd.fired; i++) {
		p.at = 0;
		uint64_t deadline = MonoNs() + 1500000;
		kt_event_update_time(&f.ke);
		kt_hrtimer_start(&p.t, deadline);
		for (int turns = 0; !p.at && !wd.fired && turns < 1000; turns++)
			event_base_loop(f.eb, EVLOOP_ONCE);
		ASSERT_NE(p.at, 0u);
		EXPECT_GE(p.at, deadline);
	}
	f.finish();
}

TEST(Event, RemoteArmWakesAnIdleLoop) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(f.eb);
	Timer t;
	t.setup(f.base);
	StopOnFire(t, f.eb);
	std::thread producer([&] { kt_remote_arm(&t.t, KT_MILLIS(0), nullptr, nullptr); });
	event_base_dispatch(f.eb);
	producer.join();
	ASSERT_FALSE(wd.fired) << "the loop was not woken";
	EXPECT_EQ(t.fired, 1);
	f.finish();
}

TEST(Event, RemoteArmsFromTwoThreadsAllFireOnce) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(f.eb);
	kt_test::TwoProducers p(f.base);
	p.start();
	for (int turns = 0; !p.all_fired() && !wd.fired && turns < 100000; turns++)
		event_base_loop(f.eb, EVLOOP_ONCE);
	p.join();
	ASSERT_FALSE(wd.fired);
	p.expect_each_applied_and_fired_once();
	f.finish();
}

// The base's clock in an I/O callback is the one from before the wait until
// kt_event_update_time(). The I/O: a timerfd readable 100 ms into an idle wait.
TEST(Event, IoCallbackArmsFromThePresentAfterUpdateTime) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(f.eb);
	struct Io {
		kt_test::LateIo late;
		kt_event *ke;
	} io;
	io.ke = &f.ke;
	ASSERT_GE(io.late.fd, 0);
	io.late.timer.setup(f.base);
	StopOnFire(io.late.timer, f.eb);
	event *rd = event_new(f.eb, io.late.fd, EV_READ, [](evutil_socket_t, short, void *a) {
		Io *s = static_cast<Io *>(a);
		s->late.on_readable([s] { kt_event_update_time(s->ke); });
	}, &io);
	event_add(rd, nullptr);
	event_base_dispatch(f.eb);
	ASSERT_FALSE(wd.fired);
	io.late.expect_armed_from_the_present();
	event_free(rd);
	f.finish();
}

// Every kt_event_update_time() reads the clock: the call before it may have
// come before a wait, or before a long callback. Two ways, each arming a
// 100 ms timer that must fire 100 ms after that arm by the real clock, not
// at once. With priorities: the program calls it and arms before the loop
// starts, then spends 150 ms before the loop, whose first callback, at
// priority 0 (the adapter's turn is at the default, lower one, and libevent
// runs one priority per iteration), calls it and arms. Without: two
// callbacks of one iteration, the first calling it and then working for
// 150 ms, the second calling it and arming.
TEST(Event, EveryUpdateTimeReadsTheClock) {
	for (bool priorities : {true, false}) {
		Fixture f;
		if (priorities)
			ASSERT_EQ(event_base_priority_init(f.eb, 3), 0);
		ASSERT_EQ(f.init(), 0);
		Watchdog wd(f.eb);
		struct S {
			kt_event *ke;
			Timer t;
			uint64_t armed_ns = 0;
			int calls = 0;
			bool priorities;
		} s;
		s.ke = &f.ke;
		s.priorities = priorities;
		s.t.setup(f.base);
		StopOnFire(s.t, f.eb);
		auto on_io = [](evutil_socket_t fd, short, void *a) {
			S *x = static_cast<S *>(a);
			uint64_t v;
			(void)!read(fd, &v, sizeof(v));
			kt_event_update_time(x->ke);
			if (!x->priorities && x->calls++ == 0) {
				usleep(150000); // a long callback; the other one follows
				return;
			}
			x->armed_ns = MonoNs();
			kt_timer_arm(&x->t.t, KT_MILLIS(100));
		};
		int fds[2] = {eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC), eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC)};
		ASSERT_GE(fds[0], 0);
		ASSERT_GE(fds[1], 0);
		event *ev[2];
		for (int i = 0; i < 2; i++) {
			ev[i] = event_new(f.eb, fds[i], EV_READ, on_io, &s);
			if (priorities)
				ASSERT_EQ(event_priority_set(ev[i], 0), 0);
		}
		event_add(ev[0], nullptr);
		Timer own; // the program's own arm before the loop
		own.setup(f.base);
		if (priorities) {
			kt_event_update_time(&f.ke);
			kt_timer_arm(&own.t, KT_MILLIS(5000));
			usleep(150000); // more set-up before the loop
		} else {
			event_add(ev[1], nullptr);
		}
		event_base_dispatch(f.eb);
		ASSERT_FALSE(wd.fired);
		EXPECT_EQ(s.t.fired, 1);
		EXPECT_GE(s.t.fired_mono_ns, s.armed_ns + 100000000)
		    << "fired " << (s.t.fired_mono_ns - s.armed_ns) / 1000000 << " ms after a 100 ms arm ("
		    << (priorities ? "a priority-0 callback after the program's own call before the loop"
				   : "after another callback's call and 150 ms of its work")
		    << ")";
		for (int i = 0; i < 2; i++) {
			event_free(ev[i]);
			close(fds[i]);
		}
		f.finish();
	}
}

// event_base_dispatch() keeps running for the adapter: a timer armed before
// the loop starts fires, and only its loopbreak ends the loop.
TEST(Event, ByDefaultTheLoopRunsForTheAdapter) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(f.eb);
	Timer t;
	t.setup(f.base);
	StopOnFire(t, f.eb);
	kt_event_update_time(&f.ke);
	kt_timer_arm(&t.t, KT_MILLIS(20));
	EXPECT_EQ(event_base_dispatch(f.eb), 0);
	ASSERT_FALSE(wd.fired);
	EXPECT_EQ(t.fired, 1);
	f.finish();
}

// kt_event_dispatch(): returns once the caller's last event is gone, with a
// ktimer timer still pending 60 s out. No watchdog event here (it would be
// one of the caller's): alarm() bounds the test instead.
TEST(Event, DispatchEndsWhenOnlyTheAdapterRemains) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	alarm(20);
	Timer pending, soon;
	pending.setup(f.base);
	soon.setup(f.base);
	kt_event_update_time(&f.ke);
	kt_timer_arm(&pending.t, KT_MILLIS(60000));
	kt_timer_arm(&soon.t, KT_MILLIS(5));
	event *user = evtimer_new(f.eb, [](evutil_socket_t, short, void *) {}, nullptr);
	timeval tv{0, 30000};
	evtimer_add(user, &tv);
	EXPECT_EQ(kt_event_dispatch(&f.ke), 1);
	alarm(0);
	EXPECT_EQ(soon.fired, 1);
	EXPECT_EQ(pending.fired, 0);
	EXPECT_TRUE(kt_timer_pending(&pending.t));
	event_free(user);
	f.finish();
}

// A shutdown timer closes the adapter from inside the turn: the close takes
// effect at once (its event freed from inside its own callback, which
// libevent allows), the turn ends without touching it, and
// kt_event_dispatch() returns 0; the event_base goes on with the caller's
// events; what was pending stays pending.
TEST(Event, ATimerCallbackMayCloseTheAdapter) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	alarm(20);
	kt_test::ShutdownTimer st([&f] { EXPECT_EQ(kt_event_close(&f.ke), 0); });
	kt_event_update_time(&f.ke);
	st.arm(f.base);
	static int user_ran;
	user_ran = 0;
	event *user = evtimer_new(f.eb, [](evutil_socket_t, short, void *) { user_ran++; }, nullptr);
	timeval tv{0, 100000};
	evtimer_add(user, &tv); // the caller's: keeps the dispatch going past the shutdown
	EXPECT_EQ(kt_event_dispatch(&f.ke), 0);
	EXPECT_EQ(f.ke.ev, nullptr);
	st.expect_closed_later_pending();
	EXPECT_EQ(kt_event_dispatch(&f.ke), -EINVAL);
	EXPECT_EQ(user_ran, 0);
	EXPECT_EQ(event_base_loop(f.eb, 0), 1); // the caller's event runs, then none is left
	EXPECT_EQ(user_ran, 1);
	alarm(0);
	event_free(user);
	f.finish(); // closed already: 0
}

// The same from a remote operation's done callback, under
// event_base_dispatch() itself.
TEST(Event, ADoneCallbackMayCloseTheAdapter) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(f.eb, 5);
	Timer t;
	t.setup(f.base);
	ASSERT_EQ(kt_remote_arm(&t.t, KT_MILLIS(10000), [](kt_timer *, int, void *a) {
		kt_event *ke = static_cast<kt_event *>(a);
		event_base *eb = ke->evbase;
		EXPECT_EQ(kt_event_close(ke), 0);
		event_base_loopbreak(eb);
	}, &f.ke), 0);
	EXPECT_EQ(event_base_dispatch(f.eb), 0);
	EXPECT_FALSE(wd.fired);
	EXPECT_EQ(f.ke.ev, nullptr);
	EXPECT_TRUE(kt_timer_pending(&t.t));
	f.finish();
}

// kt_event_dispatch() with none of the caller's events: nothing to wait for,
// so it returns at once - before a ktimer timer 2 s away fires, and without
// blocking when nothing at all is pending (a thread that would wake it
// after 3 s must not be needed).
TEST(Event, DispatchWithNoneOfTheCallersEventsReturnsAtOnce) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	alarm(20);
	std::atomic<bool> woken{false}, done{false};
	std::thread rescue([&] {
		for (int i = 0; i < 300 && !done; i++)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		if (!done) {
			woken = true;
			kt_base_wake(f.base);
		}
	});
	EXPECT_EQ(kt_event_dispatch(&f.ke), 1); // nothing pending at all
	Timer later;
	later.setup(f.base);
	kt_event_update_time(&f.ke);
	kt_timer_arm(&later.t, KT_MILLIS(2000));
	EXPECT_EQ(kt_event_dispatch(&f.ke), 1); // only a ktimer timer
	done = true;
	rescue.join();
	alarm(0);
	EXPECT_FALSE(woken) << "kt_event_dispatch() blocked until another thread woke it";
	EXPECT_EQ(later.fired, 0);
	EXPECT_TRUE(kt_timer_pending(&later.t));
	f.finish();
}

// Close with timers pending (wheel and precise) and operations queued by
// another thread after the close: nothing fires, nothing leaks (valgrind
// and ASan check), each dropped operation reports -ECANCELED.
TEST(Event, CloseWithPendingTimersLeaksNothing) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	kt_event_update_time(&f.ke);
	kt_test::PendingAtClose p(f.base);
	event_base_loop(f.eb, EVLOOP_NONBLOCK);
	ASSERT_EQ(kt_event_close(&f.ke), 0);
	p.queue_remote_arms_from_another_thread();
	f.finish(); // a second close is harmless; kt_base_free() drops the 10
	p.expect_nothing_fired();
}

// A ktimer callback frees its connection: its libevent event and its other
// timer go first.
TEST(Event, CallbackMayFreeTheConnection) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(f.eb);
	struct Conn {
		event *io; // stands for the connection's read event
		kt_timer idle, header{};
		int *freed;
	};
	int freed = 0;
	const int n = 20;
	kt_event_update_time(&f.ke);
	for (int i = 0; i < n; i++) {
		Conn *c = new Conn(); // zeroed: a timer is set up from a known state
		c->freed = &freed;
		c->io = evtimer_new(f.eb, [](evutil_socket_t, short, void *) { FAIL(); }, c);
		timeval tv{60, 0};
		evtimer_add(c->io, &tv);
		kt_timer_setup(&c->header, f.base, [](kt_timer *) { FAIL(); }, 0);
		kt_timer_arm(&c->header, KT_MILLIS(30000));
		kt_timer_setup(&c->idle, f.base, [](kt_timer *t) {
			Conn *c = kt_container_of(t, Conn, idle);
			event_free(c->io);
			kt_timer_delete(&c->header);
			++*c->freed;
			delete c;
		}, 0);
		kt_timer_arm(&c->idle, KT_MILLIS(uint32_t(i)));
	}
	for (int turns = 0; freed < n && !wd.fired && turns < 10000; turns++)
		event_base_loop(f.eb, EVLOOP_ONCE);
	ASSERT_FALSE(wd.fired);
	EXPECT_EQ(freed, n);
	EXPECT_EQ(kt_base_pending_count(f.base), 0u);
	f.finish();
}

// Closing after a failed init, closing a never-initialized struct and
// closing twice are no-ops that return 0 and close no descriptor (a struct
// of garbage whose init failed included: init marks it closed first).
TEST(Event, CloseAfterAFailedInitOrTwiceClosesNothing) {
	Fixture f;
	kt_base_config cfg{1, KT_CLOCK_MANUAL, 0};
	kt_base *manual = kt_base_new(&cfg);
	kt_test::StdinWatch in;
	ASSERT_GE(in.saved, 0);
	kt_event zero{};
	EXPECT_EQ(kt_event_close(&zero), 0); // never initialized
	EXPECT_EQ(kt_event_init(&zero, f.eb, manual), -EINVAL);
	EXPECT_EQ(kt_event_close(&zero), 0);
	EXPECT_EQ(kt_event_close(&zero), 0);
	kt_event garbage;
	memset(&garbage, 0x5a, sizeof(garbage));
	EXPECT_EQ(kt_event_init(&garbage, f.eb, manual), -EINVAL);
	EXPECT_EQ(kt_event_close(&garbage), 0);
	EXPECT_EQ(kt_event_dispatch(&garbage), -EINVAL);
	kt_event ok;
	ASSERT_EQ(kt_event_init(&ok, f.eb, f.base), 0);
	EXPECT_EQ(kt_event_close(&ok), 0);
	EXPECT_EQ(kt_event_close(&ok), 0);
	in.check();
	EXPECT_FALSE(in.closed) << "kt_event_close() closed descriptor 0";
	kt_base_free(manual);
}

// A burst of 1,000 expiries under a run limit of 100: libevent polls its I/O
// between the slices, and every timer fires once.
TEST(Event, ALimitedRunPollsIoBetweenSlicesOfABurst) {
	kt_test::Burst burst;
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	kt_event_update_time(&f.ke); // before arming, as documented
	burst.arm(f.base);
	int efd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC); // readable, never read
	ASSERT_GE(efd, 0);
	burst.loop = f.eb;
	event *io = event_new(f.eb, efd, EV_READ | EV_PERSIST, [](evutil_socket_t, short, void *arg) {
		kt_test::Burst *b = static_cast<kt_test::Burst *>(arg);
		b->saw_io();
		if (b->done())
			event_base_loopbreak(static_cast<event_base *>(b->loop));
	}, &burst);
	ASSERT_EQ(event_add(io, nullptr), 0);
	{
		Watchdog w(f.eb);
		event_base_dispatch(f.eb);
		EXPECT_FALSE(w.fired);
	}
	burst.expect_each_fired_once();
	EXPECT_GE(burst.io_during(), 5) << "the readable descriptor waited for the whole burst";
	event_free(io);
	f.finish();
	close(efd);
}

namespace {

// The parent's loop after a fork: turns until both its timers fired, for at
// most 5 s.
void TurnUntilFired(event_base *eb, const kt_test::ForkTimers &ft) {
	for (uint64_t until = MonoNs() + 5000000000u; !ft.fired() && MonoNs() < until;)
		ASSERT_EQ(event_base_loop(eb, EVLOOP_ONCE), 0);
}

} // namespace

// A child of fork() that calls event_reinit() (libevent's rule) but forgets
// kt_event_fork(), and runs its loop anyway: kt_event_dispatch() is refused
// with -EBADFD, and the adapter's turn, when libevent runs it, only takes
// its event out of the child's loop - no ktimer callback runs there, and
// the eventfd both processes share is never read. The parent's timers fire
// in the parent, never early, and a remote arm from another thread still
// wakes the parent's loop (its wake-up was not taken by the child).
TEST(Event, AForkedChildThatForgetsKtEventForkLeavesTheParentsWakeUpsAlone) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	kt_test::ForkTimers ft;
	kt_event_update_time(&f.ke);
	ft.arm(f.base);
	kt_event_update_time(&f.ke);
	event_base_loop(f.eb, EVLOOP_NONBLOCK); // aimed at the precise timer
	uint64_t turns = f.ke.turns;
	pid_t child = kt_test::StartChild([&]() -> int {
		if (event_reinit(f.eb) != 0)
			return 1;
		if (kt_event_dispatch(&f.ke) != -EBADFD)
			return 2;
		for (uint64_t until = MonoNs() + 300000000; MonoNs() < until;) {
			event_base_loop(f.eb, EVLOOP_NONBLOCK);
			usleep(1000);
		}
		if (ft.any_fired() || f.ke.turns != turns)
			return 3;
		return 0;
	});
	TurnUntilFired(f.eb, ft);
	EXPECT_EQ(ft.check(), 0) << "the parent's timers";
	// Nothing pending now: only the waker can end the wait.
	Watchdog wd(f.eb, 5);
	Timer remote;
	remote.setup(f.base);
	StopOnFire(remote, f.eb);
	std::thread producer([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
		kt_remote_arm(&remote.t, KT_MILLIS(0), nullptr, nullptr);
	});
	event_base_dispatch(f.eb);
	producer.join();
	EXPECT_FALSE(wd.fired) << "the parent's wake-up was lost";
	EXPECT_EQ(remote.fired, 1);
	EXPECT_EQ(kt_test::WaitChild(child), 0) << "the child's check that failed";
	f.finish();
}

// A child that calls event_reinit() and kt_event_fork() gets an eventfd of
// its own and keeps its timers: both processes' copies fire, each once,
// never early; the child's waker works; a second call does nothing.
TEST(Event, AForkedChildWithKtEventForkFiresItsTimersAndSoDoesTheParent) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	kt_test::ForkTimers ft;
	kt_event_update_time(&f.ke);
	ft.arm(f.base);
	kt_event_update_time(&f.ke);
	event_base_loop(f.eb, EVLOOP_NONBLOCK);
	pid_t child = kt_test::StartChild([&]() -> int {
		if (event_reinit(f.eb) != 0 || !kt_base_forked(f.base))
			return 1;
		if (kt_event_fork(&f.ke) != 0 || kt_base_forked(f.base) || kt_event_fork(&f.ke) != 0)
			return 2;
		for (uint64_t until = MonoNs() + 5000000000u; !ft.fired() && MonoNs() < until;)
			if (event_base_loop(f.eb, EVLOOP_ONCE) != 0)
				return 3;
		if (int r = ft.check())
			return r;
		// Nothing pending: a wake-up runs a turn (the alarm ends a hang).
		uint64_t turns = f.ke.turns;
		if (kt_base_wake(f.base) != 1 || event_base_loop(f.eb, EVLOOP_ONCE) != 0 || f.ke.turns != turns + 1)
			return 4;
		return kt_event_close(&f.ke) == 0 ? 0 : 5;
	});
	TurnUntilFired(f.eb, ft);
	EXPECT_EQ(ft.check(), 0) << "the parent's timers";
	EXPECT_EQ(kt_test::WaitChild(child), 0) << "the child's check that failed";
	EXPECT_EQ(kt_event_fork(&f.ke), 0); // in the parent: nothing to do
	f.finish();
}
