/* SPDX-License-Identifier: MIT */
/*
 * net/http.h - an incremental HTTP/1.1 request-head parser.
 *
 * The caller appends bytes to a buffer and calls http_parse() after each
 * read. The parser remembers how far it has searched for the end of the
 * head, so bytes arriving one at a time cost O(n) in total, not O(n^2). The
 * same bytes split at any points give the same result.
 */
#ifndef KTIMER_NET_HTTP_H
#define KTIMER_NET_HTTP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The head (request line + headers) may be at most this long. */
#define HTTP_MAX_HEAD 8192u
/* Request bodies (skipped, never stored) may be at most this long. */
#define HTTP_MAX_BODY (1024u * 1024u)

enum http_method { HTTP_OTHER = 0, HTTP_GET, HTTP_HEAD };

struct http_request {
	enum http_method method;
	int minor;           /* HTTP/1.<minor>: 0 or 1 */
	int keep_alive;      /* what the client asked for, by version and Connection */
	const char *target;  /* into the caller's buffer */
	size_t target_len;
	size_t content_length;
	size_t head_len;     /* bytes of the head, including the blank line */
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
 * Return: 1 when a complete, valid head is in @req; 0 when more bytes are
 * needed; or a negative HTTP status for bad input: -400 malformed, -413
 * request line longer than the limit or body too large, -431 head longer
 * than the limit, -501 a transfer coding it does not implement, -505 an HTTP
 * version other than 1.0 and 1.1.
 */
int http_parse(struct http_parser *p, const char *buf, size_t len, struct http_request *req);

/** http_reason() - the reason phrase for a status code ("" if unknown). */
const char *http_reason(int status);

#ifdef __cplusplus
}
#endif

#endif
