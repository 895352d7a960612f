// kt_uv: a ktimer base driven by a real libuv loop, in real time. Nothing
// asserts on how long anything took except "not before the deadline"; the
// lateness bound is checked through the aim (the uv_timer_t is aimed at the
// base's next expiry before every poll), not through the wall clock. Every
// loop is bounded by an unreferenced watchdog timer.
#include <ktimer/ktimer.h>
#include <ktimer/uv.h>

#include <gtest/gtest.h>

#include "tests/adapters/loop_fixture.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <vector>

namespace {

using kt_test::MonoNs;

// Stops the loop if a test would otherwise hang; unreferenced, so it never
// keeps the loop alive by itself.
struct Watchdog {
	uv_timer_t t;
	bool fired = false;
	Watchdog(uv_loop_t *loop, uint64_t ms = 10000) {
		uv_timer_init(loop, &t);
		t.data = this;
		uv_timer_start(&t, [](uv_timer_t *h) {
			static_cast<Watchdog *>(h->data)->fired = true;
			uv_stop(h->loop);
		}, ms, 0);
		uv_unref(reinterpret_cast<uv_handle_t *>(&t));
	}
	void close() { uv_close(reinterpret_cast<uv_handle_t *>(&t), nullptr); }
};

using Timer = kt_test::LoopTimer;

// Stops the libuv loop when t fires.
void StopOnFire(Timer &t, uv_loop_t *loop) {
	t.on_fire = [](void *arg) { uv_stop(static_cast<uv_loop_t *>(arg)); };
	t.on_fire_arg = loop;
}

// A loop, a base and the adapter, torn down in the documented order.
struct Fixture {
	uv_loop_t loop;
	kt_base *base;
	kt_uv ku;
	bool closed = false;
	Fixture() {
		uv_loop_init(&loop);
		base = kt_base_new(nullptr);
	}
	int init() { return kt_uv_init(&ku, &loop, base); }
	void close() {
		loop.data = this;
		ASSERT_EQ(kt_uv_close(&ku, [](kt_uv *k) { static_cast<Fixture *>(k->loop->data)->closed = true; }), 0);
	}
	void finish() {
		loop.data = this;
		if (!closed && !ku.closing)
			close();
		for (int i = 0; i < 10 && !closed; i++)
			uv_run(&loop, UV_RUN_NOWAIT);
		ASSERT_TRUE(closed);
		uv_run(&loop, UV_RUN_NOWAIT); // the close callbacks of the test's own handles
		EXPECT_EQ(uv_loop_close(&loop), 0); // UV_EBUSY: a handle was left open
		EXPECT_EQ(kt_base_free(base), 0);
	}
};

} // namespace

TEST(Uv, InitRejectsNullArguments) {
	Fixture f;
	EXPECT_EQ(kt_uv_init(nullptr, &f.loop, f.base), -EINVAL);
	EXPECT_EQ(kt_uv_init(&f.ku, nullptr, f.base), -EINVAL);
	EXPECT_EQ(kt_uv_init(&f.ku, &f.loop, nullptr), -EINVAL);
	EXPECT_EQ(kt_uv_close(nullptr, nullptr), -EINVAL);
	uv_loop_close(&f.loop); // nothing was opened on it
	kt_base_free(f.base);
}

