// SPDX-License-Identifier: MIT
/*
 * tools/kabench/icount_ops.c - one operation repeated K times, for
 * valgrind --tool=callgrind --toggle-collect=<function> (see tools/icount).
 *
 *   icount_ops IMPL OP K      IMPL: ktimer | heap
 *                             OP:   move | same | cancel | expire
 *
 * move:   re-arm a pending timer into another bucket (expiry alternates
 *         between now + 25 s and now + 35 s)
 * same:   re-arm a pending timer within its bucket (expiry moves by 1 ms
 *         inside one 1.024 s level-2 bucket)
 * cancel: delete a pending timer (re-armed outside the measured function)
 * expire: fire timers (K timers spread over 1..10 s, one advance)
 *
 * Prints the number of measured operations; tools/icount divides the
 * instructions callgrind counted inside the function by it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ktimer/ktimer.h>

#include "tools/kabench/kabench.h"

#define NT 1024

static size_t fired;

void kab_fired(struct kab_conn *c)
{
	(void)c;
	fired++;
}

int main(int argc, char **argv)
{
	const struct kab_impl *im;
	struct kab_conn *c[NT];
	const uint64_t t0 = 1 << 20; /* a multiple of the 1.024 s bucket */
	size_t k;
	void *ctx;

	if (argc != 4) {
		fprintf(stderr, "usage: icount_ops ktimer|heap move|same|cancel|expire K\n");
		return 2;
	}
	im = !strcmp(argv[1], "ktimer") ? &kab_ktimer : &kab_heap;
	k = (size_t)atol(argv[3]);
	ctx = im->create(NT, t0);
	for (int i = 0; i < NT; i++) {
		c[i] = calloc(1, 128);
		im->init(ctx, c[i]);
		im->arm(ctx, c[i], t0 + 30000 + (uint64_t)i);
	}
	if (!strcmp(argv[2], "move")) {
		for (size_t i = 0; i < k; i++)
			im->arm(ctx, c[i % NT], t0 + ((i / NT) & 1 ? 25000 : 35000) + (i % NT));
	} else if (!strcmp(argv[2], "same")) {
		/* 30720 + [0, 1000): inside the level-2 bucket due at t0 + 31744 */
		for (size_t i = 0; i < k; i++)
			im->arm(ctx, c[i % NT], t0 + 30720 + ((i / NT) & 1) * 500 + (i % NT) / 4);
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
