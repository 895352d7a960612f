"""The test suites both builds compile: each layer's BUILD (tests/core,
tests/adapters, tests/net, tests/fuzz) makes its targets from these lists
through tests/defs.bzl, and CMakeLists.txt reads them
(cmake/KtimerTests.cmake), so a suite added here is built and run by Bazel
and by ctest alike, from the same source files.

Keep one entry per line, `"layer/name": "kind",` (CMake parses the lines,
not Starlark). The layer is the folder under tests/: core (the library on
its own), adapters (the library inside an event loop: its epoll helper and
the libuv, libevent and io_uring adapters), net (the server's modules and
the server). A suite's source is tests/<layer>/<name>.cc (googletest),
tests/<layer>/<name>.c (a plain C program printing "N passed, N failed"),
or, for a fuzz corpus X, tests/fuzz/X_fuzz.cc with tests/fuzz/replay_main.cc
run over tests/fuzz/corpus/X. A suite's name is unique across layers.
A module too large for one suite of about 1,000 lines has one suite per
topic, <module>_<topic>_test. What the suites of one layer share is a
header in that layer (tests/core/differential*.h, tests/net/httpd_client.h,
tests/adapters/loop_fixture.h; for Bazel a cc_library of the layer's BUILD,
linked through the kind or tests/defs.bzl's _EXTRA), what several layers
share tests/support/.

The kind says what a suite links beside googletest:
  lib      the library users get (//:ktimer)
  harness  lib + tests/support/harness.h and its clock seam
           (lib/testing/time_source.c)
  paused   harness + paused time (lib/testing/paused.c)
  testing  harness, with the library compiled with KT_TESTING
           (//lib:ktimer_testing: the cross-thread queue's producer hook)
  loop     harness + tests/adapters/loop_fixture.h (a real-clock timer and
           the scenarios every loop adapter runs)
  uv, event, uring  that loop adapter and its loop library, + loop_fixture.h
  slots    paused + the server's slot ring (net/slots.c)
  http     the server's request parser alone (net/http.c)
"""

# googletest suites, one per module or topic (tests/<layer>/<name>.cc).
KT_GTEST_SUITES = {
    "core/time_test": "lib",
    "core/base_test": "harness",
    "core/base_turn_test": "harness",
    "core/base_run_limit_test": "harness",
    "core/wheel_test": "harness",
    "core/wheel_fire_test": "harness",
    "core/wheel_lazy_test": "harness",
    "core/wheel_hotbase_test": "harness",
    "core/hrtimer_test": "paused",
    "core/remote_test": "testing",
    "core/interval_test": "harness",
    "core/idle_test": "harness",
    "core/deadline_test": "harness",
    "core/call_test": "harness",
    "core/clock_test": "lib",
    "core/paused_test": "paused",
    "core/version_test": "lib",
    "core/linux_compat_test": "harness",
    "core/granularity_table_test": "lib",
    "core/lateness_test": "harness",
    "core/differential_test": "harness",
    "core/differential_mixed_test": "harness",
    "core/bad_input_test": "harness",
    "core/remote_threads_test": "harness",
    "adapters/epoll_test": "loop",
    "adapters/uv_test": "uv",
    "adapters/event_test": "event",
    "adapters/uring_test": "uring",
    "net/slots_test": "slots",
    "net/http_parser_test": "http",
}

# Plain C programs (tests/<layer>/<name>.c): the public contract as C11 sees
# it, and a randomized model check of arm, re-arm, cancel and expire (never
# early, once each, within kt_base_max_lateness()), in C so that
# tools/check/cross_test runs them on the cross targets too.
KT_C_TESTS = {
    "core/api_c_test": "lib",
    "core/model_c_test": "lib",
    "core/linux32_c_test": "lib",
    "core/linux32_initial_c_test": "lib",
    "adapters/uv_c_test": "uv",
}

# Fuzz corpora replayed as regression tests (the fuzzers themselves run
# under clang's libFuzzer: tools/check/fuzz).
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
# CMake build) or check the source tree with Bazel's tools.
KT_BAZEL_ONLY = [
    "net/httpd_test",
    "net/httpd_protocol_test",
    "net/httpd_ops_test",
    "net/httpd_reliability_test",
    "net/httpd_storm_test",
    "net/httpd_load_test",
    "net/httpd_lists_test",
    "core/lateness_docs_test",
    "core/headers_test",
    "adapters/uv_compile_fail_test",
]
