#!/usr/bin/env bash
# t-pprof-go.sh: the pprof export read by the tools people use. A recording of
# tests/progs/accuracy (known split: work_alpha 50%, work_beta 30%, work_gamma 20% inlined into
# gamma_caller, on two threads) exported with --format pprof must give, in `go tool pprof -top`
# (Debian's golang-go), the same top functions with the same flat and cum shares as `csampler
# report` (within the 0.01 points pprof prints), and in `-traces` the labels pid, tid and
# thread_name and work_gamma as an inline frame of gamma_caller. A second decoder, pprof-format
# (npm, tests/node_modules), reads the same file: per-function self samples equal the report's
# exactly, the tid labels split the samples as the report's threads do, the inlined chain is
# one location and the executable's mapping carries its build id. With the stand-in CUPTI
# (tests/cupti), the gpu/nanoseconds value type sums to the `flame --gpu` total. SKIPPED parts
# say which tool is missing.
source "$CSAMPLER_ROOT/tests/lib.sh"
export HOME=$T GOCACHE=$T/gocache GOFLAGS=-mod=mod GOTOOLCHAIN=local

if ! "$CSAMPLER" record -q -o acc.data -- "$TPROG/accuracy" 3 >rec.out 2>rec.err ||
   ! "$CSAMPLER" -q export --format pprof -i acc.data -o acc.pb.gz 2>export.err ||
   ! "$CSAMPLER" report -i acc.data --format json --limit 0 >report.json 2>report.err; then
	fail "pprof-go: record, export or report failed: $(tail -n 3 rec.err export.err report.err | tr '\n' ' ')"
	finish
fi

# share NAME self|total: the report's percentage printed as pprof prints one (its
# measurement.Percentage: "100" from 99.95 to 100.05, 2 decimals from 1, else 2 significant
# digits, "0" for none).
share() {
	json_get report.json "((f) => { const r = f ? f.$2 * 100 / j.samples : 0;
		return r >= 99.95 && r <= 100.05 ? '100' : r >= 1 ? r.toFixed(2) : String(Number(r.toPrecision(2))); })(j.functions.find(f => f.name === '$1' && f.$2 > 0))"
}

if ! command -v go >/dev/null; then
	skip "pprof-go: Debian's golang-go is not installed (scripts/install-deps.sh --test installs it)"
else
	if ! go tool pprof -top -nodecount=200 acc.pb.gz >top.txt 2>top.err; then
		fail "pprof-go: go tool pprof -top failed: $(tail -n 3 top.err | tr '\n' ' ')"
	else
		# Rows: flat flat% sum% cum cum% name...; the first three by flat against the
		# report's first three by self.
		go_top=$(awk '$2 ~ /^[0-9.]+%$/ { n++; if (n <= 3) { $1=$2=$3=$4=$5=""; sub(/^ +/, ""); print } }' top.txt | tr '\n' ',')
		cs_top=$(json_get report.json "j.functions.slice(0, 3).map(f => f.name + (f.inlined ? ' (inline)' : '')).join(',')"),
		check "pprof-go: top 3 by flat are the report's top 3 by self ($go_top)" test "$go_top" = "$cs_top"
		for fn in work_alpha work_beta work_gamma dispatch level_00 run_rounds; do
			row=$(awk -v f="$fn" '{ n = $6 } n == f || n == f && $7 == "(inline)" { print $2, $5; exit }' top.txt)
			want="$(share $fn self)% $(share $fn total)%"
			check "pprof-go: $fn flat% cum% '$row' = report self% total% '$want'" test "$row" = "$want"
		done
	fi
	if ! go tool pprof -traces acc.pb.gz >traces.txt 2>traces.err; then
		fail "pprof-go: go tool pprof -traces failed: $(tail -n 3 traces.err | tr '\n' ' ')"
	else
		pid=$(json_get report.json "j.threads[0].pid")
		check "pprof-go: -traces shows the pid label ($pid)" grep -qE "^ *pid: +$pid\$" traces.txt
		ntids=$(grep -E '^ *tid: +[0-9]+$' traces.txt | sort -u | wc -l)
		check "pprof-go: -traces shows tid labels of both threads ($ntids)" test "$ntids" = 2
		check "pprof-go: -traces shows the thread_name label" grep -qE '^ *thread_name: +accuracy$' traces.txt
		check "pprof-go: -traces shows work_gamma inlined into gamma_caller" \
			bash -c "grep -A1 -E ' work_gamma \(inline\)\$' traces.txt | grep -qE '^ +gamma_caller\$'"
	fi
