// kt_uring: one worker-loop turn on a real io_uring, in real time. Nothing
// asserts on how long anything took except "not before the deadline". Where
// the kernel refuses io_uring (a seccomp filter, kernel.io_uring_disabled,
// a kernel built without it) the ring tests skip with the kernel's reason;
// the refusal itself is tested by installing such a filter in a child.
#include <ktimer/ktimer.h>
#include <ktimer/uring.h>

#include <gtest/gtest.h>

#include "tests/adapters/loop_fixture.h"
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0 // no valgrind on this architecture: never under it
#endif

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

namespace {

using kt_test::MonoNs;

using Timer = kt_test::LoopTimer;

// A ring and a base; skips the test where the kernel refuses io_uring.
class Uring : public ::testing::Test {
protected:
	kt_base *base = nullptr;
	kt_uring ku;
	bool open = false;
	io_uring_cqe cqe[64];

	void SetUp() override {
		base = kt_base_new(nullptr);
		int r = kt_uring_init(&ku, base, 64, 0);
		if (r == -ENOSYS || r == -EPERM)
			GTEST_SKIP() << "io_uring is unavailable here: kt_uring_init() returned " << r << " ("
				     << strerror(-r) << ")";
		ASSERT_EQ(r, 0) << strerror(-r);
		open = true;
		alarm(30); // the bound on every loop below
	}
	void TearDown() override {
		alarm(0);
		if (open)
			kt_uring_close(&ku);
		EXPECT_EQ(kt_base_free(base), 0);
	}
	// Turns until done() or 100000 turns, handing each completion to
	// handle(); returns the turns taken.
	template <class F, class H> int turn_until(F done, H handle) {
		int turns = 0;
		while (!done() && turns < 100000) {
			int n = kt_uring_wait(&ku, cqe, 64);
			EXPECT_GE(n, 0);
			for (int i = 0; i < n; i++)
				handle(cqe[i]);
			turns++;
		}
		return turns;
	}
	template <class F> int turn_until(F done) {
		return turn_until(done, [](const io_uring_cqe &) {});
	}
	void submit_timeout(uint64_t user_data, __kernel_timespec *ts) {
		io_uring_sqe *sqe = io_uring_get_sqe(&ku.ring);
		ASSERT_NE(sqe, nullptr);
		io_uring_prep_timeout(sqe, ts, 0, 0);
		io_uring_sqe_set_data64(sqe, user_data);
	}
};

// Valgrind runs io_uring_enter() without letting go of the lock it runs
// threads under, so while the loop waits a producer thread cannot run to
// wake it: under memcheck the cross-thread tests would hang, not fail.
#define SKIP_CROSS_THREAD_UNDER_VALGRIND()                                              \
	do {                                                                            \
		if (RUNNING_ON_VALGRIND)                                                \
			GTEST_SKIP() << "valgrind serializes threads through io_uring_enter()"; \
	} while (0)

} // namespace

TEST(UringArgs, InitRejectsBadArguments) {
	kt_base *b = kt_base_new(nullptr);
	kt_uring ku;
	EXPECT_EQ(kt_uring_init(nullptr, b, 8, 0), -EINVAL);
	EXPECT_EQ(kt_uring_init(&ku, nullptr, 8, 0), -EINVAL);
	EXPECT_EQ(kt_uring_init(&ku, b, 8, IORING_SETUP_CQE32), -EINVAL);
	io_uring_cqe c;
	EXPECT_EQ(kt_uring_wait(nullptr, &c, 1), -EINVAL);
	EXPECT_EQ(kt_uring_alive(nullptr), 0);
	kt_uring_close(nullptr);
	kt_base_free(b);
}

// The refusal a container or the kernel.io_uring_disabled sysctl gives,
// made here with a seccomp filter in a child: init reports -EPERM, leaves
// nothing open, and the base has no waker pointing at a dead adapter.
TEST(UringArgs, InitReportsTheKernelsRefusal) {
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		sock_filter filter[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		sock_fprog prog = {sizeof(filter) / sizeof(filter[0]), filter};
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
			_exit(2);
		kt_base *b = kt_base_new(nullptr);
		kt_uring ku;
		int r = kt_uring_init(&ku, b, 8, 0);
		bool clean = ku.wakefd == -1;
		kt_timer t{};
		kt_timer_setup(&t, b, [](kt_timer *) {}, 0);
		kt_remote_arm(&t, KT_MILLIS(1), nullptr, nullptr); // no waker: must not crash
		kt_base_free(b);
		_exit(r == -EPERM && clean ? 0 : 1);
	}
	int status = 0;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), 0) << "2: could not install the filter; 1: wrong error";
}

