// SPDX-License-Identifier: MIT
/*
 * tools/check/soak_clients.c - the misbehaving half of tools/check/soak.
 *
 *   soak_clients PORT SECONDS KEEPALIVE_S HEADER_MS BODY_MS
 *
 * For SECONDS, keeps opening (loopback only):
 *   idle      one request, then silence: must be closed by keep-alive
 *             between T and T + 1 s + one unit (+ scheduling slack)
 *   slow      a request line trickled one byte per 100 ms, never finished:
 *             must get 408 and be closed at the header deadline
 *   bad       a malformed request (HTTP/9.9): must get an error status (505)
 *             and be closed
 *   halfclose a request then shutdown(SHUT_WR): must get the full 200
 *   nobody    a request announcing a 100-byte body that never comes: must get
 *             its 200, then be closed at the body deadline
 *   slowpipe  20,000 pipelined GETs, the replies read slowly (384 KB, then
 *             a pause longer than the header deadline, 8 times): must get
 *             every response, whole, and no reset (the server stops reading
 *             while its output is blocked; its header deadline must too)
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

#include "tools/bench/loopback.h"

#define SLACK_MS 300.0

enum kind { IDLE, SLOW, BAD, HALF, NOBODY, SLOWPIPE, NKIND };
static const char *names[NKIND] = {"idle", "slow", "bad", "halfclose", "nobody", "slowpipe"};

#define PIPE_REQUESTS 20000
#define PIPE_BURST (384 * 1024)
#define PIPE_PAUSES 8

struct client {
	enum kind kind;
	int fd, done, ok, reset;
	double opened, answered, next_byte;
	size_t sent, got;
	char buf[512];
	/* slowpipe: requests sent, responses seen, bytes since the last pause */
	size_t pipe_sent, burst;
	int responses, pauses;
	char tail[32];
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int port, keepalive_ms, header_ms, body_ms;
static const char kLine[] = "GET /slowly-but-never-finishing HTTP/1.1\r\n";
static const char kGet[] = "GET / HTTP/1.1\r\nHost: s\r\n\r\n";
static const char kTail[] = "\r\n\r\nHello from ktimer\n";
static char *pipe_reqs; /* PIPE_REQUESTS copies of kGet */


/* Count whole responses in what a slowpipe client just read. */
static void count_responses(struct client *c, const char *p, size_t n)
{
	size_t keep = sizeof(kTail) - 2, tl = strlen(c->tail);
	char window[32 + 65536];

	memcpy(window, c->tail, tl);
	memcpy(window + tl, p, n);
	window[tl + n] = 0;
	for (const char *at = window; (at = strstr(at, kTail)) != NULL; at += sizeof(kTail) - 1)
		c->responses++;
	/* Keep the last bytes: a tail may straddle two reads. */
	if (tl + n > keep) {
		memcpy(c->tail, window + tl + n - keep, keep);
		c->tail[keep] = 0;
	} else {
		memcpy(c->tail, window, tl + n + 1);
	}
}

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
	case NOBODY: {
		double waited = t - c->answered;

		c->ok = status == 200 && c->answered > 0 && waited >= body_ms - 20 && waited <= body_ms + 16 + SLACK_MS;
		break;
	}
	case SLOWPIPE:
		c->ok = c->responses == PIPE_REQUESTS && !c->reset;
		status = c->responses;
		break;
	default:
		c->ok = status == 200 && strstr(c->buf, "Hello from ktimer") != NULL;
		break;
	}
	if (!c->ok)
		fprintf(stderr, "soak_clients: %s client wrong: %s %d after %.0f ms%s\n", names[c->kind],
			c->kind == SLOWPIPE ? "responses" : "status", status, t - c->opened, c->reset ? " (reset)" : "");
	close(c->fd);
}

/* A slowpipe client's turn: send what the socket takes, read a burst, then
 * pause past the header deadline. Returns 1 when it is finished. */
