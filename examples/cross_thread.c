// SPDX-License-Identifier: MIT
/*
 * examples/cross_thread.c - a worker's timers armed from another thread,
 * and a clean shutdown.
 *
 * The worker thread owns a base and a kt_epoll (epoll, an eventfd waker, a
 * timerfd for precise timers) and serves four sessions, each a real socket
 * (one end of a socketpair; main() holds the other). A control thread - think
 * "the acceptor" or "an admin API" - arms, pushes back and cancels the
 * sessions' deadlines with kt_remote_*(): the operations are queued and the
 * worker is woken only if it is blocked. When a deadline fires the worker
 * closes that session's socket, and main() sees EOF on its end.
 *
 * The worker also runs its own timers beside them: an interval (a 100 ms
 * stats tick), an idle tracker and a precise 250 us timer.
 *
 * Shutdown follows the waker protocol of <ktimer/remote.h>:
 *   1. the control thread asks the worker to stop (a remote-armed timer);
 *   2. the worker leaves its loop and calls kt_epoll_close(): it removes the
 *      base's waker and waits for any producer inside it, so the kt_epoll -
 *      on the worker's stack - may go away even if a producer still calls
 *      kt_remote_*() (it would queue, waking no one);
 *   3. main() joins the control thread (no producer touches the base any
 *      more) and the worker, and only then calls kt_base_free().
 *
 * Exits 0 if sessions 0, 2 and 3 were closed by their deadlines and the
 * cancelled session 1 was not.
 *
 * Builds with Bazel (//examples:cross_thread) or with any C11 compiler:
 *   cc -std=c11 cross_thread.c $(pkg-config --cflags --libs ktimer) -pthread
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime, socketpair flags: POSIX/Linux, not ISO C */
#endif
#include <ktimer/epoll.h>
#include <ktimer/ktimer.h>

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NSESS 4

struct session {
	int id;
	int fd; /* the worker's end */
	struct kt_timer deadline; /* armed from the control thread */
	bool expired;
};

struct worker {
	struct kt_base *base;
	struct session sess[NSESS];
	struct kt_interval stats;
	struct kt_idle idle;
	struct kt_hrtimer precise;
	struct kt_timer stop_timer;
	atomic_bool ready;
	bool stop;
	int ticks;
	atomic_int remote_done; /* read by main() after the join */
	uint64_t precise_late_ns, t0;
};

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static void on_deadline(struct kt_timer *t)
{
	struct session *s = kt_container_of(t, struct session, deadline);

	s->expired = true;
	close(s->fd); /* the client sees EOF */
	s->fd = -1;
}

static void on_stats(struct kt_interval *iv, uint64_t due)
{
	struct worker *w = kt_container_of(iv, struct worker, stats);

	(void)due;
	w->ticks++;
}

static void on_idle(struct kt_idle *idle)
{
	struct worker *w = kt_container_of(idle, struct worker, idle);

	printf("  worker: no activity for 300 ms (at +%llu ms)\n", (unsigned long long)(kt_base_now(w->base) - w->t0));
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

	w->stop = true;
}

/* Runs on the worker thread, as the owner applies each queued operation. */
static void on_remote_done(struct kt_timer *t, int result, void *arg)
{
	struct worker *w = arg;

	(void)t;
	(void)result;
	atomic_fetch_add(&w->remote_done, 1);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct kt_epoll ep; /* the waker's argument: it lives on this stack */
	struct epoll_event ev[16];

	if (kt_epoll_init(&ep, w->base) < 0) {
		perror("kt_epoll_init");
		return NULL;
	}
	w->t0 = kt_base_now(w->base);
	kt_timer_setup(&w->stop_timer, w->base, on_stop, 0);
	for (int i = 0; i < NSESS; i++)
		kt_timer_setup(&w->sess[i].deadline, w->base, on_deadline, 0);
	kt_interval_setup(&w->stats, w->base, KT_MILLIS(100), on_stats);
	kt_interval_start(&w->stats);
	kt_idle_setup(&w->idle, w->base, KT_MILLIS(300), on_idle);
	kt_idle_start(&w->idle);
	kt_hrtimer_setup(&w->precise, w->base, on_precise);
	kt_hrtimer_start_after(&w->precise, 250000);
	atomic_store(&w->ready, true); /* producers may use the timers from now on */

	while (!w->stop) {
		int n = kt_epoll_wait(&ep, ev, 16);

		if (n < 0)
			break;
		if (kt_base_now(w->base) - w->t0 < 150)
			kt_idle_touch(&w->idle); /* "traffic" for the first 150 ms */
	}

	kt_interval_stop(&w->stats);
	kt_idle_stop(&w->idle);
	for (int i = 0; i < NSESS; i++) {
		kt_timer_delete(&w->sess[i].deadline);
		kt_remote_forget(&w->sess[i].deadline); /* anything still queued */
		if (w->sess[i].fd >= 0)
			close(w->sess[i].fd);
	}
	kt_epoll_close(&ep); /* step 2: no producer is inside the waker after this */
	return NULL;
}

