#!/usr/bin/env bash
# The readers' shared filters (profiler/analysis/filter.c) on real recordings:
#  --time on tests/progs/phases (phase_one, an idle half second, phase_two: each half of the
#    recording holds one phase, with a margin for a loaded machine):
#    perf's percent slices and ranges and START,END seconds give each phase alone, in report,
#    folded, flame, diff and export alike;
#  --pid/--tid/--comm on a run of two named processes select exactly one of them;
#  GPU records (stand-in CUPTI): two halves of the recording partition the launches, --pid of
#    another process drops them;
#  bad values: one line, exit 125, for every reader.
source "$CSAMPLER_ROOT/tests/lib.sh"

cp "$TPROG/phases" ./phases
if ! "$CSAMPLER" record -q -o ph.data -- ./phases 0.3 0.5 >rec.out 2>rec.err; then
	fail "filters: record failed: $(tail -n 2 rec.err | tr '\n' ' ')"
	finish
fi
# report_json FILE ARGS...: the JSON report of ph.data with ARGS into FILE.
report_json() { local out=$1; shift; "$CSAMPLER" report -i ph.data --format json --limit 0 "$@" >"$out" 2>"$out.err"; }
# totals FILE: "SAMPLES ONE TWO", the samples and the total samples of phase_one, phase_two.
totals() { json_get "$1" "[j.samples, ...['phase_one', 'phase_two'].map(n => (j.functions.find(f => f.name === n) || { total: 0 }).total)].join(' ')"; }
# alone NAME FILE WANT: PASS when function WANT has >= 85% of FILE's samples and the other phase none.
alone() {
	local name=$1 file=$2 want=$3 n one two mine other
	read -r n one two <<<"$(totals "$file")"
	if [ "$want" = phase_one ]; then mine=$one other=$two; else mine=$two other=$one; fi
	if [ "${n:-0}" -gt 50 ] && [ $((mine * 100)) -ge $((n * 85)) ] && [ "$other" = 0 ]; then
		pass "$name: $want alone ($mine of $n samples, the other phase $other)"
	else
		fail "$name: want $want alone: $n samples, phase_one $one, phase_two $two ($(head -c 200 "$file.err"))"
	fi
}

report_json all.json
read -r total one two <<<"$(totals all.json)"
if [ "${one:-0}" -gt 100 ] && [ "${two:-0}" -gt 100 ]; then
	pass "filters: the whole recording has both phases ($one and $two of $total)"
else
	fail "filters: whole recording: phase_one ${one:-?}, phase_two ${two:-?} of ${total:-?}"; finish
fi

# -- --time: percent slices, ranges, seconds --
report_json first.json --time 50%/1; alone "time 50%/1" first.json phase_one
report_json second.json --time 50%/2; alone "time 50%/2" second.json phase_two
report_json r1.json --time 0%-45%; alone "time 0%-45%" r1.json phase_one
report_json r2.json --time 55%-100%; alone "time 55%-100%" r2.json phase_two
report_json both.json --time 10%/1,10%/10
read -r n a b <<<"$(totals both.json)"
[ "$a" -gt 0 ] && [ "$b" -gt 0 ] && pass "time 10%/1,10%/10: both ends kept ($a, $b)" ||
	fail "time 10%/1,10%/10: phase_one $a, phase_two $b"
n1=$(json_get first.json j.samples); n2=$(json_get second.json j.samples)
[ $((n1 + n2)) = "$total" ] && pass "time: the two halves partition the $total samples ($n1 + $n2)" ||
	fail "time: halves $n1 + $n2 != $total"
dur=$(json_get all.json j.duration_s)
q1=$(awk -v d="$dur" 'BEGIN { printf "%.3f", d * 0.45 }'); q3=$(awk -v d="$dur" 'BEGIN { printf "%.3f", d * 0.55 }')
report_json s1.json --time ",$q1"; alone "time ,$q1 (seconds)" s1.json phase_one
report_json s2.json --time "$q3,"; alone "time $q3, (seconds)" s2.json phase_two
report_json s3.json --time "$q3"; alone "time $q3 (start alone)" s3.json phase_two
d1=$(json_get s1.json j.duration_s)
awk -v a="$d1" -v b="$q1" 'BEGIN { exit !(a > b - 0.002 && a < b + 0.002) }' &&
	pass "time: the report's duration is the window's ($d1 s)" || fail "time: duration $d1, want $q1"
