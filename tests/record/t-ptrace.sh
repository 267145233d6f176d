#!/usr/bin/env bash
# The end-to-end tests of `record` again, sampled by the ptrace backend: each script below runs
# with a csampler whose `record` gets --mode ptrace (a wrapper in $T), and its PASS/FAIL lines
# come back prefixed "ptrace: ". They cover threads and children followed (t-family), attach and
# detach leaving the target running (t-attach), exit status (t-exit-status), SIGTERM/SIGHUP
# forwarded with a complete file (t-signals), SIGINT, SIGKILL, segfaults and a full disk
# (t-faults), and the known-split accuracy (tests/t-accuracy.sh, within 3 points).
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
finish
