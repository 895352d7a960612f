// The incremental request parser: codes for bad input, and the same result
// for the same bytes however they are split.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "net/http.h"

namespace {

// The request points into the buffer, so the buffer must outlive it: keep
// the last one parsed here.
std::string last_buffer;

int parse_whole(const std::string &s, http_request *req) {
	last_buffer = s;
	http_parser p;
	http_parser_reset(&p);
	return http_parse(&p, last_buffer.data(), last_buffer.size(), req);
}

// Feed the bytes in two pieces split at every point: same outcome.
void expect_split_invariant(const std::string &s) {
	http_request whole;
	int want = parse_whole(s, &whole);
	for (size_t cut = 0; cut <= s.size(); cut++) {
		http_parser p;
		http_parser_reset(&p);
		http_request req;
		int r = http_parse(&p, s.data(), cut, &req);
		if (r == 0)
			r = http_parse(&p, s.data(), s.size(), &req);
		if (want < 0 && r < 0)
			continue; // refused either way (possibly earlier)
		ASSERT_EQ(r, want) << "cut at " << cut;
		if (r == 1)
			EXPECT_EQ(req.head_len, whole.head_len) << cut;
	}
}

} // namespace

TEST(HttpParser, SimpleGet) {
	http_request r;
	ASSERT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\n\r\n", &r), 1);
	EXPECT_EQ(r.method, HTTP_GET);
	EXPECT_EQ(r.minor, 1);
	EXPECT_EQ(r.keep_alive, 1);
	EXPECT_EQ(std::string(r.target, r.target_len), "/");
	EXPECT_EQ(r.head_len, 27u);
}

TEST(HttpParser, NeedsMoreUntilTheBlankLine) {
	http_request r;
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\n", &r), 0);
	EXPECT_EQ(parse_whole("GET / HT", &r), 0);
	EXPECT_EQ(parse_whole("", &r), 0);
}

TEST(HttpParser, KeepAliveRules) {
	http_request r;
	ASSERT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", &r), 1);
	EXPECT_EQ(r.keep_alive, 0);
	ASSERT_EQ(parse_whole("GET / HTTP/1.0\r\n\r\n", &r), 1);
	EXPECT_EQ(r.keep_alive, 0);
	ASSERT_EQ(parse_whole("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &r), 1);
	EXPECT_EQ(r.keep_alive, 1);
	ASSERT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade, CLOSE\r\n\r\n", &r), 1);
	EXPECT_EQ(r.keep_alive, 0);
}

TEST(HttpParser, HeadAndOtherMethods) {
	http_request r;
	ASSERT_EQ(parse_whole("HEAD /x HTTP/1.1\r\nHost: a\r\n\r\n", &r), 1);
	EXPECT_EQ(r.method, HTTP_HEAD);
	// Known methods the server does not serve: 405.
	for (const char *m : {"POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT"}) {
		ASSERT_EQ(parse_whole(std::string(m) + " / HTTP/1.1\r\nHost: a\r\n\r\n", &r), 1) << m;
		EXPECT_EQ(r.method, HTTP_UNSUPPORTED) << m;
	}
	// Unrecognized ones (methods are case-sensitive): 501.
	for (const char *m : {"FOO", "get", "Head", "POSTX", "GE"}) {
		ASSERT_EQ(parse_whole(std::string(m) + " / HTTP/1.1\r\nHost: a\r\n\r\n", &r), 1) << m;
		EXPECT_EQ(r.method, HTTP_OTHER) << m;
	}
}

TEST(HttpParser, LenientLineEndings) {
	http_request r;
	ASSERT_EQ(parse_whole("GET / HTTP/1.1\nHost: a\n\n", &r), 1);
	EXPECT_EQ(r.head_len, 24u);
}

TEST(HttpParser, ContentLength) {
	http_request r;
	ASSERT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", &r), 1);
	EXPECT_EQ(r.content_length, 5u);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", &r), -400);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", &r), -400);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", &r), -413);
}

