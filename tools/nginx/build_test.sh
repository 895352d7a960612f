#!/usr/bin/env bash
# tools/nginx/build_test.sh - build.sh's skip path: with no network the
# fetch exits 77 (callers skip) and names the reason (the archive could not
# be reached), in a scratch output directory so out/nginx is not touched.
# Needs `unshare -n` (root); skips with the reason otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.."
if ! unshare -n true 2>/dev/null; then
	echo "SKIP: unshare -n is not available (needs root and util-linux)"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
st=0
timeout 120 unshare -n env KT_NGINX_OUT="$tmp/nginx" tools/nginx/build.sh 2>"$tmp/err" || st=$?
cat "$tmp/err"
if [ $st -ne 77 ]; then
	echo "FAIL: exit status $st without network, want 77 (skip)"
	exit 1
fi
# The reason is apt's own (a failed download: DNS or connect), not a pointer
# to a log that was never written.
if ! grep -q -E "Failed to fetch|Temporary failure|Could not resolve|unreachable" "$tmp/err"; then
	echo "FAIL: the skip does not say why the source could not be fetched"
	exit 1
fi
if [ ! -d "$tmp/nginx/apt" ]; then
	echo "FAIL: KT_NGINX_OUT was not used (out/nginx may have been touched)"
	exit 1
fi
echo "ok: skipped with the reason"
