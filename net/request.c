// SPDX-License-Identifier: MIT
/* net/request.c - reading requests and answering them (see request.h). */
#include "net/request.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "net/addr.h"
#include "net/conn.h"
#include "net/log.h"
#include "net/stats.h"

static const char kBody[] = "Hello from ktimer\n";
static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";

/*
 * A request with a chunked body is answered once its body has ended (its
 * length is unknown until then, and a body over --max-body or with bad
 * framing must get 413 or 400, not a 200 already sent). What the answer
 * needs is kept here meanwhile, with a copy of the request line: the head's
 * bytes are consumed long before. Allocated only while such a body is read.
 */
struct httpd_chunked_req {
	struct http_chunked dec;
	enum http_method method;
	int keep_alive;
	int if_match, if_none_match; /* its preconditions, decided after the body */
	int if_modified_since, if_unmodified_since;
	size_t path_off; /* the path within line[], or SIZE_MAX: "/" */
	size_t path_len;
	size_t line_len;
	char line[];
};

/* ---- the read deadline: header, body, lingering ------------------------- */

static void on_read_timeout(struct kt_timer *t)
{
	struct httpd_conn *c = kt_container_of(t, struct httpd_conn, read_timer);

	if (c->flags & C_LINGER) {
		httpd_conn_close(c, R_COUNT); /* the client never sent its FIN */
		return;
	}
	if (c->flags & C_BODY) {
		/* It announced a body and stopped sending it. A Content-Length
		 * body's response is already written; a chunked body's is not:
		 * that client is told why (408), as at the header deadline. */
		if (c->chunked) {
			httpd_send_and_forget(c->w, c->fd, 408);
			httpd_access_log_write(c, c->chunked->line, c->chunked->line_len, 408, 0);
		}
		httpd_conn_close(c, R_BODY);
		return;
	}
	if (c->flags & C_GOT_BYTES) {
		httpd_send_and_forget(c->w, c->fd, 408);
		httpd_access_log_write(c, NULL, 0, 408, 0);
	}
	httpd_conn_close(c, R_HEADER);
}

/* Output is blocked, so the server stops reading: stop the clock of what it
 * reads, keeping the time left. */
static void read_pause(struct httpd_conn *c)
{
	uint64_t now, exp;

	if ((c->flags & (C_PAUSED | C_LINGER)) || !kt_timer_pending(&c->read_timer))
		return;
	now = kt_base_now(c->w->base);
	exp = kt_timer_expires(&c->read_timer);
	c->read_left_ms = exp > now ? (uint32_t)(exp - now < UINT32_MAX ? exp - now : UINT32_MAX) : 1u;
	kt_timer_delete(&c->read_timer);
	c->flags |= C_PAUSED;
}

/* The output drained: the server reads again, and the clock runs again,
 * from the present (the drain may come late in a turn). */
static void read_resume(struct httpd_conn *c)
{
	if (!(c->flags & C_PAUSED))
		return;
	c->flags &= ~C_PAUSED;
	httpd_deadline_arm(c->w, &c->read_timer, KT_MILLIS(c->read_left_ms));
}

void httpd_request_start(struct httpd_conn *c)
{
	kt_timer_setup(&c->read_timer, c->w->base, on_read_timeout, 0);
	if (c->flags & C_REFUSED) {
		/* Over --max-conns: 503, then a lingering close, so the request the
		 * client may already have sent does not turn the 503 into a reset. */
		httpd_send_and_forget(c->w, c->fd, 503);
		httpd_conn_linger(c, R_COUNT);
		return;
	}
	/* From accept, read now: the turn may have accepted many before it. */
	httpd_deadline_arm(c->w, &c->read_timer, c->w->srv->cfg.header_timeout);
}

int httpd_request_busy(const struct httpd_conn *c)
{
	return c->out_len || c->in_len || c->body_left || c->chunked || (c->flags & (C_PAUSED | C_LINGER)) ||
	       kt_timer_pending(&c->read_timer);
}

int httpd_request_keepalive_expired(struct slot_ring *ring, struct slot_node *node)
{
	struct httpd_conn *c = kt_container_of(node, struct httpd_conn, ka);

	(void)ring;
	if (httpd_request_busy(c))
		return 1; /* mid-request or writing: its own deadlines govern it */
	httpd_conn_close(c, R_KEEPALIVE);
	return 0;
}

/*
 * Idle: nothing in progress, and nothing arrived that the worker has not
 * read yet (a request sent just now, its event later in this turn: closing
 * that connection would lose the request to a reset).
 */
