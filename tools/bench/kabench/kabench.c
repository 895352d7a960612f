// SPDX-License-Identifier: MIT
/*
 * tools/bench/kabench/kabench.c - cancel-heavy keep-alive timer benchmarks.
 *
 *   kabench [--full] [--runs R] [--csv FILE] [--sim-seconds S]
 *           [--only NAME,...] [--sizes N,...] [--no-sim]
 *
 * For N pending timers (1k, 10k, 100k; --full adds 1M), every implementation
 * in the ops table runs the same phases on the same random streams:
 *
 *   arm     arm N idle timers, expiries now + 25..35 s          (ns/op)
 *   rearm   M random connections pushed to now + 25..35 s       (ns/op)
 *   cancel  cancel all N in random order                         (ns/op)
 *   expire  fire N timers armed in random order over 1..10 s     (ns/fired)
 *   moved   the same after each was re-armed once, to another time over
 *           1..10 s, before it fires: timers that moved (ns/fired)
 *   sim     keep-alive in virtual time: each connection sends a request
 *           every 0.5..1.5 s, 10% go silent and expire after 30 s; reports
 *           ns of timer work per request, timer-structure operations per
 *           request and timer-driven wake-ups per simulated second
 *
 * Runs are interleaved (run 1 of every implementation, then run 2, ...) and
 * each figure is the median over runs. Setup (allocating and initializing the
 * connections) and cleanup are timed separately from the phases. Time is the
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID): a neighbour on this shared
 * 2-core machine that preempts the benchmark does not count against it.
 *
 * --only and --sizes pick implementations (by name prefix, or =NAME exactly)
 * and N for quick A/B runs (tools/bench/kabench/ab); --no-sim skips the
 * simulation; --rotate K starts the rotation of the selected rows at K (ab
 * passes the round, so two rows compared within one binary alternate which
 * runs first); --warmup runs everything once, unrecorded, first (the first
 * row of a process otherwise pays the first touch of the allocator's
 * memory: its arm phase measured 2x the second row's).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/bench/kabench/kabench.h"

#define MAX_IMPLS 20
#define MAX_NS 4
#define MAX_RUNS 15

enum { P_SETUP, P_ARM, P_REARM, P_CANCEL, P_EXPIRE, P_MOVED, P_CLEANUP, P_SIM_NS, P_SIM_OPS, P_SIM_WAKE, P_COUNT };
static const char *phase_names[P_COUNT] = {"setup", "arm", "rearm", "cancel", "expire", "expire moved", "cleanup",
					   "sim ns/req", "sim ops/req", "sim wakes/s"};

static const struct kab_impl *impls[] = {
	&kab_ktimer,	     &kab_ktimer_prefetch, &kab_ktimer_lazy, &kab_ktimer_idle,	 &kab_slots,
	&kab_heap,	     &kab_libevent,	   &kab_libevent_common, &kab_libuv,	 &kab_libev,
	&kab_floor,	     &kab_floor_prefetch,  &kab_floor_walk,	 &kab_ktimer_turn, &kab_ktimer_turn_limited,
};
#define NIMPL (sizeof(impls) / sizeof(impls[0]))

static double results[MAX_IMPLS][MAX_NS][P_COUNT][MAX_RUNS];
static size_t prefetch_distance = 4; /* --prefetch-distance */
static size_t fired_count;

