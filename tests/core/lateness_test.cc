// kt_base_max_lateness() against real fires on the manual clock: for every
// resolution, arming instants across a tick and delays on both sides of
// every level's edges (and beyond the wheel's reach), the timer fires
// exactly kt_base_max_lateness() after kt_base_now() + delay, never before.
// And docs/LATENESS.md's worst lateness for common delays, checked against
// kt_base_max_lateness() at every arming instant of a whole period, and both
// against the design rule (kt_test::design_place()), so that a failure says
// whether the wheel or the page is wrong; the bound, one granularity of the
// level a timer lands on, held by the fires (lazy timers' pushes too) and
// stated alike on every page that states it.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/harness.h"

namespace {

using kt_test::ManualBase;

struct Probe {
	kt_timer timer{};
	kt_base *base = nullptr;
	uint64_t armed_at = 0, delay = 0, predicted = 0, fired_at = UINT64_MAX;
	int fires = 0;
	static void cb(kt_timer *t) {
		Probe *p = kt_container_of(t, Probe, timer);
		p->fired_at = kt_base_now(p->base);
		p->fires++;
	}
};

std::vector<uint64_t> edge_delays(unsigned res) {
	std::vector<uint64_t> d = {0, 1, 2, res - 1, res, res + 1u, 2u * res, 1000, 30000};
	for (unsigned lvl = 0; lvl < KT_WHEEL_LEVELS; lvl++) {
		kt_level_info li;
		EXPECT_EQ(kt_wheel_level_info(res, lvl, &li), 0);
		for (uint64_t e : {li.min_delay_ms, li.max_delay_ms + 1})
			for (int64_t off = -int64_t(res) - 2; off <= int64_t(res) + 2; off++)
				if (int64_t(e) + off >= 0 && uint64_t(int64_t(e) + off) <= UINT32_MAX)
					d.push_back(uint64_t(int64_t(e) + off));
	}
	// Beyond the reach: parked at the far end, re-queued until due.
	uint64_t reach = kt_wheel_reach_ms(res);
	for (uint64_t x : {uint64_t(0), uint64_t(1), uint64_t(12345), reach / 3, reach})
		if (reach + x <= UINT32_MAX)
			d.push_back(reach + x);
	return d;
}

TEST(MaxLateness, MatchesRealFiresAtEveryResolutionPhaseAndEdge) {
	size_t checked = 0;
	for (unsigned res : {1u, 2u, 4u, 8u, 16u}) {
		std::vector<uint64_t> delays = edge_delays(res);
		// Arming instants across two ticks, at an unaligned start.
		for (uint64_t phase = 0; phase < 2 * res; phase++) {
			ManualBase b(res, 1000000 + 7 * 128 + phase);
			uint64_t now = kt_base_now(b);
			std::vector<Probe> probes(delays.size());
			uint64_t last = 0;
			for (size_t i = 0; i < delays.size(); i++) {
				Probe &p = probes[i];
				p.base = b;
				p.armed_at = now;
				p.delay = delays[i];
				kt_timer_setup(&p.timer, b, Probe::cb, 0);
				p.predicted = kt_base_max_lateness(b, KT_MILLIS(p.delay));
				ASSERT_EQ(kt_timer_arm(&p.timer, KT_MILLIS(p.delay)), 0);
				last = std::max(last, now + p.delay + p.predicted);
			}
			// Step through (kt_base_advance() fires bucket by bucket, the
			// clock at each bucket's due time) in chunks a kt_millis holds.
			while (kt_base_now(b) < last + 1)
				ASSERT_GE(kt_base_advance(b, KT_MILLIS(std::min<uint64_t>(last + 1 - kt_base_now(b), 1u << 30))), 0);
			for (const Probe &p : probes) {
				ASSERT_EQ(p.fires, 1) << "res " << res << " phase " << phase << " delay " << p.delay;
				EXPECT_GE(p.fired_at, p.armed_at + p.delay) << "early: res " << res << " delay " << p.delay;
				EXPECT_EQ(p.fired_at - (p.armed_at + p.delay), p.predicted)
				    << "res " << res << " armed at " << p.armed_at << " delay " << p.delay;
				checked++;
			}
		}
	}
	EXPECT_GT(checked, 5000u);
}

// After turns: the wheel clock has moved with the manual clock, and timers
// armed between turns are placed from it.
TEST(MaxLateness, MatchesRealFiresAfterTurns) {
	ManualBase b(16, 5);
	for (int step = 0; step < 200; step++) {
		ASSERT_GE(kt_base_advance(b, KT_MILLIS(1 + (step * 7) % 23)), 0);
		Probe p;
		p.base = b;
		p.armed_at = kt_base_now(b);
		p.delay = 900 + uint64_t(step) * 3; // across level 0's edge
		kt_timer_setup(&p.timer, b, Probe::cb, 0);
		p.predicted = kt_base_max_lateness(b, KT_MILLIS(p.delay));
		ASSERT_EQ(kt_timer_arm(&p.timer, KT_MILLIS(p.delay)), 0);
		ASSERT_GE(kt_base_advance(b, KT_MILLIS(p.delay + p.predicted)), 0);
		ASSERT_EQ(p.fires, 1);
		EXPECT_EQ(p.fired_at, p.armed_at + p.delay + p.predicted);
	}
}

// The case a level-0-only reading gets wrong: at the default 16 ms
// resolution a 1000 ms timeout armed 9 ms or more into a tick is 1008 ms or
// more from the tick's first ms, past level 0 (63 units): on level 1. Its
// worst lateness over a tick's instants, from real fires and from
// kt_base_max_lateness(), against the design rule (kt_test::design_place()).
TEST(MaxLateness, ThousandMillisecondsCanBeOnLevelOne) {
	uint32_t worst = 0, best = UINT32_MAX;
	uint64_t fired_worst = 0, design_worst = 0;
	for (uint64_t start = 1 << 20; start < (1 << 20) + 128; start++) {
		ManualBase b(16, start);
		uint32_t l = kt_base_max_lateness(b, KT_MILLIS(1000));
		worst = std::max(worst, l);
		best = std::min(best, l);
		design_worst = std::max(design_worst, kt_test::design_place(16, start, start + 1000).fire_ms - (start + 1000));
		Probe p;
		p.base = b;
		kt_timer_setup(&p.timer, b, Probe::cb, 0);
		ASSERT_EQ(kt_timer_arm(&p.timer, KT_MILLIS(1000)), 0);
		ASSERT_GE(kt_base_advance(b, KT_MILLIS(1000 + 256)), 0);
		ASSERT_EQ(p.fires, 1);
		ASSERT_GE(p.fired_at, start + 1000);
		fired_worst = std::max(fired_worst, p.fired_at - (start + 1000));
	}
	ASSERT_EQ(design_worst, 127u) << "the test's own arithmetic: level 1's buckets are 128 ms wide";
	EXPECT_EQ(fired_worst, design_worst)
	    << "at 16 ms resolution a 1000 ms timeout fired at most " << fired_worst
	    << " ms late over a tick's instants; the design rule (level 0 holds delays from the next tick below 63 "
	       "units, 1008 ms; level 1's buckets are 128 ms) and docs/LATENESS.md say up to 127 ms: the wheel "
	    << (fired_worst < design_worst ? "keeps it on level 0 - its level spans" : "misplaces it - its placement")
	    << " (lib/wheel.c) are wrong, not the doc";
	EXPECT_EQ(worst, design_worst) << "kt_base_max_lateness() says at most " << worst
				       << " ms where the design rule and docs/LATENESS.md say 127 ms: the library "
					  "(lib/wheel.c) is wrong, not the doc";
	EXPECT_EQ(best, 0u);
}

TEST(MaxLateness, NullBase) { EXPECT_EQ(kt_base_max_lateness(nullptr, KT_MILLIS(5)), UINT32_MAX); }

// docs/LATENESS.md: "| delay | res 1 | res 2 | ... |" rows between
// "lateness:begin" and "lateness:end", each the worst lateness in ms over
// every arming instant (a clock read mid-millisecond adds at most 1 ms to
// what the manual clock can show).
TEST(MaxLateness, DocsTableMatchesTheLibrary) {
	std::ifstream in("docs/LATENESS.md");
	ASSERT_TRUE(in.good()) << "docs/LATENESS.md not found";
	std::string line;
	bool inside = false;
	std::vector<unsigned> cols;
	size_t rows = 0;
	while (std::getline(in, line)) {
		if (line.find("lateness:begin") != std::string::npos) {
			inside = true;
			continue;
		}
		if (line.find("lateness:end") != std::string::npos)
			break;
		if (!inside || line.rfind("|", 0) != 0)
			continue;
		if (cols.empty()) { // the header: | Delay | 1 ms | 2 ms | ...
			size_t pos = line.find('|', 1);
			unsigned r;
			while (pos != std::string::npos && sscanf(line.c_str() + pos, "| %u ms", &r) == 1) {
				cols.push_back(r);
				pos = line.find('|', pos + 1);
			}
			continue;
		}
		unsigned long long delay;
		if (sscanf(line.c_str(), "| %llu ms", &delay) != 1)
			continue; // the separator row
		size_t pos = line.find('|', 1);
		for (unsigned res : cols) {
			unsigned doc;
			ASSERT_EQ(sscanf(line.c_str() + pos, "| %u", &doc), 1) << line;
			pos = line.find('|', pos + 1);
			// Every arming instant of one period of the coarsest level the
			// delay can reach (all residues of now modulo its granularity).
			uint64_t period = res;
			for (unsigned lvl = 0; lvl < KT_WHEEL_LEVELS; lvl++) {
				kt_level_info li;
				kt_wheel_level_info(res, lvl, &li);
				if (li.min_delay_ms <= delay + res)
					period = li.granularity_ms;
			}
			// The design's worst over the same instants, from the essay's rule.
			period = std::max(period, uint64_t(res) << (3 * kt_test::design_level((delay + res - 1) / res)));
			ManualBase b(res, 1 << 24);
			uint32_t worst = 0;
			uint64_t design = 0;
			for (uint64_t i = 0; i < period; i++) {
				const uint64_t now = kt_base_now(b), expires = now + delay;
				worst = std::max(worst, kt_base_max_lateness(b, KT_MILLIS(delay)));
				design = std::max(design, kt_test::design_place(res, now, expires).fire_ms - expires);
				ASSERT_EQ(kt_base_advance(b, KT_MILLIS(1)), 0);
			}
			// Which side is wrong: the wheel (kt_base_max_lateness() is held
			// to real fires above), or the page (generated from the table).
			const bool doc_is_design = doc >= design && doc <= design + 1;
			if (worst != design)
				ADD_FAILURE() << delay << " ms at " << res << " ms resolution: the wheel fires such a timer up to "
					      << worst << " ms late (kt_base_max_lateness(), which matches real fires), "
					      << (worst > design ? "later than" : "where") << " docs/LATENESS.md says " << doc
					      << " ms and the design rule of lib/wheel.c's essay gives " << design << " ms"
					      << (worst > design ? "" : ": it puts the delay on a finer level than the design")
					      << " - fix the wheel's placement (lib/wheel.c: the level spans)"
					      << (doc_is_design ? ", not docs/LATENESS.md" : ", and regenerate docs/LATENESS.md");
			else if (!doc_is_design)
				ADD_FAILURE() << "docs/LATENESS.md says " << doc << " ms for " << delay << " ms at " << res
					      << " ms resolution; the wheel and the design rule both give " << design << " ms ("
					      << design + 1 << " with a clock read mid-millisecond): the page is stale - "
					      << "regenerate it with bazel run //tools/gen:wheel_table -- --lateness";
		}
		rows++;
	}
	EXPECT_EQ(cols.size(), 5u);
	EXPECT_GE(rows, 10u);
}

} // namespace

