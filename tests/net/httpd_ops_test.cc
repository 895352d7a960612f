// tests/net/httpd_ops_test.cc: the server as an operator runs it: signals
// (SIGTERM twice, SIGHUP), the access log and its rotation, port ownership
// (--reuseport), --bind names and addresses, --help, who may read /stats,
// a start that fails halfway. The real server binary on loopback.
#include <gtest/gtest.h>

#include <dirent.h>
#include <netdb.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/net/httpd_client.h"

using kt_test::ask;
using kt_test::connect6_to;
using kt_test::connect_from;
using kt_test::connect_to;
using kt_test::get_stats;
using kt_test::Httpd;
using kt_test::HttpdTest;
using kt_test::is_clf;
using kt_test::json_field;
using kt_test::kGet;
using kt_test::now_ms;
using kt_test::read_response;
using kt_test::Response;
using kt_test::send_all;
using kt_test::shaped;
using kt_test::slurp;
using kt_test::status_line;
using kt_test::tmp_path;
using kt_test::wait_for_lines;

// ---- signals -----------------------------------------------------------------

// The graceful shutdown waits for busy connections up to the drain
// deadline; a second SIGTERM (or SIGINT) ends the process at once, with
// 128 + the signal's number; it is not ignored.
TEST_F(HttpdTest, SecondSignalEndsTheGracefulShutdownAtOnce) {
	Httpd s({"--workers", "1", "--header-timeout", "20000", "--body-timeout", "20000", "--write-timeout",
		 "20000"});
	ASSERT_GT(s.port(), 0) << s.banner();
	int fd = connect_to(s.port());
	// Answered, but its body never comes: busy, so the shutdown waits for it.
	send_all(fd, "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n");
	std::string buf;
	ASSERT_EQ(read_response(fd, buf).status, 200);
	kill(s.pid(), SIGTERM);
	usleep(500000);
	ASSERT_TRUE(s.alive()) << "the first signal is a graceful shutdown";
	kill(s.pid(), SIGTERM);
	EXPECT_EQ(s.wait_exit(3000), 128 + SIGTERM) << s.err();
	EXPECT_NE(s.err().find("SIGTERM again"), std::string::npos) << s.err();
	close(fd);
}

// ---- port ownership --------------------------------------------------------

TEST_F(HttpdTest, SecondServerOnAPortInUseExitsWithAddressInUse) {
	Httpd a({"--workers", "2"});
	ASSERT_GT(a.port(), 0);
	Httpd b({"--workers", "2", "--port", std::to_string(a.port())});
	EXPECT_EQ(b.wait_exit(5000), 1);
	EXPECT_EQ(b.banner(), "");
	std::string err = b.err();
	EXPECT_NE(err.find("address already in use"), std::string::npos) << err;
	// The error line starts with a timestamp: "2026/11/30 11:35:25 [error] ".
	EXPECT_TRUE(shaped(err, "####/##/## ##:##:## [error] httpd: ")) << err;
	// The first server still has every connection.
	for (int i = 0; i < 20; i++)
		EXPECT_EQ(ask(a.port(), kGet).status, 200);
	EXPECT_EQ(json_field(get_stats(a.port()), "accepted"), 21);
}

TEST_F(HttpdTest, ReuseportLetsTwoServersShareAPortOnPurpose) {
	Httpd a({"--workers", "1", "--reuseport"});
	ASSERT_GT(a.port(), 0);
	Httpd b({"--workers", "1", "--reuseport", "--port", std::to_string(a.port())});
	EXPECT_EQ(b.port(), a.port()) << b.err();
	EXPECT_EQ(a.stop(), 0);
	EXPECT_EQ(b.stop(), 0);
}

TEST_F(HttpdTest, ReuseportServerRefusesAServerWithoutIt) {
	Httpd a({"--workers", "2", "--reuseport"});
	ASSERT_GT(a.port(), 0);
	Httpd b({"--workers", "1", "--port", std::to_string(a.port())});
	EXPECT_EQ(b.wait_exit(5000), 1);
	EXPECT_NE(b.err().find("address already in use"), std::string::npos) << b.err();
}

// ---- a start that fails halfway --------------------------------------------

