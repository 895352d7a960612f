/* SPDX-License-Identifier: MIT */
/*
 * net/http.h - an incremental HTTP/1.1 request-head parser.
 *
 * The caller appends bytes to a buffer and calls http_parse() after each
 * read. The parser remembers how far it has searched for the end of the
 * head, so bytes arriving one at a time cost O(n) in total, not O(n^2). The
 * same bytes split at any points give the same result.
 *
 * Strict where framing is ambiguous (the shapes of request smuggling are
 * refused, not guessed): two Content-Length headers, Content-Length with
 * Transfer-Encoding, Transfer-Encoding on an HTTP/1.0 request.
 */
#ifndef KTIMER_NET_HTTP_H
#define KTIMER_NET_HTTP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The whole head - any empty lines before the request line, the request
 * line, the header lines and the blank line that ends them - may be at most
 * this long. A request line that does not end within it is 414, a head that
 * does not end within it is 431.
 */
#define HTTP_MAX_HEAD 8192u
/* Request bodies (skipped, never stored) may be at most this long. */
#define HTTP_MAX_BODY (1024u * 1024u)

/*
 * HTTP_OTHER: a method this server does not recognize (RFC 9110 9.1: 501).
 * HTTP_UNSUPPORTED: one of RFC 9110's (and PATCH, RFC 5789) that it knows
 * but does not serve (405 with Allow). Methods are case-sensitive, so "get"
 * is HTTP_OTHER.
 */
enum http_method { HTTP_OTHER = 0, HTTP_GET, HTTP_HEAD, HTTP_UNSUPPORTED };

struct http_request {
	enum http_method method;
	int minor;            /* 0 for HTTP/1.0, 1 for HTTP/1.1 and any later 1.x */
	int keep_alive;       /* what the client asked for, by version and Connection */
	int expect_continue;  /* an HTTP/1.1 request with "Expect: 100-continue" */
	const char *line;     /* the request line, without its line end (into the caller's buffer) */
	size_t line_len;
	const char *target;   /* the request target, query included */
	size_t target_len;
	const char *path;     /* what routes match: the target's path, without its query ('?');
	                       * for an absolute-form target (http://host/p) the part after
	                       * the authority, "/" if that is empty */
	size_t path_len;
	size_t content_length;
	size_t head_len;      /* bytes of the head, from the buffer's start to after the blank line */
};

/* Parser state kept between calls for one request. */
struct http_parser {
	size_t scanned; /* bytes already searched for the end of the head */
};

static inline void http_parser_reset(struct http_parser *p) { p->scanned = 0; }

/**
 * http_parse() - try to parse a request head from the start of @buf.
 * @p: parser state for this request.
 * @buf: the connection's unconsumed bytes.
 * @len: how many.
 * @req: filled when a head is complete.
 *
 * Empty lines (CRLF or LF) before the request line are skipped, as RFC 9112
 * section 2.2 asks, within the head limit.
 *
 * Return: 1 when a complete, valid head is in @req; 0 when more bytes are
 * needed; or a negative HTTP status for bad input: -400 malformed (and two
 * Content-Length headers, Content-Length with Transfer-Encoding,
 * Transfer-Encoding on HTTP/1.0), -413 a body longer than HTTP_MAX_BODY,
 * -414 a request line that does not end within HTTP_MAX_HEAD, -431 a head
 * longer than HTTP_MAX_HEAD, -501 a transfer coding (not implemented), -505
 * an HTTP major version other than 1.
 */
int http_parse(struct http_parser *p, const char *buf, size_t len, struct http_request *req);

/** http_reason() - the reason phrase for a status code ("" if unknown). */
const char *http_reason(int status);

#ifdef __cplusplus
}
#endif

#endif
