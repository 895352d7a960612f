// lib/wheel.c's design essay carries the granularity table for every
// resolution (as the kernel's timer.c does); this test parses that copy and
// compares each row with the library, and checks the library's rows against
// the design rule (level n: granularity 8^n units, deltas from 63 * 8^(n-1)
// units).
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>

namespace {

struct Row {
	uint64_t gran, lo, hi;
};

// The rows between "table:begin" and "table:end" in lib/wheel.c.
std::map<std::pair<unsigned, unsigned>, Row> parse_essay() {
	std::ifstream in("lib/wheel.c");
	EXPECT_TRUE(in.good()) << "lib/wheel.c not found";
	std::map<std::pair<unsigned, unsigned>, Row> rows;
	std::string line;
	unsigned res = 0;
	bool inside = false;
	while (std::getline(in, line)) {
		if (line.find("table:begin") != std::string::npos)
			inside = true;
		if (line.find("table:end") != std::string::npos)
			break;
		if (!inside)
			continue;
		unsigned r;
		if (sscanf(line.c_str(), " * Resolution %u ms", &r) == 1)
			res = r;
		unsigned lvl;
		unsigned long long g, lo, hi;
		if (res && sscanf(line.c_str(), " *\t%u %llu %llu %llu", &lvl, &g, &lo, &hi) == 4)
			rows[{res, lvl}] = Row{g, lo, hi};
	}
	return rows;
}

} // namespace

TEST(GranularityTable, EssayTableMatchesLibrary) {
	auto rows = parse_essay();
	ASSERT_EQ(rows.size(), 5u * KT_WHEEL_LEVELS) << "a table per resolution, a row per level";
	for (unsigned res : {1u, 2u, 4u, 8u, 16u}) {
		for (unsigned lvl = 0; lvl < KT_WHEEL_LEVELS; lvl++) {
			kt_level_info li;
			ASSERT_EQ(kt_wheel_level_info(res, lvl, &li), 0);
			const Row &r = rows[{res, lvl}];
			EXPECT_EQ(r.gran, li.granularity_ms) << res << "/" << lvl;
			EXPECT_EQ(r.lo, li.min_delay_ms) << res << "/" << lvl;
			EXPECT_EQ(r.hi, li.max_delay_ms) << res << "/" << lvl;
		}
	}
}

TEST(GranularityTable, LibraryFollowsTheDesignRule) {
	for (unsigned res : {1u, 2u, 4u, 8u, 16u}) {
		uint64_t gran = 1, start = 0;
		for (unsigned lvl = 0; lvl < KT_WHEEL_LEVELS; lvl++) {
			kt_level_info li;
			ASSERT_EQ(kt_wheel_level_info(res, lvl, &li), 0);
			EXPECT_EQ(li.granularity_ms, gran * res);
			EXPECT_EQ(li.min_delay_ms, start * res);
			uint64_t next = 63 * gran; // 63 * 8^lvl
			EXPECT_EQ(li.max_delay_ms, next * res - 1);
			// The rounding is under 1/7.875 of any delay on levels >= 1.
			if (lvl > 0) {
				EXPECT_LT(double(li.granularity_ms) / double(li.min_delay_ms), 0.127);
			}
			gran *= 8;
			start = next;
		}
		EXPECT_EQ(kt_wheel_reach_ms(res), start * res);
	}
	// The headline figures: ~24.5 days at 16 ms, ~1.5 days at 1 ms.
	EXPECT_NEAR(double(kt_wheel_reach_ms(16)) / 86400000.0, 24.5, 0.05);
	EXPECT_NEAR(double(kt_wheel_reach_ms(1)) / 86400000.0, 1.53, 0.01);
}
