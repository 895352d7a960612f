#!/usr/bin/env bash
# tools/bench/plot_kabench.sh CSV PNG - ns/op against N for the rearm and expire
# phases, one line per implementation (log-log), with gnuplot.
set -euo pipefail
CSV=$1
PNG=$2
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
plots=()
for phase in rearm expire; do
	cmds=""
	while IFS= read -r impl; do
		f="$DIR/$(echo "$phase-$impl" | tr -c 'a-zA-Z0-9\n-' '_').dat"
		awk -F, -v i="$impl" -v p="$phase" '$1 == i && $3 == p && $4 > 0 {print $2, $4}' "$CSV" >"$f"
		[ -s "$f" ] && cmds+="'$f' using 1:2 with linespoints title '$impl', "
	done < <(awk -F, 'NR > 1 {print $1}' "$CSV" | awk '!seen[$0]++')
	plots+=("${cmds%, }")
done
gnuplot <<GP
set terminal pngcairo size 1400,560 font ",10"
set output "$PNG"
set multiplot layout 1,2
set logscale xy
set grid
set key top left
set xlabel "pending timers (N)"
set ylabel "ns per operation (median)"
set title "re-arm: random connection pushed to now + 25..35 s"
plot ${plots[0]}
set title "expire: ns per fired timer"
plot ${plots[1]}
unset multiplot
GP
