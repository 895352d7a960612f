/* SPDX-License-Identifier: MIT */
/*
 * net/log.h - the error log (stderr) and the access log (--access-log).
 *
 * Errors: one line each on stderr, "2026/11/30 11:35:25 [error] text", the
 * local time first, as nginx writes its error log.
 *
 * Access log: one line per response in the common log format,
 *   127.0.0.1 - - [30/Nov/2026:11:35:25 +0000] "GET / HTTP/1.1" 200 18
 * (the request line escaped: bytes outside printable ASCII, '"' and '\' as
 * \xHH; the body bytes, or "-" for none). Each worker appends to its own
 * 64 KiB buffer and writes it out when it is full, and one second after
 * its first line (a timer armed only while the buffer holds something, so an
 * idle worker never wakes for the log), and when it exits. Every worker
 * writes to the same descriptor opened with O_APPEND; SIGHUP reopens the
 * file under that descriptor (dup2), so a rotated log is let go at once.
 */
#ifndef KTIMER_NET_LOG_H
#define KTIMER_NET_LOG_H

#include <stddef.h>

#include "net/core.h"

/* An error-log line on stderr. @level: "error", "warn", "notice". */
void httpd_log_error(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Open the access log for appending. The descriptor, or -1 with errno. */
int httpd_access_log_open(const char *path);

/* Reopen @path under @fd (after a rotation). 0, or -1 with errno (@fd is
 * unchanged). */
int httpd_access_log_reopen(int fd, const char *path);

/* The worker's buffer and flush timer. 0, or -1 if out of memory. */
int httpd_access_log_init(struct httpd_worker *w);

/* Log one response of @c. @line: the request line (NULL: "-"). */
void httpd_access_log_write(struct httpd_conn *c, const char *line, size_t line_len, int status, size_t body_bytes);

/* Write out the worker's buffer. */
void httpd_access_log_flush(struct httpd_worker *w);

void httpd_access_log_destroy(struct httpd_worker *w);

#endif
