#!/usr/bin/env bash
# t-gpu-math.sh: the CUDA backend's per-Gaussian and per-pixel math (kernels/gpu_math.cuh),
# compiled for the host, against the CPU backend's float math (bit for bit) and the double
# reference (through a host emulation of the tile renderer). Needs no GPU, but exists only in
# builds with nvcc (kernels/build.mk builds bin/tests/splat-gpu-math-test).
source "$CSAMPLER_ROOT/tests/lib.sh"
PROG=$TPROG/splat-gpu-math-test
if [ ! -x "$PROG" ]; then
	if [ -x "$CSAMPLER_ROOT/bin/splat-train" ] && ! nm "$CSAMPLER_ROOT/bin/splat-train" 2>/dev/null | grep -q splat_cuda_probe; then
		skip "splat/gpu-math: splat-train was built without CUDA (no nvcc), so there is no CUDA math to check"
	else
		fail "splat/gpu-math: $PROG was not built (make test-programs)"
	fi
	finish
fi
"$PROG" || TEST_FAILS=$((TEST_FAILS + 1))
finish
