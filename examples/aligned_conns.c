// SPDX-License-Identifier: MIT
/*
 * examples/aligned_conns.c - connections whose timer node never straddles a
 * cache line, and why calloc() is not enough.
 *
 * A re-arm reads and writes the node (48 bytes on LP64). A node that
 * straddles two 64-byte lines costs a second cache miss on every re-arm of
 * a connection that is not in cache, which is most of them with thousands
 * open. Aligning the member (_Alignas(64)) makes the struct's size a
 * multiple of 64 and puts the node at the start of a line - but only if the
 * struct itself starts on a line, and malloc()/calloc() promise 16 bytes,
 * not 64. So allocate with alignment:
 *
 *	aligned_alloc(64, size)          C11; size a multiple of 64 (it is, here)
 *	posix_memalign(&p, 64, size)     POSIX
 *	mallocx(size, MALLOCX_ALIGN(64)) jemalloc (<jemalloc/jemalloc.h>)
 *
 * This program allocates 2,000 connections each way - and with calloc(),
 * for the contrast: the timer placed first in an array of unaligned
 * structs (about half the nodes straddle), and the aligned struct in a
 * calloc() array (all or none straddle, depending on where the allocator
 * put the array) - counts the nodes that straddle a line, runs a
 * manual-clock base over the aligned ones (every idle deadline fires
 * once), and exits 0 if no node allocated with alignment straddles a line.
 *
 * Builds with Bazel (//examples:aligned_conns) or with any C11 compiler:
 *   cc -std=c11 aligned_conns.c $(pkg-config --cflags --libs ktimer)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* posix_memalign */
#endif
#include <ktimer/ktimer.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE 64
#define CONNS 2000

/* What a server's connection might hold: the timer first, on its own line. */
struct conn {
	_Alignas(LINE) struct kt_timer idle;
	int fd;
	uint32_t bytes_in, bytes_out;
	char peer[46];
	int closed;
};

/* "Place it first" without the alignment: the stride is no multiple of 64. */
struct plain_conn {
	struct kt_timer idle;
	int fd;
	uint32_t bytes_in, bytes_out;
	char peer[46];
	int closed;
};

static int straddles(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p;

	return a / LINE != (a + len - 1) / LINE;
}

static void on_idle(struct kt_timer *t)
{
	struct conn *c = kt_container_of(t, struct conn, idle);

	c->closed++;
}

int main(void)
{
	static struct conn *each[CONNS];
	struct plain_conn *plain;
	struct conn *array, *unaligned;
	int plain_bad = 0, unaligned_bad = 0, array_bad = 0, each_bad = 0, fired = 0, rc = 0;
	struct kt_base_config cfg = {16, KT_CLOCK_MANUAL, 0};
	struct kt_base *base = kt_base_new(&cfg);

	_Static_assert(sizeof(struct conn) % LINE == 0, "an aligned member rounds the size up to lines");
	if (!base)
		return 1;
	/* The contrast: calloc() arrays. */
	plain = calloc(CONNS, sizeof(*plain));
	unaligned = calloc(CONNS, sizeof(*unaligned)); /* 16-byte aligned at best */
	if (!plain || !unaligned)
		return 1;
	for (int i = 0; i < CONNS; i++) {
		plain_bad += straddles(&plain[i].idle, sizeof(plain[i].idle));
		/* By address arithmetic: a member access through a pointer that
		 * breaks the struct's alignment is undefined (UBSan says so). */
		unaligned_bad += straddles((char *)unaligned + i * sizeof(struct conn) + offsetof(struct conn, idle),
					   sizeof(struct kt_timer));
	}
	/* One array, aligned_alloc(): size a multiple of the alignment. */
	array = aligned_alloc(LINE, CONNS * sizeof(*array));
	if (!array)
		return 1;
	memset(array, 0, CONNS * sizeof(*array));
	/* One by one, posix_memalign(). */
	for (int i = 0; i < CONNS; i++) {
		void *p;

		if (posix_memalign(&p, LINE, sizeof(struct conn)) != 0)
			return 1;
		each[i] = memset(p, 0, sizeof(struct conn));
	}
	for (int i = 0; i < CONNS; i++) {
		array_bad += straddles(&array[i].idle, sizeof(array[i].idle));
		each_bad += straddles(&each[i]->idle, sizeof(each[i]->idle));
		kt_timer_setup(&array[i].idle, base, on_idle, 0);
		kt_timer_setup(&each[i]->idle, base, on_idle, 0);
		kt_timer_arm(&array[i].idle, KT_MILLIS(1000 + i));
		kt_timer_arm(&each[i]->idle, KT_MILLIS(1000 + i));
	}
	printf("timer first, calloc() array:         %4d of %d timer nodes straddle a %d-byte line\n", plain_bad,
	       CONNS, LINE);
	printf("_Alignas(64) member, calloc() array: %4d of %d (array at %u mod %d)\n", unaligned_bad, CONNS,
	       (unsigned)((uintptr_t)unaligned % LINE), LINE);
	printf("aligned_alloc() array:               %4d of %d\n", array_bad, CONNS);
	printf("posix_memalign() each:               %4d of %d\n", each_bad, CONNS);
	kt_base_advance(base, KT_MILLIS(1000 + CONNS + 1000));
	for (int i = 0; i < CONNS; i++)
		fired += (array[i].closed == 1) + (each[i]->closed == 1);
	if (array_bad || each_bad || fired != 2 * CONNS)
		rc = 1;
	for (int i = 0; i < CONNS; i++)
		free(each[i]);
	free(array);
	free(unaligned);
	free(plain);
	kt_base_free(base);
	printf("%s: %d idle deadlines fired once each, no aligned node across a line\n", rc ? "FAILED" : "ok", fired);
	return rc;
}
