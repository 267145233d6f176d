#!/usr/bin/env bash
# bench-python.sh: the cost of reading Python frames, side by side in one run. A pure-Python
# loop (fixed work, 6 nested calls deep) runs plain, under `csampler record` (Python frames
# merged, the default) and under `csampler record --no-python` (native stacks only), at RATE Hz,
# ROUNDS times interleaved. Prints the median CPU time of the loop itself (its slowdown: on a
# machine with few cores the recorder's own work competes with the target) and the recorder's
# CPU time per sample. py-spy is run too when it is installed (it is not packaged by Debian
# and PyPI is not reachable from the build machine, so usually it is not: the script says so).
#   ROUNDS=3 N=20000000 RATE=999 scripts/bench-python.sh
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
N=${N:-20000000}
RATE=${RATE:-999}
CSAMPLER=${CSAMPLER:-bin/csampler}
PY=${PY:-python3}
W=$(mktemp -d /tmp/csampler-bench-py.XXXXXX)
trap 'rm -rf "$W"' EXIT
cat >"$W/loop.py" <<'PYEOF'
import sys, time
def f6(n):
    s = 0
    for i in range(n):
        s += i % 7
    return s
def f5(n): return f6(n)
def f4(n): return f5(n)
def f3(n): return f4(n)
def f2(n): return f3(n)
def f1(n): return f2(n)
t = time.process_time()
f1(int(sys.argv[1]))
print("%.4f" % (time.process_time() - t))
PYEOF

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
run() { # mode -> prints "loop_cpu_s recorder_cpu_s samples"
	case $1 in
	plain) echo "$("$PY" "$W/loop.py" "$N") 0 0" ;;
	python|native)
		local extra=""
		[ "$1" = native ] && extra=--no-python
		local loop
		loop=$( { /usr/bin/time -f "%U %S" -o "$W/time.$1" "$CSAMPLER" record -q $extra -F "$RATE" \
			-o "$W/$1.data" -- "$PY" "$W/loop.py" "$N"; } 2>/dev/null)
		local samples
		samples=$("$CSAMPLER" info -i "$W/$1.data" 2>/dev/null | awk '/^samples:/ { print $2 }')
		# /usr/bin/time measures csampler and the target together: take the target's out
		local both
		both=$(awk '{ print $1 + $2 }' "$W/time.$1")
		echo "$loop $(awk -v b="$both" -v l="$loop" 'BEGIN { print b - l }') $samples" ;;
	pyspy) local loop
		loop=$(py-spy record -r "$RATE" -o "$W/pyspy.txt" -f raw -- "$PY" "$W/loop.py" "$N" 2>/dev/null | tail -1)
		echo "$loop 0 0" ;;
	esac
}
modes="plain python native"
if command -v py-spy >/dev/null; then modes="$modes pyspy"; else
	echo "py-spy: not installed (not packaged by Debian; PyPI unreachable here): no py-spy figures"; fi
command -v /usr/bin/time >/dev/null || { echo "bench-python: needs /usr/bin/time (apt-get install time)"; exit 1; }
for r in $(seq "$ROUNDS"); do
	for m in $modes; do run "$m" >>"$W/res.$m"; done
done
base=$(cut -d' ' -f1 "$W/res.plain" | median)
printf "%-32s %12s %10s %10s %18s\n" "mode ($ROUNDS rounds, $RATE Hz)" "loop CPU s" "slowdown" "samples" "recorder us/sample"
for m in $modes; do
	loop=$(cut -d' ' -f1 "$W/res.$m" | median)
	rec=$(cut -d' ' -f2 "$W/res.$m" | median)
	smp=$(cut -d' ' -f3 "$W/res.$m" | median)
	label=$m
	case $m in python) label="csampler (Python frames)";; native) label="csampler --no-python";;
		pyspy) label="py-spy";; plain) label="no profiler";; esac
	printf "%-32s %12s %9.1f%% %10s %18s\n" "$label" "$loop" \
		"$(awk -v l="$loop" -v b="$base" 'BEGIN { print 100 * (l - b) / b }')" "$smp" \
		"$(awk -v r="$rec" -v s="$smp" 'BEGIN { if (s > 0) printf "%.0f", 1e6 * r / s; else print "-" }')"
done
