// SPDX-License-Identifier: MIT
/*
 * net/http.c - incremental HTTP/1.1 request-head parser.
 *
 * Strategy: find the end of the head first (CRLF CRLF, or LF LF from
 * lenient clients), remembering how far we searched, then validate the whole
 * head in one pass. Limits are checked while searching so an endless header
 * is refused at 8 KiB, not when memory runs out.
 *
 * Compared byte for byte with nginx 1.22 (tools/check/protocol_compare.py): the
 * same status for the framing and version cases in docs/NET.md.
 */
#include "net/http.h"

#include <string.h>

static int is_tchar(unsigned char c)
{
	/* RFC 9110 token characters. */
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int ieq(const char *a, size_t alen, const char *b)
{
	size_t blen = strlen(b);

	if (alen != blen)
		return 0;
	for (size_t i = 0; i < alen; i++) {
		char x = a[i], y = b[i];

		if (x >= 'A' && x <= 'Z')
			x = (char)(x - 'A' + 'a');
		if (x != y)
			return 0;
	}
	return 1;
}

/*
 * The next element of a comma-separated header value (RFC 9110 5.6.1), from
 * *@i on, without the whitespace around it: [*@start, *@end), possibly empty
 * (",,"). Return: 0 at the end of the value.
 */
static int next_element(const char *v, size_t len, size_t *i, size_t *start, size_t *end)
{
	if (*i >= len)
		return 0;
	while (*i < len && (v[*i] == ' ' || v[*i] == '\t' || v[*i] == ','))
		(*i)++;
	*start = *i;
	while (*i < len && v[*i] != ',')
		(*i)++;
	*end = *i;
	while (*end > *start && (v[*end - 1] == ' ' || v[*end - 1] == '\t'))
		(*end)--;
	return 1;
}

/* Does a comma-separated header value contain @token (case-insensitive)? */
static int has_token(const char *v, size_t len, const char *token)
{
	size_t i = 0, start, end;

	while (next_element(v, len, &i, &start, &end))
		if (end > start && ieq(v + start, end - start, token))
			return 1;
	return 0;
}

/*
 * An If-Match or If-None-Match value against a resource with no entity tag
 * (RFC 9110 13.1.1, 13.1.2): only "*" can match, and it does whenever the
 * resource has a current representation; no listed tag can. Return:
 * HTTP_COND_STAR for exactly "*", HTTP_COND_TAGS for anything else (a list
 * of tags, an empty or malformed value: none of it matches).
 */
static int tag_condition(const char *v, size_t len)
{
	return len == 1 && v[0] == '*' ? HTTP_COND_STAR : HTTP_COND_TAGS;
}

/* Length of the line at @s (up to and excluding LF), and its CR-less end. */
static size_t line_end(const char *s, const char *end, const char **next)
{
	const char *lf = memchr(s, '\n', (size_t)(end - s));
	size_t n = (size_t)(lf - s);

	*next = lf + 1;
	if (n > 0 && s[n - 1] == '\r')
		n--;
	return n;
}

static enum http_method method_of(const char *m, size_t n)
{
	static const char *const known[] = {"POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT"};

	if (n == 3 && memcmp(m, "GET", 3) == 0)
		return HTTP_GET;
	if (n == 4 && memcmp(m, "HEAD", 4) == 0)
		return HTTP_HEAD;
	for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
		if (n == strlen(known[k]) && memcmp(m, known[k], n) == 0)
			return HTTP_UNSUPPORTED;
	return HTTP_OTHER;
}

/*
 * The path routes match. The query is the resource's business, not the
 * route's. RFC 9112 3.2.2: a server MUST accept the absolute form
 * (http://host/p?q, sent to proxies, and by some clients to origins too);
 * its path is what follows the authority, and "/" when nothing does.
 * Return: 0 for an absolute-form target that is not a valid http(s) URI
 * (an authority that would not be a valid Host: an empty host, userinfo,
 * which RFC 9110 4.2.4 treats as an error, a bad port or character).
 */
static int set_path(struct http_request *req)
{
	const char *t = req->target, *end = t + req->target_len, *a, *p, *q;
	size_t scheme = 0;

	if (req->target_len >= 7 && ieq(t, 4, "http") && memcmp(t + 4, "://", 3) == 0)
		scheme = 7;
	else if (req->target_len >= 8 && ieq(t, 5, "https") && memcmp(t + 5, "://", 3) == 0)
		scheme = 8;
	if (!scheme) {
		/*
		 * Origin form. GET and HEAD take no other (RFC 9112 3.2): "GET foo"
		 * is a 400, as nginx answers it. Other methods' targets ("*",
		 * CONNECT's authority) are kept: they get 405 or 501 anyway.
		 */
		if (*t != '/' && (req->method == HTTP_GET || req->method == HTTP_HEAD))
			return 0;
		q = memchr(t, '?', req->target_len);
		req->path = t;
		req->path_len = q ? (size_t)(q - t) : req->target_len;
		return 1;
	}
	a = t + scheme;
	for (p = a; p < end && *p != '/' && *p != '?'; p++)
		;
	/* The server takes the target's authority and ignores Host (RFC 9112
	 * 3.2.2), so the authority is held to what Host is: no userinfo, a
	 * host that is not empty, a numeric port. */
	if (!http_host_valid(a, (size_t)(p - a)))
		return 0;
	if (p == end || *p == '?') {
		req->path = "/";
		req->path_len = 1;
		return 1;
	}
	q = memchr(p, '?', (size_t)(end - p));
	req->path = p;
	req->path_len = q ? (size_t)(q - p) : (size_t)(end - p);
	return 1;
}

static int parse_request_line(const char *s, size_t n, struct http_request *req)
{
	size_t i = 0, mstart, tstart;

	mstart = i;
	while (i < n && is_tchar((unsigned char)s[i]))
		i++;
	if (i == mstart || i >= n || s[i] != ' ')
		return -400;
	req->method = method_of(s + mstart, i - mstart);
	i++;
	tstart = i;
	while (i < n && s[i] != ' ') {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c == 0x7f)
			return -400;
		i++;
	}
	if (i == tstart || i >= n)
		return -400;
	req->target = s + tstart;
	req->target_len = i - tstart;
	if (!set_path(req))
		return -400;
	i++;
	/* HTTP-version = "HTTP/" DIGIT "." DIGIT */
	if (n - i != 8 || memcmp(s + i, "HTTP/", 5) != 0 || s[i + 6] != '.' || s[i + 5] < '0' || s[i + 5] > '9' ||
	    s[i + 7] < '0' || s[i + 7] > '9')
		return -400;
	/*
	 * RFC 9110 section 15.6.6: 505 is for a major version the server does
	 * not support. A later 1.x minor is answered as 1.1 (the highest minor
	 * this server speaks), as RFC 9110 section 2.5 asks.
	 */
	if (s[i + 5] != '1')
		return -505;
	req->minor = s[i + 7] == '0' ? 0 : 1;
	return 0;
}

