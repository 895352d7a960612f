// SPDX-License-Identifier: MIT
/* net/conn.c - a connection's lifecycle, its output and its deadlines'
 * clock (see conn.h). */
#include "net/conn.h"

#include <assert.h>
#include <errno.h>
#include <jemalloc/jemalloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/probes.h"
#include "net/stats.h"

KT__PROBE_DEFINE(conn_accept);
KT__PROBE_DEFINE(conn_close);

static uint64_t ceil_ms(uint64_t ns) { return ns / 1000000u + (ns % 1000000u != 0); }

uint64_t httpd_clock_now(struct httpd_worker *w)
{
	struct timespec ts;

	if (kt_base_update_time(w->base) == 0)
		return ceil_ms(kt_base_now_ns(w->base));
	/* A timer callback: the turn keeps its clock. The base's is CLOCK_MONOTONIC. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ceil_ms((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

int httpd_deadline_arm_at(struct kt_timer *t, uint64_t now, kt_millis timeout)
{
	if (!timeout.ms)
		return kt_timer_delete(t);
	return kt_mod_timer(t, now + timeout.ms);
}

int httpd_deadline_arm(struct httpd_worker *w, struct kt_timer *t, kt_millis timeout)
{
	if (!timeout.ms)
		return kt_timer_delete(t);
	return kt_mod_timer(t, httpd_clock_now(w) + timeout.ms);
}

void *httpd_conn_alloc(struct httpd_worker *w, size_t n)
{
	return mallocx(n, MALLOCX_ARENA(w->arena) | MALLOCX_TCACHE_NONE);
}

void httpd_conn_free_mem(void *p)
{
	if (p)
		dallocx(p, MALLOCX_TCACHE_NONE);
}

/* The bytes in the socket's send queue: sent but not acknowledged, and not
 * yet sent. */
static uint32_t send_queue(int fd)
{
	int q = 0;

	return ioctl(fd, SIOCOUTQ, &q) == 0 && q > 0 ? (uint32_t)q : 0u;
}

/*
 * The write deadline, from now: after the write that blocked or made
 * progress (httpd_clock_now(), also in on_write_timeout(), a callback).
 * What the kernel holds is noted with it: a client that reads makes it
 * shrink even while the server gets no chance to write (below).
 */
static void write_deadline_arm(struct httpd_conn *c)
{
	httpd_deadline_arm(c->w, &c->write_timer, c->w->srv->cfg.write_timeout);
	c->outq = kt_timer_pending(&c->write_timer) ? send_queue(c->fd) : 0;
}

/*
 * No write made progress for --write-timeout. That alone does not mean the
 * client stopped reading: with a large send queue the kernel reports the
 * socket writable only once a third of it has drained, which takes a slow
 * reader seconds (a 4 MB queue read at 0.5 MB/s: 2.7 s without an event).
 * If the queue shrank since the deadline was armed, the client did read:
 * the deadline starts again. A client that reads nothing leaves the queue
 * as it is and is closed.
 */
static void on_write_timeout(struct kt_timer *t)
{
	struct httpd_conn *c = kt_container_of(t, struct httpd_conn, write_timer);

	if (send_queue(c->fd) < c->outq) {
		httpd_count(&c->w->st.write_deadline_extended);
		write_deadline_arm(c);
		return;
	}
	httpd_conn_close(c, R_WRITE);
}

struct httpd_conn *httpd_conn_new(struct httpd_worker *w, int fd, bool refused)
{
	struct httpd_conn *c = httpd_conn_alloc(w, sizeof(*c));
	struct epoll_event ev;
	int one = 1;

	if (!c) {
		close(fd);
		return NULL;
	}
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->w = w;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/*
	 * Bound the bytes the kernel keeps unsent for this connection: a send()
	 * past it returns EAGAIN, and the socket is reported writable again as
	 * soon as less than half of it is left, so a slow reader wakes the
	 * server every few dozen KB instead of every third of a multi-MB queue.
	 */
	if (w->srv->cfg.send_lowat) {
		int lowat = (int)w->srv->cfg.send_lowat;

		setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof(lowat));
	}
	kt_timer_setup(&c->write_timer, w->base, on_write_timeout, 0);
	ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
	ev.data.ptr = c;
	if (epoll_ctl(w->ep.epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		close(fd);
		httpd_conn_free_mem(c);
		return NULL;
	}
	dlist_add_tail(&w->conns, &c->link);
	if (KT__PROBE_ON(conn_accept))
		KT__PROBE3(conn_accept, fd, w->id, (int)refused);
	if (refused) {
		c->flags |= C_REFUSED | C_RETIRED; /* counted as rejected, never open */
		return c;
	}
	w->open++;
	httpd_count(&w->st.accepted);
	httpd_stat_set(&w->st.open, w->open);
	return c;
}

/* Count the connection as closed, once: from now on it is not served. */
static void retire(struct httpd_conn *c, enum httpd_close_reason why)
{
	struct httpd_worker *w = c->w;

	if (c->flags & C_RETIRED)
		return;
	c->flags |= C_RETIRED;
	w->open--;
	if (why < R_COUNT) {
		httpd_count(&w->st.closed[why]);
		if (KT__PROBE_ON(conn_close))
			KT__PROBE4(conn_close, c->fd, (int)why, httpd_close_reason_name[why], w->id);
	}
	httpd_stat_set(&w->st.open, w->open);
}

void httpd_conn_close(struct httpd_conn *c, enum httpd_close_reason why)
{
	struct httpd_worker *w = c->w;

	if (c->flags & C_DEAD)
		return;
	retire(c, why);
	c->flags |= C_DEAD;
	kt_timer_delete(&c->read_timer);
	kt_timer_delete(&c->write_timer);
	if (w->ring_on)
		slot_remove(&w->ring, &c->ka);
	close(c->fd); /* also removes it from the epoll set */
	c->fd = -1;
	/* Off the worker's list, onto the list freed at the end of the turn. */
	dlist_del(&c->link);
	dlist_add_tail(&w->closed, &c->link);
	if (c->flags & C_LINGER) {
		w->lingering--;
		if (c->flags & C_REFUSED)
			w->refused_lingering--;
		httpd_stat_set(&w->st.lingering, w->lingering);
	}
	if (!(c->flags & C_REFUSED))
		atomic_fetch_sub_explicit(&w->srv->conns, 1, memory_order_relaxed);
}

/* Arm the lingering deadline: lingering_timeout of silence from @now (read
 * after the last discarding read), but never past linger_end. Return:
 * false if linger_end has passed. */
static bool linger_arm(struct httpd_conn *c, uint64_t now)
{
	const struct httpd_config *cfg = &c->w->srv->cfg;
	uint64_t left, idle = cfg->lingering_timeout.ms;

	if (now >= c->linger_end)
		return false;
	left = c->linger_end - now;
	httpd_deadline_arm_at(&c->read_timer, now, KT_MILLIS(left < idle ? (uint32_t)left : (uint32_t)idle));
	return true;
}

void httpd_conn_linger(struct httpd_conn *c, enum httpd_close_reason why)
{
	struct httpd_worker *w = c->w;
	uint64_t now;

	if (c->flags & (C_DEAD | C_LINGER))
		return;
	retire(c, why);
	/* The client's FIN was read: nothing more comes, nothing to discard. */
	if ((c->flags & C_PEER_EOF) || shutdown(c->fd, SHUT_WR) < 0) {
		httpd_conn_close(c, R_COUNT);
		return;
	}
	c->flags |= C_LINGER;
	c->flags &= ~(C_PAUSED | C_BODY | C_GOT_BYTES | C_TOUCH);
	w->lingering++;
	if (c->flags & C_REFUSED)
		w->refused_lingering++;
	httpd_stat_set(&w->st.lingering, w->lingering);
	kt_timer_delete(&c->write_timer);
	if (w->ring_on)
		slot_remove(&w->ring, &c->ka);
	httpd_conn_free_mem(c->in);
	c->in = NULL;
	c->in_len = 0;
	httpd_conn_free_mem(c->chunked); /* a chunked body refused mid-way */
	c->chunked = NULL;
	/* From here the word holds the end of lingering, not a body count. */
	now = httpd_clock_now(w);
	c->linger_end = now + w->srv->cfg.lingering_time.ms;
	linger_arm(c, now);
	/* Edge-triggered: input already queued would raise no new event. */
	httpd_conn_linger_read(c);
}

void httpd_conn_linger_read(struct httpd_conn *c)
{
	struct httpd_worker *w = c->w;
	bool drained = false;

	for (;;) {
		ssize_t r = recv(c->fd, w->scratch, HTTPD_SCRATCH_SIZE, 0);

		if (r > 0) {
			drained = true; /* discarded */
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/*
			 * A client still sending (a large upload the server refused)
			 * is not idle: as nginx does, each read that discards bytes
			 * pushes the idle deadline back, so the client can finish
			 * sending and read the answer, instead of a reset cutting it
			 * off at a fixed time. lingering_time bounds the total, so a
			 * client dribbling for ever is still closed.
			 */
			if (drained && !linger_arm(c, httpd_clock_now(w)))
				httpd_conn_close(c, R_COUNT);
			return;
		}
		httpd_conn_close(c, R_COUNT); /* the client's FIN (or an error) */
		return;
	}
}

void httpd_conn_free_closed(struct httpd_worker *w)
{
	while (!dlist_empty(&w->closed)) {
		struct httpd_conn *c = dlist_entry(w->closed.next, struct httpd_conn, link);

		/* httpd_conn_close() took it off the ring; nothing may put it back. */
		assert(!slot_linked(&c->ka));
		dlist_del(&c->link);
		httpd_conn_free_mem(c->in);
		httpd_conn_free_mem(c->out);
		httpd_conn_free_mem(c->chunked);
		httpd_conn_free_mem(c);
	}
}

const char *httpd_date(struct httpd_worker *w)
{
	uint64_t sec = kt_base_system_time(w->base) / 1000u;
	time_t t;
	struct tm tm;

	if (sec == w->date_sec)
		return w->date; /* formatted once per second per worker, not per request */
	w->date_sec = sec;
	t = (time_t)sec;
	gmtime_r(&t, &tm);
	strftime(w->date, sizeof(w->date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	return w->date;
}

void httpd_send_and_forget(struct httpd_worker *w, int fd, int status)
{
	char buf[256];
	/* RFC 9110 6.6.1: an origin server with a clock sends Date in every
	 * final response, these last-words answers (408, 503) included. */
	int n = snprintf(buf, sizeof(buf),
			 "HTTP/1.1 %d %s\r\nServer: ktimer\r\nDate: %s\r\nContent-Length: 0\r\n"
			 "Connection: close\r\n\r\n",
			 status, http_reason(status), httpd_date(w));
	ssize_t r = send(fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);

	(void)r;
}

static int append_out(struct httpd_conn *c, const char *p, size_t n)
{
	size_t live = c->out_len - c->out_off;
	char *buf = httpd_conn_alloc(c->w, live + n);

	if (!buf)
		return -1;
	if (live)
		memcpy(buf, c->out + c->out_off, live);
	memcpy(buf + live, p, n);
	httpd_conn_free_mem(c->out);
	c->out = buf;
	c->out_len = (uint32_t)(live + n);
	c->out_off = 0;
	return 0;
}

/* Write @p to the socket now; keep what it will not take, under the write
 * deadline. */
static void send_now(struct httpd_conn *c, const char *p, size_t n)
{
	size_t off = 0;

	while (off < n) {
		ssize_t r = send(c->fd, p + off, n - off, MSG_NOSIGNAL);

		if (r > 0) {
			off += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		httpd_conn_close(c, R_PEER);
		return;
	}
	if (off < n) {
		/* The socket is full: keep the rest, and start the write deadline. */
		if (append_out(c, p + off, n - off) < 0) {
			httpd_conn_close(c, R_PEER);
			return;
		}
		write_deadline_arm(c);
	}
}

void httpd_conn_stage_flush(struct httpd_worker *w, struct httpd_conn *c)
{
	size_t n = w->stage_len;

	w->stage_len = 0;
	if (!n)
		return;
	if (c->out_len) {
		/* Behind blocked output: the write deadline already runs. */
		if (append_out(c, w->stage, n) < 0)
			httpd_conn_close(c, R_PEER);
		return;
	}
	send_now(c, w->stage, n);
}

int httpd_conn_flush_out(struct httpd_conn *c)
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
				write_deadline_arm(c);
			return 0;
		}
		httpd_conn_close(c, R_PEER);
		return 0;
	}
	kt_timer_delete(&c->write_timer);
	httpd_conn_free_mem(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	return 1;
}

void httpd_conn_emit(struct httpd_conn *c, const char *p, size_t n)
{
	struct httpd_worker *w = c->w;

	if (c->out_len) {
		/* Behind blocked output: the write deadline already runs. */
		if (append_out(c, p, n) < 0)
			httpd_conn_close(c, R_PEER);
		return;
	}
	if (w->stage_len + n > HTTPD_STAGE_SIZE)
		httpd_conn_stage_flush(w, c);
	if (c->flags & C_DEAD)
		return;
	if (c->out_len) {
		if (append_out(c, p, n) < 0)
			httpd_conn_close(c, R_PEER);
		return;
	}
	if (n > HTTPD_STAGE_SIZE) {
		/* Larger than the (now empty) stage: to the socket at once, so a
		 * large response is written now, not whenever the client happens
		 * to send something (EPOLLOUT is edge-triggered). */
		send_now(c, p, n);
		return;
	}
	memcpy(w->stage + w->stage_len, p, n);
	w->stage_len += n;
}