grep -q '"time":"50%/2"' second.json && pass "time: JSON names the filter" || fail "time: JSON filter: $(grep -o '"filter":{[^}]*}' second.json)"
"$CSAMPLER" report -i ph.data --time 50%/2 >second.txt 2>/dev/null
grep -q "^# samples:   $n2 of $total pass the filter: time 50%/2" second.txt &&
	pass "time: text header says what passed" || fail "time: text header: $(grep '^# samples' second.txt)"

# the same window in the other readers
"$CSAMPLER" folded -i ph.data --time 50%/2 >second.folded 2>f.err
fsum=$(awk '{ s += $NF } END { print s + 0 }' second.folded)
f1=$(grep -c ';phase_one' second.folded)
[ "$fsum" = "$n2" ] && [ "$f1" = 0 ] && pass "folded --time 50%/2: $fsum samples, no phase_one" ||
	fail "folded --time 50%/2: $fsum samples (want $n2), $f1 phase_one lines $(cat f.err)"
flame_total=$("$CSAMPLER" flame --dump-layout --time 50%/1 ph.data 2>/dev/null | awk '$1 == 0 { print $5 }')
[ "$flame_total" = "$n1" ] && pass "flame --time 50%/1: $flame_total samples" || fail "flame --time 50%/1: '$flame_total', want $n1"
"$CSAMPLER" flame --time 50%/1 ph.data >first.svg 2>/dev/null
grep -q 'phase_one' first.svg && ! grep -q 'phase_two' first.svg && pass "flame --time 50%/1: only phase_one drawn" ||
	fail "flame --time 50%/1: phase_one $(grep -c phase_one first.svg), phase_two $(grep -c phase_two first.svg)"
"$CSAMPLER" diff --time 50%/2 ph.data ph.data >d.svg 2>d.err && grep -q phase_two d.svg && ! grep -q phase_one d.svg &&
	pass "diff --time 50%/2: both sides filtered" || fail "diff --time: phase_one in the graph $(cat d.err)"
"$CSAMPLER" export -i ph.data --time 50%/2 --format speedscope -o s.json 2>e.err &&
	node -e "const j = JSON.parse(require('fs').readFileSync('s.json', 'utf8'));
const names = j.shared.frames.map(f => f.name).join(' ');
const n = j.profiles.reduce((a, p) => a + p.samples.length, 0);
if (!/phase_two/.test(names) || /phase_one/.test(names)) throw 'frames ' + names;
if (n !== $n2) throw n + ' samples';" 2>e.err && pass "export --time 50%/2: speedscope has phase_two's $n2 samples only" ||
	fail "export --time: $(head -c 300 e.err)"

# -- --pid / --tid / --comm: two processes named alpha and beta --
cat >run2.sh <<'EOS'
#!/bin/sh
./phases 0.25 0 alpha & a=$!
./phases 0.25 0 beta & b=$!
wait $a; wait $b
EOS
chmod +x run2.sh
if "$CSAMPLER" record -q -o two.data -- ./run2.sh >/dev/null 2>rec2.err; then
	"$CSAMPLER" report -i two.data --format json --limit 0 >two.json 2>/dev/null
	apid=$(json_get two.json "j.processes.find(p => p.comm === 'alpha').pid")
	bpid=$(json_get two.json "j.processes.find(p => p.comm === 'beta').pid")
	asamples=$(json_get two.json "j.processes.find(p => p.comm === 'alpha').samples")
	# only NAME FILE: PASS when FILE's processes are alpha's alone, with all its samples.
	only() {
		local got
		got=$(json_get "$2" "j.processes.map(p => p.comm + ':' + p.samples).join(' ') + ' / ' + j.samples")
		[ "$got" = "alpha:$asamples / $asamples" ] && pass "$1: alpha alone ($asamples samples)" ||
			fail "$1: got '$got', want alpha:$asamples"
	}
	"$CSAMPLER" report -i two.data --format json --pid "$apid" >p.json 2>/dev/null; only "--pid $apid" p.json
	"$CSAMPLER" report -i two.data --format json --tid "$apid" >t.json 2>/dev/null; only "--tid $apid" t.json
	"$CSAMPLER" report -i two.data --format json --comm alpha >c.json 2>/dev/null; only "--comm alpha" c.json
	roots=$("$CSAMPLER" folded -i two.data --comm beta | cut -d';' -f1 | sort -u | tr '\n' ' ')
	[ "$roots" = "beta " ] && pass "folded --comm beta: root beta only" || fail "folded --comm beta: roots '$roots'"
	"$CSAMPLER" report -i two.data --format json --pid "$bpid" --comm alpha >none.json 2>none.err
	[ "$(json_get none.json j.samples)" = 0 ] && grep -q "nothing passes the filter" none.err &&
		pass "--pid beta --comm alpha: nothing, and a warning says so" || fail "--pid/--comm conjunction: $(cat none.err)"
