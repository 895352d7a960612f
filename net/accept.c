// SPDX-License-Identifier: MIT
/* net/accept.c - listening sockets and accepting connections (see accept.h). */
#include "net/accept.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/conn.h"
#include "net/request.h"
#include "net/stats.h"

#define ACCEPT_RETRY_MS 100u

int httpd_listen(const struct httpd_config *cfg, unsigned port, unsigned *bound)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, cfg->bind_addr, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		len = sizeof(*sin);
	} else if (inet_pton(AF_INET6, cfg->bind_addr, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		len = sizeof(*sin6);
	} else {
		errno = EINVAL;
		return -1;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 4096) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	len = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &len);
	*bound = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					       : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return fd;
}

void httpd_accept_enable(struct httpd_worker *w, bool on)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = HTTPD_LISTEN_TAG};

	if (on == w->accepting || w->lfd < 0)
		return;
	epoll_ctl(w->ep.epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, w->lfd, &ev);
	w->accepting = on;
}

static void on_accept_retry(struct kt_timer *t)
{
	struct httpd_worker *w = kt_container_of(t, struct httpd_worker, accept_retry);

	if (!w->stopping)
		httpd_accept_enable(w, true);
}

void httpd_accept_init(struct httpd_worker *w)
{
	kt_timer_setup(&w->accept_retry, w->base, on_accept_retry, 0);
}

void httpd_accept(struct httpd_worker *w)
{
	struct httpd_server *s = w->srv;

	for (;;) {
		int fd = accept4(w->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct httpd_conn *c;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				/* Out of descriptors: keep serving the open ones, stop
				 * accepting for a moment instead of spinning on EMFILE. */
				httpd_accept_enable(w, false);
				kt_timer_arm(&w->accept_retry, KT_MILLIS(ACCEPT_RETRY_MS));
				httpd_count(&w->st.accept_pauses);
			}
			return;
		}
		if (s->cfg.max_conns && atomic_fetch_add(&s->conns, 1) >= s->cfg.max_conns) {
			atomic_fetch_sub(&s->conns, 1);
			httpd_send_and_forget(fd, 503);
			close(fd);
			httpd_count(&w->st.rejected);
			continue;
		}
		if (!s->cfg.max_conns)
			atomic_fetch_add(&s->conns, 1);
		c = httpd_conn_new(w, fd);
		if (!c) {
			atomic_fetch_sub(&s->conns, 1);
			continue;
		}
		httpd_request_start(c);
	}
}