TEST_F(Uring, TimersFireNeverEarly) {
	kt_test::DelayedTimers d;
	d.arm(base);
	turn_until([&] { return d.last().fired > 0; });
	d.expect_each_fired_once_never_early();
	// One wait per distinct deadline at most, plus the idle turn before the
	// first: the kernel's nanosecond timeout never ends a wait too soon.
	EXPECT_LE(ku.waits, uint64_t(d.kN) + 1);
}

// A completion handled in a turn arms a timer earlier than the deadline the
// previous wait used: the next wait uses the new one. (Without it the
// timer would wait for the 60 s one and alarm() would end the test.)
TEST_F(Uring, ArmingEarlierThanThePendingDeadlineShortensTheWait) {
	Timer late, early;
	late.setup(base);
	early.setup(base);
	kt_timer_arm(&late.t, KT_MILLIS(60000));
	__kernel_timespec ts{0, 10000000};
	submit_timeout(7, &ts);
	turn_until([&] { return early.fired > 0; }, [&](const io_uring_cqe &c) {
		EXPECT_EQ(c.user_data, 7u);
		kt_timer_arm(&early.t, KT_MILLIS(20));
	});
	EXPECT_EQ(early.fired, 1);
	EXPECT_EQ(late.fired, 0);
	EXPECT_EQ(kt_timer_delete(&late.t), 1); // it was still pending
}

TEST_F(Uring, PreciseTimerIsNeverEarly) {
	struct P {
		kt_hrtimer t{};
		uint64_t at = 0;
	} p;
	kt_hrtimer_setup(&p.t, base, [](kt_hrtimer *t) { kt_container_of(t, P, t)->at = MonoNs(); });
	uint64_t waits0 = ku.waits;
	for (int i = 0; i < 10; i++) {
		p.at = 0;
		uint64_t deadline = MonoNs() + 300000; // 300 us
		kt_hrtimer_start(&p.t, deadline);
		turn_until([&] { return p.at != 0; });
		ASSERT_NE(p.at, 0u);
		EXPECT_GE(p.at, deadline);
	}
	// Nanosecond timeouts: one wait per timer (two if a signal or a
	// spurious wake-up intervened), not a millisecond spin.
	EXPECT_LE(ku.waits - waits0, 20u);
}

TEST_F(Uring, RemoteArmWakesAnIdleLoop) {
	SKIP_CROSS_THREAD_UNDER_VALGRIND();
	Timer t;
	t.setup(base);
	std::thread producer([&] { kt_remote_arm(&t.t, KT_MILLIS(0), nullptr, nullptr); });
	turn_until([&] { return t.fired > 0; });
	producer.join();
	EXPECT_EQ(t.fired, 1);
}

TEST_F(Uring, RemoteArmsFromTwoThreadsAllFireOnce) {
	SKIP_CROSS_THREAD_UNDER_VALGRIND();
	kt_test::TwoProducers p(base);
	p.start();
	turn_until([&] { return p.all_fired(); });
	p.join();
	p.expect_each_applied_and_fired_once();
}

// The caller's completions come back in order, max at a time; the rest wait
// in the ring without blocking the next turn. The wake-up poll never shows.
TEST_F(Uring, CompletionsPassThroughMaxAtATime) {
	for (uint64_t i = 0; i < 10; i++) {
		io_uring_sqe *sqe = io_uring_get_sqe(&ku.ring);
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, i);
	}
	EXPECT_EQ(kt_uring_alive(&ku), 1); // prepared, not yet submitted: counted
	std::vector<uint64_t> got;
	for (int turns = 0; got.size() < 10 && turns < 100; turns++) {
		int n = kt_uring_wait(&ku, cqe, 4);
		ASSERT_GE(n, 0);
		ASSERT_LE(n, 4);
		for (int i = 0; i < n; i++) {
			EXPECT_NE(cqe[i].user_data, KT_URING_TAG_WAKE);
			got.push_back(cqe[i].user_data);
		}
	}
	ASSERT_EQ(got.size(), 10u);
	for (uint64_t i = 0; i < 10; i++)
		EXPECT_EQ(got[i], i);
	EXPECT_EQ(kt_uring_alive(&ku), 0);
}

