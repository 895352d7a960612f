// SPDX-License-Identifier: MIT
/* net/stats.c - the server's counters and the /stats JSON (see stats.h): its
 * keys are net/counters.h's lists, written in their order by the loops
 * below. */
#include "net/stats.h"

#include <jemalloc/jemalloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *const httpd_close_reason_name[R_COUNT] = {
#define REASON_NAME(e, name) [e] = #name,
	HTTPD_CLOSE_REASONS(REASON_NAME)
#undef REASON_NAME
};

/* The counters as /stats names them, where it gives them, and their field. */
static const struct counter_key {
	const char *key;
	unsigned where; /* HTTPD_STAT_TOTAL, HTTPD_STAT_WORKER */
	size_t off;     /* in struct httpd_counters */
} counters[] = {
#define COUNTER_KEY(name, where) {#name, where, offsetof(struct httpd_counters, name)},
	HTTPD_COUNTERS(COUNTER_KEY)
#undef COUNTER_KEY
};

static const char *const jemalloc_keys[] = {
#define JEMALLOC_KEY(name) #name,
	HTTPD_JEMALLOC_STATS(JEMALLOC_KEY)
#undef JEMALLOC_KEY
};

static const char *const worker_read_keys[] = {
#define READ_KEY(name) #name,
	HTTPD_WORKER_READS(READ_KEY)
#undef READ_KEY
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

void httpd_stats_publish(struct httpd_worker *w)
{
	struct kt_base_stats bs;

	kt_base_get_stats(w->base, &bs);
	httpd_stat_set(&w->st.wheel_links, bs.enqueued);
	httpd_stat_set(&w->st.wheel_unlinks, bs.removed);
	httpd_stat_set(&w->st.rearm_same_bucket, bs.same_bucket);
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

static uint64_t counter(struct httpd_worker *w, const struct counter_key *k)
{
	return httpd_stat_get((_Atomic uint64_t *)((char *)&w->st + k->off));
}

/* HTTPD_WORKER_READS: what /stats reads per worker when it answers. */
static uint64_t worker_id(struct httpd_worker *w) { return w->id; }

static uint64_t worker_arena_allocated(struct httpd_worker *w)
{
	char name[64];
	uint64_t bytes;

	snprintf(name, sizeof(name), "stats.arenas.%u.small.allocated", w->arena);
	bytes = je_u64(name);
	snprintf(name, sizeof(name), "stats.arenas.%u.large.allocated", w->arena);
	return bytes + je_u64(name);
}

/* The JSON as it is written: n may pass cap, the text is then cut at cap - 1. */
struct json {
	char *buf;
	size_t cap, n;
	const char *sep; /* before the next member: "" first in an object, then "," */
};

static void put(struct json *j, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (j->n >= j->cap)
		return;
	va_start(ap, fmt);
	r = vsnprintf(j->buf + j->n, j->cap - j->n, fmt, ap);
	va_end(ap);
	if (r > 0)
		j->n += (size_t)r;
}

static void put_u64(struct json *j, const char *key, uint64_t v)
{
	put(j, "%s\"%s\":%llu", j->sep, key, (unsigned long long)v);
	j->sep = ",";
}

/* Opens an object member ("key":{) or an array element ({). */
static void open_object(struct json *j, const char *key)
{
	if (key)
		put(j, "%s\"%s\":{", j->sep, key);
	else
		put(j, "%s{", j->sep);
	j->sep = "";
}

static void close_object(struct json *j)
{
	put(j, "}");
	j->sep = ",";
}

/* ,"key": and 20 digits */
static size_t member_size(const char *key) { return strlen(key) + 24; }

size_t httpd_stats_size(const struct httpd_server *s)
{
	size_t top = 64, worker = 8; /* the braces, "closed", "jemalloc", "workers" */

	for (size_t i = 0; i < N_OF(counters); i++) {
		if (counters[i].where & HTTPD_STAT_TOTAL)
			top += member_size(counters[i].key);
		if (counters[i].where & HTTPD_STAT_WORKER)
			worker += member_size(counters[i].key);
	}
	for (int r = 0; r < R_COUNT; r++)
		top += member_size(httpd_close_reason_name[r]);
	for (size_t i = 0; i < N_OF(jemalloc_keys); i++)
		top += member_size(jemalloc_keys[i]);
	for (size_t i = 0; i < N_OF(worker_read_keys); i++)
		worker += member_size(worker_read_keys[i]);
	return top + worker * s->cfg.workers;
}

size_t httpd_stats_json(struct httpd_server *s, char *buf, size_t cap)
{
	struct json j = {.buf = buf, .cap = cap, .n = 0, .sep = ""};
	uint64_t epoch = 1;
	size_t sz = sizeof(epoch);

	if (cap == 0)
		return 0;
	mallctl("epoch", &epoch, &sz, &epoch, sz); /* refresh jemalloc's stats */
	open_object(&j, NULL);
	for (size_t i = 0; i < N_OF(counters); i++) {
		uint64_t sum = 0;

		if (!(counters[i].where & HTTPD_STAT_TOTAL))
			continue;
		for (unsigned w = 0; w < s->cfg.workers; w++)
			sum += counter(&s->workers[w], &counters[i]);
		put_u64(&j, counters[i].key, sum);
	}
	open_object(&j, "closed");
	for (int r = 0; r < R_COUNT; r++) {
		uint64_t sum = 0;

		for (unsigned w = 0; w < s->cfg.workers; w++)
			sum += httpd_stat_get(&s->workers[w].st.closed[r]);
		put_u64(&j, httpd_close_reason_name[r], sum);
	}
	close_object(&j);
	open_object(&j, "jemalloc");
#define JEMALLOC_STAT(name) put_u64(&j, #name, je_u64("stats." #name));
	HTTPD_JEMALLOC_STATS(JEMALLOC_STAT)
#undef JEMALLOC_STAT
	close_object(&j);
	put(&j, ",\"workers\":[");
	j.sep = "";
	for (unsigned i = 0; i < s->cfg.workers; i++) {
		struct httpd_worker *w = &s->workers[i];

		open_object(&j, NULL);
#define WORKER_READ(name) put_u64(&j, #name, worker_##name(w));
		HTTPD_WORKER_READS(WORKER_READ)
#undef WORKER_READ
		for (size_t k = 0; k < N_OF(counters); k++)
			if (counters[k].where & HTTPD_STAT_WORKER)
				put_u64(&j, counters[k].key, counter(w, &counters[k]));
		close_object(&j);
	}
	put(&j, "]}\n");
	return j.n < cap ? j.n : cap - 1;
}
