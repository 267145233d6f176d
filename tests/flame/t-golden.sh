#!/usr/bin/env bash
# csampler flame/diff on small folded inputs (tests/flame/data): the frames' count, positions
# and widths (--dump-layout, compared with tests/flame/golden/*.txt), merging of narrow
# frames into "other" frames with widths that add up, the inverted, reverse and flame-chart
# layouts, frame kinds, differential layouts, and a well-formed SVG (xmllint) for each.
# UPDATE_GOLDEN=1 rewrites the golden files (check the diff before committing them).
source "$CSAMPLER_ROOT/tests/lib.sh"
DATA=$CSAMPLER_ROOT/tests/flame/data
GOLD=$CSAMPLER_ROOT/tests/flame/golden

have_xmllint=1
command -v xmllint >/dev/null || have_xmllint=0
[ $have_xmllint = 1 ] || skip "flame: xmllint checks: xmllint not installed (libxml2-utils)"

# golden NAME COMMAND ARGS...: the layout of `csampler COMMAND ARGS --dump-layout` equals
# golden/NAME.txt, and the SVG of the same command is well-formed.
golden() {
	local name=$1 cmd=$2
	shift 2
	if ! "$CSAMPLER" "$cmd" --dump-layout "$@" >"$name.txt" 2>"$name.err"; then
		fail "flame: $name: csampler $cmd failed: $(head -n 2 "$name.err" | tr '\n' ' ')"
		return
	fi
	if [ "${UPDATE_GOLDEN:-}" = 1 ]; then
		cp "$name.txt" "$GOLD/$name.txt"
	fi
	if diff -u "$GOLD/$name.txt" "$name.txt" >"$name.diff"; then
		pass "flame: $name: layout matches golden/$name.txt"
	else
		fail "flame: $name: layout differs from golden/$name.txt: $(head -n 12 "$name.diff" | tr '\n' '|')"
	fi
	if ! "$CSAMPLER" -q "$cmd" "$@" -o "$name.svg" 2>"$name.err"; then
		fail "flame: $name: SVG not written: $(head -n 2 "$name.err" | tr '\n' ' ')"
	elif [ $have_xmllint = 1 ]; then
		check "flame: $name: SVG is well-formed XML" xmllint --noout "$name.svg"
	fi
}

golden basic flame "$DATA/basic.folded"
golden inverted flame --inverted "$DATA/basic.folded"
golden reverse flame --reverse "$DATA/reverse.folded"
golden flamechart flame --flamechart "$DATA/chart.folded"
golden merge-pct flame --minwidth 5% "$DATA/merge.folded"
golden merge-px flame "$DATA/speck.folded"
golden kinds flame "$DATA/kinds.folded"
golden difffolded flame "$DATA/twocounts.folded"
golden diff diff "$DATA/before.folded" "$DATA/after.folded"
golden messy flame "$DATA/messy.folded"
golden options flame --width 600 --height 20 --fontsize 10 --title T --subtitle S \
	--colors mem --minwidth 30 "$DATA/basic.folded"

# Frame count and widths that add up: every frame's children (with its "other" frame) fit in
# it, and nothing is dropped: each frame's self count is >= 0 and the root holds the total.
check_sums() {
	awk '
	/^#/ { next }
	{ d = $1; w[d] = $3; c[d] = $5; kids[d] = 0
	  if (d > 0) { kids[d-1] += $5; if (kids[d-1] > c[d-1] + 1e-9) bad = bad " " NR } }
	END { if (bad) { print "children wider than their parent at lines" bad; exit 1 } }' "$1"
}
for f in basic inverted reverse flamechart merge-pct merge-px kinds diff; do
	[ -f $f.txt ] || continue
	check "flame: $f: children add up within their parents" check_sums $f.txt
done
frames=$(grep -vc '^#' basic.txt)
[ "$frames" = 8 ] && pass "flame: basic: 8 frames (all, main, foo, bar, baz, qux, bar, zeta)" ||
	fail "flame: basic: $frames frames, expected 8"
# --minwidth 5%: small1..3 (2+3+4) merge into one "[3 other frames]" of 9 under main,
# tiny1+tiny2 into "[2 other frames]" of 2 under mid; main keeps its total of 100.
grep -q '^2 1072.00 106.20 74 9 other \[3 other frames\]$' merge-pct.txt &&
	grep -q '^3 1048.40 23.60 58 2 other \[2 other frames\]$' merge-pct.txt &&
	grep -q '^1 10.00 1180.00 90 100 own main$' merge-pct.txt &&
	pass "flame: merge-pct: narrow frames merged per parent, widths kept" ||
	fail "flame: merge-pct: other frames wrong: $(grep other merge-pct.txt | tr '\n' '|')"

# Standard input and several files: the same tree as one file.
"$CSAMPLER" flame --dump-layout <"$DATA/basic.folded" >stdin.txt 2>/dev/null
cmp -s stdin.txt basic.txt && pass "flame: folded text on standard input" ||
	fail "flame: standard input gives another layout"
head -n 3 "$DATA/basic.folded" >part1
tail -n +4 "$DATA/basic.folded" >part2
"$CSAMPLER" flame --dump-layout part1 part2 >parts.txt 2>/dev/null
cmp -s parts.txt basic.txt && pass "flame: several inputs are merged" ||
	fail "flame: two halves give another layout than the whole"
# Sorted input takes the shared-prefix path of the reader: same tree.
sort "$DATA/basic.folded" | "$CSAMPLER" flame --dump-layout >sorted.txt 2>/dev/null
cmp -s sorted.txt basic.txt && pass "flame: sorted and unsorted input give the same layout" ||
	fail "flame: sorting the input changes the layout"
# flamegraph.pl's option spellings: one dash, --opt=value.
"$CSAMPLER" flame -dump-layout -width=600 -height 20 -fontsize=10 -title=T -subtitle S \
	-colors=mem -minwidth=30 "$DATA/basic.folded" >dash.txt 2>/dev/null
cmp -s dash.txt options.txt && pass "flame: flamegraph.pl option spellings" ||
	fail "flame: -opt=value spellings give another layout"

# SVG content: title, countname, palette and data as written.
"$CSAMPLER" flame --title 'CPU & <GPU>' --countname ms --colors aqua --nametype 'Fn:' \
	"$DATA/basic.folded" >opts.svg 2>/dev/null
if [ $have_xmllint = 1 ]; then
	t=$(xmllint --xpath 'string(//*[@id="title"])' opts.svg 2>/dev/null)
	[ "$t" = 'CPU & <GPU>' ] && pass "flame: title escaped and read back" ||
		fail "flame: title reads back as '$t'"
fi
check "flame: frame data carries countname, nametype and palette" node -e "
const s = require('fs').readFileSync('opts.svg', 'utf8');
const d = JSON.parse(s.split('id=\"flamedata\">')[1].split('</script>')[0]);
if (d.countname !== 'ms' || d.nametype !== 'Fn:' || d.palette !== 'aqua') throw JSON.stringify(d);
if (d.frames.length !== 3 * 8 || d.total !== 100) throw 'frames ' + d.frames.length;"
check "flame: the SVG references nothing outside itself" bash -c \
	"! grep -Eq '(href|src)=|@import|url\\((https?|file):' opts.svg"
finish
