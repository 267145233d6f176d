#!/usr/bin/env bash
# t-python-launch.sh: Python frames in GPU launch stacks, without a GPU. A Python script
# (tests/cupti/launch.py) launches kernels through a C library it calls with ctypes
# (libpylaunch.so, the stand-in libcupti behind it), so each launch's native stack runs through
# _PyEval_EvalFrameDefault; recorded with `csampler record --gpu on`, every kernel must sit
# under the Python functions that launched it, with their lines (folded --gpu, flame --gpu),
# in place of the interpreter's native frames. CPython 3.11 (Debian's) in full; then, where
# installed, 3.12 and 3.13 (pyenv's) and 3.14's debug build (scripts/get-python3.14.sh with
# WITH_DEBUG=1) and Debian's stripped 3.14, whose layouts the library reads from the process'
# own _Py_DebugOffsets: the same kernels under the same Python frames. The stripped 3.14's
# interpreter loop has no symbol: the library tells the recorder which native frame holds each
# activation's entry frame (gpu_py_frame.act).
CSAMPLER_ROOT=${CSAMPLER_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$CSAMPLER_ROOT/tests/python/lib-python.sh" # lib.sh, and find_python
export LC_ALL=C
LIB=$CSAMPLER_ROOT/lib/libcsampler-cupti.so
PYLIB=$CSAMPLER_ROOT/bin/tests/cupti/libpylaunch.so
STANDIN=$CSAMPLER_ROOT/bin/tests/cupti/standin
SCRIPT=$CSAMPLER_ROOT/tests/cupti/launch.py
PY=/usr/bin/python3
if [ ! -f "$LIB" ] && [ ! -f "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ]; then
	skip "python-launch: no CUDA toolkit with CUPTI headers, so lib/libcsampler-cupti.so is not built"
	finish
fi
if [ ! -f "$LIB" ] || [ ! -f "$PYLIB" ]; then
	fail "python-launch: lib/libcsampler-cupti.so or $PYLIB was not built (make test-programs)"
	finish
fi
ver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
if [ "$ver" != 3.11 ]; then
	skip "python-launch: $PY is Python ${ver:-missing}, this test is for CPython 3.11"
	finish
fi

LD_LIBRARY_PATH=$STANDIN "$CSAMPLER" record --gpu on -o g.data -- "$PY" "$SCRIPT" "$PYLIB" \
	>rec.out 2>rec.err
rc=$?
if [ $rc != 0 ]; then
	fail "python-launch/record: exit $rc: $(tail -n 3 rec.err | tr '\n' ' ')"
	finish
fi
"$CSAMPLER" folded -i g.data --gpu >folded.txt 2>folded.err ||
	fail "python-launch/folded: $(cat folded.err)"
# kernel -> the Python frames above its native launch path, and how many kernels.
paths=$(awk '/\[gpu\] / { n = split($0, f, ";"); k = f[n]; sub(/^\[gpu\] /, "", k); sub(/ [0-9]+$/, "", k)
	py = ""; for (i = 1; i < n; i++) if (f[i] ~ /launch\.py:[0-9]+\)$/) { s = f[i]; sub(/\/.*\//, "", s); py = py (py ? ";" : "") s }
	print k, (py ? py : "native") }' folded.txt)
count() { echo "$paths" | grep -c "^$1\$"; }
fwd="forward_kernel <module> (launch.py:48);main (launch.py:41);train_step (launch.py:32);forward (launch.py:24);launch (launch.py:20)"
bwd="backward_kernel <module> (launch.py:48);main (launch.py:41);train_step (launch.py:33);backward (launch.py:28);launch (launch.py:20)"
fwd_last="forward_kernel <module> (launch.py:48);main (launch.py:43);train_step (launch.py:32);forward (launch.py:24);launch (launch.py:20)"
# folded merges equal stacks into one line: the steps of the loop are one line per kernel.
if [ "$(count "$fwd")" = 1 ] && [ "$(count "$bwd")" = 1 ] && [ "$(count "$fwd_last")" = 1 ]; then
	pass "python-launch/folded: kernels under <module>;main;train_step;forward|backward;launch with their lines"
else
	fail "python-launch/folded: got [$(echo "$paths" | tr '\n' '|')]"
fi
# The loop's 18 kernels and the last step's forward (its launch buffer written while the
# process runs) are all named; only the very last launch, written at exit, may stay native.
fw_ns=$(grep -F "forward (" folded.txt | grep -F "main (/" | awk '{ s += $NF } END { print s + 0 }')
if [ "$fw_ns" = 1000000 ]; then
	pass "python-launch/all-forward: the 10 forward kernels (1 ms of GPU time) under forward"
else
	fail "python-launch/all-forward: $fw_ns ns of forward_kernel under the Python frames, want 1000000"
fi
native=$(echo "$paths" | grep -c " native$")
if [ "$native" -le 1 ] && ! grep -F "[gpu] forward_kernel" folded.txt | grep -qv "launch\.py"; then
	pass "python-launch/native: $native kernel stack(s) without Python frames (at most the launch written at exit)"
else
	fail "python-launch/native: $native native kernel stacks: [$(echo "$paths" | tr '\n' '|')]"
fi
# No interpreter frame left where Python frames were put.
if grep -F "train_step (" folded.txt | grep -q "_PyEval_EvalFrameDefault"; then
	fail "python-launch/replaced: _PyEval_EvalFrameDefault still beside the Python frames"
else
	pass "python-launch/replaced: the interpreter activation replaced by its Python frames"
fi
# The other versions: the same paths, no interpreter frame left.
for v in 3.12 3.13 3.14d 3.14; do
	case $v in
	3.14d) P=$(find_python 3.14); P=${P:+${P%/*}/python3.14d} ;;
	*) P=$(find_python "$v") ;;
	esac
	if [ -z "$P" ] || [ ! -x "$P" ]; then
		skip "python-launch/$v: CPython $v is not installed here$(case $v in 3.14*) echo " (scripts/get-python3.14.sh)" ;; esac)"
		continue
	fi
	LD_LIBRARY_PATH=$STANDIN "$CSAMPLER" record --gpu on -o "g$v.data" -- "$P" "$SCRIPT" "$PYLIB" \
		>/dev/null 2>"rec$v.err" || { fail "python-launch/$v: record: $(tail -n 2 "rec$v.err")"; continue; }
	"$CSAMPLER" folded -i "g$v.data" --gpu >"folded$v.txt" 2>/dev/null
	vpaths=$(awk '/\[gpu\] / { n = split($0, f, ";"); k = f[n]; sub(/^\[gpu\] /, "", k); sub(/ [0-9]+$/, "", k)
		py = ""; for (i = 1; i < n; i++) if (f[i] ~ /launch\.py:[0-9]+\)$/) { s = f[i]; sub(/\/.*\//, "", s); py = py (py ? ";" : "") s }
		print k, (py ? py : "native") }' "folded$v.txt")
	if echo "$vpaths" | grep -qx "$fwd" && echo "$vpaths" | grep -qx "$bwd" &&
		echo "$vpaths" | grep -qx "$fwd_last" && ! grep -F "train_step (" "folded$v.txt" | grep -q "_PyEval_EvalFrameDefault;"; then
		pass "python-launch/$v: kernels under <module>;main;train_step;forward|backward;launch, no interpreter frame left"
	else
		fail "python-launch/$v: got [$(echo "$vpaths" | tr '\n' '|')]"
	fi
done
"$CSAMPLER" flame --gpu --dump-layout --minwidth 0 g.data >f.layout 2>flame.err ||
	fail "python-launch/flame: $(cat flame.err)"
# the Python frame forward and the kernel drawn above it: same x, the same 1 ms of GPU time
under=$(awk '!/^#/ && $6 == "python" && $7 == "forward" { fx[$2] = $5 }
	!/^#/ && $6 == "gpu-kernel" && $7 == "[gpu]" && $8 == "forward_kernel" && fx[$2] == $5 { print $5 }' f.layout)
if [ "$under" = 1000000 ]; then
	pass "python-launch/flame: flame --gpu draws forward_kernel (1 ms) on the Python frame forward"
else
	fail "python-launch/flame: forward_kernel not drawn on forward: [$(grep -E 'forward' f.layout | tr '\n' '|')]"
fi
# --no-python: the launch stacks stay native.
LD_LIBRARY_PATH=$STANDIN "$CSAMPLER" record --gpu on --no-python -o n.data -- "$PY" "$SCRIPT" "$PYLIB" \
	>/dev/null 2>rec2.err
"$CSAMPLER" folded -i n.data --gpu >nfolded.txt 2>/dev/null
if grep -q "\[gpu\] forward_kernel" nfolded.txt && ! grep -q "launch\.py" nfolded.txt &&
   grep "\[gpu\] forward_kernel" nfolded.txt | grep -q "_PyEval_EvalFrameDefault"; then
	pass "python-launch/no-python: --no-python keeps the launch stacks native"
else
	fail "python-launch/no-python: $(head -c 300 nfolded.txt) $(tail -n 2 rec2.err)"
fi
finish
