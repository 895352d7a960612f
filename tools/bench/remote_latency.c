// SPDX-License-Identifier: MIT
/*
 * tools/bench/remote_latency.c - how soon does a remote "fire now" run?
 *
 * A worker blocks in kt_epoll_wait() with a long wheel timer pending (a
 * server always has some); another thread hands it "fire this timer now" -
 * kt_remote_arm(t, 0), or kt_remote_mod(t, an expiry already passed) - the
 * way a server hands a connection to its owner with "close now". Measured:
 * from just before the remote call (CLOCK_MONOTONIC on the producer) to the
 * timer's callback (CLOCK_MONOTONIC on the worker). Between samples the
 * producer waits 0.2 ms plus a random part of two wheel units, so the
 * worker is asleep when a call comes and the calls fall evenly between the
 * wheel's ticks (a fire on a tick does not set the phase of the next call).
 * Resolutions 1, 4 and 16 ms; p50, p99 and the maximum of each, and the load
 * average (other work on the machine moves these figures: compare runs made
 * on a quiet machine). About a minute with the default 1,000 samples.
 * Usage: remote_latency [samples per resolution and call]
 */
#include <ktimer/epoll.h>
#include <ktimer/ktimer.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

	while (nanosleep(&ts, &ts) != 0)
		;
}

struct bench {
	struct kt_epoll ep;
	struct kt_timer target; /* the timer the producer fires */
	struct kt_timer idle;   /* keeps a wheel deadline pending */
	_Atomic uint64_t fired_ns;
	atomic_int stop;
	int n;
	int mod; /* 0: kt_remote_arm(t, 0); 1: kt_remote_mod(t, past) */
	unsigned res;
	uint64_t *lat;
};

static void on_target(struct kt_timer *t)
{
	struct bench *bn = kt_container_of(t, struct bench, target);

	atomic_store_explicit(&bn->fired_ns, mono_ns(), memory_order_release);
}

static void on_idle(struct kt_timer *t) { (void)t; }

static void *producer(void *arg)
{
	struct bench *bn = arg;
	unsigned seed = 12345u + (unsigned)bn->mod;

	for (int i = 0; i < bn->n; i++) {
		uint64_t t0, t1;

		sleep_ns(200000u + (uint64_t)rand_r(&seed) % (2000000u * bn->res));
		atomic_store_explicit(&bn->fired_ns, 0, memory_order_relaxed);
		t0 = mono_ns();
		if (bn->mod)
			kt_remote_mod(&bn->target, 0, NULL, NULL);
		else
			kt_remote_arm(&bn->target, KT_MILLIS(0), NULL, NULL);
		while (!(t1 = atomic_load_explicit(&bn->fired_ns, memory_order_acquire)))
			sleep_ns(20000u);
		bn->lat[i] = t1 - t0;
	}
	atomic_store(&bn->stop, 1);
	kt_epoll_wake(&bn->ep);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int run(unsigned res, int mod, int n)
{
	struct kt_base_config cfg = {res, KT_CLOCK_MONOTONIC, 0};
	struct kt_base *b = kt_base_new(&cfg);
	struct bench *bn = calloc(1, sizeof(*bn));
	struct epoll_event ev[8];
	pthread_t th;

	if (!b || !bn || !(bn->lat = calloc((size_t)n, sizeof(uint64_t))) || kt_epoll_init(&bn->ep, b) != 0) {
		fprintf(stderr, "setup failed\n");
		return 1;
	}
	bn->n = n;
	bn->mod = mod;
	bn->res = res;
	kt_timer_setup(&bn->target, b, on_target, 0);
	kt_timer_setup(&bn->idle, b, on_idle, 0);
	kt_timer_arm(&bn->idle, KT_MILLIS(3600000));
	if (pthread_create(&th, NULL, producer, bn) != 0) {
		fprintf(stderr, "pthread_create failed\n");
		return 1;
	}
	while (!atomic_load(&bn->stop))
		kt_epoll_wait(&bn->ep, ev, 8);
	pthread_join(th, NULL);
	qsort(bn->lat, (size_t)n, sizeof(uint64_t), cmp_u64);
	printf("| %2u ms | %-28s | %8.1f | %8.1f | %8.1f |\n", res,
	       mod ? "kt_remote_mod(t, past)" : "kt_remote_arm(t, 0)", (double)bn->lat[n / 2] / 1000.0,
	       (double)bn->lat[(size_t)n * 99 / 100] / 1000.0, (double)bn->lat[n - 1] / 1000.0);
	kt_timer_delete(&bn->idle);
	kt_timer_delete(&bn->target);
	kt_epoll_close(&bn->ep);
	kt_base_free(b);
	free(bn->lat);
	free(bn);
	return 0;
}

static void print_load(const char *when)
{
	FILE *f = fopen("/proc/loadavg", "r");
	char buf[128];

	if (f && fgets(buf, sizeof(buf), f))
		printf("load average %s: %s", when, buf);
	if (f)
		fclose(f);
}

int main(int argc, char **argv)
{
	static const unsigned res[] = {1, 4, 16};
	int n = argc > 1 ? atoi(argv[1]) : 1000;

	if (n < 1) {
		fprintf(stderr, "usage: remote_latency [samples]\n");
		return 2;
	}
	print_load("before");
	printf("remote call to callback, %d samples each, us:\n\n", n);
	printf("| resolution | call                         |      p50 |      p99 |      max |\n");
	printf("|---:|---|---:|---:|---:|\n");
	for (unsigned i = 0; i < sizeof(res) / sizeof(res[0]); i++)
		for (int mod = 0; mod < 2; mod++)
			if (run(res[i], mod, n) != 0)
				return 1;
	print_load("after");
	return 0;
}
