#!/usr/bin/env bash
# tools/bench/uvbench/run.sh [ROUNDS] [SECONDS] - the side-by-side libuv benchmark:
# the same keep-alive server (tools/bench/uvbench/server.c) with a uv_timer_t per
# deadline ("uv") and with ktimer on the kt_uv adapter ("kt").
#
#   1. load: wrk -t1 at 100, 1,000 and 10,000 connections for SECONDS each,
#      ROUNDS interleaved rounds (the order of uv and kt alternates); medians
#      of requests/s and loop wake-ups per request, with min-max
#   2. idle: 10,000 connections held idle for 10 s (//tools/bench:idle_hold), twice:
#      deadlines beyond the window (60 s idle timeout), and all of them
#      expiring inside it (5 s idle timeout); the server's loop iterations per
#      second (its wake-ups) and resident bytes per connection; IDLE_ROUNDS
#      (default 3) interleaved rounds
#   3. instructions: the server under callgrind at 100 connections; program
#      instructions per request, and the part spent in the timer calls
#
# Prints Markdown tables (BENCHMARKS.md keeps a run). Needs wrk, curl and
# valgrind (tools/run installs them); raises the descriptor limit itself.
# PARTS="load idle icount" selects parts. About 15 minutes with 5 rounds.
set -euo pipefail
cd "$(dirname "$0")/../../.."

ROUNDS=${1:-3}
SECS=${2:-5}
PARTS=${PARTS:-load idle icount} # which of the three parts to run (all)
want() { [[ " $PARTS " == *" $1 "* ]]; }
CONNS=(100 1000 10000)
IDLE_N=10000
IDLE_SECS=10
IDLE_ROUNDS=${IDLE_ROUNDS:-3}

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
bazel build -c opt //tools/bench/uvbench:uvbench_server //tools/bench:idle_hold >/dev/null 2>&1
SRV=bazel-bin/tools/bench/uvbench/uvbench_server
HOLD=bazel-bin/tools/bench/idle_hold
TMP=$(mktemp -d)
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$TMP"' EXIT

# start MODE [SERVER ARGS...]: the server on port 0 (under $WRAP, if set);
# sets PID and PORT.
WRAP=()
start() {
	local mode=$1
	shift
	"${WRAP[@]}" "$SRV" --timers "$mode" "$@" >"$TMP/port" 2>"$TMP/err" &
	PID=$!
	for _ in $(seq 100); do
		PORT=$(sed -n 's/^port //p' "$TMP/port")
		[ -n "$PORT" ] && return 0
		sleep 0.1
	done
	echo "server did not start: $(cat "$TMP/err")" >&2
	exit 1
}

stop() {
	kill "$PID" 2>/dev/null || true
	wait "$PID" 2>/dev/null || true
	PID=
}

