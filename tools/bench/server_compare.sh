#!/usr/bin/env bash
# tools/bench/server_compare.sh - ktimer's httpd against nginx, side by side.
#
# Same worker count, same keep-alive timeout, same 18-byte response, both on
# loopback. Rounds alternate the two servers (interleaved) and the table
# reports the median of the rounds. Then each holds 10,000 idle keep-alive
# connections (keep-alive 60 s so none expires during the 10 s window) and we
# read wake-ups per second and resident memory.
#
# No fixed ports: tools/nginx/launch.py starts both on loopback (httpd on
# the port the kernel picks, nginx on a free port, retried on another if it
# is taken meanwhile) and writes nginx's configuration. Both servers share
# one listening socket among their workers (no SO_REUSEPORT), so no other
# process can join their ports; REUSEPORT=1 gives both one socket per
# worker instead.
#
#   tools/bench/server_compare.sh [ROUNDS] [SECONDS]    (defaults 3 and 5)
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${1:-3}
SECS=${2:-5}
WORKERS=2
KPORT=
NPORT=
KPID=
NPID=
K_REUSE=()
N_REUSE=
if [ "${REUSEPORT:-0}" = 1 ]; then
	K_REUSE=(--reuseport)
	N_REUSE=" reuseport"
fi
WORK=$(mktemp -d)
KLAUNCH=
NLAUNCH=
cleanup() {
	if [ -n "$KLAUNCH$NLAUNCH" ]; then
		kill $KLAUNCH $NLAUNCH 2>/dev/null || true
		wait $KLAUNCH $NLAUNCH 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
# tools/nginx/launch.py starts each server and writes "PORT PID" here once
# it answers; it stays the server's parent: a signal to it stops the server.
LAUNCH=tools/nginx/launch.py
mkfifo "$WORK/started"

bazel build -c opt //net:httpd //tools/bench:idle_hold >/dev/null 2>&1
HOLD=bazel-bin/tools/bench/idle_hold

start_servers() { # $1: keep-alive seconds
	python3 $LAUNCH httpd "$WORK" bazel-bin/net/httpd --workers $WORKERS --keepalive "$1" "${K_REUSE[@]}" >"$WORK/started" &
	KLAUNCH=$!
	read -r KPORT KPID <"$WORK/started" || exit 1
	python3 $LAUNCH nginx "$WORK/nginx" --workers $WORKERS --nofile 65536 --connections 32768 --error-log warn \
		--keepalive "$1" --http "keepalive_requests 1000000;" --listen "$N_REUSE" >"$WORK/started" &
	NLAUNCH=$!
	read -r NPORT NPID <"$WORK/started" || exit 1
}

stop_servers() {
	kill $KLAUNCH $NLAUNCH
	wait $KLAUNCH $NLAUNCH || true
	KLAUNCH= NLAUNCH=
}

rps() { # port conns
	wrk -t2 -c"$2" -d"${SECS}s" "http://127.0.0.1:$1/" 2>&1 |
		awk '/Requests\/sec/ {r=$2} /Non-2xx|Socket errors/ {e=1} END {print (e ? "ERR" : r)}'
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

ulimit -n 65536 2>/dev/null || true
start_servers 5
declare -A R
for round in $(seq "$ROUNDS"); do
	for c in 100 1000; do
		R[k$c]+="$(rps $KPORT $c) "
		R[n$c]+="$(rps $NPORT $c) "
	done
done
stop_servers

echo "## Requests/s (wrk -t2 -d${SECS}s, $WORKERS workers each, keep-alive 5 s, median of $ROUNDS interleaved rounds;" \
	"$([ -n "$N_REUSE" ] && echo "one SO_REUSEPORT socket per worker" || echo "one shared listening socket"))"
echo
echo "| connections | ktimer httpd | nginx | httpd / nginx | ktimer rounds | nginx rounds |"
echo "|---|---|---|---|---|---|"
for c in 100 1000; do
	k=$(echo ${R[k$c]} | tr ' ' '\n' | median)
	n=$(echo ${R[n$c]} | tr ' ' '\n' | median)
	echo "| $c | $k | $n | $(awk -v a="$k" -v b="$n" 'BEGIN {printf "%.2f", a/b}') | ${R[k$c]}| ${R[n$c]}|"
done

start_servers 60
NPIDS="$NPID,$(pgrep -d, -P $NPID || true)"
echo
echo "## 10,000 idle keep-alive connections held for 10 s (keep-alive 60 s)"
echo
echo '```'
echo "ktimer httpd:"; $HOLD $KPORT 10000 10 $KPID
echo "nginx:"; $HOLD $NPORT 10000 10 "${NPIDS%,}"
echo '```'
stop_servers