// ---- which arm the bound belongs to ----
//
// A re-arm to the absolute expiry a timer already has changes nothing: the
// timer keeps the bucket of the arm that placed it, and that arm's bound.
// At 1 ms resolution a 20,481 ms delay lands on level 3 (512 ms buckets) and
// fires 511 ms late; re-armed to the same expiry 20 ms before it, it still
// does, against kt_base_max_lateness() of about 1 ms for 20 ms. Deleting it
// and arming it again gives the bound of the delay left.
TEST(MaxLateness, ASameExpiryReArmKeepsTheBoundOfTheArmThatPlacedTheTimer) {
	const uint64_t kExpiry = 512 * 40 + 1;
	for (bool rearm_fresh : {false, true}) {
		ManualBase b(1, 0);
		Probe p;
		p.base = b;
		ASSERT_EQ(kt_timer_setup(&p.timer, b, Probe::cb, 0), 0);
		ASSERT_EQ(kt_mod_timer(&p.timer, kExpiry), 0);
		const uint32_t placed_bound = kt_base_max_lateness(b, KT_MILLIS(kExpiry));
		EXPECT_EQ(placed_bound, 511u);
		kt_base_advance(b, KT_MILLIS(kExpiry - 20));
		ASSERT_EQ(p.fires, 0);
		const uint32_t left_bound = kt_base_max_lateness(b, KT_MILLIS(20));
		EXPECT_LT(left_bound, 16u);
		if (rearm_fresh) {
			EXPECT_EQ(kt_timer_delete(&p.timer), 1);
			EXPECT_EQ(kt_mod_timer(&p.timer, kExpiry), 0);
		} else {
			EXPECT_EQ(kt_mod_timer(&p.timer, kExpiry), 1); // changes nothing
		}
		kt_base_advance(b, KT_MILLIS(1000));
		ASSERT_EQ(p.fires, 1);
		ASSERT_GE(p.fired_at, kExpiry); // never early
		if (rearm_fresh)
			EXPECT_LE(p.fired_at - kExpiry, left_bound) << "placed again: the bound of the delay left";
		else
			EXPECT_EQ(p.fired_at - kExpiry, placed_bound) << "the bound of the arm that placed it";
	}
}

