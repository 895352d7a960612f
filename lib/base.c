// SPDX-License-Identifier: MIT
/*
 * lib/base.c - the base: one per worker thread. Its lifecycle, its cached
 * clocks, the turn, and the wait plan. It drives three leaves (see
 * lib/internal.h): the wheel (wheel.c, whose file opens with the design
 * essay and the granularity table), the precise timers (hrtimer.c) and the
 * cross-thread queue (remote.c).
 *
 * The turn
 * --------
 * kt_base_run() is one turn of the worker: read the clock once, gather
 * everything that is due - precise timers and every due wheel bucket - move
 * the wheel clock past now, and only then run callbacks. Whatever a callback
 * arms lands after now and fires on a later turn, so a self-re-arming
 * callback cannot spin, and nothing is placed against a stale wheel clock.
 * Operations other threads queued are applied between the gathering and the
 * callbacks; one for a time already due joins the batch (apply_remote()).
 *
 * Bounded runs
 * ------------
 * Batching is what makes the wheel cheap, and it also concentrates expiries:
 * a level-2 bucket at the 16 ms unit holds about a second of deadlines, and
 * they all come due in one turn. A server closing ten thousand idle
 * connections in one kt_base_run() stops serving the rest for that long.
 * kt_base_set_run_limit() caps a run by callbacks or by time (libevent's
 * max_dispatch_interval plays this part): the run stops between two
 * callbacks and leaves the rest in the batch, in order. The batch was
 * gathered before the wheel clock moved, so it stays due: the wait plan is
 * immediate, the loop polls its I/O, and the next run fires the left-overs
 * before anything it gathers itself. Left-overs stay real timers of the
 * batch meanwhile: I/O that deletes one removes it, a re-arm moves it (or
 * leaves it to be checked against the clock when taken), so nothing fires
 * that the turn's I/O cancelled and nothing fires early.
 *
 * Cached clocks
 * -------------
 * A server arms and pushes back deadlines thousands of times between two
 * wake-ups; reading the clock for each would cost more than the wheel
 * operation. So the monotonic clock is read once per turn, and relative
 * delays count from that instant rounded up to the millisecond (never early
 * in real time). The wall clock is re-read at most every 100 ms of monotonic
 * time and never goes backwards, for Date headers and log lines.
 *
 * The wait plan
 * -------------
 * The owner decides how to block under the same lock producers take to
 * queue work, so a producer either queued before the decision (the plan is
 * IMMEDIATE) or sees the owner marked waiting and wakes it. See
 * <ktimer/base.h> for the protocol and lib/remote.c for the queue.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ktimer/base.h"
#include "ktimer/remote.h"
#include "ktimer/timer.h"
#include "lib/internal.h"
#include "lib/probes.h"

KT__PROBE_DEFINE(run_begin);
KT__PROBE_DEFINE(run_end);
KT__PROBE_DEFINE(remote_batch);
KT__PROBE_DEFINE(wait_plan);

/* How often the cached wall clock is re-read, in monotonic milliseconds. */
#define SYSTEM_TIME_REFRESH_MS 100u

/*
 * The thread's base for <ktimer/linux.h> (jiffies reads it on every use),
 * in the TLS model of lib/internal.h (KT__TLS_MODEL).
 */
static KT__TLS_MODEL _Thread_local struct kt_base *kt__current;

/* ---- clocks ------------------------------------------------------------ */

