// SPDX-License-Identifier: MIT
/* net/addr.c - socket addresses (see addr.h). */
#include "net/addr.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int httpd_addr_resolve(const char *host, unsigned port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints, *res = NULL;
	char service[16];
	int err;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	/* No AI_ADDRCONFIG: on a machine with loopback only it would hide
	 * "localhost". */
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(service, sizeof(service), "%u", port);
	err = getaddrinfo(host, service, &hints, &res);
	if (err)
		return err;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

void httpd_addr_host(const struct sockaddr *sa, char *buf, size_t cap)
{
	const void *a = sa->sa_family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
						  : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;

	if (!inet_ntop(sa->sa_family, a, buf, (socklen_t)cap))
		snprintf(buf, cap, "-");
}

void httpd_addr_format(const struct sockaddr *sa, char *buf, size_t cap)
{
	char host[INET6_ADDRSTRLEN];

	httpd_addr_host(sa, host, sizeof(host));
	if (sa->sa_family == AF_INET6)
		snprintf(buf, cap, "[%s]:%u", host, ntohs(((const struct sockaddr_in6 *)sa)->sin6_port));
	else
		snprintf(buf, cap, "%s:%u", host, ntohs(((const struct sockaddr_in *)sa)->sin_port));
}

int httpd_allow_parse(const char *s, struct httpd_allow *out)
{
	char addr[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	unsigned max;

	memset(out, 0, sizeof(*out));
	if (!strcmp(s, "loopback")) {
		out->mode = HTTPD_ALLOW_LOOPBACK;
		return 0;
	}
	if (!strcmp(s, "any")) {
		out->mode = HTTPD_ALLOW_ANY;
		return 0;
	}
	if (!strcmp(s, "none")) {
		out->mode = HTTPD_ALLOW_NONE;
		return 0;
	}
	if (n == 0 || n >= sizeof(addr))
		return -1;
	memcpy(addr, s, n);
	addr[n] = 0;
	out->mode = HTTPD_ALLOW_PREFIX;
	if (inet_pton(AF_INET, addr, out->addr) == 1) {
		out->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, addr, out->addr) == 1) {
		out->family = AF_INET6;
		max = 128;
	} else {
		return -1;
	}
	out->bits = max;
	if (slash) {
		char *end;
		long b = strtol(slash + 1, &end, 10);

		if (!slash[1] || *end || b < 0 || b > (long)max)
			return -1;
		out->bits = (unsigned)b;
	}
	return 0;
}

/* The first @bits bits of @a and @b are equal. */
static bool prefix_eq(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;

	if (memcmp(a, b, whole) != 0)
		return false;
	return !rest || ((a[whole] ^ b[whole]) & (uint8_t)(0xffu << (8 - rest))) == 0;
}

bool httpd_allow_match(const struct httpd_allow *a, const struct sockaddr *peer)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const uint8_t loop6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
	uint8_t v4[4], v6[16];
	int family = peer->sa_family;

	if (a->mode == HTTPD_ALLOW_ANY)
		return true;
	if (a->mode == HTTPD_ALLOW_NONE)
		return false;
	if (family == AF_INET) {
		memcpy(v4, &((const struct sockaddr_in *)peer)->sin_addr, 4);
	} else if (family == AF_INET6) {
		memcpy(v6, &((const struct sockaddr_in6 *)peer)->sin6_addr, 16);
		if (!memcmp(v6, mapped, sizeof(mapped))) {
			family = AF_INET; /* ::ffff:a.b.c.d is a.b.c.d */
			memcpy(v4, v6 + 12, 4);
		}
	} else {
		return false;
	}
	if (a->mode == HTTPD_ALLOW_LOOPBACK)
		return family == AF_INET ? v4[0] == 127 : !memcmp(v6, loop6, 16);
	if (family != a->family)
		return false;
	return prefix_eq(family == AF_INET ? v4 : v6, a->addr, a->bits);
}
