// SPDX-License-Identifier: MIT
/*
 * tools/bench/uvbench/server.c - the same small keep-alive HTTP server on libuv,
 * with its per-connection deadlines kept two ways (BENCHMARKS.md, "libuv:
 * uv_timer_t per connection vs ktimer on the adapter").
 *
 *   uvbench_server --timers uv|kt [--idle-ms N] [--header-ms N]
 *
 * Listens on 127.0.0.1, port 0, and prints "port N". Every connection has
 * two deadlines, as nginx keeps them: a header deadline, armed when bytes of
 * a request arrive and removed once its header is complete, and an idle
 * (keep-alive) deadline, pushed back after every response. Either expiring
 * closes the connection.
 *
 *	uv  two uv_timer_t per connection: uv_timer_start() on every request
 *	    for each (a heap removal and insertion), uv_timer_stop() for the
 *	    header; three handles to close per connection.
 *	kt  a kt_timer for the header and a kt_idle tracker for the keep-alive
 *	    deadline (kt_idle_touch(): a store) on the kt_uv adapter.
 *
 * The timer work of each request is in conn_timers_request() (noinline), so
 * callgrind can charge it; the adapter's per-iteration work is lib/uv.c's
 * on_prepare() and on_check(). GET /stats answers with the counters as JSON:
 * requests, loop iterations (a prepare handle counts them: every wake-up),
 * open connections, bytes allocated per connection, expired deadlines.
 * GET /quit ends the process normally (callgrind writes its profile then).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <ktimer/ktimer.h>
#include <ktimer/uv.h>

#define READ_CAP 1024 /* a request header larger than this is refused */

enum mode { MODE_UV, MODE_KT };

struct conn {
	uv_tcp_t tcp;
	int closing; /* close callbacks still to come */
	unsigned len;
	char buf[READ_CAP];
	/* Last: a connection is allocated with only its mode's part. */
	union {
		struct {
			uv_timer_t header, idle;
		} uv;
		struct {
			struct kt_timer header;
			struct kt_idle idle;
		} kt;
	} t;
};

/* What one connection costs in each mode (the allocation's size). */
#define CONN_BYTES_UV (offsetof(struct conn, t) + sizeof(((struct conn *)0)->t.uv))
#define CONN_BYTES_KT (offsetof(struct conn, t) + sizeof(((struct conn *)0)->t.kt))

static enum mode mode;
static uv_loop_t *loop;
static struct kt_base *base;
static struct kt_uv ku;
static uint64_t idle_ms = 60000, header_ms = 10000;
static uint64_t nrequests, niterations, nconns, nexpired;

static const char RESPONSE[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok";

static void conn_close(struct conn *c);

/* ---- the deadlines, both ways ------------------------------------------ */

static void on_uv_deadline(uv_timer_t *h)
{
	nexpired++;
	conn_close(h->data);
}

static void on_kt_header(struct kt_timer *t)
{
	struct conn *c = kt_container_of(t, struct conn, t.kt.header);

	nexpired++;
	conn_close(c);
}

static void on_kt_idle(struct kt_idle *idle)
{
	struct conn *c = kt_container_of(idle, struct conn, t.kt.idle);

	nexpired++;
	conn_close(c);
}

static __attribute__((noinline)) void conn_timers_accept(struct conn *c)
{
	if (mode == MODE_UV) {
		uv_timer_init(loop, &c->t.uv.header);
		uv_timer_init(loop, &c->t.uv.idle);
		c->t.uv.header.data = c->t.uv.idle.data = c;
		uv_timer_start(&c->t.uv.idle, on_uv_deadline, idle_ms, 0);
	} else {
		kt_timer_setup(&c->t.kt.header, base, on_kt_header, 0);
		kt_idle_setup(&c->t.kt.idle, base, KT_MILLIS((uint32_t)idle_ms), on_kt_idle);
		kt_idle_start(&c->t.kt.idle);
	}
}

/* Bytes of a request arrived: it must complete within header_ms. */
static __attribute__((noinline)) void conn_timers_request(struct conn *c)
{
	if (mode == MODE_UV)
		uv_timer_start(&c->t.uv.header, on_uv_deadline, header_ms, 0);
	else
		kt_timer_arm(&c->t.kt.header, KT_MILLIS((uint32_t)header_ms));
}

/* The header was complete and answered: idle from now on. */
static __attribute__((noinline)) void conn_timers_answered(struct conn *c)
{
	if (mode == MODE_UV) {
		uv_timer_stop(&c->t.uv.header);
		uv_timer_start(&c->t.uv.idle, on_uv_deadline, idle_ms, 0);
	} else {
		kt_timer_delete(&c->t.kt.header);
		kt_idle_touch(&c->t.kt.idle);
	}
}

/* ---- connections -------------------------------------------------------- */

static void on_handle_closed(uv_handle_t *h)
{
	struct conn *c = h->data;

	if (--c->closing == 0)
		free(c);
}

static void conn_close(struct conn *c)
{
	if (c->closing)
		return;
	nconns--;
	c->tcp.data = c;
	if (mode == MODE_UV) {
		c->closing = 3;
		uv_close((uv_handle_t *)&c->t.uv.header, on_handle_closed);
		uv_close((uv_handle_t *)&c->t.uv.idle, on_handle_closed);
	} else {
		c->closing = 1;
		kt_timer_delete(&c->t.kt.header);
		kt_idle_stop(&c->t.kt.idle);
	}
	uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
}

static void on_written(uv_write_t *req, int status)
{
	(void)status;
	free(req);
}

static void send_all(struct conn *c, const char *p, size_t n)
{
	uv_buf_t b = uv_buf_init((char *)p, (unsigned)n);
	int w = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);

	if (w == (int)n)
		return;
	if (w < 0 && w != UV_EAGAIN) {
		conn_close(c);
		return;
	}
	if (w < 0)
		w = 0;
	/* The socket buffer is full: queue the rest (rare with these sizes). */
	uv_write_t *req = malloc(sizeof(*req) + n - (size_t)w);
	if (!req) {
		conn_close(c);
		return;
	}
	memcpy(req + 1, p + w, n - (size_t)w);
	b = uv_buf_init((char *)(req + 1), (unsigned)(n - (size_t)w));
	uv_write(req, (uv_stream_t *)&c->tcp, &b, 1, on_written);
}