// The clock when completions are handled is read after the wait: a deadline
// armed then counts from the present. The I/O: a 100 ms timeout request
// that ends an otherwise idle wait.
TEST_F(Uring, CompletionArmsFromThePresent) {
	Timer t;
	t.setup(base);
	__kernel_timespec ts{0, 100000000};
	submit_timeout(1, &ts);
	uint64_t armed_mono_ns = 0;
	turn_until([&] { return t.fired > 0; }, [&](const io_uring_cqe &c) {
		EXPECT_EQ(c.res, -ETIME);
		armed_mono_ns = MonoNs();
		kt_timer_arm(&t.t, KT_MILLIS(50));
	});
	EXPECT_EQ(t.fired, 1);
	EXPECT_GE(t.fired_mono_ns, armed_mono_ns + 50000000);
}

// kt_uring_alive(): a loop on it ends with the caller's requests, with a
// ktimer timer still pending 60 s out.
TEST_F(Uring, AliveEndsWithTheCallersRequests) {
	Timer pending, soon;
	pending.setup(base);
	soon.setup(base);
	kt_timer_arm(&pending.t, KT_MILLIS(60000));
	kt_timer_arm(&soon.t, KT_MILLIS(5));
	__kernel_timespec ts{0, 30000000};
	submit_timeout(1, &ts);
	EXPECT_EQ(kt_uring_wait(&ku, cqe, 64) >= 0 && kt_uring_alive(&ku), 1);
	int turns = 0, completions = 0;
	while (kt_uring_alive(&ku) && turns++ < 1000) {
		int n = kt_uring_wait(&ku, cqe, 64);
		ASSERT_GE(n, 0);
		completions += n;
	}
	EXPECT_EQ(completions, 1);
	EXPECT_EQ(soon.fired, 1);
	EXPECT_EQ(pending.fired, 0);
	EXPECT_EQ(kt_timer_delete(&pending.t), 1); // it was still pending
}

// Close with timers pending, a caller's request in flight and operations
// queued by another thread after the close: nothing fires, nothing leaks,
// each dropped operation reports -ECANCELED.
TEST_F(Uring, CloseWithPendingTimersLeaksNothing) {
	kt_test::PendingAtClose p(base);
	static __kernel_timespec ts{60, 0};
	submit_timeout(1, &ts);
	struct io_uring_cqe c;
	io_uring_sqe *nop = io_uring_get_sqe(&ku.ring);
	io_uring_prep_nop(nop);
	ASSERT_GE(kt_uring_wait(&ku, &c, 1), 0);
	kt_uring_close(&ku);
	open = false;
	p.queue_remote_arms_from_another_thread();
	EXPECT_EQ(kt_uring_wait(&ku, &c, 1), -EINVAL); // closed
	kt_uring_close(&ku);                           // harmless twice
	EXPECT_EQ(kt_base_free(base), 0);
	base = nullptr;
	p.expect_nothing_fired();
}

namespace {

struct StopOnDone {
	int stop = 0;
	static void done(kt_timer *, int, void *arg) { static_cast<StopOnDone *>(arg)->stop = 1; }
};

} // namespace

// A remote operation's done callback, run by the turn's kt_base_run(), may
// set the caller's stop flag: the turn must not wait, as after a timer
// callback (a turn that waited would wait here until the safety timer; with
// nothing pending, forever).
TEST_F(Uring, ARemoteDoneCallbackEndsTheTurnWithoutWaiting) {
	Timer f, safety;
	f.setup(base);
	safety.setup(base);
	kt_timer_arm(&safety.t, KT_MILLIS(300));
	StopOnDone s;
	ASSERT_EQ(kt_remote_delete(&f.t, StopOnDone::done, &s), 0);
	uint64_t waits = ku.waits;
	EXPECT_EQ(kt_uring_wait(&ku, cqe, 64), 0);
	EXPECT_EQ(s.stop, 1);
	EXPECT_EQ(ku.waits, waits) << "kt_uring_wait() waited after a done callback ran";
	kt_timer_delete(&safety.t);
}

