# 32-bit x86 with glibc (ILP32: struct kt_timer is 32 bytes, not 48), from
# Debian's gcc-i686-linux-gnu and libc6-dev-i386-cross.
#   cmake -S . -B build-i686 \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/i686-linux-gnu.cmake
#
# How ctest runs the programs: an x86_64 kernel with IA-32 emulation runs
# i686 code itself, but the 32-bit dynamic linker and libc live under the
# cross sysroot, so the programs are started through that dynamic linker
# (/usr/i686-linux-gnu/lib/ld-linux.so.2 --library-path ...). Where it
# cannot run (another host, or a kernel without IA-32 emulation), qemu-user
# (qemu-i386) is used as for the other targets; note that Debian 12's
# qemu-i386 (7.2) hangs in pthread_join() with this glibc (2.36), so the
# tests that start threads only pass natively.
set(CMAKE_SYSTEM_PROCESSOR i686)
set(KTIMER_CROSS_TRIPLET i686-linux-gnu)
set(KTIMER_CROSS_QEMU qemu-i386)
if(NOT DEFINED CMAKE_CROSSCOMPILING_EMULATOR)
	set(_kt_i686_ld "/usr/${KTIMER_CROSS_TRIPLET}/lib/ld-linux.so.2")
	if(EXISTS "${_kt_i686_ld}")
		# The dynamic linker is itself an i686 program: if it runs, the
		# kernel runs i686 code.
		execute_process(COMMAND "${_kt_i686_ld}" --version
			RESULT_VARIABLE _kt_i686_rc OUTPUT_QUIET ERROR_QUIET)
		if(_kt_i686_rc EQUAL 0)
			set(CMAKE_CROSSCOMPILING_EMULATOR
				"${_kt_i686_ld};--library-path;/usr/${KTIMER_CROSS_TRIPLET}/lib")
		endif()
	endif()
endif()
include("${CMAKE_CURRENT_LIST_DIR}/debian-cross.cmake")