static int service_pipe(struct client *c, double t)
{
	size_t total = PIPE_REQUESTS * (sizeof(kGet) - 1);
	char tmp[65536];

	while (c->pipe_sent < total) {
		ssize_t r = send(c->fd, pipe_reqs + c->pipe_sent, total - c->pipe_sent, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (r <= 0)
			break;
		c->pipe_sent += (size_t)r;
	}
	if (t < c->next_byte)
		return 0;
	for (;;) {
		ssize_t r = recv(c->fd, tmp, sizeof(tmp), MSG_DONTWAIT);

		if (r > 0) {
			count_responses(c, tmp, (size_t)r);
			c->burst += (size_t)r;
			if (c->responses >= PIPE_REQUESTS)
				return 1;
			if (c->burst >= PIPE_BURST && c->pauses < PIPE_PAUSES) {
				c->burst = 0;
				c->pauses++;
				c->next_byte = t + header_ms + 200; /* a pause past the header deadline */
				return 0;
			}
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		c->reset = r < 0;
		return 1; /* closed (or reset) before every response came */
	}
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	struct client *cl;
	size_t n = 0, cap = 1 << 16;
	double start, end, next_open[NKIND] = {0};
	/* ms between opens */
	const double every[NKIND] = {50, 250, 500, 500, 500, 5000};
	int ep = epoll_create1(0), failures = 0, total[NKIND] = {0}, good[NKIND] = {0};

	if (argc != 6) {
		fprintf(stderr, "usage: soak_clients PORT SECONDS KEEPALIVE_S HEADER_MS BODY_MS\n");
		return 2;
	}
	port = atoi(argv[1]);
	keepalive_ms = atoi(argv[3]) * 1000;
	header_ms = atoi(argv[4]);
	body_ms = atoi(argv[5]);
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	cl = calloc(cap, sizeof(*cl));
	pipe_reqs = malloc(PIPE_REQUESTS * (sizeof(kGet) - 1));
	for (size_t i = 0; i < PIPE_REQUESTS; i++)
		memcpy(pipe_reqs + i * (sizeof(kGet) - 1), kGet, sizeof(kGet) - 1);
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
			n++;
			c->next_byte = t;
			if (kind == SLOWPIPE) {
				c->next_byte = t + 150; /* let the server fill the socket first */
				continue;               /* serviced by service_pipe(), paced */
			}
			e.events = EPOLLIN | EPOLLRDHUP;
			e.data.u64 = n - 1;
			epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &e);
			if (kind == IDLE)
				send(c->fd, kGet, sizeof(kGet) - 1, MSG_NOSIGNAL);
			else if (kind == BAD)
				send(c->fd, "GET / HTTP/9.9\r\nHost: s\r\n\r\n", 27, MSG_NOSIGNAL);
			else if (kind == HALF) {
				send(c->fd, kGet, sizeof(kGet) - 1, MSG_NOSIGNAL);
				shutdown(c->fd, SHUT_WR);
			} else if (kind == NOBODY) {
				static const char head[] = "GET / HTTP/1.1\r\nHost: s\r\nContent-Length: 100\r\n\r\n";

				send(c->fd, head, sizeof(head) - 1, MSG_NOSIGNAL);
			}
		}
		/* Trickle the slow clients' bytes; service the slow pipelined readers. */
		for (size_t i = 0; i < n; i++) {
			struct client *c = &cl[i];

			if (c->kind == SLOW && !c->done && c->sent < sizeof(kLine) - 1 && t >= c->next_byte) {
				send(c->fd, kLine + c->sent++, 1, MSG_NOSIGNAL);
				c->next_byte = t + 100;
			}
			if (c->kind == SLOWPIPE && !c->done && service_pipe(c, t))
				finish(c);
			open_left += !c->done;
		}
		if (t >= end && open_left == 0)
			break;
		if (t > end + keepalive_ms + 60000) {
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
	       "halfclose %d/%d answered, nobody %d/%d closed at the body deadline, slowpipe %d/%d got all %d "
	       "responses; %d failures\n",
	       good[IDLE], total[IDLE], good[SLOW], total[SLOW], good[BAD], total[BAD], good[HALF], total[HALF],
	       good[NOBODY], total[NOBODY], good[SLOWPIPE], total[SLOWPIPE], PIPE_REQUESTS, failures);
	free(pipe_reqs);
	free(cl);
	return failures ? 1 : 0;
}
