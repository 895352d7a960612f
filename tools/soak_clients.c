// SPDX-License-Identifier: MIT
/*
 * tools/soak_clients.c - the misbehaving half of tools/soak.
 *
 *   soak_clients PORT SECONDS KEEPALIVE_S HEADER_MS
 *
 * For SECONDS, keeps opening (loopback only):
 *   idle      one request, then silence: must be closed by keep-alive
 *             between T and T + 1 s + one unit (+ scheduling slack)
 *   slow      a request line trickled one byte per 100 ms, never finished:
 *             must get 408 and be closed at the header deadline
 *   bad       a malformed request (HTTP/9.9): must get an error status (505)
 *             and be closed
 *   halfclose a request then shutdown(SHUT_WR): must get the full 200
 * then waits for every one of them to finish and checks each outcome.
 * Prints one summary line; exits 1 if any client saw the wrong thing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tools/loopback.h"

#define SLACK_MS 300.0

enum kind { IDLE, SLOW, BAD, HALF, NKIND };
static const char *names[NKIND] = {"idle", "slow", "bad", "halfclose"};

struct client {
	enum kind kind;
	int fd, done, ok;
	double opened, answered, next_byte;
	size_t sent, got;
	char buf[512];
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int port, keepalive_ms, header_ms;
static const char kLine[] = "GET /slowly-but-never-finishing HTTP/1.1\r\n";


/* Judge a client when its connection closes. */
static void finish(struct client *c)
{
	double t = now_ms();
	int status = c->got >= 12 ? atoi(c->buf + 9) : 0;

	c->done = 1;
	switch (c->kind) {
	case IDLE: {
		double idle = t - c->answered;

		c->ok = status == 200 && c->answered > 0 && idle >= keepalive_ms - 20 &&
			idle <= keepalive_ms + 1000 + 16 + SLACK_MS;
		break;
	}
	case SLOW:
		c->ok = status == 408 && t - c->opened <= header_ms + 16 + SLACK_MS + 100;
		break;
	case BAD:
		c->ok = status >= 400; /* a clear refusal: 4xx, or 505 for the version */
		break;
	default:
		c->ok = status == 200 && strstr(c->buf, "Hello from ktimer") != NULL;
		break;
	}
	if (!c->ok)
		fprintf(stderr, "soak_clients: %s client wrong: status %d after %.0f ms\n", names[c->kind], status,
			t - c->opened);
	close(c->fd);
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	struct client *cl;
	size_t n = 0, cap = 1 << 16;
	double start, end, next_open[NKIND] = {0};
	const double every[NKIND] = {50, 250, 500, 500}; /* ms between opens */
	int ep = epoll_create1(0), failures = 0, total[NKIND] = {0}, good[NKIND] = {0};

	if (argc != 5) {
		fprintf(stderr, "usage: soak_clients PORT SECONDS KEEPALIVE_S HEADER_MS\n");
		return 2;
	}
	port = atoi(argv[1]);
	keepalive_ms = atoi(argv[3]) * 1000;
	header_ms = atoi(argv[4]);
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	cl = calloc(cap, sizeof(*cl));
	start = now_ms();
	end = start + atof(argv[2]) * 1000.0;
	for (;;) {
		struct epoll_event ev[64];
		double t = now_ms();
		size_t open_left = 0;
		int k;

		for (int kind = 0; kind < NKIND && t < end; kind++) {
			struct client *c;
			struct epoll_event e;

			if (t < next_open[kind] || n == cap)
				continue;
			next_open[kind] = t + every[kind];
			c = &cl[n];
			c->kind = (enum kind)kind;
			c->fd = loopback_dial(port);
			c->opened = t;
			if (c->fd < 0) {
				fprintf(stderr, "soak_clients: connect failed\n");
				failures++;
				continue;
			}
			e.events = EPOLLIN | EPOLLRDHUP;
			e.data.u64 = n++;
			epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &e);
			if (kind == IDLE)
				send(c->fd, "GET / HTTP/1.1\r\nHost: s\r\n\r\n", 27, MSG_NOSIGNAL);
			else if (kind == BAD)
				send(c->fd, "GET / HTTP/9.9\r\nHost: s\r\n\r\n", 27, MSG_NOSIGNAL);
			else if (kind == HALF) {
				send(c->fd, "GET / HTTP/1.1\r\nHost: s\r\n\r\n", 27, MSG_NOSIGNAL);
				shutdown(c->fd, SHUT_WR);
			}
			c->next_byte = t;
		}
		/* Trickle the slow clients' bytes. */
		for (size_t i = 0; i < n; i++) {
			struct client *c = &cl[i];

			if (c->kind == SLOW && !c->done && c->sent < sizeof(kLine) - 1 && t >= c->next_byte) {
				send(c->fd, kLine + c->sent++, 1, MSG_NOSIGNAL);
				c->next_byte = t + 100;
			}
			open_left += !c->done;
		}
		if (t >= end && open_left == 0)
			break;
		if (t > end + keepalive_ms + 5000) {
			fprintf(stderr, "soak_clients: %zu clients never closed\n", open_left);
			failures += (int)open_left;
			break;
		}
		k = epoll_wait(ep, ev, 64, 20);
		for (int i = 0; i < k; i++) {
			struct client *c = &cl[ev[i].data.u64];
			ssize_t r = recv(c->fd, c->buf + c->got, sizeof(c->buf) - 1 - c->got, 0);

			if (r > 0) {
				c->got += (size_t)r;
				c->buf[c->got] = 0;
				if (!c->answered && strstr(c->buf, "\r\n\r\n"))
					c->answered = now_ms();
				if (c->got < sizeof(c->buf) - 1)
					continue;
			}
			if (r < 0 && errno == EAGAIN)
				continue;
			epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
			finish(c);
		}
	}
	for (size_t i = 0; i < n; i++) {
		total[cl[i].kind]++;
		good[cl[i].kind] += cl[i].ok;
		failures += cl[i].done && !cl[i].ok;
	}
	printf("soak_clients: idle %d/%d closed on time, slow %d/%d got 408 at the deadline, bad %d/%d refused, "
	       "halfclose %d/%d answered; %d failures\n",
	       good[IDLE], total[IDLE], good[SLOW], total[SLOW], good[BAD], total[BAD], good[HALF], total[HALF],
	       failures);
	return failures ? 1 : 0;
}
