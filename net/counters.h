/* SPDX-License-Identifier: MIT */
/*
 * net/counters.h - what the server counts, each list written once, as an
 * X-macro: the close reasons, the counters and what GET /stats reads when
 * it answers. Nothing else is here, so C (the server) and C++ (its tests)
 * expand the same lists:
 *
 * - net/core.h: enum httpd_close_reason and struct httpd_counters;
 * - net/stats.c: the reasons' names (httpd_close_reason_name[], which the
 *   conn_close probe passes as reason_name too) and the /stats JSON, whose
 *   keys are the names below;
 * - tests/net/httpd_lists_test.cc: GET /stats of a running server against
 *   these lists, and the lists docs/NET.md ("/stats"), docs/TRACING.md and
 *   ktimer_probes(7) (conn_close's reason names) give against /stats, each
 *   key missing or extra named.
 *
 * CONTRIBUTING.md ("A server counter", "A close reason") says what adding
 * one takes.
 */
#ifndef KTIMER_NET_COUNTERS_H
#define KTIMER_NET_COUNTERS_H

/*
 * The close reasons, X(enumerator, name): each closed connection counts
 * under exactly one, its name the key in /stats' "closed" object and the
 * conn_close probe's reason_name.
 */
#define HTTPD_CLOSE_REASONS(X)                                                         \
	X(R_KEEPALIVE, keepalive)      /* idle past --keepalive */                     \
	X(R_HEADER, header_timeout)    /* no complete head by --header-timeout */      \
	X(R_BODY, body_timeout)        /* a body stalled for --body-timeout */         \
	X(R_WRITE, write_timeout)      /* output not taken for --write-timeout */      \
	X(R_PEER, peer)                /* the client closed, or the socket failed */   \
	X(R_BAD, bad_request)          /* answered with an error status */             \
	X(R_SHUTDOWN, shutdown)        /* the server stopped */                        \
	X(R_ANSWERED, answered_close)  /* after a Connection: close response */        \
	X(R_RECLAIMED, reclaimed_idle) /* idle keep-alive, closed to make room at --max-conns */

/* Where /stats gives a counter: summed over the workers at its top level,
 * in each worker's object of "workers", or both. */
#define HTTPD_STAT_TOTAL 1u
#define HTTPD_STAT_WORKER 2u

/*
 * The counters, X(name, where): a field of struct httpd_counters (each
 * worker's, written by that worker alone) and its key in /stats.
 */
#define HTTPD_COUNTERS(X)                                                                              \
	X(open, HTTPD_STAT_TOTAL | HTTPD_STAT_WORKER) /* connections being served, not lingering */    \
	X(lingering, HTTPD_STAT_TOTAL)                /* connections in their lingering close */      \
	X(accepted, HTTPD_STAT_TOTAL)                                                                  \
	X(requests, HTTPD_STAT_TOTAL)                                                                  \
	X(rejected_max_conns, HTTPD_STAT_TOTAL)      /* refused (503) past --max-conns */              \
	X(accept_pauses, HTTPD_STAT_TOTAL)           /* listening paused on EMFILE or ENFILE */        \
	X(chunked_bodies, HTTPD_STAT_TOTAL)          /* chunked request bodies read */                 \
	X(write_deadline_extended, HTTPD_STAT_TOTAL) /* write deadlines given again to a reader */     \
	X(wheel_links, HTTPD_STAT_WORKER)            /* the worker base's kt_base_get_stats() */       \
	X(wheel_unlinks, HTTPD_STAT_WORKER)                                                            \
	X(rearm_same_bucket, HTTPD_STAT_WORKER)                                                        \
	X(timers_fired, HTTPD_STAT_WORKER)                                                             \
	X(wakeups, HTTPD_STAT_WORKER)                /* epoll waits that returned */                   \
	X(ring_touches, HTTPD_STAT_WORKER)           /* the keep-alive ring's (net/slots.h) */         \
	X(ring_moves, HTTPD_STAT_WORKER)                                                               \
	X(ring_wakeups, HTTPD_STAT_WORKER)                                                             \
	X(ring_expired, HTTPD_STAT_WORKER)                                                             \
	X(ring_drain_turns, HTTPD_STAT_WORKER)                                                         \
	X(ring_drain_max, HTTPD_STAT_WORKER)                                                           \
	X(ring_budget_stops, HTTPD_STAT_WORKER)                                                        \
	X(ring_drain_wall_us, HTTPD_STAT_WORKER)                                                       \
	X(ring_drain_cpu_us, HTTPD_STAT_WORKER)                                                        \
	X(ring_drain_wall_max_us, HTTPD_STAT_WORKER)

/*
 * What /stats reads when it answers, beside the counters, X(name):
 * jemalloc's stats.NAME, in its "jemalloc" object; and per worker,
 * net/stats.c's worker_NAME() (its number, its arena's bytes).
 */
#define HTTPD_JEMALLOC_STATS(X) X(allocated) X(resident)
#define HTTPD_WORKER_READS(X) X(id) X(arena_allocated)

#endif
