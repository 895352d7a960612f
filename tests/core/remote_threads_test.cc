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

// An owner that never plans a wait (it polls: kt_base_run() back to back,
// as a busy loop or a limited run's slices do) while producers push: each
// run may skip the queue's lock when nothing was pushed since it last saw
// the queue empty. Nothing is lost or doubled, the waker is never called
// (the owner never waits), and once the producers are done the runs that
// follow take the rest in as many runs as batches, with no wait needed.
TEST(RemoteThreads, AnOwnerThatNeverPlansAWaitTakesEveryPush) {
	kt_base_config cfg{1, KT_CLOCK_MONOTONIC, 0};
	kt_base *b = kt_base_new(&cfg);
	static std::atomic<int> wakes;
	wakes = 0;
	kt_base_set_waker(b, [](void *) { wakes++; }, nullptr);
	std::vector<Conn> conns(64);
	for (auto &c : conns)
		kt_timer_setup(&c.timer, b, Conn::cb, 0);
	static std::atomic<long> applied;
	applied = 0;
	const int kProducers = 3, kOps = 5000;
	std::atomic<int> finished{0};
	std::vector<std::thread> producers;
	for (int p = 0; p < kProducers; p++) {
		producers.emplace_back([&, p] {
			std::mt19937 rng(unsigned(p) + 11);
			for (int i = 0; i < kOps; i++) {
				Conn &c = conns[rng() % conns.size()];
				auto done = [](kt_timer *, int r, void *) {
					EXPECT_GE(r, 0);
					applied++;
				};
				int r = rng() % 2 ? kt_remote_arm(&c.timer, KT_MILLIS(100000), done, nullptr)
						  : kt_remote_delete(&c.timer, done, nullptr);
				ASSERT_EQ(r, 0);
			}
			finished++;
		});
	}
	while (finished < kProducers)
		kt_base_run(b);
	for (auto &t : producers)
		t.join();
	size_t left = kt_base_remote_queued(b);
	size_t runs = left / KT_REMOTE_BATCH + 1;
	for (size_t i = 0; i < runs; i++)
		kt_base_run(b);
	EXPECT_EQ(kt_base_remote_queued(b), 0u) << left << " left after the producers, " << runs << " runs";
	EXPECT_EQ(applied.load(), long(kProducers) * kOps);
	EXPECT_EQ(wakes.load(), 0);
	EXPECT_TRUE(kt_test::CheckOk(b));
	kt_base_free(b);
}
