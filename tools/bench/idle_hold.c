// SPDX-License-Identifier: MIT
/*
 * tools/bench/idle_hold.c - hold N idle keep-alive connections against a server
 * and report what they cost it.
 *
 *   idle_hold PORT N SECONDS [PID[,PID...]]
 *
 * Opens N connections, sends one request on each and reads the response,
 * then leaves them idle for SECONDS. If the server is ktimer's httpd, reads
 * its /stats before and after to report epoll wake-ups per second per worker
 * and jemalloc bytes per idle connection. With PIDs (all of a server's
 * processes), also reports its resident memory (VmRSS, summed) and context
 * switches per second
 * (voluntary + involuntary, from /proc/PID/task/<tid>/status): a wake-up
 * count for any server, ktimer's or nginx's.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tools/bench/loopback.h"

static int port;

static int dial(void)
{
	int fd = loopback_dial(port);

	if (fd < 0) {
		perror("connect");
		exit(1);
	}
	return fd;
}

/* One request, read until the response's body is complete. */
static int request(int fd, const char *path, char *out, size_t cap)
{
	char req[128];
	size_t got = 0;
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);

	if (write(fd, req, (size_t)n) != n)
		return -1;
	for (;;) {
		char *end;
		ssize_t r = read(fd, out + got, cap - got - 1);

		if (r <= 0)
			return -1;
		got += (size_t)r;
		out[got] = 0;
		end = strstr(out, "\r\n\r\n");
		if (end) {
			char *cl = strcasestr(out, "Content-Length:");
			size_t len = cl ? (size_t)atol(cl + 15) : 0;

			if (got >= (size_t)(end + 4 - out) + len)
				return (int)got;
		}
	}
}

static long long json(const char *s, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(s, k);
	return p ? atoll(p + strlen(k)) : -1;
}

/* Sum of a field over all "workers" entries. */
static long long json_sum(const char *s, const char *key)
{
	char k[64];
	long long total = 0;
	const char *p = strstr(s, "\"workers\"");

	snprintf(k, sizeof(k), "\"%s\":", key);
	while (p && (p = strstr(p, k)) != NULL) {
		total += atoll(p + strlen(k));
		p += strlen(k);
	}
	return total;
}

static long long proc_field(const char *path, const char *field)
{
	char line[256];
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)))
			v = atoll(line + strlen(field));
	fclose(f);
	return v;
}

/* Context switches of every thread of @pid (each one is a wake-up). */
static long long ctxt_switches(int pid)
{
	char dir[64], path[64 + 256 + 16];
	long long total = 0;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/status", dir, e->d_name);
		total += proc_field(path, "voluntary_ctxt_switches:");
		total += proc_field(path, "nonvoluntary_ctxt_switches:");
	}
	closedir(d);
	return total;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static char buf[65536], before[8192], after[8192];
	struct rlimit rl;
	int n, secs, *fds, sfd, ktimer, pids[16], npids = 0;
	long long cs0 = 0, cs1 = 0, rss0 = 0, rss1 = 0;
	char status_path[64];
	double t0, t1;

	for (char *p = argc > 4 ? argv[4] : NULL; p && *p && npids < 16; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		pids[npids++] = atoi(p);

	if (argc < 4) {
		fprintf(stderr, "usage: idle_hold PORT N SECONDS [PID]\n");
		return 2;
	}
	port = atoi(argv[1]);
	n = atoi(argv[2]);
	secs = atoi(argv[3]);
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	fds = calloc((size_t)n, sizeof(int));

	/* Baseline: the server's own stats with no idle connections. */
	sfd = dial();
	ktimer = request(sfd, "/stats", before, sizeof(before)) > 0 && strstr(before, "\"workers\"");
	close(sfd);
	for (int i = 0; i < npids; i++) {
		snprintf(status_path, sizeof(status_path), "/proc/%d/status", pids[i]);
		rss0 += proc_field(status_path, "VmRSS:");
	}
	for (int i = 0; i < n; i++) {
		fds[i] = dial();
		if (request(fds[i], "/", buf, sizeof(buf)) < 0) {
			fprintf(stderr, "request %d failed\n", i);
			return 1;
		}
	}
	/* Let the accept burst settle, then measure the idle period only. */
	sleep(1);
	sfd = dial();
	if (ktimer)
		request(sfd, "/stats", before, sizeof(before));
	for (int i = 0; i < npids; i++)
		cs0 += ctxt_switches(pids[i]);
	t0 = now_s();
	sleep((unsigned)secs);
	t1 = now_s();
	for (int i = 0; i < npids; i++) {
		cs1 += ctxt_switches(pids[i]);
		snprintf(status_path, sizeof(status_path), "/proc/%d/status", pids[i]);
		rss1 += proc_field(status_path, "VmRSS:");
	}
	if (ktimer)
		request(sfd, "/stats", after, sizeof(after));
	printf("idle connections: %d, idle for %.1f s\n", n, t1 - t0);
	if (ktimer) {
		long long workers = 0;

		for (const char *p = after; (p = strstr(p, "\"id\":")); p++)
			workers++;
		printf("ktimer httpd: %.2f wake-ups/s per worker (%lld workers), open %lld\n",
		       (double)(json_sum(after, "wakeups") - json_sum(before, "wakeups")) / (t1 - t0) /
			   (double)(workers ? workers : 1),
		       workers, json(after, "open"));
		printf("ktimer httpd: %.0f bytes per idle connection (jemalloc arenas), %lld bytes allocated in all\n",
		       (double)json_sum(after, "arena_allocated") / (double)n, json(after, "allocated"));
	}
	if (npids)
		printf("server processes: %.2f context switches/s, VmRSS %lld kB -> %lld kB (%.0f bytes per connection)\n",
		       (double)(cs1 - cs0) / (t1 - t0), rss0, rss1, (double)(rss1 - rss0) * 1024.0 / (double)n);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	close(sfd);
	return 0;
}
