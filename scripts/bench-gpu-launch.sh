#!/usr/bin/env bash
# bench-gpu-launch.sh: what lib/libcsampler-cupti.so costs on the CUDA launch path, per launch.
#
#   scripts/bench-gpu-launch.sh [ROUNDS] [SECONDS]        (default 5 rounds of 2 s per figure)
#
# The test driver (tests/cupti/driver.c) makes launches against the stand-in libcupti, which
# fires the library's runtime+driver callbacks on the calling thread just as CUDA does, from a
# call path 30 frames deep, in bursts every millisecond at 10k and 100k launches/s; only the
# launches are timed. Side by side, in one run, median of ROUNDS:
#   no injection       the stand-in's call alone (no subscriber): the floor
#   capture off        the library with CSAMPLER_GPU_STACK=0: record, buffer, write, no stack
#   stack capture      the library as shipped: libunwind's local unwinder, 64 frames at most
# and the two alternatives the library did not choose, measured beside the same call:
#   32 KiB copy        copying 32 KiB of user stack per launch into a ring written out with
#                      write(2) (a perf-style REGS_USER+STACK_USER capture, before unwinding)
#   glibc backtrace    backtrace() per launch
# Goal (issue 10): under 2 us per launch with stack capture.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${1:-5}
SECONDS_PER=${2:-2}
LIB=$ROOT/lib/libcsampler-cupti.so
DRIVER=$ROOT/bin/tests/cupti/driver
if [ ! -f "$LIB" ] || [ ! -x "$DRIVER" ]; then
	make -s programs test-programs >/dev/null || exit 1
fi
if [ ! -f "$LIB" ] || [ ! -x "$DRIVER" ]; then
	echo "bench-gpu-launch: lib/libcsampler-cupti.so or the test driver is not built (no CUDA toolkit?)" >&2
	exit 1
fi
export LD_LIBRARY_PATH=$ROOT/bin/tests/cupti/standin
DIR=$(mktemp -d /tmp/bench-gpu.XXXXXX)
trap 'rm -rf "$DIR"' EXIT

# one MODE STACK RATE: ns per launch of one run
one() {
	rm -f "$DIR"/*
	CSAMPLER_GPU_DIR=$DIR CSAMPLER_GPU_STACK=$2 "$DRIVER" bench "$1" "$3" $(($3 * SECONDS_PER))
}
median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

printf '%-12s %14s %14s %14s %14s %16s\n' "launches/s" "no injection" "capture off" "stack capture" "32 KiB copy" "glibc backtrace"
for rate in 10000 100000; do
	declare -A res=()
	for r in $(seq "$ROUNDS"); do
		res[none]+="$(one none 0 $rate) "
		res[off]+="$(one "$LIB" 0 $rate) "
		res[stack]+="$(one "$LIB" 64 $rate) "
		res[copy]+="$(one copy32k 0 $rate) "
		res[bt]+="$(one backtrace 0 $rate) "
	done
	m() { echo "${res[$1]}" | tr ' ' '\n' | grep . | median; }
	printf '%-12s %11s ns %11s ns %11s ns %11s ns %13s ns\n' "$rate" "$(m none)" "$(m off)" "$(m stack)" "$(m copy)" "$(m bt)"
	unset res
done
echo "(ns per launch, median of $ROUNDS rounds of ${SECONDS_PER} s; call path 30 frames deep; $(nproc) CPUs)"
