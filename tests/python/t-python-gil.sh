#!/usr/bin/env bash
# A Python thread waiting for the GIL shows as waiting in --idle mode: tests/python/gil.py runs
# two threads of pure Python at once, so each waits for the GIL about half the time (take_gil,
# a futex wait). Recorded with --idle, the samples under the threads' Python frame `spin`
# include off-CPU ones whose stack goes through take_gil to an [off-cpu: futex] leaf, for a
# large share of them; recorded without --idle, none is off-CPU. Both backends.
source "$CSAMPLER_ROOT/tests/python/lib-python.sh"
need_python311 python-gil

# waits FILE: "GIL-waiting samples of spin, all samples of spin" from folded text
waits() {
	awk '/;spin \([^)]*gil\.py:[0-9]+\)/ { t += $NF; if (/;take_gil[;_]/ && /\[off-cpu: futex\] [0-9]+$/) w += $NF }
	     END { print w + 0, t + 0 }' "$1"
}
for mode in perf ptrace; do
	if ! "$CSAMPLER" record -q --mode $mode --idle -o gil-$mode.data -- "$PY" "$SRC/gil.py" 2 >rec.out 2>rec.err; then
		fail "python-gil ($mode): record --idle failed: $(tail -n 3 rec.err | tr '\n' ' ')"
		continue
	fi
	"$CSAMPLER" folded -i gil-$mode.data >gil-$mode.folded 2>/dev/null
	read -r w t <<<"$(waits gil-$mode.folded)"
	if [ "$t" -gt 100 ] && [ $((w * 100)) -ge $((t * 25)) ]; then
		pass "python-gil ($mode): $w of $t samples of spin (gil.py) wait for the GIL: take_gil under the Python frame, [off-cpu: futex] leaf"
	else
		fail "python-gil ($mode): $w of $t samples of spin wait for the GIL (want at least 25%): $(grep take_gil gil-$mode.folded | head -n 1 | cut -c1-300)"
	fi
done
# 2 s as above: a 1 s run gave 28 samples of spin on a loaded CI machine
"$CSAMPLER" record -q -o plain.data -- "$PY" "$SRC/gil.py" 2 >rec.out 2>rec.err
"$CSAMPLER" folded -i plain.data >plain.folded 2>/dev/null
read -r w t <<<"$(waits plain.folded)"
n=$(grep -c '\[off-cpu:' plain.folded)
[ "$t" -gt 50 ] && [ "$n" = 0 ] && pass "python-gil: without --idle no sample is off-CPU ($t samples of spin)" ||
	fail "python-gil: without --idle: $n off-CPU stacks, $t samples of spin (of $(awk '{ s += $NF } END { print s + 0 }' plain.folded) in all)"
finish
