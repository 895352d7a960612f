// SPDX-License-Identifier: MIT
/*
 * lib/wheel.c - the non-cascading hierarchical timer wheel.
 *
 * Why a wheel, and why this one
 * -----------------------------
 * A server keeps a deadline on nearly everything it waits for: a handshake, a
 * request header, a response write, an idle keep-alive connection. Almost none
 * of those deadlines expire. The client answers, the next request arrives, and
 * the deadline is pushed back or cancelled - thousands of times a second. A
 * binary heap (libuv, libevent) keeps its timers sorted, so every push-back
 * costs O(log n) comparisons and swaps, each a likely cache miss once a few
 * thousand connections are open. Sorting is wasted work for timers that will
 * be cancelled long before anybody needs to know which one is first.
 *
 * A timer wheel does not sort. It is an array of buckets, each holding the
 * timers that expire in one slice of time; arming is "compute a bucket index
 * and link the node", cancelling is "unlink the node". Both are O(1) and touch
 * only the node and the bucket head. To cover long delays with few buckets the
 * wheel has levels, each eight times coarser than the one below.
 *
 * A classic hierarchical wheel (Varghese & Lauck) cascades: when a coarse
 * bucket comes due its timers are re-sorted into finer levels so each fires
 * at its exact time. That work arrives in bursts and is mostly wasted, because
 * most cascaded timers are cancelled before they fire. In 2016 Linux (4.8)
 * replaced its cascading wheel with one that never moves a timer: a timer is
 * placed once, on the first level whose range holds its delay, with its
 * expiry rounded up to that level's granularity. The price is precision on
 * long timers, at most one granularity of their level: under 13% of the delay
 * for anything over a second. Nobody minds a 30 s keep-alive closing at 30.5 s;
 * everybody minds the CPU spent keeping it exact. ktimer implements that
 * design for userspace, one wheel per worker thread.
 *
 * The shape
 * ---------
 * 8 levels of 64 buckets. One unit is the base's resolution (16 ms by default,
 * any power of two from 1 to 16 ms). Level n has a granularity of 8^n units.
 * Let clk be the wheel clock in units: the first tick not yet processed. A
 * timer due at unit u (its expiry in ms, rounded up to a unit) with
 * delta = u - clk goes on the lowest level n with delta < 63 * 8^n, in the
 * bucket of the first multiple of 8^n at or after u. That bucket is at most
 * 63 buckets ahead of the level's current position, so a level's 64 buckets
 * never alias two different times.
 *
 * Granularity at the default 16 ms unit (every row scales with the unit; the
 * table for every resolution is in docs/DESIGN.md and checked by
 * tests/granularity_table_test.cc):
 *
 *	Level  Offset  Granularity            Range
 *	  0        0     16 ms                 0 ms -          1 s
 *	  1       64    128 ms             1.008 s -          8 s
 *	  2      128      1 s (1.024 s)     8.06 s -         64 s
 *	  3      192      8 s (8.192 s)     64.5 s -    8.6 min
 *	  4      256     65 s (65.536 s)   8.6 min -     69 min
 *	  5      320    8.7 min            69 min  -    9.2 h
 *	  6      384     70 min            9.2 h   -      3 d
 *	  7      448    9.3 h                3 d   -   24.5 d
 *
 * With a 1 ms unit level 0 is 1 ms wide and the whole wheel reaches 1.5 days.
 *
 * Guarantees, and where this differs from Linux and ntex
 * -------------------------------------------------------
 * - Never early. Expiry is rounded up, never down, and when a bucket fires
 *   each timer's requested expiry is compared with the clock once more.
 *   Linux and ntex clamp timers beyond the wheel's reach (about 24.5 days
 *   here) to its far end and fire them early; ktimer parks them at the far
 *   end and re-queues them when that bucket comes due, until they are due.
 * - Bounded lateness: at most one granularity of the level plus one unit,
 *   plus however late the worker runs the wheel.
 * - No drift from late wake-ups: buckets keep absolute due times; a worker
 *   that wakes late fires what is due and later timers keep their slots.
 * - No stale wheel clock. The wheel clock is moved to the cached now on every
 *   turn, after the due buckets fire, so a timer armed after a long idle
 *   period is placed relative to the present. (ntex's port kept the old clock
 *   and put short timers on coarse levels; Linux fixed the same bug in 2017
 *   by forwarding its base clock.)
 * - Next expiry without scanning: each level keeps a 64-bit bitmap of
 *   occupied buckets; rotating it to the level's position and counting
 *   trailing zeros gives the level's next due bucket. 16 words, no loops over
 *   empty buckets.
 *
 * Costs on the owner's hot path
 * -----------------------------
 * Arm: compute the index, link at the bucket head, set a bit. Cancel: unlink
 * through the node's pprev, clear the bit if the bucket emptied (the bucket
 * index is kept in the node, as in Linux, so delete needs no search). Re-arm:
 * if the new expiry maps to the bucket the timer is already in, only the
 * expiry is stored - a 30 s keep-alive pushed back by a few milliseconds
 * stays in its ~1 s bucket - which is the common case this library is for.
 * No allocation, lock or atomic anywhere in here; the base belongs to one
 * thread.
 *
 * Firing
 * ------
 * kt_base_run() moves every bucket that is due into one private list (in
 * due-time order) and only then runs callbacks, each with its timer already
 * detached. Timers in that list carry a sentinel bucket index, so a callback
 * that deletes another timer of the batch unlinks it and it does not run,
 * and a callback that re-arms a timer of the batch moves it out of the batch.
 * Because the wheel clock has already moved past now before any callback
 * runs, a timer armed by a callback for a time already due lands on the next
 * tick and fires on a later turn: a self-re-arming callback cannot spin.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ktimer/base.h"
#include "ktimer/idle.h"
#include "ktimer/timer.h"
#include "lib/base_internal.h"
#include "lib/testing/time_source.h"

#define LVL_CLK_SHIFT 3u                /* each level 8 times coarser */
#define LVL_SIZE KT__LVL_SIZE           /* 64 buckets per level */
#define LVL_MASK (LVL_SIZE - 1u)
#define LVL_DEPTH KT_WHEEL_LEVELS
#define WHEEL_SIZE KT__WHEEL_SIZE       /* 512 buckets per wheel */
#define LVL_SHIFT(n) ((n) * LVL_CLK_SHIFT)
#define LVL_GRAN(n) (UINT64_C(1) << LVL_SHIFT(n))
/*
 * The first delta (units after clk) that goes on level n: 63 * 8^(n-1). The
 * bucket of level n is rounded up by up to 8^n - 1 units, so holding deltas
 * below 63 * 8^n keeps every bucket within 64 of the level's position.
 */