static uint64_t read_clock_ns(clockid_t id)
{
	struct timespec ts;

	/* Cannot fail for these clock ids on Linux; 0 is a safe floor if it did. */
	if (clock_gettime(id, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t read_clock_ms(clockid_t id) { return read_clock_ns(id) / KT__NS_PER_MS; }

/* The two clock sources of a base (tests may install a third). */
static uint64_t read_monotonic(const struct kt_base *b)
{
	(void)b;
	return read_clock_ns(CLOCK_MONOTONIC);
}

static uint64_t read_manual(const struct kt_base *b) { return b->now_ns; }

static void store_now_ns(struct kt_base *b, uint64_t ns)
{
	b->now_ns = ns;
	b->now_ms = ns / KT__NS_PER_MS;
	b->now_ceil_ms = b->now_ms + (ns % KT__NS_PER_MS != 0);
}

/* Set the cached clock; it never goes backwards. */
static void set_now_ns(struct kt_base *b, uint64_t ns)
{
	if (ns > b->now_ns)
		store_now_ns(b, ns);
}

static uint64_t wall_source(const struct kt_base *b)
{
	if (b->clock == KT_CLOCK_MANUAL)
		return b->manual_wall0 + (b->now_ms - b->manual_start);
	return read_clock_ms(CLOCK_REALTIME);
}

/* Re-read the wall clock if it is stale; never let it go backwards. */
static void refresh_system_time(struct kt_base *b, bool force)
{
	uint64_t wall;

	if (!force && b->now_ms - b->sys_read_at < SYSTEM_TIME_REFRESH_MS)
		return;
	wall = wall_source(b);
	if (wall > b->sys_ms)
		b->sys_ms = wall;
	b->sys_read_at = b->now_ms;
}

/* ---- lifecycle --------------------------------------------------------- */

struct kt_base *kt_base_new(const struct kt_base_config *cfg)
{
	struct kt_base_config def = {KT_DEFAULT_RESOLUTION_MS, KT_CLOCK_MONOTONIC, 0};
	struct kt_base *b;
	unsigned res;

	if (!cfg)
		cfg = &def;
	res = cfg->resolution_ms ? cfg->resolution_ms : KT_DEFAULT_RESOLUTION_MS;
	if (res > 16 || (res & (res - 1)) != 0 ||
	    (cfg->clock != KT_CLOCK_MONOTONIC && cfg->clock != KT_CLOCK_MANUAL) ||
	    (cfg->clock == KT_CLOCK_MANUAL && cfg->start_ms > KT__TIME_LIMIT_MS)) {
		errno = EINVAL;
		return NULL;
	}
	/*
	 * Aligned for its list heads (see struct kt_base). Zeroed with memset,
	 * not calloc: the base is large (its lists and the batch, about 80 KB),
	 * and calloc may hand out fresh pages that are zeroed lazily, on first
	 * touch - the first arms and turns would take those page faults.
	 */
	b = aligned_alloc(_Alignof(struct kt_base), sizeof(*b));
	if (!b) {
		errno = ENOMEM;
		return NULL;
	}
	memset(b, 0, sizeof(*b));
	b->clock = cfg->clock;
	if (cfg->clock == KT_CLOCK_MANUAL) {
		b->read_ns = read_manual;
		store_now_ns(b, cfg->start_ms * KT__NS_PER_MS);
		b->manual_start = cfg->start_ms;
		b->manual_wall0 = read_clock_ms(CLOCK_REALTIME);
	} else {
		b->read_ns = read_monotonic;
		store_now_ns(b, read_monotonic(b));
	}
	if (kt__remote_init(b) != 0) {
		free(b);
		errno = ENOMEM;
		return NULL;
	}
	kt__wheel_init(b, res, b->now_ms);
	kt__wheel_claim(b);
	refresh_system_time(b, true);
	return b;
}

int kt_base_free(struct kt_base *b)
{
	if (!b)
		return 0;
	/*
	 * From a callback of this very base the turn that called it would go on
	 * with freed memory. Refuse: the caller frees it after kt_base_run().
	 */
	if (b->running)
		return -EBUSY;
	/* Not owner-checked: freeing a worker's base after joining it is fine. */
	kt__wheel_orphan_all(b);
	kt__hr_orphan_all(b);
	kt__calls_free(b); /* after the wheel let go of the pending call nodes */
	kt__remote_destroy(b);
	if (kt__current == b)
		kt__current = NULL;
	kt__wheel_release(b);
	free(b);
	return 0;
}


int kt_base_adopt(struct kt_base *b)
{
	if (!b)
		return -EINVAL;
#ifdef KT_DEBUG
	b->owner = pthread_self();
	b->owned = true;
#endif
	kt__wheel_claim(b);
	return 0;
}

/* ---- accessors --------------------------------------------------------- */

unsigned kt_base_resolution(const struct kt_base *b) { return b ? 1u << b->shift : 0; }

enum kt_clock_kind kt_base_clock(const struct kt_base *b) { return b ? b->clock : KT_CLOCK_MONOTONIC; }

uint64_t kt_base_now(const struct kt_base *b) { return b ? b->now_ms : 0; }

uint64_t kt_base_now_ns(const struct kt_base *b) { return b ? b->now_ns : 0; }

uint64_t kt_base_system_time(const struct kt_base *b) { return b ? b->sys_ms : 0; }

size_t kt_base_pending_count(const struct kt_base *b) { return b ? b->count + b->hr_count + b->hr_batched : 0; }

int kt_base_get_stats(struct kt_base *b, struct kt_base_stats *out)
{
	if (!b || !out)
		return -EINVAL;
	/* It writes the base (the fold below): the owner's call only. */
	KT__OWNER_CHECK(b);
	*out = b->stats;
	return 0;
}

size_t kt_base_run_done_calls(const struct kt_base *b) { return b ? b->run_done_calls : 0; }

int kt_base_set_op_counting(struct kt_base *b, int on)
{
	if (!b)
		return -EINVAL;
	KT__OWNER_CHECK(b);
	kt__wheel_count_ops(b, on != 0);
	return 0;
}

int kt_base_set_run_limit(struct kt_base *b, uint32_t max_callbacks, uint32_t max_us)
{
	if (!b)
		return -EINVAL;
	/* A run reads the limit when it starts; changing it halfway is refused. */
	if (b->running)
		return -EBUSY;
	KT__OWNER_CHECK(b);
	b->run_max_calls = max_callbacks;
	b->run_max_us = max_us;
	return 0;
}

struct kt_base *kt_base_current(void) { return kt__current; }

void kt_base_set_current(struct kt_base *b) { kt__current = b; }

/* ---- the turn ---------------------------------------------------------- */

/*
 * The clock's limit (KT__TIME_LIMIT_MS, 2^44 ms): a manual clock stops
 * there, a clock source's later readings are taken as it. At the limit the
 * clock never moves again, so the wheel's next tick never comes - yet a
 * timer armed there for a time already due goes on that tick, as anywhere.
 * So at the limit every turn fires the tick after it too (update(), and
 * once per kt_base_advance()): what is due by the limit fires. A callback
 * that re-arms for a time due lands there again and fires at the next
 * turn, which the wait plan puts a unit away, as the next tick would be:
 * no turn spins. Everything else is due past the limit and never fires:
 * the wait plan does not wait for it (wheel_next_due_ms(), hr_reachable()),
 * so an idle base at its limit sleeps until I/O or a waker.
 */
static bool at_limit(const struct kt_base *b) { return b->now_ms >= KT__TIME_LIMIT_MS; }

/*
 * Refresh the cached clocks and gather everything due - precise timers and
 * every due wheel bucket - into the batches, then move the wheel clock past
 * now. Nothing runs. Whatever is armed after this lands after now: on the
 * next tick, never in a batch already gathered.
 */
static void update(struct kt_base *b)
{
	if (b->clock == KT_CLOCK_MONOTONIC)
		set_now_ns(b, kt__clock_read_ns(b));
	refresh_system_time(b, false);
	kt__hr_collect(b);
	kt__wheel_gather(b, b->now_ms >> b->shift);
	if (kt__unlikely(at_limit(b)) && !b->clk_held)
		(void)kt__wheel_collect_limit(b); /* the tick after the limit: see at_limit() */
}

/*
 * Apply the taken batch of remote operations, in queue order. The cursor
 * lives in the base so that kt_remote_forget(), called from a done callback,
 * can drop the operations of this batch that are still ahead of it.
 */
static void apply_remote(struct kt_base *b, size_t n)
{
	uint32_t due_entry = UINT32_MAX; /* the batch entry of due ones (wheel.c) */

	b->batch_n = n;
	for (b->batch_pos = 0; b->batch_pos < b->batch_n;) {
		struct kt__remote_op op = b->batch[b->batch_pos++];
		int r;

		if (!op.timer)
			continue; /* forgotten after it was taken */
		/*
		 * An operation for a time already due - kt_remote_mod() to the
		 * past, kt_remote_arm() with no delay - fires in this turn, after
		 * what it gathered, not on the next tick: the producer's wake-up
		 * was for it. A delay of 0 counts from the turn's millisecond,
		 * not from the one after (kt_timer_arm()'s rounding up): the
		 * call was queued before the turn took it, and the clock was read
		 * after that, so firing now is not early.
		 */
		switch (op.kind) {
		case KT__OP_MOD:
			r = op.arg <= b->now_ms ? kt__wheel_mod_due(b, op.timer, op.arg, true, &due_entry)
						: kt_mod_timer(op.timer, op.arg);
			break;
		case KT__OP_ARM:
			r = op.arg ? kt_timer_arm(op.timer, (kt_millis){(uint32_t)op.arg})
				   : kt__wheel_mod_due(b, op.timer, b->now_ms, false, &due_entry);
			break;
		default:
			r = kt_timer_delete(op.timer);
			break;
		}
		if (op.done) {
			b->run_done_calls++;
			op.done(op.timer, r, op.done_arg);
		}
	}
	b->batch_n = b->batch_pos = 0;
}

int kt_base_update_time(struct kt_base *b)
{
	if (!b)
		return -EINVAL;
	/* A callback runs inside the turn: its clock is the turn's. */
	if (b->running)
		return -EBUSY;
	KT__OWNER_TURN(b);
	update(b);
	kt__wheel_claim(b);
	return 0;
}

size_t kt_base_run(struct kt_base *b)
{
	struct kt__budget bg = KT__BUDGET_UNLIMITED;
	size_t nops;
	uint32_t wheel_left;
	uint64_t probe_t0 = 0;

	if (!b || b->running)
		return 0;
	KT__OWNER_TURN(b);
	/* The run's own duration, on the monotonic clock, for a tracer only. */
	if (KT__PROBE_ON(run_end))
		probe_t0 = read_clock_ns(CLOCK_MONOTONIC);
	/* Take queued remote operations first: this also ends "waiting". */
	nops = kt__remote_take(b);
	if (nops && KT__PROBE_ON(remote_batch))
		KT__PROBE2(remote_batch, b, nops);
	b->run_done_calls = 0;
	b->running = true;
	b->turn_thread = pthread_self(); /* a fork() from another thread tears the turn (remote.c) */
	kt__wheel_fast_path(b, false);
	b->stats.runs++;
	/*
	 * What a run that stopped at its limit left was due before anything
	 * gathered since - by kt_base_update_time() or by this turn: it fires
	 * first, the precise and then the wheel left-overs, and only then the
	 * rest of both batches. (Counting what kt_base_update_time() gathered
	 * as left too let a precise timer due at every turn go before the
	 * wheel's left-overs at every turn: with a small limit they starved.)
	 */
	update(b);
	/* After update(): a gathering that found the batch full compacts it,
	 * and recounts the left-overs without the groups emptied since. */
	wheel_left = b->due_left;
	if (KT__PROBE_ON(run_begin))
		KT__PROBE4(run_begin, b, b->now_ns, kt_base_pending_count(b), 1u << b->shift);
	if (b->run_max_calls)
		bg.max = b->run_max_calls;
	if (b->run_max_us)
		bg.deadline_ns = b->now_ns + (uint64_t)b->run_max_us * 1000u;
	/*
	 * Remote operations apply after the wheel clock has moved, so a relative
	 * arm counts from now, and before anything fires, so a delete removes a
	 * timer from the batch: the delete wins over an expiry in the same turn.
	 */
	apply_remote(b, nops);
	if (b->hr_left)
		kt__hr_fire(b, true, &bg);
	kt__wheel_fire(b, wheel_left, &bg);
	if (b->hr_expiring)
		kt__hr_fire(b, false, &bg);
	kt__wheel_fire(b, UINT32_MAX, &bg);
	b->stats.limited_runs += bg.stopped;
	b->stats.fired += bg.ran;
	/* Whatever is still batched now was left by the limit. */
	b->hr_left = b->hr_batched;
	b->due_left = b->due_groups - b->due_first;
	kt__wheel_fast_path(b, true);
	kt__wheel_claim(b); /* this thread's base: kt_mod_timer()'s fast path */
	b->running = false;
	/* A tracer that attached during the run finds no start time: 0 ns. */
	if (KT__PROBE_ON(run_end))
		KT__PROBE4(run_end, b, bg.ran, probe_t0 ? read_clock_ns(CLOCK_MONOTONIC) - probe_t0 : 0,
			   (int)bg.stopped);
	return bg.ran;
}

/*
 * Move a manual clock to @target_ns, standing it on each due wheel bucket and
 * each precise deadline in turn, so a test sees every callback at its due
 * time and timers armed by callbacks (intervals, re-queued far timers, pacers)
 * fire within the same advance.
 */
static size_t advance_to_ns(struct kt_base *b, uint64_t target_ns)
{
	uint64_t unit_ns = (UINT64_C(1) << b->shift) * KT__NS_PER_MS;
	uint64_t last_hr = UINT64_MAX;
	/* The manual clock's driver is never limited: a test sees every fire. */
	struct kt__budget bg = KT__BUDGET_UNLIMITED;

	/* Gathered by kt_base_update_time() or left by a limited run: due now. */
	if (b->hr_expiring || b->due_n) {
		last_hr = b->now_ns;
		kt__hr_fire(b, false, &bg);
		kt__wheel_fire(b, UINT32_MAX, &bg);
	}
	for (;;) {
		uint64_t wdue = kt__wheel_next_due_unit(b, true);
		uint64_t wdue_ns = wdue == UINT64_MAX ? UINT64_MAX : (wdue << b->shift) * KT__NS_PER_MS;
		uint64_t hdue = kt__hr_earliest(b);
		uint64_t step;

		/*
		 * A precise timer re-armed by its callback for a time already due
		 * fires one wheel tick later, not at the same instant: a callback
		 * that keeps re-arming for "now" must not stop time.
		 */
		if (hdue != UINT64_MAX && last_hr != UINT64_MAX && hdue <= last_hr)
			hdue = kt__hr_next_after(b, last_hr, last_hr + unit_ns);
		step = wdue_ns < hdue ? wdue_ns : hdue;
		if (step > target_ns)
			break;
		set_now_ns(b, step);
		refresh_system_time(b, false);
		/*
		 * Every wheel bucket before this step has fired, so the wheel clock
		 * can stand at the tick after now even when only a precise timer
		 * is due: a wheel timer its callback arms is placed against the
		 * present, not against the last wheel step.
		 */
		if (wdue_ns <= step) {
			/* The earliest due unit: nothing else is due before it. The
			 * batch is empty here, and one unit always fits. */
			(void)kt__wheel_collect(b, wdue);
			kt__wheel_set_clk(b, wdue + 1);
			kt__wheel_fire(b, UINT32_MAX, &bg);
		} else if (b->clk < (b->now_ms >> b->shift) + 1) {
			kt__wheel_set_clk(b, (b->now_ms >> b->shift) + 1);
		}
		if (hdue <= step) {
			last_hr = b->now_ns;
			kt__hr_collect(b);
			kt__hr_fire(b, false, &bg);
		}
	}
	set_now_ns(b, target_ns);
	kt__wheel_gather(b, b->now_ms >> b->shift); /* nothing is due by now: only moves clk */
	if (at_limit(b)) {
		/* The tick after the limit, once per call (see at_limit()). */
		(void)kt__wheel_collect_limit(b);
		kt__wheel_fire(b, UINT32_MAX, &bg);
	}
	b->hr_left = b->due_left = 0; /* fired whole on the way */
	refresh_system_time(b, false);
	return bg.ran;
}

long kt__base_advance_to_ns(struct kt_base *b, uint64_t target_ns)
{
	size_t fired;

	if (!b || b->clock != KT_CLOCK_MANUAL || b->running)
		return -EINVAL;
	KT__OWNER_TURN(b);
	if (target_ns > KT__TIME_LIMIT_MS * KT__NS_PER_MS)
		target_ns = KT__TIME_LIMIT_MS * KT__NS_PER_MS;
	b->running = true;
	b->turn_thread = pthread_self();
	kt__wheel_fast_path(b, false);
	b->stats.runs++;
	fired = advance_to_ns(b, target_ns);
	b->stats.fired += fired;
	kt__wheel_fast_path(b, true);
	kt__wheel_claim(b); /* this thread's base: kt_mod_timer()'s fast path */
	b->running = false;
	return (long)fired;
}

long kt_base_advance(struct kt_base *b, kt_millis delta)
{
	if (!b)
		return -EINVAL;
	return kt__base_advance_to_ns(b, b->now_ns + (uint64_t)delta.ms * KT__NS_PER_MS);
}

/* ---- how long to sleep ------------------------------------------------- */

/*
 * The earliest non-deferrable wheel deadline in ms, UINT64_MAX if none. The
 * owner's wait plan clears stale occupancy bits on the way; the const
 * kt_base_next_timeout() only skips them.
 */
static uint64_t unit_to_ms(const struct kt_base *b, uint64_t due)
{
	return due == UINT64_MAX ? UINT64_MAX : due << b->shift;
}

/*
 * Only what the clock can reach (see at_limit()): before the limit, a bucket
 * due past it holds only timers due past it (one due by the limit is in a
 * bucket due by it: the limit is a multiple of every level's granularity);
 * at the limit, the tick after it if a timer due by the limit waits there.
 */
static uint64_t reachable(const struct kt_base *b, uint64_t due)
{
	return due != UINT64_MAX && due > KT__TIME_LIMIT_MS >> b->shift ? UINT64_MAX : due;
}

static uint64_t wheel_next_due_ms(struct kt_base *b)
{
	if (kt__unlikely(at_limit(b)) && !b->clk_held)
		return unit_to_ms(b, kt__wheel_limit_due_unit(b));
	return unit_to_ms(b, reachable(b, kt__wheel_next_due_unit(b, false)));
}

static uint64_t wheel_peek_due_ms(const struct kt_base *b)
{
	if (kt__unlikely(at_limit(b)) && !b->clk_held)
		return unit_to_ms(b, kt__wheel_limit_due_unit(b));
	return unit_to_ms(b, reachable(b, kt__wheel_peek_due_unit(b, false)));
}

/* The earliest precise deadline the clock can reach; UINT64_MAX if none. */
static uint64_t hr_reachable(const struct kt_base *b)
{
	uint64_t hr = kt__hr_earliest(b);

	return hr > KT__TIME_LIMIT_MS * KT__NS_PER_MS ? UINT64_MAX : hr;
}

/* Timers gathered by kt_base_update_time() and not yet fired are due now. */
static bool batch_waiting(const struct kt_base *b) { return b->due_n || b->hr_expiring; }

int64_t kt_base_next_timeout(const struct kt_base *b)
{
	uint64_t due_ms, hr;

	if (!b)
		return -EINVAL;
	/* It reads what the owner writes: the owner's call only. */
	KT__OWNER_CHECK((struct kt_base *)b);
	if (batch_waiting(b))
		return 0;
	due_ms = wheel_peek_due_ms(b);
	hr = hr_reachable(b);

	if (hr != UINT64_MAX) {
		/* A precise deadline, rounded up to the millisecond. */
		uint64_t hr_ms = hr / KT__NS_PER_MS + (hr % KT__NS_PER_MS != 0);

		if (hr_ms < due_ms)
			due_ms = hr_ms;
	}
	if (due_ms == UINT64_MAX)
		return -1;
	return due_ms > b->now_ms ? (int64_t)(due_ms - b->now_ms) : 0;
}

struct kt_wait_plan kt_base_prepare_wait(struct kt_base *b)
{
	struct kt_wait_plan plan = {KT_WAIT_INDEFINITE, 0, 0};
	uint64_t wheel_ms, hr, wheel_ns;

	if (!b)
		return (struct kt_wait_plan){KT_WAIT_IMMEDIATE, 0, 0};
	KT__OWNER_TURN(b);
	/*
	 * Gathered by kt_base_update_time(), or left by a run that stopped at
	 * its limit: due now. The owner polls and comes back without blocking,
	 * so it is not marked waiting either.
	 */
	if (batch_waiting(b))
		return (struct kt_wait_plan){KT_WAIT_IMMEDIATE, 0, 0};
	wheel_ms = wheel_next_due_ms(b);
	hr = hr_reachable(b);
	wheel_ns = wheel_ms == UINT64_MAX ? UINT64_MAX : wheel_ms * KT__NS_PER_MS;
	if (hr < wheel_ns) {
		plan.kind = KT_WAIT_UNTIL;
		plan.precise = 1;
		plan.deadline_ns = hr;
	} else if (wheel_ns != UINT64_MAX) {
		plan.kind = KT_WAIT_UNTIL;
		plan.deadline_ns = wheel_ns;
	}
	/* The race-free part: decided under the producers' lock. */
	if (kt__remote_prepare_wait(b)) {
		plan.kind = KT_WAIT_IMMEDIATE;
		plan.precise = 0;
		plan.deadline_ns = 0;
	}
	if (KT__PROBE_ON(wait_plan))
		KT__PROBE4(wait_plan, b, (int)plan.kind, plan.deadline_ns, (int)plan.precise);
	return plan;
}

int kt_wait_plan_timeout_ms(const struct kt_base *b, const struct kt_wait_plan *plan)
{
	uint64_t now, left, ms;

	if (!b || !plan)
		return -EINVAL;
	if (plan->kind == KT_WAIT_IMMEDIATE)
		return 0;
	if (plan->kind == KT_WAIT_INDEFINITE)
		return -1;
	now = kt__clock_read_ns(b);
	if (plan->deadline_ns <= now)
		return 0;
	left = plan->deadline_ns - now;
	/* Round up: epoll must not return before the deadline. */
	ms = left / KT__NS_PER_MS + (left % KT__NS_PER_MS != 0);
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* ---- invariants -------------------------------------------------------- */

int kt_base_check(const struct kt_base *b)
{
	int r;

	if (!b)
		return -EINVAL;
	/* At the tick after now, or held back by a full batch (kt__wheel_gather();
	 * what was due there may have been deleted or pushed back since). */
	if (!b->running && b->clk != (b->now_ms >> b->shift) + 1 &&
	    !(b->clk_held && b->clk <= (b->now_ms >> b->shift)))
		return KT_CHECK_WHEEL_CLOCK;
	/* A stopped run's left-overs are a prefix of the batches (between
	 * runs: a run recounts them at its end, a full gathering when it
	 * compacts the wheel's batch). */
	if (b->hr_left > b->hr_batched || (!b->running && b->due_left > b->due_groups - b->due_first))
		return KT_CHECK_BATCH;
	r = kt__wheel_check(b);
	if (r != KT_CHECK_OK)
		return r;
	return kt__hr_check(b);
}

const char *kt_base_check_str(int result)
{
	switch (result) {
	case KT_CHECK_OK:
		return "ok";
	case KT_CHECK_BATCH:
		return "the batch of due timers is inconsistent";
	case KT_CHECK_WHEEL_CLOCK:
		return "the wheel clock does not stand at the tick after now";
	case KT_CHECK_BITMAP:
		return "a level's bitmap disagrees with its buckets";
	case KT_CHECK_LINKS:
		return "a bucket list's links are broken";
	case KT_CHECK_NODE:
		return "a timer does not know its bucket or base";
	case KT_CHECK_WRONG_WHEEL:
		return "a timer is on the wrong wheel (deferrable or not)";
	case KT_CHECK_EARLY:
		return "a timer's bucket is due before the timer (it would fire early)";
	case KT_CHECK_ROUNDING:
		return "a timer is rounded up by more than its level's granularity";
	case KT_CHECK_COUNT:
		return "the pending count does not match the timers in the buckets";
	case KT_CHECK_HR_HEAP:
		return "the precise-timer heap is out of order";
	case KT_CHECK_FAST_PATH:
		return "what kt_mod_timer() caches of the base disagrees with it";
	default:
		return "unknown kt_base_check() result";
	}
}

/* ---- debugging --------------------------------------------------------- */

int kt_base_dump(const struct kt_base *b, FILE *f)
{
	size_t n;

	if (!b || !f)
		return -EINVAL;
	KT__OWNER_CHECK((struct kt_base *)b);
	fprintf(f,
		"ktimer base %p: resolution %u ms, clock %s, now %llu ms (%llu ns), wheel clock unit %llu, "
		"pending %zu (wheel %zu, precise %u)%s\n",
		(const void *)b, 1u << b->shift, b->clock == KT_CLOCK_MANUAL ? "manual" : "monotonic",
		(unsigned long long)b->now_ms, (unsigned long long)b->now_ns, (unsigned long long)b->clk,
		b->count + b->hr_count + b->hr_batched, b->count, b->hr_count + b->hr_batched,
		b->running ? ", inside a turn" : "");
	n = kt__wheel_dump(b, f, kt__call_user_fn);
	n += kt__hr_dump(b, f);
	return (int)n;
}
