// SPDX-License-Identifier: MIT
/*
 * lib/clock.c - a base that reads the caller's cached clock (ktimer/clock.h).
 *
 * The base already reads its time through one function pointer (read_ns):
 * CLOCK_MONOTONIC or the manual clock. This installs a third reader that
 * calls the user's function; nothing on the turn's path changes.
 */
#include "ktimer/clock.h"
#include "ktimer/remote.h"

#include <errno.h>
#include <time.h>

#include "lib/internal.h"

/* The source's reading, at most the clock's limit (so the product in ns
 * cannot wrap to a small value). */
static uint64_t read_source_ns(const struct kt_base *b)
{
	uint64_t ms = b->source_ms(b->source_arg);

	return (ms < KT__TIME_LIMIT_MS ? ms : KT__TIME_LIMIT_MS) * KT__NS_PER_MS;
}

/*
 * Never below the cached now: a smaller reading is ignored by every reader,
 * not only by the turn. A precise timer armed "from now" after one would
 * otherwise count from the smaller reading and fire before its delay passed
 * on the base's clock, and a wait plan measured from it would outlast the
 * deadline once the source is back.
 */
static uint64_t read_user(const struct kt_base *b)
{
	uint64_t ns = read_source_ns(b);

	return ns > b->now_ns ? ns : b->now_ns;
}

static uint64_t read_system(const struct kt_base *b)
{
	struct timespec ts;

	(void)b;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int kt_base_set_clock_source(struct kt_base *b, kt_clock_source_fn read_ms, void *arg)
{
	uint64_t ns;

	if (!b || b->clock != KT_CLOCK_MONOTONIC)
		return -EINVAL;
	/*
	 * A queued kt_remote_mod() carries an expiry on the old clock: applied
	 * on the new one it could fire at once. (A producer must not queue one
	 * while the owner switches clocks; this catches what is already there.)
	 */
	if (b->running || kt_base_pending_count(b) != 0 || kt_base_remote_queued(b) != 0)
		return -EBUSY;
	KT__OWNER_CHECK(b);
	b->source_ms = read_ms;
	b->source_arg = arg;
	b->read_ns = read_ms ? read_user : read_system;
	/* Nothing is pending: the new clock may start before the old one. */
	ns = read_ms ? read_source_ns(b) : read_system(b);
	if (ns > KT__TIME_LIMIT_MS * KT__NS_PER_MS)
		ns = KT__TIME_LIMIT_MS * KT__NS_PER_MS;
	b->now_ns = ns;
	b->now_ms = ns / KT__NS_PER_MS;
	b->now_ceil_ms = b->now_ms + (ns % KT__NS_PER_MS != 0);
	kt__wheel_set_clk(b, (b->now_ms >> b->shift) + 1);
	b->sys_read_at = b->now_ms;
	return 0;
}
