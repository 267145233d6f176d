#!/usr/bin/env bash
# report and folded on a real recording of tests/progs/report-mix (main thread 2/3 of the CPU
# time in hot_main, thread "rm-worker" 1/3 in hot_worker): JSON fields and their consistency,
# shares, completeness, filters, folded text and its agreement with report, a report that does
# not change when the program is deleted, and one-line errors with exit status 125.
source "$CSAMPLER_ROOT/tests/lib.sh"

cp "$TPROG/report-mix" ./mix
if ! "$CSAMPLER" record -q -o mix.data -- ./mix 0.3 >rec.out 2>rec.err; then
	fail "report: record failed: $(tail -n 2 rec.err | tr '\n' ' ')"
	finish
fi

# -- text --
if "$CSAMPLER" report -i mix.data >report.txt 2>report.err; then
	pass "report: text report exits 0"
else
	fail "report: text report failed: $(cat report.err)"
fi
for section in "# command:   .*/mix 0.3" "# samples:   [0-9]" "# duration:  " "# lost:      0" \
	"# rate:      999 Hz requested" "^Top functions by self samples" \
	"^Top functions by total (inclusive) samples" "^Source lines of the hottest functions" \
	"^Processes" "^Threads" "^Libraries" "^Unwind quality" "complete stacks: "; do
	grep -q -- "$section" report.txt && pass "report: text has '$section'" ||
		fail "report: text lacks '$section'"
done
first=$(sed -n '/^Top functions by self/{n;n;p;q}' report.txt)
case "$first" in *"[.] hot_main") pass "report: hot_main is first by self" ;;
*) fail "report: first row by self is '$first'" ;; esac
grep -Eq '^ *[0-9.]+% +[0-9.]+% +hot_main +.*report-mix\.c:[0-9]+ ' report.txt &&
	pass "report: hot_main's source line shown" || fail "report: no source line for hot_main"

# -- JSON --
"$CSAMPLER" report -i mix.data --format json --limit 0 >r.json 2>r.err ||
	fail "report: JSON report failed: $(cat r.err)"
if node -e "JSON.parse(require('fs').readFileSync('r.json','utf8'))" 2>/dev/null; then
	pass "report: JSON parses"
else
	fail "report: JSON does not parse"; finish
fi
samples=$(json_get r.json j.samples)
[ "${samples:-0}" -gt 300 ] && pass "report: $samples samples" || fail "report: only ${samples:-0} samples"
check "report: JSON numbers have their types" node -e "
const j = JSON.parse(require('fs').readFileSync('r.json', 'utf8'));
for (const k of ['samples', 'lost', 'duration_s']) if (typeof j[k] !== 'number') throw k;
if (typeof j.unwind.complete_pct !== 'number') throw 'complete_pct';
for (const f of j.functions) if (typeof f.self !== 'number' || typeof f.total !== 'number' ||
    typeof f.name !== 'string' || f.self > f.total) throw 'function ' + f.name;
for (const t of j.threads) if (typeof t.tid !== 'number' || typeof t.comm !== 'string') throw 'thread';"
check "report: thread and process samples add up to samples" node -e "
const j = JSON.parse(require('fs').readFileSync('r.json', 'utf8'));
const sum = a => a.reduce((s, x) => s + x.samples, 0);
if (sum(j.threads) !== j.samples || sum(j.processes) !== j.samples) throw 'sums differ';
const self = j.functions.reduce((s, f) => s + f.self, 0);
if (self + j.unwind.empty !== j.samples) throw 'self sums to ' + self;"
share() { json_get r.json "(() => { const f = j.functions.find(f => f.name === '$1'); return f ? (100 * f.$2 / j.samples).toFixed(1) : -1; })()"; }
in_range() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }
main_total=$(share hot_main total); worker_total=$(share hot_worker total)
in_range "$main_total" 56.7 76.7 && pass "report: hot_main total $main_total% (~66.7)" ||
	fail "report: hot_main total $main_total%, expected ~66.7"
in_range "$worker_total" 23.3 43.3 && pass "report: hot_worker total $worker_total% (~33.3)" ||
	fail "report: hot_worker total $worker_total%, expected ~33.3"
chain=$(json_get r.json "j.functions.filter(f => ['chain_outer', 'chain_inner', 'main'].includes(f.name) && f.total >= j.functions.find(g => g.name === 'hot_main').total).length")
[ "$chain" = 3 ] && pass "report: callers of hot_main carry its total" || fail "report: callers' totals ($chain of 3)"
complete=$(json_get r.json j.unwind.complete_pct)
in_range "$complete" 95 100 && pass "report: $complete% of stacks complete" ||
	fail "report: only $complete% of stacks complete"
wtid=$(json_get r.json "j.threads.find(t => t.comm === 'rm-worker').tid")
mtid=$(json_get r.json "j.threads.find(t => t.comm === 'mix').tid")
wsamples=$(json_get r.json "j.threads.find(t => t.comm === 'rm-worker').samples")

# -- filters --
"$CSAMPLER" report -i mix.data --format json --tid "$wtid" >tid.json
n=$(json_get tid.json j.samples); top=$(json_get tid.json j.functions[0].name)
[ "$n" = "$wsamples" ] && [ "$top" = hot_worker ] && pass "report: --tid keeps the worker's samples" ||
	fail "report: --tid: $n samples (want $wsamples), top $top"
