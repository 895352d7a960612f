// SPDX-License-Identifier: MIT
/*
 * tools/gen/wheel_table.c - print the wheel's level/granularity/range table for
 * every resolution, as the comment block that lib/wheel.c's design essay
 * carries between "table:begin" and "table:end" (as the kernel's timer.c
 * carries its own). tests/core/granularity_table_test.cc checks that copy against
 * the library, so the essay cannot drift from the code.
 *
 * With --lateness: the Markdown tables of docs/LATENESS.md (between its
 * "levels:begin"/"levels:end" and "lateness:begin"/"lateness:end" markers):
 * per level, which delays armed now can land there and how late they can
 * fire; per common delay, the worst lateness over every arming instant.
 * tests/core/lateness_docs_test.sh compares the page with this output, and
 * tests/core/lateness_test.cc the numbers with kt_base_max_lateness().
 */
#include <ktimer/ktimer.h>

#include <stdio.h>
#include <string.h>

static void human(char *buf, size_t len, uint64_t ms)
{
	static const struct {
		const char *unit;
		double ms;
	} units[] = {{"d", 86400000.0}, {"h", 3600000.0}, {"min", 60000.0}, {"s", 1000.0}};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if ((double)ms >= units[i].ms) {
			snprintf(buf, len, "%.3g %s", (double)ms / units[i].ms, units[i].unit);
			return;
		}
	}
	snprintf(buf, len, "%llu ms", (unsigned long long)ms);
}

/*
 * The worst lateness of a delay @d over every arming instant, from the
 * level table alone (kt_wheel_level_info()'s description): armed at phase p
 * (now % res) with the clock read on a millisecond (mid = 0) or mid-way
 * (mid = 1), the expiry is ms = now + mid + d and the delay from the next
 * tick d + p + mid - 1; the level that holds it rounds ms up to its
 * granularity G. Over all instants with that phase, ms % G takes every
 * value congruent to (p + mid + d) modulo res; the worst is the smallest
 * positive one, r, giving G - r, plus mid (lateness counts from now + d).
 * Returns UINT64_MAX beyond the wheel's reach (not tabulated).
 */
static uint64_t worst_lateness(unsigned res, uint64_t d)
{
	uint64_t worst = 0;

	for (uint64_t p = 0; p < res; p++) {
		for (uint64_t mid = 0; mid <= 1; mid++) {
			uint64_t rel = d + p + mid, late;
			struct kt_level_info li = {0, 0, 0};
			unsigned lvl;

			if (rel == 0) {
				late = res; /* due already: the next tick, a whole tick away */
			} else {
				for (lvl = 0; lvl < KT_WHEEL_LEVELS; lvl++) {
					kt_wheel_level_info(res, lvl, &li);
					if (rel - 1 <= li.max_delay_ms)
						break;
				}
				if (lvl == KT_WHEEL_LEVELS)
					return UINT64_MAX;
				late = li.granularity_ms - ((rel - 1) % res + 1) + mid;
			}
			if (late > worst)
				worst = late;
		}
	}
	return worst;
}

static int lateness_tables(void)
{
	static const uint64_t delays[] = {10,    50,    100,    250,    500,    1000,   2000,   5000,
					  10000, 30000, 60000, 120000, 300000, 600000, 3600000};
	char a[32], e[32];

	puts("<!-- levels:begin (generated: bazel run //tools/gen:wheel_table -- --lateness) -->");
	for (unsigned res = 16; res >= 1; res /= 2) {
		printf("\n**Resolution %u ms**%s\n\n", res, res == 16 ? " (the default)" : "");
		puts("| Level | Granularity | Delay from the next tick | Delays armed now that can land here | Worst lateness |");
		puts("|---:|---:|---|---|---:|");
		for (unsigned lvl = 0; lvl < KT_WHEEL_LEVELS; lvl++) {
			struct kt_level_info li;
			uint64_t lo;

			kt_wheel_level_info(res, lvl, &li);
			lo = li.min_delay_ms + 1 > res ? li.min_delay_ms + 1 - res : 0;
			human(a, sizeof(a), li.granularity_ms);
			printf("| %u | %s | %llu .. %llu ms | %llu .. %llu ms | %llu ms |\n", lvl, a,
			       (unsigned long long)li.min_delay_ms, (unsigned long long)li.max_delay_ms,
			       (unsigned long long)lo, (unsigned long long)(li.max_delay_ms + 1),
			       (unsigned long long)li.granularity_ms);
		}
	}
	puts("\n<!-- levels:end -->\n");
	puts("<!-- lateness:begin (generated: bazel run //tools/gen:wheel_table -- --lateness) -->\n");
	puts("| Delay | 1 ms | 2 ms | 4 ms | 8 ms | 16 ms |");
	puts("|---:|---:|---:|---:|---:|---:|");
	for (size_t i = 0; i < sizeof(delays) / sizeof(delays[0]); i++) {
		human(e, sizeof(e), delays[i]);
		if (delays[i] < 1000)
			printf("| %llu ms |", (unsigned long long)delays[i]);
		else
			printf("| %llu ms (%s) |", (unsigned long long)delays[i], e);
		for (unsigned res = 1; res <= 16; res *= 2) {
			uint64_t w = worst_lateness(res, delays[i]);

			if (w == UINT64_MAX)
				return 1;
			printf(" %llu |", (unsigned long long)w);
		}
		putchar('\n');
	}
	puts("\n<!-- lateness:end -->");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--lateness") == 0)
		return lateness_tables();
	if (argc > 1) {
		fprintf(stderr, "usage: wheel_table [--lateness]\n");
		return 2;
	}
	for (unsigned res = 16; res >= 1; res /= 2) {
		char reach[32];

		human(reach, sizeof(reach), kt_wheel_reach_ms(res));
		printf(" * Resolution %u ms (reach %llu ms, about %s):\n *\n", res,
		       (unsigned long long)kt_wheel_reach_ms(res), reach);
		printf(" *\tLevel  Granularity    Shortest      Longest  Range\n");
		printf(" *\t              (ms)        (ms)         (ms)\n");
		for (unsigned lvl = 0; lvl < KT_WHEEL_LEVELS; lvl++) {
			struct kt_level_info li;
			char g[32], lo[32], hi[32];

			kt_wheel_level_info(res, lvl, &li);
			human(g, sizeof(g), li.granularity_ms);
			human(lo, sizeof(lo), li.min_delay_ms);
			human(hi, sizeof(hi), li.max_delay_ms + 1);
			printf(" *\t%5u %12llu %11llu %12llu  %s .. %s, buckets of %s\n", lvl,
			       (unsigned long long)li.granularity_ms, (unsigned long long)li.min_delay_ms,
			       (unsigned long long)li.max_delay_ms, lo, hi, g);
		}
		if (res > 1)
			printf(" *\n");
	}
	return 0;
}
