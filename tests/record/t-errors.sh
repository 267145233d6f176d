#!/usr/bin/env bash
# Every user error gets one clear line and a non-zero exit (125 for csampler's own errors):
# bad options, a PID that does not exist, an unwritable output, and perf_event_open refused
# (by a seccomp filter, as in a locked-down container). A PID that is not ours: t-privilege.sh;
# a full disk: t-faults.sh; hostile output paths: t-hostile-paths.sh.
source "$CSAMPLER_ROOT/tests/lib.sh"

# one_line NAME WANT_RC PATTERN CMD...: the command exits WANT_RC with exactly one stderr line
# matching PATTERN.
one_line() {
	local name=$1 want=$2 pat=$3; shift 3
	"$@" >out.txt 2>err.txt
	local rc=$?
	if [ "$rc" = "$want" ] && [ "$(grep -c . err.txt)" = 1 ] && grep -q -- "$pat" err.txt; then
		pass "errors: $name"
	else
		fail "errors: $name: rc $rc (want $want), stderr: $(head -c 300 err.txt)"
	fi
}
C=$CSAMPLER
one_line "unknown option" 125 "unknown option '--frobnicate'" $C record --frobnicate -- true
one_line "invalid rate (text)" 125 "invalid rate '-F abc'" $C record -F abc -- true
one_line "invalid rate (zero)" 125 "invalid rate '-F 0'" $C record -F 0 -- true
one_line "invalid rate (too high)" 125 "invalid rate" $C record -F 100000000 -- true
one_line "invalid rate (over ptrace mode's cap, perf_event_max_sample_rate not read)" 125 "from 1 to 100000 (ptrace mode's cap)" $C record --mode ptrace -F 100001 -- true
one_line "invalid stack size" 125 "invalid stack size '70000'" $C record --stack-size 70000 -- true
one_line "invalid stack size (dwarf,)" 125 "invalid stack size in '-g dwarf,abc'" $C record -g dwarf,abc -- true
one_line "invalid call graph" 125 "invalid call-graph mode 'lbr'" $C record -g lbr -- true
one_line "invalid -m" 125 "invalid ring buffer size '-m 3'" $C record -m 3 -- true
one_line "invalid pid" 125 "invalid PID list 'abc'" $C record -p abc
one_line "pid not found" 125 "no such process 2147483646" $C record -p 2147483646
one_line "nothing to record" 125 "nothing to record" $C record
one_line "command and pid" 125 "not both" $C record -p 1 -- true
one_line "output not writable" 125 "cannot create $T/no/such/dir/x.data" $C record -o "$T/no/such/dir/x.data" -- true
one_line "unknown command" 125 "unknown command 'recrod'" $C recrod

one_line "invalid mode" 125 "invalid --mode 'bogus'" $C record --mode bogus -- true

# perf_event_open refused: a seccomp filter makes it fail with EACCES. --mode perf: one line.
one_line "perf_event_open refused (--mode perf)" 125 "perf_event_paranoid" "$TPROG/deny-perf" $C record --mode perf -o "$T/d.data" -- touch ran-anyway
[ ! -e ran-anyway ] || fail "errors: command ran although sampling failed"
# auto (the default): one line saying why, then the ptrace sampler records the command
"$TPROG/deny-perf" $C record -o "$T/fallback.data" -- "$TPROG/accuracy" >out.txt 2>err.txt
rc=$?
if [ $rc = 0 ] && [ "$(grep -c "perf_event_open is refused (.*): sampling with ptrace instead" err.txt)" = 1 ] &&
	! grep -v "^csampler: \(own CPU\|sampled with \|ptrace: \|[0-9]* samples\)" err.txt | grep -v "perf_event_open is refused" | grep -q .; then
	pass "errors: perf_event_open refused (auto): one line, then ptrace records the command"
else
	fail "errors: perf_event_open refused (auto): rc $rc, stderr: $(head -c 600 err.txt)"
fi
if $C info -i "$T/fallback.data" 2>&1 | grep -q "sampler.*ptrace"; then
	pass "errors: the fallback's file says it was recorded with ptrace"
else
	fail "errors: the fallback's file does not name the ptrace sampler: $($C info -i "$T/fallback.data" 2>&1 | head -c 400)"
fi
# both refused: one line naming both and what to do; the command does not run
one_line "perf_event_open and ptrace refused" 125 "perf_event_open is refused .* and so is ptrace" \
	"$TPROG/deny-perf" --ptrace $C record -o "$T/d2.data" -- touch ran-anyway
[ ! -e ran-anyway ] || fail "errors: command ran although both samplers were refused"
finish
