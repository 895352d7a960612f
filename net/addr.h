/* SPDX-License-Identifier: MIT */
/*
 * net/addr.h - socket addresses: resolving --bind, printing (IPv6 in
 * brackets), and the allow-list for /stats.
 */
#ifndef KTIMER_NET_ADDR_H
#define KTIMER_NET_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "net/config.h"

/* Room for "[ffff:...:255.255.255.255]:65535" and a NUL. */
#define HTTPD_ADDR_MAX 64

/*
 * httpd_addr_resolve() - the address to listen on.
 * @host: an IPv4 or IPv6 literal, or a host name ("localhost").
 * @port: the port.
 * @ss: filled with the first address getaddrinfo() returns for it.
 * @len: its length.
 *
 * Return: 0, or a getaddrinfo() error code (for gai_strerror()).
 */
int httpd_addr_resolve(const char *host, unsigned port, struct sockaddr_storage *ss, socklen_t *len);

/* "127.0.0.1:8080", "[::1]:8080". */
void httpd_addr_format(const struct sockaddr *sa, char *buf, size_t cap);

/* The host alone, as the access log writes it: "127.0.0.1", "::1". */
void httpd_addr_host(const struct sockaddr *sa, char *buf, size_t cap);

/*
 * httpd_allow_parse() - read a --stats-allow value: "loopback" (127.0.0.0/8
 * and ::1), "any", "none", or an address with an optional prefix length
 * ("127.0.0.1", "10.0.0.0/8", "::1/128").
 *
 * Return: 0, or -1 if @s is none of these.
 */
int httpd_allow_parse(const char *s, struct httpd_allow *out);

/* Whether @peer may (IPv4-mapped IPv6 peers count as IPv4). */
bool httpd_allow_match(const struct httpd_allow *a, const struct sockaddr *peer);

#endif
