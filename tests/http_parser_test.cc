// The incremental request parser: codes for bad input, and the same result
// for the same bytes however they are split.
#include <gtest/gtest.h>

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
	EXPECT_EQ(parse_whole("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", &r), -501);
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