fi

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	skip "pprof-go: node and npm are needed for the pprof-format check"
	finish
fi
if [ ! -f "$CSAMPLER_ROOT/tests/node_modules/pprof-format/package.json" ]; then
	if ! (cd "$CSAMPLER_ROOT/tests" && timeout 300 npm ci --no-audit --no-fund --loglevel=error) \
		>npm.log 2>&1; then
		skip "pprof-go: npm could not install pprof-format: $(tail -n 2 npm.log | tr '\n' ' ')"
		finish
	fi
fi
if ! node "$CSAMPLER_ROOT/tests/export/pprof-check.js" acc.pb.gz 0 >acc.json 2>check.err; then
	fail "pprof-format: decoding failed: $(tail -n 3 check.err | tr '\n' ' ')"
	finish
fi
build_id=$(readelf -n "$TPROG/accuracy" | awk '/Build ID/ { print $3 }')
out=$(node - acc.json report.json "$build_id" <<'JS'
const fs = require('fs');
const [a, r, buildId] = process.argv.slice(2);
const p = JSON.parse(fs.readFileSync(a, 'utf8')), j = JSON.parse(fs.readFileSync(r, 'utf8'));
const why = [];
if (p.sampleTypes.join() !== 'samples/count,cpu/nanoseconds')
	why.push('sample types ' + p.sampleTypes);
if (p.sum !== j.samples)
	why.push('samples sum to ' + p.sum + ', report ' + j.samples);
for (const f of j.functions.slice(0, 3))
	if (p.self[f.name] !== f.self)
		why.push(f.name + ' self ' + p.self[f.name] + ', report ' + f.self);
const tids = p.labels.tid || {};
for (const t of j.threads)
	if (t.samples && tids[String(t.tid)] !== t.samples)
		why.push('tid ' + t.tid + ' has ' + tids[String(t.tid)] + ', report ' + t.samples);
if (!p.labels.thread_name || !p.labels.pid)
	why.push('labels ' + Object.keys(p.labels));
if (!p.inlined.includes('work_gamma in gamma_caller'))
	why.push('no location work_gamma in gamma_caller: ' + p.inlined);
if (!buildId || !p.buildIds.includes(buildId))
	why.push('build id ' + buildId + ' not among ' + p.buildIds);
if (!/\/accuracy$/.test(p.mappings[0]))
	why.push('first mapping ' + p.mappings[0]);
console.log(why.length ? why.join('; ') : 'ok');
JS
)
[ "$out" = ok ] && pass "pprof-format: samples, self counts, tid labels, inline location, build id agree with report" ||
	fail "pprof-format: $out"

