#!/usr/bin/env bash
# bench-idle.sh: what `record --idle` costs the target in perf mode. A loop that blocks about
# 1000 times a second (scripts/bench/blockloop.c: ITERS x (0.5 ms of arithmetic + a 0.5 ms
# nanosleep)) runs plain, under `csampler record --mode perf`, and under `csampler record
# --mode perf --idle`, at RATE Hz, ROUNDS times interleaved. Prints the median loop time of
# each and its slowdown against plain, and csampler's own CPU time; the goal is that --idle adds
# under 2 points. On a machine shared with other work the loop times vary by several points from
# run to run: use more ROUNDS there.
#   ROUNDS=5 ITERS=2000 RATE=999 scripts/bench-idle.sh
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
ITERS=${ITERS:-2000}
RATE=${RATE:-999}
CSAMPLER=${CSAMPLER:-bin/csampler}
W=$(mktemp -d /tmp/csampler-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p build/bench
gcc -O2 -g -o build/bench/blockloop scripts/bench/blockloop.c
[ -x "$CSAMPLER" ] || { echo "bench-idle: $CSAMPLER not built; run make" >&2; exit 1; }
WORK_N=$(build/bench/blockloop 0)
WORK="build/bench/blockloop $ITERS $WORK_N"

# run NAME CMD...: appends the loop's own time to $W/NAME.times
run() {
	local name=$1; shift
	"$@" 2>"$W/$name.err" >/dev/null
	sed -n 's/^blockloop: \([0-9.]*\) s$/\1/p' "$W/$name.err" | tail -1 >>"$W/$name.times"
	sed -n 's/^csampler: own CPU \([0-9.]*\) s.*/\1/p' "$W/$name.err" | tail -1 >>"$W/$name.own"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for r in $(seq "$ROUNDS"); do
	run plain $WORK
	run perf "$CSAMPLER" record --mode perf -F "$RATE" -o "$W/p.data" -- $WORK
	run idle "$CSAMPLER" record --mode perf --idle -F "$RATE" -o "$W/i.data" -- $WORK
done

plain=$(median <"$W/plain.times")
perf=$(median <"$W/perf.times")
idle=$(median <"$W/idle.times")
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f%%", 100 * (a / b - 1) }'; }
echo "bench-idle: $ITERS x (0.5 ms work + 0.5 ms nanosleep), -F $RATE, median of $ROUNDS interleaved rounds, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
printf "  %-28s %8.3f s\n" "plain" "$plain"
printf "  %-28s %8.3f s  %s  (csampler's own CPU: %s s)\n" "record --mode perf" "$perf" "$(pct "$perf" "$plain")" "$(median <"$W/perf.own")"
printf "  %-28s %8.3f s  %s  (csampler's own CPU: %s s)\n" "record --mode perf --idle" "$idle" "$(pct "$idle" "$plain")" "$(median <"$W/idle.own")"
awk -v p="$perf" -v i="$idle" -v b="$plain" 'BEGIN { printf "  --idle costs %.1f points more (goal: under 2)\n", 100 * (i - p) / b }'
grep -h 'off-CPU samples read\|--idle:' "$W/idle.err" | sed 's/^/  last --idle run: /'
