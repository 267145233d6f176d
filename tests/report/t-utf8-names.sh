#!/usr/bin/env bash
# Names cut in the middle of a UTF-8 character (tests/progs/utf8-names.c: threads named
# "训练-数据加载器", which the kernel cuts at 15 bytes; a JIT function and DWARF source files
# with the same cut) through every JSON output and the SVG: each parses (Python's json module,
# xmllint), keeps the valid part of the names, and shows the cut bytes as U+FFFD.
source "$CSAMPLER_ROOT/tests/lib.sh"

cp "$TPROG/utf8-names" ./utf8-names
if ! "$CSAMPLER" record -q -o u.data -- ./utf8-names 0.4 >rec.out 2>rec.err; then
	fail "utf8-names: record failed: $(tail -n 2 rec.err | tr '\n' ' ')"
	finish
fi
# The recording must hold the cut names, or the checks below prove nothing.
cut=$'\xe8\xae\xad\xe7\xbb\x83-\xe6\x95\xb0\xe6\x8d\xae\xe5\x8a'
"$CSAMPLER" report -i u.data --limit 0 >report.txt 2>report.err
if grep -qF "$cut"$'\n' <(sed -n '/^Threads/,/^$/p' report.txt | sed 's/ *$//;s/.* //') &&
	grep -qF "${cut}_kernel" report.txt; then
	pass "utf8-names: the thread and JIT names end mid-character in the recording"
else
	fail "utf8-names: the recording lacks the cut names: $(sed -n '/^Threads/,/^$/p' report.txt | tr '\n' ' ')"
fi

# valid_json NAME FILE WHAT...: FILE parses as JSON and its strings hold each WHAT (Python
# string literals), e.g. the valid prefix and U+FFFD.
valid_json() {
	local name=$1 file=$2; shift 2
	local out
	if out=$(python3 - "$file" "$@" 2>&1 <<'PY'
import json, sys
text = open(sys.argv[1], 'rb').read().decode('utf-8')   # strict: bad UTF-8 fails here
data = json.loads(text)
strings = []
def walk(v):
    if isinstance(v, str): strings.append(v)
    elif isinstance(v, dict): [walk(k) or walk(x) for k, x in v.items()]
    elif isinstance(v, list): [walk(x) for x in v]
walk(data)
for want in sys.argv[2:]:
    want = eval(want)
    if not any(want in s for s in strings):
        sys.exit('no string holds %r' % want)
PY
	); then
		pass "utf8-names: $name is valid JSON${1:+ with the names}"
	else
		fail "utf8-names: $name: $(echo "$out" | tail -n 1)"
	fi
}
thread="'训练-数据\ufffd\ufffd'"
jit="'训练-数据\ufffd\ufffd_kernel'"
file="'src-数据\ufffd\ufffd/'"

"$CSAMPLER" report -i u.data --format json --limit 0 >r.json 2>r.err
valid_json "report --format json" r.json "$thread" "$jit" "$file"
"$CSAMPLER" report -i u.data --format json --limit 0 --step jit_caller >rs.json 2>rs.err
valid_json "report --step (steps section)" rs.json "$thread" "$jit"
"$CSAMPLER" report -i u.data --format json --steps --step jit_caller >steps.json 2>steps.err
valid_json "report --steps" steps.json "$thread"
"$CSAMPLER" report --compare u.data u.data --format json --limit 0 >c.json 2>c.err
valid_json "report --compare" c.json "$thread" "$jit"
"$CSAMPLER" info -i u.data --format json >i.json 2>i.err
valid_json "info --format json" i.json "$thread"
"$CSAMPLER" export -i u.data --format chrome -o t.json 2>t.err
valid_json "export --format chrome" t.json "$thread" "$jit"
"$CSAMPLER" export -i u.data --format speedscope -o s.json 2>s.err
valid_json "export --format speedscope" s.json "$thread" "$jit" "$file"
# a merged file of two ranks: its report, and report --ranks (whose straggler functions are
# whatever the rank spent more on: the JSON must parse, whichever names they are)
if RANK=0 "$CSAMPLER" record -q -o u0.data -- ./utf8-names 0.2 >/dev/null 2>m.err &&
	RANK=1 "$CSAMPLER" record -q -o u1.data -- ./utf8-names 0.3 >/dev/null 2>>m.err &&
	"$CSAMPLER" merge -o um.data u0.data u1.data >/dev/null 2>>m.err; then
	"$CSAMPLER" report -i um.data --format json --limit 0 >m.json 2>>m.err
	valid_json "report of a merged file" m.json "$thread" "$jit"
	"$CSAMPLER" report -i um.data --ranks --format json >ranks.json 2>>m.err
	valid_json "report --ranks" ranks.json
else
	fail "utf8-names: recording or merging two ranks failed: $(tail -n 2 m.err | tr '\n' ' ')"
fi

if ! "$CSAMPLER" flame -i u.data -o u.svg 2>f.err; then
	fail "utf8-names: flame failed: $(cat f.err)"
elif command -v xmllint >/dev/null; then
	check "utf8-names: the SVG is well-formed XML" xmllint --noout u.svg
	t=$(xmllint --xpath 'string(//*[local-name()="script"][last()])' u.svg 2>/dev/null; cat u.svg)
	case "$t" in *"训练-数据"$'\xef\xbf\xbd\xef\xbf\xbd'_kernel*)
		pass "utf8-names: the SVG names the JIT frame with U+FFFD for the cut bytes" ;;
	*) fail "utf8-names: the SVG lacks the JIT frame's name" ;; esac
else
	skip "utf8-names: SVG check: xmllint not installed (scripts/install-deps.sh --test)"
fi
finish