static int is_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static unsigned hex_val(unsigned char c)
{
	return c <= '9' ? (unsigned)(c - '0') : (unsigned)((c | 0x20) - 'a' + 10);
}

/* RFC 3986: unreserved / sub-delims, the characters of a reg-name besides
 * pct-encoded. */
static int is_regname_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != 0 && strchr("-._~!$&'()*+,;=", c) != NULL);
}

/*
 * RFC 3986 IPv6address: up to eight groups of 1-4 hex digits, at most one
 * "::", and an IPv4 address in place of the last two groups.
 */
static int ipv6_valid(const char *s, size_t n)
{
	size_t i = 0, groups = 0;
	int gap = 0;

	if (n >= 2 && s[0] == ':' && s[1] == ':') {
		gap = 1;
		i = 2;
		if (i == n)
			return 1; /* "::" */
	} else if (n && s[0] == ':') {
		return 0;
	}
	while (i < n) {
		size_t start = i, digits = 0, dots = 0;

		while (i < n && (is_hex((unsigned char)s[i]) || s[i] == '.')) {
			dots += s[i] == '.';
			digits++;
			i++;
		}
		if (!digits)
			return 0;
		if (dots) {
			/* The trailing IPv4 address: d.d.d.d, each 0-255. */
			unsigned parts = 0, v = 0, len = 0;

			if (i != n)
				return 0;
			for (size_t k = start; k <= n; k++) {
				if (k == n || s[k] == '.') {
					if (!len || len > 3 || v > 255)
						return 0;
					parts++;
					v = len = 0;
				} else if (s[k] >= '0' && s[k] <= '9') {
					v = v * 10 + (unsigned)(s[k] - '0');
					len++;
				} else {
					return 0;
				}
			}
			if (parts != 4)
				return 0;
			groups += 2;
			break;
		}
		if (digits > 4)
			return 0;
		groups++;
		if (i == n)
			break;
		/* s[i] == ':' (anything else stopped the scan) */
		if (s[i] != ':')
			return 0;
		i++;
		if (i < n && s[i] == ':') {
			if (gap)
				return 0; /* a second "::" */
			gap = 1;
			i++;
			if (i == n)
				break;
		} else if (i == n) {
			return 0; /* a trailing single ':' */
		}
	}
	return gap ? groups <= 7 : groups == 8;
}