TEST(HttpParser, BadInputCodes) {
	http_request r;
	EXPECT_EQ(parse_whole("GARBAGE\r\n\r\n", &r), -400);
	EXPECT_EQ(parse_whole("GET /\r\n\r\n", &r), -400);
	EXPECT_EQ(parse_whole("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", &r), -400);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\n\r\n", &r), -400); // no Host
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost : a\r\n\r\n", &r), -400);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", &r), -400);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", &r), -400);
	EXPECT_EQ(parse_whole("GET / HTTP/2.0\r\nHost: a\r\n\r\n", &r), -505);
	EXPECT_EQ(parse_whole("GET / HTTX/1.1\r\nHost: a\r\n\r\n", &r), -400);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", &r), -501);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", &r), -400);
	EXPECT_EQ(parse_whole(std::string("\x01\x02 binary"), &r), -400);
}

TEST(HttpParser, OversizedRequestLineIs414) {
	http_request r;
	std::string s = "GET /" + std::string(HTTP_MAX_HEAD, 'a');
	EXPECT_EQ(parse_whole(s, &r), -414);
	// The limit is the whole head's: a line of 7 KiB and 3 KiB of headers.
	std::string h = "GET /" + std::string(7000, 'a') + " HTTP/1.1\r\nHost: a\r\nX: " + std::string(3000, 'b');
	EXPECT_EQ(parse_whole(h + "\r\n\r\n", &r), -431);
}

TEST(HttpParser, OversizedHeadersAre431) {
	http_request r;
	std::string s = "GET / HTTP/1.1\r\nHost: a\r\n";
	while (s.size() < HTTP_MAX_HEAD + 10)
		s += "X-Filler: " + std::string(100, 'b') + "\r\n";
	EXPECT_EQ(parse_whole(s, &r), -431);
	// Just under the limit is fine.
	std::string ok = "GET / HTTP/1.1\r\nHost: a\r\nX-F: " + std::string(HTTP_MAX_HEAD - 40, 'c') + "\r\n\r\n";
	ASSERT_LE(ok.size(), size_t(HTTP_MAX_HEAD));
	EXPECT_EQ(parse_whole(ok, &r), 1);
}

TEST(HttpParser, PipelinedRequestsParseOneAtATime) {
	std::string two = "GET /a HTTP/1.1\r\nHost: a\r\n\r\nHEAD /b HTTP/1.1\r\nHost: a\r\n\r\n";
	http_request r;
	ASSERT_EQ(parse_whole(two, &r), 1);
	EXPECT_EQ(std::string(r.target, r.target_len), "/a");
	size_t first = r.head_len;
	ASSERT_EQ(parse_whole(two.substr(first), &r), 1);
	EXPECT_EQ(std::string(r.target, r.target_len), "/b");
	EXPECT_EQ(r.method, HTTP_HEAD);
}

TEST(HttpParser, SplitAtEveryPointGivesTheSameResult) {
	const char *cases[] = {
	    "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
	    "GET /stats HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
	    "GET / HTTP/1.1\nHost: a\n\n",
	    "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
	    "GET / HTTP/2.0\r\nHost: a\r\n\r\n",
	    "GARBAGE\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
	};
	for (const char *c : cases)
		expect_split_invariant(c);
}

TEST(HttpParser, ByteAtATimeIsLinear) {
	// A slowloris-style trickle: every call resumes where the last stopped.
	std::string s = "GET / HTTP/1.1\r\nHost: a\r\n";
	while (s.size() < 8000)
		s += "X: y\r\n";
	s += "\r\n";
	http_parser p;
	http_parser_reset(&p);
	http_request r;
	int got = 0;
	for (size_t n = 1; n <= s.size() && got == 0; n++) {
		got = http_parse(&p, s.data(), n, &r);
		ASSERT_LE(p.scanned, n);
	}
	EXPECT_EQ(got, 1);
}

TEST(HttpParser, DuplicateContentLengthIs400EvenWhenEqual) {
	http_request r;
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", &r), -400);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\ncontent-length: 0\r\n\r\n", &r), -400);
}

TEST(HttpParser, ContentLengthWithTransferEncodingIs400) {
	http_request r;
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", &r),
		  -400);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", &r),
		  -400);
}

