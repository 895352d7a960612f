/* SPDX-License-Identifier: MIT */
/*
 * tests/support/c_check.h - CHECK() for the plain C test programs
 * (tests/core/api_c_test.c, tests/adapters/uv_c_test.c, tools/check/cross_dlopen.c): each
 * counts its checks, reports a failed one with its file and line and goes
 * on, and ends by printing "N passed, N failed" from these counters. One
 * program, one translation unit: the counters are static.
 */
#ifndef KT_TEST_C_CHECK_H
#define KT_TEST_C_CHECK_H

#include <stdio.h>

static int passed, failed;

#define CHECK(cond)                                                                            \
	do {                                                                                   \
		if (cond) {                                                                    \
			passed++;                                                              \
		} else {                                                                       \
			failed++;                                                              \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
		}                                                                              \
	} while (0)

#endif
