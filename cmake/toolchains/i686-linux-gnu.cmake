# 32-bit x86 with glibc (ILP32: struct kt_timer is 32 bytes, not 48), from
# Debian's gcc-i686-linux-gnu and libc6-dev-i386-cross. Tests run under
# qemu-user (qemu-i386) with the cross sysroot: an x86_64 host can execute
# i686 code itself, but the 32-bit dynamic linker and libc live under
# /usr/i686-linux-gnu, not where the binaries look for them. A host with
# the i386 libc installed (libc6-i386) may pass
# -DCMAKE_CROSSCOMPILING_EMULATOR= to run them natively.
#   cmake -S . -B build-i686 \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/i686-linux-gnu.cmake
set(CMAKE_SYSTEM_PROCESSOR i686)
set(KTIMER_CROSS_TRIPLET i686-linux-gnu)
set(KTIMER_CROSS_QEMU qemu-i386)
include("${CMAKE_CURRENT_LIST_DIR}/debian-cross.cmake")
