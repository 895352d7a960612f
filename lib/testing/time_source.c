// SPDX-License-Identifier: MIT
/*
 * lib/testing/time_source.c - a test's clock for a monotonic base (see
 * time_source.h). It swaps the base's clock source, a function pointer the
 * base reads once per turn; the library itself has no test branch for it.
 */
#include "lib/testing/time_source.h"

#include <time.h>

#include "lib/internal.h"

static uint64_t read_source(const struct kt_base *b) { return b->source_ms(b->source_arg) * KT__NS_PER_MS; }

static uint64_t read_system(const struct kt_base *b)
{
	struct timespec ts;

	(void)b;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void kt__base_set_time_source(struct kt_base *b, uint64_t (*source)(void *), void *arg)
{
	uint64_t ns;

	b->source_ms = source;
	b->source_arg = arg;
	b->read_ns = source ? read_source : read_system;
	/* Adopt the new clock at once (even if earlier); only on an empty base. */
	ns = b->read_ns(b);
	b->now_ns = ns;
	b->now_ms = ns / KT__NS_PER_MS;
	b->now_ceil_ms = b->now_ms + (ns % KT__NS_PER_MS != 0);
	kt__wheel_set_clk(b, (b->now_ms >> b->shift) + 1);
	b->sys_read_at = b->now_ms;
}
