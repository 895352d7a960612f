/* SPDX-License-Identifier: MIT */
/*
 * lib/internal.h - what the modules of lib/ share and users do not see: the
 * base's layout, the timer's private flag bits, and the calls base.c makes
 * into its leaf modules. Not installed. (libuv's uv-common.h plays this part.)
 *
 * Who calls whom. base.c owns the base: its lifecycle, its clocks, the turn
 * (run, advance, update) and the wait plan. It calls three leaves that never
 * call it back or each other:
 *
 *	base.c ─┬─> wheel.c    the non-cascading wheel and the kt_timer API
 *	        ├─> hrtimer.c  precise timers (a heap)
 *	        └─> remote.c   the cross-thread queue (producers' side and take)
 *
 * The helpers built on the public API (idle.c, interval.c, deadline.c,
 * epoll.c, call.c) call the public functions; the private things they touch
 * are a timer's base (kt__timer_base()) and, for call.c, its node pool in the
 * base, which base.c has it free in kt_base_free().
 */
#ifndef KTIMER_LIB_INTERNAL_H
#define KTIMER_LIB_INTERNAL_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ktimer/base.h"
#include "ktimer/hrtimer.h"
#include "ktimer/remote.h"
#include "ktimer/timer.h"

/*
 * The TLS model of the library's thread-locals (the thread's base in base.c,
 * the re-arm's hot base and the operation counts in wheel.c), as an
 * attribute for their declarations:
 *  - built for an executable only (-fPIE, or no PIC): local-exec, the
 *    offset is a constant;
 *  - position-independent (a static library's objects, Bazel's): initial-
 *    exec, one load of the offset per access instead of the general model's
 *    call;
 *  - KT__TLS_DYNAMIC (the build defines it for the shared library's
 *    objects): the compiler's own choice for PIC, the dynamic model (TLS
 *    descriptors with -mtls-dialect=gnu2). An initial-exec shared library is
 *    marked STATIC_TLS: musl refuses to dlopen() it, glibc takes it only
 *    while its small static TLS surplus lasts, so a plugin (a server's
 *    dynamic module, a Python or Lua extension) could not use the library.
 */
#if defined(KT__TLS_DYNAMIC)
#define KT__TLS_MODEL
#elif defined(__PIC__) && !defined(__PIE__)
#define KT__TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define KT__TLS_MODEL __attribute__((tls_model("local-exec")))
#endif

#define KT__LVL_SIZE 64u
#define KT__WHEEL_SIZE (KT__LVL_SIZE * KT_WHEEL_LEVELS) /* 512 buckets */
/* Two wheels: ordinary timers, then deferrable ones. */
#define KT__NR_BUCKETS (2u * KT__WHEEL_SIZE)
/* Lists per bucket, walked round-robin when the bucket fires (wheel.c). */
#define KT__SUB_SHIFT 2u
#define KT__SUBS (1u << KT__SUB_SHIFT)
#define KT__NR_LISTS (KT__NR_BUCKETS * KT__SUBS)
/* One occupancy word (a bit per bucket) per wheel level. */
#define KT__NR_MAPS (KT__NR_BUCKETS / KT__LVL_SIZE)
#define KT__NO_BUCKET UINT32_MAX /* base.next_bucket: none pending */
/* A list index >> KT__LEVEL_ID_SHIFT is its (wheel, level): wheel << 3 | level. */
#define KT__LEVEL_ID_SHIFT (KT__SUB_SHIFT + 6u)

#define KT__NS_PER_MS UINT64_C(1000000)

/*
 * A manual clock stays below 2^44 ms (557 years) so its reading in ns fits in
 * 64 bits and unit arithmetic (now + delay, due + 1) can never wrap.
 * kt_base_new() refuses a later start with EINVAL; kt_base_advance() stops
 * the clock there, and a clock source's reading past it is taken as it.
 * A base whose clock stands at the limit fires what is due by then - also
 * the tick after it, at every turn (base.c, update()) - and waits for
 * nothing due later (the wait plan); kt_timer_arm() refuses a delay that
 * ends past it (-ERANGE).
 */
