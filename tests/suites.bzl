"""The test suites both builds compile: tests/BUILD loads these lists and
CMakeLists.txt reads them (cmake/KtimerTests.cmake), so a suite added here is
built and run by Bazel and by ctest alike, from the same source files.

Keep one entry per line, `"name": "kind",` (CMake parses the lines, not
Starlark). A suite's source is tests/<name>.cc (googletest), tests/<name>.c
(a plain C program printing "N passed, N failed"), or, for a fuzz corpus X,
tests/fuzz/X_fuzz.cc with tests/fuzz/replay_main.cc run over
tests/fuzz/corpus/X.

The kind says what a suite links beside googletest:
  lib      the library users get (//:ktimer)
  harness  lib + tests/support/harness.h and its clock seam
           (lib/testing/time_source.c)
  paused   harness + paused time (lib/testing/paused.c)
  testing  harness, with the library compiled with KT_TESTING
           (//lib:ktimer_testing: the cross-thread queue's producer hook)
  loop     harness + tests/support/loop_timer.h (a real-clock timer)
  uv, event, uring  that loop adapter and its loop library, + loop_timer.h
  slots    paused + the server's slot ring (net/slots.c)
  http     the server's request parser alone (net/http.c)
"""

# googletest suites, one per module (tests/<name>.cc).
KT_GTEST_SUITES = {
    "time_test": "lib",
    "base_test": "harness",
    "wheel_test": "harness",
    "hrtimer_test": "paused",
    "remote_test": "testing",
    "interval_test": "harness",
    "idle_test": "harness",
    "deadline_test": "harness",
    "call_test": "harness",
    "clock_test": "lib",
    "paused_test": "paused",
    "epoll_test": "loop",
    "version_test": "lib",
    "uv_test": "uv",
    "event_test": "event",
    "uring_test": "uring",
    "linux_compat_test": "harness",
    "granularity_table_test": "lib",
    "lateness_test": "harness",
    "differential_test": "harness",
    "bad_input_test": "harness",
    "remote_threads_test": "harness",
    "slots_test": "slots",
    "http_parser_test": "http",
}

# Plain C programs (tests/<name>.c): the public contract as C11 sees it, and
# a randomized model check of arm, re-arm, cancel and expire (never early,
# once each, within kt_base_max_lateness()), in C so that tools/cross_test
# runs them on the cross targets too.
KT_C_TESTS = {
    "api_c_test": "lib",
    "model_c_test": "lib",
    "uv_c_test": "uv",
}

# Fuzz corpora replayed as regression tests (the fuzzers themselves run
# under clang's libFuzzer: tools/fuzz).
KT_FUZZ_CORPORA = {
    "wheel": "lib",
    "http": "http",
}

# Link options a suite needs in either build.
KT_SUITE_LINKOPTS = {
    "base_test": ["-rdynamic"],  # kt_base_dump() names its callbacks
    "linux_compat_test": ["-lrt"],
}

# Run by Bazel only: they need the server binary (net/httpd, not part of the
# CMake build) or check the source tree with Bazel's tools (tests/BUILD).
KT_BAZEL_ONLY = [
    "httpd_test",
    "httpd_reliability_test",
    "httpd_storm_test",
    "lateness_docs_test",
    "headers_test",
    "uv_compile_fail_test",
]