// The re-aim: a test prepare handle started before kt_uv_init() runs after
// the adapter's (libuv runs prepare handles newest first) and sees the aim
// the poll is about to use. It must be the base's next expiry, exactly.
// How many polls the run has depends on the machine: a slow turn (a loaded
// machine, valgrind) finds several timers due at once. So what is asserted
// is what the run saw: each iteration's check phase runs the base after
// its prepare phase, so every turn that fired a timer had its aim checked
// before its poll, with that timer pending - and the first check, before
// any turn, had all four pending.
TEST(Uv, TimerIsAimedAtTheNextExpiryBeforeEveryPoll) {
	Fixture f;
	struct Probe {
		uv_prepare_t p;
		kt_uv *ku;
		int checked = 0, wrong = 0, idle = 0;
		size_t first_pending = 0;
		std::vector<uint64_t> turns_checked; // the adapter's turn count at each check
	} probe;
	uv_prepare_init(&f.loop, &probe.p);
	probe.p.data = &probe;
	uv_prepare_start(&probe.p, [](uv_prepare_t *h) {
		Probe *pr = static_cast<Probe *>(h->data);
		int64_t left = kt_base_next_timeout(pr->ku->base);
		uint64_t want = left < 0 ? UINT64_MAX : kt_base_now(pr->ku->base) + uint64_t(left);
		if (pr->checked++ == 0)
			pr->first_pending = kt_base_pending_count(pr->ku->base);
		pr->turns_checked.push_back(pr->ku->turns);
		pr->idle += left < 0;
		if (pr->ku->aimed_ms != want)
			pr->wrong++;
	});
	ASSERT_EQ(f.init(), 0);
	probe.ku = &f.ku;
	Watchdog wd(&f.loop);
	Timer t[4];
	// The turn each timer fired in (kt_uv.turns counts check phases); the
	// last one, t[0], stops the loop.
	struct FiredIn {
		kt_uv *ku;
		uv_loop_t *stop;
		uint64_t turn;
	} fired_in[4];
	const uint32_t delays[4] = {300, 120, 40, 5};
	kt_base_update_time(f.base);
	for (int i = 0; i < 4; i++) {
		t[i].setup(f.base);
		fired_in[i] = {&f.ku, i == 0 ? &f.loop : nullptr, 0};
		t[i].on_fire = [](void *arg) {
			FiredIn *in = static_cast<FiredIn *>(arg);
			in->turn = in->ku->turns;
			if (in->stop)
				uv_stop(in->stop);
		};
		t[i].on_fire_arg = &fired_in[i];
		kt_timer_arm(&t[i].t, KT_MILLIS(delays[i]));
	}
	uv_run(&f.loop, UV_RUN_DEFAULT);
	ASSERT_FALSE(wd.fired);
	EXPECT_EQ(probe.first_pending, 4u) << "the first check comes before any turn";
	std::vector<uint64_t> turns_fired;
	for (int i = 0; i < 4; i++) {
		EXPECT_EQ(t[i].fired, 1);
		// Checked in the iteration of that turn: before the turn ran.
		EXPECT_NE(std::find(probe.turns_checked.begin(), probe.turns_checked.end(), fired_in[i].turn - 1),
			  probe.turns_checked.end())
		    << "the timer of " << delays[i] << " ms fired in turn " << fired_in[i].turn
		    << " without its aim checked before that turn's poll";
		if (std::find(turns_fired.begin(), turns_fired.end(), fired_in[i].turn) == turns_fired.end())
			turns_fired.push_back(fired_in[i].turn);
	}
	EXPECT_GE(size_t(probe.checked), turns_fired.size()) << "a check per turn that fired";
	EXPECT_EQ(probe.wrong, 0);
	// At most one aim per distinct deadline (fewer if a slow turn finds two
	// due at once): pushing nothing back costs libuv's timer heap nothing.
	EXPECT_LE(f.ku.aims, 4u);
	uv_run(&f.loop, UV_RUN_NOWAIT); // nothing pending now: the timer is stopped
	EXPECT_EQ(f.ku.aimed_ms, UINT64_MAX);
	EXPECT_GE(probe.idle, 1);
	uv_close(reinterpret_cast<uv_handle_t *>(&probe.p), nullptr);
	wd.close();
	f.finish();
}

TEST(Uv, TimersFireNeverEarly) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(&f.loop);
	kt_test::DelayedTimers d;
	d.arm(f.base);
	StopOnFire(d.last(), &f.loop);
	uv_run(&f.loop, UV_RUN_DEFAULT);
	ASSERT_FALSE(wd.fired);
	d.expect_each_fired_once_never_early();
	EXPECT_EQ(f.ku.fired, uint64_t(d.kN));
	wd.close();
	f.finish();
}

