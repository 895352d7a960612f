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
 * Transfer-Encoding, Transfer-Encoding on an HTTP/1.0 request, a transfer
 * coding list that is not exactly "chunked".
 *
 * A chunked request body (RFC 9112 7.1) is decoded by struct http_chunked,
 * fed the bytes after the head: it finds where the body ends and discards
 * it, extensions and trailers included (trailers are never merged into the
 * head), within the bounds below.
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
/* Request bodies (skipped, never stored) may be at most this long by
 * default (http_parse(); httpd's --max-body). */
#define HTTP_MAX_BODY (1024u * 1024u)
/* http_parse_limited(): no limit on the body's length. */
#define HTTP_NO_BODY_LIMIT UINT64_MAX
/* A chunked body: the chunk extensions of the whole body together (skipped,
 * whitespace after the sizes included) may be at most this long (400 past it), the trailer section at most this
 * long (431 past it), and a chunk-size line's hex digits, leading zeros
 * included, at most this many (400). */
#define HTTP_MAX_CHUNK_EXT 4096u
#define HTTP_MAX_TRAILERS 8192u
#define HTTP_MAX_CHUNK_DIGITS 32u

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
	int chunked;          /* Transfer-Encoding: chunked; the body follows the head */
	size_t head_len;      /* bytes of the head, from the buffer's start to after the blank line */
	/* Preconditions (RFC 9110 13.1), as far as a resource without
	 * validators can use them: If-Match and If-None-Match are
	 * HTTP_COND_NONE, HTTP_COND_STAR (the value is "*") or HTTP_COND_TAGS
	 * (anything else: entity tags, none of which can match); the two date
	 * conditions only whether they were sent. */
	int if_match, if_none_match;
	int if_modified_since, if_unmodified_since;
};

enum { HTTP_COND_NONE = 0, HTTP_COND_STAR, HTTP_COND_TAGS };

/**
 * http_precondition() - evaluate a GET or HEAD request's preconditions
 * (RFC 9110 13.2.2) for a resource that exists and has no entity tag and
 * no modification date.
 * @req: a parsed request whose answer, without its preconditions, would be
 *       200.
 *
 * In 13.2.2's order: If-Match "*" is true and any tag list false (412);
 * If-Unmodified-Since is ignored, as 13.1.4 says it must be when there is
 * no modification date; If-None-Match "*" is false (304 for GET and HEAD)
 * and a tag list true; If-Modified-Since is ignored, for the same reason
 * (and always when If-None-Match is present).
 *
 * Return: 0 to answer as usual, 412 or 304.
 */
int http_precondition(const struct http_request *req);

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
 * The Host value must be a URI authority without userinfo (RFC 9112 3.2,
 * RFC 3986 3.2.2): a reg-name (which covers IPv4 addresses), or an IPv6 or
 * IPvFuture literal in brackets, then optionally ':' and a decimal port.
 * The host may not be empty (RFC 9110 4.2.1: not in an http URI).
 *
 * Return: 1 when a complete, valid head is in @req; 0 when more bytes are
 * needed; or a negative HTTP status for bad input: -400 malformed (and two
 * Content-Length headers, Content-Length with Transfer-Encoding,
 * Transfer-Encoding on HTTP/1.0, "chunked" twice or not last, a missing
 * (HTTP/1.1) or invalid Host), -413 a Content-Length over HTTP_MAX_BODY,
 * -414 a request line that does not end within HTTP_MAX_HEAD, -431 a head
 * longer than HTTP_MAX_HEAD, -501 a transfer coding other than chunked, -505
 * an HTTP major version other than 1.
 */
int http_parse(struct http_parser *p, const char *buf, size_t len, struct http_request *req);

/**
 * http_parse_limited() - http_parse() with a body limit of @max_body bytes
 * (HTTP_NO_BODY_LIMIT: none) instead of HTTP_MAX_BODY.
 *
 * Return: as http_parse(); -413 for a Content-Length over @max_body.
 */
int http_parse_limited(struct http_parser *p, const char *buf, size_t len, struct http_request *req,
		       uint64_t max_body);

/** http_host_valid() - whether @v (@len bytes) is a valid Host value. */
int http_host_valid(const char *v, size_t len);

/* The decoder of one chunked body (RFC 9112 7.1). Plain data: zero it or
 * http_chunked_init() it. */
struct http_chunked {
	uint64_t left;     /* data bytes left in the current chunk */
	uint64_t total;    /* data bytes of the body so far */
	uint64_t max_body; /* HTTP_NO_BODY_LIMIT: none */
	uint32_t ext;      /* chunk-extension bytes so far (the whole body) */
	uint32_t trailers; /* trailer-section bytes so far */
	uint8_t state;
	uint8_t digits;    /* hex digits of the current chunk-size */
};

/** http_chunked_init() - a decoder for a new body of at most @max_body data bytes. */
void http_chunked_init(struct http_chunked *d, uint64_t max_body);

/**
 * http_chunked_feed() - decode (and discard) the next bytes of a chunked body.
 * @d: the body's decoder.
 * @buf: bytes after what earlier calls consumed.
 * @len: how many.
 * @used: set to how many bytes of @buf belong to the body.
 *
 * Lines end with CRLF only (a bare LF or CR is 400: chunked framing is where
 * request smuggling lives, so nothing is guessed). The same bytes split at
 * any points give the same result.
 *
 * Return: 1 when the body (its last chunk and trailer section) has ended,
 * the bytes after *@used being the next request's; 0 when every byte was
 * consumed and more are needed; or a negative HTTP status: -400 malformed
 * (a chunk-size that is not hex, overflows 64 bits or has more than
 * HTTP_MAX_CHUNK_DIGITS digits, chunk extensions over HTTP_MAX_CHUNK_EXT in
 * all, control characters, a chunk not followed by CRLF, a bad trailer
 * line), -413 data over the limit (detected at the chunk-size that passes
 * it, before its data), -431 a trailer section over HTTP_MAX_TRAILERS.
 */
int http_chunked_feed(struct http_chunked *d, const char *buf, size_t len, size_t *used);

/** http_reason() - the reason phrase for a status code ("" if unknown). */
const char *http_reason(int status);

#ifdef __cplusplus
}
#endif

#endif