TEST(HttpParser, TransferEncodingOnHttp10Is400) {
	http_request r;
	EXPECT_EQ(parse_whole("GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", &r), -400);
}

TEST(HttpParser, TransferEncodingAloneIs501) {
	http_request r;
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", &r), -501);
}

TEST(HttpParser, QueryIsNotPartOfThePath) {
	http_request r;
	ASSERT_EQ(parse_whole("GET /stats?x=1&y HTTP/1.1\r\nHost: a\r\n\r\n", &r), 1);
	EXPECT_EQ(std::string(r.target, r.target_len), "/stats?x=1&y");
	EXPECT_EQ(std::string(r.target, r.path_len), "/stats");
	ASSERT_EQ(parse_whole("GET /? HTTP/1.1\r\nHost: a\r\n\r\n", &r), 1);
	EXPECT_EQ(r.path_len, 1u);
	ASSERT_EQ(parse_whole("GET /a HTTP/1.1\r\nHost: a\r\n\r\n", &r), 1);
	EXPECT_EQ(r.path_len, 2u);
}

// RFC 9112 3.2.2: the absolute form is accepted; routes match its path.
TEST(HttpParser, AbsoluteFormTargetsRouteByTheirPath) {
	http_request r;
	const std::pair<const char *, const char *> ok[] = {
	    {"http://t/stats", "/stats"}, {"http://t/", "/"},          {"http://t", "/"},
	    {"http://t?x=1", "/"},        {"HTTPS://t:8443/a?b", "/a"}, {"http://[::1]:80/x", "/x"},
	    {"/plain?q", "/plain"},
	};
	for (const auto &c : ok) {
		ASSERT_EQ(parse_whole(std::string("GET ") + c.first + " HTTP/1.1\r\nHost: t\r\n\r\n", &r), 1) << c.first;
		EXPECT_EQ(std::string(r.path, r.path_len), c.second) << c.first;
		EXPECT_EQ(std::string(r.target, r.target_len), c.first); // the log keeps the whole target
	}
	for (const char *bad : {"http://", "http:///x", "http://:80/", "http://u@t/", "https://?x", "foo", "*", "t:80", "?q"})
		EXPECT_EQ(parse_whole(std::string("GET ") + bad + " HTTP/1.1\r\nHost: t\r\n\r\n", &r), -400) << bad;
}

// RFC 9112 3.2.2: with an absolute-form target the server ignores Host and
// takes the target's authority, so that authority is held to what a Host
// value is (RFC 9112 3.2): an invalid one is 400 however valid Host is, as
// nginx answers it. Before, "http://a<b/" and "http://[::1/" were served.
TEST(HttpParser, AbsoluteFormAuthorityIsValidatedAsHostIs) {
	http_request r;

	for (const char *bad : {"http://a<b/", "http://[::1/", "http://a:x/", "http://a\\b/", "http://a%zz/",
				"http://[::1]x/", "https://a:80:80?q", "http://a\"b/"})
		EXPECT_EQ(parse_whole(std::string("GET ") + bad + " HTTP/1.1\r\nHost: t\r\n\r\n", &r), -400) << bad;
	for (const char *good : {"http://a.b:8080/x", "http://[::1]/", "http://[::1]:80?q", "http://a:/"})
		EXPECT_EQ(parse_whole(std::string("GET ") + good + " HTTP/1.1\r\nHost: t\r\n\r\n", &r), 1) << good;
}

TEST(HttpParser, ExpectContinueOnlyOnHttp11) {
	http_request r;
	ASSERT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n", &r), 1);
	EXPECT_EQ(r.expect_continue, 1);
	ASSERT_EQ(parse_whole("GET / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n", &r), 1);
	EXPECT_EQ(r.expect_continue, 0);
	ASSERT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nExpect: something-else\r\n\r\n", &r), 1);
	EXPECT_EQ(r.expect_continue, 0);
}