namespace {

// Threads owned by the real uid @uid now (RLIMIT_NPROC counts them all).
long threads_of(uid_t uid) {
	long n = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return -1;
	while (dirent *e = readdir(d)) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		std::string st = slurp(std::string("/proc/") + e->d_name + "/status");
		size_t u = st.find("\nUid:\t"), t = st.find("\nThreads:\t");
		if (u != std::string::npos && t != std::string::npos && uid_t(atol(st.c_str() + u + 6)) == uid)
			n += atol(st.c_str() + t + 10);
	}
	closedir(d);
	return n;
}

// A copy of the server binary in a directory any user may read (the
// runfiles sit under root's home, closed to others); removed with it.
class PublicCopy {
public:
	explicit PublicCopy(const std::string &bin) {
		char dir[] = "/tmp/httpd_nproc.XXXXXX";
		if (!mkdtemp(dir))
			return;
		dir_ = dir;
		path_ = dir_ + "/httpd";
		std::string bytes = slurp(bin);
		FILE *f = fopen(path_.c_str(), "w");
		bool ok = f && !bytes.empty() && fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
		if (f)
			ok = fclose(f) == 0 && ok;
		if (!ok || chmod(dir, 0755) != 0 || chmod(path_.c_str(), 0755) != 0)
			path_.clear();
	}
	~PublicCopy() {
		if (dir_.empty())
			return;
		unlink((dir_ + "/httpd").c_str());
		rmdir(dir_.c_str());
	}
	const std::string &path() const { return path_; }

private:
	std::string dir_, path_;
};

} // namespace

// A worker thread that cannot be created (RLIMIT_NPROC: 24 threads for the
// user, 64 workers asked for) ends the start: the workers already running
// are stopped and joined before the server's memory is freed (under ASan a
// worker's turn on a freed base is a heap-use-after-free), and the error
// names the cause, pthread_create()'s, not a listening socket's. Root is
// exempt from RLIMIT_NPROC, so the server runs as nobody.
TEST_F(HttpdTest, WorkerThatCannotStartStopsTheStartedOnesAndSaysWhy) {
	if (geteuid() != 0)
		GTEST_SKIP() << "needs root, to run the server as nobody under RLIMIT_NPROC (root is exempt from it)";
	const passwd *nobody = getpwnam("nobody");
	if (!nobody)
		GTEST_SKIP() << "no user nobody to run the server as";
	if (kt_test::run("prlimit --version && setpriv --version >/dev/null 2>&1 && echo ok").find("ok") == std::string::npos)
		GTEST_SKIP() << "prlimit and setpriv (util-linux) are needed";
	PublicCopy bin(kt_test::httpd_bin());
	ASSERT_FALSE(bin.path().empty()) << "cannot copy " << kt_test::httpd_bin() << " under /tmp";
	for (bool reuseport : {false, true}) {
		SCOPED_TRACE(reuseport ? "--reuseport" : "one shared socket");
		// Room for the main thread and 23 workers beside what nobody runs already.
		long limit = threads_of(nobody->pw_uid) + 24;
		std::vector<std::string> args = {"--workers", "64"};
		if (reuseport)
			args.push_back("--reuseport");
		const char *old = getenv("HTTPD_BIN");
		std::string saved = old ? old : "";
		setenv("HTTPD_BIN", bin.path().c_str(), 1);
		Httpd s(args, {"prlimit", "--nproc=" + std::to_string(limit), "setpriv",
			       "--reuid=" + std::to_string(nobody->pw_uid), "--regid=" + std::to_string(nobody->pw_gid),
			       "--clear-groups"});
		if (old)
			setenv("HTTPD_BIN", saved.c_str(), 1);
		else
			unsetenv("HTTPD_BIN");
		EXPECT_EQ(s.wait_exit(20000), 1) << s.err();
		EXPECT_EQ(s.banner(), "");
		std::string err = s.err();
		EXPECT_NE(err.find("[error] httpd: cannot start worker "), std::string::npos) << err;
		EXPECT_NE(err.find(" of 64: " + std::string(strerror(EAGAIN))), std::string::npos) << err;
		// One line, the cause: no worker turned on a closed epoll, and no
		// stale errno passed off as a listening socket's.
		EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
		EXPECT_EQ(err.find("cannot listen"), std::string::npos) << err;
		EXPECT_EQ(err.find("epoll_wait"), std::string::npos) << err;
		EXPECT_EQ(err.find("Sanitizer"), std::string::npos) << err;
	}
}

// ---- operations ------------------------------------------------------------

