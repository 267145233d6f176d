#!/usr/bin/env bash
# Steps and ranks (profiler/analysis/steps.c, report_steps.c) on real recordings of
# tests/progs/steps (each step: load_batch 2 ms then compute 3 ms of CPU time; steps 10-12
# compute 8x as long, 26 ms a step, so that a loaded machine seldom stretches others past them):
#  - report --steps --step load_batch finds the 30 steps (+-1), names steps 10-12 the slowest,
#    its JSON has the documented keys, and the CPU ms add up to the step's wall time;
#  - --steps 10-12 restricts folded (and report) to the slow phase: compute's share of the
#    samples is that of the slow steps; out-of-range and malformed --steps are refused;
#  - without NVTX ranges and without --step, report --steps says how to get steps (exit 1);
#  - two ranks (rank 1's compute 3x slower) merged: report --ranks names rank 1 the straggler
#    and compute the top excess function; diff --rank 0,1 draws rank 0 against rank 1; a
#    single rank is refused.
source "$CSAMPLER_ROOT/tests/lib.sh"

cp "$TPROG/steps" ./steps
if ! STEPS_SLOW_FACTOR=8 "$CSAMPLER" record -q -o s.data -- ./steps 30 10 12 >rec.out 2>rec.err; then
	fail "steps: record failed: $(tail -n 2 rec.err | tr '\n' ' ')"
	finish
fi

# -- the step table --
"$CSAMPLER" report -i s.data --steps --step load_batch --format json >steps.json 2>steps.err ||
	fail "steps: report --steps --format json failed: $(cat steps.err)"
read -r n slowest source <<<"$(json_get steps.json "[j.steps.steps.length, j.steps.slowest.slice().sort((a, b) => a - b).join(','), j.steps.source].join(' ')")"
[ "${n:-0}" -ge 29 ] && [ "${n:-0}" -le 31 ] && [ "$source" = function:load_batch ] &&
	pass "steps: $n steps from function:load_batch (want 30 +-1)" ||
	fail "steps: ${n:-?} steps from ${source:-?} (want 30 from function:load_batch)"
# Steps 10-12 take 26 ms of CPU against 5: by CPU time they are the top three always; by wall
# time (what the table ranks) only when no other step was stretched past them by a loaded
# machine, which is then said (SKIPPED) rather than failed.
bycpu=$(json_get steps.json "j.steps.steps.slice().sort((a, b) => b.cpu_ns - a.cpu_ns).slice(0, 3).map(x => x.step).sort((a, b) => a - b).join(',')")
[ "$bycpu" = "10,11,12" ] && pass "steps: steps 10, 11, 12 have the most CPU time" ||
	fail "steps: top CPU steps '$bycpu', want 10,11,12"
stretched=$(json_get steps.json "(s => Math.max(...s.filter(x => x.step < 10 || x.step > 12).map(x => x.wall_ns)) > Math.min(...s.filter(x => x.step >= 10 && x.step <= 12).map(x => x.wall_ns)))(j.steps.steps)")
if [ "$slowest" = "10,11,12" ]; then
	pass "steps: the slowest steps are 10, 11, 12"
elif [ "$stretched" = true ]; then
	skip "steps: slowest by wall time: the machine stretched a fast step past the slow ones (slowest $slowest)"
else
	fail "steps: slowest '$slowest', want 10,11,12"
fi
keys=$(json_get steps.json "[Object.keys(j.steps).join(','), Object.keys(j.steps.steps[0]).join(',')].join(' ')")
[ "$keys" = "source,pid,comm,gpu,steps,p50_ns,p90_ns,max_ns,slowest,warmup step,start_ns,wall_ns,gpu_busy_pct,gpu_idle_ns,idle_cause,cpu_ns,python_ns,native_ns,offcpu_ns,launches,warmup" ] &&
	pass "steps: JSON keys as documented" || fail "steps: JSON keys '$keys'"
# the slow steps' CPU time is about 26 ms against 5; no step has more CPU than wall time (one
# sample period of slack); max is the largest wall time; the program has no Python
ok=$(json_get steps.json "(() => { const s = j.steps.steps;
	const cpu = s.map(x => x.cpu_ns).sort((a, b) => a - b), med = cpu[Math.ceil(cpu.length / 2) - 1];
	const slow = s.filter(x => x.step >= 10 && x.step <= 12);
	return slow.every(x => x.cpu_ns > 1.6 * med) && j.steps.max_ns === Math.max(...s.map(x => x.wall_ns)) &&
		s.every(x => x.cpu_ns <= x.wall_ns + 1.1e6) &&
		s.every(x => x.python_ns === 0 && x.cpu_ns === x.native_ns && x.launches === 0); })()")
