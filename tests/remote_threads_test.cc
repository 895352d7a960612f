// Several producer threads hammering one base through kt_remote_*, with the
// owner running a real wait loop (condition variable as the waker). Run under
// --config=tsan by tools/run test. Checks that no operation is lost or
// doubled: every operation's done callback runs exactly once on the owner,
// and every timer that fired was pending when it fired.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "tests/support/harness.h"

namespace {

struct Owner {
	kt_base *base;
	std::mutex m;
	std::condition_variable cv;
	bool woken = false;
	static void wake(void *self) {
		Owner *o = static_cast<Owner *>(self);
		std::lock_guard<std::mutex> g(o->m);
		o->woken = true;
		o->cv.notify_one();
	}
	// One blocking wait per the plan (real time, but bounded by 5 ms).
	void wait(const kt_wait_plan &p) {
		std::unique_lock<std::mutex> g(m);
		if (p.kind == KT_WAIT_IMMEDIATE) {
			woken = false;
			return;
		}
		int ms = kt_wait_plan_timeout_ms(base, &p);
		if (ms < 0 || ms > 5)
			ms = 5;
		cv.wait_for(g, std::chrono::milliseconds(ms), [this] { return woken; });
		woken = false;
	}
};

struct Conn {
	kt_timer timer;
	int fires = 0;
	static void cb(kt_timer *t) { kt_container_of(t, Conn, timer)->fires++; }
};

std::atomic<long> done_calls{0};
void on_done(kt_timer *, int result, void *) {
	EXPECT_GE(result, 0);
	done_calls++;
}

} // namespace

TEST(RemoteThreads, ProducersHammerOneBase) {
	kt_base_config cfg{1, KT_CLOCK_MONOTONIC, 0};
	Owner o;
	o.base = kt_base_new(&cfg);
	kt_base_set_waker(o.base, Owner::wake, &o);
	std::vector<Conn> conns(256);
	for (auto &c : conns)
		kt_timer_setup(&c.timer, o.base, Conn::cb, 0);

	const int kProducers = 4, kOps = 20000;
	std::atomic<int> finished{0};
	std::atomic<long> queued{0};
	std::vector<std::thread> producers;
	for (int p = 0; p < kProducers; p++) {
		producers.emplace_back([&, p] {
			std::mt19937 rng(unsigned(p) + 1);
			for (int i = 0; i < kOps; i++) {
				Conn &c = conns[rng() % conns.size()];
				int r;
				switch (rng() % 3) {
				case 0:
					r = kt_remote_arm(&c.timer, KT_MILLIS(rng() % 4), on_done, nullptr);
					break;
				case 1:
					r = kt_remote_delete(&c.timer, on_done, nullptr);
					break;
				default:
					r = kt_remote_arm(&c.timer, KT_MILLIS(1000 + rng() % 1000), on_done, nullptr);
					break;
				}
				ASSERT_EQ(r, 0);
				queued++;
			}
			finished++;
		});
	}
	// The owner's loop: run, plan, wait.
	while (finished < kProducers || kt_base_remote_queued(o.base) > 0) {
		kt_base_run(o.base);
		o.wait(kt_base_prepare_wait(o.base));
	}
	for (auto &t : producers)
		t.join();
	kt_base_run(o.base);
	EXPECT_EQ(done_calls.load(), queued.load());
	EXPECT_EQ(done_calls.load(), long(kProducers) * kOps);
	EXPECT_TRUE(kt_test::CheckOk(o.base));
	long fires = 0;
	for (auto &c : conns)
		fires += c.fires;
	EXPECT_GT(fires, 0);
	kt_base_free(o.base);
}

// A producer arms a timer while its owner shuts it down (the documented way
// to retire a timer others may still arm): every arm is queued (0) and
// reported once, -ESHUTDOWN once the shutdown has happened. kt_remote_arm()
// reads the timer's flags to refuse a failed setup at once; under
// --config=tsan that read must not race with the owner's shutdown.
TEST(RemoteThreads, ArmWhileTheOwnerShutsTheTimerDown) {
	kt_test::FakeClockBase b;
	static kt_timer t;
	static std::atomic<int> done_calls, shut_reports;
	done_calls = shut_reports = 0;
	ASSERT_EQ(kt_timer_setup(&t, b, [](kt_timer *) {}, 0), 0);
	std::atomic<bool> started{false};
	std::atomic<int> refused{0};
	const int kArms = 2000;
	std::thread producer([&] {
		started = true;
		for (int i = 0; i < kArms; i++)
			if (kt_remote_arm(&t, KT_MILLIS(100000), [](kt_timer *, int r, void *) {
				    done_calls++;
				    shut_reports += r == -ESHUTDOWN;
			    }, nullptr) != 0)
				refused++;
	});
	while (!started)
		std::this_thread::yield();
	EXPECT_GE(kt_timer_shutdown(&t), 0);
	producer.join();
	for (int i = 0; i < 100 && kt_base_remote_queued(b) > 0; i++)
		kt_base_run(b);
	kt_base_run(b);
	EXPECT_EQ(refused, 0);
	EXPECT_EQ(done_calls, kArms);
	EXPECT_GT(shut_reports, 0);
	EXPECT_FALSE(kt_timer_pending(&t));
}
