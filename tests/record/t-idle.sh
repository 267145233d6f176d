#!/usr/bin/env bash
# record --idle, in both backends: tests/progs/offcpu-mix's thread "worker" spends a quarter of
# each cycle in each of a futex wait, a nanosleep, a blocking pipe read and spinning. With
# --idle the worker's samples split into those four shares within 3 points, each under the
# phase's own function with the right [off-cpu: SYSCALL] leaf; without --idle only the spinning
# shows and nothing is marked off-CPU. report, folded and flame --idle/--no-idle split the file.
#
# The shares expected are computed from what the program measured of itself: the time each
# blocked phase was blocked (its wall time less its CPU time and the time it waited for a CPU
# once woken, from schedstat's run delay), and the worker's CPU time for the spinning (the
# backends sample a running thread once per period of CPU time, and a thread waiting for a CPU
# on a busy machine is neither running nor blocked).
source "$CSAMPLER_ROOT/tests/lib.sh"

# shares FOLDED: "futex sleep read spin other total" in percent of the worker's weight, each
# phase counting only stacks through its own function with its own leaf.
shares() {
	awk '{ n = $NF; t += n
	       if ($0 ~ /;phase_futex;.*\[off-cpu: futex\] [0-9]+$/) f += n
	       else if ($0 ~ /;phase_sleep;.*\[off-cpu: (clock_)?nanosleep\] [0-9]+$/) s += n
	       else if ($0 ~ /;phase_read;.*\[off-cpu: read\] [0-9]+$/) r += n
	       else if ($0 ~ /;phase_spin/ && $0 !~ /off-cpu/) p += n
	       else o += n }
	     END { if (!t) t = 1; printf "%.1f %.1f %.1f %.1f %.1f %d\n", 100*f/t, 100*s/t, 100*r/t, 100*p/t, 100*o/t, t }' "$1"
}

# expected PHASES: the same four shares from the program's own figures.
expected() {
	awk '{ w[$1] = $2 - $3 - $4; c[$1] = $3 }
	     END { spin = c["spin"]
		   t = w["futex"] + w["sleep"] + w["read"] + spin
		   printf "%.1f %.1f %.1f %.1f\n", 100*w["futex"]/t, 100*w["sleep"]/t, 100*w["read"]/t, 100*spin/t }' "$1"
}

# within A B TOL: |A - B| <= TOL
within() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; }

# bpf too where it is permitted (the same off-CPU poller beside its in-kernel stacks)
modes="perf ptrace"
if "$CSAMPLER" record --mode bpf -o probe.data -- true >/dev/null 2>probe.err; then
	modes="$modes bpf"
else
	skip "idle bpf: $(head -n 1 probe.err)"
fi

