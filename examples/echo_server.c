// SPDX-License-Identifier: MIT
/*
 * examples/echo_server.c - a line echo server on epoll, with two deadlines
 * embedded in every connection.
 *
 *   echo_server [--port N] [--header-ms N] [--idle-ms N] [--kt-epoll]
 *
 * Listens on 127.0.0.1 (port 0: the kernel picks one; the server prints
 * "listening on 127.0.0.1:PORT"), greets each client with one line, then
 * echoes every line it receives. Two deadlines per connection:
 *
 *   header  the first line must be complete within --header-ms of the
 *           accept (default 5000). Partial bytes do not push it back, so a
 *           client dribbling one byte at a time (slowloris) is still cut off.
 *   idle    no byte for --idle-ms (default 10000) closes the connection;
 *           every read pushes it back - the cheap re-arm the wheel is for.
 *
 * A deadline that fires sends "timeout: header" or "timeout: idle" and
 * closes. SIGINT or SIGTERM (through a signalfd, so they are ordinary
 * events) stops the server; it closes every connection, frees everything
 * and prints its counters.
 *
 * The loop is docs/API.md's "The worker loop", written out: wait, update the
 * cached clock, handle the I/O, then run the timers - so a deadline's
 * callback may close and free a connection without leaving a stale pointer
 * in this turn's events, and a connection whose data and deadline arrive in
 * the same turn is served before its deadline is looked at. With --kt-epoll
 * the same turn comes from kt_epoll_wait() (<ktimer/epoll.h>).
 *
 * Builds with Bazel (//examples:echo_server) or with any C11 compiler:
 *   cc -std=c11 echo_server.c $(pkg-config --cflags --libs ktimer)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4, signalfd: Linux, not ISO C */
#endif
#include <ktimer/epoll.h>
#include <ktimer/ktimer.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define LINE_MAX_BYTES 1024 /* a longer line is refused */
#define MAX_EVENTS 64

struct conn {
	int fd;
	bool header_done;
	bool want_out; /* registered for EPOLLOUT (echo not yet written) */
	struct kt_timer header_deadline;
	struct kt_timer idle;
	size_t in_len, out_len, out_off;
	char in[LINE_MAX_BYTES];
	char out[LINE_MAX_BYTES];
	struct conn *prev, *next; /* every open connection, for shutdown */
	struct server *srv;
};

struct counters {
	unsigned long accepted, lines, closed_peer, closed_header, closed_idle, closed_error, closed_shutdown;
	/* Reads handled while the connection's header deadline was already due:
	 * data and deadline in one turn, and the data was served first. */
	unsigned long served_past_deadline;
};

struct server {
	struct kt_base *base;
	struct kt_epoll kep; /* --kt-epoll only */
	bool use_kt_epoll;
	int epfd, lfd, sigfd;
	bool accept_paused; /* out of descriptors: listener disabled until a close */
	bool stop;
	kt_millis header_ms, idle_ms;
	struct conn *conns;
	struct counters n;
};

/* Tags for the two descriptors that are not connections. */
static char listener_tag, signal_tag;

static void set_events(struct server *s, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = {.events = events, .data.ptr = ptr};

	if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		perror("epoll_ctl MOD");
}

/* Close and free: deletes both timers first, so neither can fire later. */
static void close_conn(struct conn *c, unsigned long *reason)
{
	struct server *s = c->srv;

	kt_timer_delete(&c->header_deadline);
	kt_timer_delete(&c->idle);
	close(c->fd); /* also leaves the epoll set */
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
	(*reason)++;
	if (s->accept_paused) { /* a descriptor is free again */
		s->accept_paused = false;
		set_events(s, s->lfd, EPOLLIN, &listener_tag);
	}
}

