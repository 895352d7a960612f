/* SPDX-License-Identifier: MIT */
/*
 * lib/base_internal.h - the base's layout, shared by the files of the base
 * module (wheel.c, remote.c, hrtimer.c). Not installed, not for users.
 */
#ifndef KTIMER_LIB_BASE_INTERNAL_H
#define KTIMER_LIB_BASE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ktimer/base.h"
#include "ktimer/hrtimer.h"
#include "ktimer/loop.h"
#include "ktimer/timer.h"

#define KT__LVL_SIZE 64u
#define KT__WHEEL_SIZE (KT__LVL_SIZE * KT_WHEEL_LEVELS) /* 512 buckets */
/* Two wheels: ordinary timers, then deferrable ones. */
#define KT__NR_BUCKETS (2u * KT__WHEEL_SIZE)
#define KT__NR_MAPS (KT__NR_BUCKETS / KT__LVL_SIZE)

#define KT__NS_PER_MS UINT64_C(1000000)

/* One queued cross-thread operation. */
struct kt__remote_op {
	struct kt_timer *timer;
	uint64_t arg; /* expires (MOD) or delay (ARM) in ms */
	kt_remote_done_fn done;
	void *done_arg;
	int kind; /* KT__OP_* */
};

enum { KT__OP_MOD, KT__OP_ARM, KT__OP_DELETE };

struct kt_base {
	/* Hot: read on every arm. */
	uint64_t clk;    /* first unit not yet processed; now_u + 1 between turns */
	uint64_t now_ms; /* cached clock of this turn (now_ns / 10^6) */
	unsigned shift;  /* log2(resolution) */
	uint64_t unit_mask; /* resolution - 1 */
	bool running;    /* inside kt_base_run()/kt_base_advance() */
	enum kt_clock_kind clock;
	size_t count;    /* pending wheel timers, both wheels, batch included */
	struct kt_base_stats stats;

	uint64_t map[KT__NR_MAPS];

	/* The batch being fired, and where the next due bucket is spliced. */
	struct kt_timer *expiring;
	struct kt_timer **expiring_tail;

	uint64_t now_ns; /* cached clock of this turn, ns */
	/*
	 * now_ns rounded up to a millisecond: relative delays count from here so
	 * that "arm for d ms" never fires before d ms of real time have passed
	 * since the turn began (now_ms, the floor, could be 0.99 ms behind).
	 */
	uint64_t now_ceil_ms;

	/* Wall clock cache. */
	uint64_t sys_ms;       /* cached wall clock, never decreasing */
	uint64_t sys_read_at;  /* now_ms when it was last read */
	uint64_t manual_wall0; /* manual clock: wall time at creation ... */
	uint64_t manual_start; /* ... and the manual time then */
	uint64_t (*source)(void *); /* test hook replacing CLOCK_MONOTONIC (ms) */
	void *source_arg;

	/* Precise timers: a binary min-heap on expiry, and the batch firing. */
	struct kt_hrtimer **hr_heap;
	uint32_t hr_count, hr_cap;
	struct kt_hrtimer *hr_expiring;

	/*
	 * Cross-thread queue. Everything below is guarded by qlock; the owner
	 * takes it once per turn (drain, prepare_wait), never per timer call.
	 */
	pthread_mutex_t qlock;
	struct kt__remote_op *q;
	size_t q_head, q_tail, q_cap;
	bool waiting; /* owner blocked (or about to) on a plan */
	kt_waker_fn waker;
	void *waker_arg;
	struct kt__remote_op batch[KT_REMOTE_BATCH]; /* owner's scratch */

	struct kt_timer *vectors[KT__NR_BUCKETS];
};

/* wheel.c */
uint64_t kt__read_mono_ns(const struct kt_base *b);
uint64_t kt__wheel_next_due_ms(const struct kt_base *b);

/* remote.c */
size_t kt__remote_take(struct kt_base *b);
void kt__remote_apply(struct kt_base *b, size_t n);
void kt__remote_init(struct kt_base *b);
void kt__remote_destroy(struct kt_base *b);

/* hrtimer.c */
uint64_t kt__hr_earliest(const struct kt_base *b); /* UINT64_MAX if none */
size_t kt__hr_expire(struct kt_base *b);           /* collect and fire all due */
void kt__hr_collect(struct kt_base *b);            /* move the due ones to the batch */
size_t kt__hr_fire(struct kt_base *b);             /* run the batch */
void kt__hr_destroy(struct kt_base *b);
int kt__hr_check(const struct kt_base *b);         /* heap invariant, 0 if ok */

#endif
