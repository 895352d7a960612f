# IBM Z with glibc: 64-bit and big-endian, the platform that catches byte
# order assumptions. Debian's gcc-s390x-linux-gnu and libc6-dev-s390x-cross;
# tests run under qemu-user (qemu-s390x).
#   cmake -S . -B build-s390x \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/s390x-linux-gnu.cmake
set(CMAKE_SYSTEM_PROCESSOR s390x)
set(KTIMER_CROSS_TRIPLET s390x-linux-gnu)
set(KTIMER_CROSS_QEMU qemu-s390x)
include("${CMAKE_CURRENT_LIST_DIR}/debian-cross.cmake")
