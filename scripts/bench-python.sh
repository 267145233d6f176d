#!/usr/bin/env bash
# bench-python.sh: the cost of reading Python frames, side by side in one run. A pure-Python
# loop (fixed work, 6 nested calls deep) runs plain, under `csampler record --no-python` (native
# stacks only) and under `csampler record` (Python frames merged, the default), at RATE Hz,
# ROUNDS rounds; each round runs the three in a rotated order, so that a change of load on the
# machine falls on all of them alike. For each mode: the loop's own CPU time and wall time
# (measured inside the target), and their slowdown against the plain run of the same round
# (paired), as the median over the rounds with the spread (min..max); then the extra slowdown
# of Python frames (python - native, in points of the plain run, paired per round), and the
# recorder's own CPU time per sample (its summary line), which on a machine with few cores
# competes with the target.
# py-spy is run too when it is installed (it is not packaged by Debian, and PyPI is not
# reachable from the build machine, so usually it is not: the script says so).
# REF (a csampler binary, e.g. main's: /work/main/bin/csampler) adds its `record` with Python
# frames as one more mode of the same rounds, for a side by side of the recorder's cost.
# DEPTH sets how deep the loop runs (6 by default; 40 as a training loop's stack).
# MODE (perf, ptrace, bpf) is given to `record --mode` in the csampler and REF modes; unset,
# the recorder chooses (auto: bpf as root, else perf events).
# BPF=1 adds `record --mode bpf` with and without Python frames to the same rounds (the frames
# read by the BPF program at the sample; needs root), the recorder's CPU per Python sample side
# by side with perf mode's, and the BPF program's own time per sample with and without Python
# frames (the summary line's, from bpf_ktime_get_ns; and, with kernel.bpf_stats_enabled set to
# 1 for the run and restored after, the kernel's run time per run of the program).
#   ROUNDS=7 N=60000000 RATE=999 DEPTH=6 REF= BPF= MODE= PY=/usr/bin/python3 scripts/bench-python.sh
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-7}
N=${N:-60000000}
RATE=${RATE:-999}
CSAMPLER=${CSAMPLER:-bin/csampler}
PY=${PY:-/usr/bin/python3}
DEPTH=${DEPTH:-6}
REF=${REF:-}
BPF=${BPF:-}
MODE=${MODE:-}
W=$(mktemp -d /tmp/csampler-bench-py.XXXXXX)
STATS0=
if [ -n "$BPF" ]; then
	STATS0=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
	sysctl -q kernel.bpf_stats_enabled=1 || echo "bench-python: cannot set kernel.bpf_stats_enabled: no kernel run time" >&2
fi
trap 'rm -rf "$W"; [ -n "$STATS0" ] && sysctl -q kernel.bpf_stats_enabled="$STATS0"' EXIT
[ -x "$CSAMPLER" ] || { echo "bench-python: $CSAMPLER not built; run make" >&2; exit 1; }
cat >"$W/loop.py" <<'PYEOF'
import sys, time
def f6(n):
    s = 0
    for i in range(n):
        s += i % 7
    return s
def down(d, n):
    return down(d - 1, n) if d > 0 else f6(n)
c, w = time.process_time(), time.perf_counter()
down(int(sys.argv[2]) - 1, int(sys.argv[1]))
print("%.4f %.4f" % (time.process_time() - c, time.perf_counter() - w))
PYEOF

modes="plain native python"
[ -n "$REF" ] && modes="$modes ref refnative"
[ -n "$BPF" ] && modes="$modes bpf bpfnative"
if command -v py-spy >/dev/null; then modes="$modes pyspy"; else
	echo "py-spy: not installed (not packaged by Debian; PyPI is not reachable here): no py-spy figures"; fi