#define LVL_START(n) ((n) == 0 ? UINT64_C(0) : ((uint64_t)(LVL_SIZE - 1) << LVL_SHIFT((n) - 1)))
/* Largest delta the wheel holds; farther timers are parked at this distance. */
#define WHEEL_MAX_DELTA (LVL_START(LVL_DEPTH) - 1)

/*
 * Two wheels: [0, WHEEL_SIZE) for ordinary timers, [WHEEL_SIZE, 2*WHEEL_SIZE)
 * for deferrable ones, so the wake-up computation can ignore the latter by
 * looking at the first eight bitmaps only. Bucket index >> 6 is the bitmap.
 */
#define NR_BUCKETS KT__NR_BUCKETS
#define NR_MAPS KT__NR_MAPS
#define IDX_EXPIRING UINT32_MAX /* in the batch being fired */

/* Private flag bits beside the public KT_TIMER_* ones. */
#define KT__F_PUBLIC KT_TIMER_DEFERRABLE
/* Set by a successful setup, cleared by shutdown: one test on the arm path
 * refuses zero-filled, badly set up and shut-down timers alike. */
#define KT__F_ARMABLE 0x100u
#define KT__F_SHUTDOWN 0x200u

/*
 * A manual clock stays below 2^44 ms (557 years) so its reading in ns fits in
 * 64 bits and unit arithmetic (now + delay, due + 1) can never wrap.
 */
#define KT__TIME_LIMIT_MS (UINT64_C(1) << 44)

/* How often the cached wall clock is re-read, in monotonic milliseconds. */
#define SYSTEM_TIME_REFRESH_MS 100u

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)


