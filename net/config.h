/* SPDX-License-Identifier: MIT */
/*
 * net/config.h - the server's settings: the command-line flags, one list
 * (HTTPD_OPTIONS) from which struct httpd_config, the defaults, the parser
 * and `httpd --help` (net/main.c) are all made.
 *
 * tests/net/httpd_lists_test.cc checks that `httpd --help` names every flag
 * of the list with its default, that each is taken with that default, and
 * that docs/NET.md shows `httpd --help` as it prints; CONTRIBUTING.md ("A
 * server flag") says what adding one takes.
 */
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

/* The CPUs online, at least 1 (net/main.c): --workers' default. */
unsigned httpd_cpus(void);

/*
 * The flags, in the order --help lists them:
 * X(flag, field, kind, default, min, max, value, help), where
 *   kind     what the field is and how the value is read: uint (unsigned),
 *            u64 (uint64_t), millis (kt_millis), seconds (kt_seconds): an
 *            integer in [min, max]; text (const char *, NULL: off): the
 *            value as given; allow (struct httpd_allow): httpd_allow_parse();
 *            on (bool): a flag without a value, which sets it;
 *   default  the field's value without the flag (a number for the integer
 *            kinds; a C expression net/main.c evaluates);
 *   value    what --help calls the value ("N", "MS"; "" for kind on);
 *   help     what --help says of it, which it wraps and ends with "(default
 *            DEFAULT)".
 *
 * Why these defaults:
 * - --lingering-timeout, --lingering-time: nginx's lingering_timeout and
 *   lingering_time.
 * - --send-lowat: small enough that a slow reader wakes the server every
 *   few dozen KB, large enough that a fast one is never starved by it.
 * - --expire-budget, --expire-spread, --expire-batch: without a pace a
 *   due second's closes run back to back and an active client waits behind
 *   them; turns of at most 250 us spread over 500 ms let it run between
 *   them (BENCHMARKS.md, "Expiry storms", measures these defaults against
 *   nginx; tools/bench/storm.sh).
 * - --expire-burst: a fraction of one drain turn's work, so a second of a
 *   few dozen connections keeps the bound K + 1 s + one unit.
 */
