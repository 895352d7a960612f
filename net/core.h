/* SPDX-License-Identifier: MIT */
/*
 * net/core.h - the structures the server's modules share: the server, its
 * workers and their connections.
 *
 * Timers per connection, all embedded (no allocation per timer), each
 * counted from a clock reading taken after the event it follows, never from
 * the instant the turn began (net/conn.h, httpd_clock_now()):
 * - read_timer: the deadline of what the server is reading.
 *   Header: armed at accept (silent clients), and for a later request whose
 *   head the read that brought its first byte did not complete; deleted
 *   when the head is complete. Expiry: 408 if any bytes came, then close
 *   (slowloris).
 *   Body: armed while a request body is still to come, pushed back by every
 *   body byte. Expiry: close (a client that announced a body and stalled).
 *   Lingering close: how long the server keeps reading and discarding after
 *   its last response, waiting for the client's FIN: --lingering-timeout of
 *   silence, pushed back by every read that discards something, and never
 *   past --lingering-time in all (nginx's lingering_timeout, lingering_time).
 *   The header and body deadlines count only while the server reads: they
 *   are paused (the time left kept) while the server has stopped reading
 *   because the client is not taking its output, and resume when the
 *   output drains.
 * - write_timer: armed when a write would block, pushed back on every byte
 *   of progress (a re-arm that usually stays in its bucket), deleted when the
 *   output drains. Expiry: close (a client that stopped reading), unless
 *   the socket's send queue shrank since it was armed (the client read, the
 *   kernel just had not reported the socket writable yet): armed again.
 * - ka: the keep-alive node in the worker's one-second slot ring, touched
 *   (a store, usually) once the answers of a read have been sent, when a
 *   request body ends, and when blocked output drains.
 *
 * Memory: a connection is 224 bytes from the worker's jemalloc arena.
 * Input is read into a per-worker scratch buffer; only a connection holding
 * a partial request or unsent output gets a buffer of its own, so an idle
 * keep-alive connection costs its struct and nothing else.
 */
#ifndef KTIMER_NET_CORE_H
#define KTIMER_NET_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ktimer/epoll.h>
#include <ktimer/ktimer.h>

#include "net/config.h"
#include "net/counters.h"
#include "net/http.h"
#include "net/list.h"
#include "net/slots.h"

#define HTTPD_SCRATCH_SIZE (64u * 1024u)
#define HTTPD_STAGE_SIZE (64u * 1024u)
/* Connections refused over --max-conns that may linger at once, per worker,
 * at least: the refusal a client gets right after the previous one, before
 * that one's FIN has been read, must not end in a reset because the bound
 * is as small as --max-conns (1 in the tests). Past it, a plain close. */
#define HTTPD_REFUSED_LINGER_MIN 64u
/* Connections another worker may hand over at once (net/accept.c). */
#define HTTPD_HANDOFF_MAX 64u

enum httpd_conn_flag {
	C_CLOSE_AFTER = 1u << 0, /* close once the output has drained */
	C_PEER_EOF = 1u << 1,    /* the client half-closed (read returned 0) */
	C_DEAD = 1u << 2,        /* closed; freed at the end of the turn */
	C_GOT_BYTES = 1u << 3,   /* bytes of the current head have arrived */
	C_BAD = 1u << 4,         /* answered with an error status */
	C_BODY = 1u << 5,        /* read_timer is the body deadline */
	C_PAUSED = 1u << 6,      /* read_timer stopped while output is blocked */
	C_LINGER = 1u << 7,      /* closing: FIN sent, discarding input */
	C_REFUSED = 1u << 8,     /* over --max-conns: answered 503, lingering */
	C_RETIRED = 1u << 9,     /* counted as closed (lingering, or closed) */
	C_CONTINUE = 1u << 10,   /* the request asked for 100 Continue and has a body */
	C_TOUCH = 1u << 11,      /* keep-alive restarts once this read's answers are out */
};

/* Each closed connection counts under exactly one reason (net/counters.h). */
enum httpd_close_reason {
#define HTTPD_REASON_ENUM(e, name) e,
	HTTPD_CLOSE_REASONS(HTTPD_REASON_ENUM)
#undef HTTPD_REASON_ENUM
	R_COUNT
};

