// SPDX-License-Identifier: MIT
/* net/log.c - the error log and the access log (see log.h). */
#include "net/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/addr.h"

#define ALOG_SIZE (64u * 1024u)
#define ALOG_FLUSH_MS 1000u
#define ALOG_LINE_MAX 2048u /* the escaped request line is cut here */

void httpd_log_error(const char *level, const char *fmt, ...)
{
	char msg[512], stamp[32];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y/%m/%d %H:%M:%S", &tm);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One fprintf: stdio locks the stream, so lines from workers never mix. */
	fprintf(stderr, "%s [%s] httpd: %s\n", stamp, level, msg);
}

int httpd_access_log_open(const char *path)
{
	return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

int httpd_access_log_reopen(int fd, const char *path)
{
	int nfd = httpd_access_log_open(path);

	if (nfd < 0)
		return -1;
	/* Atomic: a worker's write() goes wholly to the old file or the new. */
	if (dup3(nfd, fd, O_CLOEXEC) < 0) {
		int e = errno;

		close(nfd);
		errno = e;
		return -1;
	}
	close(nfd);
	return 0;
}

static void on_flush_timer(struct kt_timer *t)
{
	httpd_access_log_flush(kt_container_of(t, struct httpd_worker, alog_timer));
}

int httpd_access_log_init(struct httpd_worker *w)
{
	kt_timer_setup(&w->alog_timer, w->base, on_flush_timer, 0);
	if (w->srv->access_fd < 0)
		return 0;
	w->alog = malloc(ALOG_SIZE);
	return w->alog ? 0 : -1;
}

void httpd_access_log_destroy(struct httpd_worker *w)
{
	free(w->alog);
	w->alog = NULL;
}

void httpd_access_log_flush(struct httpd_worker *w)
{
	size_t off = 0;

	kt_timer_delete(&w->alog_timer);
	while (off < w->alog_len) {
		ssize_t r = write(w->srv->access_fd, w->alog + off, w->alog_len - off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			httpd_log_error("error", "access log: %s (%zu bytes dropped)", strerror(errno), w->alog_len - off);
			break;
		}
		off += (size_t)r;
	}
	w->alog_len = 0;
}

/* The CLF date of this second, formatted once per second per worker. */
static const char *clf_date(struct httpd_worker *w)
{
	uint64_t sec = kt_base_system_time(w->base) / 1000u;
	time_t t;
	struct tm tm;

	if (sec != w->clf_sec || !w->clf_date[0]) {
		w->clf_sec = sec;
		t = (time_t)sec;
		gmtime_r(&t, &tm);
		strftime(w->clf_date, sizeof(w->clf_date), "%d/%b/%Y:%H:%M:%S +0000", &tm);
	}
	return w->clf_date;
}

/* Escape @s into @out (at most @cap - 1 bytes, whole escapes only). */
static size_t escape(const char *s, size_t n, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\') {
			if (o + 1 >= cap)
				break;
			out[o++] = (char)ch;
		} else {
			if (o + 4 >= cap)
				break;
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		}
	}
	out[o] = 0;
	return o;
}

void httpd_access_log_write(struct httpd_conn *c, const char *line, size_t line_len, int status, size_t body_bytes)
{
	struct httpd_worker *w = c->w;
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	char host[HTTPD_ADDR_MAX], req[ALOG_LINE_MAX], bytes[24];
	int n;

	if (!w->alog)
		return;
	if (getpeername(c->fd, (struct sockaddr *)&peer, &plen) == 0)
		httpd_addr_host((struct sockaddr *)&peer, host, sizeof(host));
	else
		snprintf(host, sizeof(host), "-");
	if (line)
		escape(line, line_len, req, sizeof(req));
	else
		snprintf(req, sizeof(req), "-");
	if (body_bytes)
		snprintf(bytes, sizeof(bytes), "%zu", body_bytes);
	else
		snprintf(bytes, sizeof(bytes), "-");
	/* A line is at most ~2.2 KiB: flush first if it might not fit. */
	if (w->alog_len + ALOG_LINE_MAX + 256 > ALOG_SIZE)
		httpd_access_log_flush(w);
	n = snprintf(w->alog + w->alog_len, ALOG_SIZE - w->alog_len, "%s - - [%s] \"%s\" %d %s\n", host, clf_date(w),
		     req, status, bytes);
	if (n > 0 && (size_t)n < ALOG_SIZE - w->alog_len) {
		if (!w->alog_len)
			kt_timer_arm(&w->alog_timer, KT_MILLIS(ALOG_FLUSH_MS));
		w->alog_len += (size_t)n;
	}
}
