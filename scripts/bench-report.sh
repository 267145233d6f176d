#!/usr/bin/env bash
# bench-report.sh: complete profiles, side by side in one run. The same deep-stack workload
# (scripts/bench/deepwork.c, -fomit-frame-pointer, 2 threads, stacks 5-50 frames of 512 bytes)
# is profiled by `csampler record` + `csampler report` and by `perf record --call-graph dwarf`
# (perf's default 8 KiB stack copy) + `perf script`, at the same rate. Prints bytes per sample on
# disk, the share of complete stacks (outermost frame _start/__libc_start_* or
# clone/clone3/start_thread), post-processing time (from the workload's exit to a finished
# report: csampler's finalization + report, against perf record's exit + perf script), total
# wall time, and the top-10 self functions of each. Then csampler's complete share and cost for
# stack copies of 8, 16, 32 and 64 KiB (how the 32 KiB default was chosen).
#   UNITS=600 RATE=999 SWEEP=1 scripts/bench-report.sh
#   WORKLOAD=splat scripts/bench-report.sh
set -eu
cd "$(dirname "$0")/.."
UNITS=${UNITS:-600}
RATE=${RATE:-999}
SWEEP=${SWEEP:-1}
CSAMPLER=${CSAMPLER:-bin/csampler}
PERF=${PERF:-perf}
W=$(mktemp -d /tmp/csampler-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p build/bench
gcc -O2 -g -fomit-frame-pointer -pthread -o build/bench/deepwork scripts/bench/deepwork.c
# WORKLOAD=deepwork (default) or splat (splat-train --preset micro, CPU backend: real inlining,
# libm, a thread pool). Both print their own run time, so post-processing can be told apart.
case "${WORKLOAD:-deepwork}" in
deepwork) WORK="build/bench/deepwork $UNITS 2" ;;
splat) WORK="bin/splat-train --preset micro --log-interval 0 --threads 2"; SWEEP=0 ;;
*) echo "bench-report: WORKLOAD is deepwork or splat" >&2; exit 1 ;;
esac
now() { date +%s.%N; }
target_time() { sed -n -e 's/^deepwork: \([0-9.]*\) s$/\1/p' -e 's/^time \([0-9.]*\) s .*/\1/p' "$1" | tail -1; }
jq_node() { node -e "const j=JSON.parse(require('fs').readFileSync('$1','utf8')); $2"; }

# --- csampler ---
t0=$(now)
"$CSAMPLER" record -q -F "$RATE" -o "$W/c.data" -- $WORK >"$W/c.err" 2>&1
t1=$(now)
"$CSAMPLER" report -i "$W/c.data" >"$W/c.txt"
t2=$(now)
"$CSAMPLER" report -i "$W/c.data" --format json --limit 0 >"$W/c.json" # for this script's figures
c_target=$(target_time "$W/c.err")
c_post=$(echo "$t1 - $t0 - $c_target + $t2 - $t1" | bc -l)
c_total=$(echo "$t2 - $t0" | bc -l)
c_samples=$(jq_node "$W/c.json" "console.log(j.samples)")
c_complete=$(jq_node "$W/c.json" "console.log(j.unwind.complete_pct.toFixed(1))")
c_bytes=$(echo "$(stat -c %s "$W/c.data") / $c_samples" | bc -l)
jq_node "$W/c.json" "j.functions.filter(f => f.self > 0).slice(0, 10).forEach(f => console.log(f.self_pct.toFixed(2) + ' ' + f.name))" >"$W/c.top"

