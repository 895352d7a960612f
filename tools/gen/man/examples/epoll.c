/* A worker loop on kt_epoll: a pipe's data pushes a deadline back; when the
 * writer goes quiet for 50 ms the deadline fires and the loop ends. */
#define _GNU_SOURCE
#include <ktimer/ktimer.h>
#include <ktimer/epoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int done;

static void quiet(struct kt_timer *t)
{
	(void)t;
	printf("no data for 50 ms\n");
	done = 1;
}

int main(void)
{
	struct kt_base *base = kt_base_new(NULL);
	struct kt_epoll ep;
	struct kt_timer deadline;
	struct epoll_event ev[16], in = { .events = EPOLLIN };
	int p[2], turns = 0;

	if (!base || pipe(p) != 0 || kt_epoll_init(&ep, base) != 0)
		return EXIT_FAILURE;
	in.data.fd = p[0];
	epoll_ctl(ep.epfd, EPOLL_CTL_ADD, p[0], &in);
	kt_timer_setup(&deadline, base, quiet, 0);
	kt_timer_arm(&deadline, KT_MILLIS(50));
	if (write(p[1], "x", 1) != 1)
		return EXIT_FAILURE;
	while (!done && turns++ < 1000) {
		int n = kt_epoll_wait(&ep, ev, 16);
		for (int i = 0; i < n; i++) {
			char buf[64];
			if (read(ev[i].data.fd, buf, sizeof(buf)) > 0)
				kt_timer_arm(&deadline, KT_MILLIS(50));  /* pushed back */
		}
	}
	kt_epoll_close(&ep);
	kt_base_free(base);
	close(p[0]);
	close(p[1]);
	return done ? EXIT_SUCCESS : EXIT_FAILURE;
}
