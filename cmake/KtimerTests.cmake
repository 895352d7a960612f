# cmake/KtimerTests.cmake - the unit tests, built from the lists Bazel's
# tests/*/BUILD load (tests/suites.bzl) and run by ctest (KTIMER_TESTS):
#
#   - the googletest suites (the system's GTest, find_package(GTest):
#     Debian's libgtest-dev), one ctest test per test case
#     (gtest_discover_tests) - or, without googletest or a C++ compiler, one
#     skipped test saying so;
#   - the C contract tests (tests/*/*_c_test.c: plain C programs that print
#     "N passed, N failed"), which need neither;
#   - the fuzz corpora replayed (tests/fuzz/replay_main.cc), which need a
#     C++ compiler only.
#
# Suites of kind "lib" (and the C tests, the corpora) link the library users
# get, ktimer::ktimer - the shared library when it is built. The others use
# internal names (kt__*) and test-only seams and link test-only static
# libraries made here from the library's own objects: ktimer_test_core (the
# objects of libktimer), ktimer_testing (the sources again with KT_TESTING,
# Bazel's //lib:ktimer_testing), ktimer_test_seams (lib/testing/*.c). None
# of them is installed or exported.
#
# A suite that needs what this machine lacks (a loop library, googletest)
# is registered as a test that exits 77, ctest's skip code here, with the
# reason; a googletest case that calls GTEST_SKIP() (io_uring unavailable)
# is reported as skipped. CMAKE_DISABLE_FIND_PACKAGE_GTest=ON leaves the
# googletest suites out (a cross build whose target has no googletest).
#
# Bazel-only (tests/suites.bzl's KT_BAZEL_ONLY): the tests of the server
# (net/httpd is not part of the CMake build) and the shell checks of the
# source tree.

set(_kt_suites "${PROJECT_SOURCE_DIR}/tests/suites.bzl")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_kt_suites}")

# ktimer_read_suites(DICT NAMES KINDS [LAYERS]): the `"layer/name": "kind",`
# (or `"name": "kind",`) lines of the dictionary DICT in tests/suites.bzl;
# LAYERS gets each entry's folder under tests/ ("core", "adapters", "net").
function(ktimer_read_suites dict names_out kinds_out)
	file(STRINGS "${_kt_suites}" lines)
	set(in OFF)
	set(names)
	set(kinds)
	set(layers)
	foreach(line IN LISTS lines)
		if(line MATCHES "^${dict} = [{]")
			set(in ON)
		elseif(in AND line MATCHES "^[}]")
			set(in OFF)
		elseif(in AND line MATCHES "^[ ]+\"(([a-z]+)/)?([a-z0-9_]+)\": \"([a-z0-9_]+)\",")
			list(APPEND layers "${CMAKE_MATCH_2}")
			list(APPEND names "${CMAKE_MATCH_3}")
			list(APPEND kinds "${CMAKE_MATCH_4}")
		endif()
	endforeach()
	if(NOT names)
		message(FATAL_ERROR "tests/suites.bzl: no entries in ${dict}")
	endif()
	set(${names_out} "${names}" PARENT_SCOPE)
	set(${kinds_out} "${kinds}" PARENT_SCOPE)
	if(ARGC GREATER 3)
		set(${ARGV3} "${layers}" PARENT_SCOPE)
	endif()
endfunction()

# The link options of KT_SUITE_LINKOPTS, as KTIMER_LINKOPTS_<name>.
file(STRINGS "${_kt_suites}" _kt_lines)
set(_kt_in OFF)
foreach(_kt_line IN LISTS _kt_lines)
	if(_kt_line MATCHES "^KT_SUITE_LINKOPTS = [{]")
		set(_kt_in ON)
	elseif(_kt_in AND _kt_line MATCHES "^[}]")
		set(_kt_in OFF)
	elseif(_kt_in AND _kt_line MATCHES "^[ ]+\"([a-z0-9_]+)\": \\[(.*)\\],")
		set(_kt_name "${CMAKE_MATCH_1}")
		string(REGEX MATCHALL "\"[^\"]*\"" _kt_opts "${CMAKE_MATCH_2}")
		string(REPLACE "\"" "" _kt_opts "${_kt_opts}")
		set(KTIMER_LINKOPTS_${_kt_name} ${_kt_opts})
	endif()
endforeach()

ktimer_read_suites(KT_GTEST_SUITES _kt_gtest_names _kt_gtest_kinds _kt_gtest_layers)
ktimer_read_suites(KT_C_TESTS _kt_c_names _kt_c_kinds _kt_c_layers)
ktimer_read_suites(KT_FUZZ_CORPORA _kt_corpus_names _kt_corpus_kinds)