stat() {
	local v
	v=$(curl -s -m 10 "http://127.0.0.1:$PORT/stats" | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p")
	echo "${v:-0}"
}

# median and min-max of the numbers on stdin
summary() { sort -g | awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%s (%s-%s)", m, v[1], v[NR]}'; }

echo "## libuv keep-alive server: uv_timer_t per deadline vs ktimer on kt_uv"
echo
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, L2 $(lscpu | sed -n 's/^L2 cache: *//p'), L3 $(lscpu | sed -n 's/^L3 cache: *//p'), kernel $(uname -r); libuv $(dpkg-query -W -f='${Version}' libuv1 2>/dev/null), jemalloc, $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)"
echo
echo "rounds: $ROUNDS interleaved, wrk -t1 for ${SECS} s per run; $(date -u +%Y-%m-%dT%H:%MZ)"
echo

# ---- 1. load ----
want load && for round in $(seq "$ROUNDS"); do
	order="uv kt"
	[ $((round % 2)) -eq 0 ] && order="kt uv"
	for c in "${CONNS[@]}"; do
		for mode in $order; do
			start "$mode"
			it0=$(stat iterations)
			rq0=$(stat requests)
			out=$(wrk -t1 -c"$c" -d"${SECS}s" "http://127.0.0.1:$PORT/")
			it1=$(stat iterations)
			rq1=$(stat requests)
			stop
			rps=$(echo "$out" | sed -n 's/^Requests\/sec: *//p')
			errs=$(echo "$out" | sed -n 's/^ *Socket errors: //p')
			echo "$rps" >>"$TMP/rps.$mode.$c"
			awk -v a="$it0" -v b="$it1" -v c="$rq0" -v d="$rq1" 'BEGIN {printf "%.4f\n", (b - a) / (d - c)}' >>"$TMP/wpr.$mode.$c"
			[ -n "$errs" ] && echo "round $round $mode c=$c socket errors: $errs" >>"$TMP/notes"
		done
	done
done
want load && echo "| connections | uv: requests/s | kt: requests/s | kt/uv | uv: wake-ups/request | kt: wake-ups/request |"
want load && echo "|---|---|---|---|---|---|"
want load && for c in "${CONNS[@]}"; do
	u=$(summary <"$TMP/rps.uv.$c")
	k=$(summary <"$TMP/rps.kt.$c")
	ratio=$(paste "$TMP/rps.kt.$c" "$TMP/rps.uv.$c" | awk '{print $1 / $2}' | summary | awk '{printf "%.3f", $1}')
	echo "| $c | $u | $k | $ratio | $(summary <"$TMP/wpr.uv.$c") | $(summary <"$TMP/wpr.kt.$c") |"
done
echo
[ -f "$TMP/notes" ] && sed 's/^/    /' "$TMP/notes" && echo

# ---- 2. idle ----
# idle_run MODE IDLE_MS: appends wake-ups/s, bytes/conn and expired
# deadlines to $TMP/{cs,bytes,exp}.MODE.IDLE_MS. Wake-ups are
# the server's own loop iterations while the connections are held (after the
# ramp, before idle_hold closes them; the one /stats fetch that ends the
# window adds at most three).
idle_run() {
	# 10,000 fresh loopback connections need free ports: let the previous
	# run's TIME_WAIT sockets drain (at most a minute).
	for _ in $(seq 70); do
		[ "$(ss -Htan state time-wait | wc -l)" -lt 18000 ] && break
		sleep 1
	done
	start "$1" --idle-ms "$2"
	"$HOLD" "$PORT" "$IDLE_N" "$IDLE_SECS" "$PID" >"$TMP/hold" 2>&1 &
	local hp=$! it0 it1 t0 t1 expired bytes
	for _ in $(seq 600); do
		[ "$(stat conns)" -gt "$IDLE_N" ] && break # the /stats connection is one more
		kill -0 "$hp" 2>/dev/null || { echo "idle_hold failed: $(cat "$TMP/hold")" >&2; exit 1; }
		sleep 0.05
	done
	it0=$(stat iterations)
	t0=$(date +%s.%N)
	sleep $((IDLE_SECS - 2))
	it1=$(stat iterations)
	t1=$(date +%s.%N)
	wait "$hp" || true
	expired=$(stat expired)
	stop
	bytes=$(sed -n 's/.*(\([0-9-]*\) bytes per connection).*/\1/p' "$TMP/hold")
	awk -v a="$it0" -v b="$it1" -v t0="$t0" -v t1="$t1" 'BEGIN {printf "%.2f\n", (b - a) / (t1 - t0)}' >>"$TMP/cs.$1.$2"
	echo "${bytes:-?}" >>"$TMP/bytes.$1.$2"
	echo "$expired" >>"$TMP/exp.$1.$2"
}
if want idle; then
for round in $(seq "$IDLE_ROUNDS"); do
	order="uv kt"
	[ $((round % 2)) -eq 0 ] && order="kt uv"
	for mode in $order; do
		for idle in 60000 5000; do
			idle_run "$mode" "$idle"
		done
	done
done
echo "$IDLE_N idle connections (tools/bench/idle_hold: one request each, then held ${IDLE_SECS} s): the server's loop iterations per second while they are held, and its resident bytes per connection (VmRSS growth / $IDLE_N; with the 5 s timeout the connections are closed by then)"
echo
echo "| idle timeout | uv: wake-ups/s | kt: wake-ups/s | uv: bytes/conn | kt: bytes/conn | deadlines expired uv / kt |"
echo "|---|---|---|---|---|---|"
for idle in 60000 5000; do
	echo "| $((idle / 1000)) s | $(summary <"$TMP/cs.uv.$idle") | $(summary <"$TMP/cs.kt.$idle") | $(summary <"$TMP/bytes.uv.$idle") | $(summary <"$TMP/bytes.kt.$idle") | $(summary <"$TMP/exp.uv.$idle") / $(summary <"$TMP/exp.kt.$idle") |"
done
start uv
ub=$(stat conn_bytes)
stop
start kt
kb=$(stat conn_bytes)
stop
echo
echo "allocated per connection: uv $ub bytes, kt $kb bytes (the same struct but its deadlines: two uv_timer_t, or a kt_timer and a kt_idle)"
echo

fi

# ---- 3. instructions ----
want icount || exit 0
echo "| callgrind, wrk -t1 -c100 -d${SECS}s | uv | kt |"
echo "|---|---|---|"
declare -A total timers reqs tpr mpr
for mode in uv kt; do
	WRAP=(valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.$mode")
	start "$mode"
	WRAP=()
	wrk -t1 -c100 -d"${SECS}s" "http://127.0.0.1:$PORT/" >/dev/null
	reqs[$mode]=$(stat requests)
	curl -s "http://127.0.0.1:$PORT/quit" >/dev/null || true
	wait "$PID" || true
	PID=
	callgrind_annotate --inclusive=yes "$TMP/cg.$mode" >"$TMP/cga.$mode" 2>/dev/null
	total[$mode]=$(sed -n 's/^ *\([0-9,]*\) *(100.0%) *PROGRAM TOTALS.*/\1/p' "$TMP/cga.$mode" | tr -d ,)
	# The timer calls: per request (uvbench's noinline wrappers), per
	# connection, and the adapter's per-iteration turn (kt only).
	timers[$mode]=$(callgrind_annotate --inclusive=yes --threshold=100 "$TMP/cg.$mode" 2>/dev/null |
		grep -E ':(conn_timers_(accept|request|answered)|on_prepare|on_check) ' |
		awk '{gsub(",", "", $1); s += $1} END {print s + 0}')
done
echo "| requests served under callgrind | ${reqs[uv]} | ${reqs[kt]} |"
for mode in uv kt; do
	tpr[$mode]=$(awk -v a="${total[$mode]}" -v r="${reqs[$mode]}" 'BEGIN {printf "%.0f", a / r}')
	mpr[$mode]=$(awk -v a="${timers[$mode]}" -v r="${reqs[$mode]}" 'BEGIN {printf "%.1f", a / r}')
done
echo "| instructions per request, whole server | ${tpr[uv]} | ${tpr[kt]} |"
echo "| instructions per request in timer calls | ${mpr[uv]} | ${mpr[kt]} |"
echo
echo "timer calls: conn_timers_accept/request/answered (inclusive: uv_timer_start/stop, or kt_timer_arm/delete and kt_idle_touch) and, for kt, the adapter's on_prepare/on_check (kt_base_prepare_wait, kt_base_run, the aim). libuv's own per-iteration timer work (uv__run_timers, uv__next_timeout) has no symbols in Debian's libuv: it is in the whole-server figure only."