static int idle_in_keepalive(const struct slot_node *node)
{
	const struct httpd_conn *c = kt_container_of(node, struct httpd_conn, ka);
	int unread = 0;

	if (httpd_request_busy(c))
		return 0;
	return ioctl(c->fd, FIONREAD, &unread) == 0 && unread == 0;
}

bool httpd_request_reclaim_idle(struct httpd_worker *w)
{
	struct slot_node *n;

	if (!w->ring_on || w->stopping)
		return false;
	/* Bounded: a ring full of busy connections is not searched through. */
	n = slot_oldest(&w->ring, idle_in_keepalive, 256);
	if (!n)
		return false;
	httpd_conn_close(kt_container_of(n, struct httpd_conn, ka), R_RECLAIMED);
	return true;
}

/* The response with Connection: close is written: close politely, and
 * count it under the reason that made it the last. */
static void finish(struct httpd_conn *c)
{
	enum httpd_close_reason why = R_ANSWERED;

	if (c->flags & C_BAD)
		why = R_BAD;
	else if (c->flags & C_PEER_EOF)
		why = R_PEER;
	else if (c->w->stopping)
		why = R_SHUTDOWN;
	httpd_conn_linger(c, why);
}

/* ---- responses --------------------------------------------------------- */

struct line {
	const char *p; /* the request line for the access log, NULL: "-" */
	size_t n;
};

static void respond(struct httpd_conn *c, struct line rl, int status, const char *ctype, const char *body,
		    size_t body_len, bool head_only, bool keep, const char *extra)
{
	struct httpd_worker *w = c->w;
	char hdr[512];
	int n;

	if (ctype)
		n = snprintf(hdr, sizeof(hdr),
			     "HTTP/1.1 %d %s\r\nServer: ktimer\r\nDate: %s\r\nContent-Type: %s\r\n"
			     "Content-Length: %zu\r\n%sConnection: %s\r\n\r\n",
			     status, http_reason(status), httpd_date(w), ctype, body_len, extra ? extra : "",
			     keep ? "keep-alive" : "close");
	else /* 304: no content, and no metadata of the content it stands for */
		n = snprintf(hdr, sizeof(hdr), "HTTP/1.1 %d %s\r\nServer: ktimer\r\nDate: %s\r\n%sConnection: %s\r\n\r\n",
			     status, http_reason(status), httpd_date(w), extra ? extra : "", keep ? "keep-alive" : "close");
	httpd_access_log_write(c, rl.p, rl.n, status, head_only ? 0 : body_len);
	/*
	 * The interim answer goes before the final one, only when the server
	 * will read the body: after a keep-alive answer it does (the body is
	 * read after answering, so the client's wait is never for nothing);
	 * after a Connection: close answer (an error, 413 included) it only
	 * discards what comes while lingering, so the client is told not to
	 * send it (RFC 9110 10.1.1).
	 */
	if (c->flags & C_CONTINUE) {
		c->flags &= ~C_CONTINUE;
		if (keep)
			httpd_conn_emit(c, kContinue, sizeof(kContinue) - 1);
		if (c->flags & C_DEAD)
			return;
	}
	httpd_conn_emit(c, hdr, (size_t)n);
	if (!head_only && body_len && !(c->flags & C_DEAD))
		httpd_conn_emit(c, body, body_len);
	/*
	 * A full stage is flushed by emit, and a peer that is gone closes the
	 * connection there: it is freed at the end of the turn, so it must not
	 * go back on the keep-alive ring.
	 */
	if (c->flags & C_DEAD)
		return;
	if (!keep)
		c->flags |= C_CLOSE_AFTER;
	else if (w->ring_on)
		c->flags |= C_TOUCH; /* once the answers are sent: process() */
}

static void respond_error(struct httpd_conn *c, struct line rl, int status)
{
	char body[64];
	int n = snprintf(body, sizeof(body), "%d %s\n", status, http_reason(status));

	c->flags |= C_BAD; /* counted when the connection closes */
	respond(c, rl, status, "text/plain", body, (size_t)n, false, false,
		status == 405 ? "Allow: GET, HEAD\r\n" : NULL);
}

static bool stats_allowed(struct httpd_conn *c)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	const struct httpd_allow *a = &c->w->srv->cfg.stats_allow;

	if (a->mode == HTTPD_ALLOW_ANY)
		return true;
	if (getpeername(c->fd, (struct sockaddr *)&peer, &len) != 0)
		return false;
	return httpd_allow_match(a, (struct sockaddr *)&peer);
}

