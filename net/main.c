// SPDX-License-Identifier: MIT
/*
 * net/main.c - httpd: the ktimer HTTP/1.1 server.
 *
 * `httpd --help` lists every flag of net/config.h's HTTPD_OPTIONS with its
 * default; the parser reads the same table. Prints exactly one line
 * on stdout, "listening on ADDR:PORT workers=N" (an IPv6 address in
 * brackets), once the listening socket is bound; errors go to stderr, one
 * timestamped line each. SIGINT/SIGTERM: stop accepting, finish the
 * responses in flight, close idle connections, exit 0; a second one exits
 * at once with 128 + its number (130 for SIGINT, 143 for SIGTERM). SIGHUP: reopen the
 * access log (log rotation), keep serving.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "net/addr.h"
#include "net/http.h"
#include "net/log.h"
#include "net/server.h"

enum opt_kind { OPT_uint, OPT_u64, OPT_millis, OPT_seconds, OPT_text, OPT_allow, OPT_on };

/* net/config.h's HTTPD_OPTIONS as a table: what the parser and --help loop over. */
static const struct opt {
	const char *flag;
	enum opt_kind kind;
	size_t off; /* of the field in struct httpd_config */
	long long min, max;
	const char *value, *help;
} opts[] = {
#define OPT_ROW(flag, field, kind, def, min, max, value, help) \
	{flag, OPT_##kind, offsetof(struct httpd_config, field), min, max, value, help},
	HTTPD_OPTIONS(OPT_ROW)
#undef OPT_ROW
};

#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

unsigned httpd_cpus(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	return cpus > 0 ? (unsigned)cpus : 1u;
}

static void set_defaults(struct httpd_config *c)
{
#define OPT_DEFAULT(flag, field, kind, def, min, max, value, help) c->field = HTTPD_OPT_VALUE_##kind(def);
	HTTPD_OPTIONS(OPT_DEFAULT)
#undef OPT_DEFAULT
}

static void *field_of(struct httpd_config *c, const struct opt *o) { return (char *)c + o->off; }

/* A setting as --help shows it: "5000", "off", "loopback". */
static void format_value(const struct opt *o, struct httpd_config *c, char *buf, size_t cap)
{
	void *f = field_of(c, o);

	switch (o->kind) {
	case OPT_uint:
		snprintf(buf, cap, "%u", *(unsigned *)f);
		break;
	case OPT_u64:
		snprintf(buf, cap, "%llu", (unsigned long long)*(uint64_t *)f);
		break;
	case OPT_millis:
		snprintf(buf, cap, "%u", (unsigned)((kt_millis *)f)->ms);
		break;
	case OPT_seconds:
		snprintf(buf, cap, "%u", (unsigned)((kt_seconds *)f)->s);
		break;
	case OPT_text:
		snprintf(buf, cap, "%s", *(const char **)f ? *(const char **)f : "off");
		break;
	case OPT_on:
		snprintf(buf, cap, "%s", *(bool *)f ? "on" : "off");
		break;
	case OPT_allow: {
		static const char *const mode[] = {[HTTPD_ALLOW_LOOPBACK] = "loopback", [HTTPD_ALLOW_ANY] = "any",
						   [HTTPD_ALLOW_NONE] = "none", [HTTPD_ALLOW_PREFIX] = "ADDR/BITS"};

		snprintf(buf, cap, "%s", mode[((struct httpd_allow *)f)->mode]);
		break;
	}
	}
}

#define HELP_COL 23   /* where the descriptions start */
#define HELP_WIDTH 79 /* the lines end by this column */

/* One flag's entry: "  --flag VALUE" then its help, wrapped at spaces, and
 * "(default X)" at its end, never split. */
static void help_entry(FILE *f, const char *name, const char *text, const char *def)
{
	int col = fprintf(f, "  %s", name);
	const char *p = text;
	char tail[96];

	if (col > HELP_COL - 2) {
		fputc('\n', f);
		col = 0;
	}
	fprintf(f, "%*s", HELP_COL - col, "");
	col = HELP_COL;
	snprintf(tail, sizeof(tail), "(default %s)", def ? def : "");
	for (bool first = true;; first = false) {
		size_t len;

		while (*p == ' ')
			p++;
		len = *p ? strcspn(p, " ") : (def ? strlen(tail) : 0);
		if (!len)
			break;
		if (!first && col + 1 + (int)len > HELP_WIDTH) {
			fprintf(f, "\n%*s", HELP_COL, "");
			col = HELP_COL;
		} else if (!first) {
			fputc(' ', f);
			col++;
		}
		fwrite(*p ? p : tail, 1, len, f);
		col += (int)len;
		if (!*p)
			break;
		p += len;
	}
	fputc('\n', f);
}

static void help(FILE *f)
{
	struct httpd_config d;

	set_defaults(&d);
	fprintf(f, "usage: httpd [OPTION VALUE]...");
	for (size_t i = 0; i < N_OPTS; i++)
		if (opts[i].kind == OPT_on)
			fprintf(f, " [%s]", opts[i].flag);
	fprintf(f, "\n\n");
	for (size_t i = 0; i < N_OPTS; i++) {
		char name[64], def[64];

		snprintf(name, sizeof(name), "%s%s%s", opts[i].flag, *opts[i].value ? " " : "", opts[i].value);
		format_value(&opts[i], &d, def, sizeof(def));
		help_entry(f, name, opts[i].help, def);
	}
	help_entry(f, "--help", "this text", NULL);
	fprintf(f, "\n"
		   "SIGINT or SIGTERM: graceful shutdown, exit 0; a second one: exit at once\n"
		   "with 128 + its number (130, 143). SIGHUP: reopen the access log.\n");
}

static void usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "httpd: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'httpd --help'.\n");
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

