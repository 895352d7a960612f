// The real server binary, real clients (curl, wrk, raw sockets), loopback.
//
// Timing windows: the library's bound for an idle connection is
// [T, T + 1 s + one wheel unit] after its last response. A test measures on
// the client side of a loaded 2-core machine, so each upper bound below adds
// kSchedSlackMs for scheduling delay (and lower bounds allow the client's
// receipt of the response to trail the server's touch by kRecvSlackMs).
#include <gtest/gtest.h>

#include <sys/epoll.h>

#include <atomic>
#include <map>
#include <thread>

#include "tests/support/httpd_proc.h"

using kt_test::connect_to;
using kt_test::get_stats;
using kt_test::json_field;
using kt_test::Httpd;
using kt_test::now_ms;
using kt_test::read_response;
using kt_test::Response;
using kt_test::send_all;
using kt_test::wait_eof;

namespace {

constexpr double kSchedSlackMs = 200;
constexpr double kRecvSlackMs = 20;
constexpr double kUnitMs = 16;

const std::string kGet = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";

class HttpdTest : public ::testing::Test {
protected:
	static void SetUpTestSuite() { kt_test::raise_fd_limit(); }
};

} // namespace

TEST_F(HttpdTest, PrintsExactlyOneListeningLine) {
	Httpd s({"--workers", "2"});
	ASSERT_GT(s.port(), 0) << s.banner();
	EXPECT_EQ(s.banner(), "listening on 127.0.0.1:" + std::to_string(s.port()) + " workers=2\n");
	EXPECT_EQ(s.stop(), 0);
}

TEST_F(HttpdTest, CurlReusesOneConnectionForTwoRequests) {
	Httpd s({"--workers", "2"});
	std::string out = kt_test::run("curl -sv " + s.url("/") + " " + s.url("/") + " 2>&1");
	EXPECT_NE(out.find("Re-using existing connection"), std::string::npos) << out;
	size_t oks = 0;
	for (size_t p = 0; (p = out.find("< HTTP/1.1 200 OK", p)) != std::string::npos; p++)
		oks++;
	EXPECT_EQ(oks, 2u) << out;
	EXPECT_NE(out.find("Hello from ktimer"), std::string::npos);
	std::string stats = get_stats(s.port());
	EXPECT_EQ(json_field(stats, "accepted"), 2); // curl's one + ours
}

TEST_F(HttpdTest, IdleConnectionClosedBetweenTAndTPlusOneSecond) {
	Httpd s({"--workers", "2", "--keepalive", "2"});
	int fd = connect_to(s.port());
	std::string buf;
	ASSERT_TRUE(send_all(fd, kGet));
	Response r = read_response(fd, buf);
	ASSERT_EQ(r.status, 200);
	EXPECT_EQ(r.header("Connection"), "keep-alive");
	double idle = wait_eof(fd, 10000);
	close(fd);
	EXPECT_GE(idle, 2000 - kRecvSlackMs);
	EXPECT_LE(idle, 2000 + 1000 + kUnitMs + kSchedSlackMs);
	EXPECT_EQ(json_field(get_stats(s.port()), "keepalive"), 1);
}

TEST_F(HttpdTest, HalfRequestLineAnswered408AtHeaderDeadline) {
	Httpd s({"--workers", "2", "--header-timeout", "500"});
	double t0 = now_ms();
	int fd = connect_to(s.port());
	ASSERT_TRUE(send_all(fd, "GET / HT"));
	std::string buf;
	Response r = read_response(fd, buf, false, 5000);
	double took = now_ms() - t0;
	EXPECT_EQ(r.status, 408);
	EXPECT_GE(took, 500 - kRecvSlackMs);
	EXPECT_LE(took, 500 + kUnitMs + kSchedSlackMs);
	EXPECT_GE(wait_eof(fd, 2000), 0); // and closed
	close(fd);
	EXPECT_EQ(json_field(get_stats(s.port()), "header_timeout"), 1);
}

