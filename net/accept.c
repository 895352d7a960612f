// SPDX-License-Identifier: MIT
/* net/accept.c - listening sockets and accepting connections (see accept.h). */
#include "net/accept.h"

#include <errno.h>
#include <pthread.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/addr.h"
#include "net/conn.h"
#include "net/log.h"
#include "net/request.h"
#include "net/stats.h"

#define ACCEPT_RETRY_MS 100u
/* While out of descriptors the accept pause repeats every ACCEPT_RETRY_MS:
 * one warning per worker per this long, not ten a second. */
#define ACCEPT_WARN_INTERVAL_MS 5000u

/*
 * The 503 without lingering (past the lingering bound): read what the client
 * has already sent before closing, since unread input turns the close into a
 * reset that can destroy the 503 before the client reads it. Input still in
 * flight cannot be helped without lingering.
 */
static void refuse_now(struct httpd_worker *w, int fd)
{
	httpd_send_and_forget(w, fd, 503);
	if (shutdown(fd, SHUT_WR) == 0)
		for (int i = 0; i < 4 && recv(fd, w->scratch, HTTPD_SCRATCH_SIZE, MSG_DONTWAIT) > 0; i++)
			;
	close(fd);
}

/*
 * A place under --max-conns for a new connection. When every place is
 * taken, the worker's idle keep-alive connections give theirs up, the
 * oldest first, before a client is refused: an idle connection costs its
 * client nothing to reopen, a refusal costs the new client its request.
 * Another worker may take the place freed meanwhile: a few tries.
 */
static bool take_place(struct httpd_worker *w)
{
	struct httpd_server *s = w->srv;

	for (int tries = 0;; tries++) {
		if (atomic_fetch_add(&s->conns, 1) < s->cfg.max_conns)
			return true;
		atomic_fetch_sub(&s->conns, 1);
		if (tries == 4 || !httpd_request_reclaim_idle(w))
			return false;
	}
}

int httpd_listen(const struct httpd_config *cfg, unsigned port, char *bound, size_t cap, unsigned *bound_port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1, err;

	memset(&ss, 0, sizeof(ss));
	err = httpd_addr_resolve(cfg->bind_addr, port, &ss, &len);
	if (err) {
		httpd_log_error("error", "cannot resolve %s: %s", cfg->bind_addr,
				err == EAI_SYSTEM ? strerror(errno) : gai_strerror(err));
		errno = EADDRNOTAVAIL;
		return -1;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* SO_REUSEADDR lets a restarted server bind over TIME_WAIT
	 * connections; it never lets two sockets listen on one port. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (cfg->reuseport)
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 4096) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	len = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &len);
	*bound_port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
						    : ((struct sockaddr_in6 *)&ss)->sin6_port);
	if (bound)
		httpd_addr_format((struct sockaddr *)&ss, bound, cap);
	return fd;
}

void httpd_accept_enable(struct httpd_worker *w, bool on)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = HTTPD_LISTEN_TAG};

	if (on == w->accepting || w->lfd < 0)
		return;
	/* The shared socket wakes one worker per connection, not every one. */
	if (w->lfd == w->srv->shared_lfd)
		ev.events |= EPOLLEXCLUSIVE;
	epoll_ctl(w->ep.epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, w->lfd, &ev);
	w->accepting = on;
}

void httpd_accept_stop(struct httpd_worker *w)
{
	struct httpd_server *s = w->srv;

	if (w->lfd < 0)
		return;
	httpd_accept_enable(w, false);
	kt_timer_delete(&w->accept_retry);
	if (w->lfd != s->shared_lfd) {
		close(w->lfd);
	} else if (atomic_fetch_sub(&s->listeners, 1) == 1) {
		/* The last worker to let go: no one accepts on it any more. */
		close(s->shared_lfd);
	}
	w->lfd = -1;
}

static void on_accept_retry(struct kt_timer *t)
{
	struct httpd_worker *w = kt_container_of(t, struct httpd_worker, accept_retry);

	if (!w->stopping)
		httpd_accept_enable(w, true);
}

void httpd_accept_init(struct httpd_worker *w)
{
	kt_timer_setup(&w->accept_retry, w->base, on_accept_retry, 0);
}

/* The EMFILE warning, rate-limited: the first at once, then at most one
 * per ACCEPT_WARN_INTERVAL_MS, saying how many were left out (every pause
 * is still counted in /stats as accept_pauses). */
