// SPDX-License-Identifier: MIT
/*
 * kabench: ktimer driven the way a server drives it - kt_base_run() turns on
 * a monotonic base - with and without a run limit (kt_base_set_run_limit()).
 * The "ktimer" row fires through kt_base_advance(), the test clock's driver,
 * which is never limited; these rows measure what a limited run costs per
 * fired timer: a run of at most @kab_run_limit callbacks, then the next
 * turn (no I/O between them here, so the difference is the limit's own
 * overhead: the budget checks and one more turn per slice).
 *
 * The clock is a variable (kt_base_set_clock_source()), so the expire phase
 * and the simulation move it as they move the manual clock of the other
 * rows. Opt-in rows: kabench --turns.
 */
#include <stdlib.h>

#include <ktimer/ktimer.h>

#include "tools/bench/kabench/kabench.h"

uint32_t kab_run_limit = 256;

struct tctx {
	struct kt_base *base; /* first: the kab_kt_* functions read it */
	uint64_t now;
};

static uint64_t read_now(void *arg) { return ((struct tctx *)arg)->now; }

static void *create_with(uint64_t now, uint32_t limit)
{
	struct tctx *k = calloc(1, sizeof(*k));
	struct kt_base_config cfg = {16, KT_CLOCK_MONOTONIC, 0};

	k->now = now;
	k->base = kt_base_new(&cfg);
	kt_base_set_clock_source(k->base, read_now, k);
	kt_base_run(k->base);
	kt_base_set_run_limit(k->base, limit, 0);
	return k;
}

static void *create(size_t n, uint64_t now)
{
	(void)n;
	return create_with(now, 0);
}

static void *create_limited(size_t n, uint64_t now)
{
	(void)n;
	return create_with(now, kab_run_limit);
}

static void destroy(void *ctx)
{
	struct tctx *k = ctx;

	kt_base_free(k->base);
	free(k);
}

/* One wake-up at @now: turns until nothing due is left (a limited run
 * leaves the rest due, and the next turn goes on with it). */
static size_t advance(void *ctx, uint64_t now)
{
	struct tctx *k = ctx;
	size_t fired = 0;

	if (now > k->now)
		k->now = now;
	do
		fired += kt_base_run(k->base);
	while (kt_base_next_timeout(k->base) == 0);
	return fired;
}

const struct kab_impl kab_ktimer_turn = {
	"turn: ktimer", "kt_base_run() turns, no run limit", sizeof(struct kt_timer), 0, 0, 1, 0,
	create, destroy, kab_kt_init, kab_kt_arm, kab_kt_cancel, advance, kab_kt_next_timeout, kab_kt_ops, NULL, kab_kt_count_ops,
};

const struct kab_impl kab_ktimer_turn_limited = {
	"turn: ktimer limited", "kt_base_run() turns, kt_base_set_run_limit(--run-limit, default 256)",
	sizeof(struct kt_timer), 0, 0, 1, 0, create_limited, destroy, kab_kt_init, kab_kt_arm, kab_kt_cancel,
	advance, kab_kt_next_timeout, kab_kt_ops, NULL, kab_kt_count_ops,
};