#define KT__TIME_LIMIT_MS (UINT64_C(1) << 44)

/*
 * A wheel timer's word (kt_timer.kt__word): its list and its state, which
 * the owner alone reads and writes (other threads' kt_remote_*() never
 * touch it). kt_mod_timer()'s fast path asks it one question - an XOR with
 * the word the base expects of a pending timer on the cached level - and
 * the answer covers the base, the level, the wheel, pending, armable, lazy,
 * and whether a batch is gathered (the base's expected word then carries
 * POISON, which no node has). Bits:
 *
 *	 0-1   the list within the bucket (SUBS lists per bucket)
 *	 2-7   the slot within the level
 *	 8-10  the level
 *	11     the deferrable wheel
 *	12     PENDING: linked in a bucket or in the batch (pprev is not NULL)
 *	13     ARMABLE: set up on a live base, not shut down
 *	14     LAZY, 15 DEFERRABLE: the KT_TIMER_* flags it was set up with
 *	16     SHUTDOWN, 17 ORPHANED (below)
 *	18     POISON, in the base's expected word only
 *	24-63  the tag of the base it was set up on (KT__W_TAG_SHIFT): a
 *	       number each base of the process gets at creation, so that the
 *	       question needs not read the node's base pointer
 *
 * Bits 0-11 are the list index, bucket << 2 | sub, as vectors[] is laid
 * out; the bucket is wheel << 9 | level << 6 | slot. ARMABLE is set by a
 * successful setup and cleared by shutdown and by kt_base_free(): one test
 * refuses zero-filled, badly set up, shut-down and orphaned timers alike.
 * ORPHANED: set by kt_base_free() on every timer it detaches, cleared by
 * the next setup: an orphan has no base and is not armable, and with a
 * word of 0 it would look exactly like a DEFINE_TIMER() never bound, which
 * <ktimer/linux.h> binds to the current base on first use.
 */
#define KT__W_SUB_MASK UINT64_C(0x3)
#define KT__W_SLOT_SHIFT 2u
#define KT__W_LEVEL_SHIFT 8u
#define KT__W_WHEEL (UINT64_C(1) << 11)
#define KT__W_LIST_MASK UINT64_C(0xfff)
#define KT__W_PENDING (UINT64_C(1) << 12)
#define KT__W_ARMABLE (UINT64_C(1) << 13)
#define KT__W_LAZY (UINT64_C(1) << 14)
#define KT__W_DEFERRABLE (UINT64_C(1) << 15)
#define KT__W_SHUTDOWN (UINT64_C(1) << 16)
#define KT__W_ORPHANED (UINT64_C(1) << 17)
/* Only in the base's expected word: a batch is gathered (see above). */
#define KT__W_POISON (UINT64_C(1) << 18)
#define KT__W_TAG_SHIFT 24u
#define KT__W_TAG_MASK (~UINT64_C(0) << KT__W_TAG_SHIFT)
/* The list index of a word. */
#define KT__W_LIST(w) ((uint32_t)((w) & KT__W_LIST_MASK))

#define kt__likely(x) __builtin_expect(!!(x), 1)
#define kt__unlikely(x) __builtin_expect(!!(x), 0)

/* One queued cross-thread operation. */
struct kt__remote_op {
	struct kt_timer *timer;
	uint64_t arg; /* expires (MOD) or delay (ARM) in ms */
	kt_remote_done_fn done;
	void *done_arg;
	int kind; /* KT__OP_* */
};

enum { KT__OP_MOD, KT__OP_ARM, KT__OP_DELETE };

/*
 * A level kt_mod_timer()'s fast path caches, its whole question in one
 * cache line (wheel.c): an expiry in [lo, lo + len) is held by @level, in
 * slot ceil(ms / granularity) mod 64 of @vec; a pending node on that level
 * has @word's bits above the slot. @len 0: the fast path is off. Kept
 * current by wheel.c's fast_load() and the clock and batch changes it
 * names.
 */