// Closing after a failed init, closing a never-initialized struct and
// closing twice are no-ops: a zero-filled kt_uring whose init failed with
// -EINVAL (a manual-clock base) reads wakefd 0 and ring_fd 0, and
// kt_uring_close() must not close descriptor 0 (stdin).
TEST(UringArgs, CloseAfterAFailedInitOrTwiceClosesNothing) {
	kt_base_config cfg{1, KT_CLOCK_MANUAL, 0};
	kt_base *manual = kt_base_new(&cfg);
	kt_test::StdinWatch in;
	ASSERT_GE(in.saved, 0);
	kt_uring zero{};
	kt_uring_close(&zero); // never initialized
	in.check();
	EXPECT_EQ(kt_uring_init(&zero, manual, 8, 0), -EINVAL);
	kt_uring_close(&zero);
	kt_uring_close(&zero);
	in.check();
	io_uring_cqe c;
	EXPECT_EQ(kt_uring_wait(&zero, &c, 1), -EINVAL);
	kt_uring garbage;
	memset(&garbage, 0x5a, sizeof(garbage));
	EXPECT_EQ(kt_uring_init(&garbage, manual, 8, 0), -EINVAL);
	kt_uring_close(&garbage);
	in.check();
	// Closed twice after a successful init (where the kernel allows a ring).
	kt_base *mono = kt_base_new(nullptr);
	kt_uring ok;
	if (kt_uring_init(&ok, mono, 8, 0) == 0) {
		kt_uring_close(&ok);
		kt_uring_close(&ok);
		EXPECT_EQ(kt_uring_wait(&ok, &c, 1), -EINVAL);
	}
	in.check();
	EXPECT_FALSE(in.closed) << "kt_uring_close() closed descriptor 0";
	kt_base_free(mono);
	kt_base_free(manual);
}

// A burst of 1,000 expiries under a run limit of 100: each turn after a
// limited run submits and reaps without blocking, so the caller's completions
// are handed over between the slices, and every timer fires once.
TEST_F(Uring, ALimitedRunReapsCompletionsBetweenSlicesOfABurst) {
	kt_test::Burst burst;
	burst.arm(base);
	auto submit_nop = [&] {
		io_uring_sqe *sqe = io_uring_get_sqe(&ku.ring);
		ASSERT_NE(sqe, nullptr);
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, 42);
	};
	submit_nop();
	turn_until([&] { return burst.done(); },
		   [&](const io_uring_cqe &c) {
			   if (c.user_data == 42) {
				   burst.saw_io();
				   submit_nop(); // the next request of the connection
			   }
		   });
	burst.expect_each_fired_once();
	EXPECT_GE(burst.io_during(), 5) << "the caller's completions waited for the whole burst";
}

// A shutdown timer closes the adapter from inside the turn: the close takes
// effect at once (ring and eventfd gone), kt_uring_wait() ends that turn
// without touching the ring and returns 0, the next call is refused, and
// what was pending stays pending.
TEST_F(Uring, ATimerCallbackMayCloseTheAdapter) {
	kt_test::StdinWatch in;
	kt_test::ShutdownTimer st([this] { kt_uring_close(&ku); });
	st.arm(base);
	int r = 0;
	for (int i = 0; i < 1000 && !st.closed(); i++) {
		r = kt_uring_wait(&ku, cqe, 64);
		ASSERT_GE(r, 0);
	}
	open = false;
	EXPECT_EQ(r, 0);
	st.expect_closed_later_pending();
	EXPECT_EQ(kt_uring_wait(&ku, cqe, 64), -EINVAL);
	EXPECT_EQ(kt_uring_alive(&ku), 0);
	kt_uring_close(&ku); // closed already: nothing
	in.check();
	EXPECT_FALSE(in.closed);
}

// A remote operation's done callback closes the adapter: the same.
TEST_F(Uring, ADoneCallbackMayCloseTheAdapter) {
	Timer f;
	f.setup(base);
	ASSERT_EQ(kt_remote_arm(&f.t, KT_MILLIS(10000), [](kt_timer *, int, void *a) {
		kt_uring_close(static_cast<kt_uring *>(a));
	}, &ku), 0);
	EXPECT_EQ(kt_uring_wait(&ku, cqe, 64), 0);
	open = false;
	EXPECT_EQ(ku.base, nullptr);
	EXPECT_EQ(kt_uring_wait(&ku, cqe, 64), -EINVAL);
	EXPECT_TRUE(kt_timer_pending(&f.t));
}

