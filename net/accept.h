/* SPDX-License-Identifier: MIT */
/*
 * net/accept.h - listening sockets and accepting connections.
 *
 * Each worker listens on its own socket (SO_REUSEPORT on the shared port)
 * registered in its epoll set under the tag HTTPD_LISTEN_TAG. On EMFILE and
 * its kin a worker takes its socket out of epoll for a moment (a timer puts
 * it back) and keeps serving the connections it has, rather than spinning
 * on accept().
 */
#ifndef KTIMER_NET_ACCEPT_H
#define KTIMER_NET_ACCEPT_H

#include <stdbool.h>
#include <stdint.h>

#include "net/core.h"

/* epoll_data.u64 of a worker's listening socket (connections use .ptr). */
#define HTTPD_LISTEN_TAG UINT64_C(0)

/* A bound, listening, non-blocking socket on @cfg's address and @port; the
 * port it got in @bound. -1 with errno. */
int httpd_listen(const struct httpd_config *cfg, unsigned port, unsigned *bound);

/* Set up the worker's accept-retry timer (before its loop starts). */
void httpd_accept_init(struct httpd_worker *w);

/* Put the worker's listening socket in its epoll set, or take it out. */
void httpd_accept_enable(struct httpd_worker *w, bool on);

/* The listening socket is readable: accept every pending connection. */
void httpd_accept(struct httpd_worker *w);

#endif
