# 64-bit Arm with glibc, little-endian: Debian's gcc-aarch64-linux-gnu and
# libc6-dev-arm64-cross; tests run under qemu-user (qemu-aarch64).
#   cmake -S . -B build-aarch64 \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(KTIMER_CROSS_TRIPLET aarch64-linux-gnu)
set(KTIMER_CROSS_QEMU qemu-aarch64)
include("${CMAKE_CURRENT_LIST_DIR}/debian-cross.cmake")
