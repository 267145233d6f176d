#!/usr/bin/env bash
# t-regress.sh: the fuzzing regression test. Feeds the seeds (tests/fuzz/seeds/), the inputs
# the fuzzer found and the hand-made hostile ones (tests/fuzz/regress/, outcomes in its EXPECT)
# to the normal build's info, report, folded, flame and diff. Each must end cleanly: exit 0,
# or exit 125 with one line saying why; never a signal, a sanitizer report or a stray line.
# Also a 200,000-frame stack and a 1 MB frame name, made here. When `make fuzz-build` has
# built the harnesses, every input is also replayed through them (ASan + UBSan).
source "$(dirname "$0")/../lib.sh"
FZ=$CSAMPLER_ROOT/tests/fuzz

# run_clean NAME CMD...: run CMD; sets $rc and $err (stderr). Fails NAME unless the exit is 0,
# or 125 with exactly one non-warning line; every stderr line must start with "csampler: ".
run_clean() {
	local name=$1; shift
	"$@" >out.txt 2>err.txt
	rc=$?
	err=$(cat err.txt)
	local bad errors
	bad=$(grep -cv '^csampler: ' err.txt)
	errors=$(grep -v '^csampler: warning: ' err.txt | grep -c .)
	if [ "$rc" != 0 ] && [ "$rc" != 125 ]; then
		fail "$name: exit status $rc (a crash or signal?): $(tail -n 2 err.txt | tr '\n' ' ')"
		return 1
	elif [ "$bad" != 0 ]; then
		fail "$name: stderr lines not from csampler: $(grep -v '^csampler: ' err.txt | head -n 2 | tr '\n' ' ')"
		return 1
	elif [ "$rc" = 125 ] && [ "$errors" != 1 ]; then
		fail "$name: exit 125 with $errors error lines (want one): $(tr '\n' ' ' <err.txt)"
		return 1
	fi
	return 0
}

# expect NAME RC_OK WANT: compare the last run with EXPECT's "ok" or "error SUBSTRING".
expect() {
	local name=$1 want=$2
	case "$want" in
	ok) [ "$rc" = 0 ] && pass "$name: ok" || fail "$name: expected success, got $rc: $err" ;;
	error\ *)
		local sub=${want#error }
		if [ "$rc" = 125 ] && grep -qF -- "$sub" err.txt; then pass "$name: $sub"
		else fail "$name: expected exit 125 with '$sub', got $rc: $err"; fi ;;
	*) fail "$name: bad EXPECT entry '$want'" ;;
	esac
}

# The other readers: must be clean, whatever the outcome.
all_clean() {
	local f=$1 name=$2 ok=1
	case "$f" in
	*.data)
		run_clean "$name report" "$CSAMPLER" report --stdio -i "$f" || ok=0
		run_clean "$name report json" "$CSAMPLER" report --format json -i "$f" || ok=0
		run_clean "$name folded" "$CSAMPLER" folded -i "$f" || ok=0 ;;
	esac
	run_clean "$name flame" "$CSAMPLER" flame "$f" -o flame.svg || ok=0
	run_clean "$name flamechart" "$CSAMPLER" flame --flamechart "$f" -o flame.svg || ok=0
	run_clean "$name diff" "$CSAMPLER" diff "$f" "$f" -o diff.svg || ok=0
	[ $ok = 1 ] && pass "$name: report, folded, flame and diff end cleanly"
}

# The first command of a data file is info, of folded text flame.
first() {
	case "$1" in
	*.data) run_clean "$2" "$CSAMPLER" info -i "$1" ;;
	*) run_clean "$2" "$CSAMPLER" flame "$1" -o first.svg ;;
	esac
}

nseeds=0
for f in "$FZ"/seeds/*/*; do
	name=seeds/$(basename "$(dirname "$f")")/$(basename "$f")
	nseeds=$((nseeds + 1))
	first "$f" "$name" && expect "$name" ok
	all_clean "$f" "$name"
done
[ "$nseeds" -ge 8 ] || fail "seeds: only $nseeds seed files in tests/fuzz/seeds"

# Every file in regress/ has an EXPECT line and every EXPECT line a file.
listed=$(grep -v '^#' "$FZ/regress/EXPECT" | awk 'NF { print $1 }' | sort)
present=$(cd "$FZ/regress" && ls | grep -v '^EXPECT$' | sort)
[ "$listed" = "$present" ] && pass "regress/EXPECT lists every input" ||
	fail "regress/EXPECT and the files differ: $(diff <(echo "$listed") <(echo "$present") | grep '^[<>]' | tr '\n' ' ')"
while read -r file want; do
	case "$file" in ''|'#'*) continue ;; esac
	f=$FZ/regress/$file
	[ -f "$f" ] || continue
	first "$f" "regress/$file" && expect "regress/$file" "$want"
	all_clean "$f" "regress/$file"
done <"$FZ/regress/EXPECT"

# The markup frame names come out escaped: the SVG is well-formed XML.
if command -v xmllint >/dev/null; then
	"$CSAMPLER" flame "$FZ/regress/hostile-markup.folded" -o markup.svg 2>/dev/null &&
		xmllint --noout markup.svg 2>xml.err && ! grep -q '<script>alert' markup.svg &&
		pass "hostile-markup: the SVG is well-formed and the names are escaped" ||
		fail "hostile-markup: the SVG is not well-formed or not escaped: $(head -c 200 xml.err)"
else
	skip "hostile-markup SVG check: xmllint not installed (make test installs libxml2-utils)"
fi

# Sizes no seed has: a 200,000-frame stack and a 1 MB frame name.
awk 'BEGIN { for (i = 0; i < 200000; i++) printf "f%d;", i % 1000; print "leaf 7" }' >deep.folded
if run_clean deep-stack timeout 60 "$CSAMPLER" flame deep.folded -o deep.svg; then
	expect deep-stack ok
fi
head -c 1048576 /dev/zero | tr '\0' 'x' >long.folded && printf ';main 3\n' >>long.folded
if run_clean long-name timeout 60 "$CSAMPLER" flame long.folded -o long.svg; then
	expect long-name ok
fi

# Replay through the sanitizer harnesses, when built (make fuzz-build).
for h in "$CSAMPLER_ROOT"/bin/fuzz/fuzz_*; do
	case "$h" in *-cov|*'*') continue ;; esac
	hname=${h##*/fuzz_}
	inputs=$(ls "$FZ/seeds/$hname/"* 2>/dev/null; ls "$FZ/regress/$hname-"* 2>/dev/null)
	case $hname in
	datafile) inputs="$inputs $(ls "$FZ"/regress/hostile-*.data)" ;;
	folded) inputs="$inputs $(ls "$FZ"/regress/hostile-*.folded)" ;;
	esac
	if [ -z "$(echo $inputs)" ]; then # no inputs: the harness would start fuzzing
		skip "fuzz_$hname: no seeds in tests/fuzz/seeds/$hname to replay"
		continue
	fi
	# shellcheck disable=SC2086
	if "$h" -close_fd_mask=2 $inputs >harness.log 2>&1; then
		pass "fuzz_$hname replays $(echo $inputs | wc -w) inputs without a sanitizer report"
	else
		fail "fuzz_$hname: $(grep -E 'ERROR|runtime error|SUMMARY' harness.log | head -n 2 | tr '\n' ' ')"
	fi
done
ls "$CSAMPLER_ROOT"/bin/fuzz/fuzz_* >/dev/null 2>&1 ||
	skip "sanitizer replay: the harnesses are not built (make test builds them where clang has libFuzzer's runtime, libclang-rt-dev; or make fuzz-build)"
finish
