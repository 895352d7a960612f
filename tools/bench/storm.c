// SPDX-License-Identifier: MIT
/*
 * tools/bench/storm.c - an active client's latency while N idle keep-alive
 * connections expire together.
 *
 *   storm PORT N KEEPALIVE_S [LABEL] [silent]
 *
 * STORM_PROCS (default 4) is how many processes share the idle connections:
 * each close wakes whoever reads that socket, and one process reading all of
 * them would be the bottleneck the server's latency queues behind.
 *
 * One client sends a GET every millisecond on its own keep-alive connection
 * (the next one as soon as the answer is in if an answer took longer) and
 * records each request's latency. Meanwhile N connections are opened as
 * fast as the server takes them (256 in flight), each sends one GET, reads
 * its response and then stays idle, so their keep-alive deadlines fall
 * within about a second of each other. The tool then waits for the server
 * to close every one of them and reports, on one line:
 *
 *   - the active client's latency (p50, p99, max) over the storm: from the
 *     first idle connection's close to 100 ms after the last;
 *   - the same maximum over everything after the connections were opened;
 *   - how long each idle connection lived after its response (min, max):
 *     a server keeping to a keep-alive bound of T to T + 1 s shows
 *     T <= min and max <= T + 1 s + its lateness;
 *   - late_max: how long after the end of the (monotonic clock) second its
 *     deadline fell in the last connection was closed. httpd expires a
 *     second's deadlines together at that second's end, so this is its
 *     lateness: one wheel unit plus the drain of that second's connections;
 *   - lost: idle connections not closed within T + 20 s (or never opened).
 *
 * With "silent", the N connections send nothing at all: the storm is then
 * of request-head deadlines (per-connection timers), and KEEPALIVE_S is the
 * server's header timeout in seconds.
 *
 * Loopback only. The source addresses rotate over 127.0.0.2-127.0.0.9 so
 * 50,000 connections do not run out of ephemeral ports, and RLIMIT_NOFILE
 * is raised (as root, past the hard limit) to fit them.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WINDOW 256          /* connections being opened at once */
#define SOURCES 8           /* 127.0.0.2 .. 127.0.0.9 */
#define MAX_SAMPLES 400000  /* active requests recorded (400 s at 1 ms) */
#define RESP_CAP 1024

static const char get_req[] = "GET / HTTP/1.1\r\nHost: storm\r\n\r\n";
static int port;
static int silent;

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* Bytes @buf[0..len) hold a whole response: its length, or 0 if not yet
 * (-1 if it is not one). */
static long response_len(const char *buf, size_t len)
{
	const char *end = memmem(buf, len, "\r\n\r\n", 4);
	const char *cl;
	long body = 0;

	if (!end)
		return len >= RESP_CAP - 1 ? -1 : 0;
	cl = memmem(buf, (size_t)(end - buf), "Content-Length:", 15);
	if (!cl)
		cl = memmem(buf, (size_t)(end - buf), "content-length:", 15);
	if (cl)
		body = strtol(cl + 15, NULL, 10);
	if ((size_t)(end + 4 - buf) + (size_t)body > len)
		return 0;
	return (long)(end + 4 - buf) + body;
}

/* ---- the active client ------------------------------------------------ */

struct sample {
	uint64_t sent_us;
	uint32_t lat_us;
};

static struct sample *samples;
static atomic_size_t nsamples;
static atomic_bool stop_active;
static atomic_uint active_errors;

static int dial_blocking(void)
{
	struct sockaddr_in a;
	struct timeval tv = {10, 0};
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)); /* bounds connect() too */
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One GET and its whole response; 0, or -1 (the caller reconnects). */
static int roundtrip(int fd)
{
	char buf[RESP_CAP];
	size_t len = 0;

	if (send(fd, get_req, sizeof(get_req) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(get_req) - 1))
		return -1;
	for (;;) {
		ssize_t r = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
		long whole;

		if (r <= 0)
			return -1;
		len += (size_t)r;
		whole = response_len(buf, len);
		if (whole < 0 || (whole > 0 && (size_t)whole != len))
			return -1; /* more than one answer to one request */
		if (whole > 0)
			return 0;
	}
}

