// SPDX-License-Identifier: MIT
/*
 * examples/loops/uv_example.c - ktimer on a libuv loop (docs/LOOPS.md).
 *
 * A "connection" reads a pipe that another thread writes five times, 20 ms
 * apart; every read pushes its 300 ms idle deadline back. The same thread
 * also arms a timer of the loop's base from outside (kt_remote_arm()). When
 * the writes stop, the idle deadline fires: the callback closes the pipe
 * handle (freed in the close callback) and the adapter, and uv_run()
 * returns.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nanosleep, and the POSIX types <uv.h> uses: not ISO C */
#endif
#include <ktimer/ktimer.h>
#include <ktimer/uv.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct conn {
	uv_pipe_t pipe;
	struct kt_timer idle;
	struct kt_uv *ku;
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

static void on_closed(uv_handle_t *h)
{
	struct conn *c = h->data;

	printf("conn freed after %zd bytes\n", c->bytes);
	free(c); /* only now: libuv touched the handle until this callback */
}

static void on_idle(struct kt_timer *t)
{
	struct conn *c = kt_from_timer(c, t, idle);

	printf("idle deadline: closing\n");
	uv_close((uv_handle_t *)&c->pipe, on_closed);
	kt_uv_close(c->ku, NULL); /* the example's last handle: uv_run() returns */
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	static char mem[64];

	(void)h;
	(void)hint;
	*buf = uv_buf_init(mem, sizeof(mem));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct conn *c = s->data;

	(void)buf;
	if (n <= 0)
		return;
	kt_uv_update_time(c->ku); /* the clock after the wait, before arming */
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
	uv_loop_t *loop = uv_default_loop();
	struct kt_base *base = kt_base_new(NULL);
	struct kt_uv ku;
	struct kt_timer hello;
	struct conn *c = calloc(1, sizeof(*c));
	struct producer p;
	pthread_t thread;
	int fds[2];

	if (!base || !c || pipe(fds) < 0 || kt_uv_init(&ku, loop, base) < 0)
		return 1;
	c->ku = &ku;
	c->pipe.data = c;
	uv_pipe_init(loop, &c->pipe, 0);
	uv_pipe_open(&c->pipe, fds[0]);
	uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
	kt_timer_setup(&c->idle, base, on_idle, 0);
	kt_timer_arm(&c->idle, KT_MILLIS(300));
	kt_timer_setup(&hello, base, on_hello, 0);

	p.fd = fds[1];
	p.hello = &hello;
	pthread_create(&thread, NULL, produce, &p);
	uv_run(loop, UV_RUN_DEFAULT);
	pthread_join(thread, NULL);

	close(fds[1]);
	uv_loop_close(loop);
	kt_base_free(base); /* after the producer is joined */
	return 0;
}