# Off-CPU nanoseconds (record --idle): tests/progs/offcpu-mix blocks in futex, nanosleep and a
# pipe read and spins, a quarter each; the off-CPU value type holds the blocked time under its
# [off-cpu: SYSCALL] leaves, cpu holds the spinning only.
if "$CSAMPLER" record -q --idle -o idle.data -- "$TPROG/offcpu-mix" 1 200 >idle.out 2>idle.err &&
   "$CSAMPLER" -q export --format pprof -i idle.data -o idle.pb.gz 2>>export.err &&
   node "$CSAMPLER_ROOT/tests/export/pprof-check.js" idle.pb.gz 2 >idle.json 2>>check.err; then
	types=$(json_get idle.json "j.sampleTypes.join()")
	check "pprof-idle: value types ($types)" test "$types" = "samples/count,cpu/nanoseconds,offcpu/nanoseconds"
	want=$("$CSAMPLER" report -i idle.data --idle --format json | node -e "const j=JSON.parse(require('fs').readFileSync(0)); console.log(j.samples)")
	got=$(json_get idle.json "Math.round(j.sum / j.period)")
	check "pprof-idle: offcpu nanoseconds are the off-CPU samples of report --idle ($got = $want)" test "$got" = "$want"
	if command -v go >/dev/null; then
		leaves=$(go tool pprof -sample_index=offcpu -top idle.pb.gz 2>/dev/null | grep -oE '\[off-cpu: [a-z_]+\]' | sort | tr '\n' ' ')
		check "pprof-idle: go tool pprof -sample_index=offcpu shows the three waits ($leaves)" \
			test "$leaves" = "[off-cpu: clock_nanosleep] [off-cpu: futex] [off-cpu: read] "
		first=$(go tool pprof -sample_index=cpu -top idle.pb.gz 2>/dev/null | awk '$2 ~ /^[0-9.]+%$/ { print $6; exit }')
		check "pprof-idle: -sample_index=cpu tops with the spinning ($first)" test "$first" = phase_spin
	fi
else
	fail "pprof-idle: record --idle, export or decode failed: $(tail -n 3 idle.err export.err check.err | tr '\n' ' ')"
fi

# GPU nanoseconds, from the stand-in CUPTI's scripted workload.
DRIVER=$CSAMPLER_ROOT/bin/tests/cupti/driver
if [ ! -x "$DRIVER" ] || [ ! -f "$CSAMPLER_ROOT/lib/libcsampler-cupti.so" ]; then
	skip "pprof-go: the stand-in CUPTI programs are not built (no CUDA toolkit): no GPU value check"
	finish
fi
if ! LD_LIBRARY_PATH=$CSAMPLER_ROOT/bin/tests/cupti/standin "$CSAMPLER" record -q --gpu on -o g.data -- \
	sh -c 'exec "$0" workload "$CUDA_INJECTION64_PATH"' "$DRIVER" >g.out 2>g.err ||
   ! "$CSAMPLER" -q export --format pprof -i g.data -o g.pb.gz 2>>export.err ||
   ! node "$CSAMPLER_ROOT/tests/export/pprof-check.js" g.pb.gz 2 >g.json 2>>check.err; then
	fail "pprof-gpu: record, export or decode failed: $(tail -n 3 g.err export.err check.err | tr '\n' ' ')"
	finish
fi
flame_total=$("$CSAMPLER" flame --gpu --dump-layout -i g.data | awk '$1 == "#" && $2 == "frames" { print $5 }')
types=$(json_get g.json "j.sampleTypes.join()")
gpu_sum=$(json_get g.json "j.sum")
check "pprof-gpu: value types ($types)" test "$types" = "samples/count,cpu/nanoseconds,gpu/nanoseconds"
check "pprof-gpu: gpu nanoseconds sum to the flame --gpu total ($gpu_sum = $flame_total)" \
	test -n "$flame_total" -a "$gpu_sum" = "$flame_total"
check "pprof-gpu: kernels are [gpu] leaves" \
	test "$(json_get g.json "Object.keys(j.self).filter(n => n.startsWith('[gpu] ') && j.self[n] > 0).length")" -ge 2
if command -v go >/dev/null; then
	first=$(go tool pprof -sample_index=gpu -top g.pb.gz 2>/dev/null | awk '$2 ~ /^[0-9.]+%$/ { $1=$2=$3=$4=$5=""; sub(/^ +/, ""); print; exit }')
	want=$(json_get g.json "Object.entries(j.self).sort((a, b) => b[1] - a[1])[0][0]")
	check "pprof-gpu: go tool pprof -sample_index=gpu tops with $want ($first)" test "$first" = "$want"
fi
finish
