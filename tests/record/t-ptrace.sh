#!/usr/bin/env bash
# The end-to-end tests of `record` again, sampled by the ptrace backend: each script below runs
# with a csampler whose `record` gets --mode ptrace (a wrapper in $T), and its PASS/FAIL lines
# come back prefixed "ptrace: ". They cover threads and children followed (t-family), attach and
# detach leaving the target running (t-attach), exit status (t-exit-status), SIGTERM/SIGHUP
# forwarded with a complete file (t-signals), SIGINT, SIGKILL, segfaults and a full disk
# (t-faults), and the known-split accuracy (tests/t-accuracy.sh, within 3 points); then a thread
# creating threads all the time is still sampled after them (tests/progs/clone-storm.c).
source "$CSAMPLER_ROOT/tests/lib.sh"

cat >"$T/csampler" <<WRAP
#!/bin/sh
if [ "\$1" = record ]; then shift; exec "$CSAMPLER" record --mode ptrace "\$@"; fi
exec "$CSAMPLER" "\$@"
WRAP
chmod 755 "$T/csampler"

for t in tests/record/t-family.sh tests/record/t-attach.sh tests/record/t-exit-status.sh \
	tests/record/t-signals.sh tests/record/t-faults.sh tests/t-accuracy.sh; do
	CSAMPLER_BIN=$T/csampler bash "$CSAMPLER_ROOT/$t" >"$T/sub.log" 2>&1
	rc=$?
	grep -E '^(PASS|FAIL|SKIPPED):' "$T/sub.log" | sed -E 's/^(PASS|FAIL|SKIPPED): /\1: ptrace: /'
	nfail=$(grep -c '^FAIL:' "$T/sub.log")
	TEST_FAILS=$((TEST_FAILS + nfail))
	if [ "$rc" != 0 ] && [ "$nfail" = 0 ]; then
		fail "ptrace: $t exited with status $rc: $(tail -n 3 "$T/sub.log" | tr '\n' ' ')"
	fi
done

# A thread that creates threads all the time (clone event stops) is still sampled afterwards:
# an interrupt another stop took is not waited for (sampler_ptrace.c's pt_handle). Before the
# fix the main thread's samples stopped within the first clones: spin_tail had 0-5 of ~1000.
if "$CSAMPLER" record -q --mode ptrace -o storm.data -- "$TPROG/clone-storm" 2 >/dev/null 2>storm.err; then
	"$CSAMPLER" folded -i storm.data >storm.folded 2>/dev/null
	tail=$(awk '/spin_tail/ { n += $NF } END { print n + 0 }' storm.folded)
	made=$(sed -n 's/^clone-storm: \([0-9]*\) threads$/\1/p' storm.err)
	taken=$(grep -o '[0-9]* interrupts taken by another stop' storm.err | head -n 1)
	# one second of CPU at 999 Hz: at least half of it
	[ "$tail" -ge 500 ] &&
		pass "ptrace: the thread that made ${made:-?} threads is sampled after them ($tail samples in its last second; ${taken:-no interrupt taken by another stop})" ||
		fail "ptrace: the thread that made ${made:-?} threads has $tail samples in its last second of CPU (want >= 500): $(grep -o 'ptrace: [0-9]* stops.*' storm.err)"
elif grep -qiE 'ptrace.*(not permitted|refus|denied)' storm.err; then
	skip "ptrace: clone storm: ptrace is refused here: $(head -n 1 storm.err)"
else
	fail "ptrace: clone storm: record failed: $(tail -n 2 storm.err)"
fi
finish
