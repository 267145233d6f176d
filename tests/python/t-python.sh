#!/usr/bin/env bash
# Python frames merged into native stacks (profiler/unwind/python.c), on Debian's CPython 3.11:
# a known 60/25/15 split across three Python functions (one recursive, one calling zlib),
# function names, files and lines in folded and report, zlib's native frames under the Python
# frame that called it; threads and a multiprocessing child attributed to their own OS threads;
# attach with -p; the ptrace backend (--mode ptrace); an unsupported version gives one line and
# native stacks, never names.
source "$CSAMPLER_ROOT/tests/python/lib-python.sh"
need_python311 python

# ---- the split ----
"$CSAMPLER" record -q -o split.data -- "$PY" "$SRC/split.py" 8 >rec.out 2>rec.err
rc=$?
[ "$rc" = 0 ] && pass "python: record a Python program" || fail "python: record rc $rc: $(cat rec.err)"
"$CSAMPLER" folded -i split.data >split.folded 2>/dev/null
# each stack goes to the innermost of the three functions it holds
awk '{ n = $NF; f = "";
       if (match($0, /compress_data \([^)]*split\.py:[0-9]+\)/)) f = "compress";
       else if (match($0, /recurse \([^)]*split\.py:[0-9]+\)/)) f = "recurse";
       else if (match($0, /hot_loop \([^)]*split\.py:[0-9]+\)/)) f = "hot";
       if (f != "") { c[f] += n; t += n } }
     END { if (t) printf "%.1f %.1f %.1f %d\n", 100*c["hot"]/t, 100*c["recurse"]/t, 100*c["compress"]/t, t }' \
	split.folded >split.txt
read -r hot rec comp total <split.txt
echo "    split: hot_loop $hot%, recurse $rec%, compress_data $comp% of $total samples"
ok=$(awk -v h="$hot" -v r="$rec" -v c="$comp" 'BEGIN { d1=h-60; d2=r-25; d3=c-15;
	print (d1<=3 && d1>=-3 && d2<=3 && d2>=-3 && d3<=3 && d3>=-3) ? 1 : 0 }')
[ "${total:-0}" -gt 500 ] && [ "$ok" = 1 ] && pass "python: split 60/25/15 within 3 points ($hot/$rec/$comp)" ||
	fail "python: split $hot/$rec/$comp of ${total:-0} samples, want 60/25/15 +-3"
# lines: the hot loop's statement, and the recursion as a chain of recurse frames
line=$(grep -n 'n += i \* i' "$SRC/split.py" | cut -d: -f1)
grep -q "hot_loop ([^)]*split\.py:$line)" split.folded && pass "python: hot_loop's line $line" ||
	fail "python: no 'hot_loop (split.py:$line)' frame"
rline=$(grep -n 'return recurse(depth - 1' "$SRC/split.py" | cut -d: -f1)
grep -qE "(recurse \([^)]*split\.py:$rline\);){20}recurse" split.folded && pass "python: 21 nested recurse frames" ||
	fail "python: recursion not shown as nested recurse (split.py:$rline) frames"
mline=$(grep -n '^    main()' "$SRC/split.py" | cut -d: -f1)
grep -q "<module> ([^)]*split\.py:$mline);main (" split.folded && pass "python: <module> -> main with lines" ||
	fail "python: no '<module> (split.py:$mline);main' chain"
# zlib's C code under the Python frame that called it, interpreter frames in between
grep -qE 'compress_data \([^)]*split\.py:[0-9]+\);([^;]*;)*[^;]*(deflate|zlib_compress)' split.folded &&
	pass "python: zlib's native frames under compress_data" || fail "python: no deflate under compress_data"
# no interpreter activation left where Python frames were read. Counted in samples: the few
# that keep one are taken during the interpreter's start-up (importlib before the main module),
# each a stack of its own, so a count of distinct stacks said 7% where samples say 1%.
n=$(grep '_PyEval_EvalFrameDefault;' split.folded | awk '{ t += $NF } END { print t + 0 }')
m=$(awk '{ t += $NF } END { print t + 0 }' split.folded)
[ "$m" -gt 0 ] && [ "$n" -lt $((m / 20 + 1)) ] && pass "python: _PyEval_EvalFrameDefault replaced ($n of $m samples keep it)" ||
	fail "python: $n of $m samples still show _PyEval_EvalFrameDefault"
"$CSAMPLER" report -i split.data >report.txt 2>&1
grep -qE '\[python\] +.*hot_loop' report.txt && pass "python: report names hot_loop in [python]" ||
	fail "python: report has no [python] hot_loop"