/* The control thread: a producer on another thread. */
static void *control_main(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < NSESS; i++)
		kt_remote_arm(&w->sess[i].deadline, KT_MILLIS(200 + 100 * (unsigned)i), on_remote_done, w);
	sleep_ms(50);
	kt_remote_delete(&w->sess[1].deadline, on_remote_done, w);              /* session 1 is done */
	kt_remote_arm(&w->sess[2].deadline, KT_MILLIS(600), on_remote_done, w); /* session 2: more time */
	sleep_ms(800); /* let the deadlines play out */
	kt_remote_arm(&w->stop_timer, KT_MILLIS(0), NULL, NULL); /* step 1 */
	return NULL; /* the last use of the base on this thread */
}

int main(void)
{
	static struct worker w;
	int client[NSESS];
	long closed_at[NSESS];
	pthread_t worker, control;
	struct timespec t0, t;
	bool ok;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ktimer cross-thread example: one worker, one control thread, %d sessions\n", NSESS);
	w.base = kt_base_new(NULL); /* set up here, owned by the thread of its first turn */
	if (!w.base) {
		perror("kt_base_new");
		return 1;
	}
	for (int i = 0; i < NSESS; i++) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
			perror("socketpair");
			return 1;
		}
		w.sess[i].id = i;
		w.sess[i].fd = sv[0];
		client[i] = sv[1];
		closed_at[i] = -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_create(&worker, NULL, worker_main, &w);
	while (!atomic_load(&w.ready))
		sleep_ms(1);
	pthread_create(&control, NULL, control_main, &w);

	/* Watch the client ends for EOF until the worker has closed them all
	 * (its shutdown closes the ones left), at most 10 s. */
	for (int open = NSESS, waited = 0; open > 0 && waited < 10000; waited += 10) {
		struct pollfd p[NSESS];

		for (int i = 0; i < NSESS; i++)
			p[i] = (struct pollfd){closed_at[i] < 0 ? client[i] : -1, POLLIN, 0};
		if (poll(p, NSESS, 10) <= 0)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t);
		for (int i = 0; i < NSESS; i++) {
			char c;

			if (p[i].revents && read(client[i], &c, 1) <= 0) {
				closed_at[i] = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
				open--;
			}
		}
	}

	pthread_join(control, NULL); /* step 3: the producer is done with the base */
	pthread_join(worker, NULL);
	for (int i = 0; i < NSESS; i++) {
		printf("  session %d: %s at +%ld ms\n", i,
		       w.sess[i].expired ? "closed by its deadline" : "closed at shutdown", closed_at[i]);
		close(client[i]);
	}
	printf("  interval ticks: %d, remote operations applied: %d\n", w.ticks, atomic_load(&w.remote_done));
	printf("  precise 250 us timer fired %llu us late\n", (unsigned long long)(w.precise_late_ns / 1000));
	kt_base_free(w.base);
	ok = w.sess[0].expired && !w.sess[1].expired && w.sess[2].expired && w.sess[3].expired;
	printf("%s\n", ok ? "ok" : "FAILED: sessions 0, 2, 3 should expire and 1 should not");
	return ok ? 0 : 1;
}