TEST(HttpParser, LaterMinorVersionIsAnsweredAsHttp11) {
	http_request r;
	ASSERT_EQ(parse_whole("GET / HTTP/1.2\r\nHost: a\r\n\r\n", &r), 1);
	EXPECT_EQ(r.minor, 1);
	EXPECT_EQ(r.keep_alive, 1);
	ASSERT_EQ(parse_whole("GET / HTTP/1.9\r\nHost: a\r\n\r\n", &r), 1);
	EXPECT_EQ(r.minor, 1);
	EXPECT_EQ(parse_whole("GET / HTTP/1.2\r\n\r\n", &r), -400); // 1.x rules: Host required
}

TEST(HttpParser, OtherMajorVersionIs505) {
	http_request r;
	EXPECT_EQ(parse_whole("GET / HTTP/2.0\r\nHost: a\r\n\r\n", &r), -505);
	EXPECT_EQ(parse_whole("GET / HTTP/3.1\r\nHost: a\r\n\r\n", &r), -505);
	EXPECT_EQ(parse_whole("GET / HTTP/0.9\r\nHost: a\r\n\r\n", &r), -505);
	EXPECT_EQ(parse_whole("GET / HTTP/1.10\r\nHost: a\r\n\r\n", &r), -400); // not DIGIT "." DIGIT
}

TEST(HttpParser, EmptyLinesBeforeTheRequestLineAreIgnored) {
	http_request r;
	ASSERT_EQ(parse_whole("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", &r), 1);
	EXPECT_EQ(r.head_len, 29u); // the empty line is consumed with the head
	EXPECT_EQ(std::string(r.line, r.line_len), "GET / HTTP/1.1");
	ASSERT_EQ(parse_whole("\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", &r), 1);
	ASSERT_EQ(parse_whole("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", &r), 1);
	EXPECT_EQ(r.head_len, 31u);
	EXPECT_EQ(parse_whole("\r\n", &r), 0);
	EXPECT_EQ(parse_whole("\r", &r), 0);
	EXPECT_EQ(parse_whole("\rGET / HTTP/1.1\r\nHost: a\r\n\r\n", &r), -400); // a bare CR
	EXPECT_EQ(parse_whole(std::string(HTTP_MAX_HEAD, '\n'), &r), -400);     // nothing else
}

TEST(HttpParser, RequestLineIsExposedForTheLog) {
	http_request r;
	ASSERT_EQ(parse_whole("HEAD /x?y HTTP/1.0\r\n\r\n", &r), 1);
	EXPECT_EQ(std::string(r.line, r.line_len), "HEAD /x?y HTTP/1.0");
}

TEST(HttpParser, NewCasesSplitAtEveryPointGiveTheSameResult) {
	const char *cases[] = {
	    "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	    "\n\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	    "\r\rGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
	    "GET /?a=1 HTTP/1.2\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
	};
	for (const char *c : cases)
		expect_split_invariant(c);
}

// ---- chunked bodies ----------------------------------------------------------

namespace {

// Decode @body in one call, then split at every point (and byte by byte):
// the same result and the same end.
int decode(const std::string &body, size_t *used, uint64_t max_body = HTTP_NO_BODY_LIMIT) {
	http_chunked d;
	http_chunked_init(&d, max_body);
	int r = http_chunked_feed(&d, body.data(), body.size(), used);
	for (size_t cut = 0; cut <= body.size(); cut++) {
		http_chunked p;
		size_t u1 = 0, u2 = 0;
		http_chunked_init(&p, max_body);
		int a = http_chunked_feed(&p, body.data(), cut, &u1);
		int b = a;
		if (a == 0) {
			b = http_chunked_feed(&p, body.data() + cut, body.size() - cut, &u2);
			u2 += cut;
		} else {
			u2 = u1;
		}
		if (r < 0 && b < 0)
			continue; // refused either way
		EXPECT_EQ(b, r) << "cut at " << cut;
		if (r == 1)
			EXPECT_EQ(u2, *used) << "cut at " << cut;
	}
	http_chunked q;
	http_chunked_init(&q, max_body);
	int last = 0;
	size_t consumed = 0;
	for (size_t i = 0; i < body.size() && last == 0; i++) {
		size_t u;
		last = http_chunked_feed(&q, body.data() + i, 1, &u);
		consumed += u;
	}
	if (r != 0 && !(r < 0 && last < 0))
		EXPECT_EQ(last, r) << "byte at a time";
	if (r == 1)
		EXPECT_EQ(consumed, *used);
	return r;
}

} // namespace