// Both headers say so (timer.h at kt_mod_timer(), base.h at
// kt_base_max_lateness()): users read the bound there.
TEST(MaxLateness, BothHeadersSayWhichArmTheBoundBelongsTo) {
	for (const char *path : {"include/ktimer/timer.h", "include/ktimer/base.h"}) {
		std::ifstream in(path);
		ASSERT_TRUE(in.good()) << path << " not found";
		std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
		std::string flat;
		for (char c : text) // join the comment's lines: " * " prefixes and newlines to one space
			if (c == '\n' || c == '*' || c == '\t')
				flat += ' ';
			else
				flat += c;
		std::string one;
		for (char c : flat)
			if (!(c == ' ' && !one.empty() && one.back() == ' '))
				one += c;
		EXPECT_NE(one.find("arm that placed"), std::string::npos) << path;
		EXPECT_NE(one.find("re-arm to the absolute expiry the timer already has"), std::string::npos) << path;
	}
}

// ---- one bound, everywhere ----
//
// Every page that states the bound states the same one: a wheel timer fires
// at most one granularity of the level it lands on after kt_base_now() +
// delay (plus however late the worker runs the wheel). The tests below hold
// the library to it; the last one holds the pages to it.

namespace {

// The level kt_base_dump() names for each pending timer, by its address.
std::map<std::string, unsigned> dumped_levels(kt_base *b) {
	std::map<std::string, unsigned> levels;
	FILE *f = tmpfile();
	if (!f)
		return levels;
	kt_base_dump(b, f);
	rewind(f);
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		const char *l = strstr(line, " level ");
		const char *t = strstr(line, " timer ");
		unsigned lvl;
		char addr[64];
		if (l && t && sscanf(l, " level %u", &lvl) == 1 && sscanf(t, " timer %63s", addr) == 1)
			levels[addr] = lvl;
	}
	fclose(f);
	return levels;
}