static _Thread_local struct kt_base *kt__current;

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

/* A fresh reading of the base's monotonic clock (the cached one for manual). */
uint64_t kt__read_mono_ns(const struct kt_base *b)
{
	if (b->clock == KT_CLOCK_MANUAL)
		return b->now_ns;
	if (b->source)
		return b->source(b->source_arg) * KT__NS_PER_MS;
	return read_clock_ns(CLOCK_MONOTONIC);
}

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

/* ---- index arithmetic -------------------------------------------------- */

static inline uint64_t ms_to_units_up(const struct kt_base *b, uint64_t ms)
{
	/*
	 * Round up. Expiries beyond 2^63 ms are all "never" in practice; capping
	 * them keeps the addition from wrapping (they still never fire early:
	 * they park at the wheel's far end and are re-queued).
	 */
	if (unlikely(ms > (UINT64_C(1) << 63)))
		ms = UINT64_C(1) << 63;
	return (ms + b->unit_mask) >> b->shift;
}

/* Level 0 is handled by the caller; this is the rest of the kernel's chain. */
static inline unsigned delta_level(uint64_t delta)
{
	if (delta < LVL_START(2))
		return 1;
	if (delta < LVL_START(3))
		return 2;
	if (delta < LVL_START(4))
		return 3;
	if (delta < LVL_START(5))
		return 4;
	if (delta < LVL_START(6))
		return 5;
	if (delta < LVL_START(7))
		return 6;
	return 7;
}

/*
 * The bucket for a timer due at @expires ms. Past expiries go to the next
 * tick (clk); expiries beyond the wheel's reach are parked at its far end and
 * re-queued by the firing code until they are due.
 */
static inline uint32_t calc_index(const struct kt_base *b, uint64_t expires, unsigned flags)
{
	uint64_t u = ms_to_units_up(b, expires);
	uint64_t clk = b->clk;
	/* Deferrable timers use the second wheel: bit 0 of the flags -> +512. */
	uint32_t wheel = (flags & KT_TIMER_DEFERRABLE) * WHEEL_SIZE;
	uint64_t delta, slot;
	unsigned lvl;

	if (unlikely(u < clk))
		u = clk; /* already due: the next tick */
	delta = u - clk;
	if (delta < LVL_START(1))
		return wheel + (uint32_t)(u & LVL_MASK); /* level 0: no rounding */
	if (unlikely(delta > WHEEL_MAX_DELTA)) {
		u = clk + WHEEL_MAX_DELTA;
		delta = WHEEL_MAX_DELTA;
	}
	lvl = delta_level(delta);
	slot = (u + LVL_GRAN(lvl) - 1) >> LVL_SHIFT(lvl);
	return wheel + lvl * LVL_SIZE + (uint32_t)(slot & LVL_MASK);
}

/* ---- bucket lists ------------------------------------------------------ */

static inline void enqueue(struct kt_base *b, struct kt_timer *t, uint32_t idx)
{
	struct kt_timer **head = &b->vectors[idx];
	struct kt_timer *first = *head;

	t->kt__next = first;
	if (first)
		first->kt__pprev = &t->kt__next;
	*head = t;
	t->kt__pprev = head;
	t->kt__idx = idx;
	b->map[idx / LVL_SIZE] |= UINT64_C(1) << (idx % LVL_SIZE);
	b->stats.enqueued++;
}

static inline void detach(struct kt_base *b, struct kt_timer *t)
{
	struct kt_timer *next = t->kt__next;
	struct kt_timer **pprev = t->kt__pprev;
	uint32_t idx = t->kt__idx;

	*pprev = next;
	if (next)
		next->kt__pprev = pprev;
	t->kt__pprev = NULL;
	t->kt__next = NULL;
	b->stats.removed++;
	/*
	 * The bucket emptied iff this was its only node: first (pprev points at
	 * the head) and last. An address compare, not a load of the head. A
	 * timer of the batch being fired (IDX_EXPIRING) has no bucket.
	 */
	if (!next && idx != IDX_EXPIRING && pprev == &b->vectors[idx])
		b->map[idx / LVL_SIZE] &= ~(UINT64_C(1) << (idx % LVL_SIZE));
}

