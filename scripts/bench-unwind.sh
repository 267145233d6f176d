#!/usr/bin/env bash
# bench-unwind.sh: what one stack costs with profiler/inject/fastunwind.c against libunwind.
#
#   scripts/bench-unwind.sh [ROUNDS]        (default 10)
#
# bin/tests/unwind/fastunwind-test bench: at call depths 10, 30 and 60 (-O2 frames, plus main's
# and libc's), ns per stack side by side in one run, median of ROUNDS interleaved rounds:
#   fu_backtrace     the hand-written unwinder (cached CFI rules, a memo of the last stack)
#   unw_backtrace    libunwind's fast trace, what lib/libcsampler-cupti.so used before
#   unw_step loop    unw_getcontext + unw_init_local + unw_step per frame
# first with the same stack every time (a launch loop), then with each stack differing from the
# one before (four call paths in turn; the call chain's own cost subtracted).
set -u
cd "$(dirname "$0")/.."
BIN=bin/tests/unwind/fastunwind-test
if [ ! -x "$BIN" ]; then
	make -s "$BIN" bin/tests/unwind/libfu-dl.so >/dev/null || exit 1
fi
"$BIN" bench "${1:-10}"
echo "($(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
