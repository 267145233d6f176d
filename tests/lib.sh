# lib.sh: helpers sourced by the end-to-end test scripts (tests/t-*.sh).
# Each script runs in its own scratch directory $T and reports with pass/fail/skip.
set -u
CSAMPLER_ROOT=${CSAMPLER_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
CSAMPLER=${CSAMPLER_BIN:-$CSAMPLER_ROOT/bin/csampler}
TPROG=$CSAMPLER_ROOT/bin/tests
T=$(mktemp -d /tmp/csampler-test.XXXXXX)
chmod 755 "$T"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
TEST_FAILS=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; TEST_FAILS=$((TEST_FAILS + 1)); }
skip() { echo "SKIPPED: $*"; }
# check NAME COMMAND...: PASS when the command succeeds, FAIL (with its output) otherwise.
check() {
	local name=$1; shift
	local out
	if out=$("$@" 2>&1); then pass "$name"; else fail "$name: $(echo "$out" | tail -n 3 | tr '\n' ' ')"; fi
}
# json_get FILE EXPR: evaluate a JavaScript expression over the JSON in FILE (as `j`) with node.
json_get() { node -e "const j=JSON.parse(require('fs').readFileSync('$1','utf8')); console.log($2)"; }
# descendants PID: the PIDs of PID's children, grandchildren and so on, one a line. Tests kill
# what they started by these PIDs, never by a name pattern that could hit another test run.
descendants() { local p; for p in $(pgrep -P "$1"); do echo "$p"; descendants "$p"; done; }
finish() { exit $((TEST_FAILS > 0)); }
# prefix_readable NAME FILE MIN complete|truncated [PCT]: after a fault, `info` and `report` both
# read FILE; it holds at least MIN samples, more than PCT% (default 50) of them in
# tests/progs/rec-worker.c's code (what the target did before the fault; by name, worker_burn,
# when the file is complete: a cut file may end before the names of its last locations; PCT 0
# asks nothing of the target's code), and it is complete (ended and symbolized) or truncated as
# said. One PASS or FAIL line.
prefix_readable() {
	local name=$1 file=$2 min=$3 want=$4 pct=${5:-50} rc n own named state
	local out=$T/$(basename "$file")
	"$CSAMPLER" info -i "$file" --format json >"$out.info.json" 2>"$out.info.err"; rc=$?
	if [ "$rc" != 0 ]; then fail "$name: info failed (rc $rc): $(head -c 200 "$out.info.err")"; return; fi
	"$CSAMPLER" report -i "$file" --format json >"$out.report.json" 2>"$out.report.err"; rc=$?
	if [ "$rc" != 0 ]; then fail "$name: report failed (rc $rc): $(head -c 200 "$out.report.err")"; return; fi
	n=$(json_get "$out.info.json" j.samples)
	own=$(json_get "$out.report.json" "j.functions.filter(f => /\/rec-worker\$/.test(f.library)).reduce((a, f) => a + f.self, 0)")
	named=$(json_get "$out.report.json" "j.functions.some(f => f.name === 'worker_burn')")
	state=$(json_get "$out.info.json" "j.truncated ? 'truncated' : j.symbolized ? 'complete' : 'unsymbolized'")
	if [ "$state" = "$want" ] && [ "${n:-0}" -ge "$min" ] && { [ "$pct" = 0 ] ||
		{ [ "$((${own:-0} * 100))" -gt "$((${n:-0} * pct))" ] && { [ "$state" = truncated ] || [ "$named" = true ]; }; }; }; then
		pass "$name: the file is $state and readable: $n samples, $own in rec-worker's code (worker_burn named: $named)"
	else
		fail "$name: the file is $state (want $want), $n samples (want >= $min), ${own:-0} in rec-worker, worker_burn named: $named; $(head -c 200 "$out.info.err")"
	fi
}
