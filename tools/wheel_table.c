// SPDX-License-Identifier: MIT
/*
 * tools/wheel_table.c - print the wheel's level/granularity/range table for
 * every resolution, as the comment block that lib/wheel.c's design essay
 * carries between "table:begin" and "table:end" (as the kernel's timer.c
 * carries its own). tests/granularity_table_test.cc checks that copy against
 * the library, so the essay cannot drift from the code.
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