# ktimer_skip_test(NAME REASON): a test that reports REASON and is skipped.
function(ktimer_skip_test name reason)
	add_test(NAME ${name} COMMAND sh -c "echo \"skipped: $1\"; exit 77" sh "${reason}")
	set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS skipped)
endfunction()

# ---- the test-only libraries -------------------------------------------------
# ktimer_test_c_library(NAME SOURCES... [DEFINES d...] [LINK l...]): a static
# library of C sources with the project's options (never installed).
function(ktimer_test_c_library name)
	cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;DEFINES;LINK")
	add_library(${name} STATIC ${arg_SOURCES})
	set_target_properties(${name} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
	target_compile_definitions(${name} PRIVATE _GNU_SOURCE ${arg_DEFINES})
	target_compile_options(${name} PRIVATE ${KTIMER_C_OPTIONS})
	target_include_directories(${name} PUBLIC "${PROJECT_SOURCE_DIR}/include" "${PROJECT_SOURCE_DIR}")
	target_link_libraries(${name} PUBLIC ${arg_LINK})
endfunction()

# ktimer_test_core(NAME LIB): an archive of library LIB's own objects,
# internal names global - LIB_static's (before their localization) when it
# is built, else LIB_shared's.
function(ktimer_test_core name lib)
	if(TARGET ${lib}_static)
		add_library(${name} STATIC $<TARGET_OBJECTS:${lib}_static>)
	else()
		add_library(${name} STATIC $<TARGET_OBJECTS:${lib}_shared>)
	endif()
	set_target_properties(${name} PROPERTIES LINKER_LANGUAGE C)
	target_include_directories(${name} PUBLIC "${PROJECT_SOURCE_DIR}/include" "${PROJECT_SOURCE_DIR}")
	target_link_libraries(${name} PUBLIC Threads::Threads ${CMAKE_DL_LIBS})
endfunction()
ktimer_test_core(ktimer_test_core ktimer)
set(_kt_core_defines)
if(KTIMER_DEBUG)
	list(APPEND _kt_core_defines KT_DEBUG)
endif()
# Bazel's //lib:ktimer_testing: the cross-thread queue's producer hook
# (lib/testing/hooks.h).
ktimer_test_c_library(ktimer_testing SOURCES ${KTIMER_CORE_SOURCES}
	DEFINES KT_TESTING ${_kt_core_defines} LINK Threads::Threads ${CMAKE_DL_LIBS})
# The clock seam and paused time; linked before whichever core a test links.
ktimer_test_c_library(ktimer_test_seams SOURCES lib/testing/time_source.c lib/testing/paused.c)
# The server's slot ring and request parser (net/, whose tests need no server).
ktimer_test_c_library(ktimer_test_net_slots SOURCES net/slots.c)
ktimer_test_c_library(ktimer_test_net_http SOURCES net/http.c)

# ktimer_test_kind_libs(KIND OUT): what a suite of KIND links, or OUT is
# "skip:REASON".
function(ktimer_test_kind_libs kind out)
	set(harness ktimer_test_seams ktimer_test_core)
	if(kind STREQUAL "lib" AND " ${CMAKE_EXE_LINKER_FLAGS} " MATCHES " -static ")
		# Programs linked -static (a musl toolchain's) cannot take the
		# shared library: the static one, or the shared one's objects.
		if(TARGET ktimer_static)
			set(libs ktimer_static)
		else()
			set(libs ktimer_test_core)
		endif()
	elseif(kind STREQUAL "lib")
		set(libs ktimer::ktimer)
	elseif(kind MATCHES "^(harness|paused|loop)$")
		set(libs ${harness})
	elseif(kind STREQUAL "testing")
		set(libs ktimer_test_seams ktimer_testing)
	elseif(kind STREQUAL "slots")
		set(libs ktimer_test_net_slots ${harness})
	elseif(kind STREQUAL "http")
		set(libs ktimer_test_net_http)
	elseif(kind IN_LIST KTIMER_LOOP_ADAPTERS)
		if(kind IN_LIST KTIMER_BUILT_ADAPTERS)
			set(libs ktimer::${kind} ktimer::ktimer)
		elseif(kind IN_LIST KTIMER_ADAPTERS)
			set(libs "skip:the ${kind} adapter is not built: <${KTIMER_LOOP_${kind}_HEADER}> or lib${KTIMER_LOOP_${kind}_LIB} not found")
		else()
			set(libs "skip:the ${kind} adapter is not built: not in KTIMER_ADAPTERS")
		endif()
	else()
		message(FATAL_ERROR "tests/suites.bzl: unknown kind '${kind}'")
	endif()
	set(${out} "${libs}" PARENT_SCOPE)
endfunction()

# ---- the C contract tests --------------------------------------------------------
foreach(_kt_name _kt_kind _kt_layer IN ZIP_LISTS _kt_c_names _kt_c_kinds _kt_c_layers)
	ktimer_test_kind_libs(${_kt_kind} _kt_libs)
	if(_kt_libs MATCHES "^skip:(.*)")
		ktimer_skip_test(${_kt_name} "${CMAKE_MATCH_1}")
		continue()
	endif()
	add_executable(${_kt_name} tests/${_kt_layer}/${_kt_name}.c)
	set_target_properties(${_kt_name} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF
		RUNTIME_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/tests")
	target_compile_definitions(${_kt_name} PRIVATE _GNU_SOURCE)
	target_compile_options(${_kt_name} PRIVATE ${KTIMER_C_OPTIONS})
	target_include_directories(${_kt_name} PRIVATE "${PROJECT_SOURCE_DIR}") # tests/support/c_check.h
	target_link_libraries(${_kt_name} PRIVATE ${_kt_libs} Threads::Threads ${KTIMER_LINKOPTS_${_kt_name}})
	add_test(NAME ${_kt_name} COMMAND ${_kt_name} WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}")
	set_tests_properties(${_kt_name} PROPERTIES TIMEOUT 300 LABELS "c")
endforeach()

# ---- C++: the googletest suites and the fuzz corpora --------------------------------
# A C++ compiler that builds programs for the target: a toolchain file for
# a C-only target (musl-gcc has no C++ library of its own) may leave the
# host's g++ to be found, whose programs do not link there.
include(CheckLanguage)
check_language(CXX)
set(_kt_no_cxx "no C++ compiler")
set(_kt_cxx OFF)
if(CMAKE_CXX_COMPILER)
	set(_kt_cxx ON)
	enable_language(CXX)
	include(CheckCXXSourceCompiles)
	check_cxx_source_compiles([[
#include <stdexcept>
#include <string>
int main(int argc, char **argv)
{
	std::string s(static_cast<size_t>(argc), 'x');
	if (s.size() > 100)
		throw std::runtime_error(argv[0]);
	return 0;
}]] KTIMER_CXX_LINKS)
	# The C compiler's libraries must be the C++ compiler's too (musl-gcc
	# links /usr/lib/x86_64-linux-musl, the host's g++ glibc): a test
	# program mixes the two.
	set(_kt_other_libc)
	foreach(d IN LISTS CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
		if(NOT d IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
			set(_kt_other_libc "${d}")
		endif()
	endforeach()
	if(NOT KTIMER_CXX_LINKS OR _kt_other_libc)
		set(_kt_no_cxx "the C++ compiler (${CMAKE_CXX_COMPILER}) does not link programs for this target")
		if(_kt_other_libc)
			string(APPEND _kt_no_cxx " (it does not search ${_kt_other_libc}, where the C compiler's libraries are)")
		endif()
		set(_kt_cxx OFF)
	endif()
endif()
if(_kt_cxx)
	set(_kt_cxx_options -Wall -Wextra -Wno-dangling-else)
	if(KTIMER_WERROR)
		list(APPEND _kt_cxx_options -Werror)
	endif()
else()
	message(STATUS "ktimer: ${_kt_no_cxx}: the googletest suites and the fuzz corpora are skipped; the C tests run")
endif()

# ktimer_cxx_test_program(NAME SOURCES... LINK libs...)
function(ktimer_cxx_test_program name)
	cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;LINK")
	add_executable(${name} ${arg_SOURCES})
	set_target_properties(${name} PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
		RUNTIME_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/tests")
	# 64-bit file offsets and inode numbers on 32-bit targets too: there,
	# readdir() of the corpus fails with EOVERFLOW on a file system with
	# 64-bit inode numbers.
	target_compile_definitions(${name} PRIVATE _FILE_OFFSET_BITS=64)
	target_compile_options(${name} PRIVATE ${_kt_cxx_options})
	target_include_directories(${name} PRIVATE "${PROJECT_SOURCE_DIR}/include" "${PROJECT_SOURCE_DIR}")
	target_link_libraries(${name} PRIVATE ${arg_LINK} Threads::Threads ${KTIMER_LINKOPTS_${name}})
endfunction()

foreach(_kt_name _kt_kind IN ZIP_LISTS _kt_corpus_names _kt_corpus_kinds)
	set(_kt_test ${_kt_name}_fuzz_corpus_test)
	ktimer_test_kind_libs(${_kt_kind} _kt_libs)
	if(NOT _kt_cxx)
		ktimer_skip_test(${_kt_test} "${_kt_no_cxx}")
		continue()
	elseif(_kt_libs MATCHES "^skip:(.*)")
		ktimer_skip_test(${_kt_test} "${CMAKE_MATCH_1}")
		continue()
	endif()
	ktimer_cxx_test_program(${_kt_test} SOURCES tests/fuzz/replay_main.cc tests/fuzz/${_kt_name}_fuzz.cc LINK ${_kt_libs})
	add_test(NAME ${_kt_test} COMMAND ${_kt_test} "${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${_kt_name}")
	set_tests_properties(${_kt_test} PROPERTIES TIMEOUT 300 LABELS "fuzz_corpus")
endforeach()

if(_kt_cxx)
	find_package(GTest)
endif()
if(NOT _kt_cxx)
	ktimer_skip_test(googletest_suites "${_kt_no_cxx}: the googletest suites are not built")
elseif(NOT TARGET GTest::gtest_main)
	message(STATUS "ktimer: googletest not found (find_package(GTest); Debian: libgtest-dev): the googletest suites are skipped; the C tests and the fuzz corpora run")
	ktimer_skip_test(googletest_suites "googletest not found (find_package(GTest); Debian: libgtest-dev)")
else()
	include(GoogleTest)
	foreach(_kt_name _kt_kind _kt_layer IN ZIP_LISTS _kt_gtest_names _kt_gtest_kinds _kt_gtest_layers)
		ktimer_test_kind_libs(${_kt_kind} _kt_libs)
		if(_kt_libs MATCHES "^skip:(.*)")
			ktimer_skip_test(${_kt_name} "${CMAKE_MATCH_1}")
			continue()
		endif()
		ktimer_cxx_test_program(${_kt_name} SOURCES tests/${_kt_layer}/${_kt_name}.cc LINK ${_kt_libs} GTest::gtest_main)
		# Listed when ctest runs (PRE_TEST): a cross build's test programs
		# run under CMAKE_CROSSCOMPILING_EMULATOR, not at build time. The
		# sources read lib/wheel.c and docs/LATENESS.md from the top.
		gtest_discover_tests(${_kt_name}
			TEST_PREFIX "${_kt_name}."
			WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
			DISCOVERY_MODE PRE_TEST
			DISCOVERY_TIMEOUT 120
			PROPERTIES TIMEOUT 300 LABELS "gtest")
	endforeach()
	# The debug variant (libktimer-debug) exists for its owner-thread
	# checks (KT_DEBUG), which the suites above compile out: the base's
	# suites (core/base_test, core/base_*_test) again, in one program, with
	# KT_DEBUG, against the debug variant's own objects (and the clock seam
	# built to match its struct kt_base), so their debug-build cases run
	# here too and not only in Bazel's asan configuration.
	set(_kt_base_sources)
	foreach(_kt_name _kt_layer IN ZIP_LISTS _kt_gtest_names _kt_gtest_layers)
		if(_kt_layer STREQUAL "core" AND _kt_name MATCHES "^base(_[a-z0-9_]+)?_test$")
			list(APPEND _kt_base_sources tests/core/${_kt_name}.cc)
		endif()
	endforeach()
	if(KTIMER_DEBUG_VARIANT AND NOT KTIMER_DEBUG AND "base_test" IN_LIST _kt_gtest_names)
		ktimer_test_core(ktimer_test_debug_core ktimer_debug)
		ktimer_test_c_library(ktimer_test_debug_seams SOURCES lib/testing/time_source.c lib/testing/paused.c DEFINES KT_DEBUG)
		ktimer_cxx_test_program(base_debug_test SOURCES ${_kt_base_sources}
			LINK ktimer_test_debug_seams ktimer_test_debug_core GTest::gtest_main)
		target_compile_definitions(base_debug_test PRIVATE KT_DEBUG)
		target_link_libraries(base_debug_test PRIVATE ${KTIMER_LINKOPTS_base_test})
		gtest_discover_tests(base_debug_test
			TEST_PREFIX "base_debug_test."
			WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
			DISCOVERY_MODE PRE_TEST
			DISCOVERY_TIMEOUT 120
			PROPERTIES TIMEOUT 300 LABELS "gtest")
	endif()
endif()