TEST(HttpParser, ChunkedIsTheFinalCodingCaseInsensitive) {
	http_request r;
	ASSERT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", &r), 1);
	EXPECT_EQ(r.chunked, 1);
	EXPECT_EQ(r.content_length, 0u);
	ASSERT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ChUnKeD\r\n\r\n", &r), 1);
	EXPECT_EQ(r.chunked, 1);
	ASSERT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: , chunked ,\r\n\r\n", &r), 1);
	EXPECT_EQ(r.chunked, 1);
	ASSERT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\n\r\n", &r), 1);
	EXPECT_EQ(r.chunked, 0);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", &r), -501);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", &r), -400);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", &r), -400);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
			      &r),
		  -400);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", &r), -501);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n", &r), -501);
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n", &r),
		  -400);
}

TEST(HttpParser, ChunkedBodyEndsWhereItSays) {
	size_t used = 0;
	const std::string body = "5\r\nhello\r\nA;ext=1;q=\"x y\"\r\n0123456789\r\n0\r\n\r\n";
	EXPECT_EQ(decode(body + "GET / HTTP/1.1\r\n", &used), 1);
	EXPECT_EQ(used, body.size());
	const std::string trailers = "3 ; a\r\nabc\r\n000\r\nX-T: 1\r\nY:\r\n\r\n";
	EXPECT_EQ(decode(trailers + "next", &used), 1);
	EXPECT_EQ(used, trailers.size());
	EXPECT_EQ(decode("5\r\nhel", &used), 0);
	EXPECT_EQ(used, 6u);
	EXPECT_EQ(decode("0\r\n\r", &used), 0);
	http_chunked d;
	http_chunked_init(&d, HTTP_NO_BODY_LIMIT);
	ASSERT_EQ(http_chunked_feed(&d, "ffffffffffffffff\r\n", 18, &used), 0); // 2^64 - 1: fine
	EXPECT_EQ(d.left, UINT64_MAX);
}

TEST(HttpParser, BadChunkedFramingIsRefused) {
	size_t used;
	EXPECT_EQ(decode("10000000000000000\r\n", &used), -400); // 2^64
	EXPECT_EQ(decode(std::string(HTTP_MAX_CHUNK_DIGITS + 1, '0') + "1\r\nx\r\n0\r\n\r\n", &used), -400);
	EXPECT_EQ(decode("x\r\n", &used), -400);
	EXPECT_EQ(decode(";a\r\n", &used), -400);
	EXPECT_EQ(decode("5\nhello\r\n0\r\n\r\n", &used), -400);
	EXPECT_EQ(decode("5\r\nhello\n0\r\n\r\n", &used), -400);
	EXPECT_EQ(decode("5\r\nhelloo\r\n0\r\n\r\n", &used), -400);
	EXPECT_EQ(decode("5 x\r\nhello\r\n0\r\n\r\n", &used), -400);
	EXPECT_EQ(decode("1;a\x01\r\nx\r\n0\r\n\r\n", &used), -400);
	EXPECT_EQ(decode("1;a\nb\r\nx\r\n0\r\n\r\n", &used), -400);
	EXPECT_EQ(decode("0\r\n folded\r\n\r\n", &used), -400);
	EXPECT_EQ(decode("0\r\nNoColon\r\n\r\n", &used), -400);
	EXPECT_EQ(decode("0\r\nBad Name: 1\r\n\r\n", &used), -400);
	EXPECT_EQ(decode("0\r\nX: a\x7f\r\n\r\n", &used), -400);
	EXPECT_EQ(decode("0\r\n\n", &used), -400);
	// Extensions: bounded over the whole body, not per line.
	std::string ext;
	for (int i = 0; i < 9; i++)
		ext += "1;" + std::string(500, 'e') + "\r\nx\r\n";
	EXPECT_EQ(decode(ext + "0\r\n\r\n", &used), -400);
	EXPECT_EQ(decode("1;" + std::string(HTTP_MAX_CHUNK_EXT - 1, 'e') + "\r\nx\r\n0\r\n\r\n", &used), 1);
	EXPECT_EQ(decode("0\r\nX: " + std::string(HTTP_MAX_TRAILERS, 't') + "\r\n\r\n", &used), -431);
	EXPECT_EQ(decode("1" + std::string(HTTP_MAX_CHUNK_EXT + 1, ' ') + "\r\nx\r\n0\r\n\r\n", &used), -400);
	EXPECT_EQ(decode("1 \t ;a\r\nx\r\n0\r\n\r\n", &used), 1);
}

