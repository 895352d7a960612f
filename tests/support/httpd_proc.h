// Runs net/httpd as a child process for integration tests, and what its
// tests read from it: responses, EOF, /stats fields. The sockets to talk to
// it are tests/support/loopback.h's.
#ifndef KTIMER_TESTS_SUPPORT_HTTPD_PROC_H
#define KTIMER_TESTS_SUPPORT_HTTPD_PROC_H

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/support/loopback.h"

namespace kt_test {

inline void raise_fd_limit() {
	rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

// The binary under test: net/httpd from the runfiles, or $HTTPD_BIN (to run
// the suite against another build, e.g. to check a test fails on old code).
// Reads a whole file (empty if it does not exist).
inline std::string slurp(const std::string &path) {
	std::string s;
	FILE *f = fopen(path.c_str(), "r");
	if (!f)
		return s;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		s.append(buf, n);
	fclose(f);
	return s;
}

inline std::string httpd_bin() {
	const char *b = getenv("HTTPD_BIN");
	return b && *b ? b : "net/httpd";
}

class Httpd {
public:
	// `wrapper` runs before the binary (e.g. {"prlimit", "--nofile=40:40"}).
	// "--port 0" comes first, so a later --port in `args` wins.
	explicit Httpd(std::vector<std::string> args, std::vector<std::string> wrapper = {}) {
		int out[2];
		const char *tmp = getenv("TEST_TMPDIR");
		std::string errpath = std::string(tmp && *tmp ? tmp : "/tmp") + "/httpd_stderr.XXXXXX";
		int errfd = mkstemp(&errpath[0]);
		if (pipe(out) != 0 || errfd < 0)
			abort();
		err_path_ = errpath;
		pid_ = fork();
		if (pid_ == 0) {
			dup2(out[1], 1);
			dup2(errfd, 2);
			close(out[0]);
			std::vector<char *> argv;
			static std::string bin = httpd_bin();
			args.insert(args.begin(), {"--port", "0"});
			args.insert(args.begin(), bin);
			args.insert(args.begin(), wrapper.begin(), wrapper.end());
			for (auto &a : args)
				argv.push_back(const_cast<char *>(a.c_str()));
			argv.push_back(nullptr);
			execvp(argv[0], argv.data());
			_exit(127);
		}
		close(errfd);
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
		unlink(err_path_.c_str());
	}
	Httpd(const Httpd &) = delete;
	Httpd &operator=(const Httpd &) = delete;
	int port() const { return port_; }
	pid_t pid() const { return pid_; }
	const std::string &banner() const { return banner_; }
	// Everything the server wrote on stderr so far.
	std::string err() const { return slurp(err_path_); }
	// Send a signal and wait for exit; returns the exit code, or -1.
	int stop(int sig = SIGTERM, int timeout_ms = 15000) {
		if (pid_ <= 0)
			return exit_code_;
		kill(pid_, sig);
		return wait_exit(timeout_ms);
	}
	// Wait for the process to exit by itself; its exit code, or -1 (still
	// running after `timeout_ms`, or killed by a signal).
	int wait_exit(int timeout_ms = 15000) {
		if (pid_ <= 0)
			return exit_code_;
		for (int waited = 0; waited < timeout_ms; waited += 10) {
			int st;
			if (waitpid(pid_, &st, WNOHANG) == pid_) {
				pid_ = -1;
				exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
				return exit_code_;
			}
			usleep(10000);
		}
		return -1;
	}
	// Whether the process is still running (it did not exit or die).
	bool alive() {
		if (pid_ <= 0)
			return false;
		int st;
		if (waitpid(pid_, &st, WNOHANG) == pid_) {
			pid_ = -1;
			exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
			return false;
		}
		return true;
	}
	std::string url(const std::string &path = "/") const {
		return "http://127.0.0.1:" + std::to_string(port_) + path;
	}

private:
	pid_t pid_ = -1;
	int port_ = 0;
	int exit_code_ = -1;
	std::string banner_;
	std::string err_path_;
};

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

// How a stream read to its end ended.
enum class End { kEof, kReset, kTimeout };

// Reads everything until EOF, a reset or `timeout_ms`, appending to `buf`.
inline End read_to_end(int fd, std::string &buf, int timeout_ms) {
	double deadline = now_ms() + timeout_ms;
	for (;;) {
		pollfd p{fd, POLLIN, 0};
		int left = int(deadline - now_ms());
		if (left <= 0 || poll(&p, 1, left) <= 0)
			return End::kTimeout;
		char tmp[65536];
		ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
		if (n == 0)
			return End::kEof;
		if (n < 0)
			return errno == ECONNRESET ? End::kReset : End::kEof;
		buf.append(tmp, size_t(n));
	}
}

// Splits a byte stream into whole responses (head + Content-Length body).
// `rest` gets the bytes after the last whole response (stray bytes).
inline std::vector<Response> split_responses(const std::string &stream, std::string *rest = nullptr) {
	std::vector<Response> out;
	std::string buf = stream;
	for (;;) {
		auto end = buf.find("\r\n\r\n");
		if (end == std::string::npos)
			break;
		Response r;
		r.head = buf.substr(0, end + 2);
		size_t len = size_t(atol(r.header("Content-Length").c_str()));
		if (buf.size() < end + 4 + len)
			break;
		r.status = atoi(r.head.c_str() + 9);
		r.body = buf.substr(end + 4, len);
		r.bytes = end + 4 + len;
		r.complete = true;
		buf.erase(0, r.bytes);
		out.push_back(r);
	}
	if (rest)
		*rest = buf;
	return out;
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
