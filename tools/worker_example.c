// SPDX-License-Identifier: MIT
/*
 * tools/worker_example.c - a complete worker loop.
 *
 * The worker thread owns a base and a kt_epoll (epoll + eventfd waker +
 * timerfd for precise timers). A second thread - think "the acceptor" or "a
 * control thread" - arms, pushes back and cancels the worker's timers through
 * kt_remote_*(), which queue the operation and wake the worker only when it
 * is blocked. The worker also runs an interval (a 100 ms stats tick), an idle
 * tracker and a precise 250 us timer. At the end the control thread asks the
 * worker to stop (a remote-armed timer whose callback sets the stop flag),
 * joins it, and everything is freed.
 */
#include <ktimer/epoll.h>
#include <ktimer/ktimer.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#define NSESS 4

struct session {
	int id;
	struct kt_timer deadline; /* armed from the control thread */
	int expired;
};

struct worker {
	struct kt_base *base;
	struct kt_epoll ep;
	struct session sess[NSESS];
	struct kt_interval stats;
	struct kt_idle idle;
	struct kt_hrtimer precise;
	struct kt_timer stop_timer;
	atomic_int ready;
	int stop;
	int ticks, remote_done;
	uint64_t precise_late_ns;
	uint64_t t0;
};

static void on_deadline(struct kt_timer *t)
{
	struct session *s = kt_container_of(t, struct session, deadline);

	s->expired = 1;
	printf("  worker: session %d deadline expired\n", s->id);
}

static void on_stats(struct kt_interval *iv, uint64_t due)
{
	struct worker *w = kt_container_of(iv, struct worker, stats);

	w->ticks++;
	(void)due;
}

static void on_idle(struct kt_idle *idle)
{
	struct worker *w = kt_container_of(idle, struct worker, idle);

	printf("  worker: idle for 300 ms at +%llu ms\n", (unsigned long long)(kt_base_now(w->base) - w->t0));
}

static void on_precise(struct kt_hrtimer *h)
{
	struct worker *w = kt_container_of(h, struct worker, precise);
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	w->precise_late_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec - kt_hrtimer_expires(h);
}

static void on_stop(struct kt_timer *t)
{
	struct worker *w = kt_container_of(t, struct worker, stop_timer);

	w->stop = 1;
}

static void on_remote_done(struct kt_timer *t, int result, void *arg)
{
	struct worker *w = arg;

	(void)t;
	(void)result;
	w->remote_done++;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event ev[16];

	w->base = kt_base_new(NULL);
	kt_epoll_init(&w->ep, w->base);
	w->t0 = kt_base_now(w->base);
	for (int i = 0; i < NSESS; i++) {
		w->sess[i].id = i;
		kt_timer_setup(&w->sess[i].deadline, w->base, on_deadline, 0);
	}
	kt_timer_setup(&w->stop_timer, w->base, on_stop, 0);
	kt_interval_setup(&w->stats, w->base, KT_MILLIS(100), on_stats);
	kt_interval_start(&w->stats);
	kt_idle_setup(&w->idle, w->base, KT_MILLIS(300), on_idle);
	kt_idle_start(&w->idle);
	kt_hrtimer_setup(&w->precise, w->base, on_precise);
	kt_hrtimer_start_after(&w->precise, 250000);
	atomic_store(&w->ready, 1);

	while (!w->stop) {
		int n = kt_epoll_wait(&w->ep, ev, 16);

		if (n < 0)
			break;
		if (kt_base_now(w->base) - w->t0 < 150)
			kt_idle_touch(&w->idle); /* "traffic" for the first 150 ms */
	}
	kt_interval_stop(&w->stats);
	kt_idle_stop(&w->idle);
	for (int i = 0; i < NSESS; i++)
		kt_remote_forget(&w->sess[i].deadline);
	kt_epoll_close(&w->ep);
	return NULL;
}

int main(void)
{
	static struct worker w;
	pthread_t th;
	struct timespec pause = {0, 50 * 1000000};

	printf("ktimer worker-loop example: one worker, one control thread\n");
	pthread_create(&th, NULL, worker_main, &w);
	while (!atomic_load(&w.ready))
		nanosleep(&(struct timespec){0, 1000000}, NULL);

	/* Control thread: arm deadlines on the worker's sessions. */
	for (int i = 0; i < NSESS; i++)
		kt_remote_arm(&w.sess[i].deadline, KT_MILLIS(200 + 100 * (unsigned)i), on_remote_done, &w);
	nanosleep(&pause, NULL);
	kt_remote_delete(&w.sess[1].deadline, on_remote_done, &w);  /* session 1 finished */
	kt_remote_arm(&w.sess[2].deadline, KT_MILLIS(600), on_remote_done, &w); /* pushed back */
	for (int i = 0; i < 13; i++) /* let the deadlines and the idle tracker play out */
		nanosleep(&pause, NULL);
	kt_remote_arm(&w.stop_timer, KT_MILLIS(0), NULL, NULL); /* ask it to stop */
	pthread_join(th, NULL);

	printf("  sessions expired: %d %d %d %d (1 was cancelled, 2 pushed back)\n", w.sess[0].expired,
	       w.sess[1].expired, w.sess[2].expired, w.sess[3].expired);
	printf("  interval ticks: %d, remote operations applied: %d, epoll wake-ups: %llu, timerfd arms: %llu\n",
	       w.ticks, w.remote_done, (unsigned long long)w.ep.wakeups, (unsigned long long)w.ep.timerfd_arms);
	printf("  precise 250 us timer fired %llu us late\n", (unsigned long long)(w.precise_late_ns / 1000));
	kt_base_free(w.base);
	return w.sess[1].expired || !w.sess[0].expired ? 1 : 0;
}
