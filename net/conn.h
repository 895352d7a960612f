/* SPDX-License-Identifier: MIT */
/*
 * net/conn.h - a connection's lifecycle and output.
 *
 * A connection is created at accept, closed once (for exactly one counted
 * reason) and freed at the end of the loop turn that closed it: a timer
 * callback may close a connection whose event is still in the turn's epoll
 * array, and the library may run timers before or after the caller handles
 * the turn's events, so nothing is freed in between.
 *
 * Output goes into the worker's staging buffer and leaves in one send() per
 * read; what the socket will not take is kept on the connection, under the
 * write deadline.
 */
#ifndef KTIMER_NET_CONN_H
#define KTIMER_NET_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include "net/core.h"

/* Memory from the worker's own jemalloc arena (no thread cache: a
 * connection's buffers are freed by the same worker, often much later). */
void *httpd_conn_alloc(struct httpd_worker *w, size_t n);
void httpd_conn_free_mem(void *p);

/*
 * httpd_conn_new() - a connection for an accepted socket: in the worker's
 * epoll set (edge-triggered) and its list of connections. The caller sets
 * up its read_timer (net/request.c) before anything can close it.
 * @refused: over --max-conns: answered 503 and closed politely, never
 *           counted as open.
 *
 * Return: the connection, or NULL (and @fd closed) if out of memory or
 * epoll refused it.
 */
struct httpd_conn *httpd_conn_new(struct httpd_worker *w, int fd, bool refused);

/* Close now, counted under @why (R_COUNT: already counted). Later calls do
 * nothing. */
void httpd_conn_close(struct httpd_conn *c, enum httpd_close_reason why);

/*
 * httpd_conn_linger() - close politely, counted under @why now: send FIN
 * after the output already queued (shutdown(SHUT_WR)), then read and discard
 * whatever the client still sends until its FIN, and only then close. It
 * gives up after --lingering-timeout without a byte from the client (each
 * read that discards some pushes that back), and after --lingering-time in
 * all. Closing with unread input makes the kernel send RST
 * and drop output the client has not read yet: a lingering close never
 * does. The caller has set up read_timer to close the connection when it
 * fires during C_LINGER. A client that already sent its FIN is closed at
 * once.
 */
void httpd_conn_linger(struct httpd_conn *c, enum httpd_close_reason why);

/* A lingering connection is readable: discard, close at the client's FIN. */
void httpd_conn_linger_read(struct httpd_conn *c);

/* Free the connections closed this turn (at the end of the turn). */
void httpd_conn_free_closed(struct httpd_worker *w);

/* The Date header's value: the worker's cached wall clock, formatted once
 * per second. */
const char *httpd_date(struct httpd_worker *w);

/* Best effort, for a connection being closed: never blocks, never buffers.
 * Carries Date like every other response. */
void httpd_send_and_forget(struct httpd_worker *w, int fd, int status);

/* Queue bytes for @c: into the worker's stage, or behind blocked output. */
void httpd_conn_emit(struct httpd_conn *c, const char *p, size_t n);

/* Send what is staged for @c; keep what the socket will not take and start
 * the write deadline. Every byte queued goes through here or
 * httpd_conn_emit(), so output never waits without a write attempt and a
 * deadline. */
void httpd_conn_stage_flush(struct httpd_worker *w, struct httpd_conn *c);

/* Write pending output. Return: 1 when drained, 0 if still blocked (or the
 * connection was closed on an error). */
int httpd_conn_flush_out(struct httpd_conn *c);

#endif
