// SPDX-License-Identifier: MIT
/*
 * tools/bench/kabench/icount_ops.c - one operation repeated K times, for
 * valgrind --tool=callgrind --toggle-collect=<function> (see tools/bench/icount).
 *
 *   icount_ops IMPL OP K [N]  IMPL: ktimer | lazy | heap | floor
 *                             OP:   move | same | later | arm | cancel | expire
 *                             N:    pending timers (default 1024); with N
 *                                   larger, operations pick timers at random
 *                                   (for --cache-sim=yes at 1M pending)
 *
 * move:   re-arm a pending timer into another bucket (expiry alternates
 *         between now + 25 s and now + 35 s)
 * same:   re-arm a pending timer within its bucket (expiry moves by 1 ms
 *         inside one 1.024 s level-2 bucket)
 * later:  push a pending timer back by 1 ms, across buckets (a KT_TIMER_LAZY
 *         timer only stores it)
 * arm:    arm an idle timer (deleted outside the measured function)
 * cancel: delete a pending timer (re-armed outside the measured function)
 * expire: fire timers (K timers spread over 1..10 s, one advance)
 *
 * Prints the number of measured operations; tools/bench/icount divides the
 * instructions callgrind counted inside the function by it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ktimer/ktimer.h>

#include "tools/bench/kabench/kabench.h"

#define NT_DEFAULT 1024

static size_t fired;

void kab_fired(struct kab_conn *c)
{
	(void)c;
	fired++;
}

int main(int argc, char **argv)
{
	const struct kab_impl *im;
	struct kab_conn **c;
	const uint64_t t0 = 1 << 20; /* a multiple of the 1.024 s bucket */
	size_t k, NT = NT_DEFAULT;
	uint64_t x = 88172645463325252ull;
	void *ctx;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: icount_ops ktimer|lazy|heap|floor move|same|later|arm|cancel|expire K [N]\n");
		return 2;
	}
	im = !strcmp(argv[1], "ktimer") ? &kab_ktimer
	     : !strcmp(argv[1], "lazy") ? &kab_ktimer_lazy
	     : !strcmp(argv[1], "floor") ? &kab_floor
					 : &kab_heap;
	k = (size_t)atol(argv[3]);
	if (argc == 5)
		NT = (size_t)atol(argv[4]);
	c = malloc(NT * sizeof(*c));
	ctx = im->create(NT, t0);
	for (size_t i = 0; i < NT; i++) {
		c[i] = aligned_alloc(64, 128);
		memset(c[i], 0, 128);
		im->init(ctx, c[i]);
		im->arm(ctx, c[i], t0 + 30000 + (uint64_t)(i % 5000));
	}
	if (!strcmp(argv[2], "move") && NT > NT_DEFAULT) {
		/* Random connections, random new expiry 25..35 s: kabench's rearm. */
		for (size_t i = 0; i < k; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			im->arm(ctx, c[x % NT], t0 + 25000 + (x >> 40) % 10000);
		}
	} else if (!strcmp(argv[2], "move")) {
		for (size_t i = 0; i < k; i++)
			im->arm(ctx, c[i % NT], t0 + ((i / NT) & 1 ? 25000 : 35000) + (i % NT));
	} else if (!strcmp(argv[2], "same")) {
		/* 30720 + [0, 1000): inside the level-2 bucket due at t0 + 31744 */
		for (size_t i = 0; i < k; i++)
			im->arm(ctx, c[i % NT], t0 + 30720 + ((i / NT) & 1) * 500 + (i % NT) / 4);
	} else if (!strcmp(argv[2], "later")) {
		/* 30000 + i / NT ms: a step of 1 ms per pass over the timers */
		for (size_t i = 0; i < k; i++)
			im->arm(ctx, c[i % NT], t0 + 30000 + 5000 + i / NT);
	} else if (!strcmp(argv[2], "arm")) {
		for (size_t i = 0; i < k; i++) {
			im->cancel(ctx, c[i % NT]);
			im->arm(ctx, c[i % NT], t0 + 30000 + (i % NT));
		}
	} else if (!strcmp(argv[2], "cancel")) {
		for (size_t i = 0; i < k; i++) {
			im->arm(ctx, c[i % NT], t0 + 30000 + (i % NT));
			im->cancel(ctx, c[i % NT]);
		}
	} else if (!strcmp(argv[2], "expire")) {
		struct kab_conn **many = malloc(k * sizeof(*many));

		for (size_t i = 0; i < NT; i++)
			im->cancel(ctx, c[i]);
		for (size_t i = 0; i < k; i++) {
			many[i] = calloc(1, 128);
			im->init(ctx, many[i]);
			im->arm(ctx, many[i], t0 + 1 + (i * 7919) % 10000);
		}
		im->advance(ctx, t0 + 12000);
		printf("%zu\n", fired);
		return 0;
	} else {
		return 2;
	}
	printf("%zu\n", k);
	return 0;
}