else
	fail "filters: recording two processes failed: $(tail -n 2 rec2.err | tr '\n' ' ')"
fi

# -- GPU records (stand-in CUPTI, no GPU needed) --
LIB=$CSAMPLER_ROOT/lib/libcsampler-cupti.so DRIVER=$CSAMPLER_ROOT/bin/tests/cupti/driver
if [ -f "$LIB" ] && [ -x "$DRIVER" ]; then
	LD_LIBRARY_PATH=$CSAMPLER_ROOT/bin/tests/cupti/standin "$CSAMPLER" record -q --gpu on -o g.data -- \
		sh -c 'exec "$0" workload "$CUDA_INJECTION64_PATH"' "$DRIVER" >/dev/null 2>g.err
	launches() { "$CSAMPLER" report -i g.data --format json "$@" 2>/dev/null | node -e "
const j = JSON.parse(require('fs').readFileSync(0, 'utf8')); console.log(j.gpu ? j.gpu.launches : 0)"; }
	# the scripted workload launches at the end of the recording: split it late
	all=$(launches); h1=$(launches --time 0%-90%); h2=$(launches --time 90%-100%)
	[ "${all:-0}" -gt 0 ] && [ $((h1 + h2)) = "$all" ] && pass "gpu: 0%-90% and 90%-100% partition the $all launches ($h1 + $h2)" ||
		fail "gpu: $h1 + $h2 launches, all $all"
	[ "$(launches --pid 1)" = 0 ] && pass "gpu: --pid of another process keeps no GPU launch" || fail "gpu: --pid 1 kept GPU launches"
	gsum() { "$CSAMPLER" folded --gpu -i g.data "$@" 2>/dev/null | awk '{ s += $NF } END { print s + 0 }'; }
	g1=$(gsum --time 0%-90%); g2=$(gsum --time 90%-100%); gall=$(gsum)
	[ "${gall:-0}" -gt 0 ] && [ $((g1 + g2)) = "$gall" ] &&
		pass "gpu: folded --gpu splits the same way ($g1 + $g2 ns)" || fail "gpu: folded --gpu: $g1 + $g2 ns of $gall"
else
	skip "filters/gpu: lib/libcsampler-cupti.so or the stand-in driver is not built (no CUPTI headers)"
fi

# -- bad values: one line, exit 125 --
expect_error() {
	local name=$1; shift
	"$@" >err.out 2>err.txt
	local rc=$?
	if [ "$rc" = 125 ] && [ "$(wc -l <err.txt)" = 1 ] && [ ! -s err.out ]; then
		pass "$name: exit 125, one line: $(cat err.txt)"
	else
		fail "$name: exit $rc, stderr: $(head -n 3 err.txt | tr '\n' ' ')"
	fi
}
for cmd in report folded flame export; do
	expect_error "$cmd --time abc" "$CSAMPLER" $cmd --time abc ph.data
done
expect_error "diff --time 60%/2" "$CSAMPLER" diff --time 60%/2 ph.data ph.data
for bad in "5,2" "1,2,3" "-1," "10%/0" "20%-10%" "0%-101%" "10%" "1,x" "inf,"; do
	expect_error "report --time '$bad'" "$CSAMPLER" report -i ph.data --time "$bad"
done
expect_error "report --rank x" "$CSAMPLER" report -i ph.data --rank x
expect_error "folded --pid -3" "$CSAMPLER" folded -i ph.data --pid -3
expect_error "flame --tid 1x" "$CSAMPLER" flame --tid 1x ph.data
expect_error "export --comm ''" "$CSAMPLER" export -i ph.data --comm ''
finish