// Setup flags under which the turn could not wait, or that kt_uring_init()
// cannot give their parameters, are refused with -EINVAL and leave nothing
// open: IOPOLL (a 300 ms timer took hundreds of thousands of turns at 100%
// of a core), CQE32, CQSIZE, SQ_AFF, ATTACH_WQ, R_DISABLED, unknown bits.
TEST(UringArgs, InitRefusesFlagsItCannotWaitUnder) {
	kt_base *b = kt_base_new(nullptr);
	kt_test::StdinWatch in;
	const unsigned refused[] = {IORING_SETUP_IOPOLL, IORING_SETUP_CQE32, IORING_SETUP_CQSIZE,
				    IORING_SETUP_SQ_AFF | IORING_SETUP_SQPOLL, IORING_SETUP_ATTACH_WQ,
				    IORING_SETUP_R_DISABLED, IORING_SETUP_IOPOLL | IORING_SETUP_SQPOLL,
				    1u << 20, 1u << 31};
	for (unsigned flags : refused) {
		kt_uring ku;
		EXPECT_EQ(kt_uring_init(&ku, b, 8, flags), -EINVAL) << std::hex << flags;
		EXPECT_EQ(ku.wakefd, -1);
		kt_uring_close(&ku); // nothing to close
	}
	in.check();
	EXPECT_FALSE(in.closed);
	EXPECT_EQ(kt_base_free(b), 0);
}

// Every accepted flag (alone, or with the one it needs): the loop blocks
// (the turn waits in the kernel: a handful of turns for a 50 ms timer, not
// a spin), the timer is never early, and a request's completion comes
// back - also under DEFER_TASKRUN, where the kernel posts completions only
// when the ring's task asks for them. A flag this kernel does not support
// (or does not allow here) is skipped with its reason.
TEST(UringFlags, EveryAcceptedFlagWaitsForTheDeadline) {
	const struct {
		unsigned flags;
		const char *name;
	} accepted[] = {
		{0, "none"},
		{IORING_SETUP_SQPOLL, "SQPOLL"},
		{IORING_SETUP_CLAMP, "CLAMP"},
		{IORING_SETUP_SUBMIT_ALL, "SUBMIT_ALL"},
		{IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN"},
		{IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG, "COOP_TASKRUN|TASKRUN_FLAG"},
		{IORING_SETUP_SQE128, "SQE128"},
		{IORING_SETUP_SINGLE_ISSUER, "SINGLE_ISSUER"},
		{IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, "SINGLE_ISSUER|DEFER_TASKRUN"},
	};
	alarm(60);
	for (const auto &a : accepted) {
		kt_base *b = kt_base_new(nullptr);
		kt_uring ku;
		int r = kt_uring_init(&ku, b, 16, a.flags);
		if (r == -ENOSYS || r == -EPERM || (r == -EINVAL && a.flags)) {
			// The kernel's refusal (an older kernel, a seccomp filter).
			std::printf("[ SKIPPED  ] %s: kt_uring_init() returned %d (%s)\n", a.name, r, strerror(-r));
			kt_base_free(b);
			continue;
		}
		ASSERT_EQ(r, 0) << a.name << ": " << strerror(-r);
		Timer t;
		t.setup(b);
		uint64_t armed = MonoNs();
		kt_timer_arm(&t.t, KT_MILLIS(50));
		io_uring_sqe *sqe = io_uring_get_sqe(&ku.ring);
		ASSERT_NE(sqe, nullptr);
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, 42);
		io_uring_cqe c[8];
		int turns = 0, nops = 0;
		uint64_t waits = ku.waits;
		while ((!t.fired || nops == 0) && turns < 100000) {
			int n = kt_uring_wait(&ku, c, 8);
			ASSERT_GE(n, 0) << a.name;
			for (int i = 0; i < n; i++)
				nops += c[i].user_data == 42;
			turns++;
		}
		EXPECT_EQ(t.fired, 1) << a.name;
		EXPECT_EQ(nops, 1) << a.name;
		EXPECT_GE(t.fired_mono_ns, armed + 50000000) << a.name << ": early";
		EXPECT_LE(turns, 20) << a.name << ": the loop did not block";
		EXPECT_GE(ku.waits, waits + 1) << a.name;
		EXPECT_EQ(kt_uring_alive(&ku), 0) << a.name;
		kt_uring_close(&ku);
		EXPECT_EQ(kt_base_free(b), 0);
	}
	alarm(0);
}