static void *active_main(void *arg)
{
	int fd = dial_blocking();
	uint64_t next = now_us();

	(void)arg;
	/* Ahead of this process's own bulk work (opening and closing the idle
	 * connections), so the latency is the server's, not this client's wait
	 * for a CPU; best effort (needs CAP_SYS_NICE). */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), -10);
	while (!atomic_load(&stop_active)) {
		uint64_t t0, t1;
		struct timespec ts;

		if (fd < 0)
			fd = dial_blocking();
		t0 = now_us();
		if (fd < 0 || roundtrip(fd) != 0) {
			atomic_fetch_add(&active_errors, 1);
			if (fd >= 0)
				close(fd);
			fd = -1;
			usleep(1000);
			continue;
		}
		t1 = now_us();
		size_t i = atomic_load(&nsamples);
		if (i < MAX_SAMPLES) {
			samples[i].sent_us = t0;
			samples[i].lat_us = (uint32_t)(t1 - t0);
			atomic_store(&nsamples, i + 1);
		}
		next += 1000;
		if (next < t1)
			next = t1;
		ts.tv_sec = (time_t)(next / 1000000u);
		ts.tv_nsec = (long)(next % 1000000u) * 1000;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* ---- the idle connections --------------------------------------------- */

enum { S_CONNECTING, S_READING, S_IDLE, S_CLOSED };

struct idle {
	int fd;
	uint8_t state;
	uint16_t len;
	uint64_t idle_us, eof_us;
	char *buf;
};

static int dial_nonblocking(unsigned i)
{
	struct sockaddr_in src, dst;
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	if (fd < 0)
		die("socket (raise the descriptor limit)");
	memset(&src, 0, sizeof(src));
	src.sin_family = AF_INET;
	src.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1 + i % SOURCES);
	/* The port is picked at connect(), unique per 4-tuple: each source
	 * address has its own ephemeral range toward the server. */
	setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) != 0)
		die("bind 127.0.0.x");
	memset(&dst, 0, sizeof(dst));
	dst.sin_family = AF_INET;
	dst.sin_port = htons((uint16_t)port);
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) != 0 && errno != EINPROGRESS)
		die("connect");
	return fd;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void raise_nofile(rlim_t want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		die("getrlimit");
	if (rl.rlim_cur >= want)
		return;
	if (rl.rlim_max < want)
		rl.rlim_max = want; /* root only */
	rl.rlim_cur = want;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
		fprintf(stderr, "storm: cannot raise RLIMIT_NOFILE to %llu (not root?)\n", (unsigned long long)want);
		exit(1);
	}
}

/* What one idle-client process found (sent to the parent over a pipe). */
struct part {
	unsigned done; /* 0: the "opened" report, 1: the final one */
	unsigned idle, closed, bad;
	uint64_t open_done_us, first_eof, last_eof, life_min, life_max;
	int64_t late_max;
};

static void write_all(int fd, const void *p, size_t len)
{
	if (write(fd, p, len) != (ssize_t)len)
		die("write (result pipe)");
}

/*
 * One idle-client process: open connections [first, first + n), report that
 * they are open (a struct part with open_done_us set), wait for the server to
 * close them, report again. Several processes share the work so that the
 * client side of the closes (each FIN wakes whoever reads that socket) is not
 * one process the server's closes queue behind.
 */
