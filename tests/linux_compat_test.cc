// <ktimer/linux.h>: kernel code's names on the calling thread's base.
#include <ktimer/ktimer.h>
#include <ktimer/linux.h>

#include <gtest/gtest.h>

#include <cerrno>

#include <time.h> // POSIX timer_delete() must still be usable

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