TEST_F(HttpdTest, TwoThousandIdleConnectionsAllClosedOnTime) {
	const int kConns = 2000;
	Httpd s({"--workers", "2", "--keepalive", "1"});
	std::vector<int> fds(kConns);
	std::vector<double> answered(kConns);
	for (int i = 0; i < kConns; i++) {
		fds[i] = connect_to(s.port());
		ASSERT_GE(fds[i], 0) << i;
		ASSERT_TRUE(send_all(fds[i], kGet));
	}
	for (int i = 0; i < kConns; i++) {
		std::string buf;
		ASSERT_EQ(read_response(fds[i], buf).status, 200) << i;
		answered[i] = now_ms();
	}
	// Wait for every close with one epoll set.
	int ep = epoll_create1(0);
	for (int i = 0; i < kConns; i++) {
		epoll_event ev{};
		ev.events = EPOLLIN | EPOLLRDHUP;
		ev.data.u32 = uint32_t(i);
		epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
	}
	int closed = 0;
	std::vector<double> closed_at(kConns, -1);
	double give_up = now_ms() + 10000;
	while (closed < kConns && now_ms() < give_up) {
		epoll_event ev[256];
		int n = epoll_wait(ep, ev, 256, 100);
		for (int k = 0; k < n; k++) {
			int i = int(ev[k].data.u32);
			char tmp[64];
			if (closed_at[i] < 0 && recv(fds[i], tmp, sizeof(tmp), MSG_DONTWAIT) <= 0) {
				closed_at[i] = now_ms();
				closed++;
				epoll_ctl(ep, EPOLL_CTL_DEL, fds[i], nullptr);
			}
		}
	}
	close(ep);
	EXPECT_EQ(closed, kConns);
	double worst_early = 1e9, worst_late = 0;
	for (int i = 0; i < kConns; i++) {
		if (closed_at[i] < 0)
			continue;
		double idle = closed_at[i] - answered[i];
		worst_early = std::min(worst_early, idle);
		worst_late = std::max(worst_late, idle);
	}
	// Responses are read one by one, so a connection's "answered" can trail
	// the server's touch by the time to read the others: allow that below.
	double read_all = answered[kConns - 1] - answered[0];
	EXPECT_GE(worst_early, 1000 - kRecvSlackMs - read_all);
	EXPECT_LE(worst_late, 1000 + 1000 + kUnitMs + kSchedSlackMs);
	for (int fd : fds)
		close(fd);
	std::string stats = get_stats(s.port());
	EXPECT_EQ(json_field(stats, "keepalive"), kConns) << stats;
	EXPECT_EQ(json_field(stats, "open"), 1) << stats; // the /stats connection
	RecordProperty("worst_late_ms", std::to_string(worst_late));
}

TEST_F(HttpdTest, WrkWithHundredConnectionsGetsNoErrors) {
	Httpd s({"--workers", "2"});
	std::string out = kt_test::run("wrk -t2 -c100 -d3s " + s.url("/") + " 2>&1");
	EXPECT_NE(out.find("Requests/sec"), std::string::npos) << out;
	EXPECT_EQ(out.find("Non-2xx"), std::string::npos) << out;
	EXPECT_EQ(out.find("Socket errors"), std::string::npos) << out;
	std::string stats = get_stats(s.port());
	EXPECT_GT(json_field(stats, "requests"), 1000) << stats;
	EXPECT_EQ(json_field(stats, "bad_request"), 0) << stats;
}

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
	    {"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
	    {big_line, 413},
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

TEST_F(HttpdTest, PipelinedRequestsAnsweredInOrder) {
	Httpd s({"--workers", "1"});
	int fd = connect_to(s.port());
	send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\n\r\nHEAD / HTTP/1.1\r\nHost: t\r\n\r\n"
		     "GET /missing HTTP/1.1\r\nHost: t\r\n\r\nGET /stats HTTP/1.1\r\nHost: t\r\n\r\n");
	std::string buf;
	Response a = read_response(fd, buf);
	Response b = read_response(fd, buf, true);
	Response c = read_response(fd, buf);
	Response d = read_response(fd, buf);
	EXPECT_EQ(a.status, 200);
	EXPECT_EQ(a.body, "Hello from ktimer\n");
	EXPECT_EQ(b.status, 200);
	EXPECT_EQ(b.header("Content-Length"), "18"); // HEAD: length, no body
	EXPECT_EQ(c.status, 404);
	EXPECT_EQ(d.status, 200);
	EXPECT_EQ(json_field(d.body, "requests"), 4);
	EXPECT_TRUE(buf.empty());
	close(fd);
}