/*
 * Preconditions, for a GET or HEAD whose answer would be 200 (RFC 9110
 * 13.2.1: a server ignores them when the answer would be another status):
 * answers 304 or 412 and returns true, or returns false to answer as usual.
 * The pages carry no validator, so only "*" decides (http_precondition()).
 */
static bool answer_precondition(struct httpd_conn *c, struct line rl, const struct http_request *req, bool head,
				bool keep)
{
	static const char pf[] = "412 Precondition Failed\n";

	switch (http_precondition(req)) {
	case 304:
		respond(c, rl, 304, NULL, NULL, 0, true, keep, NULL);
		return true;
	case 412:
		respond(c, rl, 412, "text/plain", pf, sizeof(pf) - 1, head, keep, NULL);
		return true;
	default:
		return false;
	}
}

static void handle_request(struct httpd_conn *c, const struct http_request *req)
{
	struct httpd_worker *w = c->w;
	bool keep = req->keep_alive && w->ring_on && !w->stopping;
	bool head = req->method == HTTP_HEAD;
	struct line rl = {req->line, req->line_len};

	httpd_count(&w->st.requests);
	/* RFC 9110 9.1: a method the server does not recognize is 501; one it
	 * knows but does not serve here is 405 with Allow. */
	if (req->method == HTTP_OTHER) {
		respond_error(c, rl, 501);
		return;
	}
	if (req->method == HTTP_UNSUPPORTED) {
		respond_error(c, rl, 405);
		return;
	}
	/* No body (no Content-Length, or 0): nothing to continue with (RFC
	 * 9110 10.1.1 lets a server omit 100 when the framing says so; nginx
	 * sends it anyway). respond() decides on the rest. */
	if (req->expect_continue && req->content_length)
		c->flags |= C_CONTINUE;
	if (req->path_len == 1 && req->path[0] == '/') {
		if (answer_precondition(c, rl, req, head, keep))
			return;
		respond(c, rl, 200, "text/plain", kBody, sizeof(kBody) - 1, head, keep, NULL);
	} else if (req->path_len == 6 && memcmp(req->path, "/stats", 6) == 0) {
		size_t cap = httpd_stats_size(w->srv);
		char *body;

		if (!stats_allowed(c)) {
			static const char fb[] = "403 Forbidden\n";

			respond(c, rl, 403, "text/plain", fb, sizeof(fb) - 1, head, keep, NULL);
			return;
		}
		if (answer_precondition(c, rl, req, head, keep))
			return;
		body = malloc(cap);
		if (!body) {
			respond_error(c, rl, 503);
			return;
		}
		respond(c, rl, 200, "application/json", body, httpd_stats_json(w->srv, body, cap), head, keep, NULL);
		free(body);
	} else {
		static const char nf[] = "404 Not Found\n";

		respond(c, rl, 404, "text/plain", nf, sizeof(nf) - 1, head, keep, NULL);
	}
}

/* ---- input ------------------------------------------------------------- */

/* Keep-alive counts from now, read after the event: the last response
 * byte's departure came later than the response was made. */
static void keepalive_restart(struct httpd_conn *c)
{
	if (c->w->ring_on && slot_linked(&c->ka)) {
		httpd_clock_now(c->w);
		slot_touch(&c->w->ring, &c->ka);
	}
}

/* The request body ended: the client is idle from its last byte, touched
 * with this read's answers (process()). */
static void body_done(struct httpd_conn *c)
{
	kt_timer_delete(&c->read_timer);
	c->flags &= ~C_BODY;
	if (c->w->ring_on && slot_linked(&c->ka))
		c->flags |= C_TOUCH;
}

/*
 * A served request (GET or HEAD) with a chunked body: keep what its answer
 * needs and decode the body first. Return: false if out of memory (the
 * connection is closed).
 */
