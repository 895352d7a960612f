/* SPDX-License-Identifier: MIT */
/*
 * ktimer/base.h - the per-worker timer base: one wheel, its precise timers,
 * its cached clocks, the turn, and the wait plan.
 *
 * A base belongs to one thread. Everything here except kt_base_new() and
 * kt_base_current() must be called from that thread; other threads use the
 * cross-thread calls of <ktimer/remote.h>.
 *
 * The worker loop is shown once, in docs/API.md ("The worker loop"), with
 * when to plan the wait with kt_base_prepare_wait() (other threads arm
 * timers) and when kt_base_next_timeout() is enough. <ktimer/epoll.h>
 * packages it.
 *
 * The wait protocol. After a turn, the owner calls kt_base_prepare_wait()
 * exactly once and does what the plan says:
 *
 *	KT_WAIT_IMMEDIATE   work is queued: poll I/O without blocking, turn again
 *	KT_WAIT_UNTIL       block until plan.deadline_ns, I/O, or the waker
 *	KT_WAIT_INDEFINITE  nothing pending: block until I/O or the waker
 *
 * The plan is chosen under the lock that producers on other threads take to
 * queue operations. A producer that races with kt_base_prepare_wait()
 * therefore either queues before it (the plan is IMMEDIATE) or after it (the
 * owner is marked waiting, and the producer calls the waker). There is no
 * third order, so a lost wake-up cannot be expressed through this API. The
 * owner stops being "waiting" at the start of its next kt_base_run().
 *
 * The clock's limit. A base's clock stops at 2^44 ms (557 years): a manual
 * clock is not advanced past it, and a clock source's reading past it is
 * taken as it (<ktimer/clock.h>). A base whose clock stands there still
 * fires everything due by the limit - a timer armed there for a delay of 0
 * or an expiry already passed fires at the next turn (kt_base_run(), or
 * each kt_base_advance()), which the wait plan puts one unit away, as it
 * would the next tick - and nothing due past the limit ever fires or wakes
 * the worker: the wait plan and kt_base_next_timeout() leave such timers
 * out (KT_WAIT_INDEFINITE and -1 when nothing else is pending),
 * kt_base_max_lateness() answers UINT32_MAX for a delay that ends past the
 * limit, and kt_timer_arm() refuses one with -ERANGE. An absolute expiry
 * past the limit (kt_mod_timer(), kt_hrtimer_start()) is taken as the
 * caller's "never", as UINT64_MAX is: it stays pending and never fires.
 */
#ifndef KTIMER_BASE_H
#define KTIMER_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "time.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kt_base;

/** enum kt_clock_kind - where a base's time comes from. */
enum kt_clock_kind {
	/* CLOCK_MONOTONIC, read once per kt_base_run(). */
	KT_CLOCK_MONOTONIC = 0,
	/* Stands still until kt_base_advance(): for tests. */
	KT_CLOCK_MANUAL = 1,
};

/**
 * struct kt_base_config - how to build a base.
 * @resolution_ms: the wheel's unit; a power of two in 1..16, 0 means 16.
 * @clock: KT_CLOCK_MONOTONIC or KT_CLOCK_MANUAL.
 * @start_ms: the manual clock's first reading (ignored for monotonic).
 */
struct kt_base_config {
	unsigned resolution_ms;
	enum kt_clock_kind clock;
	uint64_t start_ms;
};

/*
 * KT_DEFAULT_RESOLUTION_MS, KT_WHEEL_LEVELS, KT_WHEEL_LEVEL_SIZE - the wheel's shape.
 *
 * The unit a base gets when its config asks for 0 (16 ms), and the wheel's
 * fixed geometry: 8 levels of 64 buckets, each level 8 times coarser than
 * the one below. kt_wheel_level_info() gives each level's granularity and
 * range for a resolution; kt_wheel_reach_ms() the farthest expiry the wheel
 * holds before it parks a timer.
 */