// A completion the caller never prepared - another ring's IORING_OP_MSG_RING
// posting into this one - is returned like any other, but cannot take the
// count of the caller's requests below zero: kt_uring_alive() ends with the
// caller's own requests instead of staying 1 for good.
TEST_F(Uring, ACompletionTheCallerNeverPreparedDoesNotKeepItAlive) {
	io_uring other;
	if (io_uring_queue_init(4, &other, 0) != 0)
		GTEST_SKIP() << "a second ring could not be set up";
	io_uring_sqe *sqe = io_uring_get_sqe(&other);
	io_uring_prep_msg_ring(sqe, ku.ring.ring_fd, 0, 77, 0);
	io_uring_submit(&other);
	io_uring_cqe *oc = nullptr;
	ASSERT_EQ(io_uring_wait_cqe(&other, &oc), 0);
	int res = oc->res;
	io_uring_cqe_seen(&other, oc);
	io_uring_queue_exit(&other);
	if (res == -EINVAL || res == -EOPNOTSUPP)
		GTEST_SKIP() << "IORING_OP_MSG_RING is not supported here: " << strerror(-res);
	ASSERT_EQ(res, 0);
	Timer soon;
	soon.setup(base);
	kt_timer_arm(&soon.t, KT_MILLIS(1));
	int seen = turn_until([&] { return soon.fired > 0; }, [](const io_uring_cqe &c) { EXPECT_EQ(c.user_data, 77u); });
	ASSERT_GE(seen, 1);
	EXPECT_EQ(kt_uring_alive(&ku), 0);
	// The caller's own request still counts, and ends the count.
	__kernel_timespec ts{0, 1000000};
	submit_timeout(1, &ts);
	EXPECT_EQ(kt_uring_alive(&ku), 1);
	int turns = 0;
	while (kt_uring_alive(&ku) && turns++ < 1000)
		ASSERT_GE(kt_uring_wait(&ku, cqe, 64), 0);
	EXPECT_EQ(kt_uring_alive(&ku), 0);
}

// A child of fork() that forgets kt_uring_fork() and runs its loop anyway:
// each turn is refused with -EBADFD and touches nothing - the ring's queues
// are memory shared with the parent - so no timer of the child's fires, and
// the parent's timers and its request's completion (a read the child could
// otherwise reap from the shared completion queue) reach the parent.
TEST_F(Uring, AForkedChildThatForgetsKtUringForkLeavesTheParentsRingAlone) {
	kt_test::ForkTimers ft;
	ft.arm(base);
	int p[2];
	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	static char buf[8];
	io_uring_sqe *sqe = io_uring_get_sqe(&ku.ring);
	io_uring_prep_read(sqe, p[0], buf, sizeof(buf), 0);
	io_uring_sqe_set_data64(sqe, 9);
	ASSERT_EQ(kt_uring_wait(&ku, cqe, 64), 0); // submitted, in flight
	pid_t child = kt_test::StartChild([&]() -> int {
		int refused = 0, turns = 0;
		for (uint64_t until = MonoNs() + 300000000; MonoNs() < until; turns++) {
			int n = kt_uring_wait(&ku, cqe, 64);
			refused += n == -EBADFD;
			if (n == -EBADFD)
				usleep(1000);
		}
		if (refused != turns)
			return 1; // a turn ran on the parent's ring
		if (ft.any_fired())
			return 2;
		kt_uring_close(&ku); // the child's mappings and descriptors only
		return 0;
	});
	usleep(100000);
	ASSERT_EQ(write(p[1], "x", 1), 1); // completes the parent's read meanwhile
	int reads = 0;
	io_uring_cqe c[8];
	uint64_t until = MonoNs() + 5000000000u;
	while ((!ft.fired() || !reads) && MonoNs() < until) {
		int n = kt_uring_wait(&ku, c, 8);
		ASSERT_GE(n, 0);
		for (int i = 0; i < n; i++)
			reads += c[i].user_data == 9;
	}
	EXPECT_EQ(ft.check(), 0) << "the parent's timers";
	EXPECT_EQ(reads, 1) << "the parent's read completed in the parent";
	EXPECT_EQ(kt_test::WaitChild(child), 0) << "the child's check that failed";
	close(p[0]);
	close(p[1]);
}

