/* SPDX-License-Identifier: MIT */
/*
 * ktimer/version.h - the version of the headers, and of the library linked.
 *
 * Semantic versioning: MAJOR changes when the ABI breaks (the shared
 * library's soname is libktimer.so.MAJOR), MINOR when API is added, PATCH
 * for fixes. While MAJOR is 0 the API is still settling and a MINOR release
 * may break it.
 *
 * The macros say which headers a program was compiled against; kt_version()
 * says which library it runs with. A program linked against the shared
 * library can compare the two to catch a stale libktimer.so at startup:
 *
 *	if (kt_version() >> 16 != KT_VERSION_MAJOR)
 *		refuse to start;
 *
 * The CMake build (the library's soname and package version) reads the
 * numbers from this file: it is the one place they are set. Between
 * releases they are the next release's, raised right after each release,
 * so that what is added carries the version that will first have it.
 */
#ifndef KTIMER_VERSION_H
#define KTIMER_VERSION_H

#ifdef __cplusplus
extern "C" {
#endif

/* KT_VERSION_MAJOR, KT_VERSION_MINOR, KT_VERSION_PATCH - the version of these headers. */
#define KT_VERSION_MAJOR 0
#define KT_VERSION_MINOR 3
#define KT_VERSION_PATCH 0

/* KT_VERSION_NUMBER - (MAJOR << 16) | (MINOR << 8) | PATCH: compares with < and >. */
#define KT_VERSION_NUMBER ((KT_VERSION_MAJOR << 16) | (KT_VERSION_MINOR << 8) | KT_VERSION_PATCH)

#define KT__VERSION_STR(x) #x
#define KT__VERSION_XSTR(x) KT__VERSION_STR(x)
/* KT_VERSION_STRING - "MAJOR.MINOR.PATCH". */
#define KT_VERSION_STRING                                                      \
	KT__VERSION_XSTR(KT_VERSION_MAJOR)                                     \
	"." KT__VERSION_XSTR(KT_VERSION_MINOR) "." KT__VERSION_XSTR(KT_VERSION_PATCH)

/**
 * kt_version() - the version of the library this program runs with.
 *
 * Return: KT_VERSION_NUMBER as the library was compiled, which differs from
 * the program's own KT_VERSION_NUMBER when it was built against other
 * headers than the shared library it loaded.
 */
unsigned kt_version(void);

/**
 * kt_version_string() - kt_version() as text.
 *
 * Return: a static "MAJOR.MINOR.PATCH" string (KT_VERSION_STRING as the
 * library was compiled).
 */
const char *kt_version_string(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTIMER_VERSION_H */