run() { # mode -> "loop_cpu_s loop_wall_s recorder_cpu_s samples"
	case $1 in
	plain) echo "$("$PY" "$W/loop.py" "$N" "$DEPTH") 0 0" ;;
	native|python|ref|refnative|bpf|bpfnative)
		local extra="" out bin=$CSAMPLER
		[ "$1" = native ] || [ "$1" = refnative ] || [ "$1" = bpfnative ] && extra=--no-python
		[ "$1" = ref ] || [ "$1" = refnative ] && bin=$REF
		if [ "$1" = bpf ] || [ "$1" = bpfnative ]; then extra="$extra --mode bpf"
		elif [ -n "$MODE" ]; then extra="$extra --mode $MODE"; fi
		out=$("$bin" record $extra -F "$RATE" -o "$W/$1.data" -- "$PY" "$W/loop.py" "$N" "$DEPTH" 2>"$W/err.$1")
		# the BPF program's time per sample: with Python frames, without; the kernel's per run
		grep -o 'program run time [0-9.]* us per run\|program time [0-9.]* us a sample with Python frames ([0-9]*), [0-9.]* us without' \
			"$W/err.$1" | tr -dc '0-9. \n' | tr '\n' ' ' >>"$W/prog.$1" 2>/dev/null || true
		echo >>"$W/prog.$1"
		grep -o 'walked in the kernel ([0-9.]* us each' "$W/err.$1" | tr -dc '0-9.\n' >>"$W/each.$1" || true
		echo "$out $(awk '/own CPU [0-9]/ { for (i = 1; i <= NF; i++) if ($i == "CPU") { c = $(i + 1); break } }
			/ samples, / { s = $2 } END { print c + 0, s + 0 }' "$W/err.$1")" ;;
	pyspy) echo "$(py-spy record -r "$RATE" -o "$W/pyspy.txt" -f raw -- "$PY" "$W/loop.py" "$N" "$DEPTH" 2>/dev/null | tail -1) 0 0" ;;
	esac
}

for r in $(seq "$ROUNDS"); do
	set -- $modes
	# rotate the order: round r starts with mode (r mod count)
	k=$(( (r - 1) % $# ))
	order="$(echo $modes | tr ' ' '\n' | tail -n +$((k + 1))) $(echo $modes | tr ' ' '\n' | head -n $k)"
	for m in $order; do echo "$r $(run "$m")" >>"$W/res.$m"; done
	echo "round $r/$ROUNDS: $(for m in $modes; do printf '%s %ss  ' "$m" "$(tail -1 "$W/res.$m" | cut -d' ' -f2)"; done)" >&2
done

# stats FILE: median and min..max of the numbers in FILE, one a line
stats() { sort -g "$1" | awk '{ a[NR] = $1 } END { m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2;
	printf "%s %s %s\n", m, a[1], a[NR] }'; }
# paired slowdown (%) of column COL of mode M against plain, per round
paired() { join <(sort -k1,1 "$W/res.$1") <(sort -k1,1 "$W/res.plain") |
	awk -v c="$2" -v n="$(awk '{ print NF; exit }' "$W/res.plain")" '{ printf "%.3f\n", 100 * ($c / $(c + n - 1) - 1) }'; }

printf "\n%s, %s rounds, %s Hz, loop of %s iterations %s calls deep, %s\n" "$("$PY" --version 2>&1)" \
	"$ROUNDS" "$RATE" "$N" "$DEPTH" "$(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-26s %22s %22s %22s %14s %9s\n" "mode" "loop CPU s [min..max]" "CPU slowdown %" \
	"wall slowdown %" "recorder us/smp" "samples"
for m in $modes; do
	cut -d' ' -f2 "$W/res.$m" >"$W/cpu"; read -r c c0 c1 <<<"$(stats "$W/cpu")"
	if [ "$m" = plain ]; then
		sd="-"; wd="-"
	else
		paired "$m" 2 >"$W/sd"; paired "$m" 3 >"$W/wd"
		sd=$(stats "$W/sd" | awk '{ printf "%+.1f [%+.1f..%+.1f]", $1, $2, $3 }')
		wd=$(stats "$W/wd" | awk '{ printf "%+.1f [%+.1f..%+.1f]", $1, $2, $3 }')
	fi
	awk '{ if ($5 > 0) printf "%.1f\n", 1e6 * $4 / $5; else print 0 }' "$W/res.$m" >"$W/us"
	us=$(stats "$W/us" | cut -d' ' -f1)
	cut -d' ' -f5 "$W/res.$m" >"$W/smp"; smp=$(stats "$W/smp" | cut -d' ' -f1)
	label=$m
	case $m in python) label="csampler (Python frames)";; native) label="csampler --no-python";;
		pyspy) label="py-spy";; ref) label="REF (Python frames)";; refnative) label="REF --no-python";; plain) label="no profiler";;
		bpf) label="bpf (Python frames)";; bpfnative) label="bpf --no-python";; esac
	printf "%-26s %22s %22s %22s %14s %9s\n" "$label" "$c [$c0..$c1]" "$sd" "$wd" \
		"$([ "$m" = plain ] || [ "$m" = pyspy ] && echo - || echo "$us")" "$([ "$smp" = 0 ] && echo - || echo "$smp")"
