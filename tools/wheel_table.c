// SPDX-License-Identifier: MIT
/*
 * tools/wheel_table.c - print the wheel's level/granularity/range table for
 * every resolution, as the markdown that docs/DESIGN.md publishes.
 * tests/granularity_table_test.cc checks the published copy against the
 * library, so the document cannot drift from the code.
 */
#include <ktimer/ktimer.h>

#include <stdio.h>

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

int main(void)
{
	for (unsigned res = 16; res >= 1; res /= 2) {
		char reach[32];

		human(reach, sizeof(reach), kt_wheel_reach_ms(res));
		printf("\n#### Resolution %u ms (reach %llu ms, about %s)\n\n", res,
		       (unsigned long long)kt_wheel_reach_ms(res), reach);
		printf("| Level | Granularity (ms) | Shortest delay (ms) | Longest delay (ms) | Range |\n");
		printf("|---|---|---|---|---|\n");
		for (unsigned lvl = 0; lvl < KT_WHEEL_LEVELS; lvl++) {
			struct kt_level_info li;
			char g[32], lo[32], hi[32];

			kt_wheel_level_info(res, lvl, &li);
			human(g, sizeof(g), li.granularity_ms);
			human(lo, sizeof(lo), li.min_delay_ms);
			human(hi, sizeof(hi), li.max_delay_ms + 1);
			printf("| %u | %llu | %llu | %llu | %s .. %s, buckets of %s |\n", lvl,
			       (unsigned long long)li.granularity_ms, (unsigned long long)li.min_delay_ms,
			       (unsigned long long)li.max_delay_ms, lo, hi, g);
		}
	}
	return 0;
}