static bool chunked_start(struct httpd_conn *c, const struct http_request *req)
{
	struct httpd_chunked_req *cr = httpd_conn_alloc(c->w, sizeof(*cr) + req->line_len);
	uint64_t max_body = c->w->srv->cfg.max_body;

	if (!cr) {
		c->w->stage_len = 0; /* its earlier answers go with it */
		httpd_conn_close(c, R_PEER);
		return false;
	}
	http_chunked_init(&cr->dec, max_body ? max_body : HTTP_NO_BODY_LIMIT);
	cr->method = req->method;
	cr->keep_alive = req->keep_alive;
	cr->if_match = req->if_match;
	cr->if_none_match = req->if_none_match;
	cr->if_modified_since = req->if_modified_since;
	cr->if_unmodified_since = req->if_unmodified_since;
	memcpy(cr->line, req->line, req->line_len);
	cr->line_len = req->line_len;
	cr->path_len = req->path_len;
	/* The path lies in the request line, unless it is the "/" of an
	 * absolute-form target without one. */
	if (req->path >= req->line && req->path + req->path_len <= req->line + req->line_len)
		cr->path_off = (size_t)(req->path - req->line);
	else
		cr->path_off = SIZE_MAX;
	c->chunked = cr;
	/* The client may wait for 100 before it sends the body, so it goes now
	 * (the final answer comes after the body). */
	if (req->expect_continue)
		httpd_conn_emit(c, kContinue, sizeof(kContinue) - 1);
	return !(c->flags & C_DEAD);
}

/*
 * The chunked body ended (@r 1) or was refused (@r a negative status):
 * answer the request it belongs to.
 */
static void chunked_end(struct httpd_conn *c, int r)
{
	struct httpd_chunked_req *cr = c->chunked;
	struct http_request req;

	c->chunked = NULL;
	body_done(c);
	memset(&req, 0, sizeof(req));
	req.method = cr->method;
	req.minor = 1;
	req.keep_alive = cr->keep_alive;
	req.if_match = cr->if_match;
	req.if_none_match = cr->if_none_match;
	req.if_modified_since = cr->if_modified_since;
	req.if_unmodified_since = cr->if_unmodified_since;
	req.line = cr->line;
	req.line_len = cr->line_len;
	req.path = cr->path_off == SIZE_MAX ? "/" : cr->line + cr->path_off;
	req.path_len = cr->path_len;
	if (r < 0) {
		struct line rl = {cr->line, cr->line_len};

		httpd_count(&c->w->st.requests);
		respond_error(c, rl, -r);
	} else {
		handle_request(c, &req);
	}
	httpd_conn_free_mem(cr);
}

/* The first line of unparsable input, for the access log. */
static struct line first_line(const char *p, size_t n)
{
	struct line l = {p, 0};

	while (l.n < n && p[l.n] != '\r' && p[l.n] != '\n')
		l.n++;
	return l;
}

/*
 * After a read's requests are answered and the answers sent: what the read
 * leaves to wait for, counted from one clock reading taken now, after the
 * read and the send (httpd_clock_now()), however long the turn has run.
 * - Body bytes still to come: the body deadline, pushed back by each read
 *   that brought some.
 * - A head not complete in this read: its header deadline, unless one runs
 *   already (a new connection's, counted from accept: a slow first byte
 *   must not buy a fresh deadline). A head that is complete in the read
 *   that brought its first byte, the usual case, arms nothing.
 * - A keep-alive answer sent, or a body ended: keep-alive restarts.
 */
static void deadlines(struct httpd_conn *c)
{
	const struct httpd_config *cfg = &c->w->srv->cfg;
	bool body = (c->body_left || c->chunked) && !(c->flags & C_CLOSE_AFTER);
	bool head = !body && (c->flags & C_GOT_BYTES) && !(c->flags & C_CLOSE_AFTER) &&
		    !kt_timer_pending(&c->read_timer);
	bool touch = (c->flags & C_TOUCH) && !(c->flags & C_CLOSE_AFTER);
	uint64_t now;

	if (body)
		c->flags |= C_BODY;
	c->flags &= ~C_TOUCH;
	if (!(body && cfg->body_timeout.ms) && !(head && cfg->header_timeout.ms) && !touch) {
		if (body)
			kt_timer_delete(&c->read_timer); /* --body-timeout 0 */
		return;
	}
	now = httpd_clock_now(c->w);
	if (body)
		httpd_deadline_arm_at(&c->read_timer, now, cfg->body_timeout);
	else if (head)
		httpd_deadline_arm_at(&c->read_timer, now, cfg->header_timeout);
	if (touch)
		slot_touch(&c->w->ring, &c->ka);
}

