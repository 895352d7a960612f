// Runs net/httpd as a child process for integration tests, and a few
// blocking-socket helpers for talking to it.
#ifndef KTIMER_TESTS_SUPPORT_HTTPD_PROC_H
#define KTIMER_TESTS_SUPPORT_HTTPD_PROC_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace kt_test {

inline double now_ms() {
	using namespace std::chrono;
	return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

inline void raise_fd_limit() {
	rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

class Httpd {
public:
	// `wrapper` runs before the binary (e.g. {"prlimit", "--nofile=40:40"}).
	explicit Httpd(std::vector<std::string> args, std::vector<std::string> wrapper = {}) {
		int out[2];
		if (pipe(out) != 0)
			abort();
		pid_ = fork();
		if (pid_ == 0) {
			dup2(out[1], 1);
			close(out[0]);
			std::vector<char *> argv;
			static std::string bin = "net/httpd";
			args.insert(args.begin(), {"--port", "0"});
			args.insert(args.begin(), bin);
			args.insert(args.begin(), wrapper.begin(), wrapper.end());
			for (auto &a : args)
				argv.push_back(const_cast<char *>(a.c_str()));
			argv.push_back(nullptr);
			execvp(argv[0], argv.data());
			_exit(127);
		}
		close(out[1]);
		FILE *f = fdopen(out[0], "r");
		char line[256] = {0};
		if (fgets(line, sizeof(line), f))
			banner_ = line;
		fclose(f);
		auto colon = banner_.rfind(':');
		if (colon != std::string::npos)
			port_ = atoi(banner_.c_str() + colon + 1);
	}
	~Httpd() {
		if (pid_ > 0) {
			kill(pid_, SIGKILL);
			waitpid(pid_, nullptr, 0);
		}
	}
	int port() const { return port_; }
	const std::string &banner() const { return banner_; }
	// Send a signal and wait for exit; returns the exit code, or -1.
	int stop(int sig = SIGTERM, int timeout_ms = 15000) {
		kill(pid_, sig);
		for (int waited = 0; waited < timeout_ms; waited += 10) {
			int st;
			if (waitpid(pid_, &st, WNOHANG) == pid_) {
				pid_ = -1;
				return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
			}
			usleep(10000);
		}
		return -1;
	}
	std::string url(const std::string &path = "/") const {
		return "http://127.0.0.1:" + std::to_string(port_) + path;
	}

private:
	pid_t pid_ = -1;
	int port_ = 0;
	std::string banner_;
};

inline int connect_to(int port) {
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_port = htons(uint16_t(port));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

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

struct Response {
	int status = 0;
	std::string head, body;
	size_t bytes = 0;      // every byte received for this response
	bool complete = false; // head and Content-Length body all arrived
	std::string header(const std::string &name) const {
		std::string h = "\r\n" + name + ": ";
		auto p = head.find(h);
		if (p == std::string::npos)
			return "";
		p += h.size();
		return head.substr(p, head.find("\r\n", p) - p);
	}
};

// Reads one response; `buf` keeps bytes of following (pipelined) responses.
inline Response read_response(int fd, std::string &buf, bool head_request = false, int timeout_ms = 10000) {
	Response r;
	double deadline = now_ms() + timeout_ms;
	for (;;) {
		auto end = buf.find("\r\n\r\n");
		if (end != std::string::npos) {
			r.head = buf.substr(0, end + 2);
			size_t len = head_request ? 0 : size_t(atol(r.header("Content-Length").c_str()));
			if (buf.size() >= end + 4 + len) {
				r.status = atoi(r.head.c_str() + 9);
				r.body = buf.substr(end + 4, len);
				r.bytes = end + 4 + len;
				r.complete = true;
				buf.erase(0, r.bytes);
				return r;
			}
		}
		pollfd p{fd, POLLIN, 0};
		int left = int(deadline - now_ms());
		if (left <= 0 || poll(&p, 1, left) <= 0)
			break;
		char tmp[16384];
		ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
		if (n <= 0)
			break;
		buf.append(tmp, size_t(n));
	}
	r.bytes = buf.size();
	if (buf.size() >= 12)
		r.status = atoi(buf.c_str() + 9);
	return r;
}

// Milliseconds until the peer closes (EOF or reset), or -1 on timeout.
inline double wait_eof(int fd, int timeout_ms) {
	double start = now_ms();
	for (;;) {
		pollfd p{fd, POLLIN, 0};
		int left = int(start + timeout_ms - now_ms());
		if (left <= 0 || poll(&p, 1, left) <= 0)
			return -1;
		char tmp[4096];
		ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
		if (n <= 0)
			return now_ms() - start;
	}
}

// A top-level JSON number field (the first occurrence), -1 if absent.
inline long json_field(const std::string &json, const std::string &key) {
	std::string k = "\"" + key + "\":";
	size_t p = json.find(k);
	return p == std::string::npos ? -1 : atol(json.c_str() + p + k.size());
}

// The sum of every occurrence of a field (per-worker counters).
inline long json_sum(const std::string &json, const std::string &key) {
	long total = 0;
	std::string k = "\"" + key + "\":";
	for (size_t p = 0; (p = json.find(k, p)) != std::string::npos; p += k.size())
		total += atol(json.c_str() + p + k.size());
	return total;
}

// GET /stats on a fresh connection; the body.
inline std::string get_stats(int port) {
	int fd = connect_to(port);
	send_all(fd, "GET /stats HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
	std::string buf;
	Response r = read_response(fd, buf);
	close(fd);
	return r.body;
}

inline std::string run(const std::string &cmd) {
	std::string out;
	FILE *p = popen(cmd.c_str(), "r");
	if (!p)
		return out;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		out.append(buf, n);
	pclose(p);
	return out;
}

} // namespace kt_test

#endif