struct kt__fast {
	_Alignas(64) uint64_t lo;
	uint64_t len;
	uint64_t word;
	uint64_t round;         /* the level's granularity in ms - 1 */
	struct kt_timer **vec;  /* the level's first list head */
	uint64_t *map;          /* the level's occupancy word */
	uint32_t shift;         /* log2(the level's granularity in ms) */
	uint32_t level;         /* the cached level, 0..6 */
	uint64_t pos;           /* (first_ms + round) >> shift: where the level's order starts */
};

/*
 * The base. One struct so one pointer reaches everything, grouped by the
 * module that owns each part; only the owner module writes its fields.
 */
struct kt_base {
	/*
	 * ---- wheel.c: kt_mod_timer()'s fast path, the base's first two cache
	 * lines: two levels, so that timers of two lengths taking turns (a
	 * server's header and keep-alive timeouts) need no switch ----
	 */
	struct kt__fast fast[2];
	bool fast_on;   /* off while callbacks run (kt__wheel_fast_path()) */
	bool count_ops; /* kt_base_set_op_counting(): the slow paths count */

	/* ---- the rest of the hot part: arm, re-arm, delete ---- */
	uint64_t span[KT_WHEEL_LEVELS]; /* ms past first_ms each level holds (fixed) */
	uint64_t first_ms;    /* the first millisecond of the unit clk */
	uint64_t now_ceil_ms; /* base.c: the turn's instant rounded up (relative arms) */
	uint64_t unit_mask;   /* resolution - 1 */
	uint32_t shift;       /* log2(resolution) */
	uint32_t park_idx;    /* the bucket of timers beyond the wheel's reach */
	bool running;         /* base.c: inside kt_base_run()/kt_base_advance() */
	size_t count;         /* pending wheel timers, both wheels, batch included */
	uint64_t clk;         /* first unit not yet processed; now_u + 1 between turns */
	/* Per level (wheel.c: calc_bucket() and the fast path's ranges). */
	uint64_t round[KT_WHEEL_LEVELS];   /* granularity (ms) - 1, and ... */
	uint64_t rshift[KT_WHEEL_LEVELS];  /* ... log2(granularity): ceil(ms / gran) */
	uint64_t lvl_first[KT_WHEEL_LEVELS]; /* a level's first ms past first_ms (fixed) */
	uint64_t lvl_len[KT_WHEEL_LEVELS];   /* its length; 0 for level 7 (never fast) */
	struct kt_base_stats stats;
	uint64_t tag; /* the base's tag, in place in a timer's word (KT__W_TAG_SHIFT) */

	/* ---- base.c: clocks and the turn ---- */
	enum kt_clock_kind clock;
	uint64_t now_ms; /* cached clock of this turn (now_ns / 10^6) */
	uint64_t now_ns; /* cached clock of this turn, ns */
	/* The clock source: CLOCK_MONOTONIC, the manual clock, or a test's. */
	uint64_t (*read_ns)(const struct kt_base *b);
	uint64_t (*source_ms)(void *arg); /* a custom source, for read_ns */
	void *source_arg;
	uint64_t sys_ms;       /* cached wall clock, never decreasing */
	uint64_t sys_read_at;  /* now_ms when it was last read */
	uint64_t manual_wall0; /* manual clock: wall time at creation ... */
	uint64_t manual_start; /* ... and the manual time then */
#ifdef KT_DEBUG
	pthread_t owner; /* the thread of the first turn (debug builds) */
	bool owned;
#endif