static void accept_warn(struct httpd_worker *w, int err)
{
	uint64_t now = kt_base_now(w->base);

	if (w->accept_warned_at && now - w->accept_warned_at < ACCEPT_WARN_INTERVAL_MS) {
		w->accept_suppressed++;
		return;
	}
	if (w->accept_suppressed)
		httpd_log_error("warn",
				"worker %u: accept: %s; pausing accepts for %u ms (%llu more since the last warning)",
				w->id, strerror(err), ACCEPT_RETRY_MS, (unsigned long long)w->accept_suppressed);
	else
		httpd_log_error("warn", "worker %u: accept: %s; pausing accepts for %u ms", w->id, strerror(err),
				ACCEPT_RETRY_MS);
	w->accept_warned_at = now ? now : 1;
	w->accept_suppressed = 0;
}

static void admit(struct httpd_worker *w, int fd, bool may_hand_off);

void httpd_accept(struct httpd_worker *w)
{
	for (;;) {
		int fd = accept4(w->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				/* Out of descriptors: keep serving the open ones, stop
				 * accepting for a moment instead of spinning on EMFILE. */
				httpd_accept_enable(w, false);
				kt_timer_arm(&w->accept_retry, KT_MILLIS(ACCEPT_RETRY_MS));
				httpd_count(&w->st.accept_pauses);
				accept_warn(w, errno);
			}
			return; /* EAGAIN: done (another worker may have taken it) */
		}
		admit(w, fd, true);
	}
}

/*
 * Hand @fd to another worker that has idle keep-alive connections, to
 * reclaim one of its own for it. Return: false if none can take it.
 */
static bool hand_off(struct httpd_worker *w, int fd)
{
	struct httpd_server *s = w->srv;

	for (unsigned k = 1; k < s->cfg.workers; k++) {
		struct httpd_worker *o = &s->workers[(w->id + k) % s->cfg.workers];
		bool taken = false;

		if (!atomic_load_explicit(&o->idle_hint, memory_order_relaxed))
			continue;
		pthread_mutex_lock(&o->handoff_lock);
		if (!o->handoff_closed && o->handoff_len < HTTPD_HANDOFF_MAX) {
			o->handoff[o->handoff_len++] = fd;
			atomic_store_explicit(&o->handoff_any, true, memory_order_release);
			taken = true;
		}
		pthread_mutex_unlock(&o->handoff_lock);
		if (taken) {
			kt_epoll_wake(&o->ep);
			return true;
		}
	}
	return false;
}

/*
 * A new connection: served if there is a place under --max-conns (an idle
 * keep-alive connection of this worker's reclaimed if need be, or of
 * another's when @may_hand_off), else 503.
 */
static void admit(struct httpd_worker *w, int fd, bool may_hand_off)
{
	struct httpd_server *s = w->srv;
	struct httpd_conn *c;

	if (s->cfg.max_conns && !take_place(w)) {
		if (may_hand_off && hand_off(w, fd))
			return;
		httpd_count(&w->st.rejected_max_conns);
		if (w->refused_lingering >= s->cfg.max_conns && w->refused_lingering >= HTTPD_REFUSED_LINGER_MIN) {
			/* Lingering is bounded too: past it, a plain close. */
			refuse_now(w, fd);
			return;
		}
		c = httpd_conn_new(w, fd, true);
		if (c)
			httpd_request_start(c); /* 503 and a lingering close */
		return;
	}
	if (!s->cfg.max_conns)
		atomic_fetch_add(&s->conns, 1);
	c = httpd_conn_new(w, fd, false);
	if (!c) {
		atomic_fetch_sub(&s->conns, 1);
		return;
	}
	httpd_request_start(c);
}

/* Take the handed-over connections out of the queue into @fds. */
static unsigned take_handoffs(struct httpd_worker *w, int *fds, bool close_queue)
{
	unsigned n;

	pthread_mutex_lock(&w->handoff_lock);
	n = w->handoff_len;
	memcpy(fds, w->handoff, n * sizeof(*fds));
	w->handoff_len = 0;
	atomic_store_explicit(&w->handoff_any, false, memory_order_relaxed);
	if (close_queue)
		w->handoff_closed = true;
	pthread_mutex_unlock(&w->handoff_lock);
	return n;
}

void httpd_accept_handoffs(struct httpd_worker *w)
{
	int fds[HTTPD_HANDOFF_MAX];
	unsigned n;

	if (!atomic_load_explicit(&w->handoff_any, memory_order_acquire))
		return;
	n = take_handoffs(w, fds, false);
	for (unsigned i = 0; i < n; i++) {
		if (w->stopping) {
			httpd_count(&w->st.rejected_max_conns);
			refuse_now(w, fds[i]);
			continue;
		}
		admit(w, fds[i], false); /* never handed on again */
	}
}

void httpd_accept_handoff_close(struct httpd_worker *w)
{
	int fds[HTTPD_HANDOFF_MAX];
	unsigned n = take_handoffs(w, fds, true);

	for (unsigned i = 0; i < n; i++) {
		httpd_count(&w->st.rejected_max_conns);
		refuse_now(w, fds[i]);
	}
}