done
# the extra cost of Python frames: python - native, in points of the plain run, paired per round
join <(sort -k1,1 "$W/res.python") <(sort -k1,1 "$W/res.native") | join - <(sort -k1,1 "$W/res.plain") |
	awk '{ printf "%.3f %.3f\n", 100 * ($2 - $6) / $10, 100 * ($3 - $7) / $11 }' >"$W/extra"
cut -d' ' -f1 "$W/extra" >"$W/xc"; cut -d' ' -f2 "$W/extra" >"$W/xw"
printf "extra slowdown of Python frames (python - native, points of the plain run, paired per round):\n"
printf "  loop CPU time: median %s\n  loop wall time: median %s\n" \
	"$(stats "$W/xc" | awk '{ printf "%+.2f [%+.2f..%+.2f]", $1, $2, $3 }')" \
	"$(stats "$W/xw" | awk '{ printf "%+.2f [%+.2f..%+.2f]", $1, $2, $3 }')"
# the recorder's own CPU for Python frames: (python - native) recorder CPU over the Python
# run's samples, paired per round, so that what both modes pay (start-up, symbols) cancels
pyus() { join <(sort -k1,1 "$W/res.$1") <(sort -k1,1 "$W/res.$2") |
	awk '{ if ($5 > 0) printf "%.1f\n", 1e6 * ($4 - $8) / $5 }' >"$W/pyus"; stats "$W/pyus"; }
printf "recorder CPU for Python frames, per sample ((Python frames - --no-python) / samples, paired):\n"
printf "  csampler: median %s us [%s..%s]\n" $(pyus python native)
[ -n "$REF" ] && printf "  REF:      median %s us [%s..%s]\n" $(pyus ref refnative)
if [ -n "$BPF" ]; then
	printf "  bpf:      median %s us [%s..%s]\n" $(pyus bpf bpfnative)
	# prog.bpf lines: "RUN WITH N WITHOUT" (RUN absent without bpf_stats); bpfnative: "RUN"
	printf "BPF program, per sample (median over the rounds):\n"
	awk 'NF >= 3 { print $(NF - 2) }' "$W/prog.bpf" >"$W/pw"; awk 'NF >= 3 { print $NF }' "$W/prog.bpf" >"$W/pn"
	[ -s "$W/pw" ] && printf "  bpf, samples with Python frames read: %s us; its samples without: %s us\n" \
		"$(stats "$W/pw" | cut -d' ' -f1)" "$(stats "$W/pn" | cut -d' ' -f1)"
	for m in bpf bpfnative; do
		[ -s "$W/each.$m" ] && printf "  %s: %s us a target's sample, all told\n" "$m" "$(stats "$W/each.$m" | cut -d' ' -f1)"
		awk 'NF == 1 || NF == 4 { print $1 }' "$W/prog.$m" >"$W/pr"
		[ -s "$W/pr" ] && printf "  %s: kernel run time %s us per run of the program (every CPU tick, targets or not)\n" \
			"$m" "$(stats "$W/pr" | cut -d' ' -f1)"
	done
fi
exit 0
