// SPDX-License-Identifier: MIT
/*
 * tools/trace/trace_target.c - a program with a known number of timers, for
 * the probes' test (tools/check/trace_test) and the tools' sample output
 * (docs/TRACING.md).
 *
 *   trace_target [WHEEL [PRECISE [LIMIT]]]
 *
 * Prints "ready PID" once libktimer is loaded and its base exists, then
 * waits for a line on stdin (a tracer attaches by PID meanwhile: a probe in
 * a shared library is only seen once the library is mapped). Then it arms
 * WHEEL wheel timers (default 2000: half spread over 1..400 ms, half due at
 * once at 100 ms, a storm) and PRECISE precise timers (default 200, 1..200
 * ms), runs a plain turn loop with a run limit of LIMIT callbacks (default
 * 256, 0: none) until every one has fired, and prints
 * "fired WHEEL PRECISE runs N limited N" from kt_base_get_stats(), and
 * exits at the next line on stdin or its end (a tracer that symbolizes
 * callbacks needs the process alive when it prints).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ktimer/ktimer.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static size_t wheel_fired, precise_fired;

static void on_wheel(struct kt_timer *t)
{
	(void)t;
	wheel_fired++;
}

static void on_precise(struct kt_hrtimer *t)
{
	(void)t;
	precise_fired++;
}

int main(int argc, char **argv)
{
	size_t nw = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000;
	size_t np = argc > 2 ? strtoul(argv[2], NULL, 10) : 200;
	unsigned limit = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 256;
	struct kt_base_config cfg = {0, KT_CLOCK_MONOTONIC, 0};
	struct kt_base *b = kt_base_new(&cfg);
	struct kt_timer *wt = calloc(nw ? nw : 1, sizeof(*wt));
	struct kt_hrtimer *ht = calloc(np ? np : 1, sizeof(*ht));
	struct kt_base_stats st;
	char line[16];

	if (!b || !wt || !ht) {
		fprintf(stderr, "trace_target: out of memory\n");
		return 1;
	}
	if (limit)
		kt_base_set_run_limit(b, limit, 0);
	printf("ready %ld\n", (long)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	kt_base_update_time(b);
	for (size_t i = 0; i < nw; i++) {
		kt_timer_setup(&wt[i], b, on_wheel, 0);
		kt_timer_arm(&wt[i], KT_MILLIS(i % 2 ? 100 : 1 + i % 400));
	}
	for (size_t i = 0; i < np; i++) {
		kt_hrtimer_setup(&ht[i], b, on_precise);
		kt_hrtimer_start_after(&ht[i], (1 + i % 200) * UINT64_C(1000000));
	}
	for (;;) {
		struct kt_wait_plan plan;

		kt_base_run(b);
		if (wheel_fired == nw && precise_fired == np)
			break;
		plan = kt_base_prepare_wait(b);
		poll(NULL, 0, kt_wait_plan_timeout_ms(b, &plan));
	}
	kt_base_get_stats(b, &st);
	printf("fired %zu %zu runs %llu limited %llu\n", wheel_fired, precise_fired, (unsigned long long)st.runs,
	       (unsigned long long)st.limited_runs);
	fflush(stdout);
	/* Alive until told (or stdin ends): a tracer symbolizes while it is. */
	(void)fgets(line, sizeof(line), stdin);
	kt_base_free(b);
	free(wt);
	free(ht);
	return 0;
}