int http_host_valid(const char *v, size_t n)
{
	size_t i = 0;

	/* RFC 9110 4.2.1: an http URI with an empty host is invalid, and the
	 * target URI's authority comes from Host (RFC 9112 3.3). */
	if (!n || v[0] == ':')
		return 0;

	if (n && v[0] == '[') {
		const char *close = memchr(v, ']', n);
		size_t inner;

		if (!close)
			return 0;
		inner = (size_t)(close - v) - 1;
		if (inner && (v[1] == 'v' || v[1] == 'V')) {
			/* IPvFuture: "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ) */
			size_t k = 2, hex = 0, rest = 0;

			while (k <= inner && is_hex((unsigned char)v[k])) {
				k++;
				hex++;
			}
			if (!hex || k > inner || v[k] != '.')
				return 0;
			for (k++; k <= inner; k++, rest++)
				if (!is_regname_char((unsigned char)v[k]) && v[k] != ':')
					return 0;
			if (!rest)
				return 0;
		} else if (!ipv6_valid(v + 1, inner)) {
			return 0;
		}
		i = inner + 2;
	} else {
		while (i < n && v[i] != ':') {
			unsigned char c = (unsigned char)v[i];

			if (c == '%') {
				if (i + 2 >= n || !is_hex((unsigned char)v[i + 1]) || !is_hex((unsigned char)v[i + 2]))
					return 0;
				i += 3;
				continue;
			}
			if (!is_regname_char(c))
				return 0;
			i++;
		}
	}
	if (i == n)
		return 1;
	if (v[i] != ':')
		return 0;
	/* port = *DIGIT */
	for (i++; i < n; i++)
		if (v[i] < '0' || v[i] > '9')
			return 0;
	return 1;
}

/*
 * The Transfer-Encoding list (every such header field, in order). Return:
 * 0 fine so far, -400 for "chunked" twice or anything after it (RFC 9112
 * 6.3: chunked must be the final coding, applied once), -501 for another
 * coding (none is implemented).
 */
static int parse_te(const char *v, size_t len, int *chunked, int *other)
{
	size_t i = 0, start, end;

	while (next_element(v, len, &i, &start, &end)) {
		if (end == start)
			continue; /* an empty list element (RFC 9110 5.6.1) */
		if (*chunked)
			return -400; /* chunked again, or a coding after it */
		if (ieq(v + start, end - start, "chunked"))
			*chunked = 1;
		else
			*other = 1;
	}
	return 0;
}

