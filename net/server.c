// SPDX-License-Identifier: MIT
/*
 * net/server.c - the worker threads, connections and HTTP responses.
 *
 * Timers per connection, all embedded (no allocation per timer):
 * - header_timer: the header-read deadline. Armed at accept (silent clients)
 *   and at the first byte of each later request; deleted when the head is
 *   complete. Expiry: 408 if any bytes came, then close (slowloris).
 * - write_timer: armed when a write would block, pushed back on every byte
 *   of progress (a re-arm that usually stays in its bucket), deleted when the
 *   output drains. Expiry: close (a client that stopped reading).
 * - ka: the keep-alive node in the worker's one-second slot ring, touched
 *   (a store) on every response.
 *
 * Memory: a connection is about 200 bytes from the worker's jemalloc arena.
 * Input is read into a per-worker scratch buffer; only a connection holding
 * a partial request or unsent output gets a buffer of its own, so an idle
 * keep-alive connection costs its struct and nothing else.
 *
 * Frees are deferred to the end of the loop turn: a timer callback may close
 * a connection whose event is still in this turn's epoll array.
 */
#include "net/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jemalloc/jemalloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ktimer/epoll.h>

#include "net/http.h"
#include "net/slots.h"

#define SCRATCH_SIZE (64u * 1024u)
#define STAGE_SIZE (64u * 1024u)
#define MAX_EVENTS 256
#define ACCEPT_RETRY_MS 100u
#define LISTEN_TAG UINT64_C(0)

enum {
	C_CLOSE_AFTER = 1u << 0, /* close once the output has drained */
	C_PEER_EOF = 1u << 1,    /* the client half-closed */
	C_DEAD = 1u << 2,        /* closed; freed at the end of the turn */
	C_GOT_BYTES = 1u << 3,   /* bytes of the current head have arrived */
	C_BAD = 1u << 4,         /* answered with an error status */
};

/* Each closed connection counts under exactly one reason. */
enum close_reason { R_KEEPALIVE, R_HEADER, R_WRITE, R_PEER, R_BAD, R_SHUTDOWN, R_ANSWERED, R_COUNT };

struct worker;

struct conn {
	int fd;
	uint32_t flags;
	struct worker *w;
	struct conn *next, *prev; /* the worker's list of open connections */
	struct kt_timer header_timer;
	struct kt_timer write_timer;
	struct kt_slot_node ka;
	struct kt_http_parser parser;
	char *in; /* leftover input: a partial head or pipelined requests */
	uint32_t in_len;
	char *out; /* output the socket would not take yet */
	uint32_t out_len, out_off;
	uint64_t body_left; /* request body bytes still to skip */
};

struct worker_stats {
	_Atomic uint64_t open, accepted, requests, closed[R_COUNT], rejected, accept_pauses;
	_Atomic uint64_t wheel_links, wheel_unlinks, same_bucket, timers_fired, wakeups;
	_Atomic uint64_t ring_touches, ring_moves, ring_wakeups, arena_allocated;
};

struct worker {
	struct kt_server *srv;
	unsigned id;
	pthread_t thread;
	int lfd;
	bool accepting, stopping;
	atomic_bool stop_requested;
	unsigned arena;
	struct kt_base *base;
	struct kt_epoll ep;
	struct kt_slot_ring ring;
	bool ring_on;
	struct kt_timer accept_retry;
	struct kt_timer drain_deadline;
	struct conn *conns; /* open connections (circular list head or NULL) */
	struct conn *zombies;
	size_t open;
	char date[40];
	uint64_t date_sec;
	struct worker_stats st;
	char *scratch, *stage;
	size_t stage_len;
};

struct kt_server {
	struct kt_server_config cfg;
	unsigned port;
	atomic_uint conns; /* process-wide, for --max-conns */
	struct worker *workers;
};

static const char kBody[] = "Hello from ktimer\n";

/* ---- small helpers ----------------------------------------------------- */

static void count(_Atomic uint64_t *c) { atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed); }

static void set_stat(_Atomic uint64_t *c, uint64_t v) { atomic_store_explicit(c, v, memory_order_relaxed); }

