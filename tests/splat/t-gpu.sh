#!/usr/bin/env bash
# t-gpu.sh: the CUDA backend (what `make test-gpu` runs; also part of make test). Checks it
# against the double reference (image and gradients within the CPU backend's bounds) and runs
# micro on it, reporting test PSNR and ms/iteration. Without CUDA support in this build or a
# usable device, each check says SKIPPED with the reason.
source "$CSAMPLER_ROOT/tests/lib.sh"
TRAIN=$CSAMPLER_ROOT/bin/splat-train
CHECK=$CSAMPLER_ROOT/bin/tests/splat-check

"$CHECK" backend --backend cuda >check.out 2>&1
rc=$?
cat check.out
if grep -q '^SKIPPED:' check.out; then
	reason=$(sed -n 's/^SKIPPED: [^:]*: //p' check.out | head -n 1)
	skip "splat/cuda-micro: $reason"
	finish
fi
[ "$rc" = 0 ] || TEST_FAILS=$((TEST_FAILS + 1))
if "$TRAIN" --preset micro --backend cuda >micro.out 2>micro.err; then
	psnr=$(sed -n 's/^test PSNR \([0-9.]*\) dB.*/\1/p' micro.out)
	msit=$(sed -n 's/^time .*(\([0-9.]*\) ms\/iter.*/\1/p' micro.out)
	if awk -v f="${psnr:-0}" -v g="${SPLAT_MICRO_GATE:-33.2}" 'BEGIN { exit !(f >= g) }'; then
		pass "splat/cuda-micro: test PSNR $psnr dB, $msit ms/iteration"
	else
		fail "splat/cuda-micro: test PSNR ${psnr:-?} dB below the gate, $msit ms/iteration"
	fi
else
	fail "splat/cuda-micro: splat-train --backend cuda failed: $(tail -n 2 micro.err | tr '\n' ' ')"
fi
finish