for mode in $modes; do
	"$CSAMPLER" record --mode $mode --idle -o idle-$mode.data -- "$TPROG/offcpu-mix" 3 250 \
		>phases-$mode.txt 2>err-$mode.txt
	rc=$?
	if [ "$rc" != 0 ]; then
		if [ "$mode" = ptrace ] && grep -q 'ptrace' err-$mode.txt && grep -qi 'not permitted\|refused' err-$mode.txt; then
			skip "idle $mode: ptrace is not permitted here: $(tail -1 err-$mode.txt)"
			continue
		fi
		fail "idle $mode: record exit status $rc: $(tail -2 err-$mode.txt)"
		continue
	fi
	"$CSAMPLER" folded -i idle-$mode.data --comm worker >worker-$mode.folded 2>/dev/null
	read -r f s r p o total <<<"$(shares worker-$mode.folded)"
	read -r ef es er ep <<<"$(expected phases-$mode.txt)"
	ok=1
	for pair in "futex $f $ef" "sleep $s $es" "read $r $er" "spin $p $ep"; do
		set -- $pair
		within "$2" "$3" 3 || ok=0
	done
	within "$o" 0 3 || ok=0
	msg="worker's $total periods: futex $f% (want $ef), nanosleep $s% (want $es), read $r% (want $er), spin $p% (want $ep), elsewhere $o%"
	[ $ok = 1 ] && pass "idle $mode: shares within 3 points: $msg" || fail "idle $mode: shares off by more than 3 points: $msg"

	# the leaves are named, and the file says it has off-CPU time
	grep -q '\[off-cpu: futex\]' worker-$mode.folded && grep -q '\[off-cpu: read\]' worker-$mode.folded &&
		grep -q '\[off-cpu: clock_nanosleep\]' worker-$mode.folded &&
		pass "idle $mode: [off-cpu: futex], [off-cpu: clock_nanosleep] and [off-cpu: read] leaves" ||
		fail "idle $mode: a leaf is missing: $(grep -o '\[off-cpu: [^]]*\]' worker-$mode.folded | sort -u | tr '\n' ' ')"
	"$CSAMPLER" report -i idle-$mode.data >report.txt 2>&1
	grep -q '^# off-CPU: .* samples (.*) of threads off the CPU' report.txt &&
		pass "idle $mode: report's header counts the off-CPU samples" ||
		fail "idle $mode: report header: $(grep -i off report.txt | head -2)"

	# --idle and --no-idle split the file; --idle keeps off-CPU leaves only
	"$CSAMPLER" report -i idle-$mode.data --format json >all.json 2>/dev/null
	"$CSAMPLER" report -i idle-$mode.data --format json --idle --limit 0 >off.json 2>/dev/null
	"$CSAMPLER" report -i idle-$mode.data --format json --no-idle --limit 0 >on.json 2>/dev/null
	all=$(json_get all.json j.samples); off=$(json_get off.json j.samples); on=$(json_get on.json j.samples)
	offleaf=$(json_get off.json "j.functions.filter(f => f.self > 0 && !f.name.startsWith('[off-cpu: ')).length")
	onleaf=$(json_get on.json "j.functions.filter(f => f.name.startsWith('[off-cpu: ')).length")
	if [ "$((off + on))" = "$all" ] && [ "$off" = "$(json_get all.json j.offcpu_samples)" ] && [ "$off" -gt 0 ] &&
		[ "$on" -gt 0 ] && [ "$offleaf" = 0 ] && [ "$onleaf" = 0 ]; then
		pass "idle $mode: report --idle ($off) and --no-idle ($on) split the $all samples"
	else
		fail "idle $mode: report --idle $off + --no-idle $on vs $all; non-off-CPU leaves under --idle: $offleaf, off-CPU frames under --no-idle: $onleaf"
	fi
	"$CSAMPLER" folded -i idle-$mode.data --no-idle >on.folded 2>/dev/null
	"$CSAMPLER" folded -i idle-$mode.data --idle >off.folded 2>/dev/null
	if [ -s on.folded ] && ! grep -q 'off-cpu' on.folded && [ "$(grep -vc '\[off-cpu: [^]]*\] [0-9]*$' off.folded)" = 0 ]; then
		pass "idle $mode: folded --idle / --no-idle"
	else
		fail "idle $mode: folded --no-idle has off-CPU frames or --idle has others"
	fi
	"$CSAMPLER" export -f speedscope --no-idle -i idle-$mode.data -o on.json 2>/dev/null
	"$CSAMPLER" export -f speedscope --idle -i idle-$mode.data -o off.json 2>/dev/null
	if [ -s on.json ] && ! grep -q 'off-cpu' on.json && grep -q '\[off-cpu: futex\]' off.json; then
		pass "idle $mode: export --idle / --no-idle"
	else
		fail "idle $mode: export --no-idle has off-CPU frames or --idle lacks them"
	fi
	"$CSAMPLER" flame -i idle-$mode.data --dump-layout >layout.txt 2>/dev/null
	"$CSAMPLER" flame -i idle-$mode.data --dump-layout --no-idle >layout-on.txt 2>/dev/null
	if grep -q ' off-cpu \[off-cpu: futex\]$' layout.txt && [ -s layout-on.txt ] && ! grep -q ' off-cpu ' layout-on.txt; then
		pass "idle $mode: flame draws off-CPU leaves as their own kind; --no-idle drops them"
	else
		fail "idle $mode: flame's off-CPU frames: $(grep -c ' off-cpu ' layout.txt) with, $(grep -c ' off-cpu ' layout-on.txt) with --no-idle"
	fi
done

# Without --idle: the worker's samples are its spinning, and nothing is off-CPU.
for mode in $modes; do
	"$CSAMPLER" record --mode $mode -o cpu-$mode.data -- "$TPROG/offcpu-mix" 2 250 >/dev/null 2>err.txt
	rc=$?
	if [ "$rc" != 0 ]; then
		grep -qi 'not permitted\|refused' err.txt && [ $mode = ptrace ] && { skip "cpu $mode: ptrace refused"; continue; }
		fail "cpu $mode: record exit status $rc: $(tail -2 err.txt)"
		continue
	fi
	"$CSAMPLER" folded -i cpu-$mode.data --comm worker >w.folded 2>/dev/null
	"$CSAMPLER" folded -i cpu-$mode.data >all.folded 2>/dev/null
	read -r f s r p o total <<<"$(shares w.folded)"
	"$CSAMPLER" report -i cpu-$mode.data >report.txt 2>&1
	if [ "$total" -gt 50 ] && within "$p" 100 5 && ! grep -q 'off-cpu' all.folded && ! grep -q '^# off-CPU' report.txt; then
		pass "cpu $mode: without --idle only the spinning shows ($p% of the worker's $total samples), nothing off-CPU"
	else
		fail "cpu $mode: spin $p% of $total, off-CPU frames: $(grep -c off-cpu all.folded), report: $(grep '^# off-CPU' report.txt)"
	fi
done
finish