static int idle_part(unsigned first, unsigned n, unsigned ka, int out)
{
	unsigned started = 0, idle = 0, closed = 0, bad = 0;
	uint64_t t_open_done, deadline;
	struct part res = {.first_eof = UINT64_MAX, .life_min = UINT64_MAX, .late_max = INT64_MIN};
	struct epoll_event ev[512];
	struct idle *c = calloc(n ? n : 1, sizeof(*c));
	int ep = epoll_create1(0);

	if (!c || ep < 0)
		die("setup");
	while (idle + bad < n) {
		int k;

		while (started < n && started - idle - bad < WINDOW) {
			struct epoll_event e = {.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP, .data.u32 = started};

			c[started].fd = dial_nonblocking(first + started);
			c[started].state = S_CONNECTING;
			c[started].buf = malloc(RESP_CAP);
			if (!c[started].buf || epoll_ctl(ep, EPOLL_CTL_ADD, c[started].fd, &e) != 0)
				die("epoll_ctl");
			started++;
		}
		k = epoll_wait(ep, ev, 512, 10000);
		if (k <= 0) {
			fprintf(stderr, "storm: opening stalled at %u of %u\n", idle, n);
			return 1;
		}
		for (int j = 0; j < k; j++) {
			struct idle *x = &c[ev[j].data.u32];

			if (x->state == S_CONNECTING && (ev[j].events & EPOLLOUT)) {
				struct epoll_event e = {.events = EPOLLIN | EPOLLRDHUP, .data.u32 = ev[j].data.u32};

				if (silent) { /* connected: idle from now, not a byte sent */
					epoll_ctl(ep, EPOLL_CTL_MOD, x->fd, &e);
					free(x->buf);
					x->buf = NULL;
					x->state = S_IDLE;
					x->idle_us = now_us();
					idle++;
					continue;
				}
				if (send(x->fd, get_req, sizeof(get_req) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(get_req) - 1)) {
					x->state = S_CLOSED;
					close(x->fd);
					bad++;
					continue;
				}
				epoll_ctl(ep, EPOLL_CTL_MOD, x->fd, &e);
				x->state = S_READING;
				continue;
			}
			if (x->state == S_READING) {
				ssize_t r = recv(x->fd, x->buf + x->len, RESP_CAP - 1 - x->len, 0);
				long whole;

				if (r < 0 && errno == EAGAIN)
					continue;
				if (r <= 0) {
					x->state = S_CLOSED;
					close(x->fd);
					bad++;
					continue;
				}
				x->len = (uint16_t)(x->len + r);
				whole = response_len(x->buf, x->len);
				if (whole == 0)
					continue;
				free(x->buf);
				x->buf = NULL;
				if (whole < 0) {
					x->state = S_CLOSED;
					close(x->fd);
					bad++;
					continue;
				}
				x->state = S_IDLE;
				x->idle_us = now_us();
				idle++;
			}
		}
	}
	t_open_done = now_us();
	res.open_done_us = t_open_done;
	res.idle = idle;
	res.bad = bad;
	write_all(out, &res, sizeof(res));

	/* Wait for the server to close them. */
	deadline = t_open_done + (uint64_t)(ka + 20) * 1000000u;
	while (closed < idle && now_us() < deadline) {
		int k = epoll_wait(ep, ev, 512, 100);

		for (int j = 0; j < k; j++) {
			struct idle *x = &c[ev[j].data.u32];
			char b[64];
			ssize_t r;

			if (x->state != S_IDLE)
				continue;
			r = recv(x->fd, b, sizeof(b), 0);
			if (r < 0 && errno == EAGAIN)
				continue;
			x->eof_us = now_us();
			if (r > 0 && !(silent && !memcmp(b, "HTTP/1.1 408", 12)))
				bad++; /* bytes nobody asked for (a 408 is allowed) */
			x->state = S_CLOSED;
			close(x->fd);
			closed++;
			if (x->eof_us < res.first_eof)
				res.first_eof = x->eof_us;
			if (x->eof_us > res.last_eof)
				res.last_eof = x->eof_us;
			if (x->eof_us - x->idle_us < res.life_min)
				res.life_min = x->eof_us - x->idle_us;
			if (x->eof_us - x->idle_us > res.life_max)
				res.life_max = x->eof_us - x->idle_us;
			{
				uint64_t due = x->idle_us + (uint64_t)ka * 1000000u;
				uint64_t second_end = (due + 999999u) / 1000000u * 1000000u;
				int64_t late = (int64_t)x->eof_us - (int64_t)second_end;

				if (late > res.late_max)
					res.late_max = late;
			}
		}
	}
	res.done = 1;
	res.closed = closed;
	res.bad = bad;
	write_all(out, &res, sizeof(res));
	return 0;
}

