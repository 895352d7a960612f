/* SPDX-License-Identifier: MIT */
/* net/config.h - the server's settings (from the command line: net/main.c). */
#ifndef KTIMER_NET_CONFIG_H
#define KTIMER_NET_CONFIG_H

#include <ktimer/ktimer.h>

struct httpd_config {
	const char *bind_addr; /* IPv4 or IPv6 literal */
	unsigned port;         /* 0: pick a free port */
	unsigned workers;
	kt_seconds keepalive;      /* 0: Connection: close on every response */
	kt_millis header_timeout;  /* 0: no header deadline */
	kt_millis write_timeout;   /* 0: no write deadline */
	unsigned resolution_ms;
	unsigned max_conns;        /* 0: no limit */
};

#endif
