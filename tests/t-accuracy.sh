#!/usr/bin/env bash
# t-accuracy.sh: end-to-end accuracy of unwinding and symbols. Records the test programs of
# tests/progs/ (accuracy: 50/30/20% in three leaves through 24-deep chains on two threads, one
# leaf inlined; cxx_work: C++ templates; accuracy-stripped) and checks what `report` and `folded`
# show: self percentages within 3 points of the truth, >= 99% complete stacks, the inlined leaf as
# its own frame, demangled C++ names, basename+0xOFFSET for a stripped binary, and a report that
# does not change when the program is deleted or rebuilt after recording.
source "$(dirname "$0")/lib.sh"

for p in accuracy accuracy-stripped cxx_work; do
	if [ ! -x "$TPROG/$p" ]; then
		fail "setup: $TPROG/$p is not built (make test-programs)"
		finish
	fi
done

# record NAME PROG ARGS...: record into NAME.csp, then NAME.json and NAME.folded.
record() {
	local name=$1; shift
	if ! "$CSAMPLER" record -q -o "$name.csp" "$@" >"$name.out" 2>&1; then
		fail "$name: csampler record failed: $(tail -n 3 "$name.out" | tr '\n' ' ')"
		return 1
	fi
	"$CSAMPLER" report -i "$name.csp" --format json --limit 100000 >"$name.json" 2>"$name.err" &&
		"$CSAMPLER" folded -i "$name.csp" >"$name.folded" 2>>"$name.err" || {
		fail "$name: report/folded failed: $(tail -n 3 "$name.err" | tr '\n' ' ')"
		return 1
	}
}

# self_pct NAME FUNCTION: the function's self percentage in NAME.json (0 when absent).
self_pct() {
	json_get "$1.json" "(j.functions.find(f => f.name === '$2') || {self: 0}).self * 100 / j.samples"
}
# The truth (50/30/20) is the split of the program's own work among its leaves: the share of
# samples whose deepest user frame is FN, of those with a user frame (NAME.folded). Kernel frames
# on top (an interrupt's return, a context switch) are the kernel's time, not the split's: on a
# loaded VM bpf mode's per-CPU timer lands 5-10% of its samples there (pvm_irq_enable under
# finish_task_switch or irqentry_exit_to_user_mode), which moved work_alpha's self share 4 points.
user_leaf_pct() {
	awk -v fn="$2" '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";")
		while (k > 0 && f[k] ~ /_\[k\]$/) k--
		if (k < 2) next
		leaf = f[k]; sub(/_\[i\]$/, "", leaf); all += n; if (leaf == fn) hit += n }
		END { printf "%.2f", all ? 100 * hit / all : 0 }' "$1.folded"
}

# within ACTUAL TRUTH POINTS: |ACTUAL - TRUTH| <= POINTS
within() {
	awk -v a="$1" -v t="$2" -v p="$3" 'BEGIN { d = a - t; if (d < 0) d = -d; exit !(d <= p) }'
}

if record acc "$TPROG/accuracy" 5; then
	for pair in work_alpha:50 work_beta:30 work_gamma:20; do
		fn=${pair%%:*} truth=${pair##*:}
		pct=$(user_leaf_pct acc "$fn")
		if within "$pct" "$truth" 3; then
			pass "accuracy: $fn $(printf %.1f "$pct")% of the user leaves (truth $truth%; self $(printf %.1f "$(self_pct acc "$fn")")% of all samples)"
		else
			fail "accuracy: $fn ${pct}% of the user leaves, truth $truth% (more than 3 points off; self $(self_pct acc "$fn")% of all samples)"
		fi
	done
	complete=$(json_get acc.json "j.unwind.complete_pct")
	if awk -v c="$complete" 'BEGIN { exit !(c >= 99) }'; then
		pass "accuracy: complete stacks $complete%"
	else
		fail "accuracy: complete stacks $complete% < 99% (unwind: $(json_get acc.json "JSON.stringify(j.unwind)"))"
	fi
	threads=$(json_get acc.json "j.threads.filter(t => t.samples > 0).length")
	check "accuracy: samples from both threads ($threads)" test "$threads" = 2
	check "accuracy: work_gamma is an inlined frame of gamma_caller" \
		grep -q 'gamma_caller;work_gamma_\[i\] ' acc.folded
	check "accuracy: work_gamma marked inlined in the report" \
		test "$(json_get acc.json "(j.functions.find(f => f.name === 'work_gamma') || {}).inlined")" = true
	# Every leaf sample of the workload went through all 24 levels (counted among the work_*
	# samples only: one taken in dispatch or gamma_caller's own code is under the levels too,
	# and made a fresh-clone run read 9858 of 9857)
	deep=$(awk '/;level_00;.*;level_23;dispatch;.*work_(alpha|beta|gamma)/ { n += $NF } END { print n + 0 }' acc.folded)
	total=$(awk '/work_(alpha|beta|gamma)/ { n += $NF } END { print n + 0 }' acc.folded)
	check "accuracy: leaf stacks are 24 levels deep ($deep of $total)" test "$deep" = "$total" -a "$total" -gt 0
	check "accuracy: no [unknown] frames" bash -c "! grep -q 'unknown' acc.folded"
fi

if record cxx "$TPROG/cxx_work" 3; then
	check "c++: demangled member of a class template" \
		test "$(json_get cxx.json "j.functions.some(f => f.name === 'shapes::Integrator<double>::advance(long)')")" = true
	check "c++: demangled function template in a nested namespace" \
		test "$(json_get cxx.json "j.functions.some(f => f.name.includes('shapes::detail::accumulate<float>(float const*, unsigned long)'))")" = true
	check "c++: no mangled names left" bash -c "! grep -q '_Z[NS0-9]' cxx.folded"
fi

if record strip "$TPROG/accuracy-stripped" 3; then
	# The leaves have no symbol: their frames are named by the file offset of the sampled pc.
	leaves=$(awk '{ n = split($1, f, ";"); print f[n] }' strip.folded | sort -u)
	named=$(echo "$leaves" | grep -cE '^accuracy-stripped\+0x[0-9a-f]+$')
	check "stripped: leaf frames are accuracy-stripped+0xOFFSET ($named)" test "$named" -gt 0
	check "stripped: the leaf names are not the unstripped ones" \
		bash -c "! grep -qE 'work_alpha|level_0' strip.folded"
	check "stripped: no [unknown] frames" bash -c "! grep -q 'unknown' strip.folded"
	top=$(json_get strip.json "j.functions[0].name")
	check "stripped: the top function is accuracy-stripped+0xOFFSET ($top)" \
		bash -c "[[ '$top' =~ ^accuracy-stripped\+0x[0-9a-f]+$ ]]"
fi

# The profile is self-contained: deleting, then replacing the program changes nothing.
cp "$TPROG/accuracy" prog
if record self ./prog 2; then
	"$CSAMPLER" report -i self.csp >before.txt 2>&1
	rm prog
	"$CSAMPLER" report -i self.csp >deleted.txt 2>&1
	"$CSAMPLER" folded -i self.csp >deleted.folded 2>&1
	cp "$TPROG/cxx_work" prog # "rebuilt": other code at the same path
	"$CSAMPLER" report -i self.csp >rebuilt.txt 2>&1
	check "self-contained: report unchanged after deleting the program" cmp before.txt deleted.txt
	check "self-contained: folded unchanged after deleting the program" cmp self.folded deleted.folded
	check "self-contained: report unchanged after rebuilding the program" cmp before.txt rebuilt.txt
	check "self-contained: the report names the workload" grep -q work_alpha before.txt
fi
finish