// A child that calls kt_uring_fork() gets a ring and an eventfd of its own
// and keeps its timers: both processes' copies fire, each once, never
// early; the parent's request in flight is not the child's (alive says
// none), the child's own requests complete on its ring, its waker works,
// and a second call does nothing.
TEST_F(Uring, AForkedChildWithKtUringForkFiresItsTimersAndSoDoesTheParent) {
	kt_test::ForkTimers ft;
	ft.arm(base);
	static __kernel_timespec far{60, 0};
	submit_timeout(1, &far);
	ASSERT_EQ(kt_uring_wait(&ku, cqe, 64), 0); // in flight in the parent's ring
	pid_t child = kt_test::StartChild([&]() -> int {
		if (!kt_base_forked(base) || kt_uring_fork(&ku) != 0 || kt_base_forked(base))
			return 1;
		if (kt_uring_fork(&ku) != 0 || kt_uring_alive(&ku) != 0)
			return 2;
		io_uring_sqe *nop = io_uring_get_sqe(&ku.ring);
		io_uring_prep_nop(nop);
		io_uring_sqe_set_data64(nop, 3);
		int nops = 0;
		for (uint64_t until = MonoNs() + 5000000000u; (!ft.fired() || !nops) && MonoNs() < until;) {
			int n = kt_uring_wait(&ku, cqe, 64);
			if (n < 0)
				return 3;
			for (int i = 0; i < n; i++)
				nops += cqe[i].user_data == 3;
		}
		if (int r = ft.check())
			return r;
		if (nops != 1 || kt_uring_alive(&ku) != 0)
			return 4;
		// Nothing pending: a wake-up ends the wait (the alarm ends a hang).
		if (kt_base_wake(base) != 1 || kt_uring_wait(&ku, cqe, 64) != 0)
			return 5;
		kt_uring_close(&ku);
		return 0;
	});
	io_uring_cqe c[8];
	uint64_t until = MonoNs() + 5000000000u;
	while (!ft.fired() && MonoNs() < until)
		ASSERT_GE(kt_uring_wait(&ku, c, 8), 0);
	EXPECT_EQ(ft.check(), 0) << "the parent's timers";
	EXPECT_EQ(kt_test::WaitChild(child), 0) << "the child's check that failed";
	EXPECT_EQ(kt_uring_fork(&ku), 0); // in the parent: nothing to do
	EXPECT_EQ(kt_uring_alive(&ku), 1); // its 60 s request
}

// A timer callback that fork()s (a program starting a worker process from a
// timer): the ring's queues are memory both processes map, so in the child
// the turn ends when the callback returns, with 0, and takes nothing from
// the completion queue - the parent's read, complete and waiting there,
// stays the parent's. The child's next turn is refused.
TEST_F(Uring, AChildForkedFromACallbackEndsThatTurnWithoutTouchingTheRing) {
	int p[2];
	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	static char buf[8];
	kt_test::ForkingTimers ft;
	ft.arm(base);
	Timer bound; // ends a wait that a stolen completion would leave blocked
	bound.setup(base);
	kt_timer_arm(&bound.t, KT_MILLIS(3000));
	io_uring_sqe *sqe = io_uring_get_sqe(&ku.ring);
	io_uring_prep_read(sqe, p[0], buf, sizeof(buf), 0);
	io_uring_sqe_set_data64(sqe, 9);
	ASSERT_EQ(io_uring_submit(&ku.ring), 1);
	ASSERT_EQ(write(p[1], "x", 1), 1); // the read completes
	usleep(40000);                     // its completion posted, the timers due
	unsigned ready_after_child = 0;
	ft.in_parent = [&] { ready_after_child = io_uring_cq_ready(&ku.ring); };
	int n = kt_uring_wait(&ku, cqe, 64);
	if (ft.in_child())
		_exit(n != 0 ? 1 : kt_uring_wait(&ku, cqe, 64) != -EBADFD ? 2 : 0);
	EXPECT_EQ(ft.child_status, 0) << "the child's check that failed (1: its turn went on, 2: not refused after)";
	EXPECT_GE(ready_after_child, 1u) << "the child's turn took the parent's completion";
	int reads = 0;
	for (int i = 0;; i++) {
		for (int j = 0; j < n; j++)
			reads += cqe[j].user_data == 9;
		if (reads || bound.fired || i == 100)
			break;
		n = kt_uring_wait(&ku, cqe, 64);
		ASSERT_GE(n, 0);
	}
	EXPECT_EQ(reads, 1) << "the parent's read completed in the parent";
	close(p[0]);
	close(p[1]);
}

