#!/usr/bin/env bash
# `report`'s Python function table and the --python-only view of report and folded, on the
# 60/25/15 split program (tests/python/split.py) under Debian's CPython 3.11: the table's split,
# its self (innermost Python frame) and total (once per sample) against the folded stacks, the
# hottest lines, the JSON "python" key, and folded --python-only holding Python frames alone.
source "$CSAMPLER_ROOT/tests/python/lib-python.sh"
need_python311 python-report

"$CSAMPLER" record -q -o split.data -- "$PY" "$SRC/split.py" 6 >/dev/null 2>rec.err ||
	fail "python-report: record failed: $(cat rec.err)"

# ---- the text table ----
"$CSAMPLER" report -i split.data >report.txt 2>&1
sed -n '/^Python functions by self samples/,/^$/p' report.txt >pytable.txt
grep -q 'run Python code; self: the innermost Python frame' pytable.txt &&
	pass "python-report: text report has the Python function table" ||
	fail "python-report: no Python function table in: $(head -c 600 report.txt)"
# rows: Self% Self Total% Total Function File:line
self_of() { awk -v f="$1" '$5 == f { print $2; exit }' pytable.txt; }
total_of() { awk -v f="$1" '$5 == f { print $4; exit }' pytable.txt; }
hot=$(self_of hot_loop) rec=$(self_of recurse) comp=$(self_of compress_data)
split=$(awk -v h="${hot:-0}" -v r="${rec:-0}" -v c="${comp:-0}" 'BEGIN { t = h + r + c;
	if (!t) { print "0 0 0 0"; exit }
	printf "%.1f %.1f %.1f %d\n", 100*h/t, 100*r/t, 100*c/t, t }')
read -r ph pr pc t <<<"$split"
ok=$(awk -v h="$ph" -v r="$pr" -v c="$pc" 'BEGIN { d1=h-60; d2=r-25; d3=c-15;
	print (d1<=3 && d1>=-3 && d2<=3 && d2>=-3 && d3<=3 && d3>=-3) ? 1 : 0 }')
[ "$t" -gt 500 ] && [ "$ok" = 1 ] &&
	pass "python-report: table's self split 60/25/15 within 3 points ($ph/$pr/$pc of $t)" ||
	fail "python-report: table's split $ph/$pr/$pc of $t samples, want 60/25/15 +-3"
# ---- self and total against the folded stacks ----
"$CSAMPLER" folded -i split.data >split.folded 2>/dev/null
"$CSAMPLER" folded --python-only -i split.data >py.folded 2>/dev/null
# hottest line: the line of hot_loop's innermost frames with the most samples
line=$(awk '{ s0 = $0; sub(/ [0-9]+$/, "", s0); n = split(s0, fr, ";");
	if (match(fr[n], /^hot_loop \(.*:[0-9]+\)$/)) { l = fr[n]; sub(/.*:/, "", l); sub(/\)/, "", l); c[l] += $NF } }
	END { for (l in c) if (c[l] > b || (c[l] == b && l + 0 < bl + 0)) { b = c[l]; bl = l } print bl }' py.folded)
grep -qE "hot_loop +[^ ]*split\.py:$line\$" pytable.txt && [ "$line" -ge 11 ] && [ "$line" -le 15 ] &&
	pass "python-report: hot_loop's hottest line is $line, the one most of its samples run" ||
	fail "python-report: hot_loop's line is not ${line:-?}: $(grep hot_loop pytable.txt)"

# total: every stack holding the function once, however deep it recurses
ftotal=$(awk '/recurse \(/ { n += $NF } END { print n + 0 }' split.folded)
[ "$(total_of recurse)" = "$ftotal" ] && [ "$ftotal" -gt 0 ] &&
	pass "python-report: recurse's total ($ftotal) counts each sample once despite 21 frames" ||
	fail "python-report: recurse total $(total_of recurse), folded stacks holding it: $ftotal"
