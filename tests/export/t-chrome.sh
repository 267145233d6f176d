#!/usr/bin/env bash
# t-chrome.sh: `csampler export --format chrome` on a data file recorded through the stand-in
# CUPTI (the scripted workload of tests/cupti/script.h): check-chrome.py checks that the trace is
# valid JSON, that every GPU slice sits on its device's stream track, every flow has both ends
# (the start inside the launching API call, the end on its kernel), thread names, nesting, and
# the counts of the script. Also the command's errors: one line, non-zero exit, nothing clobbered.
. "$(dirname "$0")/../lib.sh"
export LC_ALL=C
DRIVER=$CSAMPLER_ROOT/bin/tests/cupti/driver
STANDIN=$CSAMPLER_ROOT/bin/tests/cupti/standin
COUNTS=$CSAMPLER_ROOT/bin/tests/export/script-counts

if ! command -v python3 >/dev/null; then
	skip "export/chrome: python3 is needed to check the JSON"
	finish
fi
if [ ! -f "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ] && [ ! -x "$DRIVER" ]; then
	skip "export/chrome: no CUDA toolkit with CUPTI headers, so the stand-in is not built"
	finish
fi
if [ ! -x "$DRIVER" ] || [ ! -x "$COUNTS" ] || [ ! -f "$CSAMPLER_ROOT/lib/libcsampler-cupti.so" ]; then
	fail "export/chrome: the stand-in test programs were not built (make test-programs)"
	finish
fi

LD_LIBRARY_PATH=$STANDIN "$CSAMPLER" record --gpu on -o g.data -- \
	sh -c 'exec "$0" workload "$CUDA_INJECTION64_PATH"' "$DRIVER" >rec.out 2>rec.err
rc=$?
if [ $rc != 0 ]; then
	fail "export/chrome/record: exit $rc: $(tail -n 3 rec.err | tr '\n' ' ')"
	finish
fi
if "$CSAMPLER" export --format chrome -o trace.json -i g.data 2>export.err; then
	pass "export/chrome/export: exit 0"
else
	fail "export/chrome/export: $(cat export.err)"
	finish
fi
python3 "$CSAMPLER_ROOT/tests/export/check-chrome.py" trace.json $("$COUNTS") >check.out 2>&1
rc=$?
cat check.out
if [ $rc != 0 ] && ! grep -q '^FAIL:' check.out; then
	fail "export/chrome/check: check-chrome.py exited with status $rc: $(tail -n 2 check.out | tr '\n' ' ')"
fi
mkdir -p "$CSAMPLER_ROOT/tests/out" && cp trace.json "$CSAMPLER_ROOT/tests/out/chrome-trace.json"

# Standard output and -o give the same bytes; the default format is chrome.
"$CSAMPLER" export -i g.data >stdout.json 2>/dev/null
check "export/chrome/stdout" cmp stdout.json trace.json

# Errors: one line naming the problem, exit 125, nothing half-written or replaced.
expect_error() { # NAME PATTERN ARGS...
	local name=$1 pattern=$2; shift 2
	"$CSAMPLER" export "$@" >err.out 2>err.txt
	local rc=$? lines
	lines=$(wc -l <err.txt)
	if [ $rc = 125 ] && [ "$lines" = 1 ] && grep -q -- "$pattern" err.txt; then
		pass "export/errors/$name: $(cat err.txt)"
	else
		fail "export/errors/$name: exit $rc, $lines lines: $(tr '\n' ' ' <err.txt)"
	fi
}
mkdir adir
expect_error directory "adir is a directory" -i g.data -o adir
expect_error same-as-input "is the input data file" -i g.data -o g.data
expect_error unknown-format "unknown format 'pprof2'; the formats are: chrome" --format pprof2 -i g.data -o x.json
expect_error missing-input "nope.data" -i nope.data -o x.json
expect_error no-directory "cannot create" -i g.data -o nodir/x.json
echo keep >old.json
printf 'not a data file\n' >bad.data
expect_error bad-input "bad.data" -i bad.data -o old.json
if [ "$(cat old.json)" = keep ] && [ ! -e x.json ] && [ -z "$(ls | grep '\.tmp\.')" ]; then
	pass "export/errors/nothing-clobbered: the old file is intact, no partial output left"
else
	fail "export/errors/nothing-clobbered: $(ls | tr '\n' ' ')"
fi
if "$CSAMPLER" export -i g.data -o /dev/full 2>full.err; then
	fail "export/errors/disk-full: exit 0 writing to /dev/full"
elif [ "$(wc -l <full.err)" = 1 ] && grep -q "check the free space" full.err; then
	pass "export/errors/disk-full: $(cat full.err)"
else
	fail "export/errors/disk-full: $(tr '\n' ' ' <full.err)"
fi
finish
