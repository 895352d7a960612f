// SPDX-License-Identifier: MIT
/*
 * net/main.c - httpd: the ktimer HTTP/1.1 server.
 *
 *   httpd [--port N] [--bind ADDR] [--workers N] [--keepalive SECONDS]
 *         [--header-timeout MS] [--write-timeout MS] [--resolution MS]
 *         [--max-conns N]
 *
 * Prints exactly one line, "listening on ADDR:PORT workers=N", once every
 * worker's socket is bound. SIGINT/SIGTERM: stop accepting, finish the
 * responses in flight, close idle connections, exit 0.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "net/server.h"

static void usage(void)
{
	fprintf(stderr, "usage: httpd [--port N] [--bind ADDR] [--workers N] [--keepalive SECONDS]\n"
			"             [--header-timeout MS] [--write-timeout MS] [--resolution MS] [--max-conns N]\n");
	exit(2);
}

static long long number(const char *opt, const char *v, long long lo, long long hi)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(v ? v : "", &end, 10);
	if (!v || !*v || *end || errno || n < lo || n > hi) {
		fprintf(stderr, "httpd: %s wants an integer in [%lld, %lld], got '%s'\n", opt, lo, hi, v ? v : "");
		exit(2);
	}
	return n;
}

int main(int argc, char **argv)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct httpd_config cfg = {
		.bind_addr = "127.0.0.1",
		.port = 8080,
		.workers = cpus > 0 ? (unsigned)cpus : 1u,
		.keepalive = KT_SECONDS(5),
		.header_timeout = KT_MILLIS(5000),
		.write_timeout = KT_MILLIS(10000),
		.resolution_ms = 16,
		.max_conns = 0,
	};
	struct httpd_server *srv;
	struct rlimit rl;
	sigset_t sigs;
	int sig;

	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "--port"))
			cfg.port = (unsigned)number(o, v, 0, 65535);
		else if (!strcmp(o, "--bind"))
			cfg.bind_addr = v ? v : (usage(), "");
		else if (!strcmp(o, "--workers"))
			cfg.workers = (unsigned)number(o, v, 1, 1024);
		else if (!strcmp(o, "--keepalive"))
			cfg.keepalive = kt_seconds_checked_new(number(o, v, 0, 65535));
		else if (!strcmp(o, "--header-timeout"))
			cfg.header_timeout = kt_millis_checked_new(number(o, v, 0, UINT_MAX));
		else if (!strcmp(o, "--write-timeout"))
			cfg.write_timeout = kt_millis_checked_new(number(o, v, 0, UINT_MAX));
		else if (!strcmp(o, "--resolution"))
			cfg.resolution_ms = (unsigned)number(o, v, 1, 16);
		else if (!strcmp(o, "--max-conns"))
			cfg.max_conns = (unsigned)number(o, v, 0, UINT_MAX);
		else
			usage();
		i++;
	}
	if (cfg.resolution_ms & (cfg.resolution_ms - 1)) {
		fprintf(stderr, "httpd: --resolution must be a power of two from 1 to 16\n");
		return 2;
	}
	/* Many connections need many descriptors: take what the hard limit allows. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* Signals go to this thread only (sigwait below); workers inherit the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	srv = httpd_server_start(&cfg);
	if (!srv) {
		fprintf(stderr, "httpd: cannot listen on %s:%u: %s\n", cfg.bind_addr, cfg.port, strerror(errno));
		return 1;
	}
	printf("listening on %s:%u workers=%u\n", cfg.bind_addr, httpd_server_port(srv), cfg.workers);
	fflush(stdout);
	sigwait(&sigs, &sig);
	httpd_server_stop(srv);
	httpd_server_free(srv);
	return 0;
}
