/* SPDX-License-Identifier: MIT */
/*
 * net/stats.h - the server's counters and GET /stats.
 *
 * Each worker owns its counters and is their only writer (a relaxed load and
 * store, no read-modify-write); /stats, answered by any worker, reads them
 * all with relaxed loads. What is counted, and each key of the JSON, is
 * net/counters.h's lists.
 */
#ifndef KTIMER_NET_STATS_H
#define KTIMER_NET_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "net/core.h"

static inline void httpd_count(_Atomic uint64_t *c)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

static inline void httpd_stat_set(_Atomic uint64_t *c, uint64_t v) { atomic_store_explicit(c, v, memory_order_relaxed); }

static inline uint64_t httpd_stat_get(_Atomic uint64_t *c) { return atomic_load_explicit(c, memory_order_relaxed); }

/* Each close reason's name: its key in /stats' "closed" object, and the
 * conn_close probe's reason_name. */
extern const char *const httpd_close_reason_name[R_COUNT];

/* Copy the base's, the epoll loop's and the ring's figures into @w's counters
 * (once per loop turn, by the worker). */
void httpd_stats_publish(struct httpd_worker *w);

/* The bytes the /stats JSON of @s's workers takes at most, its final NUL
 * included: what httpd_stats_json() needs to write it whole. */
size_t httpd_stats_size(const struct httpd_server *s);

/* The /stats JSON of every worker into @buf; its length (< @cap, truncated
 * if @cap is less than httpd_stats_size()). */
size_t httpd_stats_json(struct httpd_server *s, char *buf, size_t cap);

#endif
