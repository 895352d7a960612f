/* SPDX-License-Identifier: MIT */
/*
 * net/conn.h - a connection's lifecycle and output, and the clock its
 * deadlines count from.
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
#include <stdint.h>

#include "net/core.h"

/*
 * The clock a connection's deadlines count from.
 *
 * A turn caches the clock when its wait returns, and kt_timer_arm() counts
 * from that instant. The turn's work can outlast it by far: an accept
 * burst, a long run of reads, a worker preempted for tens of milliseconds
 * by other processes. A deadline armed from that stale instant for an event
 * that happened later in the turn (a connection accepted, a byte read, a
 * write that made progress) would end before its time as the client
 * measures it. So every deadline of a connection, and the keep-alive
 * ring's touch, counts from a clock reading taken after its event.
 *
 * httpd_clock_now() - the present, in milliseconds on the worker's base's
 * clock (CLOCK_MONOTONIC), rounded up. The base's clock is refreshed
 * (kt_base_update_time()): kt_base_now(), what kt_timer_arm() and
 * slot_touch() count from, is this reading afterwards. Inside a timer
 * callback the base keeps its turn's clock (the refresh is refused with
 * -EBUSY), and the reading is the function's own. One vDSO clock read and
 * the base's gathering of what has come due (docs/API.md gives its cost).
 */
uint64_t httpd_clock_now(struct httpd_worker *w);

/* Arm @t for @timeout from @now (httpd_clock_now()), or delete it if
 * @timeout is 0. Return: as kt_mod_timer() or kt_timer_delete(). */
int httpd_deadline_arm_at(struct kt_timer *t, uint64_t now, kt_millis timeout);

/* httpd_deadline_arm_at() from httpd_clock_now(). */
int httpd_deadline_arm(struct httpd_worker *w, struct kt_timer *t, kt_millis timeout);

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