TEST_F(HttpdTest, SighupDoesNotKillTheServer) {
	Httpd s({"--workers", "2"});
	ASSERT_GT(s.port(), 0);
	kill(s.pid(), SIGHUP);
	usleep(200000);
	EXPECT_TRUE(s.alive());
	EXPECT_EQ(ask(s.port(), kGet).status, 200);
	EXPECT_NE(s.err().find("[notice] httpd: SIGHUP"), std::string::npos) << s.err();
	EXPECT_EQ(s.stop(), 0);
}

TEST_F(HttpdTest, AccessLogIsCommonLogFormat) {
	std::string log = tmp_path("access_clf.log");
	unlink(log.c_str());
	Httpd s({"--workers", "2", "--access-log", log});
	ASSERT_GT(s.port(), 0) << s.err();
	ask(s.port(), "GET /?q=\"x\" HTTP/1.1\r\nHost: t\r\n\r\n");
	ask(s.port(), "HEAD /missing HTTP/1.0\r\n\r\n");
	ask(s.port(), "GARBAGE\r\n\r\n");
	std::string text = wait_for_lines(log, 3); // flushed within a second
	size_t lines = 0;
	for (size_t p = 0, e; (e = text.find('\n', p)) != std::string::npos; p = e + 1, lines++)
		EXPECT_TRUE(is_clf(text.substr(p, e - p))) << text.substr(p, e - p);
	EXPECT_EQ(lines, 3u) << text;
	EXPECT_NE(text.find("\"GET /?q=\\x22x\\x22 HTTP/1.1\" 200 18\n"), std::string::npos) << text; // '"' escaped
	EXPECT_NE(text.find("\"HEAD /missing HTTP/1.0\" 404 -\n"), std::string::npos) << text;
	EXPECT_NE(text.find("\"GARBAGE\" 400 "), std::string::npos) << text;
	EXPECT_EQ(s.stop(), 0);
	unlink(log.c_str());
}

TEST_F(HttpdTest, SighupReopensTheAccessLogAfterARotation) {
	std::string log = tmp_path("access_rot.log"), old = log + ".1";
	unlink(log.c_str());
	unlink(old.c_str());
	Httpd s({"--workers", "1", "--access-log", log});
	ASSERT_GT(s.port(), 0) << s.err();
	ask(s.port(), "GET /before HTTP/1.1\r\nHost: t\r\n\r\n");
	wait_for_lines(log, 1);
	ASSERT_EQ(rename(log.c_str(), old.c_str()), 0);
	kill(s.pid(), SIGHUP);
	// The reopen is done when the notice is on stderr.
	for (double end = now_ms() + 5000; now_ms() < end && s.err().find("reopened") == std::string::npos;)
		usleep(20000);
	ask(s.port(), "GET /after HTTP/1.1\r\nHost: t\r\n\r\n");
	std::string now = wait_for_lines(log, 1);
	std::string before = slurp(old);
	EXPECT_NE(before.find("/before"), std::string::npos) << before;
	EXPECT_EQ(before.find("/after"), std::string::npos) << before;
	EXPECT_NE(now.find("/after"), std::string::npos) << now;
	EXPECT_EQ(s.stop(), 0);
	unlink(log.c_str());
	unlink(old.c_str());
}

TEST_F(HttpdTest, BindAcceptsAHostName) {
	// A minimal root (debootstrap minbase) has no /etc/hosts, and nothing
	// else resolves "localhost" there.
	addrinfo hints{}, *res = nullptr;
	hints.ai_socktype = SOCK_STREAM;
	int gai = getaddrinfo("localhost", nullptr, &hints, &res);
	if (gai != 0)
		GTEST_SKIP() << "\"localhost\" does not resolve on this machine (" << gai_strerror(gai)
			     << "): no name to bind to";
	freeaddrinfo(res);
	Httpd s({"--workers", "1", "--bind", "localhost"});
	ASSERT_GT(s.port(), 0) << s.err();
	// Printed as the address it resolved to.
	bool v4 = s.banner() == "listening on 127.0.0.1:" + std::to_string(s.port()) + " workers=1\n";
	bool v6 = s.banner() == "listening on [::1]:" + std::to_string(s.port()) + " workers=1\n";
	EXPECT_TRUE(v4 || v6) << s.banner();
	int fd = v6 ? connect6_to(s.port()) : connect_to(s.port());
	ASSERT_GE(fd, 0);
	send_all(fd, kGet);
	std::string buf;
	EXPECT_EQ(read_response(fd, buf).status, 200);
	close(fd);
}

