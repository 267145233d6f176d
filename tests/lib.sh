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
