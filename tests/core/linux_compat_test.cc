// <ktimer/linux.h>: kernel code's names on the calling thread's base.
#include <ktimer/ktimer.h>
#include <ktimer/linux.h>

#include <gtest/gtest.h>

#include <cerrno>

#include <time.h> // POSIX timer_delete() must still be usable

#include "tests/support/harness.h"

namespace {

struct my_dev {
	int hits = 0;
	struct timer_list watchdog;
};

void watchdog_fn(struct timer_list *t) {
	struct my_dev *dev = from_timer(dev, t, watchdog);
	dev->hits++;
	mod_timer(&dev->watchdog, jiffies + msecs_to_jiffies(1000)); // periodic
}

class LinuxCompat : public ::testing::Test {
protected:
	void SetUp() override {
		kt_base_config cfg{1, KT_CLOCK_MANUAL, 0};
		base = kt_base_new(&cfg);
		kt_base_set_current(base);
	}
	void TearDown() override { kt_base_free(base); }
	kt_base *base;
};

} // namespace

TEST_F(LinuxCompat, KernelStyleWatchdog) {
	my_dev dev;
	EXPECT_EQ(HZ, 1000);
	ASSERT_EQ(timer_setup(&dev.watchdog, watchdog_fn, 0), 0);
	EXPECT_FALSE(timer_pending(&dev.watchdog));
	EXPECT_EQ(mod_timer(&dev.watchdog, jiffies + HZ), 0);
	EXPECT_TRUE(timer_pending(&dev.watchdog));
	kt_base_advance(base, KT_MILLIS(10500));
	EXPECT_EQ(dev.hits, 10);
	EXPECT_EQ(del_timer(&dev.watchdog), 1);
	EXPECT_EQ(del_timer(&dev.watchdog), 0);
}

TEST_F(LinuxCompat, ReduceAddPendingShutdown) {
	my_dev dev;
	timer_setup(&dev.watchdog, watchdog_fn, 0);
	EXPECT_EQ(mod_timer_pending(&dev.watchdog, jiffies + 10), 0);
	EXPECT_EQ(add_timer(&dev.watchdog, jiffies + 500), 0);
	EXPECT_EQ(timer_reduce(&dev.watchdog, jiffies + 100), 1);
	EXPECT_EQ(kt_timer_expires(&dev.watchdog), 100u);
	EXPECT_EQ(timer_shutdown(&dev.watchdog), 1);
	// As in the kernel: ignored, and 0 ("was inactive"), never a truthy -ESHUTDOWN.
	EXPECT_EQ(mod_timer(&dev.watchdog, jiffies + 10), 0);
	EXPECT_EQ(mod_timer_pending(&dev.watchdog, jiffies + 10), 0);
	EXPECT_EQ(timer_reduce(&dev.watchdog, jiffies + 10), 0);
	EXPECT_EQ(kt_mod_timer(&dev.watchdog, jiffies + 10), -ESHUTDOWN); // kt_ keeps its own
	kt_base_advance(base, KT_MILLIS(1000));
	EXPECT_EQ(dev.hits, 0);
}

// The kernel idiom a negative return would invert: take a reference only when
// mod_timer() armed an inactive timer.
TEST_F(LinuxCompat, ModTimerIdiomTakesNoReferenceAfterShutdown) {
	my_dev dev;
	timer_setup(&dev.watchdog, watchdog_fn, 0);
	int refs = 0;
	if (!mod_timer(&dev.watchdog, jiffies + 10))
		refs++; // armed an inactive timer: one reference
	if (!mod_timer(&dev.watchdog, jiffies + 20))
		refs++; // already active: no new reference
	EXPECT_EQ(refs, 1);
	timer_shutdown_sync(&dev.watchdog);
	if (!mod_timer(&dev.watchdog, jiffies + 30))
		refs++; // the kernel returns 0 here too: callers treat it as "inactive"
	EXPECT_FALSE(timer_pending(&dev.watchdog));
	EXPECT_EQ(refs, 2);
}