# self: the stacks whose innermost Python frame is the function (native frames under it)
for f in hot_loop recurse compress_data; do
	fself=$(awk -v f="$f" '{ s0 = $0; sub(/ [0-9]+$/, "", s0); n = split(s0, fr, ";"); if (index(fr[n], f " (") == 1) s += $NF }
		END { print s + 0 }' py.folded)
	[ "$(self_of "$f")" = "$fself" ] && [ "$fself" -gt 0 ] &&
		pass "python-report: $f's self ($fself) = stacks with it as innermost Python frame" ||
		fail "python-report: $f self $(self_of "$f"), innermost in folded: $fself"
done
# <module> of split.py (a Python function is its name in its file: the interpreter's start-up
# runs other modules' <module> code, rows of their own; all rows, for split.py's <module>
# whose self is too small for the first 20 rows)
"$CSAMPLER" report --limit 0 -i split.data 2>/dev/null | sed -n '/^Python functions by self samples/,/^$/p' >pyall.txt
mself=$(awk '$5 == "<module>" && $6 ~ /split\.py:/ { print $2; exit }' pyall.txt)
mtotal=$(awk '$5 == "<module>" && $6 ~ /split\.py:/ { print $4; exit }' pyall.txt)
sum=$(awk '/run Python code/ { print $0 }' pytable.txt | grep -oE '[0-9]+ samples' | cut -d' ' -f1)
[ "${mself:-x}" -lt $((${sum:-0} / 20 + 1)) ] && [ "${mtotal:-0}" -ge $((hot + rec + comp)) ] && [ "$mtotal" -le "${sum:-0}" ] &&
	pass "python-report: <module>: self $mself, total $mtotal of $sum Python samples" ||
	fail "python-report: <module> self ${mself:-?} total ${mtotal:-?}, Python samples ${sum:-?}"

# ---- --python-only folded: py-spy's look ----
bad=$(awk '{ s0 = $0; sub(/ [0-9]+$/, "", s0); n = split(s0, fr, ";"); for (i = 2; i <= n; i++) if (fr[i] !~ / \([^()]*:[0-9]+\)$/) { print fr[i]; exit } }' py.folded)
[ -s py.folded ] && [ -z "$bad" ] && ! grep -qE '_PyEval|deflate|_\[k\]|_start' py.folded &&
	pass "python-report: folded --python-only has Python frames only" ||
	fail "python-report: folded --python-only has a native frame: '${bad:-$(grep -oE '_PyEval[^;]*|deflate[^;]*' py.folded | head -1)}'"
grep -qE '^python[^;]*;<module> \([^)]*split\.py:[0-9]+\);main \(' py.folded &&
	pass "python-report: --python-only stacks start at the root, then <module>" ||
	fail "python-report: no 'root;<module>;main' stack in --python-only: $(head -2 py.folded)"
a=$(awk '{ n += $NF } END { print n }' split.folded) b=$(awk '{ n += $NF } END { print n }' py.folded)
[ "$a" = "$b" ] && pass "python-report: --python-only keeps every sample ($b)" ||
	fail "python-report: --python-only has $b samples, the full view $a"

# ---- JSON ----
"$CSAMPLER" report --format json -i split.data >report.json 2>/dev/null
"$CSAMPLER" report --format json --python-only -i split.data >py.json 2>/dev/null
"$PY" - report.json py.json "$line" "$(self_of hot_loop)" >json.out 2>&1 <<'EOF'
import json, sys
full, py = (json.load(open(p)) for p in sys.argv[1:3])
line, hot_self = int(sys.argv[3]), int(sys.argv[4])
fns = {f["name"]: f for f in full["python"]["functions"]}
assert full["python"]["samples"] > 500, full["python"]["samples"]
h = fns["hot_loop"]
assert h["self"] == hot_self and h["line"] == line and h["file"].endswith("split.py"), h
assert fns["recurse"]["total"] <= full["python"]["samples"], fns["recurse"]
assert not full["python_only"] and py["python_only"]
assert all(f["library"] == "[python]" for f in py["functions"]), py["functions"][:3]
assert py["unwind"]["complete_pct"] == full["unwind"]["complete_pct"], "unwind differs"
print("ok", len(fns), "Python functions")
EOF
grep -q '^ok' json.out && pass "python-report: JSON valid, \"python\" table and --python-only ($(cat json.out))" ||
	fail "python-report: JSON: $(tail -3 json.out)"
finish
