// Expiry storms: when many keep-alive connections expire in the same second,
// a worker closes them over several turns (--expire-budget of wall time per
// turn, or --expire-batch closes), oldest first, serving I/O between turns,
// and loses none. Checked with real sockets by counts and
// order (the server's /stats drain counters, which connections see EOF and
// in what order), not by wall time.
#include <gtest/gtest.h>

#include <poll.h>
#include <time.h>

#include <algorithm>
#include <vector>

#include "tests/support/httpd_proc.h"

using kt_test::connect_to;
using kt_test::get_stats;
using kt_test::Httpd;
using kt_test::json_sum;
using kt_test::now_ms;
using kt_test::read_response;
using kt_test::Response;
using kt_test::send_all;

// The defaults --help must name (net/main.c; chosen in BENCHMARKS.md
// "Expiry storms").
#define DEF_BUDGET "250"
#define DEF_SPREAD "500"

namespace {

const std::string kGet = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";

// CLOCK_MONOTONIC in ms: the clock the server's slots are whole seconds of.
long mono_ms() {
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return long(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

bool get_ok(int fd) {
	std::string buf;
	return send_all(fd, kGet) && read_response(fd, buf, false, 5000).status == 200;
}

class Storm : public ::testing::Test {
protected:
	static void SetUpTestSuite() { kt_test::raise_fd_limit(); }
};

} // namespace

// 60 connections go idle within one second; 10 of them (every sixth) send
// another request 1.5 s later, which pushes their deadline into the next
// second while they stay in the first second's list. When that second is
// due, the other 50 must be closed at most `per_turn` per turn (so in
// 50 / per_turn turns at least), in the order they went idle, and the 10
// must be re-slotted, not closed, and closed a second later. Every
// connection ends with an EOF.
static void drain_scenario(const std::vector<std::string> &drain_args, int per_turn, bool by_budget,
			   bool exact = true) {
	const int kConns = 60, kEvery = 6;
	std::vector<std::string> args = {"--workers", "1", "--keepalive", "2"};
	args.insert(args.end(), drain_args.begin(), drain_args.end());
	Httpd s(args);
	ASSERT_GT(s.port(), 0) << s.err();

	// Start just after a second begins, so the connections share a second
	// and the later requests are still in it (bounded: at most 1.2 s).
	for (int i = 0; i < 240 && (mono_ms() % 1000 < 50 || mono_ms() % 1000 > 150); i++)
		usleep(5000);
	long start = mono_ms();
	std::vector<int> fds(kConns);
	for (int i = 0; i < kConns; i++) {
		fds[i] = connect_to(s.port());
		ASSERT_GE(fds[i], 0) << i;
		ASSERT_TRUE(get_ok(fds[i])) << i;
	}
	long idle_at = mono_ms();
	// With the start aligned, all 60 deadlines fall in one second unless
	// the machine stalled for most of a second; then the test says so.
	if (idle_at / 1000 != start / 1000)
		GTEST_SKIP() << "opening 60 connections took " << idle_at - start << " ms: the machine is too loaded";

	// 1.5 s after the second began: the touched deadlines move one second
	// on, so their nodes stay (lazily) in the due second's list.
	usleep(useconds_t(std::max(0L, start / 1000 * 1000 + 1500 - mono_ms())) * 1000);
	std::vector<double> touched_at(kConns, -1);
	for (int i = kEvery - 1; i < kConns; i += kEvery) {
		ASSERT_TRUE(get_ok(fds[i])) << i;
		touched_at[i] = now_ms();
	}

	// Every connection must see EOF. Each poll() round records the fds that
	// have; poll scans its array in order, youngest first, so a connection
	// closed before a younger one is never seen in a later round than it.
	std::vector<int> round(kConns, -1);
	std::vector<double> eof_at(kConns, -1);
	int left = kConns;
	double deadline = now_ms() + 8000;
	for (int r = 0; left > 0 && now_ms() < deadline; r++) {
		std::vector<pollfd> p;
		std::vector<int> who;
		for (int i = kConns - 1; i >= 0; i--) {
			if (round[i] < 0) {
				p.push_back({fds[i], POLLIN, 0});
				who.push_back(i);
			}
		}
		if (poll(p.data(), p.size(), 100) <= 0)
			continue;
		for (size_t k = 0; k < p.size(); k++) {
			if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char b[256];
			ssize_t n = recv(p[k].fd, b, sizeof(b), 0);
			ASSERT_LE(n, 0) << "bytes nobody asked for on connection " << who[k];
			round[who[k]] = r;
			eof_at[who[k]] = now_ms();
			left--;
		}
	}
	ASSERT_EQ(left, 0) << "connections never closed";

	int last_untouched = -1, first_touched = 1 << 30;
	for (int i = 0; i < kConns; i++) {
		if (touched_at[i] >= 0) {
			first_touched = std::min(first_touched, round[i]);
			// Never early: a full keep-alive timeout after its last request.
			EXPECT_GE(eof_at[i] - touched_at[i], 2000 - 20) << i;
			continue;
		}
		// Oldest first: no older connection seen closed after a younger one.
		EXPECT_GE(round[i], last_untouched) << "connection " << i << " closed before an older one";
		last_untouched = std::max(last_untouched, round[i]);
	}
	EXPECT_GT(first_touched, last_untouched) << "a connection active since was closed with the due second";

	std::string st = get_stats(s.port());
	const int due = kConns - kConns / kEvery;
	EXPECT_EQ(json_sum(st, "keepalive"), kConns) << st;
	EXPECT_EQ(json_sum(st, "ring_expired"), kConns) << st;
	if (exact)
		EXPECT_EQ(json_sum(st, "ring_drain_max"), per_turn) << st;
	else
		EXPECT_LE(json_sum(st, "ring_drain_max"), per_turn) << st;
	EXPECT_GE(json_sum(st, "ring_drain_turns"), (due + per_turn - 1) / per_turn) << st;
	// By the budget: every turn but the one that empties a second's list
	// stopped at it (two due seconds: the 50, then the 10).
	if (by_budget)
		EXPECT_GE(json_sum(st, "ring_budget_stops"), json_sum(st, "ring_drain_turns") - 2) << st;
	else
		EXPECT_EQ(json_sum(st, "ring_budget_stops"), 0) << st;
	EXPECT_EQ(kt_test::json_field(st, "open"), 1) << st; // the /stats request's own connection
	for (int fd : fds)
		close(fd);
}

// A time budget of 1 us: a close alone costs more (a system call and the
// FIN), so every turn stops after its first close - the drain takes one
// turn per connection, each under the budget's rule, and loses none.
TEST_F(Storm, DueSecondDrainsOverSeveralTurnsUnderTheTimeBudget) {
	drain_scenario({"--expire-budget", "1", "--expire-batch", "0", "--expire-spread", "0"}, 1, true);
}

// The count limit alone (no time budget): at most 4 closes per turn.
TEST_F(Storm, DueSecondDrainsOverSeveralTurnsOldestFirstAndLosesNone) {
	drain_scenario({"--expire-budget", "0", "--expire-batch", "4", "--expire-spread", "0"}, 4, false);
}

// A spread: the due second is closed over 400 ms of turns paced by the
// ring's own timer (the worker blocks between them), at most 4 a turn, and
// still loses none and keeps the order.
TEST_F(Storm, DueSecondDrainsPacedOverTheSpread) {
	drain_scenario({"--expire-budget", "0", "--expire-batch", "4", "--expire-spread", "400", "--expire-burst", "0"}, 4,
		       false, false);
}

// No budget, no spread, no batch: the whole second closes in the timer's
// callback: no drain turns, every connection still closed.
TEST_F(Storm, NoDrainLimitClosesTheSecondAtOnce) {
	const int kConns = 20;
	Httpd s({"--workers", "1", "--keepalive", "1", "--expire-batch", "0", "--expire-budget", "0", "--expire-spread",
		 "0"});
	ASSERT_GT(s.port(), 0) << s.err();
	std::vector<int> fds(kConns);
	for (int i = 0; i < kConns; i++) {
		fds[i] = connect_to(s.port());
		ASSERT_GE(fds[i], 0) << i;
		ASSERT_TRUE(get_ok(fds[i])) << i;
	}
	for (int i = 0; i < kConns; i++)
		EXPECT_GE(kt_test::wait_eof(fds[i], 5000), 0) << i;
	std::string st = get_stats(s.port());
	EXPECT_EQ(json_sum(st, "keepalive"), kConns) << st;
	EXPECT_EQ(json_sum(st, "ring_drain_turns"), 0) << st;
	for (int fd : fds)
		close(fd);
}

// Bad values are refused with a clear message, not taken as some default.
TEST_F(Storm, ExpireOptionsRejectBadValues) {
	for (const char *opt : {"--expire-batch", "--expire-budget", "--expire-spread", "--expire-burst"}) {
		for (const char *bad : {"-1", "x", "", "4294967296"}) {
			std::string out =
				kt_test::run(kt_test::httpd_bin() + " " + opt + " '" + bad + "' 2>&1; echo rc=$?");
			EXPECT_NE(out.find(std::string(opt) + " wants an integer"), std::string::npos) << bad << ": " << out;
			EXPECT_NE(out.find("rc=2"), std::string::npos) << bad << ": " << out;
		}
	}
	// A pace over more than a second: each second falling due would stretch
	// it again (slot_ring_set_spread()), so it is refused, not clamped.
	std::string out = kt_test::run(kt_test::httpd_bin() + " --expire-spread 1001 2>&1; echo rc=$?");
	EXPECT_NE(out.find("--expire-spread wants an integer in [0, 1000]"), std::string::npos) << out;
	EXPECT_NE(out.find("rc=2"), std::string::npos) << out;
	std::string help = kt_test::run(kt_test::httpd_bin() + " --help");
	for (auto [flag, def] : {std::pair<const char *, const char *>{"  --expire-budget US", "(default " DEF_BUDGET ")"},
				 {"  --expire-spread MS", "(default " DEF_SPREAD ")"},
				 {"  --expire-burst N", "(default 64)"},
				 {"  --expire-batch N", "(default 0)"}}) {
		size_t at = help.find(flag);
		ASSERT_NE(at, std::string::npos) << help;
		EXPECT_NE(help.substr(at, help.find("\n  --", at + 1) - at).find(def), std::string::npos) << help;
	}
}
