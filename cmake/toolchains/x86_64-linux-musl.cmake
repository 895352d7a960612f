# x86_64 with musl libc instead of glibc: Debian's musl-tools (the musl-gcc
# wrapper) and musl-dev. The binaries run on the host: no emulator.
#   cmake -S . -B build-musl \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/x86_64-linux-musl.cmake
# Programs are linked dynamically by default and run under musl's dynamic
# linker (/lib/ld-musl-x86_64.so.1, Debian's musl package). For static
# programs, musl's usual deployment, add
#   -DKTIMER_SHARED=OFF -DCMAKE_EXE_LINKER_FLAGS=-static
# (a static program cannot link the shared library).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
# musl-gcc wraps the host's gcc and binutils (the right ones for x86_64)
# with musl's headers, start files and libc. Debian has no musl C++
# compiler; one that a musl cross toolchain installs is used, and without
# it C++ is left not found, so that a build looking for it
# (check_language(CXX)) skips its C++ rather than taking the host's g++,
# whose programs would mix glibc's libstdc++ with this libc.
set(CMAKE_C_COMPILER musl-gcc)
find_program(KTIMER_MUSL_CXX NAMES x86_64-linux-musl-g++)
if(KTIMER_MUSL_CXX)
	set(CMAKE_CXX_COMPILER "${KTIMER_MUSL_CXX}")
else()
	set(CMAKE_CXX_COMPILER CMAKE_CXX_COMPILER-NOTFOUND)
endif()
# find_package() and find_library() must not pick up the host's
# glibc-built libraries (libuv, libevent, GTest).
set(CMAKE_FIND_ROOT_PATH /usr/lib/musl /usr/lib/x86_64-linux-musl)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
