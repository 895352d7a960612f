/* SPDX-License-Identifier: MIT */
/*
 * net/server.h - a multi-worker epoll HTTP/1.1 server whose connections
 * embed their timers.
 *
 * One thread per worker, each with its own epoll (kt_epoll), its own kt_base
 * and its own SO_REUSEPORT listening socket on the shared port. Per
 * connection: a header-read deadline and a write deadline (struct kt_timer
 * members) and a keep-alive node in the worker's one-second slot ring.
 */
#ifndef KTIMER_NET_SERVER_H
#define KTIMER_NET_SERVER_H

#include <stdint.h>

#include <ktimer/ktimer.h>

#ifdef __cplusplus
extern "C" {
#endif

struct kt_server_config {
	const char *bind_addr; /* IPv4 or IPv6 literal */
	unsigned port;         /* 0: pick a free port */
	unsigned workers;
	kt_seconds keepalive;      /* 0: Connection: close on every response */
	kt_millis header_timeout;  /* 0: no header deadline */
	kt_millis write_timeout;   /* 0: no write deadline */
	unsigned resolution_ms;
	unsigned max_conns;        /* 0: no limit */
};

struct kt_server;

/* Bind every worker's socket and start the workers. NULL with errno. */
struct kt_server *kt_server_start(const struct kt_server_config *cfg);

/* The bound port and address text ("127.0.0.1:8080"). */
unsigned kt_server_port(const struct kt_server *s);

/* Stop accepting, finish responses in flight, close idle connections, join
 * the workers. Safe to call once, from any thread but a worker. */
void kt_server_stop(struct kt_server *s);

void kt_server_free(struct kt_server *s);

#ifdef __cplusplus
}
#endif

#endif
