// tests/net/httpd_load_test.cc: the server's deadlines on a loaded machine.
// A worker's turn can run long after the clock it cached when its wait
// returned (an accept burst, a run of reads, the worker preempted by
// CPU-bound processes); a deadline must still never end a connection before
// its configured time as the client measures it. Each test starts two
// CPU-bound processes of its own beside the server and its clients (a busy
// 2-core machine) and kills them, by pid, when it ends.
//
// What a client measures: from just before its connect() (or send()) call,
// on CLOCK_REALTIME, to the kernel's receive time of the server's 408
// (SO_TIMESTAMPNS, also CLOCK_REALTIME), which on loopback is stamped while
// the server's send() runs: however late the client gets to look, and
// however late the server accepted or read, the server cannot have started
// the deadline before the client's call, so nothing below it is allowed.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/net/httpd_client.h"

using kt_test::get_stats;
using kt_test::Httpd;
using kt_test::HttpdTest;
using kt_test::json_sum;
using kt_test::send_all;

namespace {

// Two busy loops in processes of their own, killed by pid when it goes.
class CpuHogs {
public:
	CpuHogs() {
		for (pid_t &p : pids_) {
			p = fork();
			if (p == 0) {
				prctl(PR_SET_PDEATHSIG, SIGKILL); // never outlive the test
				for (volatile unsigned long n = 0;; n++)
					;
			}
		}
	}
	~CpuHogs() {
		for (pid_t p : pids_) {
			if (p <= 0)
				continue;
			kill(p, SIGKILL);
			waitpid(p, nullptr, 0);
		}
	}
	CpuHogs(const CpuHogs &) = delete;
	CpuHogs &operator=(const CpuHogs &) = delete;
	bool started() const { return pids_[0] > 0 && pids_[1] > 0; }

private:
	pid_t pids_[2] = {-1, -1};
};

double realtime_ms() {
	timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

// A client whose close it times: when it called connect() or send(), and
// the receive time of the server's 408.
struct Client {
	int fd = -1;
	double called = 0;    // realtime_ms() just before the call the deadline follows
	double answered = -1; // the kernel's receive time of the 408, -1: none yet
	double ended = -1;    // realtime_ms() when the client saw the end (EOF or reset)
	std::string got;
	bool eof = false;
	// When the server closed, at the earliest: its answer's receive time, or
	// for a close without one (a reset: the deadline fired before the
	// server read the client's byte), when the client saw it.
	double closed() const { return answered >= 0 ? answered : ended; }
};

// A socket that records the kernel's receive time of what arrives, and
// whose send buffer takes 100 KB of requests whether or not the server
// reads them meanwhile.
int stamped_socket() {
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1, sndbuf = 256 * 1024;
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	}
	return fd;
}

bool connect_port(int fd, int port) {
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_port = htons(uint16_t(port));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0;
}

// Reads what @c has waiting, and the 408's receive time. False once it has
// ended (EOF or an error).
bool read_stamped(Client &c) {
	static thread_local char buf[65536];
	char ctl[CMSG_SPACE(sizeof(timespec))];
	iovec iov{buf, sizeof(buf)};
	msghdr m{};
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = ctl;
	m.msg_controllen = sizeof(ctl);
	ssize_t n = recvmsg(c.fd, &m, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0) {
		c.eof = true;
		c.ended = realtime_ms();
		return false;
	}
	c.got.append(buf, size_t(n));
	// The stamp is the last segment's this read took: the 408's, the last
	// thing the server sends, in the read that brings it.
	for (cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_TIMESTAMPNS && c.answered < 0 &&
		    c.got.find("HTTP/1.1 408") != std::string::npos) {
			timespec ts;
			memcpy(&ts, CMSG_DATA(h), sizeof(ts));
			c.answered = double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
		}
	}
	return true;
}