TEST_F(LinuxCompat, TimeComparisonsAreWrapSafe) {
	EXPECT_TRUE(time_after(UINT64_C(5), UINT64_C(3)));
	EXPECT_TRUE(time_before(UINT64_C(3), UINT64_C(5)));
	EXPECT_TRUE(time_after(UINT64_C(2), UINT64_MAX - 2)); // across the wrap
	EXPECT_TRUE(time_after_eq(UINT64_C(5), UINT64_C(5)));
	EXPECT_TRUE(time_before_eq(UINT64_C(5), UINT64_C(5)));
}

TEST_F(LinuxCompat, PosixTimerDeleteIsNotShadowed) {
	// timer_delete is POSIX's (timer_t); linux.h deliberately leaves it alone.
	int (*posix_delete)(timer_t) = &timer_delete;
	EXPECT_NE(posix_delete, nullptr);
}

// ---- the newer kernel names ----

namespace {

int defined_hits = 0;
void defined_fn(struct timer_list *t) {
	(void)t;
	defined_hits++;
}
// At file scope, before any base exists, as kernel code defines them.
DEFINE_TIMER(defined_timer, defined_fn);
DEFINE_TIMER(never_armed_timer, defined_fn);

struct self_deleting {
	int result = 99;
	struct timer_list t;
};
void self_delete_fn(struct timer_list *t) {
	self_deleting *s = timer_container_of(s, t, t);
	s->result = try_to_del_timer_sync(t); // its own callback: not pending any more
}

} // namespace

TEST_F(LinuxCompat, TimerDeleteSyncAndTryToDelReturnWhatTheKernelSays) {
	my_dev dev;
	timer_setup(&dev.watchdog, watchdog_fn, 0);
	EXPECT_EQ(timer_delete_sync(&dev.watchdog), 0); // not pending
	mod_timer(&dev.watchdog, jiffies + 100);
	EXPECT_EQ(timer_delete_sync(&dev.watchdog), 1); // was pending
	EXPECT_FALSE(timer_pending(&dev.watchdog));
	EXPECT_EQ(try_to_del_timer_sync(&dev.watchdog), 0);
	mod_timer(&dev.watchdog, jiffies + 100);
	EXPECT_EQ(try_to_del_timer_sync(&dev.watchdog), 1);
	kt_base_advance(base, KT_MILLIS(1000));
	EXPECT_EQ(dev.hits, 0); // deleted: never fired
	// From its own callback: 0, where the kernel says -1 (linux.h documents
	// the difference: the timer is detached while its callback runs).
	self_deleting s;
	timer_setup(&s.t, self_delete_fn, 0);
	mod_timer(&s.t, jiffies + 5);
	kt_base_advance(base, KT_MILLIS(10));
	EXPECT_EQ(s.result, 0);
}

TEST_F(LinuxCompat, DefineTimerBindsToTheCurrentBaseOnFirstArm) {
	defined_hits = 0;
	EXPECT_FALSE(timer_pending(&defined_timer));
	EXPECT_EQ(mod_timer(&defined_timer, jiffies + 50), 0);
	EXPECT_TRUE(timer_pending(&defined_timer));
	kt_base_advance(base, KT_MILLIS(49));
	EXPECT_EQ(defined_hits, 0); // never early
	kt_base_advance(base, KT_MILLIS(1));
	EXPECT_EQ(defined_hits, 1);
	EXPECT_EQ(add_timer(&defined_timer, jiffies + 10), 0);
	EXPECT_EQ(del_timer(&defined_timer), 1);
	// Freed with its base below: leave it bound to nothing pending.
	EXPECT_EQ(timer_shutdown(&defined_timer), 0);
}

TEST_F(LinuxCompat, DefineTimerNeverArmedIsInactiveNotAnError) {
	// The kernel's DEFINE_TIMER() is set up: every call on it before the
	// first arm says "was not pending" (0), never a truthy -EINVAL that
	// would invert `if (mod_timer_pending(t, e))`.
	defined_hits = 0;
	EXPECT_EQ(mod_timer_pending(&never_armed_timer, jiffies + 10), 0);
	EXPECT_FALSE(timer_pending(&never_armed_timer));
	EXPECT_EQ(del_timer(&never_armed_timer), 0);
	EXPECT_EQ(timer_delete_sync(&never_armed_timer), 0);
	EXPECT_EQ(try_to_del_timer_sync(&never_armed_timer), 0);
	kt_base_advance(base, KT_MILLIS(20));
	EXPECT_EQ(defined_hits, 0);
	// Freed with its base below: leave it bound to nothing pending.
	EXPECT_EQ(timer_shutdown(&never_armed_timer), 0);
}