#define KT_DEFAULT_RESOLUTION_MS 16u
#define KT_WHEEL_LEVELS 8u
#define KT_WHEEL_LEVEL_SIZE 64u

/**
 * struct kt_base_stats - counters kept by the owner thread (plain stores).
 * @enqueued: timers linked into a bucket (arms and re-arms that moved).
 *            Counted only while kt_base_set_op_counting() is on.
 * @removed: timers unlinked from a bucket by delete or a moving re-arm.
 *           Counted only while kt_base_set_op_counting() is on.
 * @same_bucket: re-arms that only updated the expiry. Counted only while
 *               kt_base_set_op_counting() is on.
 * @fired: callbacks run. Always counted.
 * @runs: calls to kt_base_run() and kt_base_advance() (wake-ups). Always
 *        counted.
 * @limited_runs: calls to kt_base_run() that stopped at the run limit with
 *                due timers left (kt_base_set_run_limit()). Always counted.
 */
struct kt_base_stats {
	uint64_t enqueued;
	uint64_t removed;
	uint64_t same_bucket;
	uint64_t fired;
	uint64_t runs;
	uint64_t limited_runs;
};

/**
 * struct kt_level_info - one row of the granularity table.
 * @granularity_ms: bucket width, the most a timer on this level is rounded up.
 * @min_delay_ms: the shortest delay placed on this level.
 * @max_delay_ms: the longest delay placed on this level (inclusive).
 */
struct kt_level_info {
	uint64_t granularity_ms;
	uint64_t min_delay_ms;
	uint64_t max_delay_ms;
};

/** enum kt_wait_kind - what the owner should do next. */
enum kt_wait_kind {
	KT_WAIT_IMMEDIATE = 0,
	KT_WAIT_UNTIL = 1,
	KT_WAIT_INDEFINITE = 2,
};

/**
 * struct kt_wait_plan - the result of kt_base_prepare_wait().
 * @kind: see enum kt_wait_kind.
 * @precise: for KT_WAIT_UNTIL, 1 if the deadline is a kt_hrtimer's (wait with
 *           a nanosecond timer such as a timerfd), 0 if it is the wheel's.
 * @deadline_ns: for KT_WAIT_UNTIL, the absolute deadline in nanoseconds on
 *               the base's clock (kt_base_now_ns()).
 */
struct kt_wait_plan {
	enum kt_wait_kind kind;
	int precise;
	uint64_t deadline_ns;
};

/**
 * enum kt_check_result - what kt_base_check() found.
 * @KT_CHECK_OK: every invariant holds.
 * @KT_CHECK_BATCH: the batch of due timers (gathered by a turn or by
 *                  kt_base_update_time(), not yet fired) is inconsistent.
 * @KT_CHECK_WHEEL_CLOCK: the wheel clock does not stand at the tick after now.
 * @KT_CHECK_BITMAP: a level's occupancy bitmap disagrees with its buckets, or the
 *   earliest bucket the base remembers from it is not the earliest.
 * @KT_CHECK_LINKS: a bucket list's links are broken.
 * @KT_CHECK_NODE: a timer does not know its bucket or its base.
 * @KT_CHECK_WRONG_WHEEL: a timer is on the wrong wheel (deferrable or not).
 * @KT_CHECK_EARLY: a bucket is due before a timer in it (it would fire early).
 * @KT_CHECK_ROUNDING: a timer is rounded up by more than its level's
 *                     granularity.
 * @KT_CHECK_COUNT: the pending count does not match the timers in buckets.
 * @KT_CHECK_HR_HEAP: the precise-timer heap is out of order.
 * @KT_CHECK_FAST_PATH: what kt_mod_timer() caches of the base (the range,
 *                      rounding and lists of one level, the state a timer
 *                      pending there has, whether a batch is gathered)
 *                      disagrees with the base.
 */
