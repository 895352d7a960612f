#!/usr/bin/env bash
# tools/bench/storm.sh - an expiry storm: an active client's latency while N idle
# keep-alive connections expire together, httpd beside nginx.
#
# Both servers run one worker with a 2 s keep-alive timeout (httpd
# --keepalive 2, nginx keepalive_timeout 2) and a 2 s request-head timeout
# (--header-timeout 2000, client_header_timeout 2s), on loopback, each
# started fresh for each run. Runs are interleaved: every round runs each N on
# each server, alternating which server goes first. //tools/bench:storm (storm.c) is
# the client; the table gives, per server and N, the median over the rounds
# of the active client's p50, p99 and worst latency during the storm, the
# worst of all rounds, and the longest an idle connection lived after its
# response. A second storm, at the first N only, is of connections that send
# nothing and are closed at the head deadline (per-connection timers, which
# the worker's run limit spreads over turns).
#
#   tools/bench/storm.sh [ROUNDS] [N...]        (defaults: 3 rounds, N = 10000 15000 18000: as many idle connections as a 20,000-descriptor limit holds)
#
# HTTPD_BEFORE=path/to/httpd adds that binary as a third server ("httpd
# before"), for an A/B of two builds in the same run. HTTPD_ARGS adds
# arguments to both httpd command lines. HTTPD_VARIANTS="NAME:ARGS|NAME:ARGS"
# adds more httpd servers, each with its own arguments (instead of
# HTTPD_ARGS), for choosing settings in one interleaved run. STORM_HOG=1 runs one CPU-bound
# process (a busy loop) beside every run, started before the server. The
# idle connections are split over STORM_PROCS client processes (default 4).
# STORM_SILENT=0 skips the head-deadline storm.
#
# Each server and the client need N + some descriptors: the script raises
# its own RLIMIT_NOFILE (as root, past the hard limit if allowed); an N the
# limit cannot hold is skipped with the reason.
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${1:-3}
shift || true
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(10000 15000 18000)
KA=2
WORK=$(mktemp -d)
SLAUNCH=
SPID=
HOGPID=
cleanup() {
	if [ -n "$SLAUNCH$HOGPID" ]; then
		kill $SLAUNCH $HOGPID 2>/dev/null || true
		wait $SLAUNCH $HOGPID 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

command -v nginx >/dev/null || { echo "nginx is not installed (apt-get install nginx-light)" >&2; exit 1; }
bazel build -c opt //net:httpd //tools/bench:storm >/dev/null 2>&1
cp bazel-bin/net/httpd bazel-bin/tools/bench/storm "$WORK/"

# As many descriptors as the largest N needs, or as the hard limit allows.
max_n=0
for n in "${SIZES[@]}"; do [ "$n" -gt "$max_n" ] && max_n=$n; done
want=$((max_n + 4096))
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt $want ]; then
	ulimit -Hn $want 2>/dev/null || true
fi
ulimit -Sn "$(ulimit -Hn)"
limit=$(ulimit -n)

# tools/nginx/launch.py starts each server and writes "PORT PID" here once
# it answers; it stays the server's parent: a signal to it stops the server.
LAUNCH=tools/nginx/launch.py
mkfifo "$WORK/started"
PORT=
start_httpd() { # $1: binary, $2: arguments (default $HTTPD_ARGS)
	local extra=() args=${2-${HTTPD_ARGS:-}}
	[ -n "$args" ] && read -ra extra <<<"$args"
	python3 $LAUNCH httpd "$WORK" "$1" --workers 1 --keepalive $KA --header-timeout $((KA * 1000)) "${extra[@]}" >"$WORK/started" &
	SLAUNCH=$!
	read -r PORT SPID <"$WORK/started" || exit 1
}

start_nginx() {
	python3 $LAUNCH nginx "$WORK/nginx" --nofile "$limit" --connections "$limit" --error-log warn --keepalive $KA \
		--http "client_header_timeout ${KA}s;" --http "keepalive_requests 100000000;" --listen " backlog=4096" >"$WORK/started" &
	SLAUNCH=$!
	read -r PORT SPID <"$WORK/started" || exit 1
}