/*
 * The due time (units) of the earliest occupied bucket at or after clk, over
 * the first @nmaps bitmaps (8: ordinary timers only, 16: both wheels).
 * UINT64_MAX if none.
 */
static uint64_t next_due_unit(const struct kt_base *b, unsigned nmaps)
{
	uint64_t best = UINT64_MAX;

	for (unsigned lvl = 0; lvl < LVL_DEPTH; lvl++) {
		uint64_t map = b->map[lvl];
		uint64_t s0, due;
		unsigned pos, sh = LVL_SHIFT(lvl);

		if (nmaps > LVL_DEPTH)
			map |= b->map[LVL_DEPTH + lvl];
		if (!map)
			continue;
		/* The level's position: its first bucket not yet processed. */
		s0 = (b->clk + LVL_GRAN(lvl) - 1) >> sh;
		pos = (unsigned)(s0 & LVL_MASK);
		map = pos ? (map >> pos) | (map << (LVL_SIZE - pos)) : map;
		due = (s0 + (uint64_t)__builtin_ctzll(map)) << sh;
		if (due < best)
			best = due;
	}
	return best;
}

/* Move the buckets due at unit @when (all levels, both wheels) to the batch. */
static void collect(struct kt_base *b, uint64_t when)
{
	for (unsigned lvl = 0; lvl < LVL_DEPTH; lvl++) {
		uint32_t off;

		/* Level n's buckets fall on multiples of 8^n only. */
		if (when & (LVL_GRAN(lvl) - 1))
			break;
		off = lvl * LVL_SIZE + (uint32_t)((when >> LVL_SHIFT(lvl)) & LVL_MASK);
		for (uint32_t w = 0; w < NR_BUCKETS; w += WHEEL_SIZE) {
			uint32_t idx = w + off;
			struct kt_timer *t = b->vectors[idx];

			if (!t)
				continue;
			b->vectors[idx] = NULL;
			b->map[idx / LVL_SIZE] &= ~(UINT64_C(1) << (idx % LVL_SIZE));
			*b->expiring_tail = t;
			t->kt__pprev = b->expiring_tail;
			for (;;) {
				t->kt__idx = IDX_EXPIRING;
				if (!t->kt__next)
					break;
				t = t->kt__next;
			}
			b->expiring_tail = &t->kt__next;
		}
	}
}

/* Run the batch. Returns the number of callbacks run. */
static size_t fire_batch(struct kt_base *b)
{
	struct kt_timer *t;
	size_t fired = 0;

	while ((t = b->expiring) != NULL) {
		b->expiring = t->kt__next;
		if (t->kt__next)
			t->kt__next->kt__pprev = &b->expiring;
		t->kt__next = NULL;
		t->kt__pprev = NULL;
		b->count--;
		if (unlikely(t->kt__expires > b->now_ms)) {
			/* Parked beyond the wheel's reach: not due yet. */
			enqueue(b, t, calc_index(b, t->kt__expires, t->kt__flags));
			b->count++;
			continue;
		}
		fired++;
		t->kt__fn(t);
	}
	b->expiring_tail = &b->expiring;
	return fired;
}

/* ---- base -------------------------------------------------------------- */

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
	b = calloc(1, sizeof(*b));
	if (!b) {
		errno = ENOMEM;
		return NULL;
	}
	b->shift = (unsigned)__builtin_ctz(res);
	b->unit_mask = res - 1;
	b->clock = cfg->clock;
	b->expiring_tail = &b->expiring;
	if (cfg->clock == KT_CLOCK_MANUAL) {
		store_now_ns(b, cfg->start_ms * KT__NS_PER_MS);
		b->manual_start = cfg->start_ms;
		b->manual_wall0 = read_clock_ms(CLOCK_REALTIME);
	} else {
		store_now_ns(b, read_clock_ns(CLOCK_MONOTONIC));
	}
	b->clk = (b->now_ms >> b->shift) + 1;
	refresh_system_time(b, true);
	kt__remote_init(b);
	return b;
}

