// SPDX-License-Identifier: MIT
/*
 * lib/version.c - the library's own version, as compiled.
 *
 * A function and not only the header's macros: a program built against one
 * version of the headers may load another libktimer.so at run time, and only
 * code inside the library can say which one it got.
 */
#include "ktimer/version.h"

unsigned kt_version(void) { return KT_VERSION_NUMBER; }

const char *kt_version_string(void) { return KT_VERSION_STRING; }
