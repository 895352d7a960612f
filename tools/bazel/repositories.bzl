"""Everything ktimer needs from outside, offline: for this repository and its users.

In a WORKSPACE that declares ktimer (local_repository or any other way):

    load("@ktimer//tools/bazel:repositories.bzl", "ktimer_repositories")
    ktimer_repositories()

then depend on "@ktimer//:ktimer". This repository's own WORKSPACE makes the
same call, so the two cannot drift apart.

Why stand-ins: Bazel 4.2.3 (Debian's bazel-bootstrap) fetches rules_cc,
rules_java and remote_coverage_tools even for a plain cc_test, and the
machines this project builds on reach no network but Debian's archive.
Debian's bazel-rules-cc (0.0.4) is too new for Bazel 4.2.3 and fails to load.
So each stand-in is a repository whose few files the rule below writes
itself: nothing is downloaded, and nothing is read from a path relative to
the calling workspace. @platforms is the one real repository, from Debian's
bazel-platforms package.

A repository the caller already declared is left alone, so call this after
your own declarations if you bring a real rules_cc.
"""

# The native C/C++ rules under the names rules_cc gives them.
_RULES_CC_DEFS = """\"\"\"Stand-in for rules_cc (ktimer_repositories): Bazel's native C/C++ rules.\"\"\"

cc_binary = native.cc_binary
cc_import = native.cc_import
cc_library = native.cc_library
cc_proto_library = native.cc_proto_library
cc_test = native.cc_test
cc_toolchain = native.cc_toolchain
cc_toolchain_suite = native.cc_toolchain_suite
fdo_prefetch_hints = native.fdo_prefetch_hints
fdo_profile = native.fdo_profile
objc_import = native.objc_import
objc_library = native.objc_library
"""

# The native Java rules under the names rules_java gives them.
_RULES_JAVA_DEFS = """\"\"\"Stand-in for rules_java (ktimer_repositories): Bazel's native Java rules.\"\"\"

java_binary = native.java_binary
java_import = native.java_import
java_library = native.java_library
java_runtime = native.java_runtime
java_test = native.java_test
java_toolchain = native.java_toolchain
"""

# Coverage is not collected through Bazel here: both tools are empty.
_COVERAGE_BUILD = """# Stand-in for remote_coverage_tools (ktimer_repositories).
filegroup(
    name = "coverage_report_generator",
    visibility = ["//visibility:public"],
)

filegroup(
    name = "lcov_merger",
    visibility = ["//visibility:public"],
)
"""

_STAND_INS = {
    "rules_cc": {
        "BUILD": "# Stand-in for rules_cc (ktimer_repositories).\n",
        "cc/BUILD": "",
        "cc/defs.bzl": _RULES_CC_DEFS,
    },
    "rules_java": {
        "BUILD": "# Stand-in for rules_java (ktimer_repositories).\n",
        "java/BUILD": "",
        "java/defs.bzl": _RULES_JAVA_DEFS,
    },
    "remote_coverage_tools": {
        "BUILD": _COVERAGE_BUILD,
    },
}

def _stand_in_impl(rctx):
    rctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % rctx.name)
    for path, content in rctx.attr.files.items():
        rctx.file(path, content, executable = False)

# A repository made of the files given inline: nothing to fetch.
_stand_in = repository_rule(
    implementation = _stand_in_impl,
    attrs = {"files": attr.string_dict(mandatory = True)},
)

_DEBIAN_PLATFORMS = "/usr/share/bazel/tools/platforms"

def _debian_platforms_impl(rctx):
    src = rctx.path(rctx.attr.path)
    if not src.exists:
        fail("ktimer: @platforms comes from Debian's bazel-platforms package, " +
             "but %s is missing (apt-get install bazel-platforms)" % rctx.attr.path)
    for child in src.readdir():
        rctx.symlink(child, child.basename)

# @platforms from Debian's package, with a clear error if it is not installed.
_debian_platforms = repository_rule(
    implementation = _debian_platforms_impl,
    attrs = {"path": attr.string(default = _DEBIAN_PLATFORMS)},
    local = True,
)

def ktimer_repositories():
    """Declares rules_cc, rules_java, remote_coverage_tools and platforms, offline.

    Each is skipped if the calling WORKSPACE already declared it.
    """
    for name, files in _STAND_INS.items():
        if not native.existing_rule(name):
            _stand_in(name = name, files = files)
    if not native.existing_rule("platforms"):
        _debian_platforms(name = "platforms")
