// SPDX-License-Identifier: MIT
/*
 * tools/trace/trace_cost.c - nanoseconds per fired timer, to compare
 * untraced with a tool attached (BENCHMARKS.md, "Probes").
 *
 *   trace_cost [N [ROUNDS]]
 *
 * Prints "ready PID" and waits for a line on stdin (a tracer attaches
 * meanwhile), then ROUNDS times (default 21): arms N timers (default
 * 100000) on a manual-clock base for 1..1000 ms and fires them all with
 * kt_base_advance() of 1.5 s (past every bucket they land in), timing
 * it. Prints the median and the quartiles in ns per fired timer.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ktimer/ktimer.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static size_t fired;

static void on_fire(struct kt_timer *t)
{
	(void)t;
	fired++;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
	int rounds = argc > 2 ? atoi(argv[2]) : 21;
	struct kt_base_config cfg = {0, KT_CLOCK_MANUAL, 0};
	struct kt_base *b = kt_base_new(&cfg);
	struct kt_timer *t = calloc(n, sizeof(*t));
	double *ns = calloc((size_t)rounds, sizeof(*ns));
	char line[16];

	if (!b || !t || !ns || rounds < 1)
		return 1;
	for (size_t i = 0; i < n; i++)
		kt_timer_setup(&t[i], b, on_fire, 0);
	printf("ready %ld\n", (long)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (int r = 0; r < rounds; r++) {
		uint64_t t0;

		for (size_t i = 0; i < n; i++)
			kt_timer_arm(&t[i], KT_MILLIS(1 + (i * 7919) % 1000));
		fired = 0;
		t0 = now_ns();
		kt_base_advance(b, KT_MILLIS(1500));
		ns[r] = (double)(now_ns() - t0) / (double)(fired ? fired : 1);
		if (fired != n) {
			fprintf(stderr, "trace_cost: fired %zu of %zu\n", fired, n);
			return 1;
		}
	}
	qsort(ns, (size_t)rounds, sizeof(*ns), cmp);
	printf("ns per fired timer: median %.1f, quartiles %.1f..%.1f (%d rounds of %zu)\n", ns[rounds / 2],
	       ns[rounds / 4], ns[rounds * 3 / 4], rounds, n);
	kt_base_free(b);
	free(t);
	free(ns);
	return 0;
}