int main(int argc, char **argv)
{
	unsigned n, procs = 4, idle = 0, closed = 0, bad = 0;
	uint64_t t_open_done = 0, first_eof = UINT64_MAX, last_eof = 0, life_min = UINT64_MAX, life_max = 0;
	int64_t late_max = INT64_MIN;
	pthread_t active;
	const char *label, *e;
	int go[2], res[2], failed = 0;
	pid_t pids[64];
	unsigned ka;

	if (argc < 4) {
		fprintf(stderr, "usage: storm PORT N KEEPALIVE_S [LABEL [silent]]\n");
		return 2;
	}
	port = atoi(argv[1]);
	n = (unsigned)strtoul(argv[2], NULL, 10);
	ka = (unsigned)strtoul(argv[3], NULL, 10);
	label = argc > 4 ? argv[4] : "server";
	silent = argc > 5 && !strcmp(argv[5], "silent");
	if ((e = getenv("STORM_PROCS")) != NULL)
		procs = (unsigned)strtoul(e, NULL, 10);
	if (port <= 0 || port > 65535 || n == 0 || ka == 0 || procs == 0 || procs > 64 || procs > n) {
		fprintf(stderr, "storm: bad arguments\n");
		return 2;
	}
	raise_nofile((rlim_t)n / procs + 1024);
	samples = calloc(MAX_SAMPLES, sizeof(*samples));
	if (!samples || pipe(go) != 0 || pipe(res) != 0)
		die("setup");
	/* The idle-client processes, forked before any thread exists; each waits
	 * for a byte on the go pipe. */
	for (unsigned p = 0; p < procs; p++) {
		unsigned from = (unsigned)((uint64_t)n * p / procs), to = (unsigned)((uint64_t)n * (p + 1) / procs);
		char b;

		pids[p] = fork();
		if (pids[p] < 0)
			die("fork");
		if (pids[p] == 0) {
			close(go[1]);
			close(res[0]);
			if (read(go[0], &b, 1) != 1)
				_exit(1);
			_exit(idle_part(from, to - from, ka, res[1]));
		}
	}
	close(go[0]);
	close(res[1]);
	if (pthread_create(&active, NULL, active_main, NULL) != 0)
		die("pthread_create");
	usleep(200000); /* the active client's quiet baseline */
	for (unsigned p = 0; p < procs; p++)
		write_all(go[1], "g", 1);

	/* Two reports per process (opened, then closed), in any order; records
	 * are smaller than PIPE_BUF, so each write arrives whole. */
	for (unsigned got = 0; got < 2 * procs; got++) {
		struct part r;
		ssize_t len = read(res[0], &r, sizeof(r));

		if (len != (ssize_t)sizeof(r)) {
			fprintf(stderr, "storm: an idle-client process failed\n");
			failed = 1;
			break;
		}
		if (!r.done) {
			if (r.open_done_us > t_open_done)
				t_open_done = r.open_done_us;
			continue;
		}
		idle += r.idle;
		closed += r.closed;
		bad += r.bad;
		if (r.first_eof < first_eof)
			first_eof = r.first_eof;
		if (r.last_eof > last_eof)
			last_eof = r.last_eof;
		if (r.life_min < life_min)
			life_min = r.life_min;
		if (r.life_max > life_max)
			life_max = r.life_max;
		if (r.late_max > late_max)
			late_max = r.late_max;
	}
	for (unsigned p = 0; p < procs; p++) {
		int st;

		if (waitpid(pids[p], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed = 1;
	}
	if (!t_open_done)
		t_open_done = now_us();
	usleep(200000);
	atomic_store(&stop_active, true);
	pthread_join(active, NULL);

	/* The storm window: first close to 100 ms past the last. */
	{
		size_t ns = atomic_load(&nsamples), w = 0;
		uint32_t *lat = malloc((ns ? ns : 1) * sizeof(*lat)), after_max = 0;
		uint64_t from = first_eof == UINT64_MAX ? t_open_done : first_eof;
		uint64_t to = (last_eof ? last_eof : now_us()) + 100000;

		if (!lat)
			die("malloc");
		for (size_t i = 0; i < ns; i++) {
			/* A request sent before the window but answered inside it counts. */
			if (samples[i].sent_us >= t_open_done && samples[i].lat_us > after_max)
				after_max = samples[i].lat_us;
			if (samples[i].sent_us + samples[i].lat_us >= from && samples[i].sent_us <= to)
				lat[w++] = samples[i].lat_us;
		}
		qsort(lat, w, sizeof(*lat), cmp_u32);
		printf("storm kind=%s server=%s n=%u procs=%u samples=%zu p50_us=%u p99_us=%u max_us=%u after_open_max_us=%u "
		       "drain_ms=%.0f life_min_ms=%.0f life_max_ms=%.0f late_max_ms=%.0f closed=%u lost=%u bad=%u active_errors=%u\n",
		       silent ? "header" : "keepalive", label, n, procs, w, w ? lat[w / 2] : 0,
		       w ? lat[(w * 99) / 100 < w ? (w * 99) / 100 : w - 1] : 0, w ? lat[w - 1] : 0, after_max,
		       last_eof ? (double)(last_eof - first_eof) / 1000.0 : -1.0,
		       life_min == UINT64_MAX ? -1.0 : (double)life_min / 1000.0, (double)life_max / 1000.0,
		       late_max == INT64_MIN ? 0.0 : (double)late_max / 1000.0, closed,
		       n - closed - bad, bad, atomic_load(&active_errors));
		free(lat);
	}
	return !failed && closed == idle && idle == n && bad == 0 ? 0 : 1;
}