// Reads every client until each has ended, or `timeout_ms`.
void read_all(std::vector<Client> &cs, int timeout_ms) {
	double end = kt_test::now_ms() + timeout_ms;
	for (;;) {
		std::vector<pollfd> p;
		std::vector<size_t> who;
		for (size_t i = 0; i < cs.size(); i++) {
			if (cs[i].fd >= 0 && !cs[i].eof) {
				p.push_back({cs[i].fd, POLLIN, 0});
				who.push_back(i);
			}
		}
		int left = int(end - kt_test::now_ms());
		if (p.empty() || left <= 0 || poll(p.data(), p.size(), std::min(left, 100)) < 0)
			return;
		for (size_t k = 0; k < p.size(); k++)
			if (p[k].revents)
				read_stamped(cs[who[k]]);
	}
}

// What the clients saw: how many were closed under `ms` after their call,
// the earliest close and the latest, how many got a 408 (timed by its
// receive time) and how many were never closed.
struct Seen {
	int early = 0, answered = 0, open = 0;
	double earliest = 1e18, latest = 0;
	std::string first_early;
};

Seen measure(const std::vector<Client> &cs, double ms) {
	Seen s;
	for (size_t i = 0; i < cs.size(); i++) {
		const Client &c = cs[i];
		if (c.closed() < 0) {
			s.open++;
			continue;
		}
		s.answered += c.answered >= 0;
		double took = c.closed() - c.called;
		s.earliest = std::min(s.earliest, took);
		s.latest = std::max(s.latest, took);
		if (took < ms) {
			if (!s.early)
				s.first_early = "client " + std::to_string(i) + ": closed after " + std::to_string(took) + " ms";
			s.early++;
		}
	}
	return s;
}

// How many times `what` occurs in `s`.
size_t count(const std::string &s, const std::string &what) {
	size_t n = 0;
	for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size()))
		n++;
	return n;
}

} // namespace

// 320 silent clients (one byte each, so the close comes with a 408 that can
// be timed) connect at once from four threads to one worker, beside two
// CPU-bound processes: accepts run late into the worker's turns, long after
// its wait returned. Each header deadline counts from accept, so no client
// may be closed under --header-timeout after its own connect() call. At
// the 4 ms unit a 200 ms deadline is on the wheel's first level, at most
// one unit late, so a deadline counted from a clock a few ms stale shows;
// 200 ms leaves the loaded worker time to read the clients' bytes first.
// Each round has a server of its own: a worker's first burst of accepts,
// its arena and epoll set still growing, makes the longest turns.
TEST_F(HttpdTest, HeaderDeadlineNeverEndsBeforeItsTimeUnderLoad) {
	const int kThreads = 4, kPerThread = 80, kRounds = 3;
	const double kTimeoutMs = 200;
	CpuHogs hogs;
	ASSERT_TRUE(hogs.started());
	for (int round = 0; round < kRounds; round++) {
		Httpd s({"--workers", "1", "--header-timeout", "200", "--resolution", "4", "--keepalive", "0"});
		ASSERT_GT(s.port(), 0) << s.err();
		std::vector<Client> cs(kThreads * kPerThread);
		std::atomic<int> failed{0};
		std::vector<std::thread> ts;
		for (int t = 0; t < kThreads; t++)
			ts.emplace_back([&, t] {
				for (int i = t * kPerThread; i < (t + 1) * kPerThread; i++) {
					Client &c = cs[size_t(i)];
					c.fd = stamped_socket();
					c.called = realtime_ms();
					if (c.fd < 0 || !connect_port(c.fd, s.port()) || send(c.fd, "G", 1, MSG_NOSIGNAL) != 1)
						failed++;
				}
			});
		for (auto &t : ts)
			t.join();
		ASSERT_EQ(failed.load(), 0) << "round " << round;
		read_all(cs, 10000);
		Seen seen = measure(cs, kTimeoutMs);
		for (Client &c : cs) {
			if (c.answered >= 0)
				EXPECT_EQ(c.got.substr(0, 12), "HTTP/1.1 408") << c.got;
			close(c.fd);
		}
		EXPECT_EQ(seen.open, 0) << "round " << round << ": clients never closed";
		EXPECT_EQ(seen.early, 0) << "round " << round << ": " << seen.early << " of " << cs.size()
					 << " clients closed under " << kTimeoutMs << " ms after connect(), the earliest after "
					 << seen.earliest << " ms (" << seen.first_early << ")";
		// Bounded lateness too, with room for the load: the deadline fires.
		EXPECT_LT(seen.latest, kTimeoutMs + 5000) << "round " << round;
		printf("round %d: %zu clients closed %.1f to %.1f ms after connect(), %d of them timed by their 408; "
		       "%d early\n",
		       round, cs.size(), seen.earliest, seen.latest, seen.answered, seen.early);
		EXPECT_EQ(json_sum(get_stats(s.port()), "header_timeout"), long(cs.size())) << "round " << round;
	}
}

