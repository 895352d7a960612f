/* Another thread arms a timer of the worker's base; the worker's kt_epoll
 * loop is woken, applies the operation and fires the timer. */
#define _GNU_SOURCE
#include <ktimer/ktimer.h>
#include <ktimer/epoll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static struct kt_timer job;
static int fired, applied;

static void run_job(struct kt_timer *t)
{
	(void)t;
	fired = 1;
}

static void on_applied(struct kt_timer *t, int result, void *arg)
{
	(void)t, (void)arg;
	printf("applied on the worker: %d\n", result);
	applied = 1;
}

static void *producer(void *arg)
{
	(void)arg;
	/* Queued under the base's lock; the waker (kt_epoll's eventfd) runs. */
	if (kt_remote_arm(&job, KT_MILLIS(20), on_applied, NULL) != 0)
		abort();
	return NULL;
}

int main(void)
{
	struct kt_base *base = kt_base_new(NULL);
	struct kt_epoll ep;
	struct epoll_event ev[8];
	pthread_t th;
	int turns = 0;

	if (!base || kt_epoll_init(&ep, base) != 0)
		return EXIT_FAILURE;
	kt_timer_setup(&job, base, run_job, 0);
	pthread_create(&th, NULL, producer, NULL);
	while (!fired && turns++ < 1000)
		kt_epoll_wait(&ep, ev, 8);  /* sleeps until woken or due */
	pthread_join(th, NULL);
	kt_epoll_close(&ep);
	kt_base_free(base);
	printf("fired: %d\n", fired);
	return fired && applied ? EXIT_SUCCESS : EXIT_FAILURE;
}
