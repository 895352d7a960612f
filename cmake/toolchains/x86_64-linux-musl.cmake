# x86_64 with musl libc instead of glibc: Debian's musl-tools (the musl-gcc
# wrapper) and musl-dev. Programs are linked statically (musl's usual
# deployment, and no musl dynamic linker needs to be installed to run the
# tests); the shared library is still built, and runs under musl's dynamic
# linker (/lib/ld-musl-x86_64.so.1, from Debian's musl package) for a
# program that dlopen()s it. The binaries run on the host: no emulator.
#   cmake -S . -B build-musl \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/x86_64-linux-musl.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER musl-gcc)
# musl-gcc wraps the host's gcc and binutils, which are the right ones.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
# musl-gcc has no C++ library: C only. find_package() and find_library()
# must not pick up the host's glibc-built libraries (libuv, libevent, GTest).
set(CMAKE_FIND_ROOT_PATH /usr/lib/musl /usr/lib/x86_64-linux-musl)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