#define HTTPD_OPTIONS(X)                                                                                          \
	X("--port", port, uint, 8080, 0, 65535, "N", "TCP port; 0 picks a free one")                              \
	X("--bind", bind_addr, text, "127.0.0.1", 0, 0, "ADDR",                                                   \
	  "IPv4 or IPv6 address or host name to listen on; a name listens on the first address it resolves to")  \
	X("--reuseport", reuseport, on, false, 0, 0, "",                                                           \
	  "one SO_REUSEPORT socket per worker: other processes may then listen on the same port and take part "   \
	  "of the connections; without it a port in use is an error")                                           \
	X("--workers", workers, uint, httpd_cpus(), 1, 1024, "N", "worker threads, 1 to 1024: one per CPU") \
	X("--keepalive", keepalive, seconds, 5, 0, 65535, "S",                                                     \
	  "keep-alive timeout in seconds, 0 disables keep-alive; an idle connection closes S to S + 1 s and one "  \
	  "wheel unit after its last activity, plus the drain allowance: --expire-spread, or the time closing "    \
	  "the ones due in the same second takes if longer; measured up to 0.6 s with up to 18,000 expiring at "  \
	  "once")                                                                                                 \
	X("--expire-budget", expire_budget_us, uint, 250, 0, 1000000, "US",                                        \
	  "wall time a worker spends per loop turn closing expired keep-alive connections, oldest first, "        \
	  "serving I/O between turns; 0: no time limit")                                                          \
	X("--expire-spread", expire_spread_ms, uint, 500, 0, 1000, "MS",                                           \
	  "the closes of a second's expired connections are paced evenly over this, at most 1000; 0: as fast as " \
	  "the budget allows")                                                                                    \
	X("--expire-burst", expire_burst, uint, 64, 0, UINT32_MAX, "N",                                            \
	  "the first N closes of each due second go unpaced, so a second of a few connections closes at once")    \
	X("--expire-batch", expire_batch, uint, 0, 0, UINT32_MAX, "N",                                             \
	  "those closes per loop turn at most, 0: no count limit; with all three 0, a second closes at once")     \
	X("--header-timeout", header_timeout, millis, 5000, 0, UINT32_MAX, "MS",                                   \
	  "deadline for a request head, 0 for none")                                                              \
	X("--body-timeout", body_timeout, millis, 5000, 0, UINT32_MAX, "MS",                                       \
	  "deadline between two reads of a request body, 0 for none")                                             \
	X("--write-timeout", write_timeout, millis, 10000, 0, UINT32_MAX, "MS",                                    \
	  "deadline between two writes that make progress, 0 for none; at expiry a client whose send queue "       \
	  "shrank since (it reads, the server had no chance to write) gets the deadline again")                  \
	X("--send-lowat", send_lowat, uint, 128u * 1024u, 0, 64LL << 20, "BYTES",                                  \
	  "unsent bytes the kernel keeps per connection at most (TCP_NOTSENT_LOWAT), 0 for the kernel's "         \
	  "default: a slow reader pins less memory and the server hears sooner that it reads")                    \
	X("--max-body", max_body, u64, HTTP_MAX_BODY, 0, 1LL << 50, "BYTES",                                       \
	  "request body at most (Content-Length or chunked data), 0 for no limit; past it: 413")                 \
	X("--lingering-timeout", lingering_timeout, millis, 5000, 1, UINT32_MAX, "MS",                             \
	  "after a response with Connection: close, how long to wait for more client bytes (discarded) before "   \
	  "closing; each read that brings some pushes it back")                                                   \
	X("--lingering-time", lingering_time, millis, 30000, 1, UINT32_MAX, "MS",                                  \
	  "that lingering close in all, at most")                                                                 \
	X("--resolution", resolution_ms, uint, 16, 1, 16, "MS", "timer wheel unit: 1, 2, 4, 8 or 16")            \
	X("--max-conns", max_conns, uint, 0, 0, UINT32_MAX, "N",                                                   \
	  "open connections at most, 0 for no limit; at the limit an idle keep-alive connection (the accepting "   \
	  "worker's oldest, else another worker's) is closed to make room, and only without one: 503")           \
	X("--access-log", access_log, text, NULL, 0, 0, "FILE",                                                    \
	  "common log format, buffered per worker (flushed every second); SIGHUP reopens it")                    \
	X("--stats-allow", stats_allow, allow, HTTPD_ALLOW_LOOPBACK, 0, 0, "WHO",                                  \
	  "who may GET /stats: loopback, any, none, or ADDR[/BITS]")                                              \
	X("--count-timer-ops", count_timer_ops, on, false, 0, 0, "",                                               \
	  "count every timer operation for /stats (wheel_links, wheel_unlinks, rearm_same_bucket; 0 without it): " \
	  "the re-arms then take a slower path that counts (kt_base_set_op_counting())")

/* The field's type and its default's value, by kind. */
#define HTTPD_OPT_TYPE_uint unsigned
#define HTTPD_OPT_TYPE_u64 uint64_t
#define HTTPD_OPT_TYPE_millis kt_millis
#define HTTPD_OPT_TYPE_seconds kt_seconds
#define HTTPD_OPT_TYPE_text const char *
#define HTTPD_OPT_TYPE_allow struct httpd_allow
#define HTTPD_OPT_TYPE_on bool
#define HTTPD_OPT_VALUE_uint(v) (v)
#define HTTPD_OPT_VALUE_u64(v) (v)
#define HTTPD_OPT_VALUE_millis(v) KT_MILLIS(v)
#define HTTPD_OPT_VALUE_seconds(v) KT_SECONDS(v)
#define HTTPD_OPT_VALUE_text(v) (v)
#define HTTPD_OPT_VALUE_allow(v) ((struct httpd_allow){.mode = (v)})
#define HTTPD_OPT_VALUE_on(v) (v)

struct httpd_config {
#define HTTPD_OPT_FIELD(flag, field, kind, def, min, max, value, help) HTTPD_OPT_TYPE_##kind field;
	HTTPD_OPTIONS(HTTPD_OPT_FIELD)
#undef HTTPD_OPT_FIELD
};

#endif
