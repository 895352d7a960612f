// SPDX-License-Identifier: MIT
/*
 * net/server.c - the workers: their loop, their shutdown, starting and
 * stopping the server (see server.h).
 *
 * A turn of a worker's loop: kt_epoll_wait() (which also runs the worker's
 * due timers), then every I/O event, then the connections closed during the
 * turn are freed. Frees wait for the end of the turn because a timer
 * callback may close a connection whose event is still in this turn's epoll
 * array, whichever order the library runs timers and returns events in.
 *
 * Expired keep-alive connections are closed after a turn's events (so a
 * connection that spoke meanwhile is re-slotted, not closed), in turns of
 * at most --expire-budget microseconds, paced over --expire-spread
 * milliseconds from the second they fell due; while the pace allows a
 * close, the loop polls without blocking (net/slots.h, "Draining").
 */
#include "net/server.h"

#include <errno.h>
#include <jemalloc/jemalloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net/accept.h"
#include "net/conn.h"
#include "net/core.h"
#include "net/log.h"
#include "net/request.h"
#include "net/stats.h"

/* How many events ahead the loop prefetches a connection's timer (the
 * distance kabench's prefetch rows measure best: --prefetch-distance). */
#define PREFETCH_AHEAD 4

#define MAX_EVENTS 256
/*
 * Timer callbacks per kt_base_run() at most: a bucket of due per-connection
 * deadlines (a head-deadline storm) must not hold the worker's I/O for all
 * of them. A lower limit adds turns, a higher one lengthens each; 128 gave
 * an active client the lowest worst latency in storm.sh's head-deadline
 * storm (BENCHMARKS.md, "httpd's run limit").
 */
#define HTTPD_RUN_LIMIT 128u

/* ---- shutdown ---------------------------------------------------------- */

static void on_drain_deadline(struct kt_timer *t)
{
	struct httpd_worker *w = kt_container_of(t, struct httpd_worker, drain_deadline);

	while (!dlist_empty(&w->conns))
		httpd_conn_close(dlist_entry(w->conns.next, struct httpd_conn, link), R_SHUTDOWN);
}

/*
 * Stop accepting; close idle connections now. A busy connection finishes:
 * the response being written is written, the next one (pipelined requests
 * are answered in order) carries Connection: close, and the connection then
 * closes politely (net/conn.h, lingering close), so the client's stream
 * ends on a response boundary with a FIN, never a reset. Whatever is left
 * when the drain deadline passes is closed.
 */
static void begin_shutdown(struct httpd_worker *w)
{
	const struct httpd_config *cfg = &w->srv->cfg;
	struct dlist *pos, *tmp;
	uint64_t grace = cfg->write_timeout.ms;

	w->stopping = true;
	httpd_accept_stop(w);
	dlist_for_each_safe(pos, tmp, &w->conns) {
		struct httpd_conn *c = dlist_entry(pos, struct httpd_conn, link);

		if (!httpd_request_busy(c))
			httpd_conn_close(c, R_SHUTDOWN);
	}
	if (grace < cfg->header_timeout.ms)
		grace = cfg->header_timeout.ms;
	if (grace < cfg->body_timeout.ms)
		grace = cfg->body_timeout.ms;
	kt_timer_arm(&w->drain_deadline, KT_MILLIS(grace ? grace : 1000u));
}

/* ---- the worker loop --------------------------------------------------- */

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One drain turn, its wall and CPU time counted for /stats (two clock
 * reads each per turn, never per close). */
static void timed_drain(struct httpd_worker *w)
{
	uint64_t wall = clock_ns(CLOCK_MONOTONIC), cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	if (!slot_drain(&w->ring))
		return;
	wall = clock_ns(CLOCK_MONOTONIC) - wall;
	w->drain_wall_ns += wall;
	w->drain_cpu_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
	if (wall > w->drain_wall_max_ns)
		w->drain_wall_max_ns = wall;
}

