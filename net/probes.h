/* SPDX-License-Identifier: MIT */
/*
 * net/probes.h - the server's USDT probes (provider "httpd"), the same way
 * as the library's (lib/probes.h): a nop and an ELF note each, an
 * is-enabled semaphore (hidden, in section .probes) tested first, built in
 * with KT_PROBES (Bazel's --define=ktimer_probes=on, the project's
 * default), <sys/sdt.h> at build time only. ktimer_probes(7) lists them:
 *
 *   conn_accept(fd, worker, refused)
 *   conn_close(fd, reason, reason_name, worker)   once per connection, under
 *                                                 the reason /stats counts
 *   drain_turn(ring, closed, seen, ns, budget_stop)
 */
#ifndef KTIMER_NET_PROBES_H
#define KTIMER_NET_PROBES_H

#ifdef KT_PROBES
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#define HTTPD_PROBE_DEFINE(name)                                                                             \
	__attribute__((section(".probes"), used, visibility("hidden"))) unsigned short httpd_##name##_semaphore; \
	extern unsigned short httpd_##name##_semaphore
#define HTTPD_PROBE_ON(name) __builtin_expect(httpd_##name##_semaphore != 0, 0)
#define HTTPD_PROBE3(name, a, b, c) STAP_PROBE3(httpd, name, a, b, c)
#define HTTPD_PROBE4(name, a, b, c, d) STAP_PROBE4(httpd, name, a, b, c, d)
#define HTTPD_PROBE5(name, a, b, c, d, e) STAP_PROBE5(httpd, name, a, b, c, d, e)
#else
#define HTTPD_PROBE_DEFINE(name) extern int httpd_probe_unused_##name
#define HTTPD_PROBE_ON(name) 0
#define HTTPD_PROBE3(name, a, b, c) ((void)(0 ? ((void)(a), (void)(b), (void)(c), 0) : 0))
#define HTTPD_PROBE4(name, a, b, c, d) ((void)(0 ? ((void)(a), (void)(b), (void)(c), (void)(d), 0) : 0))
#define HTTPD_PROBE5(name, a, b, c, d, e) ((void)(0 ? ((void)(a), (void)(b), (void)(c), (void)(d), (void)(e), 0) : 0))
#endif

#endif
