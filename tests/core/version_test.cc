// lib/version.c: the library reports the version its headers declare.
// Includes only the umbrella header: <ktimer/version.h> must come with it.
#include <ktimer/ktimer.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

TEST(Version, NumberPacksMajorMinorPatch) {
	EXPECT_EQ(kt_version(), static_cast<unsigned>(KT_VERSION_NUMBER));
	EXPECT_EQ(kt_version() >> 16, static_cast<unsigned>(KT_VERSION_MAJOR));
	EXPECT_EQ((kt_version() >> 8) & 0xffu, static_cast<unsigned>(KT_VERSION_MINOR));
	EXPECT_EQ(kt_version() & 0xffu, static_cast<unsigned>(KT_VERSION_PATCH));
}

TEST(Version, StringIsMajorDotMinorDotPatch) {
	char want[32];
	std::snprintf(want, sizeof(want), "%d.%d.%d", KT_VERSION_MAJOR, KT_VERSION_MINOR, KT_VERSION_PATCH);
	EXPECT_STREQ(kt_version_string(), want);
	EXPECT_STREQ(KT_VERSION_STRING, want);
}

// Each part fits the byte KT_VERSION_NUMBER gives it, so versions compare
// in order as numbers.
TEST(Version, PartsFitTheirBytes) {
	EXPECT_LT(KT_VERSION_MINOR, 256);
	EXPECT_LT(KT_VERSION_PATCH, 256);
}