void kt_base_free(struct kt_base *b)
{
	if (!b)
		return;
	/*
	 * Detach, don't fire: the timers' memory belongs to their owners. They
	 * also stop being armable (-EINVAL until set up again), so a late
	 * kt_mod_timer() on one of them cannot write into the freed base.
	 */
	for (unsigned i = 0; i < NR_BUCKETS; i++) {
		struct kt_timer *t = b->vectors[i];

		while (t) {
			struct kt_timer *next = t->kt__next;

			t->kt__next = NULL;
			t->kt__pprev = NULL;
			t->kt__flags &= ~KT__F_ARMABLE;
			t = next;
		}
	}
	for (struct kt_timer *t = b->expiring, *next; t; t = next) {
		next = t->kt__next;
		t->kt__next = NULL;
		t->kt__pprev = NULL;
		t->kt__flags &= ~KT__F_ARMABLE;
	}
	kt__hr_destroy(b);
	kt__remote_destroy(b);
	if (kt__current == b)
		kt__current = NULL;
	free(b);
}

void kt__base_set_time_source(struct kt_base *b, uint64_t (*source)(void *), void *arg)
{
	b->source = source;
	b->source_arg = arg;
	/* Adopt the new clock at once (even if earlier); only on an empty base. */
	store_now_ns(b, source ? source(arg) * KT__NS_PER_MS : read_clock_ns(CLOCK_MONOTONIC));
	b->clk = (b->now_ms >> b->shift) + 1;
	b->sys_read_at = b->now_ms;
}

unsigned kt_base_resolution(const struct kt_base *b) { return 1u << b->shift; }

uint64_t kt_base_now(const struct kt_base *b) { return b->now_ms; }

uint64_t kt_base_now_ns(const struct kt_base *b) { return b->now_ns; }

const uint64_t *kt__base_now_ptr(const struct kt_base *b) { return &b->now_ceil_ms; }

uint64_t kt_base_system_time(const struct kt_base *b) { return b->sys_ms; }

size_t kt_base_pending_count(const struct kt_base *b) { return b->count + b->hr_count; }

void kt_base_get_stats(const struct kt_base *b, struct kt_base_stats *out) { *out = b->stats; }

struct kt_base *kt_base_current(void) { return kt__current; }

void kt_base_set_current(struct kt_base *b) { kt__current = b; }

size_t kt_base_run(struct kt_base *b)
{
	uint64_t now_u, due;
	size_t fired, nops;

	if (b->running)
		return 0;
	/* Take queued remote operations first: this also ends "waiting". */
	nops = kt__remote_take(b);
	b->running = true;
	b->stats.runs++;
	if (b->clock == KT_CLOCK_MONOTONIC)
		set_now_ns(b, kt__read_mono_ns(b));
	refresh_system_time(b, false);
	/* Remote operations apply after the clock, before anything fires. */
	kt__remote_apply(b, nops);
	now_u = b->now_ms >> b->shift;
	/*
	 * Gather everything due first - precise timers and every due bucket -
	 * then move the wheel clock past now, then run callbacks: whatever any
	 * callback arms lands after now and fires on a later turn.
	 */
	kt__hr_collect(b);
	while ((due = next_due_unit(b, NR_MAPS)) <= now_u) {
		collect(b, due);
		b->clk = due + 1;
	}
	b->clk = now_u + 1;
	fired = kt__hr_fire(b);
	fired += fire_batch(b);
	b->stats.fired += fired;
	b->running = false;
	return fired;
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
	size_t fired = 0;

	for (;;) {
		uint64_t wdue = next_due_unit(b, NR_MAPS);
		uint64_t wdue_ns = wdue == UINT64_MAX ? UINT64_MAX : (wdue << b->shift) * KT__NS_PER_MS;
		uint64_t hdue = kt__hr_earliest(b);
		uint64_t step;

		/*
		 * A precise timer re-armed by its callback for a time already due
		 * fires one wheel tick later, not at the same instant: a callback
		 * that keeps re-arming for "now" must not stop time.
		 */
		if (hdue != UINT64_MAX && last_hr != UINT64_MAX && hdue <= last_hr)
			hdue = last_hr + unit_ns;
		step = wdue_ns < hdue ? wdue_ns : hdue;
		if (step > target_ns)
			break;
		set_now_ns(b, step);
		refresh_system_time(b, false);
		if (wdue_ns <= step) {
			collect(b, wdue);
			b->clk = wdue + 1;
			fired += fire_batch(b);
		}
		if (hdue <= step) {
			last_hr = b->now_ns;
			fired += kt__hr_expire(b);
		}
	}
	set_now_ns(b, target_ns);
	if (b->clk < (b->now_ms >> b->shift) + 1)
		b->clk = (b->now_ms >> b->shift) + 1;
	refresh_system_time(b, false);
	return fired;
}

