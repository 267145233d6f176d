#!/usr/bin/env bash
# bench-record.sh: the cost of recording, side by side in one run. A CPU-bound workload
# (scripts/bench/deepwork.c: 2 threads, stacks 5-50 frames deep, -fomit-frame-pointer) runs
# plain, under `csampler record` (its default 32 KiB stack copy, and 8 KiB like perf's), and
# under `perf record --call-graph dwarf` (its default 8 KiB stack copy, and 32 KiB like
# csampler's default) at the same rate, ROUNDS times interleaved.
# Prints the median run time of the workload itself (its slowdown), the median wall time of the
# whole command (with the profiler's own work after the workload ends), samples, lost samples
# and bytes on disk per sample.
#   ROUNDS=3 UNITS=600 RATE=999 scripts/bench-record.sh
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
UNITS=${UNITS:-600}
RATE=${RATE:-999}
CSAMPLER=${CSAMPLER:-bin/csampler}
PERF=${PERF:-perf}
W=$(mktemp -d /tmp/csampler-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p build/bench
gcc -O2 -g -fomit-frame-pointer -pthread -o build/bench/deepwork scripts/bench/deepwork.c
WORK="build/bench/deepwork $UNITS 2"
command -v "$PERF" >/dev/null || { echo "bench-record: perf not found; install linux-perf" >&2; exit 1; }
[ -x "$CSAMPLER" ] || { echo "bench-record: $CSAMPLER not built; run make" >&2; exit 1; }

now() { date +%s.%N; }
# run NAME CMD...: runs, appends "target_seconds wall_seconds" to $W/NAME.times
run() {
	local name=$1; shift
	local t0 t1
	t0=$(now)
	"$@" 2>"$W/$name.err" >/dev/null
	t1=$(now)
	local target
	target=$(sed -n 's/^deepwork: \([0-9.]*\) s$/\1/p' "$W/$name.err" | tail -1)
	echo "$target $(echo "$t1 - $t0" | bc -l)" >>"$W/$name.times"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for r in $(seq "$ROUNDS"); do
	run plain $WORK
	run csampler "$CSAMPLER" record -q -F "$RATE" -o "$W/c.data" -- $WORK
	run csampler8k "$CSAMPLER" record -q -F "$RATE" --stack-size 8192 -o "$W/c8.data" -- $WORK
	run perf8k "$PERF" record -q --call-graph dwarf -F "$RATE" -o "$W/p8.data" -- $WORK
	run perf32k "$PERF" record -q --call-graph dwarf,32768 -F "$RATE" -o "$W/p32.data" -- $WORK
done

info_field() { # FILE FIELD
	"$CSAMPLER" info -i "$1" --format json | node -e "console.log(JSON.parse(require('fs').readFileSync(0))['$2'])"
}
c_samples=$(info_field "$W/c.data" samples)
c_lost=$(info_field "$W/c.data" lost)
c8_samples=$(info_field "$W/c8.data" samples)
c8_lost=$(info_field "$W/c8.data" lost)
perf_counts() { # FILE -> "samples lost"
	"$PERF" report --stats -i "$1" 2>/dev/null | awk '
		/^ *SAMPLE events:/ && !s {s=$3}
		/^ *LOST events:/ && !l {l=$3}
		/^ *LOST_SAMPLES events:/ {ls=$3}
		END {print s+0, l+0+ls}'
}
read -r p8_samples p8_lost <<<"$(perf_counts "$W/p8.data")"
read -r p32_samples p32_lost <<<"$(perf_counts "$W/p32.data")"

plain_t=$(cut -d' ' -f1 "$W/plain.times" | median)
printf '\nbench-record: %s, %d rounds, %s Hz, workload "%s", %s\n' "$(date -u +%F)" "$ROUNDS" "$RATE" "$WORK" "$(nproc) CPUs"
printf '%-26s %10s %9s %10s %9s %7s %12s\n' profiler "run (s)" slowdown "wall (s)" samples lost "bytes/sample"
row() { # name times samples lost file
	local t w
	t=$(cut -d' ' -f1 "$W/$2.times" | median)
	w=$(cut -d' ' -f2 "$W/$2.times" | median)
	local bytes=""
	[ -n "$5" ] && bytes=$(echo "scale=0; $(stat -c %s "$5") / $3" | bc)
	printf '%-26s %10.3f %8.3fx %10.3f %9s %7s %12s\n' "$1" "$t" "$(echo "$t / $plain_t" | bc -l)" "$w" "$3" "$4" "$bytes"
}
row "plain" plain "-" "-" ""
row "csampler record (32 KiB)" csampler "$c_samples" "$c_lost" "$W/c.data"
row "csampler --stack-size 8192" csampler8k "$c8_samples" "$c8_lost" "$W/c8.data"
row "perf dwarf (8 KiB)" perf8k "$p8_samples" "$p8_lost" "$W/p8.data"
row "perf dwarf,32768" perf32k "$p32_samples" "$p32_lost" "$W/p32.data"
