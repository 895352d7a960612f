// SPDX-License-Identifier: MIT
/*
 * tools/conn_example.c - timers embedded in connection structs, on a real
 * worker loop (epoll + the base's next timeout), printing what fired and when.
 *
 * Eight simulated connections each carry a header-read deadline and an idle
 * keep-alive deadline as struct kt_timer members. Some "receive requests"
 * (their deadlines are pushed back), some are closed (their timers deleted),
 * the rest time out. Each firing is printed with its deadline and how late it
 * was against the real monotonic clock.
 */
#include <ktimer/ktimer.h>

#include <limits.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

struct conn {
	int id;
	int open;
	struct kt_timer header_deadline;
	struct kt_timer keepalive;
};

static struct kt_base *base;
static uint64_t t0;
static int closed;

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void report(const char *what, struct conn *c, struct kt_timer *t)
{
	uint64_t now = mono_ms();

	printf("  +%5llu ms  conn %d  %-16s deadline +%5llu ms  late %3lld ms\n",
	       (unsigned long long)(now - t0), c->id, what,
	       (unsigned long long)(kt_timer_expires(t) - t0),
	       (long long)(now - kt_timer_expires(t)));
	c->open = 0;
	closed++;
	kt_timer_delete(&c->header_deadline);
	kt_timer_delete(&c->keepalive);
}

static void on_header_timeout(struct kt_timer *t)
{
	struct conn *c = kt_from_timer(c, t, header_deadline);

	report("header timeout", c, t);
}

static void on_keepalive(struct kt_timer *t)
{
	struct conn *c = kt_from_timer(c, t, keepalive);

	report("keep-alive idle", c, t);
}

int main(void)
{
	struct kt_base_config cfg = {16, KT_CLOCK_MONOTONIC, 0};
	struct conn conns[8];
	int ep = epoll_create1(0);
	int turns = 0;

	base = kt_base_new(&cfg);
	if (!base || ep < 0) {
		perror("setup");
		return 1;
	}
	kt_base_run(base);
	t0 = kt_base_now(base);
	printf("ktimer example: 8 connections, 16 ms wheel, real clock\n");
	for (int i = 0; i < 8; i++) {
		conns[i].id = i;
		conns[i].open = 1;
		kt_timer_setup(&conns[i].header_deadline, base, on_header_timeout, 0);
		kt_timer_setup(&conns[i].keepalive, base, on_keepalive, 0);
		/* Odd connections never send a full header: 300..650 ms deadlines. */
		if (i % 2)
			kt_timer_arm(&conns[i].header_deadline, KT_MILLIS(300 + 50 * (unsigned)i));
		else
			kt_timer_arm(&conns[i].keepalive, KT_MILLIS(800));
	}
	/* Connection 2 is closed by its peer: its timer is simply deleted. */
	kt_timer_delete(&conns[2].keepalive);
	conns[2].open = 0;
	closed++;
	printf("  +%5d ms  conn 2  closed by peer    (timer deleted, never fires)\n", 0);

	while (closed < 8) {
		struct epoll_event ev[8];
		int64_t ms = kt_base_next_timeout(base);
		uint64_t elapsed;

		epoll_wait(ep, ev, 8, ms < 0 ? -1 : ms > INT_MAX ? INT_MAX : (int)ms);
		kt_base_run(base);
		turns++;
		elapsed = kt_base_now(base) - t0;
		/* Connection 0 is busy for its first second: activity seen on each
		 * loop turn pushes its keep-alive back (a re-arm). */
		if (conns[0].open && elapsed < 1000)
			kt_timer_arm(&conns[0].keepalive, KT_MILLIS(800));
	}
	struct kt_base_stats st;
	kt_base_get_stats(base, &st);
	printf("done in %d loop turns: %llu fired, %llu linked, %llu unlinked, %llu same-bucket re-arms\n", turns,
	       (unsigned long long)st.fired, (unsigned long long)st.enqueued, (unsigned long long)st.removed,
	       (unsigned long long)st.same_bucket);
	kt_base_free(base);
	close(ep);
	return 0;
}
