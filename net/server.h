/* SPDX-License-Identifier: MIT */
/*
 * net/server.h - a multi-worker epoll HTTP/1.1 server whose connections
 * embed their timers.
 *
 * One thread per worker, each with its own epoll (kt_epoll) and its own
 * kt_base, accepting from the server's listening socket (or, with
 * --reuseport, from its own SO_REUSEPORT socket on the shared port). Per
 * connection: a read deadline (header, body, lingering close) and a write
 * deadline (struct kt_timer members) and a keep-alive node in the worker's
 * one-second slot ring.
 *
 * net/server.c holds the workers' loop, their start and their shutdown; the
 * connections are net/conn.c (lifecycle, output) and net/request.c (reading
 * and answering requests), accepting is net/accept.c, /stats net/stats.c.
 */
#ifndef KTIMER_NET_SERVER_H
#define KTIMER_NET_SERVER_H

#include "net/config.h"

#ifdef __cplusplus
extern "C" {
#endif

struct httpd_server;

/*
 * Bind every worker's socket and start the workers. NULL with errno, the
 * cause written to the error log (which socket, worker or file, and why).
 * Nothing is left running: a worker thread that cannot be created stops
 * and joins the ones already started before anything is freed.
 */
struct httpd_server *httpd_server_start(const struct httpd_config *cfg);

/* The bound port. */
unsigned httpd_server_port(const struct httpd_server *s);

/* The bound address and port: "127.0.0.1:8080", "[::1]:8080". */
const char *httpd_server_address(const struct httpd_server *s);

/* Reopen the access log (SIGHUP, after a rotation). 0, or -1 with errno;
 * without an access log, 0. */
int httpd_server_reopen_logs(struct httpd_server *s);

/* Stop accepting, finish responses in flight, close idle connections, join
 * the workers. Safe to call once, from any thread but a worker. */
void httpd_server_stop(struct httpd_server *s);

void httpd_server_free(struct httpd_server *s);

#ifdef __cplusplus
}
#endif

#endif
