/* SPDX-License-Identifier: MIT */
/*
 * net/request.h - the HTTP side of a connection: reading requests under the
 * header and body deadlines, answering them (/, /stats, errors, 100
 * Continue), keep-alive, and ending the connection politely after its last
 * response (a lingering close, net/conn.h).
 *
 * Back-pressure: while a connection has output the socket would not take,
 * its input is neither read nor parsed, and the read deadline is paused
 * (its time left kept); both resume when the output drains.
 */
#ifndef KTIMER_NET_REQUEST_H
#define KTIMER_NET_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "net/core.h"

/* A new connection: sets up its read timer. A client that connects and says
 * nothing meets the header deadline, counted from now; a refused one
 * (C_REFUSED) gets 503 and a lingering close. */
void httpd_request_start(struct httpd_conn *c);

/* The connection's epoll events this turn (EPOLLIN, EPOLLOUT, ...). */
void httpd_request_on_event(struct httpd_conn *c, uint32_t events);

/* Mid-request or mid-response: its own deadlines govern it, not keep-alive
 * and not an idle close at shutdown. */
int httpd_request_busy(const struct httpd_conn *c);

/* The slot ring's expiry callback: close an idle connection (0), or keep a
 * busy one (1). */
int httpd_request_keepalive_expired(struct slot_ring *ring, struct slot_node *node);

/*
 * At --max-conns: close the worker's connection idle the longest in
 * keep-alive (counted as reclaimed), to make room for a new client, as nginx
 * does when out of connections. Only this worker's connections: another
 * worker's belong to its thread. Return: true if one was closed.
 */
bool httpd_request_reclaim_idle(struct httpd_worker *w);

#endif