enum kt_check_result {
	KT_CHECK_OK = 0,
	KT_CHECK_BATCH = -1,
	KT_CHECK_WHEEL_CLOCK = -2,
	KT_CHECK_BITMAP = -3,
	KT_CHECK_LINKS = -4,
	KT_CHECK_NODE = -5,
	KT_CHECK_WRONG_WHEEL = -6,
	KT_CHECK_EARLY = -7,
	KT_CHECK_ROUNDING = -8,
	KT_CHECK_COUNT = -9,
	KT_CHECK_HR_HEAP = -10,
	KT_CHECK_FAST_PATH = -11,
};

/**
 * kt_base_new() - create a timer base for the calling thread.
 * @cfg: configuration, or NULL for a 16 ms monotonic base.
 *
 * The base belongs to one thread: in debug builds (KT_DEBUG) the thread of
 * its first turn becomes its owner, and a call from another thread aborts
 * with a message naming the function.
 *
 * Return: the base, or NULL with errno set: EINVAL if the resolution is not a
 * power of two in 1..16 (0 means 16), the clock kind is unknown, or a manual
 * clock's @start_ms is past the manual clock's limit (2^44 ms, 557 years,
 * which keeps its nanoseconds within 64 bits), ENOMEM if allocation failed.
 */
struct kt_base *kt_base_new(const struct kt_base_config *cfg);

/**
 * kt_base_adopt() - make the calling thread the base's owner.
 * @base: the base.
 *
 * For handing a base over: after its worker thread has been joined, a main
 * thread that deletes the worker's timers before kt_base_free() calls this
 * first. Only debug builds (KT_DEBUG) check ownership; elsewhere this does
 * nothing but the NULL check.
 *
 * Return: 0, or -EINVAL for NULL.
 */
int kt_base_adopt(struct kt_base *base);

/**
 * kt_base_free() - destroy a base.
 * @base: the base, or NULL.
 *
 * Pending timers (wheel and precise) are detached without running:
 * kt_timer_pending() is false for each afterwards, and every arming call on
 * one of them (kt_mod_timer(), kt_timer_arm(), kt_hrtimer_start(),
 * kt_remote_*(), kt_interval_*(), kt_idle_start()) returns -EINVAL until it
 * is set up again; their memory stays the caller's. Operations still queued
 * by other threads are dropped, each reported to its done callback with
 * -ECANCELED so whatever its argument owns can be reclaimed. A producer
 * calling the waker at this moment is waited for. Arming a timer that was
 * idle when its base was freed is undefined (the base is gone; ASan reports
 * it). If @base is the calling thread's current base, the current base
 * becomes NULL.
 *
 * Return: 0 (also for NULL), or -EBUSY when called from a callback of this
 * base's turn (nothing is freed: the turn would go on with freed memory;
 * free it after kt_base_run() returns).
 */
int kt_base_free(struct kt_base *base);

/**
 * kt_base_resolution() - the wheel's unit.
 * @base: the base.
 *
 * Return: the resolution in milliseconds (1, 2, 4, 8 or 16), 0 for NULL.
 */
unsigned kt_base_resolution(const struct kt_base *base);

/**
 * kt_base_clock() - where the base's time comes from.
 * @base: the base.
 *
 * Loop drivers (kt_epoll, kt_uv, kt_event, kt_uring) refuse a manual clock:
 * a real loop's waits would never move it.
 *
 * Return: KT_CLOCK_MONOTONIC or KT_CLOCK_MANUAL (KT_CLOCK_MONOTONIC for NULL).
 */
enum kt_clock_kind kt_base_clock(const struct kt_base *base);

/**
 * kt_base_now() - the cached monotonic time of this turn.
 * @base: the base.
 *
 * Return: milliseconds on the base's clock, as of the last kt_base_run(),
 * kt_base_update_time() or kt_base_advance() (0 for NULL). During a callback
 * fired by kt_base_advance() it equals the due time of the callback's bucket.
 */
uint64_t kt_base_now(const struct kt_base *base);

