"""Compiler options shared by every target (the one place they are set)."""

# C11 for lib/ and net/. _POSIX_C_SOURCE/_GNU_SOURCE: clock_gettime, epoll,
# accept4 and friends are not part of ISO C.
KT_C_COPTS = [
    "-std=c11",
    "-D_GNU_SOURCE",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wshadow",
    "-Wstrict-prototypes",
    "-Wmissing-prototypes",
    "-O2",
]

# The googletest suites and other C++ around the C core.
KT_CXX_COPTS = [
    "-std=c++17",
    "-Wall",
    "-Wextra",
    "-Werror",
    # googletest's EXPECT_* macros expand to an if/else; under a braceless
    # `if` that is a false positive.
    "-Wno-dangling-else",
    "-O1",
]
