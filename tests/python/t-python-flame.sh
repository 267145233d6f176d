#!/usr/bin/env bash
# `flame` on Python frames recorded from tests/python/split.py (CPython 3.11): the frames
# csampler read from the interpreter are of the Python kind (coloured apart: orange, the
# browser test checks the fills) and no native frame is; `flame --python-only` draws only the
# Python frames under each process root (py-spy's look) with the split.py functions, and says
# in one line that folded text cannot be filtered so.
source "$CSAMPLER_ROOT/tests/python/lib-python.sh"
need_python311 python-flame

"$CSAMPLER" record -q -o split.data -- "$PY" "$SRC/split.py" 2 >/dev/null 2>rec.err ||
	fail "python-flame: record failed: $(tail -2 rec.err)"

# ---- the whole stacks: Python frames of the Python kind, native frames not ----
"$CSAMPLER" flame --dump-layout --minwidth 0 split.data >all.layout 2>all.err ||
	fail "python-flame: flame --dump-layout failed: $(cat all.err)"
# rows: depth x width y count kind name...
# (a native frame may share the name, as the shell's and the interpreter's main do: any row)
kind_of() { awk -v f="$1" '!/^#/ && $7 == f && NF == 7 { k = k ? k : $6; if ($6 ~ /^python/) k = $6 }
	END { print k }' all.layout; }
for f in hot_loop recurse compress_data main "<module>"; do
	k=$(kind_of "$f")
	[ "$k" = python ] && pass "python-flame: $f is drawn as Python" ||
		fail "python-flame: $f is of kind '${k:-absent}', want python"
done
read -r native bad <<<"$(awk '!/^#/ && $7 ~ /^(_PyEval_EvalFrameDefault|PyEval_EvalCode|deflate|zlib_compress|_start|Py_RunMain)$/ {
	n++; if ($6 ~ /^python/) b++ } END { print n + 0, b + 0 }' all.layout)"
[ "$native" -gt 2 ] && [ "$bad" = 0 ] &&
	pass "python-flame: native frames (interpreter, zlib, _start: $native) are not of the Python kind" ||
	fail "python-flame: $bad of $native native frames drawn as Python"
"$CSAMPLER" -q flame split.data -o all.svg && grep -q '"Python"' all.svg && grep -q 'orange' all.svg &&
	pass "python-flame: the SVG carries the Python kind and its orange palette" ||
	fail "python-flame: no Python kind in the SVG"

# ---- --python-only ----
"$CSAMPLER" flame --python-only --dump-layout --minwidth 0 split.data >py.layout 2>py.err ||
	fail "python-flame: flame --python-only failed: $(cat py.err)"
# depth 0 is "all", depth 1 the process roots; deeper, Python frames only
read -r deep nonpy <<<"$(awk '!/^#/ && $1 >= 2 { d++; if ($6 !~ /^python/) n++ } END { print d + 0, n + 0 }' py.layout)"
[ "$deep" -gt 20 ] && [ "$nonpy" = 0 ] &&
	pass "python-flame: --python-only: $deep frames under the roots, all Python" ||
	fail "python-flame: --python-only: $nonpy of $deep frames under the roots are not Python"
grep -qE '^2 .* python <module>$' py.layout &&
	grep -qE ' python hot_loop$' py.layout && grep -qE ' python compress_data$' py.layout &&
	pass "python-flame: --python-only: <module> under the root, split.py's functions above" ||
	fail "python-flame: --python-only: no <module> at depth 2 or no hot_loop/compress_data"
# the same samples: python-only keeps every sample of the whole graph
t1=$(awk '!/^#/ && $1 == 0 { print $5; exit }' all.layout) t2=$(awk '!/^#/ && $1 == 0 { print $5; exit }' py.layout)
[ -n "$t1" ] && [ "$t1" = "$t2" ] && pass "python-flame: --python-only keeps every sample ($t2)" ||
	fail "python-flame: totals differ: ${t1:-?} whole, ${t2:-?} --python-only"
"$CSAMPLER" -q flame --python-only split.data -o py.svg && [ -s py.svg ] &&
	{ ! command -v xmllint >/dev/null || xmllint --noout py.svg; } &&
	pass "python-flame: --python-only SVG written (well-formed)" || fail "python-flame: --python-only SVG"

# ---- folded text cannot be filtered: one line, non-zero exit ----
"$CSAMPLER" folded -i split.data >split.folded 2>/dev/null
"$CSAMPLER" flame --python-only split.folded >/dev/null 2>ft.err
rc=$?
[ "$rc" != 0 ] && [ "$(wc -l <ft.err)" = 1 ] && grep -q 'folded --python-only' ft.err &&
	pass "python-flame: --python-only on folded text: one line ($(cat ft.err))" ||
	fail "python-flame: --python-only on folded text: rc $rc, $(cat ft.err)"
finish
