// SPDX-License-Identifier: MIT
/* lib/testing/paused.c - the paused-time driver (see paused.h). */
#include "lib/testing/paused.h"

#include "ktimer/base.h"
#include "lib/testing/time_source.h"

size_t kt_paused_turn(struct kt_base *b)
{
	size_t fired = kt_base_run(b);
	struct kt_wait_plan plan = kt_base_prepare_wait(b);
	long n;

	if (plan.kind != KT_WAIT_UNTIL)
		return fired;
	/* Idle with a timer armed: time jumps to it. */
	n = kt__base_advance_to_ns(b, plan.deadline_ns);
	return fired + (n > 0 ? (size_t)n : 0);
}

size_t kt_paused_run_until_idle(struct kt_base *b, size_t max_turns)
{
	size_t fired = 0;

	for (size_t i = 0; i < max_turns; i++) {
		struct kt_wait_plan plan;

		fired += kt_paused_turn(b);
		plan = kt_base_prepare_wait(b);
		if (plan.kind == KT_WAIT_INDEFINITE)
			break;
	}
	return fired;
}

size_t kt_paused_sleep(struct kt_base *b, kt_millis d)
{
	size_t fired = kt_base_run(b);
	long n = kt_base_advance(b, d);

	return fired + (n > 0 ? (size_t)n : 0);
}
