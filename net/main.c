// SPDX-License-Identifier: MIT
/*
 * net/main.c - httpd: the ktimer HTTP/1.1 server.
 *
 * `httpd --help` lists every flag with its default. Prints exactly one line
 * on stdout, "listening on ADDR:PORT workers=N" (an IPv6 address in
 * brackets), once the listening socket is bound; errors go to stderr, one
 * timestamped line each. SIGINT/SIGTERM: stop accepting, finish the
 * responses in flight, close idle connections, exit 0; a second one exits
 * at once with 128 + its number (130 for SIGINT, 143 for SIGTERM). SIGHUP: reopen the
 * access log (log rotation), keep serving.
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

#include "net/addr.h"
#include "net/http.h"
#include "net/log.h"
#include "net/server.h"

static void help(FILE *f, const struct httpd_config *d)
{
	fprintf(f,
		"usage: httpd [OPTION VALUE]... [--reuseport]\n"
		"\n"
		"  --port N             TCP port; 0 picks a free one (default %u)\n"
		"  --bind ADDR          IPv4 or IPv6 address or host name to listen on; a name\n"
		"                       listens on the first address it resolves to (default %s)\n"
		"  --reuseport          one SO_REUSEPORT socket per worker: other processes may\n"
		"                       then listen on the same port and take part of the\n"
		"                       connections (default off: a port in use is an error)\n"
		"  --workers N          worker threads, 1 to 1024 (default %u, one per CPU)\n"
		"  --keepalive S        keep-alive timeout in seconds, 0 disables keep-alive; an\n"
		"                       idle connection closes S to S + 1 s and one wheel unit\n"
		"                       after its last activity, plus the drain allowance:\n"
		"                       --expire-spread, or the time closing the ones due in\n"
		"                       the same second takes if longer; measured up to 0.6 s\n"
		"                       with up to 18,000 expiring at once (default %u)\n"
		"  --expire-budget US   wall time a worker spends per loop turn closing expired\n"
		"                       keep-alive connections, oldest first, serving I/O\n"
		"                       between turns; 0: no time limit (default %u)\n"
		"  --expire-spread MS   the closes of a second's expired connections are paced\n"
		"                       evenly over this, at most 1000; 0: as fast as the\n"
		"                       budget allows (default %u)\n"
		"  --expire-burst N     the first N closes of each due second go unpaced, so a\n"
		"                       second of a few connections closes at once (default %u)\n"
		"  --expire-batch N     those closes per loop turn at most, 0: no count limit;\n"
		"                       with all three 0, a second closes at once (default %u)\n"
		"  --header-timeout MS  deadline for a request head, 0 for none (default %u)\n"
		"  --body-timeout MS    deadline between two reads of a request body, 0 for\n"
		"                       none (default %u)\n"
		"  --write-timeout MS   deadline between two writes that make progress, 0 for\n"
		"                       none; at expiry a client whose send queue shrank since\n"
		"                       (it reads, the server had no chance to write) gets the\n"
		"                       deadline again (default %u)\n"
		"  --send-lowat BYTES   unsent bytes the kernel keeps per connection at most\n"
		"                       (TCP_NOTSENT_LOWAT), 0 for the kernel's default: a slow\n"
		"                       reader pins less memory and the server hears sooner\n"
		"                       that it reads (default %u)\n"
		"  --max-body BYTES     request body at most (Content-Length or chunked data),\n"
		"                       0 for no limit; past it: 413 (default %llu)\n"
		"  --lingering-timeout MS\n"
		"                       after a response with Connection: close, how long to\n"
		"                       wait for more client bytes (discarded) before closing;\n"
		"                       each read that brings some pushes it back (default %u)\n"
		"  --lingering-time MS  that lingering close in all, at most (default %u)\n"
		"  --resolution MS      timer wheel unit: 1, 2, 4, 8 or 16 (default %u)\n"
		"  --max-conns N        open connections at most, 0 for no limit; at the limit\n"
		"                       an idle keep-alive connection (the accepting\n"
		"                       worker's oldest, else another worker's) is closed\n"
		"                       to make room, and only without one: 503 (default %u)\n"
		"  --access-log FILE    common log format, buffered per worker (flushed every\n"
		"                       second); SIGHUP reopens it (default off)\n"
		"  --stats-allow WHO    who may GET /stats: loopback, any, none, or ADDR[/BITS]\n"
		"                       (default loopback)\n"
		"  --help               this text\n"
		"\n"
		"SIGINT or SIGTERM: graceful shutdown, exit 0; a second one: exit at once\n"
		"with 128 + its number (130, 143). SIGHUP: reopen the access log.\n",
		d->port, d->bind_addr, d->workers, (unsigned)d->keepalive.s, d->expire_budget_us,
		d->expire_spread_ms, d->expire_burst, d->expire_batch, (unsigned)d->header_timeout.ms,
		(unsigned)d->body_timeout.ms, (unsigned)d->write_timeout.ms, d->send_lowat,
		(unsigned long long)d->max_body, (unsigned)d->lingering_timeout.ms,
		(unsigned)d->lingering_time.ms, d->resolution_ms, d->max_conns);
}

static void usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "httpd: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'httpd --help'.\n");
	exit(2);
}

/* The options that take a value. */
static int is_option(const char *o)
{
	static const char *const known[] = {"--port", "--bind", "--workers", "--keepalive", "--header-timeout",
					    "--body-timeout", "--write-timeout", "--lingering-timeout",
					    "--lingering-time", "--resolution", "--max-conns", "--expire-batch",
					    "--expire-budget", "--expire-spread", "--expire-burst",
					    "--access-log", "--stats-allow", "--max-body", "--send-lowat"};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(o, known[i]))
			return 1;
	return 0;
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