[ "$ok" = true ] && pass "steps: slow steps over 1.6x the median CPU, CPU within wall, all native" ||
	fail "steps: figures: $(json_get steps.json "j.steps.steps.map(x => x.step + ':' + x.wall_ns + '/' + x.cpu_ns).join(' ')" | head -c 400)"
"$CSAMPLER" report -i s.data --steps --step load_batch >steps.txt 2>&1
grep -qE '^  slowest( \(after warm-up\))?: step [0-9]+ \([0-9.]+ ms\), step ' steps.txt && grep -qE '^ +Step +Start s +Wall ms ' steps.txt &&
	pass "steps: text table and summary" || fail "steps: text: $(head -c 300 steps.txt)"
"$CSAMPLER" report -i s.data --step load_batch >plain.txt 2>&1
grep -q '^Steps of pid [0-9]* (steps), from function load_batch: ' plain.txt &&
	pass "steps: the plain report has a Steps section" || fail "steps: no Steps section in the plain report"

# -- --steps as a filter --
# sums FILE: "TOTAL COMPUTE" samples of folded FILE
sums() { awk '{ t += $NF; if ($0 ~ /;compute/) c += $NF } END { print t + 0, c + 0 }' "$1"; }
"$CSAMPLER" folded -i s.data --step load_batch --steps 10-12 >slow.folded 2>slow.err
"$CSAMPLER" folded -i s.data --step load_batch --steps 2-4 >fast.folded 2>fast.err
read -r st sc <<<"$(sums slow.folded)"; read -r ft fc <<<"$(sums fast.folded)"
# slow steps: compute 24 of 26 ms (92%); fast steps: 3 of 5 (60%)
if [ "$st" -ge 65 ] && [ "$st" -le 95 ] && [ $((sc * 100)) -ge $((st * 80)) ] &&
	[ "$ft" -ge 10 ] && [ "$ft" -le 22 ] && [ $((fc * 100)) -le $((ft * 72)) ]; then
	pass "folded --steps 10-12: $st samples, compute $sc (steps 2-4: $ft, compute $fc)"
else
	fail "folded --steps: slow $st samples compute $sc, fast $ft compute $fc $(cat slow.err fast.err)"
fi
"$CSAMPLER" report -i s.data --step load_batch --steps 10-12 --format json >r.json 2>r.err
got=$(json_get r.json "[j.steps.steps.map(x => x.step).join(','), j.samples].join(' ')")
[ "${got%% *}" = "10,11,12" ] && pass "report --steps 10-12: the steps keep their numbers ($got)" ||
	fail "report --steps 10-12: '$got' $(cat r.err)"
"$CSAMPLER" folded -i s.data --step load_batch --steps 99 >/dev/null 2>bad.err; rc=$?
[ "$rc" = 125 ] && grep -q 'out of range: the file has [0-9]* steps' bad.err &&
	pass "--steps 99: out of range, exit 125" || fail "--steps 99: rc $rc: $(cat bad.err)"
for v in 0 3-2 x 1-a; do
	"$CSAMPLER" report -i s.data --step load_batch --steps=$v >/dev/null 2>bad.err; rc=$?
	[ "$rc" = 125 ] && [ "$(wc -l <bad.err)" = 1 ] || fail "--steps=$v: rc $rc: $(cat bad.err)"
done
pass "--steps: malformed values refused with one line"
"$CSAMPLER" report -i s.data --steps >none.out 2>none.err; rc=$?
[ "$rc" = 1 ] && [ ! -s none.out ] && grep -q 'no steps: the file has no NVTX range named step or iteration; give --step FUNCTION or --step RANGE' none.err &&
	pass "report --steps without steps: one line, exit 1" || fail "report --steps without steps: rc $rc: $(cat none.err)"

# -- ranks --
unset RANK LOCAL_RANK OMPI_COMM_WORLD_RANK
RANK=0 "$CSAMPLER" record -q -o r0.data -- ./steps 20 100 100 >/dev/null 2>rr.err &&
	RANK=1 STEPS_COMPUTE_SCALE=3 "$CSAMPLER" record -q -o r1.data -- ./steps 20 100 100 >/dev/null 2>>rr.err &&
	"$CSAMPLER" merge -o m.data r0.data r1.data >/dev/null 2>>rr.err || { fail "ranks: record/merge: $(cat rr.err)"; finish; }
