#!/usr/bin/env bash
# t-fastunwind.sh: profiler/inject/fastunwind.c gives libunwind's return addresses, frame by
# frame, on -O2 code with and without frame pointers, alloca and large frames, a shared and a
# dlopen'd library, a thread, and (by falling back) a signal handler.
cd "$(dirname "$0")/../.."
BIN=bin/tests/unwind/fastunwind-test
if [ ! -x "$BIN" ]; then
	echo "FAIL: fastunwind: $BIN was not built"
	exit 1
fi
exec "$BIN"
