/* SPDX-License-Identifier: MIT */
/* net/config.h - the server's settings (from the command line: net/main.c). */
#ifndef KTIMER_NET_CONFIG_H
#define KTIMER_NET_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include <ktimer/ktimer.h>

/* Who may GET /stats (--stats-allow). */
enum httpd_allow_mode { HTTPD_ALLOW_LOOPBACK, HTTPD_ALLOW_ANY, HTTPD_ALLOW_NONE, HTTPD_ALLOW_PREFIX };

struct httpd_allow {
	enum httpd_allow_mode mode;
	int family;       /* HTTPD_ALLOW_PREFIX: AF_INET or AF_INET6 */
	uint8_t addr[16]; /* network byte order; 4 bytes used for AF_INET */
	unsigned bits;    /* prefix length */
};

struct httpd_config {
	const char *bind_addr; /* an address or a host name (the first address it resolves to) */
	unsigned port;         /* 0: pick a free port */
	bool reuseport;        /* one SO_REUSEPORT socket per worker (others may join the port) */
	unsigned workers;
	kt_seconds keepalive;      /* 0: Connection: close on every response */
	kt_millis header_timeout;  /* 0: no header deadline */
	kt_millis body_timeout;    /* 0: no body deadline */
	kt_millis write_timeout;   /* 0: no write deadline */
	kt_millis lingering_timeout; /* lingering close: idle time without client bytes (nginx's lingering_timeout) */
	kt_millis lingering_time;    /* lingering close: total time at most (nginx's lingering_time) */
	unsigned resolution_ms;
	unsigned max_conns;        /* 0: no limit */
	unsigned expire_batch;     /* keep-alive closes per worker turn at most, 0: no count limit */
	unsigned expire_budget_us; /* wall time per worker turn closing them, 0: no time limit */
	unsigned expire_spread_ms; /* a due second's closes paced over this, 0: no pace */
	unsigned expire_burst;     /* the closes of a due second the pace leaves out */
	uint64_t max_body;         /* request body bytes at most, 0: no limit */
	unsigned send_lowat;       /* TCP_NOTSENT_LOWAT per connection, 0: the kernel's default */
	const char *access_log;    /* NULL: no access log */
	struct httpd_allow stats_allow;
};

#endif