	/* ---- hrtimer.c: a binary min-heap on expiry, and the batch firing ---- */
	struct kt_hrtimer **hr_heap;
	uint32_t hr_count, hr_cap;
	uint64_t hr_seq; /* start counter: FIFO among equal deadlines */
	uint32_t hr_batched; /* timers in hr_expiring: gathered, not yet fired */
	/*
	 * The first hr_left of them were left by a run that stopped at its
	 * limit (kt_base_set_run_limit()). Those fire first in the next run;
	 * what kt_base_update_time() gathered since goes behind the wheel's
	 * left-overs, which were due before it.
	 */
	uint32_t hr_left;
	struct kt_hrtimer *hr_expiring;

	/*
	 * ---- remote.c: the cross-thread queue ----
	 * Guarded by qlock; the owner takes it once per turn (take, prepare
	 * wait), never per timer call.
	 */
	pthread_mutex_t qlock;
	struct kt__remote_op *q;
	size_t q_head, q_tail, q_cap;
	bool waiting; /* owner blocked (or about to) on a plan */
	/* Pushes so far: written under qlock, peeked at by the owner (relaxed). */
	size_t q_pushed;
	/* The owner's own: q_pushed when it last saw the queue empty, and
	 * whether it marked itself waiting since its last take. */
	size_t q_seen;
	bool q_marked;
	kt_waker_fn waker;
	void *waker_arg;
	unsigned wakers_busy;   /* producers calling the waker right now */
	pthread_cond_t wakers_idle; /* signalled when wakers_busy drops to 0 */
	/*
	 * fork(): every base is on one list, so that the fork handlers can
	 * hold every queue's lock across the fork and give the child
	 * consistent ones (remote.c). @forked: inherited by a child whose
	 * waker is still the parent's (never called here) until the child
	 * installs its own (kt_base_fork(), kt_base_set_waker()).
	 * @turn_thread: the thread running the turn while @running (base.c).
	 * @torn: inherited in the middle of a turn another thread was running;
	 * that thread is not in the child and the turn never ends there, so
	 * the base stays forked and kt_base_fork() refuses it.
	 */
	struct kt_base *fork_next, **fork_pprev;
	pthread_t turn_thread;
	bool forked;
	bool torn;
	/* The owner's batch: taken under qlock, applied outside it. */
	struct kt__remote_op batch[KT_REMOTE_BATCH];
	size_t batch_pos, batch_n; /* next op to apply, ops taken */
	size_t run_done_calls;     /* done callbacks run by the last kt_base_run() */

	/* ---- call.c: the pool of one-shot call nodes ---- */
	struct kt__call *call_free;
	struct kt__call_chunk *call_chunks;

	/* ---- wheel.c: occupancy, lists, and the batch being fired ---- */
	uint64_t map[KT__NR_MAPS];
	/*
	 * Each wheel's earliest occupied bucket and its due unit, remembered
	 * from the last search (next_due_unit()): still the earliest while its
	 * bit of next_known is set, the bucket holds a timer and clk has not
	 * passed it. A link into an empty list clears next_known (that bucket
	 * may come due first); a bucket that empties fails the check.
	 */
	uint64_t next_unit[2];
	uint32_t next_bucket[2]; /* KT__NO_BUCKET: the wheel was empty */
	uint8_t next_known;      /* bit w: next_unit[w] holds */
	/*
	 * A bucket's KT__SUBS list heads (32 bytes) are read together (the
	 * emptiness test, gathering a due bucket): aligned to a cache line, no
	 * group straddles two lines, whatever the allocator returns.
	 */
	_Alignas(64) struct kt_timer *vectors[KT__NR_LISTS];
	/*
	 * The batch: each due list moved whole into one entry (its first node's
	 * pprev points at the entry); the entries of one bucket form a group,
	 * groups in due-time order. Each list is due at most once per gathering,
	 * so KT__NR_LISTS entries and KT__NR_BUCKETS groups suffice for one;
	 * gatherings repeated before the batch runs stop when it is full
	 * (kt__wheel_gather()).
	 */
	uint32_t due_n, due_groups;
	uint32_t due_left; /* the first groups, left by a run stopped at its limit */
	/*
	 * The batch's first live group: a run stopped by its limit leaves the
	 * groups it fired whole in place, empty, instead of moving the rest to
	 * the front (wheel.c, batch_keep_from()). Live entries start at
	 * due_group_end[due_first - 1] (0 if due_first is 0).
	 */
	uint32_t due_first;
	bool clk_held; /* a full batch held clk back on a unit still due */
	bool due_rr;   /* fire the batch round-robin (wheel.c, RR_MIN_PENDING) */
	uint32_t run_max_calls; /* kt_base_set_run_limit(): 0 = no limit */
	uint32_t run_max_us;
	uint16_t due_group_end[KT__NR_BUCKETS];
	struct kt_timer *due[KT__NR_LISTS];
};