TEST_F(HttpdTest, UnresolvableBindNameIsAClearError) {
	Httpd s({"--workers", "1", "--bind", "no-such-host.invalid"});
	EXPECT_EQ(s.wait_exit(10000), 1);
	EXPECT_NE(s.err().find("cannot resolve no-such-host.invalid"), std::string::npos) << s.err();
}

TEST_F(HttpdTest, Ipv6AddressIsPrintedInBrackets) {
	int probe = socket(AF_INET6, SOCK_STREAM, 0);
	sockaddr_in6 a{};
	a.sin6_family = AF_INET6;
	a.sin6_addr = in6addr_loopback;
	bool have_v6 = probe >= 0 && bind(probe, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0;
	if (probe >= 0)
		close(probe);
	if (!have_v6)
		GTEST_SKIP() << "no IPv6 loopback on this machine";
	Httpd s({"--workers", "1", "--bind", "::1"});
	ASSERT_GT(s.port(), 0) << s.err();
	EXPECT_EQ(s.banner(), "listening on [::1]:" + std::to_string(s.port()) + " workers=1\n");
	int fd = connect6_to(s.port());
	ASSERT_GE(fd, 0);
	send_all(fd, "GET /stats HTTP/1.1\r\nHost: t\r\n\r\n"); // ::1 is loopback: allowed
	std::string buf;
	EXPECT_EQ(read_response(fd, buf).status, 200);
	close(fd);
}

// Every flag of the table in --help with its default: httpd_lists_test.
TEST_F(HttpdTest, HelpExitsZeroAndAnUnknownOptionExitsTwo) {
	std::string out = kt_test::run(kt_test::httpd_bin() + " --help; echo \"exit=$?\"");
	EXPECT_NE(out.find("exit=0"), std::string::npos) << out;
	EXPECT_NE(out.find("\n  --help "), std::string::npos) << out;
	std::string bad = kt_test::run(kt_test::httpd_bin() + " --no-such-flag 2>&1; echo \"exit=$?\"");
	EXPECT_NE(bad.find("exit=2"), std::string::npos) << bad;
	EXPECT_NE(bad.find("unknown option '--no-such-flag'"), std::string::npos) << bad;
	bad = kt_test::run(kt_test::httpd_bin() + " --port 2>&1; echo \"exit=$?\"");
	EXPECT_NE(bad.find("--port wants a value"), std::string::npos) << bad;
	EXPECT_NE(bad.find("exit=2"), std::string::npos) << bad;
}

TEST_F(HttpdTest, StatsRefusedOutsideTheAllowList) {
	Httpd s({"--workers", "1", "--stats-allow", "127.0.0.1/32"});
	const std::string req = "GET /stats HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
	int fd = connect_from("127.0.0.2", s.port()); // loopback, but outside 127.0.0.1/32
	ASSERT_GE(fd, 0);
	send_all(fd, req);
	std::string buf;
	Response r = read_response(fd, buf);
	close(fd);
	EXPECT_EQ(status_line(r), "HTTP/1.1 403 Forbidden");
	EXPECT_EQ(r.body.find("\"requests\""), std::string::npos);
	fd = connect_from("127.0.0.1", s.port());
	send_all(fd, req);
	buf.clear();
	EXPECT_EQ(read_response(fd, buf).status, 200);
	close(fd);
}

TEST_F(HttpdTest, StatsAllowNoneAndAny) {
	{
		Httpd s({"--workers", "1", "--stats-allow", "none"});
		EXPECT_EQ(ask(s.port(), "GET /stats HTTP/1.1\r\nHost: t\r\n\r\n").status, 403);
	}
	{
		Httpd s({"--workers", "1", "--stats-allow", "any"});
		int fd = connect_from("127.0.0.2", s.port());
		send_all(fd, "GET /stats HTTP/1.1\r\nHost: t\r\n\r\n");
		std::string buf;
		EXPECT_EQ(read_response(fd, buf).status, 200);
		close(fd);
	}
	std::string bad = kt_test::run(kt_test::httpd_bin() + " --stats-allow 10.0.0.0/33 2>&1; echo \"exit=$?\"");
	EXPECT_NE(bad.find("exit=2"), std::string::npos) << bad;
}
