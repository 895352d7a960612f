// SPDX-License-Identifier: MIT
/*
 * examples/loops/event_example.c - ktimer on a libevent event_base
 * (docs/LOOPS.md).
 *
 * A "connection" reads a pipe that another thread writes five times, 20 ms
 * apart; every read pushes its 300 ms idle deadline back. The same thread
 * also arms a timer of the loop's base from outside (kt_remote_arm()). When
 * the writes stop, the idle deadline fires and frees the connection, its
 * event first; kt_event_dispatch() then returns, since only the adapter's
 * event is left.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nanosleep, pipe: POSIX, not ISO C */
#endif
#include <ktimer/event.h>
#include <ktimer/ktimer.h>

#include <event2/event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct conn {
	int fd;
	struct event *ev;
	struct kt_timer idle;
	struct kt_event *ke;
	ssize_t bytes;
};

struct producer {
	int fd;
	struct kt_timer *hello;
};

static void on_hello(struct kt_timer *t)
{
	(void)t;
	printf("hello: armed from another thread, fired on the loop\n");
}

static void on_idle(struct kt_timer *t)
{
	struct conn *c = kt_from_timer(c, t, idle);

	printf("idle deadline: closing\n");
	event_free(c->ev); /* libevent allows it from any callback */
	close(c->fd);
	printf("conn freed after %zd bytes\n", c->bytes);
	free(c);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	char buf[64];
	ssize_t n = read(fd, buf, sizeof(buf));

	(void)what;
	if (n <= 0)
		return;
	kt_event_update_time(c->ke); /* the clock after the wait; re-aim later */
	kt_timer_arm(&c->idle, KT_MILLIS(300));
	c->bytes += n;
}

static void *produce(void *arg)
{
	struct producer *p = arg;
	struct timespec gap = {0, 20 * 1000000};

	kt_remote_arm(p->hello, KT_MILLIS(10), NULL, NULL);
	for (int i = 0; i < 5; i++) {
		if (write(p->fd, "x", 1) != 1)
			break;
		nanosleep(&gap, NULL);
	}
	return NULL;
}

int main(void)
{
	struct event_base *evbase = event_base_new();
	struct kt_base *base = kt_base_new(NULL);
	struct kt_event ke;
	struct kt_timer hello;
	struct conn *c = calloc(1, sizeof(*c));
	struct producer p;
	pthread_t thread;
	int fds[2];

	if (!evbase || !base || !c || pipe(fds) < 0 || kt_event_init(&ke, evbase, base) < 0)
		return 1;
	c->ke = &ke;
	c->fd = fds[0];
	c->ev = event_new(evbase, c->fd, EV_READ | EV_PERSIST, on_read, c);
	event_add(c->ev, NULL);
	kt_timer_setup(&c->idle, base, on_idle, 0);
	kt_event_update_time(&ke); /* arming before the loop starts */
	kt_timer_arm(&c->idle, KT_MILLIS(300));
	kt_timer_setup(&hello, base, on_hello, 0);

	p.fd = fds[1];
	p.hello = &hello;
	pthread_create(&thread, NULL, produce, &p);
	kt_event_dispatch(&ke); /* returns when only the adapter's event is left */
	pthread_join(thread, NULL);

	kt_event_close(&ke);
	close(fds[1]);
	event_base_free(evbase);
	kt_base_free(base);
	return 0;
}