/**
 * kt_base_now_ns() - the turn's cached monotonic time in nanoseconds.
 * @base: the base.
 *
 * Return: nanoseconds on the base's clock; kt_base_now() is this / 10^6
 * (0 for NULL).
 */
uint64_t kt_base_now_ns(const struct kt_base *base);

/**
 * kt_base_system_time() - the cached wall clock.
 * @base: the base.
 *
 * Refreshed by kt_base_run() at most once per 100 ms of monotonic time, so a
 * server can stamp Date headers and logs without a system call per request.
 * It never goes backwards, even if the system clock is stepped back. A manual
 * base reports the wall clock at its creation plus the manual time elapsed.
 *
 * Return: milliseconds since the Unix epoch (0 for NULL).
 */
uint64_t kt_base_system_time(const struct kt_base *base);

/**
 * kt_base_update_time() - refresh the cached clocks; fire nothing.
 * @base: the base.
 *
 * The "update the time" step of the recommended turn (docs/API.md, "The
 * worker loop"): call it right after the wait returns, before handling I/O,
 * so a connection served in this turn arms its deadline from the present,
 * not from the start of a slow turn (libuv's uv_update_time(), libevent's
 * event_base_update_cache_time()). Everything due by the new now - precise
 * timers and wheel buckets - is gathered for the next kt_base_run(), and the
 * wheel clock moves past now, so nothing armed afterwards is placed against
 * a stale clock. A timer of the gathered batch that I/O re-arms or deletes
 * before kt_base_run() leaves the batch and does not fire: a deadline pushed
 * back by this turn's I/O is not missed. Until kt_base_run(),
 * kt_base_next_timeout() is 0. A manual clock does not move here.
 *
 * Calling it again before kt_base_run() gathers again. The batch holds each
 * of the wheel's 1,024 buckets once; if repeated gatherings refilled by I/O
 * would exceed that, the buckets that do not fit stay due in the wheel and
 * its clock waits on the first of them: kt_base_run() fires the batch, the
 * next turn's wait is immediate (unless only deferrable timers are left,
 * which wait for the next wake-up, as always) and the rest fires then.
 * Nothing is lost or fired early, but the lateness bound does not hold
 * meanwhile: a timer armed while the clock is held back is placed by its
 * delay plus the clock's lag, on a coarser level, and may fire up to that
 * level's granularity late (a 5 ms timer armed with the clock 6 s behind, at
 * 1 ms resolution: its delay counts as about 6,005 ms, level 3, whose
 * buckets are 512 ms wide, so it may fire up to 511 ms late). Called once
 * per turn, as the recommended loop does, or again within the turn before
 * a deadline is armed for an event that came after the turn's clock (an
 * accept, a read: docs/API.md, "A turn longer than its clock"), it never
 * fills a batch without a run limit (with one, see kt_base_set_run_limit()):
 * the calls of one turn gather together what one call at its end would,
 * unless the turn outlasts 64 units and a bucket gathered early in it comes
 * due again.
 *
 * Return: 0, -EINVAL for NULL, or -EBUSY from inside a callback (a callback
 * runs within the turn and keeps the turn's clock).
 */
int kt_base_update_time(struct kt_base *base);

/**
 * kt_base_run() - one turn's timers: refresh the clocks, fire what is due.
 * @base: the base.
 *
 * In order: take the operations other threads queued (this ends the
 * owner's "waiting"), refresh the cached clocks and gather everything due
 * (as kt_base_update_time()), apply the queued operations in queue order
 * (after the wheel clock moved, so a relative remote arm counts from now;
 * before anything fires, so a remote delete of a due timer wins), then run
 * the callbacks: precise timers first, then wheel buckets in due-time order,
 * then the timers the queued operations made due (kt_remote_arm() with no
 * delay, kt_remote_mod() to a time already passed): those fire in this
 * call, not on the next tick (unless a run limit leaves them, as any due
 * timer, to the next call).
 *
 * Callbacks run with their timer already detached. A timer a callback arms
 * for a time that is already due fires on a later turn, never within this
 * call, so a self-re-arming callback cannot spin. A manual base's clock is not
 * moved. Calling it from inside a callback does nothing.
 *
 * With a run limit (kt_base_set_run_limit()) the call may stop before the
 * batch is empty. What is left stays due, in order, and fires first in the
 * next call, before anything gathered then.
 *
 * Return: the number of timer callbacks run (0 for NULL). The done
 * callbacks of remote operations are counted apart:
 * kt_base_run_done_calls().
 */