// A timer armed from a libuv callback for earlier than the current aim must
// move the aim; otherwise it would wait for the 60 s timer and the watchdog
// would end the test.
TEST(Uv, ArmingEarlierThanTheAimReAimsTheTimer) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(&f.loop, 5000);
	Timer late, early;
	late.setup(f.base);
	early.setup(f.base);
	kt_timer_arm(&late.t, KT_MILLIS(60000));
	uv_run(&f.loop, UV_RUN_NOWAIT);
	uint64_t first_aim = f.ku.aimed_ms;
	ASSERT_NE(first_aim, UINT64_MAX);
	// Arm the early one from a libuv timer callback, mid-loop.
	struct Arm {
		uv_timer_t h;
		Timer *early;
	} arm{{}, &early};
	uv_timer_init(&f.loop, &arm.h);
	arm.h.data = &arm;
	uv_timer_start(&arm.h, [](uv_timer_t *h) {
		Arm *a = static_cast<Arm *>(h->data);
		kt_timer_arm(&a->early->t, KT_MILLIS(20));
	}, 10, 0);
	StopOnFire(early, &f.loop);
	uv_run(&f.loop, UV_RUN_DEFAULT);
	ASSERT_FALSE(wd.fired) << "the early timer waited for the old aim";
	EXPECT_EQ(early.fired, 1);
	EXPECT_EQ(late.fired, 0);
	EXPECT_TRUE(kt_timer_pending(&late.t));
	EXPECT_LT(f.ku.aimed_ms, first_aim);
	uv_run(&f.loop, UV_RUN_NOWAIT); // back to the late one
	EXPECT_EQ(f.ku.aimed_ms, first_aim);
	uv_close(reinterpret_cast<uv_handle_t *>(&arm.h), nullptr);
	wd.close();
	f.finish();
}

TEST(Uv, PreciseTimerIsNeverEarly) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(&f.loop);
	struct P {
		kt_hrtimer t{};
		uint64_t at = 0;
	} p;
	kt_hrtimer_setup(&p.t, f.base, [](kt_hrtimer *t) {
		P *q = kt_container_of(t, P, t);
		q->at = MonoNs();
	});
	for (int i = 0; i < 10 && !wd.fired; i++) {
		p.at = 0;
		uint64_t deadline = MonoNs() + 1500000; // 1.5 ms: between two milliseconds
		kt_hrtimer_start(&p.t, deadline);
		for (int turns = 0; !p.at && !wd.fired && turns < 1000; turns++)
			uv_run(&f.loop, UV_RUN_ONCE);
		ASSERT_NE(p.at, 0u);
		EXPECT_GE(p.at, deadline);
	}
	wd.close();
	f.finish();
}

// Nothing pending and no I/O: the loop blocks in epoll_wait() with no
// timeout. Only the waker can end the wait.
TEST(Uv, RemoteArmWakesAnIdleLoop) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(&f.loop);
	Timer t;
	StopOnFire(t, &f.loop);
	t.setup(f.base);
	std::thread producer([&] { kt_remote_arm(&t.t, KT_MILLIS(0), nullptr, nullptr); });
	uv_run(&f.loop, UV_RUN_DEFAULT);
	producer.join();
	ASSERT_FALSE(wd.fired) << "the loop was not woken";
	EXPECT_EQ(t.fired, 1);
	wd.close();
	f.finish();
}

// Many producers, many timers: each fires exactly once, none is lost.
TEST(Uv, RemoteArmsFromTwoThreadsAllFireOnce) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(&f.loop);
	kt_test::TwoProducers p(f.base);
	p.start();
	for (int turns = 0; !p.all_fired() && !wd.fired && turns < 100000; turns++)
		uv_run(&f.loop, UV_RUN_ONCE);
	p.join();
	ASSERT_FALSE(wd.fired);
	p.expect_each_applied_and_fired_once();
	wd.close();
	f.finish();
}

// libuv has no hook between its wait and the I/O callbacks: the base's clock
// is the one from before the wait until kt_uv_update_time(). The I/O here is
// a timerfd that becomes readable 100 ms into an otherwise idle wait.
TEST(Uv, IoCallbackArmsFromThePresentAfterUpdateTime) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(&f.loop);
	struct Io {
		uv_poll_t poll;
		kt_test::LateIo late;
		kt_uv *ku;
	} io;
	io.ku = &f.ku;
	ASSERT_GE(io.late.fd, 0);
	io.late.timer.setup(f.base);
	StopOnFire(io.late.timer, &f.loop);
	uv_poll_init(&f.loop, &io.poll, io.late.fd);
	io.poll.data = &io;
	uv_poll_start(&io.poll, UV_READABLE, [](uv_poll_t *h, int, int) {
		Io *s = static_cast<Io *>(h->data);
		uv_poll_stop(h);
		s->late.on_readable([s] { kt_uv_update_time(s->ku); });
	});
	uv_run(&f.loop, UV_RUN_DEFAULT);
	ASSERT_FALSE(wd.fired);
	// Why the call is needed: the clock was read before the 100 ms wait.
	io.late.expect_armed_from_the_present();
	uv_close(reinterpret_cast<uv_handle_t *>(&io.poll), nullptr);
	uv_run(&f.loop, UV_RUN_NOWAIT);
	wd.close();
	f.finish();
}

