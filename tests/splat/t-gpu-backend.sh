#!/usr/bin/env bash
# t-gpu-backend.sh: bin/tests/splat-gpu-check, the CUDA backend on a GPU beyond t-gpu.sh's
# reference and micro checks: partial edge tiles, sort-buffer growth, an empty model, the CUDA
# backend against the CPU backend (images, loss, gradients, densification statistics), and
# Adam with re-mapped moments against the host. Prints SKIPPED (with the reason) when this
# build has no CUDA backend or the machine no usable device.
source "$CSAMPLER_ROOT/tests/lib.sh"
PROG=$TPROG/splat-gpu-check
if [ ! -x "$PROG" ]; then
	if [ -x "$CSAMPLER_ROOT/bin/splat-train" ] && ! nm "$CSAMPLER_ROOT/bin/splat-train" 2>/dev/null | grep -q splat_cuda_probe; then
		skip "splat/gpu-check: splat-train was built without CUDA (no nvcc)"
	else
		fail "splat/gpu-check: $PROG was not built (make test-programs)"
	fi
	finish
fi
"$PROG" >check.out 2>&1
rc=$?
cat check.out
if [ "$rc" != 0 ] && ! grep -q '^FAIL:' check.out; then
	fail "splat/gpu-check: exited with status $rc"
fi
grep -q '^FAIL:' check.out && TEST_FAILS=$((TEST_FAILS + 1))
finish
