/* SPDX-License-Identifier: MIT */
/*
 * net/probes.h - the server's USDT probes: lib/probes.h's macros
 * (KT__PROBE_DEFINE, KT__PROBE_ON, KT__PROBEn) under provider "httpd", so a
 * tracer tells them from the library's (provider "ktimer") in the one
 * executable. ktimer_probes(7) lists them:
 *
 *   conn_accept(fd, worker, refused)
 *   conn_close(fd, reason, reason_name, worker)   once per connection, under
 *                                                 the reason /stats counts
 *   drain_turn(ring, closed, seen, ns, budget_stop)
 *
 * Include it before anything that includes lib/probes.h: a module fires
 * one provider's probes.
 */
#ifndef KTIMER_NET_PROBES_H
#define KTIMER_NET_PROBES_H

#define KT__PROBE_PROVIDER httpd
#include "lib/probes.h"

#endif