static int parse_headers(const char *s, const char *end, struct http_request *req, uint64_t max_body)
{
	int conn_close = 0, conn_keep = 0, have_host = 0, have_cl = 0, have_te = 0, expect = 0;
	int te_chunked = 0, te_other = 0, te_bad = 0, host_bad = 0;

	for (;;) {
		const char *next, *colon, *v, *vend;
		size_t n = line_end(s, end, &next);

		if (n == 0)
			break; /* the blank line */
		if (s[0] == ' ' || s[0] == '\t')
			return -400; /* obsolete line folding */
		colon = memchr(s, ':', n);
		if (!colon || colon == s)
			return -400;
		for (const char *c = s; c < colon; c++)
			if (!is_tchar((unsigned char)*c))
				return -400; /* includes whitespace before the colon */
		v = colon + 1;
		vend = s + n;
		while (v < vend && (*v == ' ' || *v == '\t'))
			v++;
		while (vend > v && (vend[-1] == ' ' || vend[-1] == '\t'))
			vend--;
		for (const char *c = v; c < vend; c++)
			if ((unsigned char)*c < 0x20 && *c != '\t')
				return -400; /* control characters (a stray CR, NUL) */
		if (ieq(s, (size_t)(colon - s), "host")) {
			if (have_host)
				return -400;
			have_host = 1;
			host_bad = !http_host_valid(v, (size_t)(vend - v));
		} else if (ieq(s, (size_t)(colon - s), "connection")) {
			conn_close |= has_token(v, (size_t)(vend - v), "close");
			conn_keep |= has_token(v, (size_t)(vend - v), "keep-alive");
		} else if (ieq(s, (size_t)(colon - s), "content-length")) {
			size_t cl = 0;

			/* Two lengths, even equal ones, are refused (as nginx does):
			 * which one a proxy in front used is unknowable. */
			if (have_cl || vend == v)
				return -400;
			for (const char *c = v; c < vend; c++) {
				if (*c < '0' || *c > '9')
					return -400;
				if (cl > max_body || cl > (SIZE_MAX - 9) / 10)
					return -413;
				cl = cl * 10 + (size_t)(*c - '0');
			}
			if (cl > max_body)
				return -413;
			have_cl = 1;
			req->content_length = cl;
		} else if (ieq(s, (size_t)(colon - s), "transfer-encoding")) {
			int e = parse_te(v, (size_t)(vend - v), &te_chunked, &te_other);

			have_te = 1;
			if (e)
				te_bad = 1;
		} else if (ieq(s, (size_t)(colon - s), "expect")) {
			expect = ieq(v, (size_t)(vend - v), "100-continue");
		} else if (ieq(s, (size_t)(colon - s), "if-match")) {
			/* Several lines are one list (RFC 9110 5.3), answered as
			 * that list on one line: "*" only as the whole value, so
			 * never on a second line. */
			req->if_match = req->if_match == HTTP_COND_NONE ? tag_condition(v, (size_t)(vend - v))
									 : HTTP_COND_TAGS;
		} else if (ieq(s, (size_t)(colon - s), "if-none-match")) {
			req->if_none_match = req->if_none_match == HTTP_COND_NONE
						     ? tag_condition(v, (size_t)(vend - v))
						     : HTTP_COND_TAGS;
		} else if (ieq(s, (size_t)(colon - s), "if-modified-since")) {
			req->if_modified_since = 1;
		} else if (ieq(s, (size_t)(colon - s), "if-unmodified-since")) {
			req->if_unmodified_since = 1;
		}
		s = next;
	}
	/*
	 * RFC 9112 section 6.1: Content-Length with Transfer-Encoding is a
	 * request-smuggling shape, and an HTTP/1.0 message with
	 * Transfer-Encoding has faulty framing: both are 400, not 501.
	 */
	if (have_te && (have_cl || req->minor == 0))
		return -400;
	if (req->minor == 1 && !have_host)
		return -400; /* RFC 9112: a 1.1 request without Host is refused */
	if (host_bad)
		return -400; /* RFC 9112 3.2: an invalid Host is 400 */
	/*
	 * RFC 9112 6.3: chunked must be the final coding; a list with it twice
	 * or not last cannot be framed (400). Any other coding is one this
	 * server does not implement (501), as is a list of nothing but empty
	 * elements.
	 */
	if (te_bad)
		return -400;
	if (have_te && (te_other || !te_chunked))
		return -501;
	req->chunked = te_chunked;
	req->keep_alive = req->minor == 1 ? !conn_close : (conn_keep && !conn_close);
	req->expect_continue = expect && req->minor == 1;
	return 0;
}