TEST_F(LinuxCompat, ConversionsRoundUpAsTheKernelDoes) {
	EXPECT_EQ(usecs_to_jiffies(0), 0u);
	EXPECT_EQ(usecs_to_jiffies(1), 1u); // a timeout never shrinks to 0
	EXPECT_EQ(usecs_to_jiffies(1000), 1u);
	EXPECT_EQ(usecs_to_jiffies(1001), 2u);
	EXPECT_EQ(secs_to_jiffies(3), 3000u);
	EXPECT_EQ(msecs_to_jiffies(7), 7u);
	EXPECT_EQ(jiffies_to_msecs(7), 7u);
}

TEST_F(LinuxCompat, NegativeOrTooLargeMillisecondsAreAnInfiniteTimeout) {
	// The kernel's msecs_to_jiffies(): a negative value (and one beyond
	// MAX_JIFFY_OFFSET) means an infinite timeout, never an expiry in the
	// past that fires at once.
	int negative = -1;
	EXPECT_EQ(msecs_to_jiffies(negative), MAX_JIFFY_OFFSET);
	EXPECT_EQ(msecs_to_jiffies(UINT64_MAX), MAX_JIFFY_OFFSET);
	EXPECT_EQ(msecs_to_jiffies(MAX_JIFFY_OFFSET), MAX_JIFFY_OFFSET);
	EXPECT_EQ(usecs_to_jiffies(negative), MAX_JIFFY_OFFSET);
	EXPECT_TRUE(time_after(jiffies + MAX_JIFFY_OFFSET, jiffies));
	my_dev dev;
	timer_setup(&dev.watchdog, watchdog_fn, 0);
	EXPECT_EQ(mod_timer(&dev.watchdog, jiffies + msecs_to_jiffies(negative)), 0);
	kt_base_advance(base, KT_MILLIS(86400000)); // a day
	EXPECT_EQ(dev.hits, 0);
	EXPECT_TRUE(timer_pending(&dev.watchdog));
	EXPECT_EQ(del_timer(&dev.watchdog), 1);
}

TEST_F(LinuxCompat, RoundJiffies) {
	kt_base_advance(base, KT_MILLIS(10100)); // jiffies = 10100
	ASSERT_EQ(jiffies, 10100u);
	// Nearest whole second: down if less than a quarter second away.
	EXPECT_EQ(round_jiffies(12200u), 12000u);
	EXPECT_EQ(round_jiffies(12250u), 13000u);
	EXPECT_EQ(round_jiffies(12999u), 13000u);
	EXPECT_EQ(round_jiffies(13000u), 13000u);
	// Not into the past: rounding 10200 down gives 10000 < jiffies.
	EXPECT_EQ(round_jiffies(10200u), 10200u);
	EXPECT_EQ(round_jiffies_up(12001u), 13000u);
	EXPECT_EQ(round_jiffies_up(12200u), 13000u);
	EXPECT_EQ(round_jiffies_up(13000u), 14000u); // the kernel's: a whole second on
	// Relative: 1900 from 10100 is 12000, a whole second.
	EXPECT_EQ(round_jiffies_relative(1900u), 1900u);
	EXPECT_EQ(round_jiffies_relative(2000u), 1900u); // 12100 -> 12000
	EXPECT_EQ(round_jiffies_up_relative(2000u), 2900u); // 12100 -> 13000
}

TEST_F(LinuxCompat, OnStackTimerIsDeletedWhenDestroyed) {
	int pending_after = -1;
	{
		struct timer_list t;
		timer_setup_on_stack(&t, watchdog_fn, 0);
		mod_timer(&t, jiffies + 100);
		destroy_timer_on_stack(&t); // the frame goes: nothing left on the wheel
		pending_after = timer_pending(&t);
	}
	EXPECT_EQ(pending_after, 0);
	EXPECT_EQ(kt_base_pending_count(base), 0u);
}

