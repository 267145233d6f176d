#!/usr/bin/env bash
# Bad input to flame and diff: one line on stderr that names the problem, exit status 125,
# never a crash, a hang or a half-written output file.
source "$CSAMPLER_ROOT/tests/lib.sh"
DATA=$CSAMPLER_ROOT/tests/flame/data

# expect_error NAME PATTERN COMMAND...: exit 125, one stderr line matching PATTERN.
expect_error() {
	local name=$1 pattern=$2
	shift 2
	local rc=0
	timeout 20 "$@" >out.svg 2>err.txt </dev/null || rc=$?
	local lines
	lines=$(grep -c . err.txt)
	if [ "$rc" = 125 ] && [ "$lines" = 1 ] && grep -Eq "^csampler: .*$pattern" err.txt; then
		pass "errors: $name"
	else
		fail "errors: $name: exit $rc, stderr: $(tr '\n' '|' <err.txt)"
	fi
}
printf 'not folded\nat all\n' >garbage.txt
: >empty.folded
# 3000 fixed pseudo-random bytes (seeded, so every run sees the same file) with a NUL in them,
# and the same bytes without NULs: text that is no folded stacks.
perl -e 'srand(7); print map { chr(int(rand(256))) } 1..3000' >random.bin
tr -d '\000' <random.bin | tr -c '\n' x >noise.txt
mkdir adir
expect_error "missing file" "stat missing.folded: No such file" "$CSAMPLER" flame missing.folded
expect_error "directory" "adir is a directory" "$CSAMPLER" flame adir
expect_error "not folded text" "no 'frame;frame;... COUNT' lines" "$CSAMPLER" flame garbage.txt
expect_error "empty input" "no samples in empty.folded" "$CSAMPLER" flame empty.folded
expect_error "binary input" "random.bin is binary \(a NUL byte on line [0-9]+\)" "$CSAMPLER" flame random.bin
expect_error "binary standard input" "standard input is binary" sh -c "\"\$0\" flame <random.bin" "$CSAMPLER"
expect_error "text noise" "no 'frame;frame;... COUNT' lines" "$CSAMPLER" flame noise.txt
expect_error "unknown option" "unknown option '--bogus'" "$CSAMPLER" flame --bogus "$DATA/basic.folded"
expect_error "bad --minwidth" "--minwidth: 'wide'" "$CSAMPLER" flame --minwidth wide "$DATA/basic.folded"
expect_error "bad --width" "--width: 'x'" "$CSAMPLER" flame --width x "$DATA/basic.folded"
expect_error "missing value" "option '--title' needs a value" "$CSAMPLER" flame "$DATA/basic.folded" --title
expect_error "bad palette" "unknown palette 'plaid'" "$CSAMPLER" flame --colors plaid "$DATA/basic.folded"
expect_error "bad background" "--bgcolors: 'pink'" "$CSAMPLER" flame --bgcolors pink "$DATA/basic.folded"
expect_error "diff with one profile" "takes two profiles" "$CSAMPLER" diff "$DATA/before.folded"
expect_error "diff of difffolded text" "two counts per line" "$CSAMPLER" diff "$DATA/twocounts.folded" "$DATA/after.folded"
expect_error "diff with an empty BEFORE" "BEFORE \(empty.folded\) has no samples" "$CSAMPLER" diff empty.folded "$DATA/after.folded"
expect_error "unwritable output" "open /nonexistent/x.svg" "$CSAMPLER" flame -o /nonexistent/x.svg "$DATA/basic.folded"
# No csampler.data and nothing on standard input (/dev/null): the default data file is missing.
expect_error "no input at all" "stat csampler.data: No such file" "$CSAMPLER" flame
[ ! -e /nonexistent/x.svg ] && pass "errors: nothing written on failure" || fail "errors: a file was written"
# Lines without a count are skipped with one warning, like flamegraph.pl.
"$CSAMPLER" flame "$DATA/messy.folded" >messy.svg 2>messy.err
[ $? = 0 ] && grep -q "warning: .*ignored 2 lines without a trailing sample count (first: line 1)" messy.err &&
	pass "errors: lines without counts are ignored with a warning" ||
	fail "errors: messy input: $(cat messy.err)"
"$CSAMPLER" flame --help >help.txt 2>&1
[ $? = 0 ] && grep -q -- '--minwidth PX|N%' help.txt && grep -q '(default: 0.1)' help.txt &&
	pass "errors: --help lists the options with their defaults" || fail "errors: --help: $(head -n 3 help.txt)"
finish
