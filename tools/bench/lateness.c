// SPDX-License-Identifier: MIT
/*
 * tools/bench/lateness.c - how late does a 250 us timer fire on this machine?
 *
 * Interleaves samples of (a) a precise kt_hrtimer 250 us ahead, woken by the
 * kt_epoll timerfd, and (b) a wheel timer 250 us ahead on a 1 ms base (kt_millis
 * rounds 250 us up to 1 ms, then the wheel to its next tick), both driven by
 * kt_epoll_wait(). Lateness is measured in the callback against a fresh
 * CLOCK_MONOTONIC reading: fire time - (arm time + 250 us). Prints median and
 * p99 of each. Usage: lateness [samples]
 */
#include <ktimer/epoll.h>
#include <ktimer/ktimer.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct probe {
	struct kt_hrtimer hr;
	struct kt_timer wheel;
	uint64_t target_ns;
	uint64_t fired_ns;
};

static void on_hr(struct kt_hrtimer *t) { kt_container_of(t, struct probe, hr)->fired_ns = mono_ns(); }

static void on_wheel(struct kt_timer *t) { kt_container_of(t, struct probe, wheel)->fired_ns = mono_ns(); }

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *name, uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	printf("%-34s median %7.1f us   p99 %7.1f us   max %7.1f us   (n=%d)\n", name, (double)v[n / 2] / 1000.0,
	       (double)v[(n * 99) / 100] / 1000.0, (double)v[n - 1] / 1000.0, n);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	struct kt_base_config cfg = {1, KT_CLOCK_MONOTONIC, 0};
	struct kt_base *b = kt_base_new(&cfg);
	struct kt_epoll ep;
	struct epoll_event ev[4];
	struct probe p;
	uint64_t *hr_late = calloc((size_t)n, sizeof(uint64_t));
	uint64_t *wh_late = calloc((size_t)n, sizeof(uint64_t));

	if (!b || !hr_late || !wh_late || n < 1 || kt_epoll_init(&ep, b) != 0) {
		fprintf(stderr, "setup failed\n");
		return 1;
	}
	kt_hrtimer_setup(&p.hr, b, on_hr);
	kt_timer_setup(&p.wheel, b, on_wheel, 0);
	for (int i = 0; i < n; i++) {
		/* precise */
		kt_base_run(b);
		p.fired_ns = 0;
		p.target_ns = mono_ns() + 250000;
		kt_hrtimer_start(&p.hr, p.target_ns);
		while (!p.fired_ns)
			kt_epoll_wait(&ep, ev, 4);
		hr_late[i] = p.fired_ns - p.target_ns;
		/* wheel, 1 ms resolution */
		kt_base_run(b);
		p.fired_ns = 0;
		p.target_ns = mono_ns() + 250000;
		kt_timer_arm(&p.wheel, kt_millis_from_ns(250000));
		while (!p.fired_ns)
			kt_epoll_wait(&ep, ev, 4);
		wh_late[i] = p.fired_ns - p.target_ns;
	}
	report("precise kt_hrtimer 250 us", hr_late, n);
	report("wheel kt_timer 250 us, 1 ms base", wh_late, n);
	printf("timerfd arms: %llu, epoll wake-ups: %llu\n", (unsigned long long)ep.timerfd_arms,
	       (unsigned long long)ep.wakeups);
	kt_epoll_close(&ep);
	kt_base_free(b);
	free(hr_late);
	free(wh_late);
	return 0;
}