/* Best effort: a line that does not fit the socket buffer now is dropped. */
static void say(struct conn *c, const char *line)
{
	(void)send(c->fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void on_header_timeout(struct kt_timer *t)
{
	struct conn *c = kt_from_timer(c, t, header_deadline);

	say(c, "timeout: header\n");
	close_conn(c, &c->srv->n.closed_header);
}

static void on_idle_timeout(struct kt_timer *t)
{
	struct conn *c = kt_from_timer(c, t, idle);

	say(c, "timeout: idle\n");
	close_conn(c, &c->srv->n.closed_idle);
}

static void accept_all(struct server *s)
{
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c;
		char hello[96];

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE) {
				/* Level-triggered: stop polling the listener, or the
				 * loop spins; close_conn() turns it back on. */
				s->accept_paused = true;
				set_events(s, s->lfd, 0, &listener_tag);
			} else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
				perror("accept4");
			}
			return;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->srv = s;
		kt_timer_setup(&c->header_deadline, s->base, on_header_timeout, 0);
		kt_timer_setup(&c->idle, s->base, on_idle_timeout, 0);
		/* Armed from this turn's clock, refreshed right after the wait. */
		kt_timer_arm(&c->header_deadline, s->header_ms);
		kt_timer_arm(&c->idle, s->idle_ms);
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			perror("epoll_ctl ADD");
			kt_timer_delete(&c->header_deadline);
			kt_timer_delete(&c->idle);
			close(fd);
			free(c);
			continue;
		}
		c->next = s->conns;
		if (c->next)
			c->next->prev = c;
		s->conns = c;
		s->n.accepted++;
		snprintf(hello, sizeof(hello), "ktimer echo: first line within %u ms, idle limit %u ms\n",
			 (unsigned)s->header_ms.ms, (unsigned)s->idle_ms.ms);
		say(c, hello);
	}
}

/* Write what is pending; switch between reading and writing as needed. */
static void flush_out(struct conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				close_conn(c, &c->srv->n.closed_error);
			else if (!c->want_out) { /* stop reading until the echo is out */
				c->want_out = true;
				set_events(c->srv, c->fd, EPOLLOUT, c);
			}
			return;
		}
		c->out_off += (size_t)w;
	}
	c->out_len = c->out_off = 0;
	if (c->want_out) {
		c->want_out = false;
		set_events(c->srv, c->fd, EPOLLIN, c);
	}
}

static void on_readable(struct conn *c)
{
	struct server *s = c->srv;
	ssize_t r = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);
	size_t start = 0;

	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
		close_conn(c, r == 0 ? &s->n.closed_peer : &s->n.closed_error);
		return;
	}
	if (r < 0)
		return;
	/* Handled before this turn's timers run: a deadline already due is
	 * still pending here, and what this read does to it decides. */
	if (kt_timer_pending(&c->header_deadline) && kt_timer_expires(&c->header_deadline) <= kt_base_now(s->base))
		s->n.served_past_deadline++;
	kt_timer_arm(&c->idle, s->idle_ms); /* any byte: push the idle deadline back */
	c->in_len += (size_t)r;
	for (size_t i = 0; i < c->in_len; i++) {
		if (c->in[i] != '\n')
			continue;
		/* out is empty here (we read only then) and as large as in. */
		memcpy(c->out + c->out_len, c->in + start, i + 1 - start);
		c->out_len += i + 1 - start;
		start = i + 1;
		s->n.lines++;
		if (!c->header_done) { /* the header is in: its deadline is done */
			c->header_done = true;
			kt_timer_delete(&c->header_deadline);
		}
	}
	memmove(c->in, c->in + start, c->in_len - start);
	c->in_len -= start;
	if (c->in_len == sizeof(c->in)) {
		say(c, "error: line too long\n");
		close_conn(c, &s->n.closed_error);
		return;
	}
	flush_out(c);
}

static void on_signal(struct server *s)
{
	struct signalfd_siginfo si;

	while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		s->stop = true;
}

static void handle_event(struct server *s, const struct epoll_event *ev)
{
	if (ev->data.ptr == &listener_tag) {
		accept_all(s);
	} else if (ev->data.ptr == &signal_tag) {
		on_signal(s);
	} else {
		struct conn *c = ev->data.ptr;

		if (c->want_out)
			flush_out(c);
		else
			on_readable(c);
	}
}

/*
 * The connections of a turn's ready events are known before they are
 * handled: start the cache misses on their idle timers (re-armed by every
 * read) a few events ahead, so they overlap with the work on the events
 * before them. A hint only: a connection closed meanwhile is not read, its
 * address is only prefetched.
 */
#define PREFETCH_AHEAD 4

static void prefetch_event(const struct epoll_event *ev, int i, int n)
{
	if (i + PREFETCH_AHEAD < n) {
		void *p = ev[i + PREFETCH_AHEAD].data.ptr;

		if (p != &listener_tag && p != &signal_tag)
			kt_timer_prefetch(&((struct conn *)p)->idle);
	}
}

