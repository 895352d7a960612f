// kt_base_set_clock_source(): a base that fires by the caller's cached clock.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <vector>

namespace {

struct Source {
	uint64_t now;
	static uint64_t read(void *self) { return static_cast<Source *>(self)->now; }
};

struct Conn {
	kt_timer timer{};
	kt_base *base = nullptr;
	std::vector<uint64_t> *fired = nullptr;
	static void cb(kt_timer *t) {
		Conn *c = kt_container_of(t, Conn, timer);
		c->fired->push_back(kt_base_now(c->base));
	}
};

struct SourcedBase {
	explicit SourcedBase(unsigned res, uint64_t start) : src{start} {
		kt_base_config cfg{res, KT_CLOCK_MONOTONIC, 0};
		b = kt_base_new(&cfg);
	}
	~SourcedBase() { kt_base_free(b); }
	kt_base *b;
	Source src;
};

TEST(Clock, AdoptsTheSourceAtOnceEvenIfEarlier) {
	SourcedBase s(1, 5000);
	ASSERT_NE(s.b, nullptr);
	ASSERT_EQ(kt_base_set_clock_source(s.b, &Source::read, &s.src), 0);
	EXPECT_EQ(kt_base_now(s.b), 5000u); // the monotonic clock was far later or earlier
	EXPECT_EQ(kt_base_check(s.b), KT_CHECK_OK);
}

TEST(Clock, FiresOnlyWhenTheSourceReachesTheExpiry) {
	SourcedBase s(1, 10000);
	ASSERT_EQ(kt_base_set_clock_source(s.b, &Source::read, &s.src), 0);
	std::vector<uint64_t> fired;
	Conn c;
	c.base = s.b;
	c.fired = &fired;
	ASSERT_EQ(kt_timer_setup(&c.timer, s.b, &Conn::cb, 0), 0);
	ASSERT_EQ(kt_mod_timer(&c.timer, 10000 + 75), 0);
	// 75 ms sits on level 1 at 1 ms resolution: 8 ms buckets, so the wait
	// is rounded up by less than that, never down.
	int64_t wait = kt_base_next_timeout(s.b);
	EXPECT_GE(wait, 75);
	EXPECT_LT(wait, 75 + 8);
	// However much real time passes, a source that stands still fires nothing.
	for (int i = 0; i < 100; i++)
		EXPECT_EQ(kt_base_run(s.b), 0u);
	// Step the source a millisecond at a time: the first run that fires is
	// at or after the expiry, and within the level's granularity of it.
	for (uint64_t t = 10001; t <= 10100 && fired.empty(); t++) {
		s.src.now = t;
		size_t n = kt_base_run(s.b);
		if (t < 10075)
			EXPECT_EQ(n, 0u) << "fired early at " << t;
	}
	ASSERT_EQ(fired.size(), 1u);
	EXPECT_GE(fired[0], 10075u);
	EXPECT_LE(fired[0], 10075u + 8);
	EXPECT_EQ(kt_base_next_timeout(s.b), -1);
}

TEST(Clock, UpdateTimeGathersAndIoCanStillPushBack) {
	SourcedBase s(1, 1000);
	ASSERT_EQ(kt_base_set_clock_source(s.b, &Source::read, &s.src), 0);
	std::vector<uint64_t> fired;
	Conn c;
	c.base = s.b;
	c.fired = &fired;
	ASSERT_EQ(kt_timer_setup(&c.timer, s.b, &Conn::cb, 0), 0);
	ASSERT_EQ(kt_mod_timer(&c.timer, 1100), 0);
	s.src.now = 1200; // the wait returned late
	ASSERT_EQ(kt_base_update_time(s.b), 0);
	EXPECT_EQ(kt_base_now(s.b), 1200u);
	EXPECT_EQ(kt_base_next_timeout(s.b), 0);
	// I/O in this turn pushes the deadline back: it must not fire now.
	ASSERT_EQ(kt_mod_timer(&c.timer, 1200 + 500), 1);
	EXPECT_EQ(kt_base_run(s.b), 0u);
	EXPECT_TRUE(fired.empty());
	for (uint64_t t = 1201; t <= 1800 && fired.empty(); t++) {
		s.src.now = t;
		size_t n = kt_base_run(s.b);
		if (t < 1700)
			EXPECT_EQ(n, 0u) << "fired early at " << t;
	}
	ASSERT_EQ(fired.size(), 1u);
	EXPECT_GE(fired[0], 1700u);
	EXPECT_LE(fired[0], 1700u + 64); // 500 ms: level 1 or 2 at 1 ms resolution
}

TEST(Clock, ASmallerReadingIsIgnored) {
	SourcedBase s(1, 2000);
	ASSERT_EQ(kt_base_set_clock_source(s.b, &Source::read, &s.src), 0);
	s.src.now = 1500;
	kt_base_run(s.b);
	EXPECT_EQ(kt_base_now(s.b), 2000u);
	s.src.now = 2001;
	kt_base_run(s.b);
	EXPECT_EQ(kt_base_now(s.b), 2001u);
}

TEST(Clock, NullGoesBackToTheMonotonicClock) {
	SourcedBase s(16, 1); // a source far behind CLOCK_MONOTONIC's reading
	ASSERT_EQ(kt_base_set_clock_source(s.b, &Source::read, &s.src), 0);
	EXPECT_EQ(kt_base_now(s.b), 1u);
	// Read before the switch: the base reads CLOCK_MONOTONIC after it, so
	// its now is at least this, however slowly the test runs (valgrind).
	timespec ts;
	ASSERT_EQ(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
	uint64_t mono = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	ASSERT_EQ(kt_base_set_clock_source(s.b, nullptr, nullptr), 0);
	EXPECT_GE(kt_base_now(s.b), mono);
	EXPECT_EQ(kt_base_check(s.b), KT_CHECK_OK);
}

TEST(Clock, BadInputIsRefusedAndChangesNothing) {
	Source src{100};
	EXPECT_EQ(kt_base_set_clock_source(nullptr, &Source::read, &src), -EINVAL);
	kt_base_config manual{1, KT_CLOCK_MANUAL, 0};
	kt_base *m = kt_base_new(&manual);
	ASSERT_NE(m, nullptr);
	EXPECT_EQ(kt_base_set_clock_source(m, &Source::read, &src), -EINVAL);
	kt_base_free(m);

	SourcedBase s(1, 3000);
	ASSERT_EQ(kt_base_set_clock_source(s.b, &Source::read, &s.src), 0);
	std::vector<uint64_t> fired;
	Conn c;
	c.base = s.b;
	c.fired = &fired;
	ASSERT_EQ(kt_timer_setup(&c.timer, s.b, &Conn::cb, 0), 0);
	ASSERT_EQ(kt_mod_timer(&c.timer, 3010), 0);
	Source other{50};
	EXPECT_EQ(kt_base_set_clock_source(s.b, &Source::read, &other), -EBUSY);
	EXPECT_EQ(kt_base_now(s.b), 3000u);
	s.src.now = 3010;
	EXPECT_EQ(kt_base_run(s.b), 1u); // still on the first source
}

struct Reentrant {
	kt_timer timer{};
	kt_base *base;
	Source *src;
	int ret = 0;
	static void cb(kt_timer *t) {
		Reentrant *r = kt_container_of(t, Reentrant, timer);
		r->ret = kt_base_set_clock_source(r->base, &Source::read, r->src);
	}
};

TEST(Clock, RefusedFromACallback) {
	SourcedBase s(1, 100);
	ASSERT_EQ(kt_base_set_clock_source(s.b, &Source::read, &s.src), 0);
	Reentrant r;
	r.base = s.b;
	r.src = &s.src;
	ASSERT_EQ(kt_timer_setup(&r.timer, s.b, &Reentrant::cb, 0), 0);
	ASSERT_EQ(kt_mod_timer(&r.timer, 101), 0);
	s.src.now = 101;
	EXPECT_EQ(kt_base_run(s.b), 1u);
	EXPECT_EQ(r.ret, -EBUSY);
}

} // namespace

namespace {

struct Precise {
	kt_hrtimer timer{};
	int fired = 0;
	static void cb(kt_hrtimer *t) { kt_container_of(t, Precise, timer)->fired++; }
};

// A reading below the cached now is ignored: a precise timer armed relative
// to "now" then counts from the cached now, not from the smaller reading,
// or it would fire before its delay passed on the base's clock.
TEST(Clock, APreciseTimerArmedAfterASmallerReadingIsNotEarly) {
	SourcedBase s(1, 5000);
	ASSERT_EQ(kt_base_set_clock_source(s.b, &Source::read, &s.src), 0);
	Precise p;
	ASSERT_EQ(kt_hrtimer_setup(&p.timer, s.b, &Precise::cb), 0);
	s.src.now = 4000; // the source went back a second
	ASSERT_EQ(kt_hrtimer_start_after(&p.timer, 10 * 1000000ull), 0);
	EXPECT_EQ(kt_base_run(s.b), 0u) << "fired at once, 10 ms early by the base's clock";
	EXPECT_EQ(p.fired, 0);
	for (uint64_t t = 4001; t <= 5020 && !p.fired; t++) {
		s.src.now = t;
		kt_base_run(s.b);
		if (t < 5010)
			EXPECT_EQ(p.fired, 0) << "fired early at " << t;
	}
	EXPECT_EQ(p.fired, 1);
	EXPECT_EQ(kt_base_now(s.b), 5010u);
}

// The wait plan measures from the same reading: a smaller one must not
// shorten or lengthen the wait past the cached clock's view.
TEST(Clock, TheWaitAfterASmallerReadingCountsFromTheCachedNow) {
	Conn c; // first: kt_base_free() detaches it, still pending
	SourcedBase s(1, 5000);
	ASSERT_EQ(kt_base_set_clock_source(s.b, &Source::read, &s.src), 0);
	std::vector<uint64_t> fired;
	c.base = s.b;
	c.fired = &fired;
	ASSERT_EQ(kt_timer_setup(&c.timer, s.b, &Conn::cb, 0), 0);
	ASSERT_EQ(kt_mod_timer(&c.timer, 5020), 0);
	s.src.now = 4000;
	kt_wait_plan plan = kt_base_prepare_wait(s.b);
	EXPECT_EQ(kt_wait_plan_timeout_ms(s.b, &plan), 20);
}

// A reading past the clock's limit (2^44 ms, 557 years: a source in ns or
// "infinity" by mistake) is taken as the limit: the clock does not wrap to
// a small value and stop, and everything pending comes due.
TEST(Clock, AReadingPastTheLimitIsClamped) {
	SourcedBase s(1, 1000);
	ASSERT_EQ(kt_base_set_clock_source(s.b, &Source::read, &s.src), 0);
	Conn c;
	std::vector<uint64_t> fired;
	c.base = s.b;
	c.fired = &fired;
	ASSERT_EQ(kt_timer_setup(&c.timer, s.b, &Conn::cb, 0), 0);
	ASSERT_EQ(kt_mod_timer(&c.timer, 2000), 0);
	s.src.now = UINT64_C(1) << 63; // times 10^6 ns wraps to 0 in 64 bits
	kt_base_run(s.b);
	EXPECT_EQ(kt_base_now(s.b), UINT64_C(1) << 44);
	EXPECT_EQ(fired.size(), 1u);
	s.src.now = UINT64_MAX;
	kt_base_run(s.b);
	EXPECT_EQ(kt_base_now(s.b), UINT64_C(1) << 44);
	EXPECT_EQ(kt_base_check(s.b), KT_CHECK_OK);
}

// A source stuck past the limit (2^63, or UINT64_MAX - 1000: a negative
// reading cast to unsigned) puts the base at its limit for good. What is due
// there fires at the next turn - a timer armed for no delay too; one a
// callback arms for no delay fires once per turn, a unit apart by the plan,
// not in a loop of wake-ups; a delay that ends past the limit is refused;
// and with nothing left that can fire the worker sleeps (INDEFINITE).
TEST(Clock, ASourcePastTheLimitFiresWhatIsDueAndWakesForNothingElse) {
	for (uint64_t reading : {UINT64_C(1) << 63, UINT64_MAX - 1000}) {
		for (unsigned res : {1u, 16u}) {
			SourcedBase s(res, 1000);
			ASSERT_EQ(kt_base_set_clock_source(s.b, &Source::read, &s.src), 0);
			std::vector<uint64_t> fired;
			Conn zero, later;
			zero.base = later.base = s.b;
			zero.fired = later.fired = &fired;
			ASSERT_EQ(kt_timer_setup(&zero.timer, s.b, &Conn::cb, 0), 0);
			ASSERT_EQ(kt_timer_setup(&later.timer, s.b, &Conn::cb, 0), 0);
			s.src.now = reading;
			kt_base_run(s.b);
			ASSERT_EQ(kt_base_now(s.b), UINT64_C(1) << 44);
			EXPECT_EQ(kt_base_max_lateness(s.b, KT_MILLIS(0)), 0u);
			ASSERT_EQ(kt_timer_arm(&zero.timer, KT_MILLIS(0)), 0);
			EXPECT_EQ(kt_timer_arm(&later.timer, KT_MILLIS(16)), -ERANGE);
			EXPECT_EQ(kt_base_max_lateness(s.b, KT_MILLIS(16)), UINT32_MAX);
			ASSERT_EQ(kt_mod_timer(&later.timer, UINT64_MAX), 0); // "never", as always
			kt_wait_plan plan = kt_base_prepare_wait(s.b);
			EXPECT_EQ(plan.kind, KT_WAIT_UNTIL);
			EXPECT_EQ(kt_wait_plan_timeout_ms(s.b, &plan), int(res)); // the next tick's wait
			EXPECT_EQ(kt_base_run(s.b), 1u);
			EXPECT_EQ(fired, (std::vector<uint64_t>{UINT64_C(1) << 44}));
			for (int turn = 0; turn < 3; turn++) {
				plan = kt_base_prepare_wait(s.b);
				EXPECT_EQ(plan.kind, KT_WAIT_INDEFINITE) << turn;
				EXPECT_EQ(kt_base_next_timeout(s.b), -1) << turn;
				EXPECT_EQ(kt_base_run(s.b), 0u) << turn;
			}
			EXPECT_TRUE(kt_timer_pending(&later.timer));
			EXPECT_EQ(kt_base_check(s.b), KT_CHECK_OK);
			kt_timer_delete(&later.timer);
		}
	}
}

} // namespace

namespace {

// A kt_remote_mod() queued before the switch carries an expiry on the old
// clock; applied on the new one (a second later here) it would fire at once,
// 50 ms early. The switch waits until the queue is drained.
TEST(Clock, RefusedWhileRemoteOperationsAreQueued) {
	kt_base_config cfg{1, KT_CLOCK_MONOTONIC, 0};
	kt_base *b = kt_base_new(&cfg);
	ASSERT_NE(b, nullptr);
	std::vector<uint64_t> fired;
	Conn c;
	c.base = b;
	c.fired = &fired;
	ASSERT_EQ(kt_timer_setup(&c.timer, b, &Conn::cb, 0), 0);
	ASSERT_EQ(kt_remote_mod(&c.timer, kt_base_now(b) + 50, nullptr, nullptr), 0);
	Source later{kt_base_now(b) + 1000};
	EXPECT_EQ(kt_base_set_clock_source(b, &Source::read, &later), -EBUSY);
	EXPECT_EQ(kt_base_remote_queued(b), 1u);
	EXPECT_TRUE(fired.empty());
	kt_base_run(b); // applies the queued mod (50 ms ahead: nothing fires)
	ASSERT_EQ(kt_timer_delete(&c.timer), 1);
	EXPECT_EQ(kt_base_set_clock_source(b, &Source::read, &later), 0);
	EXPECT_EQ(kt_base_run(b), 0u);
	EXPECT_TRUE(fired.empty());
	kt_base_free(b);
}

} // namespace
