// tests/net/httpd_client.h: what the server's suites with real clients
// share (httpd_test, httpd_protocol_test, httpd_ops_test): the timing
// slacks, a request on a fresh connection and its status line, the common
// log format's shape, files in the test's temporary directory, and the
// fixture that raises the descriptor limit once per suite. The server as a
// child process and the socket helpers are tests/support/httpd_proc.h.
//
// Timing windows: the library's bound for an idle connection is
// [T, T + 1 s + one wheel unit] after its last response. A test measures on
// the client side of a loaded 2-core machine, so each upper bound adds
// kSchedSlackMs for scheduling delay (and lower bounds allow the client's
// receipt of the response to trail the server's touch by kRecvSlackMs).
#ifndef KTIMER_TESTS_NET_HTTPD_CLIENT_H
#define KTIMER_TESTS_NET_HTTPD_CLIENT_H

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "tests/support/httpd_proc.h"

namespace kt_test {

constexpr double kSchedSlackMs = 200;
constexpr double kRecvSlackMs = 20;
constexpr double kUnitMs = 16;
// The default --expire-spread: a worker's second of more connections than
// --expire-burst (64) closes paced over it, the drain allowance of --help.
constexpr double kDrainAllowanceMs = 500;

const std::string kGet = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";

// Sends `req` on a fresh connection; the first response (its status line is
// compared byte for byte: nginx 1.22 sends the same one).
inline Response ask(int port, const std::string &req) {
	int fd = connect_to(port);
	std::string buf;
	send_all(fd, req);
	Response r = read_response(fd, buf, false, 5000);
	close(fd);
	return r;
}

inline std::string status_line(const Response &r) { return r.head.substr(0, r.head.find("\r\n")); }

// Whether `s` starts with `pattern`, where '#' matches a digit and 'A' a
// letter.
inline bool shaped(const std::string &s, const std::string &pattern) {
	if (s.size() < pattern.size())
		return false;
	for (size_t i = 0; i < pattern.size(); i++) {
		char p = pattern[i], c = s[i];
		if (p == '#' ? !isdigit((unsigned char)c) : p == 'A' ? !isalpha((unsigned char)c) : c != p)
			return false;
	}
	return true;
}

// One common log format line: 127.0.0.1 - - [30/Nov/2026:11:35:25 +0000]
// "REQUEST" STATUS BYTES, with no raw '"' inside the request.
inline bool is_clf(const std::string &line) {
	const std::string head = "127.0.0.1 - - [##/AAA/####:##:##:## +0000] \"";
	if (!shaped(line, head))
		return false;
	size_t q = line.find('"', head.size());
	if (q == std::string::npos || !shaped(line.substr(q), "\" ### "))
		return false;
	std::string bytes = line.substr(q + 6);
	return bytes == "-" || (!bytes.empty() && bytes.find_first_not_of("0123456789") == std::string::npos);
}

inline std::string tmp_path(const std::string &name) {
	const char *d = getenv("TEST_TMPDIR");
	return std::string(d && *d ? d : "/tmp") + "/" + name;
}

// Waits (bounded) until `path` holds at least `lines` lines; its text.
inline std::string wait_for_lines(const std::string &path, size_t lines, int timeout_ms = 5000) {
	std::string s;
	for (double end = now_ms() + timeout_ms; now_ms() < end; usleep(20000)) {
		s = slurp(path);
		if (size_t(std::count(s.begin(), s.end(), '\n')) >= lines)
			break;
	}
	return s;
}

// Every suite of real clients: many connections, so a raised descriptor limit.
class HttpdTest : public ::testing::Test {
protected:
	static void SetUpTestSuite() { raise_fd_limit(); }
};

} // namespace kt_test

#endif
