// Blocking TCP clients on loopback, for the tests of the servers (net/httpd,
// examples/echo_server): connect, send everything, and the clock the tests'
// bounded waits read.
#ifndef KTIMER_TESTS_SUPPORT_LOOPBACK_H
#define KTIMER_TESTS_SUPPORT_LOOPBACK_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace kt_test {

// Milliseconds on the monotonic clock.
inline double now_ms() {
	using namespace std::chrono;
	return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// A TCP connection to 127.0.0.1:port, from `source` (an IPv4 loopback
// address, e.g. "127.0.0.2") if given. -1 on failure.
inline int connect_from(const char *source, int port) {
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sockaddr_in a{};
	if (source) {
		a.sin_family = AF_INET;
		inet_pton(AF_INET, source, &a.sin_addr);
		if (bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0) {
			close(fd);
			return -1;
		}
	}
	a = sockaddr_in{};
	a.sin_family = AF_INET;
	a.sin_port = htons(uint16_t(port));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

// A TCP connection to [::1]:port. -1 on failure (no IPv6 loopback).
inline int connect6_to(int port) {
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sockaddr_in6 a{};
	a.sin6_family = AF_INET6;
	a.sin6_port = htons(uint16_t(port));
	a.sin6_addr = in6addr_loopback;
	if (fd < 0 || connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

// A TCP connection to 127.0.0.1:port. -1 on failure.
inline int connect_to(int port) { return connect_from(nullptr, port); }

// Sends all of `s` (a send may take part of it); false if the connection
// fails first.
inline bool send_all(int fd, const std::string &s) {
	size_t off = 0;
	while (off < s.size()) {
		ssize_t r = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
		if (r <= 0)
			return false;
		off += size_t(r);
	}
	return true;
}

} // namespace kt_test

#endif