# ---- the ptrace backend: the same frames ----
if "$CSAMPLER" record --mode ptrace -q -o pt.data -- "$PY" "$SRC/split.py" 4 >/dev/null 2>pt.err; then
	"$CSAMPLER" folded -i pt.data >pt.folded 2>/dev/null
	awk '{ n = $NF; f = "";
	       if (match($0, /compress_data \([^)]*split\.py:[0-9]+\)/)) f = "compress";
	       else if (match($0, /recurse \([^)]*split\.py:[0-9]+\)/)) f = "recurse";
	       else if (match($0, /hot_loop \([^)]*split\.py:[0-9]+\)/)) f = "hot";
	       if (f != "") { c[f] += n; t += n } }
	     END { if (t) printf "%.1f %.1f %.1f %d\n", 100*c["hot"]/t, 100*c["recurse"]/t, 100*c["compress"]/t, t; else print "0 0 0 0" }' \
		pt.folded >pt.txt
	read -r hot rec comp total <pt.txt
	ok=$(awk -v h="$hot" -v r="$rec" -v c="$comp" 'BEGIN { d1=h-60; d2=r-25; d3=c-15;
		print (d1<=3 && d1>=-3 && d2<=3 && d2>=-3 && d3<=3 && d3>=-3) ? 1 : 0 }')
	[ "${total:-0}" -gt 500 ] && [ "$ok" = 1 ] && pass "python: --mode ptrace: split 60/25/15 within 3 points ($hot/$rec/$comp)" ||
		fail "python: --mode ptrace: split $hot/$rec/$comp of ${total:-0} samples, want 60/25/15 +-3"
elif grep -qi 'ptrace' pt.err && grep -qiE 'not permitted|refus|denied|unavailable' pt.err; then
	skip "python: --mode ptrace: ptrace is refused here: $(head -1 pt.err)"
else
	fail "python: --mode ptrace: record failed: $(tail -2 pt.err)"
fi

# ---- --no-python: the same program, native frames only ----
"$CSAMPLER" record -q --no-python -o native.data -- "$PY" "$SRC/split.py" 2 >/dev/null 2>&1
"$CSAMPLER" folded -i native.data >native.folded 2>/dev/null
! grep -q 'split\.py:' native.folded && grep -q '_PyEval_EvalFrameDefault' native.folded &&
	pass "python: --no-python keeps native frames only" || fail "python: --no-python still has Python frames"

# ---- an unsupported version: one line, native stacks ----
CSAMPLER_PYTHON_VERSION=0x030a0000 "$CSAMPLER" record -q -o unsup.data -- "$PY" "$SRC/split.py" 2 >/dev/null 2>unsup.err
"$CSAMPLER" folded -i unsup.data >unsup.folded 2>/dev/null
n=$(grep -c 'not supported' unsup.err)
[ "$n" = 1 ] && pass "python: unsupported version: one line ($(head -c 100 unsup.err))" ||
	fail "python: unsupported version: $n lines: $(cat unsup.err)"
! grep -q 'split\.py:' unsup.folded && grep -q '_PyEval_EvalFrameDefault' unsup.folded &&
	pass "python: unsupported version: native stacks, no Python names" || fail "python: unsupported version shows Python frames"
"$CSAMPLER" report -i unsup.data 2>/dev/null | grep -q 'Python frames could not be read' &&
	pass "python: unsupported version counted in unwind quality" || fail "python: unwind quality does not count them"

# ---- threads and a multiprocessing child ----
"$CSAMPLER" record -q -o thr.data -- "$PY" "$SRC/threads.py" 3 >/dev/null 2>thr.err
"$CSAMPLER" folded --per-thread -i thr.data >thr.folded 2>/dev/null
# per OS thread (root "comm-tid"): which of the four functions its stacks hold
awk '{ split($1, fr, ";"); root = fr[1]; n = $NF;
       for (i = 1; i <= 4; i++) { f = i == 1 ? "worker_a" : i == 2 ? "worker_b" : i == 3 ? "child_work" : "main_spin";
         if (index($0, f " (")) { s[root, f] += n; roots[root] = 1; fs[f] = 1 } } }
     END { bad = 0; for (r in roots) { k = 0; for (f in fs) if (s[r, f] > 5) k++; if (k > 1) bad++ }
           for (f in fs) { tot = 0; for (r in roots) tot += s[r, f]; printf "%s=%d ", f, tot }
           printf "mixed=%d\n", bad }' thr.folded >thr.txt
echo "    threads: $(cat thr.txt)"
for f in worker_a worker_b child_work main_spin; do
	n=$(grep -o "$f=[0-9]*" thr.txt | cut -d= -f2)
	[ "${n:-0}" -gt 30 ] && pass "python: $f sampled ($n)" || fail "python: $f has ${n:-0} samples"
done
grep -q 'mixed=0' thr.txt && pass "python: every OS thread shows only its own Python function" ||
	fail "python: threads mixed up: $(cat thr.txt)"

# ---- attach ----
"$PY" "$SRC/threads.py" 6 & tpid=$!
sleep 1
"$CSAMPLER" record -q -o att.data -p "$tpid" --duration 2 >/dev/null 2>att.err
"$CSAMPLER" folded -i att.data >att.folded 2>/dev/null
grep -q 'main_spin ([^)]*threads\.py:[0-9]*)' att.folded && grep -q 'worker_a (' att.folded &&
	pass "python: attach with -p shows Python frames" || fail "python: attach: no Python frames: $(cat att.err)"
wait "$tpid"
finish