/* Parse and answer every complete request in buf[0..len); keep the rest. */
static void process(struct httpd_conn *c, char *buf, size_t len)
{
	struct httpd_worker *w = c->w;
	size_t off = 0;

	while (off < len && !(c->flags & (C_DEAD | C_CLOSE_AFTER | C_LINGER)) && !c->out_len) {
		struct http_request req;
		int r;

		if (c->body_left) {
			size_t skip = len - off < c->body_left ? len - off : (size_t)c->body_left;

			off += skip;
			c->body_left -= skip;
			if (!c->body_left)
				body_done(c);
			continue;
		}
		if (c->chunked) {
			size_t used;

			r = http_chunked_feed(&c->chunked->dec, buf + off, len - off, &used);
			off += used;
			if (r == 0)
				continue; /* every byte consumed: more to come */
			chunked_end(c, r);
			if (r < 0) {
				off = len; /* the rest of the stream cannot be trusted */
				break;
			}
			continue;
		}
		/* First byte of a new request: if its head is not complete in
		 * this read, its header deadline starts below. */
		c->flags |= C_GOT_BYTES;
		r = http_parse_limited(&c->parser, buf + off, len - off, &req,
				       w->srv->cfg.max_body ? w->srv->cfg.max_body : HTTP_NO_BODY_LIMIT);
		if (r == 0)
			break;
		http_parser_reset(&c->parser);
		kt_timer_delete(&c->read_timer);
		c->flags &= ~C_GOT_BYTES;
		if (r < 0) {
			respond_error(c, first_line(buf + off, len - off), -r);
			off = len; /* the rest of the stream cannot be trusted */
			break;
		}
		off += req.head_len;
		if (req.chunked && (req.method == HTTP_GET || req.method == HTTP_HEAD)) {
			httpd_count(&w->st.chunked_bodies);
			if (!chunked_start(c, &req))
				return;
			continue;
		}
		c->body_left = req.content_length;
		handle_request(c, &req);
	}
	if (c->flags & (C_DEAD | C_LINGER))
		return;
	if (w->stage_len)
		httpd_conn_stage_flush(w, c);
	if (c->flags & C_DEAD)
		return;
	deadlines(c);
	if (c->out_len)
		read_pause(c); /* the server stops reading until the output drains */
	/* Keep what was not consumed (bounded by the head limit + one read). */
	httpd_conn_free_mem(c->in);
	c->in = NULL;
	c->in_len = 0;
	if (off < len && !(c->flags & C_CLOSE_AFTER)) {
		c->in = httpd_conn_alloc(w, len - off);
		if (!c->in) {
			httpd_conn_close(c, R_PEER);
			return;
		}
		memcpy(c->in, buf + off, len - off);
		c->in_len = (uint32_t)(len - off);
	}
	if ((c->flags & C_CLOSE_AFTER) && !c->out_len)
		finish(c);
}

static void on_readable(struct httpd_conn *c)
{
	struct httpd_worker *w = c->w;

	if (c->flags & C_LINGER) {
		httpd_conn_linger_read(c);
		return;
	}
	for (;;) {
		size_t have = c->in_len;
		ssize_t r;

		if (c->flags & (C_DEAD | C_CLOSE_AFTER | C_LINGER) || c->out_len)
			return; /* back-pressure: resume when the output drains */
		if (have)
			memcpy(w->scratch, c->in, have);
		r = recv(c->fd, w->scratch + have, HTTPD_SCRATCH_SIZE - have, 0);
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
		if (c->flags & (C_DEAD | C_LINGER))
			return;
		if (!c->out_len)
			httpd_conn_close(c, R_PEER);
		else
			c->flags |= C_CLOSE_AFTER;
		return;
	}
}

static void on_writable(struct httpd_conn *c)
{
	if ((c->flags & C_LINGER) || !c->out_len || !httpd_conn_flush_out(c))
		return;
	if (c->flags & C_CLOSE_AFTER) {
		finish(c);
		return;
	}
	/*
	 * Drained: the client is idle from its last response byte, not from
	 * when the response was made (it may have sat in the output for
	 * seconds). Touch the keep-alive slot again, so the connection never
	 * closes less than the keep-alive timeout after its last byte left.
	 */
	keepalive_restart(c);
	/* The server reads again. Answer what was waiting, then read what
	 * arrived meanwhile. */
	read_resume(c);
	if (c->in_len) {
		char *in = c->in;
		size_t n = c->in_len;

		memcpy(c->w->scratch, in, n);
		process(c, c->w->scratch, n);
	}
	on_readable(c);
}

void httpd_request_on_event(struct httpd_conn *c, uint32_t events)
{
	if (events & EPOLLOUT)
		on_writable(c);
	if (!(c->flags & C_DEAD) && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		on_readable(c);
	/* Shutting down: a connection that has become idle closes now. */
	if (c->w->stopping && !(c->flags & C_DEAD) && !httpd_request_busy(c))
		httpd_conn_close(c, R_SHUTDOWN);
}
