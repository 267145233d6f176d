#!/usr/bin/env bash
# csampler flame and diff on a real csampler data file (a recording of tests/progs/report-mix,
# whose main thread spins in hot_main and thread "rm-worker" in hot_worker): the same layout as
# its folded text, modules and source lines in the frame data, kinds from the modules,
# standard input, ./csampler.data by default, --per-thread, --comm, --flamechart, and diffs of
# data files with each other and with folded text.
source "$CSAMPLER_ROOT/tests/lib.sh"

if [ ! -x "$TPROG/report-mix" ]; then
	fail "datafile: bin/tests/report-mix is missing (make test-programs)"
	finish
fi
cp "$TPROG/report-mix" ./mix
if ! "$CSAMPLER" record -q -o mix.data -- ./mix 0.3 >rec.out 2>rec.err; then
	skip "datafile: csampler record cannot record here: $(tail -n 1 rec.err)"
	finish
fi
nokind() { awk '!/^#/ { $6 = ""; print }' "$1"; }

"$CSAMPLER" flame --dump-layout mix.data >data.txt 2>data.err ||
	fail "datafile: flame on a data file failed: $(cat data.err)"
"$CSAMPLER" folded mix.data | "$CSAMPLER" flame --dump-layout >folded.txt 2>/dev/null
if [ "$(grep -vc '^#' data.txt)" -gt 5 ] && cmp -s <(nokind data.txt) <(nokind folded.txt); then
	pass "datafile: same frames as 'csampler folded | csampler flame'"
else
	fail "datafile: data file and its folded text differ: $(diff <(nokind data.txt) <(nokind folded.txt) | head -n 4 | tr '\n' '|')"
fi
grep -Eq '^[0-9]+ [0-9.]+ [0-9.]+ [0-9]+ [0-9]+ own hot_main$' data.txt &&
	grep -Eq ' system start_thread$' data.txt &&
	pass "datafile: kinds from the modules (hot_main own, start_thread system)" ||
	fail "datafile: kinds: $(grep -E 'hot_main|start_thread' data.txt | tr '\n' '|')"

"$CSAMPLER" -q flame mix.data -o mix.svg 2>svg.err || fail "datafile: SVG: $(cat svg.err)"
if command -v xmllint >/dev/null; then
	check "datafile: SVG is well-formed" xmllint --noout mix.svg
fi
check "datafile: modules and source lines in the frame data" node -e "
const s = require('fs').readFileSync('mix.svg', 'utf8');
const d = JSON.parse(s.split('id=\"flamedata\">')[1].split('</script>')[0]);
const k = d.names.indexOf('hot_main');
if (k < 0) throw 'no hot_main';
if (d.modn[d.mods[k]] !== 'mix') throw 'hot_main module ' + d.modn[d.mods[k]];
if (!/report-mix\.c(:\d+)?$/.test(d.src[k])) throw 'hot_main source ' + d.src[k];"

"$CSAMPLER" flame --dump-layout <mix.data >stdin.txt 2>/dev/null
cmp -s stdin.txt data.txt && pass "datafile: a data file redirected to standard input" ||
	fail "datafile: standard input gives another layout"
# through a pipe: a data file, and folded text given as /dev/stdin (whose first bytes, read to
# tell the two apart, were once lost)
cat mix.data | "$CSAMPLER" flame --dump-layout >pipe.txt 2>pipe.err
cmp -s pipe.txt data.txt && pass "datafile: a data file through a pipe" ||
	fail "datafile: a data file through a pipe: $(head -c 200 pipe.err)"
"$CSAMPLER" folded mix.data >pipe.folded
"$CSAMPLER" flame --dump-layout pipe.folded >folded-file.txt 2>/dev/null
cat pipe.folded | "$CSAMPLER" flame --dump-layout /dev/stdin >folded-pipe.txt 2>/dev/null
cmp -s folded-pipe.txt folded-file.txt && pass "datafile: folded text through a pipe as /dev/stdin: every line" ||
	fail "datafile: folded text through /dev/stdin differs: $(diff folded-file.txt folded-pipe.txt | head -n 3 | tr '\n' ' ')"
cp mix.data csampler.data
"$CSAMPLER" flame --dump-layout </dev/null >default.txt 2>/dev/null
cmp -s default.txt data.txt && pass "datafile: ./csampler.data by default" ||
	fail "datafile: the default input is not ./csampler.data"

total=$(awk '$1 == 0 { print $5 }' data.txt)
threads=$("$CSAMPLER" flame --dump-layout --per-thread mix.data | awk '$1 == 1' | wc -l)
[ "$threads" = 2 ] && pass "datafile: --per-thread: one root per thread" ||
	fail "datafile: --per-thread gave $threads roots, expected 2"
worker=$("$CSAMPLER" flame --dump-layout --comm rm-worker mix.data | awk '$1 == 0 { print $5 }')
[ -n "$worker" ] && [ "$worker" -gt 0 ] && [ "$worker" -lt "$total" ] &&
	pass "datafile: --comm rm-worker: $worker of $total samples" ||
	fail "datafile: --comm rm-worker: '$worker' of $total samples"
"$CSAMPLER" flame --dump-layout --flamechart mix.data >chart.txt 2>/dev/null
chart_total=$(awk '$1 == 0 { print $5 }' chart.txt)
[ "$chart_total" = "$total" ] && [ "$(grep -vc '^#' chart.txt)" -ge "$(grep -vc '^#' data.txt)" ] &&
	pass "datafile: --flamechart keeps every sample, in time order" ||
	fail "datafile: --flamechart total $chart_total of $total"

"$CSAMPLER" diff --dump-layout mix.data mix.data >same.txt 2>/dev/null
awk '!/^#/ && $5 != $6 { bad = 1 } END { exit bad }' same.txt && [ -s same.txt ] &&
	pass "datafile: diff of a profile with itself: no change anywhere" ||
	fail "datafile: self-diff has changes: $(awk '!/^#/ && $5 != $6' same.txt | head -n 2)"
"$CSAMPLER" folded mix.data >mix.folded
"$CSAMPLER" diff --dump-layout mix.folded mix.data >mixed.txt 2>mixed.err &&
	cmp -s <(awk '!/^#/ { $7 = ""; print }' mixed.txt) <(awk '!/^#/ { $7 = ""; print }' same.txt) &&
	pass "datafile: diff of folded text against a data file" ||
	fail "datafile: folded-vs-data diff: $(cat mixed.err; diff mixed.txt same.txt | head -n 3)"
finish