int http_parse(struct http_parser *p, const char *buf, size_t len, struct http_request *req)
{
	return http_parse_limited(p, buf, len, req, HTTP_MAX_BODY);
}

int http_parse_limited(struct http_parser *p, const char *buf, size_t len, struct http_request *req,
		       uint64_t max_body)
{
	const char *end = NULL, *next;
	size_t start = 0, i, limit = len < HTTP_MAX_HEAD ? len : HTTP_MAX_HEAD;
	size_t n;
	int err;

	/* Empty lines before the request line are ignored (RFC 9112 2.2), as
	 * many as fit in the head limit. */
	while (start < len && (buf[start] == '\n' || buf[start] == '\r')) {
		if (buf[start] == '\n') {
			start++;
		} else if (start + 1 == len) {
			return 0; /* a CR: is an LF next? */
		} else if (buf[start + 1] == '\n') {
			start += 2;
		} else {
			return -400; /* a bare CR */
		}
		if (start >= HTTP_MAX_HEAD)
			return -400; /* nothing but empty lines */
	}
	if (start == len)
		return 0;
	/*
	 * A request line starts with a method token. Decide on its first byte
	 * alone, so every split of the same bytes gets the same answer.
	 */
	if (!is_tchar((unsigned char)buf[start]))
		return -400;
	/* Find LF LF or LF CR LF, resuming where the last call stopped. */
	for (i = p->scanned > start ? p->scanned : start; i < limit; i++) {
		if (buf[i] != '\n' || i == start)
			continue;
		if (buf[i - 1] == '\n' || (i >= start + 2 && buf[i - 1] == '\r' && buf[i - 2] == '\n')) {
			end = buf + i + 1;
			break;
		}
	}
	if (!end) {
		/* Resume two bytes back: a CRLF may straddle this call's end. */
		p->scanned = i > 2 ? i - 2 : 0;
		if (len >= HTTP_MAX_HEAD)
			return memchr(buf + start, '\n', HTTP_MAX_HEAD - start) ? -431 : -414;
		return 0;
	}
	memset(req, 0, sizeof(*req));
	req->head_len = (size_t)(end - buf);
	n = line_end(buf + start, end, &next);
	req->line = buf + start;
	req->line_len = n;
	err = parse_request_line(buf + start, n, req);
	if (err)
		return err;
	err = parse_headers(next, end, req, max_body);
	if (err)
		return err;
	return 1;
}

/* ---- chunked bodies (RFC 9112 7.1) ------------------------------------ */

enum {
	CH_SIZE,       /* chunk-size: hex digits */
	CH_SIZE_WS,    /* whitespace after the size (BWS before ';') */
	CH_EXT,        /* chunk-ext: skipped up to CR */
	CH_SIZE_LF,    /* the LF that ends the chunk-size line */
	CH_DATA,       /* chunk-data */
	CH_DATA_CR,    /* the CRLF after chunk-data */
	CH_DATA_LF,
	CH_TRAILER,    /* the start of a trailer line, or of the final CRLF */
	CH_TNAME,      /* a trailer field's name */
	CH_TVALUE,     /* its value, up to CR */
	CH_TLF,        /* the LF that ends a trailer line */
	CH_END_LF,     /* the LF of the final CRLF */
	CH_DONE,
};

void http_chunked_init(struct http_chunked *d, uint64_t max_body)
{
	memset(d, 0, sizeof(*d));
	d->max_body = max_body;
	d->state = CH_SIZE;
}

/* A control character a field value or extension may not hold (HTAB may). */
static int is_ctl(unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; }