static uint64_t get_stat(_Atomic uint64_t *c) { return atomic_load_explicit(c, memory_order_relaxed); }

static void *conn_alloc(struct worker *w, size_t n)
{
	return mallocx(n, MALLOCX_ARENA(w->arena) | MALLOCX_TCACHE_NONE);
}

static void conn_free_mem(void *p)
{
	if (p)
		dallocx(p, MALLOCX_TCACHE_NONE);
}

static void refresh_date(struct worker *w)
{
	uint64_t sec = kt_base_system_time(w->base) / 1000u;
	time_t t;
	struct tm tm;

	if (sec == w->date_sec)
		return; /* formatted once per second per worker, not per request */
	w->date_sec = sec;
	t = (time_t)sec;
	gmtime_r(&t, &tm);
	strftime(w->date, sizeof(w->date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* ---- connection lifecycle ---------------------------------------------- */

static void conn_close(struct conn *c, enum close_reason why)
{
	struct worker *w = c->w;

	if (c->flags & C_DEAD)
		return;
	c->flags |= C_DEAD;
	kt_timer_delete(&c->header_timer);
	kt_timer_delete(&c->write_timer);
	if (w->ring_on)
		kt_slot_remove(&w->ring, &c->ka);
	close(c->fd); /* also removes it from the epoll set */
	c->fd = -1;
	/* Unlink from the open list, queue for freeing at the end of the turn. */
	if (c->next == c) {
		w->conns = NULL;
	} else {
		c->prev->next = c->next;
		c->next->prev = c->prev;
		if (w->conns == c)
			w->conns = c->next;
	}
	c->next = w->zombies;
	w->zombies = c;
	w->open--;
	atomic_fetch_sub_explicit(&w->srv->conns, 1, memory_order_relaxed);
	count(&w->st.closed[why]);
	set_stat(&w->st.open, w->open);
}

/* The response with Connection: close is fully written: close, and say why. */
static void close_answered(struct conn *c)
{
	enum close_reason why = R_ANSWERED;

	if (c->flags & C_BAD)
		why = R_BAD;
	else if (c->flags & C_PEER_EOF)
		why = R_PEER;
	else if (c->w->stopping)
		why = R_SHUTDOWN;
	conn_close(c, why);
}

static void free_zombies(struct worker *w)
{
	while (w->zombies) {
		struct conn *c = w->zombies;

		w->zombies = c->next;
		conn_free_mem(c->in);
		conn_free_mem(c->out);
		conn_free_mem(c);
	}
}

/* Best effort, for a connection being closed: never blocks, never buffers. */
static void send_and_forget(int fd, int status)
{
	char buf[256];
	int n = snprintf(buf, sizeof(buf),
			 "HTTP/1.1 %d %s\r\nServer: ktimer\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
			 status, kt_http_reason(status));
	ssize_t r = send(fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);

	(void)r;
}

static void on_header_timeout(struct kt_timer *t)
{
	struct conn *c = kt_container_of(t, struct conn, header_timer);

	if (c->flags & C_GOT_BYTES)
		send_and_forget(c->fd, 408);
	conn_close(c, R_HEADER);
}

static void on_write_timeout(struct kt_timer *t)
{
	struct conn *c = kt_container_of(t, struct conn, write_timer);

	conn_close(c, R_WRITE);
}

static int conn_busy(const struct conn *c)
{
	return c->out_len || c->in_len || c->body_left || kt_timer_pending(&c->header_timer);
}

static int on_keepalive_expired(struct kt_slot_ring *ring, struct kt_slot_node *node)
{
	struct conn *c = kt_container_of(node, struct conn, ka);

	(void)ring;
	if (conn_busy(c))
		return 1; /* mid-request or writing: its own deadlines govern it */
	conn_close(c, R_KEEPALIVE);
	return 0;
}

/* ---- output ------------------------------------------------------------ */

static int append_out(struct conn *c, const char *p, size_t n);

static void stage_flush(struct worker *w, struct conn *c)
{
	size_t off = 0;

	while (off < w->stage_len && !c->out_len) {
		ssize_t r = send(c->fd, w->stage + off, w->stage_len - off, MSG_NOSIGNAL);

		if (r > 0) {
			off += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		w->stage_len = 0;
		conn_close(c, R_PEER);
		return;
	}
	if (off < w->stage_len) {
		/* The socket is full: keep the rest, and start the write deadline. */
		if (append_out(c, w->stage + off, w->stage_len - off) < 0) {
			w->stage_len = 0;
			conn_close(c, R_PEER);
			return;
		}
		kt_deadline_arm(&c->write_timer, c->w->srv->cfg.write_timeout);
	}
	w->stage_len = 0;
}

static int append_out(struct conn *c, const char *p, size_t n)
{
	size_t live = c->out_len - c->out_off;
	char *buf = conn_alloc(c->w, live + n);

	if (!buf)
		return -1;
	if (live)
		memcpy(buf, c->out + c->out_off, live);
	memcpy(buf + live, p, n);
	conn_free_mem(c->out);
	c->out = buf;
	c->out_len = (uint32_t)(live + n);
	c->out_off = 0;
	return 0;
}

/* Write pending output. Returns 1 when drained, 0 if still blocked. */
static int flush_out(struct conn *c)
{
	bool progress = false;

	while (c->out_off < c->out_len) {
		ssize_t r = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

		if (r > 0) {
			c->out_off += (uint32_t)r;
			progress = true;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (progress) /* the client reads: push the deadline back */
				kt_deadline_arm(&c->write_timer, c->w->srv->cfg.write_timeout);
			return 0;
		}
		conn_close(c, R_PEER);
		return 0;
	}
	kt_timer_delete(&c->write_timer);
	conn_free_mem(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	return 1;
}

/* Queue bytes for @c: into the worker's stage, or behind blocked output. */
static void emit(struct conn *c, const char *p, size_t n)
{
	struct worker *w = c->w;

	if (c->out_len) {
		if (append_out(c, p, n) < 0)
			conn_close(c, R_PEER);
		return;
	}
	if (w->stage_len + n > STAGE_SIZE)
		stage_flush(w, c);
	if (c->flags & C_DEAD)
		return;
	if (c->out_len || n > STAGE_SIZE) {
		if (append_out(c, p, n) < 0)
			conn_close(c, R_PEER);
		return;
	}
	memcpy(w->stage + w->stage_len, p, n);
	w->stage_len += n;
}

static size_t stats_json(struct kt_server *s, char *buf, size_t cap);

static void respond(struct conn *c, int status, const char *ctype, const char *body, size_t body_len,
		    bool head_only, bool keep, const char *extra)
{
	struct worker *w = c->w;
	char hdr[512];
	int n;

	refresh_date(w);
	n = snprintf(hdr, sizeof(hdr),
		     "HTTP/1.1 %d %s\r\nServer: ktimer\r\nDate: %s\r\nContent-Type: %s\r\n"
		     "Content-Length: %zu\r\n%sConnection: %s\r\n\r\n",
		     status, kt_http_reason(status), w->date, ctype, body_len, extra ? extra : "",
		     keep ? "keep-alive" : "close");
	emit(c, hdr, (size_t)n);
	if (!head_only && body_len && !(c->flags & C_DEAD))
		emit(c, body, body_len);
	if (!keep)
		c->flags |= C_CLOSE_AFTER;
	else if (w->ring_on)
		kt_slot_touch(&w->ring, &c->ka); /* keep-alive: a store, usually */
}

static void respond_error(struct conn *c, int status)
{
	char body[64];
	int n = snprintf(body, sizeof(body), "%d %s\n", status, kt_http_reason(status));

	c->flags |= C_BAD; /* counted when the connection closes */
	respond(c, status, "text/plain", body, (size_t)n, false, false,
		status == 405 ? "Allow: GET, HEAD\r\n" : NULL);
}

static void handle_request(struct conn *c, const struct kt_http_request *req)
{
	struct worker *w = c->w;
	bool keep = req->keep_alive && w->ring_on && !w->stopping;
	bool head = req->method == KT_HTTP_HEAD;

	count(&w->st.requests);
	if (req->method == KT_HTTP_OTHER) {
		respond_error(c, 405);
		return;
	}
	if (req->target_len == 1 && req->target[0] == '/') {
		respond(c, 200, "text/plain", kBody, sizeof(kBody) - 1, head, keep, NULL);
	} else if (req->target_len == 6 && memcmp(req->target, "/stats", 6) == 0) {
		/* About 350 bytes per worker: size the buffer from the worker count. */
		size_t cap = 1024 + 512 * (size_t)w->srv->cfg.workers;
		char *body = malloc(cap);

		if (!body) {
			respond_error(c, 503);
			return;
		}
		respond(c, 200, "application/json", body, stats_json(w->srv, body, cap), head, keep, NULL);
		free(body);
	} else {
		static const char nf[] = "404 Not Found\n";

		respond(c, 404, "text/plain", nf, sizeof(nf) - 1, head, keep, NULL);
	}
}

/* ---- input ------------------------------------------------------------- */

/* Parse and answer every complete request in buf[0..len); keep the rest. */
static void process(struct conn *c, char *buf, size_t len)
{
	struct worker *w = c->w;
	size_t off = 0;

	while (off < len && !(c->flags & (C_DEAD | C_CLOSE_AFTER)) && !c->out_len) {
		struct kt_http_request req;
		int r;

		if (c->body_left) {
			size_t skip = len - off < c->body_left ? len - off : (size_t)c->body_left;

			off += skip;
			c->body_left -= skip;
			continue;
		}
		if (!(c->flags & C_GOT_BYTES)) {
			/* First byte of a new request: its header deadline starts, unless
			 * one runs already (a new connection's, counted from accept: a
			 * slow first byte must not buy a fresh deadline). */
			c->flags |= C_GOT_BYTES;
			if (!kt_timer_pending(&c->header_timer))
				kt_deadline_arm(&c->header_timer, w->srv->cfg.header_timeout);
		}
		r = kt_http_parse(&c->parser, buf + off, len - off, &req);
		if (r == 0)
			break;
		kt_http_parser_reset(&c->parser);
		kt_timer_delete(&c->header_timer);
		c->flags &= ~C_GOT_BYTES;
		if (r < 0) {
			respond_error(c, -r);
			off = len; /* the rest of the stream cannot be trusted */
			break;
		}
		off += req.head_len;
		c->body_left = req.content_length;
		handle_request(c, &req);
	}
	if (c->flags & C_DEAD)
		return;
	if (w->stage_len)
		stage_flush(w, c);
	if (c->flags & C_DEAD)
		return;
	/* Keep what was not consumed (bounded by the head limit + one read). */
	conn_free_mem(c->in);
	c->in = NULL;
	c->in_len = 0;
	if (off < len && !(c->flags & C_CLOSE_AFTER)) {
		c->in = conn_alloc(w, len - off);
		if (!c->in) {
			conn_close(c, R_PEER);
			return;
		}
		memcpy(c->in, buf + off, len - off);
		c->in_len = (uint32_t)(len - off);
	}
	if ((c->flags & C_CLOSE_AFTER) && !c->out_len)
		close_answered(c);
}

static void on_readable(struct conn *c)
{
	struct worker *w = c->w;

	for (;;) {
		size_t have = c->in_len;
		ssize_t r;

		if (c->flags & (C_DEAD | C_CLOSE_AFTER) || c->out_len)
			return; /* back-pressure: resume when the output drains */
		if (have)
			memcpy(w->scratch, c->in, have);
		r = recv(c->fd, w->scratch + have, SCRATCH_SIZE - have, 0);
		if (r > 0) {
			process(c, w->scratch, have + (size_t)r);
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		/* EOF (a half-close: answer what is complete, then close) or error. */
		c->flags |= C_PEER_EOF;
		if (r == 0 && have)
			process(c, w->scratch, have);
		if (!(c->flags & C_DEAD) && !c->out_len)
			conn_close(c, R_PEER);
		else if (!(c->flags & C_DEAD))
			c->flags |= C_CLOSE_AFTER;
		return;
	}
}

static void on_writable(struct conn *c)
{
	if (!c->out_len || !flush_out(c))
		return;
	if (c->flags & C_CLOSE_AFTER) {
		close_answered(c);
		return;
	}
	/* Drained: answer what was waiting, then read what arrived meanwhile. */
	if (c->in_len) {
		char *in = c->in;
		size_t n = c->in_len;

		memcpy(c->w->scratch, in, n);
		process(c, c->w->scratch, n);
	}
	on_readable(c);
}

/* ---- accepting --------------------------------------------------------- */

static void listener_enable(struct worker *w, bool on)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = LISTEN_TAG};

	if (on == w->accepting || w->lfd < 0)
		return;
	epoll_ctl(w->ep.epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, w->lfd, &ev);
	w->accepting = on;
}

static void on_accept_retry(struct kt_timer *t)
{
	struct worker *w = kt_container_of(t, struct worker, accept_retry);

	if (!w->stopping)
		listener_enable(w, true);
}

static void on_accept(struct worker *w)
{
	struct kt_server *s = w->srv;

	for (;;) {
		int fd = accept4(w->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct epoll_event ev;
		struct conn *c;
		int one = 1;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				/* Out of descriptors: keep serving the open ones, stop
				 * accepting for a moment instead of spinning on EMFILE. */
				listener_enable(w, false);
				kt_timer_arm(&w->accept_retry, KT_MILLIS(ACCEPT_RETRY_MS));
				count(&w->st.accept_pauses);
			}
			return;
		}
		if (s->cfg.max_conns && atomic_fetch_add(&s->conns, 1) >= s->cfg.max_conns) {
			atomic_fetch_sub(&s->conns, 1);
			send_and_forget(fd, 503);
			close(fd);
			count(&w->st.rejected);
			continue;
		}
		if (!s->cfg.max_conns)
			atomic_fetch_add(&s->conns, 1);
		c = conn_alloc(w, sizeof(*c));
		if (!c) {
			atomic_fetch_sub(&s->conns, 1);
			close(fd);
			continue;
		}
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		c->w = w;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		kt_timer_setup(&c->header_timer, w->base, on_header_timeout, 0);
		kt_timer_setup(&c->write_timer, w->base, on_write_timeout, 0);
		ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
		ev.data.ptr = c;
		if (epoll_ctl(w->ep.epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			atomic_fetch_sub(&s->conns, 1);
			close(fd);
			conn_free_mem(c);
			continue;
		}
		if (w->conns) {
			c->next = w->conns;
			c->prev = w->conns->prev;
			w->conns->prev->next = c;
			w->conns->prev = c;
		} else {
			c->next = c->prev = c;
			w->conns = c;
		}
		w->open++;
		count(&w->st.accepted);
		set_stat(&w->st.open, w->open);
		/* A client that connects and says nothing meets the header deadline. */
		kt_deadline_arm(&c->header_timer, s->cfg.header_timeout);
	}
}

/* ---- shutdown ---------------------------------------------------------- */

static void on_drain_deadline(struct kt_timer *t)
{
	struct worker *w = kt_container_of(t, struct worker, drain_deadline);

	while (w->conns)
		conn_close(w->conns, R_SHUTDOWN);
}

static void begin_shutdown(struct worker *w)
{
	struct conn *c, *next;
	size_t n = w->open;
	uint64_t grace = w->srv->cfg.write_timeout.ms;

	w->stopping = true;
	listener_enable(w, false);
	if (w->lfd >= 0) {
		close(w->lfd);
		w->lfd = -1;
	}
	/* Idle connections close now; those mid-request or mid-response finish
	 * (their responses carry Connection: close). */
	for (c = w->conns; n-- > 0 && c; c = next) {
		next = c->next;
		if (!conn_busy(c))
			conn_close(c, R_SHUTDOWN);
		else if (c->out_len)
			c->flags |= C_CLOSE_AFTER; /* mid-response: close once written */
	}
	if (grace < w->srv->cfg.header_timeout.ms)
		grace = w->srv->cfg.header_timeout.ms;
	kt_timer_arm(&w->drain_deadline, KT_MILLIS(grace ? grace : 1000u));
}

/* ---- the worker loop --------------------------------------------------- */

static void publish_stats(struct worker *w)
{
	struct kt_base_stats bs;

	kt_base_get_stats(w->base, &bs);
	set_stat(&w->st.wheel_links, bs.enqueued);
	set_stat(&w->st.wheel_unlinks, bs.removed);
	set_stat(&w->st.same_bucket, bs.same_bucket);
	set_stat(&w->st.timers_fired, bs.fired);
	set_stat(&w->st.wakeups, w->ep.wakeups);
	if (w->ring_on) {
		set_stat(&w->st.ring_touches, w->ring.stats.touches);
		set_stat(&w->st.ring_moves, w->ring.stats.moves);
		set_stat(&w->st.ring_wakeups, w->ring.stats.wakeups);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event ev[MAX_EVENTS];

	kt_base_set_current(w->base);
	listener_enable(w, true);
	for (;;) {
		int n;

		if (w->stopping && !w->open)
			break;
		n = kt_epoll_wait(&w->ep, ev, MAX_EVENTS);
		if (n < 0)
			break;
		if (!w->stopping && atomic_load(&w->stop_requested))
			begin_shutdown(w);
		for (int i = 0; i < n; i++) {
			struct conn *c;

			if (ev[i].data.u64 == LISTEN_TAG) {
				if (!w->stopping)
					on_accept(w);
				continue;
			}
			c = ev[i].data.ptr;
			if (c->flags & C_DEAD)
				continue;
			if (ev[i].events & EPOLLOUT)
				on_writable(c);
			if (!(c->flags & C_DEAD) && (ev[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
				on_readable(c);
		}
		free_zombies(w);
		publish_stats(w);
	}
	free_zombies(w);
	publish_stats(w);
	return NULL;
}

/* ---- stats ------------------------------------------------------------- */

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

static size_t stats_json(struct kt_server *s, char *buf, size_t cap)
{
	uint64_t tot[R_COUNT] = {0}, open = 0, accepted = 0, requests = 0, rejected = 0, pauses = 0;
	uint64_t epoch = 1;
	size_t sz = sizeof(epoch), n;

	mallctl("epoch", &epoch, &sz, &epoch, sz); /* refresh jemalloc's stats */
	for (unsigned i = 0; i < s->cfg.workers; i++) {
		struct worker_stats *st = &s->workers[i].st;

		open += get_stat(&st->open);
		accepted += get_stat(&st->accepted);
		requests += get_stat(&st->requests);
		rejected += get_stat(&st->rejected);
		pauses += get_stat(&st->accept_pauses);
		for (int r = 0; r < R_COUNT; r++)
			tot[r] += get_stat(&st->closed[r]);
	}
	n = (size_t)snprintf(buf, cap,
			     "{\"open\":%llu,\"accepted\":%llu,\"requests\":%llu,\"closed\":{\"keepalive\":%llu,"
			     "\"header_timeout\":%llu,\"write_timeout\":%llu,\"peer\":%llu,\"bad_request\":%llu,"
			     "\"shutdown\":%llu,\"answered_close\":%llu},\"rejected_max_conns\":%llu,\"accept_pauses\":%llu,"
			     "\"jemalloc\":{\"allocated\":%llu,\"resident\":%llu},\"workers\":[",
			     (unsigned long long)open, (unsigned long long)accepted, (unsigned long long)requests,
			     (unsigned long long)tot[R_KEEPALIVE], (unsigned long long)tot[R_HEADER],
			     (unsigned long long)tot[R_WRITE], (unsigned long long)tot[R_PEER],
			     (unsigned long long)tot[R_BAD], (unsigned long long)tot[R_SHUTDOWN],
			     (unsigned long long)tot[R_ANSWERED],
			     (unsigned long long)rejected, (unsigned long long)pauses,
			     (unsigned long long)je_u64("stats.allocated"), (unsigned long long)je_u64("stats.resident"));
	for (unsigned i = 0; i < s->cfg.workers && n < cap; i++) {
		struct worker *w = &s->workers[i];
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
				      "\"arena_allocated\":%llu}",
				      i ? "," : "", i, (unsigned long long)get_stat(&w->st.open),
				      (unsigned long long)get_stat(&w->st.wheel_links),
				      (unsigned long long)get_stat(&w->st.wheel_unlinks),
				      (unsigned long long)get_stat(&w->st.same_bucket),
				      (unsigned long long)get_stat(&w->st.timers_fired),
				      (unsigned long long)get_stat(&w->st.wakeups),
				      (unsigned long long)get_stat(&w->st.ring_touches),
				      (unsigned long long)get_stat(&w->st.ring_moves),
				      (unsigned long long)get_stat(&w->st.ring_wakeups), (unsigned long long)arena_bytes);
	}
	if (n < cap)
		n += (size_t)snprintf(buf + n, cap - n, "]}\n");
	return n < cap ? n : cap - 1;
}

/* ---- start and stop ---------------------------------------------------- */

static int make_listener(const struct kt_server_config *cfg, unsigned port, unsigned *bound)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, cfg->bind_addr, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		len = sizeof(*sin);
	} else if (inet_pton(AF_INET6, cfg->bind_addr, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		len = sizeof(*sin6);
	} else {
		errno = EINVAL;
		return -1;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 4096) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	len = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &len);
	*bound = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					       : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return fd;
}

static int worker_init(struct kt_server *s, struct worker *w, unsigned id)
{
	struct kt_base_config bc = {s->cfg.resolution_ms, KT_CLOCK_MONOTONIC, 0};
	size_t sz = sizeof(w->arena);

	w->srv = s;
	w->id = id;
	w->lfd = -1;
	if (mallctl("arenas.create", &w->arena, &sz, NULL, 0) != 0)
		w->arena = 0;
	w->base = kt_base_new(&bc);
	w->scratch = malloc(SCRATCH_SIZE);
	w->stage = malloc(STAGE_SIZE);
	if (!w->base || !w->scratch || !w->stage)
		return -1;
	if (kt_epoll_init(&w->ep, w->base) != 0)
		return -1;
	if (s->cfg.keepalive.s) {
		if (kt_slot_ring_init(&w->ring, w->base, s->cfg.keepalive, on_keepalive_expired) != 0)
			return -1;
		w->ring_on = true;
	}
	kt_timer_setup(&w->accept_retry, w->base, on_accept_retry, 0);
	kt_timer_setup(&w->drain_deadline, w->base, on_drain_deadline, 0);
	return 0;
}

static void worker_destroy(struct worker *w)
{
	if (w->ring_on)
		kt_slot_ring_destroy(&w->ring);
	if (w->lfd >= 0)
		close(w->lfd);
	if (w->base) {
		kt_epoll_close(&w->ep);
		kt_base_free(w->base);
	}
	free(w->scratch);
	free(w->stage);
}

struct kt_server *kt_server_start(const struct kt_server_config *cfg)
{
	struct kt_server *s;
	unsigned port = cfg->port;

	if (!cfg->workers || !cfg->bind_addr) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cfg = *cfg;
	s->workers = calloc(cfg->workers, sizeof(*s->workers));
	if (!s->workers) {
		free(s);
		return NULL;
	}
	for (unsigned i = 0; i < cfg->workers; i++) {
		struct worker *w = &s->workers[i];

		if (worker_init(s, w, i) != 0)
			goto fail;
		/* Port 0: the first socket picks, the others share its port. */
		w->lfd = make_listener(cfg, port, &port);
		if (w->lfd < 0)
			goto fail;
	}
	s->port = port;
	for (unsigned i = 0; i < cfg->workers; i++) {
		if (pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i]) != 0)
			goto fail; /* (threads already started are left to the OS) */
	}
	return s;
fail:
	for (unsigned i = 0; i < cfg->workers; i++)
		worker_destroy(&s->workers[i]);
	free(s->workers);
	free(s);
	return NULL;
}

unsigned kt_server_port(const struct kt_server *s) { return s->port; }

void kt_server_stop(struct kt_server *s)
{
	for (unsigned i = 0; i < s->cfg.workers; i++) {
		atomic_store(&s->workers[i].stop_requested, true);
		kt_epoll_wake(&s->workers[i].ep);
	}
	for (unsigned i = 0; i < s->cfg.workers; i++)
		pthread_join(s->workers[i].thread, NULL);
}

void kt_server_free(struct kt_server *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->cfg.workers; i++)
		worker_destroy(&s->workers[i]);
	free(s->workers);
	free(s);
}