// The first glue a user wrote exited at once: nothing primed the loop. The
// adapter's handles are referenced, so a timer armed before uv_run() fires.
TEST(Uv, ByDefaultTheLoopRunsUntilClose) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(&f.loop);
	f.loop.data = &f;
	struct C {
		Timer t;
		Fixture *f;
	} c;
	c.f = &f;
	kt_timer_setup(&c.t.t, f.base, [](kt_timer *t) {
		C *s = kt_container_of(t, C, t.t);
		s->t.fired++;
		s->f->close(); // from inside a ktimer callback
	}, 0);
	kt_timer_arm(&c.t.t, KT_MILLIS(20));
	EXPECT_EQ(uv_run(&f.loop, UV_RUN_DEFAULT), 0); // returns: only because of the close
	ASSERT_FALSE(wd.fired);
	EXPECT_EQ(c.t.fired, 1);
	EXPECT_TRUE(f.closed);
	wd.close();
	f.finish();
}

// kt_uv_unref(): uv_run() returns when the caller's last handle is gone,
// even with a ktimer timer pending 60 s out.
TEST(Uv, UnrefLetsTheLoopEndWithOnlyKtimerHandles) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	kt_uv_unref(&f.ku);
	Watchdog wd(&f.loop, 5000);
	Timer pending, soon;
	pending.setup(f.base);
	soon.setup(f.base);
	kt_timer_arm(&pending.t, KT_MILLIS(60000));
	kt_timer_arm(&soon.t, KT_MILLIS(5));
	uv_timer_t user; // the caller's own work: 30 ms
	uv_timer_init(&f.loop, &user);
	uv_timer_start(&user, [](uv_timer_t *h) { uv_close(reinterpret_cast<uv_handle_t *>(h), nullptr); }, 30, 0);
	EXPECT_EQ(uv_run(&f.loop, UV_RUN_DEFAULT), 0);
	ASSERT_FALSE(wd.fired) << "the adapter kept the loop alive";
	EXPECT_EQ(soon.fired, 1); // the adapter worked while the loop ran
	EXPECT_EQ(pending.fired, 0);
	EXPECT_TRUE(kt_timer_pending(&pending.t));
	// With nothing of the caller's left, uv_run() does not even start.
	EXPECT_EQ(uv_run(&f.loop, UV_RUN_DEFAULT), 0);
	kt_uv_ref(&f.ku);
	EXPECT_NE(uv_loop_alive(&f.loop), 0);
	wd.close();
	f.finish();
}

// Close with timers pending on the wheel and the precise heap, and with
// operations that other threads queue after the close: nothing fires,
// nothing leaks (valgrind and ASan check), each dropped operation reports
// -ECANCELED so its argument can be freed.
TEST(Uv, CloseWithPendingTimersLeaksNothing) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	kt_test::PendingAtClose p(f.base);
	uv_run(&f.loop, UV_RUN_NOWAIT);
	f.close();
	p.queue_remote_arms_from_another_thread();
	f.finish(); // kt_base_free() drops the 10 operations
	p.expect_nothing_fired();
}

