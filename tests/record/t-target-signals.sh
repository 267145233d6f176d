#!/usr/bin/env bash
# A target's own signal handling is the same under csampler as without it, in both modes:
# tests/progs/sig-target.c (a SIGUSR1 handler, SIGCHLD from its children, a blocking read, a
# nanosleep, while a second thread spins) prints the same transcript alone, under
# `record --mode perf` and under `record --mode ptrace`; SIGUSR1 sent from outside reaches its
# handler; SIGSTOP from outside stops it (its CPU time stands still) and SIGCONT resumes it.
source "$CSAMPLER_ROOT/tests/lib.sh"
P=$TPROG/sig-target

cpu_ticks() { awk '{ s = $0; sub(/.*\) /, "", s); split(s, f, " "); print f[12] + f[13] }' "/proc/$1/stat" 2>/dev/null; }

run_mode() {
	local mode=$1 pid target i
	rm -f go
	if [ "$mode" = alone ]; then
		"$P" go >"$mode.out" 2>"$mode.err" &
		pid=$!; target=$pid
	else
		"$CSAMPLER" record -q --mode "$mode" -o "$mode.data" -- "$P" go >"$mode.out" 2>"$mode.err" &
		pid=$!
		for i in $(seq 50); do target=$(pgrep -P $pid | head -1); [ -n "$target" ] && break; sleep 0.1; done
	fi
	for i in $(seq 200); do grep -q spinning "$mode.out" 2>/dev/null && break; sleep 0.1; done
	if ! grep -q spinning "$mode.out"; then
		fail "target signals ($mode): the program never reached its last step: $(head -c 300 "$mode.err")"
		kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null; return
	fi
	for i in 1 2 3; do kill -USR1 "$target"; sleep 0.2; done
	kill -STOP "$target"; sleep 0.3
	local a b c
	a=$(cpu_ticks "$target"); sleep 0.6; b=$(cpu_ticks "$target")
	if [ -n "$a" ] && [ "$a" = "$b" ]; then
		pass "target signals ($mode): SIGSTOP from outside stops it (CPU time stands at $a ticks)"
	else
		fail "target signals ($mode): still running after SIGSTOP: CPU ticks $a then $b"
	fi
	kill -CONT "$target"; sleep 0.6
	c=$(cpu_ticks "$target")
	if [ -n "$c" ] && [ "$c" -gt "${b:-0}" ]; then
		pass "target signals ($mode): SIGCONT resumes it"
	else
		fail "target signals ($mode): not running after SIGCONT: CPU ticks ${b:-?} then ${c:-?}"
	fi
	touch go
	wait $pid
	local rc=$?
	[ "$rc" = 0 ] && pass "target signals ($mode): exit status 0" || fail "target signals ($mode): exit status $rc: $(head -c 300 "$mode.err")"
}

run_mode alone
if grep -q '^done$' alone.out && grep -q '^usr1 total: 8$' alone.out; then
	pass "target signals: the program's own transcript is complete"
else
	fail "target signals: the program alone did not finish as expected: $(tr '\n' '|' <alone.out)"
fi
for mode in perf ptrace; do
	run_mode $mode
	if diff alone.out $mode.out >diff.txt; then
		pass "target signals ($mode): same transcript as without csampler ($(grep -c . $mode.out) lines)"
	else
		fail "target signals ($mode): transcript differs: $(tr '\n' '|' <diff.txt)"
	fi
done
finish