static void *worker_main(void *arg)
{
	struct httpd_worker *w = arg;
	struct epoll_event ev[MAX_EVENTS];

	kt_base_set_current(w->base);
	httpd_accept_enable(w, true);
	for (;;) {
		uint64_t polls = w->ep.wakeups;
		int n;

		if (w->stopping && dlist_empty(&w->conns))
			break;
		/* Closes the pace allows now are left: make this wait a poll (the
		 * wake is ours). Otherwise the ring's pace timer ends the wait. */
		if (w->ring_on && slot_drain_ready(&w->ring))
			kt_epoll_wake(&w->ep);
		n = kt_epoll_wait(&w->ep, ev, MAX_EVENTS);
		if (n < 0) {
			httpd_log_error("error", "worker %u: epoll_wait: %s", w->id, strerror(-n));
			break;
		}
		if (!w->stopping && atomic_load(&w->stop_requested))
			begin_shutdown(w);
		for (int i = 0; i < n; i++) {
			struct httpd_conn *c;

			/*
			 * The connection PREFETCH_AHEAD events ahead: its flags
			 * and read timer (one node straddling the struct's first
			 * two lines) are read and re-armed when its turn comes;
			 * start those misses now. A hint: a connection freed by
			 * then is not read, only its address prefetched (frees
			 * wait for the end of the turn anyway).
			 */
			if (i + PREFETCH_AHEAD < n && ev[i + PREFETCH_AHEAD].data.u64 != HTTPD_LISTEN_TAG)
				kt_timer_prefetch(&((struct httpd_conn *)ev[i + PREFETCH_AHEAD].data.ptr)->read_timer);
			if (ev[i].data.u64 == HTTPD_LISTEN_TAG) {
				if (!w->stopping)
					httpd_accept(w);
				continue;
			}
			c = ev[i].data.ptr;
			if (c->flags & C_DEAD)
				continue;
			httpd_request_on_event(c, ev[i].events);
		}
		/* Connections other workers handed over at --max-conns. */
		httpd_accept_handoffs(w);
		/* One drain turn per turn that polled I/O: a turn that only ran
		 * callbacks returned without looking at the sockets. */
		if (w->ring_on && w->ep.wakeups != polls && slot_draining(&w->ring))
			timed_drain(w);
		httpd_conn_free_closed(w);
		httpd_stats_publish(w);
		/* What other workers at --max-conns may hand over: its idle
		 * keep-alive connections, as many as its ring holds (busy ones
		 * too: a hint, rechecked by the reclaim). */
		atomic_store_explicit(&w->idle_hint, w->ring_on && !w->stopping ? slot_count(&w->ring) : 0,
				      memory_order_relaxed);
	}
	atomic_store_explicit(&w->idle_hint, 0, memory_order_relaxed);
	httpd_accept_handoff_close(w);
	httpd_conn_free_closed(w);
	httpd_access_log_flush(w);
	httpd_stats_publish(w);
	return NULL;
}

/* ---- start and stop ---------------------------------------------------- */

static int worker_init(struct httpd_server *s, struct httpd_worker *w, unsigned id)
{
	struct kt_base_config bc = {s->cfg.resolution_ms, KT_CLOCK_MONOTONIC, 0};
	size_t sz = sizeof(w->arena);
	int e;

	w->srv = s;
	w->id = id;
	w->lfd = -1;
	pthread_mutex_init(&w->handoff_lock, NULL);
	dlist_init(&w->conns);
	dlist_init(&w->closed);
	if (mallctl("arenas.create", &w->arena, &sz, NULL, 0) != 0)
		w->arena = 0;
	w->base = kt_base_new(&bc);
	if (!w->base)
		return errno;
	w->scratch = malloc(HTTPD_SCRATCH_SIZE);
	w->stage = malloc(HTTPD_STAGE_SIZE);
	if (!w->scratch || !w->stage)
		return ENOMEM;
	/* A burst of per-connection deadlines (10,000 silent connections'
	 * header deadlines share wheel buckets) fires over several turns, the
	 * I/O polled between them. */
	kt_base_set_run_limit(w->base, HTTPD_RUN_LIMIT, 0);
	if (s->cfg.count_timer_ops)
		kt_base_set_op_counting(w->base, 1);
	e = kt_epoll_init(&w->ep, w->base);
	if (e != 0)
		return -e;
	if (s->cfg.keepalive.s) {
		e = slot_ring_init(&w->ring, w->base, s->cfg.keepalive, httpd_request_keepalive_expired);
		if (e != 0)
			return -e;
		slot_ring_set_batch(&w->ring, s->cfg.expire_batch);
		slot_ring_set_budget(&w->ring, s->cfg.expire_budget_us, NULL);
		slot_ring_set_spread(&w->ring, s->cfg.expire_spread_ms, s->cfg.expire_burst);
		w->ring_on = true;
	}
	httpd_accept_init(w);
	kt_timer_setup(&w->drain_deadline, w->base, on_drain_deadline, 0);
	return httpd_access_log_init(w) == 0 ? 0 : ENOMEM;
}

static void worker_destroy(struct httpd_worker *w)
{
	if (!w->srv)
		return; /* never initialized */
	/* A worker that never ran its loop may hold handed-over connections. */
	for (unsigned i = 0; i < w->handoff_len; i++)
		close(w->handoff[i]);
	pthread_mutex_destroy(&w->handoff_lock);
	if (w->ring_on)
		slot_ring_destroy(&w->ring);
	if (w->lfd >= 0 && w->lfd != w->srv->shared_lfd)
		close(w->lfd);
	if (w->base) {
		kt_epoll_close(&w->ep);
		kt_base_free(w->base);
	}
	httpd_access_log_destroy(w);
	free(w->scratch);
	free(w->stage);
}

