/* SPDX-License-Identifier: MIT */
/*
 * net/accept.h - listening sockets and accepting connections.
 *
 * By default the server owns its port: one listening socket without
 * SO_REUSEPORT, in every worker's epoll set with EPOLLEXCLUSIVE (the kernel
 * wakes one waiting worker per connection, not all), so a second server
 * started on the same port fails with EADDRINUSE instead of silently taking
 * part of the traffic. With --reuseport each worker has its own
 * SO_REUSEPORT socket and the kernel spreads connections across them (and
 * across any other process that joins the port: that is what the flag
 * allows). Listening sockets are registered under HTTPD_LISTEN_TAG.
 *
 * On EMFILE and its kin a worker takes the socket out of its epoll set for
 * a moment (a timer puts it back) and keeps serving the connections it has,
 * rather than spinning on accept().
 *
 * Over --max-conns a connection gets 503 and a lingering close (so the
 * request it may already have sent does not turn the 503 into a reset); at
 * most --max-conns refused connections linger per worker, the rest are
 * closed at once.
 */
#ifndef KTIMER_NET_ACCEPT_H
#define KTIMER_NET_ACCEPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/core.h"

/* epoll_data.u64 of a worker's listening socket (connections use .ptr). */
#define HTTPD_LISTEN_TAG UINT64_C(0)

/*
 * httpd_listen() - a bound, listening, non-blocking socket.
 * @cfg: the address (resolved here) and whether to set SO_REUSEPORT.
 * @port: the port (0: the kernel picks).
 * @bound: the address it got ("127.0.0.1:8080", "[::1]:8080"), or NULL.
 * @bound_port: the port it got.
 *
 * Return: the socket, or -1 with errno (EADDRNOTAVAIL with an error line on
 * stderr if the name does not resolve).
 */
int httpd_listen(const struct httpd_config *cfg, unsigned port, char *bound, size_t cap, unsigned *bound_port);

/* A worker stops accepting for good (shutdown): out of its epoll set; its
 * own socket is closed, the shared one by the last worker to let go. */
void httpd_accept_stop(struct httpd_worker *w);

/* Set up the worker's accept-retry timer (before its loop starts). */
void httpd_accept_init(struct httpd_worker *w);

/* Put the worker's listening socket in its epoll set, or take it out. */
void httpd_accept_enable(struct httpd_worker *w, bool on);

/* The listening socket is readable: accept every pending connection. */
void httpd_accept(struct httpd_worker *w);

/* Serve (or refuse) the connections other workers handed over at
 * --max-conns; once per turn. */
void httpd_accept_handoffs(struct httpd_worker *w);

/* The worker leaves its loop: refuse what is still handed over, take no
 * more. */
void httpd_accept_handoff_close(struct httpd_worker *w);

#endif