std::string address(const void *p) {
	char s[64];
	snprintf(s, sizeof(s), "%p", p);
	return s;
}

} // namespace

// For every resolution, arming instants across two ticks and delays on both
// sides of every level's edges and beyond the wheel's reach (parked at the
// far end): kt_base_max_lateness() and the real fire are at most the
// granularity of the level kt_base_dump() shows the timer on.
TEST(MaxLateness, AtMostOneGranularityOfTheLevelItLandsOn) {
	size_t checked = 0, at_granularity = 0;
	for (unsigned res : {1u, 2u, 4u, 8u, 16u}) {
		std::vector<uint64_t> delays = edge_delays(res);
		for (uint64_t phase = 0; phase < 2 * res; phase++) {
			ManualBase b(res, 1000000 + 7 * 128 + phase);
			uint64_t now = kt_base_now(b);
			std::vector<Probe> probes(delays.size());
			uint64_t last = 0;
			for (size_t i = 0; i < delays.size(); i++) {
				Probe &p = probes[i];
				p.base = b;
				p.armed_at = now;
				p.delay = delays[i];
				kt_timer_setup(&p.timer, b, Probe::cb, 0);
				p.predicted = kt_base_max_lateness(b, KT_MILLIS(p.delay));
				ASSERT_EQ(kt_timer_arm(&p.timer, KT_MILLIS(p.delay)), 0);
				last = std::max(last, now + p.delay + p.predicted);
			}
			std::map<std::string, unsigned> levels = dumped_levels(b);
			std::vector<uint64_t> gran(delays.size());
			for (size_t i = 0; i < delays.size(); i++) {
				auto it = levels.find(address(&probes[i].timer));
				ASSERT_NE(it, levels.end()) << "kt_base_dump() names no level for delay " << delays[i];
				kt_level_info li;
				ASSERT_EQ(kt_wheel_level_info(res, it->second, &li), 0);
				gran[i] = li.granularity_ms;
				EXPECT_LE(probes[i].predicted, gran[i])
				    << "res " << res << " phase " << phase << " delay " << delays[i] << " level " << it->second;
			}
			while (kt_base_now(b) < last + 1)
				ASSERT_GE(kt_base_advance(b, KT_MILLIS(std::min<uint64_t>(last + 1 - kt_base_now(b), 1u << 30))), 0);
			for (size_t i = 0; i < delays.size(); i++) {
				const Probe &p = probes[i];
				ASSERT_EQ(p.fires, 1) << "res " << res << " delay " << p.delay;
				EXPECT_GE(p.fired_at, p.armed_at + p.delay);
				EXPECT_LE(p.fired_at - (p.armed_at + p.delay), gran[i]) << "res " << res << " delay " << p.delay;
				at_granularity += p.fired_at - (p.armed_at + p.delay) == gran[i];
				checked++;
			}
		}
	}
	EXPECT_GT(checked, 5000u);
	EXPECT_GT(at_granularity, 0u); // the bound is reached: nothing tighter holds
}