TEST_F(HttpdTest, ConnectionCloseHonouredBothWays) {
	{
		Httpd s({"--workers", "1"});
		int fd = connect_to(s.port());
		send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
		std::string buf;
		Response r = read_response(fd, buf);
		EXPECT_EQ(r.status, 200);
		EXPECT_EQ(r.header("Connection"), "close");
		EXPECT_GE(wait_eof(fd, 2000), 0);
		close(fd);
		std::string st = get_stats(s.port());
		EXPECT_EQ(json_field(st, "answered_close"), 1) << st;
		EXPECT_EQ(json_field(st, "shutdown"), 0) << st;
	}
	{
		Httpd s({"--workers", "1", "--keepalive", "0"}); // 0: no keep-alive
		int fd = connect_to(s.port());
		send_all(fd, kGet);
		std::string buf;
		Response r = read_response(fd, buf);
		EXPECT_EQ(r.header("Connection"), "close");
		EXPECT_GE(wait_eof(fd, 2000), 0);
		close(fd);
	}
	{
		Httpd s({"--workers", "1"}); // HTTP/1.0 keep-alive only when asked
		int fd = connect_to(s.port());
		send_all(fd, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
		std::string buf;
		EXPECT_EQ(read_response(fd, buf).header("Connection"), "keep-alive");
		send_all(fd, "GET / HTTP/1.0\r\n\r\n");
		EXPECT_EQ(read_response(fd, buf).header("Connection"), "close");
		close(fd);
	}
}

TEST_F(HttpdTest, DateHeaderAndStatsFields) {
	Httpd s({"--workers", "2"});
	int fd = connect_to(s.port());
	send_all(fd, kGet);
	std::string buf;
	Response r = read_response(fd, buf);
	EXPECT_EQ(r.header("Date").size(), 29u) << r.head; // "Mon, 30 Nov 2026 08:50:37 GMT"
	EXPECT_NE(r.header("Date").find(" GMT"), std::string::npos);
	close(fd);
	std::string st = get_stats(s.port());
	for (const char *k : {"open", "keepalive", "header_timeout", "write_timeout", "peer", "wheel_links",
			      "wakeups", "allocated", "arena_allocated"})
		EXPECT_GE(json_field(st, k), 0) << k << " in " << st;
}

TEST_F(HttpdTest, StatsIsCompleteJsonWithManyWorkers) {
	Httpd s({"--workers", "16"});
	std::string st = get_stats(s.port());
	ASSERT_GE(st.size(), 2u);
	EXPECT_EQ(st.substr(st.size() - 3), "]}\n") << st; // not truncated
	EXPECT_NE(st.find("\"id\":15,"), std::string::npos);
	size_t opens = 0, closes = 0;
	for (char ch : st) {
		opens += ch == '{' || ch == '[';
		closes += ch == '}' || ch == ']';
	}
	EXPECT_EQ(opens, closes);
}

TEST_F(HttpdTest, MaxConnsRefusesTheRestWith503) {
	Httpd s({"--workers", "1", "--max-conns", "5"});
	std::vector<int> held;
	for (int i = 0; i < 5; i++) {
		held.push_back(connect_to(s.port()));
		send_all(held.back(), kGet);
		std::string buf;
		ASSERT_EQ(read_response(held.back(), buf).status, 200);
	}
	int extra = connect_to(s.port());
	std::string buf;
	EXPECT_EQ(read_response(extra, buf).status, 503);
	EXPECT_GE(wait_eof(extra, 2000), 0);
	close(extra);
	// The accepted ones are still served.
	send_all(held[0], kGet);
	std::string b2;
	EXPECT_EQ(read_response(held[0], b2).status, 200);
	for (int fd : held)
		close(fd);
}

TEST_F(HttpdTest, SigtermUnderLoadExitsZeroWithNoTruncatedResponse) {
	Httpd s({"--workers", "2"});
	std::atomic<bool> stop{false};
	std::atomic<long> complete{0}, truncated{0}, refused{0};
	std::vector<std::thread> clients;
	for (int t = 0; t < 8; t++) {
		clients.emplace_back([&] {
			while (!stop) {
				int fd = connect_to(s.port());
				if (fd < 0) {
					refused++;
					if (refused > 1000)
						return;
					usleep(1000);
					continue;
				}
				std::string buf;
				for (int k = 0; k < 20 && !stop; k++) {
					if (!send_all(fd, kGet))
						break;
					Response r = read_response(fd, buf, false, 5000);
					if (r.complete) {
						complete++;
						if (r.header("Connection") == "close")
							break;
					} else {
						if (r.bytes > 0)
							truncated++; // got a byte but not all of it
						break;
					}
				}
				close(fd);
			}
		});
	}
	usleep(1000 * 1000);
	int code = s.stop(SIGTERM);
	stop = true;
	for (auto &c : clients)
		c.join();
	EXPECT_EQ(code, 0);
	EXPECT_GT(complete.load(), 100);
	EXPECT_EQ(truncated.load(), 0);
}
