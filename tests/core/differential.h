// tests/core/differential.h: what the differential suites (differential_test,
// differential_mixed_test) share: the seed of a run, which KT_DIFF_SEED
// overrides to rerun a failure, and the operation counts, which
// KT_DIFF_SCALE divides (valgrind runs use it).
#ifndef KTIMER_TESTS_CORE_DIFFERENTIAL_H
#define KTIMER_TESTS_CORE_DIFFERENTIAL_H

#include <cstdint>
#include <cstdlib>

namespace kt_diff {

// The seed of a run: KT_DIFF_SEED when set, else `dflt`.
inline uint64_t seed_from_env(uint64_t dflt) {
	const char *s = getenv("KT_DIFF_SEED");
	return s ? strtoull(s, nullptr, 0) : dflt;
}

// KT_DIFF_SCALE=k divides the operation counts.
inline uint64_t ops(uint64_t n) {
	const char *s = getenv("KT_DIFF_SCALE");
	uint64_t k = s ? strtoull(s, nullptr, 0) : 1;
	return n / (k ? k : 1);
}

} // namespace kt_diff

#endif