// What the header promises a ktimer callback may free: a connection whose
// uv handle it closes is freed in the close callback (later in the same
// iteration), after its other timers are deleted.
TEST(Uv, CallbackMayCloseTheHandleAndFreeTheConnection) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(&f.loop);
	struct Conn {
		uv_timer_t io; // stands for the connection's uv_tcp_t
		kt_timer idle, header{};
		int *freed;
	};
	int freed = 0;
	const int n = 20;
	for (int i = 0; i < n; i++) {
		Conn *c = new Conn(); // zeroed: a timer is set up from a known state
		c->freed = &freed;
		uv_timer_init(&f.loop, &c->io);
		c->io.data = c;
		kt_timer_setup(&c->header, f.base, [](kt_timer *) { FAIL(); }, 0);
		kt_timer_arm(&c->header, KT_MILLIS(30000));
		kt_timer_setup(&c->idle, f.base, [](kt_timer *t) {
			Conn *c = kt_container_of(t, Conn, idle);
			uv_close(reinterpret_cast<uv_handle_t *>(&c->io), [](uv_handle_t *h) {
				Conn *c = static_cast<Conn *>(h->data);
				kt_timer_delete(&c->header);
				++*c->freed;
				delete c;
			});
		}, 0);
		kt_timer_arm(&c->idle, KT_MILLIS(uint32_t(i)));
	}
	for (int turns = 0; freed < n && !wd.fired && turns < 10000; turns++)
		uv_run(&f.loop, UV_RUN_ONCE);
	ASSERT_FALSE(wd.fired);
	EXPECT_EQ(freed, n);
	EXPECT_EQ(kt_base_pending_count(f.base), 0u);
	wd.close();
	f.finish();
}

// kt_uv_close() on an adapter whose init failed, on a zero-filled one never
// initialized and a second time returns -EINVAL and touches no handle
// (uv_close() on a handle never initialized aborts on libuv's assertion).
TEST(Uv, CloseAfterAFailedInitOrTwiceIsRefused) {
	Fixture f;
	kt_base_config cfg{1, KT_CLOCK_MANUAL, 0};
	kt_base *manual = kt_base_new(&cfg);
	kt_uv zero{};
	EXPECT_EQ(kt_uv_close(&zero, nullptr), -EINVAL); // never initialized
	EXPECT_EQ(kt_uv_init(&zero, &f.loop, manual), -EINVAL);
	EXPECT_EQ(kt_uv_close(&zero, nullptr), -EINVAL);
	kt_uv garbage;
	memset(static_cast<void *>(&garbage), 0x5a, sizeof(garbage));
	EXPECT_EQ(kt_uv_init(&garbage, &f.loop, manual), -EINVAL);
	EXPECT_EQ(kt_uv_close(&garbage, nullptr), -EINVAL);
	ASSERT_EQ(f.init(), 0);
	f.close();
	EXPECT_EQ(kt_uv_close(&f.ku, nullptr), -EINVAL); // closing
	f.finish();
	EXPECT_EQ(kt_uv_close(&f.ku, nullptr), -EINVAL); // closed
	kt_base_free(manual);
}

// A precise deadline near the end of time (within 1 ms of 2^64 ns) must not
// be aimed at once, which would spin the loop: rounded up to libuv's
// millisecond it must not wrap to 0. It lies past the clock's limit (2^44
// ms), which no clock reaches, so the plan does not wait for it at all: the
// libuv timer stays stopped. The latest deadline a plan can name, the limit
// itself, is aimed at exactly.
TEST(Uv, PreciseDeadlineNearTheEndOfTimeIsNotAimedAtOnce) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	kt_hrtimer t{};
	kt_hrtimer_setup(&t, f.base, [](kt_hrtimer *) {});
	ASSERT_EQ(kt_hrtimer_start(&t, UINT64_MAX - 1), 0);
	uv_run(&f.loop, UV_RUN_NOWAIT);
	EXPECT_EQ(f.ku.aimed_ms, UINT64_MAX); // stopped: nothing to wait for
	ASSERT_EQ(kt_hrtimer_start(&t, (UINT64_C(1) << 44) * 1000000), 1);
	uv_run(&f.loop, UV_RUN_NOWAIT);
	EXPECT_EQ(f.ku.aimed_ms, UINT64_C(1) << 44);
	kt_hrtimer_cancel(&t);
	f.finish();
}