size_t kt_base_run(struct kt_base *base);

/**
 * kt_base_set_run_limit() - bound the work of one kt_base_run().
 * @base: the base.
 * @max_callbacks: the most timer callbacks one call starts; 0: no limit.
 * @max_us: the most microseconds of monotonic time (on the base's clock)
 *          after which one call starts no further callback; 0: no limit.
 *
 * Why: the wheel batches expiries - at the 16 ms unit a level-2 bucket holds
 * about a second of deadlines - so a second's worth of idle connections
 * come due in one turn, and a worker closing them all at once stops serving
 * everybody else meanwhile (libevent's event_config_set_max_dispatch_interval()
 * answers the same problem). With a limit, kt_base_run() starts no further
 * callback once it has run @max_callbacks, or once @max_us have passed since
 * it began; the time is checked between callbacks (a slow callback is not
 * interrupted), and at least one callback runs per call. Only callbacks
 * count: a timer that is taken from a due bucket only to be requeued (a
 * KT_TIMER_LAZY timer pushed later, one beyond the wheel's reach) runs
 * none, spends nothing, and a run never stops in front of one - a run
 * that stops leaves a timer that is due. The default is no limit.
 *
 * What is left stays due and keeps its order: the next kt_base_run() goes on
 * with it, earliest due first, before anything due later. Meanwhile
 * kt_base_next_timeout() is 0 and kt_base_prepare_wait() says
 * KT_WAIT_IMMEDIATE, so the loop polls its I/O without blocking and comes
 * back; kt_epoll_wait() and the libuv, libevent and io_uring adapters do so
 * by themselves. A left-over timer that the turn's I/O deletes does not
 * fire; one that it re-arms fires at its new time, never early. Precise
 * timers (kt_hrtimer) count toward the limit. The done callbacks of remote
 * operations are not timer callbacks and are not limited. kt_base_advance(),
 * the manual clock's driver for tests, is not limited: it fires everything
 * due on its way.
 *
 * The trade-off: a limit spreads a burst over turns, so the last timer of a
 * burst of N fires about N / @max_callbacks turns after the first - each
 * such turn one poll of the I/O plus what the I/O costs. Choose the limit
 * so that a turn's timer work stays below the latency the I/O can wait.
 * Left-overs keep their place in the batch, which holds 1,024 buckets: a
 * backlog that spans more buckets than that (timers come due faster than
 * the limit lets them fire, for longer than 1,024 units) holds the wheel
 * clock back as kt_base_update_time() describes, and timers armed meanwhile
 * are placed on coarser levels - never early, but later than the bound.
 *
 * Return: 0, -EINVAL for NULL, or -EBUSY from inside a callback (the run in
 * progress keeps its limit).
 */
int kt_base_set_run_limit(struct kt_base *base, uint32_t max_callbacks, uint32_t max_us);

/**
 * kt_base_run_done_calls() - done callbacks the last kt_base_run() ran.
 * @base: the base.
 *
 * A loop that blocks after kt_base_run() unless it fired something must
 * also not block when a remote operation's done callback ran: the callback
 * may have changed what the loop tests (a stop flag). kt_epoll_wait() and
 * kt_uring_wait() return at once when either count is non-zero.
 *
 * Return: the number of done callbacks (kt_remote_mod() and friends) run on
 * this thread by the last kt_base_run(); 0 for NULL or before the first.
 */