// Body bytes that arrive while the worker's turn runs, read in that turn:
// the body deadline must count from their read, not from the turn's start.
// Each of 32 clients pipelines 3,700 GETs (100 KB, more than one 64 KiB
// read) and the head of a GET with a chunked body, all but its last line;
// once the first answers arrive (the worker is in the turn that reads its
// requests) it sends the rest of the head, which the worker reads in that
// turn, after the GETs; then nothing. Beside two CPU-bound processes. No
// client may get its 408 under --body-timeout after the send() of the
// head's last line.
TEST_F(HttpdTest, BodyDeadlineNeverEndsBeforeItsTimeUnderLoad) {
	const int kClients = 32, kRounds = 3;
	const double kTimeoutMs = 200;
	const int kGets = 3700;
	std::string first;
	for (int i = 0; i < kGets; i++)
		first += kt_test::kGet;
	first += "GET / HTTP/1.1\r\nHost: t\r\n";
	const std::string rest = "Transfer-Encoding: chunked\r\n\r\n";
	CpuHogs hogs;
	ASSERT_TRUE(hogs.started());
	for (int round = 0; round < kRounds; round++) {
		Httpd s({"--workers", "1", "--body-timeout", "200", "--resolution", "4"});
		ASSERT_GT(s.port(), 0) << s.err();
		std::vector<Client> cs(kClients);
		for (Client &c : cs) {
			c.fd = stamped_socket();
			ASSERT_TRUE(c.fd >= 0 && connect_port(c.fd, s.port()));
		}
		std::atomic<int> failed{0};
		std::vector<std::thread> ts;
		for (Client &c : cs)
			ts.emplace_back([&] {
				pollfd p{c.fd, POLLIN, 0};
				if (!send_all(c.fd, first) || poll(&p, 1, 10000) != 1) {
					failed++;
					return;
				}
				c.called = realtime_ms();
				if (!send_all(c.fd, rest))
					failed++;
				while (!c.eof && read_stamped(c)) {
					pollfd q{c.fd, POLLIN, 0};
					if (poll(&q, 1, 10000) != 1)
						break;
				}
			});
		for (auto &t : ts)
			t.join();
		ASSERT_EQ(failed.load(), 0) << "round " << round;
		Seen seen = measure(cs, kTimeoutMs);
		for (Client &c : cs) {
			EXPECT_EQ(count(c.got, "HTTP/1.1 200 OK\r\n"), size_t(kGets));
			EXPECT_EQ(count(c.got, "HTTP/1.1 408 "), 1u);
			close(c.fd);
		}
		EXPECT_EQ(seen.open, 0) << "round " << round << ": clients never closed";
		EXPECT_EQ(seen.early, 0) << "round " << round << ": " << seen.early << " of " << cs.size()
					 << " clients closed under " << kTimeoutMs << " ms after send(), the earliest after "
					 << seen.earliest << " ms (" << seen.first_early << ")";
		EXPECT_LT(seen.latest, kTimeoutMs + 5000) << "round " << round;
		printf("round %d: %zu clients closed %.1f to %.1f ms after send(), %d of them timed by their 408; "
		       "%d early\n",
		       round, cs.size(), seen.earliest, seen.latest, seen.answered, seen.early);
		EXPECT_EQ(json_sum(get_stats(s.port()), "body_timeout"), long(cs.size())) << "round " << round;
	}
}
