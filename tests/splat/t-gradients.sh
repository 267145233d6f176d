#!/usr/bin/env bash
# t-gradients.sh: splat-train's numerics on the CPU: central finite differences of the double
# reference (every parameter group, the background, SSIM, the loss; relative error < 1e-5), and
# the float32 CPU backend against the reference with 2 and 3 threads (image max error <= 1e-4,
# per-group gradient relative error <= 1e-3). The checks print their own PASS/FAIL lines.
source "$CSAMPLER_ROOT/tests/lib.sh"
CHECK=$CSAMPLER_ROOT/bin/tests/splat-check
if [ ! -x "$CHECK" ]; then
	fail "splat/gradients: $CHECK was not built (make test-programs)"
	finish
fi
"$CHECK" fd || TEST_FAILS=$((TEST_FAILS + 1))
"$CHECK" backend --backend cpu --threads 2 || TEST_FAILS=$((TEST_FAILS + 1))
# 3 threads: uneven work split and reduction over more per-thread buffers
"$CHECK" backend --backend cpu --threads 3 >three.out 2>&1
rc=$?
sed 's/^\(PASS\|FAIL\): splat\/cpu-/\1: splat\/cpu3-/' three.out
[ "$rc" = 0 ] || TEST_FAILS=$((TEST_FAILS + 1))
finish