// KT_TIMER_LAZY: a timer pushed later stays in its bucket and is requeued
// from it; it fires within the bound of a plain timer armed at its last
// re-arm for the time then left (kt_base_max_lateness() then), never early.
TEST(MaxLateness, ALazyTimerPushedLaterKeepsTheBoundOfItsLastReArm) {
	std::mt19937_64 rng(20261207);
	size_t pushes = 0;
	for (int round = 0; round < 3000; round++) {
		unsigned res = 1u << (rng() % 5);
		ManualBase b(res, 1000000 + rng() % 5000);
		Probe p;
		p.base = b;
		ASSERT_EQ(kt_timer_setup(&p.timer, b, Probe::cb, KT_TIMER_LAZY), 0);
		uint64_t delay = rng() % 200000;
		uint32_t bound = kt_base_max_lateness(b, KT_MILLIS(delay));
		ASSERT_EQ(kt_timer_arm(&p.timer, KT_MILLIS(delay)), 0);
		uint64_t expiry = kt_base_now(b) + delay;
		for (int n = int(rng() % 5); n >= 0 && !p.fires; n--) {
			// Some time passes, never beyond the expiry; then a push later.
			ASSERT_GE(kt_base_advance(b, KT_MILLIS(rng() % (expiry - kt_base_now(b) + 1))), 0);
			if (p.fires)
				break;
			uint64_t left = expiry - kt_base_now(b) + 1 + rng() % 200000;
			bound = kt_base_max_lateness(b, KT_MILLIS(left));
			ASSERT_EQ(kt_mod_timer(&p.timer, kt_base_now(b) + left), 1);
			expiry = kt_base_now(b) + left;
			pushes++;
		}
		while (!p.fires && kt_base_now(b) <= expiry + bound)
			ASSERT_GE(kt_base_advance(b, KT_MILLIS(std::min<uint64_t>(expiry + bound + 1 - kt_base_now(b), 1000))), 0);
		ASSERT_EQ(p.fires, 1) << "res " << res << " expiry " << expiry << " bound " << bound;
		EXPECT_GE(p.fired_at, expiry) << "early";
		EXPECT_LE(p.fired_at - expiry, bound) << "res " << res << " expiry " << expiry;
	}
	EXPECT_GT(pushes, 3000u);
}