/*
 * While the workers drain (net/server.c, begin_shutdown), the signals are
 * still blocked in every thread: this thread takes them. SIGHUP is
 * ignored (the server being freed is no place to reopen logs in); a second
 * SIGINT or SIGTERM exits at once with
 * 128 + the signal's number (130, 143), the status a shell reports for a
 * process the signal killed, without waiting for the connections left (the
 * access log's buffered lines are lost).
 */
static void *second_signal(void *arg)
{
	const sigset_t *sigs = arg;
	int sig;

	for (;;) {
		if (sigwait(sigs, &sig) != 0)
			continue;
		if (sig == SIGHUP)
			continue;
		httpd_log_error("notice", "%s again: exiting now", sig == SIGINT ? "SIGINT" : "SIGTERM");
		_exit(128 + sig);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct httpd_config cfg = {
		.bind_addr = "127.0.0.1",
		.port = 8080,
		.reuseport = false,
		.workers = cpus > 0 ? (unsigned)cpus : 1u,
		.keepalive = KT_SECONDS(5),
		.header_timeout = KT_MILLIS(5000),
		.body_timeout = KT_MILLIS(5000),
		.write_timeout = KT_MILLIS(10000),
		/* nginx's lingering_timeout and lingering_time defaults. */
		.lingering_timeout = KT_MILLIS(5000),
		.lingering_time = KT_MILLIS(30000),
		.resolution_ms = 16,
		.max_conns = 0,
		.max_body = HTTP_MAX_BODY,
		/* Small enough that a slow reader wakes the server every few dozen
		 * KB, large enough that a fast one is never starved by it. */
		.send_lowat = 128u * 1024u,
		/* Without a pace a due second's closes run back to back and an
		 * active client waits behind them; turns of at most 250 us spread
		 * over 500 ms let it run between them (BENCHMARKS.md, "Expiry
		 * storms", measures these defaults against nginx). */
		.expire_batch = 0,
		.expire_budget_us = 250,
		.expire_spread_ms = 500,
		/* A fraction of one drain turn's work: a second of a few dozen
		 * connections keeps the bound K + 1 s + one unit. */
		.expire_burst = 64,
		.access_log = NULL,
		.stats_allow = {.mode = HTTPD_ALLOW_LOOPBACK},
	};
	const struct httpd_config defaults = cfg;
	struct httpd_server *srv;
	struct rlimit rl;
	/* Static: the detached second_signal() thread keeps using it while
	 * main() returns and exit() runs. */
	static sigset_t sigs;
	pthread_t second;
	int sig;

	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
			help(stdout, &defaults);
			return 0;
		}
		if (!strcmp(o, "--reuseport")) {
			cfg.reuseport = true;
			continue;
		}
		if (strncmp(o, "--", 2) != 0)
			usage_error("unexpected argument '%s'", o);
		if (!is_option(o))
			usage_error("unknown option '%s'", o);
		if (!v)
			usage_error("%s wants a value", o);
		if (!strcmp(o, "--port"))
			cfg.port = (unsigned)number(o, v, 0, 65535);
		else if (!strcmp(o, "--bind"))
			cfg.bind_addr = v;
		else if (!strcmp(o, "--workers"))
			cfg.workers = (unsigned)number(o, v, 1, 1024);
		else if (!strcmp(o, "--keepalive"))
			cfg.keepalive = kt_seconds_checked_new(number(o, v, 0, 65535));
		else if (!strcmp(o, "--header-timeout"))
			cfg.header_timeout = kt_millis_checked_new(number(o, v, 0, UINT_MAX));
		else if (!strcmp(o, "--body-timeout"))
			cfg.body_timeout = kt_millis_checked_new(number(o, v, 0, UINT_MAX));
		else if (!strcmp(o, "--write-timeout"))
			cfg.write_timeout = kt_millis_checked_new(number(o, v, 0, UINT_MAX));
		else if (!strcmp(o, "--lingering-timeout"))
			cfg.lingering_timeout = kt_millis_checked_new(number(o, v, 1, UINT_MAX));
		else if (!strcmp(o, "--lingering-time"))
			cfg.lingering_time = kt_millis_checked_new(number(o, v, 1, UINT_MAX));
		else if (!strcmp(o, "--resolution"))
			cfg.resolution_ms = (unsigned)number(o, v, 1, 16);
		else if (!strcmp(o, "--max-conns"))
			cfg.max_conns = (unsigned)number(o, v, 0, UINT_MAX);
		else if (!strcmp(o, "--max-body"))
			cfg.max_body = (uint64_t)number(o, v, 0, 1LL << 50);
		else if (!strcmp(o, "--send-lowat"))
			cfg.send_lowat = (unsigned)number(o, v, 0, 64LL << 20);
		else if (!strcmp(o, "--expire-batch"))
			cfg.expire_batch = (unsigned)number(o, v, 0, UINT_MAX);
		else if (!strcmp(o, "--expire-budget"))
			cfg.expire_budget_us = (unsigned)number(o, v, 0, 1000000);
		else if (!strcmp(o, "--expire-spread"))
			cfg.expire_spread_ms = (unsigned)number(o, v, 0, 1000);
		else if (!strcmp(o, "--expire-burst"))
			cfg.expire_burst = (unsigned)number(o, v, 0, UINT_MAX);
		else if (!strcmp(o, "--access-log"))
			cfg.access_log = v;
		else if (!strcmp(o, "--stats-allow")) {
			if (httpd_allow_parse(v, &cfg.stats_allow) != 0)
				usage_error("--stats-allow wants loopback, any, none or ADDR[/BITS], got '%s'", v);
		}
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
	/* Signals go to this thread only (sigwait below); workers inherit the
	 * mask. SIGHUP is among them: a closed terminal or a log rotation must
	 * not kill the server. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (cfg.access_log) {
		int fd = httpd_access_log_open(cfg.access_log);

		if (fd < 0) {
			httpd_log_error("error", "cannot open the access log %s: %s", cfg.access_log, strerror(errno));
			return 1;
		}
		close(fd);
	}
	srv = httpd_server_start(&cfg);
	if (!srv)
		return 1; /* the cause is on the error log */
	printf("listening on %s workers=%u\n", httpd_server_address(srv), cfg.workers);
	fflush(stdout);
	for (;;) {
		if (sigwait(&sigs, &sig) != 0)
			continue;
		if (sig != SIGHUP)
			break;
		if (httpd_server_reopen_logs(srv) != 0)
			httpd_log_error("error", "SIGHUP: cannot reopen %s: %s", cfg.access_log, strerror(errno));
		else
			httpd_log_error("notice", "SIGHUP: %s", cfg.access_log ? "access log reopened" : "no log to reopen");
	}
	httpd_log_error("notice", "%s: shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
	/* The graceful shutdown may wait for slow clients up to the drain
	 * deadline: a second SIGINT or SIGTERM must still end the process. */
	if (pthread_create(&second, NULL, second_signal, &sigs) == 0)
		pthread_detach(second);
	httpd_server_stop(srv);
	httpd_server_free(srv);
	return 0;
}
