#!/usr/bin/env bash
# t-gpu-profile.sh: scripts/gpu-profile.sh end to end (part of make test and make test-gpu):
# splat-train on CUDA unprofiled and under csampler record, interleaved, the slowdown (< 5%),
# the trainer's --time-kernels table (complete and consistent), and its per-kernel totals
# against csampler's of the same run (within 2%). Without a usable CUDA device the script says
# SKIPPED with the reason, and so does this test; it never passes without a GPU.
source "$CSAMPLER_ROOT/tests/lib.sh"

"$CSAMPLER_ROOT/scripts/gpu-profile.sh" --rounds "${GPU_PROFILE_ROUNDS:-3}" --out "$T/gpu-profile" >run.out 2>run.err
rc=$?
cat run.out
results=$(grep -c '^\(PASS\|FAIL\|SKIPPED\):' run.out)
if grep -q '^SKIPPED:' run.out; then
	[ "$rc" = 0 ] || fail "splat/gpu-profile: SKIPPED but exit status $rc"
elif [ "$results" = 0 ]; then
	fail "splat/gpu-profile: the script reported nothing (exit $rc): $(tail -n 3 run.err | tr '\n' ' ')"
elif [ "$rc" != 0 ] && ! grep -q '^FAIL:' run.out; then
	fail "splat/gpu-profile: exit status $rc without a FAIL line: $(tail -n 3 run.err | tr '\n' ' ')"
fi
# the script's own FAIL lines are counted by tests/run.sh; exit non-zero with them
grep -q '^FAIL:' run.out && TEST_FAILS=$((TEST_FAILS + 1))
finish