void kab_fired(struct kab_conn *c)
{
	c->fired++;
	fired_count++;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static size_t conn_size(const struct kab_impl *im)
{
	size_t need = offsetof(struct kab_conn, node) + im->node_bytes;

	need = (need + 63) & ~(size_t)63;
	return need > KAB_CONN_SIZE ? need : KAB_CONN_SIZE;
}

/* A zeroed, cache-line aligned connection (jemalloc: the benchmark links it). */
static struct kab_conn *conn_new(size_t size)
{
	struct kab_conn *c = aligned_alloc(64, size);

	memset(c, 0, size);
	return c;
}

/* Shared random streams for one (run, N): every implementation sees these. */
struct streams {
	size_t n, m;
	uint32_t *rearm_idx, *cancel_order, *expire_order;
	uint32_t *delay; /* 25000..34999 ms */
	uint32_t *expire_at; /* 1..10000 ms */
	uint32_t *moved_at;  /* 1..10000 ms: where the moved phase's re-arm sends a timer */
};

static void shuffle(uint32_t *v, size_t n)
{
	for (size_t i = n; i > 1; i--) { /* Fisher-Yates */
		size_t j = rnd() % i;
		uint32_t t = v[i - 1];

		v[i - 1] = v[j];
		v[j] = t;
	}
}

static void make_streams(struct streams *s, size_t n, size_t m)
{
	s->n = n;
	s->m = m;
	s->rearm_idx = malloc(m * sizeof(uint32_t));
	s->delay = malloc((m > n ? m : n) * sizeof(uint32_t));
	s->cancel_order = malloc(n * sizeof(uint32_t));
	s->expire_order = malloc(n * sizeof(uint32_t));
	s->expire_at = malloc(n * sizeof(uint32_t));
	s->moved_at = malloc(n * sizeof(uint32_t));
	for (size_t i = 0; i < m; i++)
		s->rearm_idx[i] = (uint32_t)(rnd() % n);
	for (size_t i = 0; i < (m > n ? m : n); i++)
		s->delay[i] = 25000u + (uint32_t)(rnd() % 10000);
	for (size_t i = 0; i < n; i++) {
		s->cancel_order[i] = (uint32_t)i;
		s->expire_at[i] = 1u + (uint32_t)(rnd() % 10000);
		s->moved_at[i] = 1u + (uint32_t)(rnd() % 10000);
	}
	shuffle(s->cancel_order, n);
	/*
	 * Expiry arms in random order too: in address order every bucket list
	 * would be walked in (reverse) address order, which the hardware
	 * prefetcher follows and no server's connections would give it.
	 */
	memcpy(s->expire_order, s->cancel_order, n * sizeof(uint32_t));
	shuffle(s->expire_order, n);
}

static void free_streams(struct streams *s)
{
	free(s->rearm_idx);
	free(s->delay);
	free(s->cancel_order);
	free(s->expire_order);
	free(s->expire_at);
	free(s->moved_at);
}

/* One run of the micro phases for one implementation. */
static void run_phases(const struct kab_impl *im, const struct streams *s, double *out)
{
	const uint64_t t0 = 1000000; /* the clock's start, ms */
	size_t n = s->n, csz = conn_size(im);
	struct kab_conn **c = malloc(n * sizeof(*c));
	void *ctx;
	double a, b;

	a = now_ns();
	ctx = im->create(n, t0);
	for (size_t i = 0; i < n; i++) {
		c[i] = conn_new(csz);
		c[i]->id = i;
		im->init(ctx, c[i]);
	}
	b = now_ns();
	out[P_SETUP] = (b - a) / (double)n;

	a = now_ns();
	for (size_t i = 0; i < n; i++)
		im->arm(ctx, c[i], t0 + s->delay[i]);
	b = now_ns();
	out[P_ARM] = (b - a) / (double)n;

	a = now_ns();
	if (im->prefetch) {
		/* As a server's event loop would: the connection of the request
		 * prefetch_distance ahead is known already. */
		for (size_t k = 0; k < s->m; k++) {
			if (k + prefetch_distance < s->m)
				im->prefetch(ctx, c[s->rearm_idx[k + prefetch_distance]]);
			im->arm(ctx, c[s->rearm_idx[k]], t0 + s->delay[k]);
		}
	} else {
		for (size_t k = 0; k < s->m; k++)
			im->arm(ctx, c[s->rearm_idx[k]], t0 + s->delay[k]);
	}
	b = now_ns();
	out[P_REARM] = (b - a) / (double)s->m;

	a = now_ns();
	for (size_t i = 0; i < n; i++)
		im->cancel(ctx, c[s->cancel_order[i]]);
	b = now_ns();
	out[P_CANCEL] = (b - a) / (double)n;

	/* Expire: arm all (untimed), then time firing them. */
	fired_count = 0;
	if (im->settable_clock) {
		for (size_t i = 0; i < n; i++)
			im->arm(ctx, c[s->expire_order[i]], t0 + s->expire_at[i]);
		a = now_ns();
		im->advance(ctx, t0 + 10000 + (im->fixed_timeout ? KAB_KEEPALIVE_MS + 2000 : 1000));
		b = now_ns();
	} else if (strcmp(im->name, "floor (64 lists)") != 0) {
		for (size_t i = 0; i < n; i++)
			im->arm(ctx, c[s->expire_order[i]], 0); /* due at once: fire in one loop pass */
		a = now_ns();
		for (int pass = 0; pass < 1000 && fired_count < n; pass++)
			im->advance(ctx, 0);
		b = now_ns();
	} else {
		a = b = 0;
	}
	out[P_EXPIRE] = fired_count == n ? (b - a) / (double)n : -1;
	if (fired_count != n && fired_count)
		fprintf(stderr, "%s: fired %zu of %zu\n", im->name, fired_count, n);

	/*
	 * Expire after a move: arm all, re-arm each once (in another order) to
	 * another time, then time firing them. A timer that moved is where a
	 * re-arm put it, which may differ from where an arm puts it.
	 */
	fired_count = 0;
	out[P_MOVED] = -1;
	if (im->settable_clock) {
		uint64_t start = t0 + 12000 + (im->fixed_timeout ? KAB_KEEPALIVE_MS + 2000 : 1000);

		im->advance(ctx, start);
		for (size_t i = 0; i < n; i++)
			im->arm(ctx, c[s->expire_order[i]], start + s->expire_at[i]);
		for (size_t i = 0; i < n; i++)
			im->arm(ctx, c[s->cancel_order[i]], start + s->moved_at[i]);
		a = now_ns();
		im->advance(ctx, start + 10000 + (im->fixed_timeout ? KAB_KEEPALIVE_MS + 2000 : 1000));
		b = now_ns();
		if (fired_count == n)
			out[P_MOVED] = (b - a) / (double)n;
		else if (fired_count)
			fprintf(stderr, "%s: moved: fired %zu of %zu\n", im->name, fired_count, n);
	}

	a = now_ns();
	for (size_t i = 0; i < n; i++)
		im->cancel(ctx, c[i]);
	im->destroy(ctx);
	for (size_t i = 0; i < n; i++)
		free(c[i]);
	b = now_ns();
	out[P_CLEANUP] = (b - a) / (double)n;
	free(c);
}

/* ---- the keep-alive simulation ------------------------------------------ */

struct event {
	uint32_t at_ms; /* simulated time */
	uint32_t conn;
};

static int cmp_event(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	return x->at_ms < y->at_ms ? -1 : x->at_ms > y->at_ms;
}

/* Requests of N connections over @secs seconds: 0.5..1.5 s apart; 10% of the
 * connections go silent at a random point in the first 20 s. */
static struct event *make_requests(size_t n, unsigned secs, size_t *count)
{
	size_t cap = n * (secs + 2), k = 0;
	struct event *ev = malloc(cap * sizeof(*ev));

	for (size_t i = 0; i < n; i++) {
		uint32_t stop = (rnd() % 10 == 0) ? (uint32_t)(rnd() % 20000) : secs * 1000u;
		uint32_t t = (uint32_t)(rnd() % 1000);

		while (t < stop && t < secs * 1000u && k < cap) {
			ev[k++] = (struct event){t, (uint32_t)i};
			t += 500u + (uint32_t)(rnd() % 1000);
		}
	}
	qsort(ev, k, sizeof(*ev), cmp_event);
	*count = k;
	return ev;
}

static void sim_pass(const struct kab_impl *im, size_t n, const struct event *ev, size_t nev, unsigned secs,
		     double *out, int counting)
{
	const uint64_t t0 = 1000000;
	size_t csz = conn_size(im), wakes = 0;
	struct kab_conn **c = malloc(n * sizeof(*c));
	void *ctx = im->create(n, t0);
	uint64_t now = t0, ops0;
	double a, b;

	if (counting)
		im->count_ops(ctx);
	for (size_t i = 0; i < n; i++) {
		c[i] = conn_new(csz);
		im->init(ctx, c[i]);
	}
	fired_count = 0;
	ops0 = im->ops(ctx);
	a = now_ns();
	for (size_t k = 0; k < nev;) {
		uint64_t at = t0 + ev[k].at_ms;

		/* Timer-driven wake-ups before the next I/O. */
		for (;;) {
			int64_t nt = im->next_timeout(ctx, now);

			if (nt < 0 || now + (uint64_t)nt >= at)
				break;
			now += nt > 0 ? (uint64_t)nt : 1;
			im->advance(ctx, now);
			wakes++;
		}
		/* The I/O turn at `at`: the clock moves, then every request of that
		 * millisecond pushes its connection's keep-alive back. */
		now = at;
		im->advance(ctx, now);
		for (; k < nev && t0 + ev[k].at_ms == at; k++)
			im->arm(ctx, c[ev[k].conn], at + KAB_KEEPALIVE_MS);
	}
	b = now_ns();
	out[P_SIM_NS] = (b - a) / (double)nev;
	out[P_SIM_OPS] = (double)(im->ops(ctx) - ops0) / (double)nev;
	out[P_SIM_WAKE] = (double)wakes / (double)secs;
	for (size_t i = 0; i < n; i++)
		im->cancel(ctx, c[i]);
	im->destroy(ctx);
	for (size_t i = 0; i < n; i++)
		free(c[i]);
	free(c);
}

/*
 * The simulation, timed; an implementation that counts its operations only
 * when asked (ktimer: counting takes a slower path) gets its operations per
 * request from a second pass over the same requests, untimed.
 */
static void run_sim(const struct kab_impl *im, size_t n, const struct event *ev, size_t nev, unsigned secs,
		    double *out)
{
	double counted[P_COUNT];

	sim_pass(im, n, ev, nev, secs, out, 0);
	if (im->count_ops) {
		sim_pass(im, n, ev, nev, secs, counted, 1);
		out[P_SIM_OPS] = counted[P_SIM_OPS];
	}
}

/* ---- reporting ----------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
	double tmp[MAX_RUNS];

	memcpy(tmp, v, (size_t)n * sizeof(double));
	qsort(tmp, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

/*
 * The median over runs of num[r] / den[r]: a ratio of two implementations
 * measured in the same interleaved round, so a round the machine slowed down
 * for both cancels out (the median of each column alone would not pair
 * them). -1 when either side was not measured.
 */
static double median_ratio(const double *num, const double *den, int n)
{
	double q[MAX_RUNS];

	for (int r = 0; r < n; r++) {
		if (num[r] < 0 || den[r] <= 0)
			return -1;
		q[r] = num[r] / den[r];
	}
	return median(q, n);
}

/* Phase @p of implementation @ii against the same phase of @ref, at size @ni. */
static double ratio(const int *on, size_t ii, int ref, size_t ni, int p, int runs)
{
	if (ref < 0 || !on[ref])
		return -1;
	return median_ratio(results[ii][ni][p], results[ref][ni][p], runs);
}

/* Phase @p of row @ii over phase @rp of row @ref, per run, the median. */
static double ratio_to(const int *on, size_t ii, int p, int ref, size_t ni, int rp, int runs)
{
	if (ref < 0 || !on[ref])
		return -1;
	return median_ratio(results[ii][ni][p], results[ref][ni][rp], runs);
}

static void cell(double v, const char *fmt)
{
	if (v < 0)
		printf(" %9s |", "n/a");
	else
		printf(fmt, v);
}

/* The index of the implementation named @name in impls[], or -1. */
static int impl_index(const char *name)
{
	for (size_t i = 0; i < NIMPL; i++)
		if (impls[i] && !strcmp(impls[i]->name, name))
			return (int)i;
	return -1;
}

/*
 * --only: implementations whose name starts with one of the comma-separated
 * prefixes; a prefix that starts with '=' names one implementation exactly.
 */
static int selected(const char *only, const char *name)
{
	const char *p = only;

	if (!only)
		return 1;
	while (*p) {
		size_t len = strcspn(p, ",");

		if (len > 1 && p[0] == '=' && strlen(name) == len - 1 && !strncmp(name, p + 1, len - 1))
			return 1;
		if (len && p[0] != '=' && !strncmp(name, p, len))
			return 1;
		p += len + (p[len] == ',');
	}
	return 0;
}

int main(int argc, char **argv)
{
	size_t quick_ns[] = {1000, 10000, 100000}, full_ns[] = {1000, 10000, 100000, 1000000};
	size_t *ns = quick_ns, nn = 3, custom_ns[MAX_NS];
	int runs = 5, full = 0, sim = 1, turns = 0, rotate = 0, warmup = 0;
	size_t order[MAX_IMPLS], non = 0;
	unsigned sim_secs = 40;
	const char *csv = NULL, *only = NULL;
	FILE *cf = NULL;
	int on[MAX_IMPLS], kt = impl_index("ktimer"), relink = impl_index("floor (64 lists)"),
			   relink_pf = impl_index("floor prefetch (64 lists)"), walk = impl_index("floor walk (1 list)");

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--full")) {
			full = 1;
			ns = full_ns;
			nn = 4;
		} else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
			runs = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
			csv = argv[++i];
		} else if (!strcmp(argv[i], "--sim-seconds") && i + 1 < argc) {
			sim_secs = (unsigned)atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "--no-sim")) {
			sim = 0;
		} else if (!strcmp(argv[i], "--prefetch-distance") && i + 1 < argc) {
			prefetch_distance = (size_t)strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--rotate") && i + 1 < argc) {
			rotate = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--warmup")) {
			warmup = 1;
		} else if (!strcmp(argv[i], "--turns")) {
			turns = 1;
		} else if (!strcmp(argv[i], "--run-limit") && i + 1 < argc && &kab_run_limit) {
			kab_run_limit = (uint32_t)strtoul(argv[++i], NULL, 10);
			turns = 1;
		} else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
			char *p = argv[++i];

			for (nn = 0; *p && nn < MAX_NS;) {
				custom_ns[nn++] = (size_t)strtoull(p, &p, 10);
				p += *p == ',';
			}
			ns = custom_ns;
			full = full || ns[nn - 1] > 100000;
		} else {
			fprintf(stderr, "usage: kabench [--full] [--runs R] [--csv FILE] [--sim-seconds S] "
					"[--only NAME,...] [--sizes N,...] [--no-sim] [--turns] [--run-limit N] [--prefetch-distance D] "
					"[--rotate K] [--warmup]\n");
			return 2;
		}
	}
	if (runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr, "kabench: --runs must be 1..%d\n", MAX_RUNS);
		return 2;
	}
	/* The turn rows only when asked for (--turns, or by name), and only
	 * where linked (weak: a build without turn_ktimer.c has none). */
	for (size_t i = 0; i < NIMPL; i++) {
		on[i] = impls[i] && selected(only, impls[i]->name) &&
			(strncmp(impls[i]->name, "turn:", 5) != 0 || turns || (only && strstr(only, "turn:")));
		if (on[i])
			order[non++] = i;
	}
	/* A warm-up run (r = -1) is measured like the others and then
	 * overwritten by run 0: the first row of a process no longer pays the
	 * first touch of the allocator's memory for all the others. */
	for (int r = -warmup; r < runs; r++) {
		int slot = r < 0 ? 0 : r;

		for (size_t ni = 0; ni < nn; ni++) {
			struct streams s;
			size_t nev = 0;
			struct event *ev = NULL;
			size_t m = full ? 1000000 : 200000;

			make_streams(&s, ns[ni], m);
			if (sim && ns[ni] <= 100000)
				ev = make_requests(ns[ni], sim_secs, &nev);
			for (size_t k = 0; k < non; k++) {
				/* Rotate the order of the selected rows each run (and by
				 * --rotate, which tools/bench/kabench/ab varies per round) so no
				 * implementation always runs first or last (warm caches,
				 * turbo, neighbours, what the previous row left in memory). */
				size_t ii = order[(k + (size_t)(r + warmup) + (size_t)rotate) % non];
				double row[P_COUNT];

				run_phases(impls[ii], &s, row);
				for (int p = 0; p < P_SIM_NS; p++)
					results[ii][ni][p][slot] = row[p];
				if (ev && impls[ii]->settable_clock && impls[ii]->next_timeout) {
					double simr[P_COUNT];

					run_sim(impls[ii], ns[ni], ev, nev, sim_secs, simr);
					results[ii][ni][P_SIM_NS][slot] = simr[P_SIM_NS];
					results[ii][ni][P_SIM_OPS][slot] = simr[P_SIM_OPS];
					results[ii][ni][P_SIM_WAKE][slot] = simr[P_SIM_WAKE];
				} else {
					results[ii][ni][P_SIM_NS][slot] = -1;
					results[ii][ni][P_SIM_OPS][slot] = -1;
					results[ii][ni][P_SIM_WAKE][slot] = -1;
				}
			}
			free(ev);
			free_streams(&s);
		}
		if (r >= 0)
			fprintf(stderr, "run %d/%d done\n", r + 1, runs);
	}
	if (csv) {
		cf = fopen(csv, "w");
		if (cf)
			fprintf(cf, "impl,n,phase,median_ns\n");
	}
	for (size_t ni = 0; ni < nn; ni++) {
		printf("\n### N = %zu pending (median of %d interleaved runs; ns per operation, thread CPU time; each ratio is the median of the per-run ratios)\n\n", ns[ni],
		       runs);
		printf("| implementation | arm | rearm | cancel | expire | expire moved | rearm vs ktimer | expire vs ktimer | "
		       "rearm / relink floor | expire / walk floor | expire moved / walk floor | sim ns/req | sim ops/req | "
		       "sim wakes/s | setup | cleanup |\n");
		printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
		for (size_t ii = 0; ii < NIMPL; ii++) {
			double m[P_COUNT];

			if (!on[ii])
				continue;
			for (int p = 0; p < P_COUNT; p++)
				m[p] = median(results[ii][ni][p], runs);
			printf("| %s |", impls[ii]->name);
			cell(m[P_ARM], " %9.1f |");
			cell(m[P_REARM], " %9.1f |");
			cell(m[P_CANCEL], " %9.1f |");
			cell(m[P_EXPIRE], " %9.1f |");
			cell(m[P_MOVED], " %9.1f |");
			cell(ratio(on, ii, kt, ni, P_REARM, runs), " %8.2fx |");
			cell(ratio(on, ii, kt, ni, P_EXPIRE, runs), " %8.2fx |");
			/* A prefetching row against the floor that prefetches too. */
			cell(ratio(on, ii, impls[ii]->prefetch ? relink_pf : relink, ni, P_REARM, runs), " %8.2fx |");
			cell(ratio(on, ii, walk, ni, P_EXPIRE, runs), " %8.2fx |");
			cell(ratio_to(on, ii, P_MOVED, walk, ni, P_EXPIRE, runs), " %8.2fx |");
			cell(m[P_SIM_NS], " %9.1f |");
			cell(m[P_SIM_OPS], " %9.3f |");
			cell(m[P_SIM_WAKE], " %9.2f |");
			cell(m[P_SETUP], " %9.1f |");
			cell(m[P_CLEANUP], " %9.1f |");
			printf("\n");
			if (cf)
				for (int p = 0; p < P_COUNT; p++)
					fprintf(cf, "%s,%zu,%s,%.3f\n", impls[ii]->name, ns[ni], phase_names[p], m[p]);
		}
	}
	printf("\n| implementation | what a re-arm is | node bytes | other bytes/timer | allocations/timer | "
	       "connection bytes |\n|---|---|---|---|---|---|\n");
	for (size_t ii = 0; ii < NIMPL; ii++)
		if (on[ii])
			printf("| %s | %s | %zu | %zu | %d | %zu |\n", impls[ii]->name, impls[ii]->note,
			       impls[ii]->node_bytes, impls[ii]->extra_bytes, impls[ii]->allocs_per_timer,
			       conn_size(impls[ii]));
	printf("\nn/a: the relink floors have no expiry; the simulation needs a clock the benchmark can set (libevent, "
	       "libuv\nand libev read the system clock). libevent, libuv, libev and the walk floor expire with every timer "
	       "due at once.\n");
	if (cf)
		fclose(cf);
	return 0;
}