int http_chunked_feed(struct http_chunked *d, const char *buf, size_t len, size_t *used)
{
	size_t i = 0;

	*used = 0;
	while (i < len) {
		unsigned char c = (unsigned char)buf[i];

		switch (d->state) {
		case CH_SIZE:
			if (is_hex(c)) {
				if (d->left > (UINT64_MAX >> 4) || ++d->digits > HTTP_MAX_CHUNK_DIGITS)
					return -400; /* overflow, or endless leading zeros */
				d->left = d->left << 4 | hex_val(c);
				break;
			}
			if (!d->digits)
				return -400; /* no size */
			if (c == ' ' || c == '\t') {
				d->state = CH_SIZE_WS;
				if (++d->ext > HTTP_MAX_CHUNK_EXT) /* counted with the extensions */
					return -400;
			} else if (c == ';')
				d->state = CH_EXT;
			else if (c == '\r')
				d->state = CH_SIZE_LF;
			else
				return -400;
			break;
		case CH_SIZE_WS:
			/* Counted with the extensions: endless whitespace after a
			 * size must not hold the connection for ever either. */
			if (c == ';')
				d->state = CH_EXT;
			else if (c == '\r')
				d->state = CH_SIZE_LF;
			else if ((c != ' ' && c != '\t') || ++d->ext > HTTP_MAX_CHUNK_EXT)
				return -400;
			break;
		case CH_EXT:
			/* Extensions mean nothing here: skipped, but bounded, and no
			 * control characters (a bare LF ends nothing). */
			if (c == '\r') {
				d->state = CH_SIZE_LF;
				break;
			}
			if (is_ctl(c) || ++d->ext > HTTP_MAX_CHUNK_EXT)
				return -400;
			break;
		case CH_SIZE_LF:
			if (c != '\n')
				return -400;
			d->digits = 0;
			if (!d->left) {
				d->state = CH_TRAILER; /* the last chunk */
				break;
			}
			/* Refuse at the size that passes the limit, before its data. */
			if (d->max_body != HTTP_NO_BODY_LIMIT &&
			    (d->left > d->max_body || d->total > d->max_body - d->left))
				return -413;
			d->state = CH_DATA;
			break;
		case CH_DATA: {
			size_t n = len - i < d->left ? len - i : (size_t)d->left;

			d->left -= n;
			d->total += n;
			i += n;
			if (!d->left)
				d->state = CH_DATA_CR;
			continue;
		}
		case CH_DATA_CR:
			if (c != '\r')
				return -400; /* chunk-data longer than its size, or no CRLF */
			d->state = CH_DATA_LF;
			break;
		case CH_DATA_LF:
			if (c != '\n')
				return -400;
			d->state = CH_SIZE;
			break;
		case CH_TRAILER:
			if (c == '\r') {
				d->state = CH_END_LF;
				break;
			}
			if (!is_tchar(c))
				return -400; /* obs-fold, or no field name */
			d->state = CH_TNAME;
			goto trailer_byte;
		case CH_TNAME:
			if (c == ':')
				d->state = CH_TVALUE;
			else if (!is_tchar(c))
				return -400;
			goto trailer_byte;
		case CH_TVALUE:
			if (c == '\r')
				d->state = CH_TLF;
			else if (is_ctl(c))
				return -400;
			goto trailer_byte;
		case CH_TLF:
			if (c != '\n')
				return -400;
			d->state = CH_TRAILER;
		trailer_byte:
			if (++d->trailers > HTTP_MAX_TRAILERS)
				return -431;
			break;
		case CH_END_LF:
			if (c != '\n')
				return -400;
			d->state = CH_DONE;
			*used = i + 1;
			return 1;
		default:
			*used = i;
			return 1;
		}
		i++;
	}
	*used = len;
	return 0;
}

const char *http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 412: return "Precondition Failed";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "";
	}
}

int http_precondition(const struct http_request *req)
{
	if (req->if_match == HTTP_COND_TAGS)
		return 412;
	/* If-Unmodified-Since: nothing to compare with, ignored (13.1.4). */
	if (req->if_none_match == HTTP_COND_STAR)
		return 304;
	/* If-Modified-Since: likewise ignored (13.1.3). */
	return 0;
}
