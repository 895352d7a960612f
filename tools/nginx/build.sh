#!/usr/bin/env bash
# tools/nginx/build.sh - stock nginx and nginx on ktimer, from Debian's source.
#
#   tools/nginx/build.sh          build (or reuse) out/nginx/stock and
#                                 out/nginx/ktimer, each an nginx prefix with
#                                 sbin/nginx, conf/ and html/
#
# nginx's source never enters this repository: it is fetched at build time
# with `apt-get source nginx` through a private apt configuration (out/nginx/
# apt) whose deb-src entries mirror the host's deb entries, so the host's
# apt state is not touched. Debian 12 main carries 1.22.1-9+deb12u*; the
# newest version whose files the archive serves is taken.
#
# Both binaries get the same configure flags. The ktimer tree then gets the
# mechanical edits below and ktimer's core, compiled from lib/ of this tree.
#
# Exit status: 0 built, 77 the source could not be fetched (the reason on
# stderr; callers skip), anything else a failure.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
# KT_NGINX_OUT: another output directory (tools/nginx/build_test.sh).
OUT=${KT_NGINX_OUT:-$ROOT/out/nginx}
VERSION_PREFIX=1.22.1-
# Identical for both builds: nginx's default modules (rewrite needs PCRE2,
# gzip zlib: libpcre2-dev, zlib1g-dev), -O2 as Debian builds it. The prefix
# is relative: each binary runs with -p (its out/nginx/X, or a test's dir).
CONFIGURE_FLAGS=(
	--prefix=.
	--with-cc-opt="-O2 -g"
)
# ktimer's core, as //:ktimer links it minus the epoll driver nginx does not use.
KT_SRCS=(time wheel hrtimer remote call base clock interval idle deadline version)

log() { printf '== nginx: %s\n' "$*" >&2; }

JOBS=$(nproc 2>/dev/null || echo 2)

# ---- fetch ------------------------------------------------------------------

# deb-src lines for every deb entry of the host, one-line and deb822 formats.
mirror_sources() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		sed -n -E 's/^[[:space:]]*deb[[:space:]]+/deb-src /p' "$f"
	done >"$APTDIR/etc/sources.list"
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk 'BEGIN { RS = ""; FS = "\n" }
		     /(^|\n)Types:[^\n]*deb([ \t\n]|$)/ {
		         s = $0; sub(/Types:[^\n]*/, "Types: deb-src", s); print s "\n" }' "$f"
	done >"$APTDIR/etc/sources.list.d/mirror.sources"
}