"$CSAMPLER" report -i mix.data --format json --comm rm-worker >comm.json
n=$(json_get comm.json j.samples)
[ "$n" = "$wsamples" ] && pass "report: --comm by thread name" || fail "report: --comm: $n samples, want $wsamples"
"$CSAMPLER" report -i mix.data --format json --comm mix >pcomm.json
n=$(json_get pcomm.json j.samples)
[ "$n" = "$samples" ] && pass "report: --comm by process name" || fail "report: --comm mix: $n, want $samples"
"$CSAMPLER" report -i mix.data --format json --pid 1 >pid.json
n=$(json_get pid.json j.samples)
[ "$n" = 0 ] && pass "report: --pid of another process keeps nothing" || fail "report: --pid 1: $n samples"
"$CSAMPLER" report -i mix.data --sort total --limit 3 >total.txt
sed -n '/^Top functions by total/,/^$/p' total.txt | awk 'NR > 2 && NF { print $4 }' >totals
[ "$(wc -l <totals)" = 3 ] && sort -rn -c totals 2>/dev/null &&
	sed -n '/^Top functions/{p;q}' total.txt | grep -q 'by total' &&
	pass "report: --sort total --limit 3 lists 3 rows by total, first" ||
	fail "report: --sort total: $(cat totals | tr '\n' ' ')"

# -- folded --
"$CSAMPLER" folded -i mix.data >mix.folded 2>folded.err || fail "folded: failed: $(cat folded.err)"
bad=$(grep -Evc '^[^;]+(;[^;]+)* [0-9]+$' mix.folded)
[ "$bad" = 0 ] && pass "folded: every line is 'root;...;leaf COUNT'" || fail "folded: $bad malformed lines"
fsum=$(awk '{ s += $NF } END { print s }' mix.folded)
[ "$fsum" = "$samples" ] && pass "folded: counts add up to report's samples" || fail "folded: $fsum vs $samples"
roots=$(cut -d';' -f1 mix.folded | sort -u | tr '\n' ' ')
[ "$roots" = "mix " ] && pass "folded: the process name is the root" || fail "folded: roots '$roots'"
LC_ALL=C sort -c mix.folded 2>/dev/null &&
	[ "$(sed 's/ [0-9]*$//' mix.folded | sort | uniq -d | wc -l)" = 0 ] &&
	pass "folded: sorted, each stack once" || fail "folded: not sorted or duplicated stacks"
grep -q ';chain_outer;chain_inner;hot_main' mix.folded && pass "folded: hot_main under its callers" ||
	fail "folded: no ...;chain_outer;chain_inner;hot_main stack"
kernel=$(grep -c '_\[k\]' mix.folded)
kernel_bad=$(grep -E '_\[k\]' mix.folded | grep -Evc '_\[k\]( [0-9]+$|;)')
[ "$kernel_bad" = 0 ] && pass "folded: $kernel stacks with kernel frames annotated _[k]" || fail "folded: misplaced _[k]"
"$CSAMPLER" folded -i mix.data --per-thread >pt.folded
roots=$(cut -d';' -f1 pt.folded | cut -d' ' -f1 | sort -u | tr '\n' ' ')
[ "$roots" = "mix-$mtid rm-worker-$wtid " ] && pass "folded: --per-thread roots comm-tid" ||
	fail "folded: --per-thread roots '$roots', want 'mix-$mtid rm-worker-$wtid'"
"$CSAMPLER" folded -i mix.data --tid "$wtid" >w.folded
wsum=$(awk '{ s += $NF } END { print s }' w.folded)
[ "$wsum" = "$wsamples" ] && ! grep -q hot_main w.folded && pass "folded: --tid" || fail "folded: --tid sum $wsum"

# -- self-contained: deleting the program changes nothing --
rm -f mix
"$CSAMPLER" report -i mix.data >report2.txt 2>&1
cmp -s report.txt report2.txt && pass "report: unchanged after the program is deleted" ||
	fail "report: differs after deleting the program: $(diff report.txt report2.txt | head -n 4 | tr '\n' ' ')"

# -- a truncated file is reported, with a warning in the header --
size=$(stat -c %s mix.data)
head -c $((size * 2 / 3)) mix.data >cut.data
if "$CSAMPLER" report -i cut.data >cut.txt 2>cut.err && grep -q '^# WARNING: truncated file' cut.txt; then
	pass "report: truncated file reported with a warning"
else
	fail "report: truncated file: $(head -n 2 cut.err | tr '\n' ' ')"
fi

# -- errors: one line, exit 125 --
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
expect_error "report: missing file" "$CSAMPLER" report -i nothing.data
printf 'not a profile\n' >junk.data
expect_error "report: not a data file" "$CSAMPLER" report -i junk.data
expect_error "folded: not a data file" "$CSAMPLER" folded -i junk.data
expect_error "report: bad --sort" "$CSAMPLER" report -i mix.data --sort name
expect_error "report: bad --format" "$CSAMPLER" report -i mix.data --format xml
expect_error "report: bad --limit" "$CSAMPLER" report -i mix.data --limit many
expect_error "report: bad --pid" "$CSAMPLER" report -i mix.data --pid -4
expect_error "folded: unknown option" "$CSAMPLER" folded -i mix.data --inverted
finish