TEST(HttpParser, ChunkedBodyLimitIsCheckedAtTheSizeLine) {
	size_t used;
	EXPECT_EQ(decode("a\r\n0123456789\r\n0\r\n\r\n", &used, 10), 1);
	EXPECT_EQ(decode("b\r\n", &used, 10), -413);
	EXPECT_EQ(decode("6\r\n012345\r\n5\r\n", &used, 10), -413);
	EXPECT_EQ(decode("ffffffffffffffff\r\n", &used, 10), -413);
	http_request r;
	std::string s = "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n";
	http_parser p;
	http_parser_reset(&p);
	EXPECT_EQ(http_parse_limited(&p, s.data(), s.size(), &r, 10), -413);
	http_parser_reset(&p);
	EXPECT_EQ(http_parse_limited(&p, s.data(), s.size(), &r, HTTP_NO_BODY_LIMIT), 1);
	EXPECT_EQ(r.content_length, 11u);
}

TEST(HttpParser, HostIsAnAuthorityWithoutUserinfo) {
	for (const char *h : {"a", "a.b.c.", "A-Z_0~9", "127.0.0.1", "1.2.3.4:65535", "[::]", "[::1]:80", "[1:2:3:4:5:6:7:8]",
			      "[1::8]", "[::ffff:1.2.3.4]", "[v1.x:y]", "%41b", "!$&'()*+,;=", "a:"}) {
		EXPECT_TRUE(http_host_valid(h, strlen(h))) << h;
	}
	for (const char *h : {"a b", "a/b", "a\tb", "a:99x", "a@b", "u:p@h", "[::1", "::1", "[::1]x", "[1:2:3:4:5:6:7:8:9]",
			      "[1::2::3]", "[12345::]", "[:1]", "[1:]", "[::1.2.3]", "[::1.2.3.256]", "[v.x]", "[v1.]", "a%4",
			      "a%g0", "a?b", "a#b", "a\\b", "\"a\"", "a:-1", "a:1:2", "[]", "", ":80"}) {
		EXPECT_FALSE(http_host_valid(h, strlen(h))) << h;
	}
}

TEST(HttpParser, ChunkedAndHostCasesSplitAtEveryPointGiveTheSameResult) {
	const char *cases[] = {
	    "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: [::1]:8\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: a@b\r\n\r\n",
	};
	for (const char *c : cases)
		expect_split_invariant(c);
}