size_t kt_base_run_done_calls(const struct kt_base *base);

/**
 * kt_base_advance() - move a manual clock forward and fire what comes due.
 * @base: a base with KT_CLOCK_MANUAL.
 * @delta: how far to move the clock.
 *
 * Buckets fire in due-time order; during each callback kt_base_now() equals
 * the bucket's due time. Timers armed by callbacks fire within this call if
 * they come due before its end. The clock never moves backwards, and it
 * saturates: an advance past the manual clock's limit (2^44 ms, see
 * kt_base_new()) stops the clock there, firing what is due by then. With
 * the clock at the limit, each call fires the timers armed there for a
 * time already due (see "The clock's limit" at the top of this header),
 * once: one a callback re-arms so fires in the next call.
 *
 * Return: the number of callbacks run, or -EINVAL if @base is NULL, does not
 * have a manual clock, or the call comes from inside a callback.
 */
long kt_base_advance(struct kt_base *base, kt_millis delta);

/**
 * kt_base_next_timeout() - how long the worker may sleep.
 * @base: the base.
 *
 * Computed from one occupancy bitmap per wheel level; empty buckets are never
 * scanned. Deferrable timers are ignored: they never cause a wake-up. A
 * precise timer (kt_hrtimer) counts too, its deadline rounded up to the
 * millisecond; kt_base_prepare_wait() gives its exact deadline. It writes
 * nothing, but it reads what the owner writes: call it from the owner's
 * thread (debug builds check).
 *
 * Return: milliseconds from kt_base_now() until the earliest occupied bucket
 * (or precise deadline) is due, 0 if it is due already (or gathered by
 * kt_base_update_time(), or left by a run that stopped at its limit, and not
 * yet run), -1 if no (non-deferrable) timer is pending that the clock can
 * reach (one due past the clock's limit, 2^44 ms, never counts), -EINVAL
 * for NULL.
 */
int64_t kt_base_next_timeout(const struct kt_base *base);

/**
 * kt_base_prepare_wait() - choose how the owner waits, race-free.
 * @base: the base.
 *
 * Deferrable timers never set the deadline, nor does a timer due past the
 * clock's limit (2^44 ms), which no clock reaches (see the top of this
 * header). A deadline already in the past is still KT_WAIT_UNTIL;
 * kt_wait_plan_timeout_ms() turns it into 0. Timers already gathered (by
 * kt_base_update_time()) or left by a run that stopped at its limit make
 * the plan KT_WAIT_IMMEDIATE: poll, then run again.
 *
 * Prefer it to kt_base_next_timeout() whenever other threads arm this base's
 * timers (kt_remote_*()): only the plan closes the window in which a
 * producer's wake-up could be lost. A single-threaded loop may use either.
 *
 * Return: the plan (see the top of this header); KT_WAIT_IMMEDIATE for NULL.
 */
struct kt_wait_plan kt_base_prepare_wait(struct kt_base *base);

/**
 * kt_wait_plan_timeout_ms() - a plan as an epoll_wait()/poll() timeout.
 * @base: the base the plan came from.
 * @plan: the plan.
 *
 * Measured from a fresh clock reading (not the turn's cached now), rounded up
 * to whole milliseconds, so the wait never ends before the deadline and is
 * never 0 while the deadline is in the future. Clamped to INT_MAX.
 *
 * Return: 0 for KT_WAIT_IMMEDIATE or a past deadline, -1 for
 * KT_WAIT_INDEFINITE, otherwise the milliseconds to wait; -EINVAL if an
 * argument is NULL.
 */
int kt_wait_plan_timeout_ms(const struct kt_base *base, const struct kt_wait_plan *plan);

/**
 * kt_base_pending_count() - timers pending on the base.
 * @base: the base.
 *
 * Return: the number of pending timers, deferrable ones included (0 for NULL).
 */
size_t kt_base_pending_count(const struct kt_base *base);