// jiffies is the base's clock as of its last turn: it does not move by
// itself, which is why a busy-wait on it never ends (the header says so).
TEST(LinuxCompatClock, JiffiesIsCachedPerTurn) {
	kt_test::FakeClockBase b(16, 1000); // a monotonic base on a clock the test moves
	kt_base_set_current(b);
	uint64_t first = jiffies;
	b.now += 500; // time passes...
	EXPECT_EQ(jiffies, first); // ...but without a turn jiffies does not move
	kt_base_update_time(b);
	EXPECT_EQ(jiffies, first + 500); // a turn reads the clock
	kt_base_set_current(nullptr);
}

// ---- a freed base's timers, and the kernel's edge cases ----

namespace {

int orphan_hits = 0;
void orphan_fn(struct timer_list *t) {
	(void)t;
	orphan_hits++;
}
DEFINE_TIMER(orphaned_defined_timer, orphan_fn);

} // namespace

// kt_base_free() detaches a pending timer and leaves it refusing to arm until
// it is set up again (base.h). Through the kernel names too: a timer_setup()
// timer has no base afterwards, exactly as a DEFINE_TIMER() never bound, but
// it must not be bound to whatever base is current now.
TEST(LinuxCompatFreedBase, TimerSetupTimerIsNotReboundAfterItsBaseIsFreed) {
	kt_base_config cfg{1, KT_CLOCK_MANUAL, 0};
	kt_base *old_base = kt_base_new(&cfg);
	kt_base_set_current(old_base);
	struct timer_list t;
	orphan_hits = 0;
	ASSERT_EQ(timer_setup(&t, orphan_fn, 0), 0);
	ASSERT_EQ(mod_timer(&t, jiffies + 100), 0);
	kt_base_free(old_base); // t was pending: detached, orphaned
	kt_base *now_base = kt_base_new(&cfg);
	kt_base_set_current(now_base);
	EXPECT_EQ(kt_mod_timer(&t, jiffies + 100), -EINVAL);
	EXPECT_EQ(mod_timer(&t, jiffies + 100), -EINVAL); // as kt_mod_timer()
	EXPECT_EQ(add_timer(&t, jiffies + 100), -EINVAL);
	EXPECT_EQ(mod_timer_pending(&t, jiffies + 100), -EINVAL);
	EXPECT_EQ(timer_reduce(&t, jiffies + 100), -EINVAL);
	EXPECT_FALSE(timer_pending(&t));
	EXPECT_EQ(kt_base_pending_count(now_base), 0u); // nothing was armed on it
	kt_base_advance(now_base, KT_MILLIS(1000));
	EXPECT_EQ(orphan_hits, 0);
	// Set up again, it is a timer of the new base.
	ASSERT_EQ(timer_setup(&t, orphan_fn, 0), 0);
	EXPECT_EQ(mod_timer(&t, jiffies + 10), 0);
	kt_base_advance(now_base, KT_MILLIS(10));
	EXPECT_EQ(orphan_hits, 1);
	kt_base_set_current(nullptr);
	kt_base_free(now_base);
}

TEST(LinuxCompatFreedBase, DefineTimerBoundOnceIsNotReboundAfterItsBaseIsFreed) {
	kt_base_config cfg{1, KT_CLOCK_MANUAL, 0};
	kt_base *old_base = kt_base_new(&cfg);
	kt_base_set_current(old_base);
	orphan_hits = 0;
	ASSERT_EQ(add_timer(&orphaned_defined_timer, jiffies + 100), 0); // bound here
	kt_base_free(old_base);
	kt_base *now_base = kt_base_new(&cfg);
	kt_base_set_current(now_base);
	EXPECT_EQ(add_timer(&orphaned_defined_timer, jiffies + 100), -EINVAL);
	EXPECT_EQ(mod_timer(&orphaned_defined_timer, jiffies + 100), -EINVAL);
	EXPECT_FALSE(timer_pending(&orphaned_defined_timer));
	EXPECT_EQ(kt_base_pending_count(now_base), 0u);
	kt_base_advance(now_base, KT_MILLIS(1000));
	EXPECT_EQ(orphan_hits, 0);
	ASSERT_EQ(timer_setup(&orphaned_defined_timer, orphan_fn, 0), 0); // the way back
	EXPECT_EQ(mod_timer(&orphaned_defined_timer, jiffies + 10), 0);
	kt_base_advance(now_base, KT_MILLIS(10));
	EXPECT_EQ(orphan_hits, 1);
	kt_base_set_current(nullptr);
	kt_base_free(now_base);
}

