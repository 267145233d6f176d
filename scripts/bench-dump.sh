#!/usr/bin/env bash
# bench-dump.sh: how long `csampler dump` takes on a job of NPROC processes x NTHREADS threads
# (tests/progs/dump-ranks: every thread parked in a wait, one rank spinning), side by side in one
# run with what a user would otherwise run: eu-stack (elfutils) with inline frames and source
# lines on each process one after the other, and the same in parallel (xargs -P); gdb's
# "thread apply all bt" per process with GDB=1 (seconds per process). The configurations are
# interleaved, ROUNDS times; prints the fastest and the median wall time of each, csampler's own
# figures (time to read every process, the longest a process was stopped) and whether the dump
# took under 1 s (issue 23's bar).
#   ROUNDS=5 NPROC=8 NTHREADS=20 [GDB=1] scripts/bench-dump.sh
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
NPROC=${NPROC:-8}
NTHREADS=${NTHREADS:-20}
CSAMPLER=${CSAMPLER:-bin/csampler}
W=$(mktemp -d /tmp/csampler-bench-dump.XXXXXX)
[ -x bin/tests/dump-ranks ] || make -s bin/tests/dump-ranks
bin/tests/dump-ranks "$NPROC" "$NTHREADS" 3 >"$W/ready" &
L=$!
trap 'kill $(pgrep -P $L) $L 2>/dev/null; rm -rf "$W"' EXIT
for _ in $(seq 1 200); do grep -q '^ready' "$W/ready" && break; sleep 0.05; done
PIDS=$(sed 's/^ready //' "$W/ready")
LIST=$(echo "$PIDS" | tr ' ' ',')
now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }
run_csampler() { "$CSAMPLER" dump -p "$LIST" --format json >"$W/dump.json"; }
run_eustack() { for p in $PIDS; do eu-stack -i -s -p "$p" >/dev/null 2>&1 || true; done; }
run_eustack_par() { echo "$PIDS" | tr ' ' '\n' | xargs -P "$NPROC" -I{} sh -c 'eu-stack -i -s -p {} >/dev/null 2>&1 || true'; }
run_gdb() { for p in $PIDS; do gdb -q -p "$p" -batch -ex 'thread apply all bt' >/dev/null 2>&1 || true; done; }
CONFIGS="csampler"
command -v eu-stack >/dev/null && CONFIGS="$CONFIGS eustack eustack_par"
[ "${GDB:-0}" = 1 ] && command -v gdb >/dev/null && CONFIGS="$CONFIGS gdb"
declare -A times
reads="" stops=""
for r in $(seq 1 "$ROUNDS"); do
	for c in $CONFIGS; do
		a=$(now); "run_$c"; b=$(now)
		times[$c]="${times[$c]:-} $(secs "$a" "$b")"
		if [ "$c" = csampler ]; then
			reads="$reads $(node -e "const j=JSON.parse(require('fs').readFileSync('$W/dump.json','utf8')); console.log(j.read_ms.toFixed(1))")"
			stops="$stops $(node -e "const j=JSON.parse(require('fs').readFileSync('$W/dump.json','utf8')); console.log(Math.max(...j.processes.map(p => p.stopped_ms)).toFixed(1))")"
		fi
	done
done
stat() { echo "$1" | tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {printf "%.3f s fastest, %.3f s median", v[1], v[int((NR+1)/2)]}'; }
echo "dump of $NPROC processes x $NTHREADS threads, $ROUNDS rounds interleaved, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "  %-36s %s\n" "csampler dump (all at once)" "$(stat "${times[csampler]}")"
[ -n "${times[eustack]:-}" ] && printf "  %-36s %s\n" "eu-stack -i -s, one after the other" "$(stat "${times[eustack]}")"
[ -n "${times[eustack_par]:-}" ] && printf "  %-36s %s\n" "eu-stack -i -s, $NPROC in parallel" "$(stat "${times[eustack_par]}")"
[ -n "${times[gdb]:-}" ] && printf "  %-36s %s\n" "gdb thread apply all bt, serial" "$(stat "${times[gdb]}")"
echo "  csampler: every process read in $(echo $reads | tr ' ' '\n' | sort -n | head -1)-$(echo $reads | tr ' ' '\n' | sort -n | tail -1) ms; a process stopped at most $(echo $stops | tr ' ' '\n' | sort -n | tail -1) ms"
med=$(echo "${times[csampler]}" | tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
med=$(printf "%.3f" "$med")
if [ "$(echo "$med < 1" | bc)" = 1 ]; then echo "  under 1 s: yes (median $med s)"; else echo "  under 1 s: NO (median $med s)"; fi