// A burst of 1,000 expiries under a run limit of 100: the loop polls its I/O
// between the slices (a descriptor that stays readable is seen while the
// burst is under way, not only after it), and every timer fires once.
TEST(Uv, ALimitedRunPollsIoBetweenSlicesOfABurst) {
	kt_test::Burst burst;
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	burst.arm(f.base);
	int efd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC); // readable, never read
	ASSERT_GE(efd, 0);
	uv_poll_t poll;
	ASSERT_EQ(uv_poll_init(&f.loop, &poll, efd), 0);
	poll.data = &burst;
	uv_poll_start(&poll, UV_READABLE, [](uv_poll_t *h, int, int) {
		kt_test::Burst *b = static_cast<kt_test::Burst *>(h->data);
		b->saw_io();
		if (b->done())
			uv_stop(h->loop);
	});
	Watchdog w(&f.loop);
	uv_run(&f.loop, UV_RUN_DEFAULT);
	EXPECT_FALSE(w.fired);
	burst.expect_each_fired_once();
	EXPECT_GE(burst.io_during(), 5) << "the readable descriptor waited for the whole burst";
	uv_close(reinterpret_cast<uv_handle_t *>(&poll), nullptr);
	w.close();
	f.finish();
	close(efd);
}

// Never early however a program drives uv_run(). After a turn, time spent
// outside the loop (150 ms here) leaves the base's clock behind; what runs
// next - a libuv timer or idle callback of the next uv_run(), before any
// prepare phase, or the program's own code between two uv_run() calls -
// calls kt_uv_update_time() and arms a 100 ms ktimer timer: it must fire
// 100 ms after that arm by the real clock, not at once. Each way: the
// first run UV_RUN_NOWAIT or UV_RUN_ONCE, the next one UV_RUN_DEFAULT; and
// with the program's own code having called kt_uv_update_time() (and
// armed) right after the first run returned, before the time outside the
// loop: a later call must still read the clock.
TEST(Uv, AnArmAfterTimeOutsideTheLoopIsNeverEarly) {
	enum Where { kUvTimer, kUvIdle, kBetweenRuns };
	for (bool own_update_first : {false, true})
		for (uv_run_mode first : {UV_RUN_NOWAIT, UV_RUN_ONCE})
			for (Where where : {kUvTimer, kUvIdle, kBetweenRuns}) {
				Fixture f;
				ASSERT_EQ(f.init(), 0);
				Watchdog wd(&f.loop);
				struct S {
					Timer t;
					kt_uv *ku;
					uint64_t armed_ns = 0;
					void arm() {
						kt_uv_update_time(ku);
						armed_ns = MonoNs();
						kt_timer_arm(&t.t, KT_MILLIS(100));
					}
				} s;
				s.ku = &f.ku;
				s.t.setup(f.base);
				StopOnFire(s.t, &f.loop);
				Timer kick; // a turn for the first run to take (UV_RUN_ONCE returns after it)
				kick.setup(f.base);
				kt_timer_arm(&kick.t, KT_MILLIS(0));
				uv_run(&f.loop, first);
				if (first == UV_RUN_ONCE)
					ASSERT_EQ(kick.fired, 1);
				Timer own; // armed by the program's own code right after the run
				own.setup(f.base);
				if (own_update_first) {
					kt_uv_update_time(&f.ku);
					kt_timer_arm(&own.t, KT_MILLIS(5000));
				}
				usleep(150000); // outside the loop
				uv_timer_t ut;
				uv_idle_t idle;
				uv_timer_init(&f.loop, &ut);
				uv_idle_init(&f.loop, &idle);
				ut.data = idle.data = &s;
				if (where == kUvTimer)
					uv_timer_start(&ut, [](uv_timer_t *h) { static_cast<S *>(h->data)->arm(); }, 0, 0);
				else if (where == kUvIdle)
					uv_idle_start(&idle, [](uv_idle_t *h) {
						uv_idle_stop(h);
						static_cast<S *>(h->data)->arm();
					});
				else
					s.arm();
				uv_run(&f.loop, UV_RUN_DEFAULT);
				ASSERT_FALSE(wd.fired);
				EXPECT_EQ(s.t.fired, 1) << first << " " << where;
				EXPECT_GE(s.t.fired_mono_ns, s.armed_ns + 100000000)
					<< "fired " << (s.t.fired_mono_ns - s.armed_ns) / 1000000 << " ms after a 100 ms arm (first run "
					<< (first == UV_RUN_NOWAIT ? "NOWAIT" : "ONCE") << ", arm from "
					<< (where == kUvTimer ? "a libuv timer" : where == kUvIdle ? "an idle callback" : "between runs")
					<< (own_update_first ? ", after the program's own update before the time outside" : "") << ")";
				uv_close(reinterpret_cast<uv_handle_t *>(&ut), nullptr);
				uv_close(reinterpret_cast<uv_handle_t *>(&idle), nullptr);
				uv_run(&f.loop, UV_RUN_NOWAIT);
				wd.close();
				f.finish();
			}
}

