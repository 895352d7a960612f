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