fetch() {
	local src=$OUT/src ver vers got=""
	APTDIR=$OUT/apt
	rm -rf "$APTDIR" "$src"
	mkdir -p "$APTDIR"/{lists/partial,cache/archives/partial,etc/sources.list.d,etc/preferences.d} "$src"
	mirror_sources
	cat >"$APTDIR/apt.conf" <<-CONF
		Dir::Etc::SourceList "$APTDIR/etc/sources.list";
		Dir::Etc::SourceParts "$APTDIR/etc/sources.list.d";
		Dir::Etc::Preferences "$APTDIR/etc/preferences";
		Dir::Etc::PreferencesParts "$APTDIR/etc/preferences.d";
		Dir::State::Lists "$APTDIR/lists";
		Dir::Cache "$APTDIR/cache";
		APT::Sandbox::User "root";
	CONF
	export APT_CONFIG=$APTDIR/apt.conf
	if ! apt-get update -qq >"$APTDIR/update.log" 2>&1; then
		log "apt-get update failed (no network or archive?): $(tail -1 "$APTDIR/update.log")"
		return 77
	fi
	# Newest first; a version the index lists but the archive no longer
	# serves (a security update moved on) fails to download: take the next.
	vers=$(apt-cache showsrc nginx 2>/dev/null | sed -n "s/^Version: \(${VERSION_PREFIX//./\\.}.*\)/\1/p" | sort -V -r -u || true)
	if [ -z "$vers" ]; then
		# apt-get update exits 0 when every index failed to download (it
		# only warns): say why the index is empty, not "see source.log".
		log "Debian's source index lists no nginx ${VERSION_PREFIX}*: $(grep -m1 -E '^(W|E|Err):' "$APTDIR/update.log" || echo "apt-get update reported no error")"
		unset APT_CONFIG
		return 77
	fi
	for ver in $vers; do
		if (cd "$src" && apt-get source -qq --download-only "nginx=$ver" >>"$APTDIR/source.log" 2>&1); then
			got=$ver
			break
		fi
		log "nginx $ver is listed but could not be downloaded; trying an older one"
		rm -f "$src"/*
	done
	unset APT_CONFIG
	if [ -z "$got" ]; then
		log "no nginx ${VERSION_PREFIX}* source could be fetched from Debian's archive (see $APTDIR/source.log)"
		return 77
	fi
	(cd "$src" && dpkg-source -x "nginx_${got}.dsc" tree >"$APTDIR/dpkg-source.log" 2>&1) || { log "dpkg-source -x failed (see $APTDIR/dpkg-source.log)"; return 1; }
	echo "$got" >"$src/VERSION"
	log "fetched nginx $got (Debian's patches applied by dpkg-source)"
}

# ---- build ------------------------------------------------------------------

build_libktimer() {
	local d=$OUT/libktimer s
	rm -rf "$d"
	mkdir -p "$d"
	for s in "${KT_SRCS[@]}"; do
		cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -Iinclude -I. \
			-c "lib/$s.c" -o "$d/$s.o"
	done
	ar rcs "$d/libktimer.a" "$d"/*.o
}

# The ktimer tree's edits: nginx's timer module replaced, ngx_event_t's
# timer node made a struct kt_timer, two bits beside `cancelable` (whether a
# pending timer is counted as non-cancelable; whether the node is set up,
# cleared with the rest of the event when nginx zeroes it), ktimer's headers
# and library.
patch_ktimer() {
	local t=$1 h=$1/src/event/ngx_event.h
	cp tools/nginx/ngx_event_timer.c tools/nginx/ngx_event_timer.h "$t/src/event/"
	mkdir -p "$t/src/event/ktimer"
	cp include/ktimer/*.h "$t/src/event/ktimer/"
	grep -q '^    ngx_rbtree_node_t   timer;$' "$h" || { log "ngx_event.h: no timer member to replace"; return 1; }
	grep -q '^    unsigned         cancelable:1;$' "$h" || { log "ngx_event.h: no cancelable bit"; return 1; }
	sed -i \
		-e 's/^    ngx_rbtree_node_t   timer;$/    struct kt_timer     timer;/' \
		-e 's/^    unsigned         cancelable:1;$/&\n    unsigned         timer_noncancelable:1;\n    unsigned         timer_ready:1;/' \
		-e '0,/^#include <ngx_core.h>$/s//&\n#include <ktimer\/timer.h>/' "$h"
}

link_ktimer() {
	local m=$1/objs/Makefile
	grep -q $'^\t-Wl,-E$' "$m" || { log "objs/Makefile: no link line to extend"; return 1; }
	sed -i "s|^\t-Wl,-E\$|\t$OUT/libktimer/libktimer.a -Wl,-E|" "$m"
}

build_one() {
	local kind=$1 t=$OUT/build-$1 p=$OUT/$1
	rm -rf "$t" "$p"
	cp -a "$OUT/src/tree" "$t"
	[ "$kind" = ktimer ] && patch_ktimer "$t"
	(cd "$t" && ./configure "${CONFIGURE_FLAGS[@]}" >configure.log 2>&1) ||
		{ log "$kind: configure failed (see $t/configure.log)"; return 1; }
	[ "$kind" = ktimer ] && link_ktimer "$t"
	(cd "$t" && make -j"$JOBS" >make.log 2>&1) || { tail -30 "$t/make.log" >&2; log "$kind: make failed"; return 1; }
	mkdir -p "$p/sbin" "$p/logs"
	cp "$t/objs/nginx" "$p/sbin/nginx"
	cp -r "$t/conf" "$p/conf"
	cp -r "$t/html" "$p/html"
	log "$kind: $p/sbin/nginx"
}

# Rebuild only when an input changed: stock nginx on the fetched version and
# the configure flags; nginx on ktimer also on this script (its edits), the
# port and ktimer's sources.
inputs_hash() {
	{
		cat "$OUT/src/VERSION"
		printf '%s\n' "${CONFIGURE_FLAGS[@]}"
		if [ "$1" = ktimer ]; then
			cat tools/nginx/build.sh tools/nginx/ngx_event_timer.c tools/nginx/ngx_event_timer.h
			cat include/ktimer/*.h lib/*.c lib/*.h
		fi
	} | sha256sum | cut -d' ' -f1
}

main() {
	local kind h
	mkdir -p "$OUT"
	if [ ! -f "$OUT/src/VERSION" ] || [ ! -d "$OUT/src/tree" ]; then
		fetch || return $?
	fi
	for kind in stock ktimer; do
		h=$(inputs_hash $kind)
		if [ -x "$OUT/$kind/sbin/nginx" ] && [ "$(cat "$OUT/$kind.built" 2>/dev/null)" = "$h" ]; then
			log "$kind: up to date, $OUT/$kind (nginx $(cat "$OUT/src/VERSION"))"
			continue
		fi
		rm -f "$OUT/$kind.built"
		[ $kind = ktimer ] && build_libktimer
		build_one $kind
		echo "$h" >"$OUT/$kind.built"
	done
}

main "$@"