/* Set @o's field of @c from the command line's @v. */
static void parse_value(const struct opt *o, const char *v, struct httpd_config *c)
{
	void *f = field_of(c, o);

	switch (o->kind) {
	case OPT_uint:
		*(unsigned *)f = (unsigned)number(o->flag, v, o->min, o->max);
		break;
	case OPT_u64:
		*(uint64_t *)f = (uint64_t)number(o->flag, v, o->min, o->max);
		break;
	case OPT_millis:
		*(kt_millis *)f = kt_millis_checked_new(number(o->flag, v, o->min, o->max));
		break;
	case OPT_seconds:
		*(kt_seconds *)f = kt_seconds_checked_new(number(o->flag, v, o->min, o->max));
		break;
	case OPT_text:
		*(const char **)f = v;
		break;
	case OPT_allow:
		if (httpd_allow_parse(v, f) != 0) {
			fprintf(stderr, "httpd: %s wants loopback, any, none or ADDR[/BITS], got '%s'\n", o->flag, v);
			fprintf(stderr, "Try 'httpd --help'.\n");
			exit(2);
		}
		break;
	case OPT_on:
		*(bool *)f = true;
		break;
	}
}

static const struct opt *find_opt(const char *flag)
{
	for (size_t i = 0; i < N_OPTS; i++)
		if (!strcmp(flag, opts[i].flag))
			return &opts[i];
	return NULL;
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
	struct httpd_config cfg;
	struct httpd_server *srv;
	struct rlimit rl;
	/* Static: the detached second_signal() thread keeps using it while
	 * main() returns and exit() runs. */
	static sigset_t sigs;
	pthread_t second;
	int sig;

	set_defaults(&cfg);
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		const struct opt *opt;

		if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
			help(stdout);
			return 0;
		}
		if (strncmp(o, "--", 2) != 0)
			usage_error("unexpected argument '%s'", o);
		opt = find_opt(o);
		if (!opt)
			usage_error("unknown option '%s'", o);
		if (opt->kind == OPT_on) {
			parse_value(opt, NULL, &cfg);
			continue;
		}
		if (!v)
			usage_error("%s wants a value", o);
		parse_value(opt, v, &cfg);
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
