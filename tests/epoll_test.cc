// kt_epoll on real descriptors: a producer thread wakes a blocked worker,
// precise timers use the timerfd and are never early, caller events pass
// through. Real time, but nothing asserts on how long anything took except
// "not before the deadline".
#include <ktimer/epoll.h>
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <thread>

namespace {

uint64_t mono_ns() {
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

struct Flag {
	kt_timer t;
	std::atomic<int> fired{0};
	static void cb(kt_timer *t) { kt_container_of(t, Flag, t)->fired++; }
};

struct Precise {
	kt_hrtimer t;
	uint64_t fired_at = 0;
	static void cb(kt_hrtimer *t) { kt_container_of(t, Precise, t)->fired_at = mono_ns(); }
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
		uint64_t deadline = mono_ns() + 2000000; // 2 ms: far enough that the plan sees it ahead
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
	EXPECT_EQ(ev[0].data.u64, 42u);
	uint64_t v;
	ASSERT_EQ(read(efd, &v, sizeof(v)), ssize_t(sizeof(v)));
	Flag f;
	kt_timer_setup(&f.t, b, Flag::cb, 0);
	uint64_t armed = kt_base_now_ns(b); // delays count from the turn's instant
	kt_timer_arm(&f.t, KT_MILLIS(20));
	while (!f.fired)
		ASSERT_GE(kt_epoll_wait(&ep, ev, 4), 0);
	EXPECT_GE(mono_ns() - armed, 20000000u);
	EXPECT_EQ(ep.timerfd_arms, 0u); // the wheel rode on epoll's timeout
	close(efd);
	kt_epoll_close(&ep);
	kt_base_free(b);
}