// The kernel's msecs_to_jiffies() takes an unsigned int: from 2^31 up it is a
// negative int to it, an infinite timeout. Not 24.8 days.
TEST_F(LinuxCompat, MillisecondsFromTwoToThe31AreAnInfiniteTimeout) {
	unsigned int big = 0x80000000u;
	EXPECT_EQ(msecs_to_jiffies(big - 1), uint64_t{0x7fffffff}); // the last finite one
	EXPECT_EQ(msecs_to_jiffies(big), MAX_JIFFY_OFFSET);
	EXPECT_EQ(msecs_to_jiffies(0xffffffffu), MAX_JIFFY_OFFSET);
	EXPECT_EQ(msecs_to_jiffies(uint64_t{1} << 40), MAX_JIFFY_OFFSET);
	my_dev dev;
	timer_setup(&dev.watchdog, watchdog_fn, 0);
	EXPECT_EQ(mod_timer(&dev.watchdog, jiffies + msecs_to_jiffies(big)), 0);
	kt_base_advance(base, KT_MILLIS(0x80000000u)); // the 2^31 ms have passed
	EXPECT_EQ(dev.hits, 0);
	EXPECT_TRUE(timer_pending(&dev.watchdog));
	EXPECT_EQ(del_timer(&dev.watchdog), 1);
}

// The kernel's add_timer() on a shut-down timer silently does nothing; its
// return type is void, so a port that reads ours must see "nothing done",
// never a truthy -ESHUTDOWN.
TEST_F(LinuxCompat, AddTimerOnAShutDownTimerDoesNothingAndReturnsZero) {
	my_dev dev;
	timer_setup(&dev.watchdog, watchdog_fn, 0);
	ASSERT_EQ(add_timer(&dev.watchdog, jiffies + 10), 0);
	EXPECT_EQ(timer_shutdown_sync(&dev.watchdog), 1);
	EXPECT_EQ(add_timer(&dev.watchdog, jiffies + 10), 0);
	EXPECT_FALSE(timer_pending(&dev.watchdog));
	EXPECT_EQ(kt_add_timer(&dev.watchdog, jiffies + 10), -ESHUTDOWN); // kt_ keeps its own
	kt_base_advance(base, KT_MILLIS(100));
	EXPECT_EQ(dev.hits, 0);
	EXPECT_EQ(add_timer(&dev.watchdog, jiffies + 10), 0); // still nothing, every time
	EXPECT_FALSE(timer_pending(&dev.watchdog));
	// Set up again, it arms.
	timer_setup(&dev.watchdog, watchdog_fn, 0);
	EXPECT_EQ(add_timer(&dev.watchdog, jiffies + 10), 0);
	EXPECT_TRUE(timer_pending(&dev.watchdog));
	EXPECT_EQ(del_timer(&dev.watchdog), 1);
}

// try_to_del_timer_sync() from the timer's own callback after the callback
// re-armed it: linux.h documents 1 and the new arming deleted (the kernel
// would say -1 and leave it pending). Never fired again, nothing left.
namespace {
struct rearm_then_try_del {
	int result = 99, fires = 0;
	struct timer_list t;
};
void rearm_then_try_del_fn(struct timer_list *t) {
	rearm_then_try_del *s = timer_container_of(s, t, t);
	s->fires++;
	mod_timer(t, jiffies + 100);
	s->result = try_to_del_timer_sync(t);
}
} // namespace

TEST_F(LinuxCompat, TryToDelTimerSyncFromItsOwnCallbackAfterAReArmDeletesIt) {
	rearm_then_try_del s;
	timer_setup(&s.t, rearm_then_try_del_fn, 0);
	mod_timer(&s.t, jiffies + 5);
	kt_base_advance(base, KT_MILLIS(1000));
	EXPECT_EQ(s.fires, 1);
	EXPECT_EQ(s.result, 1);
	EXPECT_FALSE(timer_pending(&s.t));
	EXPECT_EQ(kt_base_pending_count(base), 0u);
}
