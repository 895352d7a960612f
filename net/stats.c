// SPDX-License-Identifier: MIT
/* net/stats.c - the server's counters and the /stats JSON (see stats.h). */
#include "net/stats.h"

#include <jemalloc/jemalloc.h>
#include <stdio.h>
#include <string.h>

void httpd_stats_publish(struct httpd_worker *w)
{
	struct kt_base_stats bs;

	kt_base_get_stats(w->base, &bs);
	httpd_stat_set(&w->st.wheel_links, bs.enqueued);
	httpd_stat_set(&w->st.wheel_unlinks, bs.removed);
	httpd_stat_set(&w->st.same_bucket, bs.same_bucket);
	httpd_stat_set(&w->st.timers_fired, bs.fired);
	httpd_stat_set(&w->st.wakeups, w->ep.wakeups);
	if (w->ring_on) {
		httpd_stat_set(&w->st.ring_touches, w->ring.stats.touches);
		httpd_stat_set(&w->st.ring_moves, w->ring.stats.moves);
		httpd_stat_set(&w->st.ring_wakeups, w->ring.stats.wakeups);
		httpd_stat_set(&w->st.ring_expired, w->ring.stats.expired);
		httpd_stat_set(&w->st.ring_drain_turns, w->ring.stats.drain_turns);
		httpd_stat_set(&w->st.ring_drain_max, w->ring.stats.drain_max);
		httpd_stat_set(&w->st.ring_budget_stops, w->ring.stats.budget_stops);
		httpd_stat_set(&w->st.ring_drain_wall_us, w->drain_wall_ns / 1000u);
		httpd_stat_set(&w->st.ring_drain_cpu_us, w->drain_cpu_ns / 1000u);
		httpd_stat_set(&w->st.ring_drain_wall_max_us, w->drain_wall_max_ns / 1000u);
	}
}

static uint64_t je_u64(const char *name)
{
	uint64_t v = 0;
	size_t sz = sizeof(v);
	size_t zv = 0;

	if (strstr(name, "allocated") || strstr(name, "resident")) {
		sz = sizeof(zv);
		if (mallctl(name, &zv, &sz, NULL, 0) == 0)
			v = zv;
		return v;
	}
	mallctl(name, &v, &sz, NULL, 0);
	return v;
}

