#!/usr/bin/env bash
# Python frames on other CPython versions than Debian's 3.11, where they are installed (pyenv's
# builds, /usr/local, scripts/get-python3.14.sh's): 3.12 (a row of python.c's layout table),
# 3.13 and 3.14 (the layout read from the interpreter's own _Py_DebugOffsets; 3.14 under each
# backend) give tests/python/split.py's 60/25/15 split within 3 points, with names and lines,
# and at least 99% of the samples under PyEval_EvalCode with their Python frames; 3.10 (no
# layout) gives one line and native stacks, never names. Each version missing here is SKIPPED.
source "$CSAMPLER_ROOT/tests/python/lib-python.sh"

split_of() { # folded file -> "hot rec comp total"
	awk '{ n = $NF; f = "";
	       if (match($0, /compress_data \([^)]*split\.py:[0-9]+\)/)) f = "compress";
	       else if (match($0, /recurse \([^)]*split\.py:[0-9]+\)/)) f = "recurse";
	       else if (match($0, /hot_loop \([^)]*split\.py:[0-9]+\)/)) f = "hot";
	       if (f != "") { c[f] += n; t += n } }
	     END { if (t) printf "%.1f %.1f %.1f %d\n", 100*c["hot"]/t, 100*c["recurse"]/t, 100*c["compress"]/t, t;
	           else print "0 0 0 0" }' "$1"
}

# 3.14 (Debian's build: its interpreter loop has no symbol, so activations are found by their
# entry frames, python.c's py_merge_by_shims) under each backend: perf, ptrace, bpf (where the program sends each
# user frame's stack pointer with the frames it read, CSB_USER_SPS).
# Its debug build (python3.14d, WITH_DEBUG=1 scripts/get-python3.14.sh) keeps the loop's
# symbol: 3.13's way of finding activations, with 3.14's layout (its own debug offsets).
for vm in 3.12 3.13 3.14/perf 3.14/ptrace 3.14/bpf 3.14d/perf; do
	v=${vm%%/*} mode=${vm#*/} mopt=()
	[ "$mode" = "$vm" ] && mode="" || mopt=(--mode "$mode")
	if [ "$v" = 3.14d ]; then
		PY=$(find_python 3.14)
		PY=${PY:+${PY%/*}/python3.14d}
		[ -x "$PY" ] || { skip "python-versions: CPython 3.14's debug build is not installed here (WITH_DEBUG=1 scripts/get-python3.14.sh)"; continue; }
	else
		PY=$(find_python "$v")
	fi
	if [ -z "$PY" ]; then
		if [ "$v" = 3.14 ]; then
			skip "python-versions: CPython 3.14 is not installed here ($mode; scripts/get-python3.14.sh installs Debian's build)"
		else
			skip "python-versions: CPython $v is not installed here"
		fi
		continue
	fi
	[ -n "$mode" ] && v=$v-$mode
	if ! "$CSAMPLER" record -q "${mopt[@]}" -o "$v.data" -- "$PY" "$SRC/split.py" 6 >/dev/null 2>"$v.err"; then
		if [ "$mode" = bpf ] && grep -q "bpf:" "$v.err"; then
			skip "python-versions: $v: the BPF backend is refused here: $(head -n 1 "$v.err")"
		else
			fail "python-versions: $v: record failed: $(tail -2 "$v.err")"
		fi
		continue
	fi
	if grep -q 'not supported\|_Py_DebugOffsets' "$v.err"; then
		fail "python-versions: $v: $(head -1 "$v.err")"
		continue
	fi
	"$CSAMPLER" folded -i "$v.data" >"$v.folded" 2>/dev/null
	read -r hot rec comp total <<<"$(split_of "$v.folded")"
	ok=$(awk -v h="$hot" -v r="$rec" -v c="$comp" 'BEGIN { d1=h-60; d2=r-25; d3=c-15;
		print (d1<=3 && d1>=-3 && d2<=3 && d2>=-3 && d3<=3 && d3>=-3) ? 1 : 0 }')
	[ "$total" -gt 500 ] && [ "$ok" = 1 ] &&
		pass "python-versions: $v ($PY): split 60/25/15 within 3 points ($hot/$rec/$comp of $total)" ||
		fail "python-versions: $v: split $hot/$rec/$comp of $total samples, want 60/25/15 +-3"
	line=$(grep -n 'n += i \* i' "$SRC/split.py" | cut -d: -f1)
	rline=$(grep -n 'return recurse(depth - 1' "$SRC/split.py" | cut -d: -f1)
	grep -q "hot_loop ([^)]*split\.py:$line)" "$v.folded" &&
		grep -qE "(recurse \([^)]*split\.py:$rline\);){20}recurse" "$v.folded" &&
		grep -qE 'compress_data \([^)]*split\.py:[0-9]+\);([^;]*;)*[^;]*(deflate|zlib_compress)' "$v.folded" &&
		pass "python-versions: $v: lines, 21 nested recurse frames, zlib under compress_data" ||
		fail "python-versions: $v: hot_loop line $line, the recursion or zlib under compress_data missing"
	n=$(grep '_PyEval_EvalFrameDefault;' "$v.folded" | awk '{ t += $NF } END { print t + 0 }')
	m=$(awk '{ t += $NF } END { print t + 0 }' "$v.folded")
	[ "$m" -gt 0 ] && [ "$n" -lt $((m / 20 + 1)) ] &&
		pass "python-versions: $v: _PyEval_EvalFrameDefault replaced ($n of $m samples keep it)" ||
		fail "python-versions: $v: $n of $m samples still show _PyEval_EvalFrameDefault"
	# every sample that ran the module's code (under PyEval_EvalCode) has its Python frames:
	# 3.14's interpreter loop has no name to look for, so this is what says none was missed
	# (the main module's: under Py_RunMain, not an import's at start-up)
	read -r under py <<<"$(awk '/Py_RunMain;.*PyEval_EvalCode;/ && !/PyImport_/ { u += $NF; if (/split\.py:/) p += $NF } END { print u + 0, p + 0 }' "$v.folded")"
	[ "$under" -gt 500 ] && [ $((under - py)) -le $((under / 100)) ] &&
		pass "python-versions: $v: $py of $under samples under the main module's PyEval_EvalCode have their Python frames (>= 99%)" ||
		fail "python-versions: $v: $py of $under samples under the main module's PyEval_EvalCode have their Python frames (< 99%)"
done

# ---- a version without a layout: one line, native stacks ----
PY=$(find_python 3.10)
if [ -z "$PY" ]; then
	skip "python-versions: CPython 3.10 is not installed here (the unsupported-version case is in t-python.sh and the unit tests)"
else
	"$CSAMPLER" record -q -o old.data -- "$PY" "$SRC/split.py" 2 >/dev/null 2>old.err
	"$CSAMPLER" folded -i old.data >old.folded 2>/dev/null
	# (the other lines of stderr are record's summary)
	n=$(grep -c 'python 3.10 .*not supported' old.err)
	[ "$n" = 1 ] && [ "$(grep -ci 'python' old.err)" = 1 ] &&
		pass "python-versions: 3.10: one line ($(grep 'not supported' old.err))" ||
		fail "python-versions: 3.10: $n lines: $(cat old.err)"
	! grep -q 'split\.py:' old.folded && grep -q '_PyEval_EvalFrameDefault' old.folded &&
		pass "python-versions: 3.10: native stacks, no Python names" ||
		fail "python-versions: 3.10: Python names or no interpreter frames"
fi
finish
