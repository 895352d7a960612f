// SPDX-License-Identifier: MIT
/*
 * examples/worker_loop.c - docs/API.md's worker loop, single-threaded, on real
 * sockets, printing what fired and when against the real clock.
 *
 * Eight connections (socketpairs: the loop owns one end, the "client" the
 * other) each embed a header deadline and a keep-alive deadline as struct
 * kt_timer members. Odd connections never send a whole header (300..650 ms
 * deadlines); even ones sit idle until their 800 ms keep-alive runs out,
 * except connection 0, whose client sends a byte every 100 ms for its first
 * second (each read pushes the keep-alive back), and connection 2, whose
 * client hangs up at once (its timers are deleted, they never fire). The
 * client side is scripted with timers on the same base.
 *
 * One thread and no other thread arms timers, so the turn may size its wait
 * with kt_base_next_timeout(); with producers on other threads use
 * kt_base_prepare_wait() (docs/API.md says why; examples/echo_server.c and
 * examples/cross_thread.c do).
 *
 * Exits 0 if every connection ended the way the script says.
 *
 * Builds with Bazel (//examples:worker_loop) or with any C11 compiler:
 *   cc -std=c11 worker_loop.c $(pkg-config --cflags --libs ktimer)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime, socketpair flags: POSIX/Linux, not ISO C */
#endif
#include <ktimer/ktimer.h>

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NCONN 8

enum outcome { OPEN, HEADER_TIMEOUT, KEEPALIVE_TIMEOUT, PEER_CLOSED };
static const char *const outcome_name[] = {"open", "header timeout", "keep-alive timeout", "closed by peer"};

struct conn {
	int id;
	int fd, client_fd;
	enum outcome outcome;
	uint64_t closed_at; /* ms since start, real clock */
	struct kt_timer header_deadline;
	struct kt_timer keepalive;
};

static struct kt_base *base;
static struct conn conns[NCONN];
static struct kt_timer client_script; /* drives the clients' side */
static int epfd, open_conns = NCONN, script_step;
static uint64_t t0, last_ping; /* ms since start, real clock */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void finish(struct conn *c, enum outcome why, struct kt_timer *fired)
{
	uint64_t now = mono_ms();

	c->outcome = why;
	c->closed_at = now - t0;
	if (fired)
		printf("  +%5llu ms  conn %d  %-18s deadline +%5llu ms, %lld ms after it\n",
		       (unsigned long long)(now - t0), c->id, outcome_name[why],
		       (unsigned long long)(kt_timer_expires(fired) - t0), (long long)(now - kt_timer_expires(fired)));
	else
		printf("  +%5llu ms  conn %d  %-18s (its timers are deleted and never fire)\n",
		       (unsigned long long)(now - t0), c->id, outcome_name[why]);
	kt_timer_delete(&c->header_deadline);
	kt_timer_delete(&c->keepalive);
	close(c->fd); /* leaves the epoll set */
	open_conns--;
}

static void on_header_timeout(struct kt_timer *t)
{
	struct conn *c = kt_from_timer(c, t, header_deadline);

	finish(c, HEADER_TIMEOUT, t);
}

static void on_keepalive(struct kt_timer *t)
{
	struct conn *c = kt_from_timer(c, t, keepalive);

	finish(c, KEEPALIVE_TIMEOUT, t);
}

/* The clients: conn 2 hangs up at once, conn 0 talks for a second. */
static void on_client_script(struct kt_timer *t)
{
	if (script_step++ == 0) {
		close(conns[2].client_fd);
		conns[2].client_fd = -1;
	}
	if (mono_ms() - t0 < 1000) {
		last_ping = mono_ms() - t0;
		(void)!write(conns[0].client_fd, "x", 1);
		kt_timer_arm(t, KT_MILLIS(100));
	}
}

/* I/O: a byte pushes the keep-alive back; EOF means the peer hung up. */
static void handle_io(struct conn *c)
{
	char buf[64];
	ssize_t r = read(c->fd, buf, sizeof(buf));

	if (r > 0)
		kt_timer_arm(&c->keepalive, KT_MILLIS(800)); /* the cheap re-arm */
	else if (r == 0 || errno != EAGAIN)
		finish(c, PEER_CLOSED, NULL);
}

int main(void)
{
	struct kt_base_config cfg = {16, KT_CLOCK_MONOTONIC, 0};
	int turns = 0;
	bool ok = true;

	setvbuf(stdout, NULL, _IOLBF, 0);
	base = kt_base_new(&cfg);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!base || epfd < 0) {
		perror("setup");
		return 1;
	}
	/* The summary below counts the wheel's work; a server leaves this off
	 * (counting takes the re-arm off its fastest path). */
	kt_base_set_op_counting(base, 1);
	t0 = mono_ms();
	printf("ktimer worker loop: %d connections, 16 ms wheel, real clock\n", NCONN);
	for (int i = 0; i < NCONN; i++) {
		struct conn *c = &conns[i];
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
			perror("socketpair");
			return 1;
		}
		c->id = i;
		c->fd = sv[0];
		c->client_fd = sv[1];
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
		epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
		kt_timer_setup(&c->header_deadline, base, on_header_timeout, 0);
		kt_timer_setup(&c->keepalive, base, on_keepalive, 0);
		if (i % 2)
			kt_timer_arm(&c->header_deadline, KT_MILLIS(300 + 50 * (unsigned)i));
		else
			kt_timer_arm(&c->keepalive, KT_MILLIS(800));
	}
	kt_timer_setup(&client_script, base, on_client_script, 0);
	kt_timer_arm(&client_script, KT_MILLIS(0));

	while (open_conns > 0 && turns < 100000) {
		struct epoll_event ev[NCONN];
		int64_t ms = kt_base_next_timeout(base); /* -1: nothing pending */
		int n = epoll_wait(epfd, ev, NCONN, ms < 0 ? -1 : ms > INT_MAX ? INT_MAX : (int)ms);

		if (n < 0 && errno != EINTR) {
			perror("epoll_wait");
			return 1;
		}
		kt_base_update_time(base); /* 1. the cached clock is now; fires nothing */
		for (int i = 0; i < n; i++)
			handle_io(ev[i].data.ptr); /* 2. push back, delete, close */
		kt_base_run(base);             /* 3. timers: a callback may close anything */
		turns++;
	}

	struct kt_base_stats st;
	kt_base_get_stats(base, &st);
	printf("done in %d turns: %llu fired, %llu linked, %llu unlinked, %llu same-bucket re-arms\n", turns,
	       (unsigned long long)st.fired, (unsigned long long)st.enqueued, (unsigned long long)st.removed,
	       (unsigned long long)st.same_bucket);
	for (int i = 0; i < NCONN; i++) {
		enum outcome want = i == 2 ? PEER_CLOSED : i % 2 ? HEADER_TIMEOUT : KEEPALIVE_TIMEOUT;

		if (conns[i].outcome != want) {
			printf("FAILED: conn %d: %s, expected %s\n", i, outcome_name[conns[i].outcome], outcome_name[want]);
			ok = false;
		}
		if (conns[i].client_fd >= 0)
			close(conns[i].client_fd);
	}
	/* Conn 0 talked for a second; its keep-alive ran from its last byte. */
	if (conns[0].closed_at < last_ping + 800) {
		printf("FAILED: conn 0 closed at +%llu ms, before its last byte (+%llu ms) + 800\n",
		       (unsigned long long)conns[0].closed_at, (unsigned long long)last_ping);
		ok = false;
	}
	kt_timer_delete(&client_script);
	kt_base_free(base);
	close(epfd);
	printf("%s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
