/* SPDX-License-Identifier: MIT */
/* tools/bench/loopback.h - connect to a port on 127.0.0.1 (the tools' clients). */
#ifndef KTIMER_TOOLS_LOOPBACK_H
#define KTIMER_TOOLS_LOOPBACK_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A connected TCP socket to 127.0.0.1:@port, or -1. */
static inline int loopback_dial(int port)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

#endif