# --- perf ---
t0=$(now)
"$PERF" record -q --call-graph dwarf -F "$RATE" -o "$W/p.data" -- $WORK >"$W/p.err" 2>&1
t1=$(now)
"$PERF" script -i "$W/p.data" >"$W/p.script" 2>/dev/null
t2=$(now)
p_target=$(target_time "$W/p.err")
p_post=$(echo "$t1 - $t0 - $p_target + $t2 - $t1" | bc -l)
p_script=$(echo "$t2 - $t1" | bc -l)
p_total=$(echo "$t2 - $t0" | bc -l)
# perf script: a header line per sample, then one frame per line (leaf first), then a blank line.
awk -v top="$W/p.top" '
	function fname(line,  f) { f = line; sub(/^[ \t]*[0-9a-f]+ /, "", f); sub(/ \(.*\)$/, "", f); sub(/\+0x[0-9a-f]+$/, "", f); return f }
	/^[^ \t]/ { insample = 1; nframes = 0; next }
	/^[ \t]+[0-9a-f]+ / && insample { nframes++; f = fname($0); if (nframes == 1) leaf = f; last = f; next }
	/^$/ { if (insample && nframes) { n++; self[leaf]++; if (last ~ /^(_start|__libc_start_main.*|__libc_start_call_main|clone|clone3|__clone3|start_thread)$/) ok++ } insample = 0 }
	END { if (insample && nframes) { n++; self[leaf]++; if (last ~ /^(_start|__libc_start_main.*|__libc_start_call_main|clone|clone3|__clone3|start_thread)$/) ok++ }
	      printf "%d %.1f\n", n, n ? 100 * ok / n : 0
	      for (f in self) printf "%.2f %s\n", 100 * self[f] / n, f | "sort -rn | head -10 > \"" top "\"" }
' "$W/p.script" >"$W/p.stats"
read -r p_samples p_complete <"$W/p.stats"
p_bytes=$(echo "$(stat -c %s "$W/p.data") / $p_samples" | bc -l)

printf '\nbench-report: %s, %s Hz, workload "%s", %s CPUs\n' "$(date -u +%F)" "$RATE" "$WORK" "$(nproc)"
printf '%-34s %14s %14s %8s\n' "" "csampler" "perf" "ratio"
printf '%-34s %14d %14d\n' "samples" "$c_samples" "$p_samples"
printf '%-34s %14.0f %14.0f %7.1fx\n' "bytes per sample on disk" "$c_bytes" "$p_bytes" "$(echo "$p_bytes / $c_bytes" | bc -l)"
printf '%-34s %13s%% %13s%%\n' "complete stacks" "$c_complete" "$p_complete"
printf '%-34s %14.3f %14.3f %7.1fx\n' "post-processing (s)" "$c_post" "$p_post" "$(echo "$p_post / $c_post" | bc -l)"
printf '%-34s %14.3f %14.3f %7.1fx\n' "  vs perf script alone (s)" "$c_post" "$p_script" "$(echo "$p_script / $c_post" | bc -l)"
printf '%-34s %14.3f %14.3f %7.1fx\n' "record + report wall (s)" "$c_total" "$p_total" "$(echo "$p_total / $c_total" | bc -l)"
printf '\ntop-10 self functions\n%-40s %8s   %-40s %8s\n' "csampler" "%" "perf" "%"
paste -d'|' "$W/c.top" "$W/p.top" | awk -F'|' '{ split($1, a, " "); split($2, b, " ");
	printf "%-40s %7s%%   %-40s %7s%%\n", substr(a[2], 1, 40), a[1], substr(b[2], 1, 40), b[1] }'

if [ "$SWEEP" = 1 ]; then
	printf '\ncsampler --stack-size sweep (same workload)\n%-12s %10s %10s %12s\n' "stack size" "complete" "run (s)" "bytes/sample"
	for size in 8192 16384 32768 65528; do
		"$CSAMPLER" record -q -F "$RATE" --stack-size "$size" -o "$W/s.data" -- $WORK >/dev/null 2>"$W/s.err"
		"$CSAMPLER" report -i "$W/s.data" --format json >"$W/s.json"
		printf '%-12s %9s%% %10s %12.0f\n' "$size" "$(jq_node "$W/s.json" "console.log(j.unwind.complete_pct.toFixed(1))")" \
			"$(target_time "$W/s.err")" "$(echo "$(stat -c %s "$W/s.data") / $(jq_node "$W/s.json" "console.log(j.samples)")" | bc -l)"
	done
fi