long kt__base_advance_to_ns(struct kt_base *b, uint64_t target_ns)
{
	size_t fired;

	if (b->clock != KT_CLOCK_MANUAL || b->running)
		return -EINVAL;
	if (target_ns > KT__TIME_LIMIT_MS * KT__NS_PER_MS)
		target_ns = KT__TIME_LIMIT_MS * KT__NS_PER_MS;
	b->running = true;
	b->stats.runs++;
	fired = advance_to_ns(b, target_ns);
	b->stats.fired += fired;
	b->running = false;
	return (long)fired;
}

long kt_base_advance(struct kt_base *b, kt_millis delta)
{
	return kt__base_advance_to_ns(b, b->now_ns + (uint64_t)delta.ms * KT__NS_PER_MS);
}

uint64_t kt__wheel_next_due_ms(const struct kt_base *b)
{
	uint64_t due = next_due_unit(b, LVL_DEPTH);

	return due == UINT64_MAX ? UINT64_MAX : due << b->shift;
}

int64_t kt_base_next_timeout(const struct kt_base *b)
{
	uint64_t due_ms = kt__wheel_next_due_ms(b);
	uint64_t hr = kt__hr_earliest(b);

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

/* ---- timers ------------------------------------------------------------ */

int kt_timer_setup(struct kt_timer *t, struct kt_base *b, kt_timer_fn fn, unsigned flags)
{
	if (!t)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->kt__base = b;
	t->kt__fn = fn;
	if (!b || !fn || (flags & ~KT__F_PUBLIC))
		return -EINVAL; /* flags 0: not armable */
	t->kt__flags = flags | KT__F_ARMABLE;
	return 0;
}

static int arm_error(const struct kt_timer *t)
{
	return (t->kt__flags & KT__F_SHUTDOWN) ? -ESHUTDOWN : -EINVAL;
}

static inline int arm_check(const struct kt_timer *t)
{
	if (likely(t->kt__flags & KT__F_ARMABLE))
		return 0;
	return arm_error(t);
}

int kt_mod_timer(struct kt_timer *t, uint64_t expires)
{
	struct kt_base *b = t->kt__base;
	uint32_t idx;

	if (unlikely(!(t->kt__flags & KT__F_ARMABLE)))
		return arm_error(t);
	if (t->kt__pprev) {
		if (t->kt__expires == expires)
			return 1;
		idx = calc_index(b, expires, t->kt__flags);
		/* The kernel's fast path: same bucket, only the expiry changes. */
		if (idx == t->kt__idx) {
			t->kt__expires = expires;
			b->stats.same_bucket++;
			return 1;
		}
		t->kt__expires = expires;
		detach(b, t);
		enqueue(b, t, idx);
		return 1;
	}
	idx = calc_index(b, expires, t->kt__flags);
	t->kt__expires = expires;
	enqueue(b, t, idx);
	b->count++;
	return 0;
}

int kt_add_timer(struct kt_timer *t, uint64_t expires)
{
	int err = arm_check(t);

	if (err)
		return err;
	if (t->kt__pprev)
		return -EBUSY;
	return kt_mod_timer(t, expires);
}

int kt_mod_timer_pending(struct kt_timer *t, uint64_t expires)
{
	int err = arm_check(t);

	if (err)
		return err;
	if (!t->kt__pprev)
		return 0;
	return kt_mod_timer(t, expires);
}

int kt_timer_reduce(struct kt_timer *t, uint64_t expires)
{
	int err = arm_check(t);

	if (err)
		return err;
	if (t->kt__pprev && expires >= t->kt__expires)
		return 1;
	return kt_mod_timer(t, expires);
}

int kt_timer_arm(struct kt_timer *t, kt_millis delay)
{
	int err = arm_check(t);

	if (unlikely(err))
		return err;
	/* From the turn's instant rounded up: never early in real time. */
	return kt_mod_timer(t, t->kt__base->now_ceil_ms + delay.ms);
}

int kt_timer_delete(struct kt_timer *t)
{
	if (!t->kt__pprev)
		return 0;
	detach(t->kt__base, t);
	t->kt__base->count--;
	return 1;
}

int kt_timer_shutdown(struct kt_timer *t)
{
	int ret = kt_timer_delete(t);

	t->kt__flags = (t->kt__flags & ~KT__F_ARMABLE) | KT__F_SHUTDOWN;
	return ret;
}

int kt_timer_pending(const struct kt_timer *t) { return t->kt__pprev != NULL; }

uint64_t kt_timer_expires(const struct kt_timer *t) { return t->kt__expires; }

/* ---- tables and invariants -------------------------------------------- */

int kt_wheel_level_info(unsigned res, unsigned level, struct kt_level_info *out)
{
	if (!res || res > 16 || (res & (res - 1)) || level >= LVL_DEPTH || !out)
		return -EINVAL;
	out->granularity_ms = LVL_GRAN(level) * res;
	out->min_delay_ms = LVL_START(level) * res;
	out->max_delay_ms = (level + 1 < LVL_DEPTH ? LVL_START(level + 1) : WHEEL_MAX_DELTA + 1) * res - 1;
	return 0;
}

uint64_t kt_wheel_reach_ms(unsigned res)
{
	if (!res || res > 16 || (res & (res - 1)))
		return 0;
	return (WHEEL_MAX_DELTA + 1) * res;
}

/*
 * The due unit of the bucket @idx holds, given the wheel clock: the unique
 * multiple of the level's granularity at or after clk with that index.
 */
static uint64_t bucket_due_unit(const struct kt_base *b, uint32_t idx)
{
	unsigned lvl = (idx % WHEEL_SIZE) / LVL_SIZE;
	unsigned sh = LVL_SHIFT(lvl);
	uint64_t s0 = (b->clk + LVL_GRAN(lvl) - 1) >> sh;
	uint64_t slot = s0 + (((idx % LVL_SIZE) - (s0 & LVL_MASK)) & LVL_MASK);

	return slot << sh;
}

int kt_base_check(const struct kt_base *b)
{
	size_t seen = 0;

	if (b->expiring || b->expiring_tail != &b->expiring)
		return -1; /* a batch left behind outside a run */
	if (!b->running && b->clk != (b->now_ms >> b->shift) + 1)
		return -2; /* the wheel clock must stand at the next tick */
	for (uint32_t idx = 0; idx < NR_BUCKETS; idx++) {
		const struct kt_timer *t = b->vectors[idx];
		struct kt_timer *const *pprev = &b->vectors[idx];
		bool bit = (b->map[idx / LVL_SIZE] >> (idx % LVL_SIZE)) & 1u;
		uint64_t due = bucket_due_unit(b, idx);

		if (bit != (t != NULL))
			return -3; /* bitmap disagrees with the bucket */
		for (; t; pprev = &t->kt__next, t = t->kt__next) {
			uint64_t u = ms_to_units_up(b, t->kt__expires);
			unsigned lvl = (idx % WHEEL_SIZE) / LVL_SIZE;

			if (t->kt__pprev != pprev)
				return -4; /* broken links */
			if (t->kt__idx != idx || t->kt__base != b)
				return -5; /* node does not know its bucket or base */
			if (((t->kt__flags & KT_TIMER_DEFERRABLE) != 0) != (idx >= WHEEL_SIZE))
				return -6; /* on the wrong wheel */
			if (due < u && lvl != LVL_DEPTH - 1)
				return -7; /* would fire early (only parked timers may) */
			if (due >= u && due - u >= LVL_GRAN(lvl) && u >= b->clk)
				return -8; /* rounded up by more than the level's granularity */
			if (++seen > b->count)
				return -9;
		}
	}
	if (seen != b->count)
		return -9; /* pending count is wrong */
	if (kt__hr_check(b) != 0)
		return -10; /* precise-timer heap out of order */
	return 0;
}
