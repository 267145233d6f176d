#!/usr/bin/env bash
# run.sh: run every test and print "N passed, N failed[, N skipped]" last.
# Tests: bin/csampler-unit (unit tests, one forked child each) and every executable
# tests/t-*.sh and tests/*/t-*.sh. A test prints lines "PASS: name", "FAIL: name: why" or
# "SKIPPED: name: reason"; a script that exits non-zero without printing FAIL counts as one
# failure, so a crash is never silent. TEST_FILTER=substring runs only matching scripts.
set -u
cd "$(dirname "$0")/.."
export CSAMPLER_ROOT=$PWD
mkdir -p tests/out
pass=0 fail=0 skip=0
failures=tests/out/failures.txt # every FAIL line with its log's last lines, repeated at the end
: >"$failures"
run_one() {
	local name=$1; shift
	local log=tests/out/$(echo "$name" | tr '/ ' '__').log
	local rc
	timeout --kill-after=10 "${TEST_TIMEOUT:-900}" "$@" >"$log" 2>&1
	rc=$?
	grep -E '^(PASS|FAIL|SKIPPED):' "$log"
	local p f s
	p=$(grep -c '^PASS:' "$log"); f=$(grep -c '^FAIL:' "$log"); s=$(grep -c '^SKIPPED:' "$log")
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		echo "FAIL: $name: exited with status $rc (log: $log)"
		tail -n 5 "$log" | sed 's/^/    /'
		f=1
		{ echo "FAIL: $name: exited with status $rc"; tail -n 12 "$log" | sed 's/^/    /'; } >>"$failures"
	elif [ "$f" != 0 ]; then
		echo "    (log: $log)"
		# each FAIL with the lines the script printed around it (its figures, its diagnosis)
		grep -B 4 -A 8 '^FAIL:' "$log" | grep -v '^\(PASS\|SKIPPED\):' >>"$failures"
	fi
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
}
if [ -x bin/csampler-unit ]; then
	run_one unit bin/csampler-unit
else
	echo "FAIL: unit: bin/csampler-unit was not built"; fail=$((fail + 1))
fi
for t in tests/t-*.sh tests/*/t-*.sh; do
	[ -x "$t" ] || continue
	case "$t" in *"${TEST_FILTER:-}"*) ;; *) continue ;; esac
	run_one "$t" "$t"
done
# a CI log is often cut in the middle: the failures again, just above the count
if [ -s "$failures" ]; then
	echo "---- the failures again, with what their scripts printed around them ----"
	cat "$failures"
fi
if [ "$skip" -gt 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
[ "$fail" = 0 ]
