#!/usr/bin/env bash
# <ktimer/uv.h>'s short forms (kt_uv_init() with 2 or 3 arguments,
# kt_uv_close() with 1 or 2) reject a wrong argument type or count at
# compile time, as errors, not warnings: each wrong call below must fail to
# compile with no -Werror, in C11 and in C++11, while the right calls beside
# it compile (so a failure is the call's, not the harness's). Uses the
# system compilers (CC, CXX) and the system's <uv.h>; skips without it.
set -euo pipefail
inc=$(cd "$(dirname "$0")/../.." && pwd)/include
[ -f "$inc/ktimer/uv.h" ] || inc=$TEST_SRCDIR/$TEST_WORKSPACE/include
tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/uvfail.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
CC=${CC:-cc}
CXX=${CXX:-c++}
if ! printf '#include <uv.h>\n' | "$CC" -x c -fsyntax-only - 2>/dev/null; then
	echo "SKIP: no <uv.h> (libuv1-dev is not installed)"
	exit 0
fi
C_FLAGS=(-std=c11 -D_POSIX_C_SOURCE=200809L)
CXX_FLAGS=(-std=c++11)
fail=0 n=0

prelude='#include <ktimer/uv.h>
#include <stddef.h>
static void on_closed(struct kt_uv *ku) { (void)ku; }
int use(struct kt_uv *ku, uv_loop_t *loop, struct kt_base *base, int *some_int, long n);
int use(struct kt_uv *ku, uv_loop_t *loop, struct kt_base *base, int *some_int, long n)
{
	(void)ku; (void)loop; (void)base; (void)some_int; (void)n; (void)on_closed;
	return '

# expect ok|error LANG CALL
expect() {
	local want=$1 lang=$2 call=$3 src got
	n=$((n + 1))
	src=$tmp/t$n.$lang
	printf '%s%s;\n}\n' "$prelude" "$call" >"$src"
	if [ "$lang" = c ]; then
		"$CC" "${C_FLAGS[@]}" -I"$inc" -fsyntax-only "$src" >"$tmp/err" 2>&1 && got=ok || got=error
	else
		"$CXX" "${CXX_FLAGS[@]}" -I"$inc" -fsyntax-only "$src" >"$tmp/err" 2>&1 && got=ok || got=error
	fi
	if [ "$got" != "$want" ]; then
		echo "FAIL ($lang): $call: expected $want, got $got"
		sed 's/^/    /' "$tmp/err"
		fail=$((fail + 1))
	else
		echo "ok ($lang): $call: $want"
	fi
}

for lang in c cc; do
	null=NULL
	[ $lang = c ] || null=nullptr
	# The forms that must compile.
	expect ok $lang "kt_uv_init(ku, loop, base)"
	expect ok $lang "kt_uv_init(loop, base)"
	expect ok $lang "kt_uv_close(ku, on_closed)"
	expect ok $lang "kt_uv_close(ku, $null)"
	expect ok $lang "kt_uv_close(ku)"
	expect ok $lang "kt_uv_close(loop)"
	expect ok $lang "kt_uv_init($null, loop, base)" # bad input at run time: -EINVAL
	# A wrong type.
	expect error $lang "kt_uv_close(some_int)"
	expect error $lang "kt_uv_close(base)"
	expect error $lang "kt_uv_close(n)"
	expect error $lang "kt_uv_close(ku, some_int)"
	expect error $lang "kt_uv_close(loop, on_closed)"
	expect error $lang "kt_uv_init(loop, loop)"
	expect error $lang "kt_uv_init(some_int, base)"
	expect error $lang "kt_uv_init(ku, loop, some_int)"
	expect error $lang "kt_uv_init(loop, ku, base)"
	expect error $lang "kt_uv_init(base, loop, base)"
	# A wrong count.
	expect error $lang "kt_uv_init(loop)"
	expect error $lang "kt_uv_init()"
	expect error $lang "kt_uv_init(ku, loop, base, base)"
	expect error $lang "kt_uv_close()"
	expect error $lang "kt_uv_close(ku, on_closed, loop)"
done
echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
