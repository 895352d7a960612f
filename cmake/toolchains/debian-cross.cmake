# Shared by the Debian cross toolchain files in this directory (not a
# toolchain file itself): the compilers of Debian's gcc-TRIPLET package, the
# target's libraries under /usr/TRIPLET (libc6-dev-ARCH-cross), and - so
# that ctest can run what it builds - qemu-user (Debian's qemu-user package)
# as CMAKE_CROSSCOMPILING_EMULATOR, pointed at the same sysroot with -L so
# that dynamically linked test programs find the target's dynamic linker.
#
# The including file sets CMAKE_SYSTEM_PROCESSOR, KTIMER_CROSS_TRIPLET
# (aarch64-linux-gnu) and KTIMER_CROSS_QEMU (qemu-aarch64), then includes
# this one. Either can be overridden on the command line, e.g.
#   -DKTIMER_CROSS_QEMU=qemu-aarch64-static
# and a machine that runs the target's binaries natively (binfmt_misc, or
# real hardware) may pass -DCMAKE_CROSSCOMPILING_EMULATOR= to run them
# directly.
set(CMAKE_SYSTEM_NAME Linux)

set(KTIMER_CROSS_SYSROOT "/usr/${KTIMER_CROSS_TRIPLET}" CACHE PATH
	"The cross target's libraries and headers (Debian: /usr/TRIPLET)")

# The compilers by their triplet name. CMake derives the binutils (ld,
# objcopy, ar, strip) from the same prefix, so the static library's ld -r
# and objcopy step uses the target's tools, not the host's.
# The C++ compiler (g++-TRIPLET) is only needed by C++ tests. Without it,
# C++ is left not found, so that a build looking for it
# (check_language(CXX)) skips its C++ rather than taking the host's g++.
set(CMAKE_C_COMPILER "${KTIMER_CROSS_TRIPLET}-gcc")
find_program(KTIMER_CROSS_CXX NAMES "${KTIMER_CROSS_TRIPLET}-g++")
if(KTIMER_CROSS_CXX)
	set(CMAKE_CXX_COMPILER "${KTIMER_CROSS_CXX}")
else()
	set(CMAKE_CXX_COMPILER CMAKE_CXX_COMPILER-NOTFOUND)
endif()

# Libraries and headers from the target's tree only; programs (the build's
# own tools) from the host's.
set(CMAKE_FIND_ROOT_PATH "${KTIMER_CROSS_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

if(NOT DEFINED CMAKE_CROSSCOMPILING_EMULATOR)
	find_program(KTIMER_CROSS_QEMU_PATH NAMES "${KTIMER_CROSS_QEMU}" "${KTIMER_CROSS_QEMU}-static")
	if(KTIMER_CROSS_QEMU_PATH)
		set(CMAKE_CROSSCOMPILING_EMULATOR "${KTIMER_CROSS_QEMU_PATH};-L;${KTIMER_CROSS_SYSROOT}")
	endif()
endif()