/*
 * Ask every started worker to shut down, then join them all. Until the last
 * has returned, a worker's turn may read anything of the server, its own
 * base and the other workers' queues: nothing may be freed before this.
 */
static void stop_workers(struct httpd_server *s)
{
	for (unsigned i = 0; i < s->started; i++) {
		atomic_store(&s->workers[i].stop_requested, true);
		kt_epoll_wake(&s->workers[i].ep);
	}
	for (unsigned i = 0; i < s->started; i++)
		pthread_join(s->workers[i].thread, NULL);
	s->started = 0;
}

static void server_free(struct httpd_server *s)
{
	stop_workers(s); /* those a failed start got going (after httpd_server_stop(): none) */
	for (unsigned i = 0; i < s->cfg.workers; i++)
		worker_destroy(&s->workers[i]);
	/* Left open if a worker never started (or never stopped) accepting. */
	if (s->shared_lfd >= 0 && atomic_load(&s->listeners))
		close(s->shared_lfd);
	if (s->access_fd >= 0)
		close(s->access_fd);
	free(s->workers);
	free(s);
}

/* Why the listening socket could not be had, on the error log. */
static void listen_failed(const struct httpd_config *cfg, unsigned port, int err)
{
	if (err == EADDRINUSE)
		httpd_log_error("error", "cannot listen on %s port %u: address already in use%s", cfg->bind_addr,
				port, cfg->reuseport ? "" : " (another server holds it; --reuseport shares a port)");
	else
		httpd_log_error("error", "cannot listen on %s port %u: %s", cfg->bind_addr, port, strerror(err));
}

struct httpd_server *httpd_server_start(const struct httpd_config *cfg)
{
	struct httpd_server *s;
	unsigned port = cfg->port;
	int e;

	if (!cfg->workers || !cfg->bind_addr) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		goto nomem;
	s->cfg = *cfg;
	s->shared_lfd = -1;
	s->access_fd = -1;
	s->workers = calloc(cfg->workers, sizeof(*s->workers));
	if (!s->workers) {
		free(s);
		goto nomem;
	}
	if (cfg->access_log) {
		s->access_fd = httpd_access_log_open(cfg->access_log);
		if (s->access_fd < 0) {
			e = errno;
			httpd_log_error("error", "cannot open the access log %s: %s", cfg->access_log, strerror(e));
			goto fail;
		}
	}
	if (!cfg->reuseport) {
		s->shared_lfd = httpd_listen(cfg, port, s->address, sizeof(s->address), &port);
		if (s->shared_lfd < 0) {
			e = errno;
			listen_failed(cfg, cfg->port, e);
			goto fail;
		}
		atomic_store(&s->listeners, cfg->workers);
	}
	for (unsigned i = 0; i < cfg->workers; i++) {
		struct httpd_worker *w = &s->workers[i];

		e = worker_init(s, w, i);
		if (e != 0) {
			httpd_log_error("error", "cannot set up worker %u of %u: %s", i, cfg->workers, strerror(e));
			goto fail;
		}
		if (!cfg->reuseport) {
			w->lfd = s->shared_lfd;
			continue;
		}
		/* Port 0: the first socket picks, the others share its port. */
		w->lfd = httpd_listen(cfg, port, i ? NULL : s->address, sizeof(s->address), &port);
		if (w->lfd < 0) {
			e = errno;
			listen_failed(cfg, i ? port : cfg->port, e);
			goto fail;
		}
	}
	s->port = port;
	for (unsigned i = 0; i < cfg->workers; i++) {
		/* pthread_create() returns its error; errno is not set. */
		e = pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i]);
		if (e != 0) {
			httpd_log_error("error", "cannot start worker %u of %u: %s%s", i, cfg->workers, strerror(e),
					e == EAGAIN ? " (a limit on threads: ulimit -u, kernel.threads-max)" : "");
			goto fail; /* stops and joins the i started, then frees */
		}
		s->started = i + 1;
	}
	return s;
nomem:
	httpd_log_error("error", "cannot start: %s", strerror(ENOMEM));
	errno = ENOMEM;
	return NULL;
fail:
	server_free(s);
	errno = e;
	return NULL;
}

unsigned httpd_server_port(const struct httpd_server *s) { return s->port; }

const char *httpd_server_address(const struct httpd_server *s) { return s->address; }

int httpd_server_reopen_logs(struct httpd_server *s)
{
	if (s->access_fd < 0)
		return 0;
	return httpd_access_log_reopen(s->access_fd, s->cfg.access_log);
}

void httpd_server_stop(struct httpd_server *s) { stop_workers(s); }

void httpd_server_free(struct httpd_server *s)
{
	if (s)
		server_free(s);
}
