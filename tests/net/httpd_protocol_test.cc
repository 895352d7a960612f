// tests/net/httpd_protocol_test.cc: the server's HTTP, compared byte for
// byte with nginx 1.22 where nginx answers: framing (Content-Length,
// chunked bodies), request targets, versions, Expect: 100-continue, Host,
// preconditions. The real server binary and raw sockets on loopback.
#include <gtest/gtest.h>

#include <unistd.h>

#include <string>
#include <vector>

#include "tests/net/httpd_client.h"

using kt_test::ask;
using kt_test::connect_to;
using kt_test::get_stats;
using kt_test::Httpd;
using kt_test::HttpdTest;
using kt_test::json_field;
using kt_test::kGet;
using kt_test::kRecvSlackMs;
using kt_test::kSchedSlackMs;
using kt_test::kUnitMs;
using kt_test::now_ms;
using kt_test::read_response;
using kt_test::Response;
using kt_test::send_all;
using kt_test::status_line;
using kt_test::wait_eof;

// ---- bad requests: clear codes -----------------------------------------------

TEST_F(HttpdTest, MalformedAndOversizedRequestsGetClearCodesAndClose) {
	Httpd s({"--workers", "2"});
	std::string big_line = "GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: t\r\n\r\n";
	std::string big_headers = "GET / HTTP/1.1\r\nHost: t\r\n";
	while (big_headers.size() < 9000)
		big_headers += "X-Filler: " + std::string(100, 'b') + "\r\n";
	big_headers += "\r\n";
	const std::vector<std::pair<std::string, int>> cases = {
	    {"GARBAGE\r\n\r\n", 400},
	    {"GET / HTTP/1.1\r\n\r\n", 400}, // no Host
	    {"GET / HTTP/1.1\r\nHost: t\r\n folded\r\n\r\n", 400},
	    {"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n", 405},
	    {"DELETE / HTTP/1.1\r\nHost: t\r\n\r\n", 405},
	    {"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505},
	    {"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
	    {big_line, 414},
	    {big_headers, 431},
	};
	for (const auto &c : cases) {
		int fd = connect_to(s.port());
		send_all(fd, c.first);
		std::string buf;
		Response r = read_response(fd, buf);
		EXPECT_EQ(r.status, c.second) << c.first.substr(0, 40);
		EXPECT_EQ(r.header("Connection"), "close") << c.second;
		EXPECT_GE(wait_eof(fd, 3000), 0) << c.second; // and the server closed
		close(fd);
	}
	// The server is still fine.
	int fd = connect_to(s.port());
	send_all(fd, kGet);
	std::string buf;
	EXPECT_EQ(read_response(fd, buf).status, 200);
	close(fd);
	std::string st = get_stats(s.port());
	EXPECT_EQ(json_field(st, "bad_request"), long(cases.size()));
	EXPECT_EQ(json_field(st, "shutdown"), 0) << st; // each close counted once
	EXPECT_EQ(json_field(st, "answered_close"), 0) << st;
}

// RFC 9110 9.1: an unrecognized method is 501 Not Implemented; 405 (with
// Allow) is for a method the server knows but the resource does not allow.
TEST_F(HttpdTest, UnknownMethodIs501KnownUnsupportedMethodIs405) {
	Httpd s({"--workers", "1"});
	for (const char *m : {"FOO", "get", "BREW"}) {
		Response r = ask(s.port(), std::string(m) + " / HTTP/1.1\r\nHost: t\r\n\r\n");
		EXPECT_EQ(status_line(r), "HTTP/1.1 501 Not Implemented") << m;
		EXPECT_EQ(r.header("Connection"), "close") << m;
		EXPECT_EQ(r.header("Allow"), "") << m;
	}
	for (const char *m : {"POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE"}) {
		Response r = ask(s.port(), std::string(m) + " / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
		EXPECT_EQ(status_line(r), "HTTP/1.1 405 Method Not Allowed") << m;
		EXPECT_EQ(r.header("Allow"), "GET, HEAD") << m;
	}
	Response r = ask(s.port(), "CONNECT t:443 HTTP/1.1\r\nHost: t:443\r\n\r\n");
	EXPECT_EQ(r.status, 405);
}

// ---- framing, targets, versions, Expect --------------------------------------

TEST_F(HttpdTest, DuplicateContentLengthIs400EvenWhenEqual) {
	Httpd s({"--workers", "1"});
	Response r = ask(s.port(), "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello");
	EXPECT_EQ(status_line(r), "HTTP/1.1 400 Bad Request");
	EXPECT_EQ(r.header("Connection"), "close");
}

TEST_F(HttpdTest, ContentLengthWithTransferEncodingIs400) {
	Httpd s({"--workers", "1"});
	Response r = ask(s.port(), "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
	EXPECT_EQ(status_line(r), "HTTP/1.1 400 Bad Request");
	r = ask(s.port(), "GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n");
	EXPECT_EQ(status_line(r), "HTTP/1.1 400 Bad Request");
}

TEST_F(HttpdTest, QueryStringIsNotPartOfTheRoute) {
	Httpd s({"--workers", "1"});
	Response r = ask(s.port(), "GET /?a=1 HTTP/1.1\r\nHost: t\r\n\r\n");
	EXPECT_EQ(status_line(r), "HTTP/1.1 200 OK");
	EXPECT_EQ(r.body, "Hello from ktimer\n");
	r = ask(s.port(), "GET /stats?x HTTP/1.1\r\nHost: t\r\n\r\n");
	EXPECT_EQ(status_line(r), "HTTP/1.1 200 OK");
	EXPECT_GE(json_field(r.body, "requests"), 1) << r.body;
	r = ask(s.port(), "GET /missing?x HTTP/1.1\r\nHost: t\r\n\r\n");
	EXPECT_EQ(r.status, 404);
}

// RFC 9112 3.2.2: a server MUST accept the absolute form, and routes it by
// its path, not by the whole target (which would be a 404).
TEST_F(HttpdTest, AbsoluteFormTargetIsRoutedByItsPath) {
	Httpd s({"--workers", "1"});
	Response r = ask(s.port(), "GET http://t/ HTTP/1.1\r\nHost: t\r\n\r\n");
	EXPECT_EQ(status_line(r), "HTTP/1.1 200 OK");
	EXPECT_EQ(r.body, "Hello from ktimer\n");
	r = ask(s.port(), "GET http://t HTTP/1.1\r\nHost: t\r\n\r\n"); // no path: "/"
	EXPECT_EQ(r.status, 200);
	r = ask(s.port(), "GET http://127.0.0.1:8080/stats?x HTTP/1.1\r\nHost: t\r\n\r\n");
	EXPECT_EQ(r.status, 200);
	EXPECT_GE(json_field(r.body, "requests"), 1) << r.body;
	r = ask(s.port(), "GET http://t/missing HTTP/1.1\r\nHost: t\r\n\r\n");
	EXPECT_EQ(r.status, 404);
	r = ask(s.port(), "GET http:///x HTTP/1.1\r\nHost: t\r\n\r\n"); // no host: garbage
	EXPECT_EQ(r.status, 400);
}

TEST_F(HttpdTest, ExpectContinueGets100BeforeTheBodyIsRead) {
	Httpd s({"--workers", "1"});
	int fd = connect_to(s.port());
	send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
	// Nothing of the body is sent until the interim answer is here.
	std::string buf;
	Response interim = read_response(fd, buf, true, 5000);
	EXPECT_EQ(interim.head, "HTTP/1.1 100 Continue\r\n");
	Response r = read_response(fd, buf);
	EXPECT_EQ(status_line(r), "HTTP/1.1 200 OK");
	send_all(fd, "hello" + kGet); // the body, then a next request on the connection
	Response next = read_response(fd, buf);
	EXPECT_EQ(next.status, 200);
	EXPECT_TRUE(buf.empty());
	close(fd);
	// HTTP/1.0 has no 100 Continue.
	r = ask(s.port(), "GET / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n");
	EXPECT_EQ(status_line(r), "HTTP/1.1 200 OK");
}

// 100 Continue only when the server will read a body: not for a request
// without one, and not before an answer that ends the connection (413 for a
// body too large, 405, Connection: close), whose body is only discarded.
TEST_F(HttpdTest, ExpectContinueOnlyWhenTheBodyWillBeRead) {
	Httpd s({"--workers", "1"});
	const std::string e = "Expect: 100-continue\r\n";
	const std::vector<std::pair<std::string, int>> cases = {
	    {"GET / HTTP/1.1\r\nHost: t\r\n" + e + "\r\n", 200},
	    {"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n" + e + "\r\n", 200},
	    {"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\n" + e + "\r\n", 413},
	    {"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n" + e + "\r\n", 405},
	    {"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nConnection: close\r\n" + e + "\r\n", 200},
	};
	for (const auto &c : cases) {
		Response r = ask(s.port(), c.first);
		EXPECT_EQ(r.status, c.second) << c.first; // the final answer first: no 100
	}
	// With a body the server will read: 100 first.
	Response r = ask(s.port(), "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n" + e + "\r\n");
	EXPECT_EQ(r.status, 100);
}

TEST_F(HttpdTest, Http12IsAnsweredAsHttp11) {
	Httpd s({"--workers", "1"});
	Response r = ask(s.port(), "GET / HTTP/1.2\r\nHost: t\r\n\r\n");
	EXPECT_EQ(status_line(r), "HTTP/1.1 200 OK");
	EXPECT_EQ(r.header("Connection"), "keep-alive");
}

TEST_F(HttpdTest, OtherMajorVersionIs505) {
	Httpd s({"--workers", "1"});
	for (const char *v : {"2.0", "3.1", "0.9"}) {
		Response r = ask(s.port(), std::string("GET / HTTP/") + v + "\r\nHost: t\r\n\r\n");
		EXPECT_EQ(status_line(r), "HTTP/1.1 505 HTTP Version Not Supported") << v;
	}
}

TEST_F(HttpdTest, OverlongRequestLineIs414) {
	Httpd s({"--workers", "1"});
	Response r = ask(s.port(), "GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: t\r\n\r\n");
	EXPECT_EQ(r.status, 414);
	EXPECT_EQ(r.header("Connection"), "close");
}

TEST_F(HttpdTest, EmptyLineBeforeTheRequestLineIsIgnored) {
	Httpd s({"--workers", "1"});
	EXPECT_EQ(status_line(ask(s.port(), "\r\n" + kGet)), "HTTP/1.1 200 OK");
	EXPECT_EQ(status_line(ask(s.port(), "\n" + kGet)), "HTTP/1.1 200 OK");
	// After a request with a body, a stray CRLF (old clients send one).
	int fd = connect_to(s.port());
	send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nab\r\n" + kGet);
	std::string buf;
	EXPECT_EQ(read_response(fd, buf).status, 200);
	EXPECT_EQ(read_response(fd, buf).status, 200);
	close(fd);
}

// ---- chunked request bodies (RFC 9112 7.1) ----------------------------------

// A chunked body, with chunk extensions and a trailer, arriving in pieces:
// read to its end, answered, and the connection kept for the next request
// (not 501 and a close).
TEST_F(HttpdTest, ChunkedBodyIsReadAndTheConnectionKept) {
	Httpd s({"--workers", "1"});
	int fd = connect_to(s.port());
	ASSERT_GE(fd, 0);
	const std::vector<std::string> pieces = {
	    "GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value;x=\"q\"\r\nhel",
	    "lo\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: 1\r\n",
	    "X-Other: 2\r\n\r\nGET /missing HTTP/1.1\r\nHost: t\r\n\r\n"};
	std::string buf;
	for (const auto &p : pieces) {
		ASSERT_TRUE(send_all(fd, p));
		usleep(30000); // the server reads each piece on its own
	}
	Response a = read_response(fd, buf);
	Response b = read_response(fd, buf);
	EXPECT_EQ(status_line(a), "HTTP/1.1 200 OK");
	EXPECT_EQ(a.body, "Hello from ktimer\n");
	EXPECT_EQ(a.header("Connection"), "keep-alive");
	EXPECT_EQ(b.status, 404); // the trailer was not taken for a request
	EXPECT_TRUE(buf.empty()) << buf;
	// The same connection goes on: the 2nd request's answer left it open.
	ASSERT_TRUE(send_all(fd, "GET /stats HTTP/1.1\r\nHost: t\r\n\r\n"));
	Response st = read_response(fd, buf);
	ASSERT_EQ(st.status, 200);
	EXPECT_EQ(json_field(st.body, "chunked_bodies"), 1) << st.body;
	EXPECT_EQ(json_field(st.body, "accepted"), 1) << st.body;
	EXPECT_EQ(json_field(st.body, "requests"), 3) << st.body;
	close(fd);
}

// Transfer-coding names are case-insensitive; 100 Continue comes before
// the body is read; HEAD with a chunked body is answered without a body.
TEST_F(HttpdTest, ChunkedBodyCodingNameCaseAndExpectContinue) {
	Httpd s({"--workers", "1"});
	Response r = ask(s.port(), "GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: ChUnKeD\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
	EXPECT_EQ(r.status, 200);
	EXPECT_EQ(r.header("Connection"), "keep-alive");
	int fd = connect_to(s.port());
	std::string buf;
	ASSERT_TRUE(send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"));
	Response cont = read_response(fd, buf, true, 5000);
	EXPECT_EQ(status_line(cont), "HTTP/1.1 100 Continue");
	ASSERT_TRUE(send_all(fd, "4\r\nbody\r\n0\r\n\r\nHEAD / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"));
	EXPECT_EQ(read_response(fd, buf).status, 200);
	Response head = read_response(fd, buf, true);
	EXPECT_EQ(head.status, 200);
	EXPECT_EQ(head.header("Content-Length"), "18");
	usleep(100000);
	char extra;
	EXPECT_EQ(recv(fd, &extra, 1, MSG_DONTWAIT), -1) << "a body after HEAD's answer";
	close(fd);
}

// Bad chunked framing and bodies over --max-body: a clear status, then a
// close, never a guess about where the next request starts.
TEST_F(HttpdTest, BadChunkedFramingAndLargeBodiesGetClearCodesAndClose) {
	Httpd s({"--workers", "1", "--max-body", "100"});
	const std::string te = "GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
	const std::vector<std::pair<std::string, int>> cases = {
	    {te + "10000000000000000\r\n", 400},         // 2^64: overflows
	    {te + "zz\r\n", 400},                        // not hex
	    {te + "\r\n", 400},                          // no size
	    {te + "5\nhello\r\n0\r\n\r\n", 400},         // a bare LF ends no chunk line
	    {te + "5\r\nhelloX\r\n0\r\n\r\n", 400},      // data longer than its size
	    {te + "1;" + std::string(5000, 'e') + "\r\nx\r\n0\r\n\r\n", 400}, // extensions over 4 KiB
	    {te + "0\r\nX: " + std::string(9000, 't') + "\r\n\r\n", 431},     // trailers over 8 KiB
	    {te + "0\r\n folded\r\n\r\n", 400},          // obs-fold in the trailer section
	    {te + "65\r\n", 413},                        // 101 bytes > --max-body 100
	    {te + "40\r\n" + std::string(64, 'a') + "\r\n40\r\n", 413}, // 128 in all
	    {"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 101\r\n\r\n", 413},
	    {"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
	    {"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400},
	    {"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
	    {"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501},
	    {"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400}, // not last
	    {"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
	    {"GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
	};
	for (const auto &c : cases) {
		int fd = connect_to(s.port());
		send_all(fd, c.first);
		std::string buf;
		Response r = read_response(fd, buf, false, 5000);
		EXPECT_EQ(r.status, c.second) << c.first.substr(0, 120);
		EXPECT_EQ(r.header("Connection"), "close") << c.first.substr(0, 120);
		EXPECT_GE(wait_eof(fd, 3000), 0) << c.first.substr(0, 120);
		close(fd);
	}
	// A body of exactly --max-body is fine, in one chunk or in several.
	EXPECT_EQ(ask(s.port(), te + "64\r\n" + std::string(100, 'a') + "\r\n0\r\n\r\n").status, 200);
	EXPECT_EQ(ask(s.port(), te + "32\r\n" + std::string(50, 'a') + "\r\n32\r\n" + std::string(50, 'b') + "\r\n0\r\n\r\n")
		      .status,
		  200);
	std::string st = get_stats(s.port());
	EXPECT_EQ(json_field(st, "bad_request"), long(cases.size())) << st;
}

// A chunked body that stops: 408 at the body deadline (its answer was not
// sent yet), counted as a body timeout.
TEST_F(HttpdTest, StalledChunkedBodyGets408AtTheBodyDeadline) {
	Httpd s({"--workers", "1", "--body-timeout", "300"});
	int fd = connect_to(s.port());
	double t0 = now_ms();
	send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nonly half");
	std::string buf;
	Response r = read_response(fd, buf, false, 5000);
	double took = now_ms() - t0;
	EXPECT_EQ(r.status, 408);
	EXPECT_GE(took, 300 - kRecvSlackMs);
	EXPECT_LE(took, 300 + kUnitMs + kSchedSlackMs);
	EXPECT_GE(wait_eof(fd, 2000), 0);
	close(fd);
	EXPECT_EQ(json_field(get_stats(s.port()), "body_timeout"), 1);
}

// ---- Host (RFC 9112 3.2, RFC 3986 3.2.2) ------------------------------------

TEST_F(HttpdTest, InvalidHostIs400) {
	Httpd s({"--workers", "1"});
	for (const char *h : {"a b", "a/b", "a\tb", "a:99x", "a@b", "a:b:c", "[::1", "[::1]x", "[1:2]", "[::g]", "a%2", "a%zz",
			      "a?b", "a#b", "\"a\"", "a\\b", "[v1.]", "", ":80"}) {
		Response r = ask(s.port(), std::string("GET / HTTP/1.1\r\nHost: ") + h + "\r\n\r\n");
		EXPECT_EQ(r.status, 400) << h;
		EXPECT_EQ(r.header("Connection"), "close") << h;
	}
	for (const char *h : {"t", "example.com.", "EXAMPLE.com:8080", "127.0.0.1", "127.0.0.1:80", "[::1]", "[::1]:8080",
			      "[2001:db8::7]", "[::ffff:127.0.0.1]", "[1:2:3:4:5:6:7:8]", "[v7.a:b]", "a%20b", "x_y-z~!$&'()*+;=",
			      "t:"}) {
		Response r = ask(s.port(), std::string("GET / HTTP/1.1\r\nHost: ") + h + "\r\n\r\n");
		EXPECT_EQ(r.status, 200) << h;
	}
	// HTTP/1.0 needs no Host, but one it sends is checked too.
	EXPECT_EQ(ask(s.port(), "GET / HTTP/1.0\r\n\r\n").status, 200);
	EXPECT_EQ(ask(s.port(), "GET / HTTP/1.0\r\nHost: a b\r\n\r\n").status, 400);
	EXPECT_EQ(ask(s.port(), "GET / HTTP/1.1\r\n\r\n").status, 400); // 1.1 without Host
}

// ---- preconditions (RFC 9110 13) ----------------------------------------------

// A GET or HEAD with a chunked body is answered after its body: its
// preconditions are evaluated then, as without a body (nginx: 304, 412).
TEST_F(HttpdTest, PreconditionsHoldForARequestWithAChunkedBody) {
	Httpd s({"--workers", "1"});
	ASSERT_GT(s.port(), 0) << s.err();
	const std::string te = "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
	int fd = connect_to(s.port());
	ASSERT_GE(fd, 0);
	std::string buf;
	ASSERT_TRUE(send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\nIf-None-Match: *\r\n" + te));
	Response r = read_response(fd, buf, true, 5000);
	ASSERT_TRUE(r.complete);
	EXPECT_EQ(r.status, 304);
	ASSERT_TRUE(send_all(fd, "HEAD / HTTP/1.1\r\nHost: t\r\nIf-Match: \"zz\"\r\n" + te));
	r = read_response(fd, buf, true, 5000);
	ASSERT_TRUE(r.complete);
	EXPECT_EQ(r.status, 412);
	ASSERT_TRUE(send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\nIf-Match: *\r\nIf-None-Match: \"zz\"\r\n" + te));
	r = read_response(fd, buf, false, 5000);
	ASSERT_TRUE(r.complete);
	EXPECT_EQ(r.status, 200);
	EXPECT_EQ(r.body, "Hello from ktimer\n");
	EXPECT_TRUE(buf.empty()) << buf;
	close(fd);
}

// Preconditions (RFC 9110 13.2.2), on one keep-alive connection so that a
// 304 without Content-Length is shown to end where its head does: the page
// carries no validator, so If-None-Match: * is 304 (GET and HEAD), any
// If-Match but * is 412, and the date conditions, with nothing to compare,
// are ignored. Answers as nginx 1.22 gives them (tools/check/protocol_compare.py),
// but If-Unmodified-Since, which RFC 9110 13.1.4 says to ignore here.
TEST_F(HttpdTest, PreconditionsAreEvaluatedInOrderForGetAndHead) {
	Httpd s({"--workers", "1"});
	ASSERT_GT(s.port(), 0) << s.err();
	const std::string date = "Sun, 06 Nov 1994 08:49:37 GMT";
	const struct {
		std::string headers;
		int status;
	} rows[] = {
		{"If-None-Match: *\r\n", 304},
		{"If-None-Match: \"zz\"\r\n", 200},
		{"If-None-Match: W/\"zz\", \"yy\"\r\n", 200},
		{"If-None-Match: \"zz\"\r\nIf-None-Match: *\r\n", 200}, // one list: `"zz", *`, not `*`
		{"If-Match: *\r\n", 200},
		{"If-Match: \"zz\"\r\n", 412},
		{"If-Match: W/\"zz\"\r\n", 412},
		{"If-Match: \"zz\", *\r\n", 412},
		{"If-Match:\r\n", 412},
		{"If-Match: *\r\nIf-Match: \"zz\"\r\n", 412},
		{"If-Modified-Since: " + date + "\r\n", 200},
		{"If-Modified-Since: yesterday\r\n", 200},
		{"If-Unmodified-Since: " + date + "\r\n", 200},
		{"If-Unmodified-Since: yesterday\r\n", 200},
		{"If-Match: *\r\nIf-None-Match: *\r\n", 304},
		{"If-Match: \"zz\"\r\nIf-None-Match: *\r\n", 412},
		{"If-None-Match: *\r\nIf-Modified-Since: " + date + "\r\n", 304},
		{"If-None-Match: \"zz\"\r\nIf-Modified-Since: " + date + "\r\n", 200},
		{"If-Unmodified-Since: " + date + "\r\nIf-None-Match: *\r\n", 304},
	};
	int fd = connect_to(s.port());
	ASSERT_GE(fd, 0);
	std::string buf;
	for (const char *method : {"GET", "HEAD"}) {
		bool head = std::string(method) == "HEAD";
		for (const auto &row : rows) {
			std::string req = std::string(method) + " / HTTP/1.1\r\nHost: t\r\n" + row.headers + "\r\n";
			ASSERT_TRUE(send_all(fd, req)) << req;
			// A 304 has no content whatever the method: read it as HEAD's.
			Response r = read_response(fd, buf, head || row.status == 304, 5000);
			ASSERT_TRUE(r.complete) << req;
			EXPECT_EQ(r.status, row.status) << req;
			EXPECT_EQ(r.header("Connection"), "keep-alive") << req;
			if (row.status == 304) {
				EXPECT_EQ(r.header("Content-Length"), "") << req;
				EXPECT_EQ(r.header("Content-Type"), "") << req;
				EXPECT_NE(r.header("Date"), "") << req;
			}
			if (row.status == 412 && !head)
				EXPECT_EQ(r.body, "412 Precondition Failed\n") << req;
		}
	}
	// Nothing was left over: the next answer is the plain page.
	ASSERT_TRUE(send_all(fd, kGet));
	Response r = read_response(fd, buf, false, 5000);
	EXPECT_EQ(r.status, 200);
	EXPECT_EQ(r.body, "Hello from ktimer\n");
	EXPECT_TRUE(buf.empty());
	close(fd);
	// Preconditions only where the answer would be 2xx (RFC 9110 13.2.1).
	EXPECT_EQ(ask(s.port(), "GET /missing HTTP/1.1\r\nHost: t\r\nIf-None-Match: *\r\n\r\n").status, 404);
	EXPECT_EQ(ask(s.port(), "GET /missing HTTP/1.1\r\nHost: t\r\nIf-Match: \"zz\"\r\n\r\n").status, 404);
	EXPECT_EQ(ask(s.port(), "POST / HTTP/1.1\r\nHost: t\r\nIf-Match: \"zz\"\r\nContent-Length: 0\r\n\r\n").status,
		  405);
	// /stats is a 200 page too.
	EXPECT_EQ(ask(s.port(), "GET /stats HTTP/1.1\r\nHost: t\r\nIf-Match: \"zz\"\r\n\r\n").status, 412);
}