// A shutdown timer closes the adapter from inside the turn (the check
// phase): the adapter stops at once, libuv closes its handles in that
// iteration's closing phase, and the loop then ends by itself; what was
// pending stays pending on the base.
TEST(Uv, ATimerCallbackMayCloseTheAdapter) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	Watchdog wd(&f.loop);
	f.loop.data = &f;
	kt_test::ShutdownTimer st([&f] {
		EXPECT_EQ(kt_uv_close(&f.ku, [](kt_uv *k) { static_cast<Fixture *>(k->loop->data)->closed = true; }), 0);
	});
	st.arm(f.base);
	uv_run(&f.loop, UV_RUN_DEFAULT); // ends once the adapter's handles are closed
	EXPECT_FALSE(wd.fired);
	EXPECT_TRUE(f.closed);
	st.expect_closed_later_pending();
	wd.close();
	f.finish();
}

namespace {

// Turns until both timers fired, at most 5 s (the watchdog).
void TurnUntilFired(uv_loop_t *loop, const kt_test::ForkTimers &ft) {
	Watchdog wd(loop, 5000);
	while (!ft.fired() && !wd.fired)
		uv_run(loop, UV_RUN_ONCE);
	wd.close();
	uv_run(loop, UV_RUN_NOWAIT);
}

} // namespace

// A child of fork() that calls uv_loop_fork() (libuv's rule) but forgets
// kt_uv_fork(): the loop is the child's own, so its timers fire there,
// never early - but the inherited waker is never called (the base still
// says forked). The parent's fire in the parent, never early.
TEST(Uv, AForkedChildThatForgetsKtUvForkFiresItsTimersWithoutTheParentsWaker) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	kt_test::ForkTimers ft;
	ft.arm(f.base);
	uv_run(&f.loop, UV_RUN_NOWAIT);
	pid_t child = kt_test::StartChild([&]() -> int {
		if (uv_loop_fork(&f.loop) != 0)
			return 1;
		TurnUntilFired(&f.loop, ft);
		if (int r = ft.check())
			return r;
		if (!kt_base_forked(f.base) || kt_base_wake(f.base) != 0)
			return 2;
		return 0;
	});
	TurnUntilFired(&f.loop, ft);
	EXPECT_EQ(ft.check(), 0) << "the parent's timers";
	EXPECT_EQ(kt_test::WaitChild(child), 0) << "the child's check that failed";
	f.finish();
}

// A child that calls uv_loop_fork() and kt_uv_fork(): its timers fire,
// never early, its waker works (a wake-up ends an idle wait), and a second
// call does nothing; the parent's fire in the parent.
TEST(Uv, AForkedChildWithKtUvForkFiresItsTimersAndSoDoesTheParent) {
	Fixture f;
	ASSERT_EQ(f.init(), 0);
	kt_test::ForkTimers ft;
	ft.arm(f.base);
	uv_run(&f.loop, UV_RUN_NOWAIT);
	pid_t child = kt_test::StartChild([&]() -> int {
		if (uv_loop_fork(&f.loop) != 0 || kt_uv_fork(&f.ku) != 0 || kt_base_forked(f.base))
			return 1;
		if (kt_uv_fork(&f.ku) != 0)
			return 2;
		TurnUntilFired(&f.loop, ft);
		if (int r = ft.check())
			return r;
		// Nothing pending: a wake-up ends the wait (the alarm ends a hang).
		uint64_t turns = f.ku.turns;
		if (kt_base_wake(f.base) != 1)
			return 3;
		uv_run(&f.loop, UV_RUN_ONCE);
		return f.ku.turns == turns + 1 ? 0 : 4;
	});
	TurnUntilFired(&f.loop, ft);
	EXPECT_EQ(ft.check(), 0) << "the parent's timers";
	EXPECT_EQ(kt_test::WaitChild(child), 0) << "the child's check that failed";
	EXPECT_EQ(kt_uv_fork(&f.ku), 0); // in the parent: nothing to do
	f.finish();
}