size_t httpd_stats_json(struct httpd_server *s, char *buf, size_t cap)
{
	uint64_t tot[R_COUNT] = {0}, open = 0, lingering = 0, accepted = 0, requests = 0, rejected = 0, pauses = 0;
	uint64_t chunked = 0, wext = 0;
	uint64_t epoch = 1;
	size_t sz = sizeof(epoch), n;

	mallctl("epoch", &epoch, &sz, &epoch, sz); /* refresh jemalloc's stats */
	for (unsigned i = 0; i < s->cfg.workers; i++) {
		struct httpd_counters *st = &s->workers[i].st;

		open += httpd_stat_get(&st->open);
		lingering += httpd_stat_get(&st->lingering);
		accepted += httpd_stat_get(&st->accepted);
		requests += httpd_stat_get(&st->requests);
		rejected += httpd_stat_get(&st->rejected);
		pauses += httpd_stat_get(&st->accept_pauses);
		chunked += httpd_stat_get(&st->chunked);
		wext += httpd_stat_get(&st->write_extended);
		for (int r = 0; r < R_COUNT; r++)
			tot[r] += httpd_stat_get(&st->closed[r]);
	}
	n = (size_t)snprintf(buf, cap,
			     "{\"open\":%llu,\"lingering\":%llu,\"accepted\":%llu,\"requests\":%llu,\"closed\":{"
			     "\"keepalive\":%llu,\"header_timeout\":%llu,\"body_timeout\":%llu,\"write_timeout\":%llu,"
			     "\"peer\":%llu,\"bad_request\":%llu,"
			     "\"shutdown\":%llu,\"answered_close\":%llu,\"reclaimed_idle\":%llu},\"rejected_max_conns\":%llu,"
			     "\"accept_pauses\":%llu,\"chunked_bodies\":%llu,\"write_deadline_extended\":%llu,"
			     "\"jemalloc\":{\"allocated\":%llu,\"resident\":%llu},\"workers\":[",
			     (unsigned long long)open, (unsigned long long)lingering, (unsigned long long)accepted,
			     (unsigned long long)requests, (unsigned long long)tot[R_KEEPALIVE],
			     (unsigned long long)tot[R_HEADER], (unsigned long long)tot[R_BODY],
			     (unsigned long long)tot[R_WRITE], (unsigned long long)tot[R_PEER],
			     (unsigned long long)tot[R_BAD], (unsigned long long)tot[R_SHUTDOWN],
			     (unsigned long long)tot[R_ANSWERED], (unsigned long long)tot[R_RECLAIMED],
			     (unsigned long long)rejected, (unsigned long long)pauses, (unsigned long long)chunked,
			     (unsigned long long)wext,
			     (unsigned long long)je_u64("stats.allocated"), (unsigned long long)je_u64("stats.resident"));
	for (unsigned i = 0; i < s->cfg.workers && n < cap; i++) {
		struct httpd_worker *w = &s->workers[i];
		char name[64];
		uint64_t arena_bytes;

		snprintf(name, sizeof(name), "stats.arenas.%u.small.allocated", w->arena);
		arena_bytes = je_u64(name);
		snprintf(name, sizeof(name), "stats.arenas.%u.large.allocated", w->arena);
		arena_bytes += je_u64(name);
		n += (size_t)snprintf(buf + n, cap - n,
				      "%s{\"id\":%u,\"open\":%llu,\"wheel_links\":%llu,\"wheel_unlinks\":%llu,"
				      "\"rearm_same_bucket\":%llu,\"timers_fired\":%llu,\"wakeups\":%llu,"
				      "\"ring_touches\":%llu,\"ring_moves\":%llu,\"ring_wakeups\":%llu,"
				      "\"ring_expired\":%llu,\"ring_drain_turns\":%llu,\"ring_drain_max\":%llu,"
				      "\"ring_budget_stops\":%llu,\"ring_drain_wall_us\":%llu,\"ring_drain_cpu_us\":%llu,"
				      "\"ring_drain_wall_max_us\":%llu,"
				      "\"arena_allocated\":%llu}",
				      i ? "," : "", i, (unsigned long long)httpd_stat_get(&w->st.open),
				      (unsigned long long)httpd_stat_get(&w->st.wheel_links),
				      (unsigned long long)httpd_stat_get(&w->st.wheel_unlinks),
				      (unsigned long long)httpd_stat_get(&w->st.same_bucket),
				      (unsigned long long)httpd_stat_get(&w->st.timers_fired),
				      (unsigned long long)httpd_stat_get(&w->st.wakeups),
				      (unsigned long long)httpd_stat_get(&w->st.ring_touches),
				      (unsigned long long)httpd_stat_get(&w->st.ring_moves),
				      (unsigned long long)httpd_stat_get(&w->st.ring_wakeups),
				      (unsigned long long)httpd_stat_get(&w->st.ring_expired),
				      (unsigned long long)httpd_stat_get(&w->st.ring_drain_turns),
				      (unsigned long long)httpd_stat_get(&w->st.ring_drain_max),
				      (unsigned long long)httpd_stat_get(&w->st.ring_budget_stops),
				      (unsigned long long)httpd_stat_get(&w->st.ring_drain_wall_us),
				      (unsigned long long)httpd_stat_get(&w->st.ring_drain_cpu_us),
				      (unsigned long long)httpd_stat_get(&w->st.ring_drain_wall_max_us), (unsigned long long)arena_bytes);
	}
	if (n < cap)
		n += (size_t)snprintf(buf + n, cap - n, "]}\n");
	return n < cap ? n : cap - 1;
}
