// SPDX-License-Identifier: MIT
/*
 * examples/loops/uring_example.c - ktimer on io_uring (docs/LOOPS.md).
 *
 * A "connection" reads a pipe that another thread writes five times, 20 ms
 * apart; every completed read pushes its 300 ms idle deadline back and
 * queues the next read. The same thread also arms a timer of the loop's
 * base from outside (kt_remote_arm()). When the writes stop, the idle
 * deadline fires: the callback cancels the read still in flight, whose
 * buffer lives in the connection, so the connection is freed only when that
 * read's completion comes back. The loop runs while the caller has requests
 * on the ring (kt_uring_alive()).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nanosleep, and the sigset_t <liburing.h> uses: POSIX, not ISO C */
#endif
#include <ktimer/ktimer.h>
#include <ktimer/uring.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TAG_CANCEL 1 /* user_data of the cancel request; reads carry the conn */

struct conn {
	int fd;
	char buf[64];
	struct kt_timer idle;
	struct kt_uring *ku;
	ssize_t bytes;
	int closing;
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

static void queue_read(struct conn *c)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ku->ring);

	io_uring_prep_read(sqe, c->fd, c->buf, sizeof(c->buf), 0);
	io_uring_sqe_set_data(sqe, c);
}

static void on_idle(struct kt_timer *t)
{
	struct conn *c = kt_from_timer(c, t, idle);
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ku->ring);

	printf("idle deadline: closing\n");
	c->closing = 1; /* freed when the cancelled read completes */
	io_uring_prep_cancel(sqe, c, 0);
	io_uring_sqe_set_data64(sqe, TAG_CANCEL);
}

static void on_completion(const struct io_uring_cqe *cqe)
{
	struct conn *c = io_uring_cqe_get_data(cqe);

	if (cqe->user_data == TAG_CANCEL)
		return;
	if (cqe->res > 0 && !c->closing) {
		kt_timer_arm(&c->idle, KT_MILLIS(300)); /* the clock is fresh here */
		c->bytes += cqe->res;
		queue_read(c);
		return;
	}
	kt_timer_delete(&c->idle);
	close(c->fd);
	printf("conn freed after %zd bytes\n", c->bytes);
	free(c);
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
	struct kt_base *base = kt_base_new(NULL);
	struct kt_uring ku;
	struct io_uring_cqe cqe[16];
	struct kt_timer hello;
	struct conn *c = calloc(1, sizeof(*c));
	struct producer p;
	pthread_t thread;
	int fds[2], err;

	if (!base || !c || pipe(fds) < 0)
		return 1;
	err = kt_uring_init(&ku, base, 64, 0);
	if (err < 0) {
		printf("io_uring unavailable: %s\n", strerror(-err));
		return err == -ENOSYS || err == -EPERM ? 0 : 1;
	}
	c->ku = &ku;
	c->fd = fds[0];
	queue_read(c);
	kt_timer_setup(&c->idle, base, on_idle, 0);
	kt_timer_arm(&c->idle, KT_MILLIS(300));
	kt_timer_setup(&hello, base, on_hello, 0);

	p.fd = fds[1];
	p.hello = &hello;
	pthread_create(&thread, NULL, produce, &p);
	while (kt_uring_alive(&ku)) {
		int n = kt_uring_wait(&ku, cqe, 16);

		for (int i = 0; i < n; i++)
			on_completion(&cqe[i]);
	}
	pthread_join(thread, NULL);

	kt_uring_close(&ku);
	close(fds[1]);
	kt_base_free(base);
	return 0;
}