// Precondition fields: "*" and anything else (tags, empty, malformed), the
// date fields only as present; and RFC 9110 13.2.2's order over them for a
// resource without validators.
TEST(HttpParser, PreconditionsParsedAndEvaluatedInRfcOrder) {
	struct Row {
		const char *headers;
		int if_match, if_none_match, ims, ius, answer;
	} rows[] = {
		{"", HTTP_COND_NONE, HTTP_COND_NONE, 0, 0, 0},
		{"If-Match: *\r\n", HTTP_COND_STAR, HTTP_COND_NONE, 0, 0, 0},
		{"if-match:   *  \r\n", HTTP_COND_STAR, HTTP_COND_NONE, 0, 0, 0},
		{"If-Match: \"zz\"\r\n", HTTP_COND_TAGS, HTTP_COND_NONE, 0, 0, 412},
		{"If-Match: \"zz\", *\r\n", HTTP_COND_TAGS, HTTP_COND_NONE, 0, 0, 412},
		{"If-Match:\r\n", HTTP_COND_TAGS, HTTP_COND_NONE, 0, 0, 412},
		{"If-Match: *\r\nIf-Match: *\r\n", HTTP_COND_TAGS, HTTP_COND_NONE, 0, 0, 412},
		{"If-Match: \"a\"\r\nIf-Match: *\r\n", HTTP_COND_TAGS, HTTP_COND_NONE, 0, 0, 412},
		{"If-None-Match: *\r\n", HTTP_COND_NONE, HTTP_COND_STAR, 0, 0, 304},
		{"If-None-Match: W/\"a\"\r\n", HTTP_COND_NONE, HTTP_COND_TAGS, 0, 0, 0},
		{"If-None-Match: \"a\"\r\nIf-None-Match: *\r\n", HTTP_COND_NONE, HTTP_COND_TAGS, 0, 0, 0},
		{"If-None-Match: *\r\nIf-None-Match: \"a\"\r\n", HTTP_COND_NONE, HTTP_COND_TAGS, 0, 0, 0},
		{"If-Modified-Since: x\r\n", HTTP_COND_NONE, HTTP_COND_NONE, 1, 0, 0},
		{"If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n", HTTP_COND_NONE, HTTP_COND_NONE, 0, 1, 0},
		// If-Match is evaluated first: a failed one is 412 even beside If-None-Match: *.
		{"If-None-Match: *\r\nIf-Match: \"zz\"\r\n", HTTP_COND_TAGS, HTTP_COND_STAR, 0, 0, 412},
		{"If-None-Match: *\r\nIf-Match: *\r\n", HTTP_COND_STAR, HTTP_COND_STAR, 0, 0, 304},
		{"If-Unmodified-Since: x\r\nIf-None-Match: *\r\nIf-Modified-Since: x\r\n", HTTP_COND_NONE,
		 HTTP_COND_STAR, 1, 1, 304},
	};
	for (const Row &row : rows) {
		std::string s = std::string("GET / HTTP/1.1\r\nHost: a\r\n") + row.headers + "\r\n";
		http_request r;
		ASSERT_EQ(parse_whole(s, &r), 1) << s;
		EXPECT_EQ(r.if_match, row.if_match) << s;
		EXPECT_EQ(r.if_none_match, row.if_none_match) << s;
		EXPECT_EQ(r.if_modified_since, row.ims) << s;
		EXPECT_EQ(r.if_unmodified_since, row.ius) << s;
		EXPECT_EQ(http_precondition(&r), row.answer) << s;
		expect_split_invariant(s);
	}
	EXPECT_STREQ(http_reason(304), "Not Modified");
	EXPECT_STREQ(http_reason(412), "Precondition Failed");
}

// A list field on several lines is one list (RFC 9110 5.3): answered as the
// same list on one line, joined with commas. "*" is only "*" as the whole
// value, so two lines are never "*" (as `"a", *` and `*, *` on one line are
// not): If-Match is false, If-None-Match true. (Two lines with a "*" in one
// were "*", so the answer depended on how the client split the list.)
TEST(HttpParser, AConditionOnTwoLinesIsAnsweredAsTheSameListOnOne) {
	const char *pairs[][2] = {{"\"a\"", "*"}, {"*", "\"a\""}, {"*", "*"}, {"", "*"}, {"W/\"a\"", "\"b\""}};
	for (const char *field : {"If-Match", "If-None-Match"}) {
		for (const auto &p : pairs) {
			std::string two = std::string("GET / HTTP/1.1\r\nHost: a\r\n") + field + ": " + p[0] + "\r\n" + field +
					  ": " + p[1] + "\r\n\r\n";
			std::string one = std::string("GET / HTTP/1.1\r\nHost: a\r\n") + field + ": " + p[0] + ", " + p[1] +
					  "\r\n\r\n";
			http_request r2, r1;
			ASSERT_EQ(parse_whole(two, &r2), 1) << two;
			ASSERT_EQ(parse_whole(one, &r1), 1) << one;
			EXPECT_EQ(r2.if_match, r1.if_match) << two;
			EXPECT_EQ(r2.if_none_match, r1.if_none_match) << two;
			EXPECT_EQ(http_precondition(&r2), http_precondition(&r1)) << two;
		}
	}
}