/* A fresh reading of the base's clock, in ns (the cached one for manual). */
static inline uint64_t kt__clock_read_ns(const struct kt_base *b) { return b->read_ns(b); }

/* Where the base keeps the turn's instant, for kt_idle_touch()'s store. */
static inline const uint64_t *kt__base_now_ptr(const struct kt_base *b) { return &b->now_ceil_ms; }

/* The base a timer was set up on (NULL if never set up or orphaned). */
static inline struct kt_base *kt__timer_base(const struct kt_timer *t) { return t->kt__base; }

/*
 * Whether a timer may be armed: set up, not shut down, and its base not
 * freed. Tested before anything reads the base through the timer.
 */
static inline bool kt__timer_armable(const struct kt_timer *t) { return (t->kt__word & KT__W_ARMABLE) != 0; }

/*
 * A setup function reads the node it is about to overwrite whole, only to
 * refuse a pending one (-EBUSY). On memory never written (malloc, the stack)
 * that read is deliberate and harmless, but valgrind's memcheck would report
 * every such setup in the programs that use ktimer. Where memcheck's client
 * header is installed, tell it so; elsewhere this is nothing.
 */
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define KT__SETUP_READS(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#endif
#endif
#ifndef KT__SETUP_READS
#define KT__SETUP_READS(p, n) ((void)0)
#endif

/*
 * Whether @t is pending on @b, without trusting memory that may be
 * uninitialized (a setup call's timer may be fresh from malloc or the stack):
 * only a node that claims to be pending on @b itself - valid flags, links,
 * and @b as its base - is looked up, by walking @b's own bucket or batch,
 * never by following the node's pointers. O(1) for any node that is not
 * pending; the walk happens only for a real re-setup of a pending timer.
 * (wheel.c)
 */
bool kt__timer_linked(const struct kt_timer *t, const struct kt_base *b);

/*
 * Debug builds (KT_DEBUG, set by --config=asan) check that a base is used
 * from one thread only: the thread of its first turn owns it (before that,
 * e.g. while a main thread sets a worker's base up, any thread may use it).
 * Production builds compile the check away.
 */
#ifdef KT_DEBUG
static inline void kt__owner_check(struct kt_base *b, const char *fn, bool turn);
/* A turn (run, update, advance, prepare_wait) claims an unowned base. */
#define KT__OWNER_TURN(b) kt__owner_check((b), __func__, true)
/* Anything else only checks: a base may be set up on one thread, run on another. */
#define KT__OWNER_CHECK(b) kt__owner_check((b), __func__, false)
/* The same, from a helper, naming the public function the user called. */
#define KT__OWNER_CHECK_AS(b, fn) kt__owner_check((b), (fn), false)
/*
 * An entry point that forwards to another public call (kt_timer_arm() to
 * kt_mod_timer(), kt_interval_start() to kt_mod_timer(), ...) checks first,
 * so the abort names the function the user called, not the one it reached.
 */
#define KT__OWNER_CHECK_TIMER(t)                                               \
	do {                                                                   \
		if ((t) && kt__timer_base(t))                                  \
			kt__owner_check(kt__timer_base(t), __func__, false);   \
	} while (0)
#else
#define KT__OWNER_TURN(b) ((void)0)
#define KT__OWNER_CHECK(b) ((void)0)
#define KT__OWNER_CHECK_AS(b, fn) ((void)0)
#define KT__OWNER_CHECK_TIMER(t) ((void)0)
#endif

/* For kt_base_dump(): a callback as "symbol+0xoff (object)" where dladdr() knows it. */
static inline void kt__dump_fn(FILE *f, const void *fn)
{
	Dl_info info;

	if (fn && dladdr(fn, &info) && info.dli_sname)
		fprintf(f, "%s+0x%lx (%s)", info.dli_sname,
			(unsigned long)((const char *)fn - (const char *)info.dli_saddr),
			info.dli_fname ? info.dli_fname : "?");
	else
		fprintf(f, "%p", fn);
}

/*
 * How many callbacks a run may still start (kt_base_set_run_limit()). The
 * firing loops of wheel.c and hrtimer.c ask kt__budget_spent() before each
 * callback - only before a callback: a wheel node that is only requeued
 * when taken (not due yet) does not ask, so a run stops only in front of a
 * timer that will fire, and "stopped" means a due timer is left. The
 * first callback of a run is always allowed, so a run makes
 * progress whatever the limit. Unlimited runs (kt_base_advance(), or no limit
 * set) do not ask on the wheel (wheel.c compiles its firing loop without the
 * check for them); precise timers, few by design, ask always.
 */
struct kt__budget {
	size_t ran;           /* callbacks run so far in this call */
	size_t max;           /* SIZE_MAX: no count limit */
	uint64_t deadline_ns; /* UINT64_MAX: no time limit */
	bool stopped;         /* a limit was reached with due timers left */
};

#define KT__BUDGET_UNLIMITED {0, SIZE_MAX, UINT64_MAX, false}

/* Whether @bg allows no further callback now; changes nothing (it may read the clock). */
static inline bool kt__budget_over(const struct kt_base *b, const struct kt__budget *bg)
{
	if (bg->stopped)
		return true;
	if (kt__likely(bg->ran < bg->max && bg->deadline_ns == UINT64_MAX) || bg->ran == 0)
		return false;
	return bg->ran >= bg->max || b->read_ns(b) >= bg->deadline_ns;
}

/* The same for a callback about to run: a run that may not start it stops. */
static inline bool kt__budget_spent(const struct kt_base *b, struct kt__budget *bg)
{
	if (kt__budget_over(b, bg))
		bg->stopped = true;
	return bg->stopped;
}

/* ---- base.c ---- */
/* kt_base_advance() to an absolute time; lib/testing/time_source.h exports it. */
long kt__base_advance_to_ns(struct kt_base *b, uint64_t target_ns);

/* ---- wheel.c ---- */
void kt__wheel_init(struct kt_base *b, unsigned resolution_ms, uint64_t now_ms);
void kt__wheel_set_clk(struct kt_base *b, uint64_t clk); /* and the per-level limits */
/* Off while callbacks run: kt_mod_timer() then always takes the exact path. */
void kt__wheel_fast_path(struct kt_base *b, bool on);
/* Gather every bucket due at or before unit @now_u into the batch; clk = now_u + 1.
 * A full batch stops it early: clk = the first unit still due. */
void kt__wheel_gather(struct kt_base *b, uint64_t now_u);
/* kt_base_set_op_counting(): count in the slow paths, the fast path off. */
void kt__wheel_count_ops(struct kt_base *b, bool on);
/* The thread's hot base for kt_mod_timer() (wheel.c); release on free. */
void kt__wheel_claim(struct kt_base *b);
void kt__wheel_release(struct kt_base *b);
/* Move the buckets due at unit @when to the batch (kt_base_advance()'s step);
 * false if the batch had no room for one of them (it stays in the wheel). */
bool kt__wheel_collect(struct kt_base *b, uint64_t when);
void kt__wheel_orphan_all(struct kt_base *b);       /* kt_base_free(): detach, don't fire */
/*
 * kt_base_dump(): every wheel timer. @user_fn names the function a timer
 * really runs where its callback is a trampoline (call.c); NULL otherwise.
 */
size_t kt__wheel_dump(const struct kt_base *b, FILE *f, const void *(*user_fn)(const struct kt_timer *t));
/* Clears the stale occupancy bits it meets: the owner's turn only. */
uint64_t kt__wheel_next_due_unit(struct kt_base *b, bool with_deferrable);
/* The same without writing anything (kt_base_next_timeout(): const). */
uint64_t kt__wheel_peek_due_unit(const struct kt_base *b, bool with_deferrable);
/* At the clock's limit: the tick after it if a timer due by the limit waits there. */
uint64_t kt__wheel_limit_due_unit(const struct kt_base *b);
/* At the clock's limit: the tick after it into the batch, what is due past it to the far bucket. */
bool kt__wheel_collect_limit(struct kt_base *b);
/*
 * Run the batch's first @max_groups groups (buckets), in order, while @bg
 * allows - asking it only in front of a timer that will fire; what is left
 * stays in the batch where it is, in order (due_first skips what fired).
 */
void kt__wheel_fire(struct kt_base *b, uint32_t max_groups, struct kt__budget *bg);
/*
 * kt_mod_timer() of @t for @ms, already due, from a remote operation the
 * turn applies: into the turn's batch (entry *@entry, UINT32_MAX until the
 * first), to fire in this turn rather than on the next tick. @same_stays:
 * a timer already pending for @ms stays where it is (kt_remote_mod()).
 */
int kt__wheel_mod_due(struct kt_base *b, struct kt_timer *t, uint64_t ms, bool same_stays, uint32_t *entry);
int kt__wheel_check(const struct kt_base *b);        /* KT_CHECK_* */

/* ---- hrtimer.c ---- */
uint64_t kt__hr_earliest(const struct kt_base *b); /* UINT64_MAX if none */
/* The earliest deadline after @after, at most @cap (kt_base_advance(): O(n)). */
uint64_t kt__hr_next_after(const struct kt_base *b, uint64_t after, uint64_t cap);
void kt__hr_collect(struct kt_base *b);            /* move the due ones to the batch */
/* Run the batch from its head (only the hr_left left-overs if @left_only) while @bg allows. */
void kt__hr_fire(struct kt_base *b, bool left_only, struct kt__budget *bg);
void kt__hr_orphan_all(struct kt_base *b);         /* kt_base_free() */
size_t kt__hr_dump(const struct kt_base *b, FILE *f); /* kt_base_dump() */
int kt__hr_check(const struct kt_base *b);         /* KT_CHECK_* */

/* ---- call.c ---- */
void kt__calls_free(struct kt_base *b); /* kt_base_free(): the node pool */
/* kt_base_dump(): the function a kt_call_after() timer calls; NULL for other timers. */
const void *kt__call_user_fn(const struct kt_timer *t);

/* ---- remote.c ---- */
int kt__remote_init(struct kt_base *b);          /* 0, or -errno: fork handlers not registered */
void kt__remote_destroy(struct kt_base *b);    /* drops (done: -ECANCELED) what is queued */
size_t kt__remote_take(struct kt_base *b);     /* copy at most a batch to b->batch */
bool kt__remote_prepare_wait(struct kt_base *b); /* true: work queued; else marked waiting */


#ifdef KT_DEBUG
/* Inline so that every module can check without calling up into base.c. */
static inline void kt__owner_check(struct kt_base *b, const char *fn, bool turn)
{
	pthread_t self = pthread_self();

	if (!b->owned) {
		if (turn) {
			b->owner = self;
			b->owned = true;
		}
		return;
	}
	if (!pthread_equal(b->owner, self)) {
		fprintf(stderr,
			"ktimer: %s() on base %p from a thread that does not own it: "
			"a base belongs to the thread of its first turn; other threads "
			"must use kt_remote_*()\n",
			fn, (void *)b);
		abort();
	}
}
#endif

#endif