/**
 * kt_base_get_stats() - the base's counters.
 * @base: the base.
 * @out: where to store them.
 *
 * @fired, @runs and @limited_runs are counted always, once per turn or per
 * callback. @enqueued, @removed and @same_bucket count every timer
 * operation, and are counted only while kt_base_set_op_counting() is on
 * (they stay as they were while it is off). It reads what the owner
 * writes: the owner's call (debug builds check): a monitoring thread asks
 * the owner, as net/'s workers publish theirs.
 *
 * Return: 0, or -EINVAL if an argument is NULL.
 */
int kt_base_get_stats(struct kt_base *base, struct kt_base_stats *out);

/**
 * kt_base_set_op_counting() - count every timer operation in the stats.
 * @base: the base.
 * @on: nonzero to count, 0 to stop.
 *
 * A counter is a store into the base on each operation, one the re-arm of
 * a busy server does not need: so the operation counters of struct
 * kt_base_stats (@enqueued, @removed, @same_bucket) are kept only while
 * this is on. While it is on, kt_mod_timer() takes a slower path that
 * counts, with the same results; the counters of turns and callbacks are
 * kept either way. Off by default. Owner thread only.
 *
 * Return: 0, or -EINVAL for NULL.
 */
int kt_base_set_op_counting(struct kt_base *base, int on);

/**
 * kt_base_check() - walk the wheel and verify its invariants.
 * @base: the base.
 *
 * Checks that bitmaps match bucket occupancy, list links are consistent, each
 * timer sits in the bucket its expiry maps to, no bucket is due before the
 * wheel clock, the batch of due timers is well formed, the precise-timer heap
 * is ordered, and the pending count matches. O(pending timers): for tests and
 * debug builds.
 *
 * Return: KT_CHECK_OK (0) if consistent, otherwise the first violated
 * invariant as a negative enum kt_check_result; kt_base_check_str() names it.
 * -EINVAL for NULL.
 */
int kt_base_check(const struct kt_base *base);

/**
 * kt_base_check_str() - a kt_base_check() result in words.
 * @result: a value kt_base_check() returned.
 *
 * Return: a static string naming the invariant ("ok" for KT_CHECK_OK).
 */
const char *kt_base_check_str(int result);

/**
 * kt_base_dump() - list every pending timer, like Linux's /proc/timer_list.
 * @base: the base.
 * @f: where to write (stderr, a log file).
 *
 * One header line (resolution, clock, now, wheel clock, counts), then a line
 * per timer: wheel timers with their expiry, time left, level and bucket;
 * deferrable ones; those gathered for the next kt_base_run(); precise timers
 * with their deadline in ns. Each names its callback by symbol where dladdr()
 * knows it (build with -rdynamic to see the symbols of an executable), and
 * its address; a kt_call_after() timer names the function it will call.
 * O(pending timers) plus a walk of the 1,024 buckets: for
 * debugging, from the owner's thread.
 *
 * Return: the number of timers listed, or -EINVAL if an argument is NULL.
 */
int kt_base_dump(const struct kt_base *base, FILE *f);

/**
 * kt_base_current() - the calling thread's base.
 *
 * Return: the base last given to kt_base_set_current() on this thread, or NULL.
 */
struct kt_base *kt_base_current(void);

/**
 * kt_base_set_current() - set the calling thread's base.
 * @base: the base, or NULL.
 *
 * Used by the kernel-style names in <ktimer/linux.h>.
 */
void kt_base_set_current(struct kt_base *base);

