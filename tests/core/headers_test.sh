#!/usr/bin/env bash
# Every public header compiles on its own, as the first and only include of
# a translation unit, in every C standard from C11 on (c11, c17, c2x) and
# every C++ standard from C++11 on (c++11, c++14, c++17, c++20) with the
# strictest warnings a user may build with (-pedantic, and -Wold-style-cast and
# -Wzero-as-null-pointer-constant in C++), warnings being errors; the public
# macros (<ktimer/linux.h>'s names, kt_from_timer(), kt_container_of(),
# KT_MILLIS()) expand to code that passes the same flags; and
# <ktimer/linux.h> compiles before or after <sys/param.h>, both of which
# define HZ. Uses the system compilers (CC, CXX; default cc, c++) and clang,
# clang++ where installed (their warnings differ: clang++ flags an old-style
# cast g++ lets through), and the system's libuv, libevent and liburing
# headers.
set -euo pipefail
inc=$(cd "$(dirname "$0")/../.." && pwd)/include
[ -f "$inc/ktimer/ktimer.h" ] || inc=$TEST_SRCDIR/$TEST_WORKSPACE/include
tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/headers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
COMPILERS=("${CC:-cc}:${CXX:-c++}")
if command -v clang >/dev/null && command -v clang++ >/dev/null; then COMPILERS+=(clang:clang++); fi
# libuv's <uv.h> needs POSIX declarations (pthread_rwlock_t) that strict C11
# hides; its users define this (or _GNU_SOURCE) already.
C_STDS=(c11 c17 c2x)
CXX_STDS=(c++11 c++14 c++17 c++20)
C_FLAGS=(-D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -pedantic)
CXX_FLAGS=(-Wall -Wextra -Werror -pedantic -Wold-style-cast -Wzero-as-null-pointer-constant)
fail=0 n=0

check() { # name compiler flags... -- source text
	local name=$1 src
	shift
	src=$tmp/$name
	printf '%b' "${@: -1}" >"$src"
	n=$((n + 1))
	if ! "${@:1:$#-1}" -I"$inc" -fsyntax-only "$src" 2>"$tmp/err"; then
		echo "FAIL: $name ($1)"
		sed 's/^/    /' "$tmp/err"
		fail=$((fail + 1))
	fi
}

# Every macro of <ktimer/linux.h> (and the ones of <ktimer/timer.h> it
# uses), expanded in user code.
macros='#include <ktimer/linux.h>
struct conn {
	int fd;
	struct timer_list timer;
};
static void cb(struct timer_list *t)
{
	struct conn *c = from_timer(c, t, timer);
	struct conn *d = timer_container_of(d, t, timer);
	struct conn *e = kt_container_of(t, struct conn, timer);
	(void)c; (void)d; (void)e;
}
DEFINE_TIMER(file_scope_timer, cb);
int use(struct conn *c);
int use(struct conn *c)
{
	struct timer_list on_stack;
	uint64_t j = jiffies + HZ + msecs_to_jiffies(5) + jiffies_to_msecs(5) + usecs_to_jiffies(1500) + secs_to_jiffies(2);
	int r = 0;
	kt_millis m = KT_MILLIS(3);
	(void)m;
	timer_setup(&c->timer, cb, 0);
	timer_setup(&c->timer, cb, TIMER_DEFERRABLE);
	timer_setup_on_stack(&on_stack, cb, 0);
	r += add_timer(&c->timer, j) + mod_timer(&c->timer, round_jiffies(j)) + mod_timer_pending(&c->timer, round_jiffies_up(j));
	r += timer_reduce(&c->timer, jiffies + round_jiffies_relative(j) + round_jiffies_up_relative(j));
	r += time_after(j, jiffies) + time_before(j, jiffies) + time_after_eq(j, jiffies) + time_before_eq(j, jiffies);
	r += time_after64(get_jiffies_64(), j) + time_before64(j, get_jiffies_64()) + time_after_eq64(j, j) + time_before_eq64(j, j);
	r += time_after(jiffies + MAX_JIFFY_OFFSET, INITIAL_JIFFIES);
	r += timer_pending(&c->timer) + del_timer(&c->timer) + del_timer_sync(&c->timer) + timer_delete_sync(&c->timer);
	r += try_to_del_timer_sync(&c->timer) + timer_shutdown(&c->timer) + timer_shutdown_sync(&c->timer);
	r += mod_timer(&file_scope_timer, j);
	destroy_timer_on_stack(&on_stack);
	return r;
}
'
for pair in "${COMPILERS[@]}"; do
	for lang in c cc; do
		if [ $lang = c ]; then stds=("${C_STDS[@]}"); else stds=("${CXX_STDS[@]}"); fi
		for std in "${stds[@]}"; do
			if [ $lang = c ]; then comp=("${pair%%:*}" -std="$std" "${C_FLAGS[@]}"); else comp=("${pair#*:}" -std="$std" "${CXX_FLAGS[@]}"); fi
			for h in "$inc"/ktimer/*.h; do
				b=$(basename "$h" .h)
				check "$b.$std.$lang" "${comp[@]}" "#include <ktimer/$b.h>\n"
			done
			check "param-then-linux.$std.$lang" "${comp[@]}" \
				'#include <sys/param.h>\n#include <ktimer/linux.h>\nextern char hz_is_1000[HZ == 1000 ? 1 : -1]; /* jiffies are ms */\n'
			check "linux-then-param.$std.$lang" "${comp[@]}" \
				'#include <ktimer/linux.h>\n#include <sys/param.h>\nextern char hz_is_1000[HZ == 1000 ? 1 : -1]; /* jiffies are ms */\n'
			check "linux-macros.$std.$lang" "${comp[@]}" "$macros"
		done
	done
done

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