namespace {

// A page's text as one line: comment prefixes, Markdown emphasis and code
// marks, roff font escapes and line breaks out, runs of spaces as one.
std::string flat_text(const char *path) {
	std::ifstream in(path);
	std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	std::string flat, one;
	for (size_t i = 0; i < text.size(); i++) {
		char c = text[i];
		if (c == '\\' && i + 2 < text.size() && text[i + 1] == 'f') {
			i += 2; // \fB, \fI, \fP, \fR
			continue;
		}
		flat += (c == '\n' || c == '*' || c == '\t' || c == '`' || c == '#') ? ' ' : c;
	}
	for (char c : flat)
		if (!(c == ' ' && !one.empty() && one.back() == ' '))
			one += c;
	return one;
}

} // namespace

// The pages: the README's guarantees, the headers (kt_base_max_lateness(),
// <ktimer/timer.h>'s overview and KT_TIMER_LAZY), the wheel's design essay,
// ktimer(7) (its .in and timer.h's overview), the docs, lateness.bt. Each
// states the bound, and no sentence about a granularity adds a unit or a
// millisecond to it or says it is never reached.
TEST(MaxLateness, EveryPageStatesTheSameBound) {
	const char *pages[] = {
	    "README.md",        "include/ktimer/base.h", "include/ktimer/timer.h", "lib/wheel.c",
	    "man/man7/ktimer.7", "docs/LATENESS.md",     "docs/DESIGN.md",         "docs/LOOPS.md",
	    "docs/RELIABILITY.md", "docs/TRACING.md",    "tools/trace/lateness.bt",
	};
	const char *added[] = {"plus one unit", "+ one unit", "plus a unit", "plus 1 ms", "+ 1 ms",
			       "less than one granularity", "less than one after"};
	for (const char *path : pages) {
		std::string text = flat_text(path);
		ASSERT_FALSE(text.empty()) << path << " not found";
		EXPECT_NE(text.find("at most one granularity of the level"), std::string::npos) << path;
		size_t start = 0;
		while (start < text.size()) {
			size_t end = text.find(". ", start);
			if (end == std::string::npos)
				end = text.size();
			std::string sentence = text.substr(start, end - start);
			if (sentence.find("granularit") != std::string::npos)
				for (const char *a : added)
					EXPECT_EQ(sentence.find(a), std::string::npos) << path << ": \"" << a << "\" in: " << sentence;
			start = end + 2;
		}
	}
}