"$CSAMPLER" report -i m.data --ranks --step load_batch --format json >ranks.json 2>ranks.err
got=$(json_get ranks.json "[j.ranks.ranks.map(r => r.rank + ':' + r.steps).join(','), j.ranks.straggler.rank, j.ranks.straggler.functions[0].name, j.ranks.straggler.basis].join(' ')")
# rank 1's steps take 11 ms of CPU against 5: its step p50 is the highest unless a loaded machine
# stretched rank 0's steps (wall over CPU per step) past it, which is then said (SKIPPED)
stretch=$(json_get ranks.json "Math.max(...j.ranks.ranks.map(r => r.step_p50_ns / (r.cpu_ns / r.steps))) > 1.8")
if [ "$got" = "0:20,1:20 1 compute per_step" ]; then
	pass "ranks: rank 1 is the straggler, compute its top excess ($got)"
	ex=$(json_get ranks.json "(f => f.excess_ns > 4e6 && f.excess_ns < 8e6)(j.ranks.straggler.functions[0])")
	[ "$ex" = true ] && pass "ranks: compute's excess is about 6 ms per step" ||
		fail "ranks: excess $(json_get ranks.json "JSON.stringify(j.ranks.straggler.functions[0])")"
elif [ "$stretch" = true ]; then
	skip "ranks: the machine stretched a rank's steps past twice their CPU time ($got)"
else
	fail "ranks: '$got' $(cat ranks.err)"
fi
keys=$(json_get ranks.json "[Object.keys(j.ranks.ranks[0]).join(','), Object.keys(j.ranks.straggler).join(','), Object.keys(j.ranks.straggler.functions[0] || {}).join(',')].join(' ')")
[ "$keys" = "rank,pid,steps,step_p50_ns,step_p90_ns,cpu_ns,wall_ns,gpu_busy_pct,gpu_idle_ns,idle_cause rank,by,step_p50_ns,median_step_p50_ns,basis,functions name,ns,median_ns,excess_ns" ] &&
	pass "ranks: JSON keys as documented" || fail "ranks: JSON keys '$keys'"
# without steps: the straggler has the most CPU time (rank 1, 3.4x rank 0's compute)
"$CSAMPLER" report -i m.data --ranks >ranks.txt 2>&1
grep -q '^Straggler: rank 1, the most CPU time' ranks.txt && grep -q '^Where it spends more than the median rank (inclusive CPU ms per second of its wall time)' ranks.txt &&
	pass "ranks: without steps, the straggler by CPU time" || fail "ranks: no-step text: $(tail -n 8 ranks.txt)"
"$CSAMPLER" report -i r0.data --ranks >/dev/null 2>one.err; rc=$?
[ "$rc" = 1 ] && grep -q 'needs a merged file' one.err && pass "ranks: a single rank is refused (exit 1)" ||
	fail "ranks: single rank: rc $rc $(cat one.err)"
n0=$(awk '{ s += $NF } END { print s }' <("$CSAMPLER" folded -i m.data --rank 0))
n1=$(awk '{ s += $NF } END { print s }' <("$CSAMPLER" folded -i m.data --rank 1))
got=$("$CSAMPLER" diff --rank 0,1 m.data --dump-layout 2>&1 | awk '$1 == 0 { print $6, $5 }')
[ "$got" = "$n0 $n1" ] && pass "diff --rank 0,1 m.data: BEFORE rank 0 ($n0), AFTER rank 1 ($n1)" ||
	fail "diff --rank 0,1: '$got', want '$n0 $n1'"
# -- report --compare: the step time of a run whose compute takes 3x as long --
"$CSAMPLER" report --compare r0.data r1.data --step load_batch --format json >cmp.json 2>cmp.err ||
	fail "compare: report --compare: $(cat cmp.err)"
got=$(json_get cmp.json "[j.steps.base.steps, j.steps.new.steps, j.steps.base.source, j.steps.new.mean_ns > 1.5 * j.steps.base.mean_ns].join(' ')")
case "$got" in
"20 20 function:load_batch true"|"19 20 function:load_batch true"|"20 19 function:load_batch true"|"19 19 function:load_batch true")
	pass "compare: step time of both runs by load_batch, the slowed run's mean step over 1.5x ($(json_get cmp.json "j.steps.mean_change_pct")%)" ;;
*) fail "compare: steps: $got ($(json_get cmp.json "JSON.stringify(j.steps)"))" ;;
esac
"$CSAMPLER" report --compare r0.data r1.data --step load_batch >cmp.txt 2>&1
grep -q '^Step time (function:load_batch)' cmp.txt && grep -q '^  change ' cmp.txt &&
	pass "compare: the text shows the step time table" || fail "compare: no step table: $(head -20 cmp.txt)"
finish