/* docs/API.md's turn, written out. */
static int run_loop(struct server *s)
{
	struct epoll_event ev[MAX_EVENTS];

	while (!s->stop) {
		struct kt_wait_plan plan = kt_base_prepare_wait(s->base);
		int n;

		/*
		 * EINTR here means the process was stopped and continued (a
		 * debugger, SIGSTOP; our signals arrive through the signalfd).
		 * No turn happened: wait again on the same plan, whose timeout
		 * is measured from a fresh clock reading.
		 */
		do
			n = epoll_wait(s->epfd, ev, MAX_EVENTS, kt_wait_plan_timeout_ms(s->base, &plan));
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return -errno;
		kt_base_update_time(s->base); /* 1. the cached clock is now; fires nothing */
		for (int i = 0; i < n; i++) {
			prefetch_event(ev, i, n);
			handle_event(s, &ev[i]); /* 2. accept, read, echo, close */
		}
		kt_base_run(s->base);            /* 3. deadlines: a callback may free a conn */
	}
	return 0;
}

/* The same turn, packaged: kt_epoll_wait() runs the previous turn's timers,
 * waits, updates the clock and hands back this turn's events. */
static int run_kt_epoll_loop(struct server *s)
{
	struct epoll_event ev[MAX_EVENTS];

	while (!s->stop) {
		int n = kt_epoll_wait(&s->kep, ev, MAX_EVENTS);

		if (n < 0)
			return n;
		for (int i = 0; i < n; i++) {
			prefetch_event(ev, i, n);
			handle_event(s, &ev[i]);
		}
	}
	return 0;
}

static int listen_loopback(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	socklen_t len = sizeof(a);
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		perror("listen on 127.0.0.1");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	printf("listening on 127.0.0.1:%d\n", ntohs(a.sin_port));
	return fd;
}

static int add_fd(struct server *s, int fd, void *tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = tag};

	return epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int parse_ms(const char *arg, kt_millis *out)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (*arg == '\0' || *end != '\0' || v == 0 || v > KT_MILLIS_MAX)
		return -1;
	out->ms = (uint32_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	static struct server s; /* zeroed */
	sigset_t sigs;
	int port = 0, rc;

	s.header_ms = KT_MILLIS(5000);
	s.idle_ms = KT_MILLIS(10000);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
		bool ok;

		if (strcmp(a, "--kt-epoll") == 0) {
			s.use_kt_epoll = true;
			continue;
		}
		if (strcmp(a, "--port") == 0)
			ok = *v && strspn(v, "0123456789") == strlen(v) && (port = atoi(v)) < 65536;
		else if (strcmp(a, "--header-ms") == 0)
			ok = parse_ms(v, &s.header_ms) == 0;
		else if (strcmp(a, "--idle-ms") == 0)
			ok = parse_ms(v, &s.idle_ms) == 0;
		else
			ok = false;
		if (!ok) {
			fprintf(stderr, "usage: %s [--port N] [--header-ms N] [--idle-ms N] [--kt-epoll]\n", argv[0]);
			return 2;
		}
		i++;
	}
	setvbuf(stdout, NULL, _IOLBF, 0); /* the port line must reach a pipe at once */

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	s.sigfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	s.base = kt_base_new(NULL); /* 16 ms unit, CLOCK_MONOTONIC */
	if (s.sigfd < 0 || !s.base) {
		perror("setup");
		return 1;
	}
	if (s.use_kt_epoll) {
		rc = kt_epoll_init(&s.kep, s.base);
		if (rc < 0) {
			fprintf(stderr, "kt_epoll_init: %s\n", strerror(-rc));
			return 1;
		}
		s.epfd = s.kep.epfd;
	} else {
		s.epfd = epoll_create1(EPOLL_CLOEXEC);
	}
	s.lfd = listen_loopback(port);
	if (s.epfd < 0 || s.lfd < 0 || add_fd(&s, s.lfd, &listener_tag) < 0 || add_fd(&s, s.sigfd, &signal_tag) < 0) {
		perror("setup");
		return 1;
	}

	rc = s.use_kt_epoll ? run_kt_epoll_loop(&s) : run_loop(&s);
	if (rc < 0)
		fprintf(stderr, "wait: %s\n", strerror(-rc));

	while (s.conns)
		close_conn(s.conns, &s.n.closed_shutdown);
	close(s.lfd);
	close(s.sigfd);
	if (s.use_kt_epoll)
		kt_epoll_close(&s.kep);
	else
		close(s.epfd);
	kt_base_free(s.base);
	printf("accepted %lu, lines %lu, closed: peer %lu, header timeout %lu, idle timeout %lu, error %lu, "
	       "shutdown %lu; served with a due deadline %lu\n",
	       s.n.accepted, s.n.lines, s.n.closed_peer, s.n.closed_header, s.n.closed_idle, s.n.closed_error,
	       s.n.closed_shutdown, s.n.served_past_deadline);
	return rc < 0 ? 1 : 0;
}