static void send_stats(struct conn *c)
{
	char body[512], out[640];
	int n = snprintf(body, sizeof(body),
			 "{\"mode\":\"%s\",\"requests\":%llu,\"iterations\":%llu,\"conns\":%llu,"
			 "\"conn_bytes\":%zu,\"expired\":%llu}\n",
			 mode == MODE_UV ? "uv" : "kt", (unsigned long long)nrequests,
			 (unsigned long long)niterations, (unsigned long long)nconns,
			 mode == MODE_UV ? CONN_BYTES_UV : CONN_BYTES_KT,
			 (unsigned long long)nexpired);
	int m = snprintf(out, sizeof(out), "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: application/json\r\n\r\n%s",
			 n, body);

	send_all(c, out, (size_t)m);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct conn *c = h->data;

	(void)hint;
	*buf = uv_buf_init(c->buf + c->len, READ_CAP - c->len);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	char *end;

	(void)buf;
	if (n < 0) {
		conn_close(c);
		return;
	}
	if (n == 0)
		return;
	if (mode == MODE_KT)
		kt_uv_update_time(&ku); /* the clock after the wait, before arming */
	conn_timers_request(c);
	c->len += (unsigned)n;
	/* Answer every complete request in the buffer (wrk does not pipeline). */
	while ((end = memmem(c->buf, c->len, "\r\n\r\n", 4)) != NULL) {
		size_t used = (size_t)(end + 4 - c->buf);

		nrequests++;
		if (c->len >= 11 && memcmp(c->buf, "GET /stats ", 11) == 0) {
			send_stats(c);
		} else if (c->len >= 10 && memcmp(c->buf, "GET /quit ", 10) == 0) {
			send_all(c, RESPONSE, sizeof(RESPONSE) - 1);
			uv_stop(loop); /* main() returns: profilers write their output */
		} else
			send_all(c, RESPONSE, sizeof(RESPONSE) - 1);
		memmove(c->buf, c->buf + used, c->len - used);
		c->len -= (unsigned)used;
		if (c->closing)
			return;
		conn_timers_answered(c);
	}
	if (c->len == READ_CAP)
		conn_close(c); /* a header that does not fit: refuse */
}

static void on_connection(uv_stream_t *server, int status)
{
	struct conn *c;

	if (status < 0)
		return;
	if (mode == MODE_KT)
		kt_uv_update_time(&ku); /* the idle tracker starts from now */
	c = calloc(1, mode == MODE_UV ? CONN_BYTES_UV : CONN_BYTES_KT);
	if (!c)
		return;
	uv_tcp_init(loop, &c->tcp);
	c->tcp.data = c;
	if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) {
		c->closing = 1;
		uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	nconns++;
	conn_timers_accept(c);
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void on_iteration(uv_prepare_t *h)
{
	(void)h;
	niterations++;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr;
	struct sockaddr_storage bound;
	int len = sizeof(bound);
	uv_tcp_t server;
	uv_prepare_t counter;

	int chosen = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--timers") && i + 1 < argc) {
			i++;
			if (!strcmp(argv[i], "uv"))
				mode = MODE_UV;
			else if (!strcmp(argv[i], "kt"))
				mode = MODE_KT;
			else
				goto usage;
			chosen = 1;
		} else if (!strcmp(argv[i], "--idle-ms") && i + 1 < argc) {
			idle_ms = strtoull(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--header-ms") && i + 1 < argc) {
			header_ms = strtoull(argv[++i], NULL, 10);
		} else {
			goto usage;
		}
	}
	if (!chosen || idle_ms == 0 || header_ms == 0 || idle_ms > UINT32_MAX || header_ms > UINT32_MAX)
		goto usage;
	loop = uv_default_loop();
	if (mode == MODE_KT) {
		base = kt_base_new(NULL);
		if (!base || kt_uv_init(&ku, loop, base) < 0) {
			fprintf(stderr, "uvbench_server: cannot set up the ktimer base\n");
			return 1;
		}
	}
	uv_prepare_init(loop, &counter);
	uv_prepare_start(&counter, on_iteration);
	uv_tcp_init(loop, &server);
	uv_ip4_addr("127.0.0.1", 0, &addr);
	if (uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0) < 0 ||
	    uv_listen((uv_stream_t *)&server, 4096, on_connection) < 0 ||
	    uv_tcp_getsockname(&server, (struct sockaddr *)&bound, &len) < 0) {
		fprintf(stderr, "uvbench_server: cannot listen on 127.0.0.1\n");
		return 1;
	}
	printf("port %d\n", ntohs(((struct sockaddr_in *)&bound)->sin_port));
	fflush(stdout);
	return uv_run(loop, UV_RUN_DEFAULT);
usage:
	fprintf(stderr, "usage: uvbench_server --timers uv|kt [--idle-ms N] [--header-ms N]\n");
	return 2;
}