// The same fork from a callback, with the child's kt_uring_fork() made in
// the callback itself: the turn goes on in the child on a ring of its own
// - the parent's completion stays in the parent's queue - and the child's
// own request completes there.
TEST_F(Uring, AChildForkedFromACallbackMayMakeTheForkCallThere) {
	int p[2];
	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	static char buf[8];
	kt_test::ForkingTimers ft;
	ft.arm(base);
	int forked_in_callback = -1;
	ft.in_child_callback = [&] {
		forked_in_callback = kt_uring_fork(&ku);
		if (forked_in_callback == 0) { // a request of the child's own, on its ring
			io_uring_sqe *nop = io_uring_get_sqe(&ku.ring);
			io_uring_prep_nop(nop);
			io_uring_sqe_set_data64(nop, 3);
		}
	};
	Timer bound; // ends a wait that a stolen completion would leave blocked
	bound.setup(base);
	kt_timer_arm(&bound.t, KT_MILLIS(3000));
	io_uring_sqe *sqe = io_uring_get_sqe(&ku.ring);
	io_uring_prep_read(sqe, p[0], buf, sizeof(buf), 0);
	io_uring_sqe_set_data64(sqe, 9);
	ASSERT_EQ(io_uring_submit(&ku.ring), 1);
	ASSERT_EQ(write(p[1], "x", 1), 1); // the read completes
	usleep(40000);                     // its completion posted, the timers due
	unsigned ready_after_child = 0;
	ft.in_parent = [&] { ready_after_child = io_uring_cq_ready(&ku.ring); };
	int n = kt_uring_wait(&ku, cqe, 64);
	if (ft.in_child()) {
		int nops = 0, reads = 0;
		for (int i = 0; i < 10 && n >= 0 && !nops; i++) {
			for (int j = 0; j < n; j++) {
				nops += cqe[j].user_data == 3;
				reads += cqe[j].user_data == 9;
			}
			if (!nops)
				n = kt_uring_wait(&ku, cqe, 64);
		}
		_exit(forked_in_callback != 0 ? 1 : n < 0 ? 2 : nops != 1 ? 3 : reads ? 4 : 0);
	}
	EXPECT_EQ(ft.child_status, 0) << "the child's check that failed";
	EXPECT_GE(ready_after_child, 1u) << "the child's turn took the parent's completion";
	close(p[0]);
	close(p[1]);
}

// A callback closes the ring while a request of the caller's is in flight
// (a shutdown timer, the recipe's loop on kt_uring_alive()): the kernel
// cancels the request and no completion is returned again, so
// kt_uring_alive() says 0 and the loop ends rather than spinning on
// -EINVAL.
TEST_F(Uring, AliveEndsWhenACallbackClosesTheRingWithARequestInFlight) {
	int p[2];
	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	static char buf[8];
	io_uring_sqe *sqe = io_uring_get_sqe(&ku.ring);
	io_uring_prep_read(sqe, p[0], buf, sizeof(buf), 0); // never completes
	io_uring_sqe_set_data64(sqe, 9);
	kt_test::ShutdownTimer st([this] { kt_uring_close(&ku); });
	st.arm(base);
	int turns = 0;
	while (kt_uring_alive(&ku) && turns < 1000) {
		int n = kt_uring_wait(&ku, cqe, 64);
		ASSERT_TRUE(n >= 0 || st.closed()) << n;
		turns++;
	}
	EXPECT_TRUE(st.closed());
	EXPECT_LT(turns, 1000) << "kt_uring_alive() still 1 after the close";
	EXPECT_EQ(kt_uring_alive(&ku), 0);
	open = false; // closed by the callback
	close(p[0]);
	close(p[1]);
}