# What the server says about the run: its threads' and children's
# involuntary context switches (preemptions), and for httpd its drain turns
# from /stats (turns, turns stopped by the budget, their wall and CPU time).
server_extra() { # $1: server
	local pids pre=0 p f
	pids="$SPID $(pgrep -P "$SPID" 2>/dev/null || true)"
	for p in $pids; do
		for f in /proc/"$p"/task/*/status; do
			[ -r "$f" ] && pre=$((pre + $(awk '/^nonvoluntary_ctxt_switches/ {print $2}' "$f" 2>/dev/null || echo 0)))
		done
	done
	printf 'preempt=%s load1=%s' "$pre" "$(cut -d' ' -f1 /proc/loadavg)"
	[ "$1" = nginx ] && return
	curl -s --max-time 5 "http://127.0.0.1:$PORT/stats" | python3 -c '
import json, sys
try:
    w = json.load(sys.stdin)["workers"]
except Exception:
    sys.exit(0)
s = lambda k: sum(x.get(k, 0) for x in w)
print(" turns=%d budget_stops=%d drain_wall_ms=%.1f drain_cpu_ms=%.1f turn_wall_max_ms=%.2f turn_max_closes=%d" % (
    s("ring_drain_turns"), s("ring_budget_stops"), s("ring_drain_wall_us") / 1000, s("ring_drain_cpu_us") / 1000,
    max(x.get("ring_drain_wall_max_us", 0) for x in w) / 1000, max(x.get("ring_drain_max", 0) for x in w)), end="")
' || true
}

stop_server() {
	kill $SLAUNCH
	wait $SLAUNCH || true
	SLAUNCH= SPID=
	sleep 0.5 # let the sockets of the last run go
}

servers=(httpd nginx)
[ -n "${HTTPD_BEFORE:-}" ] && { cp "$HTTPD_BEFORE" "$WORK/httpd-before"; servers+=(before); }
[ -n "${HTTPD_ALT_ARGS:-}" ] && servers+=(alt)
declare -A VARIANT_ARGS=()
if [ -n "${HTTPD_VARIANTS:-}" ]; then
	IFS='|' read -ra _vs <<<"$HTTPD_VARIANTS"
	for v in "${_vs[@]}"; do
		VARIANT_ARGS[${v%%:*}]=${v#*:}
		servers+=("${v%%:*}")
	done
fi

run_one() { # $1: server, $2: N, $3: "silent" for the header storm
	if [ "${STORM_HOG:-0}" = 1 ]; then
		bash -c 'while :; do :; done' &
		HOGPID=$!
	fi
	case $1 in
	httpd) start_httpd "$WORK/httpd" ;;
	before) start_httpd "$WORK/httpd-before" ;;
	alt) start_httpd "$WORK/httpd" "$HTTPD_ALT_ARGS" ;;
	nginx) start_nginx ;;
	*) start_httpd "$WORK/httpd" "${VARIANT_ARGS[$1]}" ;;
	esac
	local line
	line=$("$WORK/storm" "$PORT" "$2" $KA "$1" ${3:-}) || echo "($1, N=$2: the run failed)" >&2
	[ -n "$line" ] && echo "$line $(server_extra "$1")" | tee -a "$WORK/results"
	stop_server
	if [ -n "$HOGPID" ]; then
		kill $HOGPID 2>/dev/null || true
		wait $HOGPID 2>/dev/null || true
		HOGPID=
	fi
}

echo "storm: ${ROUNDS} rounds, N = ${SIZES[*]}, keep-alive $KA s, one worker each, RLIMIT_NOFILE $limit," \
	"${STORM_PROCS:-4} idle-client processes${STORM_HOG:+, CPU-bound process beside: $STORM_HOG}; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$ROUNDS"); do
	for n in "${SIZES[@]}"; do
		if [ $((n + 1024)) -gt "$limit" ]; then
			[ "$r" = 1 ] && echo "skipping N=$n: needs $((n + 1024)) descriptors per process, the limit here is $limit" >&2
			continue
		fi
		order=("${servers[@]}")
		if [ $((r % 2)) = 0 ]; then # alternate who goes first
			order=()
			for ((i = ${#servers[@]} - 1; i >= 0; i--)); do order+=("${servers[$i]}"); done
		fi
		for s in "${order[@]}"; do run_one "$s" "$n"; done
		if [ "$n" = "${SIZES[0]}" ] && [ "${STORM_SILENT:-1}" != 0 ]; then
			for s in "${order[@]}"; do run_one "$s" "$n" silent; done
		fi
	done
done

python3 - "$WORK/results" "$KA" <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    if not line.startswith("storm "):
        continue
    f = dict(kv.split("=", 1) for kv in line.split()[1:])
    rows.setdefault((f["kind"], int(f["n"]), f["server"]), []).append(f)
ka = int(sys.argv[2])
names = {"httpd": "httpd", "nginx": "nginx", "before": "httpd before", "alt": "httpd alt"}
order = ["httpd", "alt", "before", "nginx"]
for k in list(rows):
    if k[2] not in names:
        names[k[2]] = "httpd " + k[2]
        order.insert(-1, k[2])
titles = {"keepalive": "Idle keep-alive connections expiring (keep-alive %d s)" % ka,
          "header": "Silent connections reaching the request-head deadline (%d s)" % ka}
for kind in ("keepalive", "header"):
    keys = sorted((k for k in rows if k[0] == kind), key=lambda k: (k[1], order.index(k[2])))
    if not keys:
        continue
    print()
    print(titles[kind])
    print()
    print("| connections | server | p50 ms | p99 ms | max ms (median) | max ms (worst run) | longest life s | lost | runs |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for k in keys:
        fs = rows[k]
        med = lambda key: statistics.median(float(f[key]) for f in fs)
        print("| %d | %s | %.2f | %.2f | %.1f | %.1f | %.2f | %d | %d |" % (
            k[1], names[k[2]], med("p50_us") / 1000, med("p99_us") / 1000, med("max_us") / 1000,
            max(float(f["max_us"]) for f in fs) / 1000, max(float(f["life_max_ms"]) for f in fs) / 1000,
            sum(int(f["lost"]) for f in fs), len(fs)))
# The target: httpd's worst at most 1.2x nginx's, its p99 at most nginx's + 2 ms
# (medians over the rounds), nothing lost, none closed early.
for k in sorted(rows):
    if k[0] != "keepalive" or k[2] == "nginx" or (k[0], k[1], "nginx") not in rows:
        continue
    med = lambda fs, key: statistics.median(float(f[key]) for f in fs) / 1000
    h, g = rows[k], rows[(k[0], k[1], "nginx")]
    early = sum(1 for f in h if float(f["life_min_ms"]) < ka * 1000)
    ok = (med(h, "max_us") <= 1.2 * med(g, "max_us") and med(h, "p99_us") <= med(g, "p99_us") + 2
          and not sum(int(f["lost"]) for f in h) and not early)
    print("target N=%d %s: max %.1f vs 1.2 x %.1f = %.1f, p99 %.2f vs %.2f + 2, early %d: %s" % (
        k[1], names[k[2]], med(h, "max_us"), med(g, "max_us"), 1.2 * med(g, "max_us"), med(h, "p99_us"),
        med(g, "p99_us"), early, "met" if ok else "MISSED"))
print()
print("Server side, medians over the rounds: preemptions of the server's threads; for httpd, drain turns,")
print("the turns the budget stopped, their wall and CPU time in all, and the longest turn:")
for k in sorted(rows):
    fs = rows[k]
    med = lambda key: statistics.median(float(f.get(key, 0)) for f in fs)
    extra = ""
    if k[2] != "nginx" and "turns" in fs[0]:
        extra = ", %d turns (%d stopped by the budget), wall %.1f ms, CPU %.1f ms, longest turn %.2f ms, most closes in a turn %d" % (
            med("turns"), med("budget_stops"), med("drain_wall_ms"), med("drain_cpu_ms"), med("turn_wall_max_ms"),
            med("turn_max_closes"))
    print("  %s N=%d %s: %d preemptions%s" % (k[0], k[1], names[k[2]], med("preempt"), extra))
if any(k[0] == "keepalive" and k[2] != "nginx" for k in rows):
    print()
    print("httpd's drain allowance (the last close past the end of the second its deadline fell in, worst run):",
          ", ".join("%s N=%d: %.0f ms" % (names[k[2]], k[1], max(float(f["late_max_ms"]) for f in rows[k]))
                    for k in sorted(rows) if k[0] == "keepalive" and k[2] != "nginx"))
PY
