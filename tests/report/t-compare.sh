#!/usr/bin/env bash
# t-compare.sh: `report --compare BASE NEW` on two runs of the known-split program
# (tests/progs/accuracy: work_alpha 50%, work_beta 30%, work_gamma 20%), NEW built with
# -DACCURACY_FAST_ALPHA (work_alpha twice as fast: 33%, 40%, 27%). Both are copied to the same
# name (base/accuracy, new/accuracy) as a rebuilt program would be. The largest change in
# share must be work_alpha's, down, beyond the stated noise floor, with work_beta up; swapped,
# the direction swaps. Its change on the total basis equals what `csampler diff` colours by
# (the frames' share change in --dump-layout); the CPU ms per second follow from the samples,
# the period and the duration; the two threads are matched by name and order; a name with a
# quote and a backslash comes out escaped in the JSON. The machine may be loaded, so nothing
# here depends on how much CPU the runs got, only on where it went.
source "$CSAMPLER_ROOT/tests/lib.sh"

for p in accuracy accuracy-fast; do
	if [ ! -x "$TPROG/$p" ]; then
		fail "compare: $TPROG/$p is not built (make test-programs)"
		finish
	fi
done
mkdir base new
cp "$TPROG/accuracy" base/accuracy
cp "$TPROG/accuracy-fast" new/accuracy
if ! "$CSAMPLER" record -q -o base.data -- base/accuracy 3 >base.out 2>&1 ||
   ! "$CSAMPLER" record -q -o new.data -- new/accuracy 3 >new.out 2>&1; then
	fail "compare: recording failed: $(tail -n 3 base.out new.out | tr '\n' ' ')"
	finish
fi
if ! "$CSAMPLER" report --compare base.data new.data --format json --limit 0 >c.json 2>c.err ||
   ! "$CSAMPLER" report --compare base.data new.data --format json --limit 0 --sort total >ct.json 2>>c.err ||
   ! "$CSAMPLER" report --compare new.data base.data --format json --limit 0 >swap.json 2>>c.err ||
   ! "$CSAMPLER" report --compare base.data new.data >c.txt 2>>c.err; then
	fail "compare: report --compare failed: $(tail -n 3 c.err | tr '\n' ' ')"
	finish
fi

first=$(json_get c.json "j.functions[0].name")
check "compare: the largest change is work_alpha's ($first)" test "$first" = work_alpha
row=$(json_get c.json "((f) => f.base_pct.toFixed(1) + '% -> ' + f.new_pct.toFixed(1) + '%, ' + f.change_pct.toFixed(2) + ' points, noise ' + f.noise_pct.toFixed(2))(j.functions[0])")
check "compare: work_alpha's share fell beyond the noise floor ($row)" \
	test "$(json_get c.json "j.functions[0].change_pct < -5 && !j.functions[0].within_noise && j.functions[0].noise_pct > 0 && j.functions[0].noise_pct < -j.functions[0].change_pct")" = true
check "compare: work_beta's share rose" \
	test "$(json_get c.json "j.functions.find(f => f.name === 'work_beta').change_pct > 0")" = true
check "compare: swapped, work_alpha is still first and rose" \
	test "$(json_get swap.json "j.functions[0].name === 'work_alpha' && j.functions[0].change_pct > 5")" = true
check "compare: the text states the noise floor" grep -q '^# noise: .*points at a 50% share' c.txt
check "compare: the text's first function row is work_alpha, negative" \
	bash -c "grep -A2 '^Functions by change in self share' c.txt | tail -n 1 | grep -qE '^ +[0-9.]+% +[0-9.]+% +-[0-9.]+ .* work_alpha\$'"

# The same change as `csampler diff`: frames' AFTER share minus BEFORE share, summed over
# the work_alpha frames (one per thread), against the total-basis change.
"$CSAMPLER" diff --minwidth 0 --dump-layout base.data new.data >layout.txt 2>diff.err
flame=$(awk '$NF == "work_alpha" { a += $5; b += $6 } $1 == 0 && $NF == "all" { ta = $5; tb = $6 }
	END { if (ta && tb) printf "%.2f", 100 * (a / ta - b / tb) }' layout.txt)
report=$(json_get ct.json "j.functions.find(f => f.name === 'work_alpha').change_pct.toFixed(2)")
check "compare: the total-basis change of work_alpha ($report) is the one diff colours by ($flame)" \
	test -n "$flame" -a "$flame" = "$report"

check "compare: CPU ms per second = samples x period / duration" \
	test "$(json_get c.json "j.functions.slice(0, 3).every(f =>
		Math.abs(f.base_ms_per_s - f.base_samples * j.base.period_ms / j.base.duration_s) < 0.01 &&
		Math.abs(f.new_ms_per_s - f.new_samples * j.new.period_ms / j.new.duration_s) < 0.01 &&
		Math.abs(f.change_ms_per_s - (f.new_ms_per_s - f.base_ms_per_s)) < 0.01)")" = true
threads=$(json_get c.json "j.threads.map(t => t.name + ':' + (t.base_samples > 0) + (t.new_samples > 0)).sort().join(',')")
check "compare: both threads matched by name and order ($threads)" \
	test "$threads" = "accuracy #2:truetrue,accuracy:truetrue"

# A name that JSON must escape: the program's (and so its thread's) name.
name='q"u\ote'
cp "$TPROG/accuracy" "new/$name"
if "$CSAMPLER" record -q -o quote.data -- "new/$name" 1 >quote.out 2>&1 &&
   "$CSAMPLER" report --compare base.data quote.data --format json >q.json 2>q.err; then
	got=$(json_get q.json "j.threads.map(t => t.name).filter(n => n.startsWith('q')).sort()[0]")
	check "compare: a thread name with a quote and a backslash is escaped ($got)" test "$got" = "$name"
else
	fail "compare: recording or comparing the quoted name failed: $(tail -n 2 quote.out q.err | tr '\n' ' ')"
fi
"$CSAMPLER" report --compare missing.data new.data >/dev/null 2>miss.err
rc=$?
check "compare: a missing BASE is one error line and a non-zero exit (rc $rc)" \
	test "$rc" != 0 -a "$(wc -l <miss.err)" = 1
finish
