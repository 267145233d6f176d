#!/usr/bin/env bash
# bench-steps.sh: how long `report --steps` takes on a 1,000-step recording. Records
# tests/progs/steps (each step load_batch 2 ms then compute 3 ms of CPU time; STEPS steps) with
# csampler record, then times report --steps --step load_batch (text and JSON), report --ranks
# on two such ranks merged, and folded --steps on a 100-step window; best of RUNS each.
#   STEPS=1000 RUNS=3 scripts/bench-steps.sh
set -eu
cd "$(dirname "$0")/.."
STEPS=${STEPS:-1000}
RUNS=${RUNS:-3}
CSAMPLER=${CSAMPLER:-bin/csampler}
W=$(mktemp -d /tmp/csampler-bench-steps.XXXXXX)
trap 'rm -rf "$W"' EXIT
make -s bin/tests/steps >/dev/null
unset RANK LOCAL_RANK OMPI_COMM_WORLD_RANK
RANK=0 "$CSAMPLER" record -q -o "$W/r0.data" -- bin/tests/steps "$STEPS" 10 12 >/dev/null 2>"$W/rec.err"
RANK=1 STEPS_COMPUTE_SCALE=2 "$CSAMPLER" record -q -o "$W/r1.data" -- bin/tests/steps "$STEPS" 10 12 >/dev/null 2>>"$W/rec.err"
"$CSAMPLER" merge -o "$W/m.data" "$W/r0.data" "$W/r1.data" 2>/dev/null
# best CMD...: the best wall time of RUNS runs, in seconds
best() {
	local b= t0 t1 d
	for _ in $(seq "$RUNS"); do
		t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N)
		d=$(echo "$t1 - $t0" | bc)
		if [ -z "$b" ] || [ "$(echo "$d < $b" | bc)" = 1 ]; then b=$d; fi
	done
	printf '%.3f' "$b"
}
n=$("$CSAMPLER" report -i "$W/r0.data" --steps --step load_batch --format json |
	node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>console.log(JSON.parse(s).steps.steps.length))")
samples=$("$CSAMPLER" info -i "$W/r0.data" --format json | node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>console.log(JSON.parse(s).samples))")
echo "recording: $n steps found of $STEPS, $samples samples ($(nproc) CPUs, $(date -u +%Y-%m-%d))"
echo "report --steps --step load_batch:                $(best "$CSAMPLER" report -i "$W/r0.data" --steps --step load_batch) s"
echo "report --steps --step load_batch --format json:  $(best "$CSAMPLER" report -i "$W/r0.data" --steps --step load_batch --format json) s"
echo "report --ranks --step load_batch (2 ranks):      $(best "$CSAMPLER" report -i "$W/m.data" --ranks --step load_batch) s"
echo "folded --step load_batch --steps 100-199:        $(best "$CSAMPLER" folded -i "$W/r0.data" --step load_batch --steps 100-199) s"
echo "report (plain, with its Steps section):          $(best "$CSAMPLER" report -i "$W/r0.data" --step load_batch) s"
