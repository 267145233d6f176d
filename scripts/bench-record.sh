#!/usr/bin/env bash
# bench-record.sh: the cost of recording, side by side in one run. A CPU-bound workload
# (scripts/bench/deepwork.c: 2 threads, stacks 5-50 frames deep, -fomit-frame-pointer) runs
# plain, under `csampler record --mode perf` (its default 32 KiB stack copy, and 8 KiB like
# perf's), and under `perf record --call-graph dwarf` (its default 8 KiB stack copy, and 32 KiB
# like csampler's default) at the same rate, ROUNDS times interleaved; and `csampler record
# --mode bpf` (stacks walked in the kernel; what `--mode auto`, the default, picks where BPF is
# permitted: root, or CAP_BPF and CAP_PERFMON).
# Prints the median run time of the workload itself (its slowdown), the median wall time of the
# whole command (with the profiler's own work after the workload ends), samples, lost samples,
# bytes on disk per sample, complete stacks (reaching _start or clone: csampler's report; perf
# script's last frame for perf) and the recorder's CPU per sample: csampler's own CPU time, plus
# in bpf mode the BPF program's run time (kernel.bpf_stats_enabled is set to 1 for the run and
# put back; csampler reads bpf_prog_info's run_time_ns), and perf's user+system time.
# With BASE=path another csampler (the previous version) runs beside it in the same rounds, in
# perf and bpf modes. Then bpf mode's steady state (fixed cost, marginal cost per sample, cost per
# idle second), BASE beside it too, and `record -a` over 8 busy processes.
#   ROUNDS=3 UNITS=600 RATE=999 [BASE=/tmp/old/bin/csampler] scripts/bench-record.sh
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
UNITS=${UNITS:-600}
RATE=${RATE:-999}
CSAMPLER=${CSAMPLER:-bin/csampler}
PERF=${PERF:-perf}
W=$(mktemp -d /tmp/csampler-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
# bpf mode's unwind-row cache: the bench's own, empty at the start (the first round builds rows)
export XDG_CACHE_HOME="$W/cache"
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
	cat "$W/$name.err" >>"$W/$name.errs"
	local target
	target=$(sed -n 's/^deepwork: \([0-9.]*\) s$/\1/p' "$W/$name.err" | tail -1)
	echo "$target $(echo "$t1 - $t0" | bc -l)" >>"$W/$name.times"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

BPF=0
if "$CSAMPLER" record -q --mode bpf -o "$W/probe.data" -- true >/dev/null 2>"$W/probe.err"; then
	BPF=1
	stats_was=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
	sysctl -q kernel.bpf_stats_enabled=1 2>/dev/null || true
	trap 'sysctl -q kernel.bpf_stats_enabled='"$stats_was"' 2>/dev/null; rm -rf "$W"' EXIT
else
	echo "bench-record: no bpf row: $(head -n 1 "$W/probe.err")" >&2
fi
# perf's own CPU time: GNU time's user and system seconds, on stderr's last line
PTIME=""
[ -x /usr/bin/time ] && PTIME="/usr/bin/time -f cpu=%U+%S"

# ROUNDS=0: only the sections below
if [ "$ROUNDS" -gt 0 ]; then
# One run first, not counted: it builds the workload's unwind rows into the bench's row cache,
# which every bpf run of the rounds then reads (the first round's would otherwise pay for it).
[ "$BPF" = 1 ] && "$CSAMPLER" record -q --mode bpf -F "$RATE" -o "$W/warm.data" -- $WORK >/dev/null 2>&1
for r in $(seq "$ROUNDS"); do
	run plain $WORK
	run csampler "$CSAMPLER" record -q --mode perf -F "$RATE" -o "$W/c.data" -- $WORK
	run csampler8k "$CSAMPLER" record -q --mode perf -F "$RATE" --stack-size 8192 -o "$W/c8.data" -- $WORK
	[ "$BPF" = 1 ] && run csamplerbpf "$CSAMPLER" record -q --mode bpf -F "$RATE" -o "$W/cb.data" -- $WORK
	if [ -n "${BASE:-}" ]; then
		run basecs "$BASE" record -q --mode perf -F "$RATE" -o "$W/bc.data" -- $WORK
		[ "$BPF" = 1 ] && run basebpf "$BASE" record -q --mode bpf -F "$RATE" -o "$W/bb.data" -- $WORK
	fi
	run perf8k $PTIME "$PERF" record -q --call-graph dwarf -F "$RATE" -o "$W/p8.data" -- $WORK
	run perf32k $PTIME "$PERF" record -q --call-graph dwarf,32768 -F "$RATE" -o "$W/p32.data" -- $WORK
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

# complete stacks: csampler's own count; perf's from perf script (the last frame of each sample)
c_complete() { "$CSAMPLER" report -i "$1" --format json | node -e "console.log(JSON.parse(require('fs').readFileSync(0)).unwind.complete_pct.toFixed(1))"; }
p_complete() {
	"$PERF" script -F ip,sym -i "$1" 2>/dev/null | awk '
		NF >= 2 { last = $2; next } { if (last != "") { n++; if (last ~ /^(_start|__libc_start_main|__libc_start_call_main|clone3?|start_thread)$/) ok++ } last = "" }
		END { if (last != "") { n++; if (last ~ /^(_start|__libc_start_main|__libc_start_call_main|clone3?|start_thread)$/) ok++ } printf "%.1f", n ? 100 * ok / n : 0 }'
}
# the recorder's CPU per sample in microseconds, over all rounds: csampler's own CPU line (and the
# BPF program's run time in bpf mode), perf's GNU time line
c_cpu_us() { # NAME SAMPLES_PER_RUN
	awk -v n="$2" -v r="$ROUNDS" '
		/^csampler: own CPU [0-9]/ { cpu += $4 }
		/program run time/ { for (i = 1; i <= NF; i++) if ($i == "time") { us = $(i + 1); runs = $(i + 6) } bpf += us * runs / 1e6 }
		END { printf "%.1f", n ? (cpu + bpf) * 1e6 / (n * r) : 0 }' "$W/$1.errs"
}
p_cpu_us() {
	awk -v n="$2" -v r="$ROUNDS" -F'cpu=' 'NF > 1 { split($2, a, "+"); cpu += a[1] + a[2] } END { printf "%.1f", n ? cpu * 1e6 / (n * r) : 0 }' "$W/$1.errs"
}

plain_t=$(cut -d' ' -f1 "$W/plain.times" | median)
printf '\nbench-record: %s, %d rounds, %s Hz, workload "%s", %s, load %s\n' "$(date -u +%F)" "$ROUNDS" "$RATE" "$WORK" "$(nproc) CPUs" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-26s %10s %9s %10s %9s %7s %12s %9s %11s\n' profiler "run (s)" slowdown "wall (s)" samples lost "bytes/sample" complete "cpu/sample"
row() { # name times samples lost file complete cpu_us
	local t w
	t=$(cut -d' ' -f1 "$W/$2.times" | median)
	w=$(cut -d' ' -f2 "$W/$2.times" | median)
	local bytes=""
	[ -n "$5" ] && bytes=$(echo "scale=0; $(stat -c %s "$5") / $3" | bc)
	printf '%-26s %10.3f %8.3fx %10.3f %9s %7s %12s %8s%% %8s us\n' "$1" "$t" "$(echo "$t / $plain_t" | bc -l)" "$w" "$3" "$4" "$bytes" "${6:--}" "${7:--}"
}
printf '%-26s %10.3f %8.3fx %10.3f\n' plain "$plain_t" 1 "$(cut -d' ' -f2 "$W/plain.times" | median)"
row "csampler --mode perf" csampler "$c_samples" "$c_lost" "$W/c.data" "$(c_complete "$W/c.data")" "$(c_cpu_us csampler "$c_samples")"
row "  --stack-size 8192" csampler8k "$c8_samples" "$c8_lost" "$W/c8.data" "$(c_complete "$W/c8.data")" "$(c_cpu_us csampler8k "$c8_samples")"
if [ "$BPF" = 1 ]; then
	cb_samples=$(info_field "$W/cb.data" samples)
	cb_lost=$(info_field "$W/cb.data" lost)
	row "csampler --mode bpf" csamplerbpf "$cb_samples" "$cb_lost" "$W/cb.data" "$(c_complete "$W/cb.data")" "$(c_cpu_us csamplerbpf "$cb_samples")"
	awk -v n="$cb_samples" -v r="$ROUNDS" '
		/^csampler: own CPU [0-9]/ { cpu += $4 }
		/program run time/ { for (i = 1; i <= NF; i++) if ($i == "time") { us = $(i + 1); runs = $(i + 6) } bpf += us * runs / 1e6 }
		/completed from a stack slice/ { for (i = 1; i <= NF; i++) if ($i == "completed") sl += $(i - 3) }
		END { printf "  (bpf: user space %.1f us, BPF program %.1f us per sample; %.1f%% of samples sent a stack slice)\n",
			cpu * 1e6 / (n * r), bpf * 1e6 / (n * r), 100 * sl / (n * r) }' "$W/csamplerbpf.errs"
fi
if [ -n "${BASE:-}" ]; then
	bc_samples=$(info_field "$W/bc.data" samples)
	row "previous --mode perf" basecs "$bc_samples" "$(info_field "$W/bc.data" lost)" "$W/bc.data" "$(c_complete "$W/bc.data")" "$(c_cpu_us basecs "$bc_samples")"
	if [ "$BPF" = 1 ]; then
		bb_samples=$(info_field "$W/bb.data" samples)
		row "previous --mode bpf" basebpf "$bb_samples" "$(info_field "$W/bb.data" lost)" "$W/bb.data" "$(c_complete "$W/bb.data")" "$(c_cpu_us basebpf "$bb_samples")"
	fi
fi
# csampler's own CPU while the workload ran (its summary's line; versions before it print none)
c_during() {
	[ -f "$W/$1.errs" ] || { printf -; return; }
	awk '/^csampler: own CPU while the command ran:/ { v[++n] = $8 }
		END { if (!n) { printf "-"; exit }
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
			printf "%.0f ms (%.0f-%.0f)", 1000 * ((n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2), 1000 * v[1], 1000 * v[n] }' "$W/$1.errs"
}
during="perf mode $(c_during csampler), bpf $(c_during csamplerbpf)"
[ -n "${BASE:-}" ] && during="$during; previous: perf mode $(c_during basecs), bpf $(c_during basebpf)"
printf '  (csampler'"'"'s own CPU while the workload ran, median (min-max) of the runs: %s)\n' "$during"
row "perf dwarf (8 KiB)" perf8k "$p8_samples" "$p8_lost" "$W/p8.data" "$(p_complete "$W/p8.data")" "$(p_cpu_us perf8k "$p8_samples")"
row "perf dwarf,32768" perf32k "$p32_samples" "$p32_lost" "$W/p32.data" "$(p_complete "$W/p32.data")" "$(p_cpu_us perf32k "$p32_samples")"
fi

# The steady state of bpf mode: a short and a long launch run of the workload (SHORT_UNITS and
# LONG_UNITS), STEADY_ROUNDS times interleaved, for $CSAMPLER and, with BASE=path to another
# csampler (the previous version), for that one too. The short run's cost is mostly fixed
# (loading the program, symbolization's setup); the marginal cost per sample is the long run's
# CPU (csampler's own plus the BPF program's) minus the short run's, over the difference in
# samples. Idle runs (`sleep 0` and `sleep IDLE_SECONDS`, no samples) give the cost per second
# of waiting.
steady() { # NAME BINARY: appends "kind samples cpu_s" lines to $W/steady-NAME
	local u
	for u in "${SHORT_UNITS:-300}" "${LONG_UNITS:-3000}"; do
		"$2" record --mode bpf -F "$RATE" -o "$W/s.data" -- build/bench/deepwork "$u" 2 2>&1 >/dev/null | awk -v k="$u" '
			/ samples, / { s = $2 }
			/^csampler: own CPU [0-9]/ { cpu = $4 }
			/program run time/ { for (i = 1; i <= NF; i++) if ($i == "time") { us = $(i + 1); runs = $(i + 6) } bpf = us * runs / 1e6 }
			END { print k, s, cpu, bpf }' >>"$W/steady-$1"
	done
	for u in 0 "${IDLE_SECONDS:-10}"; do
		"$2" record --mode bpf -o "$W/s.data" -- sleep "$u" 2>&1 >/dev/null |
			awk -v u="$u" '/^csampler: own CPU [0-9]/ { print "sleep" u, 0, $4, 0 }' >>"$W/steady-$1"
	done
}
if [ "$BPF" = 1 ] && [ "${STEADY_ROUNDS:-2}" -gt 0 ]; then
	for r in $(seq "${STEADY_ROUNDS:-2}"); do
		steady new "$CSAMPLER"
		[ -n "${BASE:-}" ] && steady base "$BASE"
	done
	printf '
bpf mode, steady state: deepwork %s and %s units, %s rounds interleaved (means), load %s\n' \
		"${SHORT_UNITS:-300}" "${LONG_UNITS:-3000}" "${STEADY_ROUNDS:-2}" "$(cut -d' ' -f1-3 /proc/loadavg)"
	printf '%-28s %9s %12s %9s %12s %14s %14s %12s\n' csampler "short: n" "CPU (ms)" "long: n" "CPU (ms)" "fixed (ms)" "marginal/sample" "idle (ms/s)"
	for k in new${BASE:+ base}; do
		awk -v name="$([ "$k" = new ] && echo "$CSAMPLER" || echo "$BASE")" -v short="${SHORT_UNITS:-300}" -v idle_s="${IDLE_SECONDS:-10}" '
			$1 == short { ns++; s1 += $2; c1 += $3 + $4; u1 += $3 } $1 == "sleep0" { n0++; c0 += $3 }
			$1 == "sleep" idle_s { ni++; ci += $3 }
			$1 !~ /^sleep/ && $1 != short { nl++; s2 += $2; c2 += $3 + $4; u2 += $3 }
			END { s1 /= ns; c1 /= ns; u1 /= ns; s2 /= nl; c2 /= nl; u2 /= nl; ci /= ni; c0 /= n0
				m = (c2 - c1) / (s2 - s1) * 1e6; mu = (u2 - u1) / (s2 - s1) * 1e6
				# fixed: the short run less its samples at the marginal cost; idle: sleep N less
				# sleep 0, per second
				printf "%-28s %9d %12.0f %9d %12.0f %14.0f %8.1f us (%.1f user space) %8.1f\n", name, s1, c1 * 1e3, s2, c2 * 1e3,
					(c1 - s1 * m / 1e6) * 1e3, m, mu, (ci - c0) / idle_s * 1e3 }' "$W/steady-$k"
	done
fi

# 8 busy processes (deepwork, one thread each) recorded for ALL_SECONDS, ALL_ROUNDS times
# interleaved: `--mode bpf -a` (every process of the machine) with an empty unwind-row cache, then
# again with the cache that run filled (a second recording on the same machine), and perf mode attached to the 8 (`-p`, the closest it
# comes: it cannot record every process). Each: samples, lost, csampler's whole cost (its own
# CPU time, plus the BPF program's run time on every CPU in bpf mode) per sample and as a share
# of the machine's CPU time over the run; with BASE=path, that csampler's `-a` too (cache filled).
# csampler's start-up (loading the program, symbolization's set-up) is a fixed cost: ALL_SECONDS=60
# shows what a recording left on pays. ALL_PYTHON=N makes N of the 8 Python loops instead
# (tests/python/split.py on /usr/bin/python3): a node of Python jobs.
if [ "$BPF" = 1 ] && [ "${ALL_ROUNDS:-2}" -gt 0 ]; then
	pids=()
	for i in 1 2 3 4 5 6 7 8; do
		if [ "$i" -le "${ALL_PYTHON:-0}" ]; then
			/usr/bin/python3 tests/python/split.py 100000 >/dev/null 2>&1 & pids+=($!)
		else
			build/bench/deepwork 100000 1 >/dev/null 2>&1 & pids+=($!)
		fi
	done
	sleep 0.5
	plist=$(IFS=,; echo "${pids[*]}")
	for r in $(seq "${ALL_ROUNDS:-2}"); do
		rm -rf "$W/cold"
		XDG_CACHE_HOME="$W/cold" "$CSAMPLER" record -q -a -F "$RATE" --duration "${ALL_SECONDS:-5}" -o "$W/allc.data" >/dev/null 2>>"$W/all-cold.err" || true
		XDG_CACHE_HOME="$W/cold" "$CSAMPLER" record -q -a -F "$RATE" --duration "${ALL_SECONDS:-5}" -o "$W/all.data" >/dev/null 2>>"$W/all-warm.err" || true
		"$CSAMPLER" record -q --mode perf -F "$RATE" -p "$plist" --duration "${ALL_SECONDS:-5}" -o "$W/allp.data" >/dev/null 2>>"$W/all-perf.err" || true
		if [ -n "${BASE:-}" ]; then # the previous version, its row cache filled by a first run
			[ "$r" = 1 ] && XDG_CACHE_HOME="$W/basec" "$BASE" record -q -a -F "$RATE" --duration 2 -o "$W/allb.data" >/dev/null 2>&1 || true
			XDG_CACHE_HOME="$W/basec" "$BASE" record -q -a -F "$RATE" --duration "${ALL_SECONDS:-5}" -o "$W/allb.data" >/dev/null 2>>"$W/all-base.err" || true
		fi
	done
	kill "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	printf '\n8 busy processes, %s s each, %s rounds interleaved (sums over the rounds):\n' "${ALL_SECONDS:-5}" "${ALL_ROUNDS:-2}"
	printf '%-34s %8s %6s %13s %13s %11s %9s\n' recording samples lost "csampler CPU" "BPF program" "cpu/sample" "machine"
	for k in cold:"bpf -a, empty row cache" warm:"bpf -a, row cache filled" perf:"perf mode, -p the 8 pids" \
		${BASE:+base:"previous version: bpf -a, cache filled"}; do
		awk -v cpus="$(nproc)" -v name="${k#*:}" '
			/ samples, / { for (i = 1; i <= NF; i++) { if ($i == "samples,") s += $(i - 1); if ($i == "lost,") l += $(i - 1); if ($i == "s," && $(i + 2) ~ /KB|MB/) d += $(i - 1) } }
			/^csampler: own CPU [0-9]/ { cpu += $4 }
			/program run time/ { for (i = 1; i <= NF; i++) if ($i == "time") { us = $(i + 1); runs = $(i + 6) } bpf += us * runs / 1e6 }
			END { printf "%-34s %8d %6d %11.3f s %11.3f s %8.1f us %8.2f%%\n", name, s, l, cpu, bpf,
				s ? (cpu + bpf) * 1e6 / s : 0, d ? 100 * (cpu + bpf) / (d * cpus) : 0 }' "$W/all-${k%%:*}.err"
	done
	grep -h -o 'start-up [0-9]* ms of CPU[^;]*; unwind tables: [^;]*' "$W/all-cold.err" "$W/all-warm.err" | sed 's/^/  bpf: /'
fi
