#!/usr/bin/env bash
# tools/bench/server_compare.sh - ktimer's httpd against nginx, side by side.
#
# Same worker count, same keep-alive timeout, same 18-byte response, both on
# loopback. Rounds alternate the two servers (interleaved) and the table
# reports the median of the rounds. Then each holds 10,000 idle keep-alive
# connections (keep-alive 60 s so none expires during the 10 s window) and we
# read wake-ups per second and resident memory.
#
# No fixed ports: httpd listens on a port the kernel picks (--port 0) and
# prints it; nginx cannot, so a free port is picked at runtime (bound and
# released by python3) and the start is retried on another if nginx loses
# the race for it. Both servers share one listening socket among their
# workers (no SO_REUSEPORT), so no other process can join their ports;
# REUSEPORT=1 gives both one socket per worker instead.
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
trap 'kill $KPID $NPID 2>/dev/null || true; sleep 0.3; rm -rf "$WORK"' EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

bazel build -c opt //net:httpd //tools/bench:idle_hold >/dev/null 2>&1
HTTPD=bazel-bin/net/httpd
HOLD=bazel-bin/tools/bench/idle_hold

start_servers() { # $1: keep-alive seconds
	bazel-bin/net/httpd --port 0 --workers $WORKERS --keepalive "$1" "${K_REUSE[@]}" >"$WORK/httpd.out" 2>"$WORK/httpd.err" &
	KPID=$!
	for _ in $(seq 50); do grep -q listening "$WORK/httpd.out" 2>/dev/null && break; sleep 0.1; done
	KPORT=$(sed -n 's/^listening on .*:\([0-9][0-9]*\) workers=.*/\1/p' "$WORK/httpd.out")
	[ -n "$KPORT" ] || { echo "httpd did not start" >&2; exit 1; }
	mkdir -p "$WORK/nginx/logs"
	for attempt in 1 2 3 4 5; do
		NPORT=$(free_port)
		cat >"$WORK/nginx.conf" <<NGX
worker_processes $WORKERS;
worker_rlimit_nofile 65536;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
daemon off;
events { worker_connections 32768; }
http {
    access_log off;
    keepalive_timeout $1;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$NPORT$N_REUSE;
        location / { default_type text/plain; return 200 "Hello from ktimer\n"; }
    }
}
NGX
		nginx -p "$WORK/nginx" -c "$WORK/nginx.conf" &
		NPID=$!
		for _ in $(seq 50); do
			if curl -s "http://127.0.0.1:$KPORT/" >/dev/null 2>&1 && curl -s "http://127.0.0.1:$NPORT/" >/dev/null 2>&1; then
				return
			fi
			kill -0 $NPID 2>/dev/null || break # nginx exited: the port was taken meanwhile
			sleep 0.1
		done
		kill $NPID 2>/dev/null || true
		wait $NPID 2>/dev/null || true
		echo "nginx did not start on port $NPORT (attempt $attempt)" >&2
	done
	echo "servers did not start" >&2
	exit 1
}

stop_servers() {
	kill $KPID $NPID 2>/dev/null || true
	wait $KPID $NPID 2>/dev/null || true
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
NPIDS=$(pgrep -d, -f "nginx -p $WORK/nginx" || true)
NPIDS="$NPIDS,$(pgrep -d, -P $NPID || true)"
echo
echo "## 10,000 idle keep-alive connections held for 10 s (keep-alive 60 s)"
echo
echo '```'
echo "ktimer httpd:"; $HOLD $KPORT 10000 10 $KPID
echo "nginx:"; $HOLD $NPORT 10000 10 "${NPIDS%,}"
echo '```'
stop_servers