/**
 * kt_wheel_level_info() - the granularity table, computed.
 * @resolution_ms: a valid resolution (1, 2, 4, 8, 16).
 * @level: 0 .. KT_WHEEL_LEVELS - 1.
 * @out: where to store the row.
 *
 * The row's delays are not counted from kt_base_now() but from the wheel's
 * next tick: a timer whose expiry is E ms goes on the level whose
 * [@out->min_delay_ms, @out->max_delay_ms] holds E - F, where F is the first
 * millisecond after the start of the current tick (now - now % resolution
 * + 1). E is now + delay, plus 1 when the clock was read mid-millisecond
 * (expiries are rounded up, never early). So a delay D armed now is placed
 * as D + now % resolution - 1 (or that + 1), which is up to resolution ms
 * more than D: delays from max_delay_ms + 2 - resolution up to
 * max_delay_ms + 1 land on this level or the next one depending on the
 * instant they are armed. With the default 16 ms resolution, level 0's
 * max_delay_ms is 1007, and a 1000 ms timeout armed late in a tick goes on
 * level 1 (128 ms buckets). A timer on a level fires at the first multiple
 * of its @out->granularity_ms at or after E (an E the wheel has passed, a
 * delay of 0 armed on a tick, at the next tick): at most one granularity of
 * the level after kt_base_now() + delay, plus however late the worker runs
 * the wheel. kt_base_max_lateness() computes it for a delay armed now;
 * docs/LATENESS.md tabulates it for every resolution.
 *
 * Return: 0, or -EINVAL for an invalid resolution or level.
 */
int kt_wheel_level_info(unsigned resolution_ms, unsigned level, struct kt_level_info *out);

/**
 * kt_base_max_lateness() - how late a wheel timer armed now for @delay fires.
 * @base: the base.
 * @delay: the delay, as kt_timer_arm() would be given it.
 *
 * Where the wheel would place a timer armed now on @base (kt_timer_arm(),
 * kt_idle, kt_deadline, ...) for @delay, and so when it would fire: the
 * level for its delay from the wheel's next tick, its bucket (its expiry
 * rounded up to the level's granularity), and for delays beyond the
 * wheel's reach the re-queueing at the far end. The result is exact for a
 * base whose clock reads whole milliseconds (the manual clock); on a
 * monotonic clock read mid-millisecond the timer is asked for from the next
 * millisecond (never early), which the result counts, so it is then an
 * upper bound by under 1 ms. It assumes the worker runs the wheel on time
 * (kt_base_prepare_wait()'s deadline): a late worker adds its own delay.
 * Precise timers (kt_hrtimer) are not on the wheel: they are late by their
 * driver's wake-up only.
 *
 * The timer never fires early: the result is how much after
 * kt_base_now(@base) + @delay it fires, at most one granularity of the
 * level it lands on (kt_wheel_level_info()). At the clock's limit (2^44 ms,
 * see the top of this header) a delay of 0 fires at the next turn, with the
 * clock standing at the limit: 0.
 *
 * The bound belongs to the arm that placed the timer in its bucket: an arm
 * of an idle timer, a re-arm that moved it to another bucket, or a re-arm
 * whose new expiry maps to the bucket it is in. A re-arm to the absolute
 * expiry the timer already has places nothing (kt_mod_timer()): the timer
 * keeps the bucket of the arm that placed it, and that arm's bound for
 * that arm's delay, which is larger than this function's result for the
 * shorter delay left at the re-arm when that earlier delay was on a
 * coarser level (fired up to that level's granularity after the expiry).
 * A KT_TIMER_LAZY timer pushed later keeps its bucket as well; its bound
 * is described at KT_TIMER_LAZY in <ktimer/timer.h>.
 *
 * Return: the lateness in milliseconds; UINT32_MAX if @base is NULL, or if
 * the delay ends past the clock's limit: such a timer would never fire, and
 * kt_timer_arm() refuses it (-ERANGE).
 */
uint32_t kt_base_max_lateness(const struct kt_base *base, kt_millis delay);

/**
 * kt_wheel_reach_ms() - the longest delay the wheel holds without re-queueing.
 * @resolution_ms: a valid resolution.
 *
 * Longer timers wait at the far end of the wheel and are re-queued until due.
 *
 * Return: the reach in milliseconds, or 0 for an invalid resolution.
 */
uint64_t kt_wheel_reach_ms(unsigned resolution_ms);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_BASE_H */
