"""Compiler options shared by every target (the one place they are set)."""
load("@rules_cc//cc:defs.bzl", "cc_library", "cc_test")

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

def kt_cc_test(
        name,
        srcs = None,
        deps = ["//:ktimer"],
        unit = True,
        gtest = True,
        size = "small",
        tags = [],
        **kwargs):
    """One test target per module, one line per test where possible.

    Args:
      name: the test's name; its source is tests/<name>.cc unless srcs says.
      srcs: sources, default [name + ".cc"]. A test whose first source is .c
        is compiled with the C copts (the C11 contract test).
      deps: what it links, default the library users get (//:ktimer). Tests
        that need the producer hook link //lib:ktimer_testing instead (never
        both).
      unit: tag "unit": runs under valgrind memcheck in tools/run test.
      gtest: link googletest's main.
      size: Bazel's test size.
      tags: more tags ("tsan": also runs under ThreadSanitizer; "exclusive").
      **kwargs: anything else cc_test takes (data, args, linkopts).
    """
    srcs = srcs or [name + ".cc"]
    is_c = srcs[0].endswith(".c")
    cc_test(
        name = name,
        srcs = srcs,
        copts = KT_C_COPTS if is_c else KT_CXX_COPTS,
        deps = deps + (["//third_party/gtest:gtest_main"] if gtest and not is_c else []),
        size = size,
        tags = tags + (["unit"] if unit else []),
        **kwargs
    )

# KT_PROBES: the USDT probes of lib/probes.h and net/probes.h, by
# --define=ktimer_probes=on (tools/bazel/BUILD).
KT_PROBE_DEFINES = select({
    str(Label("//tools/bazel:probes_on")): ["KT_PROBES"],
    "//conditions:default": [],
})

# A probe's note entry points into the function that holds it: with
# -ffunction-sections (Bazel's -c opt) a program's --gc-sections that drops
# an unused probed function leaves the note pointing into a discarded
# section, which GNU ld refuses. So the probed modules keep one .text
# section each.
KT_PROBE_COPTS = select({
    str(Label("//tools/bazel:probes_on")): ["-fno-function-sections"],
    "//conditions:default": [],
})

def kt_cc_library(name, local_defines = [], **kwargs):
    """A C module of lib/ or net/: cc_library with the shared C copts.

    Args:
      name: the library's name.
      local_defines: its own definitions; the probes' (KT_PROBE_DEFINES) are added.
      **kwargs: anything else cc_library takes.
    """
    cc_library(name = name, copts = KT_C_COPTS + KT_PROBE_COPTS, local_defines = local_defines + KT_PROBE_DEFINES, **kwargs)