struct httpd_worker;
struct httpd_chunked_req; /* net/request.c: a chunked body being read */

struct httpd_conn {
	int fd;
	uint32_t flags;
	struct httpd_worker *w;
	struct dlist link; /* the worker's connections, then its closed ones */
	struct kt_timer read_timer;
	struct kt_timer write_timer;
	struct slot_node ka;
	struct http_parser parser;
	char *in; /* leftover input: a partial head or pipelined requests */
	uint32_t in_len;
	uint32_t read_left_ms; /* C_PAUSED: what read_timer had left */
	char *out; /* output the socket would not take yet */
	uint32_t out_len, out_off;
	/* Never both at once: a lingering connection has no body left to
	 * read, and sharing the word keeps the struct in its size class. */
	union {
		uint64_t body_left;  /* request body bytes still to skip */
		uint64_t linger_end; /* C_LINGER: kt_base_now() when lingering must end */
	};
	struct httpd_chunked_req *chunked; /* a chunked body being read, or NULL */
	uint32_t outq;  /* the socket's send queue (SIOCOUTQ) when the write deadline was armed */
};

/* Written by the worker, read by any worker answering /stats: the fields
 * are net/counters.h's list. */
struct httpd_counters {
#define HTTPD_COUNTER_FIELD(name, where) _Atomic uint64_t name;
	HTTPD_COUNTERS(HTTPD_COUNTER_FIELD)
#undef HTTPD_COUNTER_FIELD
	_Atomic uint64_t closed[R_COUNT];
};

struct httpd_worker {
	struct httpd_server *srv;
	unsigned id;
	pthread_t thread;
	int lfd;             /* its listening socket: its own, or the server's shared one */
	bool accepting, stopping;
	atomic_bool stop_requested;
	unsigned arena;
	struct kt_base *base;
	struct kt_epoll ep;
	struct slot_ring ring;
	bool ring_on;
	/* Drain turns' wall and thread CPU time (ns): a turn's wall time well
	 * over its CPU time is time the worker spent preempted. */
	uint64_t drain_wall_ns, drain_cpu_ns, drain_wall_max_ns;
	struct kt_timer accept_retry;
	uint64_t accept_warned_at;   /* kt_base_now() of the last EMFILE warning, 0: never */
	uint64_t accept_suppressed;  /* EMFILE warnings not written since then */
	struct kt_timer drain_deadline;
	/*
	 * At --max-conns, a worker with no idle keep-alive connection of its
	 * own hands a new connection to one that has some (idle_hint > 0),
	 * which reclaims one for it: connections are their worker's alone.
	 * The queue is taken under handoff_lock by both; never on the timer
	 * path. handoff_closed: the worker has left its loop, takes no more.
	 */
	pthread_mutex_t handoff_lock;
	int handoff[HTTPD_HANDOFF_MAX];
	unsigned handoff_len;
	bool handoff_closed;
	atomic_bool handoff_any; /* the queue may hold some: checked each turn without the lock */
	atomic_size_t idle_hint; /* keep-alive nodes in its ring, published each turn; 0 while stopping */
	struct dlist conns;  /* every connection not yet closed, lingering ones too */
	struct dlist closed; /* closed this turn; freed at its end */
	size_t open;         /* connections being served (not lingering) */
	size_t lingering;
	size_t refused_lingering; /* of them, refused over --max-conns */
	char date[40];
	uint64_t date_sec;
	struct httpd_counters st;
	char *scratch, *stage;
	size_t stage_len;
	char *alog; /* access log buffer (NULL: no access log) */
	size_t alog_len;
	struct kt_timer alog_timer;
	char clf_date[32];
	uint64_t clf_sec;
};

struct httpd_server {
	struct httpd_config cfg;
	unsigned port;
	char address[64];   /* "127.0.0.1:8080", "[::1]:8080" */
	int shared_lfd;     /* without --reuseport: the one listening socket, or -1 */
	atomic_uint listeners; /* workers still holding shared_lfd in their epoll set */
	int access_fd;      /* -1: no access log */
	atomic_uint conns;  /* process-wide, for --max-conns */
	struct httpd_worker *workers;
	unsigned started;   /* workers whose thread was created: joined before anything is freed */
};

#endif
