#!/usr/bin/env bash
# Every public header compiles on its own, as the first and only include of
# a translation unit, in C11 and in C++11 with the strictest warnings a user
# may build with (-pedantic, and -Wold-style-cast in C++), warnings being
# errors; and <ktimer/linux.h> compiles before or after <sys/param.h>, both
# of which define HZ. Uses the system compilers (CC, CXX; default cc, c++)
# and the system's libuv, libevent and liburing headers.
set -euo pipefail
inc=$(cd "$(dirname "$0")/.." && pwd)/include
[ -f "$inc/ktimer/ktimer.h" ] || inc=$TEST_SRCDIR/$TEST_WORKSPACE/include
tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/headers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
CC=${CC:-cc}
CXX=${CXX:-c++}
# libuv's <uv.h> needs POSIX declarations (pthread_rwlock_t) that strict C11
# hides; its users define this (or _GNU_SOURCE) already.
C_FLAGS=(-std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -pedantic)
CXX_FLAGS=(-std=c++11 -Wall -Wextra -Werror -pedantic -Wold-style-cast)
fail=0 n=0

check() { # name compiler flags... -- source text
	local name=$1 src
	shift
	src=$tmp/$name
	printf '%b' "${@: -1}" >"$src"
	n=$((n + 1))
	if ! "${@:1:$#-1}" -I"$inc" -fsyntax-only "$src" 2>"$tmp/err"; then
		echo "FAIL: $name"
		sed 's/^/    /' "$tmp/err"
		fail=$((fail + 1))
	fi
}

for h in "$inc"/ktimer/*.h; do
	b=$(basename "$h" .h)
	check "$b.c" "$CC" "${C_FLAGS[@]}" "#include <ktimer/$b.h>\n"
	check "$b.cc" "$CXX" "${CXX_FLAGS[@]}" "#include <ktimer/$b.h>\n"
done
for lang in c cc; do
	if [ $lang = c ]; then comp=("$CC" "${C_FLAGS[@]}"); else comp=("$CXX" "${CXX_FLAGS[@]}"); fi
	check "param-then-linux.$lang" "${comp[@]}" \
		'#include <sys/param.h>\n#include <ktimer/linux.h>\nextern char hz_is_1000[HZ == 1000 ? 1 : -1]; /* jiffies are ms */\n'
	check "linux-then-param.$lang" "${comp[@]}" \
		'#include <ktimer/linux.h>\n#include <sys/param.h>\nextern char hz_is_1000[HZ == 1000 ? 1 : -1]; /* jiffies are ms */\n'
done
echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
